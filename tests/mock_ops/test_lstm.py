# SPDX-License-Identifier: Apache-2.0
"""LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM against a numpy reference of the NDK's gate equations

    i_t = sigmoid(W_xi x_t + W_hi h_{t-1} + W_ci C_{t-1} + b_i)      (1 - f_t with CIFG)
    f_t = sigmoid(W_xf x_t + W_hf h_{t-1} + W_cf C_{t-1} + b_f)
    C_t = clip(f_t * C_{t-1} + i_t * g(W_xc x_t + W_hc h_{t-1} + b_c), t_cell)
    o_t = sigmoid(W_xo x_t + W_ho h_{t-1} + W_co C_t + b_o)
    h_t = clip(W_proj (o_t * g(C_t)) + b_proj, t_proj)  or  o_t * g(C_t) without projection

with layer normalisation (FL3) normalising each gate's pre-activation over the cell units
before its layer-norm weights and bias (arXiv:1607.06450, section 3.1).

Covered: every optional-input variant (CIFG, peephole, projection with and without bias, layer
normalisation, and their combinations), clipping, the activations g, fp32, fp16 and relaxed
fp32, optional inputs omitted as constants and at execution (setInput(NULL, 0), as Android's
generated tests do), the sequence form time-major and batch-major with and without its state
outputs (FL4), dynamic output shapes, the BAD_DATA type/count rules of addOperation, the
OP_FAILED rules Android checks when the operation is prepared, and the feature levels.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from mock_nnapi.api import call

from mock_nnapi import (
    Compilation,
    Execution,
    Model,
    NnapiError,
    OperandCode,
    OperationCode,
    ResultCode,
)

from .helpers import expect_bad_data_at_add
from .op_tester import OpTester, assert_close
from .test_conv_2d import required_feature_level
from .test_rnn import ACTIVATIONS

LSTM = OperationCode.LSTM
SEQUENCE_LSTM = OperationCode.UNIDIRECTIONAL_SEQUENCE_LSTM
GATES = ("i", "f", "c", "o")


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def make_params(
    n_input, n_cell, n_output, dtype, *, cifg, peephole, projection, proj_bias, layer_norm, seed=0
):
    """The cell's tensors by name; None for an omitted one."""
    rng = np.random.default_rng(seed)

    def draw(*shape):
        return rng.uniform(-0.8, 0.8, shape).astype(dtype)

    p = {}
    for g in GATES:
        skip = cifg and g == "i"
        p[f"w_x{g}"] = None if skip else draw(n_cell, n_input)
        p[f"w_h{g}"] = None if skip else draw(n_cell, n_output)
        p[f"b_{g}"] = None if skip else draw(n_cell)
        p[f"ln_{g}"] = draw(n_cell) + dtype(1) if layer_norm and not skip else None
    for g in ("i", "f", "o"):
        p[f"w_c{g}"] = draw(n_cell) if peephole and not (cifg and g == "i") else None
    p["w_proj"] = draw(n_output, n_cell) if projection else None
    p["b_proj"] = draw(n_output) if projection and proj_bias else None
    return p


def f64(a):
    return None if a is None else np.asarray(a, np.float64)


def normalize(z):
    mean = z.mean(axis=1, keepdims=True)
    variance = (z * z).mean(axis=1, keepdims=True) - mean * mean
    return (z - mean) / np.sqrt(np.where(variance > 0, variance, 1e-8))


