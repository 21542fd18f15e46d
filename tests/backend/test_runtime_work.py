# SPDX-License-Identifier: Apache-2.0
"""The runtime's placement policy counts an operation's work with the formula the mock's cost
model uses (common/nnapi_work.h): for each operation, the FLOPs the runtime estimates for a graph
equal the FLOPs of the mock's modelled trace for the same operation, and follow the NDK
semantics (BATCH_MATMUL's inner dimension is r_x when adj_x is set)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from mock_ops.op_tester import OpTester

from mock_nnapi import FuseCode, OperandCode, OperationCode, PaddingCode, control
from tvm_nnapi.runtime._library import runtime_function

F32 = OperandCode.TENSOR_FLOAT32
INT32 = OperandCode.INT32
RNG = np.random.default_rng(0)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def runtime_estimate(tester: OpTester) -> dict[str, float]:
    graph_json, constants = tester.graph()
    document = json.loads(graph_json)
    shapes = [document["operands"][i]["shape"] for i in document["inputs"]]
    estimate = runtime_function("tvm_nnapi.runtime.estimate_cost")(
        graph_json, len(constants), shapes
    )
    return {key: float(value) for key, value in estimate.items()}


def mock_flops(tester: OpTester) -> float:
    tester.run()
    trace = control.last_execution_trace()
    assert trace is not None
    (operation,) = [e for e in trace["events"] if e["kind"] == "operation"]
    return operation["flops"]


def batch_matmul(adj_x: bool) -> OpTester:
    # x^T is [2, 3, 64] when adj_x: 3 x 5 outputs per batch, each a 64-long dot product.
    x = _x(2, 64, 3) if adj_x else _x(2, 3, 64)
    return (
        OpTester(OperationCode.BATCH_MATMUL)
        .input(x)
        .input(_x(2, 64, 5))
        .scalar(OperandCode.BOOL, adj_x)
        .scalar(OperandCode.BOOL, False)
        .output(F32, (2, 3, 5))
    )


@pytest.mark.parametrize("adj_x", [False, True], ids=["plain", "adj_x"])
def test_batch_matmul_inner_dimension_follows_adj_x(adj_x):
    # NDK: out rows r_o = adj_x ? c_x : r_x, so the reduced dimension is r_x when adj_x is set.
    expected = 2 * (2 * 3 * 5) * 64
    assert runtime_estimate(batch_matmul(adj_x))["flops"] == expected
    assert mock_flops(batch_matmul(adj_x)) == expected


def conv_2d() -> OpTester:
    return (
        OpTester(OperationCode.CONV_2D)
        .input(_x(1, 6, 6, 4))
        .constant(_x(8, 3, 3, 4))
        .constant(np.zeros(8, np.float32))
        .scalar(INT32, PaddingCode.VALID)
        .scalar(INT32, 1)
        .scalar(INT32, 1)
        .scalar(INT32, FuseCode.NONE)
        .output(F32, (1, 4, 4, 8))
    )


def pool(operation: int, explicit: bool) -> OpTester:
    tester = OpTester(operation).input(_x(1, 8, 8, 3))
    if explicit:  # pads l, r, t, b; strides w, h; filter w = 3, h = 2
        for value in (0, 0, 0, 0, 1, 1, 3, 2):
            tester.scalar(INT32, value)
    else:  # VALID; strides w, h; filter w = 3, h = 2
        for value in (PaddingCode.VALID, 1, 1, 3, 2):
            tester.scalar(INT32, value)
    return tester.scalar(INT32, FuseCode.RELU6).output(F32, (1, 7, 6, 3))


def local_response_normalization() -> OpTester:
    return (
        OpTester(OperationCode.LOCAL_RESPONSE_NORMALIZATION)
        .input(_x(1, 2, 2, 8))
        .scalar(INT32, 2)  # radius
        .scalar(OperandCode.FLOAT32, 1.0)
        .scalar(OperandCode.FLOAT32, 1.0)
        .scalar(OperandCode.FLOAT32, 0.5)
        .output(F32, (1, 2, 2, 8))
    )


def softmax() -> OpTester:
    return (
        OpTester(OperationCode.SOFTMAX)
        .input(_x(4, 10))
        .scalar(OperandCode.FLOAT32, 1.0)
        .output(F32, (4, 10))
    )


def exp() -> OpTester:
    return OpTester(OperationCode.EXP).input(_x(4, 10)).output(F32, (4, 10))


def transpose() -> OpTester:
    return (
        OpTester(OperationCode.TRANSPOSE)
        .input(_x(4, 10))
        .constant(np.array([1, 0], np.int32))
        .output(F32, (10, 4))
    )


def lstm() -> OpTester:
    # batch 2, input 3, 4 units, no projection: the eight gate matrices, 4 x (4 x 3 + 4 x 4).
    tester = OpTester(OperationCode.LSTM).input(_x(2, 3))
    for shape in [(4, 3)] * 4 + [(4, 4)] * 4:
        tester.constant(_x(*shape))
    for _ in range(3):
        tester.omitted(F32)  # no peephole
    for _ in range(4):
        tester.constant(np.zeros(4, np.float32))
    tester.omitted(F32).omitted(F32)  # no projection
    tester.input(_x(2, 4)).input(_x(2, 4))
    tester.scalar(INT32, 4).scalar(OperandCode.FLOAT32, 0.0).scalar(OperandCode.FLOAT32, 0.0)
    for shape in [(2, 16), (2, 4), (2, 4), (2, 4)]:
        tester.output(F32, shape)
    return tester


@pytest.mark.parametrize(
    "make, flops",
    [
        (conv_2d, 2 * (4 * 4 * 8) * 3 * 3 * 4),
        (lambda: pool(OperationCode.MAX_POOL_2D, explicit=False), 7 * 6 * 3 * (3 * 2)),
        (lambda: pool(OperationCode.AVERAGE_POOL_2D, explicit=True), 7 * 6 * 3 * (3 * 2)),
        (lambda: pool(OperationCode.L2_POOL_2D, explicit=True), 7 * 6 * 3 * (3 * 2) * 2),
        (local_response_normalization, 32 * (2 * (2 * 2 + 1) + 3)),
        (softmax, 5 * 40),
        (exp, 4 * 40),
        (transpose, 0),
        (lstm, 2 * 2 * (4 * 12 + 4 * 16)),
    ],
    ids=[
        "conv",
        "max-pool-implicit",
        "avg-pool-explicit",
        "l2-pool",
        "lrn",
        "softmax",
        "exp",
        "transpose",
        "lstm",
    ],
)
def test_runtime_and_mock_count_the_same_work(make, flops):
    assert runtime_estimate(make())["flops"] == flops
    assert mock_flops(make()) == flops


def test_io_bytes_count_graph_inputs_and_outputs():
    estimate = runtime_estimate(batch_matmul(adj_x=True))
    assert estimate["io_bytes"] == 4 * (2 * 64 * 3 + 2 * 64 * 5 + 2 * 3 * 5)
