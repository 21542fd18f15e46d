# SPDX-License-Identifier: Apache-2.0
"""Quantized (QDQ) Relax -> NNAPI quant8 operations.

TVM's ONNX frontend turns QuantizeLinear / DequantizeLinear into ``relax.quantize`` /
``relax.dequantize``, so a quantized network is a float network whose operators read
dequantized values and whose results are quantized again. Each ``dequantize -> op -> quantize``
group becomes one NNAPI operation on quant8 operands:

* activations: ``TENSOR_QUANT8_ASYMM`` (uint8) or ``TENSOR_QUANT8_ASYMM_SIGNED`` (int8, FL4),
  quantized per tensor, with the scale and zero point of the group's ``quantize``;
* convolution and fully-connected weights: per-tensor quant8 of the input's type, or
  ``TENSOR_QUANT8_SYMM_PER_CHANNEL`` (FL3) for per-channel int8 weights (a per-channel matmul
  weight becomes a 1x1 CONV_2D, since FULLY_CONNECTED has no per-channel weights);
* bias: ``TENSOR_INT32``, zero point 0, scale input scale x weight scale (requantized at compile
  time when the model's bias scale differs);
* a relu / relu6 / relu1 between the operator and its ``quantize`` is the fused activation;
* a matmul of two quantized activations (attention's q @ k^T, scores @ v) is BATCH_MATMUL
  (feature level 6), whose quant8 form takes int8 activations only (TENSOR_QUANT8_ASYMM_SIGNED).

NNAPI fixes some output quantizations (:data:`FIXED_OUTPUT`) and keeps the input's for others
(:data:`SAME_AS_INPUT`). When the model's ``quantize`` asks for other parameters, the result is
requantized with DEQUANTIZE + QUANTIZE. A ``quantize`` of a float value and a ``dequantize`` of
a quantized one outside such groups become NNAPI QUANTIZE / DEQUANTIZE, so the model's float
inputs and outputs are converted inside the subgraph and a whole quantized network is one
subgraph with float inputs and outputs.

What NNAPI cannot express is refused with a reason naming it: activations quantized per channel,
16-bit activations, asymmetric per-channel weights, per-channel weights along another axis than
the output channels, non-positive scales, and the FL1/FL2 rule that a convolution's output scale
must exceed input scale x weight scale. docs/quantization.md describes all of it.

:func:`dedicate_dequantize` runs before partitioning: a dequantized value read by several
operators is dequantized once per reader, so each group owns its ``dequantize``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax
from tvm.relax.dpl import DFPattern, TuplePattern, is_const, is_op, wildcard
from tvm.relax.expr_functor import PyExprMutator, mutator
from tvm.relax.transform import PatternCheckContext

from ..converters import (
    CallConverter,
    ConvertContext,
    int_tuple,
    operator_calls,
)
from ..graph_json import QuantDType
from ..patterns import (
    FEATURE_LEVEL_1,
    FEATURE_LEVEL_3,
    FEATURE_LEVEL_4,
    FEATURE_LEVEL_6,
    Check,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    check_tensors,
    static_shape,
)
from .conv import _check_conv, _conv_case
from .elementwise import (
    _ARITHMETIC,
    FLOAT,
    _check_clip,
    _clip_lowering,
    _clip_operations,
    _dtype_check,
    activation_code,
    convert_arithmetic,
    convert_clip,
    convert_unary,
)
from .hard_activations import _SCALES, _make_check, convert_hardswish
from .pooling import _POOLS, _check_adaptive, _check_pool, convert_adaptive, convert_pool
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

QUANTIZE = "relax.quantize"
DEQUANTIZE = "relax.dequantize"

#: Activation dtypes of NNAPI's quant8 operations and the feature level that introduced them.
ACTIVATION_DTYPES = {"uint8": FEATURE_LEVEL_1, "int8": FEATURE_LEVEL_4}
_NNAPI_TYPE = {"uint8": "TENSOR_QUANT8_ASYMM", "int8": "TENSOR_QUANT8_ASYMM_SIGNED"}
_RANGE = {"uint8": (0, 255), "int8": (-128, 127)}

#: Quant8 outputs whose scale and zero point NNAPI fixes, per activation dtype (NDK reference).
FIXED_OUTPUT: dict[str, dict[str, tuple[float, int]]] = {
    "LOGISTIC": {"uint8": (1.0 / 256, 0), "int8": (1.0 / 256, -128)},
    "SOFTMAX": {"uint8": (1.0 / 256, 0), "int8": (1.0 / 256, -128)},
    "TANH": {"uint8": (1.0 / 128, 128), "int8": (1.0 / 128, 0)},
}
#: Quant8 operations whose output keeps the input's scale and zero point.
SAME_AS_INPUT = frozenset(
    {
        "RELU",
        "RELU1",
        "RELU6",
        "MAX_POOL_2D",
        "AVERAGE_POOL_2D",
        "MEAN",
        "RESHAPE",
        "TRANSPOSE",
        "RESIZE_BILINEAR",
        "RESIZE_NEAREST_NEIGHBOR",
    }
)
#: Of those, the operations that average: their result is rounded to the input's scale.
AVERAGING = frozenset({"MEAN", "AVERAGE_POOL_2D", "RESIZE_BILINEAR"})
#: QUANTIZE (the requantization of a result and a model's float input) needs feature level 3.
_REQUANTIZE_LEVEL = FEATURE_LEVEL_3


# ---- quantization parameters ---------------------------------------------------------------------


@dataclass(frozen=True)
class QuantParams:
    """Per-tensor quantization of an activation: dtype, scale, zero point."""

    dtype: str
    scale: float
    zero_point: int

    def as_dtype(self) -> QuantDType:
        return QuantDType(self.dtype, self.scale, self.zero_point)

    def same_as(self, other: QuantParams) -> bool:
        return (
            self.dtype == other.dtype
            and self.zero_point == other.zero_point
            and math.isclose(self.scale, other.scale, rel_tol=1e-6)
        )


def _constant(expr: relax.Expr) -> np.ndarray | None:
    return expr.value.numpy() if isinstance(expr, tvm.ir.Constant) else None


def _qdq_dtype(call: relax.Call) -> str:
    """The integer dtype of a quantize (its output) or dequantize (its input)."""
    value = call if str(call.op.name) == QUANTIZE else call.args[0]
    return str(value.ty.dtype)


def check_activation_qdq(call: relax.Call, options: PartitionOptions) -> CheckResult:
    """Whether a quantize / dequantize of an activation has an NNAPI quant8 operand type."""
    dtype = _qdq_dtype(call)
    if dtype in ("int16", "uint16"):
        return RefusalKind.DTYPE, (
            f"{dtype} activations: NNAPI's quantized operations take 8-bit activations only"
        )
    if dtype not in ACTIVATION_DTYPES:
        return RefusalKind.DTYPE, f"{dtype} quantization has no NNAPI quant8 type"
    if ACTIVATION_DTYPES[dtype] > options.feature_level:
        return RefusalKind.FEATURE_LEVEL, (
            f"{_NNAPI_TYPE[dtype]} needs NNAPI feature level {ACTIVATION_DTYPES[dtype]}, "
            f"target has {options.feature_level}"
        )
    scale, zero_point = _constant(call.args[1]), _constant(call.args[2])
    if scale is None or zero_point is None:
        return RefusalKind.ATTRIBUTE, "the scale and zero point must be constants"
    if scale.size != 1 or zero_point.size != 1:
        return RefusalKind.ATTRIBUTE, (
            "activations quantized per channel: NNAPI quantizes activations per tensor"
        )
    if not (np.isfinite(scale).all() and float(scale.reshape(-1)[0]) > 0):
        return RefusalKind.ATTRIBUTE, f"scale {float(scale.reshape(-1)[0])} is not positive"
    low, high = _RANGE[dtype]
    if not low <= int(zero_point.reshape(-1)[0]) <= high:
        return RefusalKind.ATTRIBUTE, f"zero point {int(zero_point.reshape(-1)[0])} out of range"
    return None


def activation_params(call: relax.Call) -> QuantParams:
    """The parameters of an accepted activation quantize / dequantize."""
    scale = float(_constant(call.args[1]).reshape(-1)[0])  # type: ignore[union-attr]
    zero_point = int(_constant(call.args[2]).reshape(-1)[0])  # type: ignore[union-attr]
    return QuantParams(_qdq_dtype(call), scale, zero_point)


# ---- weights -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Weights:
    """A dequantized constant weight: int8/uint8 values, scales (1 or per channel), zero points."""

    values: np.ndarray
    scales: np.ndarray
    zero_points: np.ndarray
    axis: int

    @property
    def per_channel(self) -> bool:
        return self.scales.size > 1


def _weights(dq: relax.Call) -> Weights:
    values = _constant(dq.args[0])
    scales = np.asarray(_constant(dq.args[1]), dtype=np.float64).reshape(-1)
    zero_points = np.asarray(_constant(dq.args[2])).reshape(-1).astype(np.int32)
    axis = int(dq.attrs.axis)
    rank = values.ndim  # type: ignore[union-attr]
    return Weights(values, scales, zero_points, axis + rank if axis < 0 else axis)  # type: ignore[arg-type]


def _check_weights(dq: relax.Call, channel_axis: int, options: PartitionOptions) -> CheckResult:
    """A weight dequantize NNAPI can take: constant 8-bit values, per tensor or symmetric per
    channel along ``channel_axis`` (the output channels)."""
    if _constant(dq.args[0]) is None:
        return RefusalKind.ATTRIBUTE, "the quantized weights must be a constant"
    if _constant(dq.args[1]) is None or _constant(dq.args[2]) is None:
        return RefusalKind.ATTRIBUTE, "the weight scale and zero point must be constants"
    dtype = str(dq.args[0].ty.dtype)
    if dtype not in ("int8", "uint8"):
        return RefusalKind.DTYPE, f"{dtype} weights: NNAPI's quantized weights are 8-bit"
    weights = _weights(dq)
    if not (np.isfinite(weights.scales).all() and (weights.scales > 0).all()):
        return RefusalKind.ATTRIBUTE, "a weight scale is not positive"
    if weights.per_channel:
        if weights.axis != channel_axis:
            return RefusalKind.ATTRIBUTE, (
                f"weights quantized per channel along axis {weights.axis}: NNAPI quantizes "
                f"per output channel (axis {channel_axis})"
            )
        if dtype != "int8" or (weights.zero_points != 0).any():
            return RefusalKind.ATTRIBUTE, (
                "asymmetric per-channel weights: NNAPI's TENSOR_QUANT8_SYMM_PER_CHANNEL is int8 "
                "with zero point 0"
            )
        if options.feature_level < FEATURE_LEVEL_3:
            return RefusalKind.FEATURE_LEVEL, "per-channel weights need feature level 3"
    elif dtype == "int8" and not -128 <= int(weights.zero_points[0]) + 128 <= 255:
        return RefusalKind.ATTRIBUTE, "the weight zero point is out of range"
    return None


def _weight_operand(
    ctx: ConvertContext, weights: Weights, values: np.ndarray, channel_dim: int, act: str
) -> tuple[int, np.ndarray]:
    """The NNAPI filter operand of (rearranged) weight ``values`` for ``act`` activations, and
    the weight scale of each output channel."""
    if weights.per_channel:
        operand = ctx.constant(values.astype(np.int8))
        ctx.builder.quantize_operand(
            operand,
            0.0,
            0,
            type="TENSOR_QUANT8_SYMM_PER_CHANNEL",
            channel_quant=(channel_dim, weights.scales.tolist()),
        )
        return operand, weights.scales
    zero_point = int(weights.zero_points[0])
    stored = values.astype(np.int32)
    if str(values.dtype) != act:
        # The filter has the input's type: shift between int8 and uint8 (exact).
        shift = 128 if act == "uint8" else -128
        stored, zero_point = stored + shift, zero_point + shift
    operand = ctx.constant(stored.astype(act))
    ctx.builder.quantize_operand(operand, float(weights.scales[0]), zero_point)
    return operand, np.full(values.shape[channel_dim], weights.scales[0])


def _bias_operand(
    ctx: ConvertContext, bias: relax.Expr | None, channels: int, input_scale: float, scales
) -> int:
    """The TENSOR_INT32 bias (scale input scale x weight scale, zero point 0)."""
    expected = input_scale * np.asarray(scales, dtype=np.float64)
    if bias is None:
        values = np.zeros(channels, dtype=np.int32)
    else:
        real = _bias_real(bias).reshape(-1).astype(np.float64)
        values = np.round(real / expected)
        values = np.clip(values, -(2**31), 2**31 - 1).astype(np.int32)
    operand = ctx.constant(values)
    per_channel = not np.allclose(expected, expected[0], rtol=1e-7, atol=0)
    ctx.builder.quantize_operand(operand, 0.0 if per_channel else float(expected[0]), 0)
    return operand


def _bias_real(bias: relax.Expr) -> np.ndarray:
    """The real values of a bias: a float constant, or a dequantize of an int32 constant."""
    if isinstance(bias, tvm.ir.Constant):
        return np.asarray(bias.value.numpy(), dtype=np.float64)
    values = np.asarray(_constant(bias.args[0]), dtype=np.float64)
    scale = np.asarray(_constant(bias.args[1]), dtype=np.float64)
    zero_point = np.asarray(_constant(bias.args[2]), dtype=np.float64)
    return (values - zero_point) * scale


# ---- operands of a group ------------------------------------------------------------------------


def quant_input(ctx: ConvertContext, dq: relax.Call) -> int:
    """The quant8 operand a group's ``dequantize`` reads, with the dequantize's parameters."""
    params = activation_params(dq)
    x = dq.args[0]
    if isinstance(x, tvm.ir.Constant):
        operand = ctx.constant(x.value.numpy())
        ctx.builder.quantize_operand(operand, params.scale, params.zero_point)
        return operand
    operand = ctx.operand(x)
    entry = ctx.builder.operands[operand]
    if entry.type != _NNAPI_TYPE[params.dtype]:
        raise ctx.fail(x, f"is {entry.type}, its dequantize reads {params.dtype}")
    if entry.scale == 0:  # a subgraph input: its quantization is its reader's
        ctx.builder.quantize_operand(operand, params.scale, params.zero_point)
    elif not params.same_as(QuantParams(params.dtype, entry.scale, entry.zero_point)):
        raise ctx.fail(
            x,
            f"is quantized with scale {entry.scale}, zero point {entry.zero_point} but read "
            f"with scale {params.scale}, zero point {params.zero_point}",
        )
    return operand


def requantize(
    ctx: ConvertContext, operand: int, like: relax.Expr, to: QuantParams, source: str
) -> int:
    """``operand`` with the quantization ``to`` (DEQUANTIZE + QUANTIZE), or itself."""
    entry = ctx.builder.operands[operand]
    if to.same_as(QuantParams(to.dtype, entry.scale, entry.zero_point)):
        return operand
    shape_ = ctx.shape(like)
    real = ctx.tensor("float32", shape_)
    ctx.emit("DEQUANTIZE", [operand], [real], source)
    out = ctx.tensor(to.as_dtype(), shape_)
    ctx.emit("QUANTIZE", [real], [out], source)
    return out


def _bound_calls(composite: relax.Function) -> dict[relax.Var, relax.Call]:
    return {
        binding.var: binding.value
        for block in composite.body.blocks
        for binding in block.bindings
        if isinstance(binding.value, relax.Call)
    }


def _output_quantize(composite: relax.Function) -> relax.Call:
    calls = operator_calls(composite)
    if not calls or str(calls[-1].op.name) != QUANTIZE:
        raise ValueError("a quantized group ends with its quantize")
    return calls[-1]


def _bind_dequantized(ctx: ConvertContext, composite: relax.Function) -> None:
    """Bind the variables of the group's activation dequantizes to their quant8 operands."""
    bound = _bound_calls(composite)
    for var, call in bound.items():
        if str(call.op.name) == DEQUANTIZE:
            # (a dequantized constant, e.g. an added one, becomes a quant8 constant)
            ctx.values[var] = quant_input(ctx, call)
            ctx.dtype_overrides[var] = activation_params(call).as_dtype()


