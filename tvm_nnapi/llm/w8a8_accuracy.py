# SPDX-License-Identifier: Apache-2.0
"""A MEASURED accuracy check of the W8A8 scheme of the modelled W8A8 prefill
(:mod:`tvm_nnapi.tools.w8a8_what_if`, docs/experiments.md), simulated in numpy on the host.

Every projection (``qkv_proj``, ``o_proj``, ``gate_up_proj``, ``down_proj``, ``lm_head``) runs
as NNAPI would run it in int8: its input quantized with a **static per-tensor** asymmetric
uint8 scale and zero point (``TENSOR_QUANT8_ASYMM``), calibrated once from the input's range
over calibration prompts, and its weight quantized **per output channel**, symmetric int8
(``TENSOR_QUANT8_SYMM_PER_CHANNEL``, scale = max |w| / 127 per row) or, for comparison, per
tensor. The products are exact integer sums (int32 accumulators), rescaled to float; the rest
of the model (RMSNorm, rotary embedding, attention, SiLU, residuals) stays float32. The output
of a quantized product is kept in float (as NNAPI's int32 -> requantize -> DEQUANTIZE path would
add one more rounding of at most half an output step; not simulated).

The float32 reference is the same numpy model without quantization, checked against TVM's host
build of the Relax model (:func:`host_prefill_logits`) so that the comparison is with the real
model, not with a second implementation's mistakes.

    from tvm_nnapi.llm import w8a8_accuracy
    report = w8a8_accuracy.accuracy_check()  # the built-in tiny-llama, random weights
    print(report.format())
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .config import LlamaConfig, get_config

PROJECTIONS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head")
WEIGHT_SCHEMES = ("per-channel", "per-tensor")


def _rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def _rope(x: np.ndarray, theta: float) -> np.ndarray:
    """Rotary embedding (rotate-half form) of ``x`` [seq, heads, d] at positions 0..seq-1."""
    seq, _, d = x.shape
    half = d // 2
    inv_freq = theta ** (-np.arange(half, dtype=np.float64) * 2 / d)
    angles = np.arange(seq, dtype=np.float64)[:, None] * inv_freq[None, :]
    cos = np.cos(angles).astype(np.float32)[:, None, :]
    sin = np.sin(angles).astype(np.float32)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


@dataclass
class Quantization:
    """The W8A8 scheme: static activation ranges per projection site and the weight scheme."""

    weights: str = "per-channel"
    #: (min, max) of each projection's input over the calibration prompts, by site name.
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: Bits of the activations and weights (8 for W8A8; other values for sensitivity checks).
    bits: int = 8


class _Linear:
    """Applies one projection, in float32, calibrating, or quantized."""

    def __init__(self, quantization: Quantization | None, calibrating: bool) -> None:
        self.quantization = quantization
        self.calibrating = calibrating
        self.ranges: dict[str, tuple[float, float]] = {}
        #: Projection inputs seen, and those outside their calibrated range (clipped).
        self.elements = 0
        self.clipped = 0

    def __call__(self, site: str, x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        if self.calibrating:
            low, high = float(x.min()), float(x.max())
            old = self.ranges.get(site, (low, high))
            self.ranges[site] = (min(old[0], low), max(old[1], high))
        if self.quantization is None:
            return x @ weight.T
        low, high = self.quantization.ranges[site]
        self.elements += x.size
        self.clipped += int(np.count_nonzero((x < min(low, 0.0)) | (x > max(high, 0.0))))
        return quantized_matmul(x, weight, self.quantization.ranges[site], self.quantization)


def quantized_matmul(
    x: np.ndarray, weight: np.ndarray, x_range: tuple[float, float], q: Quantization
) -> np.ndarray:
    """``x @ weight.T`` with x quantized asymmetric per tensor (unsigned, from ``x_range``,
    which always includes 0 so that zero is exact) and the weight symmetric per output channel
    or per tensor; integer products, int32-style exact accumulation, float rescale."""
    levels = 2**q.bits - 1
    low, high = min(x_range[0], 0.0), max(x_range[1], 0.0)
    x_scale = (high - low) / levels if high > low else 1.0
    zero_point = np.round(-low / x_scale)
    xq = np.clip(np.round(x / x_scale) + zero_point, 0, levels)
    w_max = 2 ** (q.bits - 1) - 1
    if q.weights == "per-channel":
        w_scale = np.abs(weight).max(axis=1, keepdims=True) / w_max
    elif q.weights == "per-tensor":
        w_scale = np.full((weight.shape[0], 1), np.abs(weight).max() / w_max)
    else:
        raise ValueError(f"weights must be one of {WEIGHT_SCHEMES}, got {q.weights!r}")
    w_scale = np.where(w_scale > 0, w_scale, 1.0)
    wq = np.clip(np.round(weight / w_scale), -w_max, w_max)
    # Integer accumulation (exact in float64 for these sizes), then the zero-point correction.
    accumulated = (xq.astype(np.float64) - zero_point) @ wq.T.astype(np.float64)
    return (accumulated * x_scale * w_scale.T).astype(np.float32)


def numpy_prefill_logits(
    config: LlamaConfig,
    weights: dict[str, np.ndarray],
    tokens: Sequence[int],
    linear: _Linear | None = None,
) -> np.ndarray:
    """Logits ``[len(tokens), vocab]`` of every position of a prompt, the decoder of
    :mod:`tvm_nnapi.llm.model` in numpy (float32 unless ``linear`` quantizes)."""
    linear = linear or _Linear(None, False)
    c = config
    d, h_q, h_kv = c.head_dim, c.num_attention_heads, c.num_key_value_heads
    x = weights["model.embed_tokens.weight"][np.asarray(tokens)].astype(np.float32)
    seq = x.shape[0]
    causal = np.triu(np.full((seq, seq), -np.inf, np.float32), k=1)
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        h = _rms_norm(x, weights[p + "input_layernorm.weight"], c.rms_norm_eps)
        qkv = linear(f"{i}.qkv_proj", h, weights[p + "self_attn.qkv_proj.weight"])
        if c.qkv_bias:
            qkv = qkv + weights[p + "self_attn.qkv_proj.bias"]
        qkv = qkv.reshape(seq, h_q + 2 * h_kv, d)
        q = _rope(qkv[:, :h_q], c.rope_theta)
        k = _rope(qkv[:, h_q : h_q + h_kv], c.rope_theta)
        v = qkv[:, h_q + h_kv :]
        group = h_q // h_kv
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) * d**-0.5 + causal
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        attention = np.einsum("hqk,khd->qhd", probs, v).reshape(seq, h_q * d)
        x = x + linear(f"{i}.o_proj", attention, weights[p + "self_attn.o_proj.weight"])
        h = _rms_norm(x, weights[p + "post_attention_layernorm.weight"], c.rms_norm_eps)
        gate_up = linear(f"{i}.gate_up_proj", h, weights[p + "mlp.gate_up_proj.weight"])
        gate, up = np.split(gate_up, 2, axis=-1)
        mlp = gate / (1 + np.exp(-gate)) * up
        x = x + linear(f"{i}.down_proj", mlp, weights[p + "mlp.down_proj.weight"])
    x = _rms_norm(x, weights["model.norm.weight"], c.rms_norm_eps)
    head = (
        weights["model.embed_tokens.weight"] if c.tie_word_embeddings else weights["lm_head.weight"]
    )
    return linear("lm_head", x, head)


def calibrate(
    config: LlamaConfig,
    weights: dict[str, np.ndarray],
    prompts: Sequence[Sequence[int]],
    weight_scheme: str = "per-channel",
    bits: int = 8,
) -> Quantization:
    """Static activation ranges of every projection over ``prompts`` (float32 runs)."""
    linear = _Linear(None, calibrating=True)
    for prompt in prompts:
        numpy_prefill_logits(config, weights, prompt, linear)
    return Quantization(weights=weight_scheme, ranges=dict(linear.ranges), bits=bits)


def host_prefill_logits(
    config: LlamaConfig, weight_list: Sequence[np.ndarray], tokens: Sequence[int]
) -> np.ndarray:
    """Last-position logits of TVM's host build of the Relax model (the float32 truth)."""
    from .dispatch import build_llm
    from .generate import LlamaEngine
    from .model import export_model

    mod, _, _ = export_model(config)
    engine = LlamaEngine(build_llm(mod, entry_functions=[]), config, list(weight_list))
    return np.asarray(engine.prefill(list(tokens))).reshape(-1)


