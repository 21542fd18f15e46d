# SPDX-License-Identifier: Apache-2.0
"""Quantized (QDQ) versions of torchvision's CV networks, made the way a user makes them.

A network with random weights (:func:`tvm_nnapi.models.torchvision_models.torchvision_model`'s
definition and batch-norm calibration) is exported to ONNX, quantized by onnxruntime's static
quantizer (QDQ format, per-channel int8 weights, uint8 activations, calibrated on random
images) and imported with TVM's ONNX frontend. Needs torch, torchvision (the ``models`` extra),
onnx and onnxruntime (the ``test`` extra). See docs/quantization.md.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np
import tvm


@dataclass
class QuantizedModel:
    name: str
    module: tvm.IRModule
    onnx_model: Any
    input_shape: tuple[int, ...]

    def random_input(self, seed: int = 0) -> np.ndarray:
        return np.random.default_rng(seed).standard_normal(self.input_shape).astype("float32")


def quantized_torchvision_model(
    name: str, resolution: int = 224, seed: int = 0, calibration_images: int = 8
) -> QuantizedModel:
    """torchvision's ``name`` with random weights as an onnxruntime-quantized QDQ model."""
    qdq = quantized_onnx(name, resolution, seed, calibration_images)
    return import_quantized(name, qdq, (1, 3, resolution, resolution))


def import_quantized(name: str, qdq: Any, input_shape: tuple[int, ...]) -> QuantizedModel:
    """A QDQ ONNX model (:func:`quantized_onnx`) imported with TVM's ONNX frontend."""
    from tvm.relax.frontend.onnx import from_onnx

    return QuantizedModel(name, from_onnx(qdq, keep_params_in_input=False), qdq, input_shape)


def quantized_onnx(
    name: str, resolution: int = 224, seed: int = 0, calibration_images: int = 8
) -> Any:
    """torchvision's ``name`` with random weights exported to ONNX (input ``x``, output
    ``logits``, ``1 x 3 x resolution x resolution``) and quantized by onnxruntime's static
    quantizer (QDQ, per-channel int8 weights, uint8 activations, calibrated on
    ``calibration_images`` random images): the ``onnx.ModelProto``."""
    import onnx
    import torch
    from onnxruntime import quantization

    from .torchvision_models import TORCHVISION_NETWORKS, _calibrate_batch_norm, _import_torch

    _, torchvision = _import_torch()
    if name not in TORCHVISION_NETWORKS:
        raise ValueError(f"unknown network {name!r}; choose from {', '.join(TORCHVISION_NETWORKS)}")
    shape = (1, 3, resolution, resolution)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = getattr(torchvision.models, name)(weights=None).eval()
        _calibrate_batch_norm(torch, model, (8, 3, resolution, resolution), batches=2)
    rng = np.random.default_rng(seed)
    images = [rng.standard_normal(shape).astype("float32") for _ in range(calibration_images)]

    class _Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self._images = iter(images)

        def get_next(self) -> dict[str, np.ndarray] | None:
            image = next(self._images, None)
            return None if image is None else {"x": image}

    with tempfile.TemporaryDirectory() as tmp:
        source, target = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "qdq.onnx")
        with torch.no_grad():
            torch.onnx.export(
                model,
                (torch.from_numpy(images[0]),),
                source,
                input_names=["x"],
                output_names=["logits"],
                opset_version=17,
                dynamo=False,
            )
        quantization.quantize_static(
            source,
            target,
            _Reader(),
            quant_format=quantization.QuantFormat.QDQ,
            per_channel=True,
            weight_type=quantization.QuantType.QInt8,
            activation_type=quantization.QuantType.QUInt8,
        )
        return onnx.load(target)
