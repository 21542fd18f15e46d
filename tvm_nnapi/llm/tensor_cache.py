# SPDX-License-Identifier: Apache-2.0
"""MLC-LLM weight directories: the tensor cache (``tensor-cache.json``, or the older
``ndarray-cache.json``, and its ``params_shard_*.bin``) plus ``mlc-chat-config.json``.

The cache's JSON lists shards (``dataPath``, ``format: "raw-shard"``, ``nbytes``) and, in each,
the records of its tensors (``name``, ``shape``, ``dtype``, ``format``: ``raw`` or
``f32-to-bf16``, ``byteOffset``, ``nbytes``). TVM reads and writes it
(``tvm.contrib.tvmjs.load_tensor_cache``/``dump_tensor_cache``); this module checks a directory
against the model first, so that a mismatch is one line naming the file and the parameter
instead of an assertion deep in the reader.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import WeightError
from .config import LlamaConfig
from .quantization import Quantization, get_quantization

__all__ = ["CACHE_FILES", "is_tensor_cache", "load_tensor_cache", "save_tensor_cache"]

#: Names of the cache's JSON, newest first.
CACHE_FILES = ("tensor-cache.json", "ndarray-cache.json")
CHAT_CONFIG = "mlc-chat-config.json"
_ENCODINGS = ("raw", "f32-to-bf16")


def _cache_json(directory: Path) -> Path | None:
    for name in CACHE_FILES:
        if (directory / name).is_file():
            return directory / name
    return None


def is_tensor_cache(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an MLC weight directory (or its cache JSON)."""
    path = Path(path)
    if path.is_file():
        return path.name in CACHE_FILES
    return path.is_dir() and _cache_json(path) is not None


def _records(cache: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The cache's metadata and its tensor records by name, each with its shard's path; every
    shard checked to exist with the size the JSON gives."""
    try:
        document = json.loads(cache.read_text(encoding="utf-8"))
        shards = document["records"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise WeightError(f"{cache}: not an MLC tensor cache ({error})") from None
    records: dict[str, dict[str, Any]] = {}
    for shard in shards:
        data = cache.parent / str(shard.get("dataPath", ""))
        if shard.get("format") != "raw-shard":
            raise WeightError(
                f"{cache}: shard {data.name} has unknown format {shard.get('format')!r}"
            )
        if not data.is_file():
            raise WeightError(f"{cache}: shard file {data} is missing")
        if data.stat().st_size != shard.get("nbytes"):
            raise WeightError(
                f"{data}: {data.stat().st_size} bytes, {cache.name} says {shard.get('nbytes')}"
            )
        for record in shard.get("records", []):
            end = int(record.get("byteOffset", 0)) + int(record.get("nbytes", 0))
            if end > int(shard["nbytes"]):
                raise WeightError(
                    f"{data}: tensor {record.get('name')!r} runs past the shard's end"
                )
            records[str(record.get("name"))] = {**record, "_shard": data}
    return dict(document.get("metadata") or {}), records


def _check_quantization(directory: Path, q: Quantization) -> None:
    config = directory / CHAT_CONFIG
    if not config.is_file():
        return
    try:
        name = json.loads(config.read_text(encoding="utf-8")).get("quantization")
    except ValueError as error:
        raise WeightError(f"{config}: not JSON ({error})") from None
    if name is not None and name != q.name:
        raise WeightError(f"{config}: weights are quantized as {name}, the model as {q.name}")


def load_tensor_cache(
    path: str | os.PathLike[str],
    params: Sequence[tuple[str, Sequence[int]]],
    quantization: str | Quantization,
    dtypes: Sequence[str],
) -> list[Any]:
    """The model's parameters (``params``: ``(name, shape)`` in order, ``dtypes`` alike) read
    from an MLC weight directory as TVM tensors on the CPU.

    Raises :class:`WeightError` naming the file and the parameter for a missing shard or
    tensor, a wrong shape or dtype, an unknown encoding, or a directory quantized otherwise
    (``mlc-chat-config.json``'s ``quantization``).
    """
    import tvm
    from tvm.contrib import tvmjs

    path = Path(path)
    cache = path if path.is_file() else _cache_json(path)
    if cache is None:
        raise WeightError(f"{path}: no {' or '.join(CACHE_FILES)} (not an MLC weight directory)")
    q = get_quantization(quantization)
    _check_quantization(cache.parent, q)
    _, records = _records(cache)
    for (name, shape), dtype in zip(params, dtypes, strict=True):
        record = records.get(name)
        if record is None:
            raise WeightError(f"{cache}: parameter {name!r} is missing")
        if list(record.get("shape", [])) != list(shape):
            raise WeightError(
                f"{record['_shard']}: parameter {name!r} has shape {record.get('shape')}, the "
                f"model expects {list(shape)}"
            )
        if record.get("dtype") != dtype:
            raise WeightError(
                f"{record['_shard']}: parameter {name!r} is {record.get('dtype')}, the model "
                f"expects {dtype}"
            )
        if record.get("format") not in _ENCODINGS:
            raise WeightError(
                f"{record['_shard']}: parameter {name!r} has unknown encoding "
                f"{record.get('format')!r} (known: {', '.join(_ENCODINGS)})"
            )
        as_bf16 = record["format"] == "f32-to-bf16" and dtype == "float32"
        itemsize = 2 if as_bf16 else np.dtype(dtype).itemsize
        expected = int(np.prod(shape, dtype=np.int64)) * itemsize
        if int(record.get("nbytes", -1)) != expected:
            raise WeightError(
                f"{record['_shard']}: parameter {name!r} holds {record.get('nbytes')} bytes, "
                f"its shape and dtype need {expected}"
            )
    tensors, _ = tvmjs.load_tensor_cache(str(cache), tvm.cpu())
    return [tensors[name] for name, _ in params]


def save_tensor_cache(
    directory: str | os.PathLike[str],
    named: Sequence[tuple[str, np.ndarray]],
    config: LlamaConfig,
    quantization: str | Quantization,
) -> Path:
    """Write parameters as an MLC weight directory (raw encoding, TVM's writer) with an
    ``mlc-chat-config.json`` that names the quantization and the model's shape. Returns the
    cache JSON's path."""
    from tvm.contrib import tvmjs

    q = get_quantization(quantization)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # TVM's writer reports its progress on standard output: keep it off the command's output.
    with contextlib.redirect_stdout(io.StringIO()):
        tvmjs.dump_tensor_cache(
            dict(named),
            str(directory),
            encode_format="raw",
            meta_data={"ParamSize": len(named)},
            show_progress=False,
        )
    chat_config = {
        "model_type": "llama",
        "quantization": q.name,
        "model_config": {
            "hidden_size": config.hidden_size,
            "intermediate_size": config.intermediate_size,
            "num_hidden_layers": config.num_hidden_layers,
            "num_attention_heads": config.num_attention_heads,
            "num_key_value_heads": config.num_key_value_heads,
            "head_dim": config.head_dim,
            "vocab_size": config.vocab_size,
            "rms_norm_eps": config.rms_norm_eps,
            "rope_theta": config.rope_theta,
            "tie_word_embeddings": config.tie_word_embeddings,
            "context_window_size": config.context_window_size,
            "prefill_chunk_size": config.prefill_chunk_size,
        },
        "context_window_size": config.context_window_size,
        "prefill_chunk_size": config.prefill_chunk_size,
    }
    (directory / CHAT_CONFIG).write_text(json.dumps(chat_config, indent=2) + "\n", encoding="utf-8")
    return directory / CACHE_FILES[0]
