# SPDX-License-Identifier: Apache-2.0
"""AXIS_ALIGNED_BBOX_TRANSFORM against a numpy reference of the NDK's equations: the box centre
moves by (dx * w, dy * h), the size scales by (exp(dw), exp(dh)), and the corners are clipped to
the box's image.

Covered: fp32, fp16 and the quantised form (QUANT16_ASYMM boxes with QUANT8_ASYMM or
QUANT8_ASYMM_SIGNED deltas), several classes and images, a hand-checked box, clipping on every
side, zero rois (an empty output consumed by CONCATENATION), dynamic output shapes, the
BAD_DATA validation rules, OP_FAILED for a batch index out of range, an inverted box and
quantised operands with other parameters, and the feature levels (3; 4 for signed deltas).
"""

from __future__ import annotations

import numpy as np
import pytest

import mock_nnapi
from mock_nnapi import Compilation, Model, NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add
from .op_tester import OpTester, assert_close
from .test_conv_2d import required_feature_level

BBOX = OperationCode.AXIS_ALIGNED_BBOX_TRANSFORM
F32 = OperandCode.TENSOR_FLOAT32
Q16 = OperandCode.TENSOR_QUANT16_ASYMM


def reference(rois, deltas, batches, image):
    rois = rois.astype(np.float64)
    deltas = deltas.astype(np.float64).reshape(len(rois), -1, 4)
    w = rois[:, 2] - rois[:, 0]
    h = rois[:, 3] - rois[:, 1]
    cx = (rois[:, 0] + w / 2)[:, None]
    cy = (rois[:, 1] + h / 2)[:, None]
    w, h = w[:, None], h[:, None]
    ncx = cx + deltas[..., 0] * w
    ncy = cy + deltas[..., 1] * h
    nw = w * np.exp(deltas[..., 2])
    nh = h * np.exp(deltas[..., 3])
    height = image[batches, 0].astype(np.float64)[:, None]
    width = image[batches, 1].astype(np.float64)[:, None]
    out = np.stack(
        [
            np.clip(ncx - nw / 2, 0, width),
            np.clip(ncy - nh / 2, 0, height),
            np.clip(ncx + nw / 2, 0, width),
            np.clip(ncy + nh / 2, 0, height),
        ],
        axis=-1,
    )
    return out.reshape(len(rois), -1)


def random_case(num_rois, classes, images, seed=0):
    rng = np.random.default_rng(seed)
    image = np.stack([rng.uniform(30, 60, images), rng.uniform(30, 60, images)], axis=1)
    corner = rng.uniform(0, 30, (num_rois, 2))
    size = rng.uniform(0, 20, (num_rois, 2))
    rois = np.concatenate([corner, corner + size], axis=1)
    deltas = rng.uniform(-1, 1, (num_rois, classes * 4))
    batches = rng.integers(0, images, num_rois).astype(np.int32)
    return rois, deltas, batches, image


def make_tester(
    rois,
    deltas,
    batches,
    image,
    code=F32,
    delta_code=None,
    delta_quant=(0.0, 0),
    box_quant=(0.0, 0),
    out_shape=None,
    out_quant=None,
):
    delta_code = delta_code or code
    out_shape = out_shape if out_shape is not None else deltas.shape
    return (
        OpTester(BBOX)
        .input(rois, code, *box_quant)
        .input(deltas, delta_code, *delta_quant)
        .input(batches)
        .input(image, code, *box_quant)
        .output(code, out_shape, *(out_quant or box_quant))
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize(("num_rois", "classes", "images"), [(1, 1, 1), (5, 3, 2), (16, 2, 4)])
def test_float(dtype, num_rois, classes, images):
    rois, deltas, batches, image = random_case(num_rois, classes, images)
    rois, deltas, image = (a.astype(dtype) for a in (rois, deltas, image))
    code = F32 if dtype == np.float32 else OperandCode.TENSOR_FLOAT16
    (result,) = make_tester(rois, deltas, batches, image, code).dynamic_outputs(num_rois == 5).run()
    expected = reference(rois, deltas, batches, image)
    if dtype == np.float32:
        # exp in float32 and the float32 rounding of each step: relative error well below 1e-5.
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-4)
    else:
        assert_close(result, expected, "float16")


