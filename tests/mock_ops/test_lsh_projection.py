# SPDX-License-Identifier: Apache-2.0
"""LSH_PROJECTION against a reference of the NDK's definition, with FarmHash's Fingerprint64 from
the pyfarmhash package (an implementation independent of the mock's): bit(seed) is the sign of
sum_i weight_i * int64(Fingerprint64(float32 seed bytes + bytes of input item i)).

Covered: SPARSE (with the per-function offset), SPARSE_DEPRECATED (without it) and DENSE; fp32
and fp16 hash functions; fp32, fp16, INT32 and QUANT8_ASYMM inputs of rank 1 to 3 (keys of 5 to
more than 64 bytes: every length class of Fingerprint64); with and without the optional weight;
up to 32 bits; dynamic output shapes; the BAD_DATA validation rules; DENSE without a weight
failing the execution (as in Android); zero-sized inputs; and the feature levels (1; 3 for fp16
and SPARSE).
"""

from __future__ import annotations

import numpy as np
import pytest

import mock_nnapi
from mock_nnapi import Compilation, Model, NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add, expect_failed_when_prepared
from .op_tester import OpTester
from .test_conv_2d import required_feature_level

farmhash = pytest.importorskip(
    "farmhash", reason="the LSH_PROJECTION oracle needs pyfarmhash (pip install -e '.[test]')"
)

LSH = OperationCode.LSH_PROJECTION
SPARSE_DEPRECATED, DENSE, SPARSE = 1, 2, 3


def fingerprint(key: bytes) -> int:
    value = farmhash.fingerprint64(key)
    return value - (1 << 64) if value >= 1 << 63 else value


def sign_bit(seed, x, weight):
    items = x.reshape(x.shape[0], -1)
    score = 0.0
    for i, item in enumerate(items):
        running = float(fingerprint(np.float32(seed).tobytes() + item.tobytes()))
        score += (1.0 if weight is None else float(np.float32(weight[i]))) * running
    return 1 if score > 0 else 0


def reference(hash_functions, x, weight, kind):
    bits = np.array(
        [[sign_bit(seed, x, weight) for seed in row] for row in hash_functions.astype(np.float32)],
        np.int64,
    )
    if kind == DENSE:
        return bits.reshape(-1).astype(np.int32)
    num_bits = hash_functions.shape[1]
    signatures = (bits << np.arange(num_bits - 1, -1, -1)).sum(axis=1)
    if kind == SPARSE:
        signatures += np.arange(hash_functions.shape[0]) << num_bits
    return signatures.astype(np.uint32).view(np.int32)


def make_tester(
    hash_functions,
    x,
    weight,
    kind,
    out_shape=None,
    scale=0.0,
    zero_point=0,
    weight_code=None,
    constant_hash=True,
):
    tester = OpTester(LSH)
    (tester.constant if constant_hash else tester.input)(hash_functions)
    tester.input(x, scale=scale, zero_point=zero_point)
    if weight is None:
        tester.omitted(weight_code or OpTester.default_code(hash_functions))
    else:
        tester.input(weight, weight_code)
    tester.scalar(OperandCode.INT32, kind)
    if out_shape is None:
        count = hash_functions.shape[0]
        out_shape = (count * hash_functions.shape[1],) if kind == DENSE else (count,)
    return tester.output(OperandCode.TENSOR_INT32, out_shape)


def sample_input(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100000), min(info.max, 100000), shape).astype(dtype)
    return rng.uniform(-10, 10, shape).astype(dtype)


@pytest.mark.parametrize(
    ("kind", "weighted"),
    # DENSE without a weight fails (test_dense_without_weight_fails_the_execution).
    [
        (SPARSE, True),
        (SPARSE, False),
        (SPARSE_DEPRECATED, True),
        (SPARSE_DEPRECATED, False),
        (DENSE, True),
    ],
)
@pytest.mark.parametrize("hash_dtype", [np.float32, np.float16])
@pytest.mark.parametrize(
    ("x_shape", "x_dtype"),
    [
        ((5,), np.int32),
        ((6, 1), np.uint8),
        ((4, 4), np.float32),
        ((3, 5, 2), np.float16),
        ((2, 10), np.float32),
        ((3, 21), np.float32),
    ],
    ids=["key8", "key5", "key20", "key24", "key44", "key88"],
)
def test_lsh_projection(kind, weighted, hash_dtype, x_shape, x_dtype):
    rng = np.random.default_rng(x_shape[0])
    hash_functions = rng.uniform(-5, 5, (4, 3)).astype(hash_dtype)
    x = sample_input(x_shape, x_dtype, seed=len(x_shape))
    weight = rng.uniform(-1, 1, x_shape[0]).astype(hash_dtype) if weighted else None
    scale = 0.5 if x_dtype == np.uint8 else 0.0
    (result,) = (
        make_tester(hash_functions, x, weight, kind, scale=scale)
        .dynamic_outputs(x_dtype == np.float16)
        .run()
    )
    np.testing.assert_array_equal(result, reference(hash_functions, x, weight, kind))


def test_thirty_two_bits():
    rng = np.random.default_rng(32)
    hash_functions = rng.uniform(-5, 5, (2, 32)).astype(np.float32)
    x = sample_input((7, 3), np.int32, 1)
    (result,) = make_tester(hash_functions, x, None, SPARSE_DEPRECATED).run()
    np.testing.assert_array_equal(result, reference(hash_functions, x, None, SPARSE_DEPRECATED))


