# SPDX-License-Identifier: Apache-2.0
"""Differential test reports: what every test run records, and comparing two runs.

A pytest session of this project (tests/difftest_plugin.py) writes one report per run, as JSON
and Markdown (format in docs/targets.md): for each test, the target it ran on, its outcome, the
largest absolute and relative error of the target's results against the reference (the host
``llvm`` build, or a numpy reference for single NNAPI operations), and whether NNAPI really ran
(mock counters or the runtime module's statistics).

``tvm-nnapi compare-reports A.json B.json`` compares two reports, e.g. the mock run of CI with
a run on a phone, and lists the tests whose outcome, offload or error changed. It exits with 1
when B regressed against A (a test that passed in A fails in B, or NNAPI ran in A and not in B).
"""

from __future__ import annotations

import datetime
import json
import math
import platform
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

try:
    from ..errors import ReportError
except ImportError:  # loaded by file path (tests/difftest_plugin.py, which must not import TVM)
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "tvm_nnapi_errors", Path(__file__).resolve().parents[1] / "errors.py"
    )
    assert _spec is not None and _spec.loader is not None
    _errors = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_errors)
    ReportError = _errors.ReportError  # type: ignore[misc]

REPORT_FORMAT = "tvm-nnapi-difftest"
REPORT_VERSION = 1

#: Outcomes from best to worst; a move to the right between two reports is a regression.
OUTCOMES = ("passed", "xfailed", "skipped", "xpassed", "failed", "error")
_GOOD = {"passed", "xfailed"}
_BAD = {"failed", "error"}


@dataclass
class Comparison:
    """One array of a test compared with its reference."""

    label: str
    reference: str
    shape: list[int]
    dtype: str
    max_abs_error: float
    max_rel_error: float
    mismatched: int
    atol: float
    rtol: float
    within_tolerance: bool

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def compare_arrays(
    actual: Any,
    expected: Any,
    *,
    rtol: float,
    atol: float,
    label: str = "output",
    reference: str = "host llvm",
) -> Comparison:
    """Errors of ``actual`` against ``expected``.

    ``max_abs_error`` is max |a - e|. ``max_rel_error`` is max |a - e| / |e| over the elements
    whose reference is non-zero (0 when all are zero). ``mismatched`` counts elements outside
    ``atol + rtol * |e|`` (NaN matches NaN only). Integer and boolean arrays compare exactly
    when atol and rtol are 0. A shape mismatch counts every element as mismatched, with
    infinite errors.
    """
    a = np.asarray(actual)
    e = np.asarray(expected)
    if a.shape != e.shape:
        return Comparison(
            label, reference, list(e.shape), str(e.dtype), math.inf, math.inf, max(a.size, e.size),
            atol, rtol, False,
        )  # fmt: skip
    a64 = a.astype(np.float64)
    e64 = e.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, NaN: handled below
        both_nan = np.isnan(a64) & np.isnan(e64)
        same_inf = np.isinf(a64) & (a64 == e64)
        diff = np.where(both_nan | same_inf, 0.0, np.abs(a64 - e64))
        diff = np.where(np.isnan(diff), math.inf, diff)
        bad = diff > atol + rtol * np.abs(np.nan_to_num(e64))
        nonzero = (e64 != 0) & np.isfinite(e64)
        rel = diff[nonzero] / np.abs(e64[nonzero]) if nonzero.any() else np.zeros(0)
    return Comparison(
        label=label,
        reference=reference,
        shape=list(e.shape),
        dtype=str(e.dtype),
        max_abs_error=float(diff.max()) if diff.size else 0.0,
        max_rel_error=float(rel.max()) if rel.size else 0.0,
        mismatched=int(bad.sum()),
        atol=float(atol),
        rtol=float(rtol),
        within_tolerance=not bool(bad.any()),
    )


