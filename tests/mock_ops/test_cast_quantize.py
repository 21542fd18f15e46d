# SPDX-License-Identifier: Apache-2.0
"""CAST, QUANTIZE, DEQUANTIZE against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode

from .helpers import F16, F32, I32, S8, U8, expect_bad_data, quantize, run_on_zero_sized
from .op_tester import OpTester, assert_close

NUMPY: dict[int, Any] = {F16: np.float16, F32: np.float32, I32: np.int32, U8: np.uint8, S8: np.int8}
# Quantisation parameters of quantised operands: CAST ignores them.
QUANT_PARAMS = {U8: {"scale": 0.5, "zero_point": 7}, S8: {"scale": 0.5, "zero_point": -3}}


def run(op, x, in_code, out_code, dynamic=False, in_params=None, out_params=None):
    in_params = in_params if in_params is not None else QUANT_PARAMS.get(in_code, {})
    out_params = out_params if out_params is not None else QUANT_PARAMS.get(out_code, {})
    return (
        OpTester(op)
        .input(x, in_code, **in_params)
        .output(out_code, x.shape, **out_params)
        .dynamic_outputs(dynamic)
        .run()[0]
    )


# ---- CAST ----------------------------------------------------------------------------------------

CAST_SOURCES = {
    F32: np.array([-1e10, -300.7, -1.5, -0.4, 0, 0.6, 1.5, 2.7, 255.4, 300.2, 1e10, np.nan]),
    F16: np.array([-60000, -300.5, -1.5, -0.4, 0, 0.6, 1.5, 2.75, 255.5, 300.25, 60000, np.nan]),
    I32: np.array([-(2**31), -300, -1, 0, 1, 255, 256, 70000, 2**31 - 1]),
    U8: np.array([0, 1, 7, 127, 128, 254, 255]),
}


def cast_reference(x: np.ndarray, out_code: int) -> np.ndarray:
    """Truncation toward zero, saturation of integers, NaN to 0; floats convert directly."""
    target = NUMPY[out_code]
    if np.issubdtype(target, np.floating):
        with np.errstate(over="ignore"):
            return x.astype(np.float64).astype(target)
    info = np.iinfo(target)
    value = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
    return np.clip(value, info.min, info.max).astype(target)


@pytest.mark.parametrize("in_code", list(CAST_SOURCES))
@pytest.mark.parametrize("out_code", [F16, F32, I32, U8])
def test_cast(in_code, out_code):
    x = CAST_SOURCES[in_code].astype(NUMPY[in_code])
    result = run(OperationCode.CAST, x, in_code, out_code)
    expected = cast_reference(x, out_code)
    if out_code in (F16, F32):
        with np.errstate(invalid="ignore"):  # infinities compare equal through a NaN difference
            assert_close(result, expected, "float16" if out_code == F16 else "float32")
    else:
        np.testing.assert_array_equal(result, expected)


def test_cast_ignores_quantization_parameters():
    x = np.array([0, 7, 200], np.uint8)
    result = run(OperationCode.CAST, x, U8, F32, in_params={"scale": 0.1, "zero_point": 100})
    np.testing.assert_array_equal(result, [0.0, 7.0, 200.0])


@pytest.mark.parametrize(
    ("code", "x", "params"),
    [
        (OperandCode.TENSOR_BOOL8, np.array([0, 1, 2, 255], np.uint8).view(np.bool_), {}),
        (OperandCode.TENSOR_QUANT16_ASYMM, np.array([0, 1, 65535], np.uint16), {"scale": 0.5}),
        (OperandCode.TENSOR_QUANT16_SYMM, np.array([-32768, 0, 32767], np.int16), {"scale": 0.5}),
        (S8, np.array([-128, 0, 127], np.int8), {"scale": 0.5, "zero_point": 1}),
        (OperandCode.TENSOR_QUANT8_SYMM, np.array([-128, 0, 127], np.int8), {"scale": 0.5}),
    ],
)
def test_identity_casts_copy_bytes(code, x, params):
    result = run(OperationCode.CAST, x, code, code, in_params=params, out_params=params)
    np.testing.assert_array_equal(result.view(np.uint8), x.view(np.uint8))


@pytest.mark.parametrize(
    ("in_code", "out_code"),
    [
        (OperandCode.TENSOR_BOOL8, I32),
        (S8, F32),
        (F32, S8),
        (F32, OperandCode.TENSOR_BOOL8),
        (OperandCode.TENSOR_QUANT16_ASYMM, OperandCode.TENSOR_QUANT16_SYMM),
        (OperandCode.TENSOR_QUANT8_SYMM, U8),
        (OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL, OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL),
    ],
)
def test_cast_unsupported_pair_rejected(in_code, out_code):
    params = {
        OperandCode.TENSOR_QUANT16_ASYMM: {"scale": 0.5},
        OperandCode.TENSOR_QUANT16_SYMM: {"scale": 0.5},
        OperandCode.TENSOR_QUANT8_SYMM: {"scale": 0.5},
        S8: {"scale": 0.5},
        U8: {"scale": 0.5},
    }
    dtype = {
        OperandCode.TENSOR_BOOL8: np.bool_,
        OperandCode.TENSOR_QUANT16_ASYMM: np.uint16,
        OperandCode.TENSOR_QUANT16_SYMM: np.int16,
        OperandCode.TENSOR_QUANT8_SYMM: np.int8,
        OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL: np.int8,
    }.get(in_code) or NUMPY[in_code]
    x = np.ones(3, dtype)
    channel = (
        (0, [0.5, 0.5, 0.5]) if in_code == OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL else None
    )
    tester = OpTester(OperationCode.CAST).input(
        x, in_code, channel_quant=channel, **params.get(in_code, {})
    )
    tester.output(out_code, x.shape, **params.get(out_code, {}))
    expect_bad_data(tester)


def test_cast_shape_mismatch_rejected():
    tester = OpTester(OperationCode.CAST).input(np.ones((2, 3), np.float32)).output(I32, (3, 2))
    expect_bad_data(tester)


def test_cast_dynamic_output_shape():
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(1, 2, 3, 4)
    result = run(OperationCode.CAST, x, F32, I32, dynamic=True)
    assert result.shape == x.shape
    np.testing.assert_array_equal(result, np.trunc(x).astype(np.int32))


# ---- QUANTIZE ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("out_code", "scale", "zero_point"),
    [(U8, 0.1, 0), (U8, 0.5, 128), (U8, 0.02, 255), (S8, 0.1, 0), (S8, 0.5, -128), (S8, 0.03, 127)],
)
@pytest.mark.parametrize("in_code", [F32, F16])
def test_quantize(in_code, out_code, scale, zero_point):
    rng = np.random.default_rng(0)
    x = rng.uniform(-100, 100, (2, 3, 4, 5)).astype(NUMPY[in_code])
    result = run(
        OperationCode.QUANTIZE,
        x,
        in_code,
        out_code,
        out_params={"scale": scale, "zero_point": zero_point},
    )
    assert_close(result, quantize(x.astype(np.float64), scale, zero_point, NUMPY[out_code]))


@pytest.mark.parametrize(("out_code", "zero_point"), [(U8, 10), (S8, -10)])
def test_quantize_rounds_half_away_from_zero_and_saturates(out_code, zero_point):
    dtype = NUMPY[out_code]
    info = np.iinfo(dtype)
    # Exact ties at scale 0.5: x / scale = k + 0.5.
    x = np.array([-1e9, -2.25, -1.75, -0.25, 0.25, 0.75, 1.25, 1e9, np.inf, -np.inf, np.nan])
    x = x.astype(np.float32)
    result = run(
        OperationCode.QUANTIZE,
        x,
        F32,
        out_code,
        out_params={"scale": 0.5, "zero_point": zero_point},
    )
    ties = np.array([-5, -4, -1, 1, 2, 3]) + zero_point  # -4.5 -> -5, ..., 2.5 -> 3
    expected = np.concatenate([[info.min], ties, [info.max, info.max, info.min, info.max]])
    np.testing.assert_array_equal(result, expected.astype(dtype))


def test_quantize_every_representable_value_round_trips():
    q = np.arange(0, 256, dtype=np.int64).astype(np.uint8)
    real = (0.25 * (q.astype(np.float64) - 100)).astype(np.float32)
    result = run(
        OperationCode.QUANTIZE, real, F32, U8, out_params={"scale": 0.25, "zero_point": 100}
    )
    np.testing.assert_array_equal(result, q)


def test_quantize_dynamic_output_shape():
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
    params = {"scale": 1 / 128, "zero_point": 0}
    result = run(OperationCode.QUANTIZE, x, F32, S8, dynamic=True, out_params=params)
    assert result.shape == x.shape
    assert_close(result, quantize(x, 1 / 128, 0, np.int8))


@pytest.mark.parametrize(
    ("in_code", "out_code"),
    [(I32, U8), (U8, U8), (F32, I32), (F32, F16), (F32, OperandCode.TENSOR_QUANT16_ASYMM)],
)
def test_quantize_unsupported_types_rejected(in_code, out_code):
    x = np.ones(3, NUMPY.get(in_code, np.float32))
    out_params = {"scale": 0.5} if out_code in (U8, OperandCode.TENSOR_QUANT16_ASYMM) else {}
    tester = OpTester(OperationCode.QUANTIZE).input(x, in_code, **QUANT_PARAMS.get(in_code, {}))
    expect_bad_data(tester.output(out_code, x.shape, **out_params))


# ---- DEQUANTIZE ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("in_code", "dtype", "zero_point"),
    [(U8, np.uint8, 0), (U8, np.uint8, 200), (S8, np.int8, -128), (S8, np.int8, 5)],
)
@pytest.mark.parametrize("out_code", [F32, F16])
def test_dequantize(in_code, dtype, zero_point, out_code):
    info = np.iinfo(dtype)
    q = np.arange(info.min, info.max + 1, dtype=np.int64).astype(dtype).reshape(4, 4, 16)
    result = run(
        OperationCode.DEQUANTIZE,
        q,
        in_code,
        out_code,
        in_params={"scale": 0.125, "zero_point": zero_point},
    )
    expected = 0.125 * (q.astype(np.float64) - zero_point)
    assert_close(result, expected, "float16" if out_code == F16 else "float32")


def test_dequantize_quant8_symm():
    q = np.array([-128, -1, 0, 1, 127], np.int8)
    result = run(
        OperationCode.DEQUANTIZE, q, OperandCode.TENSOR_QUANT8_SYMM, F32, in_params={"scale": 0.5}
    )
    assert_close(result, 0.5 * q.astype(np.float32))


@pytest.mark.parametrize("channel_dim", [0, 1, 2])
def test_dequantize_per_channel(channel_dim):
    shape = (2, 3, 4)
    q = np.arange(-12, 12, dtype=np.int8).reshape(shape)
    scales = [0.5 * (i + 1) for i in range(shape[channel_dim])]
    result = (
        OpTester(OperationCode.DEQUANTIZE)
        .input(q, OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL, channel_quant=(channel_dim, scales))
        .output(F32, shape)
        .run()[0]
    )
    broadcast = [1, 1, 1]
    broadcast[channel_dim] = shape[channel_dim]
    expected = q.astype(np.float64) * np.array(scales).reshape(broadcast)
    assert_close(result, expected)


def test_dequantize_dynamic_output_shape():
    q = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    params = {"scale": 0.5, "zero_point": 3}
    result = run(OperationCode.DEQUANTIZE, q, U8, F32, dynamic=True, in_params=params)
    assert result.shape == q.shape
    assert_close(result, 0.5 * (q.astype(np.float32) - 3))


def test_dequantize_rank_5_rejected():
    q = np.ones((1, 1, 1, 1, 2), np.uint8)
    tester = OpTester(OperationCode.DEQUANTIZE).input(q, scale=0.5).output(F32, q.shape)
    expect_bad_data(tester)


@pytest.mark.parametrize(
    ("in_code", "out_code"),
    [(F32, F32), (I32, F32), (U8, I32), (U8, U8), (OperandCode.TENSOR_QUANT16_SYMM, F32)],
)
def test_dequantize_unsupported_types_rejected(in_code, out_code):
    dtype = np.int16 if in_code == OperandCode.TENSOR_QUANT16_SYMM else NUMPY[in_code]
    in_params = {"scale": 0.5} if in_code in (U8, OperandCode.TENSOR_QUANT16_SYMM) else {}
    tester = OpTester(OperationCode.DEQUANTIZE).input(np.ones(3, dtype), in_code, **in_params)
    expect_bad_data(tester.output(out_code, (3,), **QUANT_PARAMS.get(out_code, {})))


# ---- counts --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "out_code"),
    [(OperationCode.CAST, I32), (OperationCode.QUANTIZE, U8), (OperationCode.DEQUANTIZE, F32)],
)
def test_wrong_operand_counts_rejected(op, out_code):
    x = np.ones(3, np.uint8 if op == OperationCode.DEQUANTIZE else np.float32)
    params = {"scale": 0.5} if x.dtype == np.uint8 else {}
    out_params = {"scale": 0.5} if out_code == U8 else {}
    two_inputs = OpTester(op).input(x, **params).input(x, **params)
    expect_bad_data(two_inputs.output(out_code, (3,), **out_params))
    two_outputs = OpTester(op).input(x, **params)
    two_outputs.output(out_code, (3,), **out_params).output(out_code, (3,), **out_params)
    expect_bad_data(two_outputs)


@pytest.mark.parametrize(
    ("op", "out_code", "out_params"),
    [
        (OperationCode.CAST, I32, {}),
        (OperationCode.CAST, F16, {}),
        (OperationCode.QUANTIZE, U8, {"scale": 0.5, "zero_point": 3}),
        (OperationCode.QUANTIZE, S8, {"scale": 0.5}),
    ],
)
def test_zero_sized_input_allowed(op, out_code, out_params):
    assert run_on_zero_sized(op, out_code=out_code, out_params=out_params) == (0, 3)
