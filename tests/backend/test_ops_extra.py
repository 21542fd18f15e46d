# SPDX-License-Identifier: Apache-2.0
"""Differential tests for the operator forms of torchvision's CV networks as TVM's PyTorch
frontend imports them: hardswish / hardsigmoid chains, squeeze-and-excitation blocks, linear and
conv biases added on the left. Each case is partitioned, lowered to NNAPI, run on the mock and
compared with TVM's own llvm build of the same module; every case asserts the NNAPI operations
that must (and must not) have run."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import tvm
from tvm import relax

import mock_nnapi
import tvm_nnapi
from tvm_nnapi.compiler.patterns import FEATURE_LEVEL_3
from tvm_nnapi.models import mobilenet_v2
from tvm_nnapi.models.torchvision_models import fold_batch_norm_into_conv, torchvision_model

from .helpers import OpCase as Case
from .helpers import run_host, run_op_case

RNG = np.random.default_rng(4321)
INF = float("inf")


def rand(*shape: int, dtype: str = "float32", low: float = -5.0, high: float = 5.0) -> np.ndarray:
    # [-5, 5] covers both saturated ends of relu6(x + 3) and the linear part in between.
    return RNG.uniform(low, high, shape).astype(dtype)


def c(array: np.ndarray | float, dtype: str = "float32") -> relax.Expr:
    return relax.const(np.asarray(array, dtype=dtype))


op = relax.op


def relu6_frontend(x: relax.Expr) -> relax.Expr:
    """relu6 as the frontend writes it without decompositions: one clip."""
    return op.clip(x, 0, 6)


def relu6_decomposed(x: relax.Expr) -> relax.Expr:
    """relu6 after torch.export's decompositions: clamp_min then clamp_max."""
    return op.clip(op.clip(x, 0, INF), -INF, 6)


def hardsigmoid(x: relax.Expr, relu6=relu6_frontend, dtype: str = "float32") -> relax.Expr:
    return op.divide(relu6(op.add(x, c(3, dtype))), c(6, dtype))


def hardswish_decomposed(x: relax.Expr) -> relax.Expr:
    """torch.export's decomposition: x * relu6(x + 3) / 6, the divide last."""
    return op.divide(op.multiply(x, relu6_decomposed(op.add(x, c(3)))), c(6))


def squeeze_excitation(x: relax.Expr, channels: int, squeezed: int, gate) -> relax.Expr:
    """MobileNetV3 / EfficientNet SE block: mean, 1x1 conv + bias + relu, 1x1 conv + bias, gate,
    multiply broadcast over H and W."""
    s = op.mean(x, axis=[-1, -2], keepdims=True)
    s = op.add(
        op.nn.conv2d(s, c(rand(squeezed, channels, 1, 1, low=-1, high=1))),
        c(rand(1, squeezed, 1, 1)),
    )
    s = op.nn.relu(s)
    s = op.add(
        op.nn.conv2d(s, c(rand(channels, squeezed, 1, 1, low=-1, high=1))),
        c(rand(1, channels, 1, 1)),
    )
    return op.multiply(gate(s), x)


