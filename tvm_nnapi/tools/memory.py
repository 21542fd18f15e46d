# SPDX-License-Identifier: Apache-2.0
"""Modelled peak memory of an LLM plan on a phone, and the refusal of a plan that does not fit.

A *plan* is a configuration (:mod:`tvm_nnapi.llm.config`) in a weight format
(:mod:`tvm_nnapi.llm.quantization`: ``q0f32``, ``q0f16``, ``q4f16_1``, ``q4f32_1``) built one of
three ways, with a KV cache of ``context_tokens`` positions and prompts prefilled in chunks of
``prefill_tokens``:

- ``host``: every operator in TVM's host code;
- ``nnapi``: the prefill's projections, norms and LM head in NNAPI subgraphs whose weights are
  run-time inputs (the default build);
- ``nnapi-resident``: the same subgraphs with their weights bound as NNAPI constants.
- ``nnapi-int8``: the int8 weight path (:mod:`tvm_nnapi.llm.int8`): the projections' weights
  requantized to int8 (one float32 scale per output channel) and bound as NNAPI constants;
  the engine holds that model's weights (int8 projections, the embedding and the norms in the
  float type; the LM head tied to the embedding stays float).

The peak is the sum of these parts, every one **modelled** from the configuration's shapes
(nothing is allocated or measured):

- *weights on the host*: the engine's weight tensors in the weight format (group-quantized
  matrices as ``q_weight`` + ``q_scale``, padding included; norms and biases in the float type).
  The engine keeps them in every plan: ``embed`` and ``decode`` read them. ``nnapi-resident`` of
  a group-quantized format dequantizes the weights once, at load, and builds the float model of
  those values: its engine holds the float weights.
- *NNAPI constants* (``nnapi-resident``, ``nnapi-int8``): the runtime modules' constant
  blobs, every offloaded weight (all decoder layers, the final norm, the LM head) in the float
  type NNAPI receives (the format's float type: a quantized matrix is dequantized once, at
  load), or int8 on the int8 path. NNAPI requires the buffer of a constant over 128 bytes to
  outlive the model, so the blobs stay.
- *device copy* (``nnapi-resident``, ``nnapi-int8``): the driver's own copy of those
  constants, made when it compiles the model (a GPU or NPU driver uploads them to its
  buffers). Android's runtime may hold one more (its shared-memory copy of large constants):
  not counted, so this part is a lower bound.
- *per-call copies*: the largest transient weight copy at one time. ``nnapi``: the weights of
  the largest NNAPI subgraph, which the NNAPI runtime copies into its memory at every call, plus,
  for a quantized format, the same weights dequantized by TVM code on the host just before the
  call. The subgraphs are those :class:`tvm_nnapi.llm.NNAPIDispatch` makes of the prefill: the
  host attention splits the layers, so one subgraph runs from a layer's output projection to
  the next layer's QKV projection (the first holds the first norm and QKV projection, the last
  the last MLP, the final norm and the LM head). ``host``: for a quantized format, the largest
  single dequantized matrix (TVM's host code dequantizes one projection at a time); nothing for
  float weights.
- *KV cache*: keys and values of every layer for ``context_tokens`` positions rounded up to
  the paged cache's 16-token pages, in the cache's dtype (the format's float type unless
  given).
- *activations*: the largest set of live intermediate tensors of one decoder layer for one
  prefill chunk (the residual stream, its normalised copy, the gate/up projection's output,
  SiLU of the gate and its product with up: ``2 * hidden + 4 * intermediate`` values per
  token, in the float type; on the host or in the driver, not both) plus the float32 logits
  of the last position.

Not modelled: the program's code, TVM's and NNAPI's own bookkeeping, the tokenizer, and
fragmentation. A phone's memory (``soc.ram_gib`` and ``soc.app_memory_budget_gib`` of its device
profile, each cited in its ``sources``) decides the fit: a plan fits when its peak is at most the
budget one app can use. docs/experiments.md ("Phone memory") has the figures of the built-in
models and phones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UsageError
from ..llm.config import LlamaConfig
from ..llm.quantization import Quantization, get_quantization

__all__ = [
    "BUDGET_KEY",
    "PAGE_SIZE",
    "PLANS",
    "RAM_KEY",
    "MemoryReport",
    "PhoneMemory",
    "PlanMemory",
    "bench_memory_report",
    "default_quantization",
    "memory_report",
    "phone_memory",
    "plan_memory",
    "weight_format",
]

#: The plans this module models (see the module docstring).
PLANS = ("host", "nnapi", "nnapi-resident", "nnapi-int8")

#: The keys of a device profile's ``soc`` that hold the phone's RAM and the budget of one app,
#: in GiB (docs/experiments.md, "Phone memory"; each cited in the profile's ``sources``).
RAM_KEY = "ram_gib"
BUDGET_KEY = "app_memory_budget_gib"

#: Positions per page of the paged KV cache (:class:`tvm_nnapi.llm.LlamaEngine`'s default).
PAGE_SIZE = 16

_GIB = float(2**30)


def default_quantization(dtype: str) -> str:
    """The unquantized weight format of a float type: ``q0f32`` or ``q0f16``."""
    if dtype not in ("float32", "float16"):
        raise ValueError(f"dtype must be float32 or float16, got {dtype!r}")
    return "q0f32" if dtype == "float32" else "q0f16"


def weight_format(name: str | Quantization) -> Quantization:
    """A weight format by its MLC name, or the unquantized one of a float type (``float32``,
    ``float16``)."""
    if isinstance(name, str) and name in ("float32", "float16"):
        name = default_quantization(name)
    return get_quantization(name)


@dataclass(frozen=True)
class PhoneMemory:
    """A phone's RAM and the part of it one foreground app can hold, from its profile."""

    profile: str
    total_bytes: int
    app_budget_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "total_bytes": self.total_bytes,
            "app_budget_bytes": self.app_budget_bytes,
        }


