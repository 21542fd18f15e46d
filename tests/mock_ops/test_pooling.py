# SPDX-License-Identifier: Apache-2.0
"""AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D against a numpy reference.

Covers implicit (7/8 inputs) and explicit (10/11 inputs) padding, non-square filters and strides
(stride_w/stride_h and filter_w/filter_h order), SAME padding with odd sizes, stride larger than
the filter, explicit padding larger on one side, the NCHW layout flag, fused activations,
float16, 8-bit quantisation (activation clamps at the limits) and validation failures.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from mock_nnapi import (
    Compilation,
    Execution,
    FuseCode,
    NnapiError,
    OperandCode,
    OperationCode,
    PaddingCode,
    ResultCode,
    api,
)

from .helpers import FUSED_ACTIVATIONS, expect_bad_data, expect_refused, op_name
from .op_tester import OpTester, assert_close

AVG = OperationCode.AVERAGE_POOL_2D
MAX = OperationCode.MAX_POOL_2D
L2 = OperationCode.L2_POOL_2D


def round_away(x):
    """Round half away from zero (numpy's round is half to even)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def same_padding(size, stride, filt):
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + filt - size)
    return total // 2, total - total // 2


def explicit_pads(shape_nhwc, filter_hw, stride_hw, padding):
    """(top, bottom, left, right) for a PaddingCode or a (left, right, top, bottom) tuple."""
    if isinstance(padding, tuple):
        left, right, top, bottom = padding
        return top, bottom, left, right
    if padding == PaddingCode.VALID:
        return 0, 0, 0, 0
    top, bottom = same_padding(shape_nhwc[1], stride_hw[0], filter_hw[0])
    left, right = same_padding(shape_nhwc[2], stride_hw[1], filter_hw[1])
    return top, bottom, left, right


def windows(x_nhwc, filter_hw, stride_hw, pads):
    """Yields (oy, ox, window) with the in-bounds elements of every pooling window."""
    _, h, w, _ = x_nhwc.shape
    top, bottom, left, right = pads
    out_h = (h + top + bottom - filter_hw[0]) // stride_hw[0] + 1
    out_w = (w + left + right - filter_hw[1]) // stride_hw[1] + 1
    for oy in range(out_h):
        y0 = oy * stride_hw[0] - top
        for ox in range(out_w):
            x0 = ox * stride_hw[1] - left
            window = x_nhwc[
                :, max(y0, 0) : min(y0 + filter_hw[0], h), max(x0, 0) : x0 + filter_hw[1]
            ]
            yield oy, ox, window, (out_h, out_w)


def pool_reference(op, x_nhwc, filter_hw, stride_hw, pads):
    """Float reference in float64 (NHWC)."""
    x = x_nhwc.astype(np.float64)
    out = None
    for oy, ox, window, (out_h, out_w) in windows(x, filter_hw, stride_hw, pads):
        if out is None:
            out = np.empty((x.shape[0], out_h, out_w, x.shape[3]))
        if op == MAX:
            out[:, oy, ox] = window.max(axis=(1, 2))
        elif op == AVG:
            out[:, oy, ox] = window.mean(axis=(1, 2))
        else:
            out[:, oy, ox] = np.sqrt((window**2).mean(axis=(1, 2)))
    return out


def quantized_reference(op, q_nhwc, filter_hw, stride_hw, pads, scale, zero_point, activation):
    """Raw-value reference: average rounds half away from zero; activation clamps in q space."""
    info = np.iinfo(q_nhwc.dtype)
    q = q_nhwc.astype(np.int64)
    out = None
    for oy, ox, window, (out_h, out_w) in windows(q, filter_hw, stride_hw, pads):
        if out is None:
            out = np.empty((q.shape[0], out_h, out_w, q.shape[3]), np.int64)
        if op == MAX:
            out[:, oy, ox] = window.max(axis=(1, 2))
        else:
            count = window.shape[1] * window.shape[2]
            out[:, oy, ox] = round_away(window.sum(axis=(1, 2)) / count)

    def quantize(real):
        return int(np.clip(round_away(real / scale) + zero_point, info.min, info.max))

    low, high = info.min, info.max
    if activation in (FuseCode.RELU, FuseCode.RELU6):
        low = quantize(0.0)
    if activation == FuseCode.RELU6:
        high = quantize(6.0)
    if activation == FuseCode.RELU1:
        low, high = quantize(-1.0), quantize(1.0)
    return np.clip(out, low, high).astype(q_nhwc.dtype)


