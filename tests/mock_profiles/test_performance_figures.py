# SPDX-License-Identifier: Apache-2.0
"""Android's performance figures are derived from the cost model (docs/device-profiles.md,
"Performance figures"): each device's exec_time and power_usage per data class are the modelled
time and energy of the reference workload (a 3x3 CONV_2D over 56x56x64 and a 1024x1024
FULLY_CONNECTED of one row) relative to the runtime CPU's. Checked here against real executions
of that workload on each device (createForDevices, cost-only), read from the traces."""

from __future__ import annotations

import numpy as np
import pytest

import mock_nnapi
from mock_nnapi import Model, OperandCode, OperationCode, control

from .helpers import device_entry, devices_by_name, inputs_for, profile_with

F32 = OperandCode.TENSOR_FLOAT32
F16 = OperandCode.TENSOR_FLOAT16
Q8 = OperandCode.TENSOR_QUANT8_ASYMM
BUILT_IN = ("snapdragon-8-gen-2", "tensor-g2", "dimensity-9000")
# (data class, tensor type, relaxed)
CLASSES = [
    ("float32", F32, False),
    ("relaxed_float32", F32, True),
    ("float16", F16, False),
    ("quant8", Q8, False),
]


def _reference_models(code: OperandCode, relaxed: bool) -> list[Model]:
    """The reference workload as two NNAPI models (no fusion or transfer between them)."""
    quantized = code == Q8
    scale = 0.5 if quantized else 0.0
    bias_code = OperandCode.TENSOR_INT32 if quantized else code
    bias_scale = 0.25 if quantized else 0.0
    weight_dtype = mock_nnapi.api.NUMPY_DTYPES[code]
    bias_dtype = mock_nnapi.api.NUMPY_DTYPES[bias_code]
    models = []
    # CONV_2D [1,56,56,64] * [64,3,3,64] -> [1,56,56,64], SAME padding, stride 1.
    model = Model()
    x = model.add_tensor(code, [1, 56, 56, 64], scale)
    w = model.add_constant(code, np.zeros((64, 3, 3, 64), weight_dtype), scale)
    b = model.add_constant(bias_code, np.zeros(64, bias_dtype), bias_scale)
    scalars = [model.add_scalar(OperandCode.INT32, v) for v in (1, 1, 1, 0)]
    y = model.add_tensor(code, [1, 56, 56, 64], scale)
    model.add_operation(OperationCode.CONV_2D, [x, w, b, *scalars], [y])
    model.identify_inputs_and_outputs([x], [y])
    models.append(model)
    # FULLY_CONNECTED [1,1024] x [1024,1024] -> [1,1024].
    model = Model()
    x = model.add_tensor(code, [1, 1024], scale)
    w = model.add_constant(code, np.zeros((1024, 1024), weight_dtype), scale)
    b = model.add_constant(bias_code, np.zeros(1024, bias_dtype), bias_scale)
    act = model.add_scalar(OperandCode.INT32, 0)
    y = model.add_tensor(code, [1, 1024], scale)
    model.add_operation(OperationCode.FULLY_CONNECTED, [x, w, b, act], [y])
    model.identify_inputs_and_outputs([x], [y])
    models.append(model)
    for model in models:
        if relaxed:
            model.relax_computation_float32_to_float16(True)
        model.finish()
    return models


def _modelled(models: list[Model], device: mock_nnapi.Device) -> tuple[float, float] | None:
    """Sum over the workload of each operation's modelled duration (busy + operation overhead)
    and energy on `device`, or None when the device cannot run it."""
    time_us = energy_uj = 0.0
    for model in models:
        if not all(mock_nnapi.supported_operations(model, [device])):
            return None
        compilation = mock_nnapi.Compilation(model, [device]).finish()
        with control.CostOnlyExecution():
            compilation.execute(inputs_for(model))
        trace = control.last_execution_trace()
        assert trace is not None
        (event,) = [e for e in trace["events"] if e["kind"] == "operation"]
        assert event["device"] == device.name and not event["fused"]
        time_us += event["duration_us"]
        energy_uj += event["energy_uj"]
    return time_us, energy_uj


@pytest.mark.parametrize("profile", BUILT_IN)
def test_derived_figures_are_the_cost_model_relative_to_the_cpu(profile):
    control.set_profile(profile)
    devices = devices_by_name()
    figures = control.device_performance()
    assert set(figures) == set(devices)
    cpu = "nnapi-reference"
    checked: set[str] = set()
    for data_class, code, relaxed in CLASSES:
        models = _reference_models(code, relaxed)
        reference = _modelled(models, devices[cpu])
        assert reference is not None
        assert figures[cpu][data_class] == {"exec_time": 1.0, "power_usage": 1.0}
        for name, device in devices.items():
            measured = _modelled(models, device)
            if measured is None:  # e.g. float32 on a DSP that takes it relaxed only
                continue
            figure = figures[name][data_class]
            assert figure["exec_time"] == pytest.approx(measured[0] / reference[0], rel=1e-5)
            assert figure["power_usage"] == pytest.approx(measured[1] / reference[1], rel=1e-5)
            checked.add(name)
    assert checked == set(devices)  # every device runs at least one class


