# SPDX-License-Identifier: Apache-2.0
"""SLICE and STRIDED_SLICE against numpy slicing: sizes of -1, masks, negative strides."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode, ResultCode

from .helpers import DTYPES, expect_error, expect_refused, sample
from .op_tester import OpTester

# ---- SLICE -------------------------------------------------------------------------------------


def slice_tester(x, begin, size, out_shape, scale=0.0, zero_point=0, as_input=False):
    tester = OpTester(OperationCode.SLICE).input(x, scale=scale, zero_point=zero_point)
    for values in (begin, size):
        array = np.array(values, np.int32)
        tester = tester.input(array) if as_input else tester.constant(array)
    return tester.output(OpTester.default_code(x), out_shape, scale, zero_point)


def slice_reference(x, begin, size):
    return x[tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size, strict=True))]


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), [*DTYPES, (np.int32, 0.0, 0)])
@pytest.mark.parametrize(
    ("shape", "begin", "size"),
    [
        ((5,), (1,), (3,)),
        ((3, 4), (1, 0), (-1, 2)),
        ((2, 3, 4), (0, 1, 1), (2, 2, -1)),
        ((2, 3, 4, 5), (1, 0, 2, 1), (1, 3, 2, 3)),
    ],
)
def test_slice(dtype, scale, zero_point, shape, begin, size):
    x = sample(shape, dtype)
    expected = slice_reference(x, begin, size)
    result = slice_tester(x, begin, size, expected.shape, scale, zero_point).run()[0]
    np.testing.assert_array_equal(result, expected)


def test_slice_arguments_fed_at_execution_dynamic_output():
    x = sample((4, 6), np.float32)
    expected = slice_reference(x, (1, 2), (2, -1))
    result = (
        slice_tester(x, (1, 2), (2, -1), expected.shape, as_input=True).dynamic_outputs().run()[0]
    )
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize(
    ("begin", "size"), [((-1, 0), (1, 1)), ((0, 3), (1, 2)), ((0, 0), (1, -2)), ((0,), (1,))]
)
def test_slice_rejects_bad_arguments(begin, size):
    tester = slice_tester(sample((2, 4), np.float32), begin, size, (0, 0))
    # begin and size values are checked when prepared, their lengths at addOperation.
    expect_refused(tester, when_prepared=len(begin) == 2, at_add=True)
    if len(begin) == 2:
        expect_error(
            slice_tester(sample((2, 4), np.float32), begin, size, (1, 1), as_input=True).run,
            ResultCode.OP_FAILED,
        )


# ---- STRIDED_SLICE -----------------------------------------------------------------------------


def strided_reference(x, begin, end, strides, begin_mask, end_mask, shrink_mask):
    """numpy slicing; None when Android would reject the shrink request."""
    index = []
    for d in range(x.ndim):
        start = None if begin_mask >> d & 1 else begin[d]
        stop = None if end_mask >> d & 1 else end[d]
        index.append(slice(start, stop, strides[d]))
    view = x[tuple(index)]
    shrunk = [d for d in range(x.ndim) if shrink_mask >> d & 1]
    for d in shrunk:
        if strides[d] < 0 or view.shape[d] != 1:
            return None
    shape = [n for d, n in enumerate(view.shape) if d not in shrunk]
    return view.reshape(shape or [1])


def strided_tester(x, begin, end, strides, masks, out_shape, scale=0.0, zero_point=0):
    tester = OpTester(OperationCode.STRIDED_SLICE).input(x, scale=scale, zero_point=zero_point)
    for values in (begin, end, strides):
        tester = tester.constant(np.array(values, np.int32))
    for mask in masks:
        tester = tester.scalar(OperandCode.INT32, mask)
    return tester.output(OpTester.default_code(x), out_shape, scale, zero_point)


def random_case(seed):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 5))
    shape = tuple(int(n) for n in rng.integers(1, 6, rank))
    strides = [int(rng.choice([-3, -2, -1, 1, 2, 3])) for _ in shape]
    begin, end = [], []
    for n, stride in zip(shape, strides, strict=True):
        # Mostly in the stride's direction (so the result is rarely empty), in and out of range.
        low, high = sorted(int(v) for v in rng.integers(-n - 2, n + 2, 2))
        if rng.random() < 0.5:
            low, high = (low % n, high % n + 1) if low != high else (low, high)
        begin.append(low if stride > 0 else high)
        end.append(high if stride > 0 else low)
    masks = [int(rng.integers(0, 1 << rank)) for _ in range(2)]
    # Shrink only where it can be valid, plus sometimes an invalid one.
    shrink = 0
    for d in range(rank):
        if rng.random() < 0.3:
            strides[d] = 1
            begin[d] = int(rng.integers(-shape[d], shape[d]))
            end[d] = begin[d] + 1 if begin[d] != -1 else shape[d]
            masks[0] &= ~(1 << d)
            masks[1] &= ~(1 << d)
            shrink |= 1 << d
    return shape, begin, end, strides, [*masks, shrink]


@pytest.mark.parametrize("seed", range(48))
def test_strided_slice_random(seed):
    shape, begin, end, strides, masks = random_case(seed)
    x = sample(shape, np.float32, seed)
    expected = strided_reference(x, begin, end, strides, *masks)
    assert expected is not None
    tester = strided_tester(x, begin, end, strides, masks, expected.shape)
    if expected.size == 0:
        tester.build()  # a zero-sized model output cannot be read back; validation must pass
        return
    np.testing.assert_array_equal(tester.dynamic_outputs(seed % 2 == 0).run()[0], expected)


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
@pytest.mark.parametrize(
    ("shape", "begin", "end", "strides", "masks"),
    [
        ((2, 3), (1, 0), (2, 2), (1, 1), (0, 0, 0)),
        ((2, 3), (0, -1), (2, -4), (1, -1), (0, 0, 0)),  # reverse the last dimension
        ((4, 5), (3, 0), (0, 5), (-2, 2), (0, 2, 0)),
        ((2, 3, 4), (0, 0, 0), (0, 0, 0), (1, 1, -1), (7, 7, 0)),  # all masked, reversed
        ((2, 3, 4), (1, 2, 0), (2, 3, 4), (1, 1, 1), (0, 0, 3)),  # shrink two axes
        ((1, 1), (0, 0), (1, 1), (1, 1), (0, 0, 3)),  # shrink every axis -> [1]
        ((3, 4, 2, 2), (-1, 1, 0, 1), (-4, 10, 2, 2), (-1, 2, 1, 1), (0, 0, 8)),
    ],
)
def test_strided_slice_cases(dtype, scale, zero_point, shape, begin, end, strides, masks):
    x = sample(shape, dtype)
    expected = strided_reference(x, begin, end, strides, *masks)
    result = strided_tester(x, begin, end, strides, masks, expected.shape, scale, zero_point).run()
    np.testing.assert_array_equal(result[0], expected)


@pytest.mark.parametrize(
    ("begin", "end", "strides", "masks"),
    [
        ((0, 0), (2, 3), (1, 0), (0, 0, 0)),  # zero stride
        ((0, 0), (2, 3), (1, 1), (0, 0, 1)),  # shrinking a dimension of size 2
        ((1, 0), (0, 3), (-1, 1), (0, 0, 1)),  # shrinking with a negative stride
        ((0,), (2,), (1,), (0, 0, 0)),  # wrong length
    ],
)
def test_strided_slice_rejects_bad_arguments(begin, end, strides, masks):
    tester = strided_tester(sample((2, 3), np.float32), begin, end, strides, masks, (0, 0))
    # Strides and masks values are checked when prepared, the lengths at addOperation.
    expect_refused(tester, when_prepared=len(begin) == 2, at_add=True)


def test_strided_slice_rejects_int32_and_rank_5():
    x = np.ones((2, 3), np.int32)
    expect_error(strided_tester(x, (0, 0), (2, 3), (1, 1), (0, 0, 0), (2, 3)).build)
    x5 = sample((1, 1, 1, 1, 2), np.float32)
    ones = (1, 1, 1, 1, 1)
    expect_error(strided_tester(x5, (0,) * 5, ones, ones, (0, 0, 0), (1, 1, 1, 1, 1)).build)
