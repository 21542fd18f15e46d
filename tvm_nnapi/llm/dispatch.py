"""NNAPI dispatch for LLMs, in the spirit of MLC-LLM's ``BLASDispatch``: offload only the given
entry functions (by default ``prefill``), leave the others (``decode``, ``embed``, the KV-cache
creation) on the host.

An MLC-LLM user inserts :class:`NNAPIDispatch` into their Relax pipeline before the lowering
passes, like the BLAS dispatch::

    seq = tvm.transform.Sequential([NNAPIDispatch(entry_functions=["prefill"]), ...])

Offloading ``decode`` as well is possible (``entry_functions=["prefill", "decode"]``); with
``host_fallback=True`` the runtime's device-selection policy (``tvm_nnapi.runtime_api``,
e.g. ``policy="threshold:FLOPS"``) then decides per shape whether NNAPI or the host runs it.

:func:`offload_report` says what a partition of ``prefill`` sends to NNAPI (operators, FLOP
share) and what stays on the host (the attention through the KV-cache builtins).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import tvm
from tvm import IRModule, relax

from ..build import OffloadSummary, offload_summary
from ..partition import CODEGEN_NAME, partition_with_report
from ..patterns import PartitionOptions, Refusal
from .config import LlamaConfig

DEFAULT_ENTRY_FUNCTIONS = ("prefill",)
# The packed function that runs rotary embedding, the KV append and attention on the host.
ATTENTION_BUILTIN = "vm.builtin.attention_kv_cache_attention_with_fused_qkv"


@tvm.transform.module_pass(opt_level=0, name="NNAPIDispatch")
class NNAPIDispatch:
    """Partition the given entry functions for NNAPI and (by default) run the NNAPI codegen.

    Functions not named stay untouched. With ``run_codegen=False`` the pass only partitions
    (``Codegen="nnapi"`` subgraph functions), e.g. to inspect the result or to hand it to
    :func:`tvm_nnapi.build`.
    """

    def __init__(
        self,
        entry_functions: Sequence[str] = DEFAULT_ENTRY_FUNCTIONS,
        options: PartitionOptions | None = None,
        run_codegen: bool = True,
        host_fallback: bool = False,
        host_target: str = "llvm",
    ) -> None:
        self.entry_functions = list(entry_functions)
        self.options = options
        self.run_codegen = run_codegen
        self.host_fallback = host_fallback
        self.host_target = host_target
        self.refusals: list[Refusal] = []

    def transform_module(self, mod: IRModule, _ctx: tvm.transform.PassContext) -> IRModule:
        names = [name for name in self.entry_functions if _has_function(mod, name)]
        if not names:
            return mod
        result = partition_with_report(mod, self.options, entry_functions=names)
        self.refusals = result.refusals
        mod = result.module
        if self.run_codegen:
            options = {"host_fallback": self.host_fallback, "host_target": self.host_target}
            mod = relax.transform.RunCodegen({CODEGEN_NAME: options})(mod)
        return mod


def _has_function(mod: IRModule, name: str) -> bool:
    return any(gvar.name_hint == name for gvar in mod.get_global_vars())


def build_llm(
    mod: IRModule,
    entry_functions: Sequence[str] = DEFAULT_ENTRY_FUNCTIONS,
    options: PartitionOptions | None = None,
    host_fallback: bool = False,
    target: str = "llvm",
) -> relax.VMExecutable:
    """Offload ``entry_functions`` with :class:`NNAPIDispatch` and build the whole module for
    the host ``target``. An empty ``entry_functions`` gives the pure host build."""
    if entry_functions:
        dispatch = NNAPIDispatch(
            entry_functions, options, host_fallback=host_fallback, host_target=target
        )
        mod = dispatch(mod)
    return relax.build(mod, target=target)


# ---- offload report ------------------------------------------------------------------------------


@dataclass
class OffloadReport:
    """What a partition of one entry function offloads, for a given sequence length."""

    entry: str
    seq_len: int
    summary: OffloadSummary
    # Host FLOPs inside the KV-cache attention builtin (not visible as Relax operators), see
    # attention_flops: 2 * h_q * d * n * (n + 1) per layer for a causal prefill of n tokens.
    attention_flops: int = 0
    partition_seconds: float = 0.0
    refusals: list[Refusal] = field(default_factory=list)

    @property
    def offloaded_operators(self) -> Counter:
        total: Counter = Counter()
        for ops in self.summary.subgraphs.values():
            total.update(ops)
        return total

    @property
    def host_operators(self) -> Counter:
        return self.summary.host

    @property
    def flop_share(self) -> float:
        """Offloaded share of the FLOPs of the Relax operators (attention builtin excluded)."""
        return self.summary.offloaded_flop_share

    @property
    def flop_share_with_attention(self) -> float:
        """Offloaded share once the host attention's FLOPs are counted as well."""
        total = self.summary.offloaded_flops + self.summary.host_flops + self.attention_flops
        return self.summary.offloaded_flops / total if total else 0.0

    def format(self) -> str:
        """A short human-readable summary."""
        s = self.summary
        lines = [
            f"{self.entry} (seq_len={self.seq_len}): {len(s.subgraphs)} distinct NNAPI subgraphs, "
            f"partitioned in {self.partition_seconds:.2f} s",
            f"  offloaded: {s.offloaded_operators} operators, {s.offloaded_flops / 1e9:.3f} GFLOP "
            f"({self.flop_share:.1%} of Relax-operator FLOPs, "
            f"{self.flop_share_with_attention:.1%} counting attention)",
            f"  host: {s.host_operators} operators, {s.host_flops / 1e9:.3f} GFLOP "
            f"+ attention {self.attention_flops / 1e9:.3f} GFLOP (estimate)",
            "  offloaded operators: " + _format_counter(self.offloaded_operators),
            "  host operators: " + _format_counter(self.host_operators),
        ]
        return "\n".join(lines)


