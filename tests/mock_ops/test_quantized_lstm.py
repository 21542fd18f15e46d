# SPDX-License-Identifier: Apache-2.0
"""QUANTIZED_LSTM against a float64 reference of the LSTM equations on the dequantised operands
(test_lstm.py's cell: CIFG, peephole, projection, layer normalisation), quantised at the end.

The real-number meaning of the operands follows Android's implementation (documented in
quantized_lstm.cc): the layer-norm bias has scale layer_norm_scale / 1024; without layer
normalisation the gates read their sums in steps of 2^-12 (so these tests use intermediate
scales of 2^-12) and the gate biases are unused. The mock rounds at 16-bit formats the
reference does not, so results agree within a few steps.

Covered: every optional-input variant, cell and projection clipping, non-zero zero points, the
unused biases without layer normalisation, the BAD_DATA type/count rules, the OP_FAILED rules
of prepare (the cell state's power-of-two scale, optional-input combinations) and the feature
level (4).
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add
from .op_tester import OpTester
from .test_conv_2d import required_feature_level
from .test_lstm import lstm_step

QLSTM = OperationCode.QUANTIZED_LSTM
S8 = OperandCode.TENSOR_QUANT8_ASYMM_SIGNED
Q8 = OperandCode.TENSOR_QUANT8_SYMM
Q16 = OperandCode.TENSOR_QUANT16_SYMM
I32 = OperandCode.TENSOR_INT32
GATES = "ifco"
CELL_SCALE = 2.0**-11


def make(variant, batch=2, n_input=3, n_cell=4, n_output=None, seed=0, x_zero=3, h_zero=-2):
    """Quantised operands (arrays with their scales) of a cell; None for omitted ones."""
    cifg, peephole, projection, layer_norm = (
        name in variant for name in ("cifg", "peephole", "projection", "layer_norm")
    )
    n_output = n_output or (2 if projection else n_cell)
    rng = np.random.default_rng(seed)
    q = {
        "x": (rng.integers(-100, 100, (batch, n_input)).astype(np.int8), 0.02, x_zero),
        "h": (rng.integers(-100, 100, (batch, n_output)).astype(np.int8), 0.01, h_zero),
        "c": (rng.integers(-3000, 3000, (batch, n_cell)).astype(np.int16), CELL_SCALE, 0),
    }
    for g in GATES:
        skip = cifg and g == "i"
        q[f"w_x{g}"] = (
            None if skip else (rng.integers(-127, 128, (n_cell, n_input)).astype(np.int8), 0.005, 0)
        )
        q[f"w_h{g}"] = (
            None
            if skip
            else (rng.integers(-127, 128, (n_cell, n_output)).astype(np.int8), 0.006, 0)
        )
        bias = rng.integers(-2_000_000, 2_000_000, n_cell).astype(np.int32)
        q[f"b_{g}"] = None if skip else (bias, 0.0, 0)
        q[f"ln_{g}"] = (
            (rng.integers(10000, 30000, n_cell).astype(np.int16), 2.0**-14, 0)
            if layer_norm and not skip
            else None
        )
    for g in ("i", "f", "o"):
        use = peephole and not (cifg and g == "i")
        q[f"w_c{g}"] = (
            (rng.integers(-2000, 2000, n_cell).astype(np.int16), 2.0**-10, 0) if use else None
        )
    q["w_proj"] = (
        (rng.integers(-127, 128, (n_output, n_cell)).astype(np.int8), 0.02, 0)
        if projection
        else None
    )
    q["b_proj"] = (
        (rng.integers(-500, 500, n_output).astype(np.int32), 0.0, 0) if projection else None
    )
    q["scalars"] = dict(
        cell_clip=0.0,
        proj_clip=0.0,
        intermediate=[2.0**-12] * 4,
        hidden_zero=0,
        hidden_scale=2.0**-7,
    )
    q["out"] = (0.01, h_zero) if projection else (2.0**-7, 0)
    return q


def real(entry):
    array, scale, zero = entry
    return (array.astype(np.float64) - zero) * scale


def reference(q):
    """(output int8, cell state int16) of the float LSTM on the dequantised operands."""
    s = q["scalars"]
    p = {}
    for g in GATES:
        p[f"w_x{g}"] = None if q[f"w_x{g}"] is None else real(q[f"w_x{g}"])
        p[f"w_h{g}"] = None if q[f"w_h{g}"] is None else real(q[f"w_h{g}"])
        ln = q[f"ln_{g}"]
        if ln is not None:
            p[f"ln_{g}"] = real(ln)
            p[f"b_{g}"] = q[f"b_{g}"][0] * ln[1] / 1024
        else:
            p[f"ln_{g}"] = None
            # Without layer normalisation the gates' biases are not used (Android's behaviour).
            p[f"b_{g}"] = None if q[f"b_{g}"] is None else np.zeros(len(q[f"b_{g}"][0]))
    for g in ("i", "f", "o"):
        p[f"w_c{g}"] = None if q[f"w_c{g}"] is None else real(q[f"w_c{g}"])
    p["w_proj"] = None
    p["b_proj"] = None
    x, h, c = real(q["x"]), real(q["h"]), real(q["c"])
    hidden, c_new, _ = lstm_step(x, h, c, p, 4, cell_clip=s["cell_clip"])
    cell = np.clip(np.round(c_new / CELL_SCALE), -32768, 32767)
    hidden_q = np.clip(np.round(hidden / s["hidden_scale"]) + s["hidden_zero"], -128, 127)
    if q["w_proj"] is None:
        return hidden_q, cell
    out_scale, out_zero = q["out"]
    w = real(q["w_proj"])
    acc = (hidden_q - s["hidden_zero"]) * s["hidden_scale"] @ w.T
    acc = acc + q["b_proj"][0] * s["hidden_scale"] * q["w_proj"][1]
    if s["proj_clip"] > 0:
        acc = np.clip(acc, -s["proj_clip"], s["proj_clip"])
    return np.clip(np.round(acc / out_scale) + out_zero, -128, 127), cell


ORDER = [f"w_x{g}" for g in GATES] + [f"w_h{g}" for g in GATES] + ["w_ci", "w_cf", "w_co"]
ORDER += [f"b_{g}" for g in GATES] + ["w_proj", "b_proj"]
CODES = {"w_x": Q8, "w_h": Q8, "w_c": Q16, "b_": I32, "w_p": Q8, "b_p": I32, "ln": Q16}


def code_of(name):
    return CODES[name[:3]] if name[:3] in CODES else CODES[name[:2]]


def bias_scale(q, name):
    """Biases: the products' scale (the layer-norm use reads them in its own units)."""
    if name == "b_proj":
        return q["scalars"]["hidden_scale"] * q["w_proj"][1]
    return q["x"][1] * q[f"w_x{name[2]}"][1] if q[f"w_x{name[2]}"] is not None else 0.0


