# SPDX-License-Identifier: Apache-2.0
"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import BOOL8, S8, U8, expect_bad_data, run_on_zero_sized
from .op_tester import OpTester

COMPARISONS = {
    OperationCode.EQUAL: np.equal,
    OperationCode.NOT_EQUAL: np.not_equal,
    OperationCode.GREATER: np.greater,
    OperationCode.GREATER_EQUAL: np.greater_equal,
    OperationCode.LESS: np.less,
    OperationCode.LESS_EQUAL: np.less_equal,
}
SHAPES = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((4, 1, 3), (5, 1)),
    ((1, 3, 1, 5), (2, 1, 4, 1)),  # broadcast to rank 4 from both sides
    ((2, 1, 2, 1, 3), (1,)),  # no rank limit
]


def run_compare(op, a, b, dynamic=False, quant=None, out_code=BOOL8):
    quant = quant or {}
    return (
        OpTester(op)
        .input(a, **quant.get("a", {}))
        .input(b, **quant.get("b", {}))
        .output(out_code, np.broadcast_shapes(a.shape, b.shape))
        .dynamic_outputs(dynamic)
        .run()[0]
    )


def small_values(shape, dtype, rng):
    """Values from a small set, so that equal pairs occur often."""
    values = rng.integers(-3, 4, shape)
    if dtype == np.bool_:
        return values > 0
    return (values * 0.5).astype(dtype) if dtype != np.int32 else values.astype(np.int32)


@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.bool_])
def test_comparison(op, shapes, dtype):
    rng = np.random.default_rng(0)
    a = small_values(shapes[0], dtype, rng)
    b = small_values(shapes[1], dtype, rng)
    result = run_compare(op, a, b)
    assert result.dtype == np.bool_
    np.testing.assert_array_equal(result, COMPARISONS[op](a, b))


@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize(
    ("dtype", "code", "a_zp", "b_zp"), [(np.uint8, U8, 128, 0), (np.int8, S8, 0, -128)]
)
def test_quantized_compares_real_values(op, dtype, code, a_zp, b_zp):
    info = np.iinfo(dtype)
    # Different scales and zero points: A's step 0.5 and B's step 0.25 meet on many reals.
    a = np.arange(info.min, info.max + 1, dtype=np.int64).astype(dtype).reshape(16, 16)
    b = np.arange(info.min, info.max + 1, 17, dtype=np.int64).astype(dtype)[:16]
    quant = {"a": {"scale": 0.5, "zero_point": a_zp}, "b": {"scale": 0.25, "zero_point": b_zp}}
    real_a = 0.5 * (a.astype(np.float64) - a_zp)
    real_b = 0.25 * (b.astype(np.float64) - b_zp)
    expected = COMPARISONS[op](real_a, real_b)
    result = run_compare(op, a, b, quant=quant)
    np.testing.assert_array_equal(result, expected)
    if op == OperationCode.EQUAL:
        assert result.any()  # the raw bytes differ where the reals are equal


@pytest.mark.parametrize("op", list(COMPARISONS))
def test_nan_compares_unordered(op):
    a = np.array([np.nan, np.nan, 1.0, -np.inf], np.float32)
    b = np.array([np.nan, 1.0, np.nan, -np.inf], np.float32)
    np.testing.assert_array_equal(run_compare(op, a, b), COMPARISONS[op](a, b))


def test_float16_distinguishes_adjacent_values():
    a = np.array([1.0, 1.0009765625], np.float16)  # 1 and 1 + 2^-10
    b = np.array([1.0009765625, 1.0009765625], np.float16)
    np.testing.assert_array_equal(run_compare(OperationCode.LESS, a, b), [True, False])


