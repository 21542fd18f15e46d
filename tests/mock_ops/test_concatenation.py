# SPDX-License-Identifier: Apache-2.0
"""CONCATENATION and PACK against numpy: axes, dtypes, requantisation, zero-sized inputs."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import Compilation, Execution, Model, OperandCode, OperationCode

from .helpers import expect_error, expect_failed_when_prepared, sample
from .op_tester import OpTester, assert_close

FLOAT_TYPES = [np.float32, np.float16]


def requantize(q, scale_in, zero_in, scale_out, zero_out, dtype):
    real = (q.astype(np.float64) - zero_in) * scale_in
    info = np.iinfo(dtype)
    return np.clip(np.round(real / scale_out) + zero_out, info.min, info.max).astype(dtype)


# ---- CONCATENATION -----------------------------------------------------------------------------


def concatenate(arrays, axis, quant=None, out_quant=(0.0, 0), dynamic=False, out_shape=None):
    quant = quant or [(0.0, 0)] * len(arrays)
    tester = OpTester(OperationCode.CONCATENATION)
    for array, (scale, zero_point) in zip(arrays, quant, strict=True):
        tester = tester.input(array, scale=scale, zero_point=zero_point)
    shape = out_shape or np.concatenate(arrays, axis).shape
    return (
        tester.scalar(OperandCode.INT32, axis)
        .output(OpTester.default_code(arrays[0]), shape, *out_quant)
        .dynamic_outputs(dynamic)
        .run()[0]
    )


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize(
    ("shapes", "axis"),
    [
        (((3,), (5,)), 0),
        (((2, 3), (2, 1), (2, 4)), 1),
        (((1, 2, 3), (4, 2, 3)), 0),
        (((2, 3, 4, 1), (2, 3, 4, 2)), 3),
        (((2, 3, 1, 5), (2, 3, 2, 5), (2, 3, 3, 5)), 2),
    ],
)
def test_float(dtype, shapes, axis):
    arrays = [sample(shape, dtype, seed) for seed, shape in enumerate(shapes)]
    result = concatenate(arrays, axis, dynamic=axis == 1)
    np.testing.assert_array_equal(result, np.concatenate(arrays, axis))


def test_single_input():
    x = sample((2, 3), np.float32)
    np.testing.assert_array_equal(concatenate([x], 1), x)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_quantized_same_parameters_is_exact(dtype):
    arrays = [sample((2, 3), dtype, 0), sample((2, 2), dtype, 1)]
    result = concatenate(arrays, 1, quant=[(0.5, 2), (0.5, 2)], out_quant=(0.5, 2))
    np.testing.assert_array_equal(result, np.concatenate(arrays, 1))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_quantized_inputs_are_requantised(dtype):
    zero = 128 if dtype == np.uint8 else 0
    quant = [(0.5, zero - 10), (0.125, zero + 20), (1.0, zero)]
    out_quant = (0.25, zero + 5)
    arrays = [sample((3, 2, 2), dtype, seed) for seed in range(3)]
    result = concatenate(arrays, 1, quant=quant, out_quant=out_quant, dynamic=True)
    expected = np.concatenate(
        [requantize(a, s, z, *out_quant, dtype) for a, (s, z) in zip(arrays, quant, strict=True)],
        1,
    )
    assert_close(result, expected)


@pytest.mark.parametrize("axis", [-1, 2])
def test_rejects_axis_out_of_range(axis):
    arrays = [sample((2, 3), np.float32), sample((2, 3), np.float32)]
    expect_failed_when_prepared(lambda: concatenate(arrays, axis, out_shape=(2, 6)))


def test_rejects_mismatched_inputs():
    expect_failed_when_prepared(
        lambda: concatenate(
            [sample((2, 3), np.float32), sample((3, 3), np.float32)], 1, out_shape=(2, 6)
        )
    )
    tester = (
        OpTester(OperationCode.CONCATENATION)
        .input(sample((2, 3), np.float32))
        .input(sample((2, 3), np.float16))
        .scalar(OperandCode.INT32, 0)
        .output(OperandCode.TENSOR_FLOAT32, (4, 3))
    )
    expect_error(tester.build)
    expect_error(lambda: concatenate([np.ones((2, 2), np.int32), np.ones((2, 2), np.int32)], 0))
    expect_error(
        lambda: concatenate([sample((1, 1, 1, 1, 2), np.float32)] * 2, 4, out_shape=(1,) * 4 + (4,))
    )


def test_zero_sized_input_from_slice():
    # SLICE produces a [0, 3] temporary that CONCATENATION accepts (Android allows both).
    model = Model()
    x = model.add_operand(OperandCode.TENSOR_FLOAT32, (2, 3))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.array([1, 0], np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, 3], np.int32))
    empty = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 3))
    model.add_operation(OperationCode.SLICE, [x, begin, size], [empty])
    y = model.add_operand(OperandCode.TENSOR_FLOAT32, (2, 3))
    axis = model.add_scalar(OperandCode.INT32, 0)
    out = model.add_operand(OperandCode.TENSOR_FLOAT32, (2, 3))
    model.add_operation(OperationCode.CONCATENATION, [empty, y, axis], [out])
    model.identify_inputs_and_outputs([x, y], [out])
    model.finish()
    xv, yv = sample((2, 3), np.float32, 0), sample((2, 3), np.float32, 1)
    (result,) = Compilation(model).finish().execute([xv, yv])
    np.testing.assert_array_equal(result, yv)


def test_zero_sized_input_transposed():
    # TRANSPOSE accepts the zero-sized SLICE result (Android registers it with
    # allowZeroSizedInput) and reports the permuted zero-sized shape.
    model = Model()
    x = model.add_operand(OperandCode.TENSOR_FLOAT32, (2, 3))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, 0], np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, -1], np.int32))
    empty = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 3))
    model.add_operation(OperationCode.SLICE, [x, begin, size], [empty])
    perm = model.add_constant(OperandCode.TENSOR_INT32, np.array([1, 0], np.int32))
    out = model.add_operand(OperandCode.TENSOR_FLOAT32, (3, 0))
    model.add_operation(OperationCode.TRANSPOSE, [empty, perm], [out])
    model.identify_inputs_and_outputs([x], [out])
    model.finish()
    execution = Execution(Compilation(model).finish())
    execution.compute([sample((2, 3), np.float32)], [(3, 1)])
    assert execution.output_dimensions(0) == (3, 0)


# ---- PACK --------------------------------------------------------------------------------------


def pack(arrays, axis, scale=0.0, zero_point=0, dynamic=False, out_shape=None):
    tester = OpTester(OperationCode.PACK).scalar(OperandCode.INT32, axis)
    for array in arrays:
        tester = tester.input(array, scale=scale, zero_point=zero_point)
    shape = out_shape or np.stack(arrays, axis).shape
    return (
        tester.output(OpTester.default_code(arrays[0]), shape, scale, zero_point)
        .dynamic_outputs(dynamic)
        .run()[0]
    )


@pytest.mark.parametrize(
    ("dtype", "scale", "zero_point"),
    [
        (np.float32, 0.0, 0),
        (np.float16, 0.0, 0),
        (np.int32, 0.0, 0),
        (np.uint8, 0.5, 9),
        (np.int8, 0.5, -9),
    ],
)
@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_pack(dtype, scale, zero_point, axis):
    arrays = [sample((2, 3, 4), dtype, seed) for seed in range(3)]
    result = pack(arrays, axis, scale, zero_point, dynamic=axis == 2)
    np.testing.assert_array_equal(result, np.stack(arrays, axis))


def test_pack_single_rank1_input():
    x = sample((5,), np.float32)
    np.testing.assert_array_equal(pack([x], 1), x[:, None])


def test_pack_rejects_bad_arguments():
    x = sample((2, 3), np.float32)
    expect_failed_when_prepared(lambda: pack([x, x], -1, out_shape=(2, 3, 2)))
    expect_failed_when_prepared(lambda: pack([x, x], 3, out_shape=(2, 3, 2)))
    expect_failed_when_prepared(
        lambda: pack([x, sample((3, 2), np.float32)], 0, out_shape=(2, 2, 3))
    )
    tester = (
        OpTester(OperationCode.PACK)
        .scalar(OperandCode.INT32, 0)
        .input(sample((2,), np.uint8), scale=0.5, zero_point=1)
        .input(sample((2,), np.uint8), scale=0.5, zero_point=2)
        .output(OperandCode.TENSOR_QUANT8_ASYMM, (2, 2), scale=0.5, zero_point=1)
    )
    expect_error(tester.build)