# ---- checks shared by the groups -----------------------------------------------------------------


def _used_once(context: PatternCheckContext, exprs: list[relax.Expr]) -> CheckResult:
    for expr in exprs:
        var = context.value_to_bound_var.get(expr)
        if var is not None and len(context.var_usages.get(var, [])) > 1:
            return RefusalKind.ATTRIBUTE, (
                f"{var.name} inside the quantized group is also used outside it"
            )
    return None


def _check_group_qdq(
    context: PatternCheckContext, options: PartitionOptions, names: list[str]
) -> CheckResult:
    annotated = context.annotated_expr
    for name in names:
        result = check_activation_qdq(annotated[name], options)
        if result is not None:
            return result
    dtypes = {_qdq_dtype(annotated[name]) for name in names}
    if len(dtypes) > 1:
        return RefusalKind.DTYPE, "the group mixes uint8 and int8 activations"
    return None


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


def _dq_pattern() -> DFPattern:
    return is_op(DEQUANTIZE)(wildcard(), is_const(), is_const())


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
        _Group(op, (nnapi,), _dtype_check(dtypes), convert_arithmetic, 2)
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
        x, weight = _dq_pattern(), _weight_dq_pattern()
        rhs = is_op("relax.permute_dims")(weight) if transposed else weight
        root = is_op(op)(x, rhs)
        annotations: dict[str, DFPattern] = {"root": root, "dequantize0": x, "weight": weight}
        if transposed:
            annotations["permute"] = rhs
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
    call: relax.Call, context: PatternCheckContext, options: PartitionOptions, channel_axis: int
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
    result = _check_weights(annotated["weight"], channel_axis, options)
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
        if name == DEQUANTIZE and isinstance(call.args[0], tvm.ir.Constant):
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
    x, out = static_shape(call.args[0]), static_shape(call)
    if x is None or out is None:
        return RefusalKind.DYNAMIC_SHAPE, "a quantized matmul needs static shapes"
    weight = context.annotated_expr["weight"]
    shape_ = static_shape(weight)
    if shape_ is None or len(shape_) != 2:
        return RefusalKind.RANK, "a quantized matmul takes a 2-D constant weight"
    # Relax reads [K, N] (or [N, K] under the permute_dims); NNAPI wants [N, K] per output row.
    transposed = "permute" in context.annotated_expr
    result = _check_fused_common(call, context, options, 0 if transposed else 1)
    if result is not None:
        return result
    if "bias" in context.annotated_expr:
        bias = _bias_value(context.annotated_expr["bias"], context.annotated_expr["bias_values"])
        if int(np.prod(bias.value.numpy().shape)) != out[-1]:
            return RefusalKind.ATTRIBUTE, "the bias is not one value per output unit"
    if _weights(weight).per_channel and len(x) > 4:
        return RefusalKind.RANK, "a per-channel matmul (a 1x1 CONV_2D) takes rank <= 4"
    return None


