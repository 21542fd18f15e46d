# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi demo``: what the backend is for, on a built-in model and a phone profile.

In order: what runs where (each NNAPI subgraph with the device of the profile NNAPI gives it),
the modelled latency of the NNAPI-offloaded program against the all-host one, what the cost
strategy (``--partition cost``) keeps on the host and why, a run on the mock NNAPI with the
profile compared with the host llvm build (measured on this machine), and an operator NNAPI
cannot take with the reason it stays on the host. Every modelled figure says it is modelled.
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import EXIT_MISMATCH, Progress, add_relax_argument, positive, selected_profile
from .common import console as terminal

#: The model the last part shows a refusal on (an operator no NNAPI lowering takes).
REFUSAL_MODEL = "residual"


def _say(console: Any, text: str, indent: int = 2) -> None:
    """A line of the report (rich markup), wrapped at word boundaries to the terminal's width
    with its continuation lines indented as it is."""
    from rich.text import Text

    if text.startswith("\n"):
        console.print()
        text = text[1:]
    lines = Text.from_markup(text).wrap(console, max(console.width - indent, 40))
    for line in lines:
        line.rstrip()
        console.print(Text(" " * indent) + line, soft_wrap=True)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _operators(ops: dict[str, int]) -> str:
    return ", ".join(f"{op.removeprefix('relax.')} x{n}" for op, n in sorted(ops.items()))


class _RememberedPlacement:
    """A cost oracle that answers each module once: the demo partitions one model with the cost
    strategy twice (for its refusals and for its estimate), and the placement of a module does
    not change between the two."""

    def __init__(self, oracle: Any) -> None:
        self.oracle = oracle
        self.answers: dict[int, Any] = {}

    def describe(self) -> str:
        return str(self.oracle.describe())

    def refused_candidates(self, mod: Any) -> Any:
        import tvm_ffi

        key = tvm_ffi.structural_hash(mod)
        if key not in self.answers:
            self.answers[key] = self.oracle.refused_candidates(mod)
        return self.answers[key]


def _options(args: argparse.Namespace, strategy: str, cache: dict[str, Any]) -> Any:
    """The partition options for ``args.profile`` and ``strategy``, one set per strategy."""
    from tvm_nnapi.tools.partition_target import partition_options

    if strategy not in cache:
        options = partition_options(args.profile, relax_fp16=args.relax_fp16, strategy=strategy)
        if options.cost_oracle is not None:
            options.cost_oracle = _RememberedPlacement(options.cost_oracle)
        cache[strategy] = options
    return cache[strategy]


def _modelled(args: argparse.Namespace, source: Any, options: Any) -> dict[str, Any]:
    """The estimate document of ``source`` on ``args.profile`` partitioned with ``options``."""
    from tvm_nnapi.tools.estimate import estimate

    result = estimate(source.symbolic_module, args.profile, shapes=source.shapes, options=options)
    return result.to_dict()


def _offloaded(document: dict[str, Any]) -> int:
    return sum(
        sum(row["relax_operators"].values()) * row.get("calls", 1) for row in document["subgraphs"]
    )


def cmd_demo(args: argparse.Namespace) -> int:
    """Partition a built-in model for a phone profile and show what runs where (and on which
    NNAPI device), the modelled speedup over the host, what the cost strategy decides, a run on
    the mock NNAPI compared with host llvm (measured), and a refusal with its reason."""
    from rich.markup import escape
    from rich.table import Table

    console = terminal()
    profile = None if args.profile == "none" else args.profile
    with Progress(quiet=False) as progress:
        progress("importing TVM and the NNAPI runtime...")
        import tvm_nnapi
        from tvm_nnapi.tools.run import run_model
        from tvm_nnapi.tools.sources import load_model_source

        if profile is not None:
            profile = selected_profile(profile)
        source = load_model_source(args.model, batch=args.batch)
        bound = ", ".join(f"{k}={v}" for k, v in source.shapes.items())
        _say(
            console,
            f"[bold]Model[/bold] {escape(args.model)}: {escape(source.description)}"
            + (f"; shapes bound: {bound}" if bound else ""),
            0,
        )
        _say(
            console,
            f"[bold]Phone profile[/bold] {profile}: every time marked modelled comes from the "
            "mock's cost model for this phone, not from a measurement"
            if profile
            else "[bold]Phone profile[/bold] none (--profile none): nothing is modelled",
            0,
        )

        progress("partitioning for NNAPI...")
        args.profile = profile
        cache: dict[str, Any] = {}
        options = _options(args, args.partition, cache)
        report = tvm_nnapi.partition_with_report(source.module, options)
        summary = tvm_nnapi.offload_summary(report.module)
        modelled: dict[str, dict[str, Any]] = {}
        if profile is not None:
            progress(f"estimating on {profile} (modelled)...")
            modelled[args.partition] = _modelled(args, source, options)
        chosen = modelled.get(args.partition, {})
        devices = {row["name"]: row["devices"] for row in chosen.get("subgraphs", [])}

        table = Table(title=f"What runs where (--partition {args.partition})")
        table.add_column("part")
        table.add_column("operators")
        table.add_column("runs on")
        for name, ops in sorted(summary.subgraphs.items()):
            where = ", ".join(devices.get(name, [])) or "the device NNAPI picks"
            table.add_row(f"NNAPI subgraph {name}", _operators(dict(ops)), f"NNAPI: {where}")
        if summary.host:
            table.add_row("host", _operators(dict(summary.host)), "CPU: TVM llvm")
        console.print(table)
        known_flops = summary.offloaded_flops + summary.host_flops
        share = f"{summary.offloaded_flop_share:.1%}" if known_flops else "n/a (symbolic shapes)"
        _say(
            console,
            f"operators offloaded: {summary.offloaded_operators} of "
            f"{summary.offloaded_operators + summary.host_operators}; estimated FLOPs "
            f"offloaded: {share}",
            0,
        )
        _print_refusals(
            console,
            report.refusals,
            "no operator refused: each has an NNAPI lowering the profile's devices run",
        )

        if profile is not None:
            _print_modelled(console, profile, chosen)
            _print_strategy(console, args, source, modelled, cache, progress)

        progress("building with NNAPI offload and for host llvm, running both...")
        result = run_model(source, profile=profile, options=options, progress=progress)
        _print_run(console, result.to_dict())
        if args.model != REFUSAL_MODEL:
            progress(f"partitioning the {REFUSAL_MODEL} model...")
            _print_refusal_example(console, args, profile)
    _say(
        console,
        "\nMore: tvm-nnapi explain|estimate|run MODEL --profile P [--partition cost] "
        "[--report out.html]; docs/cli.md",
        0,
    )
    return 0 if result.passed else EXIT_MISMATCH


