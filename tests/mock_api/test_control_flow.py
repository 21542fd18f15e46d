# SPDX-License-Identifier: Apache-2.0
"""IF and WHILE (feature level 4): referenced models (setOperandValueFromModel), Android's
signature validation at addOperation, execution semantics from the NDK documentation (IF copies
the chosen branch's outputs; WHILE carries input-output and state-only operands through its body
while its condition model outputs true), nested loops, operands of unknown shape inside the
bodies, the loop timeout, device placement and the modelled cost of a loop."""

from __future__ import annotations

import ctypes
import json
import pathlib
import time
from collections.abc import Sequence

import numpy as np
import pytest
from mock_nnapi.constants import OperandCode, OperationCode, ResultCode

from mock_nnapi import control

from .nn import (
    BAD_DATA,
    F32,
    INT32,
    NO_ERROR,
    devices,
    last_error,
    lib,
    ptr,
    u32s,
)

I32T = OperandCode.TENSOR_INT32
BOOL8 = OperandCode.TENSOR_BOOL8
MODEL = OperandCode.MODEL
MISSED_DEADLINE_TRANSIENT = ResultCode.MISSED_DEADLINE_TRANSIENT
PROFILES = pathlib.Path(__file__).resolve().parents[2] / "mock_nnapi" / "profiles"


class Builder:
    """One model under construction: operands by name, operations, then finish."""

    def __init__(self, arena) -> None:
        self.arena = arena
        self.model = arena.model()

    def operand(self, code: int, dims: Sequence[int] | None = None) -> int:
        return self.arena.add_operand(self.model, code, dims)

    def constant(self, code: int, value: np.ndarray, dims: Sequence[int] | None = None) -> int:
        index = self.operand(code, dims)
        assert self.arena.set_value(self.model, index, value) == NO_ERROR, last_error()
        return index

    def activation(self) -> int:
        return self.constant(INT32, np.array(0, np.int32))

    def reference(self, referenced) -> int:
        index = self.operand(MODEL)
        code = lib.ANeuralNetworksModel_setOperandValueFromModel(self.model, index, referenced)
        assert code == NO_ERROR, last_error()
        return index

    def add_operation(self, operation: int, inputs: Sequence[int], outputs: Sequence[int]) -> int:
        return lib.ANeuralNetworksModel_addOperation(
            self.model, int(operation), len(inputs), u32s(inputs), len(outputs), u32s(outputs)
        )

    def operation(self, operation: int, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        assert self.add_operation(operation, inputs, outputs) == NO_ERROR, last_error()

    def finish(self, inputs: Sequence[int], outputs: Sequence[int]):
        assert (
            lib.ANeuralNetworksModel_identifyInputsAndOutputs(
                self.model, len(inputs), u32s(inputs), len(outputs), u32s(outputs)
            )
            == NO_ERROR
        ), last_error()
        assert lib.ANeuralNetworksModel_finish(self.model) == NO_ERROR, last_error()
        return self.model


def binary_model(arena, operation: int, code: int, shape: Sequence[int]):
    """out = operation(a, b): inputs [a, b], output [out]."""
    m = Builder(arena)
    a, b = m.operand(code, shape), m.operand(code, shape)
    out = m.operand(code, shape)
    m.operation(operation, [a, b, m.activation()], [out])
    return m.finish([a, b], [out])


def less_model(arena, extra: Sequence[tuple[int, Sequence[int] | None]] = (), first=0, second=1):
    """A condition model: inputs (i, ..., n) of the listed types; output LESS(input `first`,
    input `second`), a TENSOR_BOOL8 [1]."""
    m = Builder(arena)
    inputs = [m.operand(code, dims) for code, dims in extra]
    out = m.operand(BOOL8, [1])
    m.operation(OperationCode.LESS, [inputs[first], inputs[second]], [out])
    return m.finish(inputs, [out])


def run(arena, model, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray], setup=None):
    """Compiles and computes `model`; returns (result code, execution)."""
    compilation = arena.compilation(model)
    execution = arena.execution(compilation)
    for i, value in enumerate(inputs):
        value = arena.keep(np.ascontiguousarray(value))
        code = lib.ANeuralNetworksExecution_setInput(execution, i, None, ptr(value), value.nbytes)
        assert code == NO_ERROR, last_error()
    for i, value in enumerate(outputs):
        code = lib.ANeuralNetworksExecution_setOutput(execution, i, None, ptr(value), value.nbytes)
        assert code == NO_ERROR, last_error()
    if setup is not None:
        setup(execution)
    return lib.ANeuralNetworksExecution_compute(execution), execution


