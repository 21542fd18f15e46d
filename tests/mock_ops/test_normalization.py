# SPDX-License-Identifier: Apache-2.0
"""L2_NORMALIZATION, INSTANCE_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION against numpy.

Covers the optional axis (negative values, default last), ranks 1-4, float16, quantised
L2_NORMALIZATION (output scale 1/128, zero point 128 or 0), all-zero slices, the instance
normalisation layout flag, LRN radius/bias/alpha/beta, a dynamic output shape and validation
failures.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode

from .helpers import expect_bad_data, expect_refused
from .op_tester import OpTester, assert_close

L2_NORM = OperationCode.L2_NORMALIZATION
INSTANCE_NORM = OperationCode.INSTANCE_NORMALIZATION
LRN = OperationCode.LOCAL_RESPONSE_NORMALIZATION


def round_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def float_code(x):
    return OperandCode.FLOAT16 if x.dtype == np.float16 else OperandCode.FLOAT32


def float_value(x, value):
    return np.float16(value) if x.dtype == np.float16 else np.float32(value)


# ---- L2_NORMALIZATION ----------------------------------------------------------------------


def l2_reference(x, axis):
    x = x.astype(np.float64)
    norm = np.sqrt((x * x).sum(axis=axis, keepdims=True))
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)


def l2_tester(x, axis=None, quant=None, out_quant=None, dynamic=False):
    tester = OpTester(L2_NORM).input(x, **(quant or {}))
    if axis is not None:
        tester.scalar(OperandCode.INT32, axis)
    code = OpTester.default_code(x)
    return tester.output(code, x.shape, **(out_quant or {})).dynamic_outputs(dynamic)


SHAPES_AND_AXES = [
    ((6,), 0),
    ((3, 5), 0),
    ((3, 5), -1),
    ((2, 3, 4), 1),
    ((2, 3, 4), -3),
    ((2, 3, 2, 4), 2),
    ((2, 3, 2, 4), -1),
]


@pytest.mark.parametrize(("shape", "axis"), SHAPES_AND_AXES)
def test_l2_float32(shape, axis):
    x = np.random.default_rng(len(shape)).uniform(-3, 3, shape).astype(np.float32)
    assert_close(l2_tester(x, axis).run()[0], l2_reference(x, axis).astype(np.float32))


def test_l2_default_axis_is_last():
    x = np.random.default_rng(1).normal(size=(2, 2, 3, 5)).astype(np.float32)
    assert_close(l2_tester(x).run()[0], l2_reference(x, -1).astype(np.float32))


def test_l2_all_zero_slice_gives_zero():
    x = np.array([[0.0, 0.0, 0.0], [3.0, 0.0, 4.0]], np.float32)
    result = l2_tester(x, -1).run()[0]
    np.testing.assert_array_equal(result, np.array([[0, 0, 0], [0.6, 0, 0.8]], np.float32))


@pytest.mark.parametrize(("shape", "axis"), [((3, 5), -1), ((2, 3, 4), 0)])
def test_l2_float16(shape, axis):
    x = np.random.default_rng(2).uniform(-2, 2, shape).astype(np.float16)
    assert_close(l2_tester(x, axis).run()[0], l2_reference(x, axis), "float16")


L2_OUT = {
    np.uint8: {"scale": 1 / 128, "zero_point": 128},
    np.int8: {"scale": 1 / 128, "zero_point": 0},
}


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize(("shape", "axis"), [((3, 5), -1), ((2, 3, 4), 1), ((1, 2, 2, 3), None)])
def test_l2_quantized(dtype, shape, axis):
    info = np.iinfo(dtype)
    x = np.random.default_rng(3).integers(info.min, info.max + 1, shape, dtype=dtype)
    in_quant = {"scale": 0.1, "zero_point": 120 if dtype == np.uint8 else 5}
    out_quant = L2_OUT[dtype]
    real = in_quant["scale"] * (x.astype(np.float64) - in_quant["zero_point"])
    unit = l2_reference(real, -1 if axis is None else axis)
    expected = np.clip(round_away(unit * 128) + out_quant["zero_point"], info.min, info.max)
    result = l2_tester(x, axis, in_quant, out_quant).run()[0]
    assert result.dtype == dtype
    assert_close(result, expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_l2_quantized_saturates_at_one(dtype):
    # A slice with a single non-zero element normalises to +-1.0: 128 + zero_point saturates.
    info = np.iinfo(dtype)
    zero_point = 0 if dtype == np.int8 else 128
    x = np.array([[zero_point + 50, zero_point, zero_point]], dtype)
    out_quant = L2_OUT[dtype]
    result = l2_tester(x, -1, {"scale": 0.5, "zero_point": zero_point}, out_quant).run()[0]
    expected = [[info.max, out_quant["zero_point"], out_quant["zero_point"]]]
    np.testing.assert_array_equal(result, expected)


# ---- INSTANCE_NORMALIZATION ----------------------------------------------------------------


def instance_reference(x_nhwc, gamma, beta, epsilon):
    x = x_nhwc.astype(np.float64)
    mean = x.mean(axis=(1, 2), keepdims=True)
    variance = x.var(axis=(1, 2), keepdims=True)
    return (x - mean) * gamma / np.sqrt(variance + epsilon) + beta


def instance_tester(x, gamma, beta, epsilon, nchw=False, dynamic=False):
    code = float_code(x)
    return (
        OpTester(INSTANCE_NORM)
        .input(x)
        .scalar(code, float_value(x, gamma))
        .scalar(code, float_value(x, beta))
        .scalar(code, float_value(x, epsilon))
        .scalar(OperandCode.BOOL, nchw)
        .output(OpTester.default_code(x), x.shape)
        .dynamic_outputs(dynamic)
    )


@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize(("gamma", "beta", "epsilon"), [(1.0, 0.0, 1e-4), (0.5, -1.5, 0.1)])
def test_instance_float32(nchw, gamma, beta, epsilon):
    x_nhwc = np.random.default_rng(4).uniform(-2, 5, (2, 3, 4, 3)).astype(np.float32)
    expected = instance_reference(x_nhwc, gamma, beta, epsilon)
    x = np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2)) if nchw else x_nhwc
    result = instance_tester(x, gamma, beta, epsilon, nchw).run()[0]
    if nchw:
        result = result.transpose(0, 2, 3, 1)
    assert_close(np.ascontiguousarray(result), expected.astype(np.float32))


@pytest.mark.parametrize("nchw", [False, True])
def test_instance_float16(nchw):
    x_nhwc = np.random.default_rng(5).uniform(-2, 2, (1, 3, 3, 2)).astype(np.float16)
    gamma, beta, epsilon = np.float16(1.25), np.float16(0.5), np.float16(0.01)
    expected = instance_reference(x_nhwc, float(gamma), float(beta), float(epsilon))
    x = np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2)) if nchw else x_nhwc
    result = instance_tester(x, gamma, beta, epsilon, nchw).run()[0]
    if nchw:
        result = result.transpose(0, 2, 3, 1)
    assert_close(np.ascontiguousarray(result), expected, "float16")


def test_instance_constant_plane_gives_beta():
    x = np.full((1, 2, 2, 1), 7.0, np.float32)
    result = instance_tester(x, 2.0, 0.25, 1e-3).run()[0]
    assert_close(result, np.full(x.shape, 0.25, np.float32))


# ---- LOCAL_RESPONSE_NORMALIZATION ----------------------------------------------------------


def lrn_reference(x, radius, bias, alpha, beta, axis):
    x = np.moveaxis(x.astype(np.float64), axis, -1)
    squares = x * x
    size = x.shape[-1]
    sums = np.empty_like(x)
    for d in range(size):
        sums[..., d] = squares[..., max(0, d - radius) : min(size, d + radius + 1)].sum(axis=-1)
    return np.moveaxis(x / (bias + alpha * sums) ** beta, -1, axis)


def lrn_tester(x, radius, bias, alpha, beta, axis=None, dynamic=False):
    code = float_code(x)
    tester = (
        OpTester(LRN)
        .input(x)
        .scalar(OperandCode.INT32, radius)
        .scalar(code, float_value(x, bias))
        .scalar(code, float_value(x, alpha))
        .scalar(code, float_value(x, beta))
    )
    if axis is not None:
        tester.scalar(OperandCode.INT32, axis)
    return tester.output(OpTester.default_code(x), x.shape).dynamic_outputs(dynamic)


@pytest.mark.parametrize(("shape", "axis"), SHAPES_AND_AXES)
@pytest.mark.parametrize(
    ("radius", "bias", "alpha", "beta"),
    [(0, 1.0, 1.0, 0.5), (1, 2.0, 0.5, 0.75), (3, 0.5, 2.0, 1.0)],
)
def test_lrn_float32(shape, axis, radius, bias, alpha, beta):
    x = np.random.default_rng(6).uniform(-2, 2, shape).astype(np.float32)
    expected = lrn_reference(x, radius, bias, alpha, beta, axis)
    result = lrn_tester(x, radius, bias, alpha, beta, axis).run()[0]
    assert_close(result, expected.astype(np.float32))


def test_lrn_default_axis_is_last():
    x = np.random.default_rng(7).uniform(-1, 1, (1, 2, 2, 6)).astype(np.float32)
    expected = lrn_reference(x, 2, 1.0, 0.3, 0.6, -1)
    assert_close(lrn_tester(x, 2, 1.0, 0.3, 0.6).run()[0], expected.astype(np.float32))


def test_lrn_radius_wider_than_axis():
    x = np.random.default_rng(8).uniform(-1, 1, (3, 4)).astype(np.float32)
    expected = lrn_reference(x, 10, 1.0, 1.0, 0.5, 1)
    assert_close(lrn_tester(x, 10, 1.0, 1.0, 0.5, 1).run()[0], expected.astype(np.float32))


@pytest.mark.parametrize("axis", [None, 1])
def test_lrn_float16(axis):
    x = np.random.default_rng(9).uniform(-2, 2, (1, 3, 2, 5)).astype(np.float16)
    bias, alpha, beta = np.float16(1.5), np.float16(0.25), np.float16(0.75)
    expected = lrn_reference(
        x, 2, float(bias), float(alpha), float(beta), -1 if axis is None else axis
    )
    result = lrn_tester(x, 2, bias, alpha, beta, axis).run()[0]
    assert_close(result, expected, "float16")


# ---- Dynamic shapes and validation ---------------------------------------------------------


def test_dynamic_output_shapes():
    x = np.random.default_rng(10).uniform(-1, 1, (2, 3, 2, 4)).astype(np.float32)
    result = l2_tester(x, 1, dynamic=True).run()[0]
    assert_close(result, l2_reference(x, 1).astype(np.float32))
    result = instance_tester(x, 1.0, 0.0, 1e-3, dynamic=True).run()[0]
    assert_close(result, instance_reference(x, 1.0, 0.0, 1e-3).astype(np.float32))
    result = lrn_tester(x, 1, 1.0, 0.5, 0.5, -2, dynamic=True).run()[0]
    assert_close(result, lrn_reference(x, 1, 1.0, 0.5, 0.5, -2).astype(np.float32))


X = np.ones((2, 3, 2, 2), np.float32)
Q = np.ones((2, 3), np.uint8)


# Cases refused by an argument's value: Android validates an operation's types and shapes at
# addOperation, its argument values when the operation is prepared (OP_FAILED at execution).
REFUSED_WHEN_PREPARED = {"l2_axis", "lrn_axis", "lrn_negative_radius", "lrn_zero_bias"}


@pytest.mark.parametrize(
    "tester",
    [
        l2_tester(Q, -1, {"scale": 0.5}, {"scale": 1 / 256, "zero_point": 128}),
        l2_tester(Q, -1, {"scale": 0.5}, {"scale": 1 / 128, "zero_point": 0}),
        l2_tester(
            np.ones((2, 3), np.int8), -1, {"scale": 0.5}, {"scale": 1 / 128, "zero_point": -128}
        ),
        l2_tester(np.ones((2, 3), np.int32), -1),
        l2_tester(X, 4),
        l2_tester(np.ones((1, 1, 1, 1, 2), np.float32)),
        instance_tester(np.ones((2, 3, 4), np.float32), 1.0, 0.0, 1e-3),
        OpTester(INSTANCE_NORM)
        .input(np.ones((1, 2, 2, 1), np.uint8), scale=0.5)
        .scalar(OperandCode.FLOAT32, 1.0)
        .scalar(OperandCode.FLOAT32, 0.0)
        .scalar(OperandCode.FLOAT32, 1e-3)
        .scalar(OperandCode.BOOL, False)
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (1, 2, 2, 1), scale=0.5),
        lrn_tester(X, -1, 1.0, 1.0, 0.5),
        lrn_tester(X, 1, 0.0, 1.0, 0.5),
        lrn_tester(X, 1, 1.0, 1.0, 0.5, -5),
        lrn_tester(np.ones((1, 1, 1, 1, 2), np.float32), 1, 1.0, 1.0, 0.5),
    ],
    ids=[
        "l2_quant8_scale",
        "l2_quant8_zero_point",
        "l2_quant8_signed_zero_point",
        "l2_int32",
        "l2_axis",
        "l2_rank5",
        "instance_rank3",
        "instance_quant8",
        "lrn_negative_radius",
        "lrn_zero_bias",
        "lrn_axis",
        "lrn_rank5",
    ],
)
def test_invalid_configurations_rejected(tester, request):
    expect_refused(tester, request.node.callspec.id in REFUSED_WHEN_PREPARED)


def test_scalar_types_must_follow_the_input_type():
    # FLOAT32 parameters with a float16 tensor.
    x16 = np.ones((1, 2, 2, 1), np.float16)
    tester = (
        OpTester(INSTANCE_NORM)
        .input(x16)
        .scalar(OperandCode.FLOAT32, 1.0)
        .scalar(OperandCode.FLOAT32, 0.0)
        .scalar(OperandCode.FLOAT32, 1e-3)
        .scalar(OperandCode.BOOL, False)
        .output(OperandCode.TENSOR_FLOAT16, x16.shape)
    )
    expect_bad_data(tester)
    tester = (
        OpTester(LRN)
        .input(x16)
        .scalar(OperandCode.INT32, 1)
        .scalar(OperandCode.FLOAT32, 1.0)
        .scalar(OperandCode.FLOAT32, 1.0)
        .scalar(OperandCode.FLOAT32, 0.5)
        .output(OperandCode.TENSOR_FLOAT16, x16.shape)
    )
    expect_bad_data(tester)


def test_instance_layout_must_be_bool():
    tester = (
        OpTester(INSTANCE_NORM)
        .input(X)
        .scalar(OperandCode.FLOAT32, 1.0)
        .scalar(OperandCode.FLOAT32, 0.0)
        .scalar(OperandCode.FLOAT32, 1e-3)
        .scalar(OperandCode.INT32, 0)
        .output(OperandCode.TENSOR_FLOAT32, X.shape)
    )
    expect_bad_data(tester)


def test_lrn_has_no_quantized_variant():
    tester = (
        OpTester(LRN)
        .input(Q, scale=0.5)
        .scalar(OperandCode.INT32, 1)
        .scalar(OperandCode.FLOAT32, 1.0)
        .scalar(OperandCode.FLOAT32, 1.0)
        .scalar(OperandCode.FLOAT32, 0.5)
        .output(OperandCode.TENSOR_QUANT8_ASYMM, Q.shape, scale=0.5)
    )
    expect_bad_data(tester)
