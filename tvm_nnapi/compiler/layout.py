# SPDX-License-Identifier: Apache-2.0
"""NCHW convolutions as NHWC, chosen once per model (:func:`nhwc_convolutions`).

PyTorch and ONNX graphs are NCHW. NNAPI accepts NCHW convolutions (the layout operand, FL3), but
an implementation computes them in NHWC (the mock, and Android's CPU path, transpose the input
and the output of every such operation), so a network of 50-80 convolutions paid two full
transposes of every feature map per convolution. This pass makes the layout a choice of the
graph: a float NCHW ``conv2d`` with a constant filter becomes the same convolution with NHWC data
(``data_layout="NHWC"``, the filter's layout unchanged; the lowering rearranges the constant),
and the NHWC result is kept through the operators that do not care about the layout, so that
one ``permute_dims`` remains where the graph enters the chain (the model input) and one where
an NCHW tensor is needed again (an operator this pass does not know, or an output):

* elementwise unary operators (:data:`UNARY`: clip, relu, sigmoid, ...): the same operator;
* elementwise binary operators (:data:`BINARY`: add, multiply, ...) whose other operand is an
  NHWC result too, or a constant (transposed here, after numpy's broadcasting rules put it at
  rank 4), or a tensor of one element;
* ``mean`` over the spatial axes (2, 3): over axes (1, 2) (global average pooling; with
  ``keepdims=False`` the result, shape [N, C], is the same tensor in both layouts);
* ``max_pool2d`` / ``avg_pool2d`` / ``adaptive_avg_pool2d`` in NCHW: the same pooling in NHWC;
* ``reshape`` / ``flatten`` of a tensor [N, C, 1, 1] or [N, 1, H, W] (a pooled feature vector
  before the classifier): the same elements in the same order in both layouts.

Every result is the same value as before (the operators are the same, only the order of the
axes in memory changes), so the host reference of a test is the original graph as ever. Runs in
:func:`tvm_nnapi.compiler.prepare.prepare` (``PartitionOptions(nhwc=False)`` keeps NCHW).
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import IRModule, relax
from tvm.relax.expr_functor import PyExprMutator, mutator

from .patterns import static_shape

__all__ = ["BINARY", "UNARY", "nhwc_convolutions"]

TO_NHWC = [0, 2, 3, 1]
TO_NCHW = [0, 3, 1, 2]

# Elementwise operators of one tensor (further arguments, clip's bounds, are not tensors).
UNARY = frozenset(
    f"relax.{name}"
    for name in (
        "clip",
        "nn.relu",
        "nn.leakyrelu",
        "nn.silu",
        "nn.gelu",
        "nn.gelu_tanh",
        "sigmoid",
        "tanh",
        "exp",
        "negative",
        "abs",
        "sqrt",
        "rsqrt",
        "square",
        "floor",
        "ceil",
        "round",
    )
)
# Elementwise operators of two tensors, with numpy's broadcasting.
BINARY = frozenset(
    f"relax.{name}"
    for name in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power")
)
_POOLS = ("relax.nn.max_pool2d", "relax.nn.avg_pool2d", "relax.nn.adaptive_avg_pool2d")

#: A binding rewritten to NHWC is named after the original binding with this suffix.
NHWC_SUFFIX = "_nhwc"


def _float(expr: relax.Expr) -> bool:
    ty = expr.ty
    return isinstance(ty, relax.TensorType) and str(ty.dtype) in ("float32", "float16")


def _op_name(value: relax.Expr) -> str:
    if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op):
        return str(value.op.name)
    return ""


def _ints(values: object) -> list[int]:
    return [int(getattr(v, "value", v)) for v in values]  # type: ignore[attr-defined]


def _convertible_conv(call: relax.Call) -> bool:
    attrs = call.attrs
    return (
        str(attrs.data_layout) == "NCHW"
        and str(attrs.out_layout or attrs.data_layout) == "NCHW"
        and str(attrs.kernel_layout) == "OIHW"
        and isinstance(call.args[1], tvm.ir.Constant)
        and _float(call.args[0])
        and _float(call.args[1])
        and static_shape(call.args[0]) is not None
        and len(static_shape(call.args[0]) or []) == 4
    )


@mutator
class _ToNhwc(PyExprMutator):
    def __init__(self, mod: IRModule | None = None) -> None:
        super().__init__(mod)
        # Original variable -> the new variable holding its value in NHWC (instead of NCHW).
        self.nhwc: dict[relax.Var, relax.Var] = {}
        # Original variable with an NHWC value -> its NCHW value, emitted when first needed.
        self.nchw: dict[relax.Var, relax.Var] = {}
        # NCHW tensor of the new graph -> its transpose to NHWC (a convolution's input).
        self.transposed: dict[relax.Expr, relax.Var] = {}
        self.in_dataflow = False

    def _as_nchw(self, var: relax.Var) -> relax.Var:
        if var not in self.nchw:
            self.nchw[var] = self.builder_.emit(
                relax.op.permute_dims(self.nhwc[var], TO_NCHW), name_hint=var.name
            )
        return self.nchw[var]

    def visit_dataflow_var_(self, var: relax.DataflowVar) -> relax.Expr:
        if var in self.nhwc:
            return self._as_nchw(var)
        return super().visit_dataflow_var_(var)

    def _operand_nhwc(self, expr: relax.Expr) -> relax.Expr | None:
        """``expr`` (an operand of a binary operator whose other operand is NHWC) in NHWC, or
        None when it cannot be had without a transpose."""
        if isinstance(expr, relax.Var) and expr in self.nhwc:
            return self.nhwc[expr]
        shape = static_shape(expr)
        if shape is None or len(shape) > 4:
            return None
        if int(np.prod(shape)) == 1:
            return self.visit_expr(expr)  # one element: the same in every layout
        if isinstance(expr, tvm.ir.Constant):
            value = expr.value.numpy().reshape([1] * (4 - len(shape)) + shape)
            return relax.const(np.ascontiguousarray(value.transpose(TO_NHWC)), str(value.dtype))
        new = self.visit_expr(expr)
        return self.transposed.get(new)  # an NCHW tensor already transposed for a convolution

    def _transposed(self, nchw: relax.Expr) -> relax.Expr:
        """``nchw`` (a tensor of the new graph) transposed to NHWC, once."""
        if nchw not in self.transposed:
            self.transposed[nchw] = self.builder_.emit(
                relax.op.permute_dims(nchw, TO_NHWC), name_hint="nhwc"
            )
        return self.transposed[nchw]

    def _rewrite(self, value: relax.Expr) -> relax.Expr | _Plain | None:
        """The NHWC form of ``value`` (an NCHW result), or None to keep it as it is."""
        name = _op_name(value)
        if name == "relax.nn.conv2d" and _convertible_conv(value):
            data = value.args[0]
            if isinstance(data, relax.Var) and data in self.nhwc:
                nhwc_data: relax.Expr = self.nhwc[data]
            else:
                nhwc_data = self._transposed(self.visit_expr(data))
            attrs = value.attrs
            return relax.op.nn.conv2d(
                nhwc_data,
                value.args[1],
                strides=_ints(attrs.strides),
                padding=_ints(attrs.padding),
                dilation=_ints(attrs.dilation),
                groups=int(attrs.groups),
                data_layout="NHWC",
                kernel_layout="OIHW",
                out_layout="NHWC",
                out_dtype=attrs.out_dtype,
            )
        if not (isinstance(value, relax.Call) and value.args):
            return None
        first = value.args[0]
        if name in UNARY and isinstance(first, relax.Var) and first in self.nhwc:
            rest = [self.visit_expr(a) for a in value.args[1:]]
            return relax.Call(value.op, [self.nhwc[first], *rest], value.attrs, value.ty_args)
        if name in BINARY and len(value.args) == 2:
            if not any(isinstance(a, relax.Var) and a in self.nhwc for a in value.args):
                return None
            if len(static_shape(value) or []) != 4:
                return None
            operands = [self._operand_nhwc(a) for a in value.args]
            if any(o is None for o in operands):
                return None
            return relax.Call(value.op, operands, value.attrs, value.ty_args)
        if not (isinstance(first, relax.Var) and first in self.nhwc):
            return None
        if name == "relax.mean" and value.attrs.axis is not None:
            axes = sorted(a % 4 for a in _ints(value.attrs.axis))
            if axes == [2, 3]:
                mean = relax.op.mean(self.nhwc[first], [1, 2], bool(value.attrs.keepdims))
                return mean if bool(value.attrs.keepdims) else _Plain(mean)
        if name in ("relax.reshape", "relax.flatten"):
            dims = static_shape(first)
            if dims is not None and (dims[1] == 1 or dims[2] * dims[3] == 1):
                # [N, C, 1, 1] or [N, 1, H, W]: the same order of elements in both layouts
                if name == "relax.flatten":
                    return _Plain(relax.op.reshape(self.nhwc[first], static_shape(value) or []))
                return _Plain(relax.Call(value.op, [self.nhwc[first], *value.args[1:]]))
        if name in _POOLS and str(value.attrs.layout) == "NCHW":
            return _pool_nhwc(value, self.nhwc[first])
        return None

    def visit_dataflow_block_(self, block: relax.DataflowBlock) -> relax.BindingBlock:
        self.in_dataflow = True
        try:
            return super().visit_dataflow_block_(block)
        finally:
            self.in_dataflow = False

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        var = binding.var
        if not self.in_dataflow:  # only dataflow blocks are rewritten (partition makes them)
            super().visit_var_binding_(binding)
            return
        rewritten = self._rewrite(binding.value)
        if rewritten is None:
            super().visit_var_binding_(binding)
            return
        plain = isinstance(rewritten, _Plain)
        expr = rewritten.expr if isinstance(rewritten, _Plain) else rewritten
        if plain:
            new = (
                self.builder_.emit(expr, name_hint=var.name)
                if isinstance(var, relax.DataflowVar)
                else self.builder_.emit_output(expr, name_hint=var.name)
            )
            self.set_var_remap(var, new)
            return
        self.nhwc[var] = self.builder_.emit(expr, name_hint=var.name + NHWC_SUFFIX)
        if not isinstance(var, relax.DataflowVar):  # a block output: NCHW outside the block
            out = self.builder_.emit_output(
                relax.op.permute_dims(self.nhwc[var], TO_NCHW), name_hint=var.name
            )
            self.set_var_remap(var, out)
            self.nchw[var] = out


class _Plain:
    """A rewritten value whose result has the original layout (not an NHWC twin)."""

    def __init__(self, expr: relax.Expr) -> None:
        self.expr = expr


def _pool_nhwc(call: relax.Call, data: relax.Expr) -> relax.Expr | None:
    attrs = call.attrs
    name = str(call.op.name)
    out_layout = str(attrs.out_layout or attrs.layout)
    if out_layout != "NCHW":
        return None
    if name == "relax.nn.adaptive_avg_pool2d":
        size = None if attrs.output_size is None else _ints(attrs.output_size)
        return relax.op.nn.adaptive_avg_pool2d(data, size, layout="NHWC", out_layout="NHWC")
    common = dict(
        pool_size=_ints(attrs.pool_size),
        strides=_ints(attrs.strides),
        padding=_ints(attrs.padding),
        dilation=_ints(attrs.dilation),
        ceil_mode=bool(attrs.ceil_mode),
        layout="NHWC",
        out_layout="NHWC",
    )
    if name == "relax.nn.avg_pool2d":
        return relax.op.nn.avg_pool2d(
            data, count_include_pad=bool(attrs.count_include_pad), **common
        )
    return relax.op.nn.max_pool2d(data, **common)


def _has_convertible_conv(func: relax.Function) -> bool:
    found = []

    def visit(expr: relax.Expr) -> None:
        if _op_name(expr) == "relax.nn.conv2d" and _convertible_conv(expr):
            found.append(expr)

    relax.analysis.post_order_visit(func.body, visit)
    return bool(found)


def nhwc_convolutions(func: relax.Function) -> relax.Function:
    """``func`` with its float NCHW convolutions (constant filters) and the layout-free
    operators between them in NHWC (see the module docstring); the same object when it has
    none."""
    if not _has_convertible_conv(func):
        return func
    rewritten = _ToNhwc().visit_expr(func)
    return relax.analysis.remove_all_unused(rewritten)
