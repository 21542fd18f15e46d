# SPDX-License-Identifier: Apache-2.0
"""Small IRModule utilities: walking a function's bindings and operator calls, renaming
global functions consistently, and reading and making constants without copying weights."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tvm
from tvm import IRModule, relax
from tvm.relax.expr_functor import PyExprMutator, mutator


def constant_array(constant: tvm.ir.Constant) -> np.ndarray:
    """The value of a Relax constant, read in place where numpy can (DLPack) and read-only:
    the module owns it, and a weight is not copied to be looked at."""
    try:
        array = np.from_dlpack(constant.value)
    except (BufferError, TypeError, RuntimeError):  # a dtype numpy's DLPack does not take
        return constant.value.numpy()
    array.flags.writeable = False
    return array


def scalar_value(expr: relax.Expr) -> float | None:
    """The value of a one-element constant (any rank), else None."""
    if not isinstance(expr, tvm.ir.Constant):
        return None
    value = expr.value.numpy()
    return float(value.reshape(-1)[0]) if value.size == 1 else None


def make_constant(value: np.ndarray, dtype: str) -> relax.Expr:
    """A Relax constant of ``value`` in ``dtype`` (cast as ``astype`` would), written once into
    the constant's tensor: a transposed or reshaped view is laid out there, not first in a
    temporary array."""
    value = np.asarray(value)
    try:
        tensor = tvm.runtime.empty(value.shape, dtype)
        target = np.from_dlpack(tensor)
    except (BufferError, TypeError, RuntimeError, ValueError):  # numpy cannot view the dtype
        return relax.const(np.array(value, dtype=dtype, order="C"), dtype)
    np.copyto(target, value, casting="unsafe")
    return relax.const(tensor, dtype)


def bindings(func: relax.Function) -> list[relax.Binding]:
    """Every binding of a function's body, block after block (none when the body is not a
    ``SeqExpr``)."""
    body = func.body
    if not isinstance(body, relax.SeqExpr):
        return []
    return [b for block in body.blocks for b in block.bindings]


def calls_in(expr: relax.Expr) -> list[relax.Call]:
    """Every call inside an expression (nested ones included), in post order."""
    found: list[relax.Call] = []
    relax.analysis.post_order_visit(
        expr, lambda node: found.append(node) if isinstance(node, relax.Call) else None
    )
    return found


def located_operator_calls(func: relax.Function) -> list[tuple[relax.Call, relax.Function]]:
    """The operator calls of a function, once per execution, each with the function whose body
    holds it (``func`` or one of its local functions).

    MergeCompositeFunctions inlines a composite used several times in one subgraph (e.g. the
    RMSNorm of every decoder layer) as one local function called several times; its operators
    count once per call. A function without bindings contributes the calls of its body.
    """
    local: dict[relax.Var, relax.Function] = {}
    found: list[tuple[relax.Call, relax.Function]] = []
    func_bindings = bindings(func)
    for binding in func_bindings:
        value = binding.value
        if isinstance(value, relax.Function):
            local[binding.var] = value
        elif isinstance(value, relax.Call) and value.op in local:
            found.extend(located_operator_calls(local[value.op]))
        else:
            found.extend((c, func) for c in calls_in(value) if isinstance(c.op, tvm.ir.Op))
    if not func_bindings:
        found.extend((c, func) for c in calls_in(func.body) if isinstance(c.op, tvm.ir.Op))
    return found


def operator_calls(func: relax.Function) -> list[relax.Call]:
    """The operator calls of a function, once per execution (see
    :func:`located_operator_calls`)."""
    return [call for call, _ in located_operator_calls(func)]


@mutator
class _VarSubstituter(PyExprMutator):
    def __init__(self, mapping: dict[relax.Var, relax.Expr]) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_var_(self, var: relax.Var) -> relax.Expr:
        return self.mapping.get(var, var)

    def visit_dataflow_var_(self, var: relax.DataflowVar) -> relax.Expr:
        return self.mapping.get(var, var)


def substitute_vars(expr: relax.Expr, mapping: dict[relax.Var, relax.Expr]) -> relax.Expr:
    """``expr`` with the variables of ``mapping`` replaced (e.g. by the constants they were
    folded to)."""
    if not mapping:
        return expr
    return _VarSubstituter(mapping).visit_expr(expr)


@mutator
class _GlobalVarRenamer(PyExprMutator):
    def __init__(self, mapping: dict[tvm.ir.GlobalVar, tvm.ir.GlobalVar]) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_global_var_(self, op: tvm.ir.GlobalVar) -> tvm.ir.GlobalVar:
        return self.mapping.get(op, op)


def rename_functions(mod: IRModule, names: dict[tvm.ir.GlobalVar, str]) -> IRModule:
    """Rename the given functions (GlobalVar and ``global_symbol``) and every reference to them
    from Relax functions."""
    if not names:
        return mod
    builder = relax.BlockBuilder()
    mapping = {}
    functions = {}
    for gvar, new_name in names.items():
        func = mod[gvar].with_attr("global_symbol", new_name)
        new_gvar = builder.add_func(func, new_name)
        mapping[gvar] = new_gvar
        functions[new_gvar] = func
    for gvar, func in mod.functions.items():
        if gvar in mapping:
            continue
        if isinstance(func, relax.Function):
            func = _GlobalVarRenamer(mapping).visit_expr(func)
        functions[gvar] = func
    return IRModule(functions, attrs=mod.attrs, global_infos=mod.global_infos)


def prefix_prim_funcs_pass(prefix: str) -> tvm.transform.Pass:
    """A module pass that prefixes every TIR function's name, so that two separately compiled
    libraries can be linked into one shared library without symbol clashes."""

    def transform(mod: IRModule, _context: tvm.transform.PassContext) -> IRModule:
        names = {
            gvar: prefix + gvar.name_hint
            for gvar, func in mod.functions.items()
            if isinstance(func, tvm.tirx.PrimFunc)
        }
        return rename_functions(mod, names)

    return tvm.transform.module_pass(transform, opt_level=0, name="PrefixPrimFuncs")


def map_functions(
    mod: IRModule, select: Callable[[tvm.ir.GlobalVar, object], str | None]
) -> IRModule:
    """Rename every function for which ``select(gvar, func)`` returns a new name."""
    names = {}
    for gvar, func in mod.functions.items():
        new_name = select(gvar, func)
        if new_name is not None:
            names[gvar] = new_name
    return rename_functions(mod, names)
