# SPDX-License-Identifier: Apache-2.0
"""Building a ready-to-generate LLM engine: export, weights, build, engine, in one call."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import tvm

from ..compiler.patterns import PartitionOptions
from . import int8
from .calibration import calibrate
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

__all__ = ["WEIGHT_PATHS", "build_engine", "load_weights"]


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


#: How the weights reach NNAPI's prefill subgraphs (docs/llm.md, "Quantized weights"): as
#: inputs at every call, as resident float constants, or requantized to int8 (W8A8).
WEIGHT_PATHS = ("input", "resident", "int8")


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
    weight_path: str | None = None,
    calibration_prompts: Sequence[Sequence[int]] | None = None,
    calibration: int8.Calibration | None = None,
) -> LlamaEngine:
    """A ready engine of ``config`` in ``dtype`` or in the weight format ``quantization`` (whose
    float type then replaces ``dtype``): prefill offloaded to NNAPI when ``nnapi`` (else the
    pure host build). Weights come from an MLC weight directory (tensor cache, in the model's
    format), from safetensors files (``weights_path``, comma-separated; float, quantized here
    when the format quantizes) or are random (``seed``). With ``resident`` they are bound as
    NNAPI constants of prefill; a quantized model is then dequantized once, here, and built as
    the float model of those values. With a ``target`` (:mod:`tvm_nnapi.targets`) the program
    is built for its ``compile_target`` and runs there.

    ``weight_path`` is one of :data:`WEIGHT_PATHS` (default ``resident`` when ``resident``, else
    ``input``). ``int8`` requantizes the float values of the weights (dequantized once when the
    format quantizes) to int8 per output channel, calibrates static activation scales on TVM's
    host build of that float model over ``calibration_prompts`` (default
    :func:`~tvm_nnapi.llm.int8.calibration_prompts`; or takes a given ``calibration``) and
    builds the W8A8 QDQ model (:mod:`tvm_nnapi.llm.int8`), its weights bound into prefill when
    ``nnapi``; without ``nnapi`` it is the host build of the same module (the differential
    reference). The engine's ``calibration`` attribute holds the calibration used."""
    path = weight_path or ("resident" if resident else "input")
    if path not in WEIGHT_PATHS:
        raise ValueError(f"weight_path must be one of {', '.join(WEIGHT_PATHS)}, got {path!r}")
    resident = path in ("resident", "int8")
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
    if path == "int8":
        if calibration is None:
            prompts = calibration_prompts or int8.calibration_prompts(config.vocab_size)
            calibration = calibrate(config, dtype, weights, prompts)
        floats = dict(zip((name for name, _ in specs), weights, strict=True))
        del weights
        mod, named_params, _ = export_model(config, dtype, int8=calibration)
        weights = int8.int8_weights(named_params, floats, dtype)
        del floats
        specs = param_specs(named_params)
        resident = nnapi
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
    engine = LlamaEngine(executable, config, tensors, dtype, target=target)
    engine.calibration = calibration if path == "int8" else None
    return engine
