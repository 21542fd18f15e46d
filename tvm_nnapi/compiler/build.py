# SPDX-License-Identifier: Apache-2.0
"""Building a Relax module with its NNAPI subgraphs, and summarising what runs where."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import tvm
from tvm import IRModule, relax

from .codegen import drop_codegen_constants
from .flops import call_flops, quantized_flops
from .ir_utils import calls_in, operator_calls
from .overlap import overlap_subgraph_calls
from .partition import CODEGEN_NAME, is_partitioned, nnapi_subgraphs, partition
from .patterns import PartitionOptions


def build(
    mod: IRModule,
    target: str | tvm.target.Target = "llvm",
    options: PartitionOptions | None = None,
    entry_functions: Sequence[str] | None = None,
    host_fallback: bool = False,
    overlap: bool = True,
) -> relax.VMExecutable:
    """Partition (unless already partitioned), run the NNAPI codegen and ``relax.build``.

    ``host_fallback=True`` also compiles every NNAPI subgraph for the host, so that the runtime
    can run it there when the device-selection policy prefers the host for a shape (see
    :mod:`tvm_nnapi.runtime`) or when NNAPI fails; it costs one more TVM compilation per
    subgraph. ``overlap=True`` starts a subgraph and lets the program go on where the next
    binding does not read its outputs, joining it before the first that does
    (:mod:`tvm_nnapi.compiler.overlap`); ``False`` runs every subgraph call to completion.
    """
    if not is_partitioned(mod):
        mod = partition(mod, options, entry_functions)
    subgraphs = nnapi_subgraphs(mod)
    codegen_options = {"host_fallback": host_fallback, "host_target": str(target)}
    mod = relax.transform.RunCodegen({"nnapi": codegen_options})(mod)
    # The NNAPI modules carry their constants: no second copy in a constant-loader module.
    mod = drop_codegen_constants(mod, subgraphs)
    if overlap:
        mod, _ = overlap_subgraph_calls(mod, subgraphs)
    executable = relax.build(mod, target=target)
    _drop_empty_source_modules(executable)
    return executable


def _drop_empty_source_modules(executable: relax.VMExecutable) -> None:
    """``relax.build`` gives a program without TIR functions (its whole body an NNAPI subgraph,
    say) an empty C source module as host library. A VM then cannot run the executable as it is:
    it compiles it with the system's C compiler into a temporary shared library and loads that,
    for the rest of the process, with a second copy of every NNAPI module in it (three NNAPI
    objects and the weights kept alive per VM). The empty module holds nothing: drop it, and the
    executable runs as built."""
    imports = list(executable.mod.imports)
    empty = [
        index
        for index, module in enumerate(imports)
        if module.kind == "c"
        and not module.imports
        and module.inspect_source().strip() in ("", ";")
    ]
    if not empty:
        return
    executable.mod.clear_imports()
    for index, module in enumerate(imports):
        if index not in empty:
            executable.mod.import_module(module)


@dataclass
class OffloadSummary:
    """Operator counts of a partitioned module: per NNAPI subgraph and left on the host."""

    subgraphs: dict[str, Counter] = field(default_factory=dict)
    host: Counter = field(default_factory=Counter)
    # Estimated FLOPs (see tvm_nnapi.compiler.flops) in NNAPI subgraphs and on the host.
    offloaded_flops: int = 0
    host_flops: int = 0
    # Of the offloaded FLOPs, those of quantized groups (flops.quantized_flops).
    quantized_flops: int = 0

    @property
    def offloaded_flop_share(self) -> float:
        total = self.offloaded_flops + self.host_flops
        return self.offloaded_flops / total if total else 0.0

    @property
    def offloaded_operators(self) -> int:
        return sum(sum(c.values()) for c in self.subgraphs.values())

    @property
    def host_operators(self) -> int:
        return sum(self.host.values())


def offload_summary(mod: IRModule) -> OffloadSummary:
    """Count Relax operators (and their estimated FLOPs) inside NNAPI subgraphs and in the host
    functions.

    Operators count once per execution: a subgraph called from several places (structurally
    equal groups, e.g. the layers of a decoder, share one function) counts once per call site.
    """
    summary = OffloadSummary()
    call_sites: Counter = Counter()
    for func in mod.functions.values():
        if isinstance(func, relax.Function) and CODEGEN_NAME != (func.attrs or {}).get("Codegen"):
            for call in calls_in(func.body):
                if isinstance(call.op, tvm.ir.GlobalVar):
                    call_sites[call.op.name_hint] += 1
    for gvar, func in mod.functions.items():
        if not isinstance(func, relax.Function):
            continue
        attrs = func.attrs or {}
        calls = operator_calls(func)
        ops = Counter(str(call.op.name) for call in calls)
        flops = sum(call_flops(call) for call in calls)
        if attrs.get("Codegen") == CODEGEN_NAME:
            sites = max(call_sites[gvar.name_hint], 1)
            summary.subgraphs[gvar.name_hint] = Counter({op: n * sites for op, n in ops.items()})
            summary.offloaded_flops += flops * sites
            summary.quantized_flops += quantized_flops(func) * sites
        elif "Composite" not in attrs and "Primitive" not in attrs:
            summary.host.update(ops)
            summary.host_flops += flops
    return summary
