# SPDX-License-Identifier: Apache-2.0
"""The modelled-latency estimate (tvm_nnapi.tools.estimate): totals consistent with their rows,
NNAPI times that follow the profile, the mock's cost-only mode giving the same modelled times as a
real execution, and full-size models costed without allocating their weights.
"""

from __future__ import annotations

import gc
import json
import math

import numpy as np
import pytest
import tvm
from tvm import relax

from mock_nnapi import control
from tvm_nnapi import llm
from tvm_nnapi.experiments.llm import LlmEstimator
from tvm_nnapi.tools.estimate import HostModel, PreparedEstimate, all_host_us, estimate

PHONE = "snapdragon-8-gen-2"


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the estimate drives mock_nnapi's cost-only mode in process (mock target)")


@pytest.fixture(scope="module")
def tiny() -> LlmEstimator:
    return LlmEstimator("tiny-llama")


def _close(a: float, b: float, rel: float = 1e-6) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


def test_totals_are_the_sums_of_their_rows(tiny):
    est = tiny.estimate("prefill", 32, PHONE)
    assert est.subgraphs, "the prefill of tiny-llama offloads nothing"
    nnapi = sum(s.modelled_nnapi_us * s.calls for s in est.subgraphs)
    host = sum(s.modelled_host_us * s.calls for s in est.subgraphs)
    rest = sum(r.modelled_host_us for r in est.host_rows)
    assert _close(est.modelled_nnapi_program_us, nnapi + rest)
    assert _close(est.modelled_host_program_us, host + rest)
    for s in est.subgraphs:
        parts = (
            s.modelled_input_setup_us
            + s.modelled_compute_us
            + s.modelled_transfer_us
            + s.modelled_driver_overhead_us
        )
        assert _close(parts, s.modelled_nnapi_us), s.name
        assert s.modelled_compilation_us > 0 and s.nnapi_operations
        assert "FULLY_CONNECTED" in s.nnapi_operations
    # The attention stays on the host in both programs and its work is modelled.
    attention = [r for r in est.host_rows if r.name == llm.dispatch.ATTENTION_BUILTIN]
    assert attention and attention[0].calls == llm.TINY.num_hidden_layers
    assert attention[0].modelled and attention[0].flops > 0
    document = json.loads(json.dumps(est.to_dict()))
    assert document["modelled"] is True
    assert _close(document["totals"]["modelled_speedup"], est.modelled_speedup)
    for key in document["totals"]:
        assert key.startswith("modelled"), key
    assert "MODELLED" in est.format()


def test_nnapi_times_follow_the_profile(tiny):
    prepared = tiny.prepared("prefill", 64)
    reference = prepared.run("reference")
    phone = prepared.run(PHONE)
    other = prepared.run("tensor-g2")
    totals = {e.profile: e.modelled_nnapi_program_us for e in (reference, phone, other)}
    assert len(set(totals.values())) == 3, totals
    # The reference profile is one CPU device: no host<->device copies. Phones copy.
    assert reference.modelled_breakdown_us()["modelled_input_setup_us"] == 0
    assert phone.modelled_breakdown_us()["modelled_input_setup_us"] > 0
    # The host model uses each profile's CPU device.
    assert reference.host_model["device"] == "mock-reference"
    assert phone.host_model["device"] == "nnapi-reference"
    assert reference.modelled_host_program_us != phone.modelled_host_program_us
    # More tokens: more modelled compute on both sides.
    longer = tiny.estimate("prefill", 128, PHONE)
    assert (
        longer.modelled_breakdown_us()["modelled_compute_us"]
        > phone.modelled_breakdown_us()["modelled_compute_us"]
    )
    assert longer.modelled_host_program_us > phone.modelled_host_program_us


def test_weights_resident_drops_exactly_the_weight_copies(tiny):
    prepared = tiny.prepared("prefill", 32)
    as_built = prepared.run(PHONE, weights="input")
    resident = prepared.run(PHONE, weights="resident")
    weight_copies = as_built.modelled_breakdown_us()["modelled_weight_setup_us"]
    assert weight_copies > 0
    assert _close(
        resident.modelled_nnapi_program_us, as_built.modelled_nnapi_program_us - weight_copies
    )
    assert resident.modelled_host_program_us == as_built.modelled_host_program_us


def test_host_model_presets(tiny):
    prepared = tiny.prepared("prefill", 32)
    tuned = prepared.run(PHONE, host_model="profile-cpu")
    default = prepared.run(PHONE, host_model="tvm-default")
    assert default.modelled_host_program_us > tuned.modelled_host_program_us
    assert default.modelled_nnapi_program_us > 0
    model = HostModel.from_profile(PHONE)
    # Compute-bound: F / (peak x compute efficiency); memory-bound: B / (bandwidth x memory
    # efficiency). The calibrated profile splits the two (docs/cost-model.md).
    peak = model.peak_gflops["float32"]
    compute = model.side_efficiency("compute", "fully_connected", "float32")
    memory = model.side_efficiency("memory", "fully_connected", "float32")
    cpu = model.split_efficiency
    assert compute == cpu["compute_efficiency"]["fully_connected"]["float32"]
    assert memory == cpu["memory_efficiency"]["fully_connected"] != compute
    assert _close(model.time_us(1e9, 0, "float32", "fully_connected"), 1e6 / peak / compute)
    assert _close(
        model.time_us(0, 1e9, "float32", "fully_connected"),
        1e6 / model.bandwidth_gbps / memory,
    )
    with pytest.raises(ValueError, match="unknown host model"):
        HostModel.from_profile(PHONE, "fastest")