@pytest.mark.parametrize(
    ("delta_dtype", "delta_code", "zero_point"),
    [
        (np.uint8, OperandCode.TENSOR_QUANT8_ASYMM, 128),
        (np.int8, OperandCode.TENSOR_QUANT8_ASYMM_SIGNED, 0),
    ],
)
def test_quantized(delta_dtype, delta_code, zero_point):
    rois, deltas, batches, image = random_case(6, 2, 2, seed=1)
    q_rois = np.round(rois / 0.125).astype(np.uint16)
    q_image = np.round(image / 0.125).astype(np.uint16)
    q_deltas = np.clip(
        np.round(deltas / 0.01) + zero_point, np.iinfo(delta_dtype).min, np.iinfo(delta_dtype).max
    ).astype(delta_dtype)
    (result,) = make_tester(
        q_rois, q_deltas, batches, q_image, Q16, delta_code, (0.01, zero_point), (0.125, 0)
    ).run()
    expected = reference(
        q_rois * 0.125, (q_deltas.astype(np.float64) - zero_point) * 0.01, batches, q_image * 0.125
    )
    # Quantised values within one step (the accuracy criterion of the operation tests).
    assert np.abs(result.astype(np.float64) - expected / 0.125).max() <= 1


def test_hand_checked_box():
    # Box [2, 2, 6, 10]: centre (4, 6), size 4 x 8. Class 0: no change. Class 1: dx = 0.5 moves
    # the centre by 2, dw = ln 2 doubles the width -> [2, 2, 10, 10]; dh = ln 0.5 halves the
    # height -> y in [4, 8]. Class 2: a huge box clipped to the 20 x 12 image (height, width).
    rois = np.array([[2, 2, 6, 10]], np.float32)
    deltas = np.array([[0, 0, 0, 0, 0.5, 0, np.log(2), np.log(0.5), 0, 0, 5, 5]], np.float32)
    (result,) = make_tester(
        rois, deltas, np.array([0], np.int32), np.array([[20, 12]], np.float32)
    ).run()
    np.testing.assert_allclose(
        result.reshape(3, 4), [[2, 2, 6, 10], [2, 4, 10, 8], [0, 0, 12, 20]], atol=1e-5
    )


def test_zero_rois():
    # No box: SLICE keeps none; the empty output joins a row in CONCATENATION.
    model = Model()
    rois_in = model.add_operand(F32, (2, 4))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(2, np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, -1], np.int32))
    rois = model.add_operand(F32, (0, 4))
    model.add_operation(OperationCode.SLICE, [rois_in, begin, size], [rois])
    deltas = model.add_operand(F32, (0, 8))
    size8 = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, -1], np.int32))
    deltas_in = model.add_operand(F32, (2, 8))
    model.add_operation(OperationCode.SLICE, [deltas_in, begin, size8], [deltas])
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
    image = model.add_constant(F32, np.array([[10, 10]], np.float32))
    boxes = model.add_operand(F32, (0, 8))
    model.add_operation(BBOX, [rois, deltas, batches, image], [boxes])
    row = model.add_constant(F32, np.full((1, 8), 7, np.float32))
    axis = model.add_scalar(OperandCode.INT32, 0)
    out = model.add_operand(F32, (1, 8))
    model.add_operation(OperationCode.CONCATENATION, [boxes, row, axis], [out])
    model.identify_inputs_and_outputs([rois_in, deltas_in, batches_in], [out])
    model.finish()
    compilation = Compilation(model).finish()
    before = mock_nnapi.operation_count(BBOX)
    (result,) = compilation.execute(
        [np.ones((2, 4), np.float32), np.ones((2, 8), np.float32), np.zeros(2, np.int32)],
        [(1, 8)],
    )
    np.testing.assert_array_equal(result, np.full((1, 8), 7, np.float32))
    assert mock_nnapi.operation_count(BBOX) == before + 1


