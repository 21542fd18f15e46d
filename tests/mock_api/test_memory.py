# SPDX-License-Identifier: Apache-2.0
"""Memories from file descriptors (memfd) and from memory descriptors: creation, roles,
dimensions, ANeuralNetworksMemory_copy, and their use as execution arguments (TestValidation.cpp
ValidationTestMemoryDesc, ValidationTestExecutionDeviceMemory)."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest
from mock_nnapi.constants import OperandCode

from .nn import (
    BAD_DATA,
    BAD_STATE,
    F32,
    INT32,
    NO_ERROR,
    OP_FAILED,
    PROT_READ,
    PROT_WRITE,
    UNEXPECTED_NULL,
    floats,
    last_error,
    lib,
    operand_type,
    ptr,
    u32s,
)

RW = PROT_READ | PROT_WRITE


# ---- memories from file descriptors ----------------------------------------------------------


def test_create_from_fd(arena):
    fd = arena.memfd(64)
    memory = ctypes.c_void_p()
    create = lib.ANeuralNetworksMemory_createFromFd
    assert create(64, RW, fd, 0, None) == UNEXPECTED_NULL
    assert create(0, RW, fd, 0, ctypes.byref(memory)) == BAD_DATA
    assert create(64, RW, -1, 0, ctypes.byref(memory)) == BAD_DATA
    closed = os.dup(fd)
    os.close(closed)
    # Android dup()s the descriptor first and reports a failure as UNEXPECTED_NULL.
    assert create(64, RW, closed, 0, ctypes.byref(memory)) == UNEXPECTED_NULL
    # Mapping past the end of the file would crash on first use: the mock refuses it now.
    assert create(65, RW, fd, 0, ctypes.byref(memory)) == BAD_DATA
    assert create(32, RW, fd, 33, ctypes.byref(memory)) == BAD_DATA
    assert memory.value is None
    assert create(60, RW, fd, 4, ctypes.byref(memory)) == NO_ERROR  # unaligned offsets work
    arena.own("ANeuralNetworksMemory_free", memory)
    lib.ANeuralNetworksMemory_free(None)


def test_create_from_ahardware_buffer(arena):
    memory = ctypes.c_void_p()
    assert lib.ANeuralNetworksMemory_createFromAHardwareBuffer(None, ctypes.byref(memory)) == (
        UNEXPECTED_NULL
    )
    buffer = ctypes.c_uint64(0)
    assert lib.ANeuralNetworksMemory_createFromAHardwareBuffer(ctypes.byref(buffer), None) == (
        UNEXPECTED_NULL
    )


def test_fd_memory_as_inputs_and_output_at_offsets(arena):
    execution = arena.execution(arena.compilation(arena.binary_model(activation_input=False)))
    # One memfd, mapped from byte 4: inputs at memory offsets 0 and 8, output at 16.
    fd = arena.memfd(4 + 24)
    os.pwrite(fd, np.array([1, 2, 10, 20], np.float32).tobytes(), 4)
    memory = ctypes.c_void_p()
    assert lib.ANeuralNetworksMemory_createFromFd(24, RW, fd, 4, ctypes.byref(memory)) == 0
    arena.own("ANeuralNetworksMemory_free", memory)
    set_in = lib.ANeuralNetworksExecution_setInputFromMemory
    assert set_in(execution, 0, None, memory, 0, 8) == NO_ERROR
    assert set_in(execution, 1, None, memory, 8, 8) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setOutputFromMemory(execution, 0, None, memory, 16, 8) == 0
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    np.testing.assert_array_equal(floats(fd, 2, 4 + 16), [11, 22])


def test_a_file_truncated_under_a_memory_fails_the_execution_instead_of_sigbus(arena):
    """Touching a mapping past the end of its file raises SIGBUS (Android maps files too); the
    mock checks the file's size when an execution starts and fails it with OP_FAILED."""
    execution = arena.execution(arena.compilation(arena.binary_model(activation_input=False)))
    fd = arena.memfd(24)
    os.pwrite(fd, np.array([1, 2, 10, 20], np.float32).tobytes(), 0)
    memory = ctypes.c_void_p()
    assert lib.ANeuralNetworksMemory_createFromFd(24, RW, fd, 0, ctypes.byref(memory)) == 0
    arena.own("ANeuralNetworksMemory_free", memory)
    set_in = lib.ANeuralNetworksExecution_setInputFromMemory
    assert set_in(execution, 0, None, memory, 0, 8) == NO_ERROR
    assert set_in(execution, 1, None, memory, 8, 8) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setOutputFromMemory(execution, 0, None, memory, 16, 8) == 0
    os.ftruncate(fd, 12)
    assert lib.ANeuralNetworksExecution_compute(execution) == OP_FAILED
    assert "was truncated to 12 bytes; its mapped region needs 24" in last_error()


