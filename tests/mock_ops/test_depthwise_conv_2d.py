# SPDX-License-Identifier: Apache-2.0
"""DEPTHWISE_CONV_2D against an independent numpy reference.

The reference pads the NHWC input, repeats each input channel depth_multiplier times and sums the
elementwise products of every (dilated, strided) window with its filter tap. Covered: fp32, fp16,
QUANT8_ASYMM(_SIGNED) with per-tensor and per-channel (channelDim 3) filters, every valid input
count (8, 9, 11, 12, 14), implicit and explicit padding, non-square strides / kernels /
dilations, NCHW, depth multipliers, activations, channel counts off the kernel's block size,
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
    build,
    conv_scalars,
    quantize,
    random_float,
    required_feature_level,
    resolve_pads,
    to_nchw,
    to_nhwc,
)

DEPTHWISE = OperationCode.DEPTHWISE_CONV_2D


def depthwise_reference(x, w, b, pads, strides, dilations=(1, 1), multiplier=1):
    """NHWC depthwise convolution in float64; w is [1, kH, kW, C_in * multiplier]."""
    n, height, width, _ = x.shape
    _, kh, kw, c_out = w.shape
    left, right, top, bottom = pads
    sw, sh = strides
    dw, dh = dilations
    padded = np.pad(x.astype(np.float64), ((0, 0), (top, bottom), (left, right), (0, 0)))
    out_h = (height + top + bottom - ((kh - 1) * dh + 1)) // sh + 1
    out_w = (width + left + right - ((kw - 1) * dw + 1)) // sw + 1
    out = np.zeros((n, out_h, out_w, c_out))
    for ky in range(kh):
        for kx in range(kw):
            window = padded[
                :,
                ky * dh : ky * dh + (out_h - 1) * sh + 1 : sh,
                kx * dw : kx * dw + (out_w - 1) * sw + 1 : sw,
                :,
            ]
            out += np.repeat(window, multiplier, axis=-1) * w[0, ky, kx, :].astype(np.float64)
    return out + np.asarray(b, np.float64)


def run_float(
    x,
    w,
    b,
    padding,
    strides=(1, 1),
    dilations=None,
    activation=FuseCode.NONE,
    nchw=None,
    multiplier=1,
    dynamic=False,
):
    pads = resolve_pads(padding, x.shape, w.shape[1:3], strides, dilations or (1, 1))
    expected = FUSED_ACTIVATIONS[activation](
        depthwise_reference(x, w, b, pads, strides, dilations or (1, 1), multiplier)
    )
    scalars = conv_scalars(padding, strides, activation, nchw, dilations, extra=multiplier)
    result = build(
        DEPTHWISE,
        to_nchw(x) if nchw else x,
        w,
        b,
        scalars,
        OpTester.default_code(x),
        to_nchw(expected).shape if nchw else expected.shape,
        dynamic=dynamic,
    ).run()[0]
    return (to_nhwc(result) if nchw else result), expected


# (input NHWC, kernel (kH, kW), multiplier, padding, strides (w, h), dilations (w, h), NCHW)
FLOAT_CASES = {
    "same_3x3_c20": ((1, 6, 5, 20), (3, 3), 1, PaddingCode.SAME, (1, 1), None, None),
    "same_odd_stride2": ((2, 7, 9, 3), (3, 3), 1, PaddingCode.SAME, (2, 2), None, None),
    "valid_stride_wh": ((1, 9, 8, 4), (2, 3), 1, PaddingCode.VALID, (1, 3), None, False),
    "explicit_asym": ((1, 5, 6, 2), (3, 2), 2, (1, 0, 2, 1), (1, 1), None, None),
    "stride_gt_kernel": ((1, 10, 9, 3), (2, 2), 1, (1, 1, 0, 1), (3, 4), None, None),
    "multiplier3_nchw": ((1, 5, 5, 2), (3, 3), 3, PaddingCode.SAME, (2, 1), None, True),
    "dilation_implicit": ((1, 8, 7, 17), (3, 3), 1, PaddingCode.SAME, (1, 1), (2, 3), False),
    "dilation_explicit_nchw": ((1, 9, 8, 2), (2, 3), 2, (2, 1, 0, 2), (2, 1), (1, 2), True),
    "mobilenet_like": ((1, 16, 16, 32), (3, 3), 1, PaddingCode.SAME, (1, 1), None, None),
    # Rows wide enough for the four-pixel kernel (3x3 and 5x5, strides 1 and 2), channel tails.
    "wide_3x3_s2_c13": ((1, 9, 19, 13), (3, 3), 1, PaddingCode.SAME, (2, 2), None, None),
    "wide_5x5_s1_c24": ((2, 7, 15, 24), (5, 5), 1, PaddingCode.SAME, (1, 1), None, None),
    "wide_5x5_s2_c20": ((1, 11, 22, 20), (5, 5), 1, (2, 1, 2, 2), (2, 1), None, False),
}


@pytest.mark.parametrize("case", list(FLOAT_CASES))
def test_depthwise_float32(case):
    x_shape, kernel, multiplier, padding, strides, dilations, nchw = FLOAT_CASES[case]
    rng = np.random.default_rng(len(case))
    c_out = x_shape[3] * multiplier
    x = random_float(rng, x_shape)
    w = random_float(rng, (1, *kernel, c_out))
    b = random_float(rng, c_out)
    actual, expected = run_float(
        x, w, b, padding, strides, dilations, nchw=nchw, multiplier=multiplier
    )
    assert_close(actual, expected)


@pytest.mark.parametrize("multiplier", [1, 2])
@pytest.mark.parametrize("activation", list(FUSED_ACTIVATIONS))
def test_depthwise_float32_activations(activation, multiplier):
    rng = np.random.default_rng(1)
    x = rng.uniform(-3, 3, (1, 4, 4, 40 // multiplier)).astype(np.float32)
    w = random_float(rng, (1, 3, 3, 40))
    b = random_float(rng, 40)
    actual, expected = run_float(
        x, w, b, PaddingCode.SAME, activation=activation, multiplier=multiplier
    )
    assert_close(actual, expected)


@pytest.mark.parametrize("nchw", [None, True])
def test_depthwise_float16(nchw):
    rng = np.random.default_rng(2)
    x = random_float(rng, (1, 6, 5, 18), np.float16)
    w = random_float(rng, (1, 3, 3, 18), np.float16)
    b = random_float(rng, 18, np.float16)
    actual, expected = run_float(x, w, b, PaddingCode.SAME, (1, 2), nchw=nchw)
    assert_close(actual, expected, "float16")


def test_depthwise_dynamic_output_shape():
    rng = np.random.default_rng(3)
    x = random_float(rng, (2, 7, 6, 3))
    w = random_float(rng, (1, 2, 3, 6))
    b = random_float(rng, 6)
    actual, expected = run_float(x, w, b, PaddingCode.SAME, (3, 2), multiplier=2, dynamic=True)
    assert actual.shape == (2, 4, 2, 6)
    assert_close(actual, expected)


def run_quant(
    dtype_name,
    x_shape,
    kernel,
    multiplier,
    padding,
    strides=(1, 1),
    dilations=None,
    activation=FuseCode.NONE,
    nchw=None,
    per_channel=False,
    out_scale=None,
    seed=0,
):
    dtype, code = QUANT_TYPES[dtype_name]
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    c_out = x_shape[3] * multiplier
    x = rng.integers(info.min, info.max + 1, x_shape, dtype=dtype)
    x_scale, x_zp = 0.05, int(info.min) + 90
    w_shape = (1, *kernel, c_out)
    if per_channel:
        w = rng.integers(-127, 128, w_shape, dtype=np.int8)
        w_scales = rng.uniform(0.002, 0.02, c_out).astype(np.float32)
        w_real = w.astype(np.float64) * w_scales.astype(np.float64)
        w_quant, channel_quant, filter_code, b_scale = (
            None,
            (3, w_scales.tolist()),
            PER_CHANNEL,
            0.0,
        )
        bias_scales = np.float32(x_scale) * w_scales
    else:
        w = rng.integers(info.min, info.max + 1, w_shape, dtype=dtype)
        w_scale, w_zp = 0.01, int(info.min) + 131
        w_real = (w.astype(np.float64) - w_zp) * w_scale
        w_quant, channel_quant, filter_code = (w_scale, w_zp), None, code
        b_scale = float(np.float32(x_scale) * np.float32(w_scale))
        bias_scales = np.full(c_out, b_scale, np.float32)
    b = rng.integers(-500, 500, c_out).astype(np.int32)
    x_real = (x.astype(np.float64) - x_zp) * x_scale
    pads = resolve_pads(padding, x_shape, kernel, strides, dilations or (1, 1))
    real = FUSED_ACTIVATIONS[activation](
        depthwise_reference(
            x_real,
            w_real,
            b * bias_scales.astype(np.float64),
            pads,
            strides,
            dilations or (1, 1),
            multiplier,
        )
    )
    out_scale = out_scale or float(np.percentile(np.abs(real), 80) / 100)
    out_zp = int(info.min) + 128 if dtype == np.uint8 else 5
    expected = quantize(real, out_scale, out_zp, dtype)
    scalars = conv_scalars(padding, strides, activation, nchw, dilations, extra=multiplier)
    result = build(
        DEPTHWISE,
        to_nchw(x) if nchw else x,
        w,
        b,
        scalars,
        code,
        to_nchw(expected).shape if nchw else expected.shape,
        x_quant=(x_scale, x_zp),
        w_quant=w_quant,
        channel_quant=channel_quant,
        b_scale=b_scale,
        out_quant=(out_scale, out_zp),
        filter_code=filter_code,
    ).run()[0]
    return (to_nhwc(result) if nchw else result), expected


QUANT_CASES = {
    "same_c20": ((1, 5, 6, 20), (3, 3), 1, PaddingCode.SAME, (1, 1), None, None),
    "multiplier2_nchw": ((1, 6, 5, 3), (2, 3), 2, (1, 0, 1, 1), (2, 1), None, True),
    "dilation": ((2, 7, 7, 4), (3, 3), 1, PaddingCode.VALID, (1, 2), (2, 1), False),
}


@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("case", list(QUANT_CASES))
def test_depthwise_quantized(dtype_name, per_channel, case):
    x_shape, kernel, multiplier, padding, strides, dilations, nchw = QUANT_CASES[case]
    actual, expected = run_quant(
        dtype_name,
        x_shape,
        kernel,
        multiplier,
        padding,
        strides,
        dilations,
        nchw=nchw,
        per_channel=per_channel,
        seed=len(case),
    )
    info = np.iinfo(expected.dtype)
    assert (expected == info.min).any() and (expected == info.max).any(), "no saturation"
    assert_close(actual, expected)


@pytest.mark.parametrize("activation", [FuseCode.RELU, FuseCode.RELU1, FuseCode.RELU6])
def test_depthwise_quantized_activations(activation):
    actual, expected = run_quant(
        "int8",
        (1, 4, 5, 6),
        (3, 3),
        1,
        PaddingCode.SAME,
        activation=activation,
        per_channel=True,
        out_scale=0.04,
        seed=4,
    )
    assert_close(actual, expected)


# ---- Validation ---------------------------------------------------------------------------


def float_tester(
    scalars,
    w_shape=(1, 3, 3, 4),
    b_len=4,
    x_shape=(1, 4, 4, 2),
    out=(1, 4, 4, 4),
    bias_dtype=np.float32,
):
    return build(
        DEPTHWISE,
        np.zeros(x_shape, np.float32),
        np.zeros(w_shape, np.float32),
        np.zeros(b_len, bias_dtype),
        scalars,
        OperandCode.TENSOR_FLOAT32,
        out,
    )


@pytest.mark.parametrize(
    "scalars",
    [
        conv_scalars(PaddingCode.SAME, (1, 1), 0, extra=2),  # 8
        conv_scalars(PaddingCode.SAME, (1, 1), 0, False, extra=2),  # 9
        conv_scalars(PaddingCode.SAME, (1, 1), 0, False, (1, 1), extra=2),  # 11 implicit
        conv_scalars((1, 1, 1, 1), (1, 1), 0, extra=2),  # 11 explicit
        conv_scalars((1, 1, 1, 1), (1, 1), 0, True, extra=2),  # 12
        conv_scalars((1, 1, 1, 1), (1, 1), 0, False, (1, 1), extra=2),  # 14
    ],
    ids=["8", "9", "11_implicit", "11_explicit", "12", "14"],
)
def test_depthwise_accepts_every_valid_count(scalars):
    nchw = len(scalars) in (9, 12) and scalars[-1][1] is True
    x_shape = (1, 2, 4, 4) if nchw else (1, 4, 4, 2)
    float_tester(scalars, x_shape=x_shape, out=(1, 4, 4, 4)).build()


@pytest.mark.parametrize(
    "scalars",
    [
        [*conv_scalars(PaddingCode.SAME, (1, 1), 0, False, extra=2), (I32, 1)],  # 10
        [*conv_scalars((1, 1, 1, 1), (1, 1), 0, False, extra=2), (I32, 1)],  # 13
        conv_scalars(PaddingCode.SAME, (1, 1), 0, extra=2)[:-1],  # 7
    ],
    ids=["10", "13", "7"],
)
def test_depthwise_rejects_input_counts(scalars):
    assert "inputs" in expect_bad_data(float_tester(scalars))


def test_depthwise_rejects_bad_shapes_and_values():
    scalars = conv_scalars(PaddingCode.SAME, (1, 1), 0, extra=2)
    # C_in * multiplier != C_out.
    expect_failed_when_prepared(float_tester(conv_scalars(PaddingCode.SAME, (1, 1), 0, extra=3)))
    # Filter's first dimension must be 1.
    expect_bad_data(float_tester(scalars, w_shape=(2, 3, 3, 4)))
    # Bias length and type.
    expect_bad_data(float_tester(scalars, b_len=3))
    expect_bad_data(float_tester(scalars, bias_dtype=np.float16))
    # Multiplier 0, stride 0, negative padding.
    expect_failed_when_prepared(float_tester(conv_scalars(PaddingCode.SAME, (1, 1), 0, extra=0)))
    expect_failed_when_prepared(float_tester(conv_scalars(PaddingCode.SAME, (1, 0), 0, extra=2)))
    expect_failed_when_prepared(float_tester(conv_scalars((0, 0, -1, 0), (1, 1), 0, extra=2)))


def test_depthwise_per_channel_needs_channel_dim_3():
    def tester(channel_dim):
        scales = [0.1] * 4 if channel_dim == 3 else [0.1]
        return build(
            DEPTHWISE,
            np.zeros((1, 4, 4, 2), np.uint8),
            np.zeros((1, 3, 3, 4), np.int8),
            np.zeros(4, np.int32),
            conv_scalars(PaddingCode.SAME, (1, 1), 0, extra=2),
            OperandCode.TENSOR_QUANT8_ASYMM,
            (1, 4, 4, 4),
            x_quant=(0.5, 0),
            out_quant=(1.0, 0),
            filter_code=PER_CHANNEL,
            channel_quant=(channel_dim, scales),
        )

    tester(3).build()
    expect_bad_data(tester(0))


@pytest.mark.parametrize(
    "scalars,code,level",
    [
        (conv_scalars(PaddingCode.SAME, (1, 1), 0, extra=2), OperandCode.TENSOR_FLOAT32, 1),
        (conv_scalars((1, 1, 1, 1), (1, 1), 0, extra=2), OperandCode.TENSOR_FLOAT32, 1),
        (conv_scalars(PaddingCode.SAME, (1, 1), 0, False, extra=2), OperandCode.TENSOR_FLOAT32, 3),
        (conv_scalars(PaddingCode.SAME, (1, 1), 0, extra=2), OperandCode.TENSOR_FLOAT16, 3),
        (conv_scalars(PaddingCode.SAME, (1, 1), 0, extra=2), OperandCode.TENSOR_QUANT8_ASYMM, 1),
        (
            conv_scalars(PaddingCode.SAME, (1, 1), 0, extra=2),
            OperandCode.TENSOR_QUANT8_ASYMM_SIGNED,
            4,
        ),
    ],
)
def test_depthwise_feature_levels(feature_level_devices, scalars, code, level):
    dtype = {
        OperandCode.TENSOR_FLOAT32: np.float32,
        OperandCode.TENSOR_FLOAT16: np.float16,
        OperandCode.TENSOR_QUANT8_ASYMM: np.uint8,
        OperandCode.TENSOR_QUANT8_ASYMM_SIGNED: np.int8,
    }[code]
    quantized = dtype in (np.uint8, np.int8)
    tester = build(
        DEPTHWISE,
        np.zeros((1, 4, 4, 2), dtype),
        np.zeros((1, 3, 3, 4), dtype),
        np.zeros(4, np.int32 if quantized else dtype),
        scalars,
        code,
        (1, 4, 4, 4),
        x_quant=(0.5, 0) if quantized else None,
        w_quant=(0.5, 0) if quantized else None,
        b_scale=0.25 if quantized else 0.0,
        out_quant=(1.0, 0) if quantized else (0.0, 0),
    )
    assert required_feature_level(tester, feature_level_devices) == level


def depthwise_float32_in_order(x, w, b, pads, strides, low=-np.inf, high=np.inf):
    """NHWC depthwise convolution (multiplier 1) in float32, each output accumulated in the
    mock's order: the bias, then every in-bounds tap by filter row, then column."""
    n, height, width, channels = x.shape
    _, kh, kw, _ = w.shape
    left, right, top, bottom = pads
    sw, sh = strides
    out_h = (height + top + bottom - kh) // sh + 1
    out_w = (width + left + right - kw) // sw + 1
    out = np.empty((n, out_h, out_w, channels), np.float32)
    for oy in range(out_h):
        for ox in range(out_w):
            acc = np.broadcast_to(b.astype(np.float32), (n, channels)).copy()
            for ky in range(kh):
                iy = oy * sh - top + ky
                if not 0 <= iy < height:
                    continue
                for kx in range(kw):
                    ix = ox * sw - left + kx
                    if 0 <= ix < width:
                        acc = acc + x[:, iy, ix, :] * w[0, ky, kx, :]
            out[:, oy, ox, :] = np.minimum(np.maximum(acc, np.float32(low)), np.float32(high))
    return out


