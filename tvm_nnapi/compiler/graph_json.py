# SPDX-License-Identifier: Apache-2.0
"""Build the NNAPI graph JSON (format "tvm-nnapi-graph", version 1; see docs/graph-json.md).

:class:`GraphBuilder` collects NNAPI operands and operations for one subgraph. Shapes may contain
symbolic dimensions: a TVM shape variable (``tirx.Var``) becomes a named symbol, and compound
expressions such as ``n * 32`` become expression strings that the runtime evaluates once the
symbols are bound from the input shapes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UnsupportedShapeError

GRAPH_FORMAT = "tvm-nnapi-graph"
GRAPH_VERSION = 1

#: NNAPI tensor operand type for each dtype the backend handles.
TENSOR_TYPES: dict[str, str] = {
    "float32": "TENSOR_FLOAT32",
    "float16": "TENSOR_FLOAT16",
    "int32": "TENSOR_INT32",
    "bool": "TENSOR_BOOL8",
    "uint8": "TENSOR_QUANT8_ASYMM",
    "int8": "TENSOR_QUANT8_ASYMM_SIGNED",
}

#: Alignment of constants inside the blob (bytes).
CONSTANT_ALIGNMENT = 64

Dim = int | str


class QuantDType(str):
    """A quantized dtype ("uint8" or "int8") carrying its per-tensor scale and zero point.

    It equals its dtype name as a string, so code that maps dtypes to NNAPI types handles it
    unchanged, and :meth:`GraphBuilder.add_tensor` gives the new operand its quantization. The
    quantized lowerings (lowerings/quantized.py) hand it to the float converters they reuse.
    """

    scale: float
    zero_point: int

    def __new__(cls, dtype: str, scale: float, zero_point: int) -> QuantDType:
        value = super().__new__(cls, dtype)
        value.scale = float(scale)
        value.zero_point = int(zero_point)
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        return (QuantDType, (str(self), self.scale, self.zero_point))


def dimension(expr: Any, symbols: list[str], var_map: dict[Any, Dim] | None = None) -> Dim:
    """Convert a TVM ``PrimExpr`` (or int) to a graph dimension, registering new symbols.

    ``var_map`` replaces shape variables by dimensions of the caller (a composite function's
    own variables stand for expressions of the subgraph's inputs).
    """
    from tvm import tirx

    if isinstance(expr, int):
        return expr
    if isinstance(expr, str):
        if expr.isidentifier() and expr not in symbols:
            symbols.append(expr)
        return expr
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tirx.Var) and var_map and expr in var_map:
        return var_map[expr]
    return _expression(expr, symbols, var_map or {})


def _expression(expr: Any, symbols: list[str], var_map: dict[Any, Dim]) -> str:
    from tvm import tirx

    if isinstance(expr, tirx.IntImm):
        return str(int(expr.value))
    if isinstance(expr, tirx.Var):
        if expr in var_map:
            return f"({var_map[expr]})"
        name = str(expr.name)
        if name not in symbols:
            symbols.append(name)
        return name
    binary = {
        tirx.Add: "+",
        tirx.Sub: "-",
        tirx.Mul: "*",
        tirx.FloorDiv: "//",
        tirx.FloorMod: "%",
    }
    for node_type, op in binary.items():
        if isinstance(expr, node_type):
            lhs = _expression(expr.a, symbols, var_map)
            rhs = _expression(expr.b, symbols, var_map)
            return f"({lhs} {op} {rhs})"
    if isinstance(expr, tirx.Min | tirx.Max):
        name = "min" if isinstance(expr, tirx.Min) else "max"
        lhs = _expression(expr.a, symbols, var_map)
        rhs = _expression(expr.b, symbols, var_map)
        return f"{name}({lhs}, {rhs})"
    if isinstance(expr, tirx.Cast):
        return _expression(expr.value, symbols, var_map)
    raise UnsupportedShapeError(f"shape expression {expr} ({type(expr).__name__}) is not supported")


@dataclass
class Operand:
    type: str
    shape: list[Dim] | None = None
    scale: float = 0.0
    zero_point: int = 0
    constant: tuple[int, int] | None = None  # (offset, nbytes) in the blob
    value: Any = None
    omitted: bool = False
    # (channel_dim, scales) of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand.
    channel_quant: tuple[int, list[float]] | None = None

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": self.type}
        if self.shape is not None:
            entry["shape"] = list(self.shape)
        if self.scale:
            entry["scale"] = self.scale
        if self.zero_point:
            entry["zero_point"] = self.zero_point
        if self.constant is not None:
            entry["constant"] = {"offset": self.constant[0], "nbytes": self.constant[1]}
        if self.value is not None:
            entry["value"] = self.value
        if self.omitted:
            entry["omitted"] = True
        if self.channel_quant is not None:
            dim, scales = self.channel_quant
            entry["channel_quant"] = {"channel_dim": dim, "scales": [float(v) for v in scales]}
        return entry


@dataclass
class Operation:
    op: str
    inputs: list[int]
    outputs: list[int]
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"op": self.op, "inputs": self.inputs, "outputs": self.outputs}
        if self.source:
            entry["source"] = self.source
        return entry


#: The value symbolic dimensions take when a lowered subgraph is built only to be asked about
#: (which operations a device runs) or costed: what a device takes depends on operations, operand
#: types and ranks, not on sizes; bind the symbols (``--shapes``) to cost the sizes that matter.
PROBE_DIMENSION = 8


@dataclass
class GraphBuilder:
    """Collects one NNAPI subgraph. Operand ids are indices into :attr:`operands`."""

    symbol: str
    operands: list[Operand] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    relax_fp32_to_fp16: bool = False
    # Positions of function parameters that are not tensors (e.g. a reshape's target shape):
    # the VM passes them, the runtime skips them.
    skip_arguments: list[int] = field(default_factory=list)
    # The value of each constant operand, as given (possibly a view: a Relax constant read in
    # place, or a transposed or reshaped view of one); laid out in the blob only when written.
    _constant_arrays: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    _blob_size: int = field(default=0, repr=False)

    def _add(self, operand: Operand) -> int:
        self.operands.append(operand)
        return len(self.operands) - 1

    def shape(self, dims: Sequence[Any], var_map: dict[Any, Dim] | None = None) -> list[Dim]:
        return [dimension(d, self.symbols, var_map) for d in dims]

    def add_tensor(self, dtype: str, shape: Sequence[Any], scale: float = 0.0, zp: int = 0) -> int:
        """A tensor operand (temporary or output) of a TVM dtype and shape (a
        :class:`QuantDType` gives its quantization unless ``scale`` is given)."""
        if isinstance(dtype, QuantDType) and not scale:
            scale, zp = dtype.scale, dtype.zero_point
        return self._add(Operand(tensor_type(dtype), self.shape(shape), scale, zp))

    def add_input(self, dtype: str, shape: Sequence[Any]) -> int:
        operand = self.add_tensor(dtype, shape)
        self.inputs.append(operand)
        return operand

    def add_constant(self, array: np.ndarray) -> int:
        """A tensor constant stored in the module's constant blob.

        The array is kept as given, not copied: :meth:`constant_blob` writes each constant into
        the blob once (a transposed view is transposed there)."""
        array = np.asarray(array)
        shape: list[Dim] = [int(d) for d in array.shape] or [1]
        operand = self._add(Operand(tensor_type(str(array.dtype)), shape))
        self._constant_arrays[operand] = array
        self._place_constant(operand)
        return operand

    def _place_constant(self, operand: int) -> None:
        """Place a constant after those before it in the blob, at an offset aligned to
        :data:`CONSTANT_ALIGNMENT` (constants lie in operand order)."""
        offset = self._blob_size + -self._blob_size % CONSTANT_ALIGNMENT
        nbytes = self._constant_arrays[operand].nbytes
        self.operands[operand].constant = (offset, nbytes)
        self._blob_size = offset + nbytes

    def constant_blob(self) -> np.ndarray:
        """The constant blob (uint8): every constant operand's value at its offset, zeros
        between. Built in one buffer, each constant copied once."""
        blob = np.zeros(self._blob_size, np.uint8)
        for operand, array in self._constant_arrays.items():
            offset, nbytes = self.operands[operand].constant or (0, 0)
            target = blob[offset : offset + nbytes].view(array.dtype).reshape(array.shape)
            np.copyto(target, array)
        return blob

    @property
    def constants(self) -> bytes:
        """The constant blob as bytes (a copy of :meth:`constant_blob`)."""
        return self.constant_blob().tobytes()

    def drop_unused_constants(self) -> None:
        """Remove the constant operands no operation reads and the graph does not return (a
        constant a converter replaced by its transposed or reshaped value), renumbering the
        operands: the blob then holds only what the model uses."""
        used = {i for op in self.operations for i in op.inputs}
        used.update(self.inputs, self.outputs)
        unused = {i for i in self._constant_arrays if i not in used}
        if not unused:
            return
        kept = [i for i in range(len(self.operands)) if i not in unused]
        index = {old: new for new, old in enumerate(kept)}
        self.operands = [self.operands[i] for i in kept]
        for operation in self.operations:
            operation.inputs = [index[i] for i in operation.inputs]
            operation.outputs = [index[i] for i in operation.outputs]
        self.inputs = [index[i] for i in self.inputs]
        self.outputs = [index[i] for i in self.outputs]
        self._constant_arrays = {
            index[i]: array for i, array in self._constant_arrays.items() if i in index
        }
        self._blob_size = 0
        for operand in self._constant_arrays:
            self._place_constant(operand)

    def quantize_operand(
        self,
        operand: int,
        scale: float,
        zero_point: int = 0,
        type: str | None = None,
        channel_quant: tuple[int, Sequence[float]] | None = None,
    ) -> None:
        """Set an operand's quantization (and, e.g. for a per-channel filter, its type)."""
        entry = self.operands[operand]
        if type is not None:
            entry.type = type
        entry.scale = float(scale)
        entry.zero_point = int(zero_point)
        if channel_quant is not None:
            entry.channel_quant = (int(channel_quant[0]), [float(v) for v in channel_quant[1]])

    def add_scalar(self, type: str, value: Any) -> int:
        """An inline scalar: INT32, FLOAT32, FLOAT16 or BOOL."""
        if type in ("FLOAT32", "FLOAT16"):
            value = float(value)
        elif type == "BOOL":
            value = bool(value)
        elif not isinstance(value, str):
            value = int(value)
        return self._add(Operand(type, value=value))

    def add_int_vector(self, values: Sequence[Any]) -> int:
        """An inline 1-D TENSOR_INT32 (entries may be symbolic expressions)."""
        entries = [dimension(v, self.symbols) for v in values]
        return self._add(Operand("TENSOR_INT32", [len(entries)], value=entries))

    def add_omitted(self, type: str) -> int:
        return self._add(Operand(type, [] if type.startswith("TENSOR") else None, omitted=True))

    def add_operation(
        self, op: str, inputs: Sequence[int], outputs: Sequence[int], source: str = ""
    ) -> None:
        self.operations.append(Operation(op, list(inputs), list(outputs), source))

    def dimension_value(self, dim: Dim, symbol_value: int) -> int:
        """A dimension's size with every symbol at ``symbol_value`` (expressions are this
        builder's own: symbols, integers, ``+ - * // %``, ``min``, ``max``)."""
        if isinstance(dim, int):
            return dim
        values = dict.fromkeys(self.symbols, symbol_value)
        namespace = {"__builtins__": {}, "min": min, "max": max}
        return int(eval(str(dim), namespace, values))

    def shape_values(self, operand: int, symbol_value: int) -> list[int]:
        """An operand's sizes with every symbol at ``symbol_value``."""
        return [self.dimension_value(d, symbol_value) for d in self.operands[operand].shape or []]

    def input_shapes(self, symbol_value: int) -> list[list[int]] | None:
        """The inputs' sizes with every symbol at ``symbol_value`` (None when a size would not
        be positive)."""
        shapes = [self.shape_values(index, symbol_value) for index in self.inputs]
        return None if any(size <= 0 for shape in shapes for size in shape) else shapes

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": GRAPH_FORMAT,
            "version": GRAPH_VERSION,
            "symbol": self.symbol,
            "symbols": list(self.symbols),
            "relax_fp32_to_fp16": self.relax_fp32_to_fp16,
            "operands": [o.to_json() for o in self.operands],
            "operations": [o.to_json() for o in self.operations],
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            **({"skip_arguments": list(self.skip_arguments)} if self.skip_arguments else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))


def tensor_type(dtype: str) -> str:
    try:
        return TENSOR_TYPES[dtype]
    except KeyError:
        raise ValueError(f"dtype {dtype} has no NNAPI tensor type") from None
