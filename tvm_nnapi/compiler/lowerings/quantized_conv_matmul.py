# SPDX-License-Identifier: Apache-2.0
"""Quantized convolutions and matmuls, lowered by their own converters.

* :data:`CONV`: ``dequantize -> conv2d [+ bias] [-> relu / relu6 / relu1] -> quantize`` with a
  constant quantized weight: CONV_2D, DEPTHWISE_CONV_2D or GROUPED_CONV_2D on quant8 operands;
* :data:`MATMUL`: the same for a matmul (its weight possibly under a ``permute_dims``):
  FULLY_CONNECTED, or a 1x1 CONV_2D for per-channel weights (FULLY_CONNECTED has none);
* :data:`ACTIVATION_MATMUL`: a matmul of two quantized activations (attention's q @ k^T,
  scores @ v) as BATCH_MATMUL (feature level 6), int8 activations only.

Weights are per-tensor quant8 of the input's type or TENSOR_QUANT8_SYMM_PER_CHANNEL along the
output channels; the bias is TENSOR_INT32 (:mod:`.qdq`). Each list holds every form, the ones
with a bias and an activation before the smaller ones they contain.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.relax.dpl import DFPattern, is_const, is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import ConvertContext, int_tuple, operator_calls
from ..patterns import (
    DECLINED,
    FEATURE_LEVEL_1,
    FEATURE_LEVEL_3,
    FEATURE_LEVEL_6,
    Check,
    CheckResult,
    Conclusive,
    Lowering,
    PartitionOptions,
    RefusalKind,
    check_tensors,
    static_dim,
    static_shape,
    tensor_info,
)
from .conv import _check_conv, _conv_case
from .elementwise import activation_code
from .qdq import (
    DEQUANTIZE,
    QUANTIZE,
    QuantParams,
    Weights,
    _bias_operand,
    _bias_real,
    _check_group_qdq,
    _check_weights,
    _dq_pattern,
    _output_quantize,
    _qdq_dtype,
    _used_once,
    _weight_operand,
    _weights,
    activation_params,
    is_weight_dequantize,
    quant_input,
    requantize,
)

# ---- convolution and matmul groups ---------------------------------------------------------------


def _weight_dq_pattern() -> DFPattern:
    return is_op(DEQUANTIZE)(is_const(), is_const(), is_const())


def _bias_pattern() -> tuple[DFPattern, DFPattern]:
    """The bias of a conv / matmul (a dequantized or float constant, possibly reshaped) and the
    part that holds its values."""
    values = _weight_dq_pattern() | is_const()
    reshaped = is_op("relax.reshape")(values, wildcard()) | is_op("relax.expand_dims")(values)
    return reshaped | values, values


def _activation_pattern(inner: DFPattern) -> DFPattern:
    return is_op("relax.nn.relu")(inner) | is_op("relax.clip")(inner, wildcard(), wildcard())


def _fused_pattern(op: str, with_bias: bool, with_activation: bool, transposed: bool = False):
    def make() -> tuple[DFPattern, dict[str, DFPattern]]:
        x = _dq_pattern()
        if op == "relax.matmul":
            # A matmul's weight may be given at run time, and held as CONV_2D's [N, 1, 1, K]
            # filter under a reshape to [N, K] (its check says when).
            weight = is_op(DEQUANTIZE)(wildcard(), is_const(), is_const())
            reshape = is_op("relax.reshape")(weight, wildcard())
            rhs = is_op("relax.permute_dims")(weight | reshape) if transposed else weight
        else:
            weight = _weight_dq_pattern()
            rhs = is_op("relax.permute_dims")(weight) if transposed else weight
        root = is_op(op)(x, rhs)
        annotations: dict[str, DFPattern] = {"root": root, "dequantize0": x, "weight": weight}
        if transposed:
            annotations["permute"] = rhs
        if transposed and op == "relax.matmul":
            annotations["reshape"] = reshape
        out = root
        if with_bias:
            bias, values = _bias_pattern()
            out = is_op("relax.add")(out, bias)
            annotations.update(bias=bias, bias_values=values, add=out)
        if with_activation:
            out = _activation_pattern(out)
            annotations["activation"] = out
        quantize = is_op(QUANTIZE)(out, is_const(), is_const())
        annotations["quantize"] = quantize
        return quantize, annotations

    return make


def _check_multiplier(
    context: PatternCheckContext, weights: Weights, options: PartitionOptions
) -> CheckResult:
    """FL1/FL2 convolutions and FULLY_CONNECTED need output scale > input x weight scale."""
    if options.feature_level >= FEATURE_LEVEL_3:
        return None
    out = activation_params(context.annotated_expr["quantize"])
    data = activation_params(context.annotated_expr["dequantize0"])
    if out.scale <= data.scale * float(weights.scales.max()):
        return RefusalKind.FEATURE_LEVEL, (
            "output scale <= input scale x weight scale (a multiplier >= 1) needs feature level 3"
        )
    return None


def _check_fused_common(
    call: relax.Call,
    context: PatternCheckContext,
    options: PartitionOptions,
    channel_axis: int,
    runtime_weights: bool = False,
) -> CheckResult:
    annotated = context.annotated_expr
    result = _check_group_qdq(context, options, ["quantize", "dequantize0"])
    if result is not None:
        return result
    inner = [call, annotated["dequantize0"]]
    inner += [annotated[name] for name in ("add", "activation") if name in annotated]
    result = _used_once(context, inner)
    if result is not None:
        return result
    result = _check_weights(annotated["weight"], channel_axis, options, runtime_weights)
    if result is not None:
        return result
    if "activation" in annotated and activation_code(annotated["activation"]) is None:
        return RefusalKind.ATTRIBUTE, "only relu, relu6 and relu1 can be fused"
    return _check_multiplier(context, _weights(annotated["weight"]), options)


def _check_quantized_conv(
    call: relax.Call, options: PartitionOptions, context: PatternCheckContext
) -> CheckResult:
    result = _check_conv(call, options, _FloatView(context))
    if result is not None:
        return result
    kernel_layout = str(call.attrs.kernel_layout)
    return _check_fused_common(call, context, options, kernel_layout.index("O"))


class _FloatView:
    """The annotations the float conv check reads (bias and activation), for its checks."""

    def __init__(self, context: PatternCheckContext) -> None:
        annotated = dict(context.annotated_expr)
        if "bias" in annotated:
            annotated["bias"] = _bias_value(annotated["bias"], annotated["bias_values"])
        self.annotated_expr = annotated


def _bias_value(bias: relax.Expr, values: relax.Expr) -> relax.Expr:
    """A float constant shaped like the bias, standing for it in shape checks."""
    return relax.const(_bias_real(values).astype(np.float32).reshape(static_shape(bias)))


def _group_parts(composite: relax.Function) -> dict[str, relax.Call]:
    parts: dict[str, relax.Call] = {}
    for call in operator_calls(composite):
        name = str(call.op.name)
        if name == DEQUANTIZE and is_weight_dequantize(call):
            key = "weight_dq" if "root" not in parts else "bias_dq"
            parts.setdefault(key, call)
        elif name == DEQUANTIZE:
            parts["input_dq"] = call
        elif name in ("relax.nn.conv2d", "relax.matmul"):
            parts["root"] = call
        elif name == "relax.add" and "root" in parts:
            parts["add"] = call
        elif name in ("relax.nn.relu", "relax.clip"):
            parts["activation"] = call
        elif name == QUANTIZE:
            parts["quantize"] = call
    return parts


def _bias_expr(parts: dict[str, relax.Call], composite: relax.Function) -> relax.Expr | None:
    """What holds the bias values of a group: its dequantize, or a float constant."""
    if "bias_dq" in parts:
        return parts["bias_dq"]
    if "add" not in parts:
        return None
    for call in operator_calls(composite):
        for arg in call.args:
            if isinstance(arg, tvm.ir.Constant) and str(arg.ty.dtype).startswith("float"):
                if call.same_as(parts["add"]) or str(call.op.name) in (
                    "relax.reshape",
                    "relax.expand_dims",
                ):
                    return arg
    return None


def convert_quantized_conv(ctx: ConvertContext, composite: relax.Function) -> int:
    parts = _group_parts(composite)
    call, quantize = parts["root"], parts["quantize"]
    attrs = call.attrs
    source = "relax.nn.conv2d"
    data_params = activation_params(parts["input_dq"])
    out_params = activation_params(quantize)
    act = data_params.dtype
    data = quant_input(ctx, parts["input_dq"])
    layout = str(attrs.data_layout)
    kernel_layout = str(attrs.kernel_layout)
    operation, filter_layout = _conv_case(call)
    weights = _weights(parts["weight_dq"])
    perm = [kernel_layout.index(axis) for axis in filter_layout]
    values = np.transpose(weights.values, perm)
    channel_dim = filter_layout.index("O")
    weight, scales = _weight_operand(ctx, weights, values, channel_dim, act)
    out_channels = values.shape[channel_dim]
    bias_expr = _bias_expr(parts, composite)
    bias = _bias_operand(ctx, bias_expr, out_channels, data_params.scale, scales)
    stride_h, stride_w = int_tuple(attrs.strides)
    dilation_h, dilation_w = int_tuple(attrs.dilation)
    pad_top, pad_left, pad_bottom, pad_right = int_tuple(attrs.padding)
    groups = int(attrs.groups)
    pads = [ctx.int32(v) for v in (pad_left, pad_right, pad_top, pad_bottom)]
    strides = [ctx.int32(stride_w), ctx.int32(stride_h)]
    fuse = ctx.int32(activation_code(parts.get("activation")))
    nchw = ctx.bool(layout == "NCHW")
    out = ctx.tensor(out_params.as_dtype(), ctx.shape(quantize))
    dilations = [ctx.int32(dilation_w), ctx.int32(dilation_h)]
    if operation == "CONV_2D":
        inputs = [data, weight, bias, *pads, *strides, fuse, nchw, *dilations]
    elif operation == "DEPTHWISE_CONV_2D":
        multiplier = ctx.int32(out_channels // groups)
        inputs = [data, weight, bias, *pads, *strides, multiplier, fuse, nchw, *dilations]
    else:
        inputs = [data, weight, bias, *pads, *strides, ctx.int32(groups), fuse, nchw]
    ctx.emit(operation, inputs, [out], source)
    return out


def _conv_requires(call: relax.Call) -> tuple[str, ...]:
    return (_conv_case(call)[0],)


def _check_quantized_matmul(
    call: relax.Call, options: PartitionOptions, context: PatternCheckContext
) -> CheckResult:
    result = check_tensors(call, {"float32": FEATURE_LEVEL_1}, options)
    if result is not None:
        return result
    x, out = tensor_info(call.args[0]), tensor_info(call)
    if x is None or out is None or x.shape is None or static_dim(call.args[0], -1) is None:
        return RefusalKind.DYNAMIC_SHAPE, (
            "a quantized matmul needs a static depth (its leading dimensions may be symbolic)"
        )
    weight = context.annotated_expr["weight"]
    if not is_weight_dequantize(weight):
        return DECLINED  # a dequantized activation: a matmul of two activations (below)
    shape_ = static_shape(weight)
    transposed = "permute" in context.annotated_expr
    held = _held_as_filter(context.annotated_expr.get("reshape"))
    if shape_ is None or len(shape_) != 2:
        if not (held and shape_ is not None and shape_[1:3] == [1, 1]):
            return RefusalKind.RANK, (
                "a quantized matmul takes a 2-D weight, or a [N, 1, 1, K] one reshaped to [N, K]"
            )
    # Relax reads [K, N] (or [N, K] under the permute_dims); NNAPI wants [N, K] per output row.
    result = _check_fused_common(call, context, options, 0 if transposed else 1, True)
    if result is not None:
        return result
    weights = _weights(weight)
    if weights.values is None and not (held and weights.per_channel):
        # Conclusive: the smaller forms (a matmul of two activations) would only say that
        # activations are quantized per tensor.
        return Conclusive(
            RefusalKind.ATTRIBUTE,
            "a per-channel weight given at run time is CONV_2D's filter as it is: hold it as "
            "[N, 1, 1, K] under a reshape to [N, K] (NNAPI cannot reshape a per-channel operand)",
        )
    if "bias" in context.annotated_expr:
        bias = _bias_value(context.annotated_expr["bias"], context.annotated_expr["bias_values"])
        if int(np.prod(bias.value.numpy().shape)) != static_dim(call, -1):
            return RefusalKind.ATTRIBUTE, "the bias is not one value per output unit"
    if _weights(weight).per_channel and x.ndim > 4:
        return RefusalKind.RANK, "a per-channel matmul (a 1x1 CONV_2D) takes rank <= 4"
    return None


def _held_as_filter(reshape: relax.Expr | None) -> bool:
    """Whether a matmul's transposed weight is a reshape of a [N, 1, 1, K] one to [N, K]."""
    if not (isinstance(reshape, relax.Call) and str(reshape.op.name) == "relax.reshape"):
        return False
    source, target = static_shape(reshape.args[0]), static_shape(reshape)
    return (
        source is not None
        and target is not None
        and len(source) == 4
        and source[1:3] == [1, 1]
        and target == [source[0], source[3]]
    )


