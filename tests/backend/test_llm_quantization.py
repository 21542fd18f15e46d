# SPDX-License-Identifier: Apache-2.0
"""MLC-LLM's weight formats: the group quantizer, the quantized model's parameters, both ways
quantized weights reach NNAPI, MLC weight directories and the commands' --quantization."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tvm_nnapi import cli, llm
from tvm_nnapi.errors import WeightError
from tvm_nnapi.llm.engine import build_engine, load_weights
from tvm_nnapi.llm.model import export_model
from tvm_nnapi.llm.quantization import (
    QUANTIZATIONS,
    dequantize_weight,
    get_quantization,
    quantize_weight,
)
from tvm_nnapi.llm.tensor_cache import load_tensor_cache, save_tensor_cache

Q4 = get_quantization("q4f16_1")
PROMPT = [1, 2, 3, 4, 5]


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the LLM engine runs in process here (mock target)")


# ---- the quantizer -------------------------------------------------------------------------------


def test_packing_puts_the_first_value_in_the_lowest_bits():
    # One group of 32 values: scale = max|w| / 7 = 1; stored = w + 7.
    weight = np.zeros((1, 32), np.float32)
    weight[0, :8] = [-7, -6, -1, 0, 1, 2, 6, 7]
    q_weight, q_scale = quantize_weight(weight, Q4)
    assert q_weight.dtype == np.uint32 and q_weight.shape == (1, 4)
    assert q_scale.dtype == np.float16 and q_scale.shape == (1, 1) and q_scale[0, 0] == 1
    stored = [0, 1, 6, 7, 8, 9, 13, 14]
    assert int(q_weight[0, 0]) == sum(v << (4 * i) for i, v in enumerate(stored))
    assert all(int(word) == 0x77777777 for word in q_weight[0, 1:])  # zeros stored as 7


@pytest.mark.parametrize("name", ["q4f16_1", "q4f32_1"])
def test_round_trip_error_is_at_most_half_a_step(name):
    q = get_quantization(name)
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((6, 70)).astype(q.model_dtype)  # 70: the last group padded
    q_weight, q_scale = quantize_weight(weight, q)
    assert q_weight.shape == (6, 12) and q_scale.shape == (6, 3)
    restored = dequantize_weight(q_weight, q_scale, q, 70)
    assert restored.shape == weight.shape and restored.dtype == np.dtype(q.model_dtype)
    step = np.repeat(q_scale.astype(np.float32), 32, axis=1)[:, :70]
    error = np.abs(restored.astype(np.float32) - weight.astype(np.float32))
    assert np.all(error <= 0.5 * step + 1e-3 * np.abs(weight))


def test_a_group_of_zeros_stays_zero():
    weight = np.zeros((2, 64), np.float32)
    weight[1, 40] = 3.0
    q_weight, q_scale = quantize_weight(weight, Q4)
    restored = dequantize_weight(q_weight, q_scale, Q4, 64)
    assert np.all(np.isfinite(restored)) and restored[0].max() == 0 and restored[1, 40] == 3


def test_unknown_format_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown quantization 'q3f16_1'.*q4f16_1"):
        get_quantization("q3f16_1")


# ---- the model -----------------------------------------------------------------------------------


def test_quantized_parameters_have_mlc_names_shapes_and_dtypes():
    _, named, _ = export_model(llm.TINY, quantization="q4f16_1")
    params = {name: (list(p.shape), str(p.dtype)) for name, p in named}
    h, i, v = llm.TINY.hidden_size, llm.TINY.intermediate_size, llm.TINY.vocab_size
    qkv = llm.TINY.q_size + 2 * llm.TINY.kv_size
    assert params["model.embed_tokens.q_weight"] == ([v, h // 8], "uint32")
    assert params["model.embed_tokens.q_scale"] == ([v, h // 32], "float16")
    assert params["model.layers.0.self_attn.qkv_proj.q_weight"] == ([qkv, h // 8], "uint32")
    assert params["model.layers.1.mlp.down_proj.q_scale"] == ([h, i // 32], "float16")
    assert params["lm_head.q_weight"] == ([v, h // 8], "uint32")
    assert params["model.layers.0.input_layernorm.weight"] == ([h], "float16")
    assert not any(name.endswith("proj.weight") for name in params)


def test_q4_prefill_on_nnapi_gives_the_host_builds_tokens_both_ways():
    """Dequantized on the host at every call (weights as FULLY_CONNECTED inputs) and
    dequantized once at load (resident constants): both the host build's greedy tokens."""
    tokens = {}
    for label, nnapi, resident in [("host", False, False), ("input", True, False)]:
        engine = build_engine(llm.TINY, "float32", nnapi, None, 0, resident, quantization=Q4)
        tokens[label] = engine.generate(PROMPT, max_new_tokens=6).tokens
        if nnapi:
            assert engine.nnapi_stats()["nnapi_calls"] > 0
    engine = build_engine(llm.TINY, "float32", True, None, 0, True, quantization="q4f32_1")
    tokens["resident"] = engine.generate(PROMPT, max_new_tokens=6).tokens
    assert engine.nnapi_stats()["nnapi_calls"] > 0
    assert tokens["input"] == tokens["host"]
    # q4f32_1 holds the same 4-bit values with float32 scales: the same greedy tokens here.
    assert tokens["resident"] == tokens["host"]


