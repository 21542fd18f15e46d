# SPDX-License-Identifier: Apache-2.0
"""ROI_ALIGN and ROI_POOLING against numpy references of the NDK's definitions (Mask R-CNN's
RoIAlign: averaged bilinear samples on a regular grid in each bin; Fast R-CNN's RoIPool: the
maximum over each bin of the rounded box).

Covered: fp32, fp16, QUANT8_ASYMM and QUANT8_ASYMM_SIGNED maps (QUANT16_ASYMM boxes), both
layouts, several images and boxes, ratios other than 1, fixed and adaptive sampling, boxes
partly outside the map, hand-checked values, zero rois (an empty output consumed by
CONCATENATION), dynamic output shapes, the BAD_DATA validation rules, OP_FAILED for a batch
index out of range and for quantised boxes with other parameters, and the feature levels
(3; 4 for signed).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mock_nnapi
from mock_nnapi import Compilation, Model, NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add, expect_failed_when_prepared
from .op_tester import OpTester, assert_close
from .test_conv_2d import required_feature_level

ALIGN = OperationCode.ROI_ALIGN
POOL = OperationCode.ROI_POOLING
F32 = OperandCode.TENSOR_FLOAT32
F16 = OperandCode.TENSOR_FLOAT16
Q16 = OperandCode.TENSOR_QUANT16_ASYMM


def bilinear(image, y, x):
    """image [H, W, C]; (y, x) inside the map."""
    height, width = image.shape[:2]
    y0, x0 = math.floor(y), math.floor(x)
    y1, x1 = min(y0 + 1, height - 1), min(x0 + 1, width - 1)
    dy, dx = y - y0, x - x0
    return (
        (1 - dy) * (1 - dx) * image[y0, x0]
        + (1 - dy) * dx * image[y0, x1]
        + dy * (1 - dx) * image[y1, x0]
        + dy * dx * image[y1, x1]
    )


def roi_align(x, rois, batches, out_h, out_w, h_ratio, w_ratio, s_h, s_w):
    """x NHWC (real values)."""
    x = x.astype(np.float64)
    height, width = x.shape[1:3]
    out = np.zeros((len(rois), out_h, out_w, x.shape[3]))
    for r, (box, b) in enumerate(zip(rois.astype(np.float64), batches, strict=True)):
        x1, y1, x2, y2 = box[0] / w_ratio, box[1] / h_ratio, box[2] / w_ratio, box[3] / h_ratio
        bin_h, bin_w = max(y2 - y1, 1) / out_h, max(x2 - x1, 1) / out_w
        n_h = s_h if s_h > 0 else math.ceil(bin_h)
        n_w = s_w if s_w > 0 else math.ceil(bin_w)
        for i in range(out_h):
            for j in range(out_w):
                total = np.zeros(x.shape[3])
                for sy in range(n_h):
                    yy = y1 + i * bin_h + (sy + 0.5) * bin_h / n_h
                    for sx in range(n_w):
                        xx = x1 + j * bin_w + (sx + 0.5) * bin_w / n_w
                        if yy < -1 or yy > height or xx < -1 or xx > width:
                            continue  # outside the map: a zero sample
                        total += bilinear(
                            x[b], min(max(yy, 0), height - 1), min(max(xx, 0), width - 1)
                        )
                out[r, i, j] = total / (n_h * n_w)
    return out


def round_half_away(value):
    """std::round: halves away from zero (Python's round() takes them to even)."""
    return math.copysign(math.floor(abs(value) + 0.5), value)


def roi_pool(x, rois, batches, out_h, out_w, h_ratio, w_ratio, fill=0.0):
    x = x.astype(np.float64)
    height, width = x.shape[1:3]
    out = np.zeros((len(rois), out_h, out_w, x.shape[3]))
    for r, (box, b) in enumerate(zip(rois.astype(np.float64), batches, strict=True)):
        x1, y1 = round_half_away(box[0] / w_ratio), round_half_away(box[1] / h_ratio)
        x2, y2 = round_half_away(box[2] / w_ratio), round_half_away(box[3] / h_ratio)
        x1, y1, x2, y2 = int(x1), int(y1), int(x2), int(y2)
        bin_h, bin_w = max(y2 - y1 + 1, 1) / out_h, max(x2 - x1 + 1, 1) / out_w
        for i in range(out_h):
            rows = slice(
                min(max(math.floor(i * bin_h) + y1, 0), height),
                min(max(math.ceil((i + 1) * bin_h) + y1, 0), height),
            )
            for j in range(out_w):
                cols = slice(
                    min(max(math.floor(j * bin_w) + x1, 0), width),
                    min(max(math.ceil((j + 1) * bin_w) + x1, 0), width),
                )
                window = x[b, rows, cols]
                out[r, i, j] = window.max(axis=(0, 1)) if window.size else fill
    return out


def random_case(seed=0, batches=2, height=7, width=9, depth=3, num_rois=5):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, 4, (batches, height, width, depth))
    # Boxes in original-image coordinates (ratio 2 and 1.5), some reaching past the map.
    corner = rng.uniform(-2, 12, (num_rois, 2))
    size = rng.uniform(0, 10, (num_rois, 2))
    rois = np.concatenate([corner, corner + size], axis=1)
    return x, rois, rng.integers(0, batches, num_rois).astype(np.int32)