def _matmul_weights(composite: relax.Function) -> tuple[Weights, np.ndarray | None]:
    """The weights and their values as NNAPI's [N, K] (None: given at run time)."""
    parts = _group_parts(composite)
    weights = _weights(parts["weight_dq"])
    permuted = any(str(c.op.name) == "relax.permute_dims" for c in operator_calls(composite))
    if weights.values is None:
        return weights, None
    held = weights.values.reshape(weights.values.shape[0], -1)  # [N, 1, 1, K] -> [N, K]
    values = held if permuted else held.T
    # Per-channel scales are along N in both layouts (the check requires it).
    axis = 0 if permuted else 1
    return Weights(weights.values, weights.scales, weights.zero_points, axis), values


def convert_quantized_matmul(ctx: ConvertContext, composite: relax.Function) -> int:
    parts = _group_parts(composite)
    call, quantize = parts["root"], parts["quantize"]
    source = "relax.matmul"
    data_params = activation_params(parts["input_dq"])
    out_params = activation_params(quantize)
    data = quant_input(ctx, parts["input_dq"])
    weights, values = _matmul_weights(composite)
    if values is None:  # a per-channel [N, 1, 1, K] filter given at run time
        filter_shape = static_shape(parts["weight_dq"])
        units, depth = filter_shape[0], filter_shape[3]  # type: ignore[index]
    else:
        units, depth = values.shape
    fuse = ctx.int32(activation_code(parts.get("activation")))
    out_shape = ctx.shape(quantize)
    x_shape = ctx.shape(call.args[0])
    rows = _rows(x_shape)
    if not weights.per_channel:
        assert values is not None  # a weight given at run time is per channel (the check)
        weight, scales = _weight_operand(ctx, weights, values, 0, data_params.dtype)
        bias = _bias_operand(ctx, _bias_expr(parts, composite), units, data_params.scale, scales)
        flat = ctx.tensor(out_params.as_dtype(), [rows, units])
        ctx.emit("FULLY_CONNECTED", [data, weight, bias, fuse], [flat], source)
        if len(out_shape) == 2:
            return flat
        return ctx.reshape(flat, out_params.as_dtype(), out_shape, source)
    # Per-channel weights: FULLY_CONNECTED has none, CONV_2D 1x1 has (on [1, 1, rows, K]).
    image = ctx.reshape(data, data_params.as_dtype(), [1, 1, rows, depth], source)
    if values is None:
        weight, scales = _runtime_filter(ctx, parts["weight_dq"], weights), weights.scales
    else:
        weight, scales = _weight_operand(
            ctx, weights, values.reshape(units, 1, 1, depth), 0, data_params.dtype
        )
    bias = _bias_operand(ctx, _bias_expr(parts, composite), units, data_params.scale, scales)
    conv_out = ctx.tensor(out_params.as_dtype(), [1, 1, rows, units])
    zero, one = ctx.int32(0), ctx.int32(1)
    inputs = [
        image,
        weight,
        bias,
        zero,
        ctx.int32(0),
        ctx.int32(0),
        ctx.int32(0),
        one,
        ctx.int32(1),
        fuse,
        ctx.bool(False),
        ctx.int32(1),
        ctx.int32(1),
    ]
    ctx.emit("CONV_2D", inputs, [conv_out], source)
    return ctx.reshape(conv_out, out_params.as_dtype(), out_shape, source)