def phone_memory(profile: str | Mapping[str, Any]) -> PhoneMemory | None:
    """The memory of a device profile (a name, a ``.json`` path or a loaded document): its
    ``soc.ram_gib`` and ``soc.app_memory_budget_gib``. None when the profile states neither (the
    ``reference`` profile is not a phone); ValueError naming the profile when they are not two
    positive numbers with the budget at most the RAM."""
    if isinstance(profile, Mapping):
        document: Mapping[str, Any] = profile
    else:
        from mock_nnapi.device_profiles import load_profile

        document = load_profile(profile)
    name = str(document.get("name", profile))
    soc: Mapping[str, Any] = document.get("soc") or {}
    total: Any = soc.get(RAM_KEY)
    budget: Any = soc.get(BUDGET_KEY)
    if total is None and budget is None:
        return None
    if not (_gib_figure(total) and _gib_figure(budget)) or budget > total:
        raise ValueError(
            f"profile {name}: soc.{RAM_KEY} and soc.{BUDGET_KEY} must be positive numbers of "
            f"GiB with the budget at most the RAM, found {total!r} and {budget!r}"
        )
    return PhoneMemory(name, round(total * _GIB), round(budget * _GIB))


def _gib_figure(value: Any) -> bool:
    """Whether ``value`` is a plausible memory figure in GiB (a positive number below 1e6)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e6


@dataclass(frozen=True)
class PlanMemory:
    """The modelled peak memory of one plan, by part (bytes; the module docstring defines each
    part)."""

    model: str
    quantization: str
    plan: str
    context_tokens: int
    prefill_tokens: int
    kv_dtype: str
    host_weights_bytes: int
    nnapi_constant_bytes: int
    device_weights_bytes: int
    per_call_copy_bytes: int
    kv_cache_bytes: int
    activation_bytes: int

    @property
    def peak_bytes(self) -> int:
        return (
            self.host_weights_bytes
            + self.nnapi_constant_bytes
            + self.device_weights_bytes
            + self.per_call_copy_bytes
            + self.kv_cache_bytes
            + self.activation_bytes
        )

    def fits(self, phone: PhoneMemory | None) -> bool | None:
        """Whether the peak is within the phone's app budget (None: no phone memory known)."""
        return None if phone is None else self.peak_bytes <= phone.app_budget_bytes

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dictionary; every byte count is modelled and its key says so."""
        return {
            "modelled": True,
            "model": self.model,
            "quantization": self.quantization,
            "plan": self.plan,
            "context_tokens": self.context_tokens,
            "prefill_tokens": self.prefill_tokens,
            "kv_dtype": self.kv_dtype,
            "modelled_peak_bytes": self.peak_bytes,
            "modelled_host_weights_bytes": self.host_weights_bytes,
            "modelled_nnapi_constant_bytes": self.nnapi_constant_bytes,
            "modelled_device_weights_bytes": self.device_weights_bytes,
            "modelled_per_call_copy_bytes": self.per_call_copy_bytes,
            "modelled_kv_cache_bytes": self.kv_cache_bytes,
            "modelled_activation_bytes": self.activation_bytes,
        }

    def describe(self) -> str:
        """One line: the peak and its parts in GiB (modelled)."""
        parts = [
            ("weights on the host", self.host_weights_bytes),
            ("NNAPI constants", self.nnapi_constant_bytes),
            ("device copy", self.device_weights_bytes),
            ("per-call copies", self.per_call_copy_bytes),
            ("KV cache", self.kv_cache_bytes),
            ("activations", self.activation_bytes),
        ]
        listed = ", ".join(f"{name} {_gib(value)}" for name, value in parts if value)
        return f"peak {_gib(self.peak_bytes)} GiB modelled ({listed})"


def _gib(value: float) -> str:
    return f"{value / _GIB:.2f}"


# ---- the shapes of a configuration ---------------------------------------------------------------


@dataclass(frozen=True)
class _Weights:
    """Element counts of a configuration's weights (norms and biases apart from matrices)."""

    matrices: dict[str, tuple[int, int]]  # one layer's linear weights, [out, in]
    layer_vectors: int  # one layer's norm weights and biases
    embedding: tuple[int, int]
    lm_head: tuple[int, int] | None  # None: tied to the embedding
    final_norm: int


