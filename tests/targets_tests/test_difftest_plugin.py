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
    def __init__(self, option: str, rootpath: Path) -> None:
        self.option = option
        self.rootpath = rootpath

    def getoption(self, name: str) -> str:
        return {"--target": "rpc", "--difftest-report": self.option}[name]


def test_report_path_default_explicit_and_off(tmp_path):
    import difftest_plugin

    default = difftest_plugin.DiffTestPlugin(FakeConfig("", tmp_path)).report_path()
    assert default == tmp_path / "build" / "difftest" / "report-rpc.json"
    explicit = difftest_plugin.DiffTestPlugin(FakeConfig("x/r.json", tmp_path)).report_path()
    assert explicit == Path("x/r.json")
    assert difftest_plugin.DiffTestPlugin(FakeConfig("none", tmp_path)).report_path() is None
