# SPDX-License-Identifier: Apache-2.0
"""max_pool2d, avg_pool2d and adaptive_avg_pool2d to 1x1.

Pooling uses NNAPI's explicit-padding form (11 inputs: input, pad l/r/t/b, stride w/h, filter
w/h, activation, layout flag), with Relax's (h, w) pool sizes and strides put in NNAPI's
(w, h) order. Average pooling in NNAPI divides by the number of in-bounds elements, which is
Relax's count_include_pad=False; the other setting is refused when there is padding. ceil_mode
becomes extra explicit padding at the bottom and right (NNAPI leaves padding out of both the
maximum and the average, as Relax does for the cells past the input), for average pooling only
with count_include_pad=False.
Global average pooling (adaptive to 1x1) becomes MEAN over the spatial axes.
"""

from __future__ import annotations

from tvm import relax
from tvm.relax.transform import PatternCheckContext

from ..converters import FUSED_NONE, ConvertContext, int_tuple
from ..patterns import (
    FEATURE_LEVEL_1,
    FEATURE_LEVEL_2,
    FEATURE_LEVEL_3,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    check_tensors,
    single_op,
    static_dims,
)

_DTYPES = {"float32": FEATURE_LEVEL_1, "float16": FEATURE_LEVEL_3}
_POOLS = {"relax.nn.max_pool2d": "MAX_POOL_2D", "relax.nn.avg_pool2d": "AVERAGE_POOL_2D"}


def _spatial_axes(layout: str) -> tuple[int, int]:
    return layout.index("H"), layout.index("W")


def _check_pool(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    result = check_tensors(call, _DTYPES, options)
    if result is not None:
        return result
    attrs = call.attrs
    layout = str(attrs.layout)
    if layout not in ("NCHW", "NHWC") or str(attrs.out_layout or layout) != layout:
        return RefusalKind.ATTRIBUTE, f"layout {layout} is not NHWC or NCHW"
    if layout == "NCHW" and options.feature_level < FEATURE_LEVEL_3:
        return RefusalKind.FEATURE_LEVEL, "the NCHW layout flag needs FL3"
    if int_tuple(attrs.dilation) != [1, 1]:
        return RefusalKind.ATTRIBUTE, "NNAPI pooling has no dilation"
    # Only the spatial sizes must be static (a symbolic batch is fine).
    axes = _spatial_axes(layout)
    if static_dims(call.args[0], axes) is None or static_dims(call, axes) is None:
        return RefusalKind.DYNAMIC_SHAPE, "pooling needs static spatial sizes"
    if _explicit_padding(call) is None:
        return RefusalKind.ATTRIBUTE, "with ceil_mode a last window holds padding only"
    if (
        str(call.op.name) == "relax.nn.avg_pool2d"
        and bool(attrs.count_include_pad)
        and any(_explicit_padding(call))  # type: ignore[arg-type]
    ):
        return RefusalKind.ATTRIBUTE, "NNAPI averages in-bounds elements only (count_include_pad)"
    return None


def _explicit_padding(call: relax.Call) -> list[int] | None:
    """NNAPI's explicit padding (top, left, bottom, right) giving the call's output size: Relax's
    padding, plus (ceil_mode) the rows and columns the last windows reach past the input at the
    bottom and right, which NNAPI's pooling leaves out like any padding. None when the spatial
    sizes are symbolic, or a last window would hold padding only."""
    attrs = call.attrs
    axes = _spatial_axes(str(attrs.layout))
    data, out = static_dims(call.args[0], axes), static_dims(call, axes)
    if data is None or out is None:
        return None
    top, left, bottom, right = int_tuple(attrs.padding)
    tails = []
    for size, n, k, s, head, tail in zip(
        data,
        out,
        int_tuple(attrs.pool_size),
        int_tuple(attrs.strides),
        (top, left),
        (bottom, right),
        strict=True,
    ):
        reach = (n - 1) * s + k  # the rows the windows cover, padding included
        padded_tail = max(tail, reach - size - head)
        if (n - 1) * s >= size + head or (size + head + padded_tail - k) // s + 1 != n:
            return None
        tails.append(padded_tail)
    return [top, left, tails[0], tails[1]]


def convert_pool(ctx: ConvertContext, call: relax.Call) -> int:
    attrs = call.attrs
    source = str(call.op.name)
    pool_h, pool_w = int_tuple(attrs.pool_size)
    stride_h, stride_w = int_tuple(attrs.strides)
    top, left, bottom, right = _explicit_padding(call)  # type: ignore[misc]
    scalars = [left, right, top, bottom, stride_w, stride_h, pool_w, pool_h, FUSED_NONE]
    inputs = [ctx.operand(call.args[0]), *[ctx.int32(v) for v in scalars]]
    inputs.append(ctx.bool(str(attrs.layout) == "NCHW"))
    out = ctx.output(call)
    ctx.emit(_POOLS[source], inputs, [out], source)
    return out


def _check_adaptive(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    result = check_tensors(call, {"float32": FEATURE_LEVEL_2, "float16": FEATURE_LEVEL_3}, options)
    if result is not None:
        return result
    layout = str(call.attrs.layout)
    if layout not in ("NCHW", "NHWC") or str(call.attrs.out_layout or layout) != layout:
        return RefusalKind.ATTRIBUTE, f"layout {layout} is not NHWC or NCHW"
    size = call.attrs.output_size
    if size is None or int_tuple(size) not in ([1, 1], [1]):
        return RefusalKind.ATTRIBUTE, "only adaptive pooling to 1x1 (global average) is offloaded"
    return None


def convert_adaptive(ctx: ConvertContext, call: relax.Call) -> int:
    axes = list(_spatial_axes(str(call.attrs.layout)))
    out = ctx.output(call)
    inputs = [ctx.operand(call.args[0]), ctx.int_vector(axes), ctx.int32(1)]
    ctx.emit("MEAN", inputs, [out], "relax.nn.adaptive_avg_pool2d")
    return out


LOWERINGS: list[Lowering] = [
    *(single_op(op, 1, _check_pool, convert_pool, (nnapi,)) for op, nnapi in _POOLS.items()),
    single_op(
        "relax.nn.adaptive_avg_pool2d",
        1,
        _check_adaptive,
        convert_adaptive,
        ("MEAN",),
        name="nnapi.adaptive_avg_pool2d",
    ),
]
