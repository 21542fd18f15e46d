# SPDX-License-Identifier: Apache-2.0
"""The work of a Relax program's operators, as the host cost model reads it.

:func:`operator_work` gives one operator's :class:`~tvm_nnapi.tools.host_model.HostWork`: its
FLOPs (:func:`tvm_nnapi.compiler.flops.call_flops`), the bytes of its tensor arguments and
result, its data class (float32, float16, quant8, int32) and its cost-model operation class
(:func:`operation_class`, docs/device-profiles.md). Views (:data:`VIEW_OPERATORS`) cost
nothing, nor does a transpose that its matmul reads in place, and a dequantization kernel fused
into its matmul moves only the stored weights (:class:`Fusion`).

Reading a partitioned program: the operator calls of an NNAPI subgraph (``_operator_calls``),
the name of an extern call (``_extern_name``) and the variables that hold weights
(``_weight_vars``). Everything here reads the program and changes nothing; the estimate
(:mod:`.estimate`) is its user.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import tvm
from tvm import relax

from ..compiler.flops import call_flops
from ..compiler.ir_utils import bindings, located_operator_calls
from .host_model import HostWork

__all__ = ["VIEW_OPERATORS", "Fusion", "operation_class", "operator_work", "tir_call_work"]

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


@dataclass(frozen=True)
class Fusion:
    """How TVM's fusion changes the memory traffic of one function's operators, as the host model
    counts it (``relax.build`` fuses these; the model costs what the fused kernel reads):

    - a ``permute_dims`` read only by matmuls is read in place by them: the transpose costs
      nothing and each matmul reads the untransposed tensor's bytes;
    - a ``relax.call_tir`` kernel of the program's own (e.g. the dequantization of
      group-quantized weights) read only by matmuls, directly or through such a transpose, is
      fused into them (TVM's FuseOps puts such an injective producer into its reader's kernel):
      each matmul reads the kernel's inputs (the 4-bit weights and their scales) in place of its
      result and does the kernel's operations too; the kernel itself costs nothing.

    ``free``: the calls that cost nothing of their own; ``operand_bytes``: the bytes a reader
    reads for such a call's result; ``operand_flops``: the operations a reader does for it."""

    free: frozenset[relax.Call] = frozenset()
    operand_bytes: Mapping[relax.Var, float] = field(default_factory=dict)
    operand_flops: Mapping[relax.Var, float] = field(default_factory=dict)

    @classmethod
    def of(cls, bindings: Sequence[relax.Binding]) -> Fusion:
        """The fusion of one function's (or dataflow block's) ``bindings``."""
        producers = {
            b.var: b.value
            for b in bindings
            if isinstance(b.value, relax.Call)
            and isinstance(b.value.op, tvm.ir.Op)
            and str(b.value.op.name) in ("relax.permute_dims", "relax.call_tir")
        }
        # Who reads each producer: an operator's name, or the transpose variable that reads it.
        readers: dict[relax.Var, set[str | relax.Var]] = {}

        def visit(node: object, reader: str | relax.Var) -> None:
            if isinstance(node, relax.Var) and node in producers:
                readers.setdefault(node, set()).add(reader)

        for b in bindings:
            value = b.value
            reader: str | relax.Var = (
                str(value.op.name)
                if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op)
                else "other"
            )
            if reader == "relax.permute_dims":
                reader = b.var
            relax.analysis.post_order_visit(value, lambda n, r=reader: visit(n, r))

        transposes = {
            var
            for var, call in producers.items()
            if str(call.op.name) == "relax.permute_dims" and readers.get(var) == {"relax.matmul"}
        }
        operand_bytes: dict[relax.Var, float] = {}
        operand_flops: dict[relax.Var, float] = {}
        free: set[relax.Call] = set()
        for var in transposes:
            free.add(producers[var])
            operand_bytes[var] = _tensor_bytes(producers[var].args[0].ty)
        for var, call in producers.items():
            users = readers.get(var)
            if str(call.op.name) != "relax.call_tir" or not users:
                continue
            if not all(u == "relax.matmul" or u in transposes for u in users):
                continue
            stored, flops = _tir_argument_bytes(call), _tir_flops(call)
            free.add(call)
            operand_bytes[var], operand_flops[var] = stored, flops
            for user in users:
                if isinstance(user, relax.Var):
                    operand_bytes[user], operand_flops[user] = stored, flops
        return cls(frozenset(free), operand_bytes, operand_flops)


