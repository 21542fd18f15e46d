"""The tvm-nnapi command line."""

from __future__ import annotations

import subprocess
import sys

from tvm_nnapi.cli import build_parser, main


def test_help_lists_every_subcommand():
    text = build_parser().format_help()
    for command in ("demo", "devices"):
        assert command in text


def test_devices_lists_the_mock_device(capsys):
    assert main(["devices"]) == 0
    assert "mock-reference" in capsys.readouterr().out


def test_demo_reports_subgraphs_refusals_and_a_match(capsys):
    assert main(["demo", "--model", "residual"]) == 0
    out = capsys.readouterr().out
    assert "main_nnapi_0" in out and "main_nnapi_1" in out
    assert "relax.cumsum" in out
    assert "results match" in out


def test_python_dash_m_entry_point():
    completed = subprocess.run(
        [sys.executable, "-m", "tvm_nnapi", "--help"], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0
    assert "demo" in completed.stdout
