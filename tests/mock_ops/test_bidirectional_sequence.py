# SPDX-License-Identifier: Apache-2.0
"""BIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_LSTM against numpy references: the
NDK's forward cell over t = 1..T and backward cell over t = T..1 (test_rnn.py's and
test_lstm.py's documented cell equations), each direction's state being its output at t.

Covered: time-major and batch-major, separate and merged outputs, the last-state outputs (FL4),
the three linking modes of the auxiliary input (none; cross-linking, whose aux terms the
reference writes as the input and aux input concatenated against the weights concatenated;
parallel linking, the backward cell reading the aux input), LSTM variants (CIFG, peephole,
projection, layer normalisation) per direction, fp32 and fp16, dynamic output shapes, the
BAD_DATA count/type rules, the OP_FAILED prepare rules (an output count that does not match
merge_outputs, aux weights without the aux input) and the feature levels.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add
from .op_tester import OpTester, assert_close
from .test_conv_2d import required_feature_level
from .test_lstm import (
    LN_ORDER,
    TENSOR_ORDER,
    float_code,
    lstm_step,
    scalar_code,
    states,
    variant_params,
)
from .test_rnn import parameters, rnn_step

BIDI_RNN = OperationCode.BIDIRECTIONAL_SEQUENCE_RNN
BIDI_LSTM = OperationCode.BIDIRECTIONAL_SEQUENCE_LSTM


def f64(a):
    return np.asarray(a, np.float64)


def to_time_major(x, time_major):
    return f64(x) if time_major else f64(x).transpose(1, 0, 2)


def from_time_major(x, time_major):
    return x if time_major else x.transpose(1, 0, 2)


def run_direction(step, xs, state, reverse):
    """Applies step(x_t, state) -> (output, state) over time-major xs; outputs in time order."""
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    outputs = [None] * len(xs)
    for t in order:
        outputs[t], state = step(xs[t], state)
    return np.stack(outputs), state


# ---- BIDIRECTIONAL_SEQUENCE_RNN ----------------------------------------------------------------


def rnn_case(dtype, time_major, aux_mode, seed=0):
    """Inputs of a bidirectional RNN: batch 2, 3 steps, input 3, aux 2, fw 4 and bw 3 units."""
    rng = np.random.default_rng(seed)
    batch, steps, n_in, n_aux = 2, 3, 3, 2
    shape = (steps, batch) if time_major else (batch, steps)
    x = rng.uniform(-1, 1, (*shape, n_in)).astype(dtype)
    aux = rng.uniform(-1, 1, (*shape, n_aux)).astype(dtype) if aux_mode != "none" else None
    fw = parameters(batch, n_in, 4, dtype, seed=seed + 1)
    bw = parameters(batch, n_aux if aux_mode == "parallel" else n_in, 3, dtype, seed=seed + 2)
    if aux_mode == "cross":
        fw["aux"] = rng.uniform(-1, 1, (4, n_aux)).astype(dtype)
        bw["aux"] = rng.uniform(-1, 1, (3, n_aux)).astype(dtype)
    return x, aux, fw, bw


def rnn_tester(x, aux, fw, bw, time_major, merge, with_states, activation=4, out_counts=None):
    dtype = x.dtype.type
    code = float_code(dtype)
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    tester = OpTester(BIDI_RNN).input(x)
    for p in (fw, bw):
        tester.constant(p["weights"]).constant(p["recurrent"]).constant(p["bias"])
        tester.input(p["hidden"])
    tester = tester.input(aux) if aux is not None else tester.omitted(code)
    for p in (fw, bw):
        tester = tester.constant(p["aux"]) if "aux" in p else tester.omitted(code)
    tester.scalar(OperandCode.INT32, activation)
    tester.scalar(OperandCode.BOOL, time_major).scalar(OperandCode.BOOL, merge)
    n_fw, n_bw = fw["weights"].shape[0], bw["weights"].shape[0]

    def seq(width):
        return (steps, batch, width) if time_major else (batch, steps, width)

    shapes = [seq(n_fw + n_bw)] if merge else [seq(n_fw), seq(n_bw)]
    if with_states:
        shapes += [(batch, n_fw), (batch, n_bw)]
    for shape in shapes[: out_counts or len(shapes)]:
        tester.output(code, shape)
    return tester


def rnn_reference(x, aux, fw, bw, time_major, merge, aux_mode, activation=4):
    xs = to_time_major(x, time_major)
    auxs = to_time_major(aux, time_major) if aux is not None else None

    def cell(p, source, with_aux):
        weights, inputs = f64(p["weights"]), source
        if with_aux:
            weights = np.concatenate([weights, f64(p["aux"])], axis=1)
            inputs = np.concatenate([source, auxs], axis=2)

        def step(x_t, h):
            h = rnn_step(x_t, weights, f64(p["recurrent"]), f64(p["bias"]), h, activation)
            return h, h

        return step, inputs

    fw_step, fw_in = cell(fw, xs, aux_mode == "cross")
    bw_step, bw_in = cell(bw, auxs if aux_mode == "parallel" else xs, aux_mode == "cross")
    fw_out, fw_last = run_direction(fw_step, fw_in, f64(fw["hidden"]), False)
    bw_out, bw_last = run_direction(bw_step, bw_in, f64(bw["hidden"]), True)
    if merge:
        outputs = [from_time_major(np.concatenate([fw_out, bw_out], axis=2), time_major)]
    else:
        outputs = [from_time_major(fw_out, time_major), from_time_major(bw_out, time_major)]
    return [*outputs, fw_last, bw_last]


@pytest.mark.parametrize("time_major", [True, False])
@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("with_states", [True, False])
@pytest.mark.parametrize("aux_mode", ["none", "cross", "parallel"])
def test_bidirectional_rnn(time_major, merge, with_states, aux_mode):
    x, aux, fw, bw = rnn_case(np.float32, time_major, aux_mode)
    results = (
        rnn_tester(x, aux, fw, bw, time_major, merge, with_states)
        .dynamic_outputs(merge and with_states)
        .run()
    )
    expected = rnn_reference(x, aux, fw, bw, time_major, merge, aux_mode)
    if not with_states:
        expected = expected[: len(results)]
    assert len(results) == len(expected)
    for actual, wanted in zip(results, expected, strict=True):
        assert_close(actual, wanted.astype(np.float32))


@pytest.mark.parametrize("aux_mode", ["none", "cross"])
def test_bidirectional_rnn_fp16(aux_mode):
    x, aux, fw, bw = rnn_case(np.float16, False, aux_mode, seed=3)
    results = rnn_tester(x, aux, fw, bw, False, False, True, activation=1).run()
    expected = rnn_reference(x, aux, fw, bw, False, False, aux_mode, activation=1)
    for actual, wanted in zip(results, expected, strict=True):
        assert_close(actual, wanted.astype(np.float16), "float16")


def expect_op_failed(tester, text):
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert text in str(error.value), str(error.value)
    error.value.__traceback__ = None


def test_bidirectional_rnn_errors():
    x, aux, fw, bw = rnn_case(np.float32, True, "cross")
    # Counts and types are checked when the operation is added.
    expect_bad_data_at_add(
        rnn_tester(x, aux, fw, bw, True, False, True, out_counts=3)
        .output(OperandCode.TENSOR_FLOAT32, (2, 3))
        .output(OperandCode.TENSOR_FLOAT32, (2, 3))
    )
    tester = rnn_tester(x, aux, fw, bw, True, False, False)
    tester._inputs[13] = dict(kind="scalar", code=OperandCode.INT32, value=1)
    expect_bad_data_at_add(tester)
    tester = rnn_tester(x, aux, fw, bw, True, False, False)
    tester._outputs[1]["code"] = OperandCode.TENSOR_FLOAT16
    expect_bad_data_at_add(tester)
    # Two outputs with merge_outputs, one without: at execution.
    tester = rnn_tester(x, aux, fw, bw, True, True, False)
    tester.output(OperandCode.TENSOR_FLOAT32, (3, 2, 3))
    expect_op_failed(tester, "merge_outputs")
    expect_op_failed(rnn_tester(x, aux, fw, bw, True, False, False, out_counts=1), "merge_outputs")
    # Aux weights without the aux input; one of the two aux weights.
    expect_op_failed(rnn_tester(x, None, fw, bw, True, False, False), "auxiliary input")
    expect_op_failed(
        rnn_tester(x, aux, fw, {k: v for k, v in bw.items() if k != "aux"}, True, False, False),
        "auxiliary weights",
    )
    # Mismatched backward hidden state.
    bad = dict(bw, hidden=np.zeros((2, 4), np.float32))
    expect_op_failed(rnn_tester(x, aux, fw, bad, True, False, False), "hidden state")


@pytest.mark.parametrize(("with_states", "expected"), [(False, 3), (True, 4)])
def test_bidirectional_rnn_feature_levels(feature_level_devices, with_states, expected):
    x, aux, fw, bw = rnn_case(np.float32, True, "none")
    tester = rnn_tester(x, aux, fw, bw, True, False, with_states)
    assert required_feature_level(tester, feature_level_devices) == expected


# ---- BIDIRECTIONAL_SEQUENCE_LSTM ---------------------------------------------------------------


def lstm_case(dtype, time_major, aux_mode, fw_variant, bw_variant, seed=0):
    rng = np.random.default_rng(seed)
    batch, steps, n_in, n_aux = 2, 3, 3, 2
    shape = (steps, batch) if time_major else (batch, steps)
    x = rng.uniform(-1, 1, (*shape, n_in)).astype(dtype)
    aux = rng.uniform(-1, 1, (*shape, n_aux)).astype(dtype) if aux_mode != "none" else None
    fw = variant_params(fw_variant, n_in, 4, 2, dtype, seed=seed + 1)
    bw_in = n_aux if aux_mode == "parallel" else n_in
    bw = variant_params(bw_variant, bw_in, 3, 2, dtype, seed=seed + 2)
    for p in (fw, bw):
        p["h"], p["c"] = states(batch, p, dtype, seed=seed + 3)
        n_cell = p["w_xf"].shape[0]
        for g in ("i", "f", "c", "o"):
            use = aux_mode == "cross" and not (g == "i" and p["w_xi"] is None)
            p[f"aux_{g}"] = rng.uniform(-1, 1, (n_cell, n_aux)).astype(dtype) if use else None
    return x, aux, fw, bw


def lstm_tester(x, aux, fw, bw, time_major, merge, with_states, cell_clip=0.0, proj_clip=0.0):
    dtype = x.dtype.type
    code = float_code(dtype)
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    tester = OpTester(BIDI_LSTM).input(x)

    def tensor(value):
        nonlocal tester
        tester = tester.omitted(code) if value is None else tester.constant(value)

    for p in (fw, bw):
        for name in TENSOR_ORDER:
            tensor(p[name])
    for p in (fw, bw):
        tester.input(p["h"]).input(p["c"])
    tester = tester.input(aux) if aux is not None else tester.omitted(code)
    for p in (fw, bw):
        for g in ("i", "f", "c", "o"):
            tensor(p[f"aux_{g}"])
    tester.scalar(OperandCode.INT32, 4)
    tester.scalar(scalar_code(dtype), cell_clip).scalar(scalar_code(dtype), proj_clip)
    tester.scalar(OperandCode.BOOL, merge).scalar(OperandCode.BOOL, time_major)
    for p in (fw, bw):
        for name in LN_ORDER:
            tensor(p[name])
    n_fw, n_bw = fw["w_hf"].shape[1], bw["w_hf"].shape[1]

    def seq(width):
        return (steps, batch, width) if time_major else (batch, steps, width)

    shapes = [seq(n_fw + n_bw)] if merge else [seq(n_fw), seq(n_bw)]
    if with_states:
        for p in (fw, bw):
            shapes += [(batch, p["w_hf"].shape[1]), (batch, p["w_xf"].shape[0])]
    for shape in shapes:
        tester.output(code, shape)
    return tester


def lstm_reference(x, aux, fw, bw, time_major, merge, aux_mode):
    xs = to_time_major(x, time_major)
    auxs = to_time_major(aux, time_major) if aux is not None else None

    def cell(p, source, with_aux):
        q = dict(p)
        inputs = source
        if with_aux:
            inputs = np.concatenate([source, auxs], axis=2)
            for g in ("i", "f", "c", "o"):
                if q[f"w_x{g}"] is not None:
                    q[f"w_x{g}"] = np.concatenate([f64(q[f"w_x{g}"]), f64(q[f"aux_{g}"])], axis=1)

        def step(x_t, state):
            h, c, _ = lstm_step(x_t, state[0], state[1], q, 4)
            return h, (h, c)

        return step, inputs

    fw_step, fw_in = cell(fw, xs, aux_mode == "cross")
    bw_step, bw_in = cell(bw, auxs if aux_mode == "parallel" else xs, aux_mode == "cross")
    fw_out, (fw_h, fw_c) = run_direction(fw_step, fw_in, (f64(fw["h"]), f64(fw["c"])), False)
    bw_out, (bw_h, bw_c) = run_direction(bw_step, bw_in, (f64(bw["h"]), f64(bw["c"])), True)
    if merge:
        outputs = [from_time_major(np.concatenate([fw_out, bw_out], axis=2), time_major)]
    else:
        outputs = [from_time_major(fw_out, time_major), from_time_major(bw_out, time_major)]
    return [*outputs, fw_h, fw_c, bw_h, bw_c]


@pytest.mark.parametrize("time_major", [True, False])
@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("with_states", [True, False])
@pytest.mark.parametrize("aux_mode", ["none", "cross", "parallel"])
def test_bidirectional_lstm(time_major, merge, with_states, aux_mode):
    x, aux, fw, bw = lstm_case(np.float32, time_major, aux_mode, "peephole_projection", "cifg")
    results = (
        lstm_tester(x, aux, fw, bw, time_major, merge, with_states)
        .dynamic_outputs(merge and not with_states)
        .run()
    )
    expected = lstm_reference(x, aux, fw, bw, time_major, merge, aux_mode)
    if not with_states:
        expected = expected[: len(results)]
    assert len(results) == len(expected)
    for actual, wanted in zip(results, expected, strict=True):
        assert_close(actual, wanted.astype(np.float32))


@pytest.mark.parametrize(
    ("fw_variant", "bw_variant"),
    [("layer_norm", "layer_norm_cifg_peephole_projection"), ("basic", "projection_bias")],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_bidirectional_lstm_variants(fw_variant, bw_variant, dtype):
    x, aux, fw, bw = lstm_case(dtype, True, "cross", fw_variant, bw_variant, seed=5)
    results = lstm_tester(x, aux, fw, bw, True, False, True).run()
    expected = lstm_reference(x, aux, fw, bw, True, False, "cross")
    kind = "float16" if dtype == np.float16 else None
    for actual, wanted in zip(results, expected, strict=True):
        assert_close(actual, wanted.astype(dtype), kind)


def test_bidirectional_lstm_errors():
    x, aux, fw, bw = lstm_case(np.float32, True, "cross", "basic", "basic")
    tester = lstm_tester(x, aux, fw, bw, True, False, False)
    tester.output(OperandCode.TENSOR_FLOAT32, (2, 2))  # 3 outputs
    expect_bad_data_at_add(tester)
    tester = lstm_tester(x, aux, fw, bw, True, False, False)
    tester._inputs[49]["code"] = OperandCode.FLOAT16  # the clip of an fp32 LSTM
    expect_bad_data_at_add(tester)
    tester = lstm_tester(x, aux, fw, bw, True, True, False)
    tester.output(OperandCode.TENSOR_FLOAT32, (3, 2, 2))
    expect_op_failed(tester, "merge_outputs")
    expect_op_failed(lstm_tester(x, None, fw, bw, True, False, False), "auxiliary input")
    expect_op_failed(
        lstm_tester(x, aux, fw, dict(bw, aux_c=None), True, False, False), "auxiliary weights"
    )
    expect_op_failed(lstm_tester(x, aux, dict(fw, w_hi=None), bw, True, False, False), "CIFG")


@pytest.mark.parametrize(
    ("dtype", "with_states", "expected"),
    [(np.float32, False, 3), (np.float16, False, 3), (np.float32, True, 4)],
)
def test_bidirectional_lstm_feature_levels(feature_level_devices, dtype, with_states, expected):
    x, aux, fw, bw = lstm_case(dtype, True, "none", "basic", "basic")
    tester = lstm_tester(x, aux, fw, bw, True, False, with_states)
    assert required_feature_level(tester, feature_level_devices) == expected
