# SPDX-License-Identifier: Apache-2.0
"""Normalisations decomposed into NNAPI operations: rms_norm, layer_norm, batch_norm (inference).

rms_norm(x, w)      = x * rsqrt(mean(x * x, axes, keep) + eps) * w
layer_norm(x, g, b) = (x - mean(x)) * rsqrt(mean((x - mean(x))^2) + eps) * g + b
instance_norm / group_norm: the same over the spatial axes (group_norm: of each group of channels,
reshaped to [N, G, C/G * H * W]), the scale and shift per channel; layer_norm over axes that
are not the last ones reshapes its scale and shift to broadcast.
batch_norm (inference, constant statistics) folds to x * scale + shift per channel, with
scale = gamma / sqrt(var + eps) and shift = beta - mean * scale computed at compile time.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.relax.dpl import is_const, is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import (
    FUSED_NONE,
    UNAVAILABLE,
    ConvertContext,
    composite_calls,
    int_tuple,
    normalize_axis,
)
from ..patterns import (
    FEATURE_LEVEL_2,
    FEATURE_LEVEL_3,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    check_tensors,
    single_op,
    static_dim,
    static_dims,
    tensor_info,
)

_DTYPES = {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3}


def _check_norm(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    return check_tensors(call, _DTYPES, options)


def _mean(ctx: ConvertContext, x: int, like: relax.Expr, axes: list[int], source: str) -> int:
    """MEAN over ``axes`` keeping dimensions; the result has ``like``'s shape with 1 on axes."""
    shape = ctx.shape(like)
    reduced = [1 if i in axes else d for i, d in enumerate(shape)]
    out = ctx.tensor(ctx.dtype(like), reduced)
    ctx.emit("MEAN", [x, ctx.int_vector(axes), ctx.int32(1)], [out], source)
    return out


def _normalize(
    ctx: ConvertContext, call: relax.Call, centered: bool, source: str
) -> tuple[int, list[int]]:
    """x (minus its mean when centered) times rsqrt(mean of squares + eps)."""
    x_expr = call.args[0]
    dtype = ctx.dtype(call)
    rank = ctx.rank(x_expr)
    axes = sorted(normalize_axis(a, rank) for a in int_tuple(call.attrs.axes))
    x = ctx.operand(x_expr)
    if centered:
        x = ctx.binary("SUB", x, _mean(ctx, x, x_expr, axes, source), call, source)
    squares = ctx.binary("MUL", x, x, call, source)
    variance = _mean(ctx, squares, x_expr, axes, source)
    shape = ctx.shape(x_expr)
    reduced = [1 if i in axes else d for i, d in enumerate(shape)]
    eps = ctx.constant(np.array([float(call.attrs.epsilon)], dtype=dtype))
    shifted = ctx.tensor(dtype, reduced)
    ctx.emit("ADD", [variance, eps, ctx.int32(0)], [shifted], source)
    inverse = ctx.tensor(dtype, reduced)
    ctx.emit("RSQRT", [shifted], [inverse], source)
    return ctx.binary("MUL", x, inverse, call, source), axes


def convert_rms_norm(ctx: ConvertContext, call: relax.Call) -> int:
    source = "relax.nn.rms_norm"
    normalized, _ = _normalize(ctx, call, centered=False, source=source)
    return ctx.binary("MUL", normalized, ctx.operand(call.args[1]), call, source)


# ---- instance_norm, group_norm; layer_norm over axes that are not the last ones ----------------


def _normalized(
    ctx: ConvertContext,
    x: int,
    shape: list,
    dtype: str,
    axes: list[int],
    epsilon: float,
    source: str,
) -> int:
    """(x - mean(x)) * rsqrt(mean((x - mean(x))^2) + eps) over ``axes`` of an operand of
    ``shape``."""

    def op(name: str, inputs: list[int], out_shape: list) -> int:
        out = ctx.tensor(dtype, out_shape)
        ctx.emit(name, inputs, [out], source)
        return out

    reduced = [1 if i in axes else d for i, d in enumerate(shape)]
    keep = ctx.int32(1)
    mean = op("MEAN", [x, ctx.int_vector(axes), keep], reduced)
    centered = op("SUB", [x, mean, ctx.int32(FUSED_NONE)], shape)
    squares = op("MUL", [centered, centered, ctx.int32(FUSED_NONE)], shape)
    variance = op("MEAN", [squares, ctx.int_vector(axes), ctx.int32(1)], reduced)
    eps = ctx.constant(np.array([epsilon], dtype=dtype))
    shifted = op("ADD", [variance, eps, ctx.int32(FUSED_NONE)], reduced)
    inverse = op("RSQRT", [shifted], reduced)
    return op("MUL", [centered, inverse, ctx.int32(FUSED_NONE)], shape)


