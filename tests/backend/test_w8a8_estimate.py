# SPDX-License-Identifier: Apache-2.0
"""The estimate's graph-transform hook and the W8A8 what-if (tvm_nnapi.tools.w8a8_what_if): the
LLM's projections costed as int8 NNAPI operations on the mock, everything MODELLED."""

from __future__ import annotations

import json

import pytest

from tvm_nnapi.compiler.patterns import PartitionOptions
from tvm_nnapi.experiments.llm import LlmEstimator
from tvm_nnapi.tools.w8a8_what_if import per_tensor_w8a8_graph, w8a8_graph

PROFILE = "snapdragon-8-gen-2"
RELAXED = PartitionOptions(relax_fp32_to_fp16=True)


def _operations(estimator: LlmEstimator, length: int = 16) -> list[dict]:
    prepared = estimator.prepared("prefill", length)
    return [
        op for _, graph, _ in prepared._graphs.values() for op in json.loads(graph)["operations"]
    ]


def _operation_events(estimator: LlmEstimator, length: int = 16) -> list[dict]:
    traces = estimator.prepared("prefill", length).nnapi_traces(PROFILE)
    return [e for t in traces.values() for e in t["events"] if e["kind"] == "operation"]


@pytest.fixture(scope="module")
def float_estimator() -> LlmEstimator:
    return LlmEstimator("tiny-llama", options=RELAXED)


def test_identity_transform_costs_exactly_the_same(float_estimator):
    """Buffers made from the graph's operands (the transform path) cost as the Relax types do."""
    same = LlmEstimator("tiny-llama", options=RELAXED, graph_transform=lambda g, c: (g, c))
    a = float_estimator.estimate("prefill", 16, PROFILE).to_dict()["totals"]
    b = same.estimate("prefill", 16, PROFILE).to_dict()["totals"]
    assert a == b


def test_relaxed_llm_prefill_stays_on_the_dsp(float_estimator):
    """RMSNorm's RSQRT is in the DSP's support list, so no operation leaves it for the GPU."""
    assert {e["device"] for e in _operation_events(float_estimator)} == {"qti-dsp"}


@pytest.mark.parametrize(
    ("transform", "product"),
    [(w8a8_graph, "CONV_2D"), (per_tensor_w8a8_graph, "FULLY_CONNECTED")],
)
def test_w8a8_projections_run_as_int8_on_the_dsp(float_estimator, transform, product):
    float_fcs = sum(op["op"] == "FULLY_CONNECTED" for op in _operations(float_estimator))
    quantized = LlmEstimator("tiny-llama", options=RELAXED, graph_transform=transform)
    operations = _operations(quantized)
    names = [op["op"] for op in operations]
    assert names.count(product) == float_fcs > 0
    assert names.count("QUANTIZE") == names.count("DEQUANTIZE") == float_fcs
    events = _operation_events(quantized)
    products = [e for e in events if e["name"] == product]
    assert len(products) == float_fcs
    assert all(e["data_class"] == "quant8" and e["device"] == "qti-dsp" for e in products)

    # Weights copied as int8: a quarter of the float32 bytes (weights dominate the copies).
    def copied(estimator: LlmEstimator) -> float:
        traces = estimator.prepared("prefill", 16).nnapi_traces(PROFILE).values()
        return sum(e["bytes"] for t in traces for e in t["events"] if e["kind"] == "transfer")

    assert copied(quantized) < 0.5 * copied(float_estimator)
    plain = float_estimator.estimate("prefill", 16, PROFILE)
    w8a8 = quantized.estimate("prefill", 16, PROFILE)
    # The host side (TVM's CPU backend, float32) is the same program in both.
    assert w8a8.modelled_host_program_us == pytest.approx(plain.modelled_host_program_us)


def test_w8a8_needs_static_shapes():
    graph = {
        "operands": [
            {"type": "TENSOR_FLOAT32", "shape": ["n", 4]},
            {"type": "TENSOR_FLOAT32", "shape": [8, 4]},
            {"type": "TENSOR_FLOAT32", "shape": [8], "omitted": True},
            {"type": "INT32", "value": 0},
            {"type": "TENSOR_FLOAT32", "shape": ["n", 8]},
        ],
        "operations": [{"op": "FULLY_CONNECTED", "inputs": [0, 1, 2, 3], "outputs": [4]}],
        "inputs": [0, 1],
        "outputs": [4],
    }
    with pytest.raises(ValueError, match="static shapes"):
        w8a8_graph(graph, b"")
    with pytest.raises(ValueError, match="per-channel"):
        w8a8_graph(graph, b"", weights="per-row")
