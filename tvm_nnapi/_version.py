# SPDX-License-Identifier: Apache-2.0
"""The package version. It is written once, in pyproject.toml: the installed package's metadata
carries it, CMake gets it from scikit-build-core (CMakeLists.txt), and a source tree that is on
``sys.path`` without being installed reads the pyproject.toml beside it."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def package_version() -> str:
    try:
        return metadata.version("tvm-nnapi")
    except metadata.PackageNotFoundError:
        return source_tree_version()


def source_tree_version(pyproject: Path = PYPROJECT) -> str:
    """The ``[project] version`` of ``pyproject`` ("0+unknown" without one)."""
    try:
        with open(pyproject, "rb") as file:
            return str(tomllib.load(file)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "0+unknown"


__version__ = package_version()
