# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi run``: build with NNAPI offload, run on the NNAPI library in use and on host llvm,
compare (optionally operator by operator), write a Perfetto trace of the modelled timeline."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import (
    ModelLoadError,
    TargetError,
    TargetUnavailableError,
    ToolError,
    UsageError,
)
from .common import (
    Progress,
    add_target_argument,
    device_choice_text,
    one_line,
    open_command_target,
    partition_options,
)
from .pipeline import ModelCommand, add_model_arguments, run_model_command


def _safe_name(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text.rsplit("/", 1)[-1]).strip("_") or "model"


def _run(args: argparse.Namespace, source, graph, progress: Progress):
    import json

    from tvm_nnapi.tools.graph_view import assign_devices_from_traces
    from tvm_nnapi.tools.partition_target import ChosenDevices
    from tvm_nnapi.tools.report import timeline_from_traces
    from tvm_nnapi.tools.run import chrome_trace, run_model

    options = partition_options(args, getattr(args, "profile", None))
    if getattr(args, "layerwise", False) and source.kind == "llm":
        raise UsageError(
            f"{source.spec}: --layerwise compares the subgraphs of one function run on its "
            "inputs; an LLM runs through its engine (KV cache, several functions) and is not "
            "supported yet: use a module (a built-in CNN, .py, .onnx, TVMScript)"
        )
    remote = getattr(args, "target", "mock") != "mock"
    target = open_command_target(args) if remote else None
    try:
        if target is not None:
            _configure_target_devices(target, getattr(args, "device_choice", None))
            if isinstance(options.device_oracle, ChosenDevices):
                # What the target's own devices run decides the partition.
                options.device_oracle.target = target
        result = run_model(
            source,
            seed=args.seed,
            rtol=args.rtol,
            progress=progress,
            options=options,
            target=target,
        )
        layers = None
        if getattr(args, "layerwise", False):
            import tvm_nnapi
            from tvm_nnapi.tools.layerwise import layerwise
            from tvm_nnapi.tools.run import computation_precision, random_inputs

            where = "the host" if target is None else f"the host, NNAPI on {target.describe()}"
            progress(f"comparing every NNAPI operator with {where} (--layerwise)...")
            try:
                partitioned = tvm_nnapi.partition(source.module, options, source.partition_entries)
                layers = layerwise(
                    source,
                    partitioned,
                    random_inputs(source, args.seed),
                    computation_precision(source, options.relax_fp32_to_fp16),
                    args.rtol,
                    target=target,
                )
            except (UsageError, ModelLoadError, TargetError, TargetUnavailableError):
                raise
            except Exception as failure:
                # The model ran; what failed is the comparison itself (exit 3, not bad input).
                raise ToolError(
                    f"--layerwise: comparing the NNAPI operators with the host failed: "
                    f"{type(failure).__name__}: {one_line(str(failure))}"
                ) from failure
    finally:
        if target is not None:
            target.close()
    labels = [name for name, _ in graph.subgraph_calls]
    if len(labels) != len(result.traces):
        labels = []
    assign_devices_from_traces(graph, result.traces)
    trace_path = args.trace or f"{_safe_name(source.spec)}.trace.json"
    if trace_path != "-" and result.traces:
        with open(trace_path, "w", encoding="utf-8") as file:
            json.dump(chrome_trace(result, labels), file)
        result.trace_file = trace_path
    data = result.to_dict()
    data["device_choice"] = getattr(args, "device_choice", None)
    if layers is not None:
        data["layerwise"] = layers.to_dict()
    if args.result:
        with open(args.result, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=2)
    return data, timeline_from_traces(result.traces, labels)


def _configure_target_devices(target: Any, choice: dict[str, Any] | None) -> None:
    """--devices / --no-nnapi-cpu on a remote target: its runtime's options, after checking the
    names against the devices its NNAPI lists."""
    if choice is None:
        return
    present = [device["name"] for device in target.nnapi_devices()["devices"]]
    unknown = [name for name in choice["devices"] if name not in present]
    if unknown:
        raise UsageError(
            f"--devices {','.join(choice['devices'])}: {target.describe()} has no NNAPI device "
            f"named {', '.join(unknown)} (devices: {', '.join(present)}; see `tvm-nnapi devices "
            f"--target {target.name}`)"
        )
    target.configure(devices=choice["devices"], exclude_cpu=choice["exclude_cpu"])


