# SPDX-License-Identifier: Apache-2.0
"""matmul: FULLY_CONNECTED when the right side is a 2-D weight, else BATCH_MATMUL.

``matmul(x, permute_dims(w))`` with a 2-D ``w`` of shape [N, K] is exactly NNAPI's
FULLY_CONNECTED(x, w, bias): the weight is used as given (NNAPI wants [num_units, input_size]).
A plain 2-D right side [K, N] is transposed once (at compile time for constants, else with a
TRANSPOSE operation). FULLY_CONNECTED flattens its input to [batch, K]; a RESHAPE restores the
leading dimensions (symbolic ones included). ``+ bias`` with a constant [N] vector is fused, and
so is a following relu / relu6 / relu1 (FULLY_CONNECTED's fused activation).
Batched right sides go to BATCH_MATMUL (feature level 6), with adj_y for a transposed operand;
BATCH_MATMUL does not broadcast, so operands whose static batch dimensions differ are broadcast
first (a constant at compile time, a variable by a RESHAPE to the common rank and a TILE).
:func:`_matmul_operations` says which of these operations one match emits.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.relax.dpl import is_const, is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import ConvertContext, composite_calls, constant_value, int_tuple
from ..patterns import (
    DECLINED,
    FEATURE_LEVEL_1,
    FEATURE_LEVEL_3,
    FEATURE_LEVEL_6,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    check_tensors,
    tensor_info,
)
from .elementwise import activation_call, activation_code, activation_pattern

_FC_DTYPES = {"float32": FEATURE_LEVEL_1, "float16": FEATURE_LEVEL_3}
_BMM_DTYPES = {"float32": FEATURE_LEVEL_6, "float16": FEATURE_LEVEL_6}


def _transposed_last_two(call: relax.Call) -> bool:
    axes = call.attrs.axes
    rank = call.args[0].ty.ndim
    if axes is None:
        return rank == 2
    expected = [*range(rank - 2), rank - 1, rank - 2]
    return int_tuple(axes) == expected


def _patterns(with_bias: bool, transposed: bool, with_activation: bool = False):
    def make():
        x = wildcard()
        weight = wildcard()
        rhs = is_op("relax.permute_dims")(weight) if transposed else weight
        matmul = is_op("relax.matmul")(x, rhs)
        annotations = {"root": matmul, "x": x, "weight": weight}
        if transposed:
            annotations["permute"] = rhs
        out = matmul
        if with_bias:
            bias = is_const()
            out = is_op("relax.add")(matmul, bias)
            annotations.update(bias=bias, add=out)
        if with_activation:
            out = activation_pattern(out)
            annotations["activation"] = out
        return out, annotations

    return make


def _check(call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext) -> CheckResult:
    x = call.args[0]
    permute = ctx.annotated_expr.get("permute")
    weight = ctx.annotated_expr["weight"]
    x_type, w_type = tensor_info(x), tensor_info(weight)
    if x_type is None or w_type is None:
        return RefusalKind.ATTRIBUTE, "operands must be tensors"
    if permute is not None and not _transposed_last_two(permute):
        # Not this form: the plain matmul takes it, after the permute_dims's own TRANSPOSE
        # (and reports its own refusal if it cannot).
        return DECLINED
    if w_type.ndim <= 2:
        # A 1-D operand is a matrix of one row (left) or one output unit (right).
        result = check_tensors(call, _FC_DTYPES, options, inputs=[x, weight])
        if result is None and not 1 <= x_type.ndim <= 4:
            result = (
                RefusalKind.RANK,
                f"FULLY_CONNECTED takes inputs of rank 1-4 here, got {x_type.ndim}",
            )
        if result is None and w_type.ndim == 1 and permute is not None:
            result = RefusalKind.ATTRIBUTE, "a permuted 1-D right side"
    else:
        result = check_tensors(call, _BMM_DTYPES, options, inputs=[x, weight])
        if result is None and x_type.ndim < 2:
            result = RefusalKind.ATTRIBUTE, "a 1-D left side of a batched matmul"
        if result is None and _batch_broadcast(x, weight) is None:
            result = (
                RefusalKind.DYNAMIC_SHAPE,
                "BATCH_MATMUL does not broadcast batch dimensions; broadcasting symbolic or "
                "differing symbolic batch dimensions needs their sizes at compile time",
            )
    if result is None and "bias" in ctx.annotated_expr:
        bias = tensor_info(ctx.annotated_expr["bias"])
        if w_type.ndim != 2 or bias is None or bias.ndim != 1:
            return RefusalKind.ATTRIBUTE, "only a 1-D bias can be fused"
    if result is None and "activation" in ctx.annotated_expr:
        if w_type.ndim > 2:
            return RefusalKind.ATTRIBUTE, "BATCH_MATMUL has no fused activation"
        if activation_code(ctx.annotated_expr["activation"]) is None:
            return RefusalKind.ATTRIBUTE, "only relu, relu6 and relu1 can be fused"
    return result


def _batch_dims(expr: relax.Expr) -> list:
    return list(expr.ty.shape.values[:-2])


def _batch_broadcast(x: relax.Expr, weight: relax.Expr) -> list[int] | None:
    """The common batch dimensions of a batched matmul's operands when BATCH_MATMUL can take
    them: [] when both have the same (possibly symbolic) batch dimensions and so need no
    broadcast, the broadcast static shape when they differ and are all static, else None."""
    x_batch, w_batch = _batch_dims(x), _batch_dims(weight)
    if len(x_batch) == len(w_batch) and str(x_batch) == str(w_batch):
        return []
    if not all(isinstance(d, tvm.tirx.IntImm) for d in (*x_batch, *w_batch)):
        return None
    rank = max(len(x_batch), len(w_batch))
    x_dims = [1] * (rank - len(x_batch)) + [int(d) for d in x_batch]
    w_dims = [1] * (rank - len(w_batch)) + [int(d) for d in w_batch]
    if any(a != b and 1 not in (a, b) for a, b in zip(x_dims, w_dims, strict=True)):
        return None
    return [max(a, b) for a, b in zip(x_dims, w_dims, strict=True)]


def _broadcast_operations(x: relax.Expr, rhs: relax.Expr) -> list[str]:
    """The RESHAPE (to the common rank) and TILE (of unit batch dimensions) that broadcast the
    variable operands of a batched matmul; constants are broadcast at compile time (a permuted
    right side is a variable of the composite, whatever it permutes)."""
    batch = _batch_broadcast(x, rhs)
    operations: list[str] = []
    for expr in (x, rhs):
        if not batch or isinstance(expr, tvm.ir.Constant):
            continue
        dims = [int(d) for d in _batch_dims(expr)]
        if len(dims) < len(batch):
            operations.append("RESHAPE")
        if [1] * (len(batch) - len(dims)) + dims != batch:
            operations.append("TILE")
    return operations


def _requires(transposed: bool):
    def operations(call: relax.Call) -> tuple[str, ...]:
        """What one matmul emits: BATCH_MATMUL, or FULLY_CONNECTED with a TRANSPOSE of a
        [K, N] right side that is not a constant and a RESHAPE back to more than 2 dimensions."""
        rhs = call.args[1]  # the weight, or (transposed) the permute_dims of the weight
        if rhs.ty.ndim > 2:
            return ("BATCH_MATMUL", *dict.fromkeys(_broadcast_operations(call.args[0], rhs)))
        if rhs.ty.ndim == 1:  # one output unit, whose axis the result drops
            return ("FULLY_CONNECTED", "RESHAPE")
        operations = ["FULLY_CONNECTED"]
        if not transposed and not isinstance(rhs, tvm.ir.Constant):
            operations.append("TRANSPOSE")
        if call.ty.ndim != 2:
            operations.append("RESHAPE")
        return tuple(operations)

    return operations


def convert_matmul(ctx: ConvertContext, composite: relax.Function) -> int:
    calls = composite_calls(composite)
    matmul = calls["relax.matmul"]
    permute = calls.get("relax.permute_dims")
    add = calls.get("relax.add")
    activation = activation_call(calls)
    source = "relax.matmul"
    x_expr, rhs_expr = matmul.args
    weight_expr = permute.args[0] if permute is not None else rhs_expr
    x = ctx.operand(x_expr)
    weight = ctx.operand(weight_expr)
    dtype = ctx.dtype(matmul)
    w_shape = ctx.shape(weight_expr)
    if len(w_shape) > 2:
        batch = _batch_broadcast(x_expr, weight_expr)
        if batch:
            x = _broadcast(ctx, x_expr, x_expr, x, batch, source)
            weight = _broadcast(ctx, weight_expr, rhs_expr, weight, batch, source)
        out = ctx.output(matmul)
        inputs = [x, weight, ctx.bool(False), ctx.bool(permute is not None)]
        ctx.emit("BATCH_MATMUL", inputs, [out], source)
        return out
    if len(w_shape) == 1:  # [K]: one output unit, NNAPI's [1, K]
        w_shape = [1, w_shape[0]]
        weight = ctx.reshape(weight, dtype, w_shape, source)
    elif permute is None:  # [K, N] -> NNAPI's [N, K]
        weight = ctx.transpose(weight, dtype, w_shape, [1, 0], source)
        w_shape = [w_shape[1], w_shape[0]]
    units = w_shape[0]
    if add is not None:
        # The add pattern matches commutatively: the bias is its constant operand, either side.
        bias = ctx.operand(next(arg for arg in add.args if isinstance(arg, tvm.ir.Constant)))
    else:
        if not isinstance(units, int):
            raise ctx.fail(matmul, "a symbolic number of output units is not supported")
        bias = ctx.constant(np.zeros(units, dtype=dtype))
    result = next(call for call in (activation, add, matmul) if call is not None)
    out_shape = ctx.shape(result)
    x_shape = ctx.shape(x_expr)
    if len(x_shape) == 1:  # [K]: one row
        x_shape = [1, x_shape[0]]
        x = ctx.reshape(x, dtype, x_shape, source)
    rows = x_shape[:-1]
    flat_rows = rows[0] if len(rows) == 1 else _product(rows)
    flat = ctx.tensor(dtype, [flat_rows, units])
    fuse = ctx.int32(activation_code(activation))
    ctx.emit("FULLY_CONNECTED", [x, weight, bias, fuse], [flat], source)
    if len(out_shape) == 2 and len(ctx.shape(matmul.args[1])) == 2 and len(ctx.shape(x_expr)) != 1:
        return flat
    return ctx.reshape(flat, dtype, out_shape, source)


def _broadcast(
    ctx: ConvertContext,
    expr: relax.Expr,
    matmul_arg: relax.Expr,
    operand: int,
    batch: list[int],
    source: str,
) -> int:
    """``operand`` (of ``expr``) with its batch dimensions broadcast to ``batch``: at compile
    time when the matmul's argument is a constant, else a RESHAPE to the common rank (leading
    unit dimensions) and a TILE (as :func:`_broadcast_operations` declares)."""
    shape = [int(d) for d in ctx.shape(expr)]
    dims = [1] * (len(batch) - len(shape[:-2])) + shape[:-2]
    target = [*batch, *shape[-2:]]
    if dims == batch and len(shape) == len(target):
        return operand
    dtype = ctx.dtype(expr)
    if isinstance(matmul_arg, tvm.ir.Constant):
        array = np.broadcast_to(constant_value(expr).astype(dtype), target)
        return ctx.constant(np.ascontiguousarray(array))
    padded = [*dims, *shape[-2:]]
    if len(padded) != len(shape):
        operand = ctx.reshape(operand, dtype, padded, source)
    if dims == batch:
        return operand
    multiples = [want // have for want, have in zip(target, padded, strict=True)]
    tiled = ctx.tensor(dtype, target)
    ctx.emit("TILE", [operand, ctx.constant(np.array(multiples, np.int32))], [tiled], source)
    return tiled


def _product(dims: list) -> int | str:
    if all(isinstance(d, int) for d in dims):
        return int(np.prod(dims))
    return " * ".join(f"({d})" for d in dims)


def _lowering(with_bias: bool, transposed: bool, with_activation: bool = False) -> Lowering:
    suffix = ("_bias" if with_bias else "") + ("_t" if transposed else "")
    return Lowering(
        name="nnapi.matmul" + suffix + ("_act" if with_activation else ""),
        relax_op="relax.matmul",
        pattern=_patterns(with_bias, transposed, with_activation),
        check=_check,
        convert=convert_matmul,
        emits=(
            "FULLY_CONNECTED",
            # A fused bias or activation needs a 2-D weight; a transposed one is used as it is.
            *(() if with_bias or with_activation else ("BATCH_MATMUL",)),
            *(() if transposed else ("TRANSPOSE",)),
            "RESHAPE",
            # A batched matmul broadcasts a variable operand's batch dimensions.
            *(() if with_bias or with_activation else ("TILE",)),
        ),
        requires=_requires(transposed),
    )


# With an activation (relu, relu6, relu1: FULLY_CONNECTED's fused activation), then without;
# with the bias and the transposition, then with one of them: each is tried before the smaller
# forms it contains (see the order in lowerings/__init__.py).
FUSED: list[Lowering] = [
    *(
        _lowering(with_bias, transposed, with_activation=True)
        for with_bias, transposed in [(True, True), (True, False), (False, True), (False, False)]
    ),
    *(
        _lowering(with_bias, transposed)
        for with_bias, transposed in [(True, True), (True, False), (False, True)]
    ),
]
SINGLE: list[Lowering] = [_lowering(False, False)]
