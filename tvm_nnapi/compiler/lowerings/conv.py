# SPDX-License-Identifier: Apache-2.0
"""conv2d (+ bias + activation) and conv2d_transpose.

Relax conv2d -> NNAPI, with every attribute explicit (explicit padding form):
  groups == 1                      CONV_2D          filter [O, kH, kW, I]   (13 inputs, dilation)
  groups == C_in (depthwise)       DEPTHWISE_CONV_2D filter [1, kH, kW, O]  (14 inputs, multiplier)
  other groups                     GROUPED_CONV_2D  filter [O, kH, kW, I/g] (12 inputs, no dilation)
Relax's (h, w) strides and dilations become NNAPI's (w, h) operand order and Relax's padding
(top, left, bottom, right) becomes (left, right, top, bottom). NCHW data uses NNAPI's layout
flag (feature level 3), never a silent assumption; the filter is rearranged from the Relax
kernel layout (at compile time for constants, else with TRANSPOSE). A following add of a
per-channel constant bias and relu / clip(0, 6) / clip(-1, 1) are fused into the operation.
:func:`_conv_operations` says which of these operations one conv emits (the device check asks
the target for those only), and the converter takes its case from the same function.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.relax.dpl import is_const, is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import ConvertContext, composite_calls, int_attr, int_tuple
from ..patterns import (
    FEATURE_LEVEL_1,
    FEATURE_LEVEL_3,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    check_tensors,
    static_dim,
    static_shape,
)
from .elementwise import activation_call, activation_code, activation_pattern

_DTYPES = {"float32": FEATURE_LEVEL_1, "float16": FEATURE_LEVEL_3}


def _conv_pattern(op: str, with_bias: bool, with_activation: bool):
    def make():
        data, weight = wildcard(), wildcard()
        conv = is_op(op)(data, weight)
        annotations = {"root": conv, "data": data, "weight": weight}
        out = conv
        if with_bias:
            bias = is_const()
            out = is_op("relax.add")(out, bias)
            annotations["bias"] = bias
        if with_activation:
            out = activation_pattern(out)
            annotations["activation"] = out
        return out, annotations

    return make


def _channel_axis(layout: str) -> int:
    return layout.index("C")


def _check_bias(conv: relax.Call, bias: relax.Expr) -> CheckResult:
    # Only the output channels must be static (a symbolic batch is fine); the bias is a constant.
    axis = _channel_axis(str(conv.attrs.out_layout or conv.attrs.data_layout))
    channels = static_dim(conv, axis)
    shape = static_shape(bias)
    if channels is None or shape is None:
        return RefusalKind.DYNAMIC_SHAPE, "bias fusion needs static output channels"
    rank = conv.ty.ndim
    aligned = [1] * (rank - len(shape)) + list(shape)
    if len(aligned) != rank or any(d != 1 for i, d in enumerate(aligned) if i != axis):
        return RefusalKind.ATTRIBUTE, f"bias of shape {shape} is not per output channel"
    if aligned[axis] != channels:
        return RefusalKind.ATTRIBUTE, "bias length differs from the output channels"
    return None


def _check_padding(call: relax.Call, weight_shape: list[int]) -> CheckResult:
    """CONV_2D, DEPTHWISE_CONV_2D and GROUPED_CONV_2D fail (OP_FAILED, when NNAPI prepares the
    model) unless every padding is smaller than the filter's effective size along its axis."""
    attrs = call.attrs
    kernel_layout = str(attrs.kernel_layout)
    dilation_h, dilation_w = int_tuple(attrs.dilation)
    effective_h = dilation_h * (weight_shape[kernel_layout.index("H")] - 1) + 1
    effective_w = dilation_w * (weight_shape[kernel_layout.index("W")] - 1) + 1
    top, left, bottom, right = int_tuple(attrs.padding)
    if max(top, bottom) >= effective_h or max(left, right) >= effective_w:
        return (
            RefusalKind.ATTRIBUTE,
            f"padding {[top, left, bottom, right]} is not smaller than the effective filter size "
            f"{effective_h}x{effective_w} (NNAPI requires it)",
        )
    return None


