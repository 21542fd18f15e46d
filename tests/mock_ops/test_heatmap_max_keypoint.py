# SPDX-License-Identifier: Apache-2.0
"""HEATMAP_MAX_KEYPOINT against a numpy reference of the NDK's definition: the maximum of each
heatmap, refined to sub-pixel precision by the quadratic (Taylor) model of its 3x3 patch, mapped
into the box.

Covered: fp32, fp16, QUANT8_ASYMM and QUANT8_ASYMM_SIGNED heatmaps (QUANT16_ASYMM boxes and
keypoints), both layouts, maxima at the border (mirrored patch), a flat heatmap (singular
Hessian: no refinement), a hand-checked parabola, the 1.5-pixel clip, zero boxes, dynamic
output shapes, the BAD_DATA validation rules, OP_FAILED for quantised boxes with other
parameters, and the feature levels (3; 4 for signed).
"""

from __future__ import annotations

import numpy as np
import pytest

import mock_nnapi
from mock_nnapi import Compilation, Model, NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add, expect_failed_when_prepared
from .op_tester import OpTester, assert_close
from .test_conv_2d import required_feature_level

HEATMAP = OperationCode.HEATMAP_MAX_KEYPOINT
F32 = OperandCode.TENSOR_FLOAT32
F16 = OperandCode.TENSOR_FLOAT16
Q16 = OperandCode.TENSOR_QUANT16_ASYMM


def refine(patch):
    """Maximum of the quadratic model of a 3x3 patch: (dx, dy, value)."""
    gradient = np.array([(patch[1, 2] - patch[1, 0]) / 2, (patch[2, 1] - patch[0, 1]) / 2])
    hessian = np.array(
        [
            [
                patch[1, 0] - 2 * patch[1, 1] + patch[1, 2],
                (patch[2, 2] - patch[2, 0] - patch[0, 2] + patch[0, 0]) / 4,
            ],
            [
                (patch[2, 2] - patch[2, 0] - patch[0, 2] + patch[0, 0]) / 4,
                patch[0, 1] - 2 * patch[1, 1] + patch[2, 1],
            ],
        ]
    )
    det = np.linalg.det(hessian)
    if abs(det) < 1e-5 + 1e-5 * abs(hessian[0, 0] * hessian[1, 1]):
        return 0.0, 0.0, patch[1, 1]
    delta = np.linalg.solve(hessian, -gradient)
    if np.abs(delta).max() > 1.5:
        delta *= 1.5 / np.abs(delta).max()
    value = patch[1, 1] + gradient @ delta + delta @ hessian @ delta / 2
    return delta[0], delta[1], value


def reference(heatmaps, boxes):
    """heatmaps NHWC [n, size, size, k] of real values."""
    heatmaps = heatmaps.astype(np.float64)
    n, size, _, k = heatmaps.shape
    scores = np.zeros((n, k))
    keypoints = np.zeros((n, k, 2))
    for i in range(n):
        x1, y1, x2, y2 = boxes[i].astype(np.float64)
        for j in range(k):
            m = heatmaps[i, :, :, j]
            r, c = np.unravel_index(np.argmax(m), m.shape)  # the first maximum, row-major
            rows = [r + d if 0 <= r + d < size else r - d for d in (-1, 0, 1)]
            cols = [c + d if 0 <= c + d < size else c - d for d in (-1, 0, 1)]
            dx, dy, value = refine(m[np.ix_(rows, cols)])
            scores[i, j] = value
            keypoints[i, j] = [
                x1 + max(x2 - x1, 1) / size * (c + dx + 0.5),
                y1 + max(y2 - y1, 1) / size * (r + dy + 0.5),
            ]
    return scores, keypoints


def make_tester(
    heatmaps,
    boxes,
    nchw=False,
    code=F32,
    quant=(0.0, 0),
    score_quant=None,
    box_quant=(0.0, 0),
    keypoint_quant=None,
    shapes=None,
    keypoint_code=None,
):
    fed = np.ascontiguousarray(heatmaps.transpose(0, 3, 1, 2)) if nchw else heatmaps
    box_code = Q16 if code not in (F32, F16) else code
    if shapes is None:
        n, k = heatmaps.shape[0], heatmaps.shape[3]
        shapes = ((n, k), (n, k, 2))
    score_shape, keypoint_shape = shapes
    return (
        OpTester(HEATMAP)
        .input(fed, code, *quant)
        .input(boxes, box_code, *box_quant)
        .scalar(OperandCode.BOOL, nchw)
        .output(code, score_shape, *(score_quant or quant))
        .output(keypoint_code or box_code, keypoint_shape, *(keypoint_quant or box_quant))
    )


