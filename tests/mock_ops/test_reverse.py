# SPDX-License-Identifier: Apache-2.0
"""REVERSE against numpy.flip: every axis of ranks 1-5, dtypes, validation."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode, ResultCode

from .helpers import DTYPES_AND_INT32, expect_error, expect_failed_when_prepared, sample
from .op_tester import OpTester


def reverse_tester(x, axis, out_shape, scale=0.0, zero_point=0, as_input=False):
    axis = np.array([axis], np.int32)
    tester = OpTester(OperationCode.REVERSE).input(x, scale=scale, zero_point=zero_point)
    tester = tester.input(axis) if as_input else tester.constant(axis)
    return tester.output(OpTester.default_code(x), out_shape, scale, zero_point)


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES_AND_INT32)
@pytest.mark.parametrize(
    ("shape", "axis"), [((6,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 1), ((2, 1, 3, 2, 2), 4)]
)
def test_reverse(dtype, scale, zero_point, shape, axis):
    x = sample(shape, dtype)
    result = reverse_tester(x, axis, shape, scale, zero_point).dynamic_outputs(axis == 1).run()[0]
    np.testing.assert_array_equal(result, np.flip(x, axis))


def test_axis_fed_at_execution():
    x = sample((2, 3, 4), np.float32)
    np.testing.assert_array_equal(
        reverse_tester(x, 2, x.shape, as_input=True).run()[0], np.flip(x, 2)
    )
    expect_error(reverse_tester(x, 3, x.shape, as_input=True).run, ResultCode.OP_FAILED)


@pytest.mark.parametrize("axis", [2, -1])
def test_rejects_bad_axis(axis):
    expect_failed_when_prepared(reverse_tester(sample((2, 3), np.float32), axis, (2, 3)))


def test_rejects_axis_shape_and_requantisation():
    testers = [
        OpTester(OperationCode.REVERSE)
        .input(sample((2, 3), np.float32))
        .constant(np.array([0, 1], np.int32))
        .output(OperandCode.TENSOR_FLOAT32, (2, 3)),
        OpTester(OperationCode.REVERSE)
        .input(sample((2, 3), np.uint8), scale=0.5)
        .constant(np.array([0], np.int32))
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (2, 3), 0.25, 0),
    ]
    for tester in testers:
        expect_error(tester.build)
