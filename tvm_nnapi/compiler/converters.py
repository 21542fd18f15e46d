# SPDX-License-Identifier: Apache-2.0
"""The lowering context shared by the converters in :mod:`tvm_nnapi.compiler.lowerings`.

A converter receives the :class:`ConvertContext` of the subgraph being built and the composite
function of one pattern match, emits NNAPI operations into the :class:`GraphBuilder` and returns
the operand id(s) of the result. A lowering of a single operator writes a :data:`CallConverter`
(given the one call) and :func:`single_call` turns it into a :data:`Converter`. Converters are
not registered anywhere: each belongs to its :class:`~tvm_nnapi.compiler.patterns.Lowering`
record (see :mod:`tvm_nnapi.compiler.lowerings`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import tvm
from tvm import relax, tirx

from ..errors import CodegenError, UnsupportedShapeError
from .graph_json import Dim, GraphBuilder
from .ir_utils import constant_array

# NNAPI FuseCode values.
FUSED_NONE = 0
FUSED_RELU = 1
FUSED_RELU1 = 2
FUSED_RELU6 = 3

# Scalar operand type holding a float attribute for a tensor of each dtype (quant8 tensors take
# FLOAT32 attributes, e.g. SOFTMAX's beta).
FLOAT_SCALAR = {"float32": "FLOAT32", "float16": "FLOAT16", "uint8": "FLOAT32", "int8": "FLOAT32"}

Value = int | tuple[int, ...]
# A tuple item a converter cannot provide (e.g. batch_norm's moving statistics).
UNAVAILABLE = -1


class ConvertContext:
    """State shared by converters while lowering one subgraph."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.builder = builder
        self.values: dict[relax.Var, Value] = {}
        # Substitution of a composite function's shape variables by the caller's dimensions.
        self.shape_vars: dict[tirx.Var, Dim] = {}
        # Static shapes and dtypes of every operand this context created (for converters that
        # need the shape of an operand rather than of a Relax expression).
        self._constants: dict[int, np.ndarray] = {}
        # Expressions computed in another dtype than their Relax type says: the quantized
        # lowerings compute a dequantize -> op -> quantize group on quant8 operands and give
        # the float op's arguments and result their quantized dtype (graph_json.QuantDType).
        self.dtype_overrides: dict[relax.Expr, str] = {}

    @property
    def symbol(self) -> str:
        return self.builder.symbol

    def fail(self, expr: relax.Expr, reason: str) -> CodegenError:
        return CodegenError(self.symbol, describe(expr), reason)

    # ---- types and shapes ------------------------------------------------------------------

    def tensor_type(self, expr: relax.Expr) -> relax.TensorType:
        expr_type = expr.ty
        if not isinstance(expr_type, relax.TensorType) or expr_type.shape is None:
            raise self.fail(expr, "needs a tensor with a known shape")
        return expr_type

    def shape(self, expr: relax.Expr) -> list[Dim]:
        """The graph shape of a tensor expression (symbolic dimensions as expressions)."""
        return self.builder.shape(list(self.tensor_type(expr).shape.values), self.shape_vars)

    def dtype(self, expr: relax.Expr) -> str:
        override = self.dtype_overrides.get(expr)
        if override is not None:
            return override
        return str(self.tensor_type(expr).dtype)

    def rank(self, expr: relax.Expr) -> int:
        return len(self.tensor_type(expr).shape.values)

    # ---- operands ----------------------------------------------------------------------------

    def operand(self, expr: relax.Expr) -> int:
        """Operand id of a tensor argument: a known variable or a constant."""
        if isinstance(expr, relax.Var):
            if expr not in self.values:
                raise CodegenError(self.symbol, expr.name, "is used before it is defined")
            value = self.values[expr]
            if isinstance(value, tuple):
                raise self.fail(expr, "a tuple is used where a tensor is expected")
            if value == UNAVAILABLE:
                raise self.fail(expr, "this value (e.g. batch_norm statistics) is not computed")
            return value
        if isinstance(expr, tvm.ir.Constant):
            return self.constant(constant_value(expr))
        raise self.fail(expr, f"argument kind {type(expr).__name__} is not supported")

    def operands(self, expr: relax.Expr) -> tuple[int, ...]:
        """Operand ids of a tuple argument (e.g. the inputs of concat)."""
        if isinstance(expr, relax.Tuple):
            return tuple(self.operand(field) for field in expr.fields)
        if isinstance(expr, relax.Var) and isinstance(self.values.get(expr), tuple):
            return self.values[expr]  # type: ignore[return-value]
        return (self.operand(expr),)

    def constant(self, array: np.ndarray) -> int:
        """A tensor constant (rank-0 values become 1-element tensors). ``array`` is kept as
        given, a view included: the blob gets its bytes when the graph is written."""
        array = np.asarray(array)
        if array.ndim == 0:
            array = array.reshape(1)
        operand = self.builder.add_constant(array)
        self._constants[operand] = array
        return operand

    def constant_array(self, operand: int) -> np.ndarray | None:
        """The value of an operand created by :meth:`constant`, else None."""
        return self._constants.get(operand)

    def output(self, expr: relax.Expr) -> int:
        """A new tensor operand shaped like the expression's result."""
        return self.builder.add_tensor(self.dtype(expr), self.shape(expr))

    def tensor(self, dtype: str, shape: Sequence[Any]) -> int:
        return self.builder.add_tensor(dtype, shape)

    def int32(self, value: Any) -> int:
        return self.builder.add_scalar("INT32", value)

    def bool(self, value: bool) -> int:
        return self.builder.add_scalar("BOOL", bool(value))

    def float_scalar(self, value: float, dtype: str) -> int:
        """A FLOAT32 or FLOAT16 scalar matching a tensor dtype."""
        return self.builder.add_scalar(FLOAT_SCALAR[dtype], float(value))

    def int_vector(self, values: Sequence[Any]) -> int:
        return self.builder.add_int_vector(list(values))

    def emit(self, op: str, inputs: Sequence[int], outputs: Sequence[int], source: str) -> None:
        self.builder.add_operation(op, inputs, outputs, source)

    def unary(self, op: str, x: int, like: relax.Expr, source: str) -> int:
        out = self.output(like)
        self.emit(op, [x], [out], source)
        return out

    def binary(self, op: str, a: int, b: int, like: relax.Expr, source: str) -> int:
        """ADD/SUB/MUL/DIV with no activation, result shaped like ``like``."""
        out = self.output(like)
        self.emit(op, [a, b, self.int32(FUSED_NONE)], [out], source)
        return out

    def transpose(
        self, operand: int, dtype: str, shape: Sequence[Dim], perm: Sequence[int], source: str
    ) -> int:
        """A transposed operand: done at compile time for constants, else a TRANSPOSE op."""
        array = self.constant_array(operand)
        if array is not None:
            return self.constant(np.transpose(array, perm))
        out = self.tensor(dtype, [shape[p] for p in perm])
        self.emit("TRANSPOSE", [operand, self.int_vector(list(perm))], [out], source)
        return out

    def reshape(self, operand: int, dtype: str, shape: Sequence[Dim], source: str) -> int:
        array = self.constant_array(operand)
        if array is not None and all(isinstance(d, int) for d in shape):
            return self.constant(array.reshape([int(d) for d in shape]))
        out = self.tensor(dtype, shape)
        self.emit("RESHAPE", [operand, self.int_vector(list(shape))], [out], source)
        return out