# ---- IF -----------------------------------------------------------------------------------------


def if_model(arena, shape=(3,)):
    """out = cond ? a + b : a * b."""
    then_model = binary_model(arena, OperationCode.ADD, F32, shape)
    else_model = binary_model(arena, OperationCode.MUL, F32, shape)
    m = Builder(arena)
    cond = m.operand(BOOL8, [1])
    a, b = m.operand(F32, shape), m.operand(F32, shape)
    out = m.operand(F32, shape)
    m.operation(
        OperationCode.IF, [cond, m.reference(then_model), m.reference(else_model), a, b], [out]
    )
    return m.finish([cond, a, b], [out])


@pytest.mark.parametrize("condition", [True, False])
def test_if_selects_the_branch(arena, condition):
    model = if_model(arena)
    a = np.array([1.5, -2.0, 3.0], np.float32)
    b = np.array([4.0, 0.5, -1.0], np.float32)
    out = np.zeros(3, np.float32)
    code, _ = run(arena, model, [np.array([condition], np.bool_), a, b], [out])
    assert code == NO_ERROR, last_error()
    np.testing.assert_array_equal(out, a + b if condition else a * b)


def test_if_branch_of_unknown_shape_gives_the_output_its_shape(arena):
    # The branches declare their operands with unknown dimensions; the values fix them.
    then_model = binary_model(arena, OperationCode.SUB, F32, [0, 0])
    else_model = binary_model(arena, OperationCode.ADD, F32, [0, 0])
    m = Builder(arena)
    cond = m.operand(BOOL8, [1])
    a, b = m.operand(F32, [2, 0]), m.operand(F32, [2, 0])
    out = m.operand(F32, [0, 0])
    m.operation(
        OperationCode.IF, [cond, m.reference(then_model), m.reference(else_model), a, b], [out]
    )
    model = m.finish([cond, a, b], [out])
    compilation = arena.compilation(model)
    execution = arena.execution(compilation)
    a_value = arena.keep(np.arange(6, dtype=np.float32).reshape(2, 3))
    b_value = arena.keep(np.full((2, 3), 10, np.float32))
    cond_value = arena.keep(np.array([True]))
    dims = (ctypes.c_uint32 * 2)(2, 3)
    t = arena.keep(_type(F32, dims))
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(cond_value), 1) == 0
    assert (
        lib.ANeuralNetworksExecution_setInput(execution, 1, ctypes.byref(t), ptr(a_value), 24) == 0
    )
    assert (
        lib.ANeuralNetworksExecution_setInput(execution, 2, ctypes.byref(t), ptr(b_value), 24) == 0
    )
    out_value = np.zeros(8, np.float32)
    assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(out_value), 32) == 0
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR, last_error()
    dims_out = (ctypes.c_uint32 * 2)()
    assert lib.ANeuralNetworksExecution_getOutputOperandDimensions(execution, 0, dims_out) == 0
    assert tuple(dims_out) == (2, 3)
    np.testing.assert_array_equal(out_value[:6].reshape(2, 3), a_value - b_value)


def _type(code: int, dims) -> object:
    from mock_nnapi import _library

    value = _library.OperandType()
    value.type = int(code)
    value.dimensionCount = len(dims)
    value.dimensions = ctypes.cast(dims, ctypes.POINTER(ctypes.c_uint32))
    value._keepalive = dims
    return value


# ---- WHILE --------------------------------------------------------------------------------------


def counting_body(arena):
    """Body of (i, acc, n): (i + 1, acc * 2)."""
    m = Builder(arena)
    i, acc, n = m.operand(I32T, [1]), m.operand(F32, [2]), m.operand(I32T, [1])
    one = m.constant(I32T, np.array([1], np.int32), [1])
    two = m.constant(F32, np.array([2, 2], np.float32), [2])
    i_next, acc_next = m.operand(I32T, [1]), m.operand(F32, [2])
    m.operation(OperationCode.ADD, [i, one, m.activation()], [i_next])
    m.operation(OperationCode.MUL, [acc, two, m.activation()], [acc_next])
    return m.finish([i, acc, n], [i_next, acc_next])


