# SPDX-License-Identifier: Apache-2.0
"""Differential fuzzing of the mock's operations against independent numpy references.

Hypothesis draws shapes (including broadcasting and size-1 axes), dtypes, quantisation
parameters and attributes (padding, strides, dilation, filter sizes, axes, keep_dims, beta,
fused activations); each example is built as a one-operation NNAPI model, run on the mock, and
compared with a numpy reference written here from the NDK documentation.

Float tolerances are error bounds, not guesses: for sums of products the bound is
``64 * eps * sum(|terms|)`` of each output element (any summation order is within it);
quantised outputs may differ by one step (rounding of the exact real result).

Budget: ``FUZZ_EXAMPLES`` examples per operation family (default 50, derandomised so CI is
reproducible); ``HYPOTHESIS_PROFILE=campaign`` runs 2000 random examples per family (see
docs/reliability.md).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from mock_ops.op_tester import OpTester, assert_close

from mock_nnapi import FuseCode, OperandCode, OperationCode

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "50"))
settings.register_profile(
    "ci",
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "campaign",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

F32 = OperandCode.TENSOR_FLOAT32
F16 = OperandCode.TENSOR_FLOAT16
Q8 = OperandCode.TENSOR_QUANT8_ASYMM
Q8S = OperandCode.TENSOR_QUANT8_ASYMM_SIGNED
INT32 = OperandCode.INT32
EPS32 = float(np.finfo(np.float32).eps)

ACTIVATIONS = {
    FuseCode.NONE: lambda v: v,
    FuseCode.RELU: lambda v: np.maximum(v, 0),
    FuseCode.RELU1: lambda v: np.clip(v, -1, 1),
    FuseCode.RELU6: lambda v: np.clip(v, 0, 6),
}


def floats_array(draw, shape, dtype=np.float32, low=-4.0, high=4.0):
    """Random values on a grid of 1/64 (exact in fp16 and fp32, so inputs never round)."""
    values = draw(hnp.arrays(np.int32, shape, elements=st.integers(int(low * 64), int(high * 64))))
    return (values / 64.0).astype(dtype)


def assert_within(actual, expected, bound, what):
    error = np.abs(actual.astype(np.float64) - expected)
    bad = error > bound
    assert not bad.any(), (
        f"{what}: {int(bad.sum())}/{bad.size} elements out of bound; worst error "
        f"{float(error.max())} vs bound {float(np.asarray(bound).max())}"
    )


# ---- elementwise binary ------------------------------------------------------------------------

BINARY = {
    OperationCode.ADD: np.add,
    OperationCode.SUB: np.subtract,
    OperationCode.MUL: np.multiply,
    OperationCode.DIV: np.divide,
    OperationCode.MAXIMUM: np.maximum,
    OperationCode.MINIMUM: np.minimum,
}
FUSED = {OperationCode.ADD, OperationCode.SUB, OperationCode.MUL, OperationCode.DIV}


@st.composite
def binary_case(draw):
    operation = draw(st.sampled_from(sorted(BINARY)))
    shapes = draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=4, max_side=5)
    )
    dtype = draw(st.sampled_from([np.float32, np.float16]))
    a = floats_array(draw, shapes.input_shapes[0], dtype)
    b = floats_array(draw, shapes.input_shapes[1], dtype)
    if operation == OperationCode.DIV:
        b = np.where(np.abs(b) < 0.25, np.asarray(0.5, dtype), b).astype(dtype)
    activation = draw(st.sampled_from(list(ACTIVATIONS))) if operation in FUSED else None
    return operation, a, b, activation, shapes.result_shape


@given(binary_case())
def test_elementwise_binary_matches_numpy(case):
    operation, a, b, activation, out_shape = case
    code = F32 if a.dtype == np.float32 else F16
    tester = OpTester(operation).input(a).input(b)
    if activation is not None:
        tester.scalar(INT32, activation)
    (result,) = tester.output(code, out_shape).run()
    expected = BINARY[operation](a.astype(np.float64), b.astype(np.float64))
    if activation is not None:
        expected = ACTIVATIONS[activation](expected)
    assert_close(result, expected, "float32" if code == F32 else "float16")


@st.composite
def quant_add_case(draw):
    shapes = draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=4, max_side=4)
    )
    code, dtype, low, high = draw(
        st.sampled_from([(Q8, np.uint8, 0, 255), (Q8S, np.int8, -128, 127)])
    )
    params = [
        (draw(st.floats(2.0**-6, 2.0, width=32)), draw(st.integers(low, high))) for _ in range(3)
    ]
    a = draw(hnp.arrays(dtype, shapes.input_shapes[0], elements=st.integers(low, high)))
    b = draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=st.integers(low, high)))
    activation = draw(st.sampled_from(list(ACTIVATIONS)))
    return code, dtype, (low, high), params, a, b, activation, shapes.result_shape


@given(quant_add_case())
def test_quantized_add_matches_numpy(case):
    code, _dtype, (low, high), params, a, b, activation, out_shape = case
    (sa, za), (sb, zb), (so, zo) = params
    (result,) = (
        OpTester(OperationCode.ADD)
        .input(a, code, sa, za)
        .input(b, code, sb, zb)
        .scalar(INT32, activation)
        .output(code, out_shape, so, zo)
        .run()
    )
    real = (a.astype(np.float64) - za) * sa + (b.astype(np.float64) - zb) * sb
    real = ACTIVATIONS[activation](real)
    expected = np.clip(np.round(real / so) + zo, low, high)
    # Fused activations clamp in the quantised domain, so an exact half step can round either way.
    assert_close(result, expected.astype(np.int64), "int")


# ---- conv, pooling, fully connected --------------------------------------------------------


def conv_reference(x, w, b, pads, strides, dilations):
    """NHWC conv: x [N,H,W,C], w [O,KH,KW,C]; pads (left, right, top, bottom). Returns the result
    and the sum of |terms| per output element (for the error bound)."""
    left, right, top, bottom = pads
    stride_w, stride_h = strides
    dilation_w, dilation_h = dilations
    xp = np.pad(x.astype(np.float64), ((0, 0), (top, bottom), (left, right), (0, 0)))
    n, h, wd, _ = xp.shape
    o, kh, kw, _ = w.shape
    out_h = (h - ((kh - 1) * dilation_h + 1)) // stride_h + 1
    out_w = (wd - ((kw - 1) * dilation_w + 1)) // stride_w + 1
    result = np.zeros((n, out_h, out_w, o))
    magnitude = np.zeros_like(result)
    w64 = w.astype(np.float64)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dilation_h, i * dilation_h + (out_h - 1) * stride_h + 1, stride_h)
            cols = slice(j * dilation_w, j * dilation_w + (out_w - 1) * stride_w + 1, stride_w)
            patch = xp[:, rows, cols, :]
            result += np.einsum("nhwc,oc->nhwo", patch, w64[:, i, j, :])
            magnitude += np.einsum("nhwc,oc->nhwo", np.abs(patch), np.abs(w64[:, i, j, :]))
    return result + b, magnitude + np.abs(b)


@st.composite
def conv_case(draw):
    n = draw(st.integers(1, 2))
    c = draw(st.integers(1, 4))
    o = draw(st.integers(1, 4))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride_h, stride_w = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dilation_h, dilation_w = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    # Android requires each padding to be smaller than the (dilated) filter extent.
    extent_w, extent_h = (kw - 1) * dilation_w + 1, (kh - 1) * dilation_h + 1
    pads = (
        draw(st.integers(0, min(2, extent_w - 1))),
        draw(st.integers(0, min(2, extent_w - 1))),
        draw(st.integers(0, min(2, extent_h - 1))),
        draw(st.integers(0, min(2, extent_h - 1))),
    )
    h = draw(st.integers(max(1, (kh - 1) * dilation_h + 1 - pads[2] - pads[3]), 7))
    w = draw(st.integers(max(1, (kw - 1) * dilation_w + 1 - pads[0] - pads[1]), 7))
    x = floats_array(draw, (n, h, w, c))
    filters = floats_array(draw, (o, kh, kw, c), low=-1, high=1)
    bias = floats_array(draw, (o,))
    activation = draw(st.sampled_from(list(ACTIVATIONS)))
    filter_constant = draw(st.booleans())
    return (
        x,
        filters,
        bias,
        pads,
        (stride_w, stride_h),
        (dilation_w, dilation_h),
        activation,
        (filter_constant),
    )


@given(conv_case())
def test_conv_2d_matches_numpy(case):
    x, filters, bias, pads, strides, dilations, activation, filter_constant = case
    expected, magnitude = conv_reference(x, filters, bias, pads, strides, dilations)
    tester = OpTester(OperationCode.CONV_2D).input(x)
    (tester.constant(filters) if filter_constant else tester.input(filters)).constant(bias)
    for value in (*pads, *strides, activation):
        tester.scalar(INT32, value)
    tester.scalar(OperandCode.BOOL, False)
    for value in dilations:
        tester.scalar(INT32, value)
    (result,) = tester.output(F32, expected.shape).run()
    assert_within(
        result, ACTIVATIONS[activation](expected), 64 * EPS32 * magnitude + 1e-6, "CONV_2D"
    )


def pool_reference(x, pads, strides, filter_size, kind):
    left, right, top, bottom = pads
    stride_w, stride_h = strides
    filter_w, filter_h = filter_size
    n, h, w, c = x.shape
    out_h = (h + top + bottom - filter_h) // stride_h + 1
    out_w = (w + left + right - filter_w) // stride_w + 1
    result = np.zeros((n, out_h, out_w, c))
    for i in range(out_h):
        for j in range(out_w):
            r0, c0 = i * stride_h - top, j * stride_w - left
            rows = slice(max(r0, 0), min(r0 + filter_h, h))
            cols = slice(max(c0, 0), min(c0 + filter_w, w))
            window = x[:, rows, cols, :].astype(np.float64)
            if kind == "max":
                result[:, i, j, :] = window.max(axis=(1, 2))
            else:  # padding is not counted in the average
                result[:, i, j, :] = window.mean(axis=(1, 2))
    return result


@st.composite
def pool_case(draw):
    filter_w, filter_h = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    # Padding smaller than the filter, so every window holds at least one element.
    pads = (
        draw(st.integers(0, filter_w - 1)),
        draw(st.integers(0, filter_w - 1)),
        draw(st.integers(0, filter_h - 1)),
        draw(st.integers(0, filter_h - 1)),
    )
    h = draw(st.integers(max(1, filter_h - pads[2] - pads[3]), 7))
    w = draw(st.integers(max(1, filter_w - pads[0] - pads[1]), 7))
    x = floats_array(draw, (draw(st.integers(1, 2)), h, w, draw(st.integers(1, 3))))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    kind = draw(st.sampled_from(["max", "average"]))
    activation = draw(st.sampled_from(list(ACTIVATIONS)))
    return x, pads, strides, (filter_w, filter_h), kind, activation


@given(pool_case())
def test_pooling_matches_numpy(case):
    x, pads, strides, filter_size, kind, activation = case
    expected = ACTIVATIONS[activation](pool_reference(x, pads, strides, filter_size, kind))
    operation = OperationCode.MAX_POOL_2D if kind == "max" else OperationCode.AVERAGE_POOL_2D
    tester = OpTester(operation).input(x)
    for value in (*pads, *strides, *filter_size, activation):
        tester.scalar(INT32, value)
    (result,) = tester.output(F32, expected.shape).run()
    assert_close(result, expected, "float32")


@st.composite
def fully_connected_case(draw):
    batch, inputs, units = (
        draw(st.integers(1, 4)),
        draw(st.integers(1, 16)),
        draw(st.integers(1, 8)),
    )
    x = floats_array(draw, (batch, inputs))
    weights = floats_array(draw, (units, inputs), low=-1, high=1)
    bias = floats_array(draw, (units,))
    return x, weights, bias, draw(st.sampled_from(list(ACTIVATIONS))), draw(st.booleans())


@given(fully_connected_case())
def test_fully_connected_matches_numpy(case):
    x, weights, bias, activation, weights_constant = case
    tester = OpTester(OperationCode.FULLY_CONNECTED).input(x)
    (tester.constant(weights) if weights_constant else tester.input(weights)).constant(bias)
    tester.scalar(INT32, activation)
    (result,) = tester.output(F32, (x.shape[0], weights.shape[0])).run()
    x64, w64 = x.astype(np.float64), weights.astype(np.float64)
    expected = ACTIVATIONS[activation](x64 @ w64.T + bias)
    magnitude = np.abs(x64) @ np.abs(w64).T + np.abs(bias)
    assert_within(result, expected, 64 * EPS32 * magnitude + 1e-6, "FULLY_CONNECTED")


# ---- reductions, softmax -------------------------------------------------------------------

REDUCTIONS = {
    OperationCode.REDUCE_SUM: np.sum,
    OperationCode.REDUCE_MAX: np.max,
    OperationCode.REDUCE_MIN: np.min,
    OperationCode.REDUCE_PROD: np.prod,
    OperationCode.MEAN: np.mean,
}


@st.composite
def reduce_case(draw):
    operation = draw(st.sampled_from(sorted(REDUCTIONS)))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=4))
    low, high = (-1.5, 1.5) if operation == OperationCode.REDUCE_PROD else (-4, 4)
    x = floats_array(draw, shape, low=low, high=high)
    axes = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape)))
    # Axes may be negative (counted from the end) and repeated.
    axes = [a - len(shape) if draw(st.booleans()) else a for a in axes]
    return operation, x, axes, draw(st.booleans())


@given(reduce_case())
def test_reductions_match_numpy(case):
    operation, x, axes, keep_dims = case
    normalised = tuple(sorted({a % x.ndim for a in axes}))
    expected = REDUCTIONS[operation](x.astype(np.float64), axis=normalised, keepdims=keep_dims)
    expected = np.asarray(expected)
    if expected.ndim == 0:  # NNAPI keeps a rank-1 [1] result when everything is reduced
        expected = expected.reshape(1)
    tester = OpTester(operation).input(x).constant(np.array(axes, np.int32))
    if operation == OperationCode.MEAN:
        tester.scalar(INT32, int(keep_dims))
    else:
        tester.scalar(OperandCode.BOOL, keep_dims)
    (result,) = tester.output(F32, expected.shape).run()
    magnitude = np.asarray(
        np.sum(np.abs(x.astype(np.float64)), axis=normalised, keepdims=keep_dims)
    ).reshape(expected.shape)
    bound = 64 * EPS32 * (magnitude if operation != OperationCode.REDUCE_PROD else 1.0) + 1e-6
    if operation == OperationCode.REDUCE_PROD:
        bound = 64 * EPS32 * np.abs(expected) + 1e-6
    assert_within(result, expected, bound, operation.name)


@st.composite
def softmax_case(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=5))
    x = floats_array(draw, shape, low=-8, high=8)
    beta = draw(st.sampled_from([1.0, 0.5, 2.0, 1e-3, 10.0]))
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    return x, beta, axis


@given(softmax_case())
def test_softmax_matches_numpy(case):
    x, beta, axis = case
    tester = OpTester(OperationCode.SOFTMAX).input(x).scalar(OperandCode.FLOAT32, beta)
    if axis is not None:
        tester.scalar(INT32, axis)
    (result,) = tester.output(F32, x.shape).run()
    axis = -1 if axis is None else axis
    shifted = beta * (x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    expected = np.exp(shifted) / np.exp(shifted).sum(axis=axis, keepdims=True)
    assert_within(result, expected, 1e-5 + 64 * EPS32 * expected, "SOFTMAX")


# ---- quantize, dequantize, unary -----------------------------------------------------------


@st.composite
def quantize_case(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=5))
    code, low, high = draw(st.sampled_from([(Q8, 0, 255), (Q8S, -128, 127)]))
    scale = draw(st.floats(2.0**-10, 4.0, width=32))
    zero_point = draw(st.integers(low, high))
    x = floats_array(draw, shape, low=-300, high=300)
    return x, code, low, high, scale, zero_point


@given(quantize_case())
def test_quantize_matches_numpy(case):
    x, code, low, high, scale, zero_point = case
    (result,) = (
        OpTester(OperationCode.QUANTIZE).input(x).output(code, x.shape, scale, zero_point).run()
    )
    expected = np.clip(np.round(x.astype(np.float64) / np.float32(scale)) + zero_point, low, high)
    assert_close(result, expected.astype(np.int64), "int")


@given(quantize_case())
def test_dequantize_matches_numpy(case):
    _, code, low, high, scale, zero_point = case
    rng = np.random.default_rng(abs(zero_point) + 7)
    dtype = np.uint8 if code == Q8 else np.int8
    q = rng.integers(low, high + 1, size=(3, 5)).astype(dtype)
    (result,) = (
        OpTester(OperationCode.DEQUANTIZE)
        .input(q, code, scale, zero_point)
        .output(F32, q.shape)
        .run()
    )
    expected = (q.astype(np.float64) - zero_point) * np.float32(scale)
    assert_close(result, expected, "float32")


UNARY = {
    OperationCode.RELU: lambda v: np.maximum(v, 0),
    OperationCode.RELU6: lambda v: np.clip(v, 0, 6),
    OperationCode.LOGISTIC: lambda v: 1 / (1 + np.exp(-v)),
    OperationCode.TANH: np.tanh,
    OperationCode.ABS: np.abs,
    OperationCode.EXP: np.exp,
    OperationCode.NEG: np.negative,
    OperationCode.FLOOR: np.floor,
}


@given(
    st.sampled_from(sorted(UNARY)),
    hnp.array_shapes(min_dims=1, max_dims=4, max_side=6),
    st.sampled_from([np.float32, np.float16]),
    st.data(),
)
def test_unary_matches_numpy(operation, shape, dtype, data):
    x = floats_array(data.draw, shape, dtype)
    code = F32 if dtype == np.float32 else F16
    (result,) = OpTester(operation).input(x).output(code, shape).run()
    expected = UNARY[operation](x.astype(np.float64))
    if code == F32:
        # Transcendentals: a few ULP of libm plus float32 rounding of the argument.
        assert_within(result, expected, 1e-6 + 16 * EPS32 * np.abs(expected), operation.name)
    else:
        assert_close(result, expected, "float16")


# ---- space/batch rearrangements ----------------------------------------------------------------

SPACE_BATCH_TYPES = [
    (np.float32, F32, 0.0, 0),
    (np.float16, F16, 0.0, 0),
    (np.uint8, Q8, 0.5, 5),
    (np.int8, Q8S, 0.25, -3),
]


@st.composite
def space_batch_case(draw):
    operation = draw(
        st.sampled_from([OperationCode.SPACE_TO_BATCH_ND, OperationCode.BATCH_TO_SPACE_ND])
    )
    dtype, code, scale, zero_point = draw(st.sampled_from(SPACE_BATCH_TYPES))
    block = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    channels = draw(st.integers(1, 3))
    layout = draw(st.sampled_from([None, False, True]))
    paddings = None
    if operation == OperationCode.SPACE_TO_BATCH_ND:
        paddings = [[draw(st.integers(0, 2)) for _ in range(2)] for _ in range(2)]
        # Spatial sizes (>= 1) whose padded sizes are multiples of the block sizes.
        spatial = []
        for axis in range(2):
            padded = block[axis] * draw(st.integers(1, 3))
            while padded - sum(paddings[axis]) < 1:
                padded += block[axis]
            spatial.append(padded - sum(paddings[axis]))
        shape = (draw(st.integers(1, 2)), *spatial, channels)
    else:
        batches = block[0] * block[1] * draw(st.integers(1, 2))
        shape = (batches, draw(st.integers(1, 3)), draw(st.integers(1, 3)), channels)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        x = draw(hnp.arrays(dtype, shape, elements=st.integers(int(info.min), int(info.max))))
    else:
        x = floats_array(draw, shape, dtype)
    return operation, x, code, scale, zero_point, block, paddings, layout


def space_batch_reference(operation, x, block, paddings, fill):
    """Element by element from the NDK (TensorFlow) definition, NHWC:
    SPACE_TO_BATCH_ND out[(i * bw + j) * n + b, h, w] = padded[b, h * bh + i, w * bw + j];
    BATCH_TO_SPACE_ND out[b, h * bh + i, w * bw + j] = in[(i * bw + j) * n_out + b, h, w]."""
    bh, bw = block
    n, height, width, channels = x.shape
    if operation == OperationCode.SPACE_TO_BATCH_ND:
        (top, bottom), (left, right) = paddings
        out_h, out_w = (height + top + bottom) // bh, (width + left + right) // bw
        out = np.full((n * bh * bw, out_h, out_w, channels), fill, x.dtype)
        for i in range(bh):
            for j in range(bw):
                for b in range(n):
                    for h in range(out_h):
                        for w in range(out_w):
                            ih, iw = h * bh + i - top, w * bw + j - left
                            if 0 <= ih < height and 0 <= iw < width:
                                out[(i * bw + j) * n + b, h, w] = x[b, ih, iw]
        return out
    n_out = n // (bh * bw)
    out = np.empty((n_out, height * bh, width * bw, channels), x.dtype)
    for i in range(bh):
        for j in range(bw):
            for b in range(n_out):
                out[b, i::bh, j::bw] = x[(i * bw + j) * n_out + b]
    return out


@given(space_batch_case())
def test_space_batch_matches_numpy(case):
    operation, x, code, scale, zero_point, block, paddings, layout = case
    fill = zero_point if code in (Q8, Q8S) else 0
    expected = space_batch_reference(operation, x, block, paddings, fill)
    nchw = bool(layout)
    fed = np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x
    out_shape = expected.transpose(0, 3, 1, 2).shape if nchw else expected.shape
    tester = OpTester(operation).input(fed, code, scale, zero_point)
    tester.constant(np.array(block, np.int32))
    if paddings is not None:
        tester.constant(np.array(paddings, np.int32))
    if layout is not None:
        tester.scalar(OperandCode.BOOL, layout)
    (result,) = tester.output(code, out_shape, scale, zero_point).run()
    if nchw:
        result = result.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(result, expected)


# ---- recurrent: UNIDIRECTIONAL_SEQUENCE_RNN, UNIDIRECTIONAL_SEQUENCE_LSTM ------------------------
#
# The references step the NDK's cell equations in float64 and carry an error bound through the
# recurrence: each matrix product adds 64 * eps * sum(|terms|), tanh and the logistic are
# 1- and 1/4-Lipschitz, and the bound of h_{t-1} (and C_{t-1}) enters step t through
# |recurrent weights| (and the peephole and gate factors).


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


@st.composite
def sequence_rnn_case(draw):
    steps, batch, inputs, units = (draw(st.integers(1, 4)) for _ in range(4))
    x = floats_array(draw, (steps, batch, inputs), low=-1, high=1)
    weights = floats_array(draw, (units, inputs), low=-1, high=1)
    recurrent = floats_array(draw, (units, units), low=-0.5, high=0.5)
    bias = floats_array(draw, (units,), low=-1, high=1)
    hidden = floats_array(draw, (batch, units), low=-1, high=1)
    return x, weights, recurrent, bias, hidden, draw(st.booleans())


@given(sequence_rnn_case())
def test_sequence_rnn_matches_numpy(case):
    x, weights, recurrent, bias, hidden, time_major = case
    fed = x if time_major else np.ascontiguousarray(x.transpose(1, 0, 2))
    tester = OpTester(OperationCode.UNIDIRECTIONAL_SEQUENCE_RNN).input(fed)
    tester.constant(weights).constant(recurrent).constant(bias).input(hidden)
    tester.scalar(INT32, 4).scalar(INT32, int(time_major))  # tanh
    steps, batch = x.shape[:2]
    shape = (steps, batch, weights.shape[0]) if time_major else (batch, steps, weights.shape[0])
    (result,) = tester.output(F32, shape).run()
    h = hidden.astype(np.float64)
    bound = np.zeros_like(h)
    expected, bounds = [], []
    for x_t in x.astype(np.float64):
        pre = x_t @ weights.T + h @ recurrent.T + bias
        magnitude = np.abs(x_t) @ np.abs(weights).T + np.abs(h) @ np.abs(recurrent).T + np.abs(bias)
        bound = 64 * EPS32 * magnitude + bound @ np.abs(recurrent).T + 4 * EPS32
        h = np.tanh(pre)
        expected.append(h)
        bounds.append(bound + 1e-7)
    expected, bounds = np.stack(expected), np.stack(bounds)
    if not time_major:
        expected, bounds = expected.transpose(1, 0, 2), bounds.transpose(1, 0, 2)
    assert_within(result, expected, bounds, "UNIDIRECTIONAL_SEQUENCE_RNN")


@st.composite
def sequence_lstm_case(draw):
    steps, batch, inputs, cells = (draw(st.integers(1, 3)) for _ in range(4))
    cifg, peephole, projection = draw(st.booleans()), draw(st.booleans()), draw(st.booleans())
    outputs = draw(st.integers(1, 3)) if projection else cells

    def weights(*shape):
        return floats_array(draw, shape, low=-1, high=1)

    p = {"x": floats_array(draw, (steps, batch, inputs), low=-1, high=1)}
    for g in "ifco":
        use = not (cifg and g == "i")
        p[f"wx{g}"] = weights(cells, inputs) if use else None
        p[f"wh{g}"] = weights(cells, outputs) if use else None
        p[f"b{g}"] = weights(cells) if use else None
    for g in "ifo":
        p[f"wc{g}"] = weights(cells) if peephole and not (cifg and g == "i") else None
    p["wproj"] = weights(outputs, cells) if projection else None
    p["bproj"] = weights(outputs) if projection and draw(st.booleans()) else None
    p["h"], p["c"] = weights(batch, outputs), weights(batch, cells)
    return p, draw(st.booleans())


def lstm_sequence_reference(p):
    """(outputs, bounds) of the NDK's LSTM equations (g = tanh, no clipping) over time-major x."""
    a = {k: None if v is None else v.astype(np.float64) for k, v in p.items()}
    h, c = a["h"], a["c"]
    e_h, e_c = np.zeros_like(h), np.zeros_like(c)
    outputs, bounds = [], []
    for x_t in a["x"]:

        def pre(g, state, e_state, x_t=x_t, h=h, e_h=e_h):
            value = x_t @ a[f"wx{g}"].T + h @ a[f"wh{g}"].T + a[f"b{g}"]
            magnitude = np.abs(x_t) @ np.abs(a[f"wx{g}"]).T + np.abs(h) @ np.abs(a[f"wh{g}"]).T
            error = 64 * EPS32 * (magnitude + np.abs(a[f"b{g}"])) + e_h @ np.abs(a[f"wh{g}"]).T
            if a.get(f"wc{g}") is not None:
                value = value + a[f"wc{g}"] * state
                error = error + np.abs(a[f"wc{g}"]) * e_state + 4 * EPS32 * np.abs(value)
            return value, error + 4 * EPS32

        pf, ef = pre("f", c, e_c)
        f, e_f = _sigmoid(pf), ef / 4 + 4 * EPS32
        if a["wxi"] is None:
            i, e_i = 1 - f, e_f + EPS32
        else:
            pi, ei = pre("i", c, e_c)
            i, e_i = _sigmoid(pi), ei / 4 + 4 * EPS32
        pg, eg = pre("c", None, None)
        g, e_g = np.tanh(pg), eg + 4 * EPS32
        c_new = f * c + i * g
        e_c = np.abs(f) * e_c + np.abs(c) * e_f + np.abs(i) * e_g + np.abs(g) * e_i
        e_c = e_c + 4 * EPS32 * (np.abs(f * c) + np.abs(i * g))
        c = c_new
        po, eo = pre("o", c, e_c)
        o, e_o = _sigmoid(po), eo / 4 + 4 * EPS32
        h = o * np.tanh(c)
        e_h = np.abs(o) * e_c + np.abs(np.tanh(c)) * e_o + 8 * EPS32
        if a["wproj"] is not None:
            magnitude = np.abs(h) @ np.abs(a["wproj"]).T
            e_h = e_h @ np.abs(a["wproj"]).T + 64 * EPS32 * magnitude
            h = h @ a["wproj"].T
            if a["bproj"] is not None:
                h = h + a["bproj"]
                e_h = e_h + 64 * EPS32 * np.abs(a["bproj"])
        outputs.append(h)
        bounds.append(e_h + 1e-7)
    return np.stack(outputs), np.stack(bounds)