def _weights(config: LlamaConfig) -> _Weights:
    h, i = config.hidden_size, config.intermediate_size
    qkv = config.q_size + 2 * config.kv_size
    return _Weights(
        matrices={
            "qkv_proj": (qkv, h),
            "o_proj": (h, config.q_size),
            "gate_up_proj": (2 * i, h),
            "down_proj": (h, i),
        },
        layer_vectors=2 * h + (qkv if config.qkv_bias else 0),
        embedding=(config.vocab_size, h),
        lm_head=None if config.tie_word_embeddings else (config.vocab_size, h),
        final_norm=h,
    )


def _stored_bytes(shape: tuple[int, int], q: Quantization) -> int:
    """Bytes of one matrix ``[out, in]`` as the format stores it."""
    rows, columns = shape
    float_bytes = np.dtype(q.model_dtype).itemsize
    if not q.quantized:
        return rows * columns * float_bytes
    storage = np.dtype(q.storage_dtype).itemsize
    return rows * (q.storage_columns(columns) * storage + q.groups(columns) * float_bytes)


def _elements(shape: tuple[int, int]) -> int:
    return shape[0] * shape[1]


def host_weight_bytes(config: LlamaConfig, quantization: str | Quantization) -> int:
    """Bytes of every weight tensor of ``config`` in the weight format (what the engine holds)."""
    q = weight_format(quantization)
    w = _weights(config)
    float_bytes = np.dtype(q.model_dtype).itemsize
    layer = sum(_stored_bytes(s, q) for s in w.matrices.values()) + w.layer_vectors * float_bytes
    total = config.num_hidden_layers * layer + _stored_bytes(w.embedding, q)
    if w.lm_head is not None:
        total += _stored_bytes(w.lm_head, q)
    return total + w.final_norm * float_bytes


def _subgraph_elements(config: LlamaConfig) -> list[int]:
    """Weight elements of each distinct NNAPI subgraph of the prefill (module docstring)."""
    w = _weights(config)
    m = {name: _elements(shape) for name, shape in w.matrices.items()}
    h = config.hidden_size
    bias = m["qkv_proj"] // h if config.qkv_bias else 0
    attention_in = h + m["qkv_proj"] + bias  # a layer's input norm and QKV projection
    mlp = m["o_proj"] + h + m["gate_up_proj"] + m["down_proj"]  # o_proj, norm 2 and the MLP
    subgraphs = [attention_in]
    if config.num_hidden_layers > 1:
        subgraphs.append(mlp + attention_in)
    subgraphs.append(mlp + w.final_norm + _elements(w.lm_head or w.embedding))
    return subgraphs


def _int8_bytes(shape: tuple[int, int]) -> int:
    """Bytes of one matrix ``[out, in]`` on the int8 path: int8 values, a float32 scale a row."""
    return shape[0] * shape[1] + shape[0] * 4


