# SPDX-License-Identifier: Apache-2.0
"""The work of a Relax program's operators, as the host cost model reads it.

:func:`operator_work` gives one operator's :class:`~tvm_nnapi.tools.host_model.HostWork`: its
FLOPs (:func:`tvm_nnapi.compiler.flops.call_flops`), the bytes of its tensor arguments and
result, its data class (float32, float16, quant8, int32) and its cost-model operation class
(:func:`operation_class`, docs/device-profiles.md). Views (:data:`VIEW_OPERATORS`) cost
nothing, nor does a transpose that its matmul reads in place (``_absorbed_transposes``).

Reading a partitioned program: the operator calls of an NNAPI subgraph (``_operator_calls``),
the name of an extern call (``_extern_name``) and the variables that hold weights
(``_weight_vars``). Everything here reads the program and changes nothing; the estimate
(:mod:`.estimate`) is its user.
"""

from __future__ import annotations

import math
from collections.abc import Sequence, Set
from typing import cast

import tvm
from tvm import relax

from ..compiler.flops import call_flops
from ..compiler.ir_utils import bindings, located_operator_calls
from .host_model import HostWork

__all__ = ["VIEW_OPERATORS", "operation_class", "operator_work"]

#: Relax operators TVM lowers to views of their input (no kernel, no memory traffic).
VIEW_OPERATORS = frozenset({"relax.reshape", "relax.expand_dims", "relax.squeeze", "relax.flatten"})
_DATA_MOVEMENT = frozenset(
    {
        "relax.permute_dims",
        "relax.concat",
        "relax.split",
        "relax.strided_slice",
        "relax.take",
        "relax.nn.pad",
        "relax.broadcast_to",
        "relax.astype",
    }
)
_NORMALIZATION = frozenset({"relax.nn.rms_norm", "relax.nn.layer_norm", "relax.nn.batch_norm"})
_REDUCTION = frozenset({"relax.sum", "relax.mean", "relax.max", "relax.min", "relax.argmax"})
_SOFTMAX = frozenset({"relax.nn.softmax", "relax.nn.log_softmax"})
_CONVOLUTION = frozenset({"relax.nn.conv2d", "relax.nn.conv2d_transpose", "relax.nn.conv1d"})
_POOLING = frozenset({"relax.nn.max_pool2d", "relax.nn.avg_pool2d", "relax.nn.adaptive_avg_pool2d"})


def _tensor_bytes(ty: object) -> float:
    if isinstance(ty, relax.TupleType):
        return sum(_tensor_bytes(f) for f in ty.fields)
    if not isinstance(ty, relax.TensorType) or ty.shape is None:
        return 0.0
    dims = [getattr(v, "value", None) for v in ty.shape.values]
    if any(d is None for d in dims):
        return 0.0
    return float(math.prod(cast(list[int], dims))) * tvm.runtime.DataType(str(ty.dtype)).bits / 8


def _data_class(ty: object) -> str:
    if isinstance(ty, relax.TupleType):
        return _data_class(ty.fields[0]) if ty.fields else "float32"
    dtype = str(getattr(ty, "dtype", "float32"))
    if dtype == "float16":
        return "float16"
    if dtype in ("int8", "uint8"):
        return "quant8"
    if dtype.startswith("int"):
        return "int32"
    return "float32"


def operation_class(call: relax.Call) -> str:
    """The cost-model operation class of a Relax operator (docs/device-profiles.md)."""
    name = str(call.op.name)
    if name == "relax.matmul":
        rhs = call.args[1].ty
        rank = len(rhs.shape.values) if isinstance(rhs, relax.TensorType) and rhs.shape else 0
        return "fully_connected" if rank == 2 else "matmul"
    if name in _CONVOLUTION:
        return "convolution"
    if name in _NORMALIZATION:
        return "normalization"
    if name in _REDUCTION:
        return "reduction"
    if name in _SOFTMAX:
        return "softmax"
    if name in _POOLING:
        return "pooling"
    if name in _DATA_MOVEMENT or name in VIEW_OPERATORS:
        return "data_movement"
    return "elementwise"


