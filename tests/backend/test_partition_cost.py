# SPDX-License-Identifier: Apache-2.0
"""The cost strategy of the partition (``--partition cost``): the minimum cut against a brute
force, the per-subgraph rule, and the modelled program time of the placement against
offloading every operator, on the built-in phone profiles (all modelled, not measured)."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mock_nnapi import control
from tvm_nnapi.compiler.placement import Candidate, _cost, min_cut_placement, place
from tvm_nnapi.tools.estimate import PreparedEstimate
from tvm_nnapi.tools.explain import load_model
from tvm_nnapi.tools.partition_target import partition_options

from .cli_runner import run_cli

PHONES = ["snapdragon-8-gen-2", "tensor-g2", "dimensity-9000", "snapdragon-660"]


def _brute_force(candidates, edges) -> float:
    """The least node-plus-transfer cost over every assignment."""
    names = sorted(candidates)
    best = float("inf")
    for bits in itertools.product([False, True], repeat=len(names)):
        on = {n for n, b in zip(names, bits, strict=True) if b}
        cost = sum(
            candidates[n].nnapi_us + candidates[n].host_transfer_us
            if n in on
            else candidates[n].host_us
            for n in names
        )
        cost += sum(t for a, b, t in edges if (a in on) != (b in on))
        best = min(best, cost)
    return best


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 7))
    names = [f"n{i}" for i in range(n)]
    us = st.integers(0, 500)
    candidates = {
        name: Candidate(name, draw(us), draw(us), draw(st.integers(0, 100))) for name in names
    }
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True)) if pairs else []
    edges = [(a, b, float(draw(us))) for a, b in chosen]
    return candidates, edges


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(graphs())
def test_the_minimum_cut_equals_a_brute_force_search(graph):
    candidates, edges = graph
    on = min_cut_placement(candidates, edges)
    cost = sum(
        c.nnapi_us + c.host_transfer_us if name in on else c.host_us
        for name, c in candidates.items()
    )
    cost += sum(t for a, b, t in edges if (a in on) != (b in on))
    assert cost == pytest.approx(_brute_force(candidates, edges), abs=1e-6)


@settings(
    max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(graphs(), st.integers(0, 400))
def test_the_placement_is_never_worse_than_all_or_none(graph, overhead):
    candidates, edges = graph
    result = place(candidates, edges, float(overhead))
    for option in (set(candidates), set()):
        total, _ = _cost(candidates, edges, option, float(overhead))
        assert result.modelled_us <= total + 1e-6


def test_a_group_that_does_not_pay_its_execution_overhead_goes_to_the_host():
    """Two candidates each a little faster on NNAPI, far apart: the cut puts both there, but
    each would be a subgraph of its own, and 100 µs per execution outweighs what each saves."""
    candidates = {
        "a": Candidate("a", nnapi_us=10, host_us=60),
        "b": Candidate("b", nnapi_us=10, host_us=60),
    }
    assert min_cut_placement(candidates, []) == {"a", "b"}
    result = place(candidates, [], overhead_us=100)
    assert result.on_nnapi == set() and result.modelled_us == 120
    # Joined by a value that would otherwise cross (a transfer of 80 µs), they are one group.
    joined = place(candidates, [("a", "b", 80.0)], overhead_us=100)
    assert joined.on_nnapi == set() and joined.modelled_us == 120
    cheap = place(candidates, [("a", "b", 80.0)], overhead_us=50)
    assert cheap.on_nnapi == {"a", "b"} and cheap.modelled_us == 70


def _modelled(model: str, profile: str, strategy: str, shapes=None) -> tuple[float, int]:
    module = load_model(model)
    with control.Profile(profile):
        options = partition_options(profile, strategy=strategy)
        prepared = PreparedEstimate(module, shapes=shapes, options=options)
        estimate = prepared.run(profile)
    offloaded = sum(sum(row.relax_operators.values()) * row.calls for row in estimate.subgraphs)
    return estimate.modelled_nnapi_program_us, offloaded


@pytest.mark.parametrize("profile", PHONES)
def test_the_cost_placement_is_never_slower_than_offloading_everything(profile):
    """Modelled on each phone: MobileNetV2-small and the residual network; full-size
    MobileNetV2 (224x224) on the calibrated phone (costing it takes seconds per profile)."""
    models = [("mobilenet_v2_small", None), ("residual", {"batch": 1})]
    if profile == "snapdragon-8-gen-2":
        models.append(("mobilenet_v2", None))
    for model, shapes in models:
        everything, _ = _modelled(model, profile, "all", shapes)
        placed, _ = _modelled(model, profile, "cost", shapes)
        assert placed <= everything * (1 + 1e-9), (model, placed, everything)


def test_where_nnapi_loses_the_small_cnn_stays_on_the_host():
    """On the low-end phone NNAPI's round trips make the small CNN modelled slower than the
    host: the cost placement keeps all of it there and takes the host's time."""
    everything, offloaded_all = _modelled("mobilenet_v2_small", "snapdragon-660", "all")
    placed, offloaded = _modelled("mobilenet_v2_small", "snapdragon-660", "cost")
    assert offloaded_all == 154 and offloaded == 0
    assert placed < everything / 2


