# SPDX-License-Identifier: Apache-2.0
"""Limits of the C API: dimension products that overflow, tensors too large for memory and
absurd operand counts return BAD_DATA / OUT_OF_MEMORY / OP_FAILED, never a crash or a silently
wrong shape."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from mock_nnapi.constants import OperandCode, OperationCode, ResultCode

from .nn import (
    BAD_DATA,
    F32,
    INT32,
    NO_ERROR,
    OP_FAILED,
    last_error,
    lib,
    operand_type,
    ptr,
    u32s,
)

U32_MAX = 2**32 - 1
OUT_OF_MEMORY = ResultCode.OUT_OF_MEMORY


def add_operand_code(arena, model, code, dims) -> int:
    return lib.ANeuralNetworksModel_addOperand(model, ctypes.byref(operand_type(code, dims)))


@pytest.mark.parametrize(
    "dims",
    [
        [U32_MAX, U32_MAX],  # 64-bit element count, wraps a 32-bit product to 1
        [65536, 65536],  # 2^32 elements: 16 GiB of float32
        [2**16, 2**16, 2**16, 2**16, 2**16, 2**16],  # 2^96 elements: overflows uint64 as well
        [1 << 30, 4],  # exactly 4 GiB of float32 bytes (one byte above the limit)
    ],
)
def test_operand_larger_than_4_gib_is_bad_data(arena, dims):
    model = arena.model()
    assert add_operand_code(arena, model, F32, dims) == BAD_DATA
    assert "exceeds" in last_error()


def test_partially_known_operand_with_huge_known_dimensions_is_bad_data(arena):
    model = arena.model()
    assert add_operand_code(arena, model, F32, [0, U32_MAX, U32_MAX]) == BAD_DATA


def test_set_input_type_whose_dimensions_overflow_is_bad_data(arena):
    model = arena.model()
    x = arena.add_operand(model, F32, [0, 0])
    act = arena.add_operand(model, INT32)
    assert arena.set_value(model, act, np.array(0, np.int32)) == NO_ERROR
    out = arena.add_operand(model, F32, [0, 0])
    assert (
        lib.ANeuralNetworksModel_addOperation(
            model, OperationCode.ADD, 3, u32s([x, x, act]), 1, u32s([out])
        )
        == NO_ERROR
    ), last_error()
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 1, u32s([x]), 1, u32s([out])) == 0
    )
    assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR, last_error()
    execution = arena.execution(arena.compilation(model))
    data = arena.keep(np.zeros(4, np.float32))
    huge = operand_type(F32, [U32_MAX, 3])
    code = lib.ANeuralNetworksExecution_setInput(execution, 0, ctypes.byref(huge), ptr(data), 16)
    assert code == BAD_DATA


def test_set_operand_value_length_mismatch_with_huge_length_is_bad_data(arena):
    model = arena.model()
    index = arena.add_operand(model, F32, [2])
    data = arena.keep(np.zeros(2, np.float32))
    assert lib.ANeuralNetworksModel_setOperandValue(model, index, ptr(data), 2**40) == BAD_DATA
    assert lib.ANeuralNetworksModel_setOperandValue(model, index, ptr(data), 2**64 - 1) == BAD_DATA


def _tile_model(arena, input_shape, multiples, multiples_constant):
    """out = TILE(x, multiples); x a model input; multiples a constant or a model input."""
    model = arena.model()
    x = arena.add_operand(model, F32, input_shape)
    m = arena.add_operand(model, OperandCode.TENSOR_INT32, [len(multiples)])
    inputs = [x]
    if multiples_constant:
        code = arena.set_value(model, m, np.array(multiples, np.int32))
        assert code == NO_ERROR, last_error()
    else:
        inputs.append(m)
    out = arena.add_operand(model, F32, [0] * len(input_shape))
    code = lib.ANeuralNetworksModel_addOperation(
        model, OperationCode.TILE, 2, u32s([x, m]), 1, u32s([out])
    )
    return model, inputs, out, code


def _run_single_input(arena, model, inputs, out, value: np.ndarray, out_dims) -> int:
    """Finishes `model` (one model input), runs it on `value`; returns compute's code."""
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(
            model, len(inputs), u32s(inputs), 1, u32s([out])
        )
        == NO_ERROR
    )
    assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR, last_error()
    execution = arena.execution(arena.compilation(model))
    value = arena.keep(value)
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(value), value.nbytes) == 0
    result = arena.keep(np.zeros(int(np.prod(out_dims)), np.float32))
    out_type = operand_type(F32, out_dims)
    code = lib.ANeuralNetworksExecution_setOutput(
        execution, 0, ctypes.byref(out_type), ptr(result), result.nbytes
    )
    assert code == NO_ERROR, last_error()
    return lib.ANeuralNetworksExecution_compute(execution)


