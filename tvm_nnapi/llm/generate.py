# SPDX-License-Identifier: Apache-2.0
"""Text generation over a compiled decoder: embed -> prefill -> decode steps with TVM's paged KV
cache, greedy or sampled (temperature, top-p) from a seeded RNG, stop tokens and streaming.

The KV cache is driven from Python as MLC-LLM's engine does: ``kv_state_add_sequence`` once,
then ``kv_state_begin_forward(seq_ids, lengths)`` / the model function /
``kv_state_end_forward`` per step. Prompts longer than ``prefill_chunk_size`` are prefilled in
chunks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tvm
from tvm import relax

from .config import LlamaConfig

_BUILTINS = ("kv_state_add_sequence", "kv_state_begin_forward", "kv_state_end_forward")
# Inputs of the model functions before their weight parameter.
_MODEL_INPUTS = {"embed": 1, "prefill": 2, "decode": 2}
SEQUENCE_ID = 0


@dataclass(frozen=True)
class SamplingConfig:
    """``temperature == 0`` is greedy (argmax); otherwise softmax(logits / temperature),
    restricted to the smallest set of tokens whose probability reaches ``top_p``."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


def sample_token(logits: np.ndarray, sampling: SamplingConfig, rng: np.random.Generator) -> int:
    """One token from a logits vector."""
    logits = np.asarray(logits, dtype=np.float64).reshape(-1)
    if sampling.temperature == 0.0:
        return int(np.argmax(logits))
    scaled = logits / sampling.temperature
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")
    cumulative = np.cumsum(probs[order])
    # The smallest nucleus whose probability reaches top_p (tolerating rounding of the sum).
    keep = int(np.searchsorted(cumulative, sampling.top_p - 1e-9)) + 1
    kept = order[:keep]
    kept_probs = probs[kept] / probs[kept].sum()
    return int(kept[rng.choice(len(kept), p=kept_probs)])


@dataclass
class GenerationResult:
    """Generated tokens (stop token excluded), the logits after the prompt and why it ended."""

    prompt_tokens: list[int]
    tokens: list[int] = field(default_factory=list)
    prefill_logits: np.ndarray | None = None
    finish_reason: str = "length"  # "length", "stop" or "context"


