# SPDX-License-Identifier: Apache-2.0
"""--devices / --no-nnapi-cpu (and the runtime's devices/exclude_cpu options) choose the NNAPI
devices of every compilation; run as a user runs the commands (a fresh process)."""

from __future__ import annotations

import json

from .cli_runner import run_cli


def _ran_on(*args: str) -> tuple[set[str], dict]:
    completed = run_cli(
        "run", "residual", "--profile", "snapdragon-8-gen-2", "--trace", "-", "--json", *args
    )
    assert completed.returncode == 0, completed.stderr
    run = json.loads(completed.stdout)["run"]
    return {device for e in run["modelled"]["executions"] for device in e["devices"]}, run


def test_devices_change_the_devices_run_reports():
    default, run = _ran_on()
    assert run["device_choice"] is None and "nnapi-reference" not in default
    cpu_only, run = _ran_on("--devices", "nnapi-reference")
    assert cpu_only == {"nnapi-reference"}
    assert run["device_choice"] == {"devices": ["nnapi-reference"], "exclude_cpu": False}
    gpu, _ = _ran_on("--devices", "qti-gpu,nnapi-reference", "--no-nnapi-cpu")
    assert gpu == {"qti-gpu"}


def test_devices_show_in_the_run_table_and_report(tmp_path):
    report = tmp_path / "run.html"
    completed = run_cli(
        "run", "residual", "--profile", "snapdragon-8-gen-2", "--devices", "qti-gpu",
        "--trace", "-", "--report", str(report),
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert "NNAPI devices: qti-gpu" in completed.stdout
    (row,) = [line for line in completed.stdout.splitlines() if "that ran operations" in line]
    assert "qti-gpu" in row and "qti-dsp" not in row
    page = report.read_text()
    assert "NNAPI devices chosen" in page and "<td>qti-gpu</td>" in page


def test_devices_show_in_explain_and_estimate():
    completed = run_cli(
        "estimate", "residual", "--profile", "tensor-g2", "--devices", "nnapi-reference", "--json"
    )
    assert completed.returncode == 0, completed.stderr
    estimate = json.loads(completed.stdout)["estimate"]
    assert {d for row in estimate["subgraphs"] for d in row["devices"]} == {"nnapi-reference"}
    text = run_cli("explain", "residual", "--profile", "tensor-g2", "--no-nnapi-cpu").stdout
    assert "NNAPI devices: all devices without CPUs" in text and "nnapi-reference" not in text


def test_unknown_or_no_device_is_a_one_line_error():
    completed = run_cli("run", "residual", "--profile", "tensor-g2", "--devices", "qti-gpu")
    assert completed.returncode == 2
    (line,) = completed.stderr.strip().splitlines()
    assert "--devices qti-gpu: no NNAPI device named qti-gpu" in line and "google-armnn" in line
    completed = run_cli(
        "run", "residual", "--devices", "mock-reference", "--no-nnapi-cpu", "--trace", "-"
    )
    assert completed.returncode == 2
    assert "no NNAPI device is left after excluding CPUs" in completed.stderr


def test_runtime_devices_option_from_python():
    from tvm_nnapi import runtime

    before = runtime.options_in_effect()
    try:
        options = runtime.configure(devices=["a", "b"], exclude_cpu=True)
        assert options["devices"] == "a,b" and options["exclude_cpu"] == "1"
    finally:
        runtime.configure(devices=before.get("devices", ""), exclude_cpu=False)