def constant_value(expr: relax.Expr) -> np.ndarray:
    """A constant's value, read in place (read-only): see :func:`ir_utils.constant_array`."""
    return constant_array(expr)


def describe(expr: relax.Expr) -> str:
    if isinstance(expr, relax.Call) and hasattr(expr.op, "name"):
        return str(expr.op.name)
    if isinstance(expr, relax.Var):
        return expr.name
    return type(expr).__name__


def int_attr(value: Any) -> int:
    return int(value.value) if hasattr(value, "value") else int(value)


def int_tuple(values: Any) -> list[int]:
    return [int_attr(v) for v in values]


def normalize_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


# Lowers the composite function of one match (its parameters are bound in ``ctx.values``).
Converter = Callable[[ConvertContext, relax.Function], Value]
# Lowers one operator call (the composite of a single-operator pattern).
CallConverter = Callable[[ConvertContext, relax.Call], Value]


@contextlib.contextmanager
def locating(symbol: str, operator: str) -> Iterator[None]:
    """Name the subgraph and the operator of a shape the graph JSON cannot express (the graph
    builder knows only the expression)."""
    try:
        yield
    except UnsupportedShapeError as error:
        if error.subgraph:
            raise
        raise UnsupportedShapeError(symbol, operator, error.reason) from None


def single_call(convert: CallConverter) -> Converter:
    """The :data:`Converter` of a single-operator pattern: ``convert`` applied to its one call
    (a shape error names that call's operator)."""

    def lower(ctx: ConvertContext, composite: relax.Function) -> Value:
        calls = operator_calls(composite)
        if len(calls) != 1:
            raise ctx.fail(composite.body.body, f"expected one operator call, found {len(calls)}")
        with locating(ctx.symbol, describe(calls[0])):
            return convert(ctx, calls[0])

    lower.__name__ = lower.__qualname__ = convert.__name__
    lower.__doc__ = convert.__doc__
    return lower


def operator_calls(func: relax.Function) -> list[relax.Call]:
    """The operator calls of a composite function, in order."""
    return [
        binding.value
        for block in func.body.blocks
        for binding in block.bindings
        if isinstance(binding.value, relax.Call) and isinstance(binding.value.op, tvm.ir.Op)
    ]


def composite_calls(func: relax.Function) -> dict[str, relax.Call]:
    """The operator calls inside a composite function by operator name (last one wins)."""
    return {str(call.op.name): call for call in operator_calls(func)}