def _print_refusals(console: Any, refusals: list[Any], none: str) -> None:
    from rich.markup import escape

    if not refusals:
        _say(console, none, 0)
        return
    _say(console, "kept on the host, with the reason:", 0)
    for refusal in refusals:
        _say(console, f"[yellow]{escape(str(refusal))}[/yellow]", 2)


def _print_modelled(console: Any, profile: str, document: dict[str, Any]) -> None:
    from rich.markup import escape

    from tvm_nnapi.tools.estimate import why_nnapi_loses
    from tvm_nnapi.tools.report import _format_us, format_speedup

    totals = document["totals"]
    used = sorted({d for row in document["subgraphs"] for d in row["devices"]})
    rest = ", the rest on the host CPU" if document["host_rows"] else ""
    _say(console, f"\n[bold]Modelled on {profile}[/bold] (cost model, not measured; per call)", 0)
    _say(
        console,
        f"NNAPI-offloaded program:    {_format_us(totals['modelled_nnapi_program_us'])} "
        f"modelled (NNAPI on {', '.join(used) or 'no device'}{rest})",
    )
    _say(
        console,
        f"all on the host (TVM llvm): {_format_us(totals['modelled_host_program_us'])} "
        "modelled (host CPU)",
    )
    speedup = float(totals["modelled_speedup"])
    verdict = "NNAPI pays" if speedup > 1 else "NNAPI does not pay here"
    _say(
        console,
        f"modelled speedup of offloading: {format_speedup(speedup)} ({verdict}); one-off "
        f"modelled NNAPI compilation: {_format_us(totals['modelled_compilation_us'])}",
    )
    reason = why_nnapi_loses(document)
    if reason:
        _say(console, escape(reason))


def _print_strategy(
    console: Any,
    args: argparse.Namespace,
    source: Any,
    modelled: dict[str, dict[str, Any]],
    cache: dict[str, Any],
    progress: Progress,
) -> None:
    """Both partition strategies side by side (modelled), and what the cost strategy keeps on
    the host with its numbers."""
    import tvm_nnapi
    from tvm_nnapi.tools.report import _format_us

    other = "cost" if args.partition == "all" else "all"
    progress(f"partitioning with --partition {other} and estimating it (modelled)...")
    modelled[other] = _modelled(args, source, _options(args, other, cache))
    _say(
        console,
        "\n[bold]What --partition cost decides[/bold]: each operator goes where the cost model "
        "times it lower, NNAPI or the host, transfers and per-call overheads included",
        0,
    )
    for name in ("all", "cost"):
        document = modelled[name]
        _say(
            console,
            f"--partition {name}: {_offloaded(document)} operators on NNAPI in "
            f"{_plural(len(document['subgraphs']), 'subgraph')}, program "
            f"{_format_us(document['totals']['modelled_nnapi_program_us'])} modelled",
        )
    if args.partition == "all":
        report = tvm_nnapi.partition_with_report(source.module, _options(args, "cost", cache))
        kept = [r for r in report.refusals if r.kind.value == "cost"]
        _print_refusals(
            console, kept, "the cost strategy keeps no offloadable operator on the host"
        )


