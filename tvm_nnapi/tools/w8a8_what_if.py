# SPDX-License-Identifier: Apache-2.0
"""A MODELLING what-if, not a compiler lowering: the NNAPI subgraphs of a float LLM rewritten as
W8A8 (int8 weights and activations) so that the estimate (:mod:`tvm_nnapi.tools.estimate`)
costs them on the mock as NNAPI would run such a model.

    from tvm_nnapi.tools.estimate import PreparedEstimate
    from tvm_nnapi.tools.w8a8_what_if import w8a8_graph
    prepared = PreparedEstimate(mod, {"seq_len": 128}, "prefill", graph_transform=w8a8_graph)

Every ``FULLY_CONNECTED`` of a ``TENSOR_FLOAT32`` activation becomes

    x (float32) -> QUANTIZE -> int8 matrix product -> DEQUANTIZE -> y (float32)

with a static per-tensor activation quantization (``TENSOR_QUANT8_ASYMM``) and int8 weights.
NNAPI's ``FULLY_CONNECTED`` takes per-tensor weights only (its weight operand has the input's
type; no ``TENSOR_QUANT8_SYMM_PER_CHANNEL``), so ``weights="per-channel"`` (the default) writes
the product as a 1x1 ``CONV_2D`` over ``[1, tokens, 1, in]`` with a per-channel filter
(``[out, 1, 1, in]``, channel dimension 0) between two ``RESHAPE`` s, which is how NNAPI can
express per-channel weights; ``weights="per-tensor"`` keeps a quant8 ``FULLY_CONNECTED`` with
per-tensor weights. The bias becomes ``TENSOR_INT32``. Everything else in the subgraph is
unchanged (float32, or float16 when the graph allows relaxed computation).

Assumptions of the what-if (docs/experiments.md): the scales and zero points written here are
placeholders (the cost model does not depend on their values; the accuracy of the scheme is
measured separately, :mod:`tvm_nnapi.llm.w8a8_accuracy`); weights are passed as int8 subgraph inputs
(a quarter of the float32 bytes to copy, or none when resident); the host side of the estimate
still costs the float Relax operators, i.e. TVM's CPU backend running the float32 model.
"""

from __future__ import annotations

import copy
import math
from typing import Any

#: Placeholder quantization parameters (the modelled cost does not depend on them).
ACTIVATION_SCALE = 0.05
ACTIVATION_ZERO_POINT = 128
WEIGHT_SCALE = 0.01
WEIGHT_SCHEMES = ("per-channel", "per-tensor")
_ALIGNMENT = 64


class _Graph:
    """A graph JSON document being rewritten (operands appended, constants appended)."""

    def __init__(self, graph: dict[str, Any], constants: bytes) -> None:
        self.doc = copy.deepcopy(graph)
        self.blob = bytearray(constants)
        self.operations: list[dict[str, Any]] = []

    def operand(self, **fields: Any) -> int:
        self.doc["operands"].append(fields)
        return len(self.doc["operands"]) - 1

    def scalar(self, value: int) -> int:
        return self.operand(type="INT32", value=value)

    def zeros_constant(self, type_: str, shape: list[int], element_bytes: int, **extra: Any) -> int:
        offset = -len(self.blob) % _ALIGNMENT + len(self.blob)
        nbytes = int(math.prod(shape)) * element_bytes
        self.blob.extend(b"\0" * (offset - len(self.blob) + nbytes))
        return self.operand(
            type=type_, shape=shape, constant={"offset": offset, "nbytes": nbytes}, **extra
        )

    def add(self, op: str, inputs: list[int], outputs: list[int], source: str | None) -> None:
        operation: dict[str, Any] = {"op": op, "inputs": inputs, "outputs": outputs}
        if source:
            operation["source"] = source
        self.operations.append(operation)


def _static(shape: list[Any], what: str) -> list[int]:
    if not all(isinstance(d, int) for d in shape):
        raise ValueError(f"w8a8_graph needs static shapes (specialise the program): {what} {shape}")
    return [int(d) for d in shape]


def _retype_weight(graph: _Graph, index: int, type_: str, shape: list[int], **quant: Any) -> int:
    """The weight operand as int8: an input keeps its id (its buffer follows the graph); a
    constant is replaced by an int8 constant of the same element count."""
    operand = graph.doc["operands"][index]
    if "constant" in operand:
        return graph.zeros_constant(type_, shape, 1, **quant)
    operand.clear()
    operand.update(type=type_, shape=shape, **quant)
    return index


