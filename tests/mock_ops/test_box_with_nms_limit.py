# SPDX-License-Identifier: Apache-2.0
"""BOX_WITH_NMS_LIMIT against a Python reference of the NDK's greedy NMS (hard, linear and
Gaussian kernels), per image and per class, background class 0 ignored, with Android's output
order (by class, then decreasing score, image by image).

Covered: fp32, fp16, QUANT8_ASYMM and QUANT8_ASYMM_SIGNED scores (QUANT16_ASYMM boxes), the three
kernels, several images, the score threshold, the per-image maximum (and no maximum), a
hand-checked hard NMS, every box suppressed by the threshold (empty outputs), the NMS score
threshold removing boxes during soft NMS, the BAD_DATA validation rules, OP_FAILED for an
inverted box and for quantised boxes with other parameters, and the feature levels (3; 4 for
signed). The outputs' sizes depend on the values, so every case declares them unknown.
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

NMS = OperationCode.BOX_WITH_NMS_LIMIT
F32 = OperandCode.TENSOR_FLOAT32
F16 = OperandCode.TENSOR_FLOAT16
Q16 = OperandCode.TENSOR_QUANT16_ASYMM
I32 = OperandCode.TENSOR_INT32
HARD, LINEAR, GAUSSIAN = 0, 1, 2


def iou(a, b):
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def reference(scores, boxes, batches, threshold, max_det, kernel, iou_thr, sigma, nms_thr):
    """Lists of (score, box, class, batch) in output order."""
    scores = scores.astype(np.float64)
    boxes = boxes.astype(np.float64).reshape(len(scores), -1, 4)
    out = []
    for image in dict.fromkeys(batches.tolist()):  # images in order of appearance
        rois = [r for r in range(len(scores)) if batches[r] == image]
        kept = []
        for c in range(1, scores.shape[1]):
            candidates = [[scores[r, c], r] for r in rois if scores[r, c] > threshold]
            chosen = 0
            while candidates and (max_det < 0 or chosen < max_det):
                best = max(range(len(candidates)), key=lambda i: candidates[i][0])
                score, roi = candidates.pop(best)
                kept.append((score, roi, c))
                chosen += 1
                for candidate in candidates:
                    overlap = iou(boxes[candidate[1], c], boxes[roi, c])
                    if kernel == GAUSSIAN:
                        factor = math.exp(-overlap * overlap / sigma)
                    elif overlap < iou_thr:
                        factor = 1.0
                    else:
                        factor = 0.0 if kernel == HARD else 1.0 - overlap
                    candidate[0] *= factor
                candidates = [cand for cand in candidates if not cand[0] < nms_thr]
        kept.sort(key=lambda k: -k[0])
        if max_det >= 0:
            kept = kept[:max_det]
        kept.sort(key=lambda k: (k[2], -k[0]))
        out += [(s, boxes[r, c], c, image) for s, r, c in kept]
    return out


def make_tester(
    scores,
    boxes,
    batches,
    threshold=0.0,
    max_det=-1,
    kernel=HARD,
    iou_thr=0.5,
    sigma=0.5,
    nms_thr=0.0,
    code=F32,
    quant=(0.0, 0),
    box_quant=(0.0, 0),
    out_quant=None,
    out_box_quant=None,
    scalar_code=None,
):
    box_code = Q16 if code not in (F32, F16) else code
    real = scalar_code or (OperandCode.FLOAT16 if code == F16 else OperandCode.FLOAT32)
    return (
        OpTester(NMS)
        .input(scores, code, *quant)
        .input(boxes, box_code, *box_quant)
        .input(batches)
        .scalar(real, threshold)
        .scalar(OperandCode.INT32, max_det)
        .scalar(OperandCode.INT32, kernel)
        .scalar(real, iou_thr)
        .scalar(real, sigma)
        .scalar(real, nms_thr)
        .output(code, (1,), *(out_quant or quant))
        .output(box_code, (1, 4), *(out_box_quant or box_quant))
        .output(I32, (1,))
        .output(I32, (1,))
        .dynamic_outputs()
    )


def random_case(seed, rois=12, classes=3, images=2):
    rng = np.random.default_rng(seed)
    # Distinct scores (no ties: the order of equal scores is not specified).
    scores = rng.permutation(rois * classes).reshape(rois, classes) / (rois * classes) + 0.01
    corner = rng.uniform(0, 10, (rois, classes, 2))
    size = rng.uniform(1, 8, (rois, classes, 2))
    boxes = np.concatenate([corner, corner + size], axis=2).reshape(rois, classes * 4)
    batches = np.sort(rng.integers(0, images, rois)).astype(np.int32)
    return scores, boxes, batches


def run_case(tester, n):
    """Runs with outputs sized for n detections."""
    tester._outputs[0]["shape"] = (n,)
    tester._outputs[1]["shape"] = (n, 4)
    tester._outputs[2]["shape"] = (n,)
    tester._outputs[3]["shape"] = (n,)
    return tester.run()


@pytest.mark.parametrize("kernel", [HARD, LINEAR, GAUSSIAN])
@pytest.mark.parametrize("max_det", [-1, 4])
@pytest.mark.parametrize("seed", [0, 1])
def test_float32(kernel, max_det, seed):
    scores, boxes, batches = random_case(seed)
    scores, boxes = scores.astype(np.float32), boxes.astype(np.float32)
    args = (0.1, max_det, kernel, 0.3, 0.5, 0.2)
    expected = reference(scores, boxes, batches, *args)
    out_scores, out_boxes, classes, images = run_case(
        make_tester(scores, boxes, batches, *args), len(expected)
    )
    assert classes.tolist() == [e[2] for e in expected]
    assert images.tolist() == [e[3] for e in expected]
    np.testing.assert_allclose(out_scores, [e[0] for e in expected], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out_boxes, np.array([e[1] for e in expected], np.float32))


def test_float16():
    scores, boxes, batches = random_case(2)
    scores = scores.astype(np.float16)
    boxes = (np.round(boxes * 4) / 4).astype(np.float16)
    args = (0.1, -1, LINEAR, 0.3, 0.5, 0.2)
    expected = reference(scores, boxes, batches, *args)
    out_scores, out_boxes, classes, _ = run_case(
        make_tester(scores, boxes, batches, *args, code=F16), len(expected)
    )
    assert classes.tolist() == [e[2] for e in expected]
    assert_close(out_scores, np.array([e[0] for e in expected]), "float16")
    np.testing.assert_array_equal(out_boxes, np.array([e[1] for e in expected], np.float16))


@pytest.mark.parametrize(
    ("dtype", "code", "zero_point"),
    [
        (np.uint8, OperandCode.TENSOR_QUANT8_ASYMM, 10),
        (np.int8, OperandCode.TENSOR_QUANT8_ASYMM_SIGNED, -100),
    ],
)
def test_quantized(dtype, code, zero_point):
    scores, boxes, batches = random_case(3, rois=8)
    q_scores = (np.arange(scores.size).reshape(scores.shape) * 5 % 211 + zero_point).astype(dtype)
    q_boxes = np.round(boxes / 0.125).astype(np.uint16)
    real_scores = (q_scores.astype(np.float64) - zero_point) / 256
    args = (0.05, -1, HARD, 0.4, 0.5, 0.0)
    expected = reference(real_scores, q_boxes * 0.125, batches, *args)
    out_scores, out_boxes, classes, images = run_case(
        make_tester(
            q_scores,
            q_boxes,
            batches,
            *args,
            code=code,
            quant=(1 / 256, zero_point),
            box_quant=(0.125, 0),
            out_quant=(1 / 128, zero_point),
        ),
        len(expected),
    )
    assert classes.tolist() == [e[2] for e in expected]
    assert images.tolist() == [e[3] for e in expected]
    np.testing.assert_array_equal(out_boxes, np.round(np.array([e[1] for e in expected]) / 0.125))
    expected_q = np.array([e[0] for e in expected]) * 128 + zero_point
    assert np.abs(out_scores.astype(np.float64) - expected_q).max() <= 1


def test_hand_checked_hard_nms():
    # One image, class 1: boxes A (0.9), B (0.8, inside A: IoU(A, B) = 81 / 100 > 0.5:
    # suppressed), C (0.7, disjoint: kept). Class 2: only D above the threshold. Class 0 is the
    # background.
    scores = np.array(
        [[0.99, 0.9, 0.0], [0.99, 0.8, 0.0], [0.99, 0.7, 0.0], [0.0, 0.1, 0.6]], np.float32
    )
    box = {"A": [0, 0, 10, 10], "B": [1, 1, 10, 10], "C": [20, 20, 30, 30], "D": [5, 5, 6, 6]}
    boxes = np.array([box["A"] * 3, box["B"] * 3, box["C"] * 3, box["D"] * 3], np.float32)
    out_scores, out_boxes, classes, images = run_case(
        make_tester(scores, boxes, np.zeros(4, np.int32), threshold=0.3, nms_thr=0.01), 3
    )
    np.testing.assert_allclose(out_scores, [0.9, 0.7, 0.6])
    assert out_boxes.tolist() == [box["A"], box["C"], box["D"]]
    assert classes.tolist() == [1, 1, 2] and images.tolist() == [0, 0, 0]
    # Hard suppression multiplies B's score by 0; only an NMS score threshold above 0 removes
    # it (Android's rule: a box goes when its score drops below the threshold). At 0, B stays.
    out_scores, out_boxes, classes, _ = run_case(
        make_tester(scores, boxes, np.zeros(4, np.int32), threshold=0.3, nms_thr=0.0), 4
    )
    np.testing.assert_allclose(out_scores, [0.9, 0.7, 0.0, 0.6])
    assert out_boxes.tolist() == [box["A"], box["C"], box["B"], box["D"]]


def test_soft_nms_score_threshold_removes_boxes():
    # Linear kernel: B's score 0.8 becomes 0.8 * (1 - 0.81) = 0.152 < 0.3 and is removed.
    scores = np.array([[0.0, 0.9], [0.0, 0.8]], np.float32)
    boxes = np.array([[0, 0, 0, 0, 0, 0, 10, 10], [0, 0, 0, 0, 1, 1, 10, 10]], np.float32)
    batches = np.zeros(2, np.int32)
    (out_scores, _, _, _) = run_case(
        make_tester(scores, boxes, batches, kernel=LINEAR, iou_thr=0.5, nms_thr=0.3), 1
    )
    assert out_scores.tolist() == [pytest.approx(0.9)]
    # With a lower NMS score threshold B stays, with its decayed score.
    (out_scores, _, _, _) = run_case(
        make_tester(scores, boxes, batches, kernel=LINEAR, iou_thr=0.5, nms_thr=0.1), 2
    )
    np.testing.assert_allclose(out_scores, [0.9, 0.8 * (1 - 0.81)], rtol=1e-5)


def test_all_boxes_suppressed_gives_empty_outputs():
    # Every score is below the threshold: no detection. The empty scores join a row in
    # CONCATENATION (an output of size 0 cannot be a model output buffer).
    model = Model()
    scores = model.add_operand(F32, (3, 2))
    boxes = model.add_constant(F32, np.tile(np.array([0, 0, 1, 1], np.float32), (3, 2)))
    batches = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(3, np.int32))
    scalars = [
        model.add_scalar(OperandCode.FLOAT32, 0.5),
        model.add_scalar(OperandCode.INT32, -1),
        model.add_scalar(OperandCode.INT32, HARD),
        model.add_scalar(OperandCode.FLOAT32, 0.5),
        model.add_scalar(OperandCode.FLOAT32, 0.5),
        model.add_scalar(OperandCode.FLOAT32, 0.0),
    ]
    outputs = [
        model.add_operand(F32, (0,)),
        model.add_operand(F32, (0, 0)),
        model.add_operand(I32, (0,)),
        model.add_operand(I32, (0,)),
    ]
    model.add_operation(NMS, [scores, boxes, batches, *scalars], outputs)
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
    before = mock_nnapi.operation_count(NMS)
    (result,) = compilation.execute([np.full((3, 2), 0.4, np.float32)], [(1,)])
    assert result.tolist() == [7.0]
    assert mock_nnapi.operation_count(NMS) == before + 1


def test_rejects_bad_operands():
    scores, boxes, batches = random_case(0)
    scores, boxes = scores.astype(np.float32), boxes.astype(np.float32)
    assert "kernel" in expect_failed_when_prepared(make_tester(scores, boxes, batches, kernel=3))
    assert "boxes" in expect_bad_data_at_add(make_tester(scores, boxes[:, :8], batches))
    assert "scores" in expect_bad_data_at_add(make_tester(scores[:, :1], boxes[:, :4], batches))
    assert "batch" in expect_bad_data_at_add(make_tester(scores, boxes, batches[:5]))
    expect_bad_data_at_add(make_tester(scores, boxes, batches, scalar_code=OperandCode.FLOAT16))
    tester = make_tester(scores, boxes, batches)
    tester._outputs[2]["code"] = F32
    assert "output 2" in expect_bad_data_at_add(tester)
    tester = make_tester(scores, boxes, batches)
    tester._inputs[1].update(array=boxes.astype(np.float16), code=F16)
    expect_bad_data_at_add(tester)


def test_inverted_box_fails_the_execution():
    scores = np.array([[0.0, 0.9]], np.float32)
    boxes = np.array([[0, 0, 1, 1, 5, 0, 1, 1]], np.float32)
    with pytest.raises(NnapiError) as error:
        run_case(make_tester(scores, boxes, np.zeros(1, np.int32)), 1)
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)


def test_quant16_box_parameters_are_fixed():
    tester = make_tester(
        np.full((1, 2), 200, np.uint8),
        np.full((1, 8), 8, np.uint16),
        np.zeros(1, np.int32),
        code=OperandCode.TENSOR_QUANT8_ASYMM,
        quant=(1 / 256, 0),
        box_quant=(0.25, 0),
    )
    with pytest.raises(NnapiError) as error:
        run_case(tester, 1)
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert "0.125" in str(error.value)


@pytest.mark.parametrize(
    ("code", "dtype", "level"),
    [
        (F32, np.float32, 3),
        (F16, np.float16, 3),
        (OperandCode.TENSOR_QUANT8_ASYMM, np.uint8, 3),
        (OperandCode.TENSOR_QUANT8_ASYMM_SIGNED, np.int8, 4),
    ],
)
def test_feature_levels(feature_level_devices, code, dtype, level):
    quantized = code not in (F32, F16)
    tester = make_tester(
        np.zeros((2, 2), dtype),
        np.zeros((2, 8), np.uint16 if quantized else dtype),
        np.zeros(2, np.int32),
        code=code,
        quant=(1 / 256, 0) if quantized else (0.0, 0),
        box_quant=(0.125, 0) if quantized else (0.0, 0),
    )
    assert required_feature_level(tester, feature_level_devices) == level
