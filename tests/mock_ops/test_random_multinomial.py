# SPDX-License-Identifier: Apache-2.0
"""RANDOM_MULTINOMIAL: samples of the categorical distribution softmax(logits) of each row.

Android specifies the distribution, not the draws (its generator is not the mock's), so the
tests check what the NDK documents: the sample frequencies of every row match softmax(logits)
(a chi-square test with a fixed threshold; the draws are deterministic for given seeds, so the
test is too), -inf logits are never drawn, the draws are a function of the seeds, fp16 logits,
dynamic output shapes, the BAD_DATA validation rules, OP_FAILED for a row without a finite
logit, and feature level 3.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add, expect_failed_when_prepared
from .op_tester import OpTester
from .test_conv_2d import required_feature_level

MULTINOMIAL = OperationCode.RANDOM_MULTINOMIAL

#: Chi-square 99.9999th percentiles for 1..7 degrees of freedom: a correct sampler fails a
#: given (deterministic) case with probability 1e-6.
CHI2_LIMIT = {1: 23.9, 2: 27.6, 3: 30.7, 4: 33.4, 5: 35.9, 6: 38.3, 7: 40.5}


def make_tester(
    logits,
    samples,
    seeds=(1, 2),
    out_shape=None,
    out_code=OperandCode.TENSOR_INT32,
    seeds_shape=None,
):
    seeds = np.asarray(seeds, np.int32)
    if seeds_shape is not None:
        seeds = np.zeros(seeds_shape, np.int32)
    out_shape = out_shape if out_shape is not None else (logits.shape[0], samples)
    return (
        OpTester(MULTINOMIAL)
        .input(logits)
        .scalar(OperandCode.INT32, samples)
        .input(seeds)
        .output(out_code, out_shape)
    )


def softmax(logits):
    z = np.exp(logits.astype(np.float64) - logits.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def chi_square(samples, probabilities):
    counts = np.bincount(samples, minlength=probabilities.size)
    expected = probabilities * samples.size
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("seeds", [(1, 2), (0, 0), (-7, 123456789)])
def test_frequencies_follow_softmax(dtype, seeds):
    logits = np.array([[0.0, 1.0, 2.0, -1.0], [3.0, 3.0, 3.0, 3.0], [-2.0, 0.5, 0.0, 1.5]], dtype)
    draws = make_tester(logits, 20000, seeds).run()[0]
    assert draws.shape == (3, 20000) and draws.dtype == np.int32
    assert draws.min() >= 0 and draws.max() < 4
    for row, probabilities in zip(draws, softmax(logits), strict=True):
        assert chi_square(row, probabilities) < CHI2_LIMIT[3]


def test_many_classes():
    logits = np.linspace(-2, 2, 8, dtype=np.float32)[None, :]
    draws = make_tester(logits, 40000, (5, 6)).run()[0]
    assert chi_square(draws[0], softmax(logits)[0]) < CHI2_LIMIT[7]


def test_negative_infinity_is_never_drawn_and_a_dominant_class_always():
    logits = np.array([[0.0, -np.inf, 0.0, -np.inf], [0.0, 200.0, 0.0, 0.0]], np.float32)
    draws = make_tester(logits, 5000).run()[0]
    assert set(draws[0].tolist()) == {0, 2}
    assert abs((draws[0] == 0).mean() - 0.5) < 0.03
    assert (draws[1] == 1).all()


def test_draws_are_a_function_of_the_seeds():
    logits = np.zeros((2, 10), np.float32)
    first = make_tester(logits, 500, (3, 4)).run()[0]
    again = make_tester(logits, 500, (3, 4)).run()[0]
    other = make_tester(logits, 500, (3, 5)).run()[0]
    np.testing.assert_array_equal(first, again)
    assert (first != other).mean() > 0.5  # 0.9 expected for independent uniform draws
    # The two rows are different streams.
    assert (first[0] != first[1]).mean() > 0.5


def test_dynamic_output_shape():
    logits = np.zeros((3, 5), np.float32)
    draws = make_tester(logits, 7).dynamic_outputs().run()[0]
    assert draws.shape == (3, 7)


def test_rejects_bad_operands():
    logits = np.zeros((2, 4), np.float32)
    assert "sample count" in expect_failed_when_prepared(make_tester(logits, 0, out_shape=(2, 0)))
    assert "2-D" in expect_bad_data_at_add(
        make_tester(np.zeros((2, 2, 4), np.float32), 3, out_shape=(2, 3))
    )
    assert "seeds" in expect_bad_data_at_add(make_tester(logits, 3, seeds_shape=(3,)))
    assert "TENSOR_INT32" in expect_bad_data_at_add(
        make_tester(logits, 3, out_code=OperandCode.TENSOR_FLOAT32)
    )
    expect_bad_data_at_add(make_tester(np.zeros((2, 4), np.int32), 3))
    expect_failed_when_prepared(make_tester(logits, 3, out_shape=(2, 4)))
    # The seeds must be TENSOR_INT32.
    tester = (
        OpTester(MULTINOMIAL)
        .input(logits)
        .scalar(OperandCode.INT32, 3)
        .input(np.zeros(2, np.float32))
        .output(OperandCode.TENSOR_INT32, (2, 3))
    )
    expect_bad_data_at_add(tester)


def test_row_without_a_finite_logit_fails():
    logits = np.array([[0.0, 1.0], [-np.inf, -np.inf]], np.float32)
    with pytest.raises(NnapiError) as error:
        make_tester(logits, 4).run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_feature_level_3(feature_level_devices, dtype):
    tester = make_tester(np.zeros((2, 4), dtype), 3)
    assert required_feature_level(tester, feature_level_devices) == 3