def pool_tester(
    op,
    x,
    filter_hw,
    stride_hw,
    padding,
    activation=FuseCode.NONE,
    layout=None,
    out_shape=None,
    quant=None,
    dynamic=False,
    out_code=None,
):
    """Builds the operation; `padding` is a PaddingCode (implicit) or (left, right, top, bottom)."""
    quant = quant or {}
    tester = OpTester(op).input(x, **quant)
    if isinstance(padding, tuple):
        for value in padding:
            tester.scalar(OperandCode.INT32, value)
    else:
        tester.scalar(OperandCode.INT32, padding)
    for value in (stride_hw[1], stride_hw[0], filter_hw[1], filter_hw[0], activation):
        tester.scalar(OperandCode.INT32, value)
    if layout is not None:
        tester.scalar(OperandCode.BOOL, layout)
    if out_shape is None:
        shape = x.shape if not layout else (x.shape[0], x.shape[2], x.shape[3], x.shape[1])
        top, bottom, left, right = explicit_pads(shape, filter_hw, stride_hw, padding)
        out_h = (shape[1] + top + bottom - filter_hw[0]) // stride_hw[0] + 1
        out_w = (shape[2] + left + right - filter_hw[1]) // stride_hw[1] + 1
        out_shape = (shape[0], out_h, out_w, shape[3])
        if layout:
            out_shape = (shape[0], shape[3], out_h, out_w)
    code = out_code if out_code is not None else OpTester.default_code(x)
    return tester.output(code, out_shape, **quant).dynamic_outputs(dynamic)


# (input NHWC shape, filter (h, w), stride (h, w), padding)
CASES = {
    "same_odd_nonsquare": ((1, 5, 7, 2), (3, 2), (2, 3), PaddingCode.SAME),
    "valid_stride_gt_filter": ((2, 6, 7, 3), (2, 1), (3, 2), PaddingCode.VALID),
    "same_stride_gt_filter": ((1, 7, 5, 1), (1, 2), (3, 4), PaddingCode.SAME),
    "explicit_one_sided": ((1, 4, 5, 2), (3, 3), (1, 2), (0, 2, 1, 0)),
    "explicit_square": ((2, 3, 3, 1), (2, 2), (1, 1), (1, 1, 1, 1)),
    "global": ((1, 3, 4, 3), (3, 4), (1, 1), PaddingCode.VALID),
}


@pytest.mark.parametrize("op", [AVG, MAX, L2], ids=op_name)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("activation", [FuseCode.NONE, FuseCode.RELU6])
def test_float32(op, case, activation):
    shape, filter_hw, stride_hw, padding = CASES[case]
    rng = np.random.default_rng(len(case))
    x = rng.uniform(-3, 8, shape).astype(np.float32)
    pads = explicit_pads(shape, filter_hw, stride_hw, padding)
    expected = FUSED_ACTIVATIONS[activation](pool_reference(op, x, filter_hw, stride_hw, pads))
    result = pool_tester(op, x, filter_hw, stride_hw, padding, activation).run()[0]
    assert_close(result, expected.astype(np.float32))


@pytest.mark.parametrize("activation", list(FUSED_ACTIVATIONS))
def test_activations(activation):
    x = np.linspace(-4, 9, 2 * 4 * 4 * 2).astype(np.float32).reshape(2, 4, 4, 2)
    pads = explicit_pads(x.shape, (2, 2), (2, 2), PaddingCode.VALID)
    expected = FUSED_ACTIVATIONS[activation](pool_reference(AVG, x, (2, 2), (2, 2), pads))
    result = pool_tester(AVG, x, (2, 2), (2, 2), PaddingCode.VALID, activation).run()[0]
    assert_close(result, expected.astype(np.float32))


def test_average_divides_by_in_bounds_count():
    x = np.ones((1, 3, 3, 1), np.float32)
    # SAME with a 3x3 filter: corner windows hold 4 elements, edges 6, the centre 9.
    result = pool_tester(AVG, x, (3, 3), (1, 1), PaddingCode.SAME).run()[0]
    np.testing.assert_array_equal(result, np.ones((1, 3, 3, 1), np.float32))
    x = np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)
    result = pool_tester(AVG, x, (3, 3), (1, 1), PaddingCode.SAME).run()[0]
    assert result[0, 0, 0, 0] == pytest.approx((0 + 1 + 3 + 4) / 4)
    assert result[0, 1, 1, 0] == pytest.approx(4.0)