def _along(
    ctx: ConvertContext, expr: relax.Expr, rank: int, axes: list[int], dtype: str, source: str
) -> int:
    """A scale or shift over ``axes`` (its shape) reshaped to broadcast against a tensor of
    ``rank`` (a RESHAPE unless it is a constant or the axes are the last ones)."""
    operand = ctx.operand(expr)
    if axes == list(range(rank - len(axes), rank)):
        return operand
    shape = ctx.shape(expr)
    target = [shape[axes.index(i)] if i in axes else 1 for i in range(axes[0], rank)]
    return ctx.reshape(operand, dtype, target, source)


def _affine(ctx: ConvertContext, out: int, call: relax.Call, axes: list[int], source: str) -> int:
    dtype = ctx.dtype(call)
    rank = ctx.rank(call)
    shape = ctx.shape(call)
    if bool(call.attrs.scale):
        gamma = _along(ctx, call.args[1], rank, axes, dtype, source)
        scaled = ctx.tensor(dtype, shape)
        ctx.emit("MUL", [out, gamma, ctx.int32(FUSED_NONE)], [scaled], source)
        out = scaled
    if bool(call.attrs.center):
        beta = _along(ctx, call.args[2], rank, axes, dtype, source)
        shifted = ctx.tensor(dtype, shape)
        ctx.emit("ADD", [out, beta, ctx.int32(FUSED_NONE)], [shifted], source)
        out = shifted
    return out


def _norm_axes(call: relax.Call) -> tuple[list[int], list[int]]:
    """The normalized axes and the axes of the scale and shift."""
    rank = call.ty.ndim
    axes = sorted(normalize_axis(a, rank) for a in int_tuple(call.attrs.axes))
    name = str(call.op.name)
    if name == "relax.nn.layer_norm":
        return axes, axes
    return axes, [normalize_axis(int(call.attrs.channel_axis), rank)]


