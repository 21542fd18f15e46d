# SPDX-License-Identifier: Apache-2.0
"""BATCH_MATMUL against numpy.matmul over the (optionally transposed) last two dimensions.

Covered: fp32 at ranks 2 to 4 with every adj_x / adj_y combination, y broadcast over a batch
dimension of 1, omitted adj operands (false), fp16, INT32 (wrapping), QUANT8_ASYMM_SIGNED with
saturation, dynamic output shapes, large outputs (sgemv for one row or column, GEMM blocks
split over the thread pool otherwise), many small products shared over the pool (the same bits
as each alone), the BAD_DATA validation rules and feature level 6.
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import OperandCode, OperationCode

from .helpers import expect_bad_data, expect_failed_when_prepared
from .op_tester import OpTester, assert_close
from .test_conv_2d import (
    quantize,
    required_feature_level,
)

BMM = OperationCode.BATCH_MATMUL


def adjoint(a, adj):
    return np.swapaxes(a, -1, -2) if adj else a


def bmm_tester(
    x,
    y,
    adj_x=False,
    adj_y=False,
    out_shape=None,
    out_code=None,
    *,
    quant=None,
    dynamic=False,
    omit_adj=False,
    y_constant=False,
):
    quant = quant or {}
    if out_shape is None:
        out_shape = np.matmul(
            adjoint(np.zeros(x.shape), adj_x), adjoint(np.zeros(y.shape), adj_y)
        ).shape
    tester = OpTester(BMM).input(x, **quant.get("x", {}))
    (tester.constant if y_constant else tester.input)(y, **quant.get("y", {}))
    if omit_adj:
        tester.omitted(OperandCode.BOOL).omitted(OperandCode.BOOL)
    else:
        tester.scalar(OperandCode.BOOL, adj_x).scalar(OperandCode.BOOL, adj_y)
    tester.output(out_code or OpTester.default_code(x), out_shape, **quant.get("out", {}))
    return tester.dynamic_outputs(dynamic)


def reference(x, y, adj_x, adj_y):
    return np.matmul(adjoint(x.astype(np.float64), adj_x), adjoint(y.astype(np.float64), adj_y))


SHAPES = {
    "rank2": ((3, 5), (5, 4)),
    "rank3": ((2, 4, 6), (2, 6, 3)),
    "rank4": ((2, 3, 2, 5), (2, 3, 5, 4)),
}


@pytest.mark.parametrize("adj_y", [False, True], ids=["y", "yT"])
@pytest.mark.parametrize("adj_x", [False, True], ids=["x", "xT"])
@pytest.mark.parametrize("shapes", list(SHAPES))
def test_batch_matmul_float32(shapes, adj_x, adj_y):
    x_shape, y_shape = SHAPES[shapes]
    rng = np.random.default_rng(len(x_shape) * 4 + adj_x * 2 + adj_y)
    # Store the operands transposed when adj asks for it, so the math stays the same shape.
    x = np.ascontiguousarray(adjoint(rng.uniform(-1, 1, x_shape).astype(np.float32), adj_x))
    y = np.ascontiguousarray(adjoint(rng.uniform(-1, 1, y_shape).astype(np.float32), adj_y))
    result = bmm_tester(x, y, adj_x, adj_y, y_constant=adj_y).run()[0]
    assert_close(result, reference(x, y, adj_x, adj_y))


def test_batch_matmul_broadcasts_y_batch():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (2, 3, 4, 5)).astype(np.float32)
    y = rng.uniform(-1, 1, (1, 3, 5, 2)).astype(np.float32)
    result = bmm_tester(x, y).run()[0]
    assert_close(result, reference(x, y, False, False))


def test_batch_matmul_small_products_shared_over_the_pool_match_each_alone():
    # Eight 64x64x64 products (each too small for one GEMM to be split, together enough for the
    # pool), y broadcast over the first batch dimension: the same bits as each product alone.
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (2, 4, 64, 64)).astype(np.float32)
    y = rng.uniform(-1, 1, (1, 4, 64, 64)).astype(np.float32)
    result = bmm_tester(x, y, adj_y=True).run()[0]
    assert_close(result, reference(x, y, False, True))
    for i in range(2):
        for j in range(4):
            alone = bmm_tester(x[i, j], y[0, j], adj_y=True).run()[0]
            np.testing.assert_array_equal(result[i, j], alone)


def test_batch_matmul_omitted_adj_means_false():
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    y = rng.uniform(-1, 1, (2, 4, 5)).astype(np.float32)
    result = bmm_tester(x, y, omit_adj=True).run()[0]
    assert_close(result, reference(x, y, False, False))


def test_batch_matmul_float16():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, 3, 8)).astype(np.float16)
    y = rng.uniform(-1, 1, (2, 5, 8)).astype(np.float16)
    result = bmm_tester(x, y, adj_y=True).run()[0]
    assert result.dtype == np.float16
    assert_close(result, reference(x, y, False, True), "float16")


def test_batch_matmul_int32_wraps():
    rng = np.random.default_rng(4)
    x = rng.integers(-1000, 1000, (2, 3, 4), dtype=np.int32)
    y = rng.integers(-1000, 1000, (2, 3, 5), dtype=np.int32)
    x[0, 0, :] = 2**31 - 1  # products and sums that overflow int32
    y[0, :, 0] = 3
    expected = np.matmul(np.swapaxes(x, 1, 2).astype(np.int64), y.astype(np.int64))
    expected = ((expected + 2**31) % 2**32 - 2**31).astype(np.int32)
    np.testing.assert_array_equal(bmm_tester(x, y, adj_x=True).run()[0], expected)


@pytest.mark.parametrize("adj", [(False, False), (True, True)], ids=["plain", "adjoint"])
def test_batch_matmul_quant8_signed(adj):
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (2, 6, 20) if not adj[0] else (2, 20, 6), dtype=np.int8)
    y = rng.integers(-128, 128, (2, 20, 7) if not adj[1] else (2, 7, 20), dtype=np.int8)
    quant = {"x": {"scale": 0.05, "zero_point": -10}, "y": {"scale": 0.02, "zero_point": 7}}
    real = reference((x.astype(np.float64) + 10) * 0.05, (y.astype(np.float64) - 7) * 0.02, *adj)
    out_scale = float(np.percentile(np.abs(real), 80) / 100)
    quant["out"] = {"scale": out_scale, "zero_point": 3}
    expected = quantize(real, out_scale, 3, np.int8)
    assert (expected == -128).any() and (expected == 127).any()
    result = bmm_tester(x, y, *adj, quant=quant).run()[0]
    assert_close(result, expected)


def test_batch_matmul_dynamic_output_shape():
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, (3, 2, 4)).astype(np.float32)
    y = rng.uniform(-1, 1, (3, 6, 2)).astype(np.float32)
    result = bmm_tester(x, y, adj_x=True, adj_y=True, dynamic=True).run()[0]
    assert result.shape == (3, 4, 6)
    assert_close(result, reference(x, y, True, True))


# ---- Validation ---------------------------------------------------------------------------


def test_batch_matmul_requires_four_inputs():
    x = np.zeros((2, 3), np.float32)
    y = np.zeros((3, 4), np.float32)
    two = OpTester(BMM).input(x).input(y).output(OperandCode.TENSOR_FLOAT32, (2, 4))
    assert "inputs" in expect_bad_data(two)


def test_batch_matmul_rejects_types():
    x = np.zeros((2, 3), np.float32)
    y = np.zeros((3, 4), np.float32)
    expect_bad_data(bmm_tester(x, y.astype(np.float16), out_code=OperandCode.TENSOR_FLOAT32))
    expect_bad_data(
        bmm_tester(
            x.astype(np.uint8),
            y.astype(np.uint8),
            quant={"x": {"scale": 1.0}, "y": {"scale": 1.0}, "out": {"scale": 1.0}},
        )
    )
    expect_bad_data(bmm_tester(x, y, out_code=OperandCode.TENSOR_FLOAT16))
    int_adj = (
        OpTester(BMM)
        .input(x)
        .input(y)
        .scalar(OperandCode.INT32, 0)
        .scalar(OperandCode.BOOL, False)
        .output(OperandCode.TENSOR_FLOAT32, (2, 4))
    )
    expect_bad_data(int_adj)


def test_batch_matmul_rejects_shapes():
    f32 = np.float32
    # Different ranks, rank 5, contracted sizes, batch sizes.
    expect_bad_data(
        bmm_tester(np.zeros((2, 3, 4), f32), np.zeros((4, 5), f32), out_shape=(2, 3, 5))
    )
    expect_bad_data(
        bmm_tester(
            np.zeros((1, 1, 1, 2, 3), f32),
            np.zeros((1, 1, 1, 3, 2), f32),
            out_shape=(1, 1, 1, 2, 2),
        )
    )
    expect_failed_when_prepared(
        bmm_tester(np.zeros((2, 3), f32), np.zeros((4, 5), f32), out_shape=(2, 5))
    )
    expect_failed_when_prepared(
        bmm_tester(np.zeros((2, 3), f32), np.zeros((3, 5), f32), adj_x=True, out_shape=(3, 5))
    )
    expect_bad_data(
        bmm_tester(np.zeros((2, 2, 3), f32), np.zeros((3, 3, 5), f32), out_shape=(2, 2, 5))
    )


@pytest.mark.parametrize(
    "x_shape,y_shape,adj_x",
    [
        ((1, 16), (16, 131072), False),  # one row: sgemv of the transposed y
        ((131072, 16), (16, 1), False),  # one column: sgemv of x
        ((16, 600), (16, 4096), True),  # column blocks of a transposed x
        ((16, 4096), (16, 600), True),  # row blocks of a transposed x
    ],
    ids=["row", "column", "x_adj_columns", "x_adj_rows"],
)
def test_batch_matmul_large_outputs(x_shape, y_shape, adj_x):
    rng = np.random.default_rng(9)
    x = rng.uniform(-1, 1, x_shape).astype(np.float32)
    y = rng.uniform(-1, 1, y_shape).astype(np.float32)
    result = bmm_tester(x, y, adj_x=adj_x).run()[0]
    assert_close(result, reference(x, y, adj_x, False))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8])
def test_batch_matmul_needs_feature_level_6(feature_level_devices, dtype):
    quant = {k: {"scale": 0.5} for k in ("x", "y", "out")} if dtype == np.int8 else None
    tester = bmm_tester(np.zeros((2, 3), dtype), np.zeros((3, 4), dtype), quant=quant)
    assert required_feature_level(tester, feature_level_devices) == 6
