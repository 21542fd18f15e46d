# SPDX-License-Identifier: Apache-2.0
"""The dynamic output shape protocol (nnapi-facts.md section 2b): an output declared with unknown
dimensions or rank gets OUTPUT_INSUFFICIENT_SIZE and its real dimensions when the buffer is too
small; a second execution with a large enough buffer succeeds."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from .nn import (
    BAD_DATA,
    F32,
    INT32,
    NO_ERROR,
    OUTPUT_INSUFFICIENT_SIZE,
    lib,
    operand_type,
    ptr,
    rank_and_dims,
    u32s,
)

X = np.arange(6, dtype=np.float32).reshape(2, 1, 3)
Y = np.arange(4, dtype=np.float32).reshape(4, 1)
EXPECTED = X + Y  # broadcast to (2, 4, 3)


def broadcast_model(arena, out_dims):
    """ADD of inputs [2, 1, 3] and [4, 1] into an output declared as ``out_dims`` (None: unknown
    rank)."""
    model = arena.model()
    x = arena.add_operand(model, F32, X.shape)
    y = arena.add_operand(model, F32, Y.shape)
    act = arena.add_operand(model, INT32)
    out = arena.add_operand(model, F32, out_dims)
    assert arena.set_value(model, act, np.array(0, np.int32)) == NO_ERROR
    assert (
        lib.ANeuralNetworksModel_addOperation(model, 0, 3, u32s([x, y, act]), 1, u32s([out])) == 0
    )
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 2, u32s([x, y]), 1, u32s([out]))
        == 0
    )
    assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR
    return model


def prepared_execution(arena, compilation, out_elements, reusable=False, out_type=None):
    execution = arena.execution(compilation)
    if reusable:
        assert lib.ANeuralNetworksExecution_setReusable(execution, True) == NO_ERROR
    x = arena.keep(X.copy())
    y = arena.keep(Y.copy())
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(x), x.nbytes) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setInput(execution, 1, None, ptr(y), y.nbytes) == NO_ERROR
    out = arena.keep(np.full(max(out_elements, 1), -1, np.float32))
    type_arg = ctypes.byref(out_type) if out_type is not None else None
    code = lib.ANeuralNetworksExecution_setOutput(
        execution, 0, type_arg, ptr(out), 4 * out_elements if out_elements else 4
    )
    assert code == NO_ERROR
    return execution, out


@pytest.mark.parametrize("out_dims", [[0, 0, 0], [2, 0, 3], None], ids=["zeros", "partial", "rank"])
@pytest.mark.parametrize("mode", ["compute", "start"])
def test_insufficient_then_sufficient(arena, out_dims, mode):
    compilation = arena.compilation(broadcast_model(arena, out_dims))

    def run(execution):
        if mode == "compute":
            return lib.ANeuralNetworksExecution_compute(execution)
        code, event = arena.start(execution)
        assert code == NO_ERROR
        return lib.ANeuralNetworksEvent_wait(event)

    small, _ = prepared_execution(arena, compilation, 5)
    assert run(small) == OUTPUT_INSUFFICIENT_SIZE
    # The real dimensions are reported, with OUTPUT_INSUFFICIENT_SIZE for the short output.
    assert rank_and_dims(small) == (
        OUTPUT_INSUFFICIENT_SIZE,
        3,
        (2, 4, 3),
        OUTPUT_INSUFFICIENT_SIZE,
    )
    large, out = prepared_execution(arena, compilation, EXPECTED.size)
    assert run(large) == NO_ERROR
    assert rank_and_dims(large) == (NO_ERROR, 3, (2, 4, 3), NO_ERROR)
    np.testing.assert_array_equal(out.reshape(EXPECTED.shape), EXPECTED)


def test_larger_buffer_than_needed(arena):
    compilation = arena.compilation(broadcast_model(arena, [0, 0, 0]))
    execution, out = prepared_execution(arena, compilation, 100)
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    assert rank_and_dims(execution)[2] == (2, 4, 3)
    np.testing.assert_array_equal(out[: EXPECTED.size].reshape(EXPECTED.shape), EXPECTED)


def test_reusable_execution_reports_each_run(arena):
    compilation = arena.compilation(broadcast_model(arena, None))
    execution, _ = prepared_execution(arena, compilation, 5, reusable=True)
    assert lib.ANeuralNetworksExecution_compute(execution) == OUTPUT_INSUFFICIENT_SIZE
    assert rank_and_dims(execution)[0] == OUTPUT_INSUFFICIENT_SIZE
    # Reusing it with the same short buffer fails the same way (reset between runs).
    assert lib.ANeuralNetworksExecution_compute(execution) == OUTPUT_INSUFFICIENT_SIZE


def test_set_output_type_fills_in_dimensions(arena):
    compilation = arena.compilation(broadcast_model(arena, [2, 0, 3]))
    full = operand_type(F32, [2, 4, 3])
    execution, out = prepared_execution(arena, compilation, EXPECTED.size, out_type=full)
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    np.testing.assert_array_equal(out.reshape(EXPECTED.shape), EXPECTED)
    # A type may not override a dimension the model fixed.
    other = arena.execution(compilation)
    wrong = operand_type(F32, [3, 4, 3])
    buffer = arena.keep(np.zeros(36, np.float32))
    assert lib.ANeuralNetworksExecution_setOutput(
        other, 0, ctypes.byref(wrong), ptr(buffer), 144
    ) == (BAD_DATA)
    # Known dimensions fix the size: a short buffer is refused at setOutput.
    assert lib.ANeuralNetworksExecution_setOutput(other, 0, ctypes.byref(full), ptr(buffer), 8) == (
        BAD_DATA
    )


def test_declared_output_dimensions_are_checked(arena):
    # An output declared [2, 4, 3] with an exact buffer works; the op computes the same shape.
    compilation = arena.compilation(broadcast_model(arena, [2, 4, 3]))
    execution, out = prepared_execution(arena, compilation, EXPECTED.size)
    np.testing.assert_array_equal(out, -1)  # not computed yet
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    assert rank_and_dims(execution) == (NO_ERROR, 3, (2, 4, 3), NO_ERROR)
    np.testing.assert_array_equal(out.reshape(EXPECTED.shape), EXPECTED)
