# SPDX-License-Identifier: Apache-2.0
"""FULLY_CONNECTED against numpy: out = act(x.reshape(-1, input_size) @ w.T + b).

Covered: fp32 (ranks 2 to 4, inputs whose first dimension is not the batch), fp16, QUANT8_ASYMM
and QUANT8_ASYMM_SIGNED with saturation and activation limits, a reduction long enough to need
the chunked exact integer GEMM, weights as constants and as model inputs, dynamic output shapes,
large outputs (GEMM blocks on the thread pool, sgemv, one product threaded by OpenBLAS: the same
bits run to run), the BAD_DATA validation rules and
feature levels.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import FuseCode, OperandCode, OperationCode

from .helpers import FUSED_ACTIVATIONS, expect_bad_data, expect_failed_when_prepared
from .op_tester import OpTester, assert_close
from .test_conv_2d import (
    QUANT_TYPES,
    quantize,
    required_feature_level,
)

FC = OperationCode.FULLY_CONNECTED


def fc_tester(
    x,
    w,
    b,
    activation=FuseCode.NONE,
    out_code=None,
    out_shape=None,
    *,
    x_quant=(0.0, 0),
    w_quant=(0.0, 0),
    b_scale=0.0,
    out_quant=(0.0, 0),
    weights_as_inputs=False,
    dynamic=False,
):
    if out_shape is None:
        out_shape = (x.size // w.shape[1], w.shape[0])
    tester = OpTester(FC).input(x, scale=x_quant[0], zero_point=x_quant[1])
    add = tester.input if weights_as_inputs else tester.constant
    add(w, scale=w_quant[0], zero_point=w_quant[1])
    add(b, scale=b_scale)
    tester.scalar(OperandCode.INT32, int(activation))
    tester.output(out_code or OpTester.default_code(x), out_shape, out_quant[0], out_quant[1])
    return tester.dynamic_outputs(dynamic)


def reference(x, w, b):
    rows = x.astype(np.float64).reshape(-1, w.shape[1])
    return rows @ w.astype(np.float64).T + b.astype(np.float64)


@pytest.mark.parametrize(
    "x_shape,w_shape",
    [((2, 5), (3, 5)), ((4, 1, 5, 1), (3, 10)), ((3, 2, 8), (7, 16)), ((1, 64), (33, 64))],
    ids=["rank2", "rank4_reshaped", "rank3", "k64"],
)
@pytest.mark.parametrize("weights_as_inputs", [False, True], ids=["const", "input"])
def test_fully_connected_float32(x_shape, w_shape, weights_as_inputs):
    rng = np.random.default_rng(sum(x_shape))
    x = rng.uniform(-1, 1, x_shape).astype(np.float32)
    w = rng.uniform(-1, 1, w_shape).astype(np.float32)
    b = rng.uniform(-1, 1, w_shape[0]).astype(np.float32)
    result = fc_tester(x, w, b, weights_as_inputs=weights_as_inputs).run()[0]
    assert_close(result, reference(x, w, b))


@pytest.mark.parametrize("activation", list(FUSED_ACTIVATIONS))
def test_fully_connected_activations(activation):
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, (3, 6)).astype(np.float32)
    w = rng.uniform(-2, 2, (5, 6)).astype(np.float32)
    b = rng.uniform(-1, 1, 5).astype(np.float32)
    result = fc_tester(x, w, b, activation).run()[0]
    assert_close(result, FUSED_ACTIVATIONS[activation](reference(x, w, b)))


def test_fully_connected_float16():
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (3, 12)).astype(np.float16)
    w = rng.uniform(-1, 1, (4, 12)).astype(np.float16)
    b = rng.uniform(-1, 1, 4).astype(np.float16)
    result = fc_tester(x, w, b, FuseCode.RELU6).run()[0]
    assert result.dtype == np.float16
    assert_close(result, np.clip(reference(x, w, b), 0, 6), "float16")


def test_fully_connected_dynamic_output_shape():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, (5, 6)).astype(np.float32)
    b = np.zeros(5, np.float32)
    result = fc_tester(x, w, b, dynamic=True).run()[0]
    assert result.shape == (4, 5)
    assert_close(result, reference(x, w, b))


def run_quantized(
    dtype_name,
    x_shape,
    w_shape,
    activation=FuseCode.NONE,
    out_scale=None,
    x_zp=None,
    w_zp=None,
    seed=0,
):
    dtype, code = QUANT_TYPES[dtype_name]
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x = rng.integers(info.min, info.max + 1, x_shape, dtype=dtype)
    w = rng.integers(info.min, info.max + 1, w_shape, dtype=dtype)
    x_scale, w_scale = 0.04, 0.02
    x_zp = int(info.min) + 77 if x_zp is None else x_zp
    w_zp = int(info.min) + 140 if w_zp is None else w_zp
    b_scale = float(np.float32(x_scale) * np.float32(w_scale))
    b = rng.integers(-3000, 3000, w_shape[0]).astype(np.int32)
    real = reference(
        (x.astype(np.float64) - x_zp) * x_scale,
        (w.astype(np.float64) - w_zp) * w_scale,
        b * np.float64(b_scale),
    )
    real = FUSED_ACTIVATIONS[activation](real)
    if out_scale is None:
        # The 10th and 90th percentiles map to the ends of the range: both ends saturate.
        low, high = np.percentile(real, [10, 90])
        out_scale = float((high - low) / (int(info.max) - int(info.min)))
        out_zp = int(np.clip(round(int(info.min) - low / out_scale), info.min, info.max))
    else:
        out_zp = int(info.min) + 128
    expected = quantize(real, out_scale, out_zp, dtype)
    result = fc_tester(
        x,
        w,
        b,
        activation,
        code,
        expected.shape,
        x_quant=(x_scale, x_zp),
        w_quant=(w_scale, w_zp),
        b_scale=b_scale,
        out_quant=(out_scale, out_zp),
    ).run()[0]
    return result, expected


@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
def test_fully_connected_quantized_saturates(dtype_name):
    result, expected = run_quantized(dtype_name, (4, 24), (9, 24))
    info = np.iinfo(expected.dtype)
    assert (expected == info.min).any() and (expected == info.max).any()
    assert_close(result, expected)


@pytest.mark.parametrize("activation", [FuseCode.RELU, FuseCode.RELU1, FuseCode.RELU6])
@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
def test_fully_connected_quantized_activations(dtype_name, activation):
    result, expected = run_quantized(
        dtype_name, (3, 16), (6, 16), activation, out_scale=0.03, seed=5
    )
    assert_close(result, expected)


def test_fully_connected_quantized_long_reduction_is_exact():
    # Zero points at the ends of the range make products up to 255 * 255: sums of 1200 of them
    # exceed float's exact integers (2^24), so the GEMM is split into exact chunks.
    result, expected = run_quantized("uint8", (2, 1200), (3, 1200), x_zp=0, w_zp=255, seed=7)
    assert_close(result, expected)


# ---- Validation ---------------------------------------------------------------------------


def float_operands():
    return np.zeros((2, 4), np.float32), np.zeros((3, 4), np.float32), np.zeros(3, np.float32)


def test_fully_connected_rejects_wrong_input_counts():
    x, w, b = float_operands()
    three = OpTester(FC).input(x).constant(w).constant(b).output(OperandCode.TENSOR_FLOAT32, (2, 3))
    assert "inputs" in expect_bad_data(three)
    five = (
        OpTester(FC)
        .input(x)
        .constant(w)
        .constant(b)
        .scalar(OperandCode.INT32, 0)
        .scalar(OperandCode.INT32, 0)
        .output(OperandCode.TENSOR_FLOAT32, (2, 3))
    )
    expect_bad_data(five)


def test_fully_connected_rejects_type_mismatches():
    x, w, b = float_operands()
    expect_bad_data(fc_tester(x, w.astype(np.float16), b, out_code=OperandCode.TENSOR_FLOAT32))
    expect_bad_data(fc_tester(x, w, b.astype(np.float16)))
    expect_bad_data(fc_tester(x, w, b.astype(np.int32)))
    expect_bad_data(fc_tester(x, w, b, out_code=OperandCode.TENSOR_FLOAT16))


def test_fully_connected_quantized_bias_rules():
    x = np.zeros((2, 4), np.uint8)
    w = np.zeros((3, 4), np.uint8)

    def tester(bias, b_scale):
        return fc_tester(
            x,
            w,
            bias,
            out_code=OperandCode.TENSOR_QUANT8_ASYMM,
            x_quant=(0.5, 10),
            w_quant=(0.25, 3),
            b_scale=b_scale,
            out_quant=(1.0, 0),
        )

    tester(np.zeros(3, np.int32), 0.125).build()
    assert "bias scale" in expect_bad_data(tester(np.zeros(3, np.int32), 0.25))
    expect_bad_data(tester(np.zeros(3, np.float32), 0.0))
    expect_bad_data(tester(np.zeros(3, np.uint8), 0.125))


def test_fully_connected_rejects_bad_shapes():
    x, w, b = float_operands()
    # Rank 1 and rank 5 inputs.
    expect_bad_data(fc_tester(np.zeros(4, np.float32), w, b, out_shape=(1, 3)))
    expect_bad_data(fc_tester(np.zeros((1, 1, 1, 2, 4), np.float32), w, b, out_shape=(2, 3)))
    # 10 elements cannot be read as rows of 4.
    expect_bad_data(fc_tester(np.zeros((2, 5), np.float32), w, b, out_shape=(2, 3)))
    # Bias length, weights rank.
    expect_bad_data(fc_tester(x, w, np.zeros(2, np.float32)))
    expect_bad_data(fc_tester(x, w.reshape(3, 4, 1), b, out_shape=(2, 3)))
    # Activation value.
    expect_failed_when_prepared(fc_tester(x, w, b, activation=4))


@pytest.mark.parametrize(
    "x_shape,w_shape",
    [((256, 16), (512, 16)), ((1, 16), (131072, 16))],
    ids=["gemm_blocks", "gemv"],
)
def test_fully_connected_large_outputs(x_shape, w_shape):
    # Enough multiply-adds for the GEMM to be split into blocks over the thread pool (or, for a
    # single row, a large sgemv); K stays small so the fp32 criterion holds in any order.
    rng = np.random.default_rng(8)
    x = rng.uniform(-1, 1, x_shape).astype(np.float32)
    w = rng.uniform(-1, 1, w_shape).astype(np.float32)
    b = rng.uniform(-1, 1, w_shape[0]).astype(np.float32)
    result = fc_tester(x, w, b, FuseCode.RELU).run()[0]
    assert_close(result, np.maximum(reference(x, w, b), 0))


def test_fully_connected_large_product_threaded_or_pooled(monkeypatch):
    # 2^27 multiply-adds: by default (and with MOCK_NNAPI_GEMM_THREADING=pool) blocks of
    # single-threaded OpenBLAS calls on the pool; with =blas one OpenBLAS call on its own threads.
    # Each way gives the same bits run after run (OpenBLAS splits M and N statically, never K);
    # the two ways round differently (K = 512 is too long for assert_close's criterion in
    # an arbitrary order, so a tolerance for fp32 sums of 512 terms of magnitude <= 1/16). The
    # operands are small so that another machine's kernels (the arm64 device job compares its
    # outputs with the x86 mock's under assert_close's fp32 criterion) stay within 1e-5 + 5 ULP.
    rng = np.random.default_rng(9)
    x = rng.uniform(-0.25, 0.25, (256, 512)).astype(np.float32)
    w = rng.uniform(-0.25, 0.25, (1024, 512)).astype(np.float32)
    b = rng.uniform(-0.25, 0.25, 1024).astype(np.float32)
    results = {}
    for mode in ("default", "pool", "blas", "default", "blas", "pool"):
        if mode == "default":
            monkeypatch.delenv("MOCK_NNAPI_GEMM_THREADING", raising=False)
        else:
            monkeypatch.setenv("MOCK_NNAPI_GEMM_THREADING", mode)
        result = fc_tester(x, w, b).run()[0]
        if mode in results:
            np.testing.assert_array_equal(result, results[mode], err_msg=f"{mode}: run to run")
        results[mode] = result
        np.testing.assert_allclose(result, reference(x, w, b), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(results["default"], results["pool"])


@pytest.mark.parametrize(
    "dtype,out_scale,level",
    [
        (np.float32, 0.0, 1),
        (np.float16, 0.0, 3),
        (np.uint8, 1.0, 1),
        (np.uint8, 0.25, 3),
        (np.int8, 1.0, 4),
    ],
    ids=["fp32", "fp16", "quant8", "quant8_small_output_scale", "quant8_signed"],
)
def test_fully_connected_feature_levels(feature_level_devices, dtype, out_scale, level):
    quantized = dtype in (np.uint8, np.int8)
    tester = fc_tester(
        np.zeros((2, 4), dtype),
        np.zeros((3, 4), dtype),
        np.zeros(3, np.int32 if quantized else dtype),
        x_quant=(0.5, 0) if quantized else (0.0, 0),
        w_quant=(0.5, 0) if quantized else (0.0, 0),
        b_scale=0.25 if quantized else 0.0,
        out_quant=(out_scale, 0),
    )
    assert required_feature_level(tester, feature_level_devices) == level


def test_fully_connected_large_product_runs_on_the_pool():
    """A product above the split threshold (2^21 multiply-adds) runs on the thread pool when
    OpenBLAS may use two threads or more (the pool_jobs counter): the split must not read the
    thread count from OpenBLAS's setting inside its own single-threaded scope (where it is 1)."""
    from mock_nnapi import control

    if control.blas_info()["threads"] < 2:
        pytest.skip(
            "OpenBLAS runs one thread here (one CPU, or OPENBLAS_NUM_THREADS=1): "
            "run with OPENBLAS_NUM_THREADS=2"
        )
    rng = np.random.default_rng(3)
    x = rng.uniform(-0.25, 0.25, (64, 256)).astype(np.float32)
    w = rng.uniform(-0.25, 0.25, (512, 256)).astype(np.float32)
    b = rng.uniform(-0.25, 0.25, 512).astype(np.float32)
    control.reset_counters()
    result = fc_tester(x, w, b).run()[0]
    assert control.counter("pool_jobs") >= 1
    np.testing.assert_allclose(result, reference(x, w, b), rtol=1e-5, atol=1e-5)