@pytest.mark.parametrize(
    ("x_shape", "kernel", "pads", "strides", "activation"),
    [
        ((1, 8, 21, 16), (3, 3), (1, 1, 1, 1), (1, 1), FuseCode.NONE),
        ((1, 9, 23, 40), (3, 3), (0, 1, 0, 1), (2, 2), FuseCode.RELU6),
        ((1, 10, 17, 12), (5, 5), (2, 2, 2, 2), (1, 1), FuseCode.RELU),
        ((2, 11, 26, 9), (5, 5), (1, 2, 2, 1), (2, 2), FuseCode.NONE),
        ((1, 7, 19, 56), (5, 5), (2, 2, 2, 2), (1, 1), FuseCode.RELU6),  # 16-lane blocks, 8 left
    ],
)
def test_depthwise_float32_is_exact_in_accumulation_order(
    x_shape, kernel, pads, strides, activation
):
    # The fp32 kernels (the four-pixel one for interior columns, the per-pixel one at the edges)
    # add the bias and then each tap in one fixed order: the results are exactly those of that
    # order in float32, whichever kernel computed a pixel and whatever the instruction set.
    rng = np.random.default_rng(sum(x_shape))
    x = random_float(rng, x_shape)
    w = random_float(rng, (1, *kernel, x_shape[3]))
    b = random_float(rng, x_shape[3])
    low, high = {FuseCode.NONE: (-np.inf, np.inf), FuseCode.RELU: (0, np.inf)}.get(
        activation, (0, 6)
    )
    expected = depthwise_float32_in_order(x, w, b, pads, strides, low, high)
    scalars = conv_scalars(pads, strides, activation, None, None, extra=1)
    result = build(DEPTHWISE, x, w, b, scalars, OpTester.default_code(x), expected.shape).run()[0]
    np.testing.assert_array_equal(result, expected)
