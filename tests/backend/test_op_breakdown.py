# SPDX-License-Identifier: Apache-2.0
"""The single-operation breakdown (tvm_nnapi.experiments.op_breakdown, bench/op_breakdown.py) on
tiny-llama's shapes and one phone profile: every column, modelled and measured labelled, the
modelled execution growing from decode to prefill while the fixed costs stay, the cached
compilation cheaper than the cold one, and the generated docs section. Nothing here checks a
measured time's value: the bench is not a timed test."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tvm_nnapi.experiments import op_breakdown
from tvm_nnapi.llm import TINY

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "snapdragon-8-gen-2"
TOKENS = 32


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the breakdown drives mock_nnapi in process (mock target)")


@pytest.fixture(scope="module")
def results():
    return op_breakdown.run(
        [TINY.name], [PROFILE], TOKENS, ("float32", "float16"), repeats=1, copy_repeats=1
    )


def _supported(results, **where):
    return [
        r for r in results["records"] if r["supported"] and all(r[k] == v for k, v in where.items())
    ]


def test_every_operation_phase_and_device_has_every_column(results):
    from mock_nnapi import api, control

    with control.Profile(PROFILE):
        devices = {d.name for d in api.devices()}
    for dtype in ("float32", "float16"):
        for operation in op_breakdown.OPERATIONS:
            for phase in op_breakdown.PHASES:
                rows = [
                    r
                    for r in results["records"]
                    if (r["dtype"], r["operation"], r["phase"]) == (dtype, operation, phase)
                ]
                assert {r["device"] for r in rows} == devices
                for r in rows:
                    if not r["supported"]:
                        assert r["reason"]
                        continue
                    for column in op_breakdown.COLUMNS:
                        assert f"{column}_us" in r["modelled"], (r["device"], column)
                        assert f"{column}_us" in r["measured"], (r["device"], column)
                    measured = r["measured"]
                    for column in (*op_breakdown.COLUMNS[:4], "output_copies"):
                        assert measured[f"{column}_us"] > 0, (r["device"], column)
                    modelled = r["modelled"]
                    for column in op_breakdown.COLUMNS[1:]:
                        assert modelled[f"{column}_us"] >= 0
                    assert modelled["model_building_us"] is None  # not modelled
                    assert measured["execution_us"] is None  # not measured
                    parts = sum(
                        modelled[f"{c}_us"] for c in ("input_copies", "execution", "output_copies")
                    )
                    assert parts == pytest.approx(modelled["total_us"])
    # float32 FULLY_CONNECTED is not the Hexagon's: refused with a reason, run in float16
    assert not _supported(results, dtype="float32", device="qti-dsp")
    assert _supported(results, dtype="float16", device="qti-dsp")
    # the runtime CPU shares host memory: no modelled copies; the GPU copies its weights
    for r in _supported(results, device="nnapi-reference"):
        assert r["modelled"]["input_copies_us"] == 0 and r["modelled"]["output_copies_us"] == 0
    for r in _supported(results, device="qti-gpu", operation="qkv_projection"):
        assert r["modelled"]["input_copies_weights_us"] > 0


def test_measured_and_modelled_are_labelled(results):
    assert results["labels"]["measured"].startswith(op_breakdown.MEASURED)
    for r in results["records"]:
        assert r["modelled"]["label"] == op_breakdown.MODELLED == "modelled"
        assert r["measured"]["label"] == op_breakdown.MEASURED == "measured on this host (mock)"
    tables = op_breakdown.format_tables(results)
    headings = [line for line in tables.splitlines() if line.startswith("####")]
    assert headings and all("modelled" in h or op_breakdown.MEASURED in h for h in headings), (
        headings
    )
    assert any(op_breakdown.MEASURED in h for h in headings)


def test_execution_grows_from_decode_to_prefill_fixed_costs_do_not(results):
    for r in _supported(results, phase="prefill"):
        (decode,) = _supported(
            results,
            phase="decode",
            dtype=r["dtype"],
            operation=r["operation"],
            device=r["device"],
        )
        prefill, one = r["modelled"], decode["modelled"]
        assert prefill["execution_busy_us"] > one["execution_busy_us"], r["device"]
        assert prefill["execution_us"] > one["execution_us"], r["device"]
        assert prefill["total_us"] > one["total_us"]
        # compilation and the weights do not depend on the number of tokens
        for fixed in ("compilation_cold_us", "compilation_cached_us", "input_copies_weights_us"):
            assert prefill[fixed] == one[fixed], (r["device"], fixed)
        # and per token the prefill is cheaper
        assert prefill["total_us"] / TOKENS < one["total_us"]


def test_cached_compilation_is_cheaper_than_cold(results):
    for r in _supported(results):
        assert r["modelled"]["compilation_cached_us"] < r["modelled"]["compilation_cold_us"]


def test_operation_models_follow_the_lowerings():
    names = {}
    for operation in op_breakdown.OPERATIONS:
        op = op_breakdown.operation_model(TINY, operation, 4)
        from mock_nnapi.constants import OperationCode

        names[operation] = [OperationCode(code).name for code, _, _ in op.record.operations]
        assert op.phase == "prefill" and op.tokens == 4
    assert names["qkv_projection"] == ["FULLY_CONNECTED", "RESHAPE"]
    assert names["rms_norm"] == ["MUL", "MEAN", "ADD", "RSQRT", "MUL", "MUL"]
    assert names["silu_multiply"] == ["LOGISTIC", "MUL", "MUL"]
    qkv = op_breakdown.operation_model(TINY, "qkv_projection", 1)
    weight = qkv.record.operand_types[qkv.record.inputs[1]][1]
    assert weight == (TINY.q_size + 2 * TINY.kv_size, TINY.hidden_size)
    assert qkv.weight_inputs == {1} and qkv.phase == "decode"
    with pytest.raises(ValueError, match="unknown operation"):
        op_breakdown.operation_model(TINY, "attention", 1)


def test_bench_script_writes_json_and_the_docs_section(results, tmp_path, monkeypatch, capsys):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import op_breakdown as script
    finally:
        sys.path.remove(str(ROOT / "bench"))
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(results), encoding="utf-8")
    page = tmp_path / "docs" / "experiments.md"
    page.parent.mkdir()
    page.write_text(f"intro\n{script.BEGIN}\nold\n{script.END}\noutro\n", encoding="utf-8")
    monkeypatch.setattr(script, "ROOT", tmp_path)
    assert script.main(["--from-json", str(saved)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("intro\n") and text.endswith("outro\n") and "\nold\n" not in text
    assert "#### tiny-llama on snapdragon-8-gen-2, float32: modelled time per token" in text
    assert op_breakdown.MEASURED in text
    assert "updated docs/experiments.md" in capsys.readouterr().err
    # a run (one operation's worth of shapes is enough for the code path)
    out = tmp_path / "run.json"
    monkeypatch.setattr(op_breakdown, "OPERATIONS", {"rms_norm": "RMSNorm"})
    argv = ["--models", TINY.name, "--profiles", PROFILE, "--prefill-tokens", "4"]
    argv += ["--dtypes", "float32", "--repeats", "1", "--copy-repeats", "1", "--out", str(out)]
    assert script.main([*argv, "--no-docs"]) == 0
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["schema"] == op_breakdown.SCHEMA and document["records"]
    assert "tiny-llama float32 rms_norm decode" in capsys.readouterr().err


def test_the_docs_section_sits_before_phone_memory():
    text = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    heading = text.index("## Single-operation breakdown\n")
    begin = text.index("<!-- BEGIN GENERATED by bench/op_breakdown.py -->")
    end = text.index("<!-- END GENERATED by bench/op_breakdown.py -->")
    assert heading < begin < end < text.index("## Phone memory (modelled)\n")
    assert "python bench/op_breakdown.py" in text[heading:begin]