def test_tile_whose_output_dimension_overflows_uint32_fails_when_prepared(arena):
    # 65536 * 65537 = 2^32 + 65536: a 32-bit product would wrap to 65536 and be accepted.
    # Android validates at addOperation without the constant's value: the run refuses it.
    model, inputs, out, code = _tile_model(arena, [65536], [65537], multiples_constant=True)
    assert code == NO_ERROR, last_error()
    code = _run_single_input(arena, model, inputs, out, np.zeros(65536, np.float32), [4])
    assert code == OP_FAILED
    assert "does not fit in uint32" in last_error()


def test_tile_overflow_known_only_at_execution_fails_the_run(arena):
    model, inputs, out, code = _tile_model(arena, [65536], [1], multiples_constant=False)
    assert code == NO_ERROR, last_error()
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 2, u32s(inputs), 1, u32s([out]))
        == NO_ERROR
    )
    assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR, last_error()
    execution = arena.execution(arena.compilation(model))
    x = arena.keep(np.zeros(65536, np.float32))
    multiples = arena.keep(np.array([65537], np.int32))
    result = arena.keep(np.zeros(65536, np.float32))
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(x), x.nbytes) == 0
    assert lib.ANeuralNetworksExecution_setInput(execution, 1, None, ptr(multiples), 4) == 0
    out_type = operand_type(F32, [65536])
    assert (
        lib.ANeuralNetworksExecution_setOutput(
            execution, 0, ctypes.byref(out_type), ptr(result), result.nbytes
        )
        == NO_ERROR
    )
    assert lib.ANeuralNetworksExecution_compute(execution) == OP_FAILED
    assert "does not fit in uint32" in last_error()


def test_temporary_larger_than_4_gib_is_out_of_memory(arena):
    """FILL makes a 2^34-byte temporary from a 3-element shape input; ADD reads it. The run must
    fail with OUT_OF_MEMORY before anything is allocated."""
    model = arena.model()
    shape = arena.add_operand(model, OperandCode.TENSOR_INT32, [3])
    value = arena.add_operand(model, OperandCode.FLOAT32)
    assert arena.set_value(model, value, np.array(1.0, np.float32)) == NO_ERROR
    filled = arena.add_operand(model, F32, [0, 0, 0])
    act = arena.add_operand(model, INT32)
    assert arena.set_value(model, act, np.array(0, np.int32)) == NO_ERROR
    out = arena.add_operand(model, F32, [0, 0, 0])
    assert (
        lib.ANeuralNetworksModel_addOperation(
            model, OperationCode.FILL, 2, u32s([shape, value]), 1, u32s([filled])
        )
        == NO_ERROR
    ), last_error()
    assert (
        lib.ANeuralNetworksModel_addOperation(
            model, OperationCode.ADD, 3, u32s([filled, filled, act]), 1, u32s([out])
        )
        == NO_ERROR
    ), last_error()
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 1, u32s([shape]), 1, u32s([out]))
        == NO_ERROR
    )
    assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR, last_error()
    execution = arena.execution(arena.compilation(model))
    dims = arena.keep(np.array([4096, 4096, 256], np.int32))
    result = arena.keep(np.zeros(4, np.float32))
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(dims), 12) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(result), 16) == NO_ERROR
    assert lib.ANeuralNetworksExecution_compute(execution) == OUT_OF_MEMORY
    assert "4 GiB" in last_error()


