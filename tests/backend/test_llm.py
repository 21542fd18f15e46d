# SPDX-License-Identifier: Apache-2.0
"""LLM integration: a tiny MLC-style Llama with its prefill offloaded to NNAPI (the mock) generates
the same tokens as TVM's pure host llvm build of the same module.

Everything is local: random weights (or a tiny checkpoint written here), a tokenizer trained
here on a few sentences. Builds are shared per configuration through module-scoped fixtures.
"""

from __future__ import annotations

import importlib.util
import json
import struct
from dataclasses import dataclass

import numpy as np
import pytest
import tvm

import mock_nnapi
import tvm_nnapi
from tvm_nnapi import llm, runtime

HAS_SAFETENSORS = importlib.util.find_spec("safetensors") is not None
HAS_TOKENIZERS = importlib.util.find_spec("tokenizers") is not None
needs_safetensors = pytest.mark.skipif(
    not HAS_SAFETENSORS, reason="needs the optional 'safetensors' package (pip install safetensors)"
)
needs_tokenizers = pytest.mark.skipif(
    not HAS_TOKENIZERS, reason="needs the optional 'tokenizers' package (pip install tokenizers)"
)

PROMPTS = [[1, 2, 3], [5, 17, 99, 200, 3, 4, 8], list(range(10, 50))]
# Prefill logits: fp32 differs in summation order only; fp16 rounds intermediate results.
TOLERANCE = {"float32": {"rtol": 1e-4, "atol": 1e-4}, "float16": {"rtol": 2e-2, "atol": 5e-2}}


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the LLM tests drive the KV cache in process; they run on the mock target")


@dataclass
class Builds:
    config: llm.LlamaConfig
    dtype: str
    mod: tvm.IRModule
    params: list[tuple[str, list[int]]]
    weights: list[np.ndarray]
    nnapi: llm.LlamaEngine  # prefill offloaded to NNAPI
    host: llm.LlamaEngine  # the oracle: the same module built for llvm only


# The Qwen-style configuration (QKV bias, tied LM head) also covers float16.
CONFIGURATIONS = [("tiny-llama", "float32"), ("tiny-qwen", "float16")]


@pytest.fixture(scope="module")
def build_cache() -> dict[tuple[str, str], Builds]:
    return {}


def _builds(cache: dict[tuple[str, str], Builds], name: str, dtype: str) -> Builds:
    """Export and build (once per module) the NNAPI and the host variants of a configuration."""
    if (name, dtype) not in cache:
        config = llm.get_config(name)
        mod, named_params, _ = llm.export_model(config, dtype)
        params = llm.param_specs(named_params)
        weights = llm.random_weights(params, dtype, seed=7)
        nnapi = llm.LlamaEngine(llm.build_llm(mod, ["prefill"]), config, weights, dtype)
        host = llm.LlamaEngine(llm.build_llm(mod, []), config, weights, dtype)
        cache[(name, dtype)] = Builds(config, dtype, mod, params, weights, nnapi, host)
    return cache[(name, dtype)]


@pytest.fixture(params=CONFIGURATIONS, ids=lambda p: f"{p[0]}-{p[1]}")
def builds(request, build_cache) -> Builds:
    return _builds(build_cache, *request.param)


@pytest.fixture
def fp32(build_cache) -> Builds:
    return _builds(build_cache, "tiny-llama", "float32")


def test_prefill_is_offloaded_and_attention_stays_on_the_host(builds):
    report = llm.offload_report(builds.mod, builds.config, seq_len=16)
    layers = builds.config.num_hidden_layers
    offloaded = report.offloaded_operators
    # Every projection (q/k/v, o, gate/up, down per layer, plus the LM head) goes to NNAPI.
    assert offloaded["relax.matmul"] == 4 * layers + 1
    assert offloaded["relax.nn.rms_norm"] == 2 * layers + 1
    assert offloaded["relax.nn.silu"] == layers and offloaded["relax.split"] == layers
    # Only the attention through the KV cache builtin stays on the host.
    assert dict(report.host_operators) == {"relax.call_dps_packed": layers}
    assert report.flop_share > 0.99
    assert 0.5 < report.flop_share_with_attention < report.flop_share
    assert all(r.operator == "relax.call_dps_packed" for r in report.refusals)


def test_dispatch_pass_in_a_pipeline_partitions_only_prefill(fp32):
    dispatch = llm.NNAPIDispatch(["prefill"], run_codegen=False)
    mod = tvm.transform.Sequential([dispatch])(fp32.mod)
    subgraphs = tvm_nnapi.nnapi_subgraphs(mod)
    assert subgraphs and all(name.startswith("prefill_nnapi_") for name in subgraphs)
    tvm.ir.assert_structural_equal(mod["decode"], fp32.mod["decode"])
    assert {r.operator for r in dispatch.refusals} == {"relax.call_dps_packed"}


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda p: f"{len(p)}tokens")
def test_nnapi_prefill_generates_the_same_greedy_tokens_as_llvm(builds, prompt):
    layers = builds.config.num_hidden_layers
    before = mock_nnapi.operation_count("FULLY_CONNECTED")
    stats_before = _subgraph_calls(builds.nnapi)
    offloaded = builds.nnapi.generate(prompt, max_new_tokens=6)
    # One prefill: 4 projections per layer and the LM head, nothing from the decode steps.
    assert mock_nnapi.operation_count("FULLY_CONNECTED") - before == 4 * layers + 1
    assert _subgraph_calls(builds.nnapi) > stats_before

    reference = builds.host.generate(prompt, max_new_tokens=6)
    assert offloaded.tokens == reference.tokens
    np.testing.assert_allclose(
        offloaded.prefill_logits, reference.prefill_logits, **TOLERANCE[builds.dtype]
    )
    assert offloaded.prefill_logits.dtype == np.float32


