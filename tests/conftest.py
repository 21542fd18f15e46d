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


def _mock_profile_selection() -> str | None:
    """The mock's active profile as set_profile selects it again; None before anything in this
    process loaded the mock's control API (the profile is then the one it starts with)."""
    control = sys.modules.get("mock_nnapi.control")
    if control is None:
        return None
    try:
        return control.profile_selection()
    except control.MockOnlyError:  # the NNAPI library in use is not the mock
        return None


@pytest.fixture(autouse=True)
def _restore_the_mock_profile():
    """Every test starts on the profile the one before it started on: a command run in process
    with --profile (explain, estimate, measure, devices) switches the mock's process-wide
    profile, as it should in a command-line process."""
    before = _mock_profile_selection()
    yield
    after = _mock_profile_selection()
    if after is None:
        return
    if before is None:
        before = os.environ.get("MOCK_NNAPI_PROFILE") or "reference"
    if after != before:
        import gc

        from mock_nnapi import control

        gc.collect()  # compilations of dropped programs hold the devices of the profile
        control.set_profile(before)


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
