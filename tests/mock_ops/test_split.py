# SPDX-License-Identifier: Apache-2.0
"""SPLIT against numpy: equal splits along (negative) axes, dtypes, validation."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode

from .helpers import DTYPES_AND_INT32, expect_error, expect_failed_when_prepared, sample
from .op_tester import OpTester


def split_tester(x, axis, splits, shape, scale=0.0, zero_point=0, outputs=None):
    tester = (
        OpTester(OperationCode.SPLIT)
        .input(x, scale=scale, zero_point=zero_point)
        .scalar(OperandCode.INT32, axis)
        .scalar(OperandCode.INT32, splits)
    )
    for _ in range(splits if outputs is None else outputs):
        tester = tester.output(OpTester.default_code(x), shape, scale, zero_point)
    return tester


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES_AND_INT32)
@pytest.mark.parametrize(
    ("shape", "axis", "splits"),
    [((6,), 0, 3), ((4, 6), 1, 2), ((4, 6), -2, 4), ((2, 3, 4, 2), 2, 4), ((2, 3, 4), -1, 1)],
)
def test_split(dtype, scale, zero_point, shape, axis, splits):
    x = sample(shape, dtype)
    expected = np.split(x, splits, axis)
    results = (
        split_tester(x, axis, splits, expected[0].shape, scale, zero_point)
        .dynamic_outputs(splits == 2)
        .run()
    )
    assert len(results) == splits
    for result, part in zip(results, expected, strict=True):
        np.testing.assert_array_equal(result, part)


@pytest.mark.parametrize(
    ("axis", "splits", "outputs"), [(0, 3, 3), (2, 2, 2), (-3, 2, 2), (1, 2, 3), (1, 0, 1)]
)
def test_rejects_bad_arguments(axis, splits, outputs):
    tester = split_tester(sample((4, 6), np.float32), axis, splits, (0, 0), outputs=outputs)
    expect_failed_when_prepared(tester)


def test_rejects_requantised_output():
    tester = (
        OpTester(OperationCode.SPLIT)
        .input(sample((4,), np.uint8), scale=0.5, zero_point=1)
        .scalar(OperandCode.INT32, 0)
        .scalar(OperandCode.INT32, 2)
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (2,), 0.5, 1)
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (2,), 0.5, 2)
    )
    expect_error(tester.build)