def test_constant_from_fd_memory(arena):
    fd = arena.memfd(16)
    os.pwrite(fd, np.array([0, 0, 5, 6], np.float32).tobytes(), 0)
    memory = ctypes.c_void_p()
    assert lib.ANeuralNetworksMemory_createFromFd(16, PROT_READ, fd, 0, ctypes.byref(memory)) == 0
    arena.own("ANeuralNetworksMemory_free", memory)
    model = arena.model()
    x = arena.add_operand(model, F32, [2])
    c = arena.add_operand(model, F32, [2])
    act = arena.add_operand(model, INT32)
    out = arena.add_operand(model, F32, [2])
    assert lib.ANeuralNetworksModel_setOperandValueFromMemory(model, c, memory, 8, 8) == NO_ERROR
    assert arena.set_value(model, act, np.array(0, np.int32)) == NO_ERROR
    assert (
        lib.ANeuralNetworksModel_addOperation(model, 0, 3, u32s([x, c, act]), 1, u32s([out])) == 0
    )
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 1, u32s([x]), 1, u32s([out])) == 0
    )
    assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR
    execution = arena.execution(arena.compilation(model))
    a = arena.keep(np.array([1, 1], np.float32))
    result = arena.keep(np.zeros(2, np.float32))
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(a), 8) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(result), 8) == NO_ERROR
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    np.testing.assert_array_equal(result, [6, 7])


# ---- memory descriptors ----------------------------------------------------------------------


def test_desc_create_and_free():
    assert lib.ANeuralNetworksMemoryDesc_create(None) == UNEXPECTED_NULL
    lib.ANeuralNetworksMemoryDesc_free(None)


@pytest.mark.parametrize("kind", ["Input", "Output"])
def test_desc_add_role(arena, kind):
    compilation = arena.compilation(arena.binary_model(), finish=False)
    desc = arena.desc()
    add = getattr(lib, f"ANeuralNetworksMemoryDesc_add{kind}Role")
    assert add(None, compilation, 0, 1.0) == UNEXPECTED_NULL
    assert add(desc, None, 0, 1.0) == UNEXPECTED_NULL
    # Android answers BAD_DATA (not BAD_STATE) for an unfinished compilation here.
    assert add(desc, compilation, 0, 1.0) == BAD_DATA
    assert lib.ANeuralNetworksCompilation_finish(compilation) == NO_ERROR
    assert add(desc, compilation, 999, 1.0) == BAD_DATA
    for frequency in (10.0, 0.0, -1.0):
        assert add(desc, compilation, 0, frequency) == BAD_DATA
    assert add(desc, compilation, 0, 1.0) == NO_ERROR
    assert add(desc, compilation, 0, 1.0) == BAD_DATA  # the same operand twice
    assert lib.ANeuralNetworksMemoryDesc_finish(desc) == NO_ERROR
    assert add(desc, compilation, 0, 1.0) == BAD_STATE


