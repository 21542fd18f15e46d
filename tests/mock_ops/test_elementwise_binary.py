# SPDX-License-Identifier: Apache-2.0
"""POW, MAXIMUM, MINIMUM, LOGICAL_AND, LOGICAL_OR against numpy, with broadcasting."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode

from .helpers import S8, U8, expect_bad_data, quantize, run_on_zero_sized
from .op_tester import OpTester, assert_close

SHAPES = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((4, 1, 3), (5, 1)),
    ((2, 3, 4, 5), (1,)),
    ((1, 3, 1, 5), (2, 1, 4, 1)),  # broadcast to rank 4 from both sides
    ((2, 1, 1, 2, 3), (3,)),  # no rank limit
]
MIN_MAX = {OperationCode.MAXIMUM: np.maximum, OperationCode.MINIMUM: np.minimum}


def run_binary(op, a, b, out_code=None, dynamic=False, quant=None):
    quant = quant or {}
    code = out_code if out_code is not None else OpTester.default_code(a)
    return (
        OpTester(op)
        .input(a, **quant.get("a", {}))
        .input(b, **quant.get("b", {}))
        .output(code, np.broadcast_shapes(a.shape, b.shape), **quant.get("out", {}))
        .dynamic_outputs(dynamic)
        .run()[0]
    )


# ---- POW -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shapes", SHAPES)
def test_pow_float32(shapes):
    rng = np.random.default_rng(0)
    base = rng.uniform(0.1, 3, shapes[0]).astype(np.float32)
    exponent = rng.uniform(-2, 3, shapes[1]).astype(np.float32)
    assert_close(run_binary(OperationCode.POW, base, exponent), np.power(base, exponent))


def test_pow_float16():
    base = np.linspace(0.5, 2, 12).astype(np.float16).reshape(3, 4)
    exponent = np.array([0.5, 1, 2, -1], np.float16)
    expected = np.power(base.astype(np.float32), exponent.astype(np.float32))
    assert_close(run_binary(OperationCode.POW, base, exponent), expected, "float16")


def test_pow_special_cases():
    base = np.array([-2, -2, 0, 0, 4, 1], np.float32)
    exponent = np.array([2, 0.5, 0, -1, 0.5, np.inf], np.float32)
    result = run_binary(OperationCode.POW, base, exponent)
    with np.errstate(all="ignore"):
        assert_close(result, np.power(base, exponent))
    assert np.isnan(result[1])  # negative base, fractional exponent
    assert result[2] == 1 and result[3] == np.inf


# ---- MAXIMUM, MINIMUM ----------------------------------------------------------------------------


@pytest.mark.parametrize("op", list(MIN_MAX))
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_min_max(op, shapes, dtype):
    rng = np.random.default_rng(1)
    if dtype == np.int32:
        a = rng.integers(-(2**31), 2**31, shapes[0], dtype=np.int64).astype(np.int32)
        b = rng.integers(-(2**31), 2**31, shapes[1], dtype=np.int64).astype(np.int32)
    else:
        a = rng.uniform(-5, 5, shapes[0]).astype(dtype)
        b = rng.uniform(-5, 5, shapes[1]).astype(dtype)
    # Selecting one of the inputs is exact for every type.
    np.testing.assert_array_equal(run_binary(op, a, b), MIN_MAX[op](a, b))


@pytest.mark.parametrize("op", list(MIN_MAX))
@pytest.mark.parametrize(
    ("dtype", "code", "zps"),
    [(np.uint8, U8, (0, 255, 128)), (np.int8, S8, (-128, 127, 0))],
)
def test_min_max_quantized_requantises_to_output(op, dtype, code, zps):
    info = np.iinfo(dtype)
    a = np.arange(info.min, info.max + 1, dtype=np.int64).astype(dtype).reshape(16, 16)
    b = np.linspace(info.min, info.max, 16).astype(dtype)
    quant = {
        "a": {"scale": 0.5, "zero_point": zps[0]},
        "b": {"scale": 0.25, "zero_point": zps[1]},
        "out": {"scale": 0.4, "zero_point": zps[2]},
    }
    real_a = 0.5 * (a.astype(np.float64) - zps[0])
    real_b = 0.25 * (b.astype(np.float64) - zps[1])
    expected = quantize(MIN_MAX[op](real_a, real_b), 0.4, zps[2], dtype)
    result = run_binary(op, a, b, code, quant=quant)
    assert_close(result, expected)
    # A's reals reach 127.5 and B's -63.75, beyond the output's range: results saturate.
    if op == OperationCode.MAXIMUM:
        assert result.max() == info.max
    else:
        assert result.min() == info.min


@pytest.mark.parametrize("seed", range(8))
def test_min_max_random_property_sweep(seed):
    """max(a, b) >= both, min(a, b) <= both, and max + min == a + b, over random broadcasts."""
    rng = np.random.default_rng(300 + seed)
    rank = int(rng.integers(1, 5))
    shape_a = tuple(int(d) for d in rng.integers(1, 4, rank))
    shape_b = tuple(d if rng.random() < 0.5 else 1 for d in shape_a)[int(rng.integers(0, rank)) :]
    a = rng.normal(0, 3, shape_a).astype(np.float32)
    b = rng.normal(0, 3, shape_b).astype(np.float32) if shape_b else np.ones(1, np.float32)
    high = run_binary(OperationCode.MAXIMUM, a, b)
    low = run_binary(OperationCode.MINIMUM, a, b)
    assert (high >= a).all() and (high >= b).all()
    assert (low <= a).all() and (low <= b).all()
    np.testing.assert_array_equal(high + low, a + b)


# ---- LOGICAL_AND, LOGICAL_OR ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "reference"),
    [(OperationCode.LOGICAL_AND, np.logical_and), (OperationCode.LOGICAL_OR, np.logical_or)],
)
@pytest.mark.parametrize("shapes", SHAPES)
def test_logical(op, reference, shapes):
    rng = np.random.default_rng(2)
    a = rng.random(shapes[0]) < 0.5
    b = rng.random(shapes[1]) < 0.5
    np.testing.assert_array_equal(run_binary(op, a, b), reference(a, b))


def test_logical_treats_any_nonzero_byte_as_true():
    a = np.array([0, 2, 255, 7], np.uint8).view(np.bool_)
    b = np.array([3, 0, 128, 1], np.uint8).view(np.bool_)
    both = run_binary(OperationCode.LOGICAL_AND, a, b).view(np.uint8)
    either = run_binary(OperationCode.LOGICAL_OR, a, b).view(np.uint8)
    np.testing.assert_array_equal(both, [0, 0, 1, 1])
    np.testing.assert_array_equal(either, [1, 1, 1, 1])


# ---- dynamic shapes and validation ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "a", "b"),
    [
        (
            OperationCode.POW,
            np.full((2, 1, 3), 2, np.float32),
            np.arange(4, dtype=np.float32)[:, None],
        ),
        (
            OperationCode.MAXIMUM,
            np.arange(6, dtype=np.int32).reshape(6, 1),
            np.arange(3, dtype=np.int32),
        ),
        (OperationCode.LOGICAL_OR, np.array([[True], [False]]), np.array([True, False, False])),
    ],
)
def test_dynamic_output_shape(op, a, b):
    result = run_binary(op, a, b, dynamic=True)
    reference = {
        OperationCode.POW: np.power,
        OperationCode.MAXIMUM: np.maximum,
        OperationCode.LOGICAL_OR: np.logical_or,
    }[op]
    assert result.shape == np.broadcast_shapes(a.shape, b.shape)
    assert_close(result, reference(a, b))


def binary_tester(op, a, b, out_code=None, out_shape=None):
    a_params = {"scale": 0.5} if a.dtype in (np.uint8, np.int8) else {}
    b_params = {"scale": 0.5} if b.dtype in (np.uint8, np.int8) else {}
    code = out_code if out_code is not None else OpTester.default_code(a)
    shape = out_shape if out_shape is not None else a.shape
    return OpTester(op).input(a, **a_params).input(b, **b_params).output(code, shape, **a_params)


@pytest.mark.parametrize(
    ("op", "dtype"),
    [
        (OperationCode.POW, np.int32),
        (OperationCode.POW, np.uint8),
        (OperationCode.POW, np.bool_),
        (OperationCode.MAXIMUM, np.bool_),
        (OperationCode.MINIMUM, np.bool_),
        (OperationCode.LOGICAL_AND, np.float32),
        (OperationCode.LOGICAL_OR, np.int32),
    ],
)
def test_unsupported_type_rejected(op, dtype):
    x = np.ones(3, dtype)
    expect_bad_data(binary_tester(op, x, x))


@pytest.mark.parametrize("op", [OperationCode.POW, OperationCode.MAXIMUM, OperationCode.LOGICAL_OR])
def test_mismatched_input_types_rejected(op):
    a = np.ones(3, np.bool_ if op == OperationCode.LOGICAL_OR else np.float32)
    b = np.ones(3, np.int32)
    expect_bad_data(binary_tester(op, a, b))


@pytest.mark.parametrize("op", [OperationCode.MINIMUM, OperationCode.LOGICAL_AND])
def test_output_type_must_match(op):
    a = np.ones(3, np.bool_ if op == OperationCode.LOGICAL_AND else np.float32)
    expect_bad_data(binary_tester(op, a, a, out_code=OperandCode.TENSOR_INT32))


@pytest.mark.parametrize(
    "op", [OperationCode.POW, OperationCode.MAXIMUM, OperationCode.LOGICAL_AND]
)
def test_incompatible_broadcast_rejected(op):
    dtype = np.bool_ if op == OperationCode.LOGICAL_AND else np.float32
    tester = binary_tester(op, np.ones((2, 3), dtype), np.ones((4,), dtype), out_shape=(2, 3))
    assert "broadcast" in str(expect_bad_data(tester))


@pytest.mark.parametrize("op", [OperationCode.POW, OperationCode.MINIMUM, OperationCode.LOGICAL_OR])
def test_wrong_input_count_rejected(op):
    dtype = np.bool_ if op == OperationCode.LOGICAL_OR else np.float32
    x = np.ones(3, dtype)
    tester = OpTester(op).input(x).output(OpTester.default_code(x), x.shape)
    expect_bad_data(tester)
    tester = OpTester(op).input(x).input(x).input(x).output(OpTester.default_code(x), x.shape)
    expect_bad_data(tester)


@pytest.mark.parametrize("op", [OperationCode.POW, OperationCode.MAXIMUM, OperationCode.MINIMUM])
def test_zero_sized_input_allowed(op):
    """POW, MAXIMUM, MINIMUM run outside Android's operation resolver and accept zero sizes."""
    other = np.full(3, 2.0, np.float32)
    assert run_on_zero_sized(op, constants=(other,)) == (0, 3)
