"""Small IRModule utilities: renaming global functions consistently."""

from __future__ import annotations

from collections.abc import Callable

import tvm
from tvm import IRModule, relax
from tvm.relax.expr_functor import PyExprMutator, mutator


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
