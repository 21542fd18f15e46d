# SPDX-License-Identifier: Apache-2.0
"""Zero-sized tensors through BOX_WITH_NMS_LIMIT -> ROI_ALIGN -> TRANSPOSE, as in Android's
conformance examples (spec_V1_2 transpose_v1_2 "zero_sized": float32, relaxed, float16, quant8;
the quant8-signed form is the quant8 one with every TENSOR_QUANT8_ASYMM operand converted the way
Android's test harness converts them: zero point and values minus 128).

BOX_WITH_NMS_LIMIT keeps no box (the only non-background class scores 0.1, under the 0.3
threshold), so ROI_ALIGN gets 0 regions and produces a [0, 2, 2, 1] feature map, which TRANSPOSE
(perm [0, 3, 1, 2]) turns into a [0, 1, 2, 2] output. Every step must succeed (Android registers
TRANSPOSE, like ROI_ALIGN, with allowZeroSizedInput) and report the zero-sized shapes; the output
buffers have one byte, like CTS's buffers for zero-sized outputs. The same holds with the outputs
declared with unknown dimensions (Android's dynamic-output-shape variant).
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from mock_nnapi.api import NUMPY_DTYPES, call

import mock_nnapi
from mock_nnapi import (
    Compilation,
    Execution,
    Model,
    NnapiError,
    OperandCode,
    OperationCode,
    ResultCode,
)

F32 = OperandCode.TENSOR_FLOAT32
F16 = OperandCode.TENSOR_FLOAT16
U8 = OperandCode.TENSOR_QUANT8_ASYMM
S8 = OperandCode.TENSOR_QUANT8_ASYMM_SIGNED
U16 = OperandCode.TENSOR_QUANT16_ASYMM
I32 = OperandCode.TENSOR_INT32

# name: (tensor type, scalar type, (scale, zero point), roi type, roi quantisation,
#        scores, rois, the ROI_ALIGN input's value)
VARIANTS = {
    "float32": (F32, OperandCode.FLOAT32, (0.0, 0), F32, (0.0, 0), [0.9, 0.1], None, [1.0]),
    "relaxed": (F32, OperandCode.FLOAT32, (0.0, 0), F32, (0.0, 0), [0.9, 0.1], None, [1.0]),
    "float16": (F16, OperandCode.FLOAT16, (0.0, 0), F16, (0.0, 0), [0.9, 0.1], None, [1.0]),
    "quant8": (U8, OperandCode.FLOAT32, (0.1, 128), U16, (0.125, 0), [137, 129], 8, [138]),
    "quant8_signed": (S8, OperandCode.FLOAT32, (0.1, 0), U16, (0.125, 0), [9, 1], 8, [10]),
}
#: The two regions (x1, y1, x2, y2 per class), in real coordinates.
ROIS = np.array([1, 1, 10, 10, 0, 0, 10, 10], np.float64)
CHAIN = (OperationCode.BOX_WITH_NMS_LIMIT, OperationCode.ROI_ALIGN, OperationCode.TRANSPOSE)


def chain_model(variant, dynamic=False, perm=(0, 3, 1, 2)):
    """The three-operation model; returns (model, its input's value)."""
    code, scalar, quant, roi_code, roi_quant, scores, roi_steps, value = VARIANTS[variant]
    rois = ROIS if roi_steps is None else ROIS * roi_steps
    unknown = (lambda shape: (0,) * len(shape)) if dynamic else (lambda shape: shape)
    model = Model()
    score_operand = model.add_operand(code, (1, 2), *quant)
    model.set_value(score_operand, np.array(scores).reshape(1, 2))
    roi_operand = model.add_operand(roi_code, (1, 8), *roi_quant)
    model.set_value(roi_operand, rois.reshape(1, 8))
    batches = model.add_constant(I32, np.array([0], np.int32))
    nms_arguments = [
        model.add_scalar(scalar, 0.3),  # score threshold
        model.add_scalar(OperandCode.INT32, -1),  # no limit on the boxes kept
        model.add_scalar(OperandCode.INT32, 0),  # hard NMS
        model.add_scalar(scalar, 0.4),  # IoU threshold
        model.add_scalar(scalar, 1.0),  # sigma
        model.add_scalar(scalar, 0.3),  # NMS score threshold
    ]
    scores_out = model.add_operand(code, unknown((0,)), *quant)
    rois_out = model.add_operand(roi_code, (0, 4), *roi_quant)
    classes_out = model.add_operand(I32, unknown((0,)))
    batch_split = model.add_operand(I32, (0,))
    model.add_operation(
        OperationCode.BOX_WITH_NMS_LIMIT,
        [score_operand, roi_operand, batches, *nms_arguments],
        [scores_out, rois_out, classes_out, batch_split],
    )
    feature_map_in = model.add_operand(code, (1, 1, 1, 1), *quant)
    align_arguments = [
        model.add_scalar(OperandCode.INT32, 2),  # output height
        model.add_scalar(OperandCode.INT32, 2),  # output width
        model.add_scalar(scalar, 2.0),  # height ratio
        model.add_scalar(scalar, 2.0),  # width ratio
        model.add_scalar(OperandCode.INT32, 4),  # height sampling points
        model.add_scalar(OperandCode.INT32, 4),  # width sampling points
        model.add_scalar(OperandCode.BOOL, False),  # NHWC
    ]
    feature_map = model.add_operand(code, (0, 2, 2, 1), *quant)
    model.add_operation(
        OperationCode.ROI_ALIGN,
        [feature_map_in, rois_out, batch_split, *align_arguments],
        [feature_map],
    )
    perm_operand = model.add_constant(I32, np.array(perm, np.int32))
    out = model.add_operand(code, unknown((0, 1, 2, 2)), *quant)
    model.add_operation(OperationCode.TRANSPOSE, [feature_map, perm_operand], [out])
    model.identify_inputs_and_outputs([feature_map_in], [scores_out, classes_out, out])
    if variant == "relaxed":
        model.relax_computation_float32_to_float16(True)
    model.finish()
    return model, np.array(value, NUMPY_DTYPES[code]).reshape(1, 1, 1, 1)


def run_chain(model, value):
    """Runs with one-byte output buffers; returns the output dimensions the mock reports."""
    execution = Execution(Compilation(model).finish())
    handle = execution.handle
    call("ANeuralNetworksExecution_setInput", handle, 0, None, value.ctypes.data, value.nbytes)
    buffers = [(ctypes.c_uint8 * 1)() for _ in range(3)]
    for index, buffer in enumerate(buffers):
        call("ANeuralNetworksExecution_setOutput", handle, index, None, buffer, 1)
    call("ANeuralNetworksExecution_compute", handle)
    return [execution.output_dimensions(index) for index in range(3)]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_zero_boxes_through_roi_align_and_transpose(variant, dynamic):
    before = [mock_nnapi.operation_count(op) for op in CHAIN]
    model, value = chain_model(variant, dynamic)
    assert run_chain(model, value) == [(0,), (0,), (0, 1, 2, 2)]
    assert [mock_nnapi.operation_count(op) for op in CHAIN] == [n + 1 for n in before]


def expect_op_failed(action, text):
    with pytest.raises(NnapiError) as error:
        action()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert error.value.function == "ANeuralNetworksExecution_compute", str(error.value)
    assert text in str(error.value), str(error.value)
    error.value.__traceback__ = None


def test_zero_sized_transpose_still_checks_the_permutation():
    # A permutation entry outside 0..rank-1 fails the operation whatever the input's size (it is
    # a constant's value, which validation does not read: OP_FAILED when TRANSPOSE is prepared).
    model, value = chain_model("float32", perm=(0, 4, 1, 2))
    expect_op_failed(lambda: run_chain(model, value), "TRANSPOSE perm")


def test_zero_sized_transpose_output_shape_is_checked():
    # The declared output must agree with the permuted shape ([0, 1, 2, 2], not [0, 2, 2, 1];
    # 0 is an unknown dimension, the 2 is not).
    model = Model()
    x = model.add_operand(F32, (2, 2, 2, 1))
    begin = model.add_constant(I32, np.zeros(4, np.int32))
    size = model.add_constant(I32, np.array([0, 2, 2, 1], np.int32))
    empty = model.add_operand(F32, (0, 2, 2, 1))
    model.add_operation(OperationCode.SLICE, [x, begin, size], [empty])
    perm = model.add_constant(I32, np.array([0, 3, 1, 2], np.int32))
    out = model.add_operand(F32, (0, 2, 2, 1))
    model.add_operation(OperationCode.TRANSPOSE, [empty, perm], [out])
    model.identify_inputs_and_outputs([x], [out])
    model.finish()
    compilation = Compilation(model).finish()
    data = np.ones((2, 2, 2, 1), np.float32)
    expect_op_failed(
        lambda: compilation.execute([data], [(1, 2, 2, 1)]), "TRANSPOSE output 0 declared"
    )
