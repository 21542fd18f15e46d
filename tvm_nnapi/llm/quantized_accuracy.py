# SPDX-License-Identifier: Apache-2.0
"""MEASURED accuracy of the ways group-quantized weights (``q4f16_1``, ``q4f32_1``) reach NNAPI,
against the float model of the same weights.

NNAPI has no 4-bit type. The paths built here (docs/llm.md, "Quantized weights"):

- ``input``: the weights stay 4-bit in memory; a TVM kernel dequantizes each projection's
  weight on the host at every call and the projection's FULLY_CONNECTED on NNAPI takes the float
  weight as an input;
- ``resident``: the weights are dequantized once, at load, and bound as NNAPI constants of the
  prefill subgraphs (the float model of the quantized values);
- ``int8``: the dequantized values requantized to int8 per output channel, activations uint8
  with static scales from a calibration run (W8A8, :mod:`tvm_nnapi.llm.int8`), the projections
  on NNAPI as quantized CONV_2D; ``host int8`` is TVM's host build of the same QDQ module.

Each runs the real build (prefill on the mock NNAPI) over a fixed set of prompts; the
reference is TVM's host build of the float32 model whose weights were quantized. Reported per
path: top-1 agreement of the last position's logits and the largest logit error, absolute and
relative to the reference's largest logit. The host build of the quantized model is reported
too, separating the quantization's error from NNAPI's.

    from tvm_nnapi.llm import quantized_accuracy
    print(quantized_accuracy.accuracy_check("q4f16_1").format())
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .config import LlamaConfig, get_config
from .quantization import get_quantization

#: (label, prefill on NNAPI, weight path) of each build compared with the float model.
PATHS = (
    ("host (quantized)", False, "input"),
    ("input", True, "input"),
    ("resident", True, "resident"),
    ("host int8", False, "int8"),
    ("int8", True, "int8"),
)


def fixed_prompts(vocab_size: int, count: int = 8, seed: int = 1234) -> list[list[int]]:
    """``count`` prompts of 4 to 4 + 3 * (count - 1) tokens drawn from the vocabulary."""
    rng = np.random.default_rng(seed)
    return [[int(t) for t in rng.integers(0, vocab_size, 4 + 3 * i)] for i in range(count)]


@dataclass
class PathAccuracy:
    """One build against the float reference over the prompts."""

    path: str
    top1_agreement: float  # share of prompts whose top-1 token is the reference's
    max_abs_logit_error: float
    max_relative_logit_error: float  # over the reference's largest |logit| per prompt
    nnapi_calls: int


@dataclass
class AccuracyReport:
    model: str
    quantization: str
    prompts: int
    seed: int
    paths: list[PathAccuracy]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format(self) -> str:
        lines = [
            f"MEASURED accuracy of {self.quantization} weight paths against the float32 model "
            f"of the same weights ({self.model}, random weights seed {self.seed}, "
            f"{self.prompts} prompts, last-position logits of prefill):",
            f"  {'path':<18} {'top-1 agrees':>12} {'max |error|':>12} {'relative':>9} "
            f"{'NNAPI calls':>11}",
        ]
        for p in self.paths:
            lines.append(
                f"  {p.path:<18} {p.top1_agreement:>12.0%} {p.max_abs_logit_error:>12.4f} "
                f"{p.max_relative_logit_error:>9.2%} {p.nnapi_calls:>11}"
            )
        return "\n".join(lines)


def _prefill_logits(engine: Any, prompts: Sequence[Sequence[int]]) -> list[np.ndarray]:
    logits = []
    for prompt in prompts:
        engine.reset()
        logits.append(np.asarray(engine.prefill(list(prompt)), dtype=np.float64).reshape(-1))
    return logits


def accuracy_check(
    quantization: str = "q4f16_1",
    config: LlamaConfig | str = "tiny-llama",
    prompts: Sequence[Sequence[int]] | None = None,
    seed: int = 0,
    paths: Sequence[tuple[str, bool, str]] | None = None,
) -> AccuracyReport:
    """Build the float32 reference and every path of ``paths`` (default :data:`PATHS`) for
    ``config`` with random weights (``seed``) and compare their prefill logits over ``prompts``
    (default :func:`fixed_prompts`; the int8 path calibrates on other prompts)."""
    from .engine import build_engine

    q = get_quantization(quantization)
    if not q.quantized:
        raise ValueError(f"{q.name} does not quantize weights: nothing to compare")
    config = get_config(config) if isinstance(config, str) else config
    prompts = list(prompts) if prompts is not None else fixed_prompts(config.vocab_size)
    reference_engine = build_engine(config, "float32", False, None, seed)
    reference = _prefill_logits(reference_engine, prompts)
    del reference_engine
    rows = []
    for label, nnapi, weight_path in paths or PATHS:
        engine = build_engine(
            config, q.model_dtype, nnapi, None, seed, quantization=q, weight_path=weight_path
        )
        logits = _prefill_logits(engine, prompts)
        agree = [int(np.argmax(a) == np.argmax(r)) for a, r in zip(logits, reference, strict=True)]
        errors = [np.max(np.abs(a - r)) for a, r in zip(logits, reference, strict=True)]
        relative = [e / np.max(np.abs(r)) for e, r in zip(errors, reference, strict=True)]
        calls = int(engine.nnapi_stats().get("nnapi_calls", 0)) if nnapi else 0
        rows.append(
            PathAccuracy(
                label,
                float(np.mean(agree)),
                float(np.max(errors)),
                float(np.max(relative)),
                calls,
            )
        )
    return AccuracyReport(config.name, q.name, len(prompts), seed, rows)
