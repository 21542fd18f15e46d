# SPDX-License-Identifier: Apache-2.0
"""The quantised CONV_2D / GROUPED_CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED kernels give
exactly the mock's defined result, element for element (not within one step): the exact integer
sum of the offset-subtracted products plus the bias, times the real multiplier
double(float(input_scale * filter_scale)) / output_scale, rounded half away from zero, plus the
output zero point, clamped to the activation's range.

Covered: FULLY_CONNECTED at every batch the direct path on the quantised weights takes (1 to 4)
and beyond it (the exact float GEMM), reductions of odd lengths and one past float's exact
integers, multipliers of exactly 0.5 (every odd sum is a tie); CONV_2D pointwise, padded 3x3,
strided, grouped and NCHW, per-tensor and per-channel, output maps larger than one tile of the
tiled kernel; DEPTHWISE_CONV_2D (the exact integer kernel of depthwise_quantized.h) with
multiplier 1 and 2, dilation, strides 1 and 2, channel counts off its 16- and 32-channel blocks and
past one 256-channel group, 1x1 maps and filters, zero points at the ends of the range, NCHW, and
the same bytes for one and two threads; constant weights and the same weights as model inputs
give identical bits.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import FuseCode, OperationCode

from .helpers import run_probe
from .test_conv_2d import PER_CHANNEL, QUANT_TYPES, build, conv_reference, conv_scalars
from .test_fully_connected import fc_tester

ACTIVATION_RANGES = {FuseCode.NONE: None, FuseCode.RELU: (0, None), FuseCode.RELU6: (0, 6)}


def multiplier_of(x_scale: float, w_scale: float, out_scale: float) -> np.float64:
    """conv::OutputMultipliers: the float product of the scales, divided in double."""
    return np.float64(np.float32(x_scale) * np.float32(w_scale)) / np.float64(np.float32(out_scale))


def round_half_away(x: np.ndarray) -> np.ndarray:
    """std::round, exactly (no x + 0.5 rounding error)."""
    truncated = np.trunc(x)
    return truncated + np.where(np.abs(x - truncated) >= 0.5, np.sign(x), 0.0)


def requantized(sums, multipliers, out_scale, out_zp, dtype, activation=FuseCode.NONE):
    info = np.iinfo(dtype)
    low, high = float(info.min), float(info.max)
    limits = ACTIVATION_RANGES[activation]
    if limits is not None:
        low = max(low, out_zp + round_half_away(np.float64(limits[0] / np.float32(out_scale))))
        if limits[1] is not None:
            high = min(
                high, out_zp + round_half_away(np.float64(limits[1] / np.float32(out_scale)))
            )
    scaled = round_half_away(sums.astype(np.float64) * multipliers) + out_zp
    return np.clip(scaled, low, high).astype(dtype)


def quantized_operands(rng, dtype, x_shape, w_shape):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, x_shape, dtype=dtype)
    w = rng.integers(info.min, info.max + 1, w_shape, dtype=dtype)
    return x, w


# ---- FULLY_CONNECTED ---------------------------------------------------------------------------


def fc_case(dtype_name, batch, k, units, *, ties=False, activation=FuseCode.NONE, seed=0):
    dtype, code = QUANT_TYPES[dtype_name]
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x, w = quantized_operands(rng, dtype, (batch, k), (units, k))
    # Zero points at the far end of the range: the largest offsets (up to 255).
    x_zp, w_zp = int(info.max), int(info.min)
    if ties:
        # Multiplier 0.5: every odd sum is a tie; offsets in [-3, 3] keep the halves in range.
        x_zp = w_zp = int(info.min) + 100
        x = (x_zp + rng.integers(-3, 4, x.shape)).astype(dtype)
        w = (w_zp + rng.integers(-3, 4, w.shape)).astype(dtype)
        x_scale, w_scale, out_scale = 0.5, 1.0, 1.0
    else:
        x_scale, w_scale = 0.04, 0.02
        out_scale = float(x_scale * w_scale * 200.0 * np.sqrt(k))
    b = rng.integers(-20 if ties else -3000, 20 if ties else 3000, units).astype(np.int32)
    sums = (x.astype(np.int64) - x_zp) @ (w.astype(np.int64) - w_zp).T + b
    out_zp = int(info.min) + 128
    expected = requantized(
        sums, multiplier_of(x_scale, w_scale, out_scale), out_scale, out_zp, dtype, activation
    )

    def run(weights_as_inputs):
        return fc_tester(
            x,
            w,
            b,
            activation,
            code,
            expected.shape,
            x_quant=(x_scale, x_zp),
            w_quant=(w_scale, w_zp),
            b_scale=float(np.float32(x_scale) * np.float32(w_scale)),
            out_quant=(out_scale, out_zp),
            weights_as_inputs=weights_as_inputs,
        ).run()[0]

    return run, expected


@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("batch", [1, 2, 4, 5, 17])
@pytest.mark.parametrize("k", [1, 7, 33, 1100])
def test_fully_connected_quantized_is_exact(dtype_name, batch, k):
    run, expected = fc_case(dtype_name, batch, k, 37, seed=batch * 100 + k)
    np.testing.assert_array_equal(run(False), expected)


@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("batch", [1, 3, 9])
def test_fully_connected_quantized_ties_round_half_away(dtype_name, batch):
    run, expected = fc_case(dtype_name, batch, 24, 40, ties=True, seed=batch)
    np.testing.assert_array_equal(run(False), expected)


@pytest.mark.parametrize("activation", [FuseCode.RELU, FuseCode.RELU6])
@pytest.mark.parametrize("batch", [2, 6])
def test_fully_connected_quantized_activation_is_exact(activation, batch):
    run, expected = fc_case("uint8", batch, 50, 19, activation=activation, seed=3)
    np.testing.assert_array_equal(run(False), expected)


@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("batch", [1, 4, 8])
def test_fully_connected_quantized_constant_and_input_weights_agree(dtype_name, batch):
    run, expected = fc_case(dtype_name, batch, 300, 33, seed=11)
    constant = run(False)
    np.testing.assert_array_equal(constant, run(True))
    np.testing.assert_array_equal(constant, expected)


def test_fully_connected_quantized_direct_and_gemm_rows_agree():
    # Rows 0-3 of a batch of 8 (the exact float GEMM) equal the same rows computed alone as a
    # batch of 4 (the direct path on the quantised weights).
    run8, expected8 = fc_case("uint8", 8, 700, 65, seed=5)
    result8 = run8(False)
    np.testing.assert_array_equal(result8, expected8)
    run4, expected4 = fc_case("uint8", 4, 700, 65, seed=5)
    np.testing.assert_array_equal(run4(False), expected4)


# ---- CONV_2D / GROUPED_CONV_2D -----------------------------------------------------------------

CONV_CASES = {
    # (x shape NHWC, filter shape, explicit pads (l, r, t, b), strides (w, h), groups)
    "pointwise_many_tiles": ((1, 40, 37, 8), (24, 1, 1, 8), (0, 0, 0, 0), (1, 1), None),
    "pointwise_batch2": ((2, 9, 11, 5), (7, 1, 1, 5), (0, 0, 0, 0), (1, 1), None),
    "3x3_padded": ((1, 30, 31, 3), (17, 3, 3, 3), (1, 1, 1, 1), (1, 1), None),
    "3x3_stride2": ((1, 33, 29, 6), (9, 3, 3, 6), (0, 1, 1, 0), (2, 2), None),
    "5x5_large_depth": ((1, 12, 12, 64), (20, 5, 5, 64), (2, 2, 2, 2), (1, 1), None),
    "grouped": ((1, 14, 15, 8), (12, 3, 3, 4), (1, 1, 1, 1), (1, 1), 2),
}


def conv_case(case, dtype_name, per_channel, *, nchw=False, ties=False, seed=0):
    dtype, code = QUANT_TYPES[dtype_name]
    info = np.iinfo(dtype)
    x_shape, w_shape, pads, strides, groups = CONV_CASES[case]
    rng = np.random.default_rng(seed)
    x = rng.integers(info.min, info.max + 1, x_shape, dtype=dtype)
    x_zp = int(info.max) - 3
    if ties:  # offsets in [-3, 3] with multipliers 0.5: odd sums are ties, halves in range
        x_zp = int(info.min) + 100
        x = (x_zp + rng.integers(-3, 4, x_shape)).astype(dtype)
    c_out = w_shape[0]
    if per_channel:
        w = rng.integers(-127, 128, w_shape, dtype=np.int8)
        if ties:
            w = rng.integers(-3, 4, w_shape).astype(np.int8)
        w_scales = (
            np.full(c_out, 1.0, np.float32)
            if ties
            else rng.uniform(0.002, 0.02, c_out).astype(np.float32)
        )
        w_offsets = w.astype(np.int64)
        channel_quant, w_quant, filter_code = (0, w_scales.tolist()), None, PER_CHANNEL
        b_scale = 0.0
    else:
        w = rng.integers(info.min, info.max + 1, w_shape, dtype=dtype)
        w_zp = int(info.min) + 3
        if ties:
            w = (w_zp + rng.integers(-3, 4, w_shape)).astype(dtype)
        w_scales = np.full(c_out, 1.0 if ties else 0.01, np.float32)
        w_offsets = w.astype(np.int64) - w_zp
        channel_quant, w_quant, filter_code = None, (float(w_scales[0]), w_zp), code
        b_scale = float(np.float32(0.5 if ties else 0.05) * w_scales[0])
    x_scale = 0.5 if ties else 0.05
    b = (
        rng.integers(-20, 20, c_out).astype(np.int32)
        if ties
        else rng.integers(-2000, 2000, c_out).astype(np.int32)
    )
    sums = conv_reference(
        x.astype(np.int64) - x_zp, w_offsets, b, pads, strides, (1, 1), groups or 1
    )
    taps = w_shape[1] * w_shape[2] * w_shape[3]
    out_scale = 1.0 if ties else float(x_scale * 0.01 * 150 * np.sqrt(taps))
    out_zp = int(info.min) + 120
    multipliers = np.array([multiplier_of(x_scale, s, out_scale) for s in w_scales])
    expected = requantized(sums, multipliers, out_scale, out_zp, dtype)
    op = OperationCode.GROUPED_CONV_2D if groups else OperationCode.CONV_2D
    scalars = conv_scalars(
        pads, strides, FuseCode.NONE, nchw if (nchw or groups) else None, None, groups
    )

    def run(weights_as_inputs):
        result = build(
            op,
            np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x,
            w,
            b,
            scalars,
            code,
            expected.transpose(0, 3, 1, 2).shape if nchw else expected.shape,
            x_quant=(x_scale, x_zp),
            w_quant=w_quant,
            channel_quant=channel_quant,
            b_scale=b_scale,
            out_quant=(out_scale, out_zp),
            filter_code=filter_code,
            weights_as_inputs=weights_as_inputs,
        ).run()[0]
        return result.transpose(0, 2, 3, 1) if nchw else result

    return run, expected


@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv_quantized_is_exact(case, dtype_name, per_channel):
    run, expected = conv_case(case, dtype_name, per_channel, seed=len(case))
    np.testing.assert_array_equal(run(False), expected)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("case", ["pointwise_many_tiles", "3x3_padded"])
def test_conv_quantized_ties_round_half_away(case, per_channel):
    run, expected = conv_case(case, "int8", per_channel, ties=True, seed=2)
    np.testing.assert_array_equal(run(False), expected)


@pytest.mark.parametrize("case", ["pointwise_batch2", "3x3_stride2", "grouped"])
def test_conv_quantized_nchw_is_exact(case):
    run, expected = conv_case(case, "uint8", True, nchw=True, seed=4)
    np.testing.assert_array_equal(run(False), expected)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("case", ["pointwise_many_tiles", "3x3_padded", "grouped"])
def test_conv_quantized_constant_and_input_filters_agree(case, per_channel):
    run, expected = conv_case(case, "uint8", per_channel, seed=9)
    constant = run(False)
    np.testing.assert_array_equal(constant, run(True))
    np.testing.assert_array_equal(constant, expected)


# ---- DEPTHWISE_CONV_2D --------------------------------------------------------------------------

DEPTHWISE_CASES = {
    # (x shape NHWC, kernel, multiplier, explicit pads (l, r, t, b), strides (w, h), dilations)
    "3x3_padded_c40": ((1, 17, 19, 40), (3, 3), 1, (1, 1, 1, 1), (1, 1), (1, 1)),
    "5x5_stride2": ((1, 15, 14, 24), (5, 5), 1, (2, 2, 2, 2), (2, 2), (1, 1)),
    "dilated": ((2, 11, 12, 7), (3, 3), 1, (0, 0, 0, 0), (1, 1), (2, 2)),
    "multiplier2": ((1, 8, 9, 5), (3, 3), 2, (1, 1, 1, 1), (1, 1), (1, 1)),
    # The integer kernel's edges: channels not a multiple of its 16- and 32-channel blocks, a 1x1
    # map, more than one 256-channel group, a 1x1 filter, a filter of no specialised width,
    # stride 2 with an odd map, dilation with multiplier 2 and unequal strides.
    "1x1_map_c17": ((1, 1, 1, 17), (3, 3), 1, (1, 1, 1, 1), (1, 1), (1, 1)),
    "3x3_stride2_c33": ((1, 13, 11, 33), (3, 3), 1, (0, 1, 1, 0), (2, 2), (1, 1)),
    "5x5_c300_groups": ((1, 7, 10, 300), (5, 5), 1, (2, 2, 2, 2), (1, 1), (1, 1)),
    "1x1_filter_c20": ((2, 5, 6, 20), (1, 1), 1, (0, 0, 0, 0), (1, 1), (1, 1)),
    "2x7_filter_c48": ((1, 9, 16, 48), (2, 7), 1, (3, 3, 1, 0), (1, 1), (1, 1)),
    "multiplier2_dilated_c9": ((1, 12, 13, 9), (3, 3), 2, (2, 2, 1, 1), (2, 1), (2, 1)),
}


def depthwise_case(case, dtype_name, per_channel, *, zero_points=None, nchw=False, seed=None):
    """(run(weights_as_inputs), expected NHWC) of a quantised DEPTHWISE_CONV_2D case; zero points
    (input, filter) default to near the ends of the range (offsets up to 253 and 254)."""
    from .test_depthwise_conv_2d import depthwise_reference

    dtype, code = QUANT_TYPES[dtype_name]
    info = np.iinfo(dtype)
    x_shape, kernel, multiplier, pads, strides, dilations = DEPTHWISE_CASES[case]
    rng = np.random.default_rng(len(case) if seed is None else seed)
    c_out = x_shape[3] * multiplier
    x = rng.integers(info.min, info.max + 1, x_shape, dtype=dtype)
    x_zp, w_zp = zero_points or (int(info.max) - 2, int(info.min) + 1)
    x_scale = 0.05
    w_shape = (1, *kernel, c_out)
    if per_channel:
        w = rng.integers(-127, 128, w_shape, dtype=np.int8)
        w_scales = rng.uniform(0.002, 0.02, c_out).astype(np.float32)
        w_offsets = w.astype(np.int64)
        w_quant, channel_quant, filter_code, b_scale = None, (3, w_scales.tolist()), PER_CHANNEL, 0
    else:
        w = rng.integers(info.min, info.max + 1, w_shape, dtype=dtype)
        w_scales = np.full(c_out, 0.01, np.float32)
        w_offsets = w.astype(np.int64) - w_zp
        w_quant, channel_quant, filter_code = (0.01, w_zp), None, code
        b_scale = float(np.float32(x_scale) * np.float32(0.01))
    b = rng.integers(-2000, 2000, c_out).astype(np.int32)
    sums = depthwise_reference(
        x.astype(np.int64) - x_zp, w_offsets, b, pads, strides, dilations, multiplier
    )
    out_scale = float(x_scale * 0.01 * 150 * np.sqrt(kernel[0] * kernel[1]))
    out_zp = int(info.min) + 120
    multipliers = np.array([multiplier_of(x_scale, s, out_scale) for s in w_scales])
    expected = requantized(sums, multipliers, out_scale, out_zp, dtype)
    scalars = conv_scalars(pads, strides, FuseCode.NONE, nchw, dilations, extra=multiplier)

    def run(weights_as_inputs):
        result = build(
            OperationCode.DEPTHWISE_CONV_2D,
            np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x,
            w,
            b,
            scalars,
            code,
            expected.transpose(0, 3, 1, 2).shape if nchw else expected.shape,
            x_quant=(x_scale, x_zp),
            w_quant=w_quant,
            channel_quant=channel_quant,
            b_scale=b_scale,
            out_quant=(out_scale, out_zp),
            filter_code=filter_code,
            weights_as_inputs=weights_as_inputs,
        ).run()[0]
        return result.transpose(0, 2, 3, 1) if nchw else result

    return run, expected


@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("case", list(DEPTHWISE_CASES))
def test_depthwise_quantized_is_exact(case, dtype_name, per_channel):
    run, expected = depthwise_case(case, dtype_name, per_channel)
    result = run(False)
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(run(True), result)  # the filter as a model input


@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("ends", ["min_max", "max_min", "min_min", "max_max"])
@pytest.mark.parametrize("case", ["3x3_padded_c40", "5x5_c300_groups", "multiplier2"])
def test_depthwise_quantized_zero_points_at_the_ends_are_exact(case, dtype_name, ends):
    """Zero points at the ends of the range: offsets of +-255 and padding that reads as the zero
    point (offset 0) beside input values far from it."""
    info = np.iinfo(QUANT_TYPES[dtype_name][0])
    pick = {"min": int(info.min), "max": int(info.max)}
    zero_points = tuple(pick[end] for end in ends.split("_"))
    run, expected = depthwise_case(case, dtype_name, False, zero_points=zero_points)
    np.testing.assert_array_equal(run(False), expected)


@pytest.mark.parametrize("case", ["3x3_stride2_c33", "multiplier2_dilated_c9", "5x5_c300_groups"])
def test_depthwise_quantized_nchw_is_exact(case):
    run, expected = depthwise_case(case, "uint8", True, nchw=True, seed=4)
    np.testing.assert_array_equal(run(False), expected)


DEPTHWISE_THREADS_PROBE = """
import json
import numpy as np
import mock_nnapi
from mock_nnapi import OperandCode, OperationCode
rng = np.random.default_rng(23)
def depthwise(x_shape, kernel, pads, stride):
    x = rng.integers(0, 256, x_shape, dtype=np.uint8)
    w = rng.integers(0, 256, (1, *kernel, x_shape[3]), dtype=np.uint8)
    b = rng.integers(-2000, 2000, x_shape[3]).astype(np.int32)
    n, h, wd, c = x_shape
    oh = (h + pads[2] + pads[3] - kernel[0]) // stride + 1
    ow = (wd + pads[0] + pads[1] - kernel[1]) // stride + 1
    model = mock_nnapi.Model()
    xi = model.add_operand(OperandCode.TENSOR_QUANT8_ASYMM, x.shape, 0.05, 131)
    wi = model.add_operand(OperandCode.TENSOR_QUANT8_ASYMM, w.shape, 0.01, 120)
    model.set_value(wi, w)
    bi = model.add_operand(OperandCode.TENSOR_INT32, b.shape, 0.0005, 0)
    model.set_value(bi, b)
    ins = [xi, wi, bi] + [model.add_scalar(OperandCode.INT32, v)
                          for v in (*pads, stride, stride, 1, 0)]
    out = model.add_operand(OperandCode.TENSOR_QUANT8_ASYMM, (n, oh, ow, c), 0.9, 128)
    model.add_operation(OperationCode.DEPTHWISE_CONV_2D, ins, [out])
    model.identify_inputs_and_outputs([xi], [out])
    model.finish()
    compilation = mock_nnapi.Compilation(model).finish()
    return mock_nnapi.Execution(compilation).compute([x])[0]
outputs = [
    depthwise((1, 30, 33, 300), (3, 3), (1, 1, 1, 1), 1),
    depthwise((2, 21, 20, 48), (5, 5), (2, 2, 2, 2), 2),
]
print(json.dumps([o.tobytes().hex() for o in outputs]))
"""


def _depthwise_probe(threads: str) -> list[str]:
    return run_probe(DEPTHWISE_THREADS_PROBE, OPENBLAS_NUM_THREADS=threads)


def test_depthwise_quantized_same_bits_for_one_and_two_threads():
    """The tiles (output rows by channel groups) are shared out over the pool: one thread and two
    give the same bytes."""
    assert _depthwise_probe("1") == _depthwise_probe("2")
