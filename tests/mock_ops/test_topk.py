# SPDX-License-Identifier: Apache-2.0
"""TOPK_V2 against a numpy reference of the NDK's definition: the k largest entries of each slice
along the last dimension, in descending order; of two equal values the one with the larger
index first.

Covered: every type (fp32, fp16, INT32, QUANT8_ASYMM, QUANT8_ASYMM_SIGNED), ranks 1 to 4, k = 1,
a middle k and k = the last dimension, ties (hand-checked), NaN (the mock's documented order),
dynamic output shapes, the BAD_DATA validation rules and the feature levels (3; 4 for signed).
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import Compilation, Model, NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add, expect_failed_when_prepared
from .op_tester import OpTester
from .test_conv_2d import required_feature_level

TOPK = OperationCode.TOPK_V2

DTYPES = [
    (np.float32, 0.0, 0),
    (np.float16, 0.0, 0),
    (np.int32, 0.0, 0),
    (np.uint8, 0.5, 3),
    (np.int8, 0.25, -7),
]


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        # A narrow range, so that rows have ties.
        return rng.integers(-5 if np.iinfo(dtype).min < 0 else 0, 6, shape).astype(dtype)
    return rng.integers(-8, 8, shape).astype(dtype) / dtype(4)


def reference(x, k):
    """Per row: sort by (value descending, index descending), keep k."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.float64)
    index = np.arange(x.shape[-1])
    values, indices = [], []
    for row in rows:
        order = np.lexsort((-index, -row))[:k]
        values.append(row[order])
        indices.append(order)
    shape = (*x.shape[:-1], k)
    return (
        np.array(values).astype(x.dtype).reshape(shape),
        np.array(indices, np.int32).reshape(shape),
    )


def make_tester(
    x,
    k,
    scale=0.0,
    zero_point=0,
    out_shape=None,
    value_code=None,
    index_code=OperandCode.TENSOR_INT32,
    out_zero_point=None,
):
    out_shape = out_shape if out_shape is not None else (*x.shape[:-1], k)
    return (
        OpTester(TOPK)
        .input(x, scale=scale, zero_point=zero_point)
        .scalar(OperandCode.INT32, k)
        .output(
            value_code or OpTester.default_code(x),
            out_shape,
            scale,
            zero_point if out_zero_point is None else out_zero_point,
        )
        .output(index_code, out_shape)
    )


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
@pytest.mark.parametrize("shape", [(7,), (2, 9), (2, 3, 12), (1, 2, 2, 5)])
@pytest.mark.parametrize("which_k", ["one", "middle", "all"])
def test_topk(dtype, scale, zero_point, shape, which_k):
    k = {"one": 1, "middle": shape[-1] // 2, "all": shape[-1]}[which_k]
    x = sample(shape, dtype)
    values, indices = (
        make_tester(x, k, scale, zero_point).dynamic_outputs(which_k == "middle").run()
    )
    expected_values, expected_indices = reference(x, k)
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(indices, expected_indices)


def test_ties_put_the_larger_index_first():
    x = np.array([[1, 3, 3, 0, 3], [2, 2, 2, 2, 2]], np.float32)
    values, indices = make_tester(x, 3).run()
    assert values.tolist() == [[3, 3, 3], [2, 2, 2]]
    assert indices.tolist() == [[4, 2, 1], [4, 3, 2]]


def test_long_rows():
    x = sample((3, 1000), np.float32, seed=4)
    values, indices = make_tester(x, 10).run()
    expected_values, expected_indices = reference(x, 10)
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(indices, expected_indices)


def test_nan_orders_above_numbers():
    # The mock's documented total order: NaN above every number, NaNs by the larger index.
    x = np.array([1.0, np.nan, 2.0, np.nan, -np.inf], np.float32)
    values, indices = make_tester(x, 4).run()
    assert indices.tolist() == [3, 1, 2, 0]
    assert np.isnan(values[:2]).all() and values[2:].tolist() == [2.0, 1.0]


def test_rejects_bad_k():
    x = sample((2, 5), np.float32)
    assert "k" in expect_failed_when_prepared(make_tester(x, 0, out_shape=(2, 0)))
    assert "k" in expect_failed_when_prepared(make_tester(x, 6, out_shape=(2, 6)))


def test_rejects_types_and_shapes():
    x = sample((2, 5), np.float32)
    # Indices must be TENSOR_INT32.
    expect_bad_data_at_add(make_tester(x, 2, index_code=OperandCode.TENSOR_FLOAT32))
    # Values keep the input's type.
    expect_bad_data_at_add(make_tester(x, 2, value_code=OperandCode.TENSOR_FLOAT16))
    # ... and its quantisation.
    q = sample((2, 5), np.uint8)
    expect_bad_data_at_add(make_tester(q, 2, 0.5, 3, out_zero_point=4))
    # A wrong declared output shape.
    expect_failed_when_prepared(make_tester(x, 2, out_shape=(2, 3)))
    # BOOL8 input is not allowed.
    expect_bad_data_at_add(make_tester(np.zeros((2, 5), np.bool_), 2))
    # One output only.
    tester = OpTester(TOPK).input(x).scalar(OperandCode.INT32, 2)
    expect_bad_data_at_add(tester.output(OperandCode.TENSOR_FLOAT32, (2, 2)))
    # k must be an INT32 scalar.
    tester = OpTester(TOPK).input(x).scalar(OperandCode.UINT32, 2)
    expect_bad_data_at_add(
        tester.output(OperandCode.TENSOR_FLOAT32, (2, 2)).output(OperandCode.TENSOR_INT32, (2, 2))
    )


def test_rejects_zero_sized_input():
    # A zero-sized tensor can only come from another operation: SLICE keeps no row.
    model = Model()
    x = model.add_operand(OperandCode.TENSOR_FLOAT32, (2, 5))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(2, np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, -1], np.int32))
    empty = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 5))
    model.add_operation(OperationCode.SLICE, [x, begin, size], [empty])
    k = model.add_scalar(OperandCode.INT32, 2)
    values = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 0))
    indices = model.add_operand(OperandCode.TENSOR_INT32, (0, 0))
    model.add_operation(TOPK, [empty, k], [values, indices])
    model.identify_inputs_and_outputs([x], [values, indices])
    model.finish()
    compilation = Compilation(model).finish()
    with pytest.raises(NnapiError) as error:
        compilation.execute([sample((2, 5), np.float32)], [(1, 2), (1, 2)])
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert "zero-sized" in str(error.value)


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
def test_feature_levels(feature_level_devices, dtype, scale, zero_point):
    tester = make_tester(np.zeros((2, 5), dtype), 2, scale, zero_point)
    expected = 4 if dtype == np.int8 else 3
    assert required_feature_level(tester, feature_level_devices) == expected
