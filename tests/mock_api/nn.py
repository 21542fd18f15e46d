# SPDX-License-Identifier: Apache-2.0
"""Raw ctypes helpers for the NNAPI C API tests: handles, operand types, small ADD models.

The tests call the C functions directly (``lib.ANeuralNetworks...``) so that every result code
is visible; these helpers only remove the ctypes boilerplate. An :class:`Arena` owns every
handle a test creates and frees them in reverse order at the end of the test.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
from mock_nnapi.constants import FuseCode, OperandCode, OperationCode, ResultCode

from mock_nnapi import _library

T = TypeVar("T")

lib = _library.load()

NO_ERROR = ResultCode.NO_ERROR
UNEXPECTED_NULL = ResultCode.UNEXPECTED_NULL
BAD_DATA = ResultCode.BAD_DATA
BAD_STATE = ResultCode.BAD_STATE
OP_FAILED = ResultCode.OP_FAILED
OUTPUT_INSUFFICIENT_SIZE = ResultCode.OUTPUT_INSUFFICIENT_SIZE

F32 = OperandCode.TENSOR_FLOAT32
INT32 = OperandCode.INT32
PROT_READ = 1
PROT_WRITE = 2
UINT64_MAX = 2**64 - 1
NULL = None


def operand_type(
    code: int, dims: Sequence[int] | None = None, scale: float = 0.0, zero_point: int = 0
) -> _library.OperandType:
    """``ANeuralNetworksOperandType``; ``dims=None`` means dimensionCount 0 and NULL."""
    value = _library.OperandType()
    value.type = int(code)
    if dims is not None and len(dims) > 0:
        array = (ctypes.c_uint32 * len(dims))(*dims)
        value.dimensionCount = len(dims)
        value.dimensions = ctypes.cast(array, ctypes.POINTER(ctypes.c_uint32))
        value._keepalive = array
    value.scale = scale
    value.zeroPoint = zero_point
    return value


def raw_type(code: int, count: int, with_pointer: bool) -> _library.OperandType:
    """An operand type whose dimensionCount and dimensions pointer may disagree."""
    value = _library.OperandType()
    value.type = int(code)
    value.dimensionCount = count
    if with_pointer:
        array = (ctypes.c_uint32 * 4)(1, 1, 1, 1)
        value.dimensions = ctypes.cast(array, ctypes.POINTER(ctypes.c_uint32))
        value._keepalive = array
    return value


def ref(value: Any) -> Any:
    return ctypes.byref(value) if value is not None else None


def u32s(values: Sequence[int]) -> ctypes.Array:
    """A non-NULL uint32 array (one element even when empty, like a C array)."""
    return (ctypes.c_uint32 * max(len(values), 1))(*values)


def ptr(array: np.ndarray) -> ctypes.c_void_p:
    return array.ctypes.data_as(ctypes.c_void_p)


def handle_array(handles: Sequence[Any]) -> ctypes.Array:
    values = [h.value if isinstance(h, ctypes.c_void_p) else h for h in handles]
    return (ctypes.c_void_p * max(len(values), 1))(*values)


def devices() -> list[ctypes.c_void_p]:
    count = ctypes.c_uint32()
    assert lib.ANeuralNetworks_getDeviceCount(ctypes.byref(count)) == NO_ERROR
    result = []
    for index in range(count.value):
        device = ctypes.c_void_p()
        assert lib.ANeuralNetworks_getDevice(index, ctypes.byref(device)) == NO_ERROR
        result.append(device)
    return result


def last_error() -> str:
    return (lib.MockNnapi_getLastError() or b"").decode()


class Arena:
    """Owns the NNAPI objects of one test; frees them in reverse creation order."""

    def __init__(self) -> None:
        self._frees: list[tuple[str, ctypes.c_void_p]] = []
        self._keep: list[object] = []
        self._fds: list[int] = []
        self._operand_counts: dict[int, int] = {}

    def keep(self, value: T) -> T:
        self._keep.append(value)
        return value

    def own(self, free_function: str, handle: ctypes.c_void_p) -> ctypes.c_void_p:
        self._frees.append((free_function, handle))
        return handle

    def release(self, handle: ctypes.c_void_p) -> None:
        """Frees `handle` now (and forgets it)."""
        for i, (function, owned) in enumerate(self._frees):
            if owned is handle:
                getattr(lib, function)(owned)
                del self._frees[i]
                return
        raise KeyError("handle not owned by this arena")

    def close(self) -> None:
        for function, handle in reversed(self._frees):
            getattr(lib, function)(handle)
        self._frees.clear()
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()
        self._keep.clear()

    # ---- models ----------------------------------------------------------------------------

    def model(self) -> ctypes.c_void_p:
        model = ctypes.c_void_p()
        assert lib.ANeuralNetworksModel_create(ctypes.byref(model)) == NO_ERROR
        return self.own("ANeuralNetworksModel_free", model)

    def add_operand(self, model, code, dims=None, scale=0.0, zero_point=0) -> int:
        t = operand_type(code, dims, scale, zero_point)
        assert lib.ANeuralNetworksModel_addOperand(model, ctypes.byref(t)) == NO_ERROR, last_error()
        index = self._operand_counts.get(model.value, 0)
        self._operand_counts[model.value] = index + 1
        return index

    def set_value(self, model, index: int, array: np.ndarray) -> int:
        array = self.keep(np.ascontiguousarray(array))
        return lib.ANeuralNetworksModel_setOperandValue(model, index, ptr(array), array.nbytes)

    def binary_model(
        self,
        operation: int = OperationCode.ADD,
        shape: Sequence[int] = (2,),
        out_shape: Sequence[int] | None = None,
        activation_input: bool = True,
        activation: int = FuseCode.NONE,
        code: int = F32,
        finish: bool = True,
    ) -> ctypes.c_void_p:
        """``out = operation(in0, in1, act)``: operands 0, 1 (``shape``), 2 (INT32 activation,
        a model input when ``activation_input`` else a constant) and 3 (``out_shape``, default
        ``shape``). Inputs [0, 1(, 2)], output [3] -- the model of Android's TestValidation."""
        model = self.model()
        in0 = self.add_operand(model, code, shape)
        in1 = self.add_operand(model, code, shape)
        act = self.add_operand(model, INT32)
        out = self.add_operand(model, code, shape if out_shape is None else out_shape)
        if not activation_input:
            assert self.set_value(model, act, np.array(activation, np.int32)) == NO_ERROR
        inputs = [in0, in1, act] if activation_input else [in0, in1]
        assert (
            lib.ANeuralNetworksModel_addOperation(
                model, int(operation), 3, u32s([in0, in1, act]), 1, u32s([out])
            )
            == NO_ERROR
        ), last_error()
        assert (
            lib.ANeuralNetworksModel_identifyInputsAndOutputs(
                model, len(inputs), u32s(inputs), 1, u32s([out])
            )
            == NO_ERROR
        ), last_error()
        if finish:
            assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR, last_error()
        return model

    # ---- compilations, executions, bursts ----------------------------------------------------

    def compilation(self, model, on_devices=None, finish: bool = True) -> ctypes.c_void_p:
        compilation = ctypes.c_void_p()
        if on_devices is None:
            code = lib.ANeuralNetworksCompilation_create(model, ctypes.byref(compilation))
        else:
            code = lib.ANeuralNetworksCompilation_createForDevices(
                model, handle_array(on_devices), len(on_devices), ctypes.byref(compilation)
            )
        assert code == NO_ERROR, last_error()
        self.own("ANeuralNetworksCompilation_free", compilation)
        if finish:
            assert lib.ANeuralNetworksCompilation_finish(compilation) == NO_ERROR, last_error()
        return compilation

    def execution(self, compilation) -> ctypes.c_void_p:
        execution = ctypes.c_void_p()
        code = lib.ANeuralNetworksExecution_create(compilation, ctypes.byref(execution))
        assert code == NO_ERROR, last_error()
        return self.own("ANeuralNetworksExecution_free", execution)

    def burst(self, compilation) -> ctypes.c_void_p:
        burst = ctypes.c_void_p()
        assert lib.ANeuralNetworksBurst_create(compilation, ctypes.byref(burst)) == NO_ERROR
        return self.own("ANeuralNetworksBurst_free", burst)

    def add_execution(self, model=None, compilation=None, activation_input=True):
        """A finished ADD compilation's execution with every argument set (2 + 2 = 4 ...)."""
        if compilation is None:
            model = model or self.binary_model(activation_input=activation_input)
            compilation = self.compilation(model)
        execution = self.execution(compilation)
        a = self.keep(np.array([1.0, 2.0], np.float32))
        b = self.keep(np.array([3.0, 4.0], np.float32))
        assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(a), 8) == NO_ERROR
        assert lib.ANeuralNetworksExecution_setInput(execution, 1, None, ptr(b), 8) == NO_ERROR
        if activation_input:
            act = self.keep(np.array([0], np.int32))
            assert lib.ANeuralNetworksExecution_setInput(execution, 2, None, ptr(act), 4) == 0
        out = self.keep(np.zeros(2, np.float32))
        assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(out), 8) == NO_ERROR
        return execution, out

    def start(self, execution) -> tuple[int, ctypes.c_void_p]:
        event = ctypes.c_void_p()
        code = lib.ANeuralNetworksExecution_startCompute(execution, ctypes.byref(event))
        if event.value:
            self.own("ANeuralNetworksEvent_free", event)
        return code, event

    def start_with_dependencies(self, execution, dependencies=(), duration=0):
        event = ctypes.c_void_p()
        code = lib.ANeuralNetworksExecution_startComputeWithDependencies(
            execution,
            handle_array(dependencies) if dependencies else None,
            len(dependencies),
            duration,
            ctypes.byref(event),
        )
        if event.value:
            self.own("ANeuralNetworksEvent_free", event)
        return code, event

    # ---- memories --------------------------------------------------------------------------

    def memfd(self, size: int, data: bytes | None = None) -> int:
        fd = os.memfd_create("mock_nnapi_test")
        os.ftruncate(fd, size)
        if data:
            os.pwrite(fd, data, 0)
        self._fds.append(fd)
        return fd

    def fd_memory(self, size: int, protect: int = PROT_READ | PROT_WRITE, offset: int = 0):
        """A memory over a fresh memfd of ``offset + size`` bytes; returns (memory, fd)."""
        fd = self.memfd(offset + size)
        memory = ctypes.c_void_p()
        code = lib.ANeuralNetworksMemory_createFromFd(
            size, protect, fd, offset, ctypes.byref(memory)
        )
        assert code == NO_ERROR, last_error()
        return self.own("ANeuralNetworksMemory_free", memory), fd

    def desc(self) -> ctypes.c_void_p:
        desc = ctypes.c_void_p()
        assert lib.ANeuralNetworksMemoryDesc_create(ctypes.byref(desc)) == NO_ERROR
        return self.own("ANeuralNetworksMemoryDesc_free", desc)

    def desc_memory(self, roles, dims: Sequence[int] | None = None) -> ctypes.c_void_p:
        """A memory from a descriptor with ``roles`` = [(compilation, "in"|"out", index)]."""
        desc = self.desc()
        for compilation, kind, index in roles:
            function = (
                lib.ANeuralNetworksMemoryDesc_addInputRole
                if kind == "in"
                else lib.ANeuralNetworksMemoryDesc_addOutputRole
            )
            assert function(desc, compilation, index, 1.0) == NO_ERROR, last_error()
        if dims is not None:
            assert lib.ANeuralNetworksMemoryDesc_setDimensions(desc, len(dims), u32s(dims)) == 0
        assert lib.ANeuralNetworksMemoryDesc_finish(desc) == NO_ERROR
        memory = ctypes.c_void_p()
        assert lib.ANeuralNetworksMemory_createFromDesc(desc, ctypes.byref(memory)) == NO_ERROR
        self.release(desc)
        return self.own("ANeuralNetworksMemory_free", memory)


def read_fd(fd: int, size: int, offset: int = 0) -> bytes:
    return os.pread(fd, size, offset)


def floats(fd: int, count: int, offset: int = 0) -> np.ndarray:
    return np.frombuffer(read_fd(fd, 4 * count, offset), np.float32)


def rank_and_dims(execution, index: int = 0) -> tuple[int, int, tuple[int, ...], int]:
    """(rank code, rank, dimensions, dimensions code) of an output."""
    rank = ctypes.c_uint32()
    rank_code = lib.ANeuralNetworksExecution_getOutputOperandRank(
        execution, index, ctypes.byref(rank)
    )
    dims = (ctypes.c_uint32 * 8)()
    dims_code = lib.ANeuralNetworksExecution_getOutputOperandDimensions(execution, index, dims)
    return rank_code, rank.value, tuple(dims[: rank.value]), dims_code


def counter(name: str) -> int:
    value = ctypes.c_uint64()
    assert lib.MockNnapi_getCounter(name.encode(), ctypes.byref(value)) == NO_ERROR
    return int(value.value)
