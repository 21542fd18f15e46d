# SPDX-License-Identifier: Apache-2.0
"""PT2E-quantized PyTorch programs (torchao's prepare_pt2e / convert_pt2e, int8 activations,
per-channel int8 weights, float biases) through torch.export and TVM's PyTorch frontend with
the converters of tools/pt2e.py: one NNAPI subgraph of quant8 operations, compared with TVM's
host build and with PyTorch's own execution of the converted program."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip(
    "torch", reason="PT2E programs need torch: pip install -e '.[models]' (or tox -e models)"
)
pytest.importorskip("torchao", reason="PT2E quantization is in torchao: pip install -e '.[models]'")

import torch

import tvm_nnapi
from tvm_nnapi.compiler import codegen
from tvm_nnapi.tools.pt2e import from_exported_program

from .helpers import run_host, run_nnapi


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.depthwise = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        y = torch.relu(self.depthwise(y)) + y
        return self.fc(y.mean(dim=(2, 3)))


def _quantized_program():
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )

    torch.manual_seed(0)
    net = _Net().eval()
    example = (torch.randn(1, 3, 8, 8),)
    quantizer = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=True)
    )
    prepared = prepare_pt2e(torch.export.export(net, example).module(), quantizer)
    for _ in range(4):
        prepared(torch.randn(1, 3, 8, 8))
    converted = convert_pt2e(prepared)
    return converted, torch.export.export(converted, example)


def test_pt2e_program_is_one_quantized_subgraph_and_matches() -> None:
    converted, program = _quantized_program()
    mod = from_exported_program(program)
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == [], [str(r) for r in result.refusals]
    assert len(result.subgraphs) == 1
    graph = codegen.lower_function(result.module[result.subgraphs[0]]).to_dict()
    quant8 = {
        op["op"]
        for op in graph["operations"]
        if graph["operands"][op["inputs"][0]]["type"] == "TENSOR_QUANT8_ASYMM_SIGNED"
    }
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "MEAN"} <= quant8
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype("float32")
    got, executions = run_nnapi(mod, "main", [x])
    assert executions == 1
    host = run_host(mod, "main", [x])
    with torch.no_grad():
        reference = converted(torch.from_numpy(x)).numpy()
    (output,) = [o for o in program.graph.nodes if o.op == "output"]
    dequantize = output.args[0][0]
    step = float(dequantize.args[1])
    assert np.abs(got - host).max() / step <= 2
    assert np.abs(got - reference).max() / step <= 2
