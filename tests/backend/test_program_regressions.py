# SPDX-License-Identifier: Apache-2.0
"""Programs that once crashed the backend at build or run time, each reduced to its cause: the
result must be the host's, with what cannot be offloaded kept on the host with its reason."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import mock_nnapi
import tvm_nnapi
from tvm_nnapi.compiler.graph_json import GraphBuilder
from tvm_nnapi.targets import MockTarget

from .helpers import run_host, run_nnapi

RNG = np.random.default_rng(0)


def _agree(mod, inputs, options=None) -> tvm_nnapi.PartitionResult:
    report = tvm_nnapi.partition_with_report(mod, options)
    result, _ = run_nnapi(mod, "main", inputs, options)
    np.testing.assert_allclose(result, run_host(mod, "main", inputs), rtol=1e-5, atol=1e-5)
    return report


def _conv_module(kernel: int, padding: int, groups: int, dilation: int = 1):
    weight = RNG.standard_normal((4, 4 // groups, kernel, kernel)).astype("float32")
    x = relax.Var("x", relax.TensorType((1, 4, 6, 6), "float32"))
    builder = relax.BlockBuilder()
    with builder.function("main", [x]):
        with builder.dataflow():
            conv = relax.op.nn.conv2d(
                x, relax.const(weight), padding=padding, groups=groups, dilation=dilation
            )
            out = builder.emit_output(conv)
        builder.emit_func_output(out)
    return builder.get()


@pytest.mark.parametrize(
    ("kernel", "padding", "groups", "dilation"),
    [(1, 1, 1, 1), (1, 1, 4, 1), (1, 1, 2, 1), (3, 3, 1, 1), (2, 3, 4, 2)],
    ids=["conv-1x1-pad1", "depthwise-1x1-pad1", "grouped-1x1-pad1", "conv-3x3-pad3", "dilated"],
)
def test_a_convolution_padded_by_its_filter_size_stays_on_the_host(
    kernel, padding, groups, dilation
):
    """NNAPI's convolutions fail when a padding is not smaller than the filter's effective size
    (dilation * (k - 1) + 1); the partition refuses them as pooling does."""
    mod = _conv_module(kernel, padding, groups, dilation)
    report = _agree(mod, [RNG.standard_normal((1, 4, 6, 6)).astype("float32")])
    (refusal,) = [r for r in report.refusals if r.operator == "relax.nn.conv2d"]
    assert refusal.kind == tvm_nnapi.RefusalKind.ATTRIBUTE
    assert "is not smaller than the effective filter size" in refusal.reason


def test_a_convolution_padded_less_than_its_filter_is_offloaded():
    mod = _conv_module(3, 2, 1)
    report = _agree(mod, [RNG.standard_normal((1, 4, 6, 6)).astype("float32")])
    assert report.refusals == [] and report.subgraphs


def test_an_intermediate_used_outside_a_fused_pattern_is_not_fused():
    """matmul + bias whose un-biased result is used again: the composite would need a second
    output; the operators are offloaded one by one instead."""
    weight, bias = RNG.standard_normal((8, 8)), RNG.standard_normal(8)

    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 8), "float32")):
            with R.dataflow():
                lv = R.matmul(x, R.const(weight.astype("float32")))
                lv1 = R.add(lv, R.const(bias.astype("float32")))
                lv2 = R.tanh(lv)
                out = R.add(lv1, lv2)
                R.output(out)
            return out

    report = _agree(Module, [RNG.standard_normal((2, 8)).astype("float32")])
    assert report.refusals == [] and len(report.subgraphs) == 1


def test_an_offloadable_operator_of_dead_code_leaves_no_subgraph_behind():
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 8), "float32")):
            with R.dataflow():
                a = R.exp(x)
                _dead = R.cumsum(a, axis=1)
                out = R.add(x, x)
                R.output(out)
            return out

    report = _agree(Module, [RNG.standard_normal((2, 8)).astype("float32")])
    assert report.subgraphs == ["main_nnapi_0"]
    assert sorted(g.name_hint for g in report.module.functions) == ["main", "main_nnapi_0"]


def test_an_operator_of_constants_is_not_a_subgraph():
    """Unprepared (no constant folding), an operator whose arguments are all constants would be
    an NNAPI model without inputs, which NNAPI refuses; it stays on the host with the reason
    and its consumer is offloaded."""

    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 2), "float32")):
            with R.dataflow():
                c = R.exp(R.const(np.ones((2, 2), "float32")))
                out = R.add(x, c)
                R.output(out)
            return out

    options = tvm_nnapi.PartitionOptions(prepare=False)
    before = mock_nnapi.counter("executions_completed")
    report = _agree(Module, [np.ones((2, 2), np.float32)], options)
    assert mock_nnapi.counter("executions_completed") > before
    (refusal,) = report.refusals
    assert refusal.operator == "relax.exp" and "reads only constants" in refusal.reason


def test_nnapi_refuses_a_model_without_inputs_by_name():
    """What the partition avoids, at the runtime: NNAPI's BAD_DATA for an empty input list,
    named, not a null-pointer result code."""
    builder = GraphBuilder("constants_only")
    a = builder.add_constant(np.full((2, 2), 1.5, np.float32))
    b = builder.add_constant(np.full((2, 2), 2.0, np.float32))
    out = builder.add_tensor("float32", [2, 2])
    builder.add_operation("ADD", [a, b, builder.add_scalar("INT32", 0)], [out])
    builder.outputs.append(out)
    with pytest.raises(RuntimeError, match=r"ANEURALNETWORKS_BAD_DATA.*input list is empty"):
        MockTarget().run_graph(
            builder.to_json(), bytes(builder.constants), [], [((2, 2), np.float32)]
        )


@pytest.mark.parametrize("operator", ["permute_dims", "strided_slice", "concat"])
def test_int32_data_movement_runs_where_nnapi_takes_it(operator):
    """int32 tensors through the data-movement operators: offloaded where NNAPI defines the
    operation for TENSOR_INT32, kept on the host with the reason where it does not."""
    x = relax.Var("x", relax.TensorType((2, 3, 4), "int32"))
    builder = relax.BlockBuilder()
    with builder.function("main", [x]):
        with builder.dataflow():
            if operator == "permute_dims":
                value = relax.op.permute_dims(x, [2, 0, 1])
            elif operator == "strided_slice":
                value = relax.op.strided_slice(x, axes=[2], begin=[1], end=[3])
            else:
                value = relax.op.concat([x, x], axis=1)
            out = builder.emit_output(value)
        builder.emit_func_output(out)
    mod = builder.get()
    inputs = [RNG.integers(-100, 100, (2, 3, 4)).astype("int32")]
    report = tvm_nnapi.partition_with_report(mod)
    result, _ = run_nnapi(mod, "main", inputs)
    np.testing.assert_array_equal(result, run_host(mod, "main", inputs))
    for refusal in report.refusals:
        assert refusal.kind == tvm_nnapi.RefusalKind.DTYPE and "int32" in refusal.reason


@I.ir_module
class _Branching:
    @R.function
    def main(c: R.Tensor((), "bool"), d: R.Tensor((), "bool"), x: R.Tensor((2, 3), "float32")):
        z = R.exp(x)
        if c:
            if d:
                y = R.add(z, z)
            else:
                y = R.subtract(z, x)
        else:
            y = R.multiply(z, z)
        w = R.nn.relu(y)
        return w


@pytest.mark.parametrize(("c", "d"), [(True, True), (True, False), (False, True)])
def test_control_flow_stays_on_the_host_and_the_rest_is_offloaded(c, d):
    """An If (nested too) runs on the host with both branches; the operators before and after
    it are NNAPI subgraphs; every path gives the host's answer."""
    report = tvm_nnapi.partition_with_report(_Branching)
    (refusal,) = report.refusals
    assert refusal.operator == "relax.If" and "run on the host" in refusal.reason
    assert len(report.subgraphs) == 2
    inputs = [np.array(c), np.array(d), RNG.standard_normal((2, 3)).astype("float32")]
    result, executions = run_nnapi(_Branching, "main", inputs)
    assert executions == 2
    np.testing.assert_allclose(result, run_host(_Branching, "main", inputs), rtol=1e-5)


