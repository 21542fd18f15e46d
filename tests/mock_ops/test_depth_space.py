# SPDX-License-Identifier: Apache-2.0
"""DEPTH_TO_SPACE and SPACE_TO_DEPTH against numpy reshapes: block sizes, layouts, dtypes."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode

from .helpers import DTYPES, expect_error, expect_refused, sample
from .op_tester import OpTester


def depth_to_space(x, block):
    """NHWC reference (TensorFlow's DCR order)."""
    n, h, w, c = x.shape
    depth = c // (block * block)
    y = x.reshape(n, h, w, block, block, depth).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, h * block, w * block, depth)


def space_to_depth(x, block):
    n, h, w, c = x.shape
    y = x.reshape(n, h // block, block, w // block, block, c).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, h // block, w // block, block * block * c)


def run(op, x, block, nchw=None, scale=0.0, zero_point=0, dynamic=False):
    """x is NHWC; fed as NCHW when nchw is True (None: no layout input)."""
    reference = depth_to_space if op == OperationCode.DEPTH_TO_SPACE else space_to_depth
    expected = reference(x, block)
    fed = np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x
    out_shape = expected.transpose(0, 3, 1, 2).shape if nchw else expected.shape
    tester = (
        OpTester(op).input(fed, scale=scale, zero_point=zero_point).scalar(OperandCode.INT32, block)
    )
    if nchw is not None:
        tester = tester.scalar(OperandCode.BOOL, nchw)
    result = (
        tester.output(OpTester.default_code(x), out_shape, scale, zero_point)
        .dynamic_outputs(dynamic)
        .run()[0]
    )
    if nchw:
        result = result.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("op", [OperationCode.DEPTH_TO_SPACE, OperationCode.SPACE_TO_DEPTH])
@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
@pytest.mark.parametrize("nchw", [None, False, True])
@pytest.mark.parametrize("block", [1, 2, 3])
def test_depth_space(op, dtype, scale, zero_point, nchw, block):
    if op == OperationCode.DEPTH_TO_SPACE:
        shape = (2, 2, 3, block * block * 2)
    else:
        shape = (2, 2 * block, 3 * block, 2)
    run(op, sample(shape, dtype), block, nchw, scale, zero_point, dynamic=block == 2)


def test_round_trip_is_identity():
    x = sample((1, 4, 6, 3), np.float32)
    np.testing.assert_array_equal(depth_to_space(space_to_depth(x, 2), 2), x)


@pytest.mark.parametrize(
    ("op", "shape", "block"),
    [
        (OperationCode.DEPTH_TO_SPACE, (1, 2, 2, 6), 2),  # depth not divisible by 4
        (OperationCode.DEPTH_TO_SPACE, (1, 2, 2, 4), 0),
        (OperationCode.SPACE_TO_DEPTH, (1, 3, 4, 1), 2),  # height not divisible
        (OperationCode.SPACE_TO_DEPTH, (2, 4, 1), 2),  # not 4-D
    ],
)
def test_rejects_bad_arguments(op, shape, block):
    tester = (
        OpTester(op)
        .input(sample(shape, np.float32))
        .scalar(OperandCode.INT32, block)
        .output(OperandCode.TENSOR_FLOAT32, (0,) * len(shape))
    )
    # The block size and the divisibility it implies are values (checked when prepared).
    expect_refused(tester, when_prepared=len(shape) == 4, at_add=True)


def test_rejects_int32_and_requantisation():
    testers = [
        OpTester(OperationCode.SPACE_TO_DEPTH)
        .input(np.ones((1, 2, 2, 1), np.int32))
        .scalar(OperandCode.INT32, 2)
        .output(OperandCode.TENSOR_INT32, (1, 1, 1, 4)),
        OpTester(OperationCode.SPACE_TO_DEPTH)
        .input(sample((1, 2, 2, 1), np.uint8), scale=0.5, zero_point=0)
        .scalar(OperandCode.INT32, 2)
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (1, 1, 1, 4), 0.5, 1),
    ]
    for tester in testers:
        expect_error(tester.build)
