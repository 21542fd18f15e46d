# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi compare-reports``: compare two differential test reports (docs/targets.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import ReportError
from ..testing.difftest import Report, compare_reports, format_changes


def cmd_compare_reports(args: argparse.Namespace) -> int:
    """Compare two differential test reports (e.g. the mock run and a phone run) and list the
    tests whose outcome, NNAPI offload or error changed. Exit status: 0 without regressions,
    1 with regressions, 2 when a report cannot be read."""
    try:
        base = Report.load(args.base)
        other = Report.load(args.other)
    except ReportError as error:
        print(f"tvm-nnapi compare-reports: {error}", file=sys.stderr)
        return 2
    changes = compare_reports(
        base,
        other,
        error_ratio=args.error_ratio,
        error_floor=args.error_floor,
        fail_on_error_growth=args.fail_on_error_growth,
        fail_on_missing=args.fail_on_missing,
        common_only=args.common_only,
    )
    print(format_changes(base, other, changes))
    return 1 if any(c.regression for c in changes) else 0


def register(subparsers: Any) -> None:
    """Adds ``compare-reports`` to the ``tvm-nnapi`` command line."""
    parser = subparsers.add_parser(
        "compare-reports",
        help="compare two differential test reports (e.g. mock vs phone); exit 1 on regressions",
        description=cmd_compare_reports.__doc__,
    )
    parser.add_argument("base", help="report A (JSON written by a test run), e.g. the mock run")
    parser.add_argument("other", help="report B, e.g. the run on a phone")
    parser.add_argument(
        "--error-ratio",
        type=float,
        default=10.0,
        help="report a test whose max abs error changed by more than this factor (default 10)",
    )
    parser.add_argument(
        "--error-floor",
        type=float,
        default=1e-6,
        help="errors below this are treated as equal (default 1e-6)",
    )
    parser.add_argument(
        "--fail-on-error-growth",
        action="store_true",
        help="count an error that grew beyond --error-ratio as a regression",
    )
    parser.add_argument(
        "--fail-on-missing",
        action="store_true",
        help="count a test of A that is absent from B as a regression",
    )
    parser.add_argument(
        "--common-only",
        action="store_true",
        help="compare only the tests present in both reports (e.g. a full mock run with a "
        "phone run of the target-aware tests)",
    )
    parser.set_defaults(handler=cmd_compare_reports)
