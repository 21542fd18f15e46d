# SPDX-License-Identifier: Apache-2.0
"""The calibration workloads as NNAPI models: MobileNetV2, MobileNetV3-Large and the weight
streaming of LLM decode and prefill (docs/cost-model.md, "Calibration").

Each workload is an NNAPI model held as data (:class:`mock_nnapi.api.ModelRecord`: operands,
values and operations in NNAPI's own terms). It is built straight on the NNAPI C API of this
process (:attr:`Workload.model`: the mock's cost-only execution gives the modelled trace), or
written as graph JSON (docs/graph-json.md, :func:`model_graph`) that the runtime library
times on any target's NNAPI (``tvm_nnapi.testing.time_graph``: a phone's
``libneuralnetworks.so`` without Python there). Weights are zeros: timing does not depend on
their values, and a zero blob need not travel to a phone.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mock_nnapi.api import Model, ModelRecord
from mock_nnapi.constants import FuseCode, OperandCode, OperationCode, PaddingCode

#: Alignment of each constant in a graph's constant blob (docs/graph-json.md).
BLOB_ALIGNMENT = 64

#: Precisions a workload can be built in, and the NNAPI operand type of its tensors.
PRECISIONS = {
    "float32": OperandCode.TENSOR_FLOAT32,
    "float16": OperandCode.TENSOR_FLOAT16,
    "quant8": OperandCode.TENSOR_QUANT8_ASYMM,
}


@dataclass(frozen=True)
class LlmShape:
    """The projection shapes of a Llama-style decoder (no grouped-query attention)."""

    hidden: int
    intermediate: int
    layers: int
    vocab: int

    def weight_count(self) -> int:
        return self.layers * (4 * self.hidden**2 + 3 * self.hidden * self.intermediate) + (
            self.vocab * self.hidden
        )


#: LLM shapes of the published rows (Hugging Face configs).
LLM_SHAPES = {
    "smollm2-1.7b": LlmShape(hidden=2048, intermediate=8192, layers=24, vocab=49152),
    "llama-2-7b": LlmShape(hidden=4096, intermediate=11008, layers=32, vocab=32000),
}


def model_graph(record: ModelRecord, symbol: str) -> tuple[str, bytes, int]:
    """A recorded NNAPI model as graph JSON (docs/graph-json.md) named ``symbol``, with its
    constant blob: ``(json, blob, blob_size)``. Scalars and 1-D ``TENSOR_INT32`` values (axes,
    shapes) are inline; other tensor values live in the blob, 64-byte aligned. When every byte
    of the blob is zero, ``blob`` is empty and ``blob_size`` says how many zero bytes it has
    (what ``tvm_nnapi.testing.time_graph`` takes as ``zero_blob_bytes``)."""
    operands: list[dict[str, object]] = []
    pieces: list[tuple[int, np.ndarray]] = []
    size = 0
    for index, (code, dimensions, scale, zero_point) in enumerate(record.operand_types):
        operand: dict[str, object] = {"type": code.name}
        scalar = not code.name.startswith("TENSOR_")
        if not scalar:
            operand["shape"] = list(dimensions)
        if scale:
            operand["scale"] = scale
        if zero_point:
            operand["zero_point"] = zero_point
        if index in record.channel_quant:
            channel_dim, scales = record.channel_quant[index]
            operand["channel_quant"] = {
                "channel_dim": channel_dim,
                "scales": [float(v) for v in scales],
            }
        value = record.values.get(index)
        if value is not None and scalar:
            operand["value"] = value.reshape(()).item()
        elif value is not None and code == OperandCode.TENSOR_INT32 and value.ndim == 1:
            operand["value"] = [int(v) for v in value]
        elif value is not None:
            size += -size % BLOB_ALIGNMENT
            operand["constant"] = {"offset": size, "nbytes": value.nbytes}
            pieces.append((size, value))
            size += value.nbytes
        operands.append(operand)
    document = {
        "format": "tvm-nnapi-graph",
        "version": 1,
        "symbol": symbol,
        "operands": operands,
        "operations": [
            {"op": OperationCode(op).name, "inputs": list(ins), "outputs": list(outs)}
            for op, ins, outs in record.operations
        ],
        "inputs": record.inputs,
        "outputs": record.outputs,
    }
    text = json.dumps(document)
    if not any(np.any(value) for _, value in pieces):
        return text, b"", size
    blob = bytearray(size)
    for offset, value in pieces:
        blob[offset : offset + value.nbytes] = value.tobytes()
    return text, bytes(blob), size


@dataclass
class Workload:
    """A built workload: its NNAPI model as data and what its rates are per run."""

    name: str
    precision: str
    record: ModelRecord
    #: Bytes of weights one run reads (the numerator of a GB/s row).
    weight_bytes: float

    @functools.cached_property
    def model(self) -> Model:
        """The model built and finished on this process's NNAPI library (the mock on a host)."""
        return self.record.build()

    def graph(self) -> tuple[str, bytes, int]:
        """:func:`model_graph` of the workload (symbol ``<name>_<precision>``)."""
        return model_graph(self.record, f"{self.name}_{self.precision}".replace("-", "_"))


