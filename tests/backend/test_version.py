# SPDX-License-Identifier: Apache-2.0
"""The version is written once, in pyproject.toml: the package, the libraries CMake builds and a
plain CMake configure all report that one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import tvm_nnapi
from mock_nnapi import control
from tvm_nnapi import _version

ROOT = Path(__file__).resolve().parents[2]


def pyproject_version() -> str:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]["version"]


def test_the_package_reports_the_pyproject_version():
    assert tvm_nnapi.__version__ == pyproject_version()


def test_the_mock_library_was_built_with_the_pyproject_version():
    assert control.version() == f"mock_nnapi {pyproject_version()}"


def test_a_source_tree_that_is_not_installed_reads_its_pyproject(tmp_path):
    # The pyproject.toml beside the package directory (site-packages has none: an installed
    # package reports its metadata instead, tested above).
    assert _version.PYPROJECT == Path(_version.__file__).resolve().parents[1] / "pyproject.toml"
    assert _version.source_tree_version(ROOT / "pyproject.toml") == pyproject_version()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "7.8.9"\n')
    assert _version.source_tree_version(tmp_path / "pyproject.toml") == "7.8.9"
    assert _version.source_tree_version(tmp_path / "missing.toml") == "0+unknown"


@pytest.mark.skipif(
    shutil.which("cmake") is None, reason="cmake is not on PATH (pip install cmake)"
)
def test_a_plain_cmake_configure_reads_the_pyproject_version(tmp_path):
    """Without scikit-build-core, CMakeLists.txt reads the version from pyproject.toml."""
    build = tmp_path / "build"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKBUILD")}
    configured = subprocess.run(
        [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(build),
            "-DTVM_NNAPI_BUILD_MOCK=OFF",
            "-DTVM_NNAPI_BUILD_RUNTIME=OFF",
            f"-DPython_EXECUTABLE={sys.executable}",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert configured.returncode == 0, configured.stdout + configured.stderr
    cache = (build / "CMakeCache.txt").read_text().splitlines()
    assert f"CMAKE_PROJECT_VERSION:STATIC={pyproject_version()}" in cache
