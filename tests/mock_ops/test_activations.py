# SPDX-License-Identifier: Apache-2.0
"""RELU, RELU1, RELU6, LOGISTIC, TANH, HARD_SWISH, ELU, PRELU against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import S8, U8, expect_bad_data, quantize, run_on_zero_sized, run_unary
from .op_tester import OpTester, assert_close


def hard_swish(x):
    return x * np.clip(x + 3, 0, 6) / 6


def logistic(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


ACTIVATIONS = {
    OperationCode.RELU: lambda x: np.maximum(x, 0),
    OperationCode.RELU1: lambda x: np.clip(x, -1, 1),
    OperationCode.RELU6: lambda x: np.clip(x, 0, 6),
    OperationCode.LOGISTIC: logistic,
    OperationCode.TANH: np.tanh,
    OperationCode.HARD_SWISH: hard_swish,
}
SHAPES = [(7,), (2, 5), (2, 1, 4), (1, 2, 3, 4)]


def every_value(dtype):
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1, dtype=np.int64).astype(dtype)


@pytest.mark.parametrize("op", list(ACTIVATIONS))
@pytest.mark.parametrize("shape", SHAPES)
def test_float32(op, shape):
    x = np.random.default_rng(0).uniform(-8, 8, shape).astype(np.float32)
    assert_close(run_unary(op, x), ACTIVATIONS[op](x))


@pytest.mark.parametrize("op", list(ACTIVATIONS))
def test_float16(op):
    x = np.linspace(-8, 8, 24).astype(np.float16).reshape(2, 3, 4)
    assert_close(run_unary(op, x), ACTIVATIONS[op](x.astype(np.float32)), "float16")


@pytest.mark.parametrize("op", list(ACTIVATIONS))
def test_boundaries_and_extremes(op):
    x = np.array([-1e30, -6, -3, -1, -0.0, 0, 1, 3, 6, 1e30], np.float32)
    assert_close(run_unary(op, x), ACTIVATIONS[op](x))


@pytest.mark.parametrize("seed", range(8))
def test_random_property_sweep(seed):
    """All activations on random shapes; outputs stay inside each function's range."""
    rng = np.random.default_rng(200 + seed)
    shape = tuple(int(d) for d in rng.integers(1, 5, rng.integers(1, 5)))
    x = rng.normal(0, 5, shape).astype(np.float32)
    for op, reference in ACTIVATIONS.items():
        result = run_unary(op, x)
        assert_close(result, reference(x))
    assert (run_unary(OperationCode.LOGISTIC, x) >= 0).all()
    assert (np.abs(run_unary(OperationCode.TANH, x)) <= 1).all()
    assert (run_unary(OperationCode.RELU6, x) <= 6).all()


# ---- quantised -----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [OperationCode.RELU, OperationCode.RELU1, OperationCode.RELU6])
@pytest.mark.parametrize(
    ("dtype", "code", "scale", "zero_point"),
    [
        (np.uint8, U8, 0.05, 120),
        (np.uint8, U8, 0.1, 0),
        (np.uint8, U8, 0.01, 255),
        (np.int8, S8, 0.05, -10),
        (np.int8, S8, 0.1, -128),
    ],
)
def test_relu_quantized_keeps_parameters(op, dtype, code, scale, zero_point):
    x = every_value(dtype)
    quant = {"x": {"scale": scale, "zero_point": zero_point}}
    quant["out"] = quant["x"]
    real = scale * (x.astype(np.float64) - zero_point)
    expected = quantize(ACTIVATIONS[op](real), scale, zero_point, dtype)
    assert_close(run_unary(op, x, code, quant=quant), expected)


@pytest.mark.parametrize(
    ("op", "dtype", "code", "out_scale", "out_zp"),
    [
        (OperationCode.LOGISTIC, np.uint8, U8, 1 / 256, 0),
        (OperationCode.LOGISTIC, np.int8, S8, 1 / 256, -128),
        (OperationCode.TANH, np.uint8, U8, 1 / 128, 128),
        (OperationCode.TANH, np.int8, S8, 1 / 128, 0),
    ],
)
@pytest.mark.parametrize("in_scale", [0.02, 0.1])
def test_fixed_output_quantization(op, dtype, code, out_scale, out_zp, in_scale):
    x = every_value(dtype)
    in_zp = 128 if dtype == np.uint8 else 0
    quant = {
        "x": {"scale": in_scale, "zero_point": in_zp},
        "out": {"scale": out_scale, "zero_point": out_zp},
    }
    real = in_scale * (x.astype(np.float64) - in_zp)
    expected = quantize(ACTIVATIONS[op](real), out_scale, out_zp, dtype)
    result = run_unary(op, x, code, quant=quant)
    assert_close(result, expected)
    if in_scale == 0.1:  # the inputs reach the saturating ends: 1.0 maps past the top
        info = np.iinfo(dtype)
        assert result[-1] == info.max
        if op == OperationCode.TANH:
            assert result[0] == info.min


