# SPDX-License-Identifier: Apache-2.0
"""PAD, PAD_V2, MIRROR_PAD against numpy.pad: dtypes, quantised zero, pad values, modes."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode, ResultCode

from .helpers import DTYPES, expect_error, expect_failed_when_prepared, sample
from .op_tester import OpTester

PADDINGS = [
    ((5,), [[2, 1]]),
    ((2, 3), [[0, 1], [2, 0]]),
    ((2, 3, 4), [[1, 1], [0, 0], [3, 2]]),
    ((1, 2, 3, 2), [[0, 0], [1, 2], [2, 2], [0, 1]]),
]


def pad_tester(op, x, paddings, out_shape, extra=None, scale=0.0, zero_point=0, as_input=False):
    paddings = np.array(paddings, np.int32).reshape(-1, 2)
    tester = OpTester(op).input(x, scale=scale, zero_point=zero_point)
    tester = tester.input(paddings) if as_input else tester.constant(paddings)
    if extra is not None:
        tester = tester.scalar(*extra)
    return tester.output(OpTester.default_code(x), out_shape, scale, zero_point)


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
@pytest.mark.parametrize(("shape", "paddings"), PADDINGS)
def test_pad_with_logical_zero(dtype, scale, zero_point, shape, paddings):
    x = sample(shape, dtype)
    expected = np.pad(x, paddings, constant_values=zero_point)
    tester = pad_tester(OperationCode.PAD, x, paddings, expected.shape, None, scale, zero_point)
    np.testing.assert_array_equal(tester.dynamic_outputs(len(shape) == 3).run()[0], expected)


@pytest.mark.parametrize(
    ("dtype", "scale", "zero_point", "value"),
    [
        (np.float32, 0.0, 0, (OperandCode.FLOAT32, -2.5)),
        (np.float16, 0.0, 0, (OperandCode.FLOAT16, 1.5)),
        (np.uint8, 0.5, 3, (OperandCode.INT32, 200)),
        (np.int8, 0.25, -7, (OperandCode.INT32, -100)),
    ],
)
@pytest.mark.parametrize(("shape", "paddings"), PADDINGS)
def test_pad_v2(dtype, scale, zero_point, value, shape, paddings):
    x = sample(shape, dtype)
    expected = np.pad(x, paddings, constant_values=value[1])
    tester = pad_tester(OperationCode.PAD_V2, x, paddings, expected.shape, value, scale, zero_point)
    np.testing.assert_array_equal(tester.run()[0], expected)


def test_paddings_fed_at_execution():
    x = sample((2, 3), np.float32)
    paddings = [[1, 0], [0, 2]]
    expected = np.pad(x, paddings)
    tester = pad_tester(OperationCode.PAD, x, paddings, expected.shape, as_input=True)
    np.testing.assert_array_equal(tester.dynamic_outputs().run()[0], expected)
    bad = pad_tester(OperationCode.PAD, x, [[1, 0], [0, -2]], (3, 1), as_input=True)
    expect_error(bad.run, ResultCode.OP_FAILED)


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), [*DTYPES, (np.int32, 0.0, 0)])
@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize(
    ("shape", "paddings"),
    [
        ((4,), [[3, 2]]),
        ((3, 4), [[2, 2], [1, 3]]),
        ((2, 3, 3), [[1, 0], [2, 2], [0, 2]]),
        ((2, 2, 3, 2), [[1, 1], [1, 0], [2, 1], [0, 1]]),
    ],
)
def test_mirror_pad(dtype, scale, zero_point, mode, shape, paddings):
    x = sample(shape, dtype)
    expected = np.pad(x, paddings, mode="reflect" if mode == 0 else "symmetric")
    tester = pad_tester(
        OperationCode.MIRROR_PAD,
        x,
        paddings,
        expected.shape,
        (OperandCode.INT32, mode),
        scale,
        zero_point,
    )
    np.testing.assert_array_equal(tester.dynamic_outputs(mode == 1).run()[0], expected)


@pytest.mark.parametrize(
    ("mode", "paddings"), [(0, [[3, 0], [0, 0]]), (1, [[0, 4], [0, 0]]), (2, [[0, 0], [0, 0]])]
)
def test_mirror_pad_rejects_bad_arguments(mode, paddings):
    x = sample((3, 2), np.float32)
    tester = pad_tester(OperationCode.MIRROR_PAD, x, paddings, (0, 0), (OperandCode.INT32, mode))
    expect_failed_when_prepared(tester)


def test_pad_rejects_bad_arguments():
    x = sample((2, 3), np.float32)
    expect_failed_when_prepared(pad_tester(OperationCode.PAD, x, [[0, -1], [0, 0]], (0, 0)))
    expect_error(pad_tester(OperationCode.PAD, x, [[0, 1]], (0, 0)).build)
    x5 = sample((1, 1, 1, 1, 2), np.float32)
    expect_error(pad_tester(OperationCode.PAD, x5, [[0, 0]] * 5, (1, 1, 1, 1, 2)).build)
    expect_error(
        pad_tester(OperationCode.PAD, np.ones((2, 2), np.int32), [[0, 0]] * 2, (2, 2)).build
    )
    q = sample((2, 2), np.uint8)
    expect_failed_when_prepared(
        pad_tester(OperationCode.PAD_V2, q, [[0, 0]] * 2, (2, 2), (OperandCode.INT32, 256), 0.5, 0)
    )
    expect_error(
        pad_tester(OperationCode.PAD_V2, x, [[0, 0]] * 2, (2, 3), (OperandCode.FLOAT16, 1.0)).build
    )
    requantised = (
        OpTester(OperationCode.PAD)
        .input(q, scale=0.5, zero_point=0)
        .constant(np.zeros((2, 2), np.int32))
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (2, 2), 0.5, 1)
    )
    expect_error(requantised.build)
