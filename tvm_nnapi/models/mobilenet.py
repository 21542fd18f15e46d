# SPDX-License-Identifier: Apache-2.0
"""A MobileNetV2-style network built directly in Relax (random weights, nothing downloaded).

Same block structure as MobileNetV2 (Sandler et al., 2018): a strided 3x3 stem, inverted
residual blocks (1x1 expansion, 3x3 depthwise, 1x1 linear projection, residual add when the
shape allows), a 1x1 head convolution, global average pooling and a linear classifier, with
batch normalisation and ReLU6. ``width`` scales the channels and ``resolution`` the input, so
tests can use a small instance; ``width=1.0, resolution=224`` is the standard network.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax

# (expansion t, output channels c, repeats n, first stride s), the MobileNetV2 table.
INVERTED_RESIDUAL_SETTING = [
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
]


def _make_divisible(value: float, divisor: int = 8) -> int:
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


class _Builder:
    def __init__(self, bb: relax.BlockBuilder, rng: np.random.Generator, dtype: str, layout: str):
        self.bb, self.rng, self.dtype, self.layout = bb, rng, dtype, layout

    def const(self, array: np.ndarray) -> relax.Expr:
        return relax.const(array.astype(self.dtype))

    def conv_bn(
        self,
        x: relax.Expr,
        c_in: int,
        c_out: int,
        kernel: int,
        stride: int,
        groups: int = 1,
        relu6: bool = True,
    ) -> relax.Expr:
        fan_in = c_in // groups * kernel * kernel
        weight = self.rng.standard_normal((c_out, c_in // groups, kernel, kernel))
        weight *= np.sqrt(2.0 / fan_in)
        kernel_layout = "OIHW"
        if self.layout == "NHWC":
            weight = weight.transpose(2, 3, 1, 0)  # HWIO
            kernel_layout = "HWIO"
        pad = kernel // 2
        y = self.bb.emit(
            relax.op.nn.conv2d(
                x,
                self.const(weight),
                strides=stride,
                padding=pad,
                groups=groups,
                data_layout=self.layout,
                kernel_layout=kernel_layout,
            )
        )
        gamma = self.rng.uniform(0.5, 1.5, c_out)
        beta = self.rng.uniform(-0.1, 0.1, c_out)
        mean = self.rng.uniform(-0.1, 0.1, c_out)
        var = self.rng.uniform(0.5, 1.5, c_out)
        axis = self.layout.index("C")
        bn = self.bb.emit(
            relax.op.nn.batch_norm(
                y,
                self.const(gamma),
                self.const(beta),
                self.const(mean),
                self.const(var),
                axis=axis,
                training=False,
            )
        )
        y = self.bb.emit(relax.TupleGetItem(bn, 0))
        if relu6:
            y = self.bb.emit(relax.op.clip(y, 0, 6))
        return y


def mobilenet_v2(
    width: float = 1.0,
    resolution: int = 224,
    num_classes: int = 1000,
    batch: int = 1,
    layout: str = "NCHW",
    dtype: str = "float32",
    seed: int = 0,
) -> tuple[tvm.IRModule, dict[str, object]]:
    """Returns ``(module, info)``; the entry function is ``main(image)``."""
    rng = np.random.default_rng(seed)
    bb = relax.BlockBuilder()
    shape = (
        [batch, 3, resolution, resolution]
        if layout == "NCHW"
        else [batch, resolution, resolution, 3]
    )
    image = relax.Var("image", relax.TensorType(shape, dtype))
    builder = _Builder(bb, rng, dtype, layout)
    with bb.function("main", [image]):
        with bb.dataflow():
            channels = _make_divisible(32 * width)
            x = builder.conv_bn(image, 3, channels, 3, 2)
            for t, c, n, s in INVERTED_RESIDUAL_SETTING:
                out_channels = _make_divisible(c * width)
                for i in range(n):
                    stride = s if i == 0 else 1
                    hidden = channels * t
                    y = x
                    if t != 1:
                        y = builder.conv_bn(y, channels, hidden, 1, 1)
                    y = builder.conv_bn(y, hidden, hidden, 3, stride, groups=hidden)
                    y = builder.conv_bn(y, hidden, out_channels, 1, 1, relu6=False)
                    if stride == 1 and channels == out_channels:
                        y = bb.emit(relax.op.add(x, y))
                    x, channels = y, out_channels
            head = _make_divisible(1280 * max(1.0, width))
            x = builder.conv_bn(x, channels, head, 1, 1)
            x = bb.emit(relax.op.nn.adaptive_avg_pool2d(x, (1, 1), layout=layout))
            x = bb.emit(relax.op.reshape(x, (batch, head)))
            weight = rng.standard_normal((num_classes, head)) * np.sqrt(1.0 / head)
            logits = bb.emit(relax.op.matmul(x, relax.op.permute_dims(builder.const(weight))))
            logits = bb.emit_output(
                relax.op.add(logits, builder.const(rng.uniform(-0.1, 0.1, num_classes)))
            )
        bb.emit_func_output(logits)
    info: dict[str, object] = {"entry": "main", "input_shape": tuple(shape), "dtype": dtype}
    return bb.get(), info