def random_case(seed, n=3, size=6, k=4):
    rng = np.random.default_rng(seed)
    heatmaps = rng.uniform(-2, 2, (n, size, size, k))
    corner = rng.uniform(0, 20, (n, 2))
    boxes = np.concatenate([corner, corner + rng.uniform(0.5, 30, (n, 2))], axis=1)
    return heatmaps, boxes


@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_float32(nchw, seed):
    heatmaps, boxes = random_case(seed)
    heatmaps, boxes = heatmaps.astype(np.float32), boxes.astype(np.float32)
    scores, keypoints = make_tester(heatmaps, boxes, nchw).dynamic_outputs(seed == 1).run()
    expected_scores, expected_keypoints = reference(heatmaps, boxes)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(keypoints, expected_keypoints, rtol=1e-4, atol=1e-4)


def test_float16():
    heatmaps, boxes = random_case(3)
    heatmaps = heatmaps.astype(np.float16)
    boxes = (np.round(boxes * 4) / 4).astype(np.float16)
    scores, keypoints = make_tester(heatmaps, boxes, code=F16).run()
    expected_scores, expected_keypoints = reference(heatmaps, boxes)
    assert_close(scores, expected_scores, "float16")
    # Keypoints reach ~50: fp16 spacing there is 2^-5; allow a few steps of the computation.
    np.testing.assert_allclose(keypoints, expected_keypoints, rtol=0, atol=0.15)


@pytest.mark.parametrize(
    ("dtype", "code", "zero_point"),
    [
        (np.uint8, OperandCode.TENSOR_QUANT8_ASYMM, 128),
        (np.int8, OperandCode.TENSOR_QUANT8_ASYMM_SIGNED, 0),
    ],
)
@pytest.mark.parametrize("nchw", [False, True])
def test_quantized(dtype, code, zero_point, nchw):
    heatmaps, boxes = random_case(4)
    q = np.clip(
        np.round(heatmaps * 32) + zero_point, np.iinfo(dtype).min, np.iinfo(dtype).max
    ).astype(dtype)
    q_boxes = np.round(boxes / 0.125).astype(np.uint16)
    scores, keypoints = make_tester(
        q, q_boxes, nchw, code, (1 / 32, zero_point), (1 / 16, zero_point - 1), (0.125, 0)
    ).run()
    expected_scores, expected_keypoints = reference(
        (q.astype(np.float64) - zero_point) / 32, q_boxes * 0.125
    )
    info = np.iinfo(dtype)
    expected_q = np.clip(expected_scores * 16 + zero_point - 1, info.min, info.max)
    assert np.abs(scores.astype(np.float64) - expected_q).max() <= 1
    assert np.abs(keypoints.astype(np.float64) - expected_keypoints / 0.125).max() <= 1


def test_hand_checked_parabola():
    # f(y, x) = 10 - (x - 2.25)^2 - (y - 1.5)^2 on a 5x5 grid: the maximum is at (1.5, 2.25)
    # with value 10; sampled at integers the grid maximum is (r, c) = (1, 2) (first of the tie
    # at y = 1 and 2), and the quadratic model is exact: delta = (0.25, 0.5), score 10.
    y, x = np.mgrid[0:5, 0:5].astype(np.float32)
    m = (10 - (x - 2.25) ** 2 - (y - 1.5) ** 2).astype(np.float32)
    heatmaps = m.reshape(1, 5, 5, 1)
    boxes = np.array([[0, 0, 5, 5]], np.float32)  # one heatmap pixel per box unit
    scores, keypoints = make_tester(heatmaps, boxes).run()
    assert scores.item() == pytest.approx(10.0, abs=1e-5)
    np.testing.assert_allclose(keypoints[0, 0], [2.25 + 0.5, 1.5 + 0.5], atol=1e-5)


def test_flat_heatmap_and_border_maximum():
    heatmaps = np.zeros((2, 4, 4, 1), np.float32)
    heatmaps[1, 0, 3, 0] = 1.0  # a corner maximum: the patch mirrors through it
    boxes = np.array([[0, 0, 8, 8], [2, 2, 6, 10]], np.float32)
    scores, keypoints = make_tester(heatmaps, boxes).run()
    expected_scores, expected_keypoints = reference(heatmaps, boxes)
    # Flat: singular Hessian, no refinement: the first pixel's centre.
    np.testing.assert_allclose(keypoints[0, 0], [1.0, 1.0])
    np.testing.assert_allclose(scores, expected_scores, atol=1e-6)
    np.testing.assert_allclose(keypoints, expected_keypoints, atol=1e-5)


