# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi llm generate`` and ``tvm-nnapi llm bench`` on tiny-llama, with a tokenizer
trained here (nothing is downloaded)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tvm_nnapi import cli, llm

needs_tokenizers = pytest.mark.skipif(
    importlib.util.find_spec("tokenizers") is None,
    reason="needs the optional 'tokenizers' package (pip install '.[llm]')",
)


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the LLM commands run the model in process (mock target)")


def _tokenizer(path) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>", "<s>", "</s>"])
    subjects = ["the cat", "a dog", "my bird", "the fox", "our horse", "a small mouse"]
    verbs = ["sat on", "ran to", "jumped over", "looked at", "slept near", "walked around"]
    places = ["the mat", "a red box", "the green park", "an old tree", "the blue river"]
    tokenizer.train_from_iterator(
        [f"{s} {v} {p}" for s in subjects for v in verbs for p in places], trainer
    )
    tokenizer.save(str(path / "tokenizer.json"))
    return str(path / "tokenizer.json")


def _run_json(capsys, argv: list[str]) -> dict:
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


@needs_tokenizers
def test_generate_with_a_tokenizer_on_nnapi_and_host_agree(tmp_path, capsys):
    path = _tokenizer(tmp_path)
    common = ["llm", "generate", "--tokenizer", path, "--prompt", "the cat sat"]
    common += ["--max-new-tokens", "6", "--json"]
    nnapi = _run_json(capsys, [*common, "--nnapi"])
    assert nnapi["placement"] == "nnapi" and len(nnapi["tokens"]) == 6
    # The host build, streaming (no --json): the same greedy text appears on stdout.
    assert cli.main([*common[:-1], "--host"]) == 0
    out = capsys.readouterr()
    assert "6 tokens in" in out.err and "host only" in out.err
    assert out.out.rstrip("\n") == nnapi["text"]


def test_generate_token_ids_and_bad_input(capsys):
    argv = ["llm", "generate", "--tokens", "1,2,3", "--max-new-tokens", "4", "--host", "--json"]
    result = _run_json(capsys, argv)
    assert result["prompt_tokens"] == [1, 2, 3] and len(result["tokens"]) == 4
    assert cli.main(["llm", "generate", "--prompt", "hello"]) == 2  # bad input
    assert "--prompt needs --tokenizer" in capsys.readouterr().err
    assert cli.main(["llm", "generate", "--tokens", "1,x"]) == 2  # bad input
    assert "comma-separated integers" in capsys.readouterr().err
    assert cli.main(["llm", "generate", "--tokens", "1", "--top-p", "0"]) == 2  # bad input
    assert "top_p" in capsys.readouterr().err
    missing = ["llm", "generate", "--tokens", "1", "--weights", "/nonexistent.safetensors"]
    assert cli.main(missing) == 2  # bad input
    assert "does not exist" in capsys.readouterr().err
    if llm.LLAMA2_7B.parameter_count() * 4 < 0.8 * _physical_memory():
        pytest.skip("this machine could hold Llama-2-7B's weights")
    assert cli.main(["llm", "generate", "--model", "llama-2-7b", "--tokens", "1"]) == 2
    assert "GiB of float32 weights" in capsys.readouterr().err


def test_bench_refuses_weights_it_could_not_hold_in_both_builds(capsys):
    """`llm bench` keeps the NNAPI and host builds at once: the memory check counts both."""
    if 2 * llm.LLAMA2_7B.parameter_count() * 4 < 0.8 * _physical_memory():
        pytest.skip("this machine could hold two builds of Llama-2-7B's weights")
    argv = ["llm", "bench", "--model", "llama-2-7b", "--prompt-length", "8", "--repeat", "1"]
    assert cli.main([*argv, "--decode-tokens", "1"]) == 2
    err = capsys.readouterr().err
    assert "GiB of float32 weights (2 builds at once)" in err
    assert "--estimate-model llama-2-7b" in err and "Traceback" not in err


def _physical_memory() -> int:
    import os

    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def test_bench_reports_measured_and_modelled(capsys):
    argv = ["llm", "bench", "--prompt-length", "8", "--decode-tokens", "2", "--repeat", "1"]
    result = _run_json(capsys, [*argv, "--json"])
    assert "mock_nnapi" in result["measured_on"]
    for label in ("nnapi", "host"):
        assert result["measured"][label]["prefill_seconds"] > 0
    modelled = result["modelled"]
    assert modelled["profile"] == "snapdragon-8-gen-2"
    assert modelled["prefill"]["modelled_speedup"] > 0
    assert all(key.startswith("modelled") for key in modelled["prefill"])
    assert cli.main([*argv[:2], "--repeat", "0"]) == 2  # bad input
    assert "must be >= 1" in capsys.readouterr().err
