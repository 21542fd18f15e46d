# SPDX-License-Identifier: Apache-2.0
"""What the backend does with a model, and why: the data behind ``tvm-nnapi explain``.

:func:`explain` partitions a module and returns, per NNAPI subgraph, the Relax operators it
contains and the NNAPI operations they lower to, and, for every operator left on the host, the
typed refusal reason; plus totals (operators and estimated FLOPs offloaded, subgraphs, values
crossing between host and NNAPI).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import tvm
from tvm import relax

from ..compiler.build import offload_summary
from ..compiler.codegen import lower_function
from ..compiler.partition import (
    CODEGEN_NAME,
    PartitionResult,
    nnapi_subgraphs,
    partition_with_report,
)
from ..compiler.patterns import PartitionOptions
from .sources import CNN_MODELS, ModelLoadError, load_model_source


@dataclass
class SubgraphReport:
    """One NNAPI subgraph function. Operator and operation counts are per call: a function
    called ``calls`` times (the identical layers of an LLM share one) executes them that often."""

    name: str
    relax_operators: dict[str, int]  # per call
    nnapi_operations: dict[str, int]  # per call
    inputs: int
    outputs: int
    symbols: list[str]
    calls: int = 1


@dataclass
class Explanation:
    subgraphs: list[SubgraphReport] = field(default_factory=list)
    refusals: list[dict[str, str]] = field(default_factory=list)
    host_operators: dict[str, int] = field(default_factory=dict)
    offloaded_operators: int = 0
    total_operators: int = 0
    offloaded_flops: int = 0
    total_flops: int = 0
    # Estimated FLOPs of the quantized groups (flops.quantized_flops, docs/quantization.md).
    quantized_flops: int = 0
    boundary_transfers: int = 0

    @property
    def flop_share(self) -> float | None:
        return self.offloaded_flops / self.total_flops if self.total_flops else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["flop_share"] = self.flop_share
        data["quantized_flop_share"] = (
            self.quantized_flops / self.total_flops if self.total_flops else None
        )
        return data


def explain(
    mod: tvm.IRModule,
    options: PartitionOptions | None = None,
    entry_functions: Sequence[str] | None = None,
    report: PartitionResult | None = None,
) -> Explanation:
    """Partition ``mod`` and describe the result (nothing is built or run).

    ``entry_functions`` limits partitioning and the summary to those functions (e.g.
    ``["prefill"]`` of an LLM; the others are ignored). ``report``: an existing partition of
    ``mod`` to describe instead of partitioning again.
    """
    if report is None:
        report = partition_with_report(mod, options, entry_functions)
    module = report.module
    if entry_functions:
        module = _entry_module(module, entry_functions)
    summary = offload_summary(module)
    result = Explanation(
        refusals=[
            {"operator": r.operator, "binding": r.binding, "kind": r.kind.value, "reason": r.reason}
            for r in report.refusals
        ],
        host_operators=dict(summary.host),
        offloaded_operators=summary.offloaded_operators,
        total_operators=summary.offloaded_operators + summary.host_operators,
        offloaded_flops=summary.offloaded_flops,
        total_flops=summary.offloaded_flops + summary.host_flops,
        quantized_flops=summary.quantized_flops,
    )
    calls = _call_sites(module)
    for name in nnapi_subgraphs(module):
        func = module[name]
        builder = lower_function(func)
        sites = max(calls[name], 1)
        result.subgraphs.append(
            SubgraphReport(
                name=name,
                # offload_summary counts every call; the table shows one call's operators.
                relax_operators={op: n // sites for op, n in summary.subgraphs[name].items()},
                nnapi_operations=dict(Counter(op.op for op in builder.operations)),
                inputs=len(builder.inputs),
                outputs=len(builder.outputs),
                symbols=list(builder.symbols),
                calls=sites,
            )
        )
        # Every subgraph input and output crosses between host and NNAPI memory, at every call.
        result.boundary_transfers += (len(builder.inputs) + len(builder.outputs)) * sites
    return result


def _call_sites(mod: tvm.IRModule) -> Counter:
    """How often the host functions of ``mod`` call each function (by name)."""
    sites: Counter = Counter()
    for func in mod.functions.values():
        if isinstance(func, relax.Function) and not (func.attrs or {}).get("Codegen"):
            relax.analysis.post_order_visit(
                func.body,
                lambda node: (
                    sites.update([node.op.name_hint])
                    if isinstance(node, relax.Call) and isinstance(node.op, tvm.ir.GlobalVar)
                    else None
                ),
            )
    return sites


def _entry_module(mod: tvm.IRModule, entries: Sequence[str]) -> tvm.IRModule:
    """The entry functions and the NNAPI subgraphs they call (other functions dropped)."""
    used: set[str] = set()
    for name in entries:
        used.update(g.name_hint for g in relax.analysis.all_global_vars(mod[name]))
    return tvm.IRModule(
        {
            g: f
            for g, f in mod.functions.items()
            if g.name_hint in entries
            or (g.name_hint in used and (getattr(f, "attrs", None) or {}).get("Codegen"))
        }
    )


def subgraph_functions(mod: tvm.IRModule) -> list[str]:
    return sorted(
        g.name_hint
        for g, f in mod.functions.items()
        if (getattr(f, "attrs", None) or {}).get("Codegen") == CODEGEN_NAME
    )


# ---- loading models ---------------------------------------------------------------------------

BUILT_IN_MODELS = CNN_MODELS


def load_model(spec: str, batch: int = 1) -> tvm.IRModule:
    """A Relax module from a MODEL argument (see :mod:`tvm_nnapi.tools.sources`), as loaded
    (symbolic dimensions unbound)."""
    return load_model_source(spec, batch=batch).symbolic_module


__all__ = ["BUILT_IN_MODELS", "Explanation", "ModelLoadError", "explain", "load_model"]
