# SPDX-License-Identifier: Apache-2.0
"""Weights of the decoder: loading Hugging Face Llama checkpoints (safetensors) or random ones.

Hugging Face names (``model.layers.N.self_attn.q_proj.weight``, ...) map onto the parameters of
:class:`tvm_nnapi.llm.model.LlamaForCausalLM`; the fused projections are concatenations along
the output axis (as in MLC-LLM's loader):

- ``qkv_proj.weight`` = q_proj.weight ++ k_proj.weight ++ v_proj.weight (and ``.bias``)
- ``gate_up_proj.weight`` = gate_proj.weight ++ up_proj.weight

A checkpoint is one ``.safetensors`` file, several, or a directory (with or without
``model.safetensors.index.json``). ``safetensors`` is an optional dependency, needed only here.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import WeightError
from .config import LlamaConfig
from .quantization import (
    Quantization,
    dequantize_weight,
    get_quantization,
    quantize_params,
    quantized_names,
)

# Suffixes of fused parameters and the Hugging Face tensors concatenated into them (axis 0).
_FUSED: dict[str, tuple[str, ...]] = {
    ".self_attn.qkv_proj.weight": (
        ".self_attn.q_proj.weight",
        ".self_attn.k_proj.weight",
        ".self_attn.v_proj.weight",
    ),
    ".self_attn.qkv_proj.bias": (
        ".self_attn.q_proj.bias",
        ".self_attn.k_proj.bias",
        ".self_attn.v_proj.bias",
    ),
    ".mlp.gate_up_proj.weight": (".mlp.gate_proj.weight", ".mlp.up_proj.weight"),
}

ParamSpec = Sequence[tuple[str, Sequence[int]]]


def hf_sources(param_name: str) -> tuple[str, ...]:
    """The Hugging Face tensor names that make up one model parameter."""
    for suffix, parts in _FUSED.items():
        if param_name.endswith(suffix):
            prefix = param_name[: -len(suffix)]
            return tuple(prefix + part for part in parts)
    return (param_name,)


def param_specs(
    source: Iterable[tuple[str, Any]] | LlamaConfig,
) -> list[tuple[str, list[int]]]:
    """``(name, shape)`` of the model's parameters, in the order of the packed parameter tuple
    of ``embed``/``prefill``/``decode``: from the ``named_params`` that ``export_model``
    returns, or from a configuration (without exporting)."""
    named: Iterable[tuple[str, Any]]
    if isinstance(source, LlamaConfig):
        from .model import LlamaForCausalLM

        named = LlamaForCausalLM(source).named_parameters()
    else:
        named = source
    return [(name, [int(d) for d in param.shape]) for name, param in named]


# ---- reading safetensors -------------------------------------------------------------------------


def _checkpoint_files(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
) -> list[Path]:
    if isinstance(path, str | os.PathLike):
        path = Path(path)
        if path.is_dir():
            index = path / "model.safetensors.index.json"
            if index.exists():
                weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
                return [path / name for name in dict.fromkeys(weight_map.values())]
            files = sorted(path.glob("*.safetensors"))
            if not files:
                raise WeightError(f"no .safetensors file in {path}")
            return files
        return [path]
    return [Path(p) for p in path]


class SafetensorsCheckpoint:
    """Lazy access to the tensors of one or more safetensors files (BF16 is read as float32)."""

    def __init__(self, path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> None:
        self.files = _checkpoint_files(path)
        self._where: dict[str, Path] = {}
        for file in self.files:
            if not file.exists():
                raise WeightError(f"checkpoint file {file} does not exist")
            for name in _read_header(file):
                self._where[name] = file

    def names(self) -> list[str]:
        return sorted(self._where)

    def __contains__(self, name: str) -> bool:
        return name in self._where

    def shape(self, name: str) -> list[int]:
        return list(_read_header(self._where[name])[name]["shape"])

    def get(self, name: str) -> np.ndarray:
        file = self._where[name]
        entry = _read_header(file)[name]
        if entry["dtype"] == "BF16":
            return _read_bf16(file, entry)
        from safetensors import safe_open

        with safe_open(str(file), framework="numpy") as handle:
            return handle.get_tensor(name)


def _read_header(file: Path) -> dict[str, dict]:
    with open(file, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    header.pop("__metadata__", None)
    return header


def _read_bf16(file: Path, entry: Mapping) -> np.ndarray:
    """bfloat16 (numpy has no such dtype): the upper half of a float32."""
    with open(file, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        begin, end = entry["data_offsets"]
        handle.seek(8 + length + begin)
        raw = np.frombuffer(handle.read(end - begin), dtype="<u2")
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(entry["shape"])


# ---- mapping onto the model ----------------------------------------------------------------------


def load_safetensors(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    config: LlamaConfig,
    params: ParamSpec,
    dtype: str = "float32",
) -> list[np.ndarray]:
    """Read a Hugging Face checkpoint into the model's parameter order.

    ``params`` is ``[(name, shape), ...]`` (see :func:`param_specs`). Raises
    :class:`WeightError` naming the first missing or mis-shaped Hugging Face tensor.
    """
    return list(iter_safetensors(path, config, params, dtype))


def iter_safetensors(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    config: LlamaConfig,
    params: ParamSpec,
    dtype: str = "float32",
) -> Iterator[np.ndarray]:
    """:func:`load_safetensors` one parameter at a time (each read when it is asked for)."""
    checkpoint = SafetensorsCheckpoint(path)
    for name, shape in params:
        parts = []
        sources = hf_sources(name)
        for source in sources:
            if source not in checkpoint:
                where = ", ".join(str(f) for f in checkpoint.files)
                raise WeightError(
                    f"tensor {source!r} (for parameter {name!r}) is missing from {where}"
                )
            parts.append(checkpoint.get(source))
        expected_rows = _part_rows(config, name, int(shape[0]), len(sources))
        for source, part, rows in zip(sources, parts, expected_rows, strict=True):
            expected = [rows, *shape[1:]]
            if list(part.shape) != expected:
                raise WeightError(
                    f"tensor {source!r} has shape {list(part.shape)}, the model expects "
                    f"{expected} (for parameter {name!r})"
                )
        array = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)
        del parts
        yield np.ascontiguousarray(array.astype(dtype))


def _part_rows(config: LlamaConfig, name: str, rows: int, count: int) -> list[int]:
    """Rows of each Hugging Face part of a (possibly fused) parameter with ``rows`` rows."""
    if count == 1:
        return [rows]
    if ".self_attn.qkv_proj." in name:  # q, k, v differ in size under grouped-query attention
        return [config.q_size, config.kv_size, config.kv_size]
    return [rows // count] * count


def to_hf_tensors(
    config: LlamaConfig, params: ParamSpec, arrays: Sequence[np.ndarray]
) -> dict[str, np.ndarray]:
    """The inverse mapping: the model's parameters as Hugging Face tensors (to write a
    checkpoint, e.g. for tests)."""
    tensors = {}
    for (name, _), array in zip(params, arrays, strict=True):
        sources = hf_sources(name)
        if len(sources) == 1:
            tensors[name] = np.ascontiguousarray(array)
            continue
        rows = _part_rows(config, name, array.shape[0], len(sources))
        offsets = np.cumsum(rows)[:-1]
        for source, part in zip(sources, np.split(array, offsets, axis=0), strict=True):
            tensors[source] = np.ascontiguousarray(part)
    return tensors


def save_safetensors(tensors: Mapping[str, np.ndarray], path: str | os.PathLike[str]) -> None:
    """Write tensors to one safetensors file."""
    from safetensors.numpy import save_file

    save_file(dict(tensors), str(path))


def random_weights(params: ParamSpec, dtype: str = "float32", seed: int = 0) -> list[np.ndarray]:
    """Random weights for simulation: N(0, 1/fan_in) matrices, norm weights near 1, embeddings
    N(0, 1)."""
    return list(iter_random_weights(params, dtype, seed))


def iter_random_weights(
    params: ParamSpec, dtype: str = "float32", seed: int = 0
) -> Iterator[np.ndarray]:
    """:func:`random_weights` one parameter at a time (the same values)."""
    rng = np.random.default_rng(seed)
    for name, shape in params:
        shape = list(shape)
        kind = (
            "norm"
            if name.endswith("norm.weight")
            else "bias"
            if name.endswith(".bias")
            else "embedding"
            if "embed_tokens" in name
            else "matrix"
        )
        # Drawn in blocks of rows (the same values as one draw of the whole shape, without its
        # float64 copy of the matrix).
        array = np.empty(shape, dtype)
        flat = array.reshape(shape[0] if shape else 1, -1)
        block = max(1, _DRAW_BLOCK_ELEMENTS // max(1, flat.shape[1]))
        for row in range(0, flat.shape[0], block):
            rows = flat[row : row + block]
            rows[...] = _random_values(kind, rng.standard_normal(rows.shape), shape[-1])
        yield array


_DRAW_BLOCK_ELEMENTS = 1 << 22


def _random_values(kind: str, normal: np.ndarray, fan_in: int) -> np.ndarray:
    """Standard normal draws scaled for a parameter of ``kind``."""
    if kind == "norm":
        return 1.0 + 0.1 * normal
    if kind == "bias":
        return 0.1 * normal
    if kind == "embedding":
        return normal
    return normal / np.sqrt(fan_in)


def quantized_weights(
    float_params: ParamSpec,
    float_arrays: Iterable[np.ndarray],
    params: ParamSpec,
    quantization: str | Quantization,
) -> list[np.ndarray]:
    """Quantize float weights (``float_arrays`` in the order of ``float_params``, the
    unquantized model's specs; read lazily when an iterator) into the parameter order ``params``
    of the model in ``quantization``. Raises :class:`WeightError` naming the first parameter
    whose name or shape differs from the model's."""
    q = get_quantization(quantization)
    arrays = []
    expected = iter(params)
    for name, array in quantize_params(float_params, iter(float_arrays), q):
        want = next(expected, None)
        if want is None or want[0] != name or list(want[1]) != list(array.shape):
            model = f"{want[0]!r} {list(want[1])}" if want else "nothing more"
            raise WeightError(
                f"quantizing to {q.name} gave {name!r} {list(array.shape)}, the model "
                f"expects {model}"
            )
        arrays.append(array)
    if (rest := next(expected, None)) is not None:
        raise WeightError(f"parameter {rest[0]!r} was not produced by quantizing to {q.name}")
    return arrays


def dequantized_weights(
    float_params: ParamSpec,
    params: ParamSpec,
    arrays: Sequence[np.ndarray],
    quantization: str | Quantization,
) -> list[np.ndarray]:
    """The float weights, in the order of ``float_params`` (the unquantized model's specs),
    that quantized ``arrays`` (in the order of ``params``) stand for: what "dequantize once at
    load" holds."""
    q = get_quantization(quantization)
    position = {name: index for index, (name, _) in enumerate(params)}
    floats = []
    for name, shape in float_params:
        names = quantized_names(name) if q.quantized else None
        if names is None:
            floats.append(arrays[position[name]])
            continue
        q_weight, q_scale = (arrays[position[n]] for n in names)
        floats.append(dequantize_weight(q_weight, q_scale, q, int(shape[1])))
    return floats