def test_delta_is_clipped_to_one_and_a_half_pixels():
    # This patch's quadratic model peaks at delta = (2.89, -1.78) (found by a search over
    # patches whose centre is the maximum); the clip scales it to (1.5, -0.92).
    m = np.array([[0.5, 0.7, 0.9], [0.9, 1.0, 0.9], [0.9, 0.8, 0.0]], np.float32)
    dx, dy, _ = refine(m.astype(np.float64))
    assert (dx, dy) == (pytest.approx(1.5), pytest.approx(-1.5 * 1.77777778 / 2.88888889))
    boxes = np.array([[0, 0, 3, 3]], np.float32)
    scores, keypoints = make_tester(m.reshape(1, 3, 3, 1), boxes).run()
    np.testing.assert_allclose(keypoints[0, 0], [1 + dx + 0.5, 1 + dy + 0.5], atol=1e-5)
    expected_scores, _ = reference(m.reshape(1, 3, 3, 1), boxes)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-5)


def test_zero_boxes():
    model = Model()
    boxes_in = model.add_operand(F32, (2, 4))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(2, np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, -1], np.int32))
    boxes = model.add_operand(F32, (0, 4))
    model.add_operation(OperationCode.SLICE, [boxes_in, begin, size], [boxes])
    maps_in = model.add_operand(F32, (2, 3, 3, 2))
    begin4 = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(4, np.int32))
    size4 = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, -1, -1, -1], np.int32))
    maps = model.add_operand(F32, (0, 3, 3, 2))
    model.add_operation(OperationCode.SLICE, [maps_in, begin4, size4], [maps])
    scores = model.add_operand(F32, (0, 2))
    keypoints = model.add_operand(F32, (0, 2, 2))
    model.add_operation(
        HEATMAP, [maps, boxes, model.add_scalar(OperandCode.BOOL, False)], [scores, keypoints]
    )
    row = model.add_constant(F32, np.full((1, 2), 7, np.float32))
    out = model.add_operand(F32, (1, 2))
    model.add_operation(
        OperationCode.CONCATENATION, [scores, row, model.add_scalar(OperandCode.INT32, 0)], [out]
    )
    model.identify_inputs_and_outputs([boxes_in, maps_in], [out])
    model.finish()
    compilation = Compilation(model).finish()
    before = mock_nnapi.operation_count(HEATMAP)
    (result,) = compilation.execute(
        [np.ones((2, 4), np.float32), np.ones((2, 3, 3, 2), np.float32)], [(1, 2)]
    )
    np.testing.assert_array_equal(result, np.full((1, 2), 7, np.float32))
    assert mock_nnapi.operation_count(HEATMAP) == before + 1


def test_rejects_bad_operands():
    heatmaps, boxes = random_case(0)
    heatmaps, boxes = heatmaps.astype(np.float32), boxes.astype(np.float32)
    assert "square" in expect_failed_when_prepared(make_tester(heatmaps[:, :, :5], boxes))
    assert "square" in expect_failed_when_prepared(make_tester(heatmaps[:, :1, :1], boxes))
    assert "boxes" in expect_failed_when_prepared(make_tester(heatmaps, boxes[:2]))
    assert "boxes" in expect_failed_when_prepared(make_tester(heatmaps, boxes[:, :3]))
    assert "4-D" in expect_bad_data_at_add(
        make_tester(heatmaps[0], boxes, shapes=((6, 4), (6, 4, 2)))
    )
    assert "keypoints" in expect_bad_data_at_add(make_tester(heatmaps, boxes, keypoint_code=F16))
    expect_failed_when_prepared(make_tester(heatmaps, boxes, shapes=((3, 4), (3, 4, 3))))
    tester = make_tester(heatmaps, boxes)
    tester._inputs[1].update(array=boxes.astype(np.float16), code=F16)
    expect_bad_data_at_add(tester)


@pytest.mark.parametrize("which", ["boxes", "keypoints"])
def test_quant16_parameters_are_fixed(which):
    heatmaps = np.full((1, 3, 3, 1), 128, np.uint8)
    boxes = np.array([[0, 0, 16, 16]], np.uint16)
    box_quant = (0.25, 0) if which == "boxes" else (0.125, 0)
    keypoint_quant = (0.125, 3) if which == "keypoints" else box_quant
    tester = make_tester(
        heatmaps,
        boxes,
        code=OperandCode.TENSOR_QUANT8_ASYMM,
        quant=(0.5, 128),
        box_quant=box_quant,
        keypoint_quant=keypoint_quant,
    )
    with pytest.raises(NnapiError) as error:
        tester.run()
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
    boxes = np.zeros((2, 4), np.uint16 if quantized else dtype)
    tester = make_tester(
        np.zeros((2, 3, 3, 2), dtype),
        boxes,
        code=code,
        quant=(0.5, 0) if quantized else (0.0, 0),
        box_quant=(0.125, 0) if quantized else (0.0, 0),
    )
    assert required_feature_level(tester, feature_level_devices) == level
