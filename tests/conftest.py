# SPDX-License-Identifier: Apache-2.0
"""Shared pytest configuration for the tvm-nnapi test suite."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import difftest_plugin

# The targets (tests/targets.py) import TVM; only the tests that run NNAPI builds need them.
TARGETS = ("mock", "rpc", "device")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--target",
        default=os.environ.get("TVM_NNAPI_TEST_TARGET", "mock"),
        choices=TARGETS,
        help="where NNAPI builds run: mock (in process), rpc (loopback TVM RPC server), "
        "device (a phone through a TVM RPC tracker or adb); env TVM_NNAPI_TEST_TARGET; "
        "docs/targets.md",
    )
    difftest_plugin.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a test that takes more than a few seconds")
    config.pluginmanager.register(difftest_plugin.DiffTestPlugin(config), "tvm_nnapi_difftest")
    if config.getoption("--target") == "device" and not hasattr(config, "workerinput"):
        # An explicitly requested phone that is not configured is an error, not 2000 skips.
        from tvm_nnapi.testing import android

        try:
            android.choose_device(os.environ)
        except android.TargetUnavailableError as missing:
            raise pytest.UsageError(f"--target device: {missing}") from None


def pytest_report_header(config: pytest.Config) -> str:
    return f"tvm-nnapi target: {config.getoption('--target')}"


@pytest.fixture(scope="session")
def nnapi_target(request: pytest.FixtureRequest):
    """The target NNAPI builds run on (see tests/targets.py); one per session (xdist worker)."""
    from targets import make_target

    chosen = make_target(request.config.getoption("--target"))
    yield chosen
    chosen.close()


@pytest.fixture(scope="session")
def target(nnapi_target):
    """The target NNAPI builds run on (tests that take it are target-aware)."""
    return nnapi_target


@pytest.fixture
def difftest() -> difftest_plugin.Recorder:
    """Records this test's comparisons with the reference for the differential report."""
    recorder = difftest_plugin.current()
    assert recorder is not None, "the difftest plugin is not active"
    return recorder