@pytest.mark.parametrize(
    ("dtype", "code", "in_zp", "out_scale", "out_zp"),
    [(np.uint8, U8, 128, 0.03, 40), (np.int8, S8, 0, 0.05, -100)],
)
def test_hard_swish_quantized(dtype, code, in_zp, out_scale, out_zp):
    x = every_value(dtype)
    quant = {
        "x": {"scale": 0.05, "zero_point": in_zp},
        "out": {"scale": out_scale, "zero_point": out_zp},
    }
    real = 0.05 * (x.astype(np.float64) - in_zp)
    expected = quantize(hard_swish(real), out_scale, out_zp, dtype)
    assert_close(run_unary(OperationCode.HARD_SWISH, x, code, quant=quant), expected)


@pytest.mark.parametrize(
    ("op", "dtype", "code", "out"),
    [
        (OperationCode.LOGISTIC, np.uint8, U8, {"scale": 1 / 256, "zero_point": 1}),
        (OperationCode.LOGISTIC, np.int8, S8, {"scale": 1 / 256, "zero_point": 0}),
        (OperationCode.TANH, np.uint8, U8, {"scale": 1 / 256, "zero_point": 128}),
        (OperationCode.TANH, np.int8, S8, {"scale": 1 / 128, "zero_point": 128 - 256}),
        (OperationCode.RELU, np.uint8, U8, {"scale": 0.5, "zero_point": 0}),
        (OperationCode.RELU6, np.int8, S8, {"scale": 0.25, "zero_point": 1}),
    ],
)
def test_wrong_fixed_output_quantization_fails_execution(op, dtype, code, out):
    x = np.zeros(4, dtype)
    quant = {"x": {"scale": 0.25, "zero_point": 0}, "out": out}
    with pytest.raises(NnapiError) as error:
        run_unary(op, x, code, quant=quant)
    assert error.value.code == ResultCode.OP_FAILED
    assert "zeroPoint" in str(error.value)


# ---- ELU -----------------------------------------------------------------------------------------


def elu(x, alpha):
    return np.maximum(0, x) + np.minimum(0, alpha * (np.exp(x) - 1))


def run_elu(x, alpha, scalar_code=None, dynamic=False):
    if scalar_code is None:
        scalar_code = OperandCode.FLOAT16 if x.dtype == np.float16 else OperandCode.FLOAT32
    return (
        OpTester(OperationCode.ELU)
        .input(x)
        .scalar(scalar_code, alpha)
        .output(OpTester.default_code(x), x.shape)
        .dynamic_outputs(dynamic)
        .run()[0]
    )


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 2.5])
@pytest.mark.parametrize("shape", [(6,), (2, 3, 1, 2, 2)])
def test_elu_float32(alpha, shape):
    x = np.random.default_rng(3).uniform(-5, 5, shape).astype(np.float32)
    assert_close(run_elu(x, alpha), elu(x, alpha))


def test_elu_float16():
    x = np.linspace(-5, 5, 12).astype(np.float16).reshape(3, 4)
    assert_close(run_elu(x, 1.5), elu(x.astype(np.float32), 1.5), "float16")


def test_elu_dynamic_output_shape():
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 3, 2)
    result = run_elu(x, 1.0, dynamic=True)
    assert result.shape == x.shape
    assert_close(result, elu(x, 1.0))


@pytest.mark.parametrize(
    ("x", "scalar_code"),
    [
        (np.ones(3, np.float32), OperandCode.FLOAT16),
        (np.ones(3, np.float16), OperandCode.FLOAT32),
        (np.ones(3, np.float32), OperandCode.INT32),
    ],
)
def test_elu_alpha_type_must_match(x, scalar_code):
    tester = (
        OpTester(OperationCode.ELU)
        .input(x)
        .scalar(scalar_code, 1)
        .output(OpTester.default_code(x), x.shape)
    )
    expect_bad_data(tester)


def test_elu_quantized_rejected():
    x = np.ones(3, np.uint8)
    tester = (
        OpTester(OperationCode.ELU)
        .input(x, scale=0.5)
        .scalar(OperandCode.FLOAT32, 1.0)
        .output(U8, x.shape, scale=0.5)
    )
    expect_bad_data(tester)