def _subgraph_calls(engine: llm.LlamaEngine) -> int:
    """NNAPI executions of the engine's subgraphs so far (runtime statistics)."""
    return sum(s["nnapi_calls"] for s in runtime.stats(engine.executable).values())


def test_decode_stays_on_the_host(fp32):
    assert all(name.startswith("prefill_nnapi_") for name in runtime.stats(fp32.nnapi.executable))
    fp32.nnapi.reset()
    fp32.nnapi.prefill([3, 1, 4, 1, 5])
    before = mock_nnapi.counter("executions_completed")
    fp32.nnapi.decode(9)
    assert mock_nnapi.counter("executions_completed") == before


def test_chunked_prefill_matches_one_chunk(fp32):
    prompt = list(range(40))
    whole = fp32.nnapi.prefill_chunk_size
    chunked = llm.LlamaEngine(
        fp32.nnapi.executable, fp32.config, fp32.weights, prefill_chunk_size=16
    )
    assert whole >= len(prompt)
    chunked.reset()
    fp32.host.reset()
    np.testing.assert_allclose(
        chunked.prefill(prompt), fp32.host.prefill(prompt), rtol=1e-4, atol=1e-4
    )
    assert chunked.length == len(prompt)


def test_sampling_is_seeded_and_top_p_narrows_to_greedy(fp32):
    prompt = PROMPTS[1]
    hot = llm.SamplingConfig(temperature=1.5, top_p=0.95, seed=3)
    first = fp32.nnapi.generate(prompt, 8, hot)
    again = fp32.nnapi.generate(prompt, 8, hot)
    on_host = fp32.host.generate(prompt, 8, hot)
    assert first.tokens == again.tokens == on_host.tokens
    seeds = [llm.SamplingConfig(1.5, 0.95, seed) for seed in range(4)]
    other_seeds = {tuple(fp32.nnapi.generate(prompt, 8, s).tokens) for s in seeds}
    assert len(other_seeds) > 1
    greedy = fp32.nnapi.generate(prompt, 8)
    nucleus_of_one = fp32.nnapi.generate(prompt, 8, llm.SamplingConfig(1.0, top_p=1e-6, seed=5))
    assert nucleus_of_one.tokens == greedy.tokens


def test_sample_token_respects_top_p():
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    rng = np.random.default_rng(0)
    sampling = llm.SamplingConfig(temperature=1.0, top_p=0.75)
    drawn = {llm.sample_token(logits, sampling, rng) for _ in range(200)}
    assert drawn == {0, 1}
    with pytest.raises(ValueError, match="top_p"):
        llm.SamplingConfig(top_p=0.0)


def test_stop_tokens_and_streaming(fp32):
    prompt = PROMPTS[0]
    greedy = fp32.nnapi.generate(prompt, 6).tokens
    streamed: list[int] = []
    stopped = fp32.nnapi.generate(prompt, 6, stop_tokens=[greedy[3]], callback=streamed.append)
    assert stopped.tokens == greedy[: greedy.index(greedy[3])]
    assert stopped.finish_reason == "stop"
    assert streamed == stopped.tokens


# ---- the runtime's device selection for decode ---------------------------------------------------


def test_decode_offloaded_too_is_placed_per_shape_by_the_runtime_policy(fp32):
    executable = llm.build_llm(fp32.mod, ["prefill", "decode"], host_fallback=True)
    saved = runtime.options_in_effect()
    try:
        # Per call: decode subgraphs < 0.1 MFLOP go to the host, prefills of 40 tokens to NNAPI.
        runtime.configure(policy="threshold:100000")
        engine = llm.LlamaEngine(executable, fp32.config, fp32.weights)
        result = engine.generate(PROMPTS[2], max_new_tokens=4)
        stats = runtime.stats(executable)
        # A new prompt length is a new shape signature, placed by the policy in effect.
        runtime.configure(policy="host")
        before = mock_nnapi.counter("executions_completed")
        on_host = engine.generate(list(range(60, 72)), max_new_tokens=4)
        assert mock_nnapi.counter("executions_completed") == before
    finally:
        runtime.configure(**saved)
    assert result.tokens == fp32.host.generate(PROMPTS[2], max_new_tokens=4).tokens
    assert on_host.tokens == fp32.host.generate(list(range(60, 72)), max_new_tokens=4).tokens
    decode = {k: v for k, v in stats.items() if k.startswith("decode_nnapi_")}
    prefill = {k: v for k, v in stats.items() if k.startswith("prefill_nnapi_")}
    assert decode and all(s["host_calls"] == s["calls"] == 3 for s in decode.values())
    assert prefill and all(s["nnapi_calls"] == s["calls"] >= 1 for s in prefill.values())


