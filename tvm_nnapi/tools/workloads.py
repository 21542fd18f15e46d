# SPDX-License-Identifier: Apache-2.0
"""The calibration workloads as NNAPI models: MobileNetV2, MobileNetV3-Large, ResNet-18/50/101,
Wide ResNet-50-2, EfficientNet-B0, ViT-B/16 and the weight streaming of LLM decode and prefill
(docs/cost-model.md, "Calibration").

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
import re
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
    """The projection shapes of a Llama-style decoder. ``kv_hidden`` is the width of the k and v
    projections (key-value heads x head size; ``hidden`` without grouped-query attention)."""

    hidden: int
    intermediate: int
    layers: int
    vocab: int
    kv_hidden: int = 0
    head_dim: int = 128

    @property
    def kv(self) -> int:
        return self.kv_hidden or self.hidden

    def weight_count(self) -> int:
        """Weights one token streams: every layer's projections and the LM head (the embedding
        table is looked up, not streamed)."""
        per_layer = 2 * self.hidden**2 + 2 * self.hidden * self.kv
        per_layer += 3 * self.hidden * self.intermediate
        return self.layers * per_layer + self.vocab * self.hidden


#: LLM shapes of the published rows (Hugging Face configs).
LLM_SHAPES = {
    "smollm2-1.7b": LlmShape(hidden=2048, intermediate=8192, layers=24, vocab=49152, head_dim=64),
    "llama-2-7b": LlmShape(hidden=4096, intermediate=11008, layers=32, vocab=32000),
    "llama-3.2-3b": LlmShape(
        hidden=3072, intermediate=8192, layers=28, vocab=128256, kv_hidden=1024
    ),
    "llama-3-8b": LlmShape(
        hidden=4096, intermediate=14336, layers=32, vocab=128256, kv_hidden=1024
    ),
    "llama-3.2-1b": LlmShape(
        hidden=2048, intermediate=8192, layers=16, vocab=128256, kv_hidden=512, head_dim=64
    ),
    "qwen2.5-7b": LlmShape(hidden=3584, intermediate=18944, layers=28, vocab=152064, kv_hidden=512),
    "mistral-7b": LlmShape(hidden=4096, intermediate=14336, layers=32, vocab=32768, kv_hidden=1024),
    "qwen2.5-1.5b": LlmShape(
        hidden=1536, intermediate=8960, layers=28, vocab=151936, kv_hidden=256
    ),
    "qwen3-1.7b": LlmShape(hidden=2048, intermediate=6144, layers=28, vocab=151936, kv_hidden=1024),
    "phi-3.5-mini": LlmShape(hidden=3072, intermediate=8192, layers=32, vocab=32064, head_dim=96),
    "phi-4-mini": LlmShape(hidden=3072, intermediate=8192, layers=32, vocab=200064, kv_hidden=1024),
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

    def tensor(self, shape: list[int], scale: float = 0.5, code: int | None = None) -> int:
        """A tensor of the workload's type, or of ``code`` (a float type inside a quant8
        workload)."""
        del scale  # one scale for every quantized tensor keeps the bias scale valid
        code = self.code if code is None else code
        return self.model.add_tensor(code, shape, 0.5 if code == PRECISIONS["quant8"] else 0.0)

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

    def unary(self, operation: int, x: int, shape: list[int], code: int | None = None) -> int:
        if operation == OperationCode.LOGISTIC and self._quant:
            # NNAPI fixes a quantized LOGISTIC's output at scale 1/256, zero point 0.
            y = self.model.add_tensor(self.code, list(shape), 1 / 256)
        else:
            y = self.tensor(list(shape), 1.0, code)
        self.model.add_operation(operation, [x], [y])
        return y

    def binary(
        self, operation: int, a: int, b: int, shape: list[int], fuse: int = FuseCode.NONE
    ) -> int:
        y = self.tensor(list(shape), 1.0)
        self.model.add_operation(operation, [a, b, self.int_scalar(fuse)], [y])
        return y

    def max_pool(self, x: int, shape: list[int], k: int, stride: int) -> int:
        n, h, w, c = shape
        shape[:] = [n, -(-h // stride), -(-w // stride), c]
        y = self.tensor(list(shape), 1.0)
        inputs = [x, self.int_scalar(PaddingCode.SAME), self.int_scalar(stride)]
        inputs += [self.int_scalar(stride), self.int_scalar(k), self.int_scalar(k)]
        inputs.append(self.int_scalar(FuseCode.NONE))
        self.model.add_operation(OperationCode.MAX_POOL_2D, inputs, [y])
        return y

    def float_scalar(self, value: float, code: int | None = None) -> int:
        """A scalar for an operation on tensors of the workload's type, or of ``code``."""
        half = (self.code if code is None else code) == OperandCode.TENSOR_FLOAT16
        return self.model.add_scalar(OperandCode.FLOAT16 if half else OperandCode.FLOAT32, value)

    def int_vector(self, values: list[int]) -> int:
        index = self.model.add_tensor(OperandCode.TENSOR_INT32, [len(values)])
        self.model.set_value(index, np.array(values, np.int32))
        return index

    def transpose(self, x: int, shape: list[int], permutation: list[int]) -> int:
        y = self.tensor([shape[i] for i in permutation], 1.0)
        self.model.add_operation(OperationCode.TRANSPOSE, [x, self.int_vector(permutation)], [y])
        return y

    def batch_matmul(
        self, a: int, b: int, shape: list[int], adj_y: bool, code: int | None = None
    ) -> int:
        y = self.tensor(shape, 1.0, code)
        flags = [self.model.add_scalar(OperandCode.BOOL, flag) for flag in (False, adj_y)]
        self.model.add_operation(OperationCode.BATCH_MATMUL, [a, b, *flags], [y])
        return y

    def softmax(self, x: int, shape: list[int], code: int | None = None) -> int:
        y = self.tensor(list(shape), 1.0, code)
        self.model.add_operation(OperationCode.SOFTMAX, [x, self.float_scalar(1.0, code)], [y])
        return y

    def mean(self, x: int, shape: list[int], axes: list[int]) -> int:
        out = [1 if i in axes else d for i, d in enumerate(shape)]
        y = self.tensor(out, 1.0)
        inputs = [x, self.int_vector(axes), self.int_scalar(1)]
        self.model.add_operation(OperationCode.MEAN, inputs, [y])
        return y

    def mean_hw(self, x: int, shape: list[int]) -> int:
        axes = self.model.add_tensor(OperandCode.TENSOR_INT32, [2])
        self.model.set_value(axes, np.array([1, 2], np.int32))
        y = self.tensor([shape[0], 1, 1, shape[3]], 1.0)
        self.model.add_operation(OperationCode.MEAN, [x, axes, self.int_scalar(1)], [y])
        return y

    def reshape(self, x: int, shape: list[int], code: int | None = None) -> int:
        target = self.int_vector(shape)
        y = self.tensor(shape, 1.0, code)
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