def _absorbed_transposes(bindings: Sequence[relax.Binding]) -> set[relax.Var]:
    """``permute_dims`` results read only by matmuls: TVM's matmul reads the untransposed
    operand (as NNAPI's FULLY_CONNECTED reads ``[units, input]`` weights), so no copy is
    costed."""
    transposes = {
        b.var
        for b in bindings
        if isinstance(b.value, relax.Call)
        and isinstance(b.value.op, tvm.ir.Op)
        and str(b.value.op.name) == "relax.permute_dims"
    }
    uses: dict[relax.Var, set[str]] = {}

    def visit(node: object, user: str) -> None:
        if isinstance(node, relax.Var) and node in transposes:
            uses.setdefault(node, set()).add(user)

    for b in bindings:
        value = b.value
        user = (
            str(value.op.name)
            if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op)
            else "other"
        )
        relax.analysis.post_order_visit(value, lambda n, u=user: visit(n, u))
    return {v for v in transposes if uses.get(v) == {"relax.matmul"}}


def operator_work(call: relax.Call, absorbed: Set[relax.Var] = frozenset()) -> HostWork:
    """FLOPs (:func:`tvm_nnapi.compiler.flops.call_flops`) and bytes (every tensor argument and the
    result) of one Relax operator; views cost nothing, a transpose absorbed by its matmul
    nothing either."""
    name = str(call.op.name)
    if name in VIEW_OPERATORS:
        return HostWork(0.0, 0.0, _data_class(call.ty), "data_movement")
    bytes_ = _tensor_bytes(call.ty)
    for arg in call.args:
        if isinstance(arg, relax.Var) and arg in absorbed:
            continue
        if isinstance(arg, relax.Expr) and hasattr(arg, "ty"):
            bytes_ += _tensor_bytes(arg.ty)
    first = call.args[0].ty if call.args else call.ty
    return HostWork(float(call_flops(call)), bytes_, _data_class(first), operation_class(call))


def tir_call_work(call: relax.Call) -> HostWork:
    """Work of a ``relax.call_tir`` to a TVM kernel of the program's own (e.g. the
    dequantization of group-quantized weights), costed as an elementwise kernel: every
    argument read once, the result written once, four operations (a shift, a mask, a
    subtraction and a multiplication) operations per result element."""
    args = call.args[1] if len(call.args) > 1 else None
    fields = list(args.fields) if isinstance(args, relax.Tuple) else []
    bytes_ = _tensor_bytes(call.ty) + sum(_tensor_bytes(arg.ty) for arg in fields)
    out = call.ty
    elements = 0.0
    if isinstance(out, relax.TensorType) and out.shape is not None:
        dims = [getattr(d, "value", None) for d in out.shape.values]
        if all(isinstance(d, int) for d in dims):
            elements = float(math.prod(cast(list[int], dims)))
    return HostWork(_TIR_OPS_PER_ELEMENT * elements, bytes_, _data_class(out), "elementwise")


_TIR_OPS_PER_ELEMENT = 4.0


# ---- reading a partitioned program ---------------------------------------------------------------


def _operator_calls(func: relax.Function) -> list[tuple[relax.Call, set[relax.Var]]]:
    """Operator calls of a subgraph, once per execution (inlined composites once per call), each
    with the transposes its function absorbs."""
    absorbed: dict[relax.Function, set[relax.Var]] = {}
    found: list[tuple[relax.Call, set[relax.Var]]] = []
    for call, owner in located_operator_calls(func):
        if owner not in absorbed:
            absorbed[owner] = _absorbed_transposes(bindings(owner))
        found.append((call, absorbed[owner]))
    return found


_EXTERN_CALLS = ("relax.call_dps_packed", "relax.call_pure_packed", "relax.call_packed")


def _extern_name(call: relax.Call) -> str | None:
    if isinstance(call.op, tvm.ir.Op) and str(call.op.name) in _EXTERN_CALLS and call.args:
        callee = call.args[0]
        if isinstance(callee, relax.ExternFunc):
            return str(callee.global_symbol)
    if isinstance(call.op, relax.ExternFunc):
        return str(call.op.global_symbol)
    return None


def _weight_vars(func: relax.Function, bindings: Sequence[relax.Binding]) -> set[relax.Var]:
    """Variables holding weights: parameters after ``num_input`` and items of them."""
    num_input = int((func.attrs or {}).get("num_input", len(func.params)))
    weights = set(func.params[num_input:])
    for b in bindings:
        value = b.value
        if isinstance(value, relax.TupleGetItem) and value.tuple_value in weights:
            weights.add(b.var)
    return weights
