"""Building a Relax module with its NNAPI subgraphs, and summarising what runs where."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import tvm
from tvm import IRModule, relax

from .flops import call_flops
from .partition import CODEGEN_NAME, nnapi_subgraphs, partition
from .patterns import PartitionOptions


def build(
    mod: IRModule,
    target: str | tvm.target.Target = "llvm",
    options: PartitionOptions | None = None,
    entry_functions: Sequence[str] | None = None,
    host_fallback: bool = False,
) -> relax.VMExecutable:
    """Partition (unless already partitioned), run the NNAPI codegen and ``relax.build``.

    ``host_fallback=True`` also compiles every NNAPI subgraph for the host, so that the runtime
    can run it there when the device-selection policy prefers the host for a shape (see
    :mod:`tvm_nnapi.runtime_api`) or when NNAPI fails; it costs one more TVM compilation per
    subgraph.
    """
    if not nnapi_subgraphs(mod):
        mod = partition(mod, options, entry_functions)
    codegen_options = {"host_fallback": host_fallback, "host_target": str(target)}
    mod = relax.transform.RunCodegen({"nnapi": codegen_options})(mod)
    return relax.build(mod, target=target)


@dataclass
class OffloadSummary:
    """Operator counts of a partitioned module: per NNAPI subgraph and left on the host."""

    subgraphs: dict[str, Counter] = field(default_factory=dict)
    host: Counter = field(default_factory=Counter)
    # Estimated FLOPs (see tvm_nnapi.flops) in NNAPI subgraphs and on the host.
    offloaded_flops: int = 0
    host_flops: int = 0

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


def _calls(expr: relax.Expr) -> list[relax.Call]:
    found: list[relax.Call] = []
    relax.analysis.post_order_visit(
        expr, lambda node: found.append(node) if isinstance(node, relax.Call) else None
    )
    return found


def offload_summary(mod: IRModule) -> OffloadSummary:
    """Count Relax operators (and their estimated FLOPs) inside NNAPI subgraphs and in the host
    functions."""
    summary = OffloadSummary()
    for gvar, func in mod.functions.items():
        if not isinstance(func, relax.Function):
            continue
        attrs = func.attrs or {}
        calls = [call for call in _calls(func.body) if isinstance(call.op, tvm.ir.Op)]
        ops = Counter(str(call.op.name) for call in calls)
        flops = sum(call_flops(call) for call in calls)
        if attrs.get("Codegen") == CODEGEN_NAME:
            summary.subgraphs[gvar.name_hint] = ops
            summary.offloaded_flops += flops
        elif "Composite" not in attrs and "Primitive" not in attrs:
            summary.host.update(ops)
            summary.host_flops += flops
    return summary