def counting_while(arena):
    """WHILE (i < n) { i += 1; acc *= 2 }: inputs (i0, acc0, n), outputs (i, acc)."""
    cond = less_model(arena, [(I32T, [1]), (F32, [2]), (I32T, [1])], 0, 2)
    body = counting_body(arena)
    m = Builder(arena)
    i, acc, n = m.operand(I32T, [1]), m.operand(F32, [2]), m.operand(I32T, [1])
    i_out, acc_out = m.operand(I32T, [1]), m.operand(F32, [2])
    m.operation(
        OperationCode.WHILE, [m.reference(cond), m.reference(body), i, acc, n], [i_out, acc_out]
    )
    return m.finish([i, acc, n], [i_out, acc_out])


@pytest.mark.parametrize(("start", "limit"), [(0, 5), (3, 3), (7, 2), (0, 1)])
def test_while_counts(arena, start, limit):
    model = counting_while(arena)
    acc0 = np.array([1.0, -0.75], np.float32)
    i_out, acc_out = np.zeros(1, np.int32), np.zeros(2, np.float32)
    inputs = [np.array([start], np.int32), acc0, np.array([limit], np.int32)]
    code, _ = run(arena, model, inputs, [i_out, acc_out])
    assert code == NO_ERROR, last_error()
    # numpy reference of the documented semantics
    i, acc = start, acc0.copy()
    while i < limit:
        i, acc = i + 1, acc * 2
    assert i_out[0] == i
    np.testing.assert_array_equal(acc_out, acc)


def test_while_state_only_operand_is_carried_but_not_output(arena):
    # Outer operands: acc (input-output), i (state-only), n (input-only); body outputs (acc, i).
    cond = less_model(arena, [(F32, [2]), (I32T, [1]), (I32T, [1])], 1, 2)
    m = Builder(arena)
    acc, i, n = m.operand(F32, [2]), m.operand(I32T, [1]), m.operand(I32T, [1])
    one = m.constant(I32T, np.array([1], np.int32), [1])
    step = m.constant(F32, np.array([0.5, -1.0], np.float32), [2])
    acc_next, i_next = m.operand(F32, [2]), m.operand(I32T, [1])
    m.operation(OperationCode.ADD, [acc, step, m.activation()], [acc_next])
    m.operation(OperationCode.ADD, [i, one, m.activation()], [i_next])
    body = m.finish([acc, i, n], [acc_next, i_next])

    outer = Builder(arena)
    acc, i, n = outer.operand(F32, [2]), outer.operand(I32T, [1]), outer.operand(I32T, [1])
    acc_out = outer.operand(F32, [2])
    outer.operation(
        OperationCode.WHILE, [outer.reference(cond), outer.reference(body), acc, i, n], [acc_out]
    )
    model = outer.finish([acc, i, n], [acc_out])
    out = np.zeros(2, np.float32)
    inputs = [np.array([1.0, 2.0], np.float32), np.array([0], np.int32), np.array([4], np.int32)]
    code, _ = run(arena, model, inputs, [out])
    assert code == NO_ERROR, last_error()
    np.testing.assert_array_equal(out, np.array([1.0, 2.0], np.float32) + 4 * np.array([0.5, -1.0]))


