# SPDX-License-Identifier: Apache-2.0
"""RESHAPE, SQUEEZE, EXPAND_DIMS against numpy: dtypes, -1, shape tensors fed at execution."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode, ResultCode

from .helpers import DTYPES, expect_error, expect_failed_when_prepared, sample
from .op_tester import OpTester


# (dtype, scale, zero point) of every tensor type these operations take.
def quant(scale, zero_point):
    return {"scale": scale, "zero_point": zero_point}


# ---- RESHAPE -----------------------------------------------------------------------------------


def run_reshape(x, target, scale=0.0, zero_point=0, dynamic=False, shape_as_input=False):
    expected = x.reshape(target)
    tester = OpTester(OperationCode.RESHAPE).input(x, **quant(scale, zero_point))
    target = np.array(target, np.int32)
    tester = tester.input(target) if shape_as_input else tester.constant(target)
    result = (
        tester.output(OpTester.default_code(x), expected.shape, **quant(scale, zero_point))
        .dynamic_outputs(dynamic)
        .run()[0]
    )
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), [*DTYPES, (np.int32, 0.0, 0)])
@pytest.mark.parametrize(
    ("shape", "target"),
    [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((24,), (2, -1, 3)), ((1, 4, 6), (4, 1, 6, 1))],
)
def test_reshape(dtype, scale, zero_point, shape, target):
    run_reshape(sample(shape, dtype), target, scale, zero_point)


def test_reshape_shape_is_a_model_input():
    x = sample((2, 3, 4), np.float32)
    run_reshape(x, (4, -1), shape_as_input=True)
    run_reshape(x, (3, 8), shape_as_input=True, dynamic=True)


def test_reshape_dynamic_output():
    run_reshape(sample((2, 6), np.int8), (3, -1, 2), 0.5, 1, dynamic=True)


def test_reshape_bad_shape_fed_at_execution_fails_the_run():
    x = sample((2, 3), np.float32)
    tester = (
        OpTester(OperationCode.RESHAPE)
        .input(x)
        .input(np.array([4, -1], np.int32))
        .output(OperandCode.TENSOR_FLOAT32, (2, 3))
    )
    expect_error(tester.run, ResultCode.OP_FAILED)


@pytest.mark.parametrize("target", [(-1, -1), (5, -1), (4, 2), (0, 6), (-2, 3)])
def test_reshape_rejects_bad_constant_shape(target):
    tester = (
        OpTester(OperationCode.RESHAPE)
        .input(sample((2, 6), np.float32))
        .constant(np.array(target, np.int32))
        .output(OperandCode.TENSOR_FLOAT32, (12,))
    )
    expect_failed_when_prepared(tester)


def test_reshape_rejects_rank_5_and_wrong_output():
    rank5 = (
        OpTester(OperationCode.RESHAPE)
        .input(sample((1, 1, 2, 3, 1), np.float32))
        .constant(np.array([6], np.int32))
        .output(OperandCode.TENSOR_FLOAT32, (6,))
    )
    expect_error(rank5.build)
    declared = (
        OpTester(OperationCode.RESHAPE)
        .input(sample((2, 3), np.float32))
        .constant(np.array([3, 2], np.int32))
        .output(OperandCode.TENSOR_FLOAT32, (2, 3))
    )
    expect_failed_when_prepared(declared)
    requantised = (
        OpTester(OperationCode.RESHAPE)
        .input(sample((2, 3), np.uint8), scale=0.5, zero_point=1)
        .constant(np.array([6], np.int32))
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (6,), scale=0.25, zero_point=1)
    )
    expect_error(requantised.build)
    boolean = (
        OpTester(OperationCode.RESHAPE)
        .input(np.ones((2, 3), np.bool_))
        .constant(np.array([6], np.int32))
        .output(OperandCode.TENSOR_BOOL8, (6,))
    )
    expect_error(boolean.build)


# ---- SQUEEZE -----------------------------------------------------------------------------------


def run_squeeze(x, axes, expected_shape, scale=0.0, zero_point=0, dynamic=False):
    tester = OpTester(OperationCode.SQUEEZE).input(x, **quant(scale, zero_point))
    if axes is None:
        tester = tester.omitted(OperandCode.TENSOR_INT32)
    else:
        tester = tester.constant(np.array(axes, np.int32))
    result = (
        tester.output(OpTester.default_code(x), expected_shape, **quant(scale, zero_point))
        .dynamic_outputs(dynamic)
        .run()[0]
    )
    np.testing.assert_array_equal(result, x.reshape(expected_shape))


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
def test_squeeze_axes(dtype, scale, zero_point):
    x = sample((1, 3, 1, 2), dtype)
    run_squeeze(x, [0, -2], (3, 2), scale, zero_point)
    run_squeeze(x, [2], (1, 3, 2), scale, zero_point, dynamic=True)


def test_squeeze_omitted_axes_and_all_ones():
    run_squeeze(sample((1, 4, 1, 1), np.float32), None, (4,))
    run_squeeze(sample((1, 1, 1), np.float32), None, (1,), dynamic=True)
    run_squeeze(sample((1, 1), np.float32), [0, 1], (1,))
    run_squeeze(sample((2, 3), np.float32), None, (2, 3))


@pytest.mark.parametrize("axes", [[1], [4], [-5]])
def test_squeeze_rejects_bad_axes(axes):
    tester = (
        OpTester(OperationCode.SQUEEZE)
        .input(sample((1, 3, 1, 2), np.float32))
        .constant(np.array(axes, np.int32))
        .output(OperandCode.TENSOR_FLOAT32, (3, 2))
    )
    expect_failed_when_prepared(tester)


def test_squeeze_rejects_int32():
    tester = (
        OpTester(OperationCode.SQUEEZE)
        .input(np.ones((1, 3), np.int32))
        .omitted(OperandCode.TENSOR_INT32)
        .output(OperandCode.TENSOR_INT32, (3,))
    )
    expect_error(tester.build)


# ---- EXPAND_DIMS -------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), [*DTYPES, (np.int32, 0.0, 0)])
@pytest.mark.parametrize("axis", [0, 1, 3, -1, -4])
def test_expand_dims(dtype, scale, zero_point, axis):
    x = sample((2, 3, 4), dtype)
    expected = np.expand_dims(x, axis)
    result = (
        OpTester(OperationCode.EXPAND_DIMS)
        .input(x, **quant(scale, zero_point))
        .scalar(OperandCode.INT32, axis)
        .output(OpTester.default_code(x), expected.shape, **quant(scale, zero_point))
        .dynamic_outputs(axis == -1)
        .run()[0]
    )
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("axis", [4, -5])
def test_expand_dims_rejects_bad_axis(axis):
    tester = (
        OpTester(OperationCode.EXPAND_DIMS)
        .input(sample((2, 3, 4), np.float32))
        .scalar(OperandCode.INT32, axis)
        .output(OperandCode.TENSOR_FLOAT32, (0, 0, 0, 0))
    )
    expect_failed_when_prepared(tester)
