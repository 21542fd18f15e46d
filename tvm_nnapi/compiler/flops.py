# SPDX-License-Identifier: Apache-2.0
"""FLOP estimates of Relax operators (multiply-adds count as two), for offload reports.

Only the operators that dominate CNN and LLM cost are counted exactly (convolutions, matmul);
every other operator counts one FLOP per output element, data movement none.
"""

from __future__ import annotations

import math

import tvm
from tvm import relax

_MOVEMENT = {
    "relax.reshape",
    "relax.permute_dims",
    "relax.concat",
    "relax.split",
    "relax.strided_slice",
    "relax.take",
    "relax.expand_dims",
    "relax.squeeze",
    "relax.flatten",
    "relax.nn.pad",
    "relax.tile",
    "relax.broadcast_to",
}
_CONVOLUTIONS = {
    "relax.nn.conv1d",
    "relax.nn.conv2d",
    "relax.nn.conv1d_transpose",
    "relax.nn.conv2d_transpose",
}


def _static(values: object) -> list[int] | None:
    dims = []
    for value in values:  # type: ignore[attr-defined]
        if not hasattr(value, "value"):
            return None
        dims.append(int(value.value))
    return dims


def _shape(expr: relax.Expr) -> list[int] | None:
    ty = expr.ty
    if not isinstance(ty, relax.TensorType) or ty.shape is None:
        return None
    return _static(ty.shape.values)


#: Composite-name prefix of the quantized (int8 / uint8) groups (lowerings/quantized.py).
QUANTIZED_PREFIX = "nnapi.quantized_"


def quantized_flops(func: relax.Function) -> int:
    """Estimated FLOPs of the quantized groups of an NNAPI subgraph function (the operators
    inside composites named ``nnapi.quantized_*``; the few groups that run in float between
    DEQUANTIZE and QUANTIZE, e.g. a sigmoid quantized to other than NNAPI's fixed 1/256, count
    too: docs/quantization.md)."""
    from .ir_utils import located_operator_calls

    total = 0
    for call, holder in located_operator_calls(func):
        composite = str((holder.attrs or {}).get("Composite", ""))
        if composite.startswith(QUANTIZED_PREFIX):
            total += call_flops(call)
    return total


def call_flops(call: relax.Call, symbol_values: dict[str, int] | None = None) -> int:
    """Estimated FLOPs of one call (0 when shapes are unknown)."""
    if not isinstance(call.op, tvm.ir.Op):
        return 0
    name = str(call.op.name)
    if name in _MOVEMENT:
        return 0
    out = _shape(call)
    if name in _CONVOLUTIONS:
        weight = _shape(call.args[1])
        data = _shape(call.args[0])
        if out is None or weight is None or data is None:
            return 0
        layout = str(call.attrs.kernel_layout)
        # The kernel's spatial extent: every axis but O and I (H and W, or W of a 1-D one).
        kernel = math.prod(d for axis, d in zip(layout, weight, strict=True) if axis not in "OI")
        if name in ("relax.nn.conv1d", "relax.nn.conv2d"):
            per_output = weight[layout.index("I")] * kernel
            return 2 * math.prod(out) * per_output
        c_out = weight[layout.index("O")]
        return 2 * math.prod(data) * c_out * kernel
    if name == "relax.matmul":
        a = _shape(call.args[0])
        if out is None or a is None:
            return 0
        return 2 * math.prod(out) * a[-1]
    if out is None:
        ty = call.ty
        if isinstance(ty, relax.TupleType):  # e.g. batch_norm, split
            return sum(math.prod(_static(f.shape.values) or [0]) for f in ty.fields)
        return 0
    return math.prod(out)