def _runtime_filter(ctx: ConvertContext, dq: relax.Call, weights: Weights) -> int:
    """The subgraph input holding a per-channel [N, 1, 1, K] filter given at run time, typed
    TENSOR_QUANT8_SYMM_PER_CHANNEL with the dequantize's constant scales."""
    operand = ctx.operand(dq.args[0])
    ctx.builder.quantize_operand(
        operand,
        0.0,
        0,
        type="TENSOR_QUANT8_SYMM_PER_CHANNEL",
        channel_quant=(0, weights.scales.tolist()),
    )
    return operand


def _rows(x_shape: list) -> int | str:
    """The rows of a matmul's input flattened to 2-D: an int, or an expression of its symbolic
    leading dimensions (bound by the runtime from the input's shape)."""
    rows = x_shape[:-1]
    if all(isinstance(d, int) for d in rows):
        return int(np.prod(rows))
    return rows[0] if len(rows) == 1 else " * ".join(f"({d})" for d in rows)


def _matmul_requires(call: relax.Call) -> tuple[str, ...]:
    return ("FULLY_CONNECTED", "CONV_2D", "RESHAPE")


def _fused_lowerings(
    op: str, check: Check, convert, emits: tuple[str, ...], requires, transposed_forms
) -> list[Lowering]:
    short = op.rsplit(".", 1)[1]
    lowerings = []
    for transposed in transposed_forms:
        for with_bias, with_activation in [
            (True, True),
            (True, False),
            (False, True),
            (False, False),
        ]:
            suffix = ("_t" if transposed else "") + ("_bias" if with_bias else "")
            suffix += "_act" if with_activation else ""
            lowerings.append(
                Lowering(
                    name=f"nnapi.quantized_{short}{suffix}",
                    relax_op=op,
                    pattern=_fused_pattern(op, with_bias, with_activation, transposed),
                    check=check,
                    convert=convert,
                    emits=emits,
                    requires=requires,
                )
            )
    return lowerings