def _bias(graph: _Graph, index: int, units: int, scale: float) -> int:
    operand = graph.doc["operands"][index]
    if operand.get("omitted"):
        return graph.zeros_constant("TENSOR_INT32", [units], 4, scale=scale, zero_point=0)
    if "constant" in operand:
        return graph.zeros_constant("TENSOR_INT32", [units], 4, scale=scale, zero_point=0)
    operand.clear()
    operand.update(type="TENSOR_INT32", shape=[units], scale=scale, zero_point=0)
    return index


def _rewrite(graph: _Graph, operation: dict[str, Any], weights: str) -> None:
    operands = graph.doc["operands"]
    x, w, b, act = operation["inputs"]
    (y,) = operation["outputs"]
    source = operation.get("source")
    x_shape = _static(operands[x]["shape"], "activation")
    units, depth = _static(operands[w]["shape"], "weight")
    y_shape = _static(operands[y]["shape"], "output")
    tokens = int(math.prod(x_shape)) // depth
    quant = {"scale": ACTIVATION_SCALE, "zero_point": ACTIVATION_ZERO_POINT}
    xq = graph.operand(type="TENSOR_QUANT8_ASYMM", shape=x_shape, **quant)
    graph.add("QUANTIZE", [x], [xq], source)
    yq = graph.operand(type="TENSOR_QUANT8_ASYMM", shape=y_shape, **quant)
    if weights == "per-tensor":
        wq = _retype_weight(
            graph, w, "TENSOR_QUANT8_ASYMM", [units, depth], scale=WEIGHT_SCALE, zero_point=128
        )
        bq = _bias(graph, b, units, ACTIVATION_SCALE * WEIGHT_SCALE)
        graph.add("FULLY_CONNECTED", [xq, wq, bq, act], [yq], source)
    else:
        channel_quant = {"channel_dim": 0, "scales": [WEIGHT_SCALE] * units}
        wq = _retype_weight(
            graph,
            w,
            "TENSOR_QUANT8_SYMM_PER_CHANNEL",
            [units, 1, 1, depth],
            channel_quant=channel_quant,
        )
        bq = _bias(graph, b, units, 0.0)  # per-channel: each bias scale is x_scale x w_scale[c]
        image = graph.operand(type="TENSOR_QUANT8_ASYMM", shape=[1, tokens, 1, depth], **quant)
        to_image = graph.operand(type="TENSOR_INT32", shape=[4], value=[1, tokens, 1, depth])
        graph.add("RESHAPE", [xq, to_image], [image], source)
        conv = graph.operand(type="TENSOR_QUANT8_ASYMM", shape=[1, tokens, 1, units], **quant)
        padding, stride = graph.scalar(2), graph.scalar(1)  # VALID, 1x1
        graph.add("CONV_2D", [image, wq, bq, padding, stride, stride, act], [conv], source)
        back = graph.operand(type="TENSOR_INT32", shape=[len(y_shape)], value=y_shape)
        graph.add("RESHAPE", [conv, back], [yq], source)
    graph.add("DEQUANTIZE", [yq], [y], source)


def w8a8_graph(
    graph: dict[str, Any], constants: bytes, weights: str = "per-channel"
) -> tuple[dict[str, Any], bytes]:
    """The graph JSON document and constant blob of one NNAPI subgraph with every float32
    ``FULLY_CONNECTED`` rewritten as W8A8 (see the module docstring); a graph without one is
    returned unchanged. A :data:`tvm_nnapi.tools.estimate.GraphTransform`."""
    if weights not in WEIGHT_SCHEMES:
        raise ValueError(f"weights must be one of {WEIGHT_SCHEMES}, got {weights!r}")
    rewritten = _Graph(graph, constants)
    operands = rewritten.doc["operands"]
    for operation in rewritten.doc["operations"]:
        is_float_fc = (
            operation["op"] == "FULLY_CONNECTED"
            and operands[operation["inputs"][0]]["type"] == "TENSOR_FLOAT32"
        )
        if is_float_fc:
            _rewrite(rewritten, operation, weights)
        else:
            rewritten.operations.append(operation)
    rewritten.doc["operations"] = rewritten.operations
    return rewritten.doc, bytes(rewritten.blob)


def per_tensor_w8a8_graph(graph: dict[str, Any], constants: bytes) -> tuple[dict[str, Any], bytes]:
    """:func:`w8a8_graph` with per-tensor weights (a quant8 ``FULLY_CONNECTED``)."""
    return w8a8_graph(graph, constants, weights="per-tensor")
