# SPDX-License-Identifier: Apache-2.0
"""pytest plugin: the differential report of every test run (format: tvm_nnapi.testing.difftest).

Per test it records the target the test ran on, its outcome, the errors of every array a test
compared with its reference (``difftest.check`` / ``difftest.compare``, or OpTester's
``assert_close``) and whether NNAPI really ran (what the target reported, else the in-process
mock's execution counter). At the end of the session the controller writes JSON and Markdown:

    --difftest-report PATH     (env TVM_NNAPI_DIFFTEST_REPORT; default
                                build/difftest/report-<target>.json; "none" turns it off)

With pytest-xdist, workers attach their records to the test reports (``user_properties``), which
xdist sends to the controller, so one report covers every worker.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest


def _load_report_module():
    """tvm_nnapi/testing/difftest.py of this source tree, loaded by path: it needs only numpy, and
    importing the tvm_nnapi package would import TVM, which runs of the mock alone (tox -e
    sanitize) neither have nor need."""
    path = Path(__file__).resolve().parents[1] / "tvm_nnapi" / "testing" / "difftest.py"
    spec = importlib.util.spec_from_file_location("tvm_nnapi_difftest_report", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:  # what _load_report_module loads
    from tvm_nnapi.testing import difftest
else:
    difftest = _load_report_module()
Comparison = difftest.Comparison
Report = difftest.Report
TestRecord = difftest.TestRecord
compare_arrays = difftest.compare_arrays
default_environment = difftest.default_environment

REPORT_ENV = "TVM_NNAPI_DIFFTEST_REPORT"
PROPERTY = "tvm_nnapi_difftest"

_current: Recorder | None = None


def current() -> Recorder | None:
    """The recorder of the test running in this process (None outside a test)."""
    return _current


class Recorder:
    """What one test records for the differential report (thread-safe)."""

    def __init__(self, item: pytest.Item, default_target: str) -> None:
        self.item = item
        self.default_target = default_target
        self._lock = threading.Lock()
        self.explicit_nnapi = False
        self.uses_target = False
        self.mock_executions_before = 0

    def _add(self, kind: str, value: Any) -> None:
        with self._lock:
            self.item.user_properties.append((PROPERTY, {"kind": kind, "value": value}))

    def target(self, name: str) -> None:
        """The test ran (part of) its work on ``name``."""
        self._add("target", name)

    def record(self, comparison: Comparison) -> None:
        """Records a comparison made elsewhere (e.g. OpTester's accuracy criteria)."""
        self._add("comparison", comparison.to_json())

    def compare(
        self,
        actual: Any,
        expected: Any,
        *,
        rtol: float,
        atol: float,
        label: str = "output",
        reference: str = "host llvm",
    ) -> Comparison:
        """Records the errors of ``actual`` against ``expected`` (does not assert)."""
        comparison = compare_arrays(
            actual, expected, rtol=rtol, atol=atol, label=label, reference=reference
        )
        self.record(comparison)
        return comparison

    def check(
        self,
        actual: Any,
        expected: Any,
        *,
        rtol: float,
        atol: float,
        label: str = "output",
        reference: str = "host llvm",
    ) -> Comparison:
        """Records and asserts: dtype, shape and every element within ``atol + rtol * |ref|``
        (exact for integers and booleans when both tolerances are 0)."""
        actual = np.asarray(actual)
        expected = np.asarray(expected)
        comparison = self.compare(
            actual, expected, rtol=rtol, atol=atol, label=label, reference=reference
        )
        assert actual.dtype == expected.dtype, f"{label}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.shape == expected.shape, f"{label}: shape {actual.shape} != {expected.shape}"
        assert comparison.within_tolerance, (
            f"{label}: {comparison.mismatched} of {expected.size} elements differ from the "
            f"{reference} reference beyond atol={atol}, rtol={rtol}; max abs error "
            f"{comparison.max_abs_error:.3g}, max rel error {comparison.max_rel_error:.3g}"
        )
        return comparison

    def nnapi(self, ran: bool, evidence: str) -> None:
        """Whether NNAPI really executed this test's work, and how that is known."""
        self.explicit_nnapi = True
        self._add("nnapi", {"ran": bool(ran), "evidence": evidence})


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("tvm-nnapi differential report")
    group.addoption(
        "--difftest-report",
        default=os.environ.get(REPORT_ENV, ""),
        metavar="PATH",
        help="write the differential report to PATH (JSON) and PATH with .md (Markdown); "
        "default build/difftest/report-<target>.json, 'none' to turn off; env " + REPORT_ENV,
    )


def _mock_executions() -> int:
    """Executions completed by the in-process mock NNAPI (0 when it is not loaded)."""
    module = sys.modules.get("mock_nnapi")
    if module is None:
        return 0
    try:
        return int(module.counter("executions_completed"))
    except Exception:  # the library failed to load: nothing ran on it
        return 0


class DiffTestPlugin:
    """Registered by tests/conftest.py in the controller and in every xdist worker."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.target = str(config.getoption("--target"))
        self.records: dict[str, TestRecord] = {}
        self.report_paths: tuple[Path, Path] | None = None
        self.started = time.time()

    # ---- workers (and a single process): record while the test runs ----------------------

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item):
        global _current
        uses_target = "nnapi_target" in getattr(item, "fixturenames", ())
        recorder = Recorder(item, self.target if uses_target else "mock")
        recorder.uses_target = uses_target
        recorder.mock_executions_before = _mock_executions()
        if uses_target:
            recorder.target(self.target)
        _current = recorder
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        yield
        recorder = _current
        if recorder is None or recorder.item is not item:
            return
        executed = _mock_executions() - recorder.mock_executions_before
        if executed > 0:
            recorder._add(
                "nnapi", {"ran": True, "evidence": f"in-process mock: {executed} executions"}
            )
        elif recorder.uses_target and not recorder.explicit_nnapi:
            recorder._add(
                "nnapi", {"ran": False, "evidence": "the target reported no NNAPI execution"}
            )

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item):
        global _current
        yield
        _current = None

    # ---- controller (and a single process): collect and write -----------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = self.records.get(report.nodeid)
        if record is None:
            record = TestRecord(nodeid=report.nodeid, target="mock", outcome="passed")
            self.records[report.nodeid] = record
        record.duration_s += float(getattr(report, "duration", 0.0) or 0.0)
        if report.when == "setup":
            if report.failed:
                record.outcome, record.message = "error", _message(report)
            elif report.skipped:
                record.outcome, record.message = "skipped", _message(report)
        elif report.when == "call":
            if hasattr(report, "wasxfail"):
                record.outcome = "xfailed" if report.skipped else "xpassed"
                record.message = str(report.wasxfail)
            elif report.failed:
                record.outcome, record.message = "failed", _message(report)
            elif report.skipped:
                record.outcome, record.message = "skipped", _message(report)
            else:
                record.outcome = "passed"
        elif report.when == "teardown" and report.failed and record.outcome != "failed":
            record.outcome, record.message = "error", _message(report)
        # user_properties is the item's whole list at the time of this report: rebuild from it.
        targets, comparisons, nnapi = [], [], []
        for name, value in report.user_properties:
            if name != PROPERTY or not isinstance(value, dict):
                continue
            if value["kind"] == "target":
                targets.append(str(value["value"]))
            elif value["kind"] == "comparison":
                comparisons.append(dict(value["value"]))
            elif value["kind"] == "nnapi":
                nnapi.append(value["value"])
        if targets:
            record.target = "+".join(dict.fromkeys(targets))
        if comparisons:
            record.comparisons = comparisons
        if nnapi:
            record.nnapi_ran = any(entry["ran"] for entry in nnapi)
            record.nnapi_evidence = "; ".join(dict.fromkeys(str(e["evidence"]) for e in nnapi))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module skipped at collection (``pytest.importorskip`` at module level) counts as
        one skipped test, as pytest's summary counts it."""
        if report.skipped and report.nodeid and report.nodeid not in self.records:
            self.records[report.nodeid] = TestRecord(
                nodeid=report.nodeid, target="mock", outcome="skipped", message=_message(report)
            )

    def full_run(self) -> bool:
        """Whether this run is the whole suite: the tests directory (or the rootdir) as the
        only path, no -k/-m selection, no --lf/--sw/--deselect."""
        config = self.config
        option = config.option
        if getattr(option, "keyword", "") or getattr(option, "markexpr", ""):
            return False
        if getattr(option, "lf", False) or getattr(option, "stepwise", False):
            return False
        if getattr(option, "deselect", None):
            return False
        root = Path(config.rootpath).resolve()
        paths = {Path(config.invocation_params.dir, arg).resolve() for arg in config.args}
        return paths <= {root, root / "tests"}

    def report_path(self) -> Path | None:
        """--difftest-report (or its environment variable) when given; else
        build/difftest/report-<target>.json for a full run and, so that a subset (a tox
        environment's selection, a test file) does not overwrite it,
        build/difftest/partial/report-<target>[-<tox env>].json otherwise."""
        option = str(self.config.getoption("--difftest-report") or "")
        if option.lower() == "none":
            return None
        if option:
            return Path(option)
        directory = Path(self.config.rootpath) / "build" / "difftest"
        if self.full_run():
            return directory / f"report-{self.target}.json"
        tox_env = os.environ.get("TOX_ENV_NAME", "")
        suffix = f"-{tox_env}" if tox_env and tox_env != self.target else ""
        return directory / "partial" / f"report-{self.target}{suffix}.json"

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput"):  # an xdist worker: the controller writes
            return
        path = self.report_path()
        if path is None or not self.records:
            return
        environment = default_environment()
        environment["pytest_target"] = self.target
        environment["duration_s"] = f"{time.time() - self.started:.1f}"
        report = Report(
            target=self.target, tests=list(self.records.values()), environment=environment
        )
        self.report_paths = report.write(path)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.report_paths is not None:
            json_path, markdown_path = self.report_paths
            terminalreporter.write_line(f"differential report: {json_path} and {markdown_path}")


def _message(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The first line of a failure, or a skip's reason."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message).splitlines()[0] if crash.message else ""
    text = str(longrepr or "")
    return text.strip().splitlines()[-1] if text.strip() else ""