def qlstm_tester(q, out_codes=(S8, Q16, S8)):
    s = q["scalars"]
    tester = OpTester(QLSTM).input(q["x"][0], S8, q["x"][1], q["x"][2])
    for name in ORDER:
        entry = q[name]
        if entry is None:
            tester.omitted(code_of(name), 0.0 if code_of(name) == I32 else 1.0)
        else:
            scale = bias_scale(q, name) if name.startswith("b_") else entry[1]
            tester.constant(entry[0], code_of(name), scale, entry[2])
    tester.input(q["h"][0], S8, q["h"][1], q["h"][2]).input(q["c"][0], Q16, q["c"][1], 0)
    for g in GATES:
        entry = q[f"ln_{g}"]
        tester = (
            tester.omitted(Q16, 1.0) if entry is None else tester.constant(entry[0], Q16, entry[1])
        )
    tester.scalar(OperandCode.FLOAT32, s["cell_clip"])
    tester.scalar(OperandCode.FLOAT32, s["proj_clip"])
    for value in s["intermediate"]:
        tester.scalar(OperandCode.FLOAT32, value)
    tester.scalar(OperandCode.INT32, s["hidden_zero"]).scalar(
        OperandCode.FLOAT32, s["hidden_scale"]
    )
    batch, n_output = q["h"][0].shape
    n_cell = q["c"][0].shape[1]
    out_scale, out_zero = q["out"]
    tester.output(out_codes[0], (batch, n_output), out_scale, out_zero)
    tester.output(out_codes[1], (batch, n_cell), CELL_SCALE, 0)
    tester.output(out_codes[2], (batch, n_output), out_scale, out_zero)
    return tester