# ---- weights -------------------------------------------------------------------------------------


@needs_safetensors
def test_safetensors_round_trip_with_hugging_face_names(tmp_path):
    config = llm.TINY_QWEN.replace(tie_word_embeddings=False)
    params = llm.param_specs(config)
    weights = llm.random_weights(params, seed=1)
    tensors = llm.to_hf_tensors(config, params, weights)
    assert "model.layers.1.self_attn.k_proj.bias" in tensors
    assert tensors["model.layers.0.self_attn.k_proj.weight"].shape == (config.kv_size, 64)
    assert "model.layers.0.mlp.gate_proj.weight" in tensors and "lm_head.weight" in tensors
    llm.save_safetensors(tensors, tmp_path / "model.safetensors")

    loaded = llm.load_safetensors(tmp_path, config, params)
    for (name, _), expected, actual in zip(params, weights, loaded, strict=True):
        np.testing.assert_array_equal(actual, expected, err_msg=name)
    half = llm.load_safetensors(tmp_path / "model.safetensors", config, params, "float16")
    assert half[0].dtype == np.float16


@needs_safetensors
def test_missing_or_misshaped_tensor_is_named(tmp_path):
    config = llm.TINY
    params = llm.param_specs(config)
    tensors = llm.to_hf_tensors(config, params, llm.random_weights(params))
    missing = dict(tensors)
    del missing["model.layers.1.self_attn.k_proj.weight"]
    llm.save_safetensors(missing, tmp_path / "missing.safetensors")
    with pytest.raises(llm.WeightError, match=r"'model\.layers\.1\.self_attn\.k_proj\.weight'"):
        llm.load_safetensors(tmp_path / "missing.safetensors", config, params)

    wrong = dict(tensors)
    wrong["model.norm.weight"] = np.ones(63, np.float32)
    llm.save_safetensors(wrong, tmp_path / "wrong.safetensors")
    with pytest.raises(llm.WeightError, match=r"'model\.norm\.weight' has shape \[63\].*\[64\]"):
        llm.load_safetensors(tmp_path / "wrong.safetensors", config, params)


def test_bfloat16_tensors_are_read_as_float32(tmp_path):
    values = np.array([[1.0, -2.5], [3.0, 0.15625]], np.float32)
    raw = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    header = json.dumps({"x": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}})
    path = tmp_path / "bf16.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header.encode() + raw)
    np.testing.assert_array_equal(llm.SafetensorsCheckpoint(path).get("x"), values)


# ---- text ----------------------------------------------------------------------------------------


@needs_tokenizers
def test_text_generation_with_a_local_tokenizer(fp32, tmp_path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    # A SentencePiece-style BPE (as Llama's) trained here, small enough for the tiny vocabulary.
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>", "<s>", "</s>"])
    subjects = ["the cat", "a dog", "my bird", "the fox", "our horse", "a small mouse"]
    verbs = ["sat on", "ran to", "jumped over", "looked at", "slept near", "walked around"]
    places = ["the mat", "a red box", "the green park", "an old tree", "the blue river"]
    sentences = [f"{s} {v} {p}" for s in subjects for v in verbs for p in places]
    tokenizer.train_from_iterator(sentences, trainer)
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    tokenizer = llm.load_tokenizer(tmp_path)
    assert tokenizer.get_vocab_size() <= fp32.config.vocab_size

    pieces: list[str] = []
    text, result = llm.generate_text(
        fp32.nnapi, tokenizer, "the cat sat", 12, stop_tokens=["</s>"], stream=pieces.append
    )
    assert result.prompt_tokens == tokenizer.encode("the cat sat").ids
    assert text and "".join(pieces) == text == tokenizer.decode(result.tokens)
    host_text, _ = llm.generate_text(fp32.host, tokenizer, "the cat sat", 12, stop_tokens=["</s>"])
    assert text == host_text


def test_token_ids_outside_the_vocabulary_are_refused(fp32):
    with pytest.raises(ValueError, match="token id 256 is outside the vocabulary"):
        fp32.nnapi.generate([1, 256], max_new_tokens=1)


def test_configuration_from_a_hugging_face_config_json(tmp_path):
    config_json = {  # the fields of TinyLlama-1.1B-Chat-v1.0's config.json that matter here
        "model_type": "llama",
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_hidden_layers": 22,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "vocab_size": 32000,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
    }
    (tmp_path / "config.json").write_text(json.dumps(config_json))
    config = llm.LlamaConfig.from_hf_config(tmp_path / "config.json", name="tinyllama-1.1b")
    assert config == llm.TINYLLAMA_1_1B
    assert config.head_dim == 64 and config.kv_size == 256
    assert 1.0e9 < config.parameter_count() < 1.2e9
    qwen = llm.LlamaConfig.from_hf_config({**config_json, "model_type": "qwen2"})
    assert qwen.qkv_bias
