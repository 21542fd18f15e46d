"""The ``tvm-nnapi`` command line (also ``python -m tvm_nnapi``).

Subcommands:
  demo      partition a built-in model, run it on the mock NNAPI, compare with host llvm
  devices   list the NNAPI devices (the mock's, or a real NNAPI's) and their feature levels
  explain   which operators go to NNAPI (as which NNAPI operations) and why others do not
  compare-reports  compare two differential test reports (tvm_nnapi/difftest.py)
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


def _demo_model(name: str, batch: int):
    from tvm_nnapi.models import mobilenet_v2, residual_model

    if name == "mobilenet_v2":
        mod, info = mobilenet_v2(width=0.35, resolution=64, num_classes=10, batch=batch)
        return mod, info, f"MobileNetV2-style CNN (width 0.35, 64x64 input, batch {batch})"
    mod, info = residual_model()
    return mod, info, f"residual elementwise network with a host-only cumsum (batch {batch})"


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def cmd_demo(args: argparse.Namespace) -> int:
    """Partition a built-in model, run it on NNAPI (the mock) and on host llvm, print a report."""
    from rich.table import Table

    console = _console()
    with console.status("importing TVM and the NNAPI runtime..."):
        import tvm
        from tvm import relax

        import mock_nnapi
        import tvm_nnapi

    mod, info, title = _demo_model(args.model, args.batch)
    console.print(f"[bold]Model[/bold]: {title}")
    with console.status("partitioning for NNAPI..."):
        report = tvm_nnapi.partition_with_report(mod)
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
        console.print(f"  [yellow]kept on host[/yellow]: {refusal}")

    shape = tuple(info["input_shape"])
    if shape and isinstance(shape[0], str):
        shape = (args.batch, *shape[1:])
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    with console.status("building with NNAPI offload..."):
        nnapi_vm = relax.VirtualMachine(tvm_nnapi.build(report.module), tvm.cpu())
    with console.status("building the host-only llvm reference (the slow part)..."):
        host_vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    mock_nnapi.reset_counters()
    with console.status("running..."):
        start = time.perf_counter()
        result = nnapi_vm[info["entry"]](tvm.runtime.tensor(x)).numpy()
        nnapi_seconds = time.perf_counter() - start
        start = time.perf_counter()
        expected = host_vm[info["entry"]](tvm.runtime.tensor(x)).numpy()
        host_seconds = time.perf_counter() - start
    counters = mock_nnapi.counters()
    error = float(np.max(np.abs(result - expected)))
    scale = float(np.max(np.abs(expected))) or 1.0

    run = Table(title="Run on the mock NNAPI vs host llvm")
    run.add_column("measure")
    run.add_column("value", justify="right", overflow="fold")
    run.add_row("NNAPI library", tvm_nnapi.configure_nnapi_library())
    run.add_row("NNAPI executions (mock counter)", str(counters["executions_completed"]))
    run.add_row("NNAPI operations executed (mock counter)", str(counters["operations_executed"]))
    run.add_row("max |NNAPI - llvm| / max |llvm|", f"{error / scale:.2e}")
    run.add_row("first NNAPI call, incl. NNAPI compile (measured)", f"{nnapi_seconds:.3f} s")
    run.add_row("first llvm call (measured)", f"{host_seconds:.3f} s")
    console.print(run)
    ok = error <= 1e-4 * scale and counters["executions_completed"] == len(summary.subgraphs)
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


FEATURE_LEVELS = {1: 27, 2: 28, 3: 29, 4: 30, 5: 31, 6: 1000006, 7: 1000007, 8: 1000008}


def _feature_level(text: str) -> int:
    value = int(text)
    if value in FEATURE_LEVELS:
        return FEATURE_LEVELS[value]
    if value in FEATURE_LEVELS.values():
        return value
    raise argparse.ArgumentTypeError(
        f"{text} is not an NNAPI feature level (1-8, or 27-31 / 1000006-1000008)"
    )


def cmd_explain(args: argparse.Namespace) -> int:
    """Show, for a model, which operators go to NNAPI (and as which NNAPI operations) and why
    the others stay on the host. Nothing is built or run."""
    import json

    from rich.table import Table

    from tvm_nnapi.explain import ModelLoadError, explain, load_model
    from tvm_nnapi.patterns import PartitionOptions

    console = _console()
    try:
        with console.status(f"loading {args.model}..."):
            mod = load_model(args.model, batch=args.batch)
    except ModelLoadError as error:
        console.print(f"[red]error[/red]: {error}")
        return 2
    with console.status("partitioning for NNAPI..."):
        result = explain(mod, PartitionOptions(feature_level=args.feature_level))
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    table = Table(title=f"NNAPI subgraphs of {args.model}")
    for column in ("subgraph", "Relax operators", "NNAPI operations", "in/out", "symbols"):
        table.add_column(column, overflow="fold")
    for sub in result.subgraphs:
        relax_ops = ", ".join(
            f"{k.removeprefix('relax.')} x{v}" for k, v in sorted(sub.relax_operators.items())
        )
        nnapi_ops = ", ".join(f"{k} x{v}" for k, v in sorted(sub.nnapi_operations.items()))
        table.add_row(
            sub.name, relax_ops, nnapi_ops, f"{sub.inputs}/{sub.outputs}", ", ".join(sub.symbols)
        )
    console.print(table)
    if result.refusals:
        refused = Table(title="Operators kept on the host")
        for column in ("binding", "operator", "reason kind", "reason"):
            refused.add_column(column, overflow="fold")
        for refusal in result.refusals:
            refused.add_row(
                refusal["binding"], refusal["operator"], refusal["kind"], refusal["reason"]
            )
        console.print(refused)
    share = f"{result.flop_share:.1%}" if result.flop_share is not None else "n/a (symbolic shapes)"
    console.print(
        f"operators offloaded: {result.offloaded_operators} of {result.total_operators}; "
        f"estimated FLOPs offloaded: {share}; NNAPI subgraphs: {len(result.subgraphs)}; "
        f"host<->NNAPI boundary values: {result.boundary_transfers}"
    )
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
    demo.add_argument(
        "--model",
        choices=["mobilenet_v2", "residual"],
        default="mobilenet_v2",
        help="built-in model (default: a small MobileNetV2-style CNN)",
    )
    demo.add_argument("--batch", type=int, default=1, help="batch size of the input (default 1)")
    demo.set_defaults(handler=cmd_demo)
    devices = commands.add_parser(
        "devices", help="list NNAPI devices and feature levels", description=cmd_devices.__doc__
    )
    devices.set_defaults(handler=cmd_devices)
    explain = commands.add_parser(
        "explain",
        help="which operators go to NNAPI, as which NNAPI operations, and why others do not",
        description=cmd_explain.__doc__,
    )
    explain.add_argument(
        "model",
        help="a built-in model (mobilenet_v2, mobilenet_v2_small, residual), or a .py file "
        "defining `mod`/`get_model()`, a TVMScript file, or an .onnx file",
    )
    explain.add_argument(
        "--feature-level",
        type=_feature_level,
        default=FEATURE_LEVELS[8],
        help="NNAPI feature level of the target (1-8 or Android's codes; default 8)",
    )
    explain.add_argument("--batch", type=int, default=1, help="batch size for built-in models")
    explain.add_argument("--json", action="store_true", help="print the result as JSON")
    explain.set_defaults(handler=cmd_explain)
    from tvm_nnapi import difftest

    difftest.add_subcommands(commands)  # compare-reports
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
