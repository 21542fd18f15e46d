# SPDX-License-Identifier: Apache-2.0
"""Quantized groups computed by the float lowerings' converters on quant8 operands.

* :data:`SINGLE`: one record per operator of ``dequantize -> op -> quantize`` (add, subtract,
  multiply, the poolings, mean, reshapes, transpose, concat, relu, clip as relu/relu6/relu1,
  sigmoid, tanh, softmax, resize). Each group's check is the float lowering's check plus the
  quant8 rules: activations NNAPI quantizes (:func:`.qdq.check_activation_qdq`), inner values
  used in the group only, and the output quantization NNAPI fixes or keeps from the input
  (:data:`.qdq.FIXED_OUTPUT`, :data:`.qdq.SAME_AS_INPUT`), requantized with DEQUANTIZE +
  QUANTIZE where the model asks for another. A group that would round twice where the model
  rounds once runs in float inside the subgraph; a global average pool to another quantization
  is a DEPTHWISE_CONV_2D.
* :data:`HARDSWISH`: ``x * relu6(x + 3) / 6`` on one quantized ``x`` (each reader with its own
  dequantize) as HARD_SWISH (feature level 4).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from tvm import relax
from tvm.relax.dpl import DFPattern, TuplePattern, is_const, is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import CallConverter, ConvertContext, operator_calls
from ..patterns import (
    FEATURE_LEVEL_3,
    FEATURE_LEVEL_4,
    Check,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    static_shape,
)
from .elementwise import (
    _ARITHMETIC,
    FLOAT,
    _check_clip,
    _clip_lowering,
    _clip_operations,
    _dtype_check,
    convert_arithmetic,
    convert_clip,
    convert_unary,
)
from .hard_activations import _SCALES, _make_check, convert_hardswish
from .pooling import _POOLS, _check_adaptive, _check_pool, convert_adaptive, convert_pool
from .qdq import (
    _REQUANTIZE_LEVEL,
    AVERAGING,
    DEQUANTIZE,
    FIXED_OUTPUT,
    QUANTIZE,
    SAME_AS_INPUT,
    QuantParams,
    _bias_operand,
    _bind_dequantized,
    _bound_calls,
    _check_group_qdq,
    _dq_pattern,
    _output_quantize,
    _used_once,
    activation_params,
    requantize,
)
from .reduce import _check_reduction, _check_softmax, convert_reduction, convert_softmax
from .shape import (
    _RESHAPES,
    _check_concat,
    _check_permute,
    _check_reshape,
    _check_resize,
    _resize_operation,
    convert_concat,
    convert_permute,
    convert_reshape,
    convert_resize,
)

# ---- single-operator groups: dequantize -> op -> quantize ----------------------------------------


@dataclass(frozen=True)
class _Group:
    """One operator computed on quant8 operands by its float converter."""

    relax_op: str
    nnapi: tuple[str, ...]  # the operations the float converter may emit
    check: Check  # the float lowering's check of the operator
    convert: CallConverter  # the float lowering's converter
    quantized_inputs: int = 1  # dequantized arguments first, then ``attributes`` wildcards
    attributes: int = 0
    tuple_arity: int = 0  # concat: the dequantized fields of its tuple argument
    allowed: Callable[[relax.Call], CheckResult] | None = None  # quant8-specific refusals


def _output_rule(operation: str) -> str:
    if operation in FIXED_OUTPUT:
        return "fixed"
    return "same" if operation in SAME_AS_INPUT else "free"


def _group_pattern(group: _Group):
    def make() -> tuple[DFPattern, dict[str, DFPattern]]:
        count = group.tuple_arity or group.quantized_inputs
        dqs = [_dq_pattern() for _ in range(count)]
        args: list[DFPattern] = [TuplePattern(dqs)] if group.tuple_arity else list(dqs)
        args += [wildcard() for _ in range(group.attributes)]
        root = is_op(group.relax_op)(*args)
        out = is_op(QUANTIZE)(root, is_const(), is_const())
        annotations = {"root": root, "quantize": out}
        annotations.update({f"dequantize{i}": dq for i, dq in enumerate(dqs)})
        return out, annotations

    return make


def _group_check(group: _Group) -> Check:
    def check(call: relax.Call, options: PartitionOptions, context: PatternCheckContext):
        count = group.tuple_arity or group.quantized_inputs
        names = ["quantize", *(f"dequantize{i}" for i in range(count))]
        result = _check_group_qdq(context, options, names)
        if result is None:
            dqs = [context.annotated_expr[f"dequantize{i}"] for i in range(count)]
            result = _used_once(context, [call, *dqs])
        if result is None:
            result = group.check(call, options, context)
        if result is None and group.allowed is not None:
            result = group.allowed(call)
        if result is None:
            result = _check_output_rule(group, call, context, options)
        return result

    return check


def _check_output_rule(
    group: _Group, call: relax.Call, context: PatternCheckContext, options: PartitionOptions
) -> CheckResult:
    rules = {_output_rule(op) for op in group.nnapi}
    if rules == {"free"}:
        if group.tuple_arity and options.feature_level < FEATURE_LEVEL_3:
            out = activation_params(context.annotated_expr["quantize"])
            fields = [
                activation_params(context.annotated_expr[f"dequantize{i}"])
                for i in range(group.tuple_arity)
            ]
            if not all(out.same_as(f) for f in fields):
                return RefusalKind.FEATURE_LEVEL, (
                    "CONCATENATION of differently quantized inputs needs feature level 3"
                )
        if group.relax_op == "relax.multiply" and options.feature_level < FEATURE_LEVEL_3:
            out = activation_params(context.annotated_expr["quantize"])
            a = activation_params(context.annotated_expr["dequantize0"])
            b = activation_params(context.annotated_expr["dequantize1"])
            if out.scale <= a.scale * b.scale:
                return RefusalKind.FEATURE_LEVEL, (
                    "quantized MUL with output scale <= product of input scales needs FL3"
                )
        return None
    out = activation_params(context.annotated_expr["quantize"])
    natural = _natural_output(group, call, activation_params(context.annotated_expr["dequantize0"]))
    if not out.same_as(natural) and options.feature_level < _REQUANTIZE_LEVEL:
        return RefusalKind.FEATURE_LEVEL, (
            f"the output quantization (scale {out.scale:g}, zero point {out.zero_point}) differs "
            f"from the one NNAPI gives ({natural.scale:g}, {natural.zero_point}); requantizing "
            f"needs QUANTIZE (feature level 3)"
        )
    return None


def _natural_output(group: _Group, call: relax.Call, first_input: QuantParams) -> QuantParams:
    """The output quantization NNAPI gives a same-as-input or fixed-output operation."""
    for operation in group.nnapi:
        if operation in FIXED_OUTPUT:
            scale, zero_point = FIXED_OUTPUT[operation][first_input.dtype]
            return QuantParams(first_input.dtype, scale, zero_point)
    return first_input


def _group_convert(group: _Group):
    def convert(ctx: ConvertContext, composite: relax.Function) -> int:
        root = next(c for c in operator_calls(composite) if str(c.op.name) == group.relax_op)
        quantize = _output_quantize(composite)
        out = activation_params(quantize)
        _bind_dequantized(ctx, composite)
        first = next(
            c for c in operator_calls(composite) if str(c.op.name) == DEQUANTIZE
        )  # the first dequantized argument
        target = out if _output_rule(group.nnapi[0]) == "free" else None
        if target is None:
            target = _natural_output(group, root, activation_params(first))
        source = str(root.op.name)
        layout = _global_average_layout(root) if group.nnapi == ("MEAN",) else None
        if layout is not None and not out.same_as(target):
            return _convert_global_average(ctx, root, layout, activation_params(first), out)
        if _rounds_twice(group, out, target):
            return _convert_in_float(ctx, composite, root, out, source, group.convert)
        ctx.dtype_overrides[root] = target.as_dtype()
        result = group.convert(ctx, root)
        if not isinstance(result, int):
            raise ctx.fail(root, "a quantized group has one result")
        return requantize(ctx, result, root, out, source)

    convert.__name__ = f"convert_quantized_{group.relax_op.rsplit('.', 1)[1]}"
    return convert


def _rounds_twice(group: _Group, out: QuantParams, natural: QuantParams) -> bool:
    """Whether the quant8 operation followed by a requantization would round its result twice
    where the model rounds once: a fixed-output operation (LOGISTIC, TANH, SOFTMAX) asked for
    another quantization, or an averaging one asked for a finer scale than its input's. Such a
    group runs in float between DEQUANTIZE and QUANTIZE inside the subgraph instead: the double
    rounding stays within one step per operator, but moves about a quarter of the elements by
    one step, which deep networks amplify (EfficientNet-B0: 26 output steps from the host build
    with it, 6 without; docs/quantization.md)."""
    if out.same_as(natural):
        return False
    operations = set(group.nnapi)
    if operations & set(FIXED_OUTPUT):
        return True
    return operations <= AVERAGING and out.scale < natural.scale * (1 - 1e-6)


def _global_average_layout(call: relax.Call) -> str | None:
    """``"NCHW"`` or ``"NHWC"`` when ``call`` averages a static rank-4 tensor over both of its
    spatial axes (a global average pool: adaptive_avg_pool2d to 1x1, or a mean over axes 2, 3
    or 1, 2), else None."""
    shape = static_shape(call.args[0])
    if shape is None or len(shape) != 4:
        return None
    if str(call.op.name) == "relax.nn.adaptive_avg_pool2d":
        layout = str(call.attrs.layout)  # the group's check accepted only 1x1 outputs
        return layout if layout in ("NCHW", "NHWC") else None
    if call.attrs.axis is None:
        return None
    axes = sorted(int(a) % 4 for a in call.attrs.axis)
    return {(2, 3): "NCHW", (1, 2): "NHWC"}.get((axes[0], axes[-1])) if len(axes) == 2 else None


def _convert_global_average(
    ctx: ConvertContext, root: relax.Call, layout: str, data: QuantParams, out: QuantParams
) -> int:
    """A quant8 global average pool whose output quantization differs from its input's.

    NNAPI's quant8 MEAN (and AVERAGE_POOL_2D) keep the input's scale and zero point, so they
    would round to the input's scale and again to the model's: the same average is a
    DEPTHWISE_CONV_2D whose filter covers the whole image with weights of value 1/(H*W)
    (quantized value 1, scale 1/(H*W)) and a zero bias, with the model's output quantization:
    one rounding of the exact mean, as the model does it, on the device's quant8 kernels."""
    source = str(root.op.name)
    shape = [int(d) for d in static_shape(root.args[0]) or ()]
    height, width = (shape[2], shape[3]) if layout == "NCHW" else (shape[1], shape[2])
    channels = shape[1] if layout == "NCHW" else shape[3]
    weight_scale = float(np.float32(1.0 / (height * width)))
    weight = ctx.constant(np.ones((1, height, width, channels), dtype=data.dtype))
    ctx.builder.quantize_operand(weight, weight_scale, 0)
    bias = _bias_operand(ctx, None, channels, data.scale, np.full(channels, weight_scale))
    pooled_shape = [shape[0], channels, 1, 1] if layout == "NCHW" else [shape[0], 1, 1, channels]
    pooled = ctx.tensor(out.as_dtype(), pooled_shape)
    inputs = [
        ctx.operand(root.args[0]),
        weight,
        bias,
        *(ctx.int32(0) for _ in range(4)),  # no padding
        ctx.int32(1),  # stride_w
        ctx.int32(1),  # stride_h
        ctx.int32(1),  # depth multiplier
        ctx.int32(0),  # no fused activation
        ctx.bool(layout == "NCHW"),
        ctx.int32(1),  # dilation_w
        ctx.int32(1),  # dilation_h
    ]
    ctx.emit("DEPTHWISE_CONV_2D", inputs, [pooled], source)
    result_shape = ctx.shape(root)
    if [int(d) for d in result_shape] == pooled_shape:
        return pooled
    result = ctx.tensor(out.as_dtype(), result_shape)
    ctx.emit("RESHAPE", [pooled, ctx.int_vector(result_shape)], [result], source)
    return result


