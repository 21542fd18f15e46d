# SPDX-License-Identifier: Apache-2.0
"""Inference batch_norm whose statistics are tensors computed or passed at run time (e.g. a
network imported with its weights kept as parameters), not constants.

The constant case folds at compile time (:mod:`.norm`, tried first). Here the per-channel
scale and shift are computed by NNAPI on every execution:

  scale = gamma * rsqrt(var + eps)           ADD, RSQRT (feature level 3), MUL
  shift = beta - mean * scale                MUL, SUB
  out   = x * scale + shift                  RESHAPE of both to broadcast on the axis, MUL, ADD
"""

from __future__ import annotations

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import FUSED_NONE, UNAVAILABLE, ConvertContext, composite_calls, normalize_axis
from ..patterns import (
    FEATURE_LEVEL_3,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    static_dim,
    static_shape,
    tensor_info,
)

_DTYPES = {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3}


def _pattern():
    # The call itself is the root, as for the constant form (see norm.py).
    data = wildcard()
    stats = [wildcard() for _ in range(4)]
    bn = is_op("relax.nn.batch_norm")(data, *stats)
    return bn, {"root": bn, "data": data}


def _check(call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext) -> CheckResult:
    if bool(call.attrs.training):
        return RefusalKind.ATTRIBUTE, "training-mode batch_norm is not an inference operation"
    # The result is a tuple, so the operands are checked one by one (not with check_tensors).
    for index, arg in enumerate(call.args):
        info = tensor_info(arg)
        if info is None or str(info.dtype) not in _DTYPES:
            return RefusalKind.DTYPE, f"batch_norm input {index} must be float32 or float16"
        if _DTYPES[str(info.dtype)] > options.feature_level:
            return RefusalKind.FEATURE_LEVEL, "RSQRT of run-time statistics needs FL3"
    x = call.args[0].ty
    if not 1 <= x.ndim <= 4:
        return RefusalKind.RANK, f"rank {x.ndim} is outside 1-4"
    channels = static_dim(call.args[0], normalize_axis(int(call.attrs.axis), x.ndim))
    if channels is None:
        return RefusalKind.DYNAMIC_SHAPE, "batch_norm needs static channels"
    for arg in call.args[1:]:
        if static_shape(arg) != [channels]:
            return RefusalKind.ATTRIBUTE, f"statistics must be vectors of the {channels} channels"
    return None


def _requires(call: relax.Call) -> tuple[str, ...]:
    """The statistics are reshaped to [C, 1, ...] unless the channel axis is the last one."""
    rank = call.args[0].ty.ndim
    if normalize_axis(int(call.attrs.axis), rank) == rank - 1:
        return ("ADD", "RSQRT", "MUL", "SUB")
    return ("ADD", "RSQRT", "MUL", "SUB", "RESHAPE")


def convert_batch_norm_runtime(
    ctx: ConvertContext, composite: relax.Function
) -> tuple[int, int, int]:
    call = composite_calls(composite)["relax.nn.batch_norm"]
    source = "relax.nn.batch_norm"
    x_expr = call.args[0]
    dtype = ctx.dtype(x_expr)
    rank = ctx.rank(x_expr)
    axis = normalize_axis(int(call.attrs.axis), rank)
    channels = int(ctx.shape(x_expr)[axis])
    gamma, beta, mean, var = (ctx.operand(arg) for arg in call.args[1:5])

    def op(name: str, inputs: list[int]) -> int:
        out = ctx.tensor(dtype, [channels])
        ctx.emit(name, inputs, [out], source)
        return out

    eps = ctx.constant(np.array([float(call.attrs.epsilon)], dtype=dtype))
    scale = op("RSQRT", [op("ADD", [var, eps, ctx.int32(FUSED_NONE)])])
    if bool(call.attrs.scale):
        scale = op("MUL", [gamma, scale, ctx.int32(FUSED_NONE)])
    shift = op("MUL", [mean, scale, ctx.int32(FUSED_NONE)])
    if bool(call.attrs.center):
        shift = op("SUB", [beta, shift, ctx.int32(FUSED_NONE)])
    else:
        shift = op("SUB", [ctx.constant(np.zeros(channels, dtype)), shift, ctx.int32(FUSED_NONE)])
    broadcast = [channels] + [1] * (rank - axis - 1)
    if len(broadcast) > 1:  # [C] -> [C, 1, ...] to broadcast on the channel axis
        scale = ctx.reshape(scale, dtype, broadcast, source)
        shift = ctx.reshape(shift, dtype, broadcast, source)
    out = ctx.binary(
        "ADD", ctx.binary("MUL", ctx.operand(x_expr), scale, x_expr, source), shift, x_expr, source
    )
    # Inference-mode batch_norm returns its moving statistics unchanged; they stay on the host.
    return out, UNAVAILABLE, UNAVAILABLE


# Listed after the constant-statistics form (norm.BATCH_NORM), which matches the same call.
LOWERING = Lowering(
    name="nnapi.batch_norm_runtime",
    relax_op="relax.nn.batch_norm",
    pattern=_pattern,
    check=_check,
    convert=convert_batch_norm_runtime,
    emits=("ADD", "RSQRT", "MUL", "SUB", "RESHAPE"),
    requires=_requires,
)
