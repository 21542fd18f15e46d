# SPDX-License-Identifier: Apache-2.0
"""GATHER and EMBEDDING_LOOKUP against numpy.take: axes, index ranks, dtypes, bad indices."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode, ResultCode

from .helpers import DTYPES_AND_INT32, expect_error, expect_failed_when_prepared, sample
from .op_tester import OpTester


def gather_tester(x, axis, indices, out_shape, scale=0.0, zero_point=0, constant=False):
    indices = np.asarray(indices, np.int32)
    tester = (
        OpTester(OperationCode.GATHER)
        .input(x, scale=scale, zero_point=zero_point)
        .scalar(OperandCode.INT32, axis)
    )
    tester = tester.constant(indices) if constant else tester.input(indices)
    return tester.output(OpTester.default_code(x), out_shape, scale, zero_point)


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES_AND_INT32)
@pytest.mark.parametrize(
    ("shape", "axis", "indices"),
    [
        ((5,), 0, [4, 0, 0, 2]),
        ((4, 3), 0, [[3, 1], [0, 0]]),
        ((4, 3), -1, [2, 0]),
        ((2, 5, 3), 1, [1, 4, 1]),
        ((2, 3, 4, 2), -2, [[0], [3]]),
    ],
)
def test_gather(dtype, scale, zero_point, shape, axis, indices):
    x = sample(shape, dtype)
    expected = np.take(x, np.array(indices), axis=axis)
    result = gather_tester(x, axis, indices, expected.shape, scale, zero_point, constant=True)
    np.testing.assert_array_equal(result.dynamic_outputs(axis < 0).run()[0], expected)


def test_gather_embedding_rows_fed_at_execution():
    table = sample((50, 16), np.float16)
    tokens = np.array([[3, 49, 0, 3]], np.int32)
    expected = table[tokens]
    result = gather_tester(table, 0, tokens, expected.shape).dynamic_outputs().run()[0]
    np.testing.assert_array_equal(result, expected)


def test_gather_index_out_of_range():
    x = sample((4, 3), np.float32)
    expect_failed_when_prepared(gather_tester(x, 0, [1, 4], (2, 3), constant=True))
    expect_failed_when_prepared(gather_tester(x, 1, [-1], (4, 1), constant=True))
    expect_error(gather_tester(x, 0, [1, 4], (2, 3)).run, ResultCode.OP_FAILED)


def test_gather_rejects_bad_axis_and_requantisation():
    x = sample((4, 3), np.float32)
    expect_failed_when_prepared(gather_tester(x, 2, [0], (4, 1), constant=True))
    expect_failed_when_prepared(gather_tester(x, -3, [0], (1, 3), constant=True))
    q = sample((4, 3), np.uint8)
    tester = (
        OpTester(OperationCode.GATHER)
        .input(q, scale=0.5, zero_point=0)
        .scalar(OperandCode.INT32, 0)
        .constant(np.array([0], np.int32))
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (1, 3), 0.25, 0)
    )
    expect_error(tester.build)


# ---- EMBEDDING_LOOKUP --------------------------------------------------------------------------


def lookup_tester(lookups, values, out_shape, scale=0.0, zero_point=0):
    return (
        OpTester(OperationCode.EMBEDDING_LOOKUP)
        .input(np.asarray(lookups, np.int32))
        .input(values, scale=scale, zero_point=zero_point)
        .output(OpTester.default_code(values), out_shape, scale, zero_point)
    )


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES_AND_INT32)
@pytest.mark.parametrize("shape", [(6, 4), (5, 2, 3)])
def test_embedding_lookup(dtype, scale, zero_point, shape):
    values = sample(shape, dtype)
    lookups = [shape[0] - 1, 0, 2, 2]
    expected = values[lookups]
    result = lookup_tester(lookups, values, expected.shape, scale, zero_point)
    np.testing.assert_array_equal(result.dynamic_outputs(len(shape) == 3).run()[0], expected)


def test_embedding_lookup_rejects_bad_input():
    values = sample((4, 3), np.float32)
    expect_error(lookup_tester([0, 4], values, (2, 3)).run, ResultCode.OP_FAILED)
    expect_error(lookup_tester([0, -1], values, (2, 3)).run, ResultCode.OP_FAILED)
    expect_error(lookup_tester([0], sample((4,), np.float32), (1,)).build)
    expect_error(lookup_tester([[0]], values, (1, 3)).build)
