# SPDX-License-Identifier: Apache-2.0
"""On ``--target rpc|device`` every OpTester run also executes on the target's NNAPI."""

from __future__ import annotations

import pytest

from . import op_tester


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