def _check_conv(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    attrs = call.attrs
    data_layout = str(attrs.data_layout)
    out_layout = str(attrs.out_layout or data_layout)
    result = check_tensors(call, _DTYPES, options, inputs=list(call.args))
    if result is not None:
        return result
    if data_layout not in ("NCHW", "NHWC") or out_layout != data_layout:
        return RefusalKind.ATTRIBUTE, f"layout {data_layout} -> {out_layout} is not NHWC or NCHW"
    kernel_layout = str(attrs.kernel_layout)
    if sorted(kernel_layout) != sorted("OIHW"):
        return RefusalKind.ATTRIBUTE, f"kernel layout {kernel_layout} is not supported"
    if attrs.out_dtype is not None and str(attrs.out_dtype) not in (
        "",
        "void",
        str(call.ty.dtype),
    ):
        return RefusalKind.DTYPE, f"out_dtype {attrs.out_dtype} differs from the input dtype"
    needs_fl3 = data_layout == "NCHW" or int_tuple(attrs.dilation) != [1, 1]
    groups = int(attrs.groups)
    weight_shape = static_shape(call.args[1])
    if weight_shape is None:
        return RefusalKind.DYNAMIC_SHAPE, "the filter shape must be static"
    # The batch and spatial sizes may be symbolic; the channels pick the NNAPI operation.
    if static_dim(call.args[0], _channel_axis(data_layout)) is None:
        return RefusalKind.DYNAMIC_SHAPE, "the input channels must be static"
    if str(call.op.name) == "relax.nn.conv2d_transpose":
        if groups != 1:
            return RefusalKind.ATTRIBUTE, "grouped conv2d_transpose has no NNAPI operation"
        if int_tuple(attrs.dilation) != [1, 1]:
            return RefusalKind.ATTRIBUTE, "TRANSPOSE_CONV_2D has no dilation"
        pad_bottom, pad_right = int_tuple(attrs.padding)[2:]
        out_h, out_w = int_tuple(attrs.output_padding)
        if out_h > pad_bottom or out_w > pad_right:
            # output_padding keeps rows the bottom/right padding would crop: NNAPI's explicit
            # padding cannot be negative.
            return RefusalKind.ATTRIBUTE, "output_padding exceeds the bottom/right padding"
        needs_fl3 = True
    else:
        result = _check_padding(call, weight_shape)
        if result is not None:
            return result
        if groups != 1:
            depthwise = _conv_case(call)[0] == "DEPTHWISE_CONV_2D"
            needs_fl3 = needs_fl3 or not depthwise
            if not depthwise and int_tuple(attrs.dilation) != [1, 1]:
                return RefusalKind.ATTRIBUTE, "GROUPED_CONV_2D has no dilation"
    if needs_fl3 and options.feature_level < FEATURE_LEVEL_3:
        return RefusalKind.FEATURE_LEVEL, "NCHW, dilation and grouped convolutions need FL3"
    if "bias" in ctx.annotated_expr:
        result = _check_bias(call, ctx.annotated_expr["bias"])
        if result is not None:
            return result
    if "activation" in ctx.annotated_expr:
        activation = ctx.annotated_expr["activation"]
        if activation_code(activation) is None:
            return RefusalKind.ATTRIBUTE, "only relu, relu6 and relu1 can be fused"
    return None


def _conv_case(call: relax.Call) -> tuple[str, str]:
    """The NNAPI operation of an accepted conv2d / conv2d_transpose call, and the filter layout
    it takes."""
    if str(call.op.name) == "relax.nn.conv2d_transpose":
        return "TRANSPOSE_CONV_2D", "OHWI"
    groups = int(call.attrs.groups)
    if groups == 1:
        return "CONV_2D", "OHWI"
    # The check accepts static channels and filter shapes only.
    data_shape = call.args[0].ty.shape.values
    in_channels = int_attr(data_shape[_channel_axis(str(call.attrs.data_layout))])
    weight_shape = int_tuple(call.args[1].ty.shape.values)
    out_channels = weight_shape[str(call.attrs.kernel_layout).index("O")]
    if groups == in_channels and out_channels % groups == 0:
        return "DEPTHWISE_CONV_2D", "IHWO"
    return "GROUPED_CONV_2D", "OHWI"


def _conv_operations(call: relax.Call) -> tuple[str, ...]:
    """What one conv emits: its convolution, and a TRANSPOSE when a filter that is not a
    constant must be rearranged."""
    operation, filter_layout = _conv_case(call)
    kernel_layout = str(call.attrs.kernel_layout)
    if kernel_layout != filter_layout and not isinstance(call.args[1], tvm.ir.Constant):
        return operation, "TRANSPOSE"
    return (operation,)


def _filter(ctx: ConvertContext, expr: relax.Expr, layout: str, target: str, source: str) -> int:
    """The filter operand rearranged from the Relax kernel layout to ``target`` (e.g. OHWI)."""
    operand = ctx.operand(expr)
    perm = [layout.index(axis) for axis in target]
    if perm == list(range(4)):
        return operand
    return ctx.transpose(operand, ctx.dtype(expr), ctx.shape(expr), perm, source)


def _bias_operand(ctx: ConvertContext, add: relax.Call | None, channels: int, dtype: str) -> int:
    if add is None:
        return ctx.constant(np.zeros(channels, dtype=dtype))
    # The add pattern matches commutatively: the bias is its constant operand, either side.
    constant = next(arg for arg in add.args if isinstance(arg, tvm.ir.Constant))
    value = constant.value.numpy().reshape(-1).astype(dtype)
    return ctx.constant(value)


def convert_conv(ctx: ConvertContext, composite: relax.Function) -> int:
    calls = composite_calls(composite)
    transpose = "relax.nn.conv2d_transpose" in calls
    conv = calls["relax.nn.conv2d_transpose" if transpose else "relax.nn.conv2d"]
    add = calls.get("relax.add")
    activation = activation_call(calls)
    result = next(call for call in (activation, add, conv) if call is not None)
    attrs = conv.attrs
    source = str(conv.op.name)
    layout = str(attrs.data_layout)
    kernel_layout = str(attrs.kernel_layout)
    dtype = ctx.dtype(conv)
    stride_h, stride_w = int_tuple(attrs.strides)
    dilation_h, dilation_w = int_tuple(attrs.dilation)
    pad_top, pad_left, pad_bottom, pad_right = int_tuple(attrs.padding)
    if transpose:
        # output_padding: rows and columns the padding would crop, kept at the bottom and right.
        extra_h, extra_w = int_tuple(attrs.output_padding)
        pad_bottom, pad_right = pad_bottom - extra_h, pad_right - extra_w
    groups = int(attrs.groups)
    weight_shape = [int(d) for d in ctx.shape(conv.args[1])]
    out_channels = weight_shape[kernel_layout.index("O")]
    data = ctx.operand(conv.args[0])
    bias = _bias_operand(ctx, add, out_channels, dtype)
    pads = [ctx.int32(v) for v in (pad_left, pad_right, pad_top, pad_bottom)]
    strides = [ctx.int32(stride_w), ctx.int32(stride_h)]
    fuse = ctx.int32(activation_code(activation))
    nchw = ctx.bool(layout == "NCHW")
    out = ctx.output(result)
    operation, filter_layout = _conv_case(conv)
    # Relax's conv2d_transpose kernel is [I, O, kH, kW] in its "IOHW" layout.
    weight = _filter(ctx, conv.args[1], kernel_layout, filter_layout, source)
    if operation == "TRANSPOSE_CONV_2D":
        inputs = [data, weight, bias, *pads, *strides, fuse, nchw]
    elif operation == "CONV_2D":
        dilations = [ctx.int32(dilation_w), ctx.int32(dilation_h)]
        inputs = [data, weight, bias, *pads, *strides, fuse, nchw, *dilations]
    elif operation == "DEPTHWISE_CONV_2D":
        multiplier = ctx.int32(out_channels // groups)
        dilations = [ctx.int32(dilation_w), ctx.int32(dilation_h)]
        inputs = [data, weight, bias, *pads, *strides, multiplier, fuse, nchw, *dilations]
    else:
        inputs = [data, weight, bias, *pads, *strides, ctx.int32(groups), fuse, nchw]
    ctx.emit(operation, inputs, [out], source)
    return out


_EMITS = {
    "relax.nn.conv2d": ("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "TRANSPOSE"),
    "relax.nn.conv2d_transpose": ("TRANSPOSE_CONV_2D", "TRANSPOSE"),
}


def _lowering(op: str, with_bias: bool, with_activation: bool) -> Lowering:
    suffix = ("_bias" if with_bias else "") + ("_act" if with_activation else "")
    return Lowering(
        name=f"nnapi.{op.rsplit('.', 1)[1]}{suffix}",
        relax_op=op,
        pattern=_conv_pattern(op, with_bias, with_activation),
        check=_check_conv,
        convert=convert_conv,
        emits=_EMITS[op],
        requires=_conv_operations,
    )


# With a bias and an activation, then with one of them: each is tried before the smaller forms
# it contains (see the order in lowerings/__init__.py).
FUSED: list[Lowering] = [
    _lowering(op, with_bias, with_activation)
    for op in _EMITS
    for with_bias, with_activation in [(True, True), (True, False), (False, True)]
]
SINGLE: list[Lowering] = [_lowering(op, False, False) for op in _EMITS]
