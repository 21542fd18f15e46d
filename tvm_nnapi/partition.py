"""Partitioning: mark the Relax operators NNAPI can run and group them into NNAPI subgraphs.

``partition(mod)`` runs ``FuseOpsByPattern`` with our own pattern table, then merges adjacent
composite calls into subgraph functions annotated ``Codegen="nnapi"`` (``MergeCompositeFunctions``,
applied per entry function so that any function name works, not only ``main``), ready for
``relax.transform.RunCodegen``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import tvm
from tvm import IRModule, relax

from .ir_utils import rename_functions
from .patterns import (
    PartitionOptions,
    Refusal,
    RefusalKind,
    collect_refusals,
    offloadable_relax_ops,
    pattern_table,
)

CODEGEN_NAME = "nnapi"


@dataclass
class PartitionResult:
    """A partitioned module and what stayed on the host, and why."""

    module: IRModule
    refusals: list[Refusal] = field(default_factory=list)

    @property
    def subgraphs(self) -> list[str]:
        return nnapi_subgraphs(self.module)


def _is_entry(func: object) -> bool:
    """A Relax function of the program (not a composite or an already offloaded subgraph)."""
    if not isinstance(func, relax.Function):
        return False
    attrs = func.attrs or {}
    return "Composite" not in attrs and "Codegen" not in attrs and "Primitive" not in attrs


def _merge_composites(mod: IRModule) -> IRModule:
    """MergeCompositeFunctions for every entry function.

    TVM's pass groups only ``main``; we present each entry function to it as ``main``, together
    with just the composite functions it calls, then restore its name.
    """
    entries = [g.name_hint for g, f in mod.functions.items() if _is_entry(f)]
    for name in entries:
        gvar = mod.get_global_var(name)
        func = mod[gvar]
        used = {g.name_hint for g in relax.analysis.all_global_vars(func)}
        composites = {
            g: f
            for g, f in mod.functions.items()
            if g.name_hint in used and not _is_entry(f) and isinstance(f, relax.Function)
        }
        if not any("Composite" in (f.attrs or {}) for f in composites.values()):
            continue
        scratch = IRModule(composites)
        scratch[tvm.ir.GlobalVar("main")] = func
        scratch = relax.transform.MergeCompositeFunctions()(scratch)
        scratch = _rename_subgraphs(scratch, prefix=f"{name}_nnapi")
        merged = {g: f for g, f in scratch.functions.items() if g.name_hint != "main"}
        for g, f in mod.functions.items():
            if g.name_hint != gvar.name_hint and g not in composites:
                merged[g] = f
        merged[gvar] = scratch["main"]
        mod = IRModule(merged, attrs=mod.attrs, global_infos=mod.global_infos)
    return mod


def _rename_subgraphs(mod: IRModule, prefix: str) -> IRModule:
    """Give the merged subgraphs short names (``<entry>_nnapi_<k>`` in call order) instead of
    the concatenation of every fused operator's name that MergeCompositeFunctions produces."""
    main = mod["main"]
    order = [
        binding.value.op
        for binding in _bindings(main)
        if isinstance(binding.value, relax.Call) and isinstance(binding.value.op, tvm.ir.GlobalVar)
    ]
    subgraphs = [g for g in order if (mod[g].attrs or {}).get("Codegen") == CODEGEN_NAME]
    names = {gvar: f"{prefix}_{index}" for index, gvar in enumerate(dict.fromkeys(subgraphs))}
    return rename_functions(mod, names)


def _unsupported_operators(mod: IRModule, known: set[tuple[str, str]]) -> list[Refusal]:
    """Operators left in the entry functions that no pattern covers."""
    offloadable = offloadable_relax_ops()
    refusals = []
    for gvar, func in mod.functions.items():
        if not _is_entry(func):
            continue
        for binding in _bindings(func):
            value = binding.value
            if not (isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op)):
                continue
            name = str(value.op.name)
            if (binding.var.name, name) in known:
                continue
            if name in offloadable:
                # A pattern exists for the operator but not for this form (argument kinds).
                kind = RefusalKind.ATTRIBUTE
                reason = f"this form of {name} is not offloaded (in {gvar.name_hint})"
            else:
                kind = RefusalKind.UNSUPPORTED_OPERATOR
                reason = f"no NNAPI pattern for {name} (in {gvar.name_hint})"
            refusals.append(Refusal(name, binding.var.name, kind, reason))
    return refusals


def _bindings(func: relax.Function) -> list[relax.Binding]:
    body = func.body
    if not isinstance(body, relax.SeqExpr):
        return []
    return [b for block in body.blocks for b in block.bindings]


def partition_with_report(
    mod: IRModule,
    options: PartitionOptions | None = None,
    entry_functions: Sequence[str] | None = None,
) -> PartitionResult:
    """Partition ``mod`` for NNAPI and report every operator left on the host."""
    options = options or PartitionOptions()
    mod = relax.transform.ConvertToDataflow(min_size=1)(mod)
    with collect_refusals() as collector:
        mod = relax.transform.FuseOpsByPattern(
            pattern_table(options),
            bind_constants=True,
            annotate_codegen=False,
            entry_functions=list(entry_functions) if entry_functions else None,
        )(mod)
    mod = _merge_composites(mod)
    refusals = list(collector.refusals.values())
    refusals += _unsupported_operators(mod, set(collector.refusals))
    return PartitionResult(mod, refusals)


def partition(
    mod: IRModule,
    options: PartitionOptions | None = None,
    entry_functions: Sequence[str] | None = None,
) -> IRModule:
    """Partition ``mod`` for NNAPI; returns the module with ``Codegen="nnapi"`` subgraphs."""
    return partition_with_report(mod, options, entry_functions).module


def nnapi_subgraphs(mod: IRModule) -> list[str]:
    """Names of the functions marked for the NNAPI codegen."""
    names = []
    for gvar, func in mod.functions.items():
        attrs = getattr(func, "attrs", None) or {}
        if attrs.get("Codegen") == CODEGEN_NAME:
            names.append(gvar.name_hint)
    return sorted(names)
