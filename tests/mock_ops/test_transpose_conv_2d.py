# SPDX-License-Identifier: Apache-2.0
"""TRANSPOSE_CONV_2D against an independent numpy reference.

The reference scatters every input pixel's products with each filter tap into an uncropped
output of size (in - 1) * stride + filter, then crops `head` pixels at the start and pads or
crops at the end to the NNAPI output size in * stride + filter - stride - head - tail. Covered:
fp32, fp16, QUANT8_ASYMM(_SIGNED) with per-tensor and per-channel filters, explicit padding
(including a negative tail), implicit SAME / VALID padding from an output-shape tensor with odd
sizes, non-square strides and kernels, strides larger than the kernel, NCHW, activations,
dynamic output shapes, the BAD_DATA validation rules and feature levels.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import FuseCode, OperandCode, OperationCode, PaddingCode

from .helpers import FUSED_ACTIVATIONS, expect_bad_data, expect_failed_when_prepared
from .op_tester import OpTester, assert_close
from .test_conv_2d import (
    I32,
    PER_CHANNEL,
    QUANT_TYPES,
    quantize,
    random_float,
    required_feature_level,
    to_nchw,
    to_nhwc,
)

TRANSPOSE = OperationCode.TRANSPOSE_CONV_2D


def transpose_conv_reference(x, w, b, pads, strides):
    """x NHWC, w [C_out, kH, kW, C_in]; pads (left, right, top, bottom); strides (w, h)."""
    n, height, width, _ = x.shape
    c_out, kh, kw, _ = w.shape
    left, right, top, bottom = pads
    sw, sh = strides
    full = np.zeros((n, (height - 1) * sh + kh, (width - 1) * sw + kw, c_out))
    for ky in range(kh):
        for kx in range(kw):
            full[:, ky : ky + (height - 1) * sh + 1 : sh, kx : kx + (width - 1) * sw + 1 : sw] += (
                np.einsum("nhwc,oc->nhwo", x.astype(np.float64), w[:, ky, kx, :].astype(np.float64))
            )
    out_h = height * sh + kh - sh - top - bottom
    out_w = width * sw + kw - sw - left - right
    out = np.zeros((n, out_h, out_w, c_out))
    rows = min(out_h, full.shape[1] - top)
    cols = min(out_w, full.shape[2] - left)
    out[:, :rows, :cols] = full[:, top : top + rows, left : left + cols]
    return out + np.asarray(b, np.float64)


def implicit_pads(padding, requested, kernel, strides):
    """(left, right, top, bottom) for SAME / VALID against the requested output (h, w)."""
    if padding == PaddingCode.VALID:
        return (0, 0, 0, 0)
    pads = []
    for out, k, s in ((requested[1], kernel[1], strides[0]), (requested[0], kernel[0], strides[1])):
        needed = (-(-out // s) - 1) * s + k
        head = (needed - out) // 2 if needed > out else 0
        pads += [head, needed - out - head]
    return tuple(pads)


def scalars_for(padding, strides, activation, nchw, requested=None):
    """Arguments after the bias: explicit (pads, strides, act, layout) or implicit (output
    shape, code, strides, act, layout). `requested` is the NHWC output shape for implicit."""
    if isinstance(padding, tuple):
        args = [("scalar", I32, p) for p in padding]
    else:
        shape = np.array(to_nchw(np.zeros(requested)).shape if nchw else requested, np.int32)
        args = [("tensor", shape), ("scalar", I32, int(padding))]
    args += [
        ("scalar", I32, strides[0]),
        ("scalar", I32, strides[1]),
        ("scalar", I32, int(activation)),
        ("scalar", OperandCode.BOOL, bool(nchw)),
    ]
    return args


def build(
    x,
    w,
    b,
    args,
    out_code,
    out_shape,
    *,
    x_quant=(0.0, 0),
    w_quant=(0.0, 0),
    channel_quant=None,
    b_scale=0.0,
    out_quant=(0.0, 0),
    filter_code=None,
    dynamic=False,
):
    tester = OpTester(TRANSPOSE).input(x, scale=x_quant[0], zero_point=x_quant[1])
    tester.constant(
        w, filter_code, scale=w_quant[0], zero_point=w_quant[1], channel_quant=channel_quant
    )
    tester.constant(b, scale=b_scale)
    for arg in args:
        if arg[0] == "tensor":
            tester.constant(arg[1])
        else:
            tester.scalar(arg[1], arg[2])
    tester.output(out_code, out_shape, scale=out_quant[0], zero_point=out_quant[1])
    return tester.dynamic_outputs(dynamic)


def run_float(
    x, w, b, padding, strides, activation=FuseCode.NONE, nchw=False, requested=None, dynamic=False
):
    if isinstance(padding, tuple):
        pads = padding
    else:
        pads = implicit_pads(padding, requested[1:3], w.shape[1:3], strides)
    expected = FUSED_ACTIVATIONS[activation](transpose_conv_reference(x, w, b, pads, strides))
    result = build(
        to_nchw(x) if nchw else x,
        w,
        b,
        scalars_for(padding, strides, activation, nchw, requested),
        OpTester.default_code(x),
        to_nchw(expected).shape if nchw else expected.shape,
        dynamic=dynamic,
    ).run()[0]
    return (to_nhwc(result) if nchw else result), expected


# (input NHWC, filter [C_out, kH, kW, C_in], padding or requested output (h, w), strides (w, h))
EXPLICIT_CASES = {
    "stride1": ((1, 4, 5, 2), (3, 3, 3, 2), (1, 1, 1, 1), (1, 1)),
    "stride2_asym": ((2, 3, 4, 3), (2, 3, 2, 3), (0, 1, 1, 0), (2, 2)),
    "stride_wh": ((1, 3, 3, 2), (2, 2, 3, 2), (1, 0, 0, 1), (3, 2)),
    "stride_gt_kernel": ((1, 3, 2, 2), (2, 2, 2, 2), (0, 0, 0, 0), (3, 4)),
    "negative_tail": ((1, 3, 3, 2), (2, 3, 3, 2), (1, -1, 1, -2), (2, 2)),
}


@pytest.mark.parametrize("nchw", [False, True], ids=["nhwc", "nchw"])
@pytest.mark.parametrize("case", list(EXPLICIT_CASES))
def test_transpose_conv_explicit_float32(case, nchw):
    x_shape, w_shape, pads, strides = EXPLICIT_CASES[case]
    rng = np.random.default_rng(len(case))
    x = random_float(rng, x_shape)
    w = random_float(rng, w_shape)
    b = random_float(rng, w_shape[0])
    actual, expected = run_float(x, w, b, pads, strides, nchw=nchw)
    assert_close(actual, expected)


IMPLICIT_CASES = {
    "same_stride2_even": ((1, 3, 4, 2), (2, 3, 3, 2), PaddingCode.SAME, (2, 2), (6, 8)),
    "same_stride2_odd": ((1, 3, 4, 2), (2, 3, 3, 2), PaddingCode.SAME, (2, 2), (5, 7)),
    "same_kernel_lt_stride": ((1, 2, 3, 1), (2, 2, 1, 1), PaddingCode.SAME, (3, 3), (6, 8)),
    "valid_stride_wh": ((2, 3, 3, 2), (3, 2, 3, 2), PaddingCode.VALID, (1, 2), (6, 5)),
}


@pytest.mark.parametrize("nchw", [False, True], ids=["nhwc", "nchw"])
@pytest.mark.parametrize("case", list(IMPLICIT_CASES))
def test_transpose_conv_implicit_float32(case, nchw):
    x_shape, w_shape, padding, strides, requested = IMPLICIT_CASES[case]
    rng = np.random.default_rng(len(case) + 100)
    x = random_float(rng, x_shape)
    w = random_float(rng, w_shape)
    b = random_float(rng, w_shape[0])
    requested_nhwc = (x_shape[0], *requested, w_shape[0])
    actual, expected = run_float(x, w, b, padding, strides, nchw=nchw, requested=requested_nhwc)
    if padding == PaddingCode.SAME:
        assert expected.shape[1:3] == requested
    assert_close(actual, expected)


@pytest.mark.parametrize("activation", list(FUSED_ACTIVATIONS))
def test_transpose_conv_activations(activation):
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, (1, 3, 3, 3)).astype(np.float32)
    w = random_float(rng, (2, 3, 3, 3))
    b = random_float(rng, 2)
    actual, expected = run_float(x, w, b, (1, 0, 0, 1), (2, 1), activation)
    assert_close(actual, expected)


def test_transpose_conv_float16():
    rng = np.random.default_rng(2)
    x = random_float(rng, (1, 3, 4, 3), np.float16)
    w = random_float(rng, (2, 3, 3, 3), np.float16)
    b = random_float(rng, 2, np.float16)
    actual, expected = run_float(
        x, w, b, PaddingCode.SAME, (2, 2), nchw=True, requested=(1, 6, 8, 2)
    )
    assert_close(actual, expected, "float16")


def test_transpose_conv_dynamic_output_shape():
    rng = np.random.default_rng(3)
    x = random_float(rng, (1, 2, 3, 2))
    w = random_float(rng, (3, 2, 2, 2))
    b = random_float(rng, 3)
    actual, expected = run_float(
        x, w, b, PaddingCode.SAME, (2, 3), requested=(1, 6, 6, 3), dynamic=True
    )
    assert actual.shape == (1, 6, 6, 3)
    assert_close(actual, expected)


@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_transpose_conv_quantized(dtype_name, per_channel):
    dtype, code = QUANT_TYPES[dtype_name]
    info = np.iinfo(dtype)
    rng = np.random.default_rng(4)
    x = rng.integers(info.min, info.max + 1, (1, 3, 4, 3), dtype=dtype)
    x_scale, x_zp = 0.05, int(info.min) + 110
    c_out = 4
    if per_channel:
        w = rng.integers(-127, 128, (c_out, 3, 2, 3), dtype=np.int8)
        w_scales = rng.uniform(0.005, 0.02, c_out).astype(np.float32)
        w_real = w.astype(np.float64) * w_scales.astype(np.float64)[:, None, None, None]
        extra = dict(filter_code=PER_CHANNEL, channel_quant=(0, w_scales.tolist()))
        bias_scales = np.float32(x_scale) * w_scales
        b_scale = 0.0
    else:
        w = rng.integers(info.min, info.max + 1, (c_out, 3, 2, 3), dtype=dtype)
        w_scale, w_zp = 0.01, int(info.min) + 125
        w_real = (w.astype(np.float64) - w_zp) * w_scale
        extra = dict(w_quant=(w_scale, w_zp))
        b_scale = float(np.float32(x_scale) * np.float32(w_scale))
        bias_scales = np.full(c_out, b_scale, np.float32)
    b = rng.integers(-1000, 1000, c_out).astype(np.int32)
    pads, strides = (1, 0, 0, 1), (2, 2)
    real = transpose_conv_reference(
        (x.astype(np.float64) - x_zp) * x_scale,
        w_real,
        b * bias_scales.astype(np.float64),
        pads,
        strides,
    )
    out_scale = float(np.percentile(np.abs(real), 80) / 100)
    out_zp = int(info.min) + 128
    expected = quantize(real, out_scale, out_zp, dtype)
    assert (expected == info.min).any() and (expected == info.max).any()
    result = build(
        x,
        w,
        b,
        scalars_for(pads, strides, FuseCode.NONE, False),
        code,
        expected.shape,
        x_quant=(x_scale, x_zp),
        b_scale=b_scale,
        out_quant=(out_scale, out_zp),
        **extra,
    ).run()[0]
    assert_close(result, expected)


# ---- Validation ---------------------------------------------------------------------------


def float_tester(args, w_shape=(2, 3, 3, 2), b=None, out_shape=(1, 8, 8, 2)):
    b = np.zeros(w_shape[0], np.float32) if b is None else b
    return build(
        np.zeros((1, 4, 4, 2), np.float32),
        np.zeros(w_shape, np.float32),
        b,
        args,
        OperandCode.TENSOR_FLOAT32,
        out_shape,
    )


def test_transpose_conv_accepts_both_signatures():
    float_tester(scalars_for((1, 0, 1, 0), (2, 2), 0, False)).build()
    float_tester(scalars_for(PaddingCode.SAME, (2, 2), 0, False, (1, 8, 8, 2))).build()


@pytest.mark.parametrize("count", [10, 12, 8])
def test_transpose_conv_rejects_input_counts(count):
    args = scalars_for((1, 0, 1, 0), (2, 2), 0, False)
    args = args[: count - 3] if count < 11 else [*args, ("scalar", I32, 0)]
    assert "inputs" in expect_bad_data(float_tester(args))


def test_transpose_conv_rejects_bad_arguments():
    explicit = scalars_for((1, 0, 1, 0), (2, 2), 0, False)
    implicit = scalars_for(PaddingCode.SAME, (2, 2), 0, False, (1, 8, 8, 2))
    # The layout flag must be a BOOL, the output shape a TENSOR_INT32 of 4 elements.
    expect_bad_data(float_tester([*explicit[:-1], ("scalar", I32, 0)]))
    expect_bad_data(float_tester([("tensor", np.array([1, 8, 8, 2], np.float32)), *implicit[1:]]))
    expect_bad_data(float_tester([("tensor", np.array([8, 8], np.int32)), *implicit[1:]]))
    # Negative left padding (right may be negative), zero stride, bad padding code.
    expect_failed_when_prepared(float_tester(scalars_for((-1, 0, 0, 0), (2, 2), 0, False)))
    float_tester(scalars_for((0, -1, 0, -1), (2, 2), 0, False), out_shape=(1, 10, 10, 2)).build()
    expect_failed_when_prepared(float_tester(scalars_for((0, 0, 0, 0), (2, 0), 0, False)))
    expect_failed_when_prepared(float_tester([*implicit[:1], ("scalar", I32, 0), *implicit[2:]]))
    # Bias type and length, filter depth.
    expect_bad_data(float_tester(explicit, b=np.zeros(2, np.float16)))
    expect_bad_data(float_tester(explicit, b=np.zeros(3, np.float32)))
    expect_failed_when_prepared(float_tester(explicit, w_shape=(2, 3, 3, 3)))


def test_transpose_conv_per_channel_needs_channel_dim_0():
    def tester(channel_dim):
        return build(
            np.zeros((1, 4, 4, 2), np.uint8),
            np.zeros((3, 3, 3, 2), np.int8),
            np.zeros(3, np.int32),
            scalars_for((1, 0, 1, 0), (2, 2), 0, False),
            OperandCode.TENSOR_QUANT8_ASYMM,
            (1, 8, 8, 3),
            x_quant=(0.5, 0),
            out_quant=(1.0, 0),
            filter_code=PER_CHANNEL,
            channel_quant=(channel_dim, [0.1] * (3 if channel_dim == 0 else 2)),
        )

    tester(0).build()
    expect_bad_data(tester(3))


@pytest.mark.parametrize("dtype,level", [(np.float32, 3), (np.uint8, 3), (np.int8, 4)])
def test_transpose_conv_feature_levels(feature_level_devices, dtype, level):
    quantized = dtype != np.float32
    code = OpTester.default_code(np.zeros(1, dtype))
    tester = build(
        np.zeros((1, 4, 4, 2), dtype),
        np.zeros((2, 3, 3, 2), dtype),
        np.zeros(2, np.int32 if quantized else dtype),
        scalars_for((1, 0, 1, 0), (2, 2), 0, False),
        code,
        (1, 8, 8, 2),
        x_quant=(0.5, 0) if quantized else (0.0, 0),
        w_quant=(0.5, 0) if quantized else (0.0, 0),
        b_scale=0.25 if quantized else 0.0,
        out_quant=(1.0, 0) if quantized else (0.0, 0),
    )
    assert required_feature_level(tester, feature_level_devices) == level