def _print_run(console, run: dict[str, Any]) -> None:
    from rich.table import Table

    from tvm_nnapi.tools.report import _format_us, format_seconds
    from tvm_nnapi.tools.run import output_facts

    where = run.get("target", "mock")
    remote = where != "mock"
    table = Table(title=f"Run on the {'mock NNAPI' if not remote else where} vs host llvm")
    table.add_column("measure")
    table.add_column("value", justify="right", overflow="fold")
    table.add_row("target", where if remote else "mock (this process)")
    table.add_row("NNAPI library", run["nnapi_library"])
    table.add_row("device profile", run["profile"])
    table.add_row("NNAPI devices chosen", device_choice_text(run.get("device_choice")))
    if remote:
        stats = run.get("target_stats", {})
        operations = run["nnapi_operations_executed"]
        table.add_row(
            "NNAPI subgraph calls / operations (the target's runtime; operations: its mock)",
            f"{run['nnapi_executions']} / {operations if operations >= 0 else 'not counted'}",
        )
        table.add_row(
            "host fallbacks / compilations / cache hits (the target's runtime)",
            f"{stats.get('fallbacks', 0)} / {stats.get('compilations', 0)} / "
            f"{stats.get('cache_hits', 0)}",
        )
        measured = run.get("measured_on_target") or {}
        if measured:
            table.add_row(
                "NNAPI executions' wall clock (MEASURED on the target)",
                f"{measured['nnapi_execute_ms']:.3f} ms",
            )
            if measured.get("getduration_in_driver_ms") is not None:
                table.add_row(
                    "NNAPI getDuration in driver / on hardware (as the target's NNAPI reports)",
                    f"{measured['getduration_in_driver_ms']:.3f} / "
                    f"{measured['getduration_on_hardware_ms']:.3f} ms",
                )
    else:
        devices = sorted({d for e in run["modelled"]["executions"] for d in e["devices"]})
        table.add_row(
            "NNAPI devices that ran operations (mock traces)", ", ".join(devices) or "none"
        )
        table.add_row(
            "NNAPI executions / operations (mock counters)",
            f"{run['nnapi_executions']} / {run['nnapi_operations_executed']}",
        )
    table.add_row("max |NNAPI - llvm|", f"{run['max_abs_error']:.3e}")
    table.add_row("max |NNAPI - llvm| / max |llvm|", f"{run['max_rel_error']:.3e}")
    for what, value in output_facts(run):
        table.add_row(what, value)
    for name, seconds in run["measured_seconds"].items():
        table.add_row(f"{name.replace('_', ' ')} (measured on this host)", format_seconds(seconds))
    if not remote:
        table.add_row(
            "NNAPI executions (MODELLED on the profile)",
            _format_us(run["modelled"]["nnapi_total_us"]),
        )
    if run.get("trace_file"):
        table.add_row("Perfetto trace (modelled times)", run["trace_file"])
    console.print(table)
    if run.get("layerwise") is not None:
        _print_layerwise(console, run["layerwise"])
    if run["passed"]:
        console.print("[green]OK[/green]: results match the host llvm build")
    elif not run["nnapi_ran"] and run["nnapi_subgraphs"]:
        console.print("[red]FAIL[/red]: NNAPI did not run although the model has NNAPI subgraphs")
    else:
        console.print("[red]MISMATCH[/red]: results differ from the host llvm build")


#: Rows of the layer-wise table on the terminal; the JSON and the HTML report have every row.
LAYERWISE_TERMINAL_ROWS = 8


