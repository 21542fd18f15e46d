# SPDX-License-Identifier: Apache-2.0
"""Leave-one-out cross-validation of a calibration and the warnings of an underdetermined fit
(tvm_nnapi.tools.calibrate, docs/cost-model.md "Calibration")."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest
from mock_nnapi.device_profiles import load_profile

from tvm_nnapi.cli import main
from tvm_nnapi.tools import calibrate
from tvm_nnapi.tools.calibrate import CalibrationWarning, Measurement

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "mock_nnapi" / "profiles" / "measurements" / "snapdragon-8-gen-2.csv"
PROFILE = "snapdragon-8-gen-2"


def _device(name: str) -> int:
    return [d["name"] for d in load_profile(PROFILE)["devices"]].index(name)


def _mobilenet_rows(measured: list[float], device: str = "qti-dsp") -> list[Measurement]:
    return [
        Measurement(
            id=f"r{i}", workload="mobilenet_v2", precision="float16", device=device, measured=y
        )
        for i, y in enumerate(measured)
    ]


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def test_leave_one_out_error_is_at_least_the_error_of_fit_on_the_published_rows(tmp_path):
    """From the profile's values before calibration, each published row predicted by the fit to
    the other rows is no closer than the fit to every row; the set's families are named."""
    # The first seven rows: one or two per device and phase (the whole set takes a minute).
    rows = calibrate.read_measurements(PUBLISHED)[:7]
    start = tmp_path / "start.json"
    calibrate.write_profile(calibrate.before_calibration(load_profile(PROFILE)), start)
    with pytest.warns(CalibrationWarning) as caught:
        result = calibrate.fit(start, rows, cross_validate=True)
    validation = result.cross_validation
    assert validation is not None
    assert [row.id for row in validation.rows] == [row.id for row in rows]
    for row in validation.rows:
        assert row.held_out_factor >= row.factor * (1 - 1e-9), row.id
    overall = validation.overall()
    assert overall.rows == len(rows)
    assert overall.held_out_geomean >= overall.fit_geomean
    assert overall.held_out_worst >= overall.fit_worst
    assert [s.family for s in validation.families()] == ["CNN", "LLM prefill", "LLM decode", "all"]
    # More fitted parameters than rows, and any bound reached: said, in the report too (a bound
    # reached for certain: test_an_active_bound_is_reported below).
    assert len(result.fitted) > len(rows)
    assert any("outnumber the 7 rows" in w for w in result.warnings)
    assert bool(result.active_bounds) == any("end at a bound" in w for w in result.warnings)
    assert {str(w.message) for w in caught} == set(result.warnings)
    report = result.report()
    assert "**Warning:** " in report and "| all | 7 |" in report


