# SPDX-License-Identifier: Apache-2.0
"""GENERATE_PROPOSALS against a numpy reference written from the NDK's description: anchors moved
over the feature map by the strides, refined by the deltas (AXIS_ALIGNED_BBOX_TRANSFORM's rule),
clipped to the image, cut to the pre-NMS maximum, filtered by min_size, then hard NMS up to the
post-NMS maximum; per image, in decreasing score.

Covered: fp32, fp16, QUANT8_ASYMM and QUANT8_ASYMM_SIGNED (QUANT16_SYMM anchors, QUANT16_ASYMM
image info and boxes), both layouts, several images, the pre- and post-NMS limits (and no
limit), a hand-checked case (clipping, IoU exactly at the threshold suppresses), every box
filtered (empty outputs), the BAD_DATA validation rules, OP_FAILED for an inverted anchor and
for quantised operands with other parameters, zero-sized inputs, and the feature levels (3; 4
for signed). The outputs' sizes depend on the values, so every case declares them unknown.
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

GP = OperationCode.GENERATE_PROPOSALS
F32 = OperandCode.TENSOR_FLOAT32
F16 = OperandCode.TENSOR_FLOAT16
U8 = OperandCode.TENSOR_QUANT8_ASYMM
S8 = OperandCode.TENSOR_QUANT8_ASYMM_SIGNED
Q16 = OperandCode.TENSOR_QUANT16_ASYMM
Q16S = OperandCode.TENSOR_QUANT16_SYMM
I32 = OperandCode.TENSOR_INT32


def iou(a, b):
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else math.nan


def reference(scores, deltas, anchors, image, h_stride, w_stride, pre, post, iou_thr, min_size):
    """NHWC real inputs; a list of (score, [x1, y1, x2, y2], image) in output order."""
    scores = scores.astype(np.float64)
    deltas = deltas.astype(np.float64)
    anchors = anchors.astype(np.float64)
    batches, height, width, num_anchors = scores.shape
    out = []
    for b in range(batches):
        image_h, image_w = image[b].astype(np.float64)
        boxes, box_scores = [], []
        for h in range(height):
            for w in range(width):
                for a in range(num_anchors):
                    x1, y1, x2, y2 = anchors[a] + [w * w_stride, h * h_stride] * 2
                    dx, dy, dw, dh = deltas[b, h, w, 4 * a : 4 * a + 4]
                    bw, bh = x2 - x1, y2 - y1
                    cx, cy = (x1 + x2) / 2 + dx * bw, (y1 + y2) / 2 + dy * bh
                    bw, bh = bw * math.exp(dw), bh * math.exp(dh)
                    box = [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2]
                    limits = [image_w, image_h] * 2
                    boxes.append(
                        [min(max(v, 0.0), lim) for v, lim in zip(box, limits, strict=True)]
                    )
                    box_scores.append(scores[b, h, w, a])
        order = list(range(len(boxes)))
        if 0 < pre < len(order):
            order = sorted(order, key=lambda i: -box_scores[i])[:pre]
        kept_candidates = []
        for i in order:
            x1, y1, x2, y2 = boxes[i]
            bw, bh = x2 - x1, y2 - y1
            if bw > min_size and bh > min_size and x1 + bw / 2 < image_w and y1 + bh / 2 < image_h:
                kept_candidates.append(i)
        candidates = sorted(kept_candidates, key=lambda i: -box_scores[i])
        chosen = []
        while candidates and (post <= 0 or len(chosen) < post):
            best = candidates.pop(0)
            chosen.append(best)
            candidates = [c for c in candidates if not iou(boxes[c], boxes[best]) >= iou_thr]
        out += [(box_scores[i], boxes[i], b) for i in chosen]
    return out


def make_tester(
    scores,
    deltas,
    anchors,
    image,
    h_stride=4.0,
    w_stride=4.0,
    pre=-1,
    post=-1,
    iou_thr=0.5,
    min_size=1.0,
    nchw=False,
    code=F32,
    score_quant=(0.0, 0),
    delta_quant=(0.0, 0),
    anchor_quant=(0.0, 0),
    image_quant=(0.0, 0),
    out_quant=None,
    box_quant=None,
    scalar_code=None,
):
    quantized = code in (U8, S8)
    real = scalar_code or (OperandCode.FLOAT16 if code == F16 else OperandCode.FLOAT32)
    if nchw:
        scores = scores.transpose(0, 3, 1, 2)
        deltas = deltas.transpose(0, 3, 1, 2)
    box_code = Q16 if quantized else code
    return (
        OpTester(GP)
        .input(scores, code, *score_quant)
        .input(deltas, code, *delta_quant)
        .input(anchors, Q16S if quantized else code, *anchor_quant)
        .input(image, box_code, *image_quant)
        .scalar(real, h_stride)
        .scalar(real, w_stride)
        .scalar(OperandCode.INT32, pre)
        .scalar(OperandCode.INT32, post)
        .scalar(real, iou_thr)
        .scalar(real, min_size)
        .scalar(OperandCode.BOOL, nchw)
        .output(code, (1,), *(out_quant or score_quant))
        .output(box_code, (1, 4), *(box_quant or image_quant))
        .output(I32, (1,))
        .dynamic_outputs()
    )


def run_case(tester, n):
    """Runs with outputs sized for n proposals."""
    tester._outputs[0]["shape"] = (n,)
    tester._outputs[1]["shape"] = (n, 4)
    tester._outputs[2]["shape"] = (n,)
    return tester.run()


def random_case(seed, batches=2, height=3, width=4, anchors=3):
    rng = np.random.default_rng(seed)
    count = batches * height * width * anchors
    # Distinct scores (the order of equal scores is not specified).
    scores = (rng.permutation(count) / count + 0.01).reshape(batches, height, width, anchors)
    deltas = rng.uniform(-0.4, 0.4, (batches, height, width, anchors * 4))
    corner = rng.uniform(0, 6, (anchors, 2))
    size = rng.uniform(2, 10, (anchors, 2))
    anchor_boxes = np.concatenate([corner, corner + size], axis=1)
    image = np.array([[14.0, 18.0], [10.0, 12.0], [16.0, 16.0]])[:batches]
    return scores, deltas, anchor_boxes, image


def check(result, expected, dtype=np.float32):
    out_scores, out_boxes, images = result
    assert images.tolist() == [e[2] for e in expected]
    np.testing.assert_allclose(out_scores, [e[0] for e in expected], rtol=1e-6)
    np.testing.assert_allclose(
        out_boxes, np.array([e[1] for e in expected]).reshape(-1, 4), rtol=1e-5, atol=1e-4
    )


@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize(("pre", "post"), [(-1, -1), (20, 6), (0, 3), (8, 0)])
@pytest.mark.parametrize("seed", [0, 1])
def test_float32(nchw, pre, post, seed):
    scores, deltas, anchors, image = (a.astype(np.float32) for a in random_case(seed))
    args = (4.0, 3.0, pre, post, 0.4, 1.5)
    expected = reference(scores, deltas, anchors, image, *args)
    tester = make_tester(scores, deltas, anchors, image, *args, nchw=nchw)
    check(run_case(tester, len(expected)), expected)
    if post > 0:
        assert len([e for e in expected if e[2] == 0]) <= post


def test_float16():
    scores, deltas, anchors, image = random_case(2)
    scores = scores.astype(np.float16)
    deltas = (np.round(deltas * 64) / 64).astype(np.float16)
    anchors = (np.round(anchors * 4) / 4).astype(np.float16)
    image = image.astype(np.float16)
    args = (4.0, 2.0, 16, 5, 0.5, 1.0)
    expected = reference(scores, deltas, anchors, image, *args)
    out_scores, out_boxes, images = run_case(
        make_tester(scores, deltas, anchors, image, *args, code=F16), len(expected)
    )
    assert images.tolist() == [e[2] for e in expected]
    np.testing.assert_array_equal(out_scores, np.array([e[0] for e in expected], np.float16))
    assert_close(out_boxes, np.array([e[1] for e in expected]), "float16")


@pytest.mark.parametrize(("dtype", "code", "zero_point"), [(np.uint8, U8, 7), (np.int8, S8, -90)])
@pytest.mark.parametrize("nchw", [False, True])
def test_quantized(dtype, code, zero_point, nchw):
    scores, deltas, anchors, image = random_case(3)
    q_scores = ((np.arange(scores.size).reshape(scores.shape) * 37 % 233) + zero_point + 1).astype(
        dtype
    )
    q_deltas = np.round(deltas / 0.01 + zero_point).astype(dtype)
    q_anchors = np.round(anchors / 0.125).astype(np.int16)
    q_image = np.round(image / 0.125).astype(np.uint16)
    real = {
        "scores": (q_scores.astype(np.float64) - zero_point) / 256,
        "deltas": (q_deltas.astype(np.float64) - zero_point) * 0.01,
    }
    args = (4.0, 3.0, 30, 10, 0.4, 1.5)
    expected = reference(real["scores"], real["deltas"], q_anchors * 0.125, q_image * 0.125, *args)
    tester = make_tester(
        q_scores,
        q_deltas,
        q_anchors,
        q_image,
        *args,
        nchw=nchw,
        code=code,
        score_quant=(1 / 256, zero_point),
        delta_quant=(0.01, zero_point),
        anchor_quant=(0.125, 0),
        image_quant=(0.125, 0),
    )
    out_scores, out_boxes, images = run_case(tester, len(expected))
    assert images.tolist() == [e[2] for e in expected]
    # Scores keep input 0's quantisation: the selected values come back unchanged.
    np.testing.assert_array_equal(
        out_scores, np.round(np.array([e[0] for e in expected]) * 256 + zero_point)
    )
    expected_boxes = np.array([e[1] for e in expected]) / 0.125
    assert np.abs(out_boxes.astype(np.float64) - expected_boxes).max() <= 0.5 + 1e-3


# Hand-checked: a 1 x 3 map, one 10 x 10 anchor, strides 10: anchors at x = 0, 10, 20. Image
# 20 high, 30 wide. Location 0: no delta, [0, 0, 10, 10], score 0.9. Location 1: dx = 0.5,
# dw = ln 3: centre 15 + 5 = 20, width 30: [5, 0, 35, 10], clipped to [5, 0, 30, 10], score 0.8.
# Location 2: dx = -0.5: centre 25 - 5 = 20, [15, 0, 25, 10], score 0.7; IoU with location 1's box
# = 100 / 250 = 0.4 (exact in float32), with location 0's = 0.
HAND_SCORES = np.array([0.9, 0.8, 0.7], np.float32).reshape(1, 1, 3, 1)
HAND_DELTAS = np.array(
    [[0, 0, 0, 0], [0.5, 0, math.log(3), 0], [-0.5, 0, 0, 0]], np.float32
).reshape(1, 1, 3, 4)
HAND_ANCHORS = np.array([[0, 0, 10, 10]], np.float32)
HAND_IMAGE = np.array([[20, 30]], np.float32)


def hand_tester(**kwargs):
    args = dict(h_stride=10.0, w_stride=10.0, iou_thr=0.4, min_size=1.0) | kwargs
    return make_tester(HAND_SCORES, HAND_DELTAS, HAND_ANCHORS, HAND_IMAGE, **args)


def test_hand_checked():
    # IoU 0.4 >= threshold 0.4: location 2 is suppressed.
    out_scores, out_boxes, images = run_case(hand_tester(), 2)
    np.testing.assert_allclose(out_scores, [0.9, 0.8])
    np.testing.assert_allclose(out_boxes, [[0, 0, 10, 10], [5, 0, 30, 10]], atol=1e-5)
    assert images.tolist() == [0, 0]
    # A threshold above 0.4 keeps it.
    out_scores, out_boxes, _ = run_case(hand_tester(iou_thr=0.41), 3)
    np.testing.assert_allclose(out_scores, [0.9, 0.8, 0.7])
    np.testing.assert_allclose(out_boxes[2], [15, 0, 25, 10], atol=1e-5)
    # The pre-NMS maximum keeps the two best before NMS; the post-NMS maximum cuts after it.
    (out_scores, _, _) = run_case(hand_tester(iou_thr=0.41, pre=2), 2)
    np.testing.assert_allclose(out_scores, [0.9, 0.8])
    (out_scores, _, _) = run_case(hand_tester(iou_thr=0.41, post=1), 1)
    np.testing.assert_allclose(out_scores, [0.9])
    # min_size 9.5 removes nothing (every side is 10 or more); at 10 a side must exceed it.
    (out_scores, _, _) = run_case(hand_tester(min_size=9.5), 2)
    np.testing.assert_allclose(out_scores, [0.9, 0.8])


def test_every_box_filtered_gives_empty_outputs():
    # min_size 10: every box has a side of exactly 10, so none survives. The empty scores join a
    # row in CONCATENATION (an output of size 0 cannot be a model output buffer).
    model = Model()
    scores = model.add_operand(F32, HAND_SCORES.shape)
    inputs = [
        scores,
        model.add_constant(F32, HAND_DELTAS),
        model.add_constant(F32, HAND_ANCHORS),
        model.add_constant(F32, HAND_IMAGE),
    ]
    for code, value in [
        (OperandCode.FLOAT32, 10.0),
        (OperandCode.FLOAT32, 10.0),
        (OperandCode.INT32, -1),
        (OperandCode.INT32, -1),
        (OperandCode.FLOAT32, 0.5),
        (OperandCode.FLOAT32, 10.0),
        (OperandCode.BOOL, False),
    ]:
        inputs.append(model.add_scalar(code, value))
    outputs = [
        model.add_operand(F32, (0,)),
        model.add_operand(F32, (0, 0)),
        model.add_operand(I32, (0,)),
    ]
    model.add_operation(GP, inputs, outputs)
    row = model.add_constant(F32, np.array([7.0], np.float32))
    out = model.add_operand(F32, (1,))
    model.add_operation(
        OperationCode.CONCATENATION,
        [outputs[0], row, model.add_scalar(OperandCode.INT32, 0)],
        [out],
    )
    model.identify_inputs_and_outputs([scores], [out])
    model.finish()
    compilation = Compilation(model).finish()
    before = mock_nnapi.operation_count(GP)
    (result,) = compilation.execute([HAND_SCORES], [(1,)])
    assert result.tolist() == [7.0]
    assert mock_nnapi.operation_count(GP) == before + 1


def test_rejects_bad_operands():
    scores, deltas, anchors, image = (a.astype(np.float32) for a in random_case(0))
    args = (scores, deltas, anchors, image)
    # The shapes are read in the layout a constant argument names, so Android checks them when
    # it prepares the operation (its validation never sees a value).
    prepared = expect_failed_when_prepared
    assert "deltas" in prepared(make_tester(scores, deltas[..., :8], anchors, image))
    assert "anchors" in prepared(make_tester(scores, deltas, anchors[:2], image))
    assert "image info" in prepared(make_tester(scores, deltas, anchors, image[:1]))
    # NCHW reads the anchors from dimension 1: the NHWC tensors do not fit.
    tester = make_tester(*args)
    tester._inputs[10]["value"] = True
    prepared(tester)
    expect_bad_data_at_add(make_tester(*args, scalar_code=OperandCode.FLOAT16))
    tester = make_tester(*args)
    tester._outputs[2]["code"] = F32
    assert "output 2" in expect_bad_data_at_add(tester)
    tester = make_tester(*args)
    tester._inputs[2].update(array=anchors.astype(np.float16), code=F16)
    expect_bad_data_at_add(tester)
    # Quantised scores need QUANT16_SYMM anchors and QUANT16_ASYMM image info.
    tester = make_tester(
        scores.astype(np.uint8), deltas.astype(np.uint8), anchors.astype(np.int16),
        image.astype(np.uint16), code=U8, score_quant=(1.0, 0), delta_quant=(1.0, 0),
        anchor_quant=(0.125, 0), image_quant=(0.125, 0),
    )  # fmt: skip
    tester._inputs[2]["code"] = Q16
    expect_bad_data_at_add(tester)
    tester = make_tester(*args)
    tester._inputs[0]["code"] = I32
    tester._inputs[0]["array"] = scores.astype(np.int32)
    expect_bad_data_at_add(tester)


def test_inverted_anchor_fails_the_execution():
    anchors = np.array([[0, 0, 10, 10], [5, 0, 1, 4]], np.float32)
    tester = make_tester(
        np.full((1, 1, 1, 2), 0.5, np.float32), np.zeros((1, 1, 1, 8), np.float32),
        anchors, np.array([[20, 20]], np.float32),
    )  # fmt: skip
    with pytest.raises(NnapiError) as error:
        run_case(tester, 1)
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert "inverted" in str(error.value)


@pytest.mark.parametrize(
    ("field", "quant"),
    [("anchor_quant", (0.25, 0)), ("image_quant", (0.125, 2)), ("out_quant", (1 / 128, 0))],
)
def test_quantization_parameters_are_fixed(field, quant):
    params = dict(
        score_quant=(1 / 256, 0), delta_quant=(0.01, 0), anchor_quant=(0.125, 0),
        image_quant=(0.125, 0),
    ) | {field: quant}  # fmt: skip
    tester = make_tester(
        np.full((1, 1, 1, 1), 200, np.uint8), np.zeros((1, 1, 1, 4), np.uint8),
        np.array([[0, 0, 40, 40]], np.int16), np.array([[160, 160]], np.uint16), code=U8, **params,
    )  # fmt: skip
    with pytest.raises(NnapiError) as error:
        run_case(tester, 1)
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)


def sliced_to_zero_columns(model, shape):
    """A model input of `shape` and the [b, h, 0, c] tensor SLICE makes of it."""
    source = model.add_operand(F32, shape)
    empty = model.add_operand(F32, (shape[0], shape[1], 0, shape[3]))
    begin = model.add_constant(I32, np.zeros(4, np.int32))
    size = model.add_constant(I32, np.array([shape[0], shape[1], 0, shape[3]], np.int32))
    model.add_operation(OperationCode.SLICE, [source, begin, size], [empty])
    return source, empty


def test_zero_sized_scores_fail():
    # GENERATE_PROPOSALS does not accept zero-sized inputs (a map without columns here).
    model = Model()
    score_source, scores = sliced_to_zero_columns(model, (1, 2, 2, 1))
    delta_source, deltas = sliced_to_zero_columns(model, (1, 2, 2, 4))
    inputs = [
        scores,
        deltas,
        model.add_constant(F32, np.array([[0, 0, 4, 4]], np.float32)),
        model.add_constant(F32, np.array([[8, 8]], np.float32)),
    ]
    for code, value in [
        (OperandCode.FLOAT32, 4.0),
        (OperandCode.FLOAT32, 4.0),
        (OperandCode.INT32, -1),
        (OperandCode.INT32, -1),
        (OperandCode.FLOAT32, 0.5),
        (OperandCode.FLOAT32, 0.0),
        (OperandCode.BOOL, False),
    ]:
        inputs.append(model.add_scalar(code, value))
    outputs = [
        model.add_operand(F32, (0,)),
        model.add_operand(F32, (0, 0)),
        model.add_operand(I32, (0,)),
    ]
    model.add_operation(GP, inputs, outputs)
    row = model.add_constant(F32, np.array([7.0], np.float32))
    out = model.add_operand(F32, (1,))
    model.add_operation(
        OperationCode.CONCATENATION,
        [outputs[0], row, model.add_scalar(OperandCode.INT32, 0)],
        [out],
    )
    model.identify_inputs_and_outputs([score_source, delta_source], [out])
    model.finish()
    compilation = Compilation(model).finish()
    feeds = [np.ones((1, 2, 2, 1), np.float32), np.zeros((1, 2, 2, 4), np.float32)]
    with pytest.raises(NnapiError) as error:
        compilation.execute(feeds, [(1,)])
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert "zero-sized" in str(error.value)


@pytest.mark.parametrize(
    ("code", "dtype", "level"), [(F32, np.float32, 3), (F16, np.float16, 3), (U8, np.uint8, 3),
                                 (S8, np.int8, 4)],
)  # fmt: skip
def test_feature_levels(feature_level_devices, code, dtype, level):
    quantized = code in (U8, S8)
    q = (0.5, 0) if quantized else (0.0, 0)
    box = (0.125, 0) if quantized else (0.0, 0)
    tester = make_tester(
        np.zeros((1, 2, 2, 1), dtype),
        np.zeros((1, 2, 2, 4), dtype),
        np.zeros((1, 4), np.int16 if quantized else dtype),
        np.zeros((1, 2), np.uint16 if quantized else dtype),
        code=code,
        score_quant=q,
        delta_quant=q,
        anchor_quant=box,
        image_quant=box,
    )
    assert required_feature_level(tester, feature_level_devices) == level