class LlamaEngine:
    """A compiled decoder (``embed``, ``prefill``, ``decode``, ``create_paged_kv_cache``) with
    its weights, on this process's CPU (NNAPI subgraphs run through their runtime modules), or
    on a ``target`` (:mod:`tvm_nnapi.targets`: the executable, built for its ``compile_target``, is
    loaded there, the weights and the KV cache live there, and this process drives the steps
    over RPC, as MLC-LLM's engine drives them in process).

    ``weights`` are passed to every function that takes them; a function built with its
    weights resident (``build_llm(..., resident_weights=...)``) is called without them, which
    ``takes_weights`` records per function.
    """

    def __init__(
        self,
        executable: relax.VMExecutable | tvm.runtime.Module,
        config: LlamaConfig,
        weights: Sequence[np.ndarray | tvm.runtime.Tensor],
        dtype: str = "float32",
        page_size: int = 16,
        prefill_chunk_size: int | None = None,
        max_total_seq_len: int | None = None,
        target: Any = None,
    ) -> None:
        if target is None:
            from ..targets import MockTarget

            target = MockTarget()
        self.target = target
        self.executable = executable
        self.device = target.cpu()
        self.vm = target.virtual_machine(executable)
        function = target.function
        self.config = config
        self.dtype = dtype
        self.page_size = page_size
        self.prefill_chunk_size = prefill_chunk_size or config.prefill_chunk_size
        self.max_total_seq_len = max_total_seq_len or config.context_window_size
        self.params = [self._on_device(w, dtype) for w in weights]
        # The weight tuple, shape tuples and the items of result tuples are made and read where
        # the program runs (RPC passes tensors, not containers of them).
        self._params_arg = function("ffi.Array")(*self.params)
        self._item: Callable[[Any, int], Any] = function("ffi.ArrayGetItem")
        make_shape = function("ffi.Shape")
        self._shape: Callable[[Sequence[int]], Any] = lambda values: make_shape(
            *[int(v) for v in values]
        )
        self._builtins = {name: function(f"vm.builtin.{name}") for name in _BUILTINS}
        # Whether each model function takes the weights: not when they are bound as constants
        # (build_llm(..., resident_weights=...)), which leaves only its inputs.
        arity = self.vm.module["get_function_arity"]
        self.takes_weights = {
            name: int(arity(name)) > inputs for name, inputs in _MODEL_INPUTS.items()
        }
        self.kv_cache: Any = None
        self.length = 0
        # The int8 weight path's calibration (tvm_nnapi.llm.int8.Calibration), set by
        # build_engine; None for the other paths.
        self.calibration: Any = None

    def _on_device(self, weight: np.ndarray | tvm.runtime.Tensor, dtype: str) -> Any:
        """``weight`` as a tensor on the program's device (kept, not copied, when it is one);
        float weights in ``dtype``."""
        if isinstance(weight, tvm.runtime.Tensor) and weight.device == self.device:
            return weight
        array = weight.numpy() if isinstance(weight, tvm.runtime.Tensor) else weight
        if array.dtype.kind != "f":  # quantized weights keep their integer storage type
            return tvm.runtime.tensor(array, self.device)
        return tvm.runtime.tensor(np.asarray(array, dtype), self.device)

    def nnapi_stats(self) -> dict[str, Any]:
        """The NNAPI runtime's statistics of this engine's program, summed over its NNAPI
        modules (calls, host fallbacks, compilations, cache hits, measured times), read where
        it runs."""
        return dict(self.target.vm_stats(self.vm))

    # ---- KV cache -------------------------------------------------------------------------------

    def reset(self) -> None:
        """A fresh KV cache with one empty sequence."""
        sizes = (1, self.max_total_seq_len, self.prefill_chunk_size, self.page_size, 0)
        self.kv_cache = self.vm["create_paged_kv_cache"](*(self._shape([v]) for v in sizes))
        self._builtins["kv_state_add_sequence"](self.kv_cache, SEQUENCE_ID)
        self.length = 0

    def _forward(self, function: str, embedding: tvm.runtime.Tensor, length: int) -> np.ndarray:
        if self.length + length > self.max_total_seq_len:
            raise ValueError(
                f"{self.length + length} tokens exceed the KV cache's {self.max_total_seq_len}"
            )
        self._builtins["kv_state_begin_forward"](
            self.kv_cache,
            self._shape([SEQUENCE_ID]),
            self._shape([length]),
            None,
        )
        result = self._call(function, embedding, self.kv_cache)
        logits, self.kv_cache = self._item(result, 0), self._item(result, 1)
        self._builtins["kv_state_end_forward"](self.kv_cache)
        self.length += length
        return logits.numpy().reshape(-1)

    def _call(self, function: str, *inputs: Any) -> Any:
        if self.takes_weights[function]:
            return self.vm[function](*inputs, self._params_arg)
        return self.vm[function](*inputs)

    # ---- model steps ----------------------------------------------------------------------------

    def embed(self, tokens: Sequence[int]) -> tvm.runtime.Tensor:
        """``[1, len(tokens), hidden]`` embeddings."""
        array = np.asarray(tokens, dtype="int64")
        outside = array[(array < 0) | (array >= self.config.vocab_size)]
        if outside.size:  # the gather does not check its indices
            raise ValueError(
                f"token id {int(outside[0])} is outside the vocabulary "
                f"(size {self.config.vocab_size})"
            )
        ids = tvm.runtime.tensor(array.astype("int32"), self.device)
        embedding = self._call("embed", ids)
        return embedding._create_view((1, len(tokens), self.config.hidden_size))

    def prefill(self, tokens: Sequence[int]) -> np.ndarray:
        """Append ``tokens`` to the sequence (in chunks of ``prefill_chunk_size``); returns the
        logits (float32, [vocab]) after the last one."""
        if not tokens:
            raise ValueError("prefill needs at least one token")
        if self.kv_cache is None:
            self.reset()
        logits = np.empty(0, np.float32)
        for start in range(0, len(tokens), self.prefill_chunk_size):
            chunk = list(tokens[start : start + self.prefill_chunk_size])
            logits = self._forward("prefill", self.embed(chunk), len(chunk))
        return logits

    def decode(self, token: int) -> np.ndarray:
        """Append one token; returns the logits after it."""
        if self.kv_cache is None:
            raise RuntimeError("decode before prefill")
        return self._forward("decode", self.embed([token]), 1)

    def generate(
        self,
        prompt: Sequence[int],
        max_new_tokens: int = 16,
        sampling: SamplingConfig | None = None,
        stop_tokens: Iterable[int] = (),
        callback: Callable[[int], None] | None = None,
    ) -> GenerationResult:
        """Prefill ``prompt`` in a fresh KV cache, then sample up to ``max_new_tokens`` tokens.

        ``callback`` is called with every generated token as soon as it is sampled (streaming);
        a token in ``stop_tokens`` ends generation and is not returned.
        """
        sampling = sampling or SamplingConfig()
        rng = np.random.default_rng(sampling.seed)
        stops = set(stop_tokens)
        self.reset()
        result = GenerationResult(list(prompt))
        logits = self.prefill(prompt)
        result.prefill_logits = logits
        for step in range(max_new_tokens):
            token = sample_token(logits, sampling, rng)
            if token in stops:
                result.finish_reason = "stop"
                break
            result.tokens.append(token)
            if callback is not None:
                callback(token)
            if step == max_new_tokens - 1:
                break
            if self.length >= self.max_total_seq_len:
                result.finish_reason = "context"
                break
            logits = self.decode(token)
        return result


