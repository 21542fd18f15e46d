# SPDX-License-Identifier: Apache-2.0
"""Verdicts and pictures of the tvm-nnapi commands, run as a user runs them (a fresh process):
the tolerance follows the precision the model computed in, the report's graph shows the NNAPI
operations the runtime executes, counts say what they count, speedups keep their digits."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from tvm_nnapi.tools.run import DEFAULT_TOLERANCE, compare

from .cli_runner import run_cli


def test_float16_llm_is_judged_by_float16_tolerance():
    completed = run_cli(
        "run", "llm:tiny-qwen:float16", "--shapes", "seq_len=8", "--trace", "-", "--json"
    )
    assert completed.returncode == 0, completed.stderr
    run = json.loads(completed.stdout)["run"]
    (output,) = run["outputs"]
    # float32 logits computed in float16: a float32 tolerance would fail this run.
    assert output["dtype"] == "float32" and output["precision"] == "float16"
    assert output["tolerance"] == DEFAULT_TOLERANCE["float16"] == 1e-2
    assert DEFAULT_TOLERANCE["float32"] < output["max_rel_error"] < output["tolerance"]
    assert run["passed"]


def test_tolerance_table_names_the_precision():
    completed = run_cli("run", "llm:tiny-llama:float16", "--shapes", "seq_len=4", "--trace", "-")
    assert completed.returncode == 0, completed.stderr + completed.stdout
    assert "1e-02 (float16)" in completed.stdout and "OK" in completed.stdout


def test_compare_uses_the_computation_precision_for_float_outputs():
    want = np.ones(4, np.float32)
    got = want + np.float32(1e-3)
    (fp32,) = compare([got], [want])
    assert not fp32.passed and fp32.precision == "float32"
    (fp16,) = compare([got], [want], precision="float16")
    assert fp16.passed and fp16.tolerance == 1e-2
    (relaxed,) = compare([got], [want], precision="relaxed-float16")
    assert relaxed.passed and relaxed.precision == "relaxed-float16"
    # Integer outputs keep exact matching whatever the float precision.
    (ints,) = compare([np.array([1, 2])], [np.array([1, 3])], precision="float16")
    assert not ints.passed and ints.tolerance == 0.0


def test_full_size_llm_graph_labels_come_from_the_lowering():
    completed = run_cli("explain", "llm:llama-2-7b", "--shapes", "seq_len=128", "--json")
    assert completed.returncode == 0, completed.stderr
    explanation = json.loads(completed.stdout)["explain"]
    subgraphs = {sub["name"]: sub for sub in explanation["subgraphs"]}
    nodes = [n for n in explanation["graph"]["nodes"] if n["kind"] == "nnapi"]
    assert explanation["graph"]["detail"] == "subgraph" and nodes
    for node in nodes:
        assert Counter(node["nnapi_operations"]) == subgraphs[node["subgraph"]]["nnapi_operations"]
    first = subgraphs["prefill_nnapi_0"]["nnapi_operations"]
    assert first["RSQRT"] == 1 and "BATCH_MATMUL" not in first


def test_operator_graph_nodes_add_up_to_their_subgraph():
    completed = run_cli("explain", "llm:tiny-llama", "--shapes", "seq_len=8", "--json")
    assert completed.returncode == 0, completed.stderr
    explanation = json.loads(completed.stdout)["explain"]
    graph = explanation["graph"]
    assert graph["detail"] == "operator"
    by_id = {n["id"]: n for n in graph["nodes"]}
    subgraphs = {sub["name"]: sub for sub in explanation["subgraphs"]}
    for call in graph["subgraph_calls"]:
        emitted = Counter(op for i in call["nodes"] for op in by_id[i]["nnapi_operations"])
        assert emitted == subgraphs[call["subgraph"]]["nnapi_operations"]


def test_llm_subgraph_rows_count_per_call_and_say_so():
    completed = run_cli("explain", "llm:llama-2-7b", "--shapes", "seq_len=128", "--json")
    explanation = json.loads(completed.stdout)["explain"]
    layers = next(s for s in explanation["subgraphs"] if s["name"] == "prefill_nnapi_1")
    assert layers["calls"] == 31
    # Relax operators and NNAPI operations on the same (per call) basis: 4 matmuls, 4 FCs.
    assert layers["relax_operators"]["relax.matmul"] == 4
    assert layers["nnapi_operations"]["FULLY_CONNECTED"] == 4
    counted = sum(sum(s["relax_operators"].values()) * s["calls"] for s in explanation["subgraphs"])
    assert counted == explanation["offloaded_operators"]
    text = run_cli("explain", "llm:llama-2-7b", "--shapes", "seq_len=128").stdout
    assert "operators counted per call" in text
    assert "(counting every call)" in text


def test_residual_shapes_are_bound_the_same_way_in_explain_and_demo():
    explain = run_cli("explain", "residual")
    assert explain.returncode == 0, explain.stderr
    assert "symbolic dimensions bound: batch=1" in explain.stdout
    assert "estimated FLOPs offloaded: 80.0%" in explain.stdout
    demo = run_cli("demo", "--model", "residual", "--profile", "none")
    assert demo.returncode == 0, demo.stderr + demo.stdout
    assert "shapes bound: batch=1" in demo.stdout
    assert "estimated FLOPs offloaded: 80.0%" in demo.stdout and "n/a" not in demo.stdout


def test_small_speedups_keep_their_digits():
    completed = run_cli("estimate", "residual", "--profile", "tensor-g2", "--json")
    estimate = json.loads(completed.stdout)["estimate"]
    speedup = estimate["totals"]["modelled_speedup"]
    assert 0 < speedup < 0.005  # NNAPI's per-call cost dwarfs 2x16 elementwise operations
    text = run_cli("estimate", "residual", "--profile", "tensor-g2").stdout
    assert "0.00x" not in text and f"{speedup:.3g}x" in text


@pytest.mark.parametrize("value", [None, 0.0])
def test_unknown_speedup_is_not_a_number(value):
    from tvm_nnapi.tools.report import format_speedup

    assert format_speedup(value) == "n/a" and format_speedup(0.000356) == "0.000356x"