def _matmul_weights(composite: relax.Function) -> tuple[Weights, np.ndarray]:
    """The weights and their values as NNAPI's [N, K]."""
    parts = _group_parts(composite)
    weights = _weights(parts["weight_dq"])
    permuted = any(str(c.op.name) == "relax.permute_dims" for c in operator_calls(composite))
    values = weights.values if permuted else weights.values.T
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
    units, depth = values.shape
    fuse = ctx.int32(activation_code(parts.get("activation")))
    out_shape = ctx.shape(quantize)
    x_shape = ctx.shape(call.args[0])
    if not weights.per_channel:
        weight, scales = _weight_operand(ctx, weights, values, 0, data_params.dtype)
        bias = _bias_operand(ctx, _bias_expr(parts, composite), units, data_params.scale, scales)
        rows = int(np.prod([int(d) for d in x_shape[:-1]]))
        flat = ctx.tensor(out_params.as_dtype(), [rows, units])
        ctx.emit("FULLY_CONNECTED", [data, weight, bias, fuse], [flat], source)
        if len(out_shape) == 2:
            return flat
        return ctx.reshape(flat, out_params.as_dtype(), out_shape, source)
    # Per-channel weights: FULLY_CONNECTED has none, CONV_2D 1x1 has (on [1, 1, rows, K]).
    rows = int(np.prod([int(d) for d in x_shape[:-1]]))
    image = ctx.reshape(data, data_params.as_dtype(), [1, 1, rows, depth], source)
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


