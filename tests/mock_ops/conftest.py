# SPDX-License-Identifier: Apache-2.0
"""On ``--target rpc|device`` every OpTester run also executes on the target's NNAPI."""

from __future__ import annotations

import pytest

from . import op_tester
from .helpers import feature_level_profile


@pytest.fixture(autouse=True)
def _operations_on_target(request: pytest.FixtureRequest):
    if request.config.getoption("--target") == "mock":
        yield
        return
    op_tester.set_remote_target(request.getfixturevalue("nnapi_target"))
    try:
        yield
    finally:
        op_tester.set_remote_target(None)


@pytest.fixture
def feature_level_devices(tmp_path):
    """A device profile with one device per feature level: the devices FL1..FL8, in order."""
    with feature_level_profile(tmp_path) as devices:
        yield devices
