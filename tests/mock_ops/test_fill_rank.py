# SPDX-License-Identifier: Apache-2.0
"""FILL and RANK: shapes, value types, shapes fed at execution, validation."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode, ResultCode

from .helpers import expect_error, expect_failed_when_prepared
from .op_tester import NUMPY_DTYPES, OpTester

VALUE_TYPES = [
    (OperandCode.TENSOR_FLOAT32, OperandCode.FLOAT32, 2.5, np.float32),
    (OperandCode.TENSOR_FLOAT16, OperandCode.FLOAT16, -1.25, np.float16),
    (OperandCode.TENSOR_INT32, OperandCode.INT32, -7, np.int32),
]


def fill_tester(shape, tensor, scalar, value, as_input=True, out_shape=None):
    """FILL with the shape as a model input, or (as_input=False, for validation tests) as a
    constant with the value as the model input (a model needs at least one input)."""
    dims = np.array(shape, np.int32)
    tester = OpTester(OperationCode.FILL)
    if as_input:
        tester = tester.input(dims).scalar(scalar, value)
    else:
        tester = tester.constant(dims).input(np.array(value, NUMPY_DTYPES[scalar]), code=scalar)
    return tester.output(tensor, out_shape or tuple(shape))


@pytest.mark.parametrize(("tensor", "scalar", "value", "dtype"), VALUE_TYPES)
@pytest.mark.parametrize("shape", [(1,), (3, 2), (2, 1, 4), (1, 2, 3, 4, 2)])
def test_fill(tensor, scalar, value, dtype, shape):
    result = fill_tester(shape, tensor, scalar, value).dynamic_outputs(len(shape) == 3).run()[0]
    np.testing.assert_array_equal(result, np.full(shape, value, dtype))


def test_fill_bad_shape_fed_at_execution():
    bad = fill_tester((2, -5), OperandCode.TENSOR_FLOAT32, OperandCode.FLOAT32, 3.0, True, (2, 5))
    expect_error(bad.run, ResultCode.OP_FAILED)
    constant_shape = fill_tester(
        (2, 5), OperandCode.TENSOR_FLOAT32, OperandCode.FLOAT32, 3.0, False
    )
    constant_shape.build()


def test_fill_rejects_bad_arguments():
    expect_error(fill_tester((2, 3), OperandCode.TENSOR_FLOAT32, OperandCode.INT32, 1, False).build)
    expect_error(
        fill_tester((2, 3), OperandCode.TENSOR_FLOAT16, OperandCode.FLOAT32, 1.0, False).build
    )
    quantised = (
        OpTester(OperationCode.FILL)
        .constant(np.array([2, 3], np.int32))
        .input(np.array(1, np.int32), code=OperandCode.INT32)
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (2, 3), 0.5, 0)
    )
    expect_error(quantised.build)
    expect_failed_when_prepared(
        fill_tester((2, -3), OperandCode.TENSOR_FLOAT32, OperandCode.FLOAT32, 1.0, True, (2, 3))
    )
    expect_failed_when_prepared(
        fill_tester((2, 3), OperandCode.TENSOR_FLOAT32, OperandCode.FLOAT32, 1.0, True, (3, 2))
    )


@pytest.mark.parametrize(
    ("array", "code", "scale"),
    [
        (np.zeros((2, 3), np.float32), None, 0.0),
        (np.zeros((4,), np.float16), None, 0.0),
        (np.zeros((1, 2, 3, 4), np.int32), None, 0.0),
        (np.zeros((2, 2, 2), np.bool_), None, 0.0),
        (np.zeros((1, 1, 1, 1, 1), np.uint8), None, 0.5),
        (np.zeros((3, 1), np.int8), None, 0.5),
        (np.zeros((2, 3), np.int16), OperandCode.TENSOR_QUANT16_SYMM, 0.5),
        (np.zeros((2,), np.int8), OperandCode.TENSOR_QUANT8_SYMM, 0.5),
    ],
)
def test_rank(array, code, scale):
    result = (
        OpTester(OperationCode.RANK)
        .input(array, code=code, scale=scale)
        .output(OperandCode.INT32, ())
        .run()[0]
    )
    assert int(result) == array.ndim


def test_rank_rejects_bad_output():
    for code, shape in [(OperandCode.TENSOR_INT32, (1,)), (OperandCode.FLOAT32, ())]:
        tester = (
            OpTester(OperationCode.RANK).input(np.zeros((2, 3), np.float32)).output(code, shape)
        )
        expect_error(tester.build)
