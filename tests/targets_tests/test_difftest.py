# SPDX-License-Identifier: Apache-2.0
"""The differential report format and `tvm-nnapi compare-reports`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tvm_nnapi import cli
from tvm_nnapi.testing.difftest import (
    Report,
    ReportError,
    TestRecord,
    compare_arrays,
    compare_reports,
)


def test_compare_arrays_errors_and_tolerance():
    expected = np.array([1.0, -2.0, 0.0, 4.0], np.float32)
    actual = np.array([1.0, -2.5, 1e-7, 4.0], np.float32)
    c = compare_arrays(actual, expected, rtol=0.1, atol=1e-6)
    assert c.max_abs_error == pytest.approx(0.5)
    assert c.max_rel_error == pytest.approx(0.25)  # 0.5 / 2; the zero reference is left out
    assert c.mismatched == 1 and not c.within_tolerance
    assert compare_arrays(actual, expected, rtol=0.3, atol=1e-6).within_tolerance


def test_compare_arrays_nan_inf_integers_and_shapes():
    nan_inf = np.array([np.nan, np.inf, 1.0])
    assert compare_arrays(nan_inf, nan_inf, rtol=0, atol=0).within_tolerance
    c = compare_arrays(np.array([np.nan, 1.0]), np.array([0.0, 1.0]), rtol=0, atol=0)
    assert c.max_abs_error == math.inf and c.mismatched == 1
    ints = compare_arrays(np.array([1, 2, 3]), np.array([1, 2, 4]), rtol=0, atol=0)
    assert ints.mismatched == 1 and ints.max_abs_error == 1
    shape = compare_arrays(np.zeros(3), np.zeros(4), rtol=0, atol=0)
    assert not shape.within_tolerance and shape.max_abs_error == math.inf


def record(nodeid, outcome="passed", error=None, ran=True, target="mock"):
    comparisons = []
    if error is not None:
        c = compare_arrays(np.array([error]), np.array([0.0]), rtol=0, atol=1.0)
        comparisons.append(c.to_json())
    return TestRecord(nodeid, target, outcome, 0.1, ran, "counted", comparisons, "")


def test_report_round_trip_json_and_markdown(tmp_path):
    report = Report(
        "rpc",
        [
            record("t::a", error=1e-7),
            record("t::b", "failed", error=math.inf),
            record("t::c", "skipped", ran=None),
        ],
        environment={"host": "ci"},
    )
    json_path, md_path = report.write(tmp_path / "r.json")
    data = json.loads(json_path.read_text())
    assert data["format"] == "tvm-nnapi-difftest" and data["version"] == 1
    assert data["summary"]["passed"] == 1 and data["summary"]["failed"] == 1
    assert data["tests"][1]["max_abs_error"] == "inf"  # JSON has no infinity
    loaded = Report.load(json_path)
    assert [t.nodeid for t in loaded.tests] == ["t::a", "t::b", "t::c"]
    assert loaded.tests[1].max_abs_error == math.inf
    assert loaded.tests[2].nnapi_ran is None
    markdown = md_path.read_text()
    assert "`t::b` | mock | failed | inf" in markdown
    assert "| NNAPI ran | 2 |" in markdown


def test_compare_reports_finds_regressions_fixes_and_lost_offload():
    base = Report(
        "mock",
        [
            record("a", error=1e-7),
            record("b", "failed"),
            record("c", ran=True),
            record("d", error=1e-7),
            record("gone"),
        ],
    )
    other = Report(
        "device",
        [
            record("a", "failed", error=1e-7, target="device"),
            record("b", "passed", target="device"),
            record("c", ran=False, target="device"),
            record("d", error=1e-3, target="device"),
            record("new", target="device"),
        ],
    )
    changes = {(c.nodeid, c.kind): c for c in compare_reports(base, other)}
    assert changes[("a", "regression")].regression
    assert not changes[("b", "fixed")].regression
    assert changes[("c", "regression")].regression  # NNAPI no longer ran
    assert not changes[("d", "error grew")].regression
    assert not changes[("gone", "missing")].regression
    assert ("new", "new") in changes
    strict = compare_reports(base, other, fail_on_error_growth=True, fail_on_missing=True)
    assert {c.nodeid for c in strict if c.regression} == {"a", "c", "d", "gone"}
    common = compare_reports(base, other, fail_on_missing=True, common_only=True)
    assert {c.nodeid for c in common} == {"a", "b", "c", "d"}


def test_compare_reports_command_exit_codes(tmp_path, capsys):
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    Report("mock", [record("x"), record("y")]).write(a)
    Report("device", [record("x"), record("y", "error")]).write(b)
    assert cli.main(["compare-reports", str(a), str(a)]) == 0
    assert "0 regression(s)" in capsys.readouterr().out
    assert cli.main(["compare-reports", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION  y: passed -> error" in out
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    assert cli.main(["compare-reports", str(a), str(bad)]) == 2
    assert "bad.json: not a tvm-nnapi-difftest report" in capsys.readouterr().err
    assert cli.main(["compare-reports", str(a), str(tmp_path / "missing.json")]) == 2


def test_load_rejects_newer_versions_and_malformed_entries(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"format": "tvm-nnapi-difftest", "version": 2, "tests": []}))
    with pytest.raises(ReportError, match="version 2"):
        Report.load(path)
    path.write_text(json.dumps({"format": "tvm-nnapi-difftest", "version": 1, "tests": [{}]}))
    with pytest.raises(ReportError, match=r"tests\[0\]: malformed"):
        Report.load(path)