@pytest.mark.parametrize("op", [AVG, MAX, L2], ids=op_name)
@pytest.mark.parametrize("padding", [PaddingCode.SAME, (2, 0, 1, 2)])
def test_nchw_layout(op, padding):
    rng = np.random.default_rng(3)
    x_nhwc = rng.uniform(-2, 2, (2, 5, 4, 3)).astype(np.float32)
    filter_hw, stride_hw = (3, 3), (2, 1)
    pads = explicit_pads(x_nhwc.shape, filter_hw, stride_hw, padding)
    expected = pool_reference(op, x_nhwc, filter_hw, stride_hw, pads).transpose(0, 3, 1, 2)
    x_nchw = np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))
    result = pool_tester(op, x_nchw, filter_hw, stride_hw, padding, layout=True).run()[0]
    assert_close(result, expected.astype(np.float32))


@pytest.mark.parametrize("op", [AVG, MAX, L2], ids=op_name)
def test_nhwc_layout_flag_false(op):
    x = np.random.default_rng(4).uniform(0, 1, (1, 4, 4, 2)).astype(np.float32)
    pads = explicit_pads(x.shape, (2, 2), (2, 2), (0, 0, 0, 0))
    expected = pool_reference(op, x, (2, 2), (2, 2), pads)
    result = pool_tester(op, x, (2, 2), (2, 2), (0, 0, 0, 0), layout=False).run()[0]
    assert_close(result, expected.astype(np.float32))


@pytest.mark.parametrize("op", [AVG, MAX, L2], ids=op_name)
@pytest.mark.parametrize("case", ["same_odd_nonsquare", "explicit_one_sided"])
def test_float16(op, case):
    shape, filter_hw, stride_hw, padding = CASES[case]
    x = np.random.default_rng(5).uniform(-2, 4, shape).astype(np.float16)
    pads = explicit_pads(shape, filter_hw, stride_hw, padding)
    expected = pool_reference(op, x, filter_hw, stride_hw, pads)
    result = pool_tester(op, x, filter_hw, stride_hw, padding, layout=False).run()[0]
    assert_close(result, expected, "float16")


QUANT = {
    np.uint8: {"scale": 0.05, "zero_point": 100},
    np.int8: {"scale": 0.05, "zero_point": -20},
}


