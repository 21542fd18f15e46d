# SPDX-License-Identifier: Apache-2.0
"""SELECT against numpy.where: dtypes, requantisation, shape rules."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import (
    Compilation,
    Execution,
    Model,
    NnapiError,
    OperandCode,
    OperationCode,
    ResultCode,
)

from .helpers import S8, U8, expect_bad_data, quantize
from .op_tester import OpTester, assert_close


def run_select(condition, a, b, dynamic=False, quant=None, out_code=None):
    quant = quant or {}
    code = out_code if out_code is not None else OpTester.default_code(a)
    return (
        OpTester(OperationCode.SELECT)
        .input(condition)
        .input(a, **quant.get("a", {}))
        .input(b, **quant.get("b", {}))
        .output(code, a.shape, **quant.get("out", {}))
        .dynamic_outputs(dynamic)
        .run()[0]
    )


@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 2, 3), (1, 2, 3, 2), (2, 1, 2, 1, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_select(shape, dtype):
    rng = np.random.default_rng(0)
    condition = rng.random(shape) < 0.5
    a = rng.normal(0, 100, shape).astype(dtype)
    b = rng.normal(0, 100, shape).astype(dtype)
    np.testing.assert_array_equal(run_select(condition, a, b), np.where(condition, a, b))


def test_select_copies_float_bits_exactly():
    a = np.array([np.nan, -0.0, np.inf, 1e-45], np.float32)
    b = np.zeros(4, np.float32)
    result = run_select(np.ones(4, np.bool_), a, b)
    np.testing.assert_array_equal(result.view(np.uint32), a.view(np.uint32))


def test_condition_is_any_nonzero_byte():
    condition = np.array([0, 1, 2, 255], np.uint8).view(np.bool_)
    a = np.arange(4, dtype=np.int32)
    b = -np.arange(4, dtype=np.int32) - 10
    np.testing.assert_array_equal(run_select(condition, a, b), [-10, 1, 2, 3])


@pytest.mark.parametrize(
    ("dtype", "code", "zps"), [(np.uint8, U8, (0, 255, 128)), (np.int8, S8, (-128, 127, 0))]
)
def test_quantized_requantises_to_output(dtype, code, zps):
    info = np.iinfo(dtype)
    a = np.arange(info.min, info.max + 1, dtype=np.int64).astype(dtype).reshape(16, 16)
    b = a[::-1].copy()
    condition = (np.arange(256).reshape(16, 16) % 3) == 0
    quant = {
        "a": {"scale": 0.5, "zero_point": zps[0]},
        "b": {"scale": 0.25, "zero_point": zps[1]},
        "out": {"scale": 0.3, "zero_point": zps[2]},
    }
    real = np.where(
        condition, 0.5 * (a.astype(np.float64) - zps[0]), 0.25 * (b.astype(np.float64) - zps[1])
    )
    expected = quantize(real, 0.3, zps[2], dtype)
    result = run_select(condition, a, b, quant=quant)
    assert_close(result, expected)
    assert result.max() == info.max and result.min() == info.min  # saturation at both ends


def test_dynamic_output_shape():
    condition = np.array([[True, False, True], [False, False, True]])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = -a
    result = run_select(condition, a, b, dynamic=True)
    assert result.shape == (2, 3)
    np.testing.assert_array_equal(result, np.where(condition, a, b))


# ---- validation ----------------------------------------------------------------------------------


def select_tester(condition, a, b, out_code=None, out_shape=None):
    params = {"scale": 0.5} if a.dtype in (np.uint8, np.int8) else {}
    code = out_code if out_code is not None else OpTester.default_code(a)
    tester = OpTester(OperationCode.SELECT).input(condition)
    tester.input(a, **params).input(b, **({"scale": 0.5} if b.dtype in (np.uint8, np.int8) else {}))
    return tester.output(code, out_shape if out_shape is not None else a.shape, **params)


def test_no_broadcasting():
    """Android's SELECT requires equal shapes (NDK: inputs 1 and 2 have input 0's shape)."""
    condition = np.ones((2, 3), np.bool_)
    expect_bad_data(
        select_tester(condition, np.ones(3, np.float32), np.ones(3, np.float32), out_shape=(2, 3))
    )
    expect_bad_data(
        select_tester(condition, np.ones((2, 3), np.float32), np.ones((1, 3), np.float32))
    )
    expect_bad_data(
        select_tester(
            np.ones(3, np.bool_), np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)
        )
    )


def test_condition_must_be_bool8():
    x = np.ones(3, np.float32)
    expect_bad_data(select_tester(np.ones(3, np.int32), x, x))
    expect_bad_data(select_tester(np.ones(3, np.float32), x, x))


@pytest.mark.parametrize("dtype", [np.bool_])
def test_unsupported_value_type_rejected(dtype):
    x = np.ones(3, dtype)
    expect_bad_data(select_tester(np.ones(3, np.bool_), x, x))


def test_quant16_rejected():
    x = np.ones(3, np.int16)
    tester = (
        OpTester(OperationCode.SELECT)
        .input(np.ones(3, np.bool_))
        .input(x, OperandCode.TENSOR_QUANT16_SYMM, scale=0.5)
        .input(x, OperandCode.TENSOR_QUANT16_SYMM, scale=0.5)
        .output(OperandCode.TENSOR_QUANT16_SYMM, (3,), scale=0.5)
    )
    expect_bad_data(tester)


def test_mismatched_value_types_rejected():
    condition = np.ones(3, np.bool_)
    expect_bad_data(select_tester(condition, np.ones(3, np.float32), np.ones(3, np.int32)))
    expect_bad_data(
        select_tester(
            condition,
            np.ones(3, np.float32),
            np.ones(3, np.float32),
            out_code=OperandCode.TENSOR_FLOAT16,
        )
    )


@pytest.mark.parametrize("count", [2, 4])
def test_wrong_input_count_rejected(count):
    tester = OpTester(OperationCode.SELECT).input(np.ones(3, np.bool_))
    for _ in range(count - 1):
        tester.input(np.ones(3, np.float32))
    expect_bad_data(tester.output(OperandCode.TENSOR_FLOAT32, (3,)))


def test_shape_mismatch_with_unknown_dims_fails_execution():
    """With dimensions unknown when the operation is added, the check happens at execution."""
    model = Model()
    condition = model.add_operand(OperandCode.TENSOR_BOOL8, (0, 3))
    a = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 3))
    b = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 3))
    out = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 3))
    model.add_operation(OperationCode.SELECT, [condition, a, b], [out])
    model.identify_inputs_and_outputs([condition, a, b], [out])
    model.finish()
    execution = Execution(Compilation(model).finish())
    inputs = [np.ones((2, 3), np.bool_), np.ones((2, 3), np.float32), np.ones((1, 3), np.float32)]
    with pytest.raises(NnapiError) as error:
        execution.compute(inputs, [(2, 3)])
    assert error.value.code == ResultCode.OP_FAILED