def test_nested_while(arena):
    # Outer: WHILE (j < n) { acc = inner(acc, m); j += 1 };
    # inner: WHILE (i < m) { acc += 1; i += 1 }, i starting at 0 each time: acc0 + n * m.
    inner_cond = less_model(arena, [(F32, [1]), (I32T, [1]), (I32T, [1])], 1, 2)
    b = Builder(arena)
    acc, i, lim = b.operand(F32, [1]), b.operand(I32T, [1]), b.operand(I32T, [1])
    acc_next, i_next = b.operand(F32, [1]), b.operand(I32T, [1])
    b.operation(
        OperationCode.ADD,
        [acc, b.constant(F32, np.array([1], np.float32), [1]), b.activation()],
        [acc_next],
    )
    b.operation(
        OperationCode.ADD,
        [i, b.constant(I32T, np.array([1], np.int32), [1]), b.activation()],
        [i_next],
    )
    inner_body = b.finish([acc, i, lim], [acc_next, i_next])

    # Outer body (acc, j, n, m): (inner(acc, 0, m), j + 1).
    ob = Builder(arena)
    acc, j, n, lim = (
        ob.operand(F32, [1]),
        ob.operand(I32T, [1]),
        ob.operand(I32T, [1]),
        ob.operand(I32T, [1]),
    )
    zero = ob.constant(I32T, np.array([0], np.int32), [1])
    acc_next, j_next = ob.operand(F32, [1]), ob.operand(I32T, [1])
    ob.operation(
        OperationCode.WHILE,
        [ob.reference(inner_cond), ob.reference(inner_body), acc, zero, lim],
        [acc_next],
    )
    ob.operation(
        OperationCode.ADD,
        [j, ob.constant(I32T, np.array([1], np.int32), [1]), ob.activation()],
        [j_next],
    )
    outer_body = ob.finish([acc, j, n, lim], [acc_next, j_next])
    outer_cond = less_model(arena, [(F32, [1]), (I32T, [1]), (I32T, [1]), (I32T, [1])], 1, 2)

    m = Builder(arena)
    acc, j, n, lim = (
        m.operand(F32, [1]),
        m.operand(I32T, [1]),
        m.operand(I32T, [1]),
        m.operand(I32T, [1]),
    )
    out = m.operand(F32, [1])
    m.operation(
        OperationCode.WHILE,
        [m.reference(outer_cond), m.reference(outer_body), acc, j, n, lim],
        [out],
    )
    model = m.finish([acc, j, n, lim], [out])
    result = np.zeros(1, np.float32)
    inputs = [
        np.array([0.25], np.float32),
        np.array([0], np.int32),
        np.array([3], np.int32),
        np.array([4], np.int32),
    ]
    code, _ = run(arena, model, inputs, [result])
    assert code == NO_ERROR, last_error()
    assert result[0] == 0.25 + 3 * 4


def test_while_value_changes_shape_every_iteration(arena):
    # Body (x, i, n): (concat(x, x), i + 1): x doubles its length each iteration; the body's
    # operands and the WHILE's output are declared with unknown dimensions.
    cond = less_model(arena, [(F32, [0]), (I32T, [1]), (I32T, [1])], 1, 2)
    b = Builder(arena)
    x, i, n = b.operand(F32, [0]), b.operand(I32T, [1]), b.operand(I32T, [1])
    axis = b.constant(INT32, np.array(0, np.int32))
    x_next, i_next = b.operand(F32, [0]), b.operand(I32T, [1])
    b.operation(OperationCode.CONCATENATION, [x, x, axis], [x_next])
    b.operation(
        OperationCode.ADD,
        [i, b.constant(I32T, np.array([1], np.int32), [1]), b.activation()],
        [i_next],
    )
    body = b.finish([x, i, n], [x_next, i_next])
    m = Builder(arena)
    x, i, n = m.operand(F32, [2]), m.operand(I32T, [1]), m.operand(I32T, [1])
    out = m.operand(F32, [0])
    m.operation(OperationCode.WHILE, [m.reference(cond), m.reference(body), x, i, n], [out])
    model = m.finish([x, i, n], [out])
    result = np.zeros(64, np.float32)
    x0 = np.array([1.0, 2.0], np.float32)
    code, execution = run(
        arena, model, [x0, np.array([0], np.int32), np.array([4], np.int32)], [result]
    )
    assert code == NO_ERROR, last_error()
    dims = (ctypes.c_uint32 * 1)()
    assert lib.ANeuralNetworksExecution_getOutputOperandDimensions(execution, 0, dims) == NO_ERROR
    assert dims[0] == 32
    np.testing.assert_array_equal(result[:32], np.tile(x0, 16))


