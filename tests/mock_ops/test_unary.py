# SPDX-License-Identifier: Apache-2.0
"""ABS, NEG, EXP, LOG, SIN, SQRT, RSQRT, FLOOR, LOGICAL_NOT against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import (
    NnapiError,
    OperandCode,
    OperationCode,
    ResultCode,
)

from .helpers import expect_bad_data, quantize, run_on_zero_sized, run_unary
from .op_tester import OpTester, assert_close

FLOAT_OPS = {
    OperationCode.ABS: np.abs,
    OperationCode.NEG: np.negative,
    OperationCode.EXP: np.exp,
    OperationCode.LOG: np.log,
    OperationCode.SIN: np.sin,
    OperationCode.SQRT: np.sqrt,
    OperationCode.RSQRT: lambda x: 1 / np.sqrt(x),
    OperationCode.FLOOR: np.floor,
}
# Operations defined only for positive inputs get positive test data.
POSITIVE_ONLY = {OperationCode.LOG, OperationCode.SQRT, OperationCode.RSQRT}
SHAPES = [(5,), (2, 3), (2, 1, 3), (1, 2, 3, 2)]


def sample(op, shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    low = 0.05 if op in POSITIVE_ONLY else -4.0
    return rng.uniform(low, 4.0, shape).astype(dtype)


@pytest.mark.parametrize("op", list(FLOAT_OPS))
@pytest.mark.parametrize("shape", SHAPES)
def test_float32(op, shape):
    x = sample(op, shape, np.float32)
    assert_close(run_unary(op, x), FLOAT_OPS[op](x))


@pytest.mark.parametrize("op", list(FLOAT_OPS))
def test_float16(op):
    x = sample(op, (3, 4), np.float16)
    expected = FLOAT_OPS[op](x.astype(np.float32))
    assert_close(run_unary(op, x), expected, "float16")


@pytest.mark.parametrize("op", [op for op in FLOAT_OPS if op != OperationCode.FLOOR])
def test_rank_5_allowed(op):
    x = sample(op, (1, 2, 1, 2, 3), np.float32)
    assert_close(run_unary(op, x), FLOAT_OPS[op](x))


@pytest.mark.parametrize("seed", range(10))
def test_random_property_sweep(seed):
    """Every float32 op on random shapes and values, including special values."""
    rng = np.random.default_rng(100 + seed)
    shape = tuple(int(d) for d in rng.integers(1, 4, rng.integers(1, 5)))
    x = rng.normal(0, 10, shape).astype(np.float32)
    x.flat[0] = rng.choice([0.0, -0.0, 1e-30, 88.0])
    for op, reference in FLOAT_OPS.items():
        with np.errstate(all="ignore"):  # infinities and NaN are part of the sweep
            assert_close(run_unary(op, x), reference(x))


def test_domain_edges_give_nan_and_infinities():
    x = np.array([-1.0, 0.0, -0.0, 4.0], np.float32)
    with np.errstate(all="ignore"):
        for op in (OperationCode.LOG, OperationCode.SQRT, OperationCode.RSQRT):
            result = run_unary(op, x)
            assert np.isnan(result[0]), op
            assert_close(result, FLOAT_OPS[op](x))
    assert run_unary(OperationCode.LOG, x)[1] == -np.inf
    assert run_unary(OperationCode.RSQRT, x)[1] == np.inf
    assert run_unary(OperationCode.RSQRT, x)[2] == -np.inf
    assert np.isnan(run_unary(OperationCode.LOG, x.astype(np.float16))[0])


def test_exp_overflows_to_infinity():
    x = np.array([100.0, -200.0], np.float32)
    result = run_unary(OperationCode.EXP, x)
    assert result[0] == np.inf and result[1] == 0.0
    assert run_unary(OperationCode.EXP, x.astype(np.float16))[0] == np.inf


def test_floor_negative_values():
    x = np.array([-1.5, -1.0, -0.2, 0.0, 0.7, 2.0], np.float32)
    np.testing.assert_array_equal(run_unary(OperationCode.FLOOR, x), np.floor(x))


@pytest.mark.parametrize("op", [OperationCode.ABS, OperationCode.NEG])
def test_int32_wraps(op):
    x = np.array([-(2**31), -7, 0, 5, 2**31 - 1], np.int32)
    with np.errstate(over="ignore"):
        expected = FLOAT_OPS[op](x)  # numpy wraps int32 too
    np.testing.assert_array_equal(run_unary(op, x), expected)
    assert run_unary(op, x)[0] == -(2**31)


@pytest.mark.parametrize(
    ("dtype", "code", "x_zp", "out_zp"),
    [
        (np.uint8, OperandCode.TENSOR_QUANT8_ASYMM, 10, 3),
        (np.int8, OperandCode.TENSOR_QUANT8_ASYMM_SIGNED, -100, -120),
    ],
)
def test_rsqrt_quantized(dtype, code, x_zp, out_zp):
    info = np.iinfo(dtype)
    x = np.arange(info.min, info.max + 1, dtype=np.int64).astype(dtype)  # every value
    x_scale, out_scale = 0.05, 0.02
    quant = {
        "x": {"scale": x_scale, "zero_point": x_zp},
        "out": {"scale": out_scale, "zero_point": out_zp},
    }
    real = x_scale * (x.astype(np.float64) - x_zp)
    with np.errstate(all="ignore"):
        expected = quantize(1 / np.sqrt(real), out_scale, out_zp, dtype)
    result = run_unary(OperationCode.RSQRT, x, out_code=code, quant=quant)
    assert_close(result, expected)
    # Negative reals give NaN, which saturates to the maximum; zero gives +inf, also the maximum.
    assert (result[real <= 0] == info.max).all()
    assert result[-1] == expected[-1]


def test_logical_not():
    x = np.array([[True, False, True], [False, False, True]])
    np.testing.assert_array_equal(run_unary(OperationCode.LOGICAL_NOT, x), ~x)


def test_logical_not_treats_any_nonzero_byte_as_true():
    raw = np.array([0, 1, 2, 255], np.uint8)
    result = (
        OpTester(OperationCode.LOGICAL_NOT)
        .input(raw.view(np.bool_), OperandCode.TENSOR_BOOL8)
        .output(OperandCode.TENSOR_BOOL8, raw.shape)
        .run()[0]
    )
    np.testing.assert_array_equal(result.view(np.uint8), [1, 0, 0, 0])


@pytest.mark.parametrize(
    ("op", "x"),
    [
        (OperationCode.EXP, np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)),
        (OperationCode.ABS, np.arange(-6, 6, dtype=np.int32).reshape(2, 2, 3)),
        (OperationCode.LOGICAL_NOT, np.array([[True, False]] * 3)),
        (OperationCode.FLOOR, np.linspace(-2, 2, 24, dtype=np.float32).reshape(1, 2, 3, 4)),
    ],
)
def test_dynamic_output_shape(op, x):
    result = run_unary(op, x, dynamic=True)
    assert result.shape == x.shape
    expected = ~x if x.dtype == np.bool_ else FLOAT_OPS[op](x)
    assert_close(result, expected)


# ---- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "x", "code"),
    [
        (OperationCode.EXP, np.ones(3, np.int32), None),
        (OperationCode.LOG, np.ones(3, np.uint8), None),
        (OperationCode.SIN, np.ones(3, np.bool_), None),
        (OperationCode.SQRT, np.ones(3, np.int8), None),
        (OperationCode.NEG, np.ones(3, np.uint8), None),
        (OperationCode.ABS, np.ones(3, np.int8), None),
        (OperationCode.FLOOR, np.ones(3, np.int32), None),
        (OperationCode.RSQRT, np.ones(3, np.int32), None),
        (OperationCode.LOGICAL_NOT, np.ones(3, np.float32), None),
        (OperationCode.ABS, np.ones(3, np.int16), OperandCode.TENSOR_QUANT16_SYMM),
    ],
)
def test_unsupported_type_rejected(op, x, code):
    quantised = code is not None or x.dtype in (np.uint8, np.int8)
    params = {"scale": 0.5} if quantised else {}
    tester = OpTester(op).input(x, code, **params)
    tester.output(code if code is not None else OpTester.default_code(x), x.shape, **params)
    expect_bad_data(tester)


def test_output_type_must_match_input():
    tester = (
        OpTester(OperationCode.EXP)
        .input(np.ones(3, np.float32))
        .output(OperandCode.TENSOR_FLOAT16, (3,))
    )
    expect_bad_data(tester)


@pytest.mark.parametrize("inputs", [0, 2])
def test_wrong_input_count_rejected(inputs):
    tester = OpTester(OperationCode.NEG)
    for _ in range(inputs):
        tester.input(np.ones(3, np.float32))
    tester.output(OperandCode.TENSOR_FLOAT32, (3,))
    assert "inputs" in str(expect_bad_data(tester))


def test_wrong_output_count_rejected():
    tester = (
        OpTester(OperationCode.SIN)
        .input(np.ones(3, np.float32))
        .output(OperandCode.TENSOR_FLOAT32, (3,))
        .output(OperandCode.TENSOR_FLOAT32, (3,))
    )
    expect_bad_data(tester)


def test_floor_rank_5_rejected():
    x = np.ones((1, 1, 1, 2, 2), np.float32)
    tester = OpTester(OperationCode.FLOOR).input(x).output(OperandCode.TENSOR_FLOAT32, x.shape)
    expect_bad_data(tester)


def test_declared_output_shape_mismatch_fails_execution():
    tester = (
        OpTester(OperationCode.NEG)
        .input(np.ones((2, 3), np.float32))
        .output(OperandCode.TENSOR_FLOAT32, (3, 2))
    )
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED


# ---- zero-sized inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op",
    [
        OperationCode.ABS,
        OperationCode.NEG,
        OperationCode.EXP,
        OperationCode.LOG,
        OperationCode.SIN,
        OperationCode.SQRT,
        OperationCode.RSQRT,
        OperationCode.FLOOR,
    ],
)
def test_zero_sized_input_fails_execution(op):
    """Android registers these without allowZeroSizedInput: the CPU executor refuses them."""
    with pytest.raises(NnapiError) as error:
        run_on_zero_sized(op)
    assert error.value.code == ResultCode.OP_FAILED
    assert "zero-sized" in str(error.value)
