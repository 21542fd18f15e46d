# SPDX-License-Identifier: Apache-2.0
"""argmax / argmin -> ARGMAX / ARGMIN (feature level 3).

NNAPI's ARGMAX and ARGMIN return TENSOR_INT32, and NNAPI has no 64-bit integer tensor, while
Relax's argmax returns int64. The graph preparation (:mod:`..prepare`) therefore writes every
argmax as ``astype(astype(argmax(x), "int32"), "int64")``: the inner pair is this pattern
(ARGMAX), the widening to int64 stays on the host. The indices of a tensor NNAPI can hold fit
in int32. ``keepdims`` adds a RESHAPE; ``axis=None`` (over the flattened tensor) is refused, and
so is an argmax whose int64 result leaves (with ``PartitionOptions(prepare=False)``).
"""

from __future__ import annotations

from tvm import relax
from tvm.relax.dpl import is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import ConvertContext, composite_calls, normalize_axis
from ..patterns import (
    FEATURE_LEVEL_3,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    Refused,
    check_tensors,
    dtype_of,
)

_INPUTS = {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3, "int32": FEATURE_LEVEL_3}
_OPERATIONS = {"relax.argmax": "ARGMAX", "relax.argmin": "ARGMIN"}


def _pattern(op: str):
    def make():
        x = wildcard()
        search = is_op(op)(x)
        cast = is_op("relax.astype")(search)
        return cast, {"root": search, "x": x, "cast": cast}

    return make


def _check(call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext) -> CheckResult:
    cast = ctx.annotated_expr["cast"]
    result = check_tensors(call, {**_INPUTS, "int64": 0}, options)
    if result is not None:
        return result
    if dtype_of(cast) != "int32":
        return RefusalKind.DTYPE, "ARGMAX/ARGMIN return int32; a cast to another dtype follows"
    if call.attrs.axis is None:
        return RefusalKind.ATTRIBUTE, "an argmax over the flattened tensor (axis=None)"
    if cast.ty.ndim == 0:
        return RefusalKind.RANK, "the indices of a 1-D tensor are a scalar, which NNAPI lacks"
    return None


def _operations(call: relax.Call) -> tuple[str, ...]:
    """ARGMAX or ARGMIN, and a RESHAPE to keep the reduced axis."""
    operations = [_OPERATIONS[str(call.op.name)]]
    if bool(call.attrs.keepdims):
        operations.append("RESHAPE")
    return tuple(operations)


def convert_search(ctx: ConvertContext, composite: relax.Function) -> int:
    calls = composite_calls(composite)
    cast = calls["relax.astype"]
    name = next(n for n in _OPERATIONS if n in calls)
    call = calls[name]
    x_expr = call.args[0]
    rank = ctx.rank(x_expr)
    axis = normalize_axis(int(call.attrs.axis), rank)
    shape = ctx.shape(x_expr)
    reduced = [d for i, d in enumerate(shape) if i != axis]
    indices = ctx.tensor("int32", reduced)
    inputs = [ctx.operand(x_expr), ctx.int32(axis)]
    ctx.emit(_OPERATIONS[name], inputs, [indices], name)
    if bool(call.attrs.keepdims):
        indices = ctx.reshape(indices, "int32", ctx.shape(cast), name)
    return indices


LOWERINGS: list[Lowering] = [
    Lowering(
        name=f"nnapi.{op.removeprefix('relax.')}_int32",
        relax_op=op,
        pattern=_pattern(op),
        check=_check,
        convert=convert_search,
        emits=(nnapi, "RESHAPE"),
        requires=_operations,
    )
    for op, nnapi in _OPERATIONS.items()
]

REFUSED: list[Refused] = [
    Refused(
        op,
        1,
        RefusalKind.DTYPE,
        f"{nnapi} returns int32 and NNAPI has no int64 tensor for Relax's result (the graph "
        "preparation narrows an argmax over one axis; PartitionOptions(prepare=True))",
    )
    for op, nnapi in _OPERATIONS.items()
]