def _resnet(
    name: str, blocks: list[int], bottleneck: bool, precision: str, size: int, widen: int = 1
) -> Workload:
    """A torchvision ResNet (v1.5: stride on the 3x3 convolution), batch 1: the 7x7 stem and
    3x3 max pool, basic (two 3x3) or bottleneck (1x1, 3x3, 1x1 with 4x expansion; the inner
    width times ``widen``) blocks with a 1x1 projection where the shape changes, ReLU fused into
    the convolutions and into the residual ADD, global MEAN and the classifier (batch norm folded
    into the convolutions, as TFLite converts it)."""
    b = _Builder(precision)
    shape = [1, size, size, 3]
    x = b.tensor(list(shape))
    y = b.conv(x, shape, 64, 7, 2, FuseCode.RELU)
    y = b.max_pool(y, shape, 3, 2)
    channels = 64
    for stage, count in enumerate(blocks):
        width = 64 * 2**stage
        out = width * 4 if bottleneck else width
        width *= widen
        for i in range(count):
            stride = 2 if stage > 0 and i == 0 else 1
            skip, skip_shape = y, list(shape)
            if stride != 1 or channels != out:
                skip = b.conv(y, skip_shape, out, 1, stride, FuseCode.NONE)
            if bottleneck:
                y = b.conv(y, shape, width, 1, 1, FuseCode.RELU)
                y = b.conv(y, shape, width, 3, stride, FuseCode.RELU)
                y = b.conv(y, shape, out, 1, 1, FuseCode.NONE)
            else:
                y = b.conv(y, shape, width, 3, stride, FuseCode.RELU)
                y = b.conv(y, shape, out, 3, 1, FuseCode.NONE)
            y = b.binary(OperationCode.ADD, y, skip, shape, FuseCode.RELU)
            channels = out
    y = b.mean_hw(y, shape)
    y = b.reshape(y, [1, channels])
    y = b.fully_connected(y, 1, channels, 1000)
    return b.finish(name, [x], [y])


