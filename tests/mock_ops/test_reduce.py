# SPDX-License-Identifier: Apache-2.0
"""MEAN and REDUCE_SUM/PROD/MAX/MIN/ALL/ANY against numpy.

Covers negative and duplicate axes, keep_dims both ways (INT32 for MEAN, where any positive value
keeps, BOOL for REDUCE_*), reducing every dimension without keep_dims (shape [1]), float16
accumulation, quantised MEAN/MAX/MIN, axes given at execution time, a dynamic output shape and
validation failures.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data, expect_refused, op_name
from .op_tester import OpTester, assert_close

MEAN = OperationCode.MEAN
SUM = OperationCode.REDUCE_SUM
PROD = OperationCode.REDUCE_PROD
MAX = OperationCode.REDUCE_MAX
MIN = OperationCode.REDUCE_MIN
ALL = OperationCode.REDUCE_ALL
ANY = OperationCode.REDUCE_ANY
NUMPY = {
    MEAN: np.mean,
    SUM: np.sum,
    PROD: np.prod,
    MAX: np.max,
    MIN: np.min,
    ALL: np.all,
    ANY: np.any,
}


def round_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def reduce_reference(op, x, axes, keep_dims):
    """numpy reduction over the distinct normalised axes; a fully reduced result is [1]."""
    normalised = tuple(sorted({a % x.ndim for a in axes}))
    data = x if x.dtype == np.bool_ else x.astype(np.float64)
    result = np.asarray(NUMPY[op](data, axis=normalised, keepdims=keep_dims))
    return result.reshape(1) if result.ndim == 0 else result


def keep_dims_scalar(op, keep_dims):
    """MEAN takes an INT32 keep_dims (positive keeps), the REDUCE_* operations a BOOL."""
    if op == MEAN:
        return OperandCode.INT32, int(keep_dims)
    return OperandCode.BOOL, bool(keep_dims)


def reduce_tester(op, x, axes, keep_dims, quant=None, dynamic=False, axes_as_input=False):
    axes = np.asarray(axes, np.int32)
    expected_shape = reduce_reference(op, np.zeros(x.shape, np.float32), axes, keep_dims).shape
    tester = OpTester(op).input(x, **(quant or {}))
    tester = tester.input(axes) if axes_as_input else tester.constant(axes)
    code, value = keep_dims_scalar(op, keep_dims)
    tester.scalar(code, value)
    out_code = OpTester.default_code(x)
    return tester.output(out_code, expected_shape, **(quant or {})).dynamic_outputs(dynamic)


AXES_CASES = [
    ((5,), [0]),
    ((3, 4), [1]),
    ((3, 4), [-1]),
    ((3, 4), [0, 1]),  # every dimension
    ((2, 3, 4), [0, 2]),
    ((2, 3, 4), [1, -2]),  # duplicate through a negative axis
    ((2, 3, 4), [-3, 2, 0]),  # duplicate plus another axis
    ((2, 3, 2, 3), [3, 1]),
    ((2, 3, 2, 3), [-4, -3, -2, -1]),  # every dimension, negative
]


@pytest.mark.parametrize("op", [MEAN, SUM, PROD, MAX, MIN], ids=op_name)
@pytest.mark.parametrize(("shape", "axes"), AXES_CASES)
@pytest.mark.parametrize("keep_dims", [False, True])
def test_float32(op, shape, axes, keep_dims):
    rng = np.random.default_rng(len(shape) + len(axes))
    x = rng.uniform(0.5, 1.5, shape).astype(np.float32)
    x *= rng.choice([-1, 1], shape).astype(np.float32)
    expected = reduce_reference(op, x, axes, keep_dims).astype(np.float32)
    assert_close(reduce_tester(op, x, axes, keep_dims).run()[0], expected)


def sequential_reference(op, x, axes, keep_dims):
    """Each output the float64 sum of its inputs in row-major input order (the mock's order),
    divided by their count for MEAN, rounded once to float32."""
    normalised = sorted({a % x.ndim for a in axes})
    kept = [d for d in range(x.ndim) if d not in normalised]
    moved = np.transpose(x.astype(np.float64), kept + normalised)
    rows = moved.reshape(int(np.prod([x.shape[d] for d in kept])), -1)
    sums = np.cumsum(rows, axis=1)[:, -1]  # cumsum adds in order (np.sum is pairwise)
    if op == MEAN:
        sums = sums / rows.shape[1]
    shape = (
        [1 if d in normalised else x.shape[d] for d in range(x.ndim)]
        if keep_dims
        else [x.shape[d] for d in kept]
    )
    return sums.astype(np.float32).reshape(shape or [1])


@pytest.mark.parametrize("op", [MEAN, SUM], ids=op_name)
@pytest.mark.parametrize(
    ("shape", "axes"),
    [
        ((1, 7, 9, 40), [1, 2]),  # NHWC global average pooling: rows of channels
        ((2, 5, 6, 33), [-3, -2]),
        ((1, 40, 7, 9), [2, 3]),  # NCHW: runs of pixels
        ((3, 1, 1, 17), [1, 2]),  # unit dimensions on both sides of the run
        ((4, 6, 1, 5), [0, 2]),
        ((2, 3, 4, 5), [0, 2]),  # no trailing run of reduced dimensions: rows of 5
        ((2, 3, 4, 1), [1, 2, 3]),  # the innermost dimension a unit
        ((1000,), [0]),
    ],
)
@pytest.mark.parametrize("keep_dims", [False, True])
def test_float32_sums_by_runs_equal_the_per_element_order(op, shape, axes, keep_dims):
    # One input in five is +-1e20, which absorbs the small ones added while it is in the sum
    # (in double), so that another order of the additions gives other results (bit for bit).
    rng = np.random.default_rng(sum(shape))
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    x[rng.uniform(size=shape) < 0.2] = 1e20
    x *= rng.choice([-1, 1], shape).astype(np.float32)
    result = reduce_tester(op, x, axes, keep_dims).run()[0]
    np.testing.assert_array_equal(result, sequential_reference(op, x, axes, keep_dims))


@pytest.mark.parametrize("value", [2, 7, -1])
def test_mean_keep_dims_is_positive_int32(value):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    tester = (
        OpTester(MEAN)
        .input(x)
        .constant(np.array([1], np.int32))
        .scalar(OperandCode.INT32, value)
        .output(OperandCode.TENSOR_FLOAT32, (3, 1) if value > 0 else (3,))
    )
    expected = x.mean(axis=1, keepdims=value > 0)
    assert_close(tester.run()[0], expected)


@pytest.mark.parametrize("op", [MEAN, SUM, PROD, MAX, MIN], ids=op_name)
@pytest.mark.parametrize(("shape", "axes"), [((3, 4), [1]), ((2, 3, 4), [0, -1])])
def test_float16(op, shape, axes):
    x = np.random.default_rng(2).uniform(0.6, 1.4, shape).astype(np.float16)
    expected = reduce_reference(op, x, axes, False)
    assert_close(reduce_tester(op, x, axes, False).run()[0], expected, "float16")


@pytest.mark.parametrize("op", [SUM, MEAN], ids=op_name)
def test_float16_accumulates_in_float32(op):
    # In float16 arithmetic 2048 + 1 == 2048, so a float16 accumulator would stop at 2048.
    x = np.ones((4, 4096), np.float16)
    result = reduce_tester(op, x, [1], False).run()[0]
    expected = np.full(4, 4096.0 if op == SUM else 1.0)
    np.testing.assert_array_equal(result.astype(np.float64), expected)


QUANT = {np.uint8: {"scale": 0.25, "zero_point": 77}, np.int8: {"scale": 0.25, "zero_point": -9}}


@pytest.mark.parametrize("op", [MEAN, MAX, MIN], ids=op_name)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize(("shape", "axes"), [((3, 5), [1]), ((2, 3, 4), [0, -1]), ((4, 3), [0, 1])])
@pytest.mark.parametrize("keep_dims", [False, True])
def test_quantized(op, dtype, shape, axes, keep_dims):
    info = np.iinfo(dtype)
    x = np.random.default_rng(3).integers(info.min, info.max + 1, shape, dtype=dtype)
    quant = QUANT[dtype]
    real = quant["scale"] * (x.astype(np.float64) - quant["zero_point"])
    expected_real = reduce_reference(op, real, axes, keep_dims)
    expected = np.clip(
        round_away(expected_real / quant["scale"]) + quant["zero_point"], info.min, info.max
    )
    result = reduce_tester(op, x, axes, keep_dims, quant).run()[0]
    assert result.dtype == dtype
    assert_close(result, expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_quantized_mean_rounds_half_away_from_zero(dtype):
    # Centred values (q - zero_point) of -1 and -2 average to -1.5, which rounds to -2.
    zero_point = 10
    x = np.array([[zero_point - 1, zero_point - 2], [zero_point + 1, zero_point + 2]], dtype)
    quant = {"scale": 0.5, "zero_point": zero_point}
    result = reduce_tester(MEAN, x, [1], False, quant).run()[0]
    np.testing.assert_array_equal(result, np.array([zero_point - 2, zero_point + 2], dtype))


@pytest.mark.parametrize("op", [ALL, ANY], ids=op_name)
@pytest.mark.parametrize(("shape", "axes"), AXES_CASES)
@pytest.mark.parametrize("keep_dims", [False, True])
def test_logical(op, shape, axes, keep_dims):
    rng = np.random.default_rng(4)
    x = rng.random(shape) < (0.8 if op == ALL else 0.2)
    expected = reduce_reference(op, x, axes, keep_dims)
    result = reduce_tester(op, x, axes, keep_dims).run()[0]
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("op", [MEAN, SUM, MAX, ALL], ids=op_name)
def test_axes_given_at_execution(op):
    x = np.random.default_rng(5).uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    if op == ALL:
        x = x > -0.9
    expected = reduce_reference(op, x, [-1, 0], True)
    result = reduce_tester(op, x, [-1, 0], True, axes_as_input=True).run()[0]
    assert_close(result, expected.astype(x.dtype))


def test_axis_out_of_range_at_execution_fails():
    x = np.ones((2, 3), np.float32)
    tester = (
        OpTester(SUM)
        .input(x)
        .input(np.array([2], np.int32))  # only known at execution: passes validation
        .scalar(OperandCode.BOOL, False)
        .output(OperandCode.TENSOR_FLOAT32, (3,))
    )
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED


@pytest.mark.parametrize("op", [MEAN, PROD, MIN, ANY], ids=op_name)
def test_dynamic_output_shape(op):
    x = np.random.default_rng(6).uniform(0.5, 1, (2, 3, 4, 5)).astype(np.float32)
    if op == ANY:
        x = x > 0.9
    expected = reduce_reference(op, x, [1, -1], False)
    result = reduce_tester(op, x, [1, -1], False, dynamic=True).run()[0]
    assert result.shape == (2, 4)
    assert_close(result, expected.astype(x.dtype))


def test_all_dimensions_without_keep_dims_is_shape_one():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    result = reduce_tester(SUM, x, [0, 1, 2], False, dynamic=True).run()[0]
    assert result.shape == (1,)
    assert result[0] == pytest.approx(276.0)


F = np.ones((2, 3), np.float32)
Q = np.ones((2, 3), np.uint8)
B = np.ones((2, 3), np.bool_)


# Cases refused by an argument's value: Android validates an operation's types and shapes at
# addOperation, its argument values when the operation is prepared (OP_FAILED at execution).
REFUSED_WHEN_PREPARED = {"axis_too_large", "axis_too_small"}


@pytest.mark.parametrize(
    "tester",
    [
        reduce_tester(SUM, Q, [0], False, {"scale": 0.5}),
        reduce_tester(PROD, np.ones((2, 3), np.int8), [0], False, {"scale": 0.5}),
        reduce_tester(MEAN, np.ones((2, 3), np.int32), [0], False),
        reduce_tester(MAX, B, [0], False),
        reduce_tester(ALL, F, [0], False),
        reduce_tester(SUM, F, [2], False),
        reduce_tester(MEAN, F, [-3], True),
        reduce_tester(MIN, np.ones((1, 1, 1, 1, 2), np.float32), [0], False),
    ],
    ids=[
        "sum_quant8",
        "prod_quant8_signed",
        "mean_int32",
        "max_bool",
        "all_float",
        "axis_too_large",
        "axis_too_small",
        "rank5",
    ],
)
def test_invalid_configurations_rejected(tester, request):
    expect_refused(tester, request.node.callspec.id in REFUSED_WHEN_PREPARED)


@pytest.mark.parametrize("op", [MEAN, SUM, ANY], ids=op_name)
def test_keep_dims_type(op):
    x = B if op == ANY else F
    code = OperandCode.BOOL if op == MEAN else OperandCode.INT32
    tester = (
        OpTester(op)
        .input(x)
        .constant(np.array([0], np.int32))
        .scalar(code, 0 if code == OperandCode.INT32 else False)
        .output(OpTester.default_code(x), (3,))
    )
    expect_bad_data(tester)


def test_axes_must_be_one_dimensional():
    tester = (
        OpTester(SUM)
        .input(F)
        .constant(np.array([[0]], np.int32))
        .scalar(OperandCode.BOOL, False)
        .output(OperandCode.TENSOR_FLOAT32, (3,))
    )
    expect_bad_data(tester)


@pytest.mark.parametrize("op", [MEAN, MAX], ids=op_name)
def test_quantized_output_must_keep_input_quantization(op):
    tester = (
        OpTester(op)
        .input(Q, scale=0.5, zero_point=2)
        .constant(np.array([0], np.int32))
        .scalar(*keep_dims_scalar(op, False))
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (3,), scale=0.5, zero_point=3)
    )
    expect_bad_data(tester)


def test_wrong_input_count():
    tester = OpTester(SUM).input(F).constant(np.array([0], np.int32))
    expect_bad_data(tester.output(OperandCode.TENSOR_FLOAT32, (3,)))
