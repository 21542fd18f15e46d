# SPDX-License-Identifier: Apache-2.0
"""The ``tvm-nnapi`` command line (also ``python -m tvm_nnapi``); docs/cli.md documents it.

Subcommands:
  demo      partition a built-in model, run it on the mock NNAPI, compare with host llvm
  devices   list the NNAPI devices (the mock's profile, or a real NNAPI's), their types, feature
            levels and supported operations
  models    list the built-in MODEL names
  explain   which operators go to NNAPI (as which NNAPI operations) and why others do not
  estimate  modelled latency of the NNAPI-offloaded program vs the all-host one on a profile
  run       build, run on the mock NNAPI, compare with host llvm, write a Perfetto trace
  llm       generate text with an LLM, benchmark its NNAPI-offloaded build (tvm_nnapi.llm.cli)
  compare-reports  compare two differential test reports (tvm_nnapi/testing/difftest.py)

explain, estimate and run take ``--json`` (a machine-readable document on stdout) and
``--report out.html`` (a self-contained HTML page). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .errors import UsageError

if TYPE_CHECKING:
    from rich.status import Status


def _console():
    from rich.console import Console

    return Console()


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _modelled_time(us: float) -> str:
    return f"{us / 1e3:.3f} ms" if us >= 1000 else f"{us:.3g} us"


def cmd_demo(args: argparse.Namespace) -> int:
    """Partition a built-in model, run it on NNAPI (the mock) and on host llvm, print a report."""
    from rich.markup import escape
    from rich.table import Table

    console = _console()
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


FEATURE_LEVELS = {1: 27, 2: 28, 3: 29, 4: 30, 5: 31, 6: 1000006, 7: 1000007, 8: 1000008}
# The JSON documents of explain/estimate/run (docs/cli.md).
JSON_SCHEMA = "tvm-nnapi.cli/1"

# Exit codes: 0 success, 1 a run's results differ from host llvm, 2 bad input (model, shapes,
# profile, options), 3 the tool failed while building or running.
EXIT_MISMATCH = 1
EXIT_BAD_INPUT = 2
EXIT_FAILED = 3


def _feature_level(text: str) -> int:
    value = int(text)
    if value in FEATURE_LEVELS:
        return FEATURE_LEVELS[value]
    if value in FEATURE_LEVELS.values():
        return value
    raise argparse.ArgumentTypeError(
        f"{text} is not an NNAPI feature level (1-8, or 27-31 / 1000006-1000008)"
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


class _Progress:
    """A rich status line on stderr while long steps run (silent with --json or --quiet)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self._status: Status | None = None

    def __enter__(self) -> _Progress:
        if not self.quiet:
            from rich.console import Console

            self._status = Console(stderr=True).status("starting...")
            self._status.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._status is not None:
            self._status.__exit__(*exc)
            self._status = None

    def __call__(self, message: str) -> None:
        if self._status is not None:
            self._status.update(message)


def _error(message: str) -> None:
    """An error on stderr, unwrapped (file names and paths stay whole)."""
    print(f"error: {message}", file=sys.stderr)


def _one_line(message: str) -> str:
    """An exception's text as one line, without C++ source locations (``device.cc:353:``) and
    TVM's traceback decorations."""
    import re

    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("File ", "Traceback", "^"))]
    text = " ".join(lines) or type(message).__name__
    text = re.sub(r"(?<![\w./-])[\w./-]+\.(?:cc|cpp|h|hpp):\d+:\s*", "", text)
    if re.search(r"check failed: ", text, flags=re.IGNORECASE):
        # "F returned ANEURALNETWORKS_BAD_DATA (4): check failed: Load(...): the reason"
        text = re.sub(r"^.*?check failed: .*?\):\s*", "", text, flags=re.IGNORECASE)
    return text


def _selected_profile(profile: str | None) -> str | None:
    """:func:`_select_profile`, its errors as one line naming ``--profile``."""
    from mock_nnapi import NnapiError

    try:
        return _select_profile(profile)
    except NnapiError as error:
        raise UsageError(f"--profile {profile}: {_one_line(str(error))}") from error