# ---- text ----------------------------------------------------------------------------------------


def load_tokenizer(path: str | os.PathLike[str]) -> Any:
    """A ``tokenizers.Tokenizer`` from a ``tokenizer.json`` file (or a directory holding one)."""
    from tokenizers import Tokenizer

    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
    if not os.path.isfile(path):
        # The tokenizers library's own message does not name the file.
        raise FileNotFoundError(f"{path}: no such tokenizer file (give a tokenizer.json)")
    try:
        return Tokenizer.from_file(path)
    except Exception as error:  # the library raises a bare Exception
        raise ValueError(
            f"{path}: not a tokenizer.json the tokenizers library reads: {error}"
        ) from error


def generate_text(
    engine: LlamaEngine,
    tokenizer: Any,
    prompt: str,
    max_new_tokens: int = 16,
    sampling: SamplingConfig | None = None,
    stop_tokens: Iterable[int | str] = (),
    stream: Callable[[str], None] | None = None,
) -> tuple[str, GenerationResult]:
    """Encode ``prompt``, generate, decode. ``stream`` receives the text as it grows (each new
    piece once); stop tokens may be given as ids or as token strings."""
    prompt_ids = tokenizer.encode(prompt).ids
    stops = set()
    for stop in stop_tokens:
        token_id = tokenizer.token_to_id(stop) if isinstance(stop, str) else stop
        if token_id is None:
            raise ValueError(f"stop token {stop!r} is not in the tokenizer's vocabulary")
        stops.add(int(token_id))
    generated: list[int] = []
    emitted = ""

    def emit(text: str) -> None:
        nonlocal emitted
        if stream is not None and len(text) > len(emitted) and text.startswith(emitted):
            stream(text[len(emitted) :])
            emitted = text

    def on_token(token: int) -> None:
        generated.append(token)
        # A trailing U+FFFD may be an incomplete UTF-8 sequence (byte-level tokens): hold it back.
        emit(tokenizer.decode(generated).rstrip("\ufffd"))

    result = engine.generate(prompt_ids, max_new_tokens, sampling, stops, on_token)
    text = tokenizer.decode(result.tokens)
    emit(text)
    return text, result
