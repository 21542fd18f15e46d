# SPDX-License-Identifier: Apache-2.0
"""Normalisations decomposed into NNAPI operations: rms_norm, layer_norm, batch_norm (inference).

rms_norm(x, w)      = x * rsqrt(mean(x * x, axes, keep) + eps) * w
layer_norm(x, g, b) = (x - mean(x)) * rsqrt(mean((x - mean(x))^2) + eps) * g + b
batch_norm (inference, constant statistics) folds to x * scale + shift per channel, with
scale = gamma / sqrt(var + eps) and shift = beta - mean * scale computed at compile time.
"""

from __future__ import annotations

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_const, is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import UNAVAILABLE, ConvertContext, composite_calls, int_tuple, normalize_axis
from ..patterns import (
    FEATURE_LEVEL_2,
    FEATURE_LEVEL_3,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    check_tensors,
    single_op,
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


def convert_layer_norm(ctx: ConvertContext, call: relax.Call) -> int:
    source = "relax.nn.layer_norm"
    out, _ = _normalize(ctx, call, centered=True, source=source)
    if bool(call.attrs.scale):
        out = ctx.binary("MUL", out, ctx.operand(call.args[1]), call, source)
    if bool(call.attrs.center):
        out = ctx.binary("ADD", out, ctx.operand(call.args[2]), call, source)
    return out


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
        _check_norm,
        convert_layer_norm,
        ("MEAN", "SUB", "MUL", "ADD", "RSQRT"),
    ),
]
