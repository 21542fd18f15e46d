# SPDX-License-Identifier: Apache-2.0
"""CHANNEL_SHUFFLE against a numpy reshape-transpose: groups, (negative) axes, dtypes."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode

from .helpers import DTYPES, expect_error, expect_failed_when_prepared, sample
from .op_tester import OpTester


def shuffle_reference(x, groups, axis):
    x = np.moveaxis(x, axis, -1)
    shape = x.shape
    y = x.reshape(*shape[:-1], groups, shape[-1] // groups).swapaxes(-1, -2).reshape(shape)
    return np.moveaxis(y, -1, axis)


def shuffle_tester(x, groups, axis, scale=0.0, zero_point=0):
    return (
        OpTester(OperationCode.CHANNEL_SHUFFLE)
        .input(x, scale=scale, zero_point=zero_point)
        .scalar(OperandCode.INT32, groups)
        .scalar(OperandCode.INT32, axis)
        .output(OpTester.default_code(x), x.shape, scale, zero_point)
    )


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
@pytest.mark.parametrize(
    ("shape", "groups", "axis"),
    [
        ((12,), 3, 0),
        ((2, 6), 2, -1),
        ((2, 6, 3), 3, 1),
        ((1, 2, 2, 12), 4, 3),
        ((4, 2, 3, 1), 2, 0),
        ((2, 8, 2, 2), 8, -3),
    ],
)
def test_channel_shuffle(dtype, scale, zero_point, shape, groups, axis):
    x = sample(shape, dtype)
    result = shuffle_tester(x, groups, axis, scale, zero_point).dynamic_outputs(axis < 0).run()[0]
    np.testing.assert_array_equal(result, shuffle_reference(x, groups, axis))


def test_known_order():
    x = np.arange(6, dtype=np.float32)
    result = shuffle_tester(x, 2, 0).run()[0]
    np.testing.assert_array_equal(result, [0, 3, 1, 4, 2, 5])


@pytest.mark.parametrize(("groups", "axis"), [(4, 1), (0, 1), (-2, 1), (2, 2), (2, -3)])
def test_rejects_bad_arguments(groups, axis):
    expect_failed_when_prepared(shuffle_tester(sample((2, 6), np.float32), groups, axis))


def test_rejects_int32_and_rank_5():
    for x in (np.ones((2, 4), np.int32), sample((1, 1, 1, 2, 4), np.float32)):
        expect_error(shuffle_tester(x, 2, -1).build)