# ---- model boundaries: quantize of a float value, dequantize of a quantized one ------------------


def _check_quantize(
    call: relax.Call, options: PartitionOptions, context: PatternCheckContext
) -> CheckResult:
    result = check_activation_qdq(call, options)
    if result is not None:
        return result
    if str(call.args[0].ty.dtype) not in ("float32", "float16"):
        return RefusalKind.DTYPE, "QUANTIZE takes a float input"
    dtypes = {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3, **ACTIVATION_DTYPES}
    return check_tensors(call, dtypes, options, inputs=[call.args[0]])


def convert_quantize(ctx: ConvertContext, call: relax.Call) -> int:
    out = ctx.tensor(activation_params(call).as_dtype(), ctx.shape(call))
    ctx.emit("QUANTIZE", [ctx.operand(call.args[0])], [out], QUANTIZE)
    return out


def _check_dequantize(
    call: relax.Call, options: PartitionOptions, context: PatternCheckContext
) -> CheckResult:
    if isinstance(call.args[0], tvm.ir.Constant):
        return RefusalKind.ATTRIBUTE, (
            "a dequantized constant outside a quantized group (its reader is not quantized)"
        )
    result = check_activation_qdq(call, options)
    if result is not None:
        return result
    if str(call.ty.dtype) != "float32" and options.feature_level < FEATURE_LEVEL_3:
        return RefusalKind.FEATURE_LEVEL, "DEQUANTIZE to float16 needs feature level 3"
    if _qdq_dtype(call) == "int8" and options.feature_level < FEATURE_LEVEL_4:
        return RefusalKind.FEATURE_LEVEL, "DEQUANTIZE of int8 needs feature level 4"
    return check_tensors(
        call, {"float32": FEATURE_LEVEL_1, "float16": FEATURE_LEVEL_3, **ACTIVATION_DTYPES}, options
    )