def _convert_in_float(
    ctx: ConvertContext,
    composite: relax.Function,
    root: relax.Call,
    out: QuantParams,
    source: str,
    convert: CallConverter,
) -> int:
    """The group's operator in float32: DEQUANTIZE its inputs, run it, QUANTIZE the result."""
    for var, call in _bound_calls(composite).items():
        if str(call.op.name) == DEQUANTIZE:
            ctx.dtype_overrides.pop(var, None)
            real = ctx.tensor("float32", ctx.shape(call))
            ctx.emit("DEQUANTIZE", [ctx.operand(var)], [real], source)
            ctx.values[var] = real
    ctx.dtype_overrides.pop(root, None)
    result = convert(ctx, root)
    if not isinstance(result, int):
        raise ctx.fail(root, "a quantized group has one result")
    quantized_out = ctx.tensor(out.as_dtype(), ctx.shape(root))
    ctx.emit("QUANTIZE", [result], [quantized_out], source)
    return quantized_out


def _clip_relu_only(call: relax.Call) -> CheckResult:
    if _clip_lowering(call)[0] is None:
        return RefusalKind.ATTRIBUTE, "a quantized clip to other bounds than relu/relu6/relu1"
    return None


def _softmax_last_axis(call: relax.Call) -> CheckResult:
    if str(call.op.name) == "relax.nn.log_softmax":
        return RefusalKind.DTYPE, "LOG_SOFTMAX has no quant8 form"
    return None


