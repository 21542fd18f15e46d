# SPDX-License-Identifier: Apache-2.0
"""bench/llm_experiments.py on a tiny configuration and one profile: records for every prompt
length and decode, consistent tables, plots and the generated section of a docs page."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the experiments drive mock_nnapi's cost-only mode in process (mock target)")


@pytest.fixture(scope="module")
def script():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import llm_experiments

        yield llm_experiments
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_experiments_on_a_tiny_model(script, tmp_path, monkeypatch, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "experiments.md"
    page.write_text(f"intro\n{script.BEGIN}\nold\n{script.END}\noutro\n", encoding="utf-8")
    monkeypatch.setattr(script, "ROOT", tmp_path)
    plots = importlib.util.find_spec("matplotlib") is not None
    argv = ["--models", "tiny-llama", "--profiles", "snapdragon-8-gen-2", "--lengths", "16,32"]
    argv += ["--decode-context", "8", "--out-dir", str(tmp_path / "out")]
    if not plots:
        argv.append("--no-plots")
    assert script.main(argv) == 0
    output = capsys.readouterr().out
    assert "[1/3] tiny-llama prefill 16 on snapdragon-8-gen-2: modelled speedup" in output
    results = json.loads((tmp_path / "out" / "experiments.json").read_text())
    assert results["modelled"] is True
    records = results["records"]
    # 2 prompt lengths + decode, x 3 host models x 2 weights options, in MLC's q4f16_1.
    assert results["quantization"] == "q4f16_1" and results["dtype"] == "float16"
    assert results["host_models"] == ["profile-cpu", "tvm-dlight", "tvm-default"]
    assert len(records) == 3 * 3 * 2
    for record in records:
        assert record["modelled_nnapi_program_us"] > 0 and record["modelled_host_program_us"] > 0
        assert record["modelled_speedup"] == pytest.approx(
            record["modelled_host_program_us"] / record["modelled_nnapi_program_us"]
        )
    text = page.read_text()
    assert text.startswith("intro\n") and text.endswith("outro\n") and "old" not in text
    assert "| tiny-llama |" in text and "Band check" in text and "MODELLED" in text
    assert "Band check: host model `tvm-dlight`, weights `input`" in text
    assert "(q4f16_1; decode costed after 8 tokens)" in text
    if plots:
        images = sorted(p.name for p in (tmp_path / "out" / "img").glob("*.png"))
        assert "llm-speedup-profile-cpu-input.png" in images
        assert all((tmp_path / "out" / "img" / name).stat().st_size > 1000 for name in images)
    # Regenerating from the JSON gives the same tables.
    again = tmp_path / "again"
    assert (
        script.main(
            [
                "--from-json",
                str(tmp_path / "out" / "experiments.json"),
                "--no-plots",
                "--out-dir",
                str(again),
            ]
        )
        == 0
    )
    marker = "#### Band check"
    assert page.read_text().split(marker, 1)[1] == text.split(marker, 1)[1]


def test_a_second_section_in_another_weight_format(script, tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "experiments.md"
    begin = f"{script.BEGIN[:-4]} --section float32 -->"
    page.write_text(
        f"{script.BEGIN}\nmain\n{script.END}\n{begin}\nold\n<!-- END GENERATED float32 -->\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(script, "ROOT", tmp_path)
    argv = ["--models", "tiny-llama", "--profiles", "snapdragon-8-gen-2", "--lengths", "16"]
    argv += ["--decode-context", "8", "--out-dir", str(tmp_path / "out"), "--no-plots"]
    assert script.main([*argv, "--quantization", "q0f32", "--section", "float32"]) == 0
    results = json.loads((tmp_path / "out" / "experiments-float32.json").read_text())
    assert results["quantization"] == "q0f32" and results["dtype"] == "float32"
    text = page.read_text()
    assert "main" in text and "old" not in text and "(q0f32; decode costed after 8 tokens)" in text