def convert_dequantize(ctx: ConvertContext, call: relax.Call) -> int:
    data = quant_input(ctx, call)
    out = ctx.output(call)
    ctx.emit("DEQUANTIZE", [data], [out], DEQUANTIZE)
    return out


# ---- dedicated dequantizes -----------------------------------------------------------------------


def _call_arg_uses(value: relax.Expr, counts: dict, other: set) -> None:
    """Count the uses of variables as call arguments (directly or in a tuple argument); any
    other use goes to ``other``."""
    if isinstance(value, relax.Call):
        for arg in value.args:
            fields = arg.fields if isinstance(arg, relax.Tuple) else [arg]
            for item in fields:
                if isinstance(item, relax.Var):
                    counts[item] = counts.get(item, 0) + 1
                elif not isinstance(item, tvm.ir.Constant | relax.ShapeExpr):
                    relax.analysis.post_order_visit(
                        item, lambda n: other.add(n) if isinstance(n, relax.Var) else None
                    )
    else:
        relax.analysis.post_order_visit(
            value, lambda n: other.add(n) if isinstance(n, relax.Var) else None
        )


@mutator
class _DedicateDequantize(PyExprMutator):
    def __init__(self, shared: dict[relax.Var, relax.Call]) -> None:
        super().__init__()
        self.shared = shared

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        if binding.var in self.shared:
            return  # re-emitted at each reader
        super().visit_var_binding_(binding)

    def _fresh(self, arg: relax.Expr) -> relax.Expr:
        if isinstance(arg, relax.Var) and arg in self.shared:
            dq = self.shared[arg]
            args = [self.visit_expr(a) for a in dq.args]
            return self.builder_.emit(relax.Call(dq.op, args, dq.attrs, dq.ty_args), arg.name)
        if isinstance(arg, relax.Tuple):
            return relax.Tuple([self._fresh(field) for field in arg.fields])
        return self.visit_expr(arg)

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        args = [self._fresh(arg) for arg in call.args]
        return relax.Call(call.op, args, call.attrs, call.ty_args)