def make_tester(
    op,
    x,
    rois,
    batches,
    out_h,
    out_w,
    h_ratio,
    w_ratio,
    sampling=(2, 2),
    nchw=False,
    code=F32,
    quant=(0.0, 0),
    out_quant=None,
    roi_quant=(0.0, 0),
    out_shape=None,
    ratio_code=None,
):
    fed = np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x
    roi_code = Q16 if code not in (F32, F16) else code
    ratio_code = ratio_code or (OperandCode.FLOAT16 if code == F16 else OperandCode.FLOAT32)
    tester = (
        OpTester(op)
        .input(fed, code, *quant)
        .input(rois, roi_code, *roi_quant)
        .input(batches)
        .scalar(OperandCode.INT32, out_h)
        .scalar(OperandCode.INT32, out_w)
        .scalar(ratio_code, h_ratio)
        .scalar(ratio_code, w_ratio)
    )
    if op == ALIGN:
        tester.scalar(OperandCode.INT32, sampling[0]).scalar(OperandCode.INT32, sampling[1])
    tester.scalar(OperandCode.BOOL, nchw)
    if out_shape is None:
        depth = x.shape[3]
        out_shape = (len(rois), depth, out_h, out_w) if nchw else (len(rois), out_h, out_w, depth)
    return tester.output(code, out_shape, *(out_quant or quant))


def run(
    op,
    x,
    rois,
    batches,
    out_h,
    out_w,
    h_ratio,
    w_ratio,
    sampling=(2, 2),
    nchw=False,
    code=F32,
    quant=(0.0, 0),
    out_quant=None,
    dynamic=False,
):
    roi_quant = (0.125, 0) if code not in (F32, F16) else (0.0, 0)
    tester = make_tester(
        op,
        x,
        rois,
        batches,
        out_h,
        out_w,
        h_ratio,
        w_ratio,
        sampling,
        nchw,
        code,
        quant,
        out_quant,
        roi_quant,
    )
    (result,) = tester.dynamic_outputs(dynamic).run()
    return result.transpose(0, 2, 3, 1) if nchw else result


def quantize(values, scale, zero_point, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.round(values / scale) + zero_point, info.min, info.max).astype(dtype)


@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize(
    ("sampling", "seed"), [((2, 2), 0), ((1, 3), 1), ((0, 0), 2)], ids=["2x2", "1x3", "adaptive"]
)
def test_roi_align_float32(nchw, sampling, seed):
    x, rois, batches = random_case(seed=seed)
    x, rois = x.astype(np.float32), rois.astype(np.float32)
    result = run(
        ALIGN, x, rois, batches, 3, 2, 2.0, 1.5, sampling, nchw, dynamic=sampling == (1, 3)
    )
    expected = roi_align(x, rois, batches, 3, 2, 2.0, 1.5, *sampling)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize(("seed", "out_size"), [(0, (3, 2)), (1, (1, 1)), (2, (4, 5))])
def test_roi_pooling_float32(nchw, seed, out_size):
    x, rois, batches = random_case(seed=seed)
    x, rois = x.astype(np.float32), rois.astype(np.float32)
    result = run(POOL, x, rois, batches, *out_size, 2.0, 1.5, nchw=nchw, dynamic=seed == 1)
    np.testing.assert_array_equal(result, roi_pool(x, rois, batches, *out_size, 2.0, 1.5))


@pytest.mark.parametrize("op", [ALIGN, POOL])
def test_float16(op):
    x, rois, batches = random_case(seed=4)
    x = x.astype(np.float16)
    rois = np.round(rois * 4).astype(np.float16) / np.float16(4)
    result = run(op, x, rois, batches, 2, 3, 2.0, 1.5, nchw=False, code=F16)
    if op == ALIGN:
        expected = roi_align(x, rois, batches, 2, 3, 2.0, 1.5, 2, 2)
    else:
        expected = roi_pool(x, rois, batches, 2, 3, 2.0, 1.5)
    assert_close(result, expected, "float16")


