# SPDX-License-Identifier: Apache-2.0
"""The ``int8`` weight path: projections requantized to NNAPI's int8 forms (W8A8).

NNAPI has no 4-bit type. This path takes the float values of the model's weights (a
group-quantized format's dequantized values, or float weights) and runs each projection on
NNAPI in 8 bits:

- **weights**: int8, symmetric, one scale per output channel (``max |w| / 127`` of the row;
  ``TENSOR_QUANT8_SYMM_PER_CHANNEL``), bound as constants of prefill's NNAPI subgraphs;
- **activations**: uint8 (``TENSOR_QUANT8_ASYMM``), one static scale and zero point per tensor
  for each projection's input and output, from the ranges a **calibration run** records: TVM's
  host build of the float model of the same weights over a few fixed prompts
  (:func:`tvm_nnapi.llm.calibration.calibrate`). A range always includes 0, so that zero is exact.

A projection is written in Relax's QDQ form (:class:`Int8Linear`)::

    quantize(x) -> dequantize -> matmul(., permute_dims(dequantize(int8 W, per-channel scales)))
      -> quantize -> dequantize

which the backend's quantized matmul lowering turns into QUANTIZE -> CONV_2D 1x1 with a
per-channel filter (FULLY_CONNECTED has no per-channel weights) -> DEQUANTIZE on NNAPI; the rest
of the model (RMSNorm, SiLU, residual adds) stays in the model's float type. TVM's host build of
the same module computes the same QDQ arithmetic in float: it is the differential reference of
the NNAPI build. Decode runs that host build (it is not offloaded).

Which projections take the path is a :class:`ProjectionPlan` (:func:`plan_projections`), with a
reason for each; the LM head of a model with tied embeddings keeps float weights (its table is
also the embedding, which the host reads in float).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm import relax
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import Tensor

from .config import LlamaConfig

__all__ = [
    "ActivationQuant",
    "Calibration",
    "Int8Linear",
    "ProjectionPlan",
    "RangeLinear",
    "calibration_prompts",
    "int8_weights",
    "plan_projections",
    "requantize_weight",
]

#: The projections of a decoder layer (parameter stems below ``model.layers.N.``).
LAYER_PROJECTIONS = ("self_attn.qkv_proj", "self_attn.o_proj", "mlp.gate_up_proj", "mlp.down_proj")
WEIGHT_MAX = 127
ACTIVATION_LEVELS = 255


@dataclass(frozen=True)
class ActivationQuant:
    """Static per-tensor uint8 quantization of an activation whose values lie in
    ``[low, high]`` (widened to include 0)."""

    low: float
    high: float

    @property
    def scale(self) -> float:
        low, high = min(self.low, 0.0), max(self.high, 0.0)
        return (high - low) / ACTIVATION_LEVELS if high > low else 1.0

    @property
    def zero_point(self) -> int:
        return int(np.clip(np.round(-min(self.low, 0.0) / self.scale), 0, ACTIVATION_LEVELS))


@dataclass
class Calibration:
    """The ranges of every int8 projection's input and output over the calibration prompts,
    by site (parameter stem, e.g. ``model.layers.0.self_attn.qkv_proj``)."""

    inputs: dict[str, ActivationQuant] = field(default_factory=dict)
    outputs: dict[str, ActivationQuant] = field(default_factory=dict)
    prompts: int = 0

    @staticmethod
    def placeholder(sites: Sequence[str]) -> Calibration:
        """Ranges of [-1, 1] for every site: a module whose NNAPI graphs have the int8 path's
        operations and shapes, for costing (the modelled cost does not depend on the scales)."""
        unit = ActivationQuant(-1.0, 1.0)
        return Calibration(dict.fromkeys(sites, unit), dict.fromkeys(sites, unit), 0)


@dataclass(frozen=True)
class ProjectionPlan:
    """Which projections run in int8 (``int8``) and which keep float weights, with why."""

    int8: tuple[str, ...]
    float_reasons: Mapping[str, str]

    def reason(self, site: str) -> str:
        if site in self.int8:
            return (
                "int8 weights per output channel and static uint8 activations from the "
                "calibration run: CONV_2D 1x1 with a per-channel filter (FULLY_CONNECTED has "
                "per-tensor weights only)"
            )
        return self.float_reasons[site]


def projection_sites(config: LlamaConfig) -> list[str]:
    """Every ``nn.Linear`` projection of the decoder, in the order prefill runs them (the LM
    head last, unless it is the tied embedding table)."""
    sites = [
        f"model.layers.{i}.{name}"
        for i in range(config.num_hidden_layers)
        for name in LAYER_PROJECTIONS
    ]
    return sites if config.tie_word_embeddings else [*sites, "lm_head"]


def plan_projections(config: LlamaConfig) -> ProjectionPlan:
    """Every layer projection in int8, and the LM head too unless it is tied to the embedding."""
    sites = projection_sites(config)
    reasons: dict[str, str] = {}
    if config.tie_word_embeddings:
        reasons["lm_head"] = (
            "tied to the embedding table, which the host reads in float: kept as float "
            "weights resident in NNAPI (no second, int8 copy of the table)"
        )
    return ProjectionPlan(tuple(s for s in sites if s not in reasons), reasons)


# ---- modules -------------------------------------------------------------------------------------


def _const(value: Any, dtype: str) -> relax.Expr:
    return relax.const(np.asarray(value, dtype=dtype))


def _emit(expr: relax.Expr) -> relax.Var:
    return relax.BlockBuilder.current().emit(expr)


def _qdq(x: relax.Expr, quant: ActivationQuant, out_dtype: str) -> relax.Var:
    """``dequantize(quantize(x))`` with ``quant`` (uint8, per tensor), in ``out_dtype``."""
    scale, zero_point = _const(quant.scale, "float32"), _const(quant.zero_point, "uint8")
    quantized = _emit(relax.op.quantize(x, scale, zero_point, axis=-1, out_dtype="uint8"))
    return _emit(relax.op.dequantize(quantized, scale, zero_point, axis=-1, out_dtype=out_dtype))


class Int8Linear(nn.Module):
    """``nn.Linear`` in W8A8 QDQ form: ``q8_weight`` (int8 ``[out, 1, 1, in]``) with
    ``q8_scale`` (float32 ``[out]``, one scale per output channel, zero points 0), the input and
    the output quantized with static per-tensor uint8 parameters; computed in float32 between
    them, the result in the model's float type (a bias is added after it, in float).

    The weight is held as the 1x1 CONV_2D filter NNAPI runs (``[out, 1, 1, in]``, reshaped to
    ``[out, in]`` for the matmul): NNAPI cannot reshape a per-channel operand, so a weight given
    to a subgraph at run time (rather than bound as a constant) must already have that shape."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        dtype: str,
        bias: bool,
        input_quant: ActivationQuant,
        output_quant: ActivationQuant,
    ) -> None:
        self.in_features, self.out_features, self.dtype = in_features, out_features, dtype
        self.q8_weight = nn.Parameter((out_features, 1, 1, in_features), "int8")
        self.q8_scale = nn.Parameter((out_features,), "float32")
        self.bias = nn.Parameter((out_features,), dtype) if bias else None
        self.input_quant, self.output_quant = input_quant, output_quant

    def to(self, dtype: str | None = None) -> None:
        """Dtypes are fixed by the scheme: nothing to convert."""

    def forward(self, x: Tensor) -> Tensor:
        data = _qdq(x._expr, self.input_quant, "float32")
        zeros = _const(np.zeros(self.out_features), "int8")
        weight = _emit(
            relax.op.dequantize(
                self.q8_weight._expr, self.q8_scale._expr, zeros, axis=0, out_dtype="float32"
            )
        )
        matrix = _emit(relax.op.reshape(weight, (self.out_features, self.in_features)))
        product = _emit(relax.op.matmul(data, relax.op.permute_dims(matrix)))
        y = Tensor(_expr=_qdq(product, self.output_quant, self.dtype))
        return y + self.bias if self.bias is not None else y