_GROUPS: list[_Group] = [
    *(
        _Group(op, (nnapi,), _dtype_check(dtypes, scalars=True), convert_arithmetic, 2)
        for op, (nnapi, dtypes) in _ARITHMETIC.items()
        if op in ("relax.add", "relax.subtract", "relax.multiply")
    ),
    *(_Group(op, (nnapi,), _check_pool, convert_pool) for op, nnapi in _POOLS.items()),
    _Group("relax.nn.adaptive_avg_pool2d", ("MEAN",), _check_adaptive, convert_adaptive),
    _Group("relax.mean", ("MEAN",), _check_reduction, convert_reduction),
    *(
        _Group(op, ("RESHAPE",), _check_reshape, convert_reshape, attributes=arity - 1)
        for op, arity in _RESHAPES.items()
    ),
    _Group("relax.permute_dims", ("TRANSPOSE",), _check_permute, convert_permute),
    *(
        _Group(
            "relax.concat",
            ("CONCATENATION",),
            _check_concat,
            convert_concat,
            tuple_arity=arity,
        )
        for arity in range(2, 9)
    ),
    _Group(
        "relax.nn.relu",
        ("RELU",),
        _dtype_check(FLOAT),
        convert_unary,
    ),
    _Group(
        "relax.clip",
        ("RELU", "RELU1", "RELU6"),
        _check_clip,
        convert_clip,
        attributes=2,
        allowed=_clip_relu_only,
    ),
    _Group(
        "relax.sigmoid",
        ("LOGISTIC",),
        _dtype_check(FLOAT),
        convert_unary,
    ),
    _Group(
        "relax.tanh",
        ("TANH",),
        _dtype_check(FLOAT),
        convert_unary,
    ),
    _Group(
        "relax.nn.softmax",
        ("SOFTMAX",),
        _check_softmax,
        convert_softmax,
        allowed=_softmax_last_axis,
    ),
    _Group(
        "relax.image.resize2d",
        ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"),
        _check_resize,
        convert_resize,
        attributes=1,
    ),
]