def test_safetensors_are_quantized_like_the_random_weights_they_hold(tmp_path):
    float_specs = llm.param_specs(llm.TINY)
    floats = llm.random_weights(float_specs, "float16", seed=3)
    llm.save_safetensors(
        llm.to_hf_tensors(llm.TINY, float_specs, floats), tmp_path / "model.safetensors"
    )
    _, named, _ = export_model(llm.TINY, quantization=Q4)
    from_file = load_weights(llm.TINY, Q4, named, str(tmp_path / "model.safetensors"), 0)
    from_seed = load_weights(llm.TINY, Q4, named, None, seed=3)
    for a, b in zip(from_file, from_seed, strict=True):
        np.testing.assert_array_equal(a, b)


# ---- MLC weight directories ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def mlc_dir(tmp_path_factory):
    """tiny-llama's random q4f16_1 weights (seed 0) written as an MLC weight directory."""
    directory = tmp_path_factory.mktemp("mlc")
    _, named, _ = export_model(llm.TINY, quantization=Q4)
    arrays = load_weights(llm.TINY, Q4, named, None, 0)
    save_tensor_cache(
        directory, [(n, a) for (n, _), a in zip(named, arrays, strict=True)], llm.TINY, Q4
    )
    return directory


def _specs(quantization="q4f16_1"):
    _, named, _ = export_model(llm.TINY, quantization=quantization)
    return llm.param_specs(named), [str(p.dtype) for _, p in named]


def test_tensor_cache_round_trip(mlc_dir):
    specs, dtypes = _specs()
    loaded = load_tensor_cache(mlc_dir, specs, Q4, dtypes)
    _, named, _ = export_model(llm.TINY, quantization=Q4)
    for tensor, array in zip(loaded, load_weights(llm.TINY, Q4, named, None, 0), strict=True):
        np.testing.assert_array_equal(tensor.numpy(), array)
    config = json.loads((mlc_dir / "mlc-chat-config.json").read_text())
    assert config["quantization"] == "q4f16_1"
    assert config["model_config"]["hidden_size"] == llm.TINY.hidden_size


def _copy(mlc_dir, tmp_path):
    import shutil

    target = tmp_path / "weights"
    shutil.copytree(mlc_dir, target)
    return target


def _edit_first_record(directory, **changes):
    cache = directory / "tensor-cache.json"
    document = json.loads(cache.read_text())
    document["records"][0]["records"][0].update(changes)
    cache.write_text(json.dumps(document))


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda d: (d / "params_shard_0.bin").unlink(),
            r"shard file .*params_shard_0.bin is missing",
        ),
        (
            lambda d: _edit_first_record(d, shape=[256, 9]),
            r"'model.embed_tokens.q_weight' has shape",
        ),
        (lambda d: _edit_first_record(d, dtype="int32"), r"'model.embed_tokens.q_weight' is int32"),
        (lambda d: _edit_first_record(d, format="lz4"), r"unknown encoding 'lz4'"),
        (
            lambda d: _edit_first_record(d, name="model.embed.q_weight"),
            r"parameter 'model.embed_tokens.q_weight' is missing",
        ),
        (
            lambda d: (d / "mlc-chat-config.json").write_text('{"quantization": "q4f32_1"}'),
            r"quantized as q4f32_1, the model as q4f16_1",
        ),
    ],
    ids=["missing-shard", "shape", "dtype", "encoding", "missing-parameter", "quantization"],
)
def test_a_mismatched_directory_is_refused_naming_file_and_parameter(
    mlc_dir, tmp_path, damage, message
):
    directory = _copy(mlc_dir, tmp_path)
    damage(directory)
    specs, dtypes = _specs()
    with pytest.raises(WeightError, match=message) as error:
        load_tensor_cache(directory, specs, Q4, dtypes)
    assert "\n" not in str(error.value) and str(directory) in str(error.value)