def check(q, results, output_atol=2, cell_atol=8):
    output_state, cell, output = results
    expected_output, expected_cell = reference(q)
    np.testing.assert_array_equal(output_state, output)
    np.testing.assert_allclose(output.astype(np.float64), expected_output, atol=output_atol)
    np.testing.assert_allclose(cell.astype(np.float64), expected_cell, atol=cell_atol)


VARIANTS = [
    "basic",
    "cifg",
    "peephole",
    "projection",
    "layer_norm",
    "cifg_peephole_layer_norm",
    "peephole_projection_layer_norm",
    "cifg_peephole_projection_layer_norm",
]


@pytest.mark.parametrize("variant", VARIANTS)
def test_quantized_lstm_variants(variant):
    q = make(variant)
    results = qlstm_tester(q).dynamic_outputs(variant == "basic").run()
    check(q, results)
    assert len(np.unique(results[2])) > 1


def test_quantized_lstm_clipping():
    q = make("projection_layer_norm", seed=1, h_zero=0)
    q["scalars"].update(cell_clip=0.25, proj_clip=0.3)
    q["c"] = (np.full_like(q["c"][0], 3000), CELL_SCALE, 0)
    _, cell, output = qlstm_tester(q).run()
    assert np.abs(cell).max() <= 0.25 / CELL_SCALE
    check(q, [output, cell, output])


def test_biases_are_unused_without_layer_norm():
    q = make("peephole", seed=2)
    base = qlstm_tester(q).run()
    for g in GATES:
        q[f"b_{g}"] = (q[f"b_{g}"][0] * 7, 0.0, 0)
    changed = qlstm_tester(q).run()
    for a, b in zip(base, changed, strict=True):
        np.testing.assert_array_equal(a, b)


def test_rejects_types_and_counts():
    q = make("basic")
    expect_bad_data_at_add(qlstm_tester(q, out_codes=(S8, S8, S8)))
    tester = qlstm_tester(q)
    tester._inputs[0]["code"] = OperandCode.TENSOR_QUANT8_ASYMM
    tester._inputs[0]["array"] = q["x"][0].astype(np.uint8)
    expect_bad_data_at_add(tester)
    tester = qlstm_tester(q)
    tester._inputs[30] = dict(kind="scalar", code=OperandCode.FLOAT32, value=0.0)
    expect_bad_data_at_add(tester)


def expect_op_failed(tester, text):
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert text in str(error.value), str(error.value)
    error.value.__traceback__ = None


def test_prepare_errors():
    q = make("layer_norm")
    tester = qlstm_tester(q)
    tester._inputs[19]["scale"] = 0.0003  # not a power of two
    expect_op_failed(tester, "power of two")
    q2 = make("layer_norm")
    q2["ln_c"] = None
    expect_op_failed(qlstm_tester(q2), "layer normalization")
    q3 = make("basic")
    q3["w_hi"] = None
    expect_op_failed(qlstm_tester(q3), "CIFG")


def test_feature_level(feature_level_devices):
    assert required_feature_level(qlstm_tester(make("basic")), feature_level_devices) == 4