def test_rejects_bad_operands():
    rois, deltas, batches, image = random_case(3, 2, 1)
    rois, deltas, image = (a.astype(np.float32) for a in (rois, deltas, image))
    assert "rois" in expect_bad_data_at_add(make_tester(rois[:, :3], deltas, batches, image))
    assert "deltas" in expect_bad_data_at_add(
        make_tester(rois, deltas[:, :6], batches, image, out_shape=(3, 6))
    )
    assert "deltas" in expect_bad_data_at_add(
        make_tester(rois, deltas[:2], batches, image, out_shape=(2, 8))
    )
    assert "batch" in expect_bad_data_at_add(make_tester(rois, deltas, batches[:2], image))
    assert "image" in expect_bad_data_at_add(make_tester(rois, deltas, batches, image[:, :1]))
    assert "rank" in expect_bad_data_at_add(
        make_tester(rois, deltas, batches, image.reshape(-1), out_shape=(3, 8))
    )
    # Mixed float types, INT32 boxes, a wrong declared output shape.
    expect_bad_data_at_add(
        make_tester(
            rois, deltas.astype(np.float16), batches, image, delta_code=OperandCode.TENSOR_FLOAT16
        )
    )
    expect_bad_data_at_add(
        make_tester(
            rois.astype(np.int32),
            deltas.astype(np.int32),
            batches,
            image.astype(np.int32),
            OperandCode.TENSOR_INT32,
        )
    )
    expect_bad_data_at_add(make_tester(rois, deltas, batches, image, out_shape=(3, 4)))
    # Quantised boxes need quantised 8-bit deltas.
    expect_bad_data_at_add(
        make_tester(
            rois.astype(np.uint16),
            deltas,
            batches,
            image.astype(np.uint16),
            Q16,
            F32,
            box_quant=(0.125, 0),
        )
    )


@pytest.mark.parametrize(
    ("batches", "rois"),
    [
        ([0, 1, 0], [[0, 0, 1, 1]] * 3),
        ([0, -1, 0], [[0, 0, 1, 1]] * 3),
        ([0, 0, 0], [[0, 0, 1, 1], [2, 0, 1, 1], [0, 0, 1, 1]]),
    ],
    ids=["batch_too_large", "batch_negative", "inverted_box"],
)
def test_bad_boxes_fail_the_execution(batches, rois):
    tester = make_tester(
        np.array(rois, np.float32),
        np.zeros((3, 4), np.float32),
        np.array(batches, np.int32),
        np.array([[10, 10]], np.float32),
    )
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)


@pytest.mark.parametrize("which", ["rois", "output"])
def test_quant16_parameters_are_fixed(which):
    rois = np.array([[0, 0, 8, 8]], np.uint16)
    box_quant = (0.25, 0) if which == "rois" else (0.125, 0)
    out_quant = (0.125, 1) if which == "output" else box_quant
    tester = make_tester(
        rois,
        np.full((1, 4), 128, np.uint8),
        np.array([0], np.int32),
        np.array([[80, 80]], np.uint16),
        Q16,
        OperandCode.TENSOR_QUANT8_ASYMM,
        (0.01, 128),
        box_quant,
        out_quant=out_quant,
    )
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert "0.125" in str(error.value)


@pytest.mark.parametrize(
    ("code", "delta_code", "level"),
    [
        (F32, F32, 3),
        (OperandCode.TENSOR_FLOAT16, OperandCode.TENSOR_FLOAT16, 3),
        (Q16, OperandCode.TENSOR_QUANT8_ASYMM, 3),
        (Q16, OperandCode.TENSOR_QUANT8_ASYMM_SIGNED, 4),
    ],
)
def test_feature_levels(feature_level_devices, code, delta_code, level):
    quantized = code == Q16
    dtype = {F32: np.float32, OperandCode.TENSOR_FLOAT16: np.float16, Q16: np.uint16}[code]
    delta_dtype = {
        OperandCode.TENSOR_QUANT8_ASYMM: np.uint8,
        OperandCode.TENSOR_QUANT8_ASYMM_SIGNED: np.int8,
    }.get(delta_code, dtype)
    tester = make_tester(
        np.zeros((2, 4), dtype),
        np.zeros((2, 4), delta_dtype),
        np.zeros(2, np.int32),
        np.ones((1, 2), dtype),
        code,
        delta_code,
        (0.5, 0) if quantized else (0.0, 0),
        (0.125, 0) if quantized else (0.0, 0),
    )
    assert required_feature_level(tester, feature_level_devices) == level