@pytest.mark.parametrize("profile", BUILT_IN)
def test_every_accelerator_beats_the_cpu_where_it_runs(profile):
    """With the built-in parameters every NPU, DSP, TPU and GPU is modelled faster and less
    energy-hungry than the CPU for each class it accepts (figures below 1.0)."""
    control.set_profile(profile)
    for name, classes in control.device_performance().items():
        if name == "nnapi-reference":
            continue
        for data_class in ("float32", "relaxed_float32", "float16", "quant8"):
            assert 0 < classes[data_class]["exec_time"] < 1, (name, data_class)
            assert 0 < classes[data_class]["power_usage"] < 1, (name, data_class)


def test_figures_follow_the_parameters(write_profile):
    """Doubling a device's throughput halves its compute-bound reference time, so its exec_time
    drops; a profile without a runtime CPU device is judged against the built-in fallback."""
    slow = device_entry("slow", "ACCELERATOR", throughput={"float32": 2, "float16": 2, "quant8": 2})
    fast = device_entry("fast", "ACCELERATOR", throughput={"float32": 4, "float16": 4, "quant8": 2})
    control.set_profile(write_profile(profile_with([slow, fast, device_entry("cpu", "CPU")])))
    figures = control.device_performance()
    assert figures["cpu"]["float32"]["exec_time"] == 1.0
    ratio = figures["fast"]["float32"]["exec_time"] / figures["slow"]["float32"]["exec_time"]
    assert 0.5 < ratio < 0.6  # the conv halves; the memory-bound FC does not
    assert figures["fast"]["quant8"] == figures["slow"]["quant8"]
    no_cpu = device_entry("alone", "ACCELERATOR")
    control.set_profile(write_profile(profile_with([no_cpu], name="no-cpu")))
    # The built-in CPU fallback runs 100 GOP/s against this device's 1: about 100x slower.
    assert control.device_performance()["alone"]["float32"]["exec_time"] > 50


def _table(table: dict, data_class: str) -> float:
    """A data-class table entry with the schema's defaults (relaxed_float32 -> float32)."""
    if data_class in table:
        return float(table[data_class])
    return float(table["float32" if data_class == "relaxed_float32" else "quant8"])


@pytest.mark.parametrize("profile", BUILT_IN)
def test_quant8_float16_and_relaxed_operations_use_their_own_figures(profile):
    """A CONV_2D on each device is costed with the throughput, compute efficiency and energy
    per operation of its data class: int8 at the device's quant8 figures, float16 at float16,
    relaxed float32 at relaxed_float32 (the NPUs' and DSP's float16 rate), not float32's."""
    from mock_nnapi.cost_model import CostModel
    from mock_nnapi.device_profiles import load_profile

    control.set_profile(profile)
    described = {d["name"]: d for d in load_profile(profile)["devices"]}
    model = CostModel(profile)
    devices = devices_by_name()
    for data_class, code, relaxed in CLASSES:
        (conv, _) = _reference_models(code, relaxed)
        for name, device in devices.items():
            if not all(mock_nnapi.supported_operations(conv, [device])):
                continue
            compilation = mock_nnapi.Compilation(conv, [device]).finish()
            with control.CostOnlyExecution():
                compilation.execute(inputs_for(conv))
            trace = control.last_execution_trace()
            assert trace is not None
            (event,) = [e for e in trace["events"] if e["kind"] == "operation"]
            spec = described[name]
            assert event["data_class"] == data_class
            peak = _table(spec["throughput"], data_class)
            assert event["compute_us"] == pytest.approx(event["flops"] / (peak * 1e3), rel=1e-9)
            efficiency = model.efficiency(name, "compute", "convolution", data_class)
            assert event["compute_efficiency"] == pytest.approx(efficiency)
            energy = spec["energy"]
            expected_uj = (
                event["flops"] * _table(energy["pj_per_op"], data_class)
                + event["bytes"] * energy["pj_per_byte"]
            ) * 1e-6
            assert event["energy_uj"] == pytest.approx(expected_uj, rel=1e-9)
    # The relaxed figures are the float16 ones on the Snapdragon's DSP: 7500 GFLOP/s and
    # 0.8 pJ/FLOP instead of float32's 3750 and 1.6.
    if profile == "snapdragon-8-gen-2":
        dsp = described["qti-dsp"]
        assert dsp["throughput"]["relaxed_float32"] == dsp["throughput"]["float16"]
        assert (
            dsp["energy"]["pj_per_op"]["relaxed_float32"] == dsp["energy"]["pj_per_op"]["float16"]
        )