@dataclass
class TestRecord:
    """One test of a report."""

    __test__ = False  # not a pytest test class

    nodeid: str
    target: str
    outcome: str
    duration_s: float = 0.0
    nnapi_ran: bool | None = None
    nnapi_evidence: str = ""
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""

    @property
    def max_abs_error(self) -> float | None:
        values = [c["max_abs_error"] for c in self.comparisons]
        return max(values) if values else None

    @property
    def max_rel_error(self) -> float | None:
        values = [c["max_rel_error"] for c in self.comparisons]
        return max(values) if values else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["max_abs_error"] = _finite_or_str(self.max_abs_error)
        data["max_rel_error"] = _finite_or_str(self.max_rel_error)
        data["comparisons"] = [
            {k: _finite_or_str(v) for k, v in c.items()} for c in self.comparisons
        ]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str) -> TestRecord:
        try:
            comparisons = [
                {k: _parse_float(v) if k.startswith("max_") else v for k, v in c.items()}
                for c in data.get("comparisons", [])
            ]
            return cls(
                nodeid=str(data["nodeid"]),
                target=str(data["target"]),
                outcome=str(data["outcome"]),
                duration_s=float(data.get("duration_s", 0.0)),
                nnapi_ran=data.get("nnapi_ran"),
                nnapi_evidence=str(data.get("nnapi_evidence", "")),
                comparisons=comparisons,
                message=str(data.get("message", "")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ReportError(f"{where}: malformed test entry ({error!r})") from error


def _finite_or_str(value: Any) -> Any:
    """JSON has no infinity/NaN: store them as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _parse_float(value: Any) -> Any:
    return float(value) if isinstance(value, str) else value


@dataclass
class Report:
    """A differential test report (one pytest session)."""

    target: str
    tests: list[TestRecord]
    created: str = ""
    environment: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, int]:
        counts = {outcome: 0 for outcome in OUTCOMES}
        for test in self.tests:
            counts[test.outcome] = counts.get(test.outcome, 0) + 1
        counts["nnapi_ran"] = sum(1 for t in self.tests if t.nnapi_ran)
        counts["compared"] = sum(1 for t in self.tests if t.comparisons)
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "format": REPORT_FORMAT,
            "version": REPORT_VERSION,
            "created": self.created or _now(),
            "target": self.target,
            "environment": self.environment,
            "summary": self.summary(),
            "tests": [t.to_json() for t in sorted(self.tests, key=lambda t: t.nodeid)],
        }

    def to_markdown(self) -> str:
        summary = self.summary()
        lines = [
            f"# Differential test report: target `{self.target}`",
            "",
            f"Created {self.created or _now()}. "
            + ", ".join(f"{k}: {v}" for k, v in self.environment.items()),
            "",
            "| outcome | tests |",
            "|---|---|",
            *(f"| {o} | {summary[o]} |" for o in OUTCOMES if summary.get(o)),
            f"| NNAPI ran | {summary['nnapi_ran']} |",
            f"| compared with a reference | {summary['compared']} |",
            "",
            "Errors are the largest over a test's compared arrays; the relative error is taken "
            "over elements with a non-zero reference.",
            "",
            "| test | target | outcome | max abs error | max rel error | reference | NNAPI ran "
            "| note |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for test in sorted(self.tests, key=lambda t: t.nodeid):
            ran = {True: "yes", False: "no", None: "?"}[test.nnapi_ran]
            note = test.message or test.nnapi_evidence
            references = ", ".join(sorted({str(c["reference"]) for c in test.comparisons}))
            lines.append(
                f"| `{test.nodeid}` | {test.target} | {test.outcome} | "
                f"{_fmt(test.max_abs_error)} | {_fmt(test.max_rel_error)} | {references or '-'} | "
                f"{ran} | {_md_cell(note)} |"
            )
        return "\n".join(lines) + "\n"

    def write(self, json_path: Path) -> tuple[Path, Path]:
        """Writes ``json_path`` and the Markdown next to it (same name, ``.md``)."""
        json_path = Path(json_path)
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        markdown_path = json_path.with_suffix(".md")
        markdown_path.write_text(self.to_markdown())
        return json_path, markdown_path

    @classmethod
    def load(cls, path: str | Path) -> Report:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except OSError as error:
            raise ReportError(f"{path}: cannot read ({error.strerror})") from error
        except json.JSONDecodeError as error:
            raise ReportError(f"{path}: not JSON ({error})") from error
        if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
            raise ReportError(f"{path}: not a {REPORT_FORMAT} report (no matching 'format')")
        if data.get("version") != REPORT_VERSION:
            raise ReportError(
                f"{path}: report version {data.get('version')!r}; this reader knows "
                f"{REPORT_VERSION}"
            )
        tests = data.get("tests")
        if not isinstance(tests, list):
            raise ReportError(f"{path}: 'tests' must be a list")
        return cls(
            target=str(data.get("target", "?")),
            tests=[TestRecord.from_json(t, f"{path}: tests[{i}]") for i, t in enumerate(tests)],
            created=str(data.get("created", "")),
            environment={str(k): str(v) for k, v in dict(data.get("environment", {})).items()},
        )


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    return "0" if value == 0 else f"{value:.3g}"


def _md_cell(text: str, width: int = 120) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def default_environment() -> dict[str, str]:
    """Where the report was made (host side)."""
    return {
        "host": platform.node(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }


# ---- comparing two reports -------------------------------------------------------------------


@dataclass
class Change:
    nodeid: str
    kind: str  # "regression", "fixed", "error grew", "error shrank", "missing", "new", "changed"
    detail: str
    regression: bool


def compare_reports(
    base: Report,
    other: Report,
    *,
    error_ratio: float = 10.0,
    error_floor: float = 1e-6,
    fail_on_error_growth: bool = False,
    fail_on_missing: bool = False,
    common_only: bool = False,
) -> list[Change]:
    """Tests whose outcome, NNAPI offload or error changed from ``base`` to ``other``.

    Regressions: a test that passed (or failed as expected) in ``base`` and fails or errors in
    ``other``; NNAPI that ran in ``base`` and not in ``other``; with the flags, an error that
    grew by more than ``error_ratio`` (and above ``error_floor``) and a test missing from
    ``other``. Other changes (passed -> skipped, new tests, fixes) are listed, not counted.
    ``common_only`` compares only the tests present in both (e.g. a full mock run with a run of
    the target-aware tests on a phone).
    """
    changes: list[Change] = []
    base_tests = {t.nodeid: t for t in base.tests}
    other_tests = {t.nodeid: t for t in other.tests}
    names = (
        base_tests.keys() & other_tests.keys()
        if common_only
        else base_tests.keys() | other_tests.keys()
    )
    for nodeid in sorted(names):
        a = base_tests.get(nodeid)
        b = other_tests.get(nodeid)
        if a is None:
            assert b is not None  # nodeid is in one of the two reports
            changes.append(Change(nodeid, "new", f"only in B ({b.outcome})", False))
            continue
        if b is None:
            changes.append(Change(nodeid, "missing", f"only in A ({a.outcome})", fail_on_missing))
            continue
        if a.outcome != b.outcome:
            worse = b.outcome in _BAD and a.outcome not in _BAD
            better = a.outcome in _BAD and b.outcome in _GOOD
            kind = "regression" if worse else "fixed" if better else "changed"
            detail = f"{a.outcome} -> {b.outcome}"
            if b.message and worse:
                detail += f": {b.message}"
            changes.append(Change(nodeid, kind, detail, worse))
        if a.nnapi_ran and b.nnapi_ran is False:
            changes.append(
                Change(
                    nodeid,
                    "regression",
                    f"NNAPI ran in A ({a.nnapi_evidence}) but not in B ({b.nnapi_evidence})",
                    True,
                )
            )
        ea, eb = a.max_abs_error, b.max_abs_error
        if ea is not None and eb is not None and max(ea, eb) > error_floor:
            if eb > max(ea, error_floor) * error_ratio:
                changes.append(
                    Change(
                        nodeid,
                        "error grew",
                        f"max abs error {_fmt(ea)} -> {_fmt(eb)}",
                        fail_on_error_growth,
                    )
                )
            elif ea > max(eb, error_floor) * error_ratio:
                changes.append(
                    Change(nodeid, "error shrank", f"max abs error {_fmt(ea)} -> {_fmt(eb)}", False)
                )
    return changes


def format_changes(base: Report, other: Report, changes: Iterable[Change]) -> str:
    changes = list(changes)
    lines = [f"A: target {base.target}, {len(base.tests)} tests ({_summary_text(base)})"]
    lines.append(f"B: target {other.target}, {len(other.tests)} tests ({_summary_text(other)})")
    if not changes:
        lines.append("no test changed outcome, NNAPI offload or error")
    for change in changes:
        mark = "REGRESSION" if change.regression else change.kind
        lines.append(f"{mark:>12}  {change.nodeid}: {change.detail}")
    regressions = sum(1 for c in changes if c.regression)
    lines.append(f"{regressions} regression(s), {len(changes) - regressions} other change(s)")
    return "\n".join(lines)


def _summary_text(report: Report) -> str:
    summary = report.summary()
    return ", ".join(f"{summary[o]} {o}" for o in OUTCOMES if summary.get(o))