def _print_layerwise(console, layers: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from tvm_nnapi.tools.layerwise import (
        error_text,
        node_text,
        operators_text,
        shown_rows,
        tolerance_text,
        verdict_text,
    )

    rows = layers["rows"]
    shown = shown_rows(layers, LAYERWISE_TERMINAL_ROWS)
    table = Table(
        title=f"Layer-wise: each NNAPI operator vs the host on the same inputs "
        f"({layers['operators_compared']} operators, {layers['precision']})"
    )
    columns = (
        "model node",
        "subgraph",
        "call",
        "Relax",
        "NNAPI",
        "max error (rel / steps)",
        "tolerance",
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in shown:
        marker = "[red]" if not row["passed"] else ""
        table.add_row(
            escape(node_text(row)),
            row["subgraph"],
            str(row["call_index"]),
            escape(operators_text(row)),
            ", ".join(row["nnapi_operations"]),
            f"{marker}{error_text(row)}",
            tolerance_text(row),
        )
    if len(shown) < len(rows):
        which = "the largest errors against their tolerance"
        if layers["first_divergence"] is not None:
            which = f"the first over the tolerance, then {which}"
        table.caption = (
            f"{len(shown)} of {len(rows)} operators shown ({which}); every row is in --json "
            "(run.layerwise.rows) and the --report page"
        )
    console.print(table)
    verdict = escape(verdict_text(layers))
    if layers["first_divergence"] is None:
        console.print(f"layer-wise: {verdict}")
    else:
        head, _, rest = verdict.partition(": ")
        console.print(f"[red]layer-wise: {head}[/red]: {rest}")


def _check_spec(args: argparse.Namespace) -> None:
    if args.model.startswith("llm:"):
        # Before exporting the model: refuse weights too large to allocate.
        from ..tools.run import check_llm_weights
        from ..tools.sources import parse_llm_format

        config, weight_format = parse_llm_format(args.model)
        check_llm_weights(args.model, config, weight_format.name)


def _check_source(source: Any) -> None:
    from ..tools.run import check_runnable

    check_runnable(source)


def _stage(
    args: argparse.Namespace, source: Any, document: dict[str, Any], graph: Any, progress: Progress
) -> None:
    explanation = document["explain"]
    document["run"], document["timeline"] = _run(args, source, graph, progress)
    explanation["graph"] = graph.to_dict()  # with the devices the run used
    if document["run"].get("layerwise"):
        from ..tools.layerwise import LayerRow, LayerwiseResult, mark_graph

        layers = document["run"]["layerwise"]
        rows = [LayerRow(**row) for row in layers["rows"]]
        mark_graph(explanation["graph"], LayerwiseResult(rows, layers["precision"]))
    devices: dict[str, list[str]] = {}
    for node in graph.nodes:
        if node.subgraph:
            known = devices.setdefault(node.subgraph, [])
            known.extend(d for d in node.devices if d not in known)
    explanation["subgraph_devices"] = devices


RUN = ModelCommand(
    "run",
    _stage,
    render=lambda out, document: _print_run(out, document["run"]),
    check_spec=_check_spec,
    check_source=_check_source,
)


def cmd_run(args: argparse.Namespace) -> int:
    """Build the model with NNAPI offload, run it on the mock NNAPI, run the host llvm build of
    the same module on the same random inputs, and compare (max absolute/relative error,
    pass/fail). Writes the mock's execution trace as Chrome trace-event JSON (open it in
    Perfetto; times MODELLED) and, with --result, the differential result as JSON. Exit code 1
    when the results differ."""
    return run_model_command(args, RUN)


def register(commands: Any) -> None:
    """Adds ``run`` to the ``tvm-nnapi`` subcommands."""
    run = commands.add_parser(
        "run",
        help="build, run on the mock NNAPI, compare with host llvm, write a Perfetto trace",
        description=cmd_run.__doc__,
    )
    add_model_arguments(
        run,
        "mock device profile to run on (name or .json path; with --target rpc and no server "
        "named, the loopback server's)",
    )
    add_target_argument(run)
    run.add_argument(
        "--trace",
        metavar="FILE",
        help="Perfetto trace file (default MODEL.trace.json in the current directory; - for none)",
    )
    run.add_argument("--result", metavar="FILE", help="also write the differential result JSON")
    run.add_argument(
        "--rtol",
        type=float,
        default=None,
        help="tolerance on max|NNAPI - llvm| / max|llvm| (default by the precision the model "
        "computes in: 1e-4 float32, 1e-2 float16 and float32 with --relax-fp16)",
    )
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs and weights")
    run.add_argument(
        "--layerwise",
        action="store_true",
        help="also compare every NNAPI operator's output with the host computation of the same "
        "operator on the same inputs, and name the first one over the tolerance",
    )
    run.set_defaults(handler=cmd_run)
