# SPDX-License-Identifier: Apache-2.0
"""GELU written out as elementwise operators (tvm_nnapi/compiler/lowerings/gelu_chains.py), as
exporters write it in ONNX: matched and lowered as the GELU operators are, in fewer NNAPI
operations than the operators one by one, with results equal to the host build and
onnxruntime; a chain with another constant is not a GELU and runs through the erf lowering."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_nnapi
from tvm_nnapi.compiler.patterns import FEATURE_LEVEL_2
from tvm_nnapi.tools.explain import explain

from .helpers import run_host, run_nnapi

onnx = pytest.importorskip("onnx", reason="the exported GELUs are ONNX graphs (onnx package)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference of the ONNX GELUs")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx  # noqa: E402

SHAPE = [4, 24]
SQRT2 = math.sqrt(2.0)
BETA = math.sqrt(2.0 / math.pi)

# Each form: its nodes from "x" to "y" (kind, inputs, output), its constants and the record that
# must match it.
Node = tuple[str, list[str], str]
FORMS: dict[str, tuple[list[Node], dict[str, float], str]] = {
    # torch.onnx.export of nn.GELU()
    "torch": (
        [
            ("Div", ["x", "k"], "s"),
            ("Erf", ["s"], "e"),
            ("Add", ["e", "one"], "a"),
            ("Mul", ["x", "a"], "p"),
            ("Mul", ["p", "half"], "y"),
        ],
        {"k": SQRT2, "one": 1.0, "half": 0.5},
        "nnapi.gelu_erf_chain",
    ),
    # x * 0.5 * (1 + erf(x * 0.7071...)), constants on the left where the code wrote them
    "half_first": (
        [
            ("Mul", ["x", "half"], "h"),
            ("Mul", ["k", "x"], "s"),
            ("Erf", ["s"], "e"),
            ("Add", ["one", "e"], "a"),
            ("Mul", ["h", "a"], "y"),
        ],
        {"k": 1.0 / SQRT2, "one": 1.0, "half": 0.5},
        "nnapi.gelu_erf_chain",
    ),
    # x * (0.5 * (1 + erf(x / sqrt(2))))
    "half_inner": (
        [
            ("Div", ["x", "k"], "s"),
            ("Erf", ["s"], "e"),
            ("Add", ["e", "one"], "a"),
            ("Mul", ["half", "a"], "h"),
            ("Mul", ["x", "h"], "y"),
        ],
        {"k": SQRT2, "one": 1.0, "half": 0.5},
        "nnapi.gelu_erf_chain",
    ),
    # x * (erf(x / sqrt(2)) + 1) / 2
    "halved": (
        [
            ("Div", ["x", "k"], "s"),
            ("Erf", ["s"], "e"),
            ("Add", ["e", "one"], "a"),
            ("Mul", ["a", "x"], "p"),
            ("Div", ["p", "half"], "y"),
        ],
        {"k": SQRT2, "one": 1.0, "half": 2.0},
        "nnapi.gelu_erf_chain_halved",
    ),
    # torch.onnx.export of nn.GELU(approximate="tanh"): x * (x * x), half * (x * (1 + tanh))
    "tanh_torch": (
        [
            ("Mul", ["x", "x"], "x2"),
            ("Mul", ["x", "x2"], "x3"),
            ("Mul", ["kappa", "x3"], "kx3"),
            ("Add", ["x", "kx3"], "i"),
            ("Mul", ["k", "i"], "s"),
            ("Tanh", ["s"], "t"),
            ("Add", ["one", "t"], "a"),
            ("Mul", ["x", "a"], "p"),
            ("Mul", ["half", "p"], "y"),
        ],
        {"kappa": 0.044715, "k": BETA, "one": 1.0, "half": 0.5},
        "nnapi.gelu_tanh_chain",
    ),
    # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))), Hugging Face's gelu_new
    "tanh_pow": (
        [
            ("Pow", ["x", "three"], "x3"),
            ("Mul", ["x3", "kappa"], "kx3"),
            ("Add", ["kx3", "x"], "i"),
            ("Mul", ["i", "k"], "s"),
            ("Tanh", ["s"], "t"),
            ("Add", ["t", "one"], "a"),
            ("Mul", ["half", "x"], "h"),
            ("Mul", ["h", "a"], "y"),
        ],
        {"three": 3.0, "kappa": 0.044715, "k": BETA, "one": 1.0, "half": 0.5},
        "nnapi.gelu_tanh_chain",
    ),
}


def _model(nodes: list[Node], constants: dict[str, float]) -> Any:
    graph = helper.make_graph(
        [helper.make_node(kind, inputs, [out]) for kind, inputs, out in nodes],
        "gelu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)],
        [numpy_helper.from_array(np.array(v, "float32"), n) for n, v in constants.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def _composites(mod: tvm.IRModule) -> list[str]:
    """The composite (lowering record) names inside the NNAPI subgraphs of ``mod``."""
    return sorted(
        str(binding.value.attrs["Composite"])
        for name in tvm_nnapi.nnapi_subgraphs(mod)
        for block in mod[name].body.blocks
        for binding in block.bindings
        if isinstance(binding.value, relax.Function)
    )


def _nnapi_operations(mod: tvm.IRModule) -> Counter:
    """The NNAPI operations ``mod``'s subgraphs lower to, by name."""
    counts: Counter = Counter()
    for subgraph in explain(mod).subgraphs:
        counts.update(subgraph.nnapi_operations)
    return counts


