# SPDX-License-Identifier: Apache-2.0
"""Fixtures for the device-profile and cost-model tests: every test starts and ends on the
default "reference" profile with no faults and no traces."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_nnapi import _library, control


@pytest.fixture(autouse=True)
def _clean_mock() -> Iterator[None]:
    if not _library.is_mock():
        pytest.skip("the device profiles are a mock_nnapi feature")
    control.clear_faults()
    control.set_profile(None)
    control.clear_traces()
    yield
    control.clear_faults()
    control.set_profile(None)
    control.clear_traces()
    control.set_trace_capacity(16)


@pytest.fixture
def write_profile(tmp_path: Path):
    """Writes a profile dict to ``<tmp>/<name>.json`` and returns the path."""

    def write(profile: dict[str, Any], name: str | None = None) -> Path:
        path = tmp_path / f"{name or profile['name']}.json"
        path.write_text(json.dumps(profile, indent=2))
        return path

    return write