def add_compilation(arena, code, dims, scale=0.0, zero_point=0):
    """createAndCompileAddModelWithType: ADD of two model inputs of the given type."""
    model = arena.model()
    for _ in range(2):
        arena.add_operand(model, code, dims, scale, zero_point)
    arena.add_operand(model, INT32)
    arena.add_operand(model, code, dims, scale, zero_point)
    assert lib.ANeuralNetworksModel_addOperation(model, 0, 3, u32s([0, 1, 2]), 1, u32s([3])) == 0
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 3, u32s([0, 1, 2]), 1, u32s([3]))
        == 0
    )
    assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR
    return arena.compilation(model)


QUANT8 = OperandCode.TENSOR_QUANT8_ASYMM


@pytest.mark.parametrize(
    "good, bad",
    [
        ((F32, [2], 0.0, 0), (OperandCode.TENSOR_FLOAT16, [2], 0.0, 0)),  # data type
        ((QUANT8, [2], 1.0, 0), (QUANT8, [2], 0.5, 0)),  # scale
        ((QUANT8, [2], 1.0, 0), (QUANT8, [2], 1.0, 128)),  # zero point
        ((QUANT8, [2], 1.0, 0), (QUANT8, [2, 1], 1.0, 0)),  # rank
        ((QUANT8, [2], 1.0, 0), (QUANT8, [1], 1.0, 0)),  # dimensions
    ],
)
def test_desc_roles_must_agree(arena, good, bad):
    good_compilation = add_compilation(arena, *good)
    bad_compilation = add_compilation(arena, *bad)
    for first in ("Input", "Output"):
        desc = arena.desc()
        add_first = getattr(lib, f"ANeuralNetworksMemoryDesc_add{first}Role")
        assert add_first(desc, good_compilation, 0, 1.0) == NO_ERROR
        assert lib.ANeuralNetworksMemoryDesc_addInputRole(desc, bad_compilation, 0, 1.0) == BAD_DATA
        assert lib.ANeuralNetworksMemoryDesc_addOutputRole(desc, bad_compilation, 0, 1.0) == (
            BAD_DATA
        )
        arena.release(desc)


def test_desc_set_dimensions(arena):
    compilation = arena.compilation(arena.binary_model(), finish=False)
    desc = arena.desc()
    set_dims = lib.ANeuralNetworksMemoryDesc_setDimensions
    assert set_dims(None, 1, u32s([2])) == UNEXPECTED_NULL
    assert set_dims(desc, 1, None) == UNEXPECTED_NULL
    assert set_dims(desc, 1, u32s([2])) == NO_ERROR
    assert set_dims(desc, 1, u32s([3])) == BAD_DATA  # incompatible dimensions
    assert set_dims(desc, 2, u32s([2, 1])) == BAD_DATA  # incompatible rank
    assert set_dims(desc, 1, u32s([0])) == NO_ERROR  # unknown is compatible
    assert set_dims(desc, 0, None) == NO_ERROR
    assert lib.ANeuralNetworksCompilation_finish(compilation) == NO_ERROR
    assert lib.ANeuralNetworksMemoryDesc_addInputRole(desc, compilation, 0, 1.0) == NO_ERROR
    assert lib.ANeuralNetworksMemoryDesc_finish(desc) == NO_ERROR
    assert set_dims(desc, 1, u32s([2])) == BAD_STATE


def test_desc_scalar_dimensions(arena):
    compilation = arena.compilation(arena.binary_model())  # input 2 is an INT32 scalar
    before = arena.desc()
    assert lib.ANeuralNetworksMemoryDesc_setDimensions(before, 1, u32s([2])) == NO_ERROR
    assert lib.ANeuralNetworksMemoryDesc_addInputRole(before, compilation, 2, 1.0) == BAD_DATA
    after = arena.desc()
    assert lib.ANeuralNetworksMemoryDesc_addInputRole(after, compilation, 2, 1.0) == NO_ERROR
    assert lib.ANeuralNetworksMemoryDesc_setDimensions(after, 0, None) == NO_ERROR
    assert lib.ANeuralNetworksMemoryDesc_setDimensions(after, 1, u32s([2])) == BAD_DATA