@pytest.mark.parametrize("op", [ALIGN, POOL])
@pytest.mark.parametrize(
    ("dtype", "code", "zero_point"),
    [
        (np.uint8, OperandCode.TENSOR_QUANT8_ASYMM, 128),
        (np.int8, OperandCode.TENSOR_QUANT8_ASYMM_SIGNED, -3),
    ],
)
@pytest.mark.parametrize("nchw", [False, True])
def test_quantized(op, dtype, code, zero_point, nchw):
    x, rois, batches = random_case(seed=5)
    q = quantize(x, 1 / 16, zero_point, dtype)
    q_rois = np.round(rois.clip(0) / 0.125).astype(np.uint16)
    real = (q.astype(np.float64) - zero_point) / 16
    out_quant = (1 / 32, zero_point + 1) if op == ALIGN else None
    result = run(
        op, q, q_rois, batches, 2, 2, 2.0, 1.5, (2, 1), nchw, code, (1 / 16, zero_point), out_quant
    )
    if op == ALIGN:
        expected = roi_align(real, q_rois * 0.125, batches, 2, 2, 2.0, 1.5, 2, 1)
        expected_q = expected * 32 + zero_point + 1
    else:
        expected = roi_pool(real, q_rois * 0.125, batches, 2, 2, 2.0, 1.5)
        expected_q = expected * 16 + zero_point
    info = np.iinfo(dtype)
    assert np.abs(result.astype(np.float64) - np.clip(expected_q, info.min, info.max)).max() <= 1


def test_hand_checked():
    # A 1x3x3x1 map 0..8; the box [0, 0, 2, 2] at ratio 1 and a 1x1 output.
    x = np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)
    rois = np.array([[0, 0, 2, 2]], np.float32)
    batches = np.array([0], np.int32)
    # ROI_ALIGN with one sample: the centre (1, 1) of the 2x2 box, value 4.
    assert run(ALIGN, x, rois, batches, 1, 1, 1.0, 1.0, (1, 1)).item() == pytest.approx(4.0)
    # Two samples per axis: (0.5, 0.5), (0.5, 1.5), (1.5, 0.5), (1.5, 1.5) average to 4 too;
    # with a 2x2 output, bin (0, 0) samples (0.5, 0.5) once: (0 + 1 + 3 + 4) / 4 = 2.
    aligned = run(ALIGN, x, rois, batches, 2, 2, 1.0, 1.0, (1, 1))
    np.testing.assert_allclose(aligned[0, :, :, 0], [[2, 3], [5, 6]])
    # ROI_POOLING: the rounded box covers rows and columns 0..2; a 2x2 output splits them 0..1
    # and 1..2 (bins of 1.5 pixels: floor/ceil), maxima 4, 5, 7, 8.
    pooled = run(POOL, x, rois, batches, 2, 2, 1.0, 1.0)
    assert pooled[0, :, :, 0].tolist() == [[4, 5], [7, 8]]


@pytest.mark.parametrize("op", [ALIGN, POOL])
def test_zero_rois(op):
    model = Model()
    rois_in = model.add_operand(F32, (2, 4))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(2, np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, -1], np.int32))
    rois = model.add_operand(F32, (0, 4))
    model.add_operation(OperationCode.SLICE, [rois_in, begin, size], [rois])
    batches_in = model.add_operand(OperandCode.TENSOR_INT32, (2,))
    batches = model.add_operand(OperandCode.TENSOR_INT32, (0,))
    model.add_operation(
        OperationCode.SLICE,
        [
            batches_in,
            model.add_constant(OperandCode.TENSOR_INT32, np.zeros(1, np.int32)),
            model.add_constant(OperandCode.TENSOR_INT32, np.zeros(1, np.int32)),
        ],
        [batches],
    )
    x = model.add_constant(F32, np.ones((1, 4, 4, 2), np.float32))
    scalars = [
        model.add_scalar(OperandCode.INT32, 2),
        model.add_scalar(OperandCode.INT32, 2),
        model.add_scalar(OperandCode.FLOAT32, 1.0),
        model.add_scalar(OperandCode.FLOAT32, 1.0),
    ]
    if op == ALIGN:
        scalars += [model.add_scalar(OperandCode.INT32, 2), model.add_scalar(OperandCode.INT32, 2)]
    scalars.append(model.add_scalar(OperandCode.BOOL, False))
    pooled = model.add_operand(F32, (0, 2, 2, 2))
    model.add_operation(op, [x, rois, batches, *scalars], [pooled])
    row = model.add_constant(F32, np.full((1, 2, 2, 2), 7, np.float32))
    out = model.add_operand(F32, (1, 2, 2, 2))
    model.add_operation(
        OperationCode.CONCATENATION, [pooled, row, model.add_scalar(OperandCode.INT32, 0)], [out]
    )
    model.identify_inputs_and_outputs([rois_in, batches_in], [out])
    model.finish()
    compilation = Compilation(model).finish()
    before = mock_nnapi.operation_count(op)
    (result,) = compilation.execute(
        [np.ones((2, 4), np.float32), np.zeros(2, np.int32)], [(1, 2, 2, 2)]
    )
    np.testing.assert_array_equal(result, np.full((1, 2, 2, 2), 7, np.float32))
    assert mock_nnapi.operation_count(op) == before + 1


