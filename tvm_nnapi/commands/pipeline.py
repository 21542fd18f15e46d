# SPDX-License-Identifier: Apache-2.0
"""The pipeline of the commands that take a MODEL (``explain``, ``estimate``, ``run``): check the
options, select the profile, load the model, partition and describe it, then the command's own
stage; render the document for people or print it as JSON (docs/cli.md), write the HTML
report. Each such command is a :class:`ModelCommand`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ToolError, UsageError
from .common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_MISMATCH,
    JSON_SCHEMA,
    Progress,
    add_relax_argument,
    check_output_paths,
    console,
    device_choice_text,
    error,
    feature_level,
    one_line,
    partition_options,
    positive,
    selected_profile,
    user_error,
)


@dataclass(frozen=True)
class ModelCommand:
    """A command of the MODEL pipeline.

    ``stage(args, source, document, graph, progress)`` adds the command's part to the document
    (``document["explain"]`` is already there); ``render(console, document)`` prints it for
    people after the explanation. ``check_spec(args)`` runs before the model is loaded,
    ``check_source(source)`` right after; both raise to refuse."""

    name: str
    stage: Callable[[argparse.Namespace, Any, dict[str, Any], Any, Progress], None]
    render: Callable[[Any, dict[str, Any]], None] | None = None
    check_spec: Callable[[argparse.Namespace], None] | None = None
    check_source: Callable[[Any], None] | None = None


def _load(args: argparse.Namespace, progress: Progress):
    from tvm_nnapi.tools.sources import load_model_source, parse_shapes

    progress(f"loading {args.model}...")
    return load_model_source(
        args.model, parse_shapes(args.shapes), entry=args.entry, batch=args.batch
    )


def _explain_document(args: argparse.Namespace, source, progress: Progress, profile):
    """The explanation (its JSON document) and the operator graph. The partition itself is not
    returned: it holds the model's folded constants (a transposed weight), which the command's
    own stage would otherwise keep alive while it builds and runs."""
    import tvm_nnapi
    from tvm_nnapi.tools.explain import explain
    from tvm_nnapi.tools.graph_view import operator_graph

    options = partition_options(args, profile)
    progress("partitioning for NNAPI...")
    partition = tvm_nnapi.partition_with_report(
        source.module, options, entry_functions=source.partition_entries
    )
    progress("lowering the NNAPI subgraphs...")
    result = explain(
        source.module, options, entry_functions=source.partition_entries, report=partition
    )
    graph = operator_graph(partition.module, source.entry, result.refusals)
    data = result.to_dict()
    data["feature_level"] = options.feature_level
    data["relax_fp32_to_fp16"] = options.relax_fp32_to_fp16
    data["graph"] = graph.to_dict()
    return data, graph


def _document(command: str, source, profile: str | None) -> dict[str, Any]:
    import tvm_nnapi

    return {
        "schema": JSON_SCHEMA,
        "command": command,
        "version": tvm_nnapi.__version__,
        "model": source.to_dict(),
        "profile": profile,
        "explain": None,
        "estimate": None,
        "run": None,
        "timeline": None,
    }


def _finish(args: argparse.Namespace, document: dict[str, Any]) -> None:
    import json

    if args.report:
        from tvm_nnapi.tools.report import write_report

        write_report(args.report, document)
    if args.json:
        print(json.dumps(document, indent=2, default=str))
    elif args.report:
        print(f"report: {args.report}")


def print_explanation(console, source, explanation: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=f"NNAPI subgraphs of {source.spec} ({source.entry}); operators counted per call"
    )
    devices = explanation.get("subgraph_devices")
    # The calls column only when a subgraph function runs more than once (an LLM's layers).
    repeated = any(sub.get("calls", 1) > 1 for sub in explanation["subgraphs"])
    columns = ["subgraph", "calls", "Relax operators", "NNAPI operations", "in/out", "symbols"]
    if not repeated:
        columns.remove("calls")
    for column in columns + (["devices"] if devices else []):
        table.add_column(column, overflow="fold")
    for sub in explanation["subgraphs"]:
        relax_ops = ", ".join(
            f"{k.removeprefix('relax.')} x{v}" for k, v in sorted(sub["relax_operators"].items())
        )
        nnapi_ops = ", ".join(f"{k} x{v}" for k, v in sorted(sub["nnapi_operations"].items()))
        cells = [
            sub["name"],
            *([str(sub.get("calls", 1))] if repeated else []),
            relax_ops,
            nnapi_ops,
            f"{sub['inputs']}/{sub['outputs']}",
            ", ".join(sub["symbols"]),
        ]
        if devices:
            cells.append(", ".join(devices.get(sub["name"], [])))
        table.add_row(*map(escape, cells))
    console.print(table)
    if explanation["refusals"]:
        # One row per distinct (operator, kind, reason), listing the bindings it refuses.
        groups: dict[tuple[str, str, str], list[str]] = {}
        for refusal in explanation["refusals"]:
            key = (refusal["operator"], refusal["kind"], refusal["reason"])
            groups.setdefault(key, []).append(refusal["binding"])
        refused = Table(title="Operators kept on the host")
        for column in ("binding", "operator", "reason kind", "reason"):
            refused.add_column(column, overflow="fold")
        for (operator, kind, reason), bindings in groups.items():
            shown = ", ".join(bindings[:4])
            if len(bindings) > 4:
                shown += f", ... ({len(bindings)} in all)"
            refused.add_row(*map(escape, (shown, operator, kind, reason)))
        console.print(refused)
    share = explanation["flop_share"]
    share_text = f"{share:.1%}" if share is not None else "n/a (symbolic shapes)"
    if explanation.get("quantized_flop_share"):
        share_text += f" ({explanation['quantized_flop_share']:.1%} in quantized groups)"
    console.print(
        f"operators offloaded: {explanation['offloaded_operators']} of "
        f"{explanation['total_operators']} (counting every call); estimated FLOPs offloaded: "
        f"{share_text}; NNAPI subgraphs: {len(explanation['subgraphs'])}; host<->NNAPI "
        f"boundary values: {explanation['boundary_transfers']}"
    )


def _configure_devices(args: argparse.Namespace) -> dict[str, Any] | None:
    """--devices / --no-nnapi-cpu: the NNAPI devices every compilation targets from now on
    (the runtime's ``devices``/``exclude_cpu`` options: createForDevices), else those of
    ``TVM_NNAPI_DEVICES`` / ``TVM_NNAPI_EXCLUDE_CPU`` on the mock target; None: NNAPI chooses.
    Set in this process's runtime on the mock target; a remote target's runtime is set where
    it runs (commands/run.py)."""
    names = [n.strip() for n in (getattr(args, "devices", None) or "").split(",") if n.strip()]
    exclude_cpu = bool(getattr(args, "no_nnapi_cpu", False))
    local = getattr(args, "target", "mock") == "mock"
    if not names and not exclude_cpu:
        if not local:
            return None
        # TVM_NNAPI_DEVICES / TVM_NNAPI_EXCLUDE_CPU: the runtime's options from the environment.
        from tvm_nnapi import runtime

        effective = runtime.options_in_effect()
        names = [n for n in effective.get("devices", "").split(",") if n]
        exclude_cpu = effective.get("exclude_cpu", "0") == "1"
        return {"devices": names, "exclude_cpu": exclude_cpu} if names or exclude_cpu else None
    if local:
        from tvm_nnapi import runtime

        runtime.configure(devices=",".join(names), exclude_cpu=exclude_cpu)
    return {"devices": names, "exclude_cpu": exclude_cpu}


def _check_device_names(choice: dict[str, Any]) -> None:
    """Every --devices name must be a device of the active NNAPI (the mock's profile)."""
    import mock_nnapi

    listed = mock_nnapi.devices()
    present = [device.name for device in listed]
    unknown = [name for name in choice["devices"] if name not in present]
    if unknown:
        raise UsageError(
            f"--devices {','.join(choice['devices'])}: no NNAPI device named "
            f"{', '.join(unknown)} (devices: {', '.join(present)}; see `tvm-nnapi devices`)"
        )
    cpu = mock_nnapi.DeviceTypeCode.CPU
    left = [
        d.name
        for d in listed
        if (not choice["devices"] or d.name in choice["devices"])
        and not (choice["exclude_cpu"] and d.type == cpu)
    ]
    if not left:
        raise UsageError(
            f"--no-nnapi-cpu: no NNAPI device is left after excluding CPUs (devices: "
            f"{', '.join(present)}); name a non-CPU device with --devices or drop --no-nnapi-cpu"
        )


def _apply_quantization(args: argparse.Namespace) -> None:
    """Fold ``--quantization`` into an ``llm:NAME`` MODEL (``llm:NAME:FORMAT``)."""
    quantization = getattr(args, "quantization", None)
    if quantization is None:
        return
    if not args.model.startswith("llm:"):
        raise UsageError(f"--quantization applies to llm: models, not {args.model}")
    parts = args.model.split(":")
    if len(parts) > 2 and parts[2] != quantization:
        raise UsageError(
            f"--quantization {quantization} contradicts the format in {args.model}; give one"
        )
    args.model = f"llm:{parts[1]}:{quantization}"


def run_model_command(args: argparse.Namespace, command: ModelCommand) -> int:
    """Runs one MODEL command; returns its exit code (docs/cli.md)."""
    from mock_nnapi import NnapiError

    from ..tools.sources import ModelLoadError

    quiet = bool(args.json or args.quiet)
    try:
        check_output_paths(args)
        _apply_quantization(args)
        device_choice = _configure_devices(args)
        args.device_choice = device_choice
        with Progress(quiet) as progress:
            profile = selected_profile(getattr(args, "profile", None))
            if command.check_spec is not None:
                command.check_spec(args)
            source = _load(args, progress)
            if command.check_source is not None:
                command.check_source(source)
            document = _document(command.name, source, profile)
            document["device_choice"] = device_choice
            if device_choice is not None and getattr(args, "target", "mock") == "mock":
                _check_device_names(device_choice)
            explanation, graph = _explain_document(args, source, progress, profile)
            document["explain"] = explanation
            command.stage(args, source, document, graph, progress)
    except (ModelLoadError, NnapiError, ValueError, FileNotFoundError) as failure:
        if getattr(args, "debug", False):
            raise
        error(user_error(failure) or one_line(str(failure)))
        return EXIT_BAD_INPUT
    except Exception as failure:  # name what failed instead of a traceback
        if getattr(args, "debug", False):
            raise
        kind = "" if isinstance(failure, ToolError) else f"{type(failure).__name__}: "
        error(
            f"{args.model}: {command.name} failed: {kind}{one_line(str(failure))} "
            "(--debug shows the traceback)"
        )
        return EXIT_FAILED
    if not args.json:
        from rich.markup import escape

        out = console()
        bound = ", ".join(f"{k}={v}" for k, v in source.shapes.items())
        out.print(
            f"[bold]Model[/bold]: {escape(source.description)} ({escape(source.spec)})"
            + (f"; symbolic dimensions bound: {bound}" if bound else "")
        )
        if document.get("device_choice") is not None:
            chosen = escape(device_choice_text(document["device_choice"]))
            out.print(
                f"[bold]NNAPI devices[/bold]: {chosen} (--devices/--no-nnapi-cpu: "
                "ANeuralNetworksCompilation_createForDevices)"
            )
        print_explanation(out, source, explanation)
        if command.render is not None:
            command.render(out, document)
    _finish(args, document)
    if document["run"] is not None and not document["run"]["passed"]:
        return EXIT_MISMATCH
    return 0


def add_model_arguments(parser: argparse.ArgumentParser, profile_help: str) -> None:
    from ..llm.quantization import QUANTIZATIONS

    parser.add_argument(
        "model",
        metavar="MODEL",
        help="a built-in model (see `tvm-nnapi models`: mobilenet_v2_small, residual, "
        "llm:tiny-llama, llm:llama-2-7b, torchvision:mobilenet_v2, ...), or a file: .py "
        "defining `mod`/`get_model()`, TVMScript, .onnx, or a torch.export .pt2",
    )
    parser.add_argument(
        "--shapes",
        metavar="NAME=N,...",
        help="values of symbolic dimensions, e.g. seq_len=128,batch=1 (LLMs default to seq_len=32)",
    )
    parser.add_argument(
        "--entry",
        metavar="F",
        help="the function to look at (default main; for llm: models prefill or decode)",
    )
    parser.add_argument(
        "--batch", type=positive, default=1, help="batch size of built-in CNNs (default 1)"
    )
    parser.add_argument(
        "--quantization",
        choices=sorted(QUANTIZATIONS),
        help="for llm: models, MLC-LLM's weight format (same as llm:NAME:FORMAT; docs/llm.md)",
    )
    parser.add_argument("--profile", metavar="P", help=profile_help)
    parser.add_argument(
        "--feature-level",
        type=feature_level,
        default=None,
        help="NNAPI feature level of the target (1-8 or Android's codes; default: the "
        "profile's runtime level, else 8)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print a JSON document (docs/cli.md) on stdout"
    )
    parser.add_argument("--report", metavar="OUT.html", help="write a self-contained HTML report")
    parser.add_argument(
        "--devices",
        metavar="NAME[,NAME]",
        help="compile every NNAPI subgraph for these NNAPI devices only (names as `tvm-nnapi "
        "devices` lists them; ANeuralNetworksCompilation_createForDevices); default: NNAPI chooses",
    )
    parser.add_argument(
        "--no-nnapi-cpu",
        action="store_true",
        help="leave NNAPI's CPU devices out of the compilation (like ONNX Runtime's "
        "NNAPI_FLAG_CPU_DISABLED)",
    )
    add_relax_argument(parser)
    parser.add_argument(
        "--partition",
        choices=("all", "cost"),
        default="all",
        help="all: offload every operator NNAPI can run (default); cost: place each one on "
        "NNAPI or the host at the least MODELLED time on the profile (transfers and "
        "per-execution overheads included), keeping the rest on the host with its numbers "
        "(docs/cli.md, Partition strategies)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output on stderr")
