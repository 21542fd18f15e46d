# SPDX-License-Identifier: Apache-2.0
"""QUANTIZED_16BIT_LSTM against a float64 reference: the LSTM gate equations (no CIFG, peephole
or projection) on the dequantised operands, with the value ranges the NDK documents (input and
output [-1, 127/128] in steps of 1/128, cell state [-16, 16) in steps of 2^-11), quantised at
the end. The gates' products pair the data [input, previous output] with the weight columns
[recurrent-to-gate, input-to-gate], as Android's implementation and its conformance tests do
(quantized_16bit_lstm.cc). The mock rounds at the fixed-point formats of Android's
implementation, so its results are compared within a few steps of each format (the reference
does not round).

Covered: several shapes and weight quantisations, saturation of the cell state, two chained
steps, the BAD_DATA type/count rules, the OP_FAILED quantisation and shape rules of prepare and
the feature level (3).
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add
from .op_tester import OpTester
from .test_conv_2d import required_feature_level

Q16_LSTM = OperationCode.QUANTIZED_16BIT_LSTM
U8 = OperandCode.TENSOR_QUANT8_ASYMM
I32 = OperandCode.TENSOR_INT32
Q16 = OperandCode.TENSOR_QUANT16_SYMM
CELL_SCALE = 1 / 2048


def make(batches, input_size, output_size, weights_scale, weights_zero, seed=0, bias_range=2000):
    rng = np.random.default_rng(seed)
    p = {
        "x": rng.integers(0, 256, (batches, input_size)).astype(np.uint8),
        "h": rng.integers(0, 256, (batches, output_size)).astype(np.uint8),
        "c": rng.integers(-8000, 8000, (batches, output_size)).astype(np.int16),
        "ws": np.float32(weights_scale),
        "wz": weights_zero,
    }
    for g in "ifco":
        p[f"wx{g}"] = rng.integers(0, 256, (output_size, input_size)).astype(np.uint8)
        p[f"wh{g}"] = rng.integers(0, 256, (output_size, output_size)).astype(np.uint8)
        p[f"b{g}"] = rng.integers(-bias_range, bias_range, output_size).astype(np.int32)
    return p


def reference(p):
    """(cell state as int16 steps, output as uint8) from the float LSTM equations."""
    x = (p["x"].astype(np.float64) - 128) / 128
    h = (p["h"].astype(np.float64) - 128) / 128
    c = p["c"].astype(np.float64) * CELL_SCALE
    ws = float(p["ws"])

    def pre(g):
        wx = (p[f"wx{g}"].astype(np.float64) - p["wz"]) * ws
        wh = (p[f"wh{g}"].astype(np.float64) - p["wz"]) * ws
        bias = p[f"b{g}"] * (float(np.float32(ws / 128)))
        # Android's pairing: data [x, h] against weight columns [W_h, W_x].
        product = np.concatenate([x, h], axis=1) @ np.concatenate([wh, wx], axis=1).T
        # The fully connected result is kept in [-8, 8) (the 16-bit internal range).
        return np.clip(product + bias, -8, 8 - 2**-12)

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    i, f, g, o = sigmoid(pre("i")), sigmoid(pre("f")), np.tanh(pre("c")), sigmoid(pre("o"))
    c_new = np.clip(f * c + i * g, -16, 16 - CELL_SCALE)
    h_new = o * np.tanh(np.clip(c_new, -8, 8))
    return c_new / CELL_SCALE, np.clip(np.round(h_new * 128), -128, 127) + 128


def q16_tester(p, out_codes=(Q16, U8), cell_scale=CELL_SCALE, out_scale=1 / 128):
    ws = float(p["ws"])
    tester = OpTester(Q16_LSTM).input(p["x"], U8, 1 / 128, 128)
    for name in [f"wx{g}" for g in "ifco"] + [f"wh{g}" for g in "ifco"]:
        tester.constant(p[name], U8, ws, p["wz"])
    for g in "ifco":
        tester.constant(p[f"b{g}"], I32, float(np.float32(ws) / np.float32(128)), 0)
    tester.input(p["c"], Q16, CELL_SCALE, 0).input(p["h"], U8, 1 / 128, 128)
    shape = p["h"].shape
    tester.output(out_codes[0], shape, cell_scale, 0).output(out_codes[1], shape, out_scale, 128)
    return tester


def check(p, results):
    cell, output = results
    expected_cell, expected_output = reference(p)
    np.testing.assert_allclose(cell.astype(np.float64), expected_cell, atol=4)
    np.testing.assert_allclose(output.astype(np.float64), expected_output, atol=1)


@pytest.mark.parametrize(
    ("batches", "input_size", "output_size", "weights_scale", "weights_zero"),
    [(1, 2, 4, 1 / 256, 128), (2, 5, 3, 0.002, 100), (3, 8, 8, 0.0005, 140)],
)
def test_quantized_16bit_lstm(batches, input_size, output_size, weights_scale, weights_zero):
    p = make(batches, input_size, output_size, weights_scale, weights_zero)
    results = q16_tester(p).dynamic_outputs(batches == 2).run()
    check(p, results)
    # Not all the same: the test would not notice a constant output.
    assert len(np.unique(results[1])) > 1


def test_cell_state_saturates():
    # A cell state near the top of its range, kept by a saturated forget gate and pushed on by
    # the input gate, saturates at 16 - 2^-11.
    p = make(1, 2, 2, 0.01, 128, seed=1)
    p["c"][:] = 32000
    for g in "ifco":
        p[f"b{g}"][:] = 200000  # every gate's pre-activation saturates at 8
    cell, _ = q16_tester(p).run()
    assert (cell == 32767).all()
    check(p, [cell, reference(p)[1]])


def test_two_steps_chain_the_states():
    p = make(2, 3, 4, 0.004, 120, seed=2)
    cell, output = q16_tester(p).run()
    q = dict(
        p, c=cell, h=output, x=np.random.default_rng(3).integers(0, 256, (2, 3)).astype(np.uint8)
    )
    check(q, q16_tester(q).run())


def test_rejects_types_and_counts():
    p = make(1, 2, 4, 1 / 256, 128)
    expect_bad_data_at_add(q16_tester(p, out_codes=(U8, U8)))
    tester = q16_tester(p)
    tester._inputs[9]["code"] = U8  # a bias that is not TENSOR_INT32
    tester._inputs[9]["array"] = p["bi"].astype(np.uint8)
    expect_bad_data_at_add(tester)
    tester = q16_tester(p)
    tester._outputs.pop()
    expect_bad_data_at_add(tester)


def expect_op_failed(tester, text):
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert text in str(error.value), str(error.value)
    error.value.__traceback__ = None


def test_prepare_checks_quantization_and_shapes():
    p = make(1, 2, 4, 1 / 256, 128)
    # The input's fixed quantisation.
    tester = q16_tester(p)
    tester._inputs[0]["scale"] = 1 / 64
    expect_op_failed(tester, "input must have scale")
    # Every weight has the first one's quantisation.
    tester = q16_tester(p)
    tester._inputs[6]["zp"] = 127
    expect_op_failed(tester, "weights 6")
    # The bias scale is weights_scale / 128.
    tester = q16_tester(p)
    tester._inputs[10]["scale"] = 1.0
    expect_op_failed(tester, "bias 10")
    # The cell state's scale is 2^-11.
    expect_op_failed(q16_tester(p, cell_scale=1 / 1024), "output 0")
    # A recurrent weight of the wrong shape.
    tester = q16_tester(p)
    tester._inputs[7]["array"] = np.zeros((4, 2), np.uint8)
    expect_op_failed(tester, "weights")


def test_feature_level(feature_level_devices):
    tester = q16_tester(make(1, 2, 4, 1 / 256, 128))
    assert required_feature_level(tester, feature_level_devices) == 3