def test_desc_finish_and_create_memory(arena):
    compilation = arena.compilation(arena.binary_model())
    desc = arena.desc()
    memory = ctypes.c_void_p()
    assert lib.ANeuralNetworksMemoryDesc_finish(None) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksMemoryDesc_finish(desc) == BAD_DATA  # no role
    assert lib.ANeuralNetworksMemory_createFromDesc(None, ctypes.byref(memory)) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksMemory_createFromDesc(desc, None) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksMemory_createFromDesc(desc, ctypes.byref(memory)) == BAD_STATE
    assert lib.ANeuralNetworksMemoryDesc_addInputRole(desc, compilation, 0, 1.0) == NO_ERROR
    assert lib.ANeuralNetworksMemoryDesc_finish(desc) == NO_ERROR
    assert lib.ANeuralNetworksMemoryDesc_finish(desc) == BAD_STATE
    assert lib.ANeuralNetworksMemory_createFromDesc(desc, ctypes.byref(memory)) == NO_ERROR
    arena.own("ANeuralNetworksMemory_free", memory)


def write_dynamic(arena, compilation, memory, values: np.ndarray) -> int:
    """Runs out = in0 + in1 with ``values`` for both inputs into ``memory`` (the output)."""
    execution = arena.execution(compilation)
    values = arena.keep(np.ascontiguousarray(values, np.float32))
    t = arena.keep(operand_type(F32, values.shape))
    for i in (0, 1):
        code = lib.ANeuralNetworksExecution_setInput(
            execution, i, ctypes.byref(t), ptr(values), values.nbytes
        )
        assert code == NO_ERROR
    assert (
        lib.ANeuralNetworksExecution_setInput(
            execution, 2, None, ptr(arena.keep(np.zeros(1, np.int32))), 4
        )
        == 0
    )
    assert lib.ANeuralNetworksExecution_setOutputFromMemory(execution, 0, None, memory, 0, 0) == 0
    code = lib.ANeuralNetworksExecution_compute(execution)
    arena.release(execution)
    return code