def lstm_step(x, h, c, p, activation, cell_clip=0.0, proj_clip=0.0):
    """One step of the NDK's equations in float64; returns (h_t, C_t, gates)."""
    p = {k: f64(v) for k, v in p.items()}
    g_act = ACTIVATIONS[activation]
    x, h, c = f64(x), f64(h), f64(c)

    def pre(g, peephole_state):
        z = x @ p[f"w_x{g}"].T + h @ p[f"w_h{g}"].T
        if p.get(f"w_c{g}") is not None:
            z = z + p[f"w_c{g}"] * peephole_state
        if p.get(f"ln_{g}") is not None:
            return normalize(z) * p[f"ln_{g}"] + p[f"b_{g}"]
        return z + p[f"b_{g}"]

    f = sigmoid(pre("f", c))
    i = 1 - f if p["w_xi"] is None else sigmoid(pre("i", c))
    cell_input = g_act(pre("c", None))
    c_new = f * c + i * cell_input
    if cell_clip > 0:
        c_new = np.clip(c_new, -cell_clip, cell_clip)
    o = sigmoid(pre("o", c_new))
    h_new = o * g_act(c_new)
    if p["w_proj"] is not None:
        h_new = h_new @ p["w_proj"].T
        if p["b_proj"] is not None:
            h_new = h_new + p["b_proj"]
        if proj_clip > 0:
            h_new = np.clip(h_new, -proj_clip, proj_clip)
    gates = ([] if p["w_xi"] is None else [i]) + [cell_input, f, o]
    return h_new, c_new, np.concatenate([g.reshape(-1) for g in gates])


TENSOR_ORDER = [f"w_x{g}" for g in GATES] + [f"w_h{g}" for g in GATES]
TENSOR_ORDER += ["w_ci", "w_cf", "w_co"] + [f"b_{g}" for g in GATES] + ["w_proj", "b_proj"]
LN_ORDER = [f"ln_{g}" for g in GATES]


def float_code(dtype):
    return OperandCode.TENSOR_FLOAT16 if dtype == np.float16 else OperandCode.TENSOR_FLOAT32


def scalar_code(dtype):
    return OperandCode.FLOAT16 if dtype == np.float16 else OperandCode.FLOAT32


def add_cell(tester, p, dtype, h, c, activation, cell_clip, proj_clip):
    code = float_code(dtype)
    for name in TENSOR_ORDER:
        if p[name] is None:
            tester.omitted(code)
        else:
            tester.constant(p[name])
    tester.input(h).input(c)
    tester.scalar(OperandCode.INT32, activation)
    tester.scalar(scalar_code(dtype), cell_clip).scalar(scalar_code(dtype), proj_clip)
    return tester


def add_layer_norm(tester, p, dtype):
    for name in LN_ORDER:
        if p[name] is None:
            tester.omitted(float_code(dtype))
        else:
            tester.constant(p[name])
    return tester


def lstm_tester(
    x, h, c, p, dtype, activation=4, cell_clip=0.0, proj_clip=0.0, with_ln=None, out_code=None
):
    batch = x.shape[0]
    n_cell = p["w_xf"].shape[0]
    n_output = p["w_hf"].shape[1]
    gates = 3 if p["w_xi"] is None else 4
    tester = add_cell(OpTester(LSTM).input(x), p, dtype, h, c, activation, cell_clip, proj_clip)
    has_ln = any(p[name] is not None for name in LN_ORDER) if with_ln is None else with_ln
    if has_ln:
        add_layer_norm(tester, p, dtype)
    code = out_code if out_code is not None else float_code(dtype)
    for shape in [(batch, n_cell * gates), (batch, n_output), (batch, n_cell), (batch, n_output)]:
        tester.output(code, shape)
    return tester


VARIANTS = {
    # name: (cifg, peephole, projection, projection bias, layer norm)
    "basic": (False, False, False, False, False),
    "cifg": (True, False, False, False, False),
    "peephole": (False, True, False, False, False),
    "cifg_peephole": (True, True, False, False, False),
    "projection": (False, False, True, False, False),
    "projection_bias": (False, False, True, True, False),
    "peephole_projection": (False, True, True, True, False),
    "layer_norm": (False, False, False, False, True),
    "layer_norm_cifg_peephole_projection": (True, True, True, False, True),
    "layer_norm_peephole_projection": (False, True, True, True, True),
}


def variant_params(name, n_input, n_cell, n_output, dtype, seed=0):
    cifg, peephole, projection, proj_bias, layer_norm = VARIANTS[name]
    n_output = n_output if projection else n_cell
    return make_params(
        n_input,
        n_cell,
        n_output,
        dtype,
        cifg=cifg,
        peephole=peephole,
        projection=projection,
        proj_bias=proj_bias,
        layer_norm=layer_norm,
        seed=seed,
    )