def _user_error(error: BaseException) -> str | None:
    """The one-line message of an error the user can fix (bad input), else None."""
    from tvm_nnapi.tools.sources import ModelLoadError

    if isinstance(error, UsageError | ModelLoadError):
        return _one_line(str(error))
    if isinstance(error, OSError) and getattr(error, "filename", None):
        reason = error.strerror or str(error)
        return f"{error.filename}: {reason}"
    if isinstance(error, FileNotFoundError | IsADirectoryError | NotADirectoryError):
        return _one_line(str(error))
    return None


def _check_output_paths(args: argparse.Namespace) -> None:
    """Before any work: every output file the options name must be writable where it is."""
    import os

    for option in ("report", "trace", "result"):
        path = getattr(args, option, None)
        if not path or path == "-":
            continue
        directory = os.path.dirname(os.path.abspath(path))
        flag = f"--{option} {path}"
        if os.path.isdir(path):
            raise UsageError(f"{flag}: is a directory; give a file name")
        if not os.path.isdir(directory):
            raise UsageError(
                f"{flag}: the directory {directory} does not exist; create it or write elsewhere"
            )
        if not os.access(directory, os.W_OK):
            raise UsageError(f"{flag}: the directory {directory} is not writable")


# ---- devices and models --------------------------------------------------------------------------


def _select_profile(profile: str | None) -> str | None:
    """Select a mock device profile (None: keep the current one); returns the active name, or
    None when the NNAPI library is not the mock."""
    from mock_nnapi import control

    try:
        if profile is not None and profile != control.profile_name():
            control.set_profile(profile)
        return control.profile_name()
    except control.MockOnlyError:
        if profile is not None:
            raise
        return None


def _device_support(device: dict[str, Any]) -> str:
    support = device.get("support", {})
    operations = support.get("operations", "all")
    text = (
        "all operations the mock implements"
        if operations == "all"
        else ", ".join(sorted(operations))
    )
    if support.get("exclude_operations"):
        text += " except " + ", ".join(sorted(support["exclude_operations"]))
    types = support.get("data_types", "all")
    text += f"; data types: {'all' if types == 'all' else ', '.join(types)}"
    if "max_rank" in support:
        text += f"; rank <= {support['max_rank']}"
    return text


def devices_document(profile: str | None = None) -> dict[str, Any]:
    """The NNAPI devices (and, for the mock, what each supports according to its profile)."""
    import mock_nnapi
    import tvm_nnapi
    from mock_nnapi import control

    library = tvm_nnapi.configure_nnapi_library()
    active = _select_profile(profile)
    described: dict[str, dict[str, Any]] = {}
    performance: dict[str, Any] = {}
    if active is not None:
        described = {d["name"]: d for d in control.profile().get("devices", [])}
        performance = control.device_performance()
    devices = []
    for index, device in enumerate(mock_nnapi.devices()):
        entry = {
            "index": index,
            "name": device.name,
            "type": mock_nnapi.DeviceTypeCode(device.type).name,
            "version": device.version,
            "feature_level": device.feature_level,
        }
        if device.name in described:
            entry["support"] = described[device.name].get("support", {})
            entry["modelled_performance"] = performance.get(device.name, {})
            entry["supported_operations"] = _device_support(described[device.name])
        else:
            entry["supported_operations"] = (
                "not listed: a real NNAPI answers per model (getSupportedOperationsForDevices)"
            )
        devices.append(entry)
    return {
        "schema": JSON_SCHEMA,
        "command": "devices",
        "library": library,
        "profile": active,
        "devices": devices,
    }


def cmd_devices(args: argparse.Namespace) -> int:
    """List the NNAPI devices: name, type, version, feature level and, for the mock, the
    operations each device supports in the selected device profile."""
    import json

    from rich.table import Table

    from mock_nnapi import NnapiError

    try:
        _selected_profile(args.profile)
        document = devices_document(args.profile)
    except NnapiError as error:
        _error(f"--profile {args.profile}: {_one_line(str(error))}")
        return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(document, indent=2))
        return 0
    profile = f", profile {document['profile']}" if document["profile"] else ""
    table = Table(title=f"NNAPI devices ({document['library']}{profile})")
    for column in ("#", "name", "type", "version", "feature level", "supported operations"):
        table.add_column(column, overflow="fold")
    for device in document["devices"]:
        table.add_row(
            str(device["index"]),
            device["name"],
            device["type"],
            device["version"],
            str(device["feature_level"]),
            device["supported_operations"],
        )
    _console().print(table)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """List the built-in MODEL names (MODEL can also be a .py, TVMScript, .onnx or .pt2 file)."""
    from tvm_nnapi.tools.sources import builtin_model_names

    for name in builtin_model_names():
        print(name)
    return 0


