# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi estimate``: the modelled latency of the NNAPI-offloaded program against the
all-host one on a device profile (every time an output of the cost model, never measured)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .common import Progress, partition_options
from .pipeline import ModelCommand, add_model_arguments, run_model_command

if TYPE_CHECKING:
    from tvm_nnapi.tools.memory import MemoryReport


def estimate_document(args: argparse.Namespace, source, profile: str | None, progress: Progress):
    try:
        from tvm_nnapi.tools.estimate import estimate
    except ImportError as error:
        raise RuntimeError(
            f"the estimation engine (tvm_nnapi.tools.estimate) is not available: {error}"
        ) from error
    from tvm import relax

    # The engine binds the entry's symbols itself: hand it the module as loaded.
    module = source.symbolic_module
    weights = getattr(args, "weights", "input")
    if weights == "int8":
        # The int8 weight path is costed from its own graphs (tvm_nnapi.tools.llm_int8).
        if source.kind != "llm":
            raise UsageError("--weights int8 is the int8 weight path of llm: models")
        from tvm_nnapi.tools.llm_int8 import costing_module

        module, _ = costing_module(source.llm_config, source.llm_dtype, [source.entry])
    defined = {str(v) for v in relax.analysis.defined_symbolic_vars(module[source.entry])}
    shapes = {name: value for name, value in source.shapes.items() if name in defined}
    extern_work = None
    if source.kind == "llm":
        # The KV-cache attention runs on the host in both programs; its work comes from the
        # configuration (for decode, seq_len is the number of tokens already in the cache).
        from tvm_nnapi.llm.dispatch import ATTENTION_BUILTIN
        from tvm_nnapi.tools.llm_work import attention_work

        seq_len = source.shapes.get("seq_len", 1)
        new_tokens, history = (seq_len, 0) if source.entry == "prefill" else (1, seq_len)
        work = attention_work(source.llm_config, source.llm_dtype, new_tokens, history)
        extern_work = {ATTENTION_BUILTIN: work}
    progress(f"costing the NNAPI subgraphs on {profile} (modelled)...")
    # The profile as the user gave it (a name or a .json path); `profile` is its name.
    common = {
        "shapes": shapes,
        "entry": source.entry,
        "host_model": getattr(args, "host_model", "profile-cpu"),
        "options": partition_options(args, profile),
        "extern_work": extern_work,
    }
    target_profile = getattr(args, "profile", None) or profile or "reference"
    all_host_us = None
    if weights == "resident" and source.kind == "llm":
        from tvm_nnapi.llm.quantization import get_quantization

        quantization = get_quantization(source.llm_quantization)
        if quantization.quantized:
            # A group-quantized format is dequantized once, at load: NNAPI runs the float model
            # of those values with resident weights; the all-host program stays the quantized
            # model (its dequantization fused into the projections).
            from tvm_nnapi.llm.model import export_model
            from tvm_nnapi.tools.estimate import all_host_us as host_program_us

            all_host_us = host_program_us(
                module,
                target_profile,
                shapes,
                source.entry,
                common["host_model"],
                extern_work,
            )
            module, _, _ = export_model(source.llm_config, quantization.model_dtype)
    result = estimate(
        module,
        target_profile,
        # The int8 weights are subgraph inputs of the costing module and constants in the
        # engine's build: the resident mode leaves their copies out.
        weights="resident" if weights == "int8" else weights,
        **common,
    )
    if all_host_us is not None:
        result.all_host_us = all_host_us
    result.weights = weights
    document = result.to_dict()
    if source.kind == "llm":
        from tvm_nnapi.llm.int8 import projection_report

        document["projections"] = projection_report(source.llm_config, weights)
    return document


