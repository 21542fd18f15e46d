# SPDX-License-Identifier: Apache-2.0
"""TRANSPOSE against numpy: every permutation of a 4-D tensor, dtypes, omitted perm."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode

from .helpers import DTYPES, expect_error, expect_failed_when_prepared, sample
from .op_tester import OpTester


def run_transpose(x, perm, scale=0.0, zero_point=0, dynamic=False):
    expected = np.transpose(x, perm)
    tester = OpTester(OperationCode.TRANSPOSE).input(x, scale=scale, zero_point=zero_point)
    if perm is None:
        tester = tester.omitted(OperandCode.TENSOR_INT32)
    else:
        tester = tester.constant(np.array(perm, np.int32))
    result = (
        tester.output(OpTester.default_code(x), expected.shape, scale=scale, zero_point=zero_point)
        .dynamic_outputs(dynamic)
        .run()[0]
    )
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("perm", list(itertools.permutations(range(4))))
def test_every_permutation_4d(perm):
    run_transpose(sample((2, 3, 4, 5), np.float32), perm)


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
@pytest.mark.parametrize(
    ("shape", "perm"),
    [((7,), (0,)), ((3, 5), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((1, 4, 1, 6), (0, 2, 1, 3))],
)
def test_dtypes(dtype, scale, zero_point, shape, perm):
    run_transpose(sample(shape, dtype), perm, scale, zero_point)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (2, 3, 4, 5)])
def test_omitted_perm_reverses(shape):
    run_transpose(sample(shape, np.float16), None, dynamic=len(shape) == 3)


def test_dynamic_output_and_llm_head_split():
    # [batch, seq, heads, head_dim] -> [batch, heads, seq, head_dim]
    run_transpose(sample((1, 8, 4, 16), np.float32), (0, 2, 1, 3), dynamic=True)


@pytest.mark.parametrize("perm", [(0, 0, 1), (0, 1), (0, 1, 3), (-1, 0, 1)])
def test_rejects_bad_perm(perm):
    tester = (
        OpTester(OperationCode.TRANSPOSE)
        .input(sample((2, 3, 4), np.float32))
        .constant(np.array(perm, np.int32))
        .output(OperandCode.TENSOR_FLOAT32, (0, 0, 0))
    )
    expect_failed_when_prepared(tester)


def test_rejects_rank_5_int32_and_requantisation():
    testers = [
        OpTester(OperationCode.TRANSPOSE)
        .input(sample((1, 2, 1, 2, 1), np.float32))
        .omitted(OperandCode.TENSOR_INT32)
        .output(OperandCode.TENSOR_FLOAT32, (1, 2, 1, 2, 1)),
        OpTester(OperationCode.TRANSPOSE)
        .input(np.ones((2, 3), np.int32))
        .omitted(OperandCode.TENSOR_INT32)
        .output(OperandCode.TENSOR_INT32, (3, 2)),
        OpTester(OperationCode.TRANSPOSE)
        .input(sample((2, 3), np.uint8), scale=0.5, zero_point=0)
        .omitted(OperandCode.TENSOR_INT32)
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (3, 2), scale=0.5, zero_point=1),
    ]
    for tester in testers:
        expect_error(tester.build)


def test_perm_fed_at_execution():
    x = sample((2, 3, 4), np.float32)
    result = (
        OpTester(OperationCode.TRANSPOSE)
        .input(x)
        .input(np.array([1, 2, 0], np.int32))
        .output(OperandCode.TENSOR_FLOAT32, (3, 4, 2))
        .run()[0]
    )
    np.testing.assert_array_equal(result, np.transpose(x, (1, 2, 0)))
