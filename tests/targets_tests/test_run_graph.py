# SPDX-License-Identifier: Apache-2.0
"""tvm_nnapi.testing.run_graph and nnapi_stats, the runtime functions the remote targets call,
run in this process on the mock: results, reported shapes, and errors that name what is wrong."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tvm
from mock_ops.op_tester import OpTester
from targets import MockTarget

import mock_nnapi
from mock_nnapi import FuseCode, OperandCode, OperationCode
from tvm_nnapi.runtime._library import runtime_function


def add_tester(dynamic: bool = False) -> tuple[OpTester, np.ndarray]:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    tester = (
        OpTester(OperationCode.ADD)
        .input(x)
        .constant(np.array([10, 20, 30], np.float32))
        .scalar(OperandCode.INT32, FuseCode.RELU)
        .output(OperandCode.TENSOR_FLOAT32, (2, 3))
        .dynamic_outputs(dynamic)
    )
    return tester, x


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic-output"])
def test_run_graph_matches_the_mock_and_reports_shapes(dynamic):
    tester, x = add_tester(dynamic)
    before = mock_nnapi.operation_count(OperationCode.ADD)
    (result,), info = MockTarget().run_graph(*tester.graph(), [x], [((2, 3), np.float32)])
    np.testing.assert_array_equal(result, x + np.float32([10, 20, 30]))
    assert mock_nnapi.operation_count(OperationCode.ADD) == before + 1
    assert info["output_shapes"] == [[2, 3]] and info["mock"] is True
    assert info["operations"] == 1 and info["execute_ns"] > 0


def test_graph_of_quantised_per_channel_and_omitted_operands_is_valid():
    tester = (
        OpTester(OperationCode.CONV_2D)
        .input(np.zeros((1, 3, 3, 2), np.float32))
        .constant(np.ones((2, 1, 1, 2), np.float32))
        .omitted(OperandCode.TENSOR_FLOAT32)
        .scalar(OperandCode.INT32, 0)
        .scalar(OperandCode.BOOL, False)
        .output(OperandCode.TENSOR_FLOAT32, (1, 3, 3, 2))
    )
    document = json.loads(tester.graph()[0])
    assert document["operands"][2] == {"type": "TENSOR_FLOAT32", "omitted": True, "shape": []}
    assert document["operands"][4] == {"type": "BOOL", "value": False}
    assert document["operations"][0]["op"] == "CONV_2D"
    count = runtime_function("tvm_nnapi.runtime.parse_graph")(tester.graph()[0], 16)
    assert count == 1


def run_graph(graph_json: str, constants: bytes, *tensors):
    return runtime_function("tvm_nnapi.testing.run_graph")(graph_json, constants, *tensors)


def test_run_graph_errors_name_the_argument_and_the_nnapi_call():
    tester, x = add_tester()
    graph_json, constants = tester.graph()
    out = tvm.runtime.empty((2, 3), "float32", tvm.cpu())
    with pytest.raises(ValueError, match="takes 1 inputs and 1 outputs, got 1 tensors"):
        run_graph(graph_json, constants, tvm.runtime.tensor(x))
    with pytest.raises(TypeError, match="input 0 has 64-bit elements, operand 0 needs 32"):
        run_graph(graph_json, constants, tvm.runtime.tensor(x.astype(np.float64)), out)
    with pytest.raises(TypeError, match="output 0 is not a tensor"):
        run_graph(graph_json, constants, tvm.runtime.tensor(x), 3)
    with pytest.raises(ValueError, match="constant"):
        run_graph(graph_json, b"", tvm.runtime.tensor(x), out)  # the blob is too small
    wrong_output = tvm.runtime.empty((3, 3), "float32", tvm.cpu())
    with pytest.raises(
        RuntimeError,
        match=r"ANeuralNetworksExecution_setOutput for output 0 "
        r"returned ANEURALNETWORKS_BAD_DATA",
    ):
        run_graph(graph_json, constants, tvm.runtime.tensor(x), wrong_output)


def test_a_rank_0_tensor_is_taken_for_an_input_of_one_element_only():
    # The codegen declares a rank-0 subgraph input (a scalar operand) as a [1] tensor.
    def tester(shape: tuple[int, ...]) -> OpTester:
        return (
            OpTester(OperationCode.ADD)
            .input(np.ones(shape, np.float32))
            .constant(np.array([10, 20, 30], np.float32))
            .scalar(OperandCode.INT32, FuseCode.NONE)
            .output(OperandCode.TENSOR_FLOAT32, (3,))
        )

    scalar = tvm.runtime.tensor(np.asarray(np.float32(2)))
    out = tvm.runtime.empty((3,), "float32", tvm.cpu())
    run_graph(*tester((1,)).graph(), scalar, out)
    np.testing.assert_array_equal(out.numpy(), np.float32([12, 22, 32]))
    with pytest.raises(ValueError, match="input 0 has rank 0, the graph expects 1"):
        run_graph(*tester((3,)).graph(), scalar, out)


def test_nnapi_stats_sums_the_subgraphs_of_an_executable():
    from tvm import relax

    import tvm_nnapi

    builder = relax.BlockBuilder()
    a = relax.Var("a", relax.TensorType([2, 3], "float32"))
    with builder.function("main", [a]):
        with builder.dataflow():
            out = builder.emit_output(relax.op.exp(relax.op.add(a, a)))
        builder.emit_func_output(out)
    executable = tvm_nnapi.build(builder.get())
    vm = relax.VirtualMachine(executable, tvm.cpu())
    vm["main"](tvm.runtime.tensor(np.ones((2, 3), np.float32)))
    vm["main"](tvm.runtime.tensor(np.ones((2, 3), np.float32)))
    stats = json.loads(str(runtime_function("tvm_nnapi.testing.nnapi_stats")(vm.module)))
    assert stats["nnapi_modules"] >= 1
    assert stats["nnapi_calls"] == 2 and stats["host_calls"] == 0