#: What a MEAN group emits instead of MEAN for a global average pool whose output quantization
#: is not its input's (:func:`_convert_global_average`).
_GLOBAL_AVERAGE_EMITS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("MEAN",): ("DEPTHWISE_CONV_2D", "RESHAPE")
}


def _group_lowering(group: _Group) -> Lowering:
    name = "nnapi.quantized_" + group.relax_op.removeprefix("relax.").replace(".", "_")
    if group.tuple_arity:
        name += str(group.tuple_arity)
    return Lowering(
        name=name,
        relax_op=group.relax_op,
        pattern=_group_pattern(group),
        check=_group_check(group),
        convert=_group_convert(group),
        emits=(*group.nnapi, *_GLOBAL_AVERAGE_EMITS.get(group.nnapi, ()), "DEQUANTIZE", "QUANTIZE"),
        requires=_group_requires(group),
    )


def _group_requires(group: _Group):
    def requires(root: relax.Call) -> tuple[str, ...]:
        if str(root.op.name) == "relax.clip":
            return tuple(op for op in _clip_operations(root))
        if str(root.op.name) == "relax.image.resize2d":
            return (_resize_operation(root),)
        return group.nnapi

    return requires


#: One record per single-operator group, in the order of :data:`_GROUPS`.
SINGLE: list[Lowering] = [_group_lowering(group) for group in _GROUPS]