def resnet18(precision: str = "float16", size: int = 224) -> Workload:
    """ResNet-18 (:func:`_resnet`: basic blocks 2, 2, 2, 2)."""
    return _resnet("resnet18", [2, 2, 2, 2], False, precision, size)


def resnet50(precision: str = "float16", size: int = 224) -> Workload:
    """ResNet-50 (:func:`_resnet`: bottleneck blocks 3, 4, 6, 3)."""
    return _resnet("resnet50", [3, 4, 6, 3], True, precision, size)


def resnet101(precision: str = "float16", size: int = 224) -> Workload:
    """ResNet-101 (:func:`_resnet`: bottleneck blocks 3, 4, 23, 3)."""
    return _resnet("resnet101", [3, 4, 23, 3], True, precision, size)


def wide_resnet50_2(precision: str = "float16", size: int = 224) -> Workload:
    """Wide ResNet-50-2 (:func:`_resnet`: bottleneck blocks 3, 4, 6, 3 of twice the width)."""
    return _resnet("wide_resnet50_2", [3, 4, 6, 3], True, precision, size, widen=2)


#: EfficientNet-B0 stages: expansion, kernel, stride, output channels, repeats.
_B0 = [
    (1, 3, 1, 16, 1),
    (6, 3, 2, 24, 2),
    (6, 5, 2, 40, 2),
    (6, 3, 2, 80, 3),
    (6, 5, 1, 112, 3),
    (6, 5, 2, 192, 4),
    (6, 3, 1, 320, 1),
]