@pytest.mark.parametrize("op", [ALIGN, POOL])
def test_rejects_bad_operands(op):
    x, rois, batches = random_case()
    x, rois = x.astype(np.float32), rois.astype(np.float32)
    args = (3, 2, 2.0, 1.5)
    assert "output size" in expect_failed_when_prepared(
        make_tester(op, x, rois, batches, 0, 2, 2.0, 1.5, out_shape=(5, 1, 2, 3))
    )
    assert "ratio" in expect_failed_when_prepared(make_tester(op, x, rois, batches, 3, 2, 0.0, 1.5))
    assert "rois" in expect_failed_when_prepared(make_tester(op, x, rois[:, :3], batches, *args))
    assert "batch" in expect_failed_when_prepared(make_tester(op, x, rois, batches[:4], *args))
    assert "rank" in expect_bad_data_at_add(
        make_tester(op, x[0], rois, batches, *args, out_shape=(5, 3, 2, 3))
    )
    expect_failed_when_prepared(make_tester(op, x, rois, batches, *args, out_shape=(5, 2, 2, 3)))
    # fp16 boxes for an fp32 map; FLOAT16 ratios for an fp32 map.
    tester = make_tester(op, x, rois, batches, *args)
    tester._inputs[1].update(array=rois.astype(np.float16), code=F16)
    expect_bad_data_at_add(tester)
    expect_bad_data_at_add(make_tester(op, x, rois, batches, *args, ratio_code=OperandCode.FLOAT16))
    if op == ALIGN:
        assert "sampling" in expect_failed_when_prepared(
            make_tester(op, x, rois, batches, *args, (-1, 2))
        )
    else:
        # ROI_POOLING's quantised output keeps the map's parameters.
        q = quantize(x, 0.5, 3, np.uint8)
        expect_bad_data_at_add(
            make_tester(
                op,
                q,
                rois.astype(np.uint16),
                batches,
                *args,
                code=OperandCode.TENSOR_QUANT8_ASYMM,
                quant=(0.5, 3),
                out_quant=(0.5, 4),
                roi_quant=(0.125, 0),
            )
        )


@pytest.mark.parametrize("op", [ALIGN, POOL])
@pytest.mark.parametrize("what", ["batch_index", "roi_quant"])
def test_fails_the_execution(op, what):
    x, rois, batches = random_case()
    q = quantize(x, 0.5, 3, np.uint8)
    q_rois = np.round(rois.clip(0) / 0.125).astype(np.uint16)
    if what == "batch_index":
        batches = batches.copy()
        batches[2] = 2
    roi_quant = (0.25, 0) if what == "roi_quant" else (0.125, 0)
    tester = make_tester(
        op,
        q,
        q_rois,
        batches,
        2,
        2,
        2.0,
        1.5,
        code=OperandCode.TENSOR_QUANT8_ASYMM,
        quant=(0.5, 3),
        roi_quant=roi_quant,
    )
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)


@pytest.mark.parametrize("op", [ALIGN, POOL])
@pytest.mark.parametrize(
    ("code", "dtype", "level"),
    [
        (F32, np.float32, 3),
        (F16, np.float16, 3),
        (OperandCode.TENSOR_QUANT8_ASYMM, np.uint8, 3),
        (OperandCode.TENSOR_QUANT8_ASYMM_SIGNED, np.int8, 4),
    ],
)
def test_feature_levels(feature_level_devices, op, code, dtype, level):
    quantized = code not in (F32, F16)
    rois = np.zeros((2, 4), np.uint16 if quantized else dtype)
    tester = make_tester(
        op,
        np.zeros((1, 4, 4, 2), dtype),
        rois,
        np.zeros(2, np.int32),
        2,
        2,
        1.0,
        1.0,
        code=code,
        quant=(0.5, 0) if quantized else (0.0, 0),
        roi_quant=(0.125, 0) if quantized else (0.0, 0),
    )
    assert required_feature_level(tester, feature_level_devices) == level