@pytest.mark.parametrize("op", [AVG, MAX], ids=op_name)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("activation", list(FUSED_ACTIVATIONS))
@pytest.mark.parametrize("case", ["same_odd_nonsquare", "explicit_one_sided"])
def test_quantized(op, dtype, activation, case):
    shape, filter_hw, stride_hw, padding = CASES[case]
    info = np.iinfo(dtype)
    x = np.random.default_rng(6).integers(info.min, info.max + 1, shape, dtype=dtype)
    quant = QUANT[dtype]
    pads = explicit_pads(shape, filter_hw, stride_hw, padding)
    expected = quantized_reference(
        op, x, filter_hw, stride_hw, pads, quant["scale"], quant["zero_point"], activation
    )
    result = pool_tester(op, x, filter_hw, stride_hw, padding, activation, quant=quant).run()[0]
    assert result.dtype == dtype
    assert_close(result, expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_quantized_rounding_and_saturation(dtype):
    info = np.iinfo(dtype)
    # Windows of 2: averages of (min, min+1) and (max-1, max) end in .5 and round away from zero.
    x = np.array([info.min, info.min + 1, info.max - 1, info.max], dtype).reshape(1, 1, 4, 1)
    quant = {"scale": 1.0, "zero_point": 0}
    result = pool_tester(AVG, x, (1, 2), (1, 2), PaddingCode.VALID, quant=quant).run()[0]
    expected = round_away(np.array([info.min + 0.5, info.max - 0.5]))
    np.testing.assert_array_equal(result.reshape(-1), expected.astype(dtype))
    # RELU6 with scale 1 clamps to [zero_point, zero_point + 6].
    result = pool_tester(MAX, x, (1, 1), (1, 1), PaddingCode.VALID, FuseCode.RELU6, quant=quant)
    np.testing.assert_array_equal(result.run()[0].reshape(-1), np.clip(x.reshape(-1), 0, 6))


def test_quantized_activation_bounds_round_in_float_like_convolutions():
    # The RELU6 bound is zero_point + round(6 / scale) in float arithmetic (Android's
    # CalculateActivationRangeUint8, shared with CONV_2D and FULLY_CONNECTED): with scale
    # float32(12 / 255), 6 / scale is exactly 127.5 in float (127.4999975 in double), so 128.
    scale = float(np.float32(12 / 255))
    assert np.float32(6) / np.float32(scale) == np.float32(127.5)
    x = np.array([100, 127, 128, 129, 255], np.uint8).reshape(1, 1, 5, 1)
    quant = {"scale": scale, "zero_point": 0}
    tester = pool_tester(MAX, x, (1, 1), (1, 1), PaddingCode.VALID, FuseCode.RELU6, quant=quant)
    np.testing.assert_array_equal(tester.run()[0].reshape(-1), [100, 127, 128, 128, 128])


@pytest.mark.parametrize("op", [AVG, MAX, L2], ids=op_name)
def test_dynamic_output_shape(op):
    x = np.random.default_rng(7).uniform(0, 1, (2, 5, 7, 3)).astype(np.float32)
    result = pool_tester(op, x, (3, 2), (2, 3), PaddingCode.SAME, dynamic=True).run()[0]
    assert result.shape == (2, 3, 3, 3)


def compute_with_scalar_inputs(tester, feeds, output_shape):
    """Runs a built model whose inputs include scalars (0-d arrays).

    Execution.compute() passes np.ascontiguousarray(value), which is 1-D for a 0-d array, so
    scalar model inputs are set here through the C API with a NULL type.
    """
    model = tester.build()
    execution = Execution(Compilation(model).finish())
    arrays = [np.asarray(value) for value in feeds]
    for index, array in enumerate(arrays):
        pointer = array.ctypes.data_as(ctypes.c_void_p)
        api.call(
            "ANeuralNetworksExecution_setInput",
            execution.handle,
            index,
            None,
            pointer,
            array.nbytes,
        )
    output = np.zeros(output_shape, np.float32)
    pointer = output.ctypes.data_as(ctypes.c_void_p)
    api.call(
        "ANeuralNetworksExecution_setOutput", execution.handle, 0, None, pointer, output.nbytes
    )
    api.call("ANeuralNetworksExecution_compute", execution.handle)
    return output


@pytest.mark.parametrize("stride_w", [0, -1])
def test_stride_as_model_input_checked_at_execution(stride_w):
    x = np.ones((1, 4, 4, 1), np.float32)
    stride = np.array(stride_w, np.int32)
    tester = (
        OpTester(MAX)
        .input(x)
        .scalar(OperandCode.INT32, PaddingCode.VALID)
        .input(stride, OperandCode.INT32)  # stride_w, only known at execution
        .scalar(OperandCode.INT32, 1)
        .scalar(OperandCode.INT32, 2)
        .scalar(OperandCode.INT32, 2)
        .scalar(OperandCode.INT32, FuseCode.NONE)
        .output(OperandCode.TENSOR_FLOAT32, (1, 3, 3, 1))
    )
    with pytest.raises(NnapiError) as error:
        compute_with_scalar_inputs(tester, [x, stride], (1, 3, 3, 1))
    assert error.value.code == ResultCode.OP_FAILED


def test_stride_as_model_input():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    stride = np.array(2, np.int32)
    tester = (
        OpTester(MAX)
        .input(x)
        .scalar(OperandCode.INT32, PaddingCode.VALID)
        .input(stride, OperandCode.INT32)
        .scalar(OperandCode.INT32, 1)
        .scalar(OperandCode.INT32, 2)
        .scalar(OperandCode.INT32, 2)
        .scalar(OperandCode.INT32, FuseCode.NONE)
        .output(OperandCode.TENSOR_FLOAT32, (1, 3, 2, 1))
    )
    result = compute_with_scalar_inputs(tester, [x, stride], (1, 3, 2, 1))
    pads = (0, 0, 0, 0)
    expected = pool_reference(MAX, x, (2, 2), (1, 2), pads)
    assert_close(result, expected.astype(np.float32))


def test_filter_larger_than_padded_input_fails_at_execution():
    x = np.ones((1, 2, 2, 1), np.float32)
    with pytest.raises(NnapiError) as error:
        pool_tester(AVG, x, (3, 3), (1, 1), PaddingCode.VALID, out_shape=(1, 1, 1, 1)).run()
    assert error.value.code == ResultCode.OP_FAILED


X = np.ones((1, 4, 4, 2), np.float32)


# Cases refused by an argument's value: Android validates an operation's types and shapes at
# addOperation, its argument values when the operation is prepared (OP_FAILED at execution).
REFUSED_WHEN_PREPARED = {
    "activation",
    "negative_pad",
    "pad_ge_filter",
    "padding_code",
    "zero_filter",
    "zero_stride",
}


@pytest.mark.parametrize(
    "tester",
    [
        # L2_POOL_2D has no quantised variant.
        pool_tester(
            L2,
            np.ones((1, 4, 4, 1), np.uint8),
            (2, 2),
            (2, 2),
            PaddingCode.VALID,
            quant={"scale": 0.5, "zero_point": 0},
        ),
        # Not a PaddingCode.
        pool_tester(AVG, X, (2, 2), (2, 2), 3, out_shape=(1, 2, 2, 2)),
        # Explicit padding must be smaller than the filter.
        pool_tester(MAX, X, (2, 2), (1, 1), (2, 0, 0, 0), out_shape=(1, 3, 5, 2)),
        # Negative padding, zero stride, zero filter.
        pool_tester(MAX, X, (2, 2), (1, 1), (-1, 0, 0, 0), out_shape=(1, 3, 2, 2)),
        pool_tester(AVG, X, (2, 2), (0, 1), PaddingCode.VALID, out_shape=(1, 3, 3, 2)),
        pool_tester(AVG, X, (2, 0), (1, 1), PaddingCode.VALID, out_shape=(1, 3, 3, 2)),
        # Not a FuseCode.
        pool_tester(AVG, X, (2, 2), (2, 2), PaddingCode.VALID, activation=4),
        # Input must be 4-D.
        pool_tester(
            AVG,
            np.ones((4, 4, 2), np.float32),
            (2, 2),
            (2, 2),
            PaddingCode.VALID,
            out_shape=(2, 2, 2),
        ),
    ],
    ids=[
        "l2_quant",
        "padding_code",
        "pad_ge_filter",
        "negative_pad",
        "zero_stride",
        "zero_filter",
        "activation",
        "rank3",
    ],
)
def test_invalid_configurations_rejected(tester, request):
    expect_refused(tester, request.node.callspec.id in REFUSED_WHEN_PREPARED)


def test_quantized_output_must_keep_input_quantization():
    x = np.ones((1, 4, 4, 1), np.uint8)
    tester = (
        OpTester(MAX)
        .input(x, scale=0.5, zero_point=3)
        .scalar(OperandCode.INT32, PaddingCode.VALID)
        .scalar(OperandCode.INT32, 2)
        .scalar(OperandCode.INT32, 2)
        .scalar(OperandCode.INT32, 2)
        .scalar(OperandCode.INT32, 2)
        .scalar(OperandCode.INT32, FuseCode.NONE)
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (1, 2, 2, 1), scale=0.25, zero_point=3)
    )
    expect_bad_data(tester)


@pytest.mark.parametrize("count", [6, 9, 12])
def test_wrong_input_count_rejected(count):
    tester = OpTester(AVG).input(X)
    for _ in range(count - 1):
        tester.scalar(OperandCode.INT32, 1)
    expect_bad_data(tester.output(OperandCode.TENSOR_FLOAT32, (1, 4, 4, 2)))


def test_layout_flag_must_be_bool():
    tester = (
        OpTester(AVG)
        .input(X)
        .scalar(OperandCode.INT32, PaddingCode.VALID)
        .scalar(OperandCode.INT32, 1)
        .scalar(OperandCode.INT32, 1)
        .scalar(OperandCode.INT32, 1)
        .scalar(OperandCode.INT32, 1)
        .scalar(OperandCode.INT32, FuseCode.NONE)
        .scalar(OperandCode.INT32, 0)
        .output(OperandCode.TENSOR_FLOAT32, X.shape)
    )
    expect_bad_data(tester)


def test_output_type_must_match_input():
    code = OperandCode.TENSOR_FLOAT16
    expect_bad_data(pool_tester(MAX, X, (2, 2), (2, 2), PaddingCode.VALID, out_code=code))