def test_while_output_buffer_too_small(arena):
    cond = less_model(arena, [(F32, [0]), (I32T, [1]), (I32T, [1])], 1, 2)
    b = Builder(arena)
    x, i, n = b.operand(F32, [0]), b.operand(I32T, [1]), b.operand(I32T, [1])
    x_next, i_next = b.operand(F32, [0]), b.operand(I32T, [1])
    b.operation(
        OperationCode.CONCATENATION, [x, x, b.constant(INT32, np.array(0, np.int32))], [x_next]
    )
    b.operation(
        OperationCode.ADD,
        [i, b.constant(I32T, np.array([1], np.int32), [1]), b.activation()],
        [i_next],
    )
    body = b.finish([x, i, n], [x_next, i_next])
    m = Builder(arena)
    x, i, n = m.operand(F32, [1]), m.operand(I32T, [1]), m.operand(I32T, [1])
    out = m.operand(F32, [0])
    m.operation(OperationCode.WHILE, [m.reference(cond), m.reference(body), x, i, n], [out])
    model = m.finish([x, i, n], [out])
    result = np.zeros(4, np.float32)
    code, execution = run(
        arena,
        model,
        [np.ones(1, np.float32), np.array([0], np.int32), np.array([3], np.int32)],
        [result],
    )
    assert code == ResultCode.OUTPUT_INSUFFICIENT_SIZE
    dims = (ctypes.c_uint32 * 1)()
    code = lib.ANeuralNetworksExecution_getOutputOperandDimensions(execution, 0, dims)
    assert code == ResultCode.OUTPUT_INSUFFICIENT_SIZE and dims[0] == 8


# ---- the loop timeout ---------------------------------------------------------------------------


def endless_while(arena):
    """WHILE (i < n) { i += 0 }: never ends for i0 < n."""
    cond = less_model(arena, [(I32T, [1]), (I32T, [1])], 0, 1)
    b = Builder(arena)
    i, n = b.operand(I32T, [1]), b.operand(I32T, [1])
    i_next = b.operand(I32T, [1])
    b.operation(
        OperationCode.ADD,
        [i, b.constant(I32T, np.array([0], np.int32), [1]), b.activation()],
        [i_next],
    )
    body = b.finish([i, n], [i_next])
    m = Builder(arena)
    i, n = m.operand(I32T, [1]), m.operand(I32T, [1])
    out = m.operand(I32T, [1])
    m.operation(OperationCode.WHILE, [m.reference(cond), m.reference(body), i, n], [out])
    return m.finish([i, n], [out])


def test_loop_timeout_constants():
    assert lib.ANeuralNetworks_getDefaultLoopTimeout() == 2_000_000_000
    assert lib.ANeuralNetworks_getMaximumLoopTimeout() == 15_000_000_000


def test_endless_loop_misses_its_loop_timeout(arena):
    model = endless_while(arena)
    out = np.zeros(1, np.int32)

    def short_timeout(execution) -> None:
        assert lib.ANeuralNetworksExecution_setLoopTimeout(execution, 20_000_000) == NO_ERROR

    began = time.monotonic()
    code, execution = run(
        arena, model, [np.array([0], np.int32), np.array([1], np.int32)], [out], short_timeout
    )
    elapsed = time.monotonic() - began
    assert code == MISSED_DEADLINE_TRANSIENT, last_error()
    assert "WHILE loop timed out" in last_error()
    assert 0.02 <= elapsed < 1.9  # the 20 ms timeout, not the 2 s default
    # A failed execution has no output shapes.
    rank = ctypes.c_uint32()
    assert (
        lib.ANeuralNetworksExecution_getOutputOperandRank(execution, 0, ctypes.byref(rank))
        == ResultCode.BAD_STATE
    )


def test_endless_loop_default_timeout_is_two_seconds(arena):
    model = endless_while(arena)
    began = time.monotonic()
    code, _ = run(
        arena, model, [np.array([0], np.int32), np.array([1], np.int32)], [np.zeros(1, np.int32)]
    )
    elapsed = time.monotonic() - began
    assert code == MISSED_DEADLINE_TRANSIENT
    assert 2.0 <= elapsed < 10.0


def test_a_loop_that_ends_within_the_timeout_succeeds(arena):
    model = counting_while(arena)
    out_i, out_acc = np.zeros(1, np.int32), np.zeros(2, np.float32)

    def timeout(execution) -> None:
        assert lib.ANeuralNetworksExecution_setLoopTimeout(execution, 1_000_000_000) == NO_ERROR

    inputs = [np.array([0], np.int32), np.ones(2, np.float32), np.array([3], np.int32)]
    code, _ = run(arena, model, inputs, [out_i, out_acc], timeout)
    assert code == NO_ERROR and out_i[0] == 3


# ---- validation (Android's result codes) -------------------------------------------------------


