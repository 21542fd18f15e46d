# SPDX-License-Identifier: Apache-2.0
"""TILE against numpy.tile: ranks 1-4, dtypes, multiples fed at execution."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode, ResultCode

from .helpers import DTYPES_AND_INT32, expect_error, expect_failed_when_prepared, sample
from .op_tester import OpTester


def run_tile(x, multiples, scale=0.0, zero_point=0, dynamic=False, as_input=False):
    expected = np.tile(x, multiples)
    values = np.array(multiples, np.int32)
    tester = OpTester(OperationCode.TILE).input(x, scale=scale, zero_point=zero_point)
    tester = tester.input(values) if as_input else tester.constant(values)
    result = (
        tester.output(OpTester.default_code(x), expected.shape, scale, zero_point)
        .dynamic_outputs(dynamic)
        .run()[0]
    )
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES_AND_INT32)
@pytest.mark.parametrize(
    ("shape", "multiples"),
    [
        ((3,), (4,)),
        ((2, 3), (1, 2)),
        ((2, 3), (3, 1)),
        ((2, 1, 3), (2, 3, 2)),
        ((1, 2, 3, 2), (2, 1, 2, 3)),
    ],
)
def test_tile(dtype, scale, zero_point, shape, multiples):
    run_tile(sample(shape, dtype), multiples, scale, zero_point)


def test_multiples_fed_at_execution_and_dynamic_output():
    run_tile(sample((2, 3), np.float32), (2, 2), as_input=True, dynamic=True)
    run_tile(sample((1, 4), np.float16), (3, 1), dynamic=True)


@pytest.mark.parametrize("multiples", [(2,), (1, 0), (1, -2), (1, 1, 1)])
def test_rejects_bad_multiples(multiples):
    tester = (
        OpTester(OperationCode.TILE)
        .input(sample((2, 3), np.float32))
        .constant(np.array(multiples, np.int32))
        .output(OperandCode.TENSOR_FLOAT32, (0, 0))
    )
    expect_failed_when_prepared(tester)


def test_bad_multiples_fed_at_execution_fail_the_run():
    tester = (
        OpTester(OperationCode.TILE)
        .input(sample((2, 3), np.float32))
        .input(np.array([1, -1], np.int32))
        .output(OperandCode.TENSOR_FLOAT32, (2, 3))
    )
    expect_error(tester.run, ResultCode.OP_FAILED)