# ---- hardswish: x * relu6(x + 3) / 6 on one quantized x -------------------------------------


def _hardswish_pattern(scaled_last: bool, scale_op: str):
    def make() -> tuple[DFPattern, dict[str, DFPattern]]:
        xq = wildcard()
        # Each reader of x has its own dequantize of the same quantized value.
        x_add = is_op(DEQUANTIZE)(xq, is_const(), is_const())
        x_mul = is_op(DEQUANTIZE)(xq, is_const(), is_const())
        three, six = is_const(), is_const()
        add = is_op("relax.add")(x_add, three)
        clip = is_op("relax.clip")(add, wildcard(), wildcard())
        if scaled_last:
            root = is_op(scale_op)(is_op("relax.multiply")(x_mul, clip), six)
        else:
            root = is_op("relax.multiply")(x_mul, is_op(scale_op)(clip, six))
        quantize = is_op(QUANTIZE)(root, is_const(), is_const())
        annotations = {
            "root": root,
            "x": x_add,
            "dequantize0": x_add,
            "dequantize1": x_mul,
            "three": three,
            "six": six,
            "add": add,
            "clip": clip,
            "quantize": quantize,
        }
        return quantize, annotations

    return make


def _hardswish_check(scaled_last: bool, scale_op: str) -> Check:
    float_check = _make_check("hardswish_scaled_last" if scaled_last else "hardswish", scale_op)

    def check(call: relax.Call, options: PartitionOptions, context: PatternCheckContext):
        result = _check_group_qdq(context, options, ["quantize", "dequantize0", "dequantize1"])
        if result is not None:
            return result
        if options.feature_level < FEATURE_LEVEL_4:
            return RefusalKind.FEATURE_LEVEL, "hardswish: HARD_SWISH needs feature level 4"
        first, second = (
            activation_params(context.annotated_expr[f"dequantize{i}"]) for i in (0, 1)
        )
        if not first.same_as(second):
            return RefusalKind.ATTRIBUTE, "hardswish: x is dequantized with two quantizations"
        return float_check(call, options, context)

    return check


def convert_quantized_hardswish(ctx: ConvertContext, composite: relax.Function) -> int:
    quantize = _output_quantize(composite)
    _bind_dequantized(ctx, composite)
    ctx.dtype_overrides[quantize] = activation_params(quantize).as_dtype()
    return convert_hardswish(ctx, composite)


HARDSWISH: list[Lowering] = [
    Lowering(
        name=f"nnapi.quantized_hardswish{'_scaled_last' if last else ''}"
        + ("_mul" if scale_op == "relax.multiply" else ""),
        relax_op="relax.multiply" if not last else scale_op,
        pattern=_hardswish_pattern(last, scale_op),
        check=_hardswish_check(last, scale_op),
        convert=convert_quantized_hardswish,
        emits=("HARD_SWISH",),
    )
    for last in (False, True)
    for scale_op in _SCALES
]