def test_if_validation_failures(arena):
    branch = binary_model(arena, OperationCode.ADD, F32, [3])
    int_branch = binary_model(arena, OperationCode.ADD, I32T, [3])
    m = Builder(arena)
    cond = m.operand(BOOL8, [1])
    wide_cond = m.operand(BOOL8, [2])
    float_cond = m.operand(F32, [1])
    a, b, c = m.operand(F32, [3]), m.operand(F32, [3]), m.operand(F32, [3])
    wrong_shape = m.operand(F32, [4])
    out, out2 = m.operand(F32, [3]), m.operand(F32, [3])
    ref = m.reference(branch)
    int_ref = m.reference(int_branch)
    unset_model = m.operand(MODEL)
    op_if = OperationCode.IF
    # The valid operation, to show the failures below come from the one change each makes.
    assert m.add_operation(op_if, [cond, ref, ref, a, b], [out]) == NO_ERROR, last_error()
    cases = {
        "too few inputs": ([cond, ref], [out2]),
        "branch input count": ([cond, ref, ref, a, b, c], [out2]),
        "branch output count": ([cond, ref, ref, a, b], [out2, c]),
        "condition of shape [2]": ([wide_cond, ref, ref, a, b], [out2]),
        "condition of type FLOAT32": ([float_cond, ref, ref, a, b], [out2]),
        "branch input type": ([cond, ref, int_ref, a, b], [out2]),
        "branch input shape": ([cond, ref, ref, a, wrong_shape], [out2]),
        "output shape": ([cond, ref, ref, a, b], [wrong_shape]),
        "no model set": ([cond, ref, unset_model, a, b], [out2]),
        "not a model": ([cond, ref, a, a, b], [out2]),
    }
    for name, (inputs, outputs) in cases.items():
        assert m.add_operation(op_if, inputs, outputs) == BAD_DATA, name


def test_while_validation_failures(arena):
    cond = less_model(arena, [(I32T, [1]), (F32, [2]), (I32T, [1])], 0, 2)
    body = counting_body(arena)
    two_output_cond = Builder(arena)
    ins = [
        two_output_cond.operand(I32T, [1]),
        two_output_cond.operand(F32, [2]),
        two_output_cond.operand(I32T, [1]),
    ]
    v1, v2 = two_output_cond.operand(BOOL8, [1]), two_output_cond.operand(BOOL8, [1])
    two_output_cond.operation(OperationCode.LESS, [ins[0], ins[2]], [v1])
    two_output_cond.operation(OperationCode.GREATER, [ins[0], ins[2]], [v2])
    two_output_cond = two_output_cond.finish(ins, [v1, v2])
    int_cond = Builder(arena)  # outputs a TENSOR_INT32 instead of a condition
    ins = [int_cond.operand(I32T, [1]), int_cond.operand(F32, [2]), int_cond.operand(I32T, [1])]
    sum_ = int_cond.operand(I32T, [1])
    int_cond.operation(OperationCode.ADD, [ins[0], ins[2], int_cond.activation()], [sum_])
    int_cond = int_cond.finish(ins, [sum_])
    # A body whose second output (FLOAT32 [3]) does not match the input it replaces ([2]).
    bad_body = Builder(arena)
    i, acc, n = bad_body.operand(I32T, [1]), bad_body.operand(F32, [2]), bad_body.operand(I32T, [1])
    i_next = bad_body.operand(I32T, [1])
    acc3 = bad_body.operand(F32, [3])
    bad_body.operation(OperationCode.ADD, [i, n, bad_body.activation()], [i_next])
    bad_body.operation(
        OperationCode.CONCATENATION,
        [
            acc,
            bad_body.constant(F32, np.zeros(1, np.float32), [1]),
            bad_body.constant(INT32, np.array(0, np.int32)),
        ],
        [acc3],
    )
    bad_body = bad_body.finish([i, acc, n], [i_next, acc3])

    m = Builder(arena)
    i, acc, n = m.operand(I32T, [1]), m.operand(F32, [2]), m.operand(I32T, [1])
    float_n = m.operand(F32, [1])
    out_i, out_acc, spare = m.operand(I32T, [1]), m.operand(F32, [2]), m.operand(F32, [2])
    c, bd = m.reference(cond), m.reference(body)
    op_while = OperationCode.WHILE
    assert m.add_operation(op_while, [c, bd, i, acc, n], [out_i, out_acc]) == NO_ERROR, last_error()
    cases = {
        "too few inputs": ([c, bd], [spare]),
        "condition input count": ([c, bd, i, acc], [spare]),
        "condition with two outputs": ([m.reference(two_output_cond), bd, i, acc, n], [spare]),
        "condition output not a TENSOR_BOOL8": ([m.reference(int_cond), bd, i, acc, n], [spare]),
        "input type": ([c, bd, i, acc, float_n], [spare]),
        "more outputs than the body": ([c, bd, i, acc, n], [out_i, spare, spare]),
        "output type": ([c, bd, i, acc, n], [spare]),
        "body output differs from its input": ([c, m.reference(bad_body), i, acc, n], [spare]),
        "body is not a model": ([c, i, i, acc, n], [spare]),
    }
    for name, (inputs, outputs) in cases.items():
        assert m.add_operation(op_while, inputs, outputs) == BAD_DATA, name