def devices_from_estimate(
    args: argparse.Namespace, source, profile: str | None, progress: Progress
) -> dict[str, list[str]]:
    """Which devices of the profile run each NNAPI subgraph (NNAPI decides when it compiles):
    from the estimation engine, which compiles every subgraph on the mock with the profile. An
    empty result when the engine cannot (e.g. a symbolic dimension without a value)."""
    try:
        estimate = estimate_document(args, source, profile, progress)
    except Exception as error:  # the explanation stands without devices
        progress(f"devices not known: {error}")
        return {}
    return {row["name"]: row["devices"] for row in estimate["subgraphs"]}


def print_estimate(console, estimate: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from tvm_nnapi.tools.estimate import why_nnapi_loses
    from tvm_nnapi.tools.report import _format_us, format_speedup

    table = Table(title=f"Estimate on {estimate['profile']} (MODELLED, not measured; per call)")
    columns = (
        "subgraph",
        "calls",
        "devices",
        "compute",
        "set-up",
        "transfers",
        "driver",
        "NNAPI / call",
        "host / call",
        "speedup",
    )
    for column in columns:
        table.add_column(
            column, overflow="fold", justify="left" if column == "subgraph" else "right"
        )
    for sub in estimate.get("subgraphs", []):
        table.add_row(
            sub["name"],
            str(sub.get("calls", 1)),
            ", ".join(sub.get("devices", [])),
            _format_us(sub.get("modelled_compute_us")),
            _format_us(sub.get("modelled_input_setup_us")),
            _format_us(sub.get("modelled_transfer_us")),
            _format_us(sub.get("modelled_driver_overhead_us")),
            _format_us(sub.get("modelled_nnapi_us")),
            _format_us(sub.get("modelled_host_us")),
            format_speedup(sub.get("modelled_speedup")),
        )
    console.print(table)
    totals = estimate.get("totals", {})
    console.print(
        f"modelled: NNAPI-offloaded program {_format_us(totals.get('modelled_nnapi_program_us'))}"
        f", all-host program {_format_us(totals.get('modelled_host_program_us'))}, speedup "
        f"{format_speedup(totals.get('modelled_speedup'))} (host operators in both: "
        f"{_format_us(totals.get('modelled_host_only_us'))})"
    )
    overlap = float(totals.get("modelled_overlap_us") or 0.0)
    if overlap > 0:
        console.print(
            f"modelled: starting subgraph calls while independent host bindings run hides "
            f"{_format_us(overlap)} (counted in the NNAPI-offloaded program; docs/runtime.md)"
        )
    reason = why_nnapi_loses(estimate)
    if reason:
        console.print(escape(reason))
    if estimate.get("projections"):
        from tvm_nnapi.llm.int8 import projection_lines

        heading = f"projections of {estimate['entry']}, weights {estimate['weights']}:"
        for line in projection_lines(heading, estimate["projections"]):
            console.print(escape(line))
    if estimate.get("memory"):
        from tvm_nnapi.tools.memory import MemoryReport

        for line in MemoryReport.from_dict(estimate["memory"]).format_lines():
            console.print(escape(line))
    strategies = estimate.get("strategies")
    if strategies:
        parts = [
            f"{name} {_format_us(row['modelled_nnapi_program_us'])} "
            f"({row['offloaded_operators']} operators offloaded, {row['subgraphs']} subgraphs)"
            for name, row in strategies.items()
        ]
        console.print(
            "partition strategies (--partition; modelled program time): " + "; ".join(parts)
        )


def _offloaded(estimate: dict[str, Any]) -> int:
    return sum(
        sum(row.get("relax_operators", {}).values()) * row.get("calls", 1)
        for row in estimate.get("subgraphs", [])
    )


def strategy_totals(
    args: argparse.Namespace, source: Any, estimate: dict[str, Any], progress: Progress
) -> dict[str, dict[str, Any]]:
    """The modelled program time and operators offloaded with each partition strategy: this
    estimate's, and the other one estimated the same way."""
    import copy

    chosen = getattr(args, "partition", "all") or "all"
    other = "cost" if chosen == "all" else "all"
    progress(f"estimating the {other} strategy too (modelled)...")
    other_args = copy.copy(args)
    other_args.partition = other
    other_estimate = estimate_document(other_args, source, estimate["profile"], progress)

    def summary(document: dict[str, Any]) -> dict[str, Any]:
        totals = document.get("totals", {})
        return {
            "modelled_nnapi_program_us": totals.get("modelled_nnapi_program_us"),
            "offloaded_operators": _offloaded(document),
            "subgraphs": len(document.get("subgraphs", [])),
        }

    return {chosen: summary(estimate), other: summary(other_estimate)}


def llm_memory(args: argparse.Namespace, source: Any, profile: str | None) -> MemoryReport:
    """The modelled peak memory of the two programs an LLM's estimate compares: all on the host,
    and NNAPI-offloaded with the weights as ``--weights`` says, on the profile (a
    :class:`tvm_nnapi.tools.memory.MemoryReport`). The KV cache holds the prompt (prefill) or
    the cached tokens and the new one (decode)."""
    from tvm_nnapi.tools.memory import memory_report

    seq_len = int(source.shapes.get("seq_len", 1))
    context, chunk = (seq_len, seq_len) if source.entry == "prefill" else (seq_len + 1, 1)
    plans = {"input": "nnapi", "resident": "nnapi-resident", "int8": "nnapi-int8"}
    offloaded = plans[getattr(args, "weights", "input")]
    quantization = getattr(source, "llm_quantization", None) or source.llm_dtype
    where = getattr(args, "profile", None) or profile
    return memory_report(
        source.llm_config, quantization, [offloaded, "host"], where, context, chunk
    )


def _stage(
    args: argparse.Namespace, source: Any, document: dict[str, Any], graph: Any, progress: Progress
) -> None:
    source.check_bound()
    memory = None
    if source.kind == "llm":
        # A program that does not fit the phone's memory is refused before it is costed.
        memory = llm_memory(args, source, document["profile"])
        memory.refuse()
    document["estimate"] = estimate_document(args, source, document["profile"], progress)
    if memory is not None:
        document["estimate"]["memory"] = memory.to_dict()
    if source.kind != "llm":
        # Side by side (an LLM's engine partitions its functions itself: one strategy).
        document["estimate"]["strategies"] = strategy_totals(
            args, source, document["estimate"], progress
        )
    document["explain"]["subgraph_devices"] = {
        row["name"]: row["devices"] for row in document["estimate"]["subgraphs"]
    }


ESTIMATE = ModelCommand(
    "estimate", _stage, render=lambda out, document: print_estimate(out, document["estimate"])
)


def cmd_estimate(args: argparse.Namespace) -> int:
    """Modelled latency of the NNAPI-offloaded program vs the all-host program on a device
    profile, per NNAPI subgraph and in total. Every time is an output of the cost model
    (docs/cost-model.md), never a measurement."""
    return run_model_command(args, ESTIMATE)


def register(commands: Any) -> None:
    """Adds ``estimate`` to the ``tvm-nnapi`` subcommands."""
    estimate = commands.add_parser(
        "estimate",
        help="modelled latency: NNAPI-offloaded vs all-host program on a phone profile",
        description=cmd_estimate.__doc__,
    )
    add_model_arguments(
        estimate,
        "device profile to model (a name such as snapdragon-8-gen-2, or a .json path; "
        "default: the mock's current profile)",
    )
    estimate.add_argument(
        "--host-model",
        choices=["profile-cpu", "tvm-default", "tvm-dlight"],
        default="profile-cpu",
        help="how TVM's host code is modelled: an optimised CPU implementation (profile-cpu, "
        "the default), TVM's unscheduled code (tvm-default) or TVM with MLC-LLM's CPU "
        "schedules (tvm-dlight); docs/cost-model.md, 'Host code'",
    )
    estimate.add_argument(
        "--weights",
        choices=["input", "resident", "int8"],
        default="input",
        help="weights copied to the device at every call (input, as built), resident, or (llm: "
        "models) the int8 weight path, costed from its own graphs (docs/llm.md)",
    )
    estimate.set_defaults(handler=cmd_estimate)
