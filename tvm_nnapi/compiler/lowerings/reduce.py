# SPDX-License-Identifier: Apache-2.0
"""Reductions (mean, sum, max, min, prod) and softmax / log_softmax.

mean -> MEAN (keep_dims as INT32, feature level 2); sum/max/min/prod -> REDUCE_* (keep_dims as
BOOL, feature level 3). ``axis=None`` lists every axis explicitly. softmax -> SOFTMAX with
beta 1 (a FLOAT16 scalar for float16 inputs) and the axis (other axes than the last need FL3).
"""

from __future__ import annotations

from tvm import relax
from tvm.relax.transform import PatternCheckContext

from ..converters import ConvertContext, int_tuple, normalize_axis
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
    tensor_info,
)

_REDUCTIONS = {
    "relax.mean": ("MEAN", {"float32": FEATURE_LEVEL_2, "float16": FEATURE_LEVEL_3}),
    "relax.sum": ("REDUCE_SUM", {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3}),
    "relax.max": ("REDUCE_MAX", {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3}),
    "relax.min": ("REDUCE_MIN", {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3}),
    "relax.prod": ("REDUCE_PROD", {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3}),
}


def _check_reduction(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    dtypes = _REDUCTIONS[str(call.op.name)][1]
    result = check_tensors(call, dtypes, options, allow_rank0_constants=False)
    if result is not None and (info := tensor_info(call)) is not None and info.ndim == 0:
        return RefusalKind.RANK, "a full reduction to a scalar has no NNAPI output shape"
    return result


def reduce_axes(ctx: ConvertContext, call: relax.Call) -> list[int]:
    rank = ctx.rank(call.args[0])
    axis = call.attrs.axis
    if axis is None:
        return list(range(rank))
    return sorted(normalize_axis(a, rank) for a in int_tuple(axis))


def convert_reduction(ctx: ConvertContext, call: relax.Call) -> int:
    name = str(call.op.name)
    op = _REDUCTIONS[name][0]
    keep = bool(call.attrs.keepdims)
    keep_operand = ctx.int32(1 if keep else 0) if op == "MEAN" else ctx.bool(keep)
    out = ctx.output(call)
    ctx.emit(
        op,
        [ctx.operand(call.args[0]), ctx.int_vector(reduce_axes(ctx, call)), keep_operand],
        [out],
        name,
    )
    return out


# ---- softmax -------------------------------------------------------------------------------------

_SOFTMAX = {"relax.nn.softmax": "SOFTMAX", "relax.nn.log_softmax": "LOG_SOFTMAX"}


def _check_softmax(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    first = FEATURE_LEVEL_1 if str(call.op.name) == "relax.nn.softmax" else FEATURE_LEVEL_3
    result = check_tensors(call, {"float32": first, "float16": FEATURE_LEVEL_3}, options)
    if result is not None:
        return result
    rank = call.ty.ndim
    axis = normalize_axis(int(call.attrs.axis), rank)
    if (axis != rank - 1 or rank not in (2, 4)) and options.feature_level < FEATURE_LEVEL_3:
        return RefusalKind.FEATURE_LEVEL, "softmax on other axes or ranks needs FL3"
    return None


def convert_softmax(ctx: ConvertContext, call: relax.Call) -> int:
    name = str(call.op.name)
    dtype = ctx.dtype(call)
    rank = ctx.rank(call)
    axis = normalize_axis(int(call.attrs.axis), rank)
    inputs = [ctx.operand(call.args[0]), ctx.float_scalar(1.0, dtype)]
    if axis != rank - 1 or rank not in (2, 4) or name != "relax.nn.softmax":
        inputs.append(ctx.int32(axis))
    out = ctx.output(call)
    ctx.emit(_SOFTMAX[name], inputs, [out], name)
    return out


LOWERINGS: list[Lowering] = [
    *(
        single_op(op, 1, _check_reduction, convert_reduction, (nnapi,))
        for op, (nnapi, _) in _REDUCTIONS.items()
    ),
    *(
        single_op(op, 1, _check_softmax, convert_softmax, (nnapi,))
        for op, nnapi in _SOFTMAX.items()
    ),
]