class RangeLinear(nn.Module):
    """``nn.Linear`` (same parameters) that also records the range of its input and output:
    the calibration build's projections. ``ranges`` collects one float32 ``[4]`` tensor per call
    (input min, input max, output min, output max)."""

    def __init__(self, linear: nn.Linear, ranges: list[Tensor]) -> None:
        self.weight = linear.weight
        self.bias = linear.bias
        self.out_features = linear.out_features
        self._ranges = ranges

    def forward(self, x: Tensor) -> Tensor:
        y = nn.op.matmul(x, nn.op.permute_dims(self.weight))
        if self.bias is not None:
            y = y + self.bias
        values = [
            nn.op.reshape(reduce(t).astype("float32"), (1,))
            for t in (x, y)
            for reduce in (_min, _max)
        ]
        self._ranges.append(nn.op.concat(values, dim=0))
        return y


def _min(t: Tensor) -> Tensor:
    return Tensor(_expr=_emit(relax.op.min(t._expr)))


def _max(t: Tensor) -> Tensor:
    return Tensor(_expr=_emit(relax.op.max(t._expr)))


def replace_projections(
    model: nn.Module,
    config: LlamaConfig,
    dtype: str,
    calibration: Calibration | None,
    plan: ProjectionPlan,
    ranges: list[Tensor] | None = None,
) -> None:
    """Replace, in place, the ``nn.Linear`` of every int8 site of ``plan`` under ``model`` by an
    :class:`Int8Linear` with ``calibration``'s parameters or, with ``ranges`` (the calibration
    build), every projection's by a :class:`RangeLinear` recording into it."""
    int8 = set(plan.int8)

    def visit(module: nn.Module, prefix: str) -> None:
        children = module.__dict__
        for name, child in list(children.items()):
            path = f"{prefix}{name}"
            if isinstance(child, nn.Linear):
                if ranges is not None:
                    children[name] = RangeLinear(child, ranges)
                elif path in int8:
                    if calibration is None or path not in calibration.inputs:
                        raise ValueError(f"the calibration has no range for {path}")
                    children[name] = Int8Linear(
                        int(child.in_features),
                        int(child.out_features),
                        dtype,
                        child.bias is not None,
                        calibration.inputs[path],
                        calibration.outputs[path],
                    )
            elif isinstance(child, nn.ModuleList):
                for index, item in enumerate(child):
                    visit(item, f"{path}.{index}.")
            elif isinstance(child, nn.Module):
                visit(child, f"{path}.")

    visit(model, "")