@dataclass
class AccuracyReport:
    """W8A8 against float32 over the evaluation prompts (every position of each)."""

    model: str
    weights: str
    bits: int
    calibration_prompts: int  # 0: calibrated on the evaluation prompts (in_sample)
    evaluation_prompts: int
    positions: int
    prompt_length: int
    seed: int
    max_abs_logit_error: float
    mean_abs_logit_error: float
    max_abs_logit: float
    relative_error: float  # max |error| / max |float32 logit|
    top1_agreement: float
    #: Fraction of the projections' input elements outside their calibrated range (clipped).
    clipped_fraction: float
    #: The numpy float32 model against TVM's host build (last position of each prompt).
    reference_max_abs_difference: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format(self) -> str:
        reference = (
            f"; numpy float32 vs TVM host build: max |diff| {self.reference_max_abs_difference:.1e}"
            if self.reference_max_abs_difference is not None
            else ""
        )
        return (
            f"{self.model} W{self.bits}A{self.bits} ({self.weights} weights, static per-tensor "
            f"activations calibrated on "
            f"{self.calibration_prompts or 'the evaluation'} random prompts): over "
            f"{self.positions} positions of {self.evaluation_prompts} other random prompts of "
            f"{self.prompt_length} tokens, max |logit error| {self.max_abs_logit_error:.4f} "
            f"(mean {self.mean_abs_logit_error:.4f}; {self.relative_error:.2%} of the largest "
            f"logit {self.max_abs_logit:.2f}), top-1 agreement {self.top1_agreement:.1%}, "
            f"{self.clipped_fraction:.3%} of the projection inputs clipped"
            f"{reference}"
        )