# ---- PRELU ---------------------------------------------------------------------------------------


def prelu(x, alpha):
    return np.where(x >= 0, x, x * alpha)


PRELU_SHAPES = [
    ((2, 3), (2, 3)),
    ((1, 2, 2, 3), (3,)),
    ((1, 2, 2, 3), (1, 1, 3)),
    ((2, 3), (4, 1, 3)),  # alpha has the larger rank
    ((1, 3, 1, 5), (2, 1, 4, 1)),  # broadcast to rank 4 from both sides
]


def run_prelu(x, alpha, out_code=None, dynamic=False, quant=None, constant_alpha=False):
    quant = quant or {}
    code = out_code if out_code is not None else OpTester.default_code(x)
    tester = OpTester(OperationCode.PRELU).input(x, **quant.get("x", {}))
    if constant_alpha:
        tester.constant(alpha, **quant.get("alpha", {}))
    else:
        tester.input(alpha, **quant.get("alpha", {}))
    shape = np.broadcast_shapes(x.shape, alpha.shape)
    return tester.output(code, shape, **quant.get("out", {})).dynamic_outputs(dynamic).run()[0]


@pytest.mark.parametrize("shapes", PRELU_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_prelu_float(shapes, dtype):
    rng = np.random.default_rng(4)
    x = rng.uniform(-4, 4, shapes[0]).astype(dtype)
    alpha = rng.uniform(-1, 2, shapes[1]).astype(dtype)
    expected = prelu(x.astype(np.float32), alpha.astype(np.float32))
    kind = "float16" if dtype == np.float16 else None
    assert_close(run_prelu(x, alpha, constant_alpha=True), expected, kind)


@pytest.mark.parametrize(
    ("dtype", "code", "x_zp", "alpha_zp", "out_zp"),
    [(np.uint8, U8, 128, 50, 120), (np.int8, S8, 0, -78, -8)],
)
def test_prelu_quantized(dtype, code, x_zp, alpha_zp, out_zp):
    x = every_value(dtype).reshape(8, 32)
    alpha = np.linspace(np.iinfo(dtype).min, np.iinfo(dtype).max, 32).astype(dtype)
    quant = {
        "x": {"scale": 0.25, "zero_point": x_zp},
        "alpha": {"scale": 0.01, "zero_point": alpha_zp},
        "out": {"scale": 0.5, "zero_point": out_zp},
    }
    real_x = 0.25 * (x.astype(np.float64) - x_zp)
    real_alpha = 0.01 * (alpha.astype(np.float64) - alpha_zp)
    expected = quantize(prelu(real_x, real_alpha), 0.5, out_zp, dtype)
    assert_close(run_prelu(x, alpha, code, quant=quant), expected)


def test_prelu_dynamic_output_shape():
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 1, 3)
    alpha = np.array([[0.1], [0.2], [0.3], [0.4]], np.float32)
    result = run_prelu(x, alpha, dynamic=True)
    assert result.shape == (2, 4, 3)
    assert_close(result, prelu(x, alpha))


def test_prelu_incompatible_broadcast_rejected():
    tester = (
        OpTester(OperationCode.PRELU)
        .input(np.ones((2, 3), np.float32))
        .input(np.ones((2,), np.float32))
        .output(OperandCode.TENSOR_FLOAT32, (2, 3))
    )
    assert "broadcast" in str(expect_bad_data(tester))


def test_prelu_mismatched_types_rejected():
    tester = (
        OpTester(OperationCode.PRELU)
        .input(np.ones(3, np.float32))
        .input(np.ones(3, np.float16))
        .output(OperandCode.TENSOR_FLOAT32, (3,))
    )
    expect_bad_data(tester)


# ---- validation and shapes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "op",
    [
        OperationCode.RELU,
        OperationCode.RELU1,
        OperationCode.RELU6,
        OperationCode.LOGISTIC,
        OperationCode.TANH,
    ],
)
def test_rank_above_4_rejected(op):
    x = np.ones((1, 1, 1, 2, 2), np.float32)
    expect_bad_data(OpTester(op).input(x).output(OperandCode.TENSOR_FLOAT32, x.shape))


def test_hard_swish_accepts_rank_5():
    x = np.linspace(-5, 5, 16, dtype=np.float32).reshape(1, 2, 2, 2, 2)
    assert_close(run_unary(OperationCode.HARD_SWISH, x), hard_swish(x))


