# SPDX-License-Identifier: Apache-2.0
"""torchvision's MobileNetV2, MobileNetV3-Large and EfficientNet-B0 (random weights, nothing
downloaded) through torch.export and TVM's PyTorch frontend: partitioned, run on the mock NNAPI
and compared with TVM's llvm build of the same Relax module.

The networks run at 64x64 to keep the llvm build short (its time hardly depends on the
resolution); every stride still applies (the last feature map is 2x2).

Tolerance: the logits of these networks are of order 0.1-3 (the batch-norm statistics are
calibrated, so activations stay near unit scale). Both builds compute in fp32 but sum in
different orders (the mock's reference kernels vs TVM's schedules, and the hardswish chains as one
HARD_SWISH), through about 50 layers whose dot products have up to 1,280 x 9 terms: the observed
difference is about 1e-5 of the largest logit. rtol = 1e-4 with atol = 1e-4 x the largest logit
leaves a tenfold margin and still fails on any real lowering error (a wrong bias, layout or
activation changes logits by far more).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tvm
from tvm import relax

pytest.importorskip(
    "torchvision",
    reason="torch and torchvision are an optional extra: install the models extra "
    "(pip install '.[models]') or run tox -e models",
)

import mock_nnapi
import tvm_nnapi
from tvm_nnapi.models.torchvision_models import (
    TORCHVISION_NETWORKS,
    TorchvisionModel,
    torchvision_model,
)

RESOLUTION = 64


def _conv_kinds(mod: tvm.IRModule) -> dict[str, int]:
    """How many CONV_2D and DEPTHWISE_CONV_2D operations the module's conv2d calls become."""
    counts = {"CONV_2D": 0, "DEPTHWISE_CONV_2D": 0}

    def visit(expr: relax.Expr) -> None:
        if isinstance(expr, relax.Call) and getattr(expr.op, "name", "") == "relax.nn.conv2d":
            groups = int(expr.attrs.groups)
            counts["CONV_2D" if groups == 1 else "DEPTHWISE_CONV_2D"] += 1

    relax.analysis.post_order_visit(mod["main"].body, visit)
    return counts


def _tolerance(expected: np.ndarray) -> dict[str, Any]:
    return {"rtol": 1e-4, "atol": 1e-4 * float(np.abs(expected).max())}


@pytest.mark.parametrize("name", TORCHVISION_NETWORKS)
def test_network_runs_on_nnapi_and_matches_llvm(name: str):
    model = torchvision_model(name, resolution=RESOLUTION)
    report = tvm_nnapi.partition_with_report(model.module)
    summary = tvm_nnapi.offload_summary(report.module)
    assert report.refusals == [], [str(r) for r in report.refusals]
    assert summary.offloaded_flop_share >= 0.95
    assert len(report.subgraphs) == 1

    image = model.random_input()
    vm = relax.VirtualMachine(tvm_nnapi.build(report.module), tvm.cpu())
    watched = ["CONV_2D", "DEPTHWISE_CONV_2D", "HARD_SWISH"]
    before = {op: mock_nnapi.operation_count(op) for op in watched}
    logits = vm["main"](tvm.runtime.tensor(image)).numpy()
    ran = {op: mock_nnapi.operation_count(op) - before[op] for op in watched}
    expected_convs = _conv_kinds(model.module)
    assert ran["CONV_2D"] == expected_convs["CONV_2D"] > 0
    assert ran["DEPTHWISE_CONV_2D"] == expected_convs["DEPTHWISE_CONV_2D"] > 0
    if name == "mobilenet_v3_large":
        assert ran["HARD_SWISH"] == 21  # 20 in the features, 1 in the classifier

    host = relax.VirtualMachine(relax.build(model.module, target="llvm"), tvm.cpu())
    expected = host["main"](tvm.runtime.tensor(image)).numpy()
    assert logits.shape == expected.shape == (1, 1000)
    np.testing.assert_allclose(logits, expected, **_tolerance(expected))
    # The import itself: the Relax module computes what the torch module does.
    np.testing.assert_allclose(expected, _torch_logits(model, image), **_tolerance(expected))


def _torch_logits(model: TorchvisionModel, image: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        return model.torch_module(torch.from_numpy(image)).numpy()


def test_weights_kept_as_parameters():
    # Weights as inputs of main: convolutions get their filters transposed at run time and the
    # batch norms compute their scale and shift on NNAPI; all still in one subgraph.
    model = torchvision_model("mobilenet_v2", resolution=32, keep_params_as_input=True)
    assert len(model.module["main"].params) == 1 + len(model.params)
    report = tvm_nnapi.partition_with_report(model.module)
    summary = tvm_nnapi.offload_summary(report.module)
    assert report.refusals == [], [str(r) for r in report.refusals]
    assert summary.offloaded_flop_share >= 0.95
    assert len(report.subgraphs) == 1
    image = model.random_input()
    vm = relax.VirtualMachine(tvm_nnapi.build(report.module), tvm.cpu())
    before = mock_nnapi.operation_count("CONV_2D")
    logits = vm["main"](tvm.runtime.tensor(image), *[tvm.runtime.tensor(p) for p in model.params])
    assert mock_nnapi.operation_count("CONV_2D") - before == 35
    expected = _torch_logits(model, image)
    np.testing.assert_allclose(logits.numpy(), expected, **_tolerance(expected))


def test_unknown_network_is_refused():
    with pytest.raises(ValueError, match="unknown network"):
        torchvision_model("resnet50")