def int8_weight_bytes(config: LlamaConfig, float_bytes: int) -> tuple[int, int]:
    """``(host, offloaded)`` bytes of the int8 path's weights: every weight tensor the engine
    holds, and those the NNAPI subgraphs hold as constants (not the embedding lookup's table
    unless it is also the LM head, which then stays float)."""
    w = _weights(config)
    layer = sum(_int8_bytes(s) for s in w.matrices.values()) + w.layer_vectors * float_bytes
    head = _int8_bytes(w.lm_head) if w.lm_head is not None else 0
    embedding = _elements(w.embedding) * float_bytes
    common = config.num_hidden_layers * layer + w.final_norm * float_bytes + head
    return common + embedding, common + (embedding if w.lm_head is None else 0)


def offloaded_weight_elements(config: LlamaConfig) -> int:
    """Weight elements the NNAPI subgraphs of the prefill receive: every layer's, the final
    norm and the LM head (the embedding table itself when tied), not the embedding lookup."""
    w = _weights(config)
    layer = sum(_elements(s) for s in w.matrices.values()) + w.layer_vectors
    return config.num_hidden_layers * layer + w.final_norm + _elements(w.lm_head or w.embedding)


# ---- plans ---------------------------------------------------------------------------------------


def plan_memory(
    config: LlamaConfig,
    quantization: str | Quantization,
    plan: str,
    context_tokens: int,
    prefill_tokens: int | None = None,
    kv_dtype: str | None = None,
) -> PlanMemory:
    """The modelled peak memory of ``plan`` (one of :data:`PLANS`) for ``config`` in the weight
    format ``quantization``, with a KV cache of ``context_tokens`` positions and prompts
    prefilled ``prefill_tokens`` at a time (default and at most the configuration's
    ``prefill_chunk_size``; 1 for decode only). ``kv_dtype`` defaults to the format's float
    type."""
    if plan not in PLANS:
        raise ValueError(f"plan must be one of {', '.join(PLANS)}, got {plan!r}")
    if context_tokens < 1:
        raise ValueError(f"context_tokens must be >= 1, got {context_tokens}")
    q = weight_format(quantization)
    kv_dtype = kv_dtype or q.model_dtype
    float_bytes = np.dtype(q.model_dtype).itemsize
    chunk = min(prefill_tokens or config.prefill_chunk_size, config.prefill_chunk_size)
    chunk = max(chunk, 1)
    host = host_weight_bytes(config, q)
    constants = device = per_call = 0
    if plan == "nnapi-resident":
        if q.quantized:
            host = host_weight_bytes(config, default_quantization(q.model_dtype))
        constants = device = offloaded_weight_elements(config) * float_bytes
    elif plan == "nnapi-int8":
        host, constants = int8_weight_bytes(config, float_bytes)
        device = constants
    elif plan == "nnapi":
        largest = max(_subgraph_elements(config)) * float_bytes
        per_call = largest * (2 if q.quantized else 1)
    elif q.quantized:
        w = _weights(config)
        shapes = [*w.matrices.values(), w.lm_head or w.embedding]
        per_call = max(_elements(s) for s in shapes) * float_bytes
    pages = -(-context_tokens // PAGE_SIZE)
    kv = (
        2
        * config.num_hidden_layers
        * config.kv_size
        * pages
        * PAGE_SIZE
        * np.dtype(kv_dtype).itemsize
    )
    live = chunk * (2 * config.hidden_size + 4 * config.intermediate_size) * float_bytes
    activations = live + config.vocab_size * 4
    return PlanMemory(
        model=config.name,
        quantization=q.name,
        plan=plan,
        context_tokens=context_tokens,
        prefill_tokens=chunk,
        kv_dtype=kv_dtype,
        host_weights_bytes=host,
        nnapi_constant_bytes=constants,
        device_weights_bytes=device,
        per_call_copy_bytes=per_call,
        kv_cache_bytes=kv,
        activation_bytes=activations,
    )


@dataclass
class MemoryReport:
    """The plans of one run and the phone's memory: what is reported and what is refused."""

    phone: PhoneMemory | None
    plans: dict[str, PlanMemory] = field(default_factory=dict)

    def unfit(self) -> list[PlanMemory]:
        """The plans whose peak exceeds the phone's app budget (none without a phone memory)."""
        return [p for p in self.plans.values() if p.fits(self.phone) is False]

    def refusal(self, plan: PlanMemory) -> str:
        """The one-line refusal of a plan that does not fit (names the model, the plan, the
        need and the budget)."""
        assert self.phone is not None
        phone = self.phone
        if plan.plan in ("nnapi-resident", "nnapi-int8"):
            # Their NNAPI constants and the driver's copy are what a 4-bit format cannot shrink.
            advice = "weights as inputs (the nnapi plan), a smaller model or a shorter context"
        elif weight_format(plan.quantization).quantized:
            advice = "a smaller model or a shorter context"
        else:
            advice = "a 4-bit weight format (q4f16_1), a smaller model or a shorter context"
        return (
            f"{plan.model} ({plan.quantization}, plan {plan.plan}, {plan.context_tokens}-token "
            f"context) needs {_gib(plan.peak_bytes)} GiB at its peak (modelled), more than the "
            f"{_gib(phone.app_budget_bytes)} GiB one app can use on {phone.profile} "
            f"({_gib(phone.total_bytes)} GiB of RAM): it does not fit; use {advice}"
        )

    def refuse(self) -> None:
        """Raise :class:`~tvm_nnapi.errors.UsageError` with :meth:`refusal` of the first plan
        that does not fit."""
        unfit = self.unfit()
        if unfit:
            raise UsageError(self.refusal(unfit[0]))

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> MemoryReport:
        """The report that :meth:`to_dict` wrote."""
        phone = document.get("phone")
        plans = {
            name: PlanMemory(
                **{
                    key.removeprefix("modelled_"): value
                    for key, value in plan.items()
                    if key not in ("modelled", "modelled_peak_bytes", "fits")
                }
            )
            for name, plan in document.get("plans", {}).items()
        }
        return cls(None if phone is None else PhoneMemory(**phone), plans)

    def to_dict(self) -> dict[str, Any]:
        return {
            "modelled": True,
            "phone": None if self.phone is None else self.phone.to_dict(),
            "plans": {
                name: {**plan.to_dict(), "fits": plan.fits(self.phone)}
                for name, plan in self.plans.items()
            },
        }

    def format_lines(self) -> list[str]:
        """One line per plan: its modelled peak, its parts and the verdict."""
        if self.phone is None:
            verdict = "the profile states no phone memory: fit not checked"
        else:
            verdict = (
                f"app budget {_gib(self.phone.app_budget_bytes)} GiB of "
                f"{_gib(self.phone.total_bytes)} GiB on {self.phone.profile}"
            )
        lines = [f"MODELLED peak memory per plan ({verdict}):"]
        for name, plan in self.plans.items():
            fits = plan.fits(self.phone)
            mark = "" if fits is None else ("  fits" if fits else "  DOES NOT FIT")
            lines.append(f"  {name:<15}{plan.describe()}{mark}")
        return lines


def memory_report(
    config: LlamaConfig,
    quantization: str | Quantization,
    plans: Sequence[str],
    profile: str | Mapping[str, Any] | None,
    context_tokens: int,
    prefill_tokens: int | None = None,
    kv_dtype: str | None = None,
) -> MemoryReport:
    """:func:`plan_memory` of each of ``plans`` with the memory of ``profile`` (None or a
    profile without memory: nothing is refused)."""
    phone = None if profile is None else phone_memory(profile)
    return MemoryReport(
        phone,
        {
            plan: plan_memory(config, quantization, plan, context_tokens, prefill_tokens, kv_dtype)
            for plan in plans
        },
    )


def bench_memory_report(
    config: LlamaConfig,
    quantization: str | Quantization,
    profile: str | Mapping[str, Any] | None,
    prompt_length: int,
    decode_tokens: int,
    resident: bool = False,
    int8: bool = False,
) -> MemoryReport:
    """The plans ``tvm-nnapi llm bench`` models (``nnapi``, with ``resident`` also
    ``nnapi-resident``, with ``int8`` also ``nnapi-int8``, and ``host``): a prompt of
    ``prompt_length`` tokens prefilled at once, then ``decode_tokens`` decode steps, so a KV
    cache of ``prompt_length + decode_tokens`` positions."""
    plans = ["nnapi", *(["nnapi-resident"] if resident else []), "host"]
    if int8:
        plans.insert(-1, "nnapi-int8")
    return memory_report(
        config, quantization, plans, profile, prompt_length + decode_tokens, prompt_length
    )
