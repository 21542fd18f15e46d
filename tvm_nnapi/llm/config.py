# SPDX-License-Identifier: Apache-2.0
"""Llama-family model configurations: the full-size models of the evaluation and tiny ones for
tests.

The numbers of the named configurations come from each model's public ``config.json`` on the
Hugging Face hub (cited per entry); nothing is downloaded at run time.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from typing import Any, cast


@dataclass(frozen=True)
class LlamaConfig:
    """Hyper-parameters of a Llama-family decoder (Llama, Mistral, Qwen, TinyLlama)."""

    name: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int
    head_dim: int = 0  # 0: hidden_size // num_attention_heads
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    qkv_bias: bool = False  # Qwen1.5/Qwen2 have biases on the q, k and v projections
    tie_word_embeddings: bool = False
    context_window_size: int = 2048  # max_position_embeddings
    prefill_chunk_size: int = 2048  # the longest prefill in one call

    def __post_init__(self) -> None:
        if self.head_dim == 0:
            if self.hidden_size % self.num_attention_heads:
                raise ValueError(
                    f"{self.name}: hidden_size {self.hidden_size} is not a multiple of "
                    f"num_attention_heads {self.num_attention_heads}; give head_dim"
                )
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_attention_heads)
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"{self.name}: num_attention_heads {self.num_attention_heads} is not a multiple "
                f"of num_key_value_heads {self.num_key_value_heads}"
            )
        if self.prefill_chunk_size > self.context_window_size:
            object.__setattr__(self, "prefill_chunk_size", self.context_window_size)

    @property
    def q_size(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_key_value_heads * self.head_dim

    def replace(self, **changes: Any) -> LlamaConfig:
        """A copy with some fields changed (e.g. fewer layers for a quick experiment)."""
        return dataclasses.replace(self, **changes)

    def parameter_count(self) -> int:
        """Number of weights (embedding, layers, final norm and LM head)."""
        h, i = self.hidden_size, self.intermediate_size
        attention = h * (self.q_size + 2 * self.kv_size) + self.q_size * h
        if self.qkv_bias:
            attention += self.q_size + 2 * self.kv_size
        layer = attention + 3 * h * i + 2 * h
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        return self.vocab_size * h + self.num_hidden_layers * layer + h + head

    @classmethod
    def from_hf_config(cls, config: dict[str, Any] | str | os.PathLike[str], **overrides: Any):
        """Read a Hugging Face ``config.json`` (a dict or a path) of a Llama, Mistral or Qwen2
        model."""
        if not isinstance(config, dict):
            path = os.fspath(config)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{path}: no such config file (give a config.json)")
            try:
                with open(path, encoding="utf-8") as file:
                    config = cast(dict[str, Any], json.load(file))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}: not a JSON config: {error}") from None
            missing = [
                key
                for key in (
                    "hidden_size",
                    "intermediate_size",
                    "num_hidden_layers",
                    "num_attention_heads",
                    "vocab_size",
                )
                if key not in config
            ]
            if missing:
                raise ValueError(
                    f"{path}: not a Llama-family config.json (no {', '.join(missing)})"
                )
        model_type = str(config.get("model_type", "llama"))
        heads = int(config["num_attention_heads"])
        values: dict[str, Any] = {
            "name": str(config.get("_name_or_path") or model_type),
            "hidden_size": int(config["hidden_size"]),
            "intermediate_size": int(config["intermediate_size"]),
            "num_hidden_layers": int(config["num_hidden_layers"]),
            "num_attention_heads": heads,
            "num_key_value_heads": int(config.get("num_key_value_heads") or heads),
            "vocab_size": int(config["vocab_size"]),
            "head_dim": int(config.get("head_dim") or 0),
            "rope_theta": float(config.get("rope_theta", 10000.0)),
            "rms_norm_eps": float(config.get("rms_norm_eps", 1e-6)),
            "qkv_bias": bool(config.get("attention_bias", model_type in ("qwen2",))),
            "tie_word_embeddings": bool(config.get("tie_word_embeddings", False)),
            "context_window_size": int(config.get("max_position_embeddings", 2048)),
        }
        values["prefill_chunk_size"] = min(values["context_window_size"], 2048)
        values.update(overrides)
        return cls(**values)


# https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json
LLAMA2_7B = LlamaConfig(
    name="llama-2-7b",
    hidden_size=4096,
    intermediate_size=11008,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=32,
    vocab_size=32000,
    rope_theta=10000.0,
    rms_norm_eps=1e-5,
    context_window_size=4096,
)

# https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json (sliding_window 4096 is
# not modelled: prompts here stay below it).
MISTRAL_7B = LlamaConfig(
    name="mistral-7b",
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=32000,
    rope_theta=10000.0,
    rms_norm_eps=1e-5,
    context_window_size=32768,
)

# https://huggingface.co/Qwen/Qwen2-7B-Instruct/blob/main/config.json (Qwen2: GQA, QKV bias).
QWEN2_7B = LlamaConfig(
    name="qwen2-7b",
    hidden_size=3584,
    intermediate_size=18944,
    num_hidden_layers=28,
    num_attention_heads=28,
    num_key_value_heads=4,
    vocab_size=152064,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
    qkv_bias=True,
    context_window_size=32768,
)

# https://huggingface.co/Qwen/Qwen1.5-7B/blob/main/config.json (Qwen1.5: MHA, QKV bias).
QWEN1_5_7B = LlamaConfig(
    name="qwen1.5-7b",
    hidden_size=4096,
    intermediate_size=11008,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=32,
    vocab_size=151936,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
    qkv_bias=True,
    context_window_size=32768,
)

# https://huggingface.co/TinyLlama/TinyLlama-1.1B-Chat-v1.0/blob/main/config.json
TINYLLAMA_1_1B = LlamaConfig(
    name="tinyllama-1.1b",
    hidden_size=2048,
    intermediate_size=5632,
    num_hidden_layers=22,
    num_attention_heads=32,
    num_key_value_heads=4,
    vocab_size=32000,
    rope_theta=10000.0,
    rms_norm_eps=1e-5,
    context_window_size=2048,
)

# Tiny configurations for tests and simulations: seconds to build, random or local weights.
TINY = LlamaConfig(
    name="tiny-llama",
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=256,
    context_window_size=256,
    prefill_chunk_size=64,
)

# Qwen2-0.5B style: QKV bias and an LM head tied to the embedding.
TINY_QWEN = TINY.replace(
    name="tiny-qwen",
    qkv_bias=True,
    tie_word_embeddings=True,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
)

CONFIGS: dict[str, LlamaConfig] = {
    c.name: c
    for c in (LLAMA2_7B, MISTRAL_7B, QWEN2_7B, QWEN1_5_7B, TINYLLAMA_1_1B, TINY, TINY_QWEN)
}


def get_config(name: str) -> LlamaConfig:
    """A named configuration (``llama-2-7b``, ``mistral-7b``, ``qwen2-7b``, ``qwen1.5-7b``,
    ``tinyllama-1.1b``, ``tiny-llama``, ``tiny-qwen``)."""
    try:
        return CONFIGS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, sorted(CONFIGS), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ValueError(
            f"unknown model configuration {name!r}; {hint}known: {', '.join(sorted(CONFIGS))}"
        ) from None
