# SPDX-License-Identifier: Apache-2.0
"""`tvm-nnapi run --layerwise`, run as a user runs it (a fresh process): it compares every NNAPI
operator with the host and names the one whose results diverge (a numeric fault injected into
the mock)."""

from __future__ import annotations

import json
import re

import pytest

from .cli_runner import run_cli


def test_layerwise_without_a_divergence_compares_every_operator(tmp_path):
    completed = run_cli("run", "mobilenet_v2_small", "--layerwise", "--trace", "-", "--json")
    assert completed.returncode == 0, completed.stderr
    layers = json.loads(completed.stdout)["run"]["layerwise"]
    assert layers["first_divergence"] is None and layers["operators_over_tolerance"] == 0
    operations = {op for row in layers["rows"] for op in row["nnapi_operations"]}
    assert {"CONV_2D", "DEPTHWISE_CONV_2D"} <= operations
    assert layers["operators_compared"] == len(layers["rows"]) > 50


FAULT = "from mock_nnapi import control\ncontrol.inject_operation_fault('SUB', 0.5)\n"


def test_layerwise_names_the_operator_an_injected_fault_perturbs(tmp_path):
    report = tmp_path / "run.html"
    argv = ["run", "residual", "--layerwise", "--trace", "-", "--report", str(report)]
    completed = run_cli(*argv, "--json", setup=FAULT)
    assert completed.returncode == 1, completed.stderr  # the outputs differ too
    document = json.loads(completed.stdout)
    first = document["run"]["layerwise"]["first_divergence"]
    assert first["subgraph"] == "main_nnapi_1" and first["nnapi_operations"] == ["SUB"]
    assert first["relax_operators"] == ["relax.subtract"]
    assert first["max_abs_error"] == pytest.approx(0.5, rel=1e-6)
    # Operators before it (main_nnapi_0, and the MUL of main_nnapi_1) are within tolerance.
    rows = document["run"]["layerwise"]["rows"]
    assert [row["passed"] for row in rows] == [True, True, True, False]
    # The graph node of that operator is marked, and the report outlines it.
    nodes = document["explain"]["graph"]["nodes"]
    (marked,) = [n for n in nodes if (n.get("layerwise") or {}).get("first_divergence")]
    assert marked["subgraph"] == "main_nnapi_1" and marked["label"] == "subtract"
    page = report.read_text()
    assert "Layer-wise comparison" in page and 'stroke="#dc2626"' in page
    # The terminal names it in one line.
    text = run_cli(*argv[:-2], setup=FAULT).stdout
    (line,) = [s for s in text.splitlines() if s.startswith("layer-wise: first operator")]
    assert "main_nnapi_1 call 0" in line and "subtract -> NNAPI SUB" in line


def test_layerwise_refuses_llms_with_a_message():
    completed = run_cli(
        "run", "llm:tiny-llama", "--shapes", "seq_len=4", "--layerwise", "--trace", "-"
    )
    assert completed.returncode == 2
    assert "--layerwise" in completed.stderr and "not supported yet" in completed.stderr


MODEL_WITH_REPEATED_NAMES = '''
import tvm
from tvm import relax


def get_model():
    """A subgraph whose tuple of outputs is read by host code and then by a second subgraph,
    beside host code on another input, summed to a rank-0 result: partitioning leaves two
    variables named alike there."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([8, 8], "float32"))
    z = relax.Var("z", relax.TensorType([8, 8], "float32"))
    with bb.function("main", [x, z]):
        with bb.dataflow():
            a = bb.emit(relax.op.nn.relu(x))
            b = bb.emit(relax.op.tanh(a))
            c = bb.emit(relax.op.cumsum(z, axis=0))
            d = bb.emit(relax.op.cumsum(a, axis=1))
            e = bb.emit(relax.op.cumsum(b, axis=0))
            out = bb.emit_output(relax.op.sum(relax.op.add(relax.op.add(c, d), e)))
        bb.emit_func_output(out)
    return bb.get()
'''


def test_layerwise_feeds_each_subgraph_its_own_arguments(tmp_path):
    """The arguments of each subgraph call are found by variable, not by name (a partitioned
    function may hold two variables of one name): every composite agrees with the host."""
    path = tmp_path / "repeated_names.py"
    path.write_text(MODEL_WITH_REPEATED_NAMES)
    completed = run_cli("run", str(path), "--layerwise", "--trace", "-", "--json")
    assert completed.returncode == 0, completed.stderr
    layers = json.loads(completed.stdout)["run"]["layerwise"]
    assert len(layers["rows"]) >= 2
    assert layers["first_divergence"] is None, layers["rows"]
    # Rows name the bindings of the module's own main (not the subgraphs' local names), one
    # each: the two adds of equal shapes are told apart by their order.
    namespace: dict = {}
    exec(MODEL_WITH_REPEATED_NAMES, namespace)
    main = namespace["get_model"]()["main"]
    names = {b.var.name for block in main.body.blocks for b in block.bindings}
    nodes = [row["model_nodes"] for row in layers["rows"]]
    assert all(len(n) == 1 and n[0] in names for n in nodes), nodes
    assert len({n[0] for n in nodes}) == len(nodes), nodes