def operator_work(call: relax.Call, fusion: Fusion | None = None) -> HostWork:
    """FLOPs (:func:`tvm_nnapi.compiler.flops.call_flops`) and bytes (every tensor argument and the
    result) of one Relax operator; views cost nothing, and ``fusion`` (:class:`Fusion`) the
    transposes a matmul reads in place and what a fused matmul reads."""
    name = str(call.op.name)
    first = call.args[0].ty if call.args else call.ty
    if name in VIEW_OPERATORS or (fusion is not None and call in fusion.free):
        return HostWork(0.0, 0.0, _data_class(first), "data_movement")
    operand_bytes = fusion.operand_bytes if fusion is not None else {}
    operand_flops = fusion.operand_flops if fusion is not None else {}
    bytes_ = _tensor_bytes(call.ty)
    flops = float(call_flops(call))
    for arg in call.args:
        if isinstance(arg, relax.Var) and arg in operand_bytes:
            bytes_ += operand_bytes[arg]
            flops += operand_flops.get(arg, 0.0)
        elif isinstance(arg, relax.Expr) and hasattr(arg, "ty"):
            bytes_ += _tensor_bytes(arg.ty)
    return HostWork(flops, bytes_, _data_class(first), operation_class(call))


def _tir_argument_bytes(call: relax.Call) -> float:
    args = call.args[1] if len(call.args) > 1 else None
    fields = list(args.fields) if isinstance(args, relax.Tuple) else []
    return sum(_tensor_bytes(arg.ty) for arg in fields)


def _tir_flops(call: relax.Call) -> float:
    out = call.ty
    if isinstance(out, relax.TensorType) and out.shape is not None:
        dims = [getattr(d, "value", None) for d in out.shape.values]
        if all(isinstance(d, int) for d in dims):
            return _TIR_OPS_PER_ELEMENT * float(math.prod(cast(list[int], dims)))
    return 0.0


def tir_call_work(call: relax.Call, fusion: Fusion | None = None) -> HostWork:
    """Work of a ``relax.call_tir`` to a TVM kernel of the program's own (e.g. the
    dequantization of group-quantized weights), costed as an elementwise kernel: every
    argument read once, the result written once, four operations (a shift, a mask, a
    subtraction and a multiplication) per result element; nothing when ``fusion`` fuses it
    into its readers (they carry its work)."""
    if fusion is not None and call in fusion.free:
        return HostWork(0.0, 0.0, _data_class(call.ty), "elementwise")
    bytes_ = _tensor_bytes(call.ty) + _tir_argument_bytes(call)
    return HostWork(_tir_flops(call), bytes_, _data_class(call.ty), "elementwise")


_TIR_OPS_PER_ELEMENT = 4.0


# ---- reading a partitioned program ---------------------------------------------------------------


def _operator_calls(func: relax.Function) -> list[tuple[relax.Call, Fusion]]:
    """Operator calls of a subgraph, once per execution (inlined composites once per call), each
    with the :class:`Fusion` of the function that holds it."""
    fusions: dict[relax.Function, Fusion] = {}
    found: list[tuple[relax.Call, Fusion]] = []
    for call, owner in located_operator_calls(func):
        if owner not in fusions:
            fusions[owner] = Fusion.of(bindings(owner))
        found.append((call, fusions[owner]))
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
