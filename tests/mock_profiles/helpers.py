# SPDX-License-Identifier: Apache-2.0
"""Profiles, models and raw NNAPI calls shared by the device-profile tests."""

from __future__ import annotations

import copy
import ctypes
from typing import Any

import numpy as np
from mock_nnapi.api import NnapiError, check, lib

import mock_nnapi
from mock_nnapi import Compilation, Execution, Model, OperandCode, OperationCode

UINT64_MAX = 2**64 - 1
DURATION_ON_HARDWARE = 0
DURATION_IN_DRIVER = 1
FENCED_DURATION_ON_HARDWARE = 2
FENCED_DURATION_IN_DRIVER = 3
MISSED_DEADLINE_TRANSIENT = 10
MISSED_DEADLINE_PERSISTENT = 11


def device_entry(name: str, kind: str, **overrides: Any) -> dict[str, Any]:
    """A valid profile device with round numbers; ``overrides`` replace top-level fields."""
    device: dict[str, Any] = {
        "name": name,
        "type": kind,
        "version": "test-1",
        "feature_level": 8,
        "support": {"operations": "all", "data_types": "all", "max_rank": 6},
        "throughput": {"float32": 1, "float16": 1, "quant8": 1},
        "memory_bandwidth_gbps": 1,
        "efficiency": {"default": 1},
        "overhead_us": {"execution": 10, "operation": 1},
        "compilation_us": {"fixed": 100, "per_operation": 10, "cache_hit": 5},
        "energy": {"pj_per_op": {"float32": 1, "float16": 1, "quant8": 1}, "pj_per_byte": 1},
    }
    if kind == "CPU":
        device["runtime_cpu"] = True
    else:
        device["transfer"] = {"latency_us": 3, "bandwidth_gbps": 1}
    device.update(copy.deepcopy(overrides))
    return device


def profile_with(devices: list[dict[str, Any]], name: str = "test-phone", **extra: Any):
    profile: dict[str, Any] = {
        "schema": "mock_nnapi.device_profile/1",
        "name": name,
        "description": "A phone made up for the tests.",
        "runtime": {"feature_level": 8, "overhead_us": 5},
        "sources": [{"fields": ["devices"], "source": "made up for the tests", "estimate": True}],
        "devices": devices,
    }
    profile.update(extra)
    return profile


def devices_by_name() -> dict[str, mock_nnapi.Device]:
    return {device.name: device for device in mock_nnapi.devices()}


def binary_model(
    operations: list[int],
    shape: list[int],
    code: int = OperandCode.TENSOR_FLOAT32,
    relaxed: bool = False,
    scale: float = 0.0,
) -> Model:
    """A chain x -> op0(x, y) -> op1(., y) -> ... of element-wise binary operations."""
    model = Model()
    x = model.add_tensor(code, shape, scale)
    y = model.add_tensor(code, shape, scale)
    current = x
    for operation in operations:
        output = model.add_tensor(code, shape, scale)
        if operation in (
            OperationCode.ADD,
            OperationCode.SUB,
            OperationCode.MUL,
            OperationCode.DIV,
        ):
            act = model.add_scalar(OperandCode.INT32, 0)
            model.add_operation(operation, [current, y, act], [output])
        else:
            model.add_operation(operation, [current, y], [output])
        current = output
    model.identify_inputs_and_outputs([x, y], [current])
    if relaxed:
        model.relax_computation_float32_to_float16(True)
    return model.finish()


def conv_model(height: int, channels_in: int, channels_out: int) -> Model:
    """A 1x1 CONV_2D, [1, height, 1, C_in] -> [1, height, 1, C_out], constant weights."""
    model = Model()
    x = model.add_tensor(OperandCode.TENSOR_FLOAT32, [1, height, 1, channels_in])
    weights = model.add_constant(
        OperandCode.TENSOR_FLOAT32, np.full((channels_out, 1, 1, channels_in), 0.01, np.float32)
    )
    bias = model.add_constant(OperandCode.TENSOR_FLOAT32, np.zeros(channels_out, np.float32))
    scalars = [model.add_scalar(OperandCode.INT32, value) for value in (2, 1, 1, 0)]
    output = model.add_tensor(OperandCode.TENSOR_FLOAT32, [1, height, 1, channels_out])
    model.add_operation(OperationCode.CONV_2D, [x, weights, bias, *scalars], [output])
    model.identify_inputs_and_outputs([x], [output])
    return model.finish()