# ---- weights -------------------------------------------------------------------------------------


def requantize_weight(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(int8 [out, 1, 1, in], float32 scales [out])``: the 2-D ``weight`` symmetric per output
    channel, ``scale = max |w| / 127`` of each row (1 for a row of zeros), held as
    :class:`Int8Linear` holds it."""
    values = np.asarray(weight, dtype=np.float32)
    if values.ndim != 2:
        raise ValueError(f"a projection's weight is 2-D, got shape {list(values.shape)}")
    scales = np.abs(values).max(axis=1) / WEIGHT_MAX
    scales = np.where(scales > 0, scales, 1.0).astype(np.float32)
    stored = np.clip(np.rint(values / scales[:, None]), -WEIGHT_MAX, WEIGHT_MAX).astype(np.int8)
    return stored.reshape(values.shape[0], 1, 1, values.shape[1]), scales


def int8_weights(
    named_params: Sequence[tuple[str, Any]], floats: Mapping[str, Any], dtype: str
) -> list[np.ndarray]:
    """The weights of the int8 model (``named_params``, in their order) from the float model's
    ``floats`` by name: ``<stem>.q8_weight`` / ``<stem>.q8_scale`` requantized from
    ``<stem>.weight``, every other parameter as it is (in ``dtype``)."""

    def array(name: str) -> np.ndarray:
        if name not in floats:
            raise ValueError(f"no float weight {name!r} to make the int8 model's weights from")
        value = floats[name]
        return value.numpy() if hasattr(value, "numpy") else np.asarray(value)

    result: list[np.ndarray] = []
    requantized: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, _ in named_params:
        for suffix, index in ((".q8_weight", 0), (".q8_scale", 1)):
            if name.endswith(suffix):
                stem = name[: -len(suffix)]
                if stem not in requantized:
                    requantized[stem] = requantize_weight(array(f"{stem}.weight"))
                result.append(requantized[stem][index])
                break
        else:
            result.append(np.ascontiguousarray(array(name).astype(dtype)))
    return result


# ---- calibration ---------------------------------------------------------------------------------


def calibration_prompts(vocab_size: int, count: int = 4, seed: int = 4321) -> list[list[int]]:
    """``count`` fixed prompts of 16 to 16 + 8 * (count - 1) tokens drawn from the vocabulary
    (their own seed: other prompts than an evaluation's)."""
    rng = np.random.default_rng(seed)
    return [[int(t) for t in rng.integers(0, vocab_size, 16 + 8 * i)] for i in range(count)]


# ---- the report ----------------------------------------------------------------------------------


def projection_rows(config: LlamaConfig, weight_path: str) -> list[tuple[str, str, str]]:
    """``(projection, path, why)`` of every projection of prefill for ``weight_path``
    (``input``, ``resident`` or ``int8``; docs/llm.md), layers of the same kind collapsed."""
    plan = plan_projections(config)
    kinds = [*LAYER_PROJECTIONS, "lm_head"]
    layers = config.num_hidden_layers
    rows = []
    for kind in kinds:
        site = "lm_head" if kind == "lm_head" else f"model.layers.0.{kind}"
        label = kind if kind == "lm_head" else f"layers.*.{kind} (x{layers})"
        if weight_path == "int8" and site in plan.int8:
            rows.append((label, "int8", plan.reason(site)))
        elif weight_path == "int8":
            rows.append((label, "resident", plan.reason(site)))
        elif weight_path == "resident":
            rows.append(
                (
                    label,
                    "resident",
                    "float weights bound as NNAPI constants of prefill (given once)",
                )
            )
        else:
            rows.append(
                (
                    label,
                    "input",
                    "float weights passed to FULLY_CONNECTED at every call (a 4-bit format is "
                    "dequantized on the host first)",
                )
            )
    return rows


def projection_report(config: LlamaConfig, weight_path: str) -> list[dict[str, str]]:
    """:func:`projection_rows` as the commands' JSON rows (``projection``, ``path``, ``why``)."""
    return [
        {"projection": label, "path": path, "why": why}
        for label, path, why in projection_rows(config, weight_path)
    ]


def projection_lines(heading: str, rows: Sequence[Mapping[str, str]]) -> list[str]:
    """``heading`` and the rows of :func:`projection_report` as lines of text."""
    return [heading] + [f"  {row['projection']:<34} {row['path']:<9} {row['why']}" for row in rows]


def format_projection_rows(config: LlamaConfig, weight_path: str) -> list[str]:
    """:func:`projection_rows` as lines of text."""
    return projection_lines(
        f"projections of prefill, weights {weight_path}:",
        projection_report(config, weight_path),
    )
