# SPDX-License-Identifier: Apache-2.0
"""`tvm-nnapi run --layerwise`, run as a user runs it (a fresh process): it compares every NNAPI
operator with the host and names the one whose results diverge (a numeric fault injected into
the mock)."""

from __future__ import annotations

import json

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
