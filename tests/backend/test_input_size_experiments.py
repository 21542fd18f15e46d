# SPDX-License-Identifier: Apache-2.0
"""The input-size experiments (tvm_nnapi.experiments.input_size, bench/input_size_experiments.py)
on the built-in MobileNetV2-style network at two resolutions: the fixed parts of the NNAPI
program do not grow with the input while compute and the host program do; the crossover logic
on synthetic numbers; the script's JSON and docs section."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from tvm_nnapi.experiments import input_size as ie

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "snapdragon-8-gen-2"
NETWORK = "mobilenet_v2_small"


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the experiments drive mock_nnapi's cost-only mode in process (mock target)")


@pytest.fixture(scope="module")
def script():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import input_size_experiments

        yield input_size_experiments
    finally:
        sys.path.remove(str(ROOT / "bench"))


@pytest.fixture(scope="module")
def sweep():
    return ie.run([NETWORK], [32, 64], [PROFILE], ["float32", "relaxed-fp16"])


def test_fixed_costs_do_not_grow_with_the_resolution_and_compute_does(sweep):
    for precision in ("float32", "relaxed-fp16"):
        low, high = sorted(
            (r for r in sweep["records"] if r["precision"] == precision),
            key=lambda r: r["resolution"],
        )
        assert (low["resolution"], high["resolution"]) == (32, 64)
        lb, hb = low["modelled_breakdown_ms"], high["modelled_breakdown_ms"]
        # The same operations on the same devices: the same per-operation driver costs.
        assert low["nnapi_operations"] == high["nnapi_operations"]
        assert hb["driver_overhead"] == pytest.approx(lb["driver_overhead"], rel=1e-9)
        assert high["modelled_compilation_ms"] == pytest.approx(low["modelled_compilation_ms"])
        # Four times the pixels: more compute on NNAPI and on the host, a larger input copy. On
        # the NPU the activations stay on chip and the weights (the same at every resolution)
        # are a large part of the traffic at 32x32, so NNAPI's compute grows less than the pixels.
        assert hb["compute"] > 1.25 * lb["compute"]
        assert high["modelled_host_ms"] > 2 * low["modelled_host_ms"]
        assert hb["input_setup"] > lb["input_setup"]
        assert high["flops"] > 3.5 * low["flops"]
    (series,) = [s for s in sweep["series"] if s["precision"] == "float32"]
    assert series["growth"]["driver_overhead"]["fixed"]
    assert not series["growth"]["compute"]["fixed"]
    assert not series["growth"]["host"]["fixed"]
    # The NNAPI program has the larger fixed part and the smaller slope (why it needs size).
    assert series["nnapi_fit"]["fixed_ms"] > series["host_fit"]["fixed_ms"]
    assert series["nnapi_fit"]["per_megapixel_ms"] < series["host_fit"]["per_megapixel_ms"]


def test_int8_rows_of_a_builtin_network_are_left_out_with_the_reason():
    assert "no ONNX form" in (ie.int8_unavailable(NETWORK) or "")


def test_crossover_interpolates_in_the_pixel_count():
    # host - nnapi: -1 at 100 px, +1 at 200 px; linear in pixels: zero at 25000 px.
    c = ie.crossover([(200, 1.0, 2.0), (100, 2.0, 1.0), (300, 1.0, 5.0)])
    assert c["status"] == "from" and c["first_winning"] == 200
    assert c["resolution"] == pytest.approx(math.sqrt(25_000))


def test_crossover_statuses():
    assert ie.crossover([(32, 1.0, 2.0), (64, 1.0, 3.0)])["status"] == "always"
    never = ie.crossover([(32, 2.0, 1.0), (64, 2.0, 1.5)])
    assert never["status"] == "never" and never["first_winning"] is None
    # Wins, then loses again: no single crossover.
    mixed = ie.crossover([(32, 2.0, 1.0), (64, 1.0, 2.0), (128, 3.0, 2.0)])
    assert mixed["status"] == "mixed"
    assert mixed["first_winning"] is None and mixed["resolution"] is None
    # A loss after a win, then wins from a larger size on: the last crossing counts.
    late = ie.crossover([(32, 1.0, 2.0), (64, 2.0, 1.0), (128, 1.0, 2.0)])
    assert late["status"] == "mixed" and late["first_winning"] == 128
    assert late["resolution"] == pytest.approx(math.sqrt((64**2 + 128**2) / 2))
    # A tie is not a win.
    assert ie.crossover([(32, 1.0, 1.0), (64, 1.0, 2.0)])["first_winning"] == 64


def test_fits_extrapolate_a_crossover_outside_the_sweep():
    # NNAPI: 2 ms + 1 ms/Mpx; host: 0 ms + 5 ms/Mpx; they cross at 0.5 Mpx.
    points = [(r, 2.0 + r * r / 1e6, 5 * r * r / 1e6) for r in (100, 200, 300)]
    c = ie.crossover(points)
    assert c["status"] == "never"
    assert c["fit_resolution"] == pytest.approx(math.sqrt(0.5e6))
    fit = ie.linear_fit([(r, n) for r, n, _ in points])
    assert fit["fixed_ms"] == pytest.approx(2.0) and fit["per_megapixel_ms"] == pytest.approx(1.0)
    # NNAPI cheaper at every size: no crossing to extrapolate.
    assert ie.crossover([(r, 0.5 * h, h) for r, _, h in points])["fit_resolution"] is None


def test_the_script_writes_json_and_its_docs_section(script, sweep, tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "experiments.md"
    page.write_text(f"intro\n{script.BEGIN}\nold\n{script.END}\n", encoding="utf-8")
    monkeypatch.setattr(script, "ROOT", tmp_path)
    cached = tmp_path / "sweep.json"
    cached.write_text(json.dumps(sweep), encoding="utf-8")
    assert script.main(["--from-json", str(cached), "--out-dir", str(docs), "--no-plots"]) == 0
    assert json.loads((docs / "input_size.json").read_text())["modelled"] is True
    text = page.read_text()
    assert "old" not in text and text.startswith("intro\n") and "All times MODELLED" in text
    assert f"| {NETWORK} | {PROFILE} | float32 |" in text
    assert "NNAPI starts to win at" in text and "never in the sweep" in text


def test_the_script_refuses_an_unknown_precision(script):
    with pytest.raises(SystemExit):
        script.parse_args(["--precisions", "int4"])