def efficientnet_b0(precision: str = "float16", size: int = 224) -> Workload:
    """EfficientNet-B0, batch 1: MBConv blocks with swish (LOGISTIC and MUL) and the
    squeeze-excite gate (MEAN, two 1x1 convolutions, LOGISTIC, MUL by the gate) as operations,
    residual ADDs, the 1x1 head to 1280 channels, MEAN and the classifier."""
    b = _Builder(precision)

    def swish(y: int, shape: list[int]) -> int:
        return b.binary(OperationCode.MUL, y, b.unary(OperationCode.LOGISTIC, y, shape), shape)

    shape = [1, size, size, 3]
    x = b.tensor(list(shape))
    y = swish(b.conv(x, shape, 32, 3, 2, FuseCode.NONE), shape)
    channels = 32
    for expansion, k, stride, out, repeats in _B0:
        for i in range(repeats):
            s = stride if i == 0 else 1
            block_input, hidden = y, channels * expansion
            if expansion != 1:
                y = swish(b.conv(y, shape, hidden, 1, 1, FuseCode.NONE), shape)
            y = swish(b.depthwise(y, shape, k, s, FuseCode.NONE), shape)
            pooled = [1, 1, 1, hidden]
            gate = b.mean_hw(y, shape)
            gate = swish(b.conv(gate, pooled, max(1, channels // 4), 1, 1, FuseCode.NONE), pooled)
            gate = b.unary(OperationCode.LOGISTIC, b.conv(gate, pooled, hidden, 1, 1, 0), pooled)
            y = b.binary(OperationCode.MUL, y, gate, shape)
            y = b.conv(y, shape, out, 1, 1, FuseCode.NONE)
            if s == 1 and channels == out:
                y = b.binary(OperationCode.ADD, y, block_input, shape)
            channels = out
    y = swish(b.conv(y, shape, 1280, 1, 1, FuseCode.NONE), shape)
    y = b.mean_hw(y, shape)
    y = b.reshape(y, [1, 1280])
    y = b.fully_connected(y, 1, 1280, 1000)
    return b.finish("efficientnet_b0", [x], [y])


def vit_b_16(precision: str = "float16", size: int = 224) -> Workload:
    """ViT-B/16, batch 1: the 16x16 patch embedding (a strided convolution) and 196 tokens
    (the class token left out, 0.5% of the work), 12 encoder layers of width 768 with 12 heads:
    layer norm as operations (MEAN, SUB, MUL, MEAN, ADD, RSQRT, MUL, MUL, ADD), q, k, v and
    output projections (FULLY_CONNECTED), attention as TRANSPOSE, BATCH_MATMUL, SOFTMAX,
    BATCH_MATMUL, an MLP of 3072 with GELU as x * LOGISTIC(1.702 x), residual ADDs; the final
    layer norm, the tokens' MEAN and the classifier. Float precisions only (NNAPI's
    BATCH_MATMUL takes no TENSOR_QUANT8_ASYMM)."""
    if precision == "quant8":
        raise ValueError("vit_b_16 is built in float16 or float32 only")
    b = _Builder(precision)
    hidden, heads, layers, mlp = 768, 12, 12, 3072
    tokens = (size // 16) ** 2
    head = hidden // heads
    shape = [1, size, size, 3]
    x = b.tensor(list(shape))
    y = b.conv(x, shape, hidden, 16, 16, FuseCode.NONE)
    y = b.reshape(y, [tokens, hidden])
    rows = [tokens, hidden]

    def norm(y: int) -> int:
        mean = b.mean(y, rows, [1])
        centred = b.binary(OperationCode.SUB, y, mean, rows)
        variance = b.mean(b.binary(OperationCode.MUL, centred, centred, rows), rows, [1])
        epsilon = b.constant([1], weights=False)
        scale = b.unary(
            OperationCode.RSQRT,
            b.binary(OperationCode.ADD, variance, epsilon, [tokens, 1]),
            [tokens, 1],
        )
        y = b.binary(OperationCode.MUL, centred, scale, rows)
        y = b.binary(OperationCode.MUL, y, b.constant([hidden]), rows)
        return b.binary(OperationCode.ADD, y, b.constant([hidden]), rows)

    def split_heads(y: int) -> int:
        y = b.reshape(y, [1, tokens, heads, head])
        return b.transpose(y, [1, tokens, heads, head], [0, 2, 1, 3])

    for _ in range(layers):
        z = norm(y)
        q, k, v = (split_heads(b.fully_connected(z, tokens, hidden, hidden)) for _ in range(3))
        scores = b.batch_matmul(q, k, [1, heads, tokens, tokens], adj_y=True)
        weights = b.softmax(scores, [1, heads, tokens, tokens])
        attended = b.batch_matmul(weights, v, [1, heads, tokens, head], adj_y=False)
        attended = b.transpose(attended, [1, heads, tokens, head], [0, 2, 1, 3])
        attended = b.reshape(attended, rows)
        y = b.binary(
            OperationCode.ADD, b.fully_connected(attended, tokens, hidden, hidden), y, rows
        )
        z = b.fully_connected(norm(y), tokens, hidden, mlp)
        wide = [tokens, mlp]
        gate = b.binary(OperationCode.MUL, z, b.constant([1], weights=False), wide)
        z = b.binary(OperationCode.MUL, z, b.unary(OperationCode.LOGISTIC, gate, wide), wide)
        y = b.binary(OperationCode.ADD, b.fully_connected(z, tokens, mlp, hidden), y, rows)
    y = b.mean(norm(y), rows, [0])
    y = b.fully_connected(y, 1, hidden, 1000)
    return b.finish("vit_b_16", [x], [y])


def llm_projections(
    shape: LlmShape,
    tokens: int,
    precision: str,
    name: str,
    context: int = 0,
    weight_bits: int = 0,
) -> Workload:
    """The projections of every decoder layer and the LM head for ``tokens`` new tokens, as
    FULLY_CONNECTED operations (each layer: q, k, v, o, gate, up, down), with the element-wise
    MUL of the gated MLP and the residual ADD. The layers share one set of weight constants
    (their shapes are equal), so the model is one layer's weights in memory while every
    operation reads its weights from memory as a real decoder does.

    With ``context`` = 0, attention is left out (about 1.5% of the bytes at a 256-token context
    for the 1.7B shape): with grouped-query attention the narrower k and v are model outputs, as
    a decoder writes them to its KV cache, and the o projection reads q. With ``context`` = C
    (one token only), each layer attends over a KV cache of C positions as a decoder with a
    fixed-size cache does: q as [kv heads, group, head size] times the cached keys
    [kv heads, C, head size] (BATCH_MATMUL), SOFTMAX over the C positions, times the cached
    values, into the o projection; k and v are outputs. The cache is 16-bit (32-bit in a float32
    workload), as llama.cpp's and Qualcomm's decoders keep it, so a quant8 decoder dequantizes
    q and quantizes the attention's output (two small operations per layer). The layers read
    one pair of cache inputs (the bytes every layer reads are counted per operation).

    ``weight_bits``: the width of the weights of the decoder being modelled, when it differs
    from the workload's (a phone's 4-bit weights modelled by a float16 workload, whose rate row
    is weights streamed per second whatever their width). The cache then holds ``context`` x
    (workload width / ``weight_bits``) positions, so that it is as large against the
    workload's weights as the phone's cache is against the phone's weights."""
    if context and tokens != 1:
        raise ValueError(f"a KV cache context is modelled for decode (1 token), not {tokens}")
    width = {"float32": 32, "float16": 16, "quant8": 8}[precision]
    if weight_bits:
        if weight_bits not in (4, 8, 16, 32) or not context:
            raise ValueError(
                f"weight_bits {weight_bits} needs a context and is one of 4, 8, 16, 32"
            )
        context = max(1, round(context * width / weight_bits))
    b = _Builder(precision)
    h, m = shape.hidden, shape.intermediate
    kv = shape.kv
    weights = {
        "q": b.constant([h, h]),
        "k": b.constant([kv, h]),
        "v": b.constant([kv, h]),
        "o": b.constant([h, h]),
        "gate": b.constant([m, h]),
        "up": b.constant([m, h]),
        "down": b.constant([h, m]),
    }
    head = b.constant([shape.vocab, h])
    b.weight_bytes = float(
        shape.weight_count() * {"float32": 4, "float16": 2, "quant8": 1}[precision]
    )
    biases = {n: b.bias(n) for n in {h, kv, m, shape.vocab}}

    def project(x: int, weight: str | int, size: int, units: int) -> int:
        y = b.tensor([tokens, units], 1.0)
        w = weights[weight] if isinstance(weight, str) else weight
        inputs = [x, w, biases[units], b.int_scalar(0)]
        b.model.add_operation(OperationCode.FULLY_CONNECTED, inputs, [y])
        return y

    x = b.tensor([tokens, h])
    inputs = [x]
    attend: Callable[[int], int] | None = None
    if context:
        attend, caches = _kv_attention(b, shape, context)
        inputs += caches
    y = x
    cache: list[int] = []
    for _ in range(shape.layers):
        q = project(y, "q", h, h)
        k, v = (project(y, name_, h, kv) for name_ in ("k", "v"))
        mixed = q
        if attend is not None:
            cache += [k, v]
            mixed = attend(q)
        elif kv != h:
            cache += [k, v]
        else:
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
    return b.finish(name, inputs, [logits, *cache])


def _kv_attention(
    b: _Builder, shape: LlmShape, context: int
) -> tuple[Callable[[int], int], list[int]]:
    """One token's attention over a KV cache of ``context`` positions (llm_projections): the
    function from a layer's q [1, hidden] (the workload's precision) to the attention's output
    (the same), and the two cache inputs it reads."""
    h, d = shape.hidden, shape.head_dim
    heads = shape.kv // d
    group = h // shape.kv
    f = PRECISIONS["float32" if b.precision == "float32" else "float16"]
    keys = b.tensor([heads, context, d], code=f)
    values = b.tensor([heads, context, d], code=f)

    def attend(q: int) -> int:
        if b.precision == "quant8":
            q = b.unary(OperationCode.DEQUANTIZE, q, [1, h], code=f)
        q3 = b.reshape(q, [heads, group, d], code=f)
        scores = b.batch_matmul(q3, keys, [heads, group, context], adj_y=True, code=f)
        p = b.softmax(scores, [heads, group, context], code=f)
        out = b.batch_matmul(p, values, [heads, group, d], adj_y=False, code=f)
        y = b.reshape(out, [1, h], code=f)
        if b.precision == "quant8":
            y = b.unary(OperationCode.QUANTIZE, y, [1, h])
        return y

    return attend, [keys, values]


def _llm(phase: str, model: str, context: int = 0, bits: int = 0) -> Callable[[str], Workload]:
    tokens = 1 if phase == "decode" else int(phase[len("prefill") :])
    name = (
        f"{model}-{phase}" + (f"-ctx{context}" if context else "") + (f"-w{bits}" if bits else "")
    )
    return lambda precision: llm_projections(
        LLM_SHAPES[model], tokens, precision, name, context=context, weight_bits=bits
    )


#: Workload name -> builder(precision). An LLM's decode may also name the KV cache it attends
#: over, ``MODEL-decode-ctxC`` (C positions), and the width of the modelled decoder's weights,
#: ``MODEL-decode-ctxC-wB`` (B bits; :func:`llm_projections`): :func:`known`.
WORKLOADS: dict[str, Callable[[str], Workload]] = {
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_large": mobilenet_v3_large,
    "resnet18": resnet18,
    "resnet50": resnet50,
    "resnet101": resnet101,
    "wide_resnet50_2": wide_resnet50_2,
    "efficientnet_b0": efficientnet_b0,
    "vit_b_16": vit_b_16,
    **{f"{m}-{p}": _llm(p, m) for m in LLM_SHAPES for p in ("decode", "prefill256", "prefill1024")},
}

_CONTEXT = re.compile(r"^(?P<model>.+)-decode-ctx(?P<context>[1-9][0-9]*)(-w(?P<bits>4|8|16|32))?$")


def _builder(name: str) -> Callable[[str], Workload] | None:
    if name in WORKLOADS:
        return WORKLOADS[name]
    match = _CONTEXT.match(name)
    if match and match["model"] in LLM_SHAPES:
        return _llm("decode", match["model"], int(match["context"]), int(match["bits"] or 0))
    return None


def known(name: str) -> bool:
    """Whether ``name`` is a workload: a key of :data:`WORKLOADS` or an LLM's
    ``MODEL-decode-ctxC[-wB]``."""
    return _builder(name) is not None


def names() -> str:
    """The workload names for an error message."""
    return ", ".join([*sorted(WORKLOADS), "MODEL-decode-ctxC[-wB] (an LLM above)"])


def build(name: str, precision: str) -> Workload:
    """The workload ``name`` (:func:`known`) in ``precision``."""
    builder = _builder(name)
    if builder is None:
        raise ValueError(f"unknown workload {name!r}; known: {names()}")
    return builder(precision)