def _inputs() -> np.ndarray:
    # Both tails and the centre of GELU: large negative values where it vanishes.
    return np.linspace(-9.0, 9.0, math.prod(SHAPE), dtype="float32").reshape(SHAPE)


def _check_against_references(model: Any, mod: tvm.IRModule) -> None:
    x = _inputs()
    got, executions = run_nnapi(mod, "main", [x])
    assert executions == 1
    np.testing.assert_allclose(got, run_host(mod, "main", [x]), rtol=1e-5, atol=2e-6)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("form", FORMS)
def test_an_exported_gelu_is_lowered_as_gelu(form):
    nodes, constants, record = FORMS[form]
    model = _model(nodes, constants)
    mod = from_onnx(model, keep_params_in_input=False)
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == [] and len(result.subgraphs) == 1
    assert _composites(result.module) == [record]
    # The same chain with a constant that is not GELU's: the operators one by one.
    near = from_onnx(_model(nodes, {**constants, "one": 1.001}), keep_params_in_input=False)
    near_result = tvm_nnapi.partition_with_report(near)
    assert record not in _composites(near_result.module)
    operations = _nnapi_operations(result.module)
    one_by_one = _nnapi_operations(near_result.module)
    if "erf" in record:
        # erf to float32 accuracy, then the rest: several times GELU's operations.
        assert operations.total() < one_by_one.total() / 2, (operations, one_by_one)
    else:
        # The tanh form one by one is the same arithmetic; as a chain x^3 is two MULs, never
        # a POW (feature level 3), so the whole GELU runs from feature level 1.
        assert set(operations) == {"MUL", "ADD", "TANH"}
        assert operations.total() <= one_by_one.total() + 1
        level2 = tvm_nnapi.PartitionOptions(feature_level=FEATURE_LEVEL_2)
        assert tvm_nnapi.partition_with_report(mod, level2).refusals == []
    _check_against_references(model, mod)


@pytest.mark.parametrize(
    ("name", "value"), [("half", 0.6), ("k", 1.5), ("one", 0.999)], ids=["half", "scale", "one"]
)
def test_a_chain_with_another_constant_is_not_a_gelu_and_runs_through_erf(name, value):
    nodes, constants, record = FORMS["torch"]
    model = _model(nodes, {**constants, name: value})
    mod = from_onnx(model, keep_params_in_input=False)
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == [] and len(result.subgraphs) == 1
    composites = _composites(result.module)
    assert record not in composites and "nnapi.erf" in composites
    _check_against_references(model, mod)


def test_a_tanh_chain_with_another_kappa_is_not_a_gelu():
    nodes, constants, record = FORMS["tanh_pow"]
    mod = from_onnx(_model(nodes, {**constants, "kappa": 0.05}), keep_params_in_input=False)
    result = tvm_nnapi.partition_with_report(mod)
    assert len(result.subgraphs) == 1 and record not in _composites(result.module)