_CONV_EMITS = ("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D")

CONV: list[Lowering] = _fused_lowerings(
    "relax.nn.conv2d",
    _check_quantized_conv,
    convert_quantized_conv,
    _CONV_EMITS,
    _conv_requires,
    (False,),
)
MATMUL: list[Lowering] = _fused_lowerings(
    "relax.matmul",
    _check_quantized_matmul,
    convert_quantized_matmul,
    ("FULLY_CONNECTED", "CONV_2D", "RESHAPE"),
    _matmul_requires,
    (True, False),
)


# ---- matmul of two quantized activations (attention): BATCH_MATMUL ------------------------------


def _activation_matmul_pattern(transposed: bool):
    def make() -> tuple[DFPattern, dict[str, DFPattern]]:
        # Both sides are activations: a constant right side is a weight (the groups above).
        x = is_op(DEQUANTIZE)(wildcard() & ~is_const(), is_const(), is_const())
        y = is_op(DEQUANTIZE)(wildcard() & ~is_const(), is_const(), is_const())
        rhs = is_op("relax.permute_dims")(y) if transposed else y
        root = is_op("relax.matmul")(x, rhs)
        quantize = is_op(QUANTIZE)(root, is_const(), is_const())
        annotations = {"root": root, "dequantize0": x, "dequantize1": y, "quantize": quantize}
        if transposed:
            annotations["permute"] = rhs
        return quantize, annotations

    return make


