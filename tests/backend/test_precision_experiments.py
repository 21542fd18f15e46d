# SPDX-License-Identifier: Apache-2.0
"""bench/precision_experiments.py on a small selection: CV rows per precision with the devices
the mock assigns, relaxed and W8A8 LLM prefill rows, the docs section, and the int8 rows of a
real onnxruntime QDQ model (present only when an NNAPI subgraph has a quant8 operand)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tvm_nnapi.experiments import precision as pe

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
    reason="needs onnxruntime for quantize_static: pip install -e '.[test]'",
)
def test_int8_rows_come_from_a_real_qdq_model_on_the_dsp():
    from tvm.relax.frontend.onnx import from_onnx

    from .quantized_models import quantize_static as ort_quantize_static
    from .quantized_models import small_cnn

    float_cnn, inputs = small_cnn()
    qdq = from_onnx(ort_quantize_static(float_cnn, inputs), keep_params_in_input=False)
    names = {str(c.op.name) for c in _calls(qdq["main"])}
    assert {"relax.quantize", "relax.dequantize"} <= names  # a real QDQ model
    records, status = pe.int8_rows("cnn", qdq, [PROFILE], say=lambda _: None)
    assert status.startswith("int8 rows from the onnxruntime QDQ model")
    record, relaxed = records
    assert record["precision"] == "int8" and len(record["subgraphs"]) == 1
    assert relaxed["precision"] == "int8+relaxed-fp16" and relaxed["devices"] == "1x qti-dsp"
    # Every operation of the quant8 subgraph on the Hexagon DSP (the global average pool too).
    assert record["devices"] == "1x qti-dsp" and record["offloaded_flop_share"] > 0.95
    # Judged against the float32 network on the CPU backend, as the other rows.
    float_row = {"network": "cnn", "profile": PROFILE, "precision": "float32",
                 "modelled_cpu_backend_ms": 2.0}  # fmt: skip
    pe._against_float_cpu_backend(record, [float_row])
    assert record["modelled_cpu_backend_ms"] == 2.0 and record["modelled_qdq_host_ms"] > 0
    assert record["modelled_speedup"] == pytest.approx(2.0 / record["modelled_nnapi_program_ms"])


def test_only_one_part_reuses_the_others_from_the_cache(script, tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "experiments.md"
    page.write_text(f"intro\n{script.BEGIN}\nold\n{script.END}\n", encoding="utf-8")
    monkeypatch.setattr(script, "ROOT", tmp_path)
    llm = {"models": ["m"], "profiles": [PROFILE], "relaxed_profiles": [PROFILE],
           "lengths": [16], "weights": ["input"], "records": []}  # fmt: skip
    cached = {
        "modelled": True,
        "cv": {"profiles": [], "records": [], "int8_status": {}, "torchvision": False},
        "llm": llm,
        "accuracy": None,
        "runs": {part: {"command": "python bench/precision_experiments.py", "seconds": 99}
                 for part in script.PARTS},
    }  # fmt: skip
    cache = tmp_path / "cache.json"
    cache.write_text(json.dumps(cached), encoding="utf-8")
    args = ["--only", "cv", "--cache", str(cache), "--networks", "residual",
            "--profiles", PROFILE, "--out-dir", str(docs), "--no-plots"]  # fmt: skip
    assert script.main(args) == 0
    results = json.loads((docs / "precision_experiments.json").read_text())
    assert results["llm"] == llm and results["accuracy"] is None
    assert {r["network"] for r in results["cv"]["records"]} == {"residual"}
    assert results["runs"]["llm"]["seconds"] == 99
    assert results["runs"]["cv"]["command"].startswith(
        "python bench/precision_experiments.py --only cv"
    )
    text = page.read_text()
    assert "Generated in parts: cv by `python bench/precision_experiments.py --only cv" in text
    assert "; llm and accuracy by `python bench/precision_experiments.py` (99 s)." in text
    with pytest.raises(SystemExit, match="does not exist"):
        script.main(["--only", "cv", "--cache", str(tmp_path / "none.json"), "--no-docs"])
    with pytest.raises(SystemExit):
        script.parse_args(["--only", "cv,plots"])


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
