# SPDX-License-Identifier: Apache-2.0
"""The modelled peak memory of LLM plans (tvm_nnapi.tools.memory): a breakdown worked out by hand,
the partition it assumes, the phones' memory in the profiles (cited), the refusal of float32
Llama-2-7B on an 8 GB phone and the fit of q4f16_1, and the commands that report and refuse."""

from __future__ import annotations

import json
import math

import pytest

from mock_nnapi import device_profiles
from tvm_nnapi import cli
from tvm_nnapi.errors import UsageError
from tvm_nnapi.experiments import memory as experiment_memory
from tvm_nnapi.llm.config import get_config
from tvm_nnapi.tools import memory

from .cli_runner import run_cli

PHONE = "snapdragon-8-gen-2"
GIB = 2**30


# ---- the breakdown, by hand ----------------------------------------------------------------------

# tiny-llama: hidden 64, intermediate 128, 2 layers, 4 query and 2 KV heads of 16, vocabulary 256.
# Per layer: qkv [128, 64] = 8192, o [64, 64] = 4096, gate_up [256, 64] = 16384, down [64, 128] =
# 8192 weights, two norms of 64; embedding and LM head [256, 64] = 16384 each, final norm 64.
LAYER = 8192 + 4096 + 16384 + 8192 + 2 * 64
WEIGHTS = 2 * LAYER + 2 * 16384 + 64
# The prefill's NNAPI subgraphs: norm + qkv; o + norm + gate_up + down + norm + qkv; o + norm +
# gate_up + down + final norm + LM head (the largest).
LAST_SUBGRAPH = 4096 + 64 + 16384 + 8192 + 64 + 16384
OFFLOADED = 2 * LAYER + 64 + 16384  # everything but the embedding lookup


def test_the_breakdown_of_tiny_llama_by_hand():
    config = get_config("tiny-llama")
    assert config.parameter_count() == WEIGHTS
    # A 40-token context is 3 pages of 16; a 32-token prompt; float32 throughout.
    kv = 2 * 2 * 32 * 48 * 4  # keys and values, 2 layers, 2 heads of 16, 48 positions
    activations = 32 * (2 * 64 + 4 * 128) * 4 + 256 * 4  # one layer's live tensors + logits
    host = memory.plan_memory(config, "q0f32", "host", 40, 32)
    assert (host.host_weights_bytes, host.per_call_copy_bytes) == (WEIGHTS * 4, 0)
    assert (host.kv_cache_bytes, host.activation_bytes) == (kv, activations)
    assert host.peak_bytes == WEIGHTS * 4 + kv + activations
    nnapi = memory.plan_memory(config, "q0f32", "nnapi", 40, 32)
    assert nnapi.per_call_copy_bytes == LAST_SUBGRAPH * 4  # the NNAPI runtime's copy
    assert nnapi.nnapi_constant_bytes == nnapi.device_weights_bytes == 0
    resident = memory.plan_memory(config, "q0f32", "nnapi-resident", 40, 32)
    assert resident.nnapi_constant_bytes == resident.device_weights_bytes == OFFLOADED * 4
    assert resident.per_call_copy_bytes == 0
    assert resident.peak_bytes == WEIGHTS * 4 + 2 * OFFLOADED * 4 + kv + activations


def test_the_breakdown_of_group_quantized_weights_by_hand():
    config = get_config("tiny-llama")
    # q4f16_1, a row of 64 inputs: 2 groups = 8 uint32 (32 bytes) + 2 float16 scales (4 bytes);
    # a row of 128 inputs (down_proj): 64 + 8 bytes. Norms stay float16.
    layer = 128 * 36 + 64 * 36 + 256 * 36 + 64 * 72 + 2 * 64 * 2
    weights = 2 * layer + 2 * 256 * 36 + 64 * 2
    host = memory.plan_memory(config, "q4f16_1", "host", 40, 32)
    assert host.host_weights_bytes == weights
    # TVM's host code dequantizes one matrix at a time: the largest, gate_up or the LM head.
    assert host.per_call_copy_bytes == 16384 * 2
    assert host.kv_cache_bytes == 2 * 2 * 32 * 48 * 2  # the cache in float16
    nnapi = memory.plan_memory(config, "q4f16_1", "nnapi", 40, 32)
    # The largest subgraph's weights dequantized on the host, and NNAPI's copy of them.
    assert nnapi.per_call_copy_bytes == 2 * LAST_SUBGRAPH * 2
    resident = memory.plan_memory(config, "q4f16_1", "nnapi-resident", 40, 32)
    assert resident.nnapi_constant_bytes == OFFLOADED * 2  # dequantized once, float16
    # The engine then holds the float model of those values, not the 4-bit weights.
    assert resident.host_weights_bytes == WEIGHTS * 2
    # The dtype names of an unquantized model are its formats.
    assert memory.plan_memory(config, "float16", "host", 40).host_weights_bytes == WEIGHTS * 2


