# SPDX-License-Identifier: Apache-2.0
"""HASHTABLE_LOOKUP against a dictionary reference of the NDK's definition: output[j] is the
values row of the key lookups[j] (zeros when the key is absent) and hits[j] says whether it was
found.

Covered: the three value types (fp32, INT32, QUANT8_ASYMM), values of rank 1 to 3, hits and
misses (all hits, none, mixed, repeated lookups), keys or lookups given as constants, dynamic
output shapes, the BAD_DATA validation rules, OP_FAILED for hits declared with other
quantisation, zero-sized inputs, and feature level 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import Compilation, Model, NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add
from .op_tester import OpTester
from .test_conv_2d import required_feature_level

LOOKUP = OperationCode.HASHTABLE_LOOKUP
Q8 = OperandCode.TENSOR_QUANT8_ASYMM


def reference(lookups, keys, values):
    table = {int(k): values[i] for i, k in enumerate(keys)}
    out = np.zeros((len(lookups), *values.shape[1:]), values.dtype)
    hits = np.zeros(len(lookups), np.uint8)
    for j, key in enumerate(lookups):
        if int(key) in table:
            out[j] = table[int(key)]
            hits[j] = 1
    return out, hits


def make_tester(
    lookups,
    keys,
    values,
    scale=0.0,
    zero_point=0,
    out_shape=None,
    hits_shape=None,
    hits_quant=(1.0, 0),
    value_code=None,
    hits_code=Q8,
    constant_keys=False,
):
    tester = OpTester(LOOKUP).input(np.asarray(lookups, np.int32))
    if constant_keys:
        tester.constant(np.asarray(keys, np.int32)).constant(
            values, scale=scale, zero_point=zero_point
        )
    else:
        tester.input(np.asarray(keys, np.int32)).input(values, scale=scale, zero_point=zero_point)
    out_shape = out_shape if out_shape is not None else (len(lookups), *values.shape[1:])
    hits_shape = hits_shape if hits_shape is not None else (len(lookups),)
    return tester.output(
        value_code or OpTester.default_code(values), out_shape, scale, zero_point
    ).output(hits_code, hits_shape, *hits_quant)


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(1, 200, shape).astype(dtype)  # no zeros: misses are visible
    return rng.uniform(1, 4, shape).astype(dtype)


@pytest.mark.parametrize(
    ("dtype", "scale", "zero_point"), [(np.float32, 0.0, 0), (np.int32, 0.0, 0), (np.uint8, 0.5, 3)]
)
@pytest.mark.parametrize("row_shape", [(), (3,), (2, 3)])
@pytest.mark.parametrize("constant_keys", [False, True])
def test_hashtable_lookup(dtype, scale, zero_point, row_shape, constant_keys):
    keys = np.array([-7, 0, 3, 9, 1000], np.int32)
    values = sample((5, *row_shape), dtype)
    lookups = np.array([9, 4, -7, 9, 1001, 1000, 0], np.int32)
    out, hits = (
        make_tester(lookups, keys, values, scale, zero_point, constant_keys=constant_keys)
        .dynamic_outputs(row_shape == (3,))
        .run()
    )
    expected_out, expected_hits = reference(lookups, keys, values)
    np.testing.assert_array_equal(out, expected_out)
    np.testing.assert_array_equal(hits, expected_hits)


def test_hand_checked_example():
    keys = np.array([1, 2, 5], np.int32)
    values = np.array([[10.0, 11.0], [20.0, 21.0], [50.0, 51.0]], np.float32)
    out, hits = make_tester([5, 3, 1], keys, values).run()
    assert out.tolist() == [[50.0, 51.0], [0.0, 0.0], [10.0, 11.0]]
    assert hits.tolist() == [1, 0, 1]


@pytest.mark.parametrize("present", [True, False])
def test_all_hits_or_all_misses(present):
    keys = np.arange(0, 40, 2, dtype=np.int32)
    values = sample((20, 4), np.float32, seed=3)
    lookups = (keys[::-3] if present else keys[::-3] + 1).astype(np.int32)
    out, hits = make_tester(lookups, keys, values).run()
    expected_out, expected_hits = reference(lookups, keys, values)
    assert hits.all() if present else not hits.any()
    np.testing.assert_array_equal(out, expected_out)
    np.testing.assert_array_equal(hits, expected_hits)


def test_rejects_bad_operands():
    keys = np.array([1, 2, 3], np.int32)
    values = sample((3, 2), np.float32)
    # values must have one row per key
    assert "keys" in expect_bad_data_at_add(make_tester([1], keys, values[:2]))
    # lookups and keys are 1-D TENSOR_INT32
    assert "lookups" in expect_bad_data_at_add(make_tester([[1]], keys, values, out_shape=(1, 2)))
    assert "keys" in expect_bad_data_at_add(make_tester([1], [[1, 2, 3]], values))
    # hits must be TENSOR_QUANT8_ASYMM
    expect_bad_data_at_add(
        make_tester([1], keys, values, hits_code=OperandCode.TENSOR_INT32, hits_quant=(0.0, 0))
    )
    # the values output keeps the values' type and quantisation
    expect_bad_data_at_add(make_tester([1], keys, values, value_code=OperandCode.TENSOR_INT32))
    q = sample((3, 2), np.uint8)
    tester = make_tester([1], keys, q, 0.5, 3)
    tester._outputs[0]["zp"] = 4
    expect_bad_data_at_add(tester)
    # fp16 and signed values are not allowed
    expect_bad_data_at_add(make_tester([1], keys, values.astype(np.float16)))
    expect_bad_data_at_add(make_tester([1], keys, sample((3, 2), np.int8), 0.5, 0))
    # a wrong declared output shape
    expect_bad_data_at_add(make_tester([1, 2], keys, values, out_shape=(1, 2)))
    # one output only
    tester = OpTester(LOOKUP).input(np.array([1], np.int32)).input(keys).input(values)
    assert "output count" in expect_bad_data_at_add(
        tester.output(OperandCode.TENSOR_FLOAT32, (1, 2))
    )


def test_hits_with_other_quantisation_fail_the_execution():
    tester = make_tester(
        [1], np.array([1], np.int32), sample((1, 2), np.float32), hits_quant=(0.5, 0)
    )
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert "hits" in str(error.value)


def test_rejects_zero_sized_input():
    # A zero-sized lookups tensor can only come from another operation: SLICE keeps nothing.
    model = Model()
    x = model.add_operand(OperandCode.TENSOR_INT32, (3,))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(1, np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(1, np.int32))
    empty = model.add_operand(OperandCode.TENSOR_INT32, (0,))
    model.add_operation(OperationCode.SLICE, [x, begin, size], [empty])
    keys = model.add_constant(OperandCode.TENSOR_INT32, np.array([1, 2], np.int32))
    values = model.add_constant(OperandCode.TENSOR_FLOAT32, np.ones((2, 2), np.float32))
    out = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 0))
    hits = model.add_operand(Q8, (0,), 1.0, 0)
    model.add_operation(LOOKUP, [empty, keys, values], [out, hits])
    model.identify_inputs_and_outputs([x], [out, hits])
    model.finish()
    compilation = Compilation(model).finish()
    with pytest.raises(NnapiError) as error:
        compilation.execute([np.array([1, 2, 3], np.int32)], [(1, 2), (1,)])
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert "zero-sized" in str(error.value)


@pytest.mark.parametrize(("dtype", "scale"), [(np.float32, 0.0), (np.int32, 0.0), (np.uint8, 0.5)])
def test_feature_level_1(feature_level_devices, dtype, scale):
    tester = make_tester([1], np.array([1, 2], np.int32), np.zeros((2, 3), dtype), scale)
    assert required_feature_level(tester, feature_level_devices) == 1
