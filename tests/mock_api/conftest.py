# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the NNAPI C API tests: an arena of handles and a leak check around every test."""

from __future__ import annotations

import gc

import pytest

from .nn import Arena, counter, lib


@pytest.fixture
def arena():
    """The test's NNAPI objects; freed afterwards, and the live-object counters must return to
    where they were (every object the mock handed out was released)."""
    # Objects of earlier tests (e.g. a model kept alive by a saved traceback) are collected
    # first, so that only this test's objects are counted.
    gc.collect()
    before = counter("live_objects")
    owned = Arena()
    try:
        yield owned
    finally:
        owned.close()
        lib.MockNnapi_clearFaults()
    gc.collect()
    assert counter("live_objects") == before, "the test leaked NNAPI objects"