@pytest.mark.parametrize("host_model", ["profile-cpu", "tvm-default"])
def test_the_all_host_time_alone_is_the_estimates(tiny, host_model):
    """all_host_us costs the unpartitioned program as the estimate does, without partitioning."""
    prepared = tiny.prepared("prefill", 16)
    expected = prepared.run(PHONE, host_model).modelled_host_program_us
    alone = all_host_us(
        tiny.module, PHONE, {"seq_len": 16}, "prefill", host_model, prepared.extern_work
    )
    assert alone == pytest.approx(expected, rel=1e-12) and alone > 0
    with pytest.raises(ValueError, match="give a value for the symbolic dimensions"):
        all_host_us(tiny.module, PHONE, entry="prefill")


def test_cost_only_gives_the_modelled_times_of_a_real_execution(tiny):
    """The same subgraphs executed for real (random weights, prompt of 32 tokens) on the
    profile: their traces' modelled times equal the cost-only estimate's."""
    estimated = tiny.prepared("prefill", 32).run(PHONE)
    per_call = sorted(
        (s.modelled_nnapi_us, s.modelled_compilation_us)
        for s in estimated.subgraphs
        for _ in range(s.calls)
    )
    mod, named_params, _ = llm.export_model(llm.TINY)
    weights = llm.random_weights(llm.param_specs(named_params))
    with control.Profile(PHONE):
        engine = llm.LlamaEngine(llm.build_llm(mod), llm.TINY, weights)
        control.set_trace_capacity(64)
        control.clear_traces()
        assert not control.cost_only_execution()
        logits = engine.prefill(list(range(1, 33)))
        traces = control.execution_traces()
        control.set_trace_capacity(16)
        del engine
        gc.collect()
    assert np.isfinite(logits).all() and np.abs(logits).max() > 0  # really computed
    assert all(not t["cost_only"] for t in traces)
    measured = sorted((t["modelled_total_us"], t["compilation"]["modelled_us"]) for t in traces)
    assert len(measured) == len(per_call)
    for (total, compile_us), (expected, expected_compile) in zip(measured, per_call, strict=True):
        assert _close(total, expected, 1e-9) and _close(compile_us, expected_compile, 1e-9)


def test_cost_only_execution_skips_kernels():
    mod = _projection(8, 16)
    ex = tvm.relax.build(llm.NNAPIDispatch(["main"])(mod), target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    x = tvm.runtime.tensor(np.ones((8, 16), "float32"))
    w = tvm.runtime.tensor(np.ones((16, 16), "float32"))
    control.reset_counters()
    with control.CostOnlyExecution():
        assert control.cost_only_execution()
        vm["main"](x, w)
        trace = control.last_execution_trace()
    assert not control.cost_only_execution()
    assert trace["cost_only"] is True and trace["modelled_total_us"] > 0
    assert control.operation_count("FULLY_CONNECTED") == 0  # no kernel ran
    out = vm["main"](x, w).numpy()
    np.testing.assert_allclose(out, np.full((8, 16), 16.0))
    assert control.operation_count("FULLY_CONNECTED") == 1


def test_a_plain_module_with_a_symbolic_batch():
    bb = relax.BlockBuilder()
    rows = tvm.tirx.Var("rows", "int64")
    x = relax.Var("x", relax.TensorType([rows, 64], "float32"))
    w = relax.Var("w", relax.TensorType([64, 64], "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(relax.op.matmul(x, relax.op.permute_dims(w)))
            z = bb.emit(relax.op.cumsum(y, axis=1))  # stays on the host
            out = bb.emit_output(relax.op.add(z, x))
        bb.emit_func_output(out)
    mod = bb.get()
    small = estimate(mod, PHONE, {"rows": 4})
    large = estimate(mod, PHONE, {"rows": 4096})
    assert small.entry == "main" and len(small.subgraphs) >= 1
    assert any(r.name == "relax.cumsum" and r.modelled for r in small.host_rows)
    assert large.modelled_speedup > small.modelled_speedup
    assert "MODELLED" in large.format()
    assert mod["main"].params[0].ty.shape.values[0].same_as(rows)  # the module is unchanged


def _projection(rows: int, features: int) -> tvm.IRModule:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([rows, features], "float32"))
    w = relax.Var("w", relax.TensorType([features, features], "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.matmul(x, w))
        bb.emit_func_output(out)
    return bb.get()


def test_bad_shapes_are_named(tiny):
    with pytest.raises(ValueError, match="give a value for the symbolic dimensions"):
        PreparedEstimate(tiny.module, {}, "prefill")
    with pytest.raises(ValueError, match="no symbolic dimension named"):
        PreparedEstimate(tiny.module, {"seq_len": 8, "batch": 2}, "prefill")
    with pytest.raises(ValueError, match="no function named"):
        estimate(tiny.module, PHONE, entry="generate")


def test_full_size_model_is_costed_without_its_weights():
    """Llama-2-7B's prefill (27 GB of float32 weights) within a bounded memory increase."""
    psutil = pytest.importorskip("psutil", reason="needs psutil (the 'test' extra)")
    process = psutil.Process()
    before = process.memory_info().rss
    est = LlmEstimator("llama-2-7b").estimate("prefill", 32, PHONE)
    grown = process.memory_info().rss - before
    assert grown < 2 << 30, f"RSS grew by {grown >> 20} MiB"
    assert sum(s.calls for s in est.subgraphs) == llm.LLAMA2_7B.num_hidden_layers + 1
    weight_bytes = 4 * llm.LLAMA2_7B.parameter_count()
    assert weight_bytes > 25e9
    # Every weight is copied once per prefill (as built): set-up time of all weight bytes.
    assert est.modelled_breakdown_us()["modelled_weight_setup_us"] > 0
    assert 0 < est.modelled_speedup < 1000
