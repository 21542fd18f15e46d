# SPDX-License-Identifier: Apache-2.0
"""QDQ ONNX models for the quantized tests, made as a user makes them: a float ONNX graph
(onnx.helper) quantized by onnxruntime's static quantizer (QDQ format, per-channel int8 weights,
uint8 activations, calibrated on random inputs)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="QDQ models need onnx: pip install -e '.[test]'")
ort = pytest.importorskip(
    "onnxruntime", reason="QDQ models need onnxruntime: pip install -e '.[test]'"
)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnxruntime import quantization  # noqa: E402


def initializer(name: str, array: np.ndarray) -> Any:
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def float_model(
    nodes: Sequence[Any],
    inputs: dict[str, list[int]],
    outputs: dict[str, list[int]],
    initializers: Sequence[Any] = (),
    opset: int = 17,
) -> Any:
    graph = helper.make_graph(
        list(nodes),
        "quantized_test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
        list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


class _Reader(quantization.CalibrationDataReader):
    def __init__(self, inputs: dict[str, list[int]], samples: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self._data = iter(
            [
                {n: rng.standard_normal(s).astype(np.float32) for n, s in inputs.items()}
                for _ in range(samples)
            ]
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._data, None)


def quantize_static(
    model: Any,
    inputs: dict[str, list[int]],
    samples: int = 8,
    seed: int = 0,
    per_channel: bool = True,
    activation_type: quantization.QuantType = quantization.QuantType.QUInt8,
    weight_type: quantization.QuantType = quantization.QuantType.QInt8,
    extra_options: dict | None = None,
    nodes_to_exclude: Sequence[str] = (),
) -> Any:
    """onnxruntime's ``quantize_static`` (QDQ format) of a float model, calibrated on
    ``samples`` standard-normal inputs; the nodes named in ``nodes_to_exclude`` stay float."""
    with tempfile.TemporaryDirectory() as tmp:
        source, target = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "qdq.onnx")
        onnx.save(model, source)
        quantization.quantize_static(
            source,
            target,
            _Reader(inputs, samples, seed),
            quant_format=quantization.QuantFormat.QDQ,
            per_channel=per_channel,
            activation_type=activation_type,
            weight_type=weight_type,
            extra_options=extra_options or {},
            nodes_to_exclude=list(nodes_to_exclude),
        )
        return onnx.load(target)


def run_onnxruntime(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def output_scales(model: Any) -> list[float]:
    """The scale of the DequantizeLinear that produces each graph output."""
    values = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    producers = {out: node for node in model.graph.node for out in node.output}
    scales = []
    for output in model.graph.output:
        node = producers[output.name]
        if node.op_type != "DequantizeLinear":
            raise ValueError(f"output {output.name} is not dequantized (it is {node.op_type})")
        scales.append(float(values[node.input[1]].reshape(-1)[0]))
    return scales


def small_cnn(seed: int = 0) -> tuple[Any, dict[str, list[int]]]:
    """The done-when CNN, float: conv, relu6 (Clip), depthwise conv, relu6, 1x1 conv, residual
    add, global average pool, flatten, Gemm."""
    rng = np.random.default_rng(seed)
    weights = [
        initializer("w1", rng.standard_normal((8, 3, 3, 3)) * 0.3),
        initializer("b1", rng.standard_normal(8) * 0.1),
        initializer("w2", rng.standard_normal((8, 1, 3, 3)) * 0.3),
        initializer("b2", rng.standard_normal(8) * 0.1),
        initializer("w3", rng.standard_normal((8, 8, 1, 1)) * 0.3),
        initializer("b3", rng.standard_normal(8) * 0.1),
        initializer("wf", rng.standard_normal((10, 8)) * 0.3),
        initializer("bf", rng.standard_normal(10) * 0.1),
        initializer("lo", np.array(0.0)),
        initializer("hi", np.array(6.0)),
    ]
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        node("Clip", ["c1", "lo", "hi"], ["r1"]),
        node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=8),
        node("Clip", ["c2", "lo", "hi"], ["r2"]),
        node("Conv", ["r2", "w3", "b3"], ["c3"]),
        node("Add", ["c3", "r1"], ["a"]),
        node("GlobalAveragePool", ["a"], ["g"]),
        node("Flatten", ["g"], ["f"]),
        node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    inputs = {"x": [1, 3, 16, 16]}
    return float_model(nodes, inputs, {"y": [1, 10]}, weights), inputs


#: The named nodes of :func:`attention`, in graph order.
ATTENTION_NODES = (
    "q_proj",
    "k_proj",
    "v_proj",
    "k_transpose",
    "scores",
    "scale_scores",
    "softmax",
    "context",
    "out_proj",
    "residual",
)


def attention(seed: int = 0, tokens: int = 8, dim: int = 16) -> tuple[Any, dict[str, list[int]]]:
    """One float self-attention head with a residual, every node named: q/k/v projections
    (MatMul), k transposed, scores q @ k^T scaled by 1/sqrt(dim), softmax, context, output
    projection, residual Add."""
    rng = np.random.default_rng(seed)

    def weight(name: str) -> Any:
        return initializer(name, rng.standard_normal((dim, dim)) * dim**-0.5)

    node = helper.make_node
    names = dict(zip(ATTENTION_NODES, ATTENTION_NODES, strict=True))
    nodes = [
        node("MatMul", ["x", "wq"], ["q"], name=names["q_proj"]),
        node("MatMul", ["x", "wk"], ["k"], name=names["k_proj"]),
        node("MatMul", ["x", "wv"], ["v"], name=names["v_proj"]),
        node("Transpose", ["k"], ["kt"], name=names["k_transpose"], perm=[0, 2, 1]),
        node("MatMul", ["q", "kt"], ["s"], name=names["scores"]),
        node("Mul", ["s", "scale"], ["s2"], name=names["scale_scores"]),
        node("Softmax", ["s2"], ["p"], name=names["softmax"], axis=-1),
        node("MatMul", ["p", "v"], ["o"], name=names["context"]),
        node("MatMul", ["o", "wo"], ["y"], name=names["out_proj"]),
        node("Add", ["y", "x"], ["z"], name=names["residual"]),
    ]
    weights = [weight("wq"), weight("wk"), weight("wv"), weight("wo")]
    weights.append(initializer("scale", np.array(dim**-0.5)))
    inputs = {"x": [1, tokens, dim]}
    return float_model(nodes, inputs, {"z": [1, tokens, dim]}, weights), inputs


def qdq_model(
    op: Any,
    inputs: dict[str, list[int]],
    outputs: dict[str, list[int]],
    input_quant: tuple[float, int],
    output_quant: tuple[float, int],
    initializers: Sequence[Any] = (),
) -> Any:
    """A QDQ graph written directly (for operators onnxruntime's quantizer leaves in float):
    every input QuantizeLinear + DequantizeLinear with ``input_quant``, then ``op``, then the
    output QuantizeLinear + DequantizeLinear with ``output_quant`` (uint8)."""
    scales = [
        numpy_helper.from_array(np.array(input_quant[0], np.float32), "in_scale"),
        numpy_helper.from_array(np.array(input_quant[1], np.uint8), "in_zp"),
        numpy_helper.from_array(np.array(output_quant[0], np.float32), "out_scale"),
        numpy_helper.from_array(np.array(output_quant[1], np.uint8), "out_zp"),
    ]
    nodes = []
    renamed = {}
    for name in inputs:
        nodes.append(helper.make_node("QuantizeLinear", [name, "in_scale", "in_zp"], [f"{name}_q"]))
        nodes.append(
            helper.make_node("DequantizeLinear", [f"{name}_q", "in_scale", "in_zp"], [f"{name}_dq"])
        )
        renamed[name] = f"{name}_dq"
    (output,) = outputs
    body = helper.make_node(
        op.op_type,
        [renamed.get(i, i) for i in op.input],
        ["real"],
        **{a.name: helper.get_attribute_value(a) for a in op.attribute},
    )
    nodes += [
        body,
        helper.make_node("QuantizeLinear", ["real", "out_scale", "out_zp"], ["out_q"]),
        helper.make_node("DequantizeLinear", ["out_q", "out_scale", "out_zp"], [output]),
    ]
    return float_model(nodes, inputs, outputs, [*scales, *initializers])