# ---- explain / estimate / run --------------------------------------------------------------------


def _partition_options(args: argparse.Namespace, profile: str | None):
    """Feature level from --feature-level, else from the profile's runtime; the operations the
    profile's devices support together (None when one of them runs everything); --relax-fp16."""
    from mock_nnapi import control, device_profiles
    from tvm_nnapi.compiler.patterns import PartitionOptions

    level = args.feature_level
    supported = None
    if profile is not None:
        # The mock's own reading of the profile it has selected (by its name), else the file.
        try:
            active = profile == control.profile_name()
        except control.MockOnlyError:
            active = False
        data = control.profile() if active else device_profiles.load_profile(profile)
        if level is None:
            level = _feature_level(str(device_profiles.runtime_feature_level(data)))
        supported = device_profiles.supported_operations(data)
    return PartitionOptions(
        feature_level=level if level is not None else FEATURE_LEVELS[8],
        supported_nnapi_ops=supported,
        relax_fp32_to_fp16=getattr(args, "relax_fp16", False),
    )


def _load(args: argparse.Namespace, progress: _Progress):
    from tvm_nnapi.tools.sources import load_model_source, parse_shapes

    progress(f"loading {args.model}...")
    return load_model_source(
        args.model, parse_shapes(args.shapes), entry=args.entry, batch=args.batch
    )


def _explain_document(args: argparse.Namespace, source, progress: _Progress, profile):
    import tvm_nnapi
    from tvm_nnapi.tools.explain import explain
    from tvm_nnapi.tools.graph_view import operator_graph

    options = _partition_options(args, profile)
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
    return data, graph, partition


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