def dedicate_dequantize(mod: tvm.IRModule) -> tvm.IRModule:
    """Give every reader of a dequantized value read by several operators its own
    ``dequantize`` (of the same quantized value), so that each quantized group owns its input's
    dequantize. Values used otherwise (returned, aliased) keep their one dequantize."""
    changed = False
    functions = {}
    for gvar, func in mod.functions.items():
        functions[gvar] = func
        if not isinstance(func, relax.Function) or (func.attrs or {}).get("Composite"):
            continue
        dequantizes: dict[relax.Var, relax.Call] = {}
        counts: dict[relax.Var, int] = {}
        other: set = set()
        if not isinstance(func.body, relax.SeqExpr):
            continue
        for block in func.body.blocks:
            for binding in block.bindings:
                value = binding.value
                if isinstance(value, relax.Call) and value.op == tvm.ir.Op.get(DEQUANTIZE):
                    if isinstance(block, relax.DataflowBlock):
                        dequantizes[binding.var] = value
                _call_arg_uses(value, counts, other)
        _call_arg_uses(func.body.body, counts, other)
        shared = {
            var: call
            for var, call in dequantizes.items()
            if counts.get(var, 0) > 1 and var not in other
        }
        if shared:
            functions[gvar] = _DedicateDequantize(shared).visit_expr(func)
            changed = True
    if not changed:
        return mod
    return tvm.IRModule(functions, attrs=mod.attrs, global_infos=mod.global_infos)


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


