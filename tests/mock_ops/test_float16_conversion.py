# SPDX-License-Identifier: Apache-2.0
"""The float16 <-> float32 conversions of the fp16 kernels (input read as float32, result stored
as float16): FULLY_CONNECTED of every float16 value with a 1x1 identity weight and a -0 bias
returns each value's bits (NaNs as float16's quiet NaN of their sign), through the vectorised
loops and their scalar tail; TENSOR_FLOAT16 CONV_2D and DEPTHWISE_CONV_2D (converted band by band)
give the fp32 model's result rounded to fp16, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from .test_fully_connected import fc_tester


def test_float16_round_trip_of_every_half():
    bits = np.arange(65536 + 7, dtype=np.uint32) % 65536  # 7 more: a count that leaves a tail
    x = bits.astype(np.uint16).view(np.float16).reshape(-1, 1)
    w = np.ones((1, 1), np.float16)
    b = np.array([-0.0], np.float16)
    result = fc_tester(x, w, b).run()[0].reshape(-1).view(np.uint16)
    nan = np.isnan(x.reshape(-1))
    # -0.0 * 1 + (-0.0) is -0.0 only when the product's sum starts from the bias: a GEMM that
    # starts from +0.0 and adds the bias last gives +0.0 (the arm64 device job's build does). The
    # sign of that zero is the GEMM's, not the conversion's: it only has to be a zero.
    negative_zero = bits.astype(np.uint16) == 0x8000
    exact = ~nan & ~negative_zero
    np.testing.assert_array_equal(result[exact], bits.astype(np.uint16)[exact])
    assert set(result[negative_zero].tolist()) <= {0x0000, 0x8000}
    np.testing.assert_array_equal(result[nan], (bits[nan] & 0x8000).astype(np.uint16) | 0x7E00)


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_float16_constant_and_input_filters_agree(op):
    """A constant fp16 filter is converted once per model (DerivedConstants), a filter given as a
    model input on every run: the same bits either way."""
    from mock_nnapi import FuseCode, OperandCode, OperationCode

    from .test_conv_2d import build, conv_scalars

    rng = np.random.default_rng(3)
    depthwise = op == "DEPTHWISE_CONV_2D"
    x = rng.standard_normal((1, 9, 10, 6)).astype(np.float16)
    w = rng.standard_normal((1, 3, 3, 6) if depthwise else (5, 3, 3, 6)).astype(np.float16)
    b = rng.standard_normal(w.shape[-1] if depthwise else 5).astype(np.float16)
    scalars = conv_scalars((1, 1, 1, 1), (1, 1), FuseCode.NONE, extra=1 if depthwise else None)
    out_shape = (1, 9, 10, w.shape[-1] if depthwise else 5)

    def run(weights_as_inputs):
        return build(
            getattr(OperationCode, op),
            x,
            w,
            b,
            scalars,
            OperandCode.TENSOR_FLOAT16,
            out_shape,
            weights_as_inputs=weights_as_inputs,
        ).run()[0]

    constant = run(False)
    assert np.isfinite(constant).all()
    np.testing.assert_array_equal(constant.view(np.uint16), run(True).view(np.uint16))


# (op, x shape NHWC, filter shape, explicit pads (l, r, t, b), strides (w, h), dilations,
# activation)
HALF_CASES = {
    "conv_3x3_stride2_relu6": (
        "CONV_2D",
        (1, 37, 41, 3),
        (16, 3, 3, 3),
        (1, 1, 1, 1),
        (2, 2),
        None,
        "RELU6",
    ),
    "conv_3x3_dilated_batch2": (
        "CONV_2D",
        (2, 19, 23, 8),
        (12, 3, 3, 8),
        (2, 2, 2, 2),
        (1, 1),
        (2, 2),
        "NONE",
    ),
    "grouped_3x3": (
        "GROUPED_CONV_2D",
        (1, 23, 19, 8),
        (12, 3, 3, 4),
        (1, 1, 1, 1),
        (1, 1),
        None,
        "NONE",
    ),
    "conv_pointwise": (
        "CONV_2D",
        (1, 21, 17, 24),
        (40, 1, 1, 24),
        (0, 0, 0, 0),
        (1, 1),
        None,
        "RELU",
    ),
    "depthwise_5x5": (
        "DEPTHWISE_CONV_2D",
        (1, 29, 31, 40),
        (1, 5, 5, 40),
        (2, 2, 2, 2),
        (1, 1),
        None,
        "NONE",
    ),
    "depthwise_3x3_stride2_batch2": (
        "DEPTHWISE_CONV_2D",
        (2, 17, 15, 24),
        (1, 3, 3, 24),
        (0, 1, 1, 0),
        (2, 2),
        None,
        "RELU",
    ),
    "depthwise_dilated": (
        "DEPTHWISE_CONV_2D",
        (1, 20, 21, 16),
        (1, 3, 3, 16),
        (2, 2, 2, 2),
        (1, 1),
        (2, 2),
        "RELU6",
    ),
}


@pytest.mark.parametrize("case", list(HALF_CASES))
def test_float16_convolution_is_the_fp32_result_rounded(case):
    """TENSOR_FLOAT16 convolutions run the fp32 kernels on bands of rows converted to fp32 and
    round the result to fp16: the fp16 model's output is the fp32 model's output (on the same,
    fp16-representable values) rounded to fp16, bit for bit, whatever the bands."""
    from mock_nnapi import FuseCode, OperandCode, OperationCode

    from .test_conv_2d import build, conv_scalars

    op, x_shape, w_shape, pads, strides, dilations, activation = HALF_CASES[case]
    depthwise = op == "DEPTHWISE_CONV_2D"
    groups = x_shape[3] // w_shape[3] if op == "GROUPED_CONV_2D" else None
    rng = np.random.default_rng(len(case))
    x = rng.standard_normal(x_shape).astype(np.float16)
    w = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float16)
    b = rng.standard_normal(w_shape[-1] if depthwise else w_shape[0]).astype(np.float16)
    scalars = conv_scalars(
        pads,
        strides,
        getattr(FuseCode, activation),
        False if dilations or groups else None,
        dilations,
        extra=1 if depthwise else groups,
    )
    dilation = dilations or (1, 1)
    out_h = (x_shape[1] + pads[2] + pads[3] - (w_shape[1] - 1) * dilation[1] - 1) // strides[1] + 1
    out_w = (x_shape[2] + pads[0] + pads[1] - (w_shape[2] - 1) * dilation[0] - 1) // strides[0] + 1
    out_shape = (x_shape[0], out_h, out_w, w_shape[-1] if depthwise else w_shape[0])

    def run(dtype, code):
        return build(
            getattr(OperationCode, op),
            x.astype(dtype),
            w.astype(dtype),
            b.astype(dtype),
            scalars,
            code,
            out_shape,
        ).run()[0]

    half = run(np.float16, OperandCode.TENSOR_FLOAT16)
    single = run(np.float32, OperandCode.TENSOR_FLOAT32)
    assert np.isfinite(single).all()
    np.testing.assert_array_equal(half.view(np.uint16), single.astype(np.float16).view(np.uint16))