def conv_relu_add_chain(second_reader: bool = False, output_middle: bool = False) -> Model:
    """x -> CONV_2D (1x1, 8 -> 8) -> t -> RELU -> u -> ADD(u, y) -> z, float32 [1, 4, 4, 8];
    ``second_reader`` adds t -> RELU -> w (an output), ``output_middle`` makes u an output."""
    f32 = OperandCode.TENSOR_FLOAT32
    model = Model()
    shape = [1, 4, 4, 8]
    x = model.add_tensor(f32, shape)
    y = model.add_tensor(f32, shape)
    weights = model.add_constant(f32, np.full((8, 1, 1, 8), 0.1, np.float32))
    bias = model.add_constant(f32, np.zeros(8, np.float32))
    scalars = [model.add_scalar(OperandCode.INT32, v) for v in (1, 1, 1, 0)]
    t = model.add_tensor(f32, shape)
    model.add_operation(OperationCode.CONV_2D, [x, weights, bias, *scalars], [t])
    u = model.add_tensor(f32, shape)
    model.add_operation(OperationCode.RELU, [t], [u])
    z = model.add_tensor(f32, shape)
    model.add_operation(OperationCode.ADD, [u, y, model.add_scalar(OperandCode.INT32, 0)], [z])
    outputs = [z]
    if second_reader:
        w = model.add_tensor(f32, shape)
        model.add_operation(OperationCode.RELU, [t], [w])
        outputs.append(w)
    if output_middle:
        outputs.append(u)
    model.identify_inputs_and_outputs([x, y], outputs)
    return model.finish()


def inputs_for(model: Model) -> list[np.ndarray]:
    arrays = []
    for index in model.inputs:
        code, shape, _, _ = model.operand_types[index]
        dtype = mock_nnapi.api.NUMPY_DTYPES[code]
        arrays.append(np.ones(shape, dtype=dtype))
    return arrays


def run(model: Model, devices=None, preference: int | None = None) -> list[np.ndarray]:
    compilation = Compilation(model, devices)
    if preference is not None:
        compilation.set_preference(preference)
    compilation.finish()
    return compilation.execute(inputs_for(model))


def operation_devices(trace: dict[str, Any]) -> list[tuple[str, str]]:
    """(operation name, device) of each operation event of a trace, in execution order."""
    return [(e["name"], e["device"]) for e in trace["events"] if e["kind"] == "operation"]


def call(function: str, *args: Any) -> int:
    """Calls an NNAPI function by name and returns its result code."""
    return int(getattr(lib(), function)(*args))


class RawExecution:
    """An execution driven through the raw C API (timing, timeouts, fenced compute)."""

    def __init__(self, compilation: Compilation) -> None:
        self.compilation = compilation
        self.execution = Execution(compilation)
        self._keep: list[Any] = []

    def set_arguments(self) -> None:
        model = self.compilation.model
        for i, array in enumerate(inputs_for(model)):
            self._keep.append(array)
            check(
                "ANeuralNetworksExecution_setInput",
                call(
                    "ANeuralNetworksExecution_setInput",
                    self.execution.handle,
                    i,
                    None,
                    array.ctypes.data_as(ctypes.c_void_p),
                    array.nbytes,
                ),
            )
        for i, index in enumerate(model.outputs):
            code, shape, _, _ = model.operand_types[index]
            array = np.empty(shape, dtype=mock_nnapi.api.NUMPY_DTYPES[code])
            self._keep.append(array)
            check(
                "ANeuralNetworksExecution_setOutput",
                call(
                    "ANeuralNetworksExecution_setOutput",
                    self.execution.handle,
                    i,
                    None,
                    array.ctypes.data_as(ctypes.c_void_p),
                    array.nbytes,
                ),
            )

    def measure_timing(self) -> RawExecution:
        check(
            "ANeuralNetworksExecution_setMeasureTiming",
            call("ANeuralNetworksExecution_setMeasureTiming", self.execution.handle, True),
        )
        return self

    def set_timeout(self, nanoseconds: int) -> RawExecution:
        check(
            "ANeuralNetworksExecution_setTimeout",
            call("ANeuralNetworksExecution_setTimeout", self.execution.handle, nanoseconds),
        )
        return self

    def compute(self) -> int:
        self.set_arguments()
        return call("ANeuralNetworksExecution_compute", self.execution.handle)

    def compute_fenced(self, duration_ns: int = 0) -> int:
        self.set_arguments()
        event = ctypes.c_void_p()
        dependencies = (ctypes.c_void_p * 1)()
        code = call(
            "ANeuralNetworksExecution_startComputeWithDependencies",
            self.execution.handle,
            dependencies,
            0,
            duration_ns,
            ctypes.byref(event),
        )
        if event.value:
            code = code or call("ANeuralNetworksEvent_wait", event)
            lib().ANeuralNetworksEvent_free(event)
        return code

    def duration(self, code: int) -> int:
        value = ctypes.c_uint64(0)
        call(
            "ANeuralNetworksExecution_getDuration", self.execution.handle, code, ctypes.byref(value)
        )
        return int(value.value)


def expect_error(code: int, function, *args: Any) -> NnapiError:
    try:
        function(*args)
    except NnapiError as error:
        assert error.code == code, error
        return error
    raise AssertionError(f"{function} did not fail with {code}")
