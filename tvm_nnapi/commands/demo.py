# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi demo``: partition a built-in model, estimate it on a phone profile, run it on the
mock NNAPI and on host llvm, and compare."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .common import add_relax_argument, positive
from .common import console as terminal


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _modelled_time(us: float) -> str:
    return f"{us / 1e3:.3f} ms" if us >= 1000 else f"{us:.3g} us"


def cmd_demo(args: argparse.Namespace) -> int:
    """Partition a built-in model, run it on NNAPI (the mock) and on host llvm, print a report."""
    from rich.markup import escape
    from rich.table import Table

    console = terminal()
    with console.status("importing TVM and the NNAPI runtime..."):
        import tvm
        from tvm import relax

        import mock_nnapi
        import tvm_nnapi
        from mock_nnapi import control
        from tvm_nnapi.compiler.patterns import PartitionOptions
        from tvm_nnapi.tools.run import compare, computation_precision, random_inputs
        from tvm_nnapi.tools.sources import load_model_source

    source = load_model_source(args.model, batch=args.batch)
    bound = ", ".join(f"{k}={v}" for k, v in source.shapes.items())
    console.print(
        f"[bold]Model[/bold]: {escape(args.model)}: {escape(source.description)}"
        + (f"; shapes bound: {bound}" if bound else "")
    )
    mod = source.module
    with console.status("partitioning for NNAPI..."):
        options = PartitionOptions(relax_fp32_to_fp16=args.relax_fp16)
        report = tvm_nnapi.partition_with_report(mod, options)
        summary = tvm_nnapi.offload_summary(report.module)

    table = Table(title="What runs where")
    table.add_column("place")
    table.add_column("operators", overflow="fold")
    for name, ops in sorted(summary.subgraphs.items()):
        text = ", ".join(f"{op.removeprefix('relax.')} x{n}" for op, n in sorted(ops.items()))
        table.add_row(f"NNAPI subgraph {_short(name)}", text)
    if summary.host:
        text = ", ".join(f"{op.removeprefix('relax.')} x{n}" for op, n in summary.host.items())
        table.add_row("host (TVM llvm)", text)
    console.print(table)
    known_flops = summary.offloaded_flops + summary.host_flops
    share = f"{summary.offloaded_flop_share:.1%}" if known_flops else "n/a (symbolic shapes)"
    console.print(
        f"operators offloaded: {summary.offloaded_operators} of "
        f"{summary.offloaded_operators + summary.host_operators}; estimated FLOPs offloaded: "
        f"{share}; NNAPI subgraphs: {len(summary.subgraphs)}"
    )
    for refusal in report.refusals:
        console.print(f"  [yellow]kept on host[/yellow]: {escape(str(refusal))}")

    if args.profile != "none":
        # Before anything is compiled: the mock switches profiles only with no live compilation.
        from tvm_nnapi.tools.estimate import estimate, why_nnapi_loses
        from tvm_nnapi.tools.report import format_speedup

        with console.status(f"estimating on the {args.profile} profile (modelled)..."):
            modelled = estimate(
                source.symbolic_module, args.profile, shapes=source.shapes, options=options
            )
        phone = Table(title=f"Modelled on the {args.profile} profile (cost model, not measured)")
        phone.add_column("program")
        phone.add_column("devices", overflow="fold")
        phone.add_column("modelled latency", justify="right")
        devices = sorted({d for row in modelled.subgraphs for d in row.devices})
        phone.add_row(
            "NNAPI-offloaded",
            ", ".join(devices) + (" + host" if modelled.host_rows else ""),
            _modelled_time(modelled.modelled_nnapi_program_us),
        )
        phone.add_row(
            "all on the host (TVM llvm)", "CPU", _modelled_time(modelled.modelled_host_program_us)
        )
        console.print(phone)
        console.print(
            "modelled speedup of the NNAPI-offloaded program: "
            f"{format_speedup(modelled.modelled_speedup)} (plus a one-off modelled NNAPI "
            f"compilation of {_modelled_time(modelled.modelled_compilation_us)})"
        )
        reason = why_nnapi_loses(modelled.to_dict())
        if reason:
            console.print(escape(reason))

    x = random_inputs(source)
    with console.status("building with NNAPI offload..."):
        nnapi_vm = relax.VirtualMachine(tvm_nnapi.build(report.module), tvm.cpu())
    with console.status("building the host-only llvm reference (the slow part)..."):
        host_vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    mock_nnapi.reset_counters()
    arguments = [tvm.runtime.tensor(a) for a in x]
    with console.status("running..."):
        start = time.perf_counter()
        result = nnapi_vm[source.entry](*arguments).numpy()
        nnapi_seconds = time.perf_counter() - start
        start = time.perf_counter()
        expected = host_vm[source.entry](*arguments).numpy()
        host_seconds = time.perf_counter() - start
    counters = mock_nnapi.counters()
    precision = computation_precision(source, args.relax_fp16)
    (check,) = compare([result], [expected], precision=precision)

    profile = control.profile_name()
    run = Table(title=f"Run on the mock NNAPI (profile {profile}) vs host llvm")
    run.add_column("measure")
    run.add_column("value", justify="right", overflow="fold")
    run.add_row("NNAPI library", tvm_nnapi.configure_nnapi_library())
    run.add_row("mock device profile of the run", profile)
    run.add_row("NNAPI executions (mock counter)", str(counters["executions_completed"]))
    run.add_row("NNAPI operations executed (mock counter)", str(counters["operations_executed"]))
    run.add_row("max |NNAPI - llvm| / max |llvm|", f"{check.max_rel_error:.2e}")
    run.add_row("tolerance (precision computed in)", f"{check.tolerance:.0e} ({check.precision})")
    run.add_row("first NNAPI call, incl. NNAPI compile (measured)", f"{nnapi_seconds:.3f} s")
    run.add_row("first llvm call (measured)", f"{host_seconds:.3f} s")
    console.print(run)
    ok = check.passed and counters["executions_completed"] == len(summary.subgraphs)
    console.print("[green]OK[/green]: results match" if ok else "[red]MISMATCH[/red]")
    console.print(
        "More: tvm-nnapi explain | estimate --profile P | run MODEL [--report out.html] "
        "(docs/cli.md)"
    )
    return 0 if ok else 1


def register(commands: Any) -> None:
    """Adds ``demo`` to the ``tvm-nnapi`` subcommands."""
    demo = commands.add_parser(
        "demo",
        help="partition a small model, run it on the mock NNAPI and compare with host llvm",
        description=cmd_demo.__doc__,
    )
    demo.add_argument(
        "--model",
        choices=["residual", "mobilenet_v2_small", "mobilenet_v2"],
        default="residual",
        help="built-in model, as in `tvm-nnapi models` (default: residual, a small network "
        "with one operator NNAPI cannot take)",
    )
    demo.add_argument(
        "--batch", type=positive, default=1, help="batch size of the input (default 1)"
    )
    demo.add_argument(
        "--profile",
        default="snapdragon-8-gen-2",
        help="phone profile for the modelled latency estimate (default snapdragon-8-gen-2; "
        "`none` skips it); the run itself uses the mock's current profile, which it names",
    )
    add_relax_argument(demo)
    demo.set_defaults(handler=cmd_demo)
