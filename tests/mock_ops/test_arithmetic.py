# SPDX-License-Identifier: Apache-2.0
"""ADD, SUB, MUL, DIV against numpy: dtypes, broadcasting, fused activations, quantisation."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import FuseCode, NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import FUSED_ACTIVATIONS
from .op_tester import OpTester, assert_close

NUMPY_OPS = {
    OperationCode.ADD: np.add,
    OperationCode.SUB: np.subtract,
    OperationCode.MUL: np.multiply,
    OperationCode.DIV: np.divide,
}
SHAPES = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((4, 1, 3), (5, 1)),
    ((2, 3, 4, 5), (1,)),
    ((1, 3, 1, 5), (2, 1, 4, 1)),  # broadcast to rank 4 from both sides
]


def run_binary(op, x, y, activation=FuseCode.NONE, out_code=None, dynamic=False, quant=None):
    out_shape = np.broadcast_shapes(x.shape, y.shape)
    quant = quant or {}
    code = out_code if out_code is not None else OpTester.default_code(x)
    return (
        OpTester(op)
        .input(x, **quant.get("x", {}))
        .input(y, **quant.get("y", {}))
        .scalar(OperandCode.INT32, activation)
        .output(code, out_shape, **quant.get("out", {}))
        .dynamic_outputs(dynamic)
        .run()[0]
    )


@pytest.mark.parametrize("op", list(NUMPY_OPS))
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("activation", list(FUSED_ACTIVATIONS))
def test_float32(op, shapes, activation):
    rng = np.random.default_rng(0)
    x = rng.uniform(-4, 4, shapes[0]).astype(np.float32)
    y = rng.uniform(0.5, 4, shapes[1]).astype(np.float32)
    expected = FUSED_ACTIVATIONS[activation](NUMPY_OPS[op](x, y))
    assert_close(run_binary(op, x, y, activation), expected)


@pytest.mark.parametrize("op", list(NUMPY_OPS))
def test_float16(op):
    rng = np.random.default_rng(1)
    x = rng.uniform(-4, 4, (3, 4)).astype(np.float16)
    y = rng.uniform(0.5, 4, (4,)).astype(np.float16)
    expected = NUMPY_OPS[op](x.astype(np.float32), y.astype(np.float32))
    assert_close(run_binary(op, x, y), expected, "float16")


@pytest.mark.parametrize("op", [OperationCode.ADD, OperationCode.SUB, OperationCode.MUL])
def test_int32_wraps(op):
    x = np.array([2**31 - 1, -5, 7, -(2**31)], dtype=np.int32)
    y = np.array([1, 3, -2, -1], dtype=np.int32)
    with np.errstate(over="ignore"):
        expected = NUMPY_OPS[op](x.astype(np.int64), y.astype(np.int64)).astype(np.int32)
    np.testing.assert_array_equal(run_binary(op, x, y), expected)


def test_int32_div_floors():
    x = np.array([7, -7, 7, -7, 0], dtype=np.int32)
    y = np.array([2, 2, -2, -2, 3], dtype=np.int32)
    np.testing.assert_array_equal(
        run_binary(OperationCode.DIV, x, y), np.floor_divide(x, y).astype(np.int32)
    )


def test_quant8_add_requantises():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (2, 5), dtype=np.uint8)
    y = rng.integers(0, 256, (5,), dtype=np.uint8)
    quant = {
        "x": {"scale": 0.5, "zero_point": 120},
        "y": {"scale": 0.25, "zero_point": 10},
        "out": {"scale": 1.0, "zero_point": 100},
    }
    real = 0.5 * (x.astype(np.float64) - 120) + 0.25 * (y.astype(np.float64) - 10)
    expected = np.clip(np.round(real / 1.0) + 100, 0, 255)
    result = run_binary(
        OperationCode.ADD, x, y, out_code=OperandCode.TENSOR_QUANT8_ASYMM, quant=quant
    )
    assert_close(result, expected)


def test_dynamic_output_shape_is_reported():
    x = np.ones((2, 1, 3), np.float32)
    y = np.ones((4, 1), np.float32)
    result = run_binary(OperationCode.ADD, x, y, dynamic=True)
    assert result.shape == (2, 4, 3)


def test_incompatible_broadcast_rejected_at_add_operation():
    tester = (
        OpTester(OperationCode.ADD)
        .input(np.ones((2, 3), np.float32))
        .input(np.ones((4,), np.float32))
        .scalar(OperandCode.INT32, FuseCode.NONE)
        .output(OperandCode.TENSOR_FLOAT32, (2, 3))
    )
    with pytest.raises(NnapiError) as error:
        tester.build()
    assert error.value.code == ResultCode.BAD_DATA
    assert "broadcast" in str(error.value)


def test_mismatched_input_types_rejected():
    with pytest.raises(NnapiError) as error:
        OpTester(OperationCode.ADD).input(np.ones(3, np.float32)).input(
            np.ones(3, np.int32)
        ).scalar(OperandCode.INT32, 0).output(OperandCode.TENSOR_FLOAT32, (3,)).run()
    assert error.value.code == ResultCode.BAD_DATA


def test_int32_with_activation_refused_when_prepared():
    # Android validates ADD's operand types at addOperation and the activation's value when the
    # operation is prepared: the execution fails with OP_FAILED.
    with pytest.raises(NnapiError) as error:
        run_binary(OperationCode.ADD, np.ones(3, np.int32), np.ones(3, np.int32), FuseCode.RELU)
    assert error.value.code == ResultCode.OP_FAILED
    assert error.value.function == "ANeuralNetworksExecution_compute"


def test_omitted_input_fails_the_run_cleanly():
    tester = (
        OpTester(OperationCode.ADD)
        .input(np.ones(3, np.float32))
        .omitted(OperandCode.TENSOR_FLOAT32)
        .scalar(OperandCode.INT32, FuseCode.NONE)
        .output(OperandCode.TENSOR_FLOAT32, (3,))
    )
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED
    assert "omitted" in str(error.value)
