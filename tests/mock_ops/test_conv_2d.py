# SPDX-License-Identifier: Apache-2.0
"""CONV_2D and GROUPED_CONV_2D against an independent numpy reference.

The reference pads the NHWC input explicitly and sums np.einsum products over the (dilated,
strided) windows of every filter tap. Covered: fp32, fp16, QUANT8_ASYMM(_SIGNED) with per-tensor
and per-channel filters, explicit and implicit (SAME / VALID) padding with odd sizes, strides
larger than the kernel, non-square strides / kernels / dilations, the NCHW layout flag, fused
activations, groups, dynamic output shapes, concurrent executions, the BAD_DATA validation
rules (input counts, operand types, bias rules, argument values) and the feature level of each
combination (through a device profile with one device per feature level).
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import FuseCode, NnapiError, OperandCode, OperationCode, PaddingCode, ResultCode

from .helpers import FUSED_ACTIVATIONS, expect_bad_data, expect_failed_when_prepared
from .op_tester import OpTester, assert_close

I32 = OperandCode.INT32
PER_CHANNEL = OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL


def same_padding(size: int, stride: int, kernel: int, dilation: int = 1) -> tuple[int, int]:
    """(head, tail) of SAME padding: output ceil(size / stride), extra padding at the tail."""
    out = -(-size // stride)
    effective = (kernel - 1) * dilation + 1
    total = max(0, (out - 1) * stride + effective - size)
    return total // 2, total - total // 2


def resolve_pads(padding, x_shape, kernel, strides, dilations=(1, 1)):
    """(left, right, top, bottom) for explicit pads or a PaddingCode; x_shape is NHWC."""
    if not isinstance(padding, PaddingCode):
        return tuple(padding)
    if padding == PaddingCode.VALID:
        return (0, 0, 0, 0)
    left, right = same_padding(x_shape[2], strides[0], kernel[1], dilations[0])
    top, bottom = same_padding(x_shape[1], strides[1], kernel[0], dilations[1])
    return (left, right, top, bottom)


def conv_reference(x, w, b, pads, strides, dilations=(1, 1), groups=1):
    """NHWC convolution in float64. w is [C_out, kH, kW, C_in / groups]; pads (l, r, t, b);
    strides and dilations are (width, height) like the NNAPI arguments."""
    n, height, width, _ = x.shape
    c_out, kh, kw, c_in_group = w.shape
    left, right, top, bottom = pads
    sw, sh = strides
    dw, dh = dilations
    padded = np.pad(x.astype(np.float64), ((0, 0), (top, bottom), (left, right), (0, 0)))
    out_h = (height + top + bottom - ((kh - 1) * dh + 1)) // sh + 1
    out_w = (width + left + right - ((kw - 1) * dw + 1)) // sw + 1
    out = np.zeros((n, out_h, out_w, c_out))
    c_out_group = c_out // groups
    for ky in range(kh):
        for kx in range(kw):
            window = padded[
                :,
                ky * dh : ky * dh + (out_h - 1) * sh + 1 : sh,
                kx * dw : kx * dw + (out_w - 1) * sw + 1 : sw,
                :,
            ]
            for g in range(groups):
                out[..., g * c_out_group : (g + 1) * c_out_group] += np.einsum(
                    "nhwc,oc->nhwo",
                    window[..., g * c_in_group : (g + 1) * c_in_group],
                    w[g * c_out_group : (g + 1) * c_out_group, ky, kx, :].astype(np.float64),
                )
    return out + np.asarray(b, np.float64)


def quantize(real, scale, zero_point, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.round(real / scale) + zero_point, info.min, info.max).astype(dtype)


def conv_scalars(padding, strides, activation, nchw=None, dilations=None, extra=None):
    """The scalar arguments after the bias: paddings, strides, [extra], activation, [layout],
    [dilations]. `extra` is the number of groups or the depth multiplier."""
    if isinstance(padding, int):  # a PaddingCode (or an invalid code)
        scalars = [(I32, int(padding))]
    else:
        scalars = [(I32, p) for p in padding]
    scalars += [(I32, strides[0]), (I32, strides[1])]
    if extra is not None:
        scalars.append((I32, extra))
    scalars.append((I32, int(activation)))
    if nchw is not None:
        scalars.append((OperandCode.BOOL, bool(nchw)))
    if dilations is not None:
        scalars += [(I32, dilations[0]), (I32, dilations[1])]
    return scalars


def to_nchw(x):
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def to_nhwc(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def build(
    op,
    x,
    w,
    b,
    scalars,
    out_code,
    out_shape,
    *,
    x_quant=None,
    w_quant=None,
    channel_quant=None,
    b_scale=0.0,
    out_quant=(0.0, 0),
    dynamic=False,
    filter_code=None,
    bias_code=None,
    weights_as_inputs=False,
):
    """An OpTester for a convolution-family operation (x and the output in the op's layout)."""
    x_quant = x_quant or (0.0, 0)
    w_quant = w_quant or (0.0, 0)
    tester = OpTester(op).input(x, scale=x_quant[0], zero_point=x_quant[1])
    add = tester.input if weights_as_inputs else tester.constant
    add(
        w,
        filter_code,
        scale=w_quant[0],
        zero_point=w_quant[1],
        channel_quant=channel_quant,
    )
    add(b, bias_code, scale=b_scale)
    for code, value in scalars:
        tester.scalar(code, value)
    tester.output(out_code, out_shape, scale=out_quant[0], zero_point=out_quant[1])
    return tester.dynamic_outputs(dynamic)


def run_float_conv(
    x,
    w,
    b,
    padding,
    strides=(1, 1),
    dilations=None,
    activation=FuseCode.NONE,
    nchw=None,
    groups=None,
    dynamic=False,
    weights_as_inputs=False,
):
    """Runs CONV_2D (or GROUPED_CONV_2D when groups is given) and its reference (NHWC)."""
    op = OperationCode.GROUPED_CONV_2D if groups is not None else OperationCode.CONV_2D
    if groups is not None and nchw is None:
        nchw = False
    pads = resolve_pads(padding, x.shape, w.shape[1:3], strides, dilations or (1, 1))
    expected = FUSED_ACTIVATIONS[activation](
        conv_reference(x, w, b, pads, strides, dilations or (1, 1), groups or 1)
    )
    op_x = to_nchw(x) if nchw else x
    out_shape = to_nchw(expected).shape if nchw else expected.shape
    scalars = conv_scalars(padding, strides, activation, nchw, dilations, groups)
    result = build(
        op,
        op_x,
        w,
        b,
        scalars,
        OpTester.default_code(x),
        out_shape,
        dynamic=dynamic,
        weights_as_inputs=weights_as_inputs,
    ).run()[0]
    return (to_nhwc(result) if nchw else result), expected


def random_float(rng, shape, dtype=np.float32):
    return rng.uniform(-1, 1, shape).astype(dtype)


# (input NHWC, filter [C_out, kH, kW, C_in], padding, strides (w, h), dilations (w, h), NCHW)
FLOAT_CASES = {
    "same_3x3": ((1, 5, 5, 3), (4, 3, 3, 3), PaddingCode.SAME, (1, 1), None, None),
    "same_odd_stride2": ((2, 7, 6, 2), (3, 3, 3, 2), PaddingCode.SAME, (2, 2), None, None),
    "same_stride_wh": ((1, 9, 7, 2), (2, 3, 2, 2), PaddingCode.SAME, (3, 2), None, False),
    "valid_kernel_2x3": ((1, 6, 7, 3), (2, 2, 3, 3), PaddingCode.VALID, (1, 2), None, None),
    "explicit_asym": ((1, 6, 5, 2), (3, 2, 3, 2), (1, 0, 1, 1), (1, 1), None, None),
    "stride_gt_kernel": ((1, 9, 10, 2), (2, 2, 2, 2), (1, 0, 1, 0), (3, 2), None, None),
    "dilation_same": ((1, 7, 8, 2), (2, 3, 3, 2), PaddingCode.SAME, (1, 1), (2, 1), False),
    "dilation_explicit_nchw": ((1, 8, 7, 3), (2, 3, 2, 3), (1, 1, 3, 0), (2, 1), (1, 3), True),
    "dilation_valid_stride": ((2, 9, 9, 1), (2, 3, 3, 1), PaddingCode.VALID, (2, 3), (3, 2), False),
    "pointwise_nchw": ((2, 4, 3, 5), (6, 1, 1, 5), PaddingCode.VALID, (1, 1), None, True),
    "pointwise_stride2": ((1, 5, 5, 4), (3, 1, 1, 4), PaddingCode.SAME, (2, 2), None, None),
    "implicit_nchw": ((1, 5, 6, 3), (2, 3, 3, 3), PaddingCode.SAME, (2, 1), None, True),
}


@pytest.mark.parametrize("case", list(FLOAT_CASES))
def test_conv_float32(case):
    x_shape, w_shape, padding, strides, dilations, nchw = FLOAT_CASES[case]
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    x = random_float(rng, x_shape)
    w = random_float(rng, w_shape)
    b = random_float(rng, w_shape[0])
    actual, expected = run_float_conv(x, w, b, padding, strides, dilations, nchw=nchw)
    assert_close(actual, expected)


@pytest.mark.parametrize("activation", list(FUSED_ACTIVATIONS))
def test_conv_float32_activations(activation):
    rng = np.random.default_rng(3)
    x = rng.uniform(-3, 3, (1, 4, 5, 3)).astype(np.float32)
    w = random_float(rng, (4, 2, 2, 3))
    b = random_float(rng, 4)
    actual, expected = run_float_conv(x, w, b, PaddingCode.SAME, activation=activation)
    assert_close(actual, expected)


@pytest.mark.parametrize("nchw", [False, True])
def test_conv_float16(nchw):
    rng = np.random.default_rng(4)
    x = random_float(rng, (1, 6, 5, 3), np.float16)
    w = random_float(rng, (4, 3, 3, 3), np.float16)
    b = random_float(rng, 4, np.float16)
    actual, expected = run_float_conv(
        x, w, b, PaddingCode.SAME, (2, 1), nchw=nchw, activation=FuseCode.RELU1
    )
    assert_close(actual, expected, "float16")


def test_conv_weights_as_model_inputs():
    rng = np.random.default_rng(5)
    x = random_float(rng, (1, 4, 4, 2))
    w = random_float(rng, (3, 3, 3, 2))
    b = random_float(rng, 3)
    actual, expected = run_float_conv(x, w, b, (1, 1, 1, 1), weights_as_inputs=True)
    assert_close(actual, expected)


def test_conv_dynamic_output_shape():
    rng = np.random.default_rng(6)
    x = random_float(rng, (2, 7, 5, 2))
    w = random_float(rng, (3, 3, 2, 2))
    b = random_float(rng, 3)
    actual, expected = run_float_conv(x, w, b, PaddingCode.SAME, (2, 3), nchw=True, dynamic=True)
    assert actual.shape == (2, 3, 3, 3)
    assert_close(actual, expected)


QUANT_TYPES = {
    "uint8": (np.uint8, OperandCode.TENSOR_QUANT8_ASYMM),
    "int8": (np.int8, OperandCode.TENSOR_QUANT8_ASYMM_SIGNED),
}


def run_quant_conv(
    dtype_name,
    x_shape,
    w_shape,
    padding,
    strides=(1, 1),
    dilations=None,
    activation=FuseCode.NONE,
    nchw=None,
    groups=None,
    per_channel=False,
    out_scale=None,
    seed=0,
):
    dtype, code = QUANT_TYPES[dtype_name]
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x = rng.integers(info.min, info.max + 1, x_shape, dtype=dtype)
    x_scale, x_zp = 0.05, int(info.min) + 100
    c_out = w_shape[0]
    if per_channel:
        w = rng.integers(-127, 128, w_shape, dtype=np.int8)
        w_scales = rng.uniform(0.002, 0.02, c_out).astype(np.float32)
        w_real = w.astype(np.float64) * w_scales.astype(np.float64)[:, None, None, None]
        w_quant, channel_quant, filter_code = None, (0, w_scales.tolist()), PER_CHANNEL
        bias_scales = np.float32(x_scale) * w_scales
        b_scale = 0.0
    else:
        w = rng.integers(info.min, info.max + 1, w_shape, dtype=dtype)
        w_scale, w_zp = 0.01, int(info.min) + 120
        w_real = (w.astype(np.float64) - w_zp) * w_scale
        w_quant, channel_quant, filter_code = (w_scale, w_zp), None, code
        bias_scales = np.full(c_out, np.float32(x_scale) * np.float32(w_scale))
        b_scale = float(np.float32(x_scale) * np.float32(w_scale))
    b = rng.integers(-2000, 2000, c_out).astype(np.int32)
    x_real = (x.astype(np.float64) - x_zp) * x_scale
    pads = resolve_pads(padding, x_shape, w_shape[1:3], strides, dilations or (1, 1))
    real = conv_reference(
        x_real,
        w_real,
        b * bias_scales.astype(np.float64),
        pads,
        strides,
        dilations or (1, 1),
        groups or 1,
    )
    real = FUSED_ACTIVATIONS[activation](real)
    # By default about a tenth of the outputs saturate at each end of the range.
    out_scale = out_scale or float(np.percentile(np.abs(real), 80) / 100)
    out_zp = int(info.min) + 128 if dtype == np.uint8 else -3
    expected = quantize(real, out_scale, out_zp, dtype)
    op = OperationCode.GROUPED_CONV_2D if groups is not None else OperationCode.CONV_2D
    if groups is not None and nchw is None:
        nchw = False
    scalars = conv_scalars(padding, strides, activation, nchw, dilations, groups)
    result = build(
        op,
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
    "same": ((1, 5, 6, 3), (4, 3, 3, 3), PaddingCode.SAME, (1, 1), None, None),
    "explicit_stride_nchw": ((2, 7, 6, 2), (3, 2, 3, 2), (1, 1, 0, 1), (2, 3), None, True),
    "dilation_valid": ((1, 8, 8, 2), (2, 3, 3, 2), PaddingCode.VALID, (1, 1), (2, 3), False),
    "pointwise": ((1, 4, 4, 8), (5, 1, 1, 8), PaddingCode.VALID, (1, 1), None, None),
}


@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("case", list(QUANT_CASES))
def test_conv_quantized(dtype_name, per_channel, case):
    x_shape, w_shape, padding, strides, dilations, nchw = QUANT_CASES[case]
    actual, expected = run_quant_conv(
        dtype_name,
        x_shape,
        w_shape,
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
@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
def test_conv_quantized_activation_limits(dtype_name, activation):
    # A fine output scale makes the activation bounds land inside the quantised range.
    actual, expected = run_quant_conv(
        dtype_name,
        (1, 4, 4, 3),
        (2, 3, 3, 3),
        PaddingCode.SAME,
        activation=activation,
        out_scale=0.05,
        seed=11,
    )
    assert_close(actual, expected)


def test_conv_quantized_large_depth_is_exact():
    # 24 * 3 * 3 = 216 taps of up to 255 * 255: still exact through the chunked float GEMM.
    actual, expected = run_quant_conv("uint8", (1, 3, 3, 40), (2, 3, 3, 40), PaddingCode.SAME)
    assert_close(actual, expected)


# ---- GROUPED_CONV_2D ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "padding,strides,nchw",
    [
        (PaddingCode.SAME, (1, 1), False),
        ((1, 0, 2, 1), (2, 1), True),
        (PaddingCode.VALID, (1, 2), True),
    ],
)
def test_grouped_conv_float32(padding, strides, nchw):
    rng = np.random.default_rng(7)
    x = random_float(rng, (2, 5, 6, 6))
    w = random_float(rng, (9, 3, 2, 2))  # 3 groups of 2 input and 3 output channels
    b = random_float(rng, 9)
    actual, expected = run_float_conv(x, w, b, padding, strides, groups=3, nchw=nchw)
    assert_close(actual, expected)


def test_grouped_conv_float16_relu6():
    rng = np.random.default_rng(8)
    x = rng.uniform(-4, 4, (1, 4, 4, 4)).astype(np.float16)
    w = random_float(rng, (4, 3, 3, 2), np.float16)
    b = random_float(rng, 4, np.float16)
    actual, expected = run_float_conv(
        x, w, b, PaddingCode.SAME, groups=2, activation=FuseCode.RELU6
    )
    assert_close(actual, expected, "float16")


@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_grouped_conv_quantized(dtype_name, per_channel):
    actual, expected = run_quant_conv(
        dtype_name,
        (1, 5, 5, 4),
        (6, 3, 3, 2),
        PaddingCode.SAME,
        (2, 1),
        groups=2,
        nchw=per_channel,
        per_channel=per_channel,
        seed=9,
    )
    assert_close(actual, expected)


def test_grouped_conv_dynamic_output_shape():
    rng = np.random.default_rng(10)
    x = random_float(rng, (1, 6, 4, 4))
    w = random_float(rng, (4, 2, 2, 1))  # depthwise-like: 4 groups
    b = random_float(rng, 4)
    actual, expected = run_float_conv(x, w, b, PaddingCode.VALID, (2, 2), groups=4, dynamic=True)
    assert_close(actual, expected)


# ---- Validation ---------------------------------------------------------------------------


def float_operands():
    x = np.zeros((1, 4, 4, 2), np.float32)
    w = np.zeros((3, 3, 3, 2), np.float32)
    b = np.zeros(3, np.float32)
    return x, w, b


def expect_error(code, function, *args):
    """Calls function(*args), which must raise NnapiError with `code`; returns the message.

    Not pytest.raises: its traceback would keep the failed model alive until a garbage
    collection, which the live-object checks of other test modules would then notice.
    """
    try:
        function(*args)
    except NnapiError as error:
        assert error.code == code, str(error)
        return str(error)
    raise AssertionError(f"expected {ResultCode(code).name}")


@pytest.mark.parametrize(
    "scalars",
    [
        # 9 inputs: implicit padding with a layout flag and one dilation factor.
        [*conv_scalars(PaddingCode.SAME, (1, 1), 0, False), (I32, 2)],
        # 12 inputs: explicit padding with a layout flag and one dilation factor.
        [*conv_scalars((0, 0, 0, 0), (1, 1), 0, False), (I32, 2)],
        # 6 inputs.
        conv_scalars(PaddingCode.SAME, (1, 1), 0)[:-1],
        # 14 inputs.
        [*conv_scalars((0, 0, 0, 0), (1, 1), 0, False, (1, 1)), (I32, 1)],
    ],
    ids=["9", "12", "6", "14"],
)
def test_conv_rejects_input_counts(scalars):
    x, w, b = float_operands()
    message = expect_bad_data(
        build(OperationCode.CONV_2D, x, w, b, scalars, OperandCode.TENSOR_FLOAT32, (1, 4, 4, 3))
    )
    assert "inputs" in message


@pytest.mark.parametrize(
    "scalars",
    [
        # 8 inputs with an INT32 at index 7: the layout must be a BOOL.
        [*conv_scalars(PaddingCode.SAME, (1, 1), 0), (I32, 0)],
        # 11 inputs whose input 7 is a BOOL: implicit padding takes at most 10 inputs.
        [*conv_scalars(PaddingCode.SAME, (1, 1), 0, False, (1, 1)), (I32, 0)],
    ],
    ids=["int_layout", "implicit_11"],
)
def test_conv_rejects_wrong_argument_types(scalars):
    x, w, b = float_operands()
    expect_bad_data(
        build(OperationCode.CONV_2D, x, w, b, scalars, OperandCode.TENSOR_FLOAT32, (1, 4, 4, 3))
    )


@pytest.mark.parametrize(
    "filter_dtype,bias_dtype",
    [(np.float16, np.float32), (np.float32, np.float16), (np.float32, np.int32)],
    ids=["filter_fp16", "bias_fp16", "bias_int32"],
)
def test_conv_rejects_mismatched_float_types(filter_dtype, bias_dtype):
    x, w, b = float_operands()
    expect_bad_data(
        build(
            OperationCode.CONV_2D,
            x,
            w.astype(filter_dtype),
            b.astype(bias_dtype),
            conv_scalars(PaddingCode.SAME, (1, 1), 0),
            OperandCode.TENSOR_FLOAT32,
            (1, 4, 4, 3),
        )
    )


def quant_tester(
    bias, bias_code=None, b_scale=0.02, filter_code=None, channel_quant=None, w_quant=(0.1, 0)
):
    x = np.zeros((1, 4, 4, 2), np.uint8)
    w = np.zeros((3, 3, 3, 2), np.int8 if filter_code == PER_CHANNEL else np.uint8)
    return build(
        OperationCode.CONV_2D,
        x,
        w,
        bias,
        conv_scalars(PaddingCode.SAME, (1, 1), 0),
        OperandCode.TENSOR_QUANT8_ASYMM,
        (1, 4, 4, 3),
        x_quant=(0.2, 0),
        w_quant=None if filter_code == PER_CHANNEL else w_quant,
        b_scale=b_scale,
        out_quant=(1.0, 0),
        filter_code=filter_code,
        bias_code=bias_code,
        channel_quant=channel_quant,
    )


def test_conv_quantized_bias_rules():
    # The valid combination builds (bias scale 0.2 * 0.1).
    quant_tester(np.zeros(3, np.int32)).build()
    # A float bias, a mis-scaled bias and a bias with a zero point are rejected.
    expect_bad_data(quant_tester(np.zeros(3, np.float32), b_scale=0.0))
    assert "bias scale" in expect_bad_data(quant_tester(np.zeros(3, np.int32), b_scale=0.03))
    expect_bad_data(quant_tester(np.zeros(3, np.int32), b_scale=0.0))


def test_conv_per_channel_filter_rules():
    scales = [0.1, 0.2, 0.3]
    quant_tester(
        np.zeros(3, np.int32), b_scale=0.0, filter_code=PER_CHANNEL, channel_quant=(0, scales)
    ).build()
    # DEPTHWISE_CONV_2D's channelDim 3 is wrong for CONV_2D.
    expect_bad_data(
        quant_tester(
            np.zeros(3, np.int32),
            b_scale=0.0,
            filter_code=PER_CHANNEL,
            channel_quant=(3, [0.1, 0.2]),
        ),
    )


@pytest.mark.parametrize(
    "scalars,what",
    [
        (conv_scalars(3, (1, 1), 0), "padding code"),
        (conv_scalars(PaddingCode.SAME, (0, 1), 0), "stride"),
        (conv_scalars((0, -1, 0, 0), (1, 1), 0), "padding right"),
        (conv_scalars(PaddingCode.SAME, (1, 1), 0, False, (1, 0)), "dilation"),
        (conv_scalars(PaddingCode.SAME, (1, 1), 7), "activation"),
    ],
    ids=["padding_code", "stride", "negative_pad", "dilation", "activation"],
)
def test_conv_rejects_argument_values(scalars, what):
    x, w, b = float_operands()
    message = expect_failed_when_prepared(
        build(OperationCode.CONV_2D, x, w, b, scalars, OperandCode.TENSOR_FLOAT32, (1, 4, 4, 3))
    )
    assert what.split()[0] in message


def test_conv_rejects_shape_mismatches():
    x, w, b = float_operands()
    scalars = conv_scalars(PaddingCode.SAME, (1, 1), 0)
    expect_bad_data(
        build(
            OperationCode.CONV_2D,
            x,
            w[..., :1],
            b,
            scalars,
            OperandCode.TENSOR_FLOAT32,
            (1, 4, 4, 3),
        )
    )
    expect_bad_data(
        build(OperationCode.CONV_2D, x, w, b[:2], scalars, OperandCode.TENSOR_FLOAT32, (1, 4, 4, 3))
    )
    expect_bad_data(
        build(OperationCode.CONV_2D, x[0], w, b, scalars, OperandCode.TENSOR_FLOAT32, (4, 4, 3))
    )


def test_conv_padding_not_smaller_than_filter_fails_at_compute():
    x, w, b = float_operands()
    tester = build(
        OperationCode.CONV_2D,
        x,
        w,
        b,
        conv_scalars((3, 0, 0, 0), (1, 1), 0),
        OperandCode.TENSOR_FLOAT32,
        (1, 2, 5, 3),
    )
    expect_error(ResultCode.OP_FAILED, tester.run)


def test_grouped_conv_validation():
    x = np.zeros((1, 4, 4, 4), np.float32)
    b = np.zeros(6, np.float32)
    scalars = conv_scalars(PaddingCode.SAME, (1, 1), 0, False, extra=2)
    op = OperationCode.GROUPED_CONV_2D
    build(
        op,
        x,
        np.zeros((6, 3, 3, 2), np.float32),
        b,
        scalars,
        OperandCode.TENSOR_FLOAT32,
        (1, 4, 4, 6),
    ).build()
    # Filter depth * groups must equal the input depth.
    expect_failed_when_prepared(
        build(
            op,
            x,
            np.zeros((6, 3, 3, 4), np.float32),
            b,
            scalars,
            OperandCode.TENSOR_FLOAT32,
            (1, 4, 4, 6),
        )
    )
    # Output channels must divide by the groups.
    expect_failed_when_prepared(
        build(
            op,
            x,
            np.zeros((5, 3, 3, 2), np.float32),
            b[:5],
            scalars,
            OperandCode.TENSOR_FLOAT32,
            (1, 4, 4, 5),
        )
    )
    # The layout flag is required (8 inputs), and there is no dilation (11 inputs).
    expect_bad_data(
        build(
            op,
            x,
            np.zeros((6, 3, 3, 2), np.float32),
            b,
            scalars[:-1],
            OperandCode.TENSOR_FLOAT32,
            (1, 4, 4, 6),
        )
    )
    expect_bad_data(
        build(
            op,
            x,
            np.zeros((6, 3, 3, 2), np.float32),
            b,
            [*scalars, (I32, 1), (I32, 1)],
            OperandCode.TENSOR_FLOAT32,
            (1, 4, 4, 6),
        )
    )
    # Zero groups.
    expect_failed_when_prepared(
        build(
            op,
            x,
            np.zeros((6, 3, 3, 2), np.float32),
            b,
            conv_scalars(PaddingCode.SAME, (1, 1), 0, False, extra=0),
            OperandCode.TENSOR_FLOAT32,
            (1, 4, 4, 6),
        )
    )


def test_conv_concurrent_executions_agree():
    # Executions on several threads share the kernels' thread pool (ctypes releases the GIL).
    import threading

    from mock_nnapi import Compilation, Execution

    rng = np.random.default_rng(12)
    x = random_float(rng, (1, 24, 24, 8))
    w = random_float(rng, (16, 3, 3, 8))
    b = random_float(rng, 16)
    expected = conv_reference(
        x, w, b, resolve_pads(PaddingCode.SAME, x.shape, (3, 3), (1, 1)), (1, 1)
    )
    tester = build(
        OperationCode.CONV_2D,
        x,
        w,
        b,
        conv_scalars(PaddingCode.SAME, (1, 1), 0),
        OperandCode.TENSOR_FLOAT32,
        expected.shape,
    )
    compilation = Compilation(tester.build()).finish()
    results, errors = [], []

    def worker():
        try:
            for _ in range(5):
                results.append(Execution(compilation).compute([x], [expected.shape])[0])
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 20
    for result in results:
        assert_close(result, expected)


# ---- Feature levels -----------------------------------------------------------------------


def required_feature_level(tester, devices) -> int:
    """The lowest feature level (1..8) of a device that supports the tester's operation."""
    import mock_nnapi

    model = tester.build()
    for level, device in enumerate(devices, start=1):
        if mock_nnapi.supported_operations(model, [device])[0]:
            return level
    return 0


def conv_level_tester(code, scalars, filter_code=None, out_scale=1.0, channel_quant=None):
    dtype = {
        OperandCode.TENSOR_FLOAT32: np.float32,
        OperandCode.TENSOR_FLOAT16: np.float16,
        OperandCode.TENSOR_QUANT8_ASYMM: np.uint8,
        OperandCode.TENSOR_QUANT8_ASYMM_SIGNED: np.int8,
    }[code]
    quantized = dtype in (np.uint8, np.int8)
    per_channel = filter_code == PER_CHANNEL
    w_dtype = np.int8 if per_channel else dtype
    op = OperationCode.GROUPED_CONV_2D if len(scalars) in (6, 9) else OperationCode.CONV_2D
    return build(
        op,
        np.zeros((1, 4, 4, 2), dtype),
        np.zeros((2, 3, 3, 1 if op == OperationCode.GROUPED_CONV_2D else 2), w_dtype),
        np.zeros(2, np.int32 if quantized else dtype),
        scalars,
        code,
        (1, 4, 4, 2),
        x_quant=(0.5, 0) if quantized else None,
        w_quant=None if per_channel or not quantized else (0.5, 0),
        channel_quant=channel_quant,
        b_scale=0.0 if per_channel or not quantized else 0.25,
        out_quant=(out_scale, 0) if quantized else (0.0, 0),
        filter_code=filter_code,
    )


SAME = PaddingCode.SAME
F32, F16 = OperandCode.TENSOR_FLOAT32, OperandCode.TENSOR_FLOAT16
Q8, Q8S = OperandCode.TENSOR_QUANT8_ASYMM, OperandCode.TENSOR_QUANT8_ASYMM_SIGNED


@pytest.mark.parametrize(
    "code,scalars,kwargs,level",
    [
        (F32, conv_scalars(SAME, (1, 1), 0), {}, 1),
        (F32, conv_scalars((1, 1, 1, 1), (1, 1), 0), {}, 1),
        (F32, conv_scalars(SAME, (1, 1), 0, False), {}, 3),  # layout flag
        (F32, conv_scalars((1, 1, 1, 1), (1, 1), 0, False, (2, 2)), {}, 3),  # dilation
        (F16, conv_scalars(SAME, (1, 1), 0), {}, 3),
        (Q8, conv_scalars(SAME, (1, 1), 0), {}, 1),  # output scale 1 > 0.5 * 0.5
        (Q8, conv_scalars(SAME, (1, 1), 0), {"out_scale": 0.25}, 3),
        (
            Q8,
            conv_scalars(SAME, (1, 1), 0),
            {"filter_code": PER_CHANNEL, "channel_quant": (0, [0.5, 0.5])},
            3,
        ),
        (Q8S, conv_scalars(SAME, (1, 1), 0), {}, 4),
        (F32, conv_scalars(SAME, (1, 1), 0, False, extra=2), {}, 3),  # GROUPED_CONV_2D
        (Q8S, conv_scalars(SAME, (1, 1), 0, False, extra=2), {}, 4),
    ],
)
def test_conv_feature_levels(feature_level_devices, code, scalars, kwargs, level):
    tester = conv_level_tester(code, scalars, **kwargs)
    assert required_feature_level(tester, feature_level_devices) == level
