"""The ``tvm-nnapi`` command line (also ``python -m tvm_nnapi``).

Subcommands:
  demo      partition a small built-in model, run it on the mock NNAPI, compare with host llvm
  devices   list the NNAPI devices (the mock's, or a real NNAPI's) and their feature levels
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np


def _console():
    from rich.console import Console

    return Console()


def cmd_demo(args: argparse.Namespace) -> int:
    """Partition the demo model, run it on NNAPI (the mock) and on host llvm, print a report."""
    from rich.table import Table

    console = _console()
    with console.status("importing TVM and the NNAPI runtime..."):
        import tvm
        from tvm import relax

        import mock_nnapi
        import tvm_nnapi
        from tvm_nnapi.models import demo_model

    mod, info = demo_model(features=args.features)
    console.print(f"[bold]Model[/bold]: demo, input ({args.batch}, {args.features}) float32")
    with console.status("partitioning for NNAPI..."):
        report = tvm_nnapi.partition_with_report(mod)
        summary = tvm_nnapi.offload_summary(report.module)

    table = Table(title="What runs where")
    table.add_column("place")
    table.add_column("operators")
    for name, ops in sorted(summary.subgraphs.items()):
        table.add_row(f"NNAPI subgraph {name}", ", ".join(f"{op} x{n}" for op, n in ops.items()))
    if summary.host:
        table.add_row("host (TVM llvm)", ", ".join(f"{op} x{n}" for op, n in summary.host.items()))
    console.print(table)
    for refusal in report.refusals:
        console.print(f"  [yellow]kept on host[/yellow]: {refusal}")

    x = np.random.default_rng(0).standard_normal((args.batch, args.features)).astype(np.float32)
    with console.status("building (NNAPI offload and host-only)..."):
        nnapi_vm = relax.VirtualMachine(tvm_nnapi.build(report.module), tvm.cpu())
        host_vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    mock_nnapi.reset_counters()
    start = time.perf_counter()
    result = nnapi_vm[info["entry"]](tvm.runtime.tensor(x)).numpy()
    nnapi_seconds = time.perf_counter() - start
    start = time.perf_counter()
    expected = host_vm[info["entry"]](tvm.runtime.tensor(x)).numpy()
    host_seconds = time.perf_counter() - start
    counters = mock_nnapi.counters()
    error = float(np.max(np.abs(result - expected)))

    run = Table(title="Run on the mock NNAPI vs host llvm")
    run.add_column("measure")
    run.add_column("value", justify="right")
    run.add_row("NNAPI library", tvm_nnapi.configure_nnapi_library())
    run.add_row("NNAPI executions (mock counter)", str(counters["executions_completed"]))
    run.add_row("NNAPI operations executed", str(counters["operations_executed"]))
    run.add_row("max |NNAPI - llvm|", f"{error:.3g}")
    run.add_row("first call, NNAPI build (measured, includes compile)", f"{nnapi_seconds:.4f} s")
    run.add_row("first call, host build (measured)", f"{host_seconds:.4f} s")
    console.print(run)
    ok = error <= 1e-5 and counters["executions_completed"] == len(summary.subgraphs)
    console.print("[green]OK[/green]: results match" if ok else "[red]MISMATCH[/red]")
    return 0 if ok else 1


def cmd_devices(args: argparse.Namespace) -> int:
    """List the NNAPI devices."""
    from rich.table import Table

    import mock_nnapi
    import tvm_nnapi

    library = tvm_nnapi.configure_nnapi_library()
    table = Table(title=f"NNAPI devices ({library})")
    for column in ("#", "name", "type", "version", "feature level"):
        table.add_column(column)
    for index, device in enumerate(mock_nnapi.devices()):
        kind = mock_nnapi.DeviceTypeCode(device.type).name
        table.add_row(str(index), device.name, kind, device.version, str(device.feature_level))
    _console().print(table)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tvm-nnapi",
        description="TVM Relax + Android NNAPI: partition, run on the mock NNAPI, inspect devices.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="partition a small model, run it on the mock NNAPI and compare with host llvm",
        description=cmd_demo.__doc__,
    )
    demo.add_argument("--batch", type=int, default=4, help="batch size of the input (default 4)")
    demo.add_argument("--features", type=int, default=16, help="feature width (default 16)")
    demo.set_defaults(handler=cmd_demo)
    devices = commands.add_parser(
        "devices", help="list NNAPI devices and feature levels", description=cmd_devices.__doc__
    )
    devices.set_defaults(handler=cmd_devices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
