# SPDX-License-Identifier: Apache-2.0
"""SVDF against a numpy reference of the NDK's description (rank-r filters):

    memory = push(conv1d(inputs, weights_feature))     (the oldest of memory_size entries drops)
    outputs = activation(memory * weights_time + bias) (summed over the rank's filters)

The state is Android's [batch, num_filters * memory_size], oldest entry first (its last column is
the slot of the entry being pushed). Covered: ranks 1 and 2, with and without bias, the
activations, fp32/fp16/relaxed, several steps chained through the state, dynamic output shapes,
the BAD_DATA type/count rules, the OP_FAILED prepare-time rules and the feature levels.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add
from .op_tester import OpTester, assert_close
from .test_conv_2d import required_feature_level
from .test_rnn import ACTIVATIONS

SVDF = OperationCode.SVDF


def svdf_reference(x, feature, time, bias, state, rank, activation):
    """(state out, output) in float64 from the documented two-stage filtering."""
    x, feature, time = (np.asarray(a, np.float64) for a in (x, feature, time))
    batch = x.shape[0]
    filters, memory_size = time.shape
    memory = np.asarray(state, np.float64).reshape(batch, filters, memory_size).copy()
    # push(): the newest filter outputs take the last slot.
    memory[:, :, -1] = x @ feature.T
    per_filter = (memory * time[None]).sum(axis=2)  # [batch, filters]
    out = per_filter.reshape(batch, filters // rank, rank).sum(axis=2)
    if bias is not None:
        out = out + np.asarray(bias, np.float64)
    state_out = np.concatenate([memory[:, :, 1:], np.zeros((batch, filters, 1))], axis=2)
    return state_out.reshape(batch, -1), ACTIVATIONS[activation](out)


def make(batch, input_size, units, rank, memory_size, dtype, seed=0):
    rng = np.random.default_rng(seed)

    def draw(*shape):
        return rng.uniform(-1, 1, shape).astype(dtype)

    filters = units * rank
    return dict(
        x=draw(batch, input_size),
        feature=draw(filters, input_size),
        time=draw(filters, memory_size),
        bias=draw(units),
        state=draw(batch, filters * memory_size),
    )


def svdf_tester(
    p,
    rank,
    activation,
    with_bias=True,
    dtype=np.float32,
    out_shapes=None,
    rank_code=OperandCode.INT32,
):
    code = OperandCode.TENSOR_FLOAT16 if dtype == np.float16 else OperandCode.TENSOR_FLOAT32
    batch = p["x"].shape[0]
    units = p["feature"].shape[0] // max(rank, 1)
    tester = OpTester(SVDF).input(p["x"]).constant(p["feature"]).constant(p["time"])
    tester = tester.constant(p["bias"]) if with_bias else tester.omitted(code)
    tester.input(p["state"]).scalar(rank_code, rank).scalar(OperandCode.INT32, activation)
    for shape in out_shapes or [p["state"].shape, (batch, units)]:
        tester.output(code, shape)
    return tester


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("rank", [1, 2])
@pytest.mark.parametrize("with_bias", [True, False])
def test_svdf(dtype, rank, with_bias):
    p = make(2, 3, 4, rank, 5, dtype)
    state, output = svdf_tester(p, rank, 0, with_bias, dtype).dynamic_outputs(rank == 2).run()
    expected_state, expected = svdf_reference(
        p["x"], p["feature"], p["time"], p["bias"] if with_bias else None, p["state"], rank, 0
    )
    kind = "float16" if dtype == np.float16 else None
    assert_close(output, expected.astype(dtype), kind)
    assert_close(state, expected_state.astype(dtype), kind)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_svdf_activations(activation):
    p = make(3, 4, 2, 2, 3, np.float32, seed=1)
    _, output = svdf_tester(p, 2, activation).run()
    _, expected = svdf_reference(
        p["x"], p["feature"], p["time"], p["bias"], p["state"], 2, activation
    )
    assert_close(output, expected.astype(np.float32))


def test_svdf_relaxed():
    p = make(2, 8, 3, 1, 10, np.float32, seed=2)
    _, output = svdf_tester(p, 1, 1).relaxed().run()
    _, expected = svdf_reference(p["x"], p["feature"], p["time"], p["bias"], p["state"], 1, 1)
    assert_close(output, expected, "relaxed")


def test_svdf_steps_chain_through_the_state():
    # Three steps from a zero state: each step's state out is the next step's state in, and
    # the memory holds the last memory_size filter outputs.
    p = make(1, 2, 2, 1, 3, np.float32, seed=3)
    state = np.zeros_like(p["state"])
    expected_state = state
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = rng.uniform(-1, 1, p["x"].shape).astype(np.float32)
        state, output = svdf_tester(dict(p, x=x, state=state), 1, 0).run()
        expected_state, expected = svdf_reference(
            x, p["feature"], p["time"], p["bias"], expected_state, 1, 0
        )
        assert_close(output, expected.astype(np.float32))
        assert_close(state, expected_state.astype(np.float32))


def test_svdf_rejects_types_and_counts():
    p = make(2, 3, 4, 1, 5, np.float32)
    expect_bad_data_at_add(svdf_tester(p, 1, 0, rank_code=OperandCode.UINT32))
    expect_bad_data_at_add(svdf_tester(dict(p, bias=p["bias"].astype(np.float16)), 1, 0))
    expect_bad_data_at_add(svdf_tester(p, 1, 0, out_shapes=[(2, 4)]))
    tester = svdf_tester(p, 1, 0)
    tester._outputs[1]["code"] = OperandCode.TENSOR_FLOAT16
    expect_bad_data_at_add(tester)


def expect_op_failed(tester, text):
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert text in str(error.value), str(error.value)
    error.value.__traceback__ = None


def test_svdf_prepare_errors():
    p = make(2, 3, 4, 1, 5, np.float32)
    # A rank that does not divide the filter count, and rank 0.
    expect_op_failed(svdf_tester(p, 3, 0, out_shapes=[p["state"].shape, (2, 1)]), "rank 3")
    expect_op_failed(svdf_tester(p, 0, 0, out_shapes=[p["state"].shape, (2, 4)]), "rank 0")
    expect_op_failed(svdf_tester(dict(p, bias=np.zeros(3, np.float32)), 1, 0), "bias")
    expect_op_failed(
        svdf_tester(
            dict(p, state=np.zeros((2, 19), np.float32)), 1, 0, out_shapes=[(2, 19), (2, 4)]
        ),
        "state",
    )
    expect_op_failed(svdf_tester(dict(p, time=np.zeros((3, 5), np.float32)), 1, 0), "weights_time")
    expect_op_failed(svdf_tester(p, 1, 5), "activation 5")


@pytest.mark.parametrize(("dtype", "expected"), [(np.float32, 1), (np.float16, 3)])
def test_feature_levels(feature_level_devices, dtype, expected):
    tester = svdf_tester(make(2, 3, 4, 1, 5, dtype), 1, 0, dtype=dtype)
    assert required_feature_level(tester, feature_level_devices) == expected
