# SPDX-License-Identifier: Apache-2.0
"""MLC-LLM's weight formats: ``q0f32``, ``q0f16`` (unquantized) and ``q4f16_1``, ``q4f32_1``
(group quantization), with MLC-LLM's parameter layout and names.

Group quantization (``q4f16_1``, ``q4f32_1``), as MLC-LLM defines it:

- every ``nn.Linear`` weight ``[out, in]`` (the LM head included) and the embedding table
  ``[vocab, hidden]`` is quantized along its last axis in groups of ``group_size`` (32) values;
- a group's scale is ``max(|w|) / 7`` in the model's float type; a value is stored as
  ``clip(round(w / scale) + 7, 0, 14)``, a 4-bit unsigned integer; eight of them are packed into
  one ``uint32``, the first in the lowest bits;
- ``<name>.weight`` becomes ``<name>.q_weight`` (``uint32[out, ceil(in / 32) * 4]``, the last
  group padded with zeros) and ``<name>.q_scale`` (``float16`` or ``float32``
  ``[out, ceil(in / 32)]``); norms and biases stay in the model's float type;
- dequantization is ``(q - 7) * scale``.

Everything here is numpy: the model (:mod:`tvm_nnapi.llm.model`) dequantizes in TVM code.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "QUANTIZATIONS",
    "Quantization",
    "dequantize_weight",
    "get_quantization",
    "quantize_params",
    "quantize_weight",
]


@dataclass(frozen=True)
class Quantization:
    """One weight format: unquantized (``bits == 0``) or group-quantized."""

    name: str
    model_dtype: str  # the float type of activations, scales, norms and biases
    bits: int = 0  # bits per quantized weight; 0: weights stay in model_dtype
    group_size: int = 0
    storage_dtype: str = "uint32"

    @property
    def quantized(self) -> bool:
        return self.bits > 0

    @property
    def elements_per_storage(self) -> int:
        return np.dtype(self.storage_dtype).itemsize * 8 // self.bits

    @property
    def max_int(self) -> int:
        """The stored value of a zero weight (7 for 4 bits)."""
        return 2 ** (self.bits - 1) - 1

    def groups(self, in_features: int) -> int:
        return -(-in_features // self.group_size)

    def storage_columns(self, in_features: int) -> int:
        """Columns of ``q_weight`` for a weight with ``in_features`` columns."""
        return self.groups(in_features) * self.group_size // self.elements_per_storage

    def bytes_per_weight(self) -> float:
        """Bytes per weight of a quantized matrix, scales included (``in`` a multiple of the
        group size); of the float type when unquantized."""
        float_bytes = np.dtype(self.model_dtype).itemsize
        if not self.quantized:
            return float(float_bytes)
        return self.bits / 8 + float_bytes / self.group_size


#: The formats, by MLC-LLM's names.
QUANTIZATIONS: dict[str, Quantization] = {
    "q0f32": Quantization("q0f32", "float32"),
    "q0f16": Quantization("q0f16", "float16"),
    "q4f16_1": Quantization("q4f16_1", "float16", bits=4, group_size=32),
    "q4f32_1": Quantization("q4f32_1", "float32", bits=4, group_size=32),
}


def get_quantization(name: str | Quantization) -> Quantization:
    """The format called ``name``; ``ValueError`` naming the known ones otherwise."""
    if isinstance(name, Quantization):
        return name
    if name not in QUANTIZATIONS:
        raise ValueError(
            f"unknown quantization {name!r} (known: {', '.join(sorted(QUANTIZATIONS))})"
        )
    return QUANTIZATIONS[name]


def quantize_weight(weight: np.ndarray, q: Quantization) -> tuple[np.ndarray, np.ndarray]:
    """``(q_weight, q_scale)`` of a 2-D float weight in group format ``q``."""
    if not q.quantized:
        raise ValueError(f"{q.name} does not quantize weights")
    if weight.ndim != 2:
        raise ValueError(f"a group-quantized weight is 2-D, got shape {list(weight.shape)}")
    rows, columns = weight.shape
    q_weight = np.empty((rows, q.storage_columns(columns)), q.storage_dtype)
    q_scale = np.empty((rows, q.groups(columns)), q.model_dtype)
    # In blocks of rows: the temporaries stay small next to a large matrix (an embedding).
    block = max(1, _BLOCK_ELEMENTS // max(1, columns))
    for row in range(0, rows, block):
        end = min(rows, row + block)
        q_weight[row:end], q_scale[row:end] = _quantize_rows(weight[row:end], q)
    return q_weight, q_scale


_BLOCK_ELEMENTS = 1 << 20


def _quantize_rows(weight: np.ndarray, q: Quantization) -> tuple[np.ndarray, np.ndarray]:
    rows, columns = weight.shape
    groups = q.groups(columns)
    padded = np.zeros((rows, groups * q.group_size), dtype=q.model_dtype)
    padded[:, :columns] = weight
    grouped = padded.reshape(rows, groups, q.group_size)
    scale = (np.abs(grouped).max(axis=2) / np.asarray(q.max_int, q.model_dtype)).astype(
        q.model_dtype
    )
    # A group of zeros has scale 0: its values are stored as zero (max_int).
    divisor = np.where(scale == 0, 1, scale).astype(np.float32)[:, :, None]
    stored = np.rint(grouped.astype(np.float32) / divisor) + q.max_int
    stored = np.clip(stored, 0, 2 * q.max_int).astype(q.storage_dtype)
    per = q.elements_per_storage
    stored = stored.reshape(rows, -1, per)
    shifts = (np.arange(per, dtype=q.storage_dtype) * q.bits).astype(q.storage_dtype)
    packed = np.bitwise_or.reduce(stored << shifts, axis=2).astype(q.storage_dtype)
    return packed, scale


def dequantize_weight(
    q_weight: np.ndarray, q_scale: np.ndarray, q: Quantization, in_features: int
) -> np.ndarray:
    """The float weight ``[rows, in_features]`` (in ``q.model_dtype``) that
    ``(q_weight, q_scale)`` stand for."""
    per = q.elements_per_storage
    shifts = (np.arange(per, dtype=q.storage_dtype) * q.bits).astype(q.storage_dtype)
    mask = np.asarray((1 << q.bits) - 1, q.storage_dtype)
    values = (q_weight[:, :, None] >> shifts) & mask
    values = values.reshape(q_weight.shape[0], -1)[:, :in_features]
    dtype = np.dtype(q.model_dtype)
    scales = np.repeat(q_scale, q.group_size, axis=1)[:, :in_features]
    return (values.astype(dtype) - dtype.type(q.max_int)) * scales.astype(dtype)


def quantized_names(name: str) -> tuple[str, str] | None:
    """``(q_weight, q_scale)`` names of a float parameter that group quantization replaces, or
    ``None`` for one it keeps (norms, biases)."""
    if not name.endswith(".weight") or name.endswith("norm.weight"):
        return None
    stem = name[: -len(".weight")]
    return f"{stem}.q_weight", f"{stem}.q_scale"


def quantize_params(
    float_specs: Sequence[tuple[str, Sequence[int]]],
    arrays: Iterator[np.ndarray] | Sequence[np.ndarray],
    q: Quantization,
) -> Iterator[tuple[str, np.ndarray]]:
    """Quantize float parameters (``float_specs``: the unquantized model's ``(name, shape)``,
    ``arrays`` in that order) into ``(name, array)`` pairs of the quantized model, one float
    array at a time (so that a caller reading weights lazily holds one float matrix at once)."""
    for (name, _), array in zip(float_specs, arrays, strict=True):
        names = quantized_names(name) if q.quantized else None
        if names is None:
            yield name, np.ascontiguousarray(np.asarray(array).astype(q.model_dtype))
            continue
        q_weight, q_scale = quantize_weight(np.asarray(array), q)
        yield names[0], q_weight
        yield names[1], q_scale
