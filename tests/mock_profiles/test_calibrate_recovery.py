# SPDX-License-Identifier: Apache-2.0
"""A fit of a profile to synthetic measurements generated from known parameters recovers
them (tvm_nnapi.tools.calibrate, docs/cost-model.md "Calibration")."""

from __future__ import annotations

import copy
import json

import pytest
from mock_nnapi.device_profiles import load_profile

from mock_nnapi import control
from tvm_nnapi.tools import calibrate


def _with(profile: dict, device: str, table: str, value: float) -> None:
    """Sets the fully-connected efficiency as the fit parametrises it: compute per device and
    data class (quant8), memory (weight streaming) one for every device (``*``)."""
    for entry in profile["devices"]:
        if device in ("*", entry["name"]):
            entries = entry.setdefault(table, {})
            if table == "compute_efficiency":
                entries["fully_connected"] = {"quant8": value}
            else:
                entries["fully_connected"] = entries["matmul"] = value


#: The parameters the synthetic rows identify, with their true values.
TRUE = {
    ("qti-gpu", "compute_efficiency"): 0.3,
    ("nnapi-reference", "compute_efficiency"): 0.25,
    ("*", "memory_efficiency"): 0.85,
}


def test_fit_recovers_known_parameters(tmp_path):
    """Measurements generated from known parameters (on the mock, through the measuring path)
    are fitted from a profile with other values, and the known values come back."""
    base = load_profile("snapdragon-8-gen-2")
    truth = copy.deepcopy(base)
    start = copy.deepcopy(base)
    for (device, table), value in TRUE.items():
        _with(truth, device, table, value)
        _with(start, device, table, value * 0.5)
    truth["name"] = "truth"
    start["name"] = "start"
    (tmp_path / "truth.json").write_text(json.dumps(truth))
    (tmp_path / "start.json").write_text(json.dumps(start))
    control.set_profile(str(tmp_path / "truth.json"))
    specs = [
        (workload, "quant8", device)
        for workload in ("smollm2-1.7b-decode", "smollm2-1.7b-prefill256")
        for device in ("qti-gpu", "nnapi-reference")
    ]
    timings, _ = calibrate.measure(specs, repeats=1, warmup=0)
    rows = [t.measurement("in_driver") for t in timings]
    control.set_profile(None)
    names = [d["name"] for d in base["devices"]]
    # Compute efficiency is fitted per device and data class, weight streaming for the phone.
    free = [
        f"devices[{names.index(device)}].{table}.fully_connected.quant8"
        if device != "*"
        else f"devices[*].{table}.fully_connected"
        for device, table in TRUE
    ]
    result = calibrate.fit(tmp_path / "start.json", rows, prior_weight=0.0, free=free)
    for path, (device, table) in zip(free, TRUE, strict=True):
        before, after = result.fitted[path]
        assert before == pytest.approx(TRUE[device, table] * 0.5)
        assert after == pytest.approx(TRUE[device, table], rel=1e-3), path
    assert all(row.factor < 1.0001 for row in result.rows)
    # Every fitted parameter cites the rows it came from.
    cited = {s["fields"][0]: s["source"] for s in result.profile["sources"]}
    for path in free:
        assert "to measurement rows: smollm2-1.7b" in cited[path]
    # The calibrated profile passes the mock's strict reader and models what the fit says.
    out = tmp_path / "calibrated.json"
    calibrate.write_profile(result.profile, out)
    control.set_profile(str(out))
    again = calibrate.measure(specs[:1], repeats=1, warmup=0)[0][0].measurement("in_driver")
    assert again.measured == pytest.approx(rows[0].measured, rel=1e-4)