def _format_counter(counter: Counter) -> str:
    return ", ".join(f"{name.removeprefix('relax.')} x{n}" for name, n in counter.most_common())


def _entry_module(mod: IRModule, entry: str) -> IRModule:
    """``entry`` and the NNAPI subgraphs it calls (for a per-entry offload summary)."""
    used = {g.name_hint for g in relax.analysis.all_global_vars(mod[entry])}
    return IRModule(
        {
            g: f
            for g, f in mod.functions.items()
            if g.name_hint == entry
            or (g.name_hint in used and (getattr(f, "attrs", None) or {}).get("Codegen"))
        }
    )


def attention_flops(config: LlamaConfig, seq_len: int, history: int = 0) -> int:
    """FLOPs of one layer's causal attention of ``seq_len`` new tokens after ``history`` cached
    ones (QK^T and PV, multiply-adds as two)."""
    pairs = seq_len * history + seq_len * (seq_len + 1) // 2
    return 2 * 2 * config.num_attention_heads * config.head_dim * pairs


def _attention_calls(func: relax.Function) -> int:
    found: list[relax.Call] = []

    def visit(node: object) -> None:
        if isinstance(node, relax.Call) and any(
            isinstance(arg, relax.ExternFunc) and str(arg.global_symbol) == ATTENTION_BUILTIN
            for arg in node.args
        ):
            found.append(node)

    relax.analysis.post_order_visit(func, visit)
    return len(found)


def offload_report(
    mod: IRModule,
    config: LlamaConfig,
    seq_len: int = 128,
    entry: str = "prefill",
    options: PartitionOptions | None = None,
    history: int = 0,
) -> OffloadReport:
    """Partition ``entry`` for NNAPI and summarise the result for ``seq_len`` new tokens after
    ``history`` cached ones.

    FLOPs need concrete shapes, so the summary comes from a copy of ``entry`` specialised to
    ``seq_len``; ``partition_seconds`` times the partition of the symbolic function (what
    :class:`NNAPIDispatch` does).
    """
    start = time.perf_counter()
    partition_with_report(mod, options, entry_functions=[entry])
    seconds = time.perf_counter() - start
    func = mod[entry]
    symbols = {str(v): seq_len for v in relax.analysis.defined_symbolic_vars(func)}
    specialised = IRModule({tvm.ir.GlobalVar(entry): func.bind_symbolic_vars(symbols)})
    result = partition_with_report(specialised, options, entry_functions=[entry])
    summary = offload_summary(_entry_module(result.module, entry))
    flops = _attention_calls(func) * attention_flops(config, seq_len, history)
    return OffloadReport(entry, seq_len, summary, flops, seconds, result.refusals)