def _print_run(console: Any, run: dict[str, Any]) -> None:
    from tvm_nnapi.tools.report import _format_us, format_seconds

    measured = run["measured_seconds"]
    _say(
        console,
        f"\n[bold]Run on the mock NNAPI[/bold] (profile {run['profile']}) against the host llvm "
        "build of the same model",
        0,
    )
    used = sorted({d for e in run["modelled"]["executions"] for d in e["devices"]})
    _say(
        console,
        f"NNAPI devices that ran operations (mock traces): {', '.join(used) or 'none'}; "
        f"{_plural(run['nnapi_executions'], 'NNAPI execution')}, "
        f"{_plural(run['nnapi_operations_executed'], 'operation')}",
    )
    if run["outputs"]:
        first = run["outputs"][0]
        _say(
            console,
            f"max |NNAPI - llvm| / max |llvm|: {run['max_rel_error']:.2e} (tolerance "
            f"{first['tolerance']:.0e}, {first['precision']})",
        )
    _say(console, "measured on this machine (the mock computes on this CPU, not a phone's):")
    _say(
        console,
        "first NNAPI call (builds and compiles the NNAPI models): "
        f"{format_seconds(measured['nnapi_first_call'])}",
        4,
    )
    _say(console, f"NNAPI call: {format_seconds(measured['nnapi_call'])}", 4)
    _say(console, f"host llvm call: {format_seconds(measured['host_call'])}", 4)
    if run["modelled"]["executions"]:
        _say(
            console,
            "the same NNAPI call on the profile's devices: "
            f"{_format_us(run['modelled']['nnapi_total_us'])} modelled",
        )
    if run["passed"]:
        _say(console, "[green]OK[/green]: results match the host llvm build", 0)
    else:
        _say(console, "[red]MISMATCH[/red]: results differ from the host llvm build", 0)


def _print_refusal_example(console: Any, args: argparse.Namespace, profile: str | None) -> None:
    """The built-in model with an operator NNAPI cannot take: the refusal and, on the profile,
    what offloading the rest would cost and what the cost strategy does with it."""
    import tvm_nnapi
    from tvm_nnapi.tools.partition_target import partition_options
    from tvm_nnapi.tools.report import _format_us
    from tvm_nnapi.tools.sources import load_model_source

    source = load_model_source(REFUSAL_MODEL, batch=1)
    _say(
        console,
        f"\n[bold]An operator NNAPI cannot take[/bold]: the built-in {REFUSAL_MODEL} model, "
        "a small elementwise network with a cumsum",
        0,
    )
    report = tvm_nnapi.partition_with_report(
        source.module, partition_options(profile, relax_fp16=args.relax_fp16)
    )
    summary = tvm_nnapi.offload_summary(report.module)
    _print_refusals(console, report.refusals, "no operator refused")
    _say(
        console,
        f"the other {summary.offloaded_operators} operators go to NNAPI in "
        f"{_plural(len(summary.subgraphs), 'subgraph')}; what is refused runs on the host "
        "CPU (TVM llvm)",
    )
    if profile is None:
        return
    small = argparse.Namespace(profile=profile, relax_fp16=args.relax_fp16)
    totals = _modelled(small, source, _options(small, "all", {}))["totals"]
    cost = _modelled(small, source, _options(small, "cost", {}))
    slower = float(totals["modelled_speedup"]) < 1
    _say(
        console,
        f"modelled on {profile}: NNAPI-offloaded "
        f"{_format_us(totals['modelled_nnapi_program_us'])}, all on the host "
        f"{_format_us(totals['modelled_host_program_us'])}"
        + ("; NNAPI's fixed per-call costs outweigh so little work" if slower else ""),
    )
    kept = _offloaded(cost)
    _say(
        console,
        "--partition cost "
        + (f"keeps {kept} of them on NNAPI" if kept else "keeps them all on the host")
        + f": program {_format_us(cost['totals']['modelled_nnapi_program_us'])} modelled",
    )


def register(commands: Any) -> None:
    """Adds ``demo`` to the ``tvm-nnapi`` subcommands."""
    demo = commands.add_parser(
        "demo",
        help="partition a model for a phone profile: what runs where, modelled speedup, the cost "
        "strategy, a run on the mock NNAPI vs host llvm, a refusal with its reason",
        description=cmd_demo.__doc__,
    )
    demo.add_argument(
        "--model",
        choices=["mobilenet_v2", "mobilenet_v2_small", "residual"],
        default="mobilenet_v2",
        help="built-in model, as in `tvm-nnapi models` (default: mobilenet_v2, 224x224, whose "
        "modelled NNAPI program is faster than the host's on the default profile)",
    )
    demo.add_argument(
        "--batch", type=positive, default=1, help="batch size of the input (default 1)"
    )
    demo.add_argument(
        "--profile",
        default="snapdragon-8-gen-2",
        help="phone profile (default snapdragon-8-gen-2): what the partition targets, what the "
        "estimate models and what the mock runs with; `none` models nothing and runs on the "
        "mock's current profile",
    )
    demo.add_argument(
        "--partition",
        choices=("all", "cost"),
        default="all",
        help="the partition strategy the demo runs (default all); the other is estimated beside it",
    )
    add_relax_argument(demo)
    demo.set_defaults(handler=cmd_demo)