def _transformer_block() -> Any:
    """One pre-norm transformer encoder block as torch.onnx.export writes it: layer norm,
    two-head attention (the 1/sqrt(d) scale a Div by a rank-0 constant), residual, layer norm,
    an MLP with the erf GELU as five nodes, residual."""
    tokens, width, heads = 6, 16, 2
    head = width // heads
    rng = np.random.default_rng(4)
    values: dict[str, np.ndarray] = {
        name: (rng.standard_normal(shape) * 0.3).astype("float32")
        for name, shape in {
            "wq": [width, width],
            "wk": [width, width],
            "wv": [width, width],
            "wo": [width, width],
            "w1": [width, 2 * width],
            "b1": [2 * width],
            "w2": [2 * width, width],
            "b2": [width],
        }.items()
    }
    values.update(
        gamma=np.ones(width, "float32"),
        beta=np.zeros(width, "float32"),
        heads_shape=np.array([tokens, heads, head], "int64"),
        merged_shape=np.array([tokens, width], "int64"),
        scale=np.array(math.sqrt(head), "float32"),
        sqrt2=np.array(SQRT2, "float32"),
        one=np.array(1.0, "float32"),
        half=np.array(0.5, "float32"),
    )
    node = helper.make_node
    nodes = [
        node("LayerNormalization", ["x", "gamma", "beta"], ["n1"], axis=-1, epsilon=1e-5),
        *(node("MatMul", ["n1", f"w{p}"], [p]) for p in "qkv"),
        *(node("Reshape", [p, "heads_shape"], [f"{p}h"]) for p in "qkv"),
        node("Transpose", ["qh"], ["qt"], perm=[1, 0, 2]),
        node("Transpose", ["kh"], ["kt"], perm=[1, 2, 0]),
        node("Transpose", ["vh"], ["vt"], perm=[1, 0, 2]),
        node("MatMul", ["qt", "kt"], ["scores"]),
        node("Div", ["scores", "scale"], ["scaled"]),
        node("Softmax", ["scaled"], ["attn"], axis=-1),
        node("MatMul", ["attn", "vt"], ["ctx"]),
        node("Transpose", ["ctx"], ["ctx_t"], perm=[1, 0, 2]),
        node("Reshape", ["ctx_t", "merged_shape"], ["merged"]),
        node("MatMul", ["merged", "wo"], ["o"]),
        node("Add", ["x", "o"], ["r1"]),
        node("LayerNormalization", ["r1", "gamma", "beta"], ["n2"], axis=-1, epsilon=1e-5),
        node("MatMul", ["n2", "w1"], ["h0"]),
        node("Add", ["h0", "b1"], ["h"]),
        node("Div", ["h", "sqrt2"], ["g_s"]),
        node("Erf", ["g_s"], ["g_e"]),
        node("Add", ["g_e", "one"], ["g_a"]),
        node("Mul", ["h", "g_a"], ["g_p"]),
        node("Mul", ["g_p", "half"], ["g"]),
        node("MatMul", ["g", "w2"], ["m0"]),
        node("Add", ["m0", "b2"], ["m"]),
        node("Add", ["r1", "m"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [tokens, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [tokens, width])],
        [numpy_helper.from_array(v, n) for n, v in values.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def test_an_exported_transformer_block_is_one_subgraph_with_gelu_lowered_as_gelu():
    model = _transformer_block()
    mod = from_onnx(model, keep_params_in_input=False)
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == [] and len(result.subgraphs) == 1, [str(r) for r in result.refusals]
    assert explain(mod, report=result).host_operators == {}
    composites = _composites(result.module)
    assert "nnapi.gelu_erf_chain" in composites and "nnapi.erf" not in composites
    x = np.random.default_rng(5).standard_normal([6, 16]).astype("float32")
    got, executions = run_nnapi(mod, "main", [x])
    assert executions == 1
    np.testing.assert_allclose(got, run_host(mod, "main", [x]), rtol=1e-5, atol=1e-5)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
