# SPDX-License-Identifier: Apache-2.0
"""NCHW convolutions made NHWC once per model (tvm_nnapi/compiler/layout.py): the prepared graph
keeps one transpose where a chain of convolutions and layout-free operators starts and one where
an NCHW tensor is needed again, and every result equals host llvm's build of the original
NCHW graph."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.relax import op

import mock_nnapi
import tvm_nnapi
from tvm_nnapi.compiler.layout import nhwc_convolutions
from tvm_nnapi.compiler.prepare import prepare

from .helpers import run_host, to_tvm

RNG = np.random.default_rng(2126)


def rand(*shape: int) -> np.ndarray:
    return RNG.uniform(-1.0, 1.0, shape).astype("float32")


def c(array: np.ndarray) -> relax.Constant:
    return relax.const(array, str(array.dtype))


def module(build: Callable[[relax.Var], relax.Expr], shape: tuple[int, ...]) -> tvm.IRModule:
    builder = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(list(shape), "float32"))
    with builder.function("main", [x]):
        with builder.dataflow():
            out = builder.emit_output(build(x))
        builder.emit_func_output(out)
    return builder.get()


def operators(mod: tvm.IRModule) -> Counter:
    counts: Counter = Counter()

    def visit(expr: relax.Expr) -> None:
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
            counts[str(expr.op.name)] += 1

    relax.analysis.post_order_visit(mod["main"], visit)
    return counts


def conv_layouts(mod: tvm.IRModule) -> list[str]:
    layouts = []

    def visit(expr: relax.Expr) -> None:
        if isinstance(expr, relax.Call) and getattr(expr.op, "name", "") == "relax.nn.conv2d":
            layouts.append(str(expr.attrs.data_layout))

    relax.analysis.post_order_visit(mod["main"], visit)
    return layouts


def inverted_residual(x: relax.Expr) -> relax.Expr:
    """A MobileNetV2 block with a squeeze-excite (MobileNetV3) and a residual add."""
    y = op.add(op.nn.conv2d(x, c(rand(16, 8, 1, 1))), c(rand(1, 16, 1, 1)))
    y = op.clip(y, 0.0, 6.0)
    y = op.nn.conv2d(y, c(rand(16, 1, 3, 3)), padding=(1, 1), groups=16)
    y = op.nn.relu(op.add(y, c(rand(1, 16, 1, 1))))
    squeezed = op.mean(y, [2, 3], keepdims=True)
    scale = op.sigmoid(
        op.nn.conv2d(op.nn.relu(op.nn.conv2d(squeezed, c(rand(4, 16, 1, 1)))), c(rand(16, 4, 1, 1)))
    )
    y = op.multiply(y, scale)
    y = op.nn.conv2d(y, c(rand(8, 16, 1, 1)))
    return op.add(x, y)


def check(mod: tvm.IRModule, x: np.ndarray, transposes: int) -> tvm.IRModule:
    """Builds ``mod`` for NNAPI, runs it on the mock and compares with host llvm's build of the
    original ``mod``; ``transposes`` TRANSPOSE operations must run. Returns the prepared module."""
    prepared = prepare(mod)
    assert "NCHW" not in conv_layouts(prepared)
    assert operators(prepared)["relax.permute_dims"] == transposes
    report = tvm_nnapi.partition_with_report(mod)
    assert tvm_nnapi.offload_summary(report.module).host_operators == 0, report.refusals
    vm = relax.VirtualMachine(tvm_nnapi.build(report.module), tvm.cpu())
    before = mock_nnapi.operation_count("TRANSPOSE")
    result = vm["main"](*to_tvm([x])).numpy()
    assert mock_nnapi.operation_count("TRANSPOSE") - before == transposes
    np.testing.assert_allclose(result, run_host(mod, "main", [x]), rtol=1e-5, atol=1e-5)
    return prepared


def test_chain_of_blocks_transposes_once_at_each_end() -> None:
    mod = module(lambda x: inverted_residual(inverted_residual(x)), (1, 8, 10, 12))
    check(mod, rand(1, 8, 10, 12), transposes=2)


def test_global_pool_without_keepdims_ends_the_chain_without_a_transpose() -> None:
    def build(x: relax.Expr) -> relax.Expr:
        y = op.mean(inverted_residual(x), [2, 3], keepdims=False)
        return op.matmul(y, c(rand(8, 5)))

    check(module(build, (1, 8, 7, 7)), rand(1, 8, 7, 7), transposes=1)


@pytest.mark.parametrize("flatten", [False, True])
def test_reshape_of_a_pooled_vector_needs_no_transpose(flatten: bool) -> None:
    def build(x: relax.Expr) -> relax.Expr:
        y = op.mean(inverted_residual(x), [2, 3], keepdims=True)
        y = op.reshape(y, (1, 8)) if flatten is False else relax.op.flatten(y)
        return op.matmul(y, c(rand(8, 5)))

    check(module(build, (1, 8, 7, 7)), rand(1, 8, 7, 7), transposes=1)


def test_reshape_of_a_feature_map_gets_the_nchw_tensor() -> None:
    def build(x: relax.Expr) -> relax.Expr:
        return op.reshape(op.nn.conv2d(x, c(rand(4, 3, 1, 1))), (1, 4, 36))

    check(module(build, (1, 3, 6, 6)), rand(1, 3, 6, 6), transposes=2)


def test_pooling_and_constants_of_every_rank_follow_the_layout() -> None:
    def build(x: relax.Expr) -> relax.Expr:
        y = op.nn.conv2d(x, c(rand(6, 3, 3, 3)), padding=(1, 1))
        y = op.add(y, c(rand(9)))  # broadcast along W: becomes [1, 1, 9, 1] in NHWC
        y = op.multiply(y, c(rand(8, 9)))  # along H and W
        y = op.subtract(y, c(rand(6, 1, 1)))  # along C (rank 3)
        y = op.divide(y, c(np.array(2.0, "float32")))  # a scalar
        y = op.nn.max_pool2d(y, (2, 2), strides=(2, 2))
        y = op.nn.avg_pool2d(y, (3, 3), padding=(1, 1), count_include_pad=False)
        return op.nn.adaptive_avg_pool2d(op.nn.conv2d(y, c(rand(4, 6, 1, 1))), (1, 1))

    prepared = check(module(build, (1, 3, 8, 9)), rand(1, 3, 8, 9), transposes=2)
    assert operators(prepared)["relax.nn.max_pool2d"] == 1


def test_an_unknown_consumer_gets_the_nchw_tensor() -> None:
    def build(x: relax.Expr) -> relax.Expr:
        y = op.nn.relu(op.nn.conv2d(x, c(rand(6, 3, 3, 3))))
        z = op.nn.softmax(y, axis=1)  # not layout-free: NCHW again
        return op.add(op.nn.conv2d(z, c(rand(6, 6, 1, 1))), y)

    # x in; y back to NCHW for the softmax; z in again; the result out.
    check(module(build, (1, 3, 8, 8)), rand(1, 3, 8, 8), transposes=4)


def test_a_binary_operand_of_unknown_layout_keeps_nchw() -> None:
    builder = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([1, 3, 6, 6], "float32"))
    w = relax.Var("w", relax.TensorType([1, 4, 6, 6], "float32"))
    with builder.function("main", [x, w]):
        with builder.dataflow():
            y = op.nn.conv2d(x, c(rand(4, 3, 1, 1)))
            out = builder.emit_output(op.multiply(y, w))
        builder.emit_func_output(out)
    mod = builder.get()
    prepared = prepare(mod)
    assert conv_layouts(prepared) == ["NHWC"]
    assert operators(prepared)["relax.permute_dims"] == 2  # x in, y out before the multiply
    inputs = [rand(1, 3, 6, 6), rand(1, 4, 6, 6)]
    vm = relax.VirtualMachine(tvm_nnapi.build(mod), tvm.cpu())
    np.testing.assert_allclose(
        vm["main"](*to_tvm(inputs)).numpy(), run_host(mod, "main", inputs), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("case", ["variable filter", "int8", "already NHWC"])
def test_convolutions_left_as_they_are(case: str) -> None:
    builder = relax.BlockBuilder()
    shape = [1, 6, 6, 3] if case == "already NHWC" else [1, 3, 6, 6]
    x = relax.Var("x", relax.TensorType(shape, "int8" if case == "int8" else "float32"))
    w = relax.Var("w", relax.TensorType([4, 3, 1, 1], "float32"))
    with builder.function("main", [x, w]):
        with builder.dataflow():
            if case == "variable filter":
                y = op.nn.conv2d(x, w)
            elif case == "int8":
                y = op.nn.conv2d(x, c(rand(4, 3, 1, 1).astype("int8")), out_dtype="int32")
            else:
                y = op.nn.conv2d(x, c(rand(3, 3, 3, 4)), data_layout="NHWC", kernel_layout="HWIO")
            out = builder.emit_output(y)
        builder.emit_func_output(out)
    func = builder.get()["main"]
    assert nhwc_convolutions(func) is func


def test_option_off_keeps_nchw() -> None:
    mod = module(inverted_residual, (1, 8, 6, 6))
    options = tvm_nnapi.PartitionOptions(nhwc=False)
    prepared = prepare(mod, nhwc=False)
    assert set(conv_layouts(prepared)) == {"NCHW"}
    assert operators(prepared)["relax.permute_dims"] == 0
    x = rand(1, 8, 6, 6)
    vm = relax.VirtualMachine(tvm_nnapi.build(mod, options=options), tvm.cpu())
    before = mock_nnapi.operation_count("TRANSPOSE")
    result = vm["main"](*to_tvm([x])).numpy()
    assert mock_nnapi.operation_count("TRANSPOSE") == before
    np.testing.assert_allclose(result, run_host(mod, "main", [x]), rtol=1e-5, atol=1e-5)


def test_bindings_outside_dataflow_blocks_are_left_as_they_are() -> None:
    builder = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([1, 3, 6, 6], "float32"))
    with builder.function("main", [x]):
        y = builder.emit(op.nn.relu(op.nn.conv2d(x, c(rand(4, 3, 1, 1)))))
        builder.emit_func_output(y)
    mod = builder.get()
    prepared = prepare(mod)
    assert set(conv_layouts(prepared)) == {"NCHW"}
    x_value = rand(1, 3, 6, 6)
    vm = relax.VirtualMachine(tvm_nnapi.build(mod), tvm.cpu())
    np.testing.assert_allclose(
        vm["main"](*to_tvm([x_value])).numpy(), run_host(mod, "main", [x_value]), atol=1e-5
    )
