# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi calibrate`` (fit a device profile to measured rows) and ``tvm-nnapi measure``
(time calibration workloads through NNAPI): docs/cost-model.md, "Calibration"."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..errors import CalibrationError
from ..tools.calibrate import (
    CalibrationWarning,
    before_calibration,
    check,
    check_table,
    derive,
    fit,
    fit_summary,
    write_profile,
)
from ..tools.measurements import TIMINGS, measure, read_measurements, write_measurements
from .common import add_target_argument


def _spec(text: str) -> tuple[str, str, str]:
    parts = text.split(":")
    if len(parts) != 3 or not all(parts):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected WORKLOAD:PRECISION:DEVICE, e.g. mobilenet_v2:float16:qti-dsp"
        )
    return parts[0], parts[1], parts[2]


def cmd_calibrate(args: Any) -> int:
    """Fit a device profile's cost-model parameters to measured rows (CSV or the JSON that
    `tvm-nnapi measure` writes): least squares on log time, bounded by physical limits. Writes
    the calibrated profile (each fitted parameter cited in `sources`) and prints the error of
    fit per row, beside the leave-one-out cross-validation error (each row predicted by the
    same fit to the other rows) per row, per row family and overall. Warns when the fitted
    parameters outnumber the rows or end at a bound. Every modelled number is labelled
    modelled (docs/cost-model.md)."""
    import sys
    import tempfile
    import warnings

    from mock_nnapi.device_profiles import ProfileNotFoundError, load_profile

    with tempfile.TemporaryDirectory(prefix="tvm-nnapi-calibrate-") as scratch:
        if args.from_estimates:
            try:
                start = before_calibration(load_profile(args.profile))
            except (ProfileNotFoundError, ValueError) as error:
                print(f"tvm-nnapi calibrate: {error}", file=sys.stderr)
                return 2
            args.profile = str(Path(scratch) / "start.json")
            write_profile(start, args.profile)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)  # printed below, one line each
            return _calibrate(args, sys.stderr)


def _calibrate(args: Any, stderr: Any) -> int:
    from mock_nnapi.device_profiles import ProfileNotFoundError, load_profile

    def progress(fold: int, folds: int, row: str) -> None:
        print(f"leave-one-out {fold}/{folds}: refitting without {row}", file=stderr, flush=True)

    try:
        if args.derive_from:
            derived = derive(load_profile(args.derive_from), load_profile(args.profile))
            if args.name:
                derived["name"] = args.name
            if not args.measurements:
                write_profile(derived, args.output)
                print(f"derived profile: {args.output} (estimates carried over, no fit)")
                return 0
            write_profile(derived, args.output)
            args.profile = args.output
        if not args.measurements:
            raise CalibrationError("give measurement files to fit (or --derive-from)")
        rows = [row for path in args.measurements for row in read_measurements(path)]
        held_out = [row for path in args.held_out for row in read_measurements(path)]
        shared = sorted({row.id for row in rows} & {row.id for row in held_out})
        if shared:
            raise CalibrationError(f"rows both fitted and held out: {', '.join(shared)}")
        result = fit(
            args.profile,
            rows,
            prior_weight=args.prior_weight,
            name=args.name,
            cross_validate=args.cross_validate,
            progress=progress,
        )
    except (CalibrationError, ProfileNotFoundError, FileNotFoundError) as error:
        print(f"tvm-nnapi calibrate: {error}", file=stderr)
        return 2
    write_profile(result.profile, args.output)
    for message in result.warnings:
        print(f"tvm-nnapi calibrate: warning: {message}", file=stderr)
    report = result.report()
    checked = []
    if held_out:
        checked = check(args.output, held_out)
        report += (
            "\nHeld-out rows (in no fit), modelled by the calibrated profile:\n\n"
            + check_table(checked)
        )
    if args.report:
        Path(args.report).write_text(report)
    if args.json:
        summary = fit_summary(result)
        summary["held_out"] = [{**asdict(row), "ratio": row.ratio} for row in checked]
        print(json.dumps(summary, indent=2))
    else:
        print(f"calibrated profile: {args.output} ({len(result.fitted)} parameters fitted)")
        print("error of fit per row (modelled = cost model, published = the row):")
        print(report, end="")
    return 0