@given(sequence_lstm_case())
def test_sequence_lstm_matches_numpy(case):
    p, time_major = case
    x = p["x"]
    tester = OpTester(OperationCode.UNIDIRECTIONAL_SEQUENCE_LSTM)
    tester.input(x if time_major else np.ascontiguousarray(x.transpose(1, 0, 2)))
    order = [f"wx{g}" for g in "ifco"] + [f"wh{g}" for g in "ifco"] + ["wci", "wcf", "wco"]
    for name in [*order, *(f"b{g}" for g in "ifco"), "wproj", "bproj"]:
        tester = tester.omitted(F32) if p[name] is None else tester.constant(p[name])
    tester.input(p["h"]).input(p["c"])
    tester.scalar(INT32, 4).scalar(OperandCode.FLOAT32, 0.0).scalar(OperandCode.FLOAT32, 0.0)
    tester.scalar(OperandCode.BOOL, time_major)
    for _ in range(4):
        tester.omitted(F32)  # no layer normalisation
    steps, batch, outputs = x.shape[0], x.shape[1], p["h"].shape[1]
    shape = (steps, batch, outputs) if time_major else (batch, steps, outputs)
    (result,) = tester.output(F32, shape).run()
    expected, bounds = lstm_sequence_reference(p)
    if not time_major:
        expected, bounds = expected.transpose(1, 0, 2), bounds.transpose(1, 0, 2)
    assert_within(result, expected, bounds, "UNIDIRECTIONAL_SEQUENCE_LSTM")


def test_example_budget_is_positive():
    assert EXAMPLES > 0, "FUZZ_EXAMPLES must be positive"


pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
