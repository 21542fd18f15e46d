# SPDX-License-Identifier: Apache-2.0
"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR against numpy references.

The references follow TensorFlow's sampling rules (which Android implements), computing the
source coordinates in single precision like the mock and Android's CPU path, but interpolating
in float64 with clamped coordinates.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import Compilation, Model, OperandCode, OperationCode

from .helpers import DTYPES, expect_error, expect_failed_when_prepared, sample
from .op_tester import OpTester, assert_close

# (align_corners, half_pixel_centers)
MODES = [(False, False), (True, False), (False, True)]


def source_positions(in_size, out_size, align, half, bilinear):
    f = np.float32
    if align and out_size > 1:
        scale = f(in_size - 1) / f(out_size - 1)
    else:
        scale = f(in_size) / f(out_size)
    o = np.arange(out_size, dtype=np.float32)
    if half:
        return (o + f(0.5)) * scale - (f(0.5) if bilinear else f(0))
    return o * scale


def bilinear_reference(x, out_h, out_w, align, half):
    """x is NHWC."""
    result = x.astype(np.float64)
    for axis, out_size in ((1, out_h), (2, out_w)):
        in_size = result.shape[axis]
        pos = np.clip(
            source_positions(in_size, out_size, align, half, True).astype(np.float64),
            0,
            in_size - 1,
        )
        low = np.floor(pos).astype(int)
        high = np.minimum(low + 1, in_size - 1)
        frac = pos - low
        shape = [1, 1, 1, 1]
        shape[axis] = out_size
        frac = frac.reshape(shape)
        result = np.take(result, low, axis) * (1 - frac) + np.take(result, high, axis) * frac
    if np.issubdtype(x.dtype, np.integer):
        info = np.iinfo(x.dtype)
        return np.clip(np.round(result), info.min, info.max).astype(x.dtype)
    return result


def nearest_reference(x, out_h, out_w, align, half):
    result = x
    for axis, out_size in ((1, out_h), (2, out_w)):
        in_size = result.shape[axis]
        pos = source_positions(in_size, out_size, align, half, False).astype(np.float64)
        index = np.floor(pos + 0.5) if align else np.floor(pos)
        result = np.take(result, np.clip(index.astype(int), 0, in_size - 1), axis)
    return result


def resize_tester(op, x, size_inputs, out_shape, flags=(), scale=0.0, zero_point=0):
    tester = OpTester(op).input(x, scale=scale, zero_point=zero_point)
    for code, value in size_inputs:
        tester = tester.scalar(code, value)
    for flag in flags:
        tester = tester.scalar(OperandCode.BOOL, flag)
    return tester.output(OpTester.default_code(x), out_shape, scale, zero_point)


def check(result, expected, dtype):
    kind = "float16" if dtype == np.float16 else None
    assert_close(result, expected, kind)


@pytest.mark.parametrize(
    "op", [OperationCode.RESIZE_BILINEAR, OperationCode.RESIZE_NEAREST_NEIGHBOR]
)
@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize(("align", "half"), MODES)
def test_resize_by_size(op, dtype, scale, zero_point, nchw, align, half):
    x = sample((2, 3, 4, 3), dtype)  # NHWC
    out_h, out_w = 5, 3
    reference = bilinear_reference if op == OperationCode.RESIZE_BILINEAR else nearest_reference
    expected = reference(x, out_h, out_w, align, half)
    fed = np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x
    out_shape = (2, 3, out_h, out_w) if nchw else (2, out_h, out_w, 3)
    sizes = [(OperandCode.INT32, out_w), (OperandCode.INT32, out_h)]
    result = (
        resize_tester(op, fed, sizes, out_shape, (nchw, align, half), scale, zero_point)
        .dynamic_outputs(nchw and align)
        .run()[0]
    )
    if nchw:
        result = result.transpose(0, 2, 3, 1)
    check(result, expected, dtype)


@pytest.mark.parametrize(
    "op", [OperationCode.RESIZE_BILINEAR, OperationCode.RESIZE_NEAREST_NEIGHBOR]
)
@pytest.mark.parametrize(
    ("dtype", "scale_code"),
    [
        (np.float32, OperandCode.FLOAT32),
        (np.float16, OperandCode.FLOAT16),
        (np.uint8, OperandCode.FLOAT32),
    ],
)
def test_resize_by_scale(op, dtype, scale_code):
    x = sample((1, 4, 5, 2), dtype)
    width_scale, height_scale = 1.5, 0.6
    out_h = int(np.floor(np.float32(4) * np.float32(height_scale)))
    out_w = int(np.floor(np.float32(5) * np.float32(width_scale)))
    reference = bilinear_reference if op == OperationCode.RESIZE_BILINEAR else nearest_reference
    expected = reference(x, out_h, out_w, False, False)
    sizes = [(scale_code, width_scale), (scale_code, height_scale)]
    quant = (0.5, 10) if dtype == np.uint8 else (0.0, 0)
    result = resize_tester(op, x, sizes, (1, out_h, out_w, 2), (False,), *quant)
    check(result.dynamic_outputs().run()[0], expected, dtype)