def _check_activation_matmul(shifted: bool):
    """NNAPI's BATCH_MATMUL (feature level 6) on quant8 takes TENSOR_QUANT8_ASYMM_SIGNED only
    (int8 activations; each operand and the output with its own scale and zero point), operands
    of the same rank 2 to 4 and the same batch dimensions, and has no fused activation. The
    ``shifted`` record takes uint8 activations too: each uint8 side is moved to int8 by its
    zero point minus 128 with the same scale (DEQUANTIZE + QUANTIZE, exact), and a uint8
    result back; the other record takes int8 groups only."""

    def check(
        call: relax.Call, options: PartitionOptions, context: PatternCheckContext
    ) -> CheckResult:
        names = ["quantize", "dequantize0", "dequantize1"]
        result = _check_group_qdq(context, options, names)
        if result is None:
            dqs = [context.annotated_expr[n] for n in ("dequantize0", "dequantize1")]
            permute = context.annotated_expr.get("permute")
            result = _used_once(context, [call, *dqs, *([permute] if permute is not None else [])])
        if result is not None:
            return result
        dtypes = {_qdq_dtype(context.annotated_expr[n]) for n in names}
        if not dtypes <= {"int8", "uint8"}:
            return RefusalKind.DTYPE, (
                "a matmul of two quantized activations is BATCH_MATMUL, whose quant8 form "
                f"takes 8-bit activations, not {sorted(dtypes)}"
            )
        if shifted != ("uint8" in dtypes):
            return DECLINED  # the other record's form
        if options.feature_level < FEATURE_LEVEL_6:
            return RefusalKind.FEATURE_LEVEL, "BATCH_MATMUL needs NNAPI feature level 6"
        permute = context.annotated_expr.get("permute")
        if permute is not None and not _swaps_last_two(permute):
            return RefusalKind.ATTRIBUTE, "the permutation is not a swap of the last two axes"
        x = static_shape(context.annotated_expr["dequantize0"])
        y = static_shape(context.annotated_expr["dequantize1"])
        if x is None or y is None:
            return RefusalKind.DYNAMIC_SHAPE, "a quantized BATCH_MATMUL needs static shapes"
        if len(x) != len(y) or not 2 <= len(x) <= 4:
            return RefusalKind.RANK, (
                f"BATCH_MATMUL takes operands of the same rank 2 to 4, got {len(x)} and {len(y)}"
            )
        if x[:-2] != y[:-2]:
            return RefusalKind.ATTRIBUTE, "BATCH_MATMUL does not broadcast batch dimensions"
        return None

    return check