@pytest.mark.parametrize(
    "operation,block",
    [(OperationCode.DEPTH_TO_SPACE, 65536), (OperationCode.SPACE_TO_DEPTH, 65536)],
)
def test_depth_space_block_whose_square_overflows_fails_when_prepared(arena, operation, block):
    # block * block = 2^32 wraps to 0 in 32-bit arithmetic (a division by zero). A constant's
    # value is checked when the operation is prepared (Android): OP_FAILED at execution.
    model = arena.model()
    x = arena.add_operand(model, F32, [1, 2, 2, 4])
    b = arena.add_operand(model, INT32)
    assert arena.set_value(model, b, np.array(block, np.int32)) == NO_ERROR
    out = arena.add_operand(model, F32, [0, 0, 0, 0])
    code = lib.ANeuralNetworksModel_addOperation(model, operation, 2, u32s([x, b]), 1, u32s([out]))
    assert code == NO_ERROR, last_error()
    code = _run_single_input(arena, model, [x], out, np.zeros(16, np.float32), [1, 2, 2, 4])
    assert code == OP_FAILED


def test_pad_whose_output_dimension_overflows_fails_when_prepared(arena):
    model = arena.model()
    x = arena.add_operand(model, F32, [2, 2])
    pads = arena.add_operand(model, OperandCode.TENSOR_INT32, [2, 2])
    big = 2**31 - 1
    assert arena.set_value(model, pads, np.array([[big, big], [0, 0]], np.int32)) == NO_ERROR
    out = arena.add_operand(model, F32, [0, 0])
    code = lib.ANeuralNetworksModel_addOperation(
        model, OperationCode.PAD, 2, u32s([x, pads]), 1, u32s([out])
    )
    assert code == NO_ERROR, last_error()
    code = _run_single_input(arena, model, [x], out, np.zeros(4, np.float32), [2, 2])
    assert code == OP_FAILED
    assert "does not fit in uint32" in last_error()


def test_concatenation_whose_axis_sum_overflows_is_refused_when_prepared(arena):
    # The axis is a constant: its value (which dimension adds up) is only seen when the
    # operation is prepared, as in Android, so addOperation and finish accept the model. (The
    # inputs, 2 GiB each, are too large to run: the check at preparation is the one TILE's and
    # PAD's tests above reach.)
    model = arena.model()
    big = 2**31 + 1  # two of them exceed 2^32 - 1; 4-byte int8 elements keep each one legal
    a = arena.add_operand(model, OperandCode.TENSOR_QUANT8_ASYMM, [big], scale=1.0)
    b = arena.add_operand(model, OperandCode.TENSOR_QUANT8_ASYMM, [big], scale=1.0)
    axis = arena.add_operand(model, INT32)
    assert arena.set_value(model, axis, np.array(0, np.int32)) == NO_ERROR
    out = arena.add_operand(model, OperandCode.TENSOR_QUANT8_ASYMM, [0], scale=1.0)
    code = lib.ANeuralNetworksModel_addOperation(
        model, OperationCode.CONCATENATION, 3, u32s([a, b, axis]), 1, u32s([out])
    )
    assert code == NO_ERROR, last_error()


def test_absurd_operand_count_and_indices(arena):
    """Tens of thousands of operands are accepted; indices past the end, negative indices and an
    operation naming 2^32-1 operands by index are BAD_DATA."""
    model = arena.model()
    scalar = operand_type(INT32)
    for _ in range(20000):
        assert lib.ANeuralNetworksModel_addOperand(model, ctypes.byref(scalar)) == NO_ERROR
    data = arena.keep(np.array([0], np.int32))
    assert lib.ANeuralNetworksModel_setOperandValue(model, 20000, ptr(data), 4) == BAD_DATA
    assert lib.ANeuralNetworksModel_setOperandValue(model, -1, ptr(data), 4) == BAD_DATA
    assert lib.ANeuralNetworksModel_setOperandValue(model, 2**31 - 1, ptr(data), 4) == BAD_DATA
    code = lib.ANeuralNetworksModel_addOperation(
        model, OperationCode.ADD, 3, u32s([0, 1, U32_MAX]), 1, u32s([3])
    )
    assert code == BAD_DATA
    code = lib.ANeuralNetworksModel_identifyInputsAndOutputs(
        model, 1, u32s([U32_MAX]), 1, u32s([0])
    )
    assert code == BAD_DATA