@pytest.mark.parametrize(
    ("name", "quantization"),
    [
        ("tiny-llama", "q4f16_1"),
        ("tiny-llama", "q0f16"),
        ("tiny-qwen", "q4f32_1"),  # QKV bias, the LM head tied to the embedding
        ("tiny-qwen", "q0f32"),
    ],
)
def test_host_weights_are_the_exported_parameters(name, quantization):
    """The host weights are exactly the parameters the model exports in that format."""
    import numpy as np

    from tvm_nnapi.llm.model import export_model

    config = get_config(name)
    _, named_params, _ = export_model(config, quantization=quantization)
    exported = sum(
        math.prod(int(d) for d in p.shape) * np.dtype(p.dtype).itemsize for _, p in named_params
    )
    assert memory.host_weight_bytes(config, quantization) == exported


def test_the_subgraphs_are_those_the_prefill_is_partitioned_into():
    """The per-call copy assumes NNAPIDispatch's partition of the prefill: checked on the real
    partition of tiny-llama and tiny-qwen (QKV bias, tied LM head)."""
    from tvm import relax

    from tvm_nnapi.llm.model import export_model
    from tvm_nnapi.tools.estimate import PreparedEstimate

    for name in ("tiny-llama", "tiny-qwen"):
        config = get_config(name)
        mod, _, _ = export_model(config)
        prepared = PreparedEstimate(mod, {"seq_len": 8}, "prefill")
        found = []
        for sub in prepared._subgraphs.values():
            params = sub.func.params
            found.append(
                sum(
                    math.prod(int(v.value) for v in params[i].ty.shape.values)
                    for i in sub.weight_params
                    if isinstance(params[i].ty, relax.TensorType)
                )
            )
        # Two layers: the first, the one middle and the last subgraph, once each.
        assert sorted(found) == sorted(memory._subgraph_elements(config)), name
        assert sum(found) == memory.offloaded_weight_elements(config), name


# ---- the phones ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", device_profiles.available_profiles())
def test_every_phone_profile_carries_its_cited_memory(name):
    document = device_profiles.load_profile(name)
    phone = memory.phone_memory(document)
    if "soc" not in document:  # reference: one CPU device, not a phone
        assert phone is None
        return
    assert phone is not None and 0 < phone.app_budget_bytes < phone.total_bytes
    assert phone.total_bytes in (4 * GIB, 8 * GIB, 12 * GIB)

    def entry(field):
        [found] = [s for s in document["sources"] if f"soc.{field}" in s["fields"]]
        return found

    ram = entry(memory.RAM_KEY)
    assert ram["estimate"] is False and "http" in ram["source"]  # a cited spec sheet
    assert f"{phone.total_bytes // GIB} GB" in ram["value"]
    budget = entry(memory.BUDGET_KEY)
    assert budget["estimate"] is True  # a stated assumption, with its anchors cited
    assert budget["source"].startswith("Assumption") and "lmkd" in budget["source"]


def test_a_profile_with_a_bad_memory_figure_is_refused():
    document = device_profiles.load_profile(PHONE)
    document["soc"][memory.BUDGET_KEY] = 9
    with pytest.raises(ValueError, match="budget at most the RAM"):
        memory.phone_memory(document)
    del document["soc"][memory.BUDGET_KEY]
    with pytest.raises(ValueError, match=PHONE):
        memory.phone_memory(document)


