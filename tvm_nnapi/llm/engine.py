# SPDX-License-Identifier: Apache-2.0
"""Building a ready-to-generate LLM engine: export, weights, build, engine, in one call."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import tvm

from ..compiler.patterns import PartitionOptions
from .config import LlamaConfig
from .dispatch import build_llm
from .generate import LlamaEngine
from .model import export_model
from .quantization import Quantization, get_quantization
from .tensor_cache import is_tensor_cache, load_tensor_cache
from .weights import (
    dequantized_weights,
    iter_random_weights,
    iter_safetensors,
    param_specs,
    quantized_weights,
)

__all__ = ["build_engine", "load_weights"]


def load_weights(
    config: LlamaConfig,
    quantization: str | Quantization,
    named_params: Sequence[tuple[str, Any]],
    weights_path: str | None,
    seed: int,
) -> list[Any]:
    """The weights of the model exported as ``named_params`` in format ``quantization``, in
    their order: read from an MLC weight directory (as TVM tensors), or from Hugging Face
    safetensors (``weights_path``, comma-separated) or random (``seed``) and then quantized
    one float matrix at a time (numpy arrays)."""
    q = get_quantization(quantization)
    specs = param_specs(named_params)
    if weights_path and is_tensor_cache(weights_path):
        dtypes = [str(param.dtype) for _, param in named_params]
        return list(load_tensor_cache(weights_path, specs, q, dtypes))
    float_specs = param_specs(config) if q.quantized else specs
    floats: Iterator[np.ndarray]
    if weights_path:
        paths = weights_path.split(",")
        source = paths[0] if len(paths) == 1 else paths
        floats = iter_safetensors(source, config, float_specs, q.model_dtype)
    else:
        floats = iter_random_weights(float_specs, q.model_dtype, seed)
    if q.quantized:
        return quantized_weights(float_specs, floats, specs, q)
    return list(floats)


def build_engine(
    config: LlamaConfig,
    dtype: str,
    nnapi: bool,
    weights_path: str | None,
    seed: int,
    resident: bool = False,
    options: PartitionOptions | None = None,
    target: Any = None,
    quantization: str | Quantization | None = None,
) -> LlamaEngine:
    """A ready engine of ``config`` in ``dtype`` or in the weight format ``quantization`` (whose
    float type then replaces ``dtype``): prefill offloaded to NNAPI when ``nnapi`` (else the
    pure host build). Weights come from an MLC weight directory (tensor cache, in the model's
    format), from safetensors files (``weights_path``, comma-separated; float, quantized here
    when the format quantizes) or are random (``seed``). With ``resident`` they are bound as
    NNAPI constants of prefill; a quantized model is then dequantized once, here, and built as
    the float model of those values. With a ``target`` (:mod:`tvm_nnapi.targets`) the program
    is built for its ``compile_target`` and runs there."""
    q = get_quantization(quantization or ("q0f16" if dtype == "float16" else "q0f32"))
    dtype = q.model_dtype
    mod, named_params, _ = export_model(config, dtype, q)
    specs = param_specs(named_params)
    float_specs = param_specs(config) if q.quantized else specs
    weights: list[Any] = load_weights(config, q, named_params, weights_path, seed)
    if q.quantized and resident:
        # Dequantize once: the float model of the quantized values, its weights bound into prefill.
        arrays = [w.numpy() if isinstance(w, tvm.runtime.Tensor) else w for w in weights]
        weights = dequantized_weights(float_specs, specs, arrays, q)
        del arrays
        mod, named_params, _ = export_model(config, dtype)
        specs = param_specs(named_params)
    # One TVM copy of the weights, shared by the engine (embed, decode) and, when resident, by
    # the constants bound into prefill until its NNAPI subgraphs are compiled. Each numpy array
    # is dropped as soon as it is copied, so the two sets never coexist (peak: the weights once
    # plus one array, not twice the weights).
    weights.reverse()
    tensors = []
    while weights:
        weight = weights.pop()
        tensors.append(
            weight if isinstance(weight, tvm.runtime.Tensor) else tvm.runtime.tensor(weight)
        )
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