def test_desc_with_unknown_dimensions_is_allocated_by_the_first_write(arena):
    # The roles leave the size unknown ([0]): the memory is created without a buffer, gets one
    # when an execution writes it, and follows the shape of each later write.
    compilation = arena.compilation(arena.binary_model(shape=(0,), out_shape=(0,)))
    reader = one_input_compilation(arena, dynamic=True)
    desc = arena.desc()
    assert lib.ANeuralNetworksMemoryDesc_addOutputRole(desc, compilation, 0, 1.0) == NO_ERROR
    assert lib.ANeuralNetworksMemoryDesc_addInputRole(desc, reader, 0, 1.0) == NO_ERROR
    assert lib.ANeuralNetworksMemoryDesc_finish(desc) == NO_ERROR
    memory = ctypes.c_void_p()
    assert lib.ANeuralNetworksMemory_createFromDesc(desc, ctypes.byref(memory)) == NO_ERROR
    arena.own("ANeuralNetworksMemory_free", memory)
    # No data yet: copying it out fails.
    fd_memory, fd = arena.fd_memory(12)
    assert lib.ANeuralNetworksMemory_copy(memory, fd_memory) == BAD_DATA
    first = np.array([1.0, 2.0, 3.0], np.float32)
    assert write_dynamic(arena, compilation, memory, first) == NO_ERROR, last_error()
    assert lib.ANeuralNetworksMemory_copy(memory, fd_memory) == NO_ERROR
    np.testing.assert_array_equal(floats(fd, 3), first * 2)
    # Read back as an input of shape [3] (the shape of the last write).
    execution = arena.execution(reader)
    t3 = operand_type(F32, [3])
    assert (
        lib.ANeuralNetworksExecution_setInputFromMemory(
            execution, 0, ctypes.byref(t3), memory, 0, 0
        )
        == 0
    )
    assert (
        lib.ANeuralNetworksExecution_setInput(
            execution, 1, None, ptr(arena.keep(np.zeros(1, np.int32))), 4
        )
        == 0
    )
    out = arena.keep(np.zeros(3, np.float32))
    assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(out), 12) == NO_ERROR
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR, last_error()
    np.testing.assert_array_equal(out, first * 2)
    # A larger write grows the memory; a 12-byte copy no longer fits, a 20-byte one does.
    second = np.arange(5, dtype=np.float32)
    assert write_dynamic(arena, compilation, memory, second) == NO_ERROR, last_error()
    assert lib.ANeuralNetworksMemory_copy(memory, fd_memory) == BAD_DATA
    big_memory, big_fd = arena.fd_memory(20)
    assert lib.ANeuralNetworksMemory_copy(memory, big_memory) == NO_ERROR
    np.testing.assert_array_equal(floats(big_fd, 5), second * 2)
    # The old shape is no longer what the memory holds.
    stale = arena.execution(reader)
    assert (
        lib.ANeuralNetworksExecution_setInputFromMemory(stale, 0, ctypes.byref(t3), memory, 0, 0)
        == 0
    )
    assert (
        lib.ANeuralNetworksExecution_setInput(
            stale, 1, None, ptr(arena.keep(np.zeros(1, np.int32))), 4
        )
        == 0
    )
    assert lib.ANeuralNetworksExecution_setOutput(stale, 0, None, ptr(out), 12) == NO_ERROR
    assert lib.ANeuralNetworksExecution_compute(stale) == OP_FAILED
    # A copy into another dynamic memory takes the source's size and dimensions.
    other = ctypes.c_void_p()
    assert lib.ANeuralNetworksMemory_createFromDesc(desc, ctypes.byref(other)) == NO_ERROR
    arena.own("ANeuralNetworksMemory_free", other)
    assert lib.ANeuralNetworksMemory_copy(memory, other) == NO_ERROR
    assert lib.ANeuralNetworksMemory_copy(other, big_memory) == NO_ERROR
    np.testing.assert_array_equal(floats(big_fd, 5), second * 2)


# ---- ANeuralNetworksMemory_copy (ValidationTestMemoryDesc.MemoryCopying) -------------------