# ---- the fit of Llama-2-7B on an 8 GB phone ------------------------------------------------------


def test_float32_llama_2_7b_is_refused_on_snapdragon_8_gen_2():
    report = memory.bench_memory_report(get_config("llama-2-7b"), "q0f32", PHONE, 32, 8, True)
    assert [p.plan for p in report.unfit()] == ["nnapi", "nnapi-resident", "host"]
    assert report.plans["host"].host_weights_bytes > 25 * GIB
    with pytest.raises(UsageError) as refused:
        report.refuse()
    message = str(refused.value)
    assert "\n" not in message
    for part in ("llama-2-7b", "q0f32", "plan nnapi", "26.21 GiB", "4.80 GiB", PHONE):
        assert part in message


def test_q4f16_1_llama_2_7b_fits_snapdragon_8_gen_2():
    report = memory.bench_memory_report(get_config("llama-2-7b"), "q4f16_1", PHONE, 32, 8)
    report.refuse()  # nothing to refuse
    host, nnapi = report.plans["host"], report.plans["nnapi"]
    # About 3.8 GB of 4.5-bit weights (4 bits and a float16 scale per 32).
    assert 3.7e9 < host.host_weights_bytes < 3.9e9
    assert host.peak_bytes < nnapi.peak_bytes <= report.phone.app_budget_bytes
    assert report.to_dict()["plans"]["nnapi"]["fits"] is True
    # Dequantized once into resident float16 constants, it does not fit.
    resident = memory.bench_memory_report(get_config("llama-2-7b"), "q4f16_1", PHONE, 32, 8, True)
    assert [p.plan for p in resident.unfit()] == ["nnapi-resident"]


def test_a_profile_without_memory_refuses_nothing():
    report = memory.memory_report(get_config("llama-2-7b"), "q0f32", memory.PLANS, "reference", 8)
    assert report.phone is None and report.unfit() == []
    report.refuse()
    assert "fit not checked" in report.format_lines()[0]
    assert memory.MemoryReport.from_dict(report.to_dict()).to_dict() == report.to_dict()


def test_the_experiments_mark_what_does_not_fit():
    results = {
        "dtype": "float32",
        "models": ["llama-2-7b", "tinyllama-1.1b"],
        "profiles": [PHONE],
        "prompt_lengths": [32],
        "weights": ["input"],
        "records": [
            {"model": m, "phase": "prefill", "length": 32, "profile": PHONE, "weights": "input"}
            for m in ("llama-2-7b", "tinyllama-1.1b")
        ],
    }
    experiment_memory.annotate(results)
    assert [r["fits_memory"] for r in results["records"]] == [False, True]
    table = experiment_memory.memory_table(results)
    assert "| llama-2-7b | all-host | 25.14 GiB | **does not fit** |" in table
    assert "| tinyllama-1.1b | NNAPI, weights `input` | 4.49 GiB | fits |" in table


# ---- the commands -------------------------------------------------------------------------------


def test_llm_bench_refuses_float32_llama_2_7b_before_any_work(capsys, target):
    if target.name != "mock":
        pytest.skip("the LLM commands run the model in process (mock target)")
    argv = ["llm", "bench", "--estimate-model", "llama-2-7b", "--profile", PHONE]
    assert cli.main([*argv, "--repeat", "1", "--decode-tokens", "1"]) == 2
    err = capsys.readouterr().err
    assert "does not fit" in err and "llama-2-7b" in err and "Traceback" not in err


def test_estimate_reports_the_peak_memory_of_an_llm():
    completed = run_cli(
        "estimate", "llm:tiny-llama", "--profile", PHONE, "--shapes", "seq_len=8", "--json"
    )
    document = json.loads(completed.stdout)["estimate"]["memory"]
    assert document["phone"]["profile"] == PHONE
    assert set(document["plans"]) == {"nnapi", "host"}
    assert all(plan["fits"] and plan["modelled"] for plan in document["plans"].values())
    text = run_cli("estimate", "llm:tiny-llama", "--profile", PHONE, "--shapes", "seq_len=8")
    assert "MODELLED peak memory per plan" in text.stdout and "fits" in text.stdout
