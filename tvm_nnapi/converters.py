"""Lowering of Relax operators (inside NNAPI composite functions) to NNAPI operations.

A converter receives the :class:`ConvertContext` of the subgraph being built and the Relax call,
and returns the operand id of the call's result. One converter per Relax operator (or family);
register with :func:`converter`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tvm
from tvm import relax, tirx

from .errors import CodegenError
from .graph_json import Dim, GraphBuilder

FUSED_NONE = 0


class ConvertContext:
    """State shared by converters while lowering one subgraph."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.builder = builder
        self.values: dict[relax.Var, int] = {}
        # Substitution of a composite function's shape variables by the caller's expressions.
        self.shape_vars: dict[tirx.Var, Dim] = {}

    @property
    def symbol(self) -> str:
        return self.builder.symbol

    def fail(self, call: relax.Call, reason: str) -> CodegenError:
        return CodegenError(self.symbol, describe(call), reason)

    def shape(self, expr: relax.Expr) -> list[Dim]:
        """The graph shape of a tensor expression (symbolic dimensions as expressions)."""
        expr_type = expr.ty
        if not isinstance(expr_type, relax.TensorType) or expr_type.shape is None:
            raise CodegenError(self.symbol, describe(expr), "needs a tensor with a known shape")
        return self.builder.shape(list(expr_type.shape.values), self.shape_vars)

    def dtype(self, expr: relax.Expr) -> str:
        return str(expr.ty.dtype)

    def operand(self, expr: relax.Expr) -> int:
        """Operand id of an argument: a known variable or a constant."""
        if isinstance(expr, relax.Var):
            if expr not in self.values:
                raise CodegenError(self.symbol, expr.name, "is used before it is defined")
            return self.values[expr]
        if isinstance(expr, tvm.ir.Constant):
            array = expr.value.numpy()
            if array.ndim == 0:
                array = array.reshape(1)
            return self.builder.add_constant(np.ascontiguousarray(array))
        raise CodegenError(self.symbol, describe(expr), "argument kind is not supported")

    def output(self, call: relax.Expr) -> int:
        """A new tensor operand shaped like the call's result."""
        return self.builder.add_tensor(self.dtype(call), self.shape(call))


def describe(expr: relax.Expr) -> str:
    if isinstance(expr, relax.Call) and hasattr(expr.op, "name"):
        return str(expr.op.name)
    if isinstance(expr, relax.Var):
        return expr.name
    return type(expr).__name__


Converter = Callable[[ConvertContext, relax.Call], int]
_CONVERTERS: dict[str, Converter] = {}


def converter(*relax_ops: str) -> Callable[[Converter], Converter]:
    def register(function: Converter) -> Converter:
        for op in relax_ops:
            _CONVERTERS[op] = function
        return function

    return register


def find_converter(relax_op: str) -> Converter | None:
    return _CONVERTERS.get(relax_op)


# ---- elementwise binary ------------------------------------------------------------------------

_BINARY = {
    "relax.add": "ADD",
    "relax.subtract": "SUB",
    "relax.multiply": "MUL",
    "relax.divide": "DIV",
}


@converter(*_BINARY)
def convert_binary(ctx: ConvertContext, call: relax.Call) -> int:
    lhs = ctx.operand(call.args[0])
    rhs = ctx.operand(call.args[1])
    activation = ctx.builder.add_scalar("INT32", FUSED_NONE)
    out = ctx.output(call)
    ctx.builder.add_operation(_BINARY[call.op.name], [lhs, rhs, activation], [out], call.op.name)
    return out