def test_bilinear_without_layout_flag_and_known_values():
    # 2x2 -> 3x3 (NNAPI's resize_bilinear example): the corners stay, the middle interpolates.
    x = np.array([1.0, 1.0, 2.0, 2.0], np.float32).reshape(1, 2, 2, 1)
    sizes = [(OperandCode.INT32, 3), (OperandCode.INT32, 3)]
    result = resize_tester(OperationCode.RESIZE_BILINEAR, x, sizes, (1, 3, 3, 1)).run()[0]
    expected = np.array([1, 1, 1, 5 / 3, 5 / 3, 5 / 3, 2, 2, 2], np.float32).reshape(1, 3, 3, 1)
    assert_close(result, expected)
    aligned = resize_tester(
        OperationCode.RESIZE_BILINEAR, x, sizes, (1, 3, 3, 1), (False, True, False)
    ).run()[0]
    assert_close(aligned.ravel(), np.array([1, 1, 1, 1.5, 1.5, 1.5, 2, 2, 2], np.float32))


def test_zero_batches_pass_through():
    # SLICE makes a [0, 2, 2, 1] temporary; RESIZE_BILINEAR accepts zero batches.
    model = Model()
    x = model.add_operand(OperandCode.TENSOR_FLOAT32, (1, 2, 2, 1))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(4, np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, -1, -1, -1], np.int32))
    empty = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 2, 2, 1))
    model.add_operation(OperationCode.SLICE, [x, begin, size], [empty])
    width = model.add_scalar(OperandCode.INT32, 3)
    height = model.add_scalar(OperandCode.INT32, 3)
    resized = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 3, 3, 1))
    model.add_operation(OperationCode.RESIZE_BILINEAR, [empty, width, height], [resized])
    y = model.add_operand(OperandCode.TENSOR_FLOAT32, (1, 3, 3, 1))
    axis = model.add_scalar(OperandCode.INT32, 0)
    out = model.add_operand(OperandCode.TENSOR_FLOAT32, (1, 3, 3, 1))
    model.add_operation(OperationCode.CONCATENATION, [resized, y, axis], [out])
    model.identify_inputs_and_outputs([x, y], [out])
    model.finish()
    yv = sample((1, 3, 3, 1), np.float32)
    (result,) = Compilation(model).finish().execute([sample((1, 2, 2, 1), np.float32), yv])
    np.testing.assert_array_equal(result, yv)


def test_rejects_bad_arguments():
    x = sample((1, 2, 2, 1), np.float32)
    size = [(OperandCode.INT32, 3), (OperandCode.INT32, 3)]
    bilinear, nearest = OperationCode.RESIZE_BILINEAR, OperationCode.RESIZE_NEAREST_NEIGHBOR
    testers = [
        resize_tester(nearest, x, size, (1, 3, 3, 1)),  # layout flag is required
        resize_tester(
            bilinear, x, [(OperandCode.INT32, 3), (OperandCode.FLOAT32, 1.5)], (1, 3, 3, 1)
        ),
        resize_tester(bilinear, x, [(OperandCode.FLOAT16, 1.5)] * 2, (1, 3, 3, 1)),
        resize_tester(bilinear, sample((2, 2, 1), np.float32), size, (3, 3, 1)),
        resize_tester(bilinear, np.ones((1, 2, 2, 1), np.int32), size, (1, 3, 3, 1)),
        OpTester(bilinear)  # requantising output
        .input(sample((1, 2, 2, 1), np.uint8), scale=0.5)
        .scalar(OperandCode.INT32, 3)
        .scalar(OperandCode.INT32, 3)
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (1, 3, 3, 1), 0.5, 1),
    ]
    for tester in testers:
        expect_error(tester.build)
    # Refused by argument values, which Android checks when the operation is prepared.
    refused_when_prepared = [
        resize_tester(bilinear, x, size, (1, 3, 3, 1), (False, True, True)),  # align and half
        resize_tester(bilinear, x, [(OperandCode.INT32, 0), (OperandCode.INT32, 3)], (1, 3, 3, 1)),
        resize_tester(bilinear, x, size, (1, 3, 4, 1)),  # declared output disagrees
    ]
    for tester in refused_when_prepared:
        expect_failed_when_prepared(tester)