def accuracy_check(
    config: LlamaConfig | str = "tiny-llama",
    weight_scheme: str = "per-channel",
    bits: int = 8,
    calibration_prompts: int = 8,
    evaluation_prompts: int = 16,
    prompt_length: int = 32,
    seed: int = 0,
    check_reference: bool = True,
    in_sample: bool = False,
) -> AccuracyReport:
    """Calibrate on random token prompts, evaluate on other random prompts, against float32.
    Weights are :func:`tvm_nnapi.llm.random_weights` (seed ``seed``). ``in_sample`` calibrates
    on the evaluation prompts themselves (a diagnostic: only what quantization itself pushes past
    the float32 ranges is clipped)."""
    from .weights import param_specs, random_weights

    config = get_config(config) if isinstance(config, str) else config
    specs = param_specs(config)
    weight_list = random_weights(specs, seed=seed)
    weights = {name: array for (name, _), array in zip(specs, weight_list, strict=True)}
    rng = np.random.default_rng(seed + 1)

    def prompts(count: int) -> list[list[int]]:
        return [rng.integers(0, config.vocab_size, prompt_length).tolist() for _ in range(count)]

    calibration, evaluation = prompts(calibration_prompts), prompts(evaluation_prompts)
    if in_sample:
        calibration = evaluation
    quantization = calibrate(config, weights, calibration, weight_scheme, bits)
    errors, agree, largest, positions = [], 0, 0.0, 0
    counter = _Linear(quantization, False)
    reference_difference = 0.0 if check_reference else None
    for index, prompt in enumerate(evaluation):
        exact = numpy_prefill_logits(config, weights, prompt)
        approximate = numpy_prefill_logits(config, weights, prompt, counter)
        errors.append(np.abs(approximate - exact).reshape(-1))
        agree += int(np.sum(exact.argmax(axis=-1) == approximate.argmax(axis=-1)))
        largest = max(largest, float(np.abs(exact).max()))
        positions += exact.shape[0]
        if check_reference and index < 2:  # the numpy model is the TVM model
            host = host_prefill_logits(config, weight_list, prompt)
            difference = float(np.abs(host - exact[-1]).max())
            reference_difference = max(reference_difference or 0.0, difference)
    error = np.concatenate(errors)
    return AccuracyReport(
        model=config.name,
        weights=weight_scheme,
        bits=bits,
        calibration_prompts=0 if in_sample else calibration_prompts,
        evaluation_prompts=evaluation_prompts,
        positions=positions,
        prompt_length=prompt_length,
        seed=seed,
        max_abs_logit_error=float(error.max()),
        mean_abs_logit_error=float(error.mean()),
        max_abs_logit=largest,
        relative_error=float(error.max()) / largest if largest else 0.0,
        top1_agreement=agree / positions,
        clipped_fraction=counter.clipped / counter.elements if counter.elements else 0.0,
        reference_max_abs_difference=reference_difference,
    )