def test_leave_one_out_on_a_synthetic_set_with_a_known_answer():
    """Three rows of one workload and one free parameter, no prior: the fit models every row
    at the geometric mean of the measurements, and a left-out row at that of the others."""
    measured = [1.0, 1.2, 1.44]
    free = [f"devices[{_device('qti-dsp')}].overhead_us.execution"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        validation = calibrate.cross_validate(
            PROFILE, _mobilenet_rows(measured), prior_weight=0.0, free=free
        )
    everything = _geomean(measured)
    for i, row in enumerate(validation.rows):
        others = _geomean(measured[:i] + measured[i + 1 :])
        assert row.family == "CNN" and row.only_this_row == []
        assert row.modelled == pytest.approx(everything, rel=1e-4)
        assert row.held_out == pytest.approx(others, rel=1e-4)
        assert row.held_out_ratio == pytest.approx(others / measured[i], rel=1e-4)
    (cnn, overall) = validation.families()
    assert cnn.family == "CNN" and overall.family == "all" and cnn.rows == overall.rows == 3
    # Factors: the fit is off by 1.2x, 1x and 1.2x; left out by 1.2^1.5, 1x and 1.2^1.5.
    assert overall.fit_geomean == pytest.approx(1.2 ** (2 / 3), rel=1e-3)
    assert overall.fit_worst == pytest.approx(1.2, rel=1e-3)
    assert overall.held_out_geomean == pytest.approx(1.2, rel=1e-3)
    assert overall.held_out_worst == pytest.approx(1.2**1.5, rel=1e-3)
    assert overall.worst_row in ("r0", "r2")


def test_a_row_that_alone_informs_a_parameter_is_predicted_from_the_start():
    """Left out, a row whose device no other row runs on is modelled with that device's
    starting values, and the parameters it alone informs are named."""
    gpu_row = Measurement(
        id="gpu", workload="mobilenet_v2", precision="float16", device="qti-gpu", measured=6.0
    )
    rows = [*_mobilenet_rows([1.0]), gpu_row]
    dsp, gpu = (f"devices[{_device(d)}].overhead_us.execution" for d in ("qti-dsp", "qti-gpu"))
    result = calibrate.fit(PROFILE, rows, prior_weight=0.0, free=[dsp, gpu], cross_validate=True)
    assert result.warnings == []
    validation = result.cross_validation
    assert validation is not None
    for row, fitted, path in zip(result.rows, validation.rows, (dsp, gpu), strict=True):
        assert fitted.modelled == pytest.approx(fitted.measured, rel=1e-4)
        assert fitted.held_out == pytest.approx(row.modelled_before, rel=1e-9)
        assert fitted.only_this_row == [path]


def test_the_warning_fires_when_parameters_outnumber_the_rows():
    with pytest.warns(CalibrationWarning, match=r"fitted parameters outnumber the 1 rows"):
        result = calibrate.fit(PROFILE, _mobilenet_rows([1.0]))
    assert len(result.fitted) > 1
    summary = calibrate.fit_summary(result)
    assert any("outnumber the 1 rows" in w for w in summary["warnings"])
    assert summary["cross_validation"] is None


def test_an_active_bound_is_reported():
    """A row faster than the workload can be at full streaming efficiency of its activations
    pins the device's memory efficiency (its default, every class but weight streaming) at its
    upper bound, 1."""
    path = f"devices[{_device('qti-dsp')}].memory_efficiency.default"
    with pytest.warns(CalibrationWarning, match="end at a bound") as caught:
        result = calibrate.fit(PROFILE, _mobilenet_rows([0.3]), prior_weight=0.0, free=[path])
    assert len(caught) == 1
    assert result.active_bounds == {path: "upper"}
    assert result.fitted[path][1] == pytest.approx(1.0)
    assert calibrate.fit_summary(result)["active_bounds"] == {path: "upper"}


def test_cross_validating_from_a_profile_fitted_to_the_rows_warns(tmp_path):
    """A profile calibrated on the rows anchors their left-out fits; before_calibration gives
    back the starting values and the fit's sources entries go."""
    rows = _mobilenet_rows([1.0, 1.2])
    path = f"devices[{_device('qti-dsp')}].overhead_us.execution"
    result = calibrate.fit(PROFILE, rows, prior_weight=0.0, free=[path])
    calibrated = tmp_path / "calibrated.json"
    calibrate.write_profile(result.profile, calibrated)
    with pytest.warns(CalibrationWarning, match="already fitted to rows r0, r1"):
        calibrate.fit(calibrated, rows, prior_weight=0.0, free=[path], cross_validate=True)
    # Every fitted field goes back to its value before the first fit that cites it.
    restored = calibrate.before_calibration(result.profile)
    assert restored == calibrate.before_calibration(load_profile(PROFILE))
    assert not any(str(s.get("source", "")).startswith("Fitted by") for s in restored["sources"])
    assert calibrate.before_calibration(restored) == restored


def test_the_command_reports_leave_one_out(tmp_path, capsys):
    rows = tmp_path / "rows.csv"
    calibrate.write_measurements(rows, _mobilenet_rows([1.0, 1.2]))
    argv = ["calibrate", PROFILE, str(rows), "-o", str(tmp_path / "cal.json")]
    assert main([*argv, "--json", "--report", str(tmp_path / "fit.md")]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    validation = summary["cross_validation"]
    assert validation["method"] == "leave-one-out"
    assert [row["id"] for row in validation["rows"]] == ["r0", "r1"]
    assert [s["family"] for s in validation["families"]] == ["CNN", "all"]
    assert "leave-one-out 2/2: refitting without r1" in captured.err
    assert "warning: " in captured.err and summary["warnings"]
    report = (tmp_path / "fit.md").read_text()
    assert "modelled (row left out)" in report and "**Warning:**" in report
    assert main([*argv, "--json", "--no-cross-validate"]) == 0
    assert json.loads(capsys.readouterr().out)["cross_validation"] is None


def test_the_help_describes_cross_validation(capsys):
    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--cross-validate" in text and "leave-one-out" in text
    assert "--from-estimates" in text