@pytest.mark.parametrize("seed", range(8))
def test_random_property_sweep(seed):
    """Complementary pairs: NOT_EQUAL == !EQUAL, LESS == !GREATER_EQUAL, GREATER == !LESS_EQUAL."""
    rng = np.random.default_rng(400 + seed)
    rank = int(rng.integers(1, 5))
    shape_a = tuple(int(d) for d in rng.integers(1, 4, rank))
    shape_b = tuple(d if rng.random() < 0.5 else 1 for d in shape_a)
    a = small_values(shape_a, np.int32, rng)
    b = small_values(shape_b, np.int32, rng)
    results = {op: run_compare(op, a, b) for op in COMPARISONS}
    for op, reference in COMPARISONS.items():
        np.testing.assert_array_equal(results[op], reference(a, b))
    np.testing.assert_array_equal(results[OperationCode.NOT_EQUAL], ~results[OperationCode.EQUAL])
    np.testing.assert_array_equal(
        results[OperationCode.LESS], ~results[OperationCode.GREATER_EQUAL]
    )
    np.testing.assert_array_equal(
        results[OperationCode.GREATER], ~results[OperationCode.LESS_EQUAL]
    )


@pytest.mark.parametrize("op", [OperationCode.GREATER, OperationCode.EQUAL])
def test_dynamic_output_shape(op):
    a = np.arange(6, dtype=np.float32).reshape(2, 1, 3)
    b = np.array([[1.0], [4.0]], np.float32)
    result = run_compare(op, a, b, dynamic=True)
    assert result.shape == (2, 2, 3)
    np.testing.assert_array_equal(result, COMPARISONS[op](a, b))


# ---- validation ----------------------------------------------------------------------------------


def compare_tester(op, a, b, out_code=BOOL8, out_shape=None):
    a_params = {"scale": 0.5} if a.dtype in (np.uint8, np.int8, np.int16) else {}
    b_params = {"scale": 0.5} if b.dtype in (np.uint8, np.int8, np.int16) else {}
    shape = out_shape if out_shape is not None else a.shape
    tester = OpTester(op).input(a, **a_params).input(b, **b_params)
    return tester.output(out_code, shape, **({"scale": 0.5} if out_code != BOOL8 else {}))


@pytest.mark.parametrize("op", list(COMPARISONS))
def test_output_must_be_bool8(op):
    x = np.ones(3, np.float32)
    expect_bad_data(compare_tester(op, x, x, out_code=OperandCode.TENSOR_FLOAT32))


@pytest.mark.parametrize("op", [OperationCode.LESS, OperationCode.NOT_EQUAL])
def test_mismatched_input_types_rejected(op):
    expect_bad_data(compare_tester(op, np.ones(3, np.float32), np.ones(3, np.float16)))
    expect_bad_data(compare_tester(op, np.ones(3, np.uint8), np.ones(3, np.int8)))


def test_quant16_rejected():
    x = np.ones(3, np.int16)
    tester = (
        OpTester(OperationCode.EQUAL)
        .input(x, OperandCode.TENSOR_QUANT16_SYMM, scale=0.5)
        .input(x, OperandCode.TENSOR_QUANT16_SYMM, scale=0.5)
        .output(BOOL8, x.shape)
    )
    expect_bad_data(tester)


def test_incompatible_broadcast_rejected():
    tester = compare_tester(
        OperationCode.GREATER, np.ones((2, 3), np.int32), np.ones((2,), np.int32)
    )
    assert "broadcast" in str(expect_bad_data(tester))


@pytest.mark.parametrize("count", [1, 3])
def test_wrong_input_count_rejected(count):
    tester = OpTester(OperationCode.LESS_EQUAL)
    for _ in range(count):
        tester.input(np.ones(3, np.float32))
    expect_bad_data(tester.output(BOOL8, (3,)))


@pytest.mark.parametrize("op", [OperationCode.EQUAL, OperationCode.LESS])
def test_zero_sized_input_fails_execution(op):
    with pytest.raises(NnapiError) as error:
        run_on_zero_sized(op, constants=(np.zeros(3, np.float32),), out_code=BOOL8)
    assert error.value.code == ResultCode.OP_FAILED
