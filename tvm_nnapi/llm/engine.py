# SPDX-License-Identifier: Apache-2.0
"""Building a ready-to-generate LLM engine: export, weights, build, engine, in one call."""

from __future__ import annotations

from typing import Any

import tvm

from ..compiler.patterns import PartitionOptions
from .config import LlamaConfig
from .dispatch import build_llm
from .generate import LlamaEngine
from .model import export_model
from .weights import load_safetensors, param_specs, random_weights

__all__ = ["build_engine"]


def build_engine(
    config: LlamaConfig,
    dtype: str,
    nnapi: bool,
    weights_path: str | None,
    seed: int,
    resident: bool = False,
    options: PartitionOptions | None = None,
    target: Any = None,
) -> LlamaEngine:
    """A ready engine of ``config`` in ``dtype``: prefill offloaded to NNAPI when ``nnapi`` (else
    the pure host build), weights from safetensors files (``weights_path``, comma-separated) or
    random (``seed``), bound as NNAPI constants of prefill when ``resident``. With a ``target``
    (:mod:`tvm_nnapi.targets`) the program is built for its ``compile_target`` and runs there."""
    mod, named_params, _ = export_model(config, dtype)
    specs = param_specs(named_params)
    if weights_path:
        paths = weights_path.split(",")
        weights = load_safetensors(paths[0] if len(paths) == 1 else paths, config, specs, dtype)
    else:
        weights = random_weights(specs, dtype, seed)
    # One TVM copy of the weights, shared by the engine (embed, decode) and, when resident, by
    # the constants bound into prefill until its NNAPI subgraphs are compiled. Each numpy array
    # is dropped as soon as it is copied, so the two sets never coexist (peak: the weights once
    # plus one array, not twice the weights).
    weights.reverse()
    tensors = []
    while weights:
        tensors.append(tvm.runtime.tensor(weights.pop()))
    del weights
    executable = build_llm(
        mod,
        entry_functions=["prefill"] if nnapi else [],
        options=options,
        target=target.compile_target if target is not None else "llvm",
        resident_weights=tensors if resident else None,
        weight_names=[name for name, _ in specs],
    )
    return LlamaEngine(executable, config, tensors, dtype, target=target)