CASES = [
    # hardswish: every form the frontend emits becomes one HARD_SWISH
    Case(
        "hardswish_frontend",
        lambda p: op.multiply(p[0], hardsigmoid(p[0])),
        [rand(1, 8, 5, 5)],
        ["HARD_SWISH"],
        ["ADD", "DIV", "MUL"],
    ),
    Case(
        "hardswish_decomposed",
        lambda p: hardswish_decomposed(p[0]),
        [rand(1, 8, 5, 5)],
        ["HARD_SWISH"],
        ["ADD", "DIV", "MUL", "RELU", "MAXIMUM", "MINIMUM"],
    ),
    Case(
        "hardswish_operands_swapped_scale_by_multiply",
        lambda p: op.multiply(
            op.multiply(relu6_decomposed(op.add(c(3), p[0])), p[0]), c(1.0 / 6.0)
        ),
        [rand(2, 16)],
        ["HARD_SWISH"],
        ["ADD", "MUL"],
    ),
    Case(
        "hardswish_f16",
        lambda p: op.multiply(p[0], hardsigmoid(p[0], dtype="float16")),
        [rand(1, 4, 3, 3, dtype="float16")],
        ["HARD_SWISH"],
        rtol=2e-3,
        atol=2e-3,
    ),
    # hardsigmoid: ADD with a fused RELU6, then the scaling
    Case(
        "hardsigmoid_frontend",
        lambda p: hardsigmoid(p[0]),
        [rand(1, 8, 1, 1)],
        ["ADD", "DIV"],
        ["HARD_SWISH", "RELU6", "MAXIMUM", "MINIMUM"],
    ),
    Case(
        "hardsigmoid_decomposed_scale_by_multiply",
        lambda p: op.multiply(relu6_decomposed(op.add(p[0], c(3))), c(1.0 / 6.0)),
        [rand(3, 7)],
        ["ADD", "MUL"],
        ["HARD_SWISH", "RELU", "MAXIMUM", "MINIMUM", "DIV"],
    ),
    # squeeze-and-excitation: the gate multiplies another tensor, so it is no hardswish
    Case(
        "se_block_hardsigmoid",
        lambda p: squeeze_excitation(p[0], 8, 4, lambda s: hardsigmoid(s, relu6_decomposed)),
        [rand(1, 8, 6, 6)],
        ["MEAN", "CONV_2D", "ADD", "DIV", "MUL"],
        ["HARD_SWISH"],
    ),
    Case(
        "se_block_sigmoid",
        lambda p: squeeze_excitation(p[0], 8, 2, op.sigmoid),
        [rand(1, 8, 6, 6)],
        ["MEAN", "CONV_2D", "LOGISTIC", "MUL"],
    ),
    # biases on the left, as the frontend writes linear layers: fused into the operation
    Case(
        "linear_bias_on_the_left",
        lambda p: op.add(c(rand(6)), op.matmul(p[0], op.permute_dims(c(rand(6, 8)), [1, 0]))),
        [rand(1, 8)],
        ["FULLY_CONNECTED"],
        ["ADD"],
    ),
    Case(
        "conv_bias_on_the_left_relu6",
        lambda p: op.clip(
            op.add(c(rand(1, 4, 1, 1)), op.nn.conv2d(p[0], c(rand(4, 3, 1, 1)))), 0, 6
        ),
        [rand(1, 3, 5, 5)],
        ["CONV_2D"],
        ["ADD", "RELU6"],
    ),
    # batch_norm whose statistics are run-time tensors (weights kept as parameters)
    Case(
        "batch_norm_runtime_statistics",
        lambda p: op.nn.batch_norm(p[0], p[1], p[2], p[3], p[4], axis=1, training=False)[0],
        [rand(2, 3, 4, 4), rand(3), rand(3), rand(3), rand(3, low=0.5, high=2.0)],
        ["ADD", "RSQRT", "MUL", "SUB", "RESHAPE"],
    ),
    Case(
        "batch_norm_runtime_mixed_rank2_no_scale",
        lambda p: op.nn.batch_norm(
            p[0],
            c(rand(5)),
            p[1],
            c(rand(5)),
            p[2],
            axis=1,
            epsilon=1e-3,
            scale=False,
            training=False,
        )[0],
        [rand(3, 5), rand(5), rand(5, low=0.5, high=2.0)],
        ["ADD", "RSQRT", "MUL", "SUB"],
        ["RESHAPE"],
    ),
    # what stays unfused: the parts still run on NNAPI, one by one
    Case(
        "hardswish_at_feature_level_3",
        lambda p: op.multiply(p[0], hardsigmoid(p[0])),
        [rand(2, 8)],
        ["ADD", "DIV", "MUL"],
        ["HARD_SWISH"],
        options=tvm_nnapi.PartitionOptions(feature_level=FEATURE_LEVEL_3),
    ),
    Case(
        "not_a_hardswish_offset_2",
        lambda p: op.multiply(p[0], op.divide(relu6_frontend(op.add(p[0], c(2))), c(6))),
        [rand(2, 8)],
        ["ADD", "RELU6", "DIV", "MUL"],
        ["HARD_SWISH"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_operator_matches_llvm_and_runs_on_nnapi(case: Case):
    report = run_op_case(case)
    assert len(report.subgraphs) == 1, [str(r) for r in report.refusals]


def _hardswish_refusals(mod: tvm.IRModule, options=None) -> list[tvm_nnapi.Refusal]:
    report = tvm_nnapi.partition_with_report(mod, options)
    return [r for r in report.refusals if "hardswish" in r.reason]


def test_hardswish_refusals_are_typed():
    at_fl3 = next(c for c in CASES if c.name == "hardswish_at_feature_level_3")
    (refusal,) = _hardswish_refusals(at_fl3.module(), at_fl3.options)
    assert refusal.kind == tvm_nnapi.RefusalKind.FEATURE_LEVEL
    offset_2 = next(c for c in CASES if c.name == "not_a_hardswish_offset_2")
    (refusal,) = _hardswish_refusals(offset_2.module())
    assert refusal.kind == tvm_nnapi.RefusalKind.ATTRIBUTE
    assert "not 3" in refusal.reason


def test_hardswish_with_a_leaking_intermediate_is_not_fused():
    # relu6(x + 3) is also an output: fusing the chain would hide it, so the parts run one by one.
    def build(p):
        gate = relu6_frontend(op.add(p[0], c(3)))
        return relax.Tuple([op.multiply(p[0], op.divide(gate, c(6))), gate])

    x = rand(2, 8)
    builder = relax.BlockBuilder()
    param = relax.Var("x0", relax.TensorType([2, 8], "float32"))
    with builder.function("main", [param]):
        with builder.dataflow():
            out = builder.emit_output(build([param]))
        builder.emit_func_output(out)
    mod = builder.get()
    refusals = _hardswish_refusals(mod)
    assert refusals and all(r.kind == tvm_nnapi.RefusalKind.ATTRIBUTE for r in refusals)
    vm = relax.VirtualMachine(tvm_nnapi.build(mod), tvm.cpu())
    before = mock_nnapi.operation_count("HARD_SWISH")
    result = vm["main"](tvm.runtime.tensor(x))
    assert mock_nnapi.operation_count("HARD_SWISH") == before
    host = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())["main"](
        tvm.runtime.tensor(x)
    )
    for got, want in zip(result, host, strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_fold_batch_norm_into_conv_matches_the_unfolded_network():
    mod, info = mobilenet_v2(width=0.35, resolution=32, num_classes=10)
    folded = fold_batch_norm_into_conv(mod)
    text = folded.script()
    assert "batch_norm" not in text
    assert text.count("R.nn.conv2d(") == mod.script().count("R.nn.conv2d(")
    report = tvm_nnapi.partition_with_report(folded)
    assert report.refusals == [] and len(report.subgraphs) == 1
    image = np.random.default_rng(0).standard_normal(info["input_shape"]).astype(np.float32)
    vm = relax.VirtualMachine(tvm_nnapi.build(report.module), tvm.cpu())
    before = {name: mock_nnapi.operation_count(name) for name in ("CONV_2D", "MUL", "ADD")}
    logits = vm["main"](tvm.runtime.tensor(image)).numpy()
    # Every batch norm became the convolution's bias: no MUL is left, ADD only for residuals.
    assert mock_nnapi.operation_count("CONV_2D") - before["CONV_2D"] == 35
    assert mock_nnapi.operation_count("MUL") == before["MUL"]
    assert mock_nnapi.operation_count("ADD") - before["ADD"] == 10  # the residual adds
    expected = run_host(mod, "main", [image])  # the unfolded module on llvm
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)


def test_torchvision_models_name_the_models_extra_when_torch_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchvision", None)  # as if not installed
    with pytest.raises(ImportError, match=r"install the `models` extra"):
        torchvision_model("mobilenet_v2")
