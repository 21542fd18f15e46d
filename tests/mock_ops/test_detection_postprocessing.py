# SPDX-License-Identifier: Apache-2.0
"""DETECTION_POSTPROCESSING against a numpy reference written from the NDK's description (SSD's
centre-size box decoding with the four scales, then regular per-class NMS or fast class-agnostic
NMS), per image, with fixed-size outputs padded with zeros and a count of valid detections.

Covered: fp32 and fp16, regular and fast NMS, several images, the per-class and per-detection
class limits, the background label option, box encodings longer than four, a hand-checked SSD
case, every score below the threshold (zero detections), the output shapes for both NMS
kinds, the BAD_DATA validation rules (types, counts, shapes), OP_FAILED for the argument values
Android checks when it prepares the operation, and the feature level (3).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mock_nnapi import NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add, expect_failed_when_prepared
from .op_tester import OpTester, assert_close
from .test_conv_2d import required_feature_level

DPP = OperationCode.DETECTION_POSTPROCESSING
F32 = OperandCode.TENSOR_FLOAT32
F16 = OperandCode.TENSOR_FLOAT16
I32 = OperandCode.TENSOR_INT32


def iou(a, b):
    h = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    w = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else math.nan


def decode(deltas, anchors, scales):
    """[num_anchors, >= 4] deltas [dy, dx, dh, dw], anchors [ctr_y, ctr_x, h, w] ->
    [num_anchors, 4] boxes [y1, x1, y2, x2]."""
    sy, sx, sh, sw = scales
    cy = anchors[:, 0] + anchors[:, 2] * deltas[:, 0] / sy
    cx = anchors[:, 1] + anchors[:, 3] * deltas[:, 1] / sx
    h = anchors[:, 2] * np.exp(deltas[:, 2] / sh)
    w = anchors[:, 3] * np.exp(deltas[:, 3] / sw)
    return np.stack([cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2], axis=1)


def nms(candidates, score, boxes, iou_thr, limit):
    candidates = sorted(candidates, key=lambda a: -score[a])
    kept = []
    while candidates and len(kept) < limit:
        best = candidates.pop(0)
        kept.append(best)
        candidates = [c for c in candidates if not iou(boxes[c], boxes[best]) >= iou_thr]
    return kept


def reference(scores, deltas, anchors, scales, regular, max_det, max_cls, per_class, s_thr,
              iou_thr, bg):  # fmt: skip
    """Returns (scores [B, n], boxes [B, n, 4], classes [B, n], counts [B])."""
    scores = scores.astype(np.float64)
    batches, num_anchors, classes = scores.shape
    n = max_det if regular else max_det * max_cls
    out_scores, out_boxes = np.zeros((batches, n)), np.zeros((batches, n, 4))
    out_classes, counts = np.zeros((batches, n), np.int32), np.zeros(batches, np.int32)
    offset = 0 if bg else 1
    for b in range(batches):
        boxes = decode(deltas[b].astype(np.float64), anchors.astype(np.float64), scales)
        detections = []  # (score, anchor, class)
        if regular:
            for c in range(1, classes):
                candidates = [a for a in range(num_anchors) if scores[b, a, c] > s_thr]
                kept = nms(candidates, scores[b, :, c], boxes, iou_thr, per_class)
                detections += [(scores[b, a, c], a, c) for a in kept]
            detections = sorted(detections, key=lambda d: -d[0])[:max_det]
        else:
            best = scores[b, :, 1:].max(axis=1)
            candidates = [a for a in range(num_anchors) if best[a] > s_thr]
            for a in nms(candidates, best, boxes, iou_thr, max_det):
                order = sorted(range(1, classes), key=lambda c: -scores[b, a, c])
                detections += [(scores[b, a, c], a, c) for c in order[: min(classes - 1, max_cls)]]
        for i, (score, a, c) in enumerate(detections):
            out_scores[b, i], out_boxes[b, i], out_classes[b, i] = score, boxes[a], c - offset
        counts[b] = len(detections)
    return out_scores, out_boxes, out_classes, counts


def make_tester(scores, deltas, anchors, scales=(10.0, 10.0, 5.0, 5.0), regular=True, max_det=4,
                max_cls=1, per_class=3, s_thr=0.0, iou_thr=0.5, bg=False, code=F32,
                scalar_code=None, dynamic=False):  # fmt: skip
    real = scalar_code or (OperandCode.FLOAT16 if code == F16 else OperandCode.FLOAT32)
    batches = scores.shape[0]
    n = max(max_det if regular else max_det * max_cls, 1)
    tester = OpTester(DPP).input(scores, code).input(deltas, code).input(anchors, code)
    for scale in scales:
        tester.scalar(real, scale)
    return (
        tester.scalar(OperandCode.BOOL, regular)
        .scalar(OperandCode.INT32, max_det)
        .scalar(OperandCode.INT32, max_cls)
        .scalar(OperandCode.INT32, per_class)
        .scalar(real, s_thr)
        .scalar(real, iou_thr)
        .scalar(OperandCode.BOOL, bg)
        .output(code, (batches, n))
        .output(code, (batches, n, 4))
        .output(I32, (batches, n))
        .output(I32, (batches,))
        .dynamic_outputs(dynamic)
    )


def random_case(seed, batches=2, anchors=16, classes=4, encoding=4):
    rng = np.random.default_rng(seed)
    count = batches * anchors * classes
    # Distinct scores (the order of equal scores is not specified).
    scores = (rng.permutation(count) / count).reshape(batches, anchors, classes)
    deltas = rng.uniform(-2, 2, (batches, anchors, encoding))
    centre = rng.uniform(0.2, 0.8, (anchors, 2))
    size = rng.uniform(0.1, 0.4, (anchors, 2))
    return scores, deltas, np.concatenate([centre, size], axis=1)


def check(result, expected, rtol=1e-5, atol=1e-5):
    out_scores, out_boxes, out_classes, counts = result
    exp_scores, exp_boxes, exp_classes, exp_counts = expected
    assert counts.tolist() == exp_counts.tolist()
    assert out_classes.tolist() == exp_classes.tolist()
    np.testing.assert_allclose(out_scores, exp_scores, rtol=rtol, atol=atol)
    np.testing.assert_allclose(out_boxes, exp_boxes, rtol=rtol, atol=atol)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("max_det", "per_class"), [(5, 2), (40, 10)])
@pytest.mark.parametrize("bg", [False, True])
def test_regular_nms(seed, max_det, per_class, bg):
    scores, deltas, anchors = (a.astype(np.float32) for a in random_case(seed))
    args = dict(regular=True, max_det=max_det, max_cls=1, per_class=per_class, s_thr=0.5,
                iou_thr=0.3, bg=bg)  # fmt: skip
    expected = reference(scores, deltas, anchors, (10.0, 10.0, 5.0, 5.0), **args)
    check(make_tester(scores, deltas, anchors, **args, dynamic=seed == 0).run(), expected)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("max_det", "max_cls"), [(3, 1), (5, 2), (20, 5)])
def test_fast_nms(seed, max_det, max_cls):
    scores, deltas, anchors = (a.astype(np.float32) for a in random_case(seed, encoding=6))
    args = dict(regular=False, max_det=max_det, max_cls=max_cls, per_class=1, s_thr=0.2,
                iou_thr=0.4, bg=False)  # fmt: skip
    expected = reference(scores, deltas, anchors, (8.0, 9.0, 4.0, 3.0), **args)
    tester = make_tester(scores, deltas, anchors, (8.0, 9.0, 4.0, 3.0), **args, dynamic=seed == 1)
    check(tester.run(), expected)


def test_float16():
    scores, deltas, anchors = random_case(4)
    scores = scores.astype(np.float16)
    deltas = (np.round(deltas * 16) / 16).astype(np.float16)
    anchors = (np.round(anchors * 64) / 64).astype(np.float16)
    for regular in (True, False):
        args = dict(regular=regular, max_det=6, max_cls=2, per_class=3, s_thr=0.25, iou_thr=0.3,
                    bg=True)  # fmt: skip
        expected = reference(scores, deltas, anchors, (10.0, 10.0, 5.0, 5.0), **args)
        out = make_tester(scores, deltas, anchors, **args, code=F16).run()
        assert out[3].tolist() == expected[3].tolist()
        assert out[2].tolist() == expected[2].tolist()
        np.testing.assert_array_equal(out[0], expected[0].astype(np.float16))
        assert_close(out[1], expected[1], "float16")


# Hand-checked SSD case: anchors [ctr_y, ctr_x, h, w] a0 (0.5, 0.5, 1, 1), a1 (0.5, 0.6, 1, 1),
# a2 (2.5, 2.5, 1, 1); a2's dy = 10 with scale_y 10 moves its centre by h = 1. Boxes [y1, x1, y2,
# x2]: a0 [0, 0, 1, 1], a1 [0, 0.1, 1, 1.1], a2 [3, 2, 4, 3]; IoU(a0, a1) = 0.9 / 1.1 = 0.82.
# Scores (background, class 1, class 2): a0 (0, 0.9, 0.2), a1 (0, 0.8, 0.7), a2 (0, 0.1, 0.6).
HAND_SCORES = np.array([[[0, 0.9, 0.2], [0, 0.8, 0.7], [0, 0.1, 0.6]]], np.float32)
HAND_DELTAS = np.array([[[0, 0, 0, 0], [0, 0, 0, 0], [10, 0, 0, 0]]], np.float32)
HAND_ANCHORS = np.array([[0.5, 0.5, 1, 1], [0.5, 0.6, 1, 1], [2.5, 2.5, 1, 1]], np.float32)
A0, A1, A2 = [0, 0, 1, 1], [0, 0.1, 1, 1.1], [3, 2, 4, 3]


def hand(**kwargs):
    args = dict(s_thr=0.3, iou_thr=0.5, per_class=10) | kwargs
    return make_tester(HAND_SCORES, HAND_DELTAS, HAND_ANCHORS, **args).run()


def test_hand_checked_regular():
    # Class 1: a0 (0.9) suppresses a1 (0.8); a2 (0.1) is below the threshold. Class 2: a1 (0.7)
    # and a2 (0.6) do not overlap; a0 (0.2) is below. By decreasing score: a0/1, a1/2, a2/2.
    scores, boxes, classes, counts = hand(max_det=5)
    np.testing.assert_allclose(scores[0], [0.9, 0.7, 0.6, 0, 0])
    np.testing.assert_allclose(boxes[0], [A0, A1, A2, [0] * 4, [0] * 4], atol=1e-6)
    assert classes[0].tolist() == [0, 1, 1, 0, 0] and counts.tolist() == [3]
    # The background option shifts the labels; max_num_detections cuts by score.
    scores, _, classes, counts = hand(max_det=2, bg=True)
    np.testing.assert_allclose(scores[0], [0.9, 0.7])
    assert classes[0].tolist() == [1, 2] and counts.tolist() == [2]
    # One detection per class: class 2 keeps only a1.
    scores, _, classes, counts = hand(max_det=5, per_class=1)
    np.testing.assert_allclose(scores[0], [0.9, 0.7, 0, 0, 0])
    assert counts.tolist() == [2]


def test_hand_checked_fast():
    # Best class scores: a0 0.9, a1 0.8, a2 0.6. One NMS: a0 suppresses a1; a2 stays.
    scores, boxes, classes, counts = hand(regular=False, max_det=3, max_cls=1)
    np.testing.assert_allclose(scores[0], [0.9, 0.6, 0])
    np.testing.assert_allclose(boxes[0], [A0, A2, [0] * 4], atol=1e-6)
    assert classes[0].tolist() == [0, 1, 0] and counts.tolist() == [2]
    # Two classes per detection: each box's classes by decreasing score, whatever the score
    # (a0's class 2 at 0.2 and a2's class 1 at 0.1 are below the threshold but reported).
    scores, boxes, classes, counts = hand(regular=False, max_det=2, max_cls=2)
    np.testing.assert_allclose(scores[0], [0.9, 0.2, 0.6, 0.1])
    np.testing.assert_allclose(boxes[0], [A0, A0, A2, A2], atol=1e-6)
    assert classes[0].tolist() == [0, 1, 1, 0] and counts.tolist() == [4]
    # max_classes_per_detection beyond the classes there are gives all of them.
    (_, _, _, counts) = hand(regular=False, max_det=2, max_cls=5)
    assert counts.tolist() == [4]


@pytest.mark.parametrize("regular", [True, False])
def test_no_score_above_threshold_gives_zero_detections(regular):
    # The outputs keep their fixed shape, all zeros, and the count is 0.
    scores, boxes, classes, counts = make_tester(
        HAND_SCORES, HAND_DELTAS, HAND_ANCHORS, regular=regular, max_det=3, max_cls=2,
        s_thr=0.95,
    ).run()  # fmt: skip
    assert counts.tolist() == [0]
    assert not scores.any() and not boxes.any() and not classes.any()
    n = 3 if regular else 6
    assert scores.shape == (1, n) and boxes.shape == (1, n, 4) and classes.shape == (1, n)


def test_score_threshold_is_strict():
    # A score equal to the threshold does not pass it.
    (_, _, _, counts) = hand(max_det=5, s_thr=0.7)
    assert counts.tolist() == [1]


def test_rejects_bad_operands():
    scores, deltas, anchors = (a.astype(np.float32) for a in random_case(0))
    assert "deltas" in expect_bad_data_at_add(make_tester(scores, deltas[:, :, :3], anchors))
    assert "deltas" in expect_bad_data_at_add(make_tester(scores, deltas[:1], anchors))
    assert "anchors" in expect_bad_data_at_add(make_tester(scores, deltas, anchors[:3]))
    assert "scores" in expect_bad_data_at_add(make_tester(scores[:, :, :1], deltas, anchors))
    expect_bad_data_at_add(make_tester(scores, deltas, anchors, scalar_code=OperandCode.FLOAT16))
    # A declared output shape that differs from [batches, max_num_detections (* classes)]: the
    # limits are argument values, so Android checks it when it prepares the operation.
    tester = make_tester(scores, deltas, anchors, max_det=4)
    tester._outputs[0]["shape"] = (2, 5)
    assert "output 0" in expect_failed_when_prepared(tester)
    tester = make_tester(scores, deltas, anchors, regular=False, max_det=4, max_cls=2)
    tester._outputs[1]["shape"] = (2, 4, 4)
    assert "output 1" in expect_failed_when_prepared(tester)
    tester = make_tester(scores, deltas, anchors)
    tester._outputs[3]["code"] = F32
    assert "output 3" in expect_bad_data_at_add(tester)
    tester = make_tester(scores, deltas, anchors)
    tester._inputs[2].update(array=anchors.astype(np.float16), code=F16)
    expect_bad_data_at_add(tester)
    # No quantised variant (the NDK lists float types only).
    tester = make_tester(scores, deltas, anchors)
    tester._inputs[0].update(array=scores.astype(np.uint8), code=OperandCode.TENSOR_QUANT8_ASYMM,
                             scale=1.0)  # fmt: skip
    expect_bad_data_at_add(tester)
    tester = make_tester(scores, deltas, anchors)
    tester._inputs[7]["code"] = OperandCode.INT32
    expect_bad_data_at_add(tester)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(scales=(0.0, 10.0, 5.0, 5.0)),
        dict(scales=(10.0, 10.0, 5.0, -1.0)),
        dict(s_thr=-0.1),
        dict(iou_thr=-0.5),
        dict(max_det=0),
        dict(regular=True, per_class=0),
        dict(regular=False, max_cls=0),
    ],
)
def test_argument_values_fail_the_execution(kwargs):
    # Android checks these values when it prepares the operation: the model builds, the
    # execution fails.
    tester = make_tester(HAND_SCORES, HAND_DELTAS, HAND_ANCHORS, dynamic=True, **kwargs)
    tester.build()
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)


def test_unused_limit_is_not_checked():
    # max_classes_per_detection only matters for fast NMS, max_detections_per_class only for
    # regular NMS.
    (_, _, _, counts) = hand(max_det=5, max_cls=0)
    assert counts.tolist() == [3]
    (_, _, _, counts) = hand(regular=False, max_det=2, max_cls=1, per_class=0)
    assert counts.tolist() == [2]


@pytest.mark.parametrize(("code", "dtype"), [(F32, np.float32), (F16, np.float16)])
def test_feature_levels(feature_level_devices, code, dtype):
    tester = make_tester(
        np.zeros((1, 2, 2), dtype), np.zeros((1, 2, 4), dtype), np.zeros((2, 4), dtype), code=code
    )
    assert required_feature_level(tester, feature_level_devices) == 3
