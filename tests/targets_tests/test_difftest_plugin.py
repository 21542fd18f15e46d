# SPDX-License-Identifier: Apache-2.0
"""The differential report written by every test run, with and without pytest-xdist."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tvm_nnapi.testing.difftest import Report

TESTS_DIR = Path(__file__).resolve().parent.parent

SAMPLE_TESTS = """
import numpy as np
import pytest


def test_close(difftest):
    difftest.check(np.float32([1.0, 2.0]), np.float32([1.0, 2.0000005]), rtol=1e-5, atol=1e-6)
    difftest.nnapi(True, "sample: NNAPI ran")


def test_too_far(difftest):
    difftest.check(np.float32([1.0]), np.float32([1.5]), rtol=1e-5, atol=1e-6)


def test_skipped():
    pytest.skip("no phone: set RPC_DEVICE_KEY")


@pytest.mark.xfail(reason="known difference")
def test_expected_failure():
    assert False


def test_uses_the_target(target):
    assert target.name == "fake"
"""

SAMPLE_CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS_DIR)!r})
import difftest_plugin
import pytest


def pytest_addoption(parser):
    parser.addoption("--target", default="fake")
    difftest_plugin.add_options(parser)


def pytest_configure(config):
    config.pluginmanager.register(difftest_plugin.DiffTestPlugin(config), "tvm_nnapi_difftest")


class FakeTarget:
    name = "fake"


@pytest.fixture(scope="session")
def nnapi_target():
    return FakeTarget()


@pytest.fixture(scope="session")
def target(nnapi_target):
    return nnapi_target


@pytest.fixture
def difftest():
    return difftest_plugin.current()
"""


def test_report_covers_every_test_and_worker(tmp_path):
    """Two xdist workers record; the controller merges their records into one report."""
    (tmp_path / "conftest.py").write_text(SAMPLE_CONFTEST)
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(SAMPLE_TESTS))
    report_path = tmp_path / "out" / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         f"--difftest-report={report_path}", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr  # test_too_far fails
    assert f"differential report: {report_path}" in result.stdout
    report = Report.load(report_path)
    tests = {t.nodeid.split("::")[-1]: t for t in report.tests}
    assert report.target == "fake"
    assert tests["test_close"].outcome == "passed"
    assert tests["test_close"].nnapi_ran is True
    assert tests["test_close"].max_abs_error == pytest.approx(4.76837158203125e-07)
    assert tests["test_too_far"].outcome == "failed"
    assert tests["test_too_far"].max_abs_error == pytest.approx(0.5)
    assert "1 of 1 elements differ from the host llvm reference" in tests["test_too_far"].message
    assert tests["test_skipped"].outcome == "skipped"
    assert "set RPC_DEVICE_KEY" in tests["test_skipped"].message
    assert tests["test_expected_failure"].outcome == "xfailed"
    # A target-aware test names the session's target; NNAPI did not run in it.
    assert tests["test_uses_the_target"].target == "fake"
    assert tests["test_uses_the_target"].nnapi_ran is False
    assert tests["test_close"].target == "mock"
    markdown = report_path.with_suffix(".md").read_text()
    assert "| failed | 1 |" in markdown and "| xfailed | 1 |" in markdown


class FakeConfig:
    def __init__(
        self, option: str, rootpath: Path, args: tuple[str, ...] = ("tests",), keyword: str = ""
    ) -> None:
        import argparse

        self.report = option
        self.rootpath = rootpath
        self.args = list(args)
        self.invocation_params = argparse.Namespace(dir=rootpath)
        self.option = argparse.Namespace(keyword=keyword, markexpr="", lf=False, deselect=[])

    def getoption(self, name: str) -> str:
        return {"--target": "rpc", "--difftest-report": self.report}[name]


def test_report_path_default_explicit_and_off(tmp_path):
    import difftest_plugin

    default = difftest_plugin.DiffTestPlugin(FakeConfig("", tmp_path)).report_path()
    assert default == tmp_path / "build" / "difftest" / "report-rpc.json"
    explicit = difftest_plugin.DiffTestPlugin(FakeConfig("x/r.json", tmp_path)).report_path()
    assert explicit == Path("x/r.json")
    assert difftest_plugin.DiffTestPlugin(FakeConfig("none", tmp_path)).report_path() is None


def test_a_subset_run_does_not_overwrite_the_full_report(tmp_path, monkeypatch):
    import difftest_plugin

    monkeypatch.delenv("TOX_ENV_NAME", raising=False)
    partial = tmp_path / "build" / "difftest" / "partial"
    subset = FakeConfig("", tmp_path, args=("tests/backend/test_cli.py",))
    assert difftest_plugin.DiffTestPlugin(subset).report_path() == partial / "report-rpc.json"
    selected = FakeConfig("", tmp_path, keyword="cli")
    assert difftest_plugin.DiffTestPlugin(selected).report_path() == partial / "report-rpc.json"
    monkeypatch.setenv("TOX_ENV_NAME", "sanitize")
    assert (
        difftest_plugin.DiffTestPlugin(subset).report_path() == partial / "report-rpc-sanitize.json"
    )
    # The whole tests directory is a full run, whatever the tox environment.
    full = difftest_plugin.DiffTestPlugin(FakeConfig("", tmp_path, args=("tests",)))
    assert full.report_path() == tmp_path / "build" / "difftest" / "report-rpc.json"


def test_a_module_skipped_at_collection_counts_as_skipped(tmp_path):
    (tmp_path / "conftest.py").write_text(SAMPLE_CONFTEST)
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(SAMPLE_TESTS))
    (tmp_path / "test_optional.py").write_text(
        "import pytest\npytest.importorskip('no_such_module_xyz', reason='optional extra')\n"
    )
    report_path = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         f"--difftest-report={report_path}", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert "2 skipped" in result.stdout, result.stdout
    report = Report.load(report_path)
    assert sum(t.outcome == "skipped" for t in report.tests) == 2
    (module,) = [t for t in report.tests if t.nodeid == "test_optional.py"]
    assert "optional extra" in module.message


def test_device_target_without_a_phone_fails_with_what_to_set(tmp_path):
    env = {
        k: v
        for k, v in __import__("os").environ.items()
        if k not in ("TVM_TRACKER_HOST", "TVM_TRACKER_PORT", "RPC_DEVICE_KEY")
        and k not in ("TVM_NNAPI_ADB_SERIALS", "ANDROID_SERIAL")
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--target", "device",
         "--difftest-report=none", str(TESTS_DIR / "backend" / "test_ops.py")],
        capture_output=True, text=True, cwd=TESTS_DIR.parent, timeout=300, env=env,
    )  # fmt: skip
    assert result.returncode == 4, result.stdout + result.stderr  # pytest's usage error
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("ERROR: --target device: no phone configured")
    assert "TVM_TRACKER_HOST" in line and "TVM_NNAPI_ADB_SERIALS" in line