def test_bits_come_from_the_sign_of_the_weighted_sum():
    # Flipping every weight flips every bit (unless a sum is exactly 0).
    rng = np.random.default_rng(5)
    hash_functions = rng.uniform(-5, 5, (3, 4)).astype(np.float32)
    x = sample_input((6, 2), np.int32, 2)
    weight = rng.uniform(0.5, 1, 6).astype(np.float32)
    (plus,) = make_tester(hash_functions, x, weight, DENSE).run()
    (minus,) = make_tester(hash_functions, x, -weight, DENSE).run()
    np.testing.assert_array_equal(plus, 1 - minus)


def test_rejects_bad_operands():
    h = np.ones((3, 2), np.float32)
    x = np.ones((4, 2), np.int32)
    w = np.ones(4, np.float32)
    assert "type 4" in expect_failed_when_prepared(make_tester(h, x, w, 4, out_shape=(3,)))
    assert "type 0" in expect_failed_when_prepared(make_tester(h, x, w, 0, out_shape=(3,)))
    assert "32 bits" in expect_failed_when_prepared(
        make_tester(np.ones((1, 33), np.float32), x, w, SPARSE)
    )
    assert "2-D" in expect_bad_data_at_add(
        make_tester(np.ones(3, np.float32), x, w, SPARSE, out_shape=(3,))
    )
    assert "weight" in expect_failed_when_prepared(
        make_tester(h, x, np.ones(3, np.float32), SPARSE)
    )
    # The weight has the hash functions' type.
    assert "weight" in expect_bad_data_at_add(
        make_tester(h, x, w.astype(np.float16), SPARSE, weight_code=OperandCode.TENSOR_FLOAT16)
    )
    # A wrong declared output shape (DENSE writes num_hash * num_bits values).
    expect_failed_when_prepared(make_tester(h, x, w, DENSE, out_shape=(3,)))
    # INT32 hash functions and BOOL8 inputs are not allowed; the output is TENSOR_INT32.
    expect_bad_data_at_add(
        make_tester(np.ones((3, 2), np.int32), x, w, SPARSE, weight_code=OperandCode.TENSOR_INT32)
    )
    expect_bad_data_at_add(make_tester(h, np.ones((4, 2), np.bool_), w, SPARSE))
    tester = make_tester(h, x, w, SPARSE)
    tester._outputs[0]["code"] = OperandCode.TENSOR_FLOAT32
    assert "TENSOR_INT32" in expect_bad_data_at_add(tester)


def test_dense_without_weight_fails_the_execution():
    # The NDK calls the weight optional; Android's implementation requires it for DENSE when the
    # operation is prepared, so addOperation accepts the model and the execution fails.
    tester = make_tester(np.ones((3, 2), np.float32), np.ones((4, 2), np.int32), None, DENSE)
    tester.build()
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert "weight" in str(error.value)


def test_rejects_zero_sized_input():
    model = Model()
    x = model.add_operand(OperandCode.TENSOR_INT32, (3, 2))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(2, np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, -1], np.int32))
    empty = model.add_operand(OperandCode.TENSOR_INT32, (0, 2))
    model.add_operation(OperationCode.SLICE, [x, begin, size], [empty])
    hash_functions = model.add_constant(OperandCode.TENSOR_FLOAT32, np.ones((2, 2), np.float32))
    weight = model.add_operand(OperandCode.TENSOR_FLOAT32, None)
    mock_nnapi.api.call("ANeuralNetworksModel_setOperandValue", model.handle, weight, None, 0)
    kind = model.add_scalar(OperandCode.INT32, SPARSE)
    out = model.add_operand(OperandCode.TENSOR_INT32, (0,))
    model.add_operation(LSH, [hash_functions, empty, weight, kind], [out])
    model.identify_inputs_and_outputs([x], [out])
    model.finish()
    compilation = Compilation(model).finish()
    with pytest.raises(NnapiError) as error:
        compilation.execute([np.ones((3, 2), np.int32)], [(2,)])
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert "zero-sized" in str(error.value)


@pytest.mark.parametrize(
    ("hash_dtype", "x_dtype", "kind", "level"),
    [
        (np.float32, np.int32, SPARSE_DEPRECATED, 1),
        (np.float32, np.float32, DENSE, 1),
        (np.float32, np.uint8, SPARSE_DEPRECATED, 1),
        # SPARSE needs FL3 by the NDK, but Android derives an operation's feature level from
        # its operand types (its validation does not see the type argument's value).
        (np.float32, np.int32, SPARSE, 1),
        (np.float16, np.int32, DENSE, 3),
        (np.float32, np.float16, DENSE, 3),
    ],
)
def test_feature_levels(feature_level_devices, hash_dtype, x_dtype, kind, level):
    scale = 0.5 if x_dtype == np.uint8 else 0.0
    tester = make_tester(
        np.ones((3, 2), hash_dtype),
        np.ones((4, 2), x_dtype),
        np.ones(4, hash_dtype),
        kind,
        scale=scale,
    )
    assert required_feature_level(tester, feature_level_devices) == level
