# SPDX-License-Identifier: Apache-2.0
"""Whole networks: a MobileNetV2-style CNN partitioned, run on the mock NNAPI and compared with
TVM's llvm build of the same module."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax

import mock_nnapi
import tvm_nnapi
from tvm_nnapi.models import mobilenet_v2


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_mobilenet_v2_runs_on_nnapi_and_matches_llvm(layout):
    mod, info = mobilenet_v2(width=0.35, resolution=32, num_classes=10, layout=layout)
    report = tvm_nnapi.partition_with_report(mod)
    summary = tvm_nnapi.offload_summary(report.module)
    assert report.refusals == []
    assert len(report.subgraphs) == 1
    assert summary.offloaded_flop_share >= 0.95
    convolutions = summary.subgraphs[report.subgraphs[0]]["relax.nn.conv2d"]
    assert convolutions == 52

    image = np.random.default_rng(0).standard_normal(info["input_shape"]).astype(np.float32)
    vm = relax.VirtualMachine(tvm_nnapi.build(report.module), tvm.cpu())
    before = {op: mock_nnapi.operation_count(op) for op in ("CONV_2D", "DEPTHWISE_CONV_2D")}
    logits = vm["main"](tvm.runtime.tensor(image)).numpy()
    assert mock_nnapi.operation_count("CONV_2D") - before["CONV_2D"] == 35
    assert mock_nnapi.operation_count("DEPTHWISE_CONV_2D") - before["DEPTHWISE_CONV_2D"] == 17

    host = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    expected = host["main"](tvm.runtime.tensor(image)).numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
