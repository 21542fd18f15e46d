# SPDX-License-Identifier: Apache-2.0
"""MOCK_NNAPI_LIBRARY_FEATURE_LEVEL: the mock stands in for an older Android's
libneuralnetworks.so, whose dlsym finds no function newer than that feature level.

The oracle is the headers' own sections (``// API 29 (feature level 3, ...)``): at level L, every
function of a section above L is missing and every other one is there."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from mock_nnapi import _library

from .nn import lib

INCLUDE = Path(__file__).resolve().parents[2] / "mock_nnapi" / "include" / "android"
VARIABLE = "MOCK_NNAPI_LIBRARY_FEATURE_LEVEL"
pytestmark = pytest.mark.skipif(not _library.is_mock(lib), reason="the mock's own control")


def _header_levels() -> dict[str, int]:
    """Each NNAPI function of the headers with the feature level of its section."""
    levels: dict[str, int] = {}
    for header in ("NeuralNetworks.h", "NeuralNetworksExtensions.h"):
        level = 0
        for line in (INCLUDE / header).read_text().splitlines():
            section = re.match(r"// API \d+ \(feature level (\d)", line)
            if section:
                level = int(section.group(1))
            elif line.startswith("// Added after API 31"):
                level = 6
            declared = re.search(r"MOCK_NNAPI_EXPORT [\w\s*]*?\b(ANeuralNetworks\w+)\(", line)
            if declared:
                levels[declared.group(1)] = level
    return levels


LEVELS = _header_levels()


@pytest.fixture
def library_level() -> Iterator[None]:
    """Lets the test set the variable; restores it (the resolvers read it at each lookup)."""
    before = os.environ.get(VARIABLE)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(VARIABLE, None)
        else:
            os.environ[VARIABLE] = before


def test_the_headers_have_every_function_in_a_section():
    assert len(LEVELS) == 75 and set(LEVELS.values()) == {1, 2, 3, 4, 5, 6}
    assert LEVELS["ANeuralNetworksDevice_getFeatureLevel"] == 3
    assert LEVELS["ANeuralNetworks_getRuntimeFeatureLevel"] == 5


@pytest.mark.parametrize("level", ["1", "2", "3", "4", "5", "29", "1000006"])
def test_functions_newer_than_the_level_are_missing(library_level, level):
    os.environ[VARIABLE] = level
    number = int(level) if int(level) <= 8 else {29: 3, 1000006: 6}[int(level)]
    present = {name for name in LEVELS if _library.exports(lib, name)}
    assert present == {name for name, at in LEVELS.items() if at <= number}
    assert _library.exports(lib, "MockNnapi_getLastError")  # the control API stays


@pytest.mark.parametrize("value", ["", "8", "9", "0", "abc"])
def test_every_function_is_there_otherwise(library_level, value):
    os.environ[VARIABLE] = value
    assert all(_library.exports(lib, name) for name in LEVELS)


def test_functions_found_before_keep_working(library_level):
    """A function found while the variable allowed it stays callable: only lookups change."""
    os.environ[VARIABLE] = "8"
    found = lib.ANeuralNetworks_getRuntimeFeatureLevel
    os.environ[VARIABLE] = "2"
    assert not _library.exports(lib, "ANeuralNetworks_getRuntimeFeatureLevel")
    assert found() > 0