def _check_norm_layouts(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    result = check_tensors(call, _DTYPES, options, inputs=[call.args[0]])
    if result is not None:
        return result
    name = str(call.op.name)
    axes, affine_axes = _norm_axes(call)
    if name == "relax.nn.group_norm":
        rank = call.ty.ndim
        channel = affine_axes[0]
        groups = int(call.attrs.num_groups)
        channels = static_dim(call.args[0], channel)
        if channel != 1 or axes != list(range(2, rank)):
            return RefusalKind.ATTRIBUTE, "group_norm is offloaded with channels first only"
        if channels is None or channels % groups or static_dim(call.args[0], 0) is None:
            return RefusalKind.DYNAMIC_SHAPE, "group_norm needs static batch and channels"
        if static_dims(call.args[0], range(2, rank)) is None:
            return RefusalKind.DYNAMIC_SHAPE, "group_norm needs static spatial sizes"
    return None


def _norm_layout_operations(call: relax.Call) -> tuple[str, ...]:
    operations = ["MEAN", "SUB", "MUL", "ADD", "RSQRT"]
    _, affine_axes = _norm_axes(call)
    rank = call.ty.ndim
    trailing = affine_axes == list(range(rank - len(affine_axes), rank))
    params = [
        a
        for a, used in zip(call.args[1:3], (call.attrs.scale, call.attrs.center), strict=True)
        if bool(used)
    ]
    if str(call.op.name) == "relax.nn.group_norm" or (
        not trailing and any(not isinstance(p, tvm.ir.Constant) for p in params)
    ):
        operations.append("RESHAPE")
    return tuple(operations)


def convert_norm_layouts(ctx: ConvertContext, call: relax.Call) -> int:
    name = str(call.op.name)
    x_expr = call.args[0]
    dtype = ctx.dtype(call)
    shape = ctx.shape(x_expr)
    axes, affine_axes = _norm_axes(call)
    epsilon = float(call.attrs.epsilon)
    x = ctx.operand(x_expr)
    if name == "relax.nn.group_norm":
        # [N, C, *S] -> [N, G, C/G * prod(S)], normalized over the last axis, and back.
        groups = int(call.attrs.num_groups)
        size = int(np.prod([int(d) for d in shape[1:]])) // groups
        grouped = ctx.reshape(x, dtype, [shape[0], groups, size], name)
        normalized = _normalized(ctx, grouped, [shape[0], groups, size], dtype, [2], epsilon, name)
        out = ctx.reshape(normalized, dtype, shape, name)
    else:
        out = _normalized(ctx, x, shape, dtype, axes, epsilon, name)
    return _affine(ctx, out, call, affine_axes, name)


# ---- batch_norm (inference) ----------------------------------------------------------------------


def _batch_norm_pattern():
    # The pattern is the call itself (FuseOpsByPattern does not take a TupleGetItem as the
    # root); the composite returns the (output, mean, var) tuple and only the output is real.
    data = wildcard()
    params = [is_const() for _ in range(4)]
    bn = is_op("relax.nn.batch_norm")(data, *params)
    return bn, {"root": bn, "data": data}


def _check_batch_norm(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    if bool(call.attrs.training):
        return RefusalKind.ATTRIBUTE, "training-mode batch_norm is not an inference operation"
    x = tensor_info(call.args[0])
    dtypes = {"float32": FEATURE_LEVEL_2, "float16": FEATURE_LEVEL_3}
    if x is None or str(x.dtype) not in dtypes:
        return RefusalKind.DTYPE, "batch_norm input must be float32 or float16"
    if x.ndim > 4 or x.ndim < 1:
        return RefusalKind.RANK, f"rank {x.ndim} is outside 1-4"
    return None


def convert_batch_norm(ctx: ConvertContext, composite: relax.Function) -> tuple[int, int, int]:
    call = composite_calls(composite)["relax.nn.batch_norm"]
    source = "relax.nn.batch_norm"
    dtype = ctx.dtype(call.args[0])
    gamma, beta, mean, var = (np.asarray(a.value.numpy(), dtype=np.float64) for a in call.args[1:5])
    attrs = call.attrs
    if not bool(attrs.scale):
        gamma = np.ones_like(gamma)
    if not bool(attrs.center):
        beta = np.zeros_like(beta)
    scale = gamma / np.sqrt(var + float(attrs.epsilon))
    shift = beta - mean * scale
    rank = ctx.rank(call.args[0])
    axis = normalize_axis(int(attrs.axis), rank)
    broadcast = [1] * (rank - axis)
    broadcast[0] = scale.size
    x = ctx.operand(call.args[0])
    like = call.args[0]
    scale_operand = ctx.constant(scale.astype(dtype).reshape(broadcast))
    shift_operand = ctx.constant(shift.astype(dtype).reshape(broadcast))
    out = ctx.binary(
        "ADD", ctx.binary("MUL", x, scale_operand, like, source), shift_operand, like, source
    )
    # Inference-mode batch_norm returns its moving statistics unchanged; they stay on the host.
    return out, UNAVAILABLE, UNAVAILABLE


# The constant-statistics batch_norm is listed (and so tried) before the run-time form of
# batch_norm_runtime.py, which matches the same call.
BATCH_NORM = Lowering(
    name="nnapi.batch_norm",
    relax_op="relax.nn.batch_norm",
    pattern=_batch_norm_pattern,
    check=_check_batch_norm,
    convert=convert_batch_norm,
    emits=("MUL", "ADD"),
)

LOWERINGS: list[Lowering] = [
    single_op(
        "relax.nn.rms_norm", 2, _check_norm, convert_rms_norm, ("MUL", "MEAN", "ADD", "RSQRT")
    ),
    single_op(
        "relax.nn.layer_norm",
        3,
        _check_norm_layouts,
        convert_norm_layouts,
        ("MEAN", "SUB", "MUL", "ADD", "RSQRT", "RESHAPE"),
        requires=_norm_layout_operations,
    ),
    *(
        single_op(
            op,
            3,
            _check_norm_layouts,
            convert_norm_layouts,
            ("MEAN", "SUB", "MUL", "ADD", "RSQRT", "RESHAPE"),
            requires=_norm_layout_operations,
        )
        for op in ("relax.nn.instance_norm", "relax.nn.group_norm")
    ),
]