def _check_activation_matmul(
    call: relax.Call, options: PartitionOptions, context: PatternCheckContext
) -> CheckResult:
    """NNAPI's BATCH_MATMUL (feature level 6) on quant8 takes TENSOR_QUANT8_ASYMM_SIGNED only
    (int8 activations; each operand and the output with its own scale and zero point), operands
    of the same rank 2 to 4 and the same batch dimensions, and has no fused activation."""
    names = ["quantize", "dequantize0", "dequantize1"]
    result = _check_group_qdq(context, options, names)
    if result is None:
        dqs = [context.annotated_expr[n] for n in ("dequantize0", "dequantize1")]
        permute = context.annotated_expr.get("permute")
        result = _used_once(context, [call, *dqs, *([permute] if permute is not None else [])])
    if result is not None:
        return result
    dtype = _qdq_dtype(context.annotated_expr["quantize"])
    if dtype != "int8":
        return RefusalKind.DTYPE, (
            f"a matmul of two quantized activations is BATCH_MATMUL, whose quant8 form takes "
            f"int8 (TENSOR_QUANT8_ASYMM_SIGNED) activations only, not {dtype}"
        )
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
    x, y = (quant_input(ctx, dq) for dq in dqs)
    out = ctx.tensor(activation_params(quantize).as_dtype(), ctx.shape(quantize))
    inputs = [x, y, ctx.bool(False), ctx.bool(transposed)]
    ctx.emit("BATCH_MATMUL", inputs, [out], "relax.matmul")
    return out


ACTIVATION_MATMUL: list[Lowering] = [
    Lowering(
        name="nnapi.quantized_batch_matmul" + ("_t" if transposed else ""),
        relax_op="relax.matmul",
        pattern=_activation_matmul_pattern(transposed),
        check=_check_activation_matmul,
        convert=convert_quantized_batch_matmul,
        emits=("BATCH_MATMUL",),
    )
    for transposed in (True, False)
]


# ---- the records ---------------------------------------------------------------------------------

_CONV_EMITS = ("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D")

#: Groups of several operators (conv2d / matmul with bias and activation), each form before the
#: smaller ones it contains, then the single-operator groups, then the model boundaries.
LOWERINGS: list[Lowering] = [
    *_fused_lowerings(
        "relax.nn.conv2d",
        _check_quantized_conv,
        convert_quantized_conv,
        _CONV_EMITS,
        _conv_requires,
        (False,),
    ),
    *_fused_lowerings(
        "relax.matmul",
        _check_quantized_matmul,
        convert_quantized_matmul,
        ("FULLY_CONNECTED", "CONV_2D", "RESHAPE"),
        _matmul_requires,
        (True, False),
    ),
    *ACTIVATION_MATMUL,
    *HARDSWISH,
    *(_group_lowering(group) for group in _GROUPS),
]
BOUNDARIES: list[Lowering] = [
    Lowering(
        name="nnapi.quantize",
        relax_op=QUANTIZE,
        pattern=lambda: _single(QUANTIZE),
        check=_check_quantize,
        convert=lambda ctx, f: convert_quantize(ctx, operator_calls(f)[0]),
        emits=("QUANTIZE",),
    ),
    Lowering(
        name="nnapi.dequantize",
        relax_op=DEQUANTIZE,
        pattern=lambda: _single(DEQUANTIZE),
        check=_check_dequantize,
        convert=lambda ctx, f: convert_dequantize(ctx, operator_calls(f)[0]),
        emits=("DEQUANTIZE",),
    ),
]


def _single(op: str) -> tuple[DFPattern, dict[str, DFPattern]]:
    x = wildcard()
    call = is_op(op)(x, is_const(), is_const())
    return call, {"root": call, "arg0": x}