# ---- the commands --------------------------------------------------------------------------------


def _run_json(capsys, argv: list[str]) -> dict:
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_convert_then_generate_from_the_directory(tmp_path, capsys):
    assert (
        cli.main(["llm", "convert-weight", "--quantization", "q4f16_1", "-o", str(tmp_path)]) == 0
    )
    assert "wrote 25 parameters" in capsys.readouterr().out
    common = ["llm", "generate", "--tokens", "1,2,3,4,5", "--max-new-tokens", "5", "--json"]
    common += ["--quantization", "q4f16_1"]
    from_dir = _run_json(capsys, [*common, "--weights", str(tmp_path)])
    from_seed = _run_json(capsys, [*common, "--host"])
    assert from_dir["quantization"] == "q4f16_1" and from_dir["placement"] == "nnapi"
    assert from_dir["target_stats"]["nnapi_calls"] > 0
    assert from_dir["tokens"] == from_seed["tokens"]


def test_generate_refuses_a_directory_of_another_format(mlc_dir, capsys):
    argv = ["llm", "generate", "--tokens", "1,2", "--quantization", "q4f32_1"]
    assert cli.main([*argv, "--weights", str(mlc_dir)]) == 2
    err = capsys.readouterr().err
    assert "quantized as q4f16_1, the model as q4f32_1" in err and "Traceback" not in err


def test_dtype_and_quantization_must_agree(capsys):
    argv = ["llm", "generate", "--tokens", "1", "--quantization", "q4f16_1", "--dtype", "float32"]
    assert cli.main(argv) == 2
    assert "--dtype float32 contradicts --quantization q4f16_1" in capsys.readouterr().err


def test_explain_names_the_host_dequantization(capsys):
    document = _run_json(
        capsys, ["explain", "llm:tiny-llama", "--quantization", "q4f16_1", "--json"]
    )
    reasons = [r["reason"] for r in document["explain"]["refusals"]]
    assert any("dequantized by this TVM kernel on the host" in r for r in reasons)
    assert document["model"]["quantization"] == "q4f16_1"
    projections = document["explain"]["projections"]
    assert [p["path"] for p in projections] == ["input"] * len(projections)
    assert any(p["projection"] == "lm_head" for p in projections)
    assert all("dequantized on the host" in p["why"] for p in projections)


def test_resident_estimate_of_a_4_bit_model_is_its_float_model_on_nnapi(capsys):
    """Dequantized once at load, the resident build runs the float model of the values on
    NNAPI; the all-host program stays the quantized model either way."""
    argv = ["estimate", "llm:tiny-llama:q4f16_1", "--shapes", "seq_len=32", "--json"]
    argv += ["--profile", "snapdragon-8-gen-2"]
    totals = {}
    for weights in ("input", "resident"):
        document = _run_json(capsys, [*argv, "--weights", weights])
        totals[weights] = document["estimate"]["totals"]
    assert totals["resident"]["modelled_host_program_us"] == pytest.approx(
        totals["input"]["modelled_host_program_us"]
    )
    # No dequantization on the host, no weight copies: the resident program is faster.
    assert (
        totals["resident"]["modelled_nnapi_program_us"]
        < totals["input"]["modelled_nnapi_program_us"]
    )
    assert (
        totals["resident"]["modelled_host_operators_us"]
        < (totals["input"]["modelled_host_operators_us"])
    )


def test_quantization_flag_needs_an_llm(capsys):
    assert cli.main(["explain", "mobilenet_v2_small", "--quantization", "q4f16_1"]) == 2
    assert "--quantization applies to llm: models" in capsys.readouterr().err


def test_every_format_is_offered():
    assert set(QUANTIZATIONS) == {"q0f32", "q0f16", "q4f16_1", "q4f32_1"}
