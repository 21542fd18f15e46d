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
    trainer = trainers.BpeTrainer(vocab_size=120, special_tokens=["<unk>", "<s>", "</s>"])
    words = ["the cat sat on the mat", "a dog ran to the park", "my bird looked at a tree"]
    tokenizer.train_from_iterator(words * 5, trainer)
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
    host = _run_json(capsys, [*common, "--host"])
    assert nnapi["placement"] == "nnapi" and host["placement"] == "host"
    assert len(nnapi["tokens"]) == 6 and nnapi["tokens"] == host["tokens"]
    assert nnapi["text"] == host["text"]
    # Streaming (no --json): the text appears on stdout as it is generated.
    assert cli.main([*common[:-1], "--host", "--temperature", "0.8", "--seed", "3"]) == 0
    out = capsys.readouterr()
    assert out.out.strip() and "tokens in" in out.err


def test_generate_token_ids_and_bad_input(capsys):
    result = _run_json(
        capsys, ["llm", "generate", "--tokens", "1,2,3", "--max-new-tokens", "4", "--json"]
    )
    assert result["prompt_tokens"] == [1, 2, 3] and len(result["tokens"]) == 4
    with pytest.raises(SystemExit, match="--prompt needs --tokenizer"):
        cli.main(["llm", "generate", "--prompt", "hello"])
    with pytest.raises(SystemExit, match="comma-separated integers"):
        cli.main(["llm", "generate", "--tokens", "1,x"])
    with pytest.raises(SystemExit, match="top_p"):
        cli.main(["llm", "generate", "--tokens", "1", "--top-p", "0"])
    with pytest.raises(SystemExit, match="GiB of float32 weights"):
        if llm.LLAMA2_7B.parameter_count() * 4 < 0.8 * _physical_memory():
            pytest.skip("this machine could hold Llama-2-7B's weights")
        cli.main(["llm", "generate", "--model", "llama-2-7b", "--tokens", "1"])
    with pytest.raises(SystemExit, match="does not exist"):
        cli.main(["llm", "generate", "--tokens", "1", "--weights", "/nonexistent.safetensors"])


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
    with pytest.raises(SystemExit, match="must be >= 1"):
        cli.main([*argv[:2], "--repeat", "0"])
