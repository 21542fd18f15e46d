"""SPLIT against numpy: equal splits along (negative) axes, dtypes, validation."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import NnapiError, OperandCode, OperationCode, ResultCode

from .op_tester import OpTester

DTYPES = [
    (np.float32, 0.0, 0),
    (np.float16, 0.0, 0),
    (np.int32, 0.0, 0),
    (np.uint8, 0.5, 3),
    (np.int8, 0.25, -7),
]


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, dtype=dtype)
    return rng.uniform(-4, 4, shape).astype(dtype)


def expect_error(action, code=ResultCode.BAD_DATA):
    with pytest.raises(NnapiError) as error:
        action()
    assert error.value.code == code, str(error.value)
    if code == ResultCode.BAD_DATA:  # the operation's validation, not a later step, refused it
        assert error.value.function == "ANeuralNetworksModel_addOperation", str(error.value)


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


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
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
    expect_error(tester.build)


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
