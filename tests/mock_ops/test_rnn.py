# SPDX-License-Identifier: Apache-2.0
"""RNN and UNIDIRECTIONAL_SEQUENCE_RNN against a numpy reference of the NDK's equation

    outputs = state = activation(inputs * input_weights' + state * recurrent_weights' + bias)

applied once (RNN) or along the sequence (time-major and batch-major), with every activation
the operations take, fp32 and fp16, the optional last-state output (FL4), dynamic output
shapes, the BAD_DATA type/count rules of addOperation, the OP_FAILED shape and argument rules
of execution (Android checks shapes when the operation is prepared) and the feature levels.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import Compilation, Model, NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add
from .op_tester import OpTester, assert_close
from .test_conv_2d import required_feature_level

RNN = OperationCode.RNN
SEQUENCE_RNN = OperationCode.UNIDIRECTIONAL_SEQUENCE_RNN

#: The activations of the recurrent operations: FuseCode values, tanh (4) and sigmoid (6).
ACTIVATIONS = {
    0: lambda x: x,
    1: lambda x: np.maximum(x, 0),
    2: lambda x: np.clip(x, -1, 1),
    3: lambda x: np.clip(x, 0, 6),
    4: np.tanh,
    6: lambda x: 1 / (1 + np.exp(-x)),
}


def rnn_step(x, weights, recurrent, bias, hidden, activation):
    """One step of the documented equation, in float64."""
    return ACTIVATIONS[activation](x @ weights.T + hidden @ recurrent.T + bias)


def parameters(batch, input_size, units, dtype, seed=0):
    rng = np.random.default_rng(seed)

    def draw(*shape):
        return rng.uniform(-1, 1, shape).astype(dtype)

    return dict(
        weights=draw(units, input_size),
        recurrent=draw(units, units),
        bias=draw(units),
        hidden=draw(batch, units),
    )


def f64(array):
    return np.asarray(array, np.float64)


def rnn_tester(x, p, activation, out_shapes=None, code=None, act_code=OperandCode.INT32):
    batch, units = x.shape[0], p["weights"].shape[0]
    out = code if code is not None else OpTester.default_code(x)
    shapes = out_shapes or [(batch, units), (batch, units)]
    tester = (
        OpTester(RNN)
        .input(x)
        .constant(p["weights"])
        .constant(p["recurrent"])
        .constant(p["bias"])
        .input(p["hidden"])
        .scalar(act_code, activation)
    )
    for shape in shapes:
        tester.output(out, shape)
    return tester


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_rnn(dtype, activation):
    x = np.random.default_rng(1).uniform(-1, 1, (2, 3)).astype(dtype)
    p = parameters(2, 3, 4, dtype)
    state, output = rnn_tester(x, p, activation).dynamic_outputs(activation == 4).run()
    expected = rnn_step(
        f64(x), f64(p["weights"]), f64(p["recurrent"]), f64(p["bias"]), f64(p["hidden"]), activation
    )
    kind = "float16" if dtype == np.float16 else None
    assert_close(state, expected.astype(dtype), kind)
    np.testing.assert_array_equal(state, output)


def test_rnn_relaxed_and_larger():
    x = np.random.default_rng(2).uniform(-1, 1, (3, 17)).astype(np.float32)
    p = parameters(3, 17, 9, np.float32, seed=3)
    state, _ = rnn_tester(x, p, 4).relaxed().run()
    expected = rnn_step(
        f64(x), f64(p["weights"]), f64(p["recurrent"]), f64(p["bias"]), f64(p["hidden"]), 4
    )
    assert_close(state, expected, "relaxed")


def sequence_reference(x, p, activation, time_major):
    xs = f64(x) if time_major else f64(x).transpose(1, 0, 2)
    hidden = f64(p["hidden"])
    steps = []
    for x_t in xs:
        hidden = rnn_step(
            x_t, f64(p["weights"]), f64(p["recurrent"]), f64(p["bias"]), hidden, activation
        )
        steps.append(hidden)
    out = np.stack(steps)
    return (out if time_major else out.transpose(1, 0, 2)), hidden


def sequence_tester(x, p, activation, time_major, with_state, code=None, out_shape=None):
    batch = x.shape[1] if time_major else x.shape[0]
    steps = x.shape[0] if time_major else x.shape[1]
    units = p["weights"].shape[0]
    out = code if code is not None else OpTester.default_code(x)
    shape = out_shape or ((steps, batch, units) if time_major else (batch, steps, units))
    tester = (
        OpTester(SEQUENCE_RNN)
        .input(x)
        .constant(p["weights"])
        .constant(p["recurrent"])
        .constant(p["bias"])
        .input(p["hidden"])
        .scalar(OperandCode.INT32, activation)
        .scalar(OperandCode.INT32, int(time_major))
        .output(out, shape)
    )
    if with_state:
        tester.output(out, (batch, units))
    return tester


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("time_major", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
def test_sequence_rnn(dtype, time_major, with_state):
    batch, steps = 2, 4
    shape = (steps, batch, 3) if time_major else (batch, steps, 3)
    x = np.random.default_rng(4).uniform(-1, 1, shape).astype(dtype)
    p = parameters(batch, 3, 5, dtype, seed=5)
    results = sequence_tester(x, p, 4, time_major, with_state).dynamic_outputs(with_state).run()
    expected, last = sequence_reference(x, p, 4, time_major)
    kind = "float16" if dtype == np.float16 else None
    assert_close(results[0], expected.astype(dtype), kind)
    if with_state:
        assert_close(results[1], last.astype(dtype), kind)


@pytest.mark.parametrize("activation", [0, 1, 6])
def test_sequence_rnn_one_step_equals_rnn(activation):
    x = np.random.default_rng(6).uniform(-2, 2, (1, 3, 4)).astype(np.float32)
    p = parameters(3, 4, 2, np.float32, seed=7)
    (sequence,) = sequence_tester(x, p, activation, True, False).run()
    state, _ = rnn_tester(x[0], p, activation).run()
    np.testing.assert_allclose(sequence[0], state, rtol=1e-6, atol=1e-6)


def test_rnn_rejects_types_and_counts():
    x = np.zeros((2, 3), np.float32)
    p = parameters(2, 3, 4, np.float32)
    # Integer input tensors are not accepted.
    xi = np.zeros((2, 3), np.int32)
    expect_bad_data_at_add(rnn_tester(xi, p, 0, code=OperandCode.TENSOR_INT32))
    # Every tensor has the input's type.
    p16 = dict(p, bias=p["bias"].astype(np.float16))
    expect_bad_data_at_add(rnn_tester(x, p16, 0))
    # Outputs too.
    expect_bad_data_at_add(rnn_tester(x, p, 0, code=OperandCode.TENSOR_FLOAT16))
    # The activation is an INT32 scalar.
    expect_bad_data_at_add(rnn_tester(x, p, 0, act_code=OperandCode.UINT32))
    # Two outputs.
    expect_bad_data_at_add(rnn_tester(x, p, 0, out_shapes=[(2, 4)]))


def test_sequence_rnn_rejects_types_and_counts():
    x = np.zeros((3, 2, 3), np.float32)
    p = parameters(2, 3, 4, np.float32)
    tester = sequence_tester(x, p, 0, True, True)
    tester.output(OperandCode.TENSOR_FLOAT32, (2, 4))  # a third output
    expect_bad_data_at_add(tester)
    expect_bad_data_at_add(sequence_tester(x, p, 0, True, False, code=OperandCode.TENSOR_FLOAT16))


def expect_op_failed(tester, text):
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert text in str(error.value)
    error.value.__traceback__ = None


def test_rnn_shape_and_argument_errors_fail_at_execution():
    x = np.zeros((2, 3), np.float32)
    p = parameters(2, 3, 4, np.float32)
    # Android checks the shapes when the operation is prepared: the model builds.
    bad_bias = dict(p, bias=np.zeros(5, np.float32))
    expect_op_failed(rnn_tester(x, bad_bias, 0), "bias")
    bad_recurrent = dict(p, recurrent=np.zeros((4, 3), np.float32))
    expect_op_failed(rnn_tester(x, bad_recurrent, 0), "recurrent weights")
    bad_hidden = dict(p, hidden=np.zeros((3, 4), np.float32))
    expect_op_failed(rnn_tester(x, bad_hidden, 0), "hidden state")
    expect_op_failed(rnn_tester(np.zeros((2, 5), np.float32), p, 0), "weights")
    expect_op_failed(rnn_tester(x, p, 5), "activation 5")
    # A declared output shape that disagrees.
    expect_op_failed(rnn_tester(x, p, 0, out_shapes=[(2, 4), (2, 5)]), "declared")


def test_sequence_rnn_time_major_must_be_0_or_1():
    x = np.zeros((3, 2, 3), np.float32)
    p = parameters(2, 3, 4, np.float32)
    tester = sequence_tester(x, p, 0, True, False)
    tester._inputs[6]["value"] = 2
    expect_op_failed(tester, "time_major")
    # A rank-2 input is not a sequence.
    flat = sequence_tester(x, p, 0, True, False)
    flat._inputs[0]["array"] = np.zeros((2, 3), np.float32)
    expect_op_failed(flat, "rank 3")


@pytest.mark.parametrize(
    ("op", "dtype", "with_state", "expected"),
    [
        (RNN, np.float32, False, 1),
        (RNN, np.float16, False, 3),
        (SEQUENCE_RNN, np.float32, False, 3),
        (SEQUENCE_RNN, np.float16, False, 3),
        (SEQUENCE_RNN, np.float32, True, 4),
    ],
)
def test_feature_levels(feature_level_devices, op, dtype, with_state, expected):
    p = parameters(2, 3, 4, dtype)
    if op == RNN:
        tester = rnn_tester(np.zeros((2, 3), dtype), p, 0)
    else:
        tester = sequence_tester(np.zeros((3, 2, 3), dtype), p, 0, True, with_state)
    assert required_feature_level(tester, feature_level_devices) == expected


def zero_length_sequence_model(op, cell_inputs, out_shapes):
    """A model whose `op` reads a zero-length time-major sequence [0, 2, 3] made by SLICE (model
    inputs cannot be zero-sized); `cell_inputs(model)` adds the operation's other inputs."""
    model = Model()
    source = model.add_operand(OperandCode.TENSOR_FLOAT32, (2, 2, 3))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(3, np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, 2, 3], np.int32))
    empty = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 2, 3))
    model.add_operation(OperationCode.SLICE, [source, begin, size], [empty])
    outputs = [model.add_operand(OperandCode.TENSOR_FLOAT32, shape) for shape in out_shapes]
    model.add_operation(op, [empty, *cell_inputs(model)], outputs)
    model.identify_inputs_and_outputs([source], outputs)
    return model.finish()


def test_sequence_rnn_rejects_a_zero_length_sequence():
    # Android's CPU executor rejects zero-sized inputs for every operation not registered to
    # take them, the sequence operations included.
    p = parameters(2, 3, 4, np.float32)

    def cell_inputs(model):
        tensors = [p["weights"], p["recurrent"], p["bias"], p["hidden"]]
        constants = [model.add_constant(OperandCode.TENSOR_FLOAT32, t) for t in tensors]
        return [
            *constants,
            model.add_scalar(OperandCode.INT32, 0),
            model.add_scalar(OperandCode.INT32, 1),
        ]

    model = zero_length_sequence_model(SEQUENCE_RNN, cell_inputs, [(0, 2, 4)])
    compilation = Compilation(model).finish()
    with pytest.raises(NnapiError) as error:
        compilation.execute([np.zeros((2, 2, 3), np.float32)], [(1, 2, 4)])
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert "zero-sized" in str(error.value)
    error.value.__traceback__ = None