def _print_explanation(console, source, explanation: dict[str, Any]) -> None:
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
    (the runtime's ``devices``/``exclude_cpu`` options: createForDevices); None: NNAPI chooses."""
    names = [n.strip() for n in (getattr(args, "devices", None) or "").split(",") if n.strip()]
    exclude_cpu = bool(getattr(args, "no_nnapi_cpu", False))
    if not names and not exclude_cpu:
        return None
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


def _device_choice_text(choice: dict[str, Any] | None) -> str:
    if choice is None:
        return "NNAPI chooses"
    text = ", ".join(choice["devices"]) or "all devices"
    return text + (" without CPUs" if choice["exclude_cpu"] else "")


def _run_command(args: argparse.Namespace, command: str) -> int:
    """explain, estimate and run: load, partition/describe, then the command's own part."""
    from mock_nnapi import NnapiError
    from tvm_nnapi.tools.sources import ModelLoadError

    quiet = bool(args.json or args.quiet)
    try:
        _check_output_paths(args)
        device_choice = _configure_devices(args)
        args.device_choice = device_choice
        with _Progress(quiet) as progress:
            profile = _selected_profile(getattr(args, "profile", None))
            if command == "run" and args.model.startswith("llm:"):
                # Before exporting the model: refuse weights too large to allocate.
                from tvm_nnapi.tools.run import check_llm_weights
                from tvm_nnapi.tools.sources import parse_llm_spec

                check_llm_weights(args.model, *parse_llm_spec(args.model))
            source = _load(args, progress)
            if command == "run":
                from tvm_nnapi.tools.run import check_runnable

                check_runnable(source)
            document = _document(command, source, profile)
            document["device_choice"] = device_choice
            if device_choice is not None:
                _check_device_names(device_choice)
            explanation, graph, _ = _explain_document(args, source, progress, profile)
            document["explain"] = explanation
            if command == "estimate":
                source.check_bound()
                document["estimate"] = _estimate(args, source, profile, progress)
                explanation["subgraph_devices"] = {
                    row["name"]: row["devices"] for row in document["estimate"]["subgraphs"]
                }
            elif command == "explain" and args.profile:
                explanation["subgraph_devices"] = _devices_from_estimate(
                    args, source, profile, progress
                )
            elif command == "run":
                document["run"], document["timeline"] = _run(args, source, graph, progress)
                explanation["graph"] = graph.to_dict()  # with the devices the run used
                if document["run"].get("layerwise"):
                    from tvm_nnapi.tools.layerwise import LayerRow, LayerwiseResult, mark_graph

                    layers = document["run"]["layerwise"]
                    rows = [LayerRow(**row) for row in layers["rows"]]
                    mark_graph(explanation["graph"], LayerwiseResult(rows, layers["precision"]))
                devices: dict[str, list[str]] = {}
                for node in graph.nodes:
                    if node.subgraph:
                        known = devices.setdefault(node.subgraph, [])
                        known.extend(d for d in node.devices if d not in known)
                explanation["subgraph_devices"] = devices
    except (ModelLoadError, NnapiError, ValueError, FileNotFoundError) as error:
        if getattr(args, "debug", False):
            raise
        _error(_user_error(error) or _one_line(str(error)))
        return EXIT_BAD_INPUT
    except Exception as error:  # name what failed instead of a traceback
        if getattr(args, "debug", False):
            raise
        _error(
            f"{args.model}: {command} failed: {type(error).__name__}: {_one_line(str(error))} "
            "(--debug shows the traceback)"
        )
        return EXIT_FAILED
    if not args.json:
        from rich.markup import escape

        console = _console()
        bound = ", ".join(f"{k}={v}" for k, v in source.shapes.items())
        console.print(
            f"[bold]Model[/bold]: {escape(source.description)} ({escape(source.spec)})"
            + (f"; symbolic dimensions bound: {bound}" if bound else "")
        )
        if document.get("device_choice") is not None:
            chosen = escape(_device_choice_text(document["device_choice"]))
            console.print(
                f"[bold]NNAPI devices[/bold]: {chosen} (--devices/--no-nnapi-cpu: "
                "ANeuralNetworksCompilation_createForDevices)"
            )
        _print_explanation(console, source, explanation)
        if document["estimate"] is not None:
            _print_estimate(console, document["estimate"])
        if document["run"] is not None:
            _print_run(console, document["run"])
    _finish(args, document)
    if document["run"] is not None and not document["run"]["passed"]:
        return EXIT_MISMATCH
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """Show, for a model, which operators go to NNAPI (and as which NNAPI operations) and why
    the others stay on the host (typed reasons: dtype, rank, attribute, feature level, device
    support, cost policy). Nothing is built or run."""
    return _run_command(args, "explain")


def _estimate(args: argparse.Namespace, source, profile: str | None, progress: _Progress):
    try:
        from tvm_nnapi.tools.estimate import estimate
    except ImportError as error:
        raise RuntimeError(
            f"the estimation engine (tvm_nnapi.tools.estimate) is not available: {error}"
        ) from error
    from tvm import relax

    # The engine binds the entry's symbols itself: hand it the module as loaded.
    module = source.symbolic_module
    defined = {str(v) for v in relax.analysis.defined_symbolic_vars(module[source.entry])}
    shapes = {name: value for name, value in source.shapes.items() if name in defined}
    extern_work = None
    if source.kind == "llm":
        # The KV-cache attention runs on the host in both programs; its work comes from the
        # configuration (for decode, seq_len is the number of tokens already in the cache).
        from tvm_nnapi.llm.dispatch import ATTENTION_BUILTIN
        from tvm_nnapi.llm.experiments import attention_work

        seq_len = source.shapes.get("seq_len", 1)
        new_tokens, history = (seq_len, 0) if source.entry == "prefill" else (1, seq_len)
        work = attention_work(source.llm_config, source.llm_dtype, new_tokens, history)
        extern_work = {ATTENTION_BUILTIN: work}
    progress(f"costing the NNAPI subgraphs on {profile} (modelled)...")
    result = estimate(
        module,
        profile or "reference",
        shapes=shapes,
        entry=source.entry,
        host_model=getattr(args, "host_model", "profile-cpu"),
        weights=getattr(args, "weights", "input"),
        options=_partition_options(args, profile),
        extern_work=extern_work,
    )
    return result.to_dict()


def source_profile(args: argparse.Namespace) -> str | None:
    return getattr(args, "profile", None)


def _devices_from_estimate(
    args: argparse.Namespace, source, profile: str | None, progress: _Progress
) -> dict[str, list[str]]:
    """Which devices of the profile run each NNAPI subgraph (NNAPI decides when it compiles):
    from the estimation engine, which compiles every subgraph on the mock with the profile. An
    empty result when the engine cannot (e.g. a symbolic dimension without a value)."""
    try:
        estimate = _estimate(args, source, profile, progress)
    except Exception as error:  # the explanation stands without devices
        progress(f"devices not known: {error}")
        return {}
    return {row["name"]: row["devices"] for row in estimate["subgraphs"]}


def _print_estimate(console, estimate: dict[str, Any]) -> None:
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
    reason = why_nnapi_loses(estimate)
    if reason:
        console.print(escape(reason))


def cmd_estimate(args: argparse.Namespace) -> int:
    """Modelled latency of the NNAPI-offloaded program vs the all-host program on a device
    profile, per NNAPI subgraph and in total. Every time is an output of the cost model
    (docs/cost-model.md), never a measurement."""
    return _run_command(args, "estimate")


def _safe_name(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text.rsplit("/", 1)[-1]).strip("_") or "model"


def _run(args: argparse.Namespace, source, graph, progress: _Progress):
    import json

    from tvm_nnapi.tools.graph_view import assign_devices_from_traces
    from tvm_nnapi.tools.report import timeline_from_traces
    from tvm_nnapi.tools.run import chrome_trace, run_model

    options = _partition_options(args, source_profile(args))
    if getattr(args, "layerwise", False) and source.kind == "llm":
        raise UsageError(
            f"{source.spec}: --layerwise compares the subgraphs of one function run on its "
            "inputs; an LLM runs through its engine (KV cache, several functions) and is not "
            "supported yet: use a module (a built-in CNN, .py, .onnx, TVMScript)"
        )
    result = run_model(source, seed=args.seed, rtol=args.rtol, progress=progress, options=options)
    layers = None
    if getattr(args, "layerwise", False):
        import tvm_nnapi
        from tvm_nnapi.tools.layerwise import layerwise
        from tvm_nnapi.tools.run import computation_precision, random_inputs

        progress("comparing every NNAPI operator with the host (--layerwise)...")
        partitioned = tvm_nnapi.partition(source.module, options, source.partition_entries)
        layers = layerwise(
            source,
            partitioned,
            random_inputs(source, args.seed),
            computation_precision(source, options.relax_fp32_to_fp16),
            args.rtol,
        )
    labels = [name for name, _ in graph.subgraph_calls]
    if len(labels) != len(result.traces):
        labels = []
    assign_devices_from_traces(graph, result.traces)
    trace_path = args.trace or f"{_safe_name(source.spec)}.trace.json"
    if trace_path != "-":
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


def _print_run(console, run: dict[str, Any]) -> None:
    from rich.table import Table

    from tvm_nnapi.tools.report import _format_us

    table = Table(title="Run on the mock NNAPI vs host llvm")
    table.add_column("measure")
    table.add_column("value", justify="right", overflow="fold")
    table.add_row("NNAPI library", run["nnapi_library"])
    table.add_row("device profile", run["profile"])
    table.add_row("NNAPI devices chosen", _device_choice_text(run.get("device_choice")))
    devices = sorted({d for e in run["modelled"]["executions"] for d in e["devices"]})
    table.add_row("NNAPI devices that ran operations (mock traces)", ", ".join(devices) or "none")
    table.add_row(
        "NNAPI executions / operations (mock counters)",
        f"{run['nnapi_executions']} / {run['nnapi_operations_executed']}",
    )
    table.add_row("max |NNAPI - llvm|", f"{run['max_abs_error']:.3e}")
    table.add_row("max |NNAPI - llvm| / max |llvm|", f"{run['max_rel_error']:.3e}")
    tolerances = sorted(
        {(o["tolerance"], o.get("precision") or o["dtype"]) for o in run["outputs"]}
    )
    table.add_row(
        "tolerance (precision computed in)",
        ", ".join(
            f"{tol:g} steps ({precision})" if precision == "quant8" else f"{tol:.0e} ({precision})"
            for tol, precision in tolerances
        ),
    )
    quantized = [o for o in run["outputs"] if o.get("max_error_steps") is not None]
    if quantized:
        table.add_row(
            "max error in output quantization steps",
            ", ".join(f"{o['max_error_steps']:.2f}" for o in quantized),
        )
        table.add_row(
            "top-1 agrees with llvm",
            ", ".join("yes" if o["top1_agrees"] else "no" for o in quantized),
        )
    for name, seconds in run["measured_seconds"].items():
        table.add_row(f"{name.replace('_', ' ')} (measured on this host)", f"{seconds:.4f} s")
    table.add_row(
        "NNAPI executions (MODELLED on the profile)", _format_us(run["modelled"]["nnapi_total_us"])
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


def _layer_text(row: dict[str, Any]) -> str:
    operators = " + ".join(op.removeprefix("relax.") for op in row["relax_operators"])
    operations = ", ".join(row["nnapi_operations"]) or "?"
    return (
        f"{row['subgraph']} call {row['call_index']}, {row['binding']} "
        f"({operators} -> NNAPI {operations})"
    )


def _print_layerwise(console, layers: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    rows = layers["rows"]
    first = layers["first_divergence"]
    table = Table(
        title=f"Layer-wise: each NNAPI operator vs the host on the same inputs "
        f"({layers['operators_compared']} operators, {layers['precision']})"
    )
    columns = (
        "subgraph",
        "call",
        "binding",
        "Relax",
        "NNAPI",
        "max error (rel / steps)",
        "tolerance",
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    # The first over the tolerance, then the largest errors against their tolerance (at most 8).
    shown = sorted(rows, key=lambda r: -_layer_excess(r))[:8]
    if first is not None and first not in shown:
        shown = [first, *shown[:7]]
    for row in shown:
        marker = "[red]" if not row["passed"] else ""
        table.add_row(
            row["subgraph"],
            str(row["call_index"]),
            row["binding"],
            escape(" + ".join(op.removeprefix("relax.") for op in row["relax_operators"])),
            ", ".join(row["nnapi_operations"]),
            f"{marker}{_layer_error(row)}",
            _layer_tolerance(row),
        )
    console.print(table)
    if first is None:
        console.print(
            f"layer-wise: every one of the {len(rows)} NNAPI operators is within tolerance"
        )
    else:
        console.print(
            f"[red]layer-wise: first operator over the tolerance[/red]: "
            f"{escape(_layer_text(first))}: "
            + (
                f"max |NNAPI - host| = {first['max_error_steps']:g} quantization steps > "
                f"{first['tolerance']:g}"
                if first.get("max_error_steps") is not None
                else f"max |NNAPI - host| / max |host| = {first['max_rel_error']:.3e} > "
                f"{first['tolerance']:.0e}"
            )
        )


def _layer_error(row: dict[str, Any]) -> str:
    """A row's error: in quantization steps for a quantized result, else relative."""
    if row.get("max_error_steps") is not None:
        return f"{row['max_error_steps']:g} steps"
    return f"{row['max_rel_error']:.3e}"


def _layer_tolerance(row: dict[str, Any]) -> str:
    if row.get("max_error_steps") is not None:
        return f"{row['tolerance']:g} steps"
    return f"{row['tolerance']:.0e}"


def _layer_excess(row: dict[str, Any]) -> float:
    """A row's error as a multiple of its tolerance (to show the worst rows first)."""
    error = row.get("max_error_steps")
    error = row["max_rel_error"] if error is None else error
    tolerance = row["tolerance"]
    return error / tolerance if tolerance else (math.inf if error else 0.0)


def cmd_run(args: argparse.Namespace) -> int:
    """Build the model with NNAPI offload, run it on the mock NNAPI, run the host llvm build of
    the same module on the same random inputs, and compare (max absolute/relative error,
    pass/fail). Writes the mock's execution trace as Chrome trace-event JSON (open it in
    Perfetto; times MODELLED) and, with --result, the differential result as JSON. Exit code 1
    when the results differ."""
    return _run_command(args, "run")


def _add_model_arguments(parser: argparse.ArgumentParser, profile_help: str) -> None:
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
        "--batch", type=_positive, default=1, help="batch size of built-in CNNs (default 1)"
    )
    parser.add_argument("--profile", metavar="P", help=profile_help)
    parser.add_argument(
        "--feature-level",
        type=_feature_level,
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
    _add_relax_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress output on stderr")


def _add_relax_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--relax-fp16",
        action="store_true",
        help="let NNAPI compute float32 subgraphs in float16 "
        "(ANeuralNetworksModel_relaxComputationFloat32toFloat16): devices that take float16 can "
        "run them, and the comparison uses float16 tolerances",
    )


class _DebugSubparsers:
    """``add_subparsers()`` whose every subcommand (also those other modules add) accepts
    ``--debug`` after the command name."""

    def __init__(self, action: Any) -> None:
        self._action = action

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        sub = self._action.add_parser(name, **kwargs)
        sub.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="let errors through with their Python traceback",
        )
        original = sub.add_subparsers

        def add_subparsers(**options: Any) -> _DebugSubparsers:
            return _DebugSubparsers(original(**options))

        sub.add_subparsers = add_subparsers
        return sub


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tvm-nnapi",
        description="TVM Relax + Android NNAPI: see what is offloaded and why, estimate it on a "
        "phone profile, run it on the mock NNAPI. Documentation: docs/cli.md.",
    )
    parser.add_argument("--version", action="version", version=f"tvm-nnapi {_version()}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="let errors through with their Python traceback (also accepted after COMMAND)",
    )
    commands = _DebugSubparsers(
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    )
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
        "--batch", type=_positive, default=1, help="batch size of the input (default 1)"
    )
    demo.add_argument(
        "--profile",
        default="snapdragon-8-gen-2",
        help="phone profile for the modelled latency estimate (default snapdragon-8-gen-2; "
        "`none` skips it); the run itself uses the mock's current profile, which it names",
    )
    _add_relax_argument(demo)
    demo.set_defaults(handler=cmd_demo)

    devices = commands.add_parser(
        "devices",
        help="list NNAPI devices, types, feature levels and supported operations",
        description=cmd_devices.__doc__,
    )
    devices.add_argument(
        "--profile", metavar="P", help="mock device profile (name or .json path) to list"
    )
    devices.add_argument("--json", action="store_true", help="print JSON on stdout")
    devices.set_defaults(handler=cmd_devices)

    models = commands.add_parser(
        "models", help="list the built-in MODEL names", description=cmd_models.__doc__
    )
    models.set_defaults(handler=cmd_models)

    explain = commands.add_parser(
        "explain",
        help="which operators go to NNAPI, as which NNAPI operations, and why others do not",
        description=cmd_explain.__doc__,
    )
    _add_model_arguments(
        explain,
        "device profile of the target: its runtime feature level and the operations its "
        "devices support decide what is offloaded",
    )
    explain.set_defaults(handler=cmd_explain)

    estimate = commands.add_parser(
        "estimate",
        help="modelled latency: NNAPI-offloaded vs all-host program on a phone profile",
        description=cmd_estimate.__doc__,
    )
    _add_model_arguments(
        estimate,
        "device profile to model (a name such as snapdragon-8-gen-2, or a .json path; "
        "default: the mock's current profile)",
    )
    estimate.add_argument(
        "--host-model",
        choices=["profile-cpu", "tvm-default"],
        default="profile-cpu",
        help="how TVM's host code is modelled (docs/cost-model.md; default profile-cpu)",
    )
    estimate.add_argument(
        "--weights",
        choices=["input", "resident"],
        default="input",
        help="weights copied to the device at every call (input, as built) or resident",
    )
    estimate.set_defaults(handler=cmd_estimate)

    run = commands.add_parser(
        "run",
        help="build, run on the mock NNAPI, compare with host llvm, write a Perfetto trace",
        description=cmd_run.__doc__,
    )
    _add_model_arguments(run, "mock device profile to run on (name or .json path)")
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

    # Subcommands contributed by other modules: one line each, `module.add_subcommands(commands)`.
    from tvm_nnapi.llm.cli import add_subcommands as add_llm_subcommands

    add_llm_subcommands(commands)  # llm generate, llm bench
    from tvm_nnapi.testing import difftest

    difftest.add_subcommands(commands)  # compare-reports
    from tvm_nnapi.tools import calibrate

    calibrate.add_subcommands(commands)  # calibrate, measure
    return parser


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("tvm-nnapi")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Bad input (UsageError, a model that cannot be loaded, a missing file) is
    one line on stderr and exit code 2; any other failure one line and exit code 3. ``--debug``
    lets the exception (and its traceback) through instead."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except Exception as error:
        if getattr(args, "debug", False):
            raise
        message = _user_error(error)
        if message is not None:
            _error(message)
            return EXIT_BAD_INPUT
        _error(
            f"{args.command} failed: {type(error).__name__}: {_one_line(str(error))} "
            "(--debug shows the traceback)"
        )
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