def test_model_operand_needs_a_model_at_finish(arena):
    m = Builder(arena)
    m.operand(MODEL)  # never given a model
    a, b, out = m.operand(F32, [1]), m.operand(F32, [1]), m.operand(F32, [1])
    m.operation(OperationCode.ADD, [a, b, m.activation()], [out])
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(m.model, 2, u32s([a, b]), 1, u32s([out]))
        == 0
    )
    assert lib.ANeuralNetworksModel_finish(m.model) == BAD_DATA


def test_referenced_model_must_be_finished(arena):
    unfinished = arena.model()
    m = Builder(arena)
    index = m.operand(MODEL)
    code = lib.ANeuralNetworksModel_setOperandValueFromModel(m.model, index, unfinished)
    assert code == ResultCode.BAD_STATE


# ---- devices and the cost model ---------------------------------------------------------------


def _device_named(name: str):
    for device in devices():
        text = ctypes.c_char_p()
        assert lib.ANeuralNetworksDevice_getName(device, ctypes.byref(text)) == NO_ERROR
        if text.value is not None and text.value.decode() == name:
            return device
    raise AssertionError(f"no device {name}")


def _supported(model, device) -> bool:
    flags = (ctypes.c_bool * 1)()
    code = lib.ANeuralNetworksModel_getSupportedOperationsForDevices(
        model, (ctypes.c_void_p * 1)(device.value), 1, flags
    )
    assert code == NO_ERROR, last_error()
    return bool(flags[0])


def test_control_flow_runs_on_the_runtime_cpu_unless_a_device_lists_it(arena, tmp_path):
    profile = json.loads((PROFILES / "snapdragon-8-gen-2.json").read_text())
    with control.Profile("snapdragon-8-gen-2"):
        model = if_model(arena)
        assert not _supported(model, _device_named("qti-gpu"))
        assert not _supported(model, _device_named("qti-dsp"))
        assert _supported(model, _device_named("nnapi-reference"))
        # No listed device can run IF: Android's createForDevices compilation fails.
        compilation = ctypes.c_void_p()
        gpu = _device_named("qti-gpu")
        assert (
            lib.ANeuralNetworksCompilation_createForDevices(
                model, (ctypes.c_void_p * 1)(gpu.value), 1, ctypes.byref(compilation)
            )
            == NO_ERROR
        )
        arena.own("ANeuralNetworksCompilation_free", compilation)
        assert lib.ANeuralNetworksCompilation_finish(compilation) == BAD_DATA
        # With every device, the IF runs (on the runtime's CPU) and computes.
        out = np.zeros(3, np.float32)
        ones = np.ones(3, np.float32)
        code, _ = run(arena, model, [np.array([False]), ones * 3, ones * 4], [out])
        assert code == NO_ERROR, last_error()
        np.testing.assert_array_equal(out, ones * 12)
    # A device whose support includes IF runs it, when it supports its branches' operations
    # too: the GPU ("all" operations) once IF is no longer excluded; the DSP listing IF still
    # not, for its data types leave out TENSOR_FLOAT32 (the branches' ADD and MUL).
    for device in profile["devices"]:
        support = device["support"]
        if device["name"] == "qti-gpu":
            support["exclude_operations"].remove("IF")
        if device["name"] == "qti-dsp":
            support["operations"].append("IF")
    profile["name"] = "gpu-with-if"
    path = tmp_path / "gpu-with-if.json"
    path.write_text(json.dumps(profile))
    with control.Profile(path):
        model = if_model(arena)
        assert _supported(model, _device_named("qti-gpu"))
        assert not _supported(model, _device_named("qti-dsp"))


