# SPDX-License-Identifier: Apache-2.0
"""SOFTMAX and LOG_SOFTMAX against a float64 numpy reference.

Covers beta (FLOAT32, or FLOAT16 for float16 tensors), the optional axis (negative values), ranks
1-4, numerically large inputs, quantised outputs (scale 1/256, zero point 0 or -128, rounding and
saturation at 1.0), a dynamic output shape and validation failures.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from mock_nnapi import (
    Compilation,
    Execution,
    NnapiError,
    OperandCode,
    OperationCode,
    ResultCode,
    api,
)

from .helpers import expect_bad_data, expect_refused, op_name
from .op_tester import OpTester, assert_close

SOFTMAX = OperationCode.SOFTMAX
LOG_SOFTMAX = OperationCode.LOG_SOFTMAX


def round_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def softmax_reference(x, beta, axis, log=False):
    z = x.astype(np.float64) * beta
    z = z - z.max(axis=axis, keepdims=True)
    log_sum = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return z - log_sum if log else np.exp(z - log_sum)


def beta_code(x):
    return OperandCode.FLOAT16 if x.dtype == np.float16 else OperandCode.FLOAT32


def softmax_tester(op, x, beta, axis=None, quant=None, out_quant=None, dynamic=False):
    beta_value = np.float16(beta) if x.dtype == np.float16 else np.float32(beta)
    tester = OpTester(op).input(x, **(quant or {})).scalar(beta_code(x), beta_value)
    if axis is not None:
        tester.scalar(OperandCode.INT32, axis)
    code = OpTester.default_code(x)
    return tester.output(code, x.shape, **(out_quant or {})).dynamic_outputs(dynamic)


SHAPES_AND_AXES = [
    ((7,), -1),
    ((3, 5), 0),
    ((3, 5), -1),
    ((2, 3, 4), 1),
    ((2, 3, 4), -3),
    ((2, 2, 3, 4), 2),
    ((2, 2, 3, 4), -1),
]


@pytest.mark.parametrize(("shape", "axis"), SHAPES_AND_AXES)
@pytest.mark.parametrize("beta", [1.0, 0.25, 3.0])
def test_softmax_float32(shape, axis, beta):
    x = np.random.default_rng(len(shape)).uniform(-5, 5, shape).astype(np.float32)
    result = softmax_tester(SOFTMAX, x, beta, axis).run()[0]
    assert_close(result, softmax_reference(x, beta, axis).astype(np.float32))


@pytest.mark.parametrize("shape", [(4, 6), (1, 2, 2, 5)])
def test_softmax_default_axis_is_last(shape):
    x = np.random.default_rng(1).normal(size=shape).astype(np.float32)
    result = softmax_tester(SOFTMAX, x, 1.0).run()[0]
    assert_close(result, softmax_reference(x, 1.0, -1).astype(np.float32))


def test_softmax_subtracts_the_maximum():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -2000.0]], np.float32)
    result = softmax_tester(SOFTMAX, x, 1.0).run()[0]
    assert np.isfinite(result).all()
    assert_close(result, softmax_reference(x, 1.0, -1).astype(np.float32))


@pytest.mark.parametrize(("shape", "axis"), [((3, 5), -1), ((2, 3, 4), 0), ((2, 2, 2, 3), None)])
def test_softmax_float16(shape, axis):
    x = np.random.default_rng(2).uniform(-4, 4, shape).astype(np.float16)
    result = softmax_tester(SOFTMAX, x, 0.5, axis).run()[0]
    expected = softmax_reference(x, np.float16(0.5), -1 if axis is None else axis)
    assert_close(result, expected, "float16")


QUANT_OUT = {
    np.uint8: {"scale": 1 / 256, "zero_point": 0},
    np.int8: {"scale": 1 / 256, "zero_point": -128},
}


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize(("shape", "axis"), [((2, 6), None), ((2, 3, 4), 1), ((1, 2, 2, 3), -2)])
def test_softmax_quantized(dtype, shape, axis):
    info = np.iinfo(dtype)
    x = np.random.default_rng(3).integers(info.min, info.max + 1, shape, dtype=dtype)
    in_quant = {"scale": 0.05, "zero_point": 10 if dtype == np.uint8 else -3}
    out_quant = QUANT_OUT[dtype]
    real = in_quant["scale"] * (x.astype(np.float64) - in_quant["zero_point"])
    p = softmax_reference(real, 1.5, -1 if axis is None else axis)
    expected = np.clip(round_away(p * 256) + out_quant["zero_point"], info.min, info.max)
    result = softmax_tester(SOFTMAX, x, 1.5, axis, in_quant, out_quant).run()[0]
    assert result.dtype == dtype
    assert_close(result, expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_softmax_quantized_saturates_at_one(dtype):
    info = np.iinfo(dtype)
    # One dominant logit: probability 1.0 maps to 256 + zero_point, saturated to the maximum.
    x = np.array([[info.max, info.min, info.min]], dtype)
    out_quant = QUANT_OUT[dtype]
    result = softmax_tester(SOFTMAX, x, 1.0, None, {"scale": 1.0, "zero_point": 0}, out_quant)
    np.testing.assert_array_equal(result.run()[0], [[info.max, info.min, info.min]])
    # Equal logits: 1/3 * 256 = 85.33 rounds to 85.
    x = np.full((1, 3), 7, dtype)
    result = softmax_tester(SOFTMAX, x, 1.0, None, {"scale": 1.0, "zero_point": 0}, out_quant)
    np.testing.assert_array_equal(result.run()[0], np.full((1, 3), 85 + out_quant["zero_point"]))


@pytest.mark.parametrize(("shape", "axis"), SHAPES_AND_AXES)
@pytest.mark.parametrize("beta", [1.0, 0.5, -2.0])
def test_log_softmax_float32(shape, axis, beta):
    x = np.random.default_rng(4).uniform(-6, 6, shape).astype(np.float32)
    result = softmax_tester(LOG_SOFTMAX, x, beta, axis).run()[0]
    assert_close(result, softmax_reference(x, beta, axis, log=True).astype(np.float32))


def test_log_softmax_large_values():
    x = np.array([[1000.0, 0.0, -1000.0]], np.float32)
    result = softmax_tester(LOG_SOFTMAX, x, 1.0, -1).run()[0]
    assert_close(result, softmax_reference(x, 1.0, -1, log=True).astype(np.float32))


@pytest.mark.parametrize("axis", [0, -1])
def test_log_softmax_float16(axis):
    x = np.random.default_rng(5).uniform(-3, 3, (4, 5)).astype(np.float16)
    result = softmax_tester(LOG_SOFTMAX, x, 1.0, axis).run()[0]
    assert_close(result, softmax_reference(x, 1.0, axis, log=True), "float16")


@pytest.mark.parametrize("op", [SOFTMAX, LOG_SOFTMAX], ids=op_name)
def test_dynamic_output_shape(op):
    x = np.random.default_rng(6).normal(size=(2, 3, 5)).astype(np.float32)
    result = softmax_tester(op, x, 1.0, 1, dynamic=True).run()[0]
    assert result.shape == (2, 3, 5)
    assert_close(result, softmax_reference(x, 1.0, 1, log=op == LOG_SOFTMAX).astype(np.float32))


def test_softmax_beta_as_model_input_checked_at_execution():
    x = np.ones((2, 3), np.float32)
    beta = np.array(-1.0, np.float32)
    tester = (
        OpTester(SOFTMAX)
        .input(x)
        .input(beta, OperandCode.FLOAT32)
        .output(OperandCode.TENSOR_FLOAT32, x.shape)
    )
    model = tester.build()
    execution = Execution(Compilation(model).finish())
    output = np.zeros(x.shape, np.float32)
    # Set through the C API: Execution.compute() would turn the 0-d beta into a 1-D array.
    for index, array in enumerate([x, beta]):
        pointer = array.ctypes.data_as(ctypes.c_void_p)
        api.call(
            "ANeuralNetworksExecution_setInput",
            execution.handle,
            index,
            None,
            pointer,
            array.nbytes,
        )
    pointer = output.ctypes.data_as(ctypes.c_void_p)
    api.call(
        "ANeuralNetworksExecution_setOutput", execution.handle, 0, None, pointer, output.nbytes
    )
    with pytest.raises(NnapiError) as error:
        api.call("ANeuralNetworksExecution_compute", execution.handle)
    assert error.value.code == ResultCode.OP_FAILED


X = np.ones((2, 3), np.float32)
Q = np.ones((2, 3), np.uint8)
QS = np.ones((2, 3), np.int8)


# Cases refused by an argument's value: Android validates an operation's types and shapes at
# addOperation, its argument values when the operation is prepared (OP_FAILED at execution).
REFUSED_WHEN_PREPARED = {
    "axis_too_large",
    "axis_too_small",
    "beta_negative",
    "beta_zero",
    "log_softmax_axis",
}


@pytest.mark.parametrize(
    "tester",
    [
        softmax_tester(SOFTMAX, Q, 1.0, None, {"scale": 0.1}, {"scale": 1 / 128}),
        softmax_tester(SOFTMAX, Q, 1.0, None, {"scale": 0.1}, {"scale": 1 / 256, "zero_point": 1}),
        softmax_tester(SOFTMAX, QS, 1.0, None, {"scale": 0.1}, {"scale": 1 / 256}),
        softmax_tester(SOFTMAX, X, 0.0),
        softmax_tester(SOFTMAX, X, -1.0),
        softmax_tester(SOFTMAX, X, 1.0, 2),
        softmax_tester(SOFTMAX, X, 1.0, -3),
        softmax_tester(SOFTMAX, np.ones((1, 1, 1, 1, 2), np.float32), 1.0),
        softmax_tester(SOFTMAX, np.ones(3, np.int32), 1.0),
        softmax_tester(LOG_SOFTMAX, Q, 1.0, -1, {"scale": 0.1}, {"scale": 0.1}),
        softmax_tester(LOG_SOFTMAX, X, 1.0, 5),
    ],
    ids=[
        "quant8_scale",
        "quant8_zero_point",
        "quant8_signed_zero_point",
        "beta_zero",
        "beta_negative",
        "axis_too_large",
        "axis_too_small",
        "rank5",
        "int32",
        "log_softmax_quant8",
        "log_softmax_axis",
    ],
)
def test_invalid_configurations_rejected(tester, request):
    expect_refused(tester, request.node.callspec.id in REFUSED_WHEN_PREPARED)


def test_beta_type_must_follow_the_input_type():
    # FLOAT16 beta with a float32 tensor, and FLOAT32 beta with a float16 tensor.
    x16 = np.ones((2, 3), np.float16)
    tester = OpTester(SOFTMAX).input(X).scalar(OperandCode.FLOAT16, np.float16(1))
    expect_bad_data(tester.output(OperandCode.TENSOR_FLOAT32, X.shape))
    tester = OpTester(SOFTMAX).input(x16).scalar(OperandCode.FLOAT32, 1.0)
    expect_bad_data(tester.output(OperandCode.TENSOR_FLOAT16, X.shape))


def test_log_softmax_requires_the_axis():
    tester = OpTester(LOG_SOFTMAX).input(X).scalar(OperandCode.FLOAT32, 1.0)
    expect_bad_data(tester.output(OperandCode.TENSOR_FLOAT32, X.shape))


def test_output_type_must_match_input():
    tester = OpTester(SOFTMAX).input(X).scalar(OperandCode.FLOAT32, 1.0)
    expect_bad_data(tester.output(OperandCode.TENSOR_FLOAT16, X.shape))


@pytest.mark.parametrize("beta", [1.0, 0.5])
@pytest.mark.parametrize(("shape", "axis"), [((4, 32000), -1), ((3, 1000, 5), 1), ((2, 37), -1)])
def test_softmax_float32_within_ulps_of_the_exact_value(shape, axis, beta):
    # fp32 SOFTMAX: float32 exponentials (within 1 ulp of expf) summed in double, then scaled by
    # the reciprocal of the sum: within 4 ulps of the float64 result for every element, also on
    # long lines (LLM logits) and along an outer (strided) axis; beta 1 (the argument x - max
    # as an exact float pair) and another beta (the argument formed in double).
    x = np.random.default_rng(7).normal(0, 4, shape).astype(np.float32)
    result = softmax_tester(SOFTMAX, x, beta, axis).run()[0]
    expected = softmax_reference(x, beta, axis).astype(np.float32)
    bits = [v.view(np.int32).astype(np.int64) for v in (result, expected)]
    assert np.abs(bits[0] - bits[1]).max() <= 4
    np.testing.assert_allclose(result.sum(axis=axis), 1.0, rtol=1e-5)


def test_softmax_float32_infinite_and_nan_inputs():
    x = np.array(
        [
            [-np.inf, 0.0, 1.0, -np.inf, 2.0, 3.0, -1.0, 0.5, -np.inf],
            [0.0, np.nan, 1.0] + [0.0] * 6,
        ],
        np.float32,
    )
    result = softmax_tester(SOFTMAX, x, 1.0).run()[0]
    expected = softmax_reference(x[:1], 1.0, -1).astype(np.float32)
    np.testing.assert_allclose(result[:1], expected, rtol=1e-6)
    assert (result[0, [0, 3, 8]] == 0).all()
    assert np.isnan(result[1]).all()
