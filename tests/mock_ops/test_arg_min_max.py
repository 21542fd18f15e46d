# SPDX-License-Identifier: Apache-2.0
"""ARGMAX and ARGMIN against numpy: dtypes, ranks 1-4, negative axes, ties, validation."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode

from .helpers import expect_refused, op_name
from .op_tester import OpTester

ARGMAX = OperationCode.ARGMAX
ARGMIN = OperationCode.ARGMIN
NUMPY = {ARGMAX: np.argmax, ARGMIN: np.argmin}


def arg_reference(op, x, axis):
    result = NUMPY[op](x, axis=axis).astype(np.int32)
    return result.reshape(1) if result.ndim == 0 else result


def arg_tester(
    op, x, axis, quant=None, dynamic=False, out_code=OperandCode.TENSOR_INT32, out_shape=None
):
    if out_shape is None:
        out_shape = arg_reference(op, np.zeros(x.shape), axis).shape
    return (
        OpTester(op)
        .input(x, **(quant or {}))
        .scalar(OperandCode.INT32, axis)
        .output(out_code, out_shape)
        .dynamic_outputs(dynamic)
    )


SHAPES_AND_AXES = [
    ((6,), 0),
    ((6,), -1),
    ((3, 4), 0),
    ((3, 4), -1),
    ((2, 3, 4), 1),
    ((2, 3, 4), -3),
    ((2, 3, 2, 5), 3),
    ((2, 3, 2, 5), -2),
]


def random_input(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.floating):
        return rng.permutation(np.linspace(-9, 9, int(np.prod(shape)))).reshape(shape).astype(dtype)
    info = np.iinfo(dtype)
    low, high = max(info.min, -1000), min(info.max, 1000)
    return rng.integers(low, high + 1, shape).astype(dtype)


@pytest.mark.parametrize("op", [ARGMAX, ARGMIN], ids=op_name)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8, np.int8])
@pytest.mark.parametrize(("shape", "axis"), SHAPES_AND_AXES)
def test_matches_numpy(op, dtype, shape, axis):
    x = random_input(dtype, shape, len(shape) + axis)
    quant = {"scale": 0.5, "zero_point": 3} if dtype in (np.uint8, np.int8) else None
    result = arg_tester(op, x, axis, quant).run()[0]
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, arg_reference(op, x, axis))


@pytest.mark.parametrize("op", [ARGMAX, ARGMIN], ids=op_name)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_ties_pick_the_first_index(op, dtype):
    x = np.array([[1, 3, 3, 0, 0], [2, 2, 2, 2, 2], [0, 1, 0, 1, 0]], dtype)
    quant = {"scale": 1.0, "zero_point": 0} if dtype == np.uint8 else None
    result = arg_tester(op, x, 1, quant).run()[0]
    np.testing.assert_array_equal(result, arg_reference(op, x, 1))
    expected = [1, 0, 1] if op == ARGMAX else [3, 0, 0]
    np.testing.assert_array_equal(result, expected)


def test_one_dimensional_input_gives_shape_one():
    x = np.array([4.0, -1.0, 9.0, 2.0], np.float32)
    result = arg_tester(ARGMAX, x, 0, dynamic=True).run()[0]
    np.testing.assert_array_equal(result, [2])


@pytest.mark.parametrize("op", [ARGMAX, ARGMIN], ids=op_name)
def test_dynamic_output_shape(op):
    x = random_input(np.float32, (2, 3, 4), 9)
    result = arg_tester(op, x, -2, dynamic=True).run()[0]
    assert result.shape == (2, 4)
    np.testing.assert_array_equal(result, arg_reference(op, x, -2))


def test_extreme_values():
    x = np.array([[-np.inf, np.finfo(np.float32).max, np.inf, 0.0]], np.float32)
    np.testing.assert_array_equal(arg_tester(ARGMAX, x, 1).run()[0], [2])
    np.testing.assert_array_equal(arg_tester(ARGMIN, x, 1).run()[0], [0])
    x = np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max], np.int32)
    np.testing.assert_array_equal(arg_tester(ARGMIN, x, 0).run()[0], [0])


X = np.ones((2, 3), np.float32)


# Cases refused by an argument's value: Android validates an operation's types and shapes at
# addOperation, its argument values when the operation is prepared (OP_FAILED at execution).
REFUSED_WHEN_PREPARED = {"axis_too_large", "axis_too_small"}


@pytest.mark.parametrize(
    "tester",
    [
        arg_tester(ARGMAX, X, 0, out_code=OperandCode.TENSOR_FLOAT32),
        arg_tester(ARGMIN, X, 2, out_shape=(2,)),
        arg_tester(ARGMIN, X, -3, out_shape=(2,)),
        arg_tester(ARGMAX, np.ones((2, 3), np.bool_), 0),
        OpTester(ARGMAX).input(X).output(OperandCode.TENSOR_INT32, (3,)),
        OpTester(ARGMAX)
        .input(X)
        .scalar(OperandCode.INT32, 0)
        .scalar(OperandCode.INT32, 0)
        .output(OperandCode.TENSOR_INT32, (3,)),
        OpTester(ARGMAX)
        .input(X)
        .scalar(OperandCode.FLOAT32, 0.0)
        .output(OperandCode.TENSOR_INT32, (3,)),
    ],
    ids=[
        "float_output",
        "axis_too_large",
        "axis_too_small",
        "bool_input",
        "one_input",
        "three_inputs",
        "float_axis",
    ],
)
def test_invalid_configurations_rejected(tester, request):
    expect_refused(tester, request.node.callspec.id in REFUSED_WHEN_PREPARED)
