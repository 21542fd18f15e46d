# SPDX-License-Identifier: Apache-2.0
"""bench/precision_experiments.py on a small selection: CV rows per precision with the devices
the mock assigns, relaxed and W8A8 LLM prefill rows, the docs section, and the int8 rows of a
real onnxruntime QDQ model (present only when an NNAPI subgraph has a quant8 operand)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from tvm_nnapi.tools import precision_experiments as pe

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "snapdragon-8-gen-2"


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the experiments drive mock_nnapi's cost-only mode in process (mock target)")


@pytest.fixture(scope="module")
def script():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import precision_experiments

        yield precision_experiments
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_relaxed_profiles_are_those_with_an_npu_taking_relaxed_float32():
    assert pe.relaxed_profiles(["snapdragon-8-gen-2", "tensor-g2", "dimensity-9000"]) == [
        "snapdragon-8-gen-2",
        "dimensity-9000",
    ]


def test_a_quick_run_writes_records_and_the_docs_section(script, tmp_path, monkeypatch):
    from llm_experiments import BEGIN as LLM_BEGIN
    from llm_experiments import END as LLM_END

    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "experiments.md"
    page.write_text(
        f"intro\n{LLM_BEGIN}\nllm\n{LLM_END}\nmiddle\n{script.BEGIN}\nold\n{script.END}\noutro\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(script, "ROOT", tmp_path)
    plots = importlib.util.find_spec("matplotlib") is not None
    args = [
        "--networks", "mobilenet_v2_small", "--models", "tiny-llama", "--lengths", "16",
        "--profiles", PROFILE, "--no-accuracy", "--out-dir", str(docs),
        *([] if plots else ["--no-plots"]),
    ]  # fmt: skip
    assert script.main(args) == 0
    results = json.loads((docs / "precision_experiments.json").read_text())
    cv = {r["precision"]: r for r in results["cv"]["records"]}
    assert set(cv) == {"float32", "relaxed-fp16"}
    # The derived figures send float32 to the GPU and relaxed float32 to the DSP.
    assert {d for s in cv["float32"]["subgraphs"] for d in s["devices"]} == {"qti-gpu"}
    assert {d for s in cv["relaxed-fp16"]["subgraphs"] for d in s["devices"]} == {"qti-dsp"}
    assert (
        cv["relaxed-fp16"]["modelled_nnapi_program_ms"] < cv["float32"]["modelled_nnapi_program_ms"]
    )
    assert "no ONNX form" in results["cv"]["int8_status"]["mobilenet_v2_small"]
    llm = {r["variant"]: r for r in results["llm"]["records"] if r["weights"] == "input"}
    assert set(llm) == {"float32", "relaxed-fp16", "w8a8"}
    assert llm["relaxed-fp16"]["devices"] == llm["w8a8"]["devices"] == ["qti-dsp"]
    text = page.read_text()
    assert "old" not in text and "\nllm\n" in text and text.endswith("outro\n")
    assert "#### mobilenet_v2_small" in text and "All times MODELLED" in text
    assert ("precision-cv.png" in text) == plots


@pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None,
    reason="needs onnxruntime for quantize_static: pip install onnxruntime",
)
def test_int8_rows_come_from_a_real_qdq_model_or_are_left_out_with_the_reason(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    bias = numpy_helper.from_array(np.zeros(8, np.float32), "b")
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])],
        [weight, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "float.onnx"
    onnx.save(model, str(path))
    qdq = pe.qdq_from_onnx(path, (1, 3, 16, 16), tmp_path)
    names = {str(c.op.name) for c in _calls(qdq["main"])}
    assert {"relax.quantize", "relax.dequantize"} <= names  # a real QDQ model
    records, status = pe.int8_rows("conv", qdq, [PROFILE], say=lambda _: None)
    if records:  # the build lowers QDQ: the int8 rows are real quant8 subgraphs
        assert status == "int8 rows from the onnxruntime QDQ model"
        assert records[0]["precision"] == "int8" and records[0]["subgraphs"]
    else:
        assert "QDQ lowering is not available" in status and "stayed on the host" in status


def _calls(func):
    from tvm import relax

    found = []
    relax.analysis.post_order_visit(
        func.body,
        lambda node: (
            found.append(node)
            if isinstance(node, relax.Call) and hasattr(node.op, "name")
            else None
        ),
    )
    return found