def _modelled_duration(arena, limit: int) -> int:
    model = counting_while(arena)
    cpu = devices()[0]
    compilation = arena.compilation(model, on_devices=[cpu])
    execution = arena.execution(compilation)
    assert lib.ANeuralNetworksExecution_setMeasureTiming(execution, True) == NO_ERROR
    values = [np.array([0], np.int32), np.ones(2, np.float32), np.array([limit], np.int32)]
    for k, value in enumerate(values):
        value = arena.keep(value)
        assert (
            lib.ANeuralNetworksExecution_setInput(execution, k, None, ptr(value), value.nbytes) == 0
        )
    outs = [arena.keep(np.zeros(1, np.int32)), arena.keep(np.zeros(2, np.float32))]
    for k, value in enumerate(outs):
        assert (
            lib.ANeuralNetworksExecution_setOutput(execution, k, None, ptr(value), value.nbytes)
            == 0
        )
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR, last_error()
    duration = ctypes.c_uint64()
    code = lib.ANeuralNetworksExecution_getDuration(
        execution, 0, ctypes.byref(duration)
    )  # ON_HARDWARE
    assert code == NO_ERROR
    return duration.value


def test_modelled_work_of_a_loop_grows_with_its_iterations(arena):
    # Modelled (cost-model) durations: the body's operations are costed for every iteration.
    one = _modelled_duration(arena, 1)
    many = _modelled_duration(arena, 50)
    assert many > one


def _levels_profile(tmp_path):
    """A profile with one accelerator per feature level 1..8 ("all" operations) and a CPU."""
    helpers = pytest.importorskip("mock_profiles.helpers")
    devices = [
        helpers.device_entry(f"fl{level}", "ACCELERATOR", feature_level=level)
        for level in range(1, 9)
    ]
    profile = helpers.profile_with([*devices, helpers.device_entry("cpu", "CPU")], "levels")
    path = tmp_path / "levels.json"
    path.write_text(json.dumps(profile))
    return path


def test_feature_level_is_the_highest_of_the_operation_and_its_branches(arena, tmp_path):
    with control.Profile(_levels_profile(tmp_path)):
        model = if_model(arena)  # ADD and MUL branches: FL1
        supported = [_supported(model, _device_named(f"fl{level}")) for level in range(1, 9)]
        assert supported == [False, False, False, True, True, True, True, True]
        # A branch with BATCH_MATMUL (FL6) makes the IF need FL6.
        matmul = binary_model(arena, OperationCode.ADD, F32, [2, 2])
        b = Builder(arena)
        x, y = b.operand(F32, [2, 2]), b.operand(F32, [2, 2])
        out = b.operand(F32, [2, 2])
        adj_x = b.constant(OperandCode.BOOL, np.array(False))
        adj_y = b.constant(OperandCode.BOOL, np.array(False))
        b.operation(OperationCode.BATCH_MATMUL, [x, y, adj_x, adj_y], [out])
        batch_matmul = b.finish([x, y], [out])
        m = Builder(arena)
        cond = m.operand(BOOL8, [1])
        x, y, out = m.operand(F32, [2, 2]), m.operand(F32, [2, 2]), m.operand(F32, [2, 2])
        m.operation(
            OperationCode.IF, [cond, m.reference(matmul), m.reference(batch_matmul), x, y], [out]
        )
        model = m.finish([cond, x, y], [out])
        supported = [_supported(model, _device_named(f"fl{level}")) for level in range(1, 9)]
        assert supported == [False] * 5 + [True] * 3


def test_cost_only_run_of_a_loop_ends(arena):
    # Cost-only runs skip the kernels: the condition model's output is never computed and reads
    # as false, so the loop runs no iteration (instead of spinning until its loop timeout).
    model = counting_while(arena)
    control.set_cost_only_execution(True)
    try:
        began = time.monotonic()
        inputs = [np.array([0], np.int32), np.ones(2, np.float32), np.array([5], np.int32)]
        code, _ = run(arena, model, inputs, [np.zeros(1, np.int32), np.zeros(2, np.float32)])
        assert code == NO_ERROR, last_error()
        assert time.monotonic() - began < 1.5
    finally:
        control.set_cost_only_execution(False)