def test_explain_shows_what_the_cost_keeps_on_the_host_with_the_numbers():
    completed = run_cli(
        "explain", "residual", "--profile", "snapdragon-8-gen-2", "--partition", "cost", "--json"
    )
    assert completed.returncode == 0, completed.stderr
    refusals = json.loads(completed.stdout)["explain"]["refusals"]
    costs = [r for r in refusals if r["kind"] == "cost"]
    assert {r["operator"] for r in costs} == {"relax.add", "relax.multiply", "relax.subtract"}
    reason = costs[0]["reason"]
    assert reason.startswith("kept on the host (modelled on snapdragon-8-gen-2): ")
    assert "on qti-gpu including" in reason and "of transfers" in reason and "on the host" in reason


def test_run_with_the_cost_strategy_gives_the_host_answer():
    completed = run_cli(
        "run", "residual", "--profile", "tensor-g2", "--partition", "cost", "--trace", "-"
    )
    assert completed.returncode == 0, completed.stderr
    assert "OK: results match the host llvm build" in completed.stdout


def test_estimate_shows_both_strategies_side_by_side():
    completed = run_cli("estimate", "mobilenet_v2_small", "--profile", "snapdragon-660", "--json")
    assert completed.returncode == 0, completed.stderr
    strategies = json.loads(completed.stdout)["estimate"]["strategies"]
    assert set(strategies) == {"all", "cost"}
    assert strategies["all"]["offloaded_operators"] == 154
    assert strategies["cost"]["offloaded_operators"] == 0 and strategies["cost"]["subgraphs"] == 0
    cost, everything = (strategies[k]["modelled_nnapi_program_us"] for k in ("cost", "all"))
    assert cost < everything


@pytest.fixture(scope="module")
def qdq_cnn():
    """The QDQ int8 CNN (onnxruntime's static quantizer) as a Relax module."""
    pytest.importorskip("onnxruntime", reason="the QDQ CNN is made by onnxruntime's quantizer")
    from tvm.relax.frontend.onnx import from_onnx

    from .quantized_models import quantize_static, small_cnn

    float_cnn, inputs = small_cnn()
    return from_onnx(quantize_static(float_cnn, inputs), keep_params_in_input=False)


def _modelled_module(module, profile: str, strategy: str, entry="main", shapes=None, work=None):
    with control.Profile(profile):
        options = partition_options(profile, strategy=strategy)
        prepared = PreparedEstimate(module, shapes, entry, options, extern_work=work)
        estimate = prepared.run(profile)
    return estimate.modelled_nnapi_program_us, len(estimate.subgraphs)


@pytest.mark.parametrize("profile", PHONES)
def test_the_cost_placement_of_the_qdq_cnn_is_never_slower(qdq_cnn, profile):
    everything, _ = _modelled_module(qdq_cnn, profile, "all")
    placed, _ = _modelled_module(qdq_cnn, profile, "cost")
    assert placed <= everything * (1 + 1e-9), (placed, everything)


def _tiny_llm(entry: str, seq_len: int):
    """The tiny Llama's module, its entry's shapes and the attention's work, as
    `tvm-nnapi estimate llm:tiny-llama --entry ENTRY --shapes seq_len=N` costs them."""
    from tvm_nnapi.llm.dispatch import ATTENTION_BUILTIN
    from tvm_nnapi.tools.llm_work import attention_work
    from tvm_nnapi.tools.sources import load_model_source

    source = load_model_source("llm:tiny-llama", entry=entry)
    new_tokens, history = (seq_len, 0) if entry == "prefill" else (1, seq_len)
    work = attention_work(source.llm_config, source.llm_dtype, new_tokens, history)
    module = source.symbolic_module
    shapes = {"seq_len": seq_len} if entry == "prefill" else {}
    return module, shapes, {ATTENTION_BUILTIN: work}


@pytest.mark.parametrize("profile", ["snapdragon-8-gen-2", "snapdragon-660"])
def test_the_cost_placement_of_the_tiny_llm_is_never_slower(profile):
    """Prefill (32 tokens) and decode (32 tokens in the cache) of the tiny Llama, on the
    calibrated phone and the low-end one (the two ends of the range)."""
    for entry in ("prefill", "decode"):
        module, shapes, work = _tiny_llm(entry, 32)
        everything, _ = _modelled_module(module, profile, "all", entry, shapes, work)
        placed, _ = _modelled_module(module, profile, "cost", entry, shapes, work)
        assert placed <= everything * (1 + 1e-9), (entry, placed, everything)


def test_on_the_low_end_phone_the_tiny_llm_stays_on_the_host():
    module, shapes, work = _tiny_llm("prefill", 32)
    everything, _ = _modelled_module(module, "snapdragon-660", "all", "prefill", shapes, work)
    placed, subgraphs = _modelled_module(module, "snapdragon-660", "cost", "prefill", shapes, work)
    assert subgraphs == 0 and placed < everything