def _as_int8(params: QuantParams) -> QuantParams:
    """The int8 quantization holding the same values as ``params`` (uint8: zero point - 128)."""
    if params.dtype == "int8":
        return params
    return QuantParams("int8", params.scale, params.zero_point - 128)


def _swaps_last_two(call: relax.Call) -> bool:
    rank = len(static_shape(call.args[0]) or ())
    axes = call.attrs.axes
    if axes is None:
        return rank == 2
    return int_tuple(axes) == [*range(rank - 2), rank - 1, rank - 2]


def convert_quantized_batch_matmul(ctx: ConvertContext, composite: relax.Function) -> int:
    calls = operator_calls(composite)
    dqs = [c for c in calls if str(c.op.name) == DEQUANTIZE]
    quantize = _output_quantize(composite)
    transposed = any(str(c.op.name) == "relax.permute_dims" for c in calls)
    source = "relax.matmul"
    x, y = (
        requantize(ctx, quant_input(ctx, dq), dq, _as_int8(activation_params(dq)), source)
        for dq in dqs
    )
    wanted = activation_params(quantize)
    out = ctx.tensor(_as_int8(wanted).as_dtype(), ctx.shape(quantize))
    inputs = [x, y, ctx.bool(False), ctx.bool(transposed)]
    ctx.emit("BATCH_MATMUL", inputs, [out], source)
    return requantize(ctx, out, quantize, wanted, source)


ACTIVATION_MATMUL: list[Lowering] = [
    Lowering(
        name="nnapi.quantized_batch_matmul"
        + ("_shifted" if shifted else "")
        + ("_t" if transposed else ""),
        relax_op="relax.matmul",
        pattern=_activation_matmul_pattern(transposed),
        check=_check_activation_matmul(shifted),
        convert=convert_quantized_batch_matmul,
        emits=("DEQUANTIZE", "QUANTIZE", "BATCH_MATMUL") if shifted else ("BATCH_MATMUL",),
    )
    for shifted in (False, True)
    for transposed in (True, False)
]
