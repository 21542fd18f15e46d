# SPDX-License-Identifier: Apache-2.0
"""The calibration run of the int8 weight path (:mod:`tvm_nnapi.llm.int8`): TVM's host build of
the float model over fixed prompts, recording each projection's input and output range."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .config import LlamaConfig
from .dispatch import build_llm
from .generate import LlamaEngine
from .int8 import ActivationQuant, Calibration, ProjectionPlan, plan_projections, projection_sites
from .model import export_model

__all__ = ["calibrate"]


def calibrate(
    config: LlamaConfig,
    dtype: str,
    weights: Sequence[Any],
    prompts: Sequence[Sequence[int]],
    plan: ProjectionPlan | None = None,
) -> Calibration:
    """Run TVM's host build of the float model (``weights``: its parameters, in the order of
    ``export_model(config, dtype)``) over ``prompts`` and record each projection's input and
    output range (prefill, every position; long prompts in chunks)."""
    if not prompts:
        raise ValueError("calibration needs at least one prompt")
    plan = plan or plan_projections(config)
    mod, _, _ = export_model(config, dtype, calibrate_ranges=True)
    sites = projection_sites(config)
    engine = LlamaEngine(build_llm(mod, entry_functions=[]), config, list(weights), dtype)
    low = np.full((len(sites), 2), np.inf)
    high = np.full((len(sites), 2), -np.inf)
    for prompt in prompts:
        engine.reset()
        for start in range(0, len(prompt), engine.prefill_chunk_size):
            chunk = list(prompt[start : start + engine.prefill_chunk_size])
            ranges = _prefill_ranges(engine, chunk, len(sites))
            low = np.minimum(low, ranges[:, [0, 2]])
            high = np.maximum(high, ranges[:, [1, 3]])
    calibration = Calibration(prompts=len(prompts))
    for index, site in enumerate(sites):
        if site in plan.int8:
            calibration.inputs[site] = ActivationQuant(float(low[index, 0]), float(high[index, 0]))
            calibration.outputs[site] = ActivationQuant(float(low[index, 1]), float(high[index, 1]))
    return calibration


def _prefill_ranges(engine: Any, tokens: Sequence[int], sites: int) -> np.ndarray:
    """One prefill chunk of the calibration build: its output is the logits followed by the
    ranges (``[sites, 4]``)."""
    values = engine._forward("prefill", engine.embed(tokens), len(tokens))
    return np.asarray(values[-4 * sites :], dtype=np.float64).reshape(sites, 4)