class _Builder:
    """A small NHWC model builder on :class:`mock_nnapi.api.Model`."""

    def __init__(self, precision: str) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; known: {sorted(PRECISIONS)}")
        self.precision = precision
        self.code = PRECISIONS[precision]
        self.model = ModelRecord()
        self.weight_bytes = 0.0
        self._scalars: dict[int, int] = {}

    @property
    def _quant(self) -> bool:
        return self.precision == "quant8"

    def tensor(self, shape: list[int], scale: float = 0.5) -> int:
        del scale  # one scale for every quantized tensor keeps the bias scale valid
        return self.model.add_tensor(self.code, shape, 0.5 if self._quant else 0.0)

    def int_scalar(self, value: int) -> int:
        if value not in self._scalars:
            self._scalars[value] = self.model.add_scalar(OperandCode.INT32, int(value))
        return self._scalars[value]

    def constant(self, shape: list[int], weights: bool = True) -> int:
        dtype = {"float32": np.float32, "float16": np.float16, "quant8": np.uint8}[self.precision]
        array = np.zeros(shape, dtype)
        if weights:
            self.weight_bytes += array.nbytes
        index = self.model.add_tensor(self.code, shape, 0.5 if self._quant else 0.0)
        self.model.set_value(index, array)
        return index

    def bias(self, count: int) -> int:
        if self._quant:
            index = self.model.add_tensor(OperandCode.TENSOR_INT32, [count], 0.25)
            self.model.set_value(index, np.zeros(count, np.int32))
            return index
        return self.constant([count], weights=False)

    def conv(self, x: int, shape: list[int], out: int, k: int, stride: int, fuse: int) -> int:
        n, h, w, c = shape
        y = self.tensor([n, -(-h // stride), -(-w // stride), out], 1.0)
        inputs = [
            x,
            self.constant([out, k, k, c]),
            self.bias(out),
            self.int_scalar(PaddingCode.SAME),
        ]
        inputs += [self.int_scalar(stride), self.int_scalar(stride), self.int_scalar(fuse)]
        self.model.add_operation(OperationCode.CONV_2D, inputs, [y])
        shape[:] = [n, -(-h // stride), -(-w // stride), out]
        return y

    def depthwise(self, x: int, shape: list[int], k: int, stride: int, fuse: int) -> int:
        n, h, w, c = shape
        y = self.tensor([n, -(-h // stride), -(-w // stride), c], 1.0)
        inputs = [x, self.constant([1, k, k, c]), self.bias(c), self.int_scalar(PaddingCode.SAME)]
        inputs += [self.int_scalar(stride), self.int_scalar(stride), self.int_scalar(1)]
        inputs.append(self.int_scalar(fuse))
        self.model.add_operation(OperationCode.DEPTHWISE_CONV_2D, inputs, [y])
        shape[:] = [n, -(-h // stride), -(-w // stride), c]
        return y

    def unary(self, operation: int, x: int, shape: list[int]) -> int:
        y = self.tensor(list(shape), 1.0)
        self.model.add_operation(operation, [x], [y])
        return y

    def binary(self, operation: int, a: int, b: int, shape: list[int]) -> int:
        y = self.tensor(list(shape), 1.0)
        self.model.add_operation(operation, [a, b, self.int_scalar(FuseCode.NONE)], [y])
        return y

    def mean_hw(self, x: int, shape: list[int]) -> int:
        axes = self.model.add_tensor(OperandCode.TENSOR_INT32, [2])
        self.model.set_value(axes, np.array([1, 2], np.int32))
        y = self.tensor([shape[0], 1, 1, shape[3]], 1.0)
        self.model.add_operation(OperationCode.MEAN, [x, axes, self.int_scalar(1)], [y])
        return y

    def reshape(self, x: int, shape: list[int]) -> int:
        target = self.model.add_tensor(OperandCode.TENSOR_INT32, [len(shape)])
        self.model.set_value(target, np.array(shape, np.int32))
        y = self.tensor(shape, 1.0)
        self.model.add_operation(OperationCode.RESHAPE, [x, target], [y])
        return y

    def fully_connected(self, x: int, rows: int, size: int, units: int, fuse: int = 0) -> int:
        y = self.tensor([rows, units], 1.0)
        inputs = [x, self.constant([units, size]), self.bias(units), self.int_scalar(fuse)]
        self.model.add_operation(OperationCode.FULLY_CONNECTED, inputs, [y])
        return y

    def finish(self, name: str, inputs: list[int], outputs: list[int]) -> Workload:
        self.model.identify_inputs_and_outputs(inputs, outputs)
        return Workload(name, self.precision, self.model, self.weight_bytes)


def _divisible(value: float, divisor: int = 8) -> int:
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def mobilenet_v2(precision: str = "float16", size: int = 224) -> Workload:
    """MobileNetV2 (width 1.0), batch 1, ReLU6 fused into the convolutions as TFLite converts
    it; residual ADDs as operations."""
    b = _Builder(precision)
    shape = [1, size, size, 3]
    x = b.tensor(list(shape))
    y = b.conv(x, shape, 32, 3, 2, FuseCode.RELU6)
    channels = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1)]:
        for i in range(n):
            y, channels = _inverted_residual(b, y, shape, channels, t, c, s if i == 0 else 1)
    for t, c, n, s in [(6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            y, channels = _inverted_residual(b, y, shape, channels, t, c, s if i == 0 else 1)
    y = b.conv(y, shape, 1280, 1, 1, FuseCode.RELU6)
    y = b.mean_hw(y, shape)
    y = b.reshape(y, [1, 1280])
    y = b.fully_connected(y, 1, 1280, 1000)
    return b.finish("mobilenet_v2", [x], [y])


def _inverted_residual(
    b: _Builder, x: int, shape: list[int], channels: int, t: int, out: int, stride: int
) -> tuple[int, int]:
    y = x
    if t != 1:
        y = b.conv(y, shape, channels * t, 1, 1, FuseCode.RELU6)
    y = b.depthwise(y, shape, 3, stride, FuseCode.RELU6)
    y = b.conv(y, shape, out, 1, 1, FuseCode.NONE)
    if stride == 1 and channels == out:
        y = b.binary(OperationCode.ADD, y, x, shape)
    return y, out


#: MobileNetV3-Large blocks: kernel, expansion, output, squeeze-excite, hard-swish, stride.
_V3_LARGE = [
    (3, 16, 16, False, False, 1),
    (3, 64, 24, False, False, 2),
    (3, 72, 24, False, False, 1),
    (5, 72, 40, True, False, 2),
    (5, 120, 40, True, False, 1),
    (5, 120, 40, True, False, 1),
    (3, 240, 80, False, True, 2),
    (3, 200, 80, False, True, 1),
    (3, 184, 80, False, True, 1),
    (3, 184, 80, False, True, 1),
    (3, 480, 112, True, True, 1),
    (3, 672, 112, True, True, 1),
    (5, 672, 160, True, True, 2),
    (5, 960, 160, True, True, 1),
    (5, 960, 160, True, True, 1),
]


def mobilenet_v3_large(precision: str = "float16", size: int = 224) -> Workload:
    """MobileNetV3-Large, batch 1: ReLU fused into convolutions, HARD_SWISH and the
    squeeze-excite gate (MEAN, two 1x1 convolutions, hard sigmoid = ADD 3, RELU6, MUL 1/6, and
    the MUL by the gate) as operations."""
    b = _Builder(precision)
    shape = [1, size, size, 3]
    x = b.tensor(list(shape))
    y = b.conv(x, shape, 16, 3, 2, FuseCode.NONE)
    y = b.unary(OperationCode.HARD_SWISH, y, shape)
    channels = 16
    three = b.constant([1], weights=False)
    sixth = b.constant([1], weights=False)
    for k, expansion, out, squeeze, hard_swish, stride in _V3_LARGE:
        fuse = FuseCode.NONE if hard_swish else FuseCode.RELU
        block_input = y
        if expansion != channels:
            y = b.conv(y, shape, expansion, 1, 1, fuse)
            if hard_swish:
                y = b.unary(OperationCode.HARD_SWISH, y, shape)
        y = b.depthwise(y, shape, k, stride, fuse)
        if hard_swish:
            y = b.unary(OperationCode.HARD_SWISH, y, shape)
        if squeeze:
            pooled_shape = [1, 1, 1, expansion]
            gate = b.mean_hw(y, shape)
            gate = b.conv(gate, pooled_shape, _divisible(expansion / 4), 1, 1, FuseCode.RELU)
            gate = b.conv(gate, pooled_shape, expansion, 1, 1, FuseCode.NONE)
            gate = b.binary(OperationCode.ADD, gate, three, pooled_shape)
            gate = b.unary(OperationCode.RELU6, gate, pooled_shape)
            gate = b.binary(OperationCode.MUL, gate, sixth, pooled_shape)
            y = b.binary(OperationCode.MUL, y, gate, shape)
        y = b.conv(y, shape, out, 1, 1, FuseCode.NONE)
        if stride == 1 and channels == out:
            y = b.binary(OperationCode.ADD, y, block_input, shape)
        channels = out
    y = b.conv(y, shape, 960, 1, 1, FuseCode.NONE)
    y = b.unary(OperationCode.HARD_SWISH, y, shape)
    y = b.mean_hw(y, shape)
    y = b.reshape(y, [1, 960])
    y = b.fully_connected(y, 1, 960, 1280)
    y = b.unary(OperationCode.HARD_SWISH, y, [1, 1280])
    y = b.fully_connected(y, 1, 1280, 1000)
    return b.finish("mobilenet_v3_large", [x], [y])


def llm_projections(shape: LlmShape, tokens: int, precision: str, name: str) -> Workload:
    """The projections of every decoder layer and the LM head for ``tokens`` new tokens, as
    FULLY_CONNECTED operations (each layer: q, k, v, o, gate, up, down), with the element-wise
    MUL of the gated MLP and the residual ADD. The layers share one set of weight constants
    (their shapes are equal), so the model is one layer's weights in memory while every
    operation reads its weights from memory as a real decoder does. Attention over the KV cache
    is left out (about 1.5% of the bytes at a 256-token context for the 1.7B shape)."""
    b = _Builder(precision)
    h, m = shape.hidden, shape.intermediate
    weights = {
        "q": b.constant([h, h]),
        "k": b.constant([h, h]),
        "v": b.constant([h, h]),
        "o": b.constant([h, h]),
        "gate": b.constant([m, h]),
        "up": b.constant([m, h]),
        "down": b.constant([h, m]),
    }
    head = b.constant([shape.vocab, h])
    b.weight_bytes = float(
        shape.weight_count() * {"float32": 4, "float16": 2, "quant8": 1}[precision]
    )
    biases = {h: b.bias(h), m: b.bias(m), shape.vocab: b.bias(shape.vocab)}

    def project(x: int, weight: str | int, size: int, units: int) -> int:
        y = b.tensor([tokens, units], 1.0)
        w = weights[weight] if isinstance(weight, str) else weight
        inputs = [x, w, biases[units], b.int_scalar(0)]
        b.model.add_operation(OperationCode.FULLY_CONNECTED, inputs, [y])
        return y

    x = b.tensor([tokens, h])
    y = x
    for _ in range(shape.layers):
        q, k, v = (project(y, name_, h, h) for name_ in ("q", "k", "v"))
        mixed = b.binary(
            OperationCode.ADD, b.binary(OperationCode.ADD, q, k, [tokens, h]), v, [tokens, h]
        )
        attended = b.binary(OperationCode.ADD, project(mixed, "o", h, h), y, [tokens, h])
        gated = b.binary(
            OperationCode.MUL,
            project(attended, "gate", h, m),
            project(attended, "up", h, m),
            [tokens, m],
        )
        y = b.binary(OperationCode.ADD, project(gated, "down", m, h), attended, [tokens, h])
    logits = project(y, head, h, shape.vocab)
    return b.finish(name, [x], [logits])


def _llm(phase: str, model: str) -> Callable[[str], Workload]:
    tokens = 1 if phase == "decode" else 256
    return lambda precision: llm_projections(
        LLM_SHAPES[model], tokens, precision, f"{model}-{phase}"
    )


#: Workload name -> builder(precision).
WORKLOADS: dict[str, Callable[[str], Workload]] = {
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_large": mobilenet_v3_large,
    **{f"{m}-{p}": _llm(p, m) for m in LLM_SHAPES for p in ("decode", "prefill256")},
}


def build(name: str, precision: str) -> Workload:
    """The workload ``name`` (a key of :data:`WORKLOADS`) in ``precision``."""
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}")
    return WORKLOADS[name](precision)