def cmd_measure(args: Any) -> int:
    """Time calibration workloads through NNAPI where it runs (--target: this process's NNAPI
    library, an RPC server, or a phone, which needs no Python: the runtime library times each
    workload there) and write the rows `tvm-nnapi calibrate` reads: wall clock and NNAPI
    getDuration per workload and device. On the mock every number is modelled, and says so."""
    import sys

    from mock_nnapi import _library, control

    from .common import open_command_target

    target = None
    function = None
    try:
        if args.target == "mock":
            if args.profile:
                if not _library.is_mock():
                    raise CalibrationError(
                        "--profile needs the mock NNAPI (TVM_NNAPI_LIBRARY names another library)"
                    )
                control.set_profile(args.profile)
        else:
            target = open_command_target(args)
            function = target.function
        timings, info = measure(
            args.workloads,
            repeats=args.repeats,
            function=function,
            progress=lambda step: print(f"measuring {step}...", file=sys.stderr, flush=True),
        )
        rows = [t.measurement(args.timing, source=args.source) for t in timings]
    except (CalibrationError, ValueError) as error:
        print(f"tvm-nnapi measure: {error}", file=sys.stderr)
        return 2
    finally:
        if target is not None:
            target.close()
    metadata = {
        "target": target.describe() if target is not None else "mock",
        "nnapi_library": info.get("library"),
        "mock": bool(info.get("mock")),
        "profile": info.get("mock_profile"),
        "timings": [asdict(t) for t in timings],
    }
    write_measurements(args.output, rows, metadata)
    for row in rows:
        print(f"{row.id}: {row.measured:.4g} {row.unit} ({row.configuration})")
    return 0


def register(commands: Any) -> None:
    """Adds ``calibrate`` and ``measure`` to the ``tvm-nnapi`` command line."""
    calibrate = commands.add_parser(
        "calibrate",
        help="fit a device profile to measured rows and report the error of fit",
        description=cmd_calibrate.__doc__,
    )
    calibrate.add_argument("profile", help="starting profile (a name or a .json path)")
    calibrate.add_argument(
        "measurements", nargs="*", help="measurement files (.csv or tvm_nnapi.measurements/1 .json)"
    )
    calibrate.add_argument(
        "--derive-from",
        metavar="CALIBRATED",
        help="first copy the timing parameters of this calibrated profile's devices of the same "
        "kind (for a SoC without measurements; labelled estimates)",
    )
    calibrate.add_argument("-o", "--output", required=True, help="calibrated profile to write")
    calibrate.add_argument("--name", help="name of the calibrated profile (default: unchanged)")
    calibrate.add_argument(
        "--prior-weight",
        type=float,
        default=0.05,
        help="weight of the pull towards the starting values, per log-parameter (default 0.05)",
    )
    calibrate.add_argument(
        "--cross-validate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="leave-one-out cross-validation (default on): refit once per row without it and "
        "report each row's error so predicted beside its error of fit, and the geometric-mean "
        "and worst factor per row family (CNN, transformer, LLM prefill, LLM decode) and "
        "overall; one refit per row, progress on stderr (seconds for ten rows; the time grows "
        "with the square of the row count)",
    )
    calibrate.add_argument(
        "--held-out",
        action="append",
        default=[],
        metavar="FILE",
        help="measurement rows kept out of the fit: modelled by the calibrated profile and "
        "reported beside it as an independent check (a row may not be both fitted and held out)",
    )
    calibrate.add_argument(
        "--from-estimates",
        action="store_true",
        help="start from the values the profile had before it was calibrated (each fitted "
        "parameter's 'before calibration' in its sources): a profile already fitted to these "
        "rows otherwise anchors the prior, and the left-out rows, at values they shaped",
    )
    calibrate.add_argument(
        "--report",
        metavar="OUT.md",
        help="write the error-of-fit table, the warnings and the leave-one-out tables",
    )
    calibrate.add_argument("--json", action="store_true", help="print a JSON summary")
    calibrate.set_defaults(handler=cmd_calibrate)

    measure_parser = commands.add_parser(
        "measure",
        help="time calibration workloads through NNAPI (getDuration and wall clock)",
        description=cmd_measure.__doc__,
    )
    measure_parser.add_argument(
        "workloads", nargs="+", type=_spec, metavar="WORKLOAD:PRECISION:DEVICE"
    )
    measure_parser.add_argument("-o", "--output", required=True, help=".json or .csv to write")
    measure_parser.add_argument(
        "--timing",
        choices=TIMINGS,
        default="wall",
        help="which time the rows carry (default wall; on the mock use in_driver)",
    )
    measure_parser.add_argument("--repeats", type=int, default=10, help="timed executions")
    measure_parser.add_argument(
        "--profile", help="device profile of the mock to select first (mock and loopback rpc)"
    )
    add_target_argument(measure_parser)
    measure_parser.add_argument("--source", default="", help="the rows' source column")
    measure_parser.set_defaults(handler=cmd_measure)
