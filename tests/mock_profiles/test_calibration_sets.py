# SPDX-License-Identifier: Apache-2.0
"""The published calibration sets, the held-out rows and the calibrated phone profiles
(mock_nnapi/profiles/measurements, docs/cost-model.md "Calibration"): the rows parse and name
known workloads and devices, the held-out rows are in no fit, every calibrated profile loads,
validates, cites its rows and has its recorded fit and leave-one-out summary. Nothing here
refits (a fit of twenty rows takes about a minute): the recorded summaries are what
`tvm-nnapi calibrate --json` wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mock_nnapi.device_profiles import load_profile

from tvm_nnapi.tools import calibrate, workloads

ROOT = Path(__file__).resolve().parents[2]
MEASUREMENTS = ROOT / "mock_nnapi" / "profiles" / "measurements"
HELD_OUT = MEASUREMENTS / "held-out"
SUMMARIES = MEASUREMENTS / "summaries"
CALIBRATED = ["snapdragon-8-gen-2", "snapdragon-8-gen-3", "snapdragon-8-elite"]
FAMILIES = ("CNN", "transformer", "LLM prefill", "LLM decode")


def _rows(path: Path) -> list[calibrate.Measurement]:
    return calibrate.read_measurements(path)


def _kept_apart(name: str, row: calibrate.Measurement) -> bool:
    """The rows no fit may use: the EfficientNet family, and on the Snapdragon 8 Gen 2 the
    quantized MobileNetV2 rows."""
    if row.workload.startswith("efficientnet"):
        return True
    return name == "snapdragon-8-gen-2" and (
        row.workload == "mobilenet_v2" and row.precision == "quant8"
    )


@pytest.mark.parametrize("name", CALIBRATED)
def test_rows_parse_and_name_known_workloads_and_the_profiles_devices(name):
    devices = {device["name"] for device in load_profile(name)["devices"]}
    fitted, held = _rows(MEASUREMENTS / f"{name}.csv"), _rows(HELD_OUT / f"{name}.csv")
    assert len(fitted) >= 20
    for row in [*fitted, *held]:
        assert workloads.known(row.workload) and row.device in devices, row.id
        assert row.source and row.configuration, row.id
    ids = [row.id for row in [*fitted, *held]]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("name", CALIBRATED)
def test_held_out_rows_are_in_no_fit(name):
    held = _rows(HELD_OUT / f"{name}.csv")
    assert held and all(_kept_apart(name, row) for row in held)
    held_ids = {row.id for row in held}
    for other in CALIBRATED:
        fitted = _rows(MEASUREMENTS / f"{other}.csv")
        assert not any(_kept_apart(other, row) for row in fitted), other
        assert not held_ids & {row.id for row in fitted}
        cited = json.dumps(load_profile(other)["sources"])
        assert not any(i in cited.replace(",", " ").split() for i in held_ids), other
        summary = json.loads((SUMMARIES / f"{other}.json").read_text())
        assert not held_ids & {row["id"] for row in summary["rows"]}


@pytest.mark.parametrize("name", CALIBRATED)
def test_calibrated_profiles_load_cite_their_rows_and_record_their_summary(name):
    profile = load_profile(name)  # validates against the schema
    assert profile["name"] == name
    fitted = [s for s in profile["sources"] if s["source"].startswith("Fitted by tvm-nnapi")]
    assert fitted and all(s["estimate"] for s in fitted)
    summary = json.loads((SUMMARIES / f"{name}.json").read_text())
    rows = _rows(MEASUREMENTS / f"{name}.csv")
    assert [row["id"] for row in summary["rows"]] == [row.id for row in rows]
    assert set(summary["fitted"]) == {
        path for s in fitted for path in s["fields"] if path in summary["fitted"]
    }
    assert len(summary["fitted"]) < len(rows)
    validation = summary["cross_validation"]
    assert validation["method"] == "leave-one-out"
    assert [r["id"] for r in validation["rows"]] == [row.id for row in rows]
    families = {f["family"]: f for f in validation["families"]}
    assert families["all"]["rows"] == len(rows)
    assert set(families) - {"all"} <= set(FAMILIES)
    for family in families.values():
        assert family["held_out_worst"] >= family["held_out_geomean"] >= 1
    held = _rows(HELD_OUT / f"{name}.csv")
    assert [row["id"] for row in summary["held_out"]] == [row.id for row in held]


def test_cost_model_doc_shows_every_calibrated_profiles_tables():
    text = (ROOT / "docs" / "cost-model.md").read_text()
    for name in CALIBRATED:
        summary = json.loads((SUMMARIES / f"{name}.json").read_text())
        overall = next(f for f in summary["cross_validation"]["families"] if f["family"] == "all")
        assert f"### The calibrated `{name}`" in text
        assert f"| all | {overall['rows']} | {overall['fit_geomean']:.2f}x |" in text