def test_layerwise_tells_variables_of_one_name_apart():
    """Every variable of the partitioned function renamed to one name: each subgraph call still
    gets its own arguments (a rank-0 value of the same name is not handed to a rank-3 input)."""
    import numpy as np
    from tvm import relax
    from tvm.relax.expr_functor import PyExprMutator, mutator

    import tvm_nnapi
    from tvm_nnapi.tools.layerwise import layerwise
    from tvm_nnapi.tools.sources import ModelSource

    namespace: dict = {}
    exec(MODEL_WITH_REPEATED_NAMES, namespace)
    module = namespace["get_model"]()
    partitioned = tvm_nnapi.partition(module)

    @mutator
    class OneName(PyExprMutator):
        def visit_var_binding_(self, binding):
            value = self.visit_expr(binding.value)
            kind = relax.DataflowVar if isinstance(binding.var, relax.DataflowVar) else relax.Var
            renamed = kind("v", binding.var.ty)
            self.builder_.emit_normalized(relax.VarBinding(renamed, value))
            self.set_var_remap(binding.var, renamed)

    rewriter = OneName(partitioned)
    gvar = partitioned.get_global_var("main")
    rewriter.builder_.update_func(gvar, rewriter.visit_expr(partitioned["main"]))
    renamed = rewriter.builder_.finalize()
    names = {b.var.name for block in renamed["main"].body.blocks for b in block.bindings}
    assert names == {"v"}
    source = ModelSource("one-name", "python", "test module", module, module)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal([8, 8]).astype("float32") for _ in range(2)]
    result = layerwise(source, renamed, inputs, "float32")
    assert len(result.rows) >= 2 and result.first_divergence is None, result.rows


# ---- a QDQ attention model (onnxruntime's quantize_static): rows named by the ONNX nodes --------


@pytest.fixture(scope="module")
def qdq_attention(tmp_path_factory):
    """A QDQ self-attention head saved as .onnx, and the names of its nodes; the scaling of
    the scores is left float (a float result between QDQ pairs)."""
    from .quantized_models import ATTENTION_NODES, attention, onnx, quantize_static

    float_model, inputs = attention()
    model = quantize_static(float_model, inputs, nodes_to_exclude=["scale_scores"])
    path = tmp_path_factory.mktemp("attention") / "attention_qdq.onnx"
    onnx.save(model, str(path))
    return path, {node.name for node in model.graph.node}, ATTENTION_NODES


def test_layerwise_on_a_qdq_attention_model_names_its_onnx_nodes(qdq_attention, tmp_path):
    path, onnx_names, compute_nodes = qdq_attention
    report, result = tmp_path / "attention.html", tmp_path / "result.json"
    argv = ["run", str(path), "--layerwise", "--trace", "-", "--report", str(report)]
    completed = run_cli(*argv, "--result", str(result), columns=200)
    assert completed.returncode == 0, completed.stderr
    layers = json.loads(result.read_text())["layerwise"]
    rows = layers["rows"]
    assert layers["first_divergence"] is None and len(rows) > 8
    # Every row names nodes of the ONNX model, and each compute node has its own row (its
    # quantize/dequantize wrappers are not named beside it).
    assert all(row["model_nodes"] and set(row["model_nodes"]) <= onnx_names for row in rows)
    by_node = {tuple(row["model_nodes"]): row for row in rows}
    for name in compute_nodes:
        assert (name,) in by_node, (name, [row["model_nodes"] for row in rows])
    assert "relax.matmul" in by_node[("scores",)]["relax_operators"]
    assert by_node[("scores",)]["nnapi_operations"].count("BATCH_MATMUL") == 1
    # A float result between QDQ pairs is judged with the float tolerance, not in steps.
    scale = by_node[("scale_scores",)]
    assert scale["max_error_steps"] is None and scale["tolerance"] == pytest.approx(1e-4)
    # The report: every row, the same units and verdicts as the terminal, labels cut between
    # operators with the compute operator kept.
    page = report.read_text()
    assert f"all {len(rows)} operators, in execution order" in page
    assert page.count("<code>q_proj</code>") == 1 and "2 steps (quant8)" in page
    assert "top-1 agrees with llvm</td><td>yes" in page and "2e+00" not in page
    labels = re.findall(r'font-weight="600" fill="[^"]*">([^<]*)<', page)
    assert labels.count("q8 matmul") == 6 and "q8 nn.softmax" in labels
    assert not any(label.startswith("dequantize + ") for label in labels)
    # The terminal says how many rows it shows, of how many, and where the rest are.
    text = completed.stdout
    assert f"8 of {len(rows)} operators shown" in text and "--report" in text
    assert "x_QuantizeLinear" in text and "2 steps (quant8)" in text


def test_layerwise_failing_inside_the_tool_exits_3_naming_the_model(
    qdq_attention, monkeypatch, capsys
):
    """An internal error of the comparison (here a ValueError, which bad input also raises)
    is the tool failing: exit 3 and one line naming the model file, not exit 2."""
    from tvm_nnapi.cli import main
    from tvm_nnapi.tools import layerwise

    path = qdq_attention[0]

    def broken(*args, **kwargs):
        raise ValueError("zip() argument 2 is shorter than argument 1")

    monkeypatch.setattr(layerwise, "_run_on_nnapi", broken)
    code = main(["run", str(path), "--layerwise", "--trace", "-", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 3, err
    assert err.count("\n") == 0 and err.startswith(f"error: {path}: run failed: --layerwise")
    assert "ValueError: zip() argument 2 is shorter" in err
    # Bad input is still exit 2.
    assert main(["run", str(path.with_name("missing.onnx")), "--layerwise", "--quiet"]) == 2