def test_memory_copying(arena):
    good_size, bad_size_1, bad_size_2 = 8, 4, 16
    good_fd_memory, good_fd = arena.fd_memory(good_size)
    bad_fd_memory_1, _ = arena.fd_memory(bad_size_1)
    bad_fd_memory_2, _ = arena.fd_memory(bad_size_2)
    good = add_compilation(arena, F32, [1, 2])
    bad_1 = add_compilation(arena, F32, [2])
    bad_2 = add_compilation(arena, F32, [2, 1])
    good_device_1 = arena.desc_memory([(good, "in", 0)])
    good_device_2 = arena.desc_memory([(good, "in", 0)])
    bad_device_1 = arena.desc_memory([(bad_1, "in", 0)])
    bad_device_2 = arena.desc_memory([(bad_2, "in", 0)])
    copy = lib.ANeuralNetworksMemory_copy
    assert copy(None, good_device_1) == UNEXPECTED_NULL
    assert copy(good_device_1, None) == UNEXPECTED_NULL
    # fd -> fd: sizes must match.
    assert copy(good_fd_memory, bad_fd_memory_1) == BAD_DATA
    assert copy(good_fd_memory, bad_fd_memory_2) == BAD_DATA
    assert copy(bad_fd_memory_1, good_fd_memory) == BAD_DATA
    assert copy(bad_fd_memory_2, good_fd_memory) == BAD_DATA
    # fd -> device memory.
    assert copy(bad_fd_memory_1, good_device_1) == BAD_DATA
    assert copy(bad_fd_memory_2, good_device_1) == BAD_DATA
    # device memory -> fd: the source must hold data.
    assert copy(good_device_1, good_fd_memory) == BAD_DATA
    assert copy(good_fd_memory, good_device_1) == NO_ERROR
    assert copy(good_device_1, bad_fd_memory_1) == BAD_DATA
    # A failed copy into a device memory leaves it without data.
    assert copy(bad_fd_memory_1, good_device_1) == BAD_DATA
    assert copy(good_device_1, good_fd_memory) == BAD_DATA
    assert copy(good_fd_memory, good_device_1) == NO_ERROR
    assert copy(good_device_1, bad_fd_memory_2) == BAD_DATA
    # device -> device.
    assert copy(good_device_2, good_device_1) == BAD_DATA  # uninitialized source
    assert copy(good_fd_memory, bad_device_1) == NO_ERROR
    assert copy(bad_device_1, good_device_1) == BAD_DATA  # incompatible rank
    assert copy(good_fd_memory, bad_device_2) == NO_ERROR
    assert copy(bad_device_2, good_device_1) == BAD_DATA  # incompatible dimensions
    assert copy(good_fd_memory, good_device_2) == NO_ERROR
    assert copy(bad_fd_memory_1, good_device_2) == BAD_DATA  # deinitializes good_device_2
    assert copy(good_device_2, good_device_1) == BAD_DATA
    # A round trip keeps the data.
    os.pwrite(good_fd, np.array([3, 4], np.float32).tobytes(), 0)
    assert copy(good_fd_memory, good_device_2) == NO_ERROR
    assert copy(good_device_2, good_device_1) == NO_ERROR
    assert copy(good_device_1, good_fd_memory) == NO_ERROR
    np.testing.assert_array_equal(floats(good_fd, 2), [3, 4])


# ---- device memories as execution arguments (ValidationTestExecutionDeviceMemory) ---------


def one_input_compilation(arena, dynamic=False):
    """out = in0 + 0 with a constant in1 and a model-input activation (so that a run can be
    made to fail: activation 999 is refused at run time, as Android's CPU executor does)."""
    dims = [0] if dynamic else [1]
    model = arena.model()
    x = arena.add_operand(model, F32, dims)
    c = arena.add_operand(model, F32, [1])
    act = arena.add_operand(model, INT32)
    out = arena.add_operand(model, F32, dims)
    assert arena.set_value(model, c, np.zeros(1, np.float32)) == NO_ERROR
    assert (
        lib.ANeuralNetworksModel_addOperation(model, 0, 3, u32s([x, c, act]), 1, u32s([out])) == 0
    )
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 2, u32s([x, act]), 1, u32s([out]))
        == 0
    )
    assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR
    return arena.compilation(model)


def run_with_memory(arena, compilation, memory, as_input, activation=0, value=1.0):
    execution = arena.execution(compilation)
    data = arena.keep(np.array([value], np.float32))
    act = arena.keep(np.array([activation], np.int32))
    if as_input:
        assert (
            lib.ANeuralNetworksExecution_setInputFromMemory(execution, 0, None, memory, 0, 0) == 0
        )
        assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(data), 4) == 0
    else:
        assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(data), 4) == 0
        assert (
            lib.ANeuralNetworksExecution_setOutputFromMemory(execution, 0, None, memory, 0, 0) == 0
        )
    assert lib.ANeuralNetworksExecution_setInput(execution, 1, None, ptr(act), 4) == NO_ERROR
    code = lib.ANeuralNetworksExecution_compute(execution)
    arena.release(execution)
    return code, float(data[0])