@pytest.mark.parametrize("op", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [np.int32, np.bool_])
def test_unsupported_type_rejected(op, dtype):
    x = np.ones(3, dtype)
    expect_bad_data(OpTester(op).input(x).output(OpTester.default_code(x), x.shape))


@pytest.mark.parametrize("op", list(ACTIVATIONS))
def test_output_type_must_match(op):
    tester = OpTester(op).input(np.ones(3, np.float32)).output(OperandCode.TENSOR_FLOAT16, (3,))
    expect_bad_data(tester)


@pytest.mark.parametrize("op", [OperationCode.RELU, OperationCode.TANH, OperationCode.PRELU])
def test_wrong_operand_counts_rejected(op):
    x = np.ones(3, np.float32)
    count = 2 if op == OperationCode.PRELU else 1
    too_many = OpTester(op)
    for _ in range(count + 1):
        too_many.input(x)
    expect_bad_data(too_many.output(OperandCode.TENSOR_FLOAT32, (3,)))
    no_output = OpTester(op)
    for _ in range(count):
        no_output.input(x)
    expect_bad_data(no_output)


@pytest.mark.parametrize("op", [OperationCode.RELU6, OperationCode.LOGISTIC])
def test_dynamic_output_shape(op):
    x = np.linspace(-8, 8, 24, dtype=np.float32).reshape(1, 2, 3, 4)
    result = run_unary(op, x, dynamic=True)
    assert result.shape == x.shape
    assert_close(result, ACTIVATIONS[op](x))


def test_quantized_dynamic_output_shape():
    x = every_value(np.uint8).reshape(4, 64)
    quant = {"x": {"scale": 0.05, "zero_point": 128}, "out": {"scale": 1 / 128, "zero_point": 128}}
    result = run_unary(OperationCode.TANH, x, U8, dynamic=True, quant=quant)
    assert result.shape == x.shape
    expected = quantize(np.tanh(0.05 * (x.astype(np.float64) - 128)), 1 / 128, 128, np.uint8)
    assert_close(result, expected)


@pytest.mark.parametrize(
    ("op", "scalars"),
    [
        (OperationCode.RELU, ()),
        (OperationCode.RELU1, ()),
        (OperationCode.RELU6, ()),
        (OperationCode.LOGISTIC, ()),
        (OperationCode.TANH, ()),
        (OperationCode.HARD_SWISH, ()),
        (OperationCode.ELU, ((OperandCode.FLOAT32, 1.0),)),
    ],
)
def test_zero_sized_input_allowed(op, scalars):
    assert run_on_zero_sized(op, scalars=scalars) == (0, 3)


def test_prelu_zero_sized_input_fails_execution():
    alpha = np.ones(3, np.float32)
    with pytest.raises(NnapiError) as error:
        run_on_zero_sized(OperationCode.PRELU, constants=(alpha,))
    assert error.value.code == ResultCode.OP_FAILED


def test_elu_omitted_alpha_fails_execution():
    """Android's CPU executor refuses omitted operands of operations that do not allow them."""
    tester = (
        OpTester(OperationCode.ELU)
        .input(np.ones(3, np.float32))
        .omitted(OperandCode.FLOAT32)
        .output(OperandCode.TENSOR_FLOAT32, (3,))
    )
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED
    assert "omitted" in str(error.value)


def ulp_distance(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """|actual - expected| in float32 ulps (ordered bit patterns), elementwise."""

    def ordered(values: np.ndarray) -> np.ndarray:
        bits = values.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)

    return np.abs(ordered(actual) - ordered(expected))


def test_logistic_float32_within_ulps_of_the_exact_value():
    # fp32 LOGISTIC computes e^-x with a vectorised exponential (within 1 ulp of expf) and
    # rounds twice more (1 + e, the division): every result within 3 ulps of the value computed in
    # float64, over a dense sweep of the range where the output is neither 0 nor 1, and in
    # blocks large enough for the threaded, vectorised path.
    x = np.linspace(-87, 17, 1 << 20, dtype=np.float32)
    result = run_unary(OperationCode.LOGISTIC, x)
    expected = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    assert ulp_distance(result, expected).max() <= 3
    # Beyond, 0 (subnormal results below -87.3 within a few of the smallest subnormals) and 1.
    tails = np.array([-np.inf, -200, -104, 30, 89, 200, np.inf], np.float32)
    np.testing.assert_array_equal(run_unary(OperationCode.LOGISTIC, tails), [0, 0, 0, 1, 1, 1, 1])
    assert np.isnan(run_unary(OperationCode.LOGISTIC, np.array([np.nan], np.float32))).all()