def states(batch, p, dtype, seed=1):
    rng = np.random.default_rng(seed)
    n_cell, n_output = p["w_xo"].shape[0], p["w_ho"].shape[1]
    return (
        rng.uniform(-1, 1, (batch, n_output)).astype(dtype),
        rng.uniform(-1, 1, (batch, n_cell)).astype(dtype),
    )


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_lstm_variants(variant, dtype):
    p = variant_params(variant, 3, 4, 2, dtype)
    x = np.random.default_rng(2).uniform(-1, 1, (2, 3)).astype(dtype)
    h, c = states(2, p, dtype)
    scratch, h_out, c_out, output = (
        lstm_tester(x, h, c, p, dtype).dynamic_outputs(variant == "basic").run()
    )
    expected_h, expected_c, gates = lstm_step(x, h, c, p, 4)
    kind = "float16" if dtype == np.float16 else None
    assert_close(h_out, expected_h.astype(dtype), kind)
    assert_close(c_out, expected_c.astype(dtype), kind)
    np.testing.assert_array_equal(output, h_out)
    # The mock's documented scratch contents: the gate activations, gate-major.
    assert_close(scratch.reshape(-1), gates.astype(dtype), kind)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_lstm_activations(activation):
    p = variant_params("peephole", 2, 3, 3, np.float32, seed=3)
    x = np.random.default_rng(4).uniform(-2, 2, (3, 2)).astype(np.float32)
    h, c = states(3, p, np.float32)
    _, h_out, c_out, _ = lstm_tester(x, h, c, p, np.float32, activation=activation).run()
    expected_h, expected_c, _ = lstm_step(x, h, c, p, activation)
    assert_close(h_out, expected_h.astype(np.float32))
    assert_close(c_out, expected_c.astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_lstm_clipping(dtype):
    p = variant_params("projection_bias", 3, 4, 3, dtype, seed=5)
    p = {k: None if v is None else (v * dtype(3)).astype(dtype) for k, v in p.items()}
    x = np.random.default_rng(6).uniform(-2, 2, (2, 3)).astype(dtype)
    h, c = states(2, p, dtype)
    c = (c * dtype(3)).astype(dtype)
    _, h_out, c_out, _ = lstm_tester(x, h, c, p, dtype, cell_clip=0.5, proj_clip=0.25).run()
    expected_h, expected_c, _ = lstm_step(x, h, c, p, 4, cell_clip=0.5, proj_clip=0.25)
    # The thresholds bind.
    assert np.abs(expected_c).max() == pytest.approx(0.5)
    assert np.abs(expected_h).max() == pytest.approx(0.25)
    kind = "float16" if dtype == np.float16 else None
    assert_close(h_out, expected_h.astype(dtype), kind)
    assert_close(c_out, expected_c.astype(dtype), kind)


def test_lstm_relaxed():
    p = variant_params("layer_norm_peephole_projection", 5, 6, 4, np.float32, seed=7)
    x = np.random.default_rng(8).uniform(-1, 1, (2, 5)).astype(np.float32)
    h, c = states(2, p, np.float32)
    _, h_out, c_out, _ = lstm_tester(x, h, c, p, np.float32).relaxed().run()
    expected_h, expected_c, _ = lstm_step(x, h, c, p, 4)
    assert_close(h_out, expected_h, "relaxed")
    assert_close(c_out, expected_c, "relaxed")


def test_lstm_27_inputs_with_layer_norm_omitted_is_a_plain_lstm():
    p = variant_params("peephole", 3, 4, 4, np.float32, seed=9)
    x = np.random.default_rng(10).uniform(-1, 1, (2, 3)).astype(np.float32)
    h, c = states(2, p, np.float32)
    _, h23, c23, _ = lstm_tester(x, h, c, p, np.float32, with_ln=False).run()
    _, h27, c27, _ = lstm_tester(x, h, c, p, np.float32, with_ln=True).run()
    np.testing.assert_array_equal(h23, h27)
    np.testing.assert_array_equal(c23, c27)


def test_lstm_two_steps_chain_the_states():
    p = variant_params("cifg_peephole", 2, 3, 3, np.float32, seed=11)
    rng = np.random.default_rng(12)
    x1, x2 = (rng.uniform(-1, 1, (1, 2)).astype(np.float32) for _ in range(2))
    h, c = states(1, p, np.float32)
    _, h1, c1, _ = lstm_tester(x1, h, c, p, np.float32).run()
    _, h2, c2, _ = lstm_tester(x2, h1, c1, p, np.float32).run()
    eh1, ec1, _ = lstm_step(x1, h, c, p, 4)
    eh2, ec2, _ = lstm_step(x2, eh1, ec1, p, 4)
    assert_close(h2, eh2.astype(np.float32))
    assert_close(c2, ec2.astype(np.float32))


def test_optional_inputs_omitted_at_execution():
    # Android's generated tests declare the optional weights as model inputs of shape {0} or
    # {0, 0} and omit them at execution with setInput(NULL, 0): CIFG without peephole here.
    p = variant_params("cifg", 2, 3, 3, np.float32, seed=13)
    x = np.random.default_rng(14).uniform(-1, 1, (1, 2)).astype(np.float32)
    h, c = states(1, p, np.float32)
    model = Model()
    operands, feeds = [], []

    def tensor(value, shape):
        index = model.add_operand(OperandCode.TENSOR_FLOAT32, shape)
        operands.append(index)
        feeds.append(value)

    tensor(x, x.shape)
    for name in TENSOR_ORDER:
        value = p[name]
        rank = 1 if name.startswith(("b_", "w_c")) else 2
        tensor(value, value.shape if value is not None else (0,) * rank)
    tensor(h, h.shape)
    tensor(c, c.shape)
    inputs = list(operands)
    inputs.append(model.add_scalar(OperandCode.INT32, 4))
    inputs.append(model.add_scalar(OperandCode.FLOAT32, 0.0))
    inputs.append(model.add_scalar(OperandCode.FLOAT32, 0.0))
    outs = [
        model.add_operand(OperandCode.TENSOR_FLOAT32, s) for s in [(1, 9), (1, 3), (1, 3), (1, 3)]
    ]
    model.add_operation(LSTM, inputs, outs)
    model.identify_inputs_and_outputs(operands, outs)
    model.finish()
    execution = Execution(Compilation(model).finish())
    keep = []
    for i, value in enumerate(feeds):
        if value is None:
            call("ANeuralNetworksExecution_setInput", execution.handle, i, None, None, 0)
        else:
            value = np.ascontiguousarray(value)
            keep.append(value)
            call(
                "ANeuralNetworksExecution_setInput",
                execution.handle,
                i,
                None,
                value.ctypes.data,
                value.nbytes,
            )
    results = [np.zeros(s, np.float32) for s in [(1, 9), (1, 3), (1, 3), (1, 3)]]
    for i, out in enumerate(results):
        call(
            "ANeuralNetworksExecution_setOutput",
            execution.handle,
            i,
            None,
            out.ctypes.data,
            out.nbytes,
        )
    call("ANeuralNetworksExecution_compute", execution.handle)
    expected_h, expected_c, _ = lstm_step(x, h, c, p, 4)
    assert_close(results[1], expected_h.astype(np.float32))
    assert_close(results[2], expected_c.astype(np.float32))


def sequence_tester(x, h, c, p, dtype, time_major, with_states, activation=4):
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    n_cell, n_output = p["w_xo"].shape[0], p["w_ho"].shape[1]
    tester = add_cell(OpTester(SEQUENCE_LSTM).input(x), p, dtype, h, c, activation, 0.0, 0.0)
    tester.scalar(OperandCode.BOOL, time_major)
    add_layer_norm(tester, p, dtype)
    code = float_code(dtype)
    tester.output(code, (steps, batch, n_output) if time_major else (batch, steps, n_output))
    if with_states:
        tester.output(code, (batch, n_output)).output(code, (batch, n_cell))
    return tester


def sequence_reference(x, h, c, p, time_major, activation=4):
    xs = x if time_major else x.transpose(1, 0, 2)
    outputs = []
    for x_t in xs:
        h, c, _ = lstm_step(x_t, h, c, p, activation)
        outputs.append(h)
    out = np.stack(outputs)
    return (out if time_major else out.transpose(1, 0, 2)), h, c


@pytest.mark.parametrize(
    "variant",
    ["basic", "cifg_peephole", "peephole_projection", "layer_norm_cifg_peephole_projection"],
)
@pytest.mark.parametrize(
    ("time_major", "with_states"), list(itertools.product([True, False], [True, False]))
)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_sequence_lstm(variant, time_major, with_states, dtype):
    batch, steps = 2, 3
    p = variant_params(variant, 3, 4, 2, dtype, seed=15)
    shape = (steps, batch, 3) if time_major else (batch, steps, 3)
    x = np.random.default_rng(16).uniform(-1, 1, shape).astype(dtype)
    h, c = states(batch, p, dtype)
    results = (
        sequence_tester(x, h, c, p, dtype, time_major, with_states)
        .dynamic_outputs(with_states and time_major)
        .run()
    )
    expected, last_h, last_c = sequence_reference(x, h, c, p, time_major)
    kind = "float16" if dtype == np.float16 else None
    assert_close(results[0], expected.astype(dtype), kind)
    if with_states:
        assert_close(results[1], last_h.astype(dtype), kind)
        assert_close(results[2], last_c.astype(dtype), kind)


def test_lstm_rejects_types_and_counts():
    p = variant_params("basic", 3, 4, 4, np.float32)
    x = np.zeros((2, 3), np.float32)
    h, c = states(2, p, np.float32)
    # 23 or 27 inputs.
    tester = lstm_tester(x, h, c, p, np.float32)
    tester._inputs.append(dict(kind="omitted", code=OperandCode.TENSOR_FLOAT32))
    expect_bad_data_at_add(tester)
    # Four outputs.
    tester = lstm_tester(x, h, c, p, np.float32)
    tester._outputs.pop()
    expect_bad_data_at_add(tester)
    # Every tensor of the input's type (here an fp16 bias).
    p16 = dict(p, b_f=p["b_f"].astype(np.float16))
    expect_bad_data_at_add(lstm_tester(x, h, c, p16, np.float32))
    # fp16 tensors take FLOAT16 clipping thresholds.
    tester = lstm_tester(
        x.astype(np.float16),
        h.astype(np.float16),
        c.astype(np.float16),
        {k: v.astype(np.float16) for k, v in p.items() if v is not None}
        | {k: None for k, v in p.items() if v is None},
        np.float16,
    )
    tester._inputs[21]["code"] = OperandCode.FLOAT32
    expect_bad_data_at_add(tester)
    # Outputs of the input's type; integer inputs are not accepted.
    expect_bad_data_at_add(lstm_tester(x, h, c, p, np.float32, out_code=OperandCode.TENSOR_FLOAT16))
    tester = lstm_tester(x, h, c, p, np.float32)
    tester._inputs[0]["array"] = np.zeros((2, 3), np.int32)
    tester._inputs[0]["code"] = OperandCode.TENSOR_INT32
    expect_bad_data_at_add(tester)


def test_sequence_lstm_rejects_counts_and_time_major_type():
    p = variant_params("basic", 3, 4, 4, np.float32)
    x = np.zeros((2, 2, 3), np.float32)
    h, c = states(2, p, np.float32)
    tester = sequence_tester(x, h, c, p, np.float32, True, True)
    tester._outputs.pop()  # two outputs: the last cell state is missing
    expect_bad_data_at_add(tester)
    tester = sequence_tester(x, h, c, p, np.float32, True, False)
    tester._inputs[23] = dict(kind="scalar", code=OperandCode.INT32, value=1)
    expect_bad_data_at_add(tester)


def expect_op_failed(tester, text):
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert text in str(error.value), str(error.value)
    error.value.__traceback__ = None


def test_lstm_inconsistent_optional_inputs_fail_at_execution():
    x = np.zeros((2, 3), np.float32)
    base = variant_params("peephole_projection", 3, 4, 2, np.float32)
    h, c = states(2, base, np.float32)
    # Input-to-input weights without recurrent-to-input weights.
    expect_op_failed(lstm_tester(x, h, c, dict(base, w_hi=None), np.float32), "CIFG")
    # CIFG with an input gate bias.
    cifg = variant_params("cifg", 3, 4, 4, np.float32)
    h4, c4 = states(2, cifg, np.float32)
    bias = dict(cifg, b_i=np.zeros(4, np.float32))
    expect_op_failed(lstm_tester(x, h4, c4, bias, np.float32), "input gate bias")
    # Two of the three peephole weights.
    expect_op_failed(lstm_tester(x, h, c, dict(base, w_cf=None), np.float32), "peephole")
    # A projection bias without projection weights.
    plain = variant_params("basic", 3, 4, 4, np.float32)
    h4, c4 = states(2, plain, np.float32)
    expect_op_failed(
        lstm_tester(x, h4, c4, dict(plain, b_proj=np.zeros(4, np.float32)), np.float32),
        "projection bias",
    )
    # Layer normalization weights: all or none (the input one exactly without CIFG).
    ln = variant_params("layer_norm", 3, 4, 4, np.float32)
    expect_op_failed(lstm_tester(x, h4, c4, dict(ln, ln_c=None), np.float32), "layer norm")
    expect_op_failed(lstm_tester(x, h4, c4, dict(ln, ln_i=None), np.float32), "layer norm")


def test_lstm_shape_and_argument_errors_fail_at_execution():
    x = np.zeros((2, 3), np.float32)
    p = variant_params("peephole_projection", 3, 4, 2, np.float32)
    h, c = states(2, p, np.float32)
    expect_op_failed(
        lstm_tester(x, h, c, dict(p, w_xf=np.zeros((4, 2), np.float32)), np.float32),
        "input-to-gate",
    )
    expect_op_failed(
        lstm_tester(x, h, c, dict(p, w_hc=np.zeros((4, 4), np.float32)), np.float32),
        "recurrent-to-gate",
    )
    expect_op_failed(
        lstm_tester(x, h, c, dict(p, w_cf=np.zeros(3, np.float32)), np.float32), "cell-to-gate"
    )
    expect_op_failed(
        lstm_tester(x, h, c, dict(p, w_proj=np.zeros((2, 3), np.float32)), np.float32),
        "projection weights",
    )
    expect_op_failed(lstm_tester(x, np.zeros((2, 4), np.float32), c, p, np.float32), "output state")
    expect_op_failed(lstm_tester(x, h, np.zeros((3, 4), np.float32), p, np.float32), "cell state")
    expect_op_failed(lstm_tester(x, h, c, dict(p, w_xo=None), np.float32), "required")
    expect_op_failed(lstm_tester(x, h, c, p, np.float32, cell_clip=-1.0), "clipping")
    expect_op_failed(lstm_tester(x, h, c, p, np.float32, activation=5), "activation 5")


@pytest.mark.parametrize(
    ("op", "dtype", "layer_norm", "with_states", "expected"),
    [
        (LSTM, np.float32, False, False, 1),
        (LSTM, np.float32, True, False, 3),
        (LSTM, np.float16, False, False, 3),
        (SEQUENCE_LSTM, np.float32, True, False, 3),
        (SEQUENCE_LSTM, np.float16, True, False, 3),
        (SEQUENCE_LSTM, np.float32, True, True, 4),
    ],
)
def test_feature_levels(feature_level_devices, op, dtype, layer_norm, with_states, expected):
    p = variant_params("layer_norm" if layer_norm else "basic", 3, 4, 4, dtype)
    h, c = states(2, p, dtype)
    if op == LSTM:
        tester = lstm_tester(np.zeros((2, 3), dtype), h, c, p, dtype, with_ln=layer_norm)
    else:
        tester = sequence_tester(np.zeros((2, 2, 3), dtype), h, c, p, dtype, True, with_states)
    assert required_feature_level(tester, feature_level_devices) == expected


def test_lstm_without_projection_needs_output_size_equal_to_units():
    # h_t = o_t * g(C_t) has num_units elements: the recurrent weights' output size must match.
    p = make_params(
        3,
        4,
        2,
        np.float32,
        cifg=False,
        peephole=False,
        projection=False,
        proj_bias=False,
        layer_norm=False,
    )
    x = np.zeros((2, 3), np.float32)
    h, c = states(2, p, np.float32)
    expect_op_failed(lstm_tester(x, h, c, p, np.float32), "without projection")
