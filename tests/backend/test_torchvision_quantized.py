# SPDX-License-Identifier: Apache-2.0
"""Quantized torchvision MobileNetV2, MobileNetV3-Large and EfficientNet-B0 (random weights,
ONNX export, onnxruntime's static quantizer per channel, calibrated on random images;
tvm_nnapi.models.quantized_torchvision) on the mock NNAPI, at 64x64 like test_torchvision.py.

Each network is one NNAPI subgraph with nothing refused and at least 95% of its FLOPs in quantized
groups. Numerics: every operator rounds within about one step of the host's float
computation of the same QDQ graph, but a one-step difference of an input moves a dot product of
hundreds of terms by many output steps, so the logits of these 50-layer networks differ from
TVM's host build by up to about 20 output steps, as TVM's host build and onnxruntime differ from
each other (docs/quantization.md has the measured numbers). The test asserts the top-1 class
against both references and bounds the error relative to the largest logit (25%, measured up
to 18%), which a wrong lowering (a lost bias, a wrong scale or layout) exceeds.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax

pytest.importorskip(
    "torchvision",
    reason="torch and torchvision are an optional extra: install the models extra "
    "(pip install '.[models]') or run tox -e models",
)
ort = pytest.importorskip(
    "onnxruntime", reason="the quantizer is onnxruntime's: pip install -e '.[test]'"
)

import tvm_nnapi  # noqa: E402
from tvm_nnapi.models.quantized_torchvision import quantized_torchvision_model  # noqa: E402
from tvm_nnapi.models.torchvision_models import TORCHVISION_NETWORKS  # noqa: E402

RESOLUTION = 64


@pytest.mark.parametrize("name", TORCHVISION_NETWORKS)
def test_quantized_network_is_one_quant8_subgraph(name: str) -> None:
    model = quantized_torchvision_model(name, resolution=RESOLUTION)
    report = tvm_nnapi.partition_with_report(model.module)
    assert report.refusals == [], [str(r) for r in report.refusals]
    assert len(report.subgraphs) == 1
    summary = tvm_nnapi.offload_summary(report.module)
    assert summary.quantized_flops >= 0.95 * (summary.offloaded_flops + summary.host_flops)

    image = model.random_input(1)
    got = relax.VirtualMachine(tvm_nnapi.build(report.module), tvm.cpu())["main"](
        tvm.runtime.tensor(image)
    )
    got = got.numpy()
    host = relax.VirtualMachine(relax.build(model.module, target="llvm"), tvm.cpu())["main"](
        tvm.runtime.tensor(image)
    )
    host = host.numpy()
    session = ort.InferenceSession(
        model.onnx_model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (reference,) = session.run(None, {"x": image})
    assert got.shape == host.shape == (1, 1000)
    assert got.argmax() == host.argmax() == reference.argmax()
    for expected in (host, reference):
        assert np.abs(got - expected).max() <= 0.25 * np.abs(expected).max()