def test_an_onnx_model_with_nested_if_runs(tmp_path):
    onnx = pytest.importorskip("onnx", reason="ONNX models need the onnx package: pip install onnx")
    from onnx import TensorProto, helper

    from .cli_runner import run_cli

    def branch(depth: int, name: str):
        out = f"{name}_out"
        if depth == 0:
            node = helper.make_node("Neg", ["x"], [out], name=f"{name}_neg")
        else:
            node = helper.make_node(
                "If",
                ["c"],
                [out],
                name=f"{name}_if",
                then_branch=branch(depth - 1, f"{name}t"),
                else_branch=branch(depth - 1, f"{name}e"),
            )
        return helper.make_graph(
            [node], name, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, [2, 3])]
        )

    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x0"], ["x"], name="relu"),
            helper.make_node(
                "If",
                ["c"],
                ["y"],
                name="top",
                then_branch=branch(2, "t"),
                else_branch=branch(2, "e"),
            ),
        ],
        "nested_if",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x0", TensorProto.FLOAT, [2, 3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    path = tmp_path / "nested_if.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    completed = run_cli("run", str(path), "--trace", "-")
    assert completed.returncode == 0, completed.stderr
    assert "relax.If" in completed.stdout and "OK: results match" in completed.stdout


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_program_that_is_one_subgraph_builds_runs_and_frees_twenty_times():
    """A program whose whole body is one NNAPI subgraph has no TIR function: its executable
    holds no empty C module, so a VM runs it as built (no C compiler, no shared library loaded
    for good with copies of the NNAPI modules), and nothing stays alive between rounds."""
    import gc

    from mock_nnapi import control

    weight = RNG.standard_normal((4, 3, 3, 3)).astype("float32")

    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((1, 3, 16, 16), "float32")):
            with R.dataflow():
                y = R.nn.relu(R.nn.conv2d(x, R.const(weight), padding=1))
                R.output(y)
            return y

    x = RNG.standard_normal((1, 3, 16, 16)).astype("float32")
    expected = run_host(Module, "main", [x])
    gc.collect()
    before = control.live_objects()["total"]
    resident = []
    for _ in range(20):
        executable = tvm_nnapi.build(tvm_nnapi.partition(Module))
        assert [m.kind for m in executable.mod.imports] == ["nnapi"]
        assert executable.jit() is executable.mod  # runnable as built
        vm = relax.VirtualMachine(executable, tvm.cpu())
        out = vm["main"](tvm.runtime.tensor(x)).numpy()
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
        del vm, executable, out
        gc.collect()
        assert control.live_objects()["total"] == before
        resident.append(_resident_bytes())
    assert resident[-1] - resident[4] < 32 * 2**20, resident