def test_device_memory_as_input(arena):
    compilation = one_input_compilation(arena)
    init = one_input_compilation(arena)
    memory = arena.desc_memory([(compilation, "in", 0), (init, "out", 0)])
    # Uninitialized memory as input.
    assert run_with_memory(arena, compilation, memory, as_input=True)[0] == OP_FAILED
    # Initialize it with a run writing 5, then read it back through a run.
    assert run_with_memory(arena, init, memory, as_input=False, value=5.0)[0] == NO_ERROR
    assert run_with_memory(arena, compilation, memory, as_input=True) == (NO_ERROR, 5.0)
    # The memory is deinitialized between setInputFromMemory and compute.
    execution = arena.execution(compilation)
    out = arena.keep(np.zeros(1, np.float32))
    act = arena.keep(np.zeros(1, np.int32))
    assert lib.ANeuralNetworksExecution_setInputFromMemory(execution, 0, None, memory, 0, 0) == 0
    assert lib.ANeuralNetworksExecution_setInput(execution, 1, None, ptr(act), 4) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(out), 4) == NO_ERROR
    assert run_with_memory(arena, init, memory, as_input=False, activation=999)[0] == OP_FAILED
    assert lib.ANeuralNetworksExecution_compute(execution) == OP_FAILED
    # Bad offset and length, and a role the descriptor does not list.
    other = arena.execution(compilation)
    assert lib.ANeuralNetworksExecution_setInputFromMemory(other, 0, None, memory, 1, 0) == BAD_DATA
    assert lib.ANeuralNetworksExecution_setInputFromMemory(other, 0, None, memory, 0, 4) == BAD_DATA
    assert (
        lib.ANeuralNetworksExecution_setOutputFromMemory(other, 0, None, memory, 0, 0) == BAD_DATA
    )
    assert lib.ANeuralNetworksExecution_setInputFromMemory(other, 1, None, memory, 0, 0) == BAD_DATA


def test_device_memory_as_output(arena):
    compilation = one_input_compilation(arena)
    memory = arena.desc_memory([(compilation, "out", 0)])
    execution = arena.execution(compilation)
    set_out = lib.ANeuralNetworksExecution_setOutputFromMemory
    assert set_out(execution, 0, None, memory, 1, 0) == BAD_DATA
    assert set_out(execution, 0, None, memory, 0, 4) == BAD_DATA
    assert lib.ANeuralNetworksExecution_setInputFromMemory(execution, 0, None, memory, 0, 0) == (
        BAD_DATA
    )
    # A successful run initializes the memory: copy it out to check the value.
    assert run_with_memory(arena, compilation, memory, as_input=False, value=7.0)[0] == NO_ERROR
    fd_memory, fd = arena.fd_memory(4)
    assert lib.ANeuralNetworksMemory_copy(memory, fd_memory) == NO_ERROR
    np.testing.assert_array_equal(floats(fd, 1), [7])


def test_device_memory_dynamic_shape(arena):
    compilation = one_input_compilation(arena, dynamic=True)
    init = one_input_compilation(arena)
    memory = arena.desc_memory([(compilation, "in", 0), (init, "out", 0)], dims=[1])
    assert run_with_memory(arena, init, memory, as_input=False, value=2.0)[0] == NO_ERROR
    execution = arena.execution(compilation)
    bad = operand_type(F32, [2])
    good = operand_type(F32, [1])
    set_in = lib.ANeuralNetworksExecution_setInputFromMemory
    assert set_in(execution, 0, ctypes.byref(bad), memory, 0, 0) == BAD_DATA  # incompatible
    assert set_in(execution, 0, ctypes.byref(good), memory, 0, 0) == NO_ERROR
    output_memory = arena.desc_memory([(compilation, "out", 0)], dims=[1])
    other = arena.execution(compilation)
    assert (
        lib.ANeuralNetworksExecution_setOutputFromMemory(
            other, 0, ctypes.byref(bad), output_memory, 0, 0
        )
        == BAD_DATA
    )
