# SPDX-License-Identifier: Apache-2.0
"""Plain C programs written against the NDK header link with -lneuralnetworks against the built
mock and run: run_add.c (an ADD model) and api_tour.c (success and error paths of the whole API,
every object freed). Under AddressSanitizer (libasan in LD_PRELOAD) the programs run with
detect_leaks=1, so they also check that the library frees everything it allocates."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

from mock_nnapi import _library

ROOT = pathlib.Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "mock_nnapi" / "include"


def c_compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "cc"))


pytestmark = pytest.mark.skipif(c_compiler() is None, reason="no C compiler (cc or $CC) on PATH")


def build(program: str, directory: pathlib.Path) -> pathlib.Path:
    library = _library.library_path()
    if library.name != "libneuralnetworks.so":
        pytest.skip(f"-lneuralnetworks cannot name {library}")
    binary = directory / program
    compiler = c_compiler()
    assert compiler is not None  # the module is skipped without one
    command = [
        compiler,
        "-std=c99",
        "-Wall",
        "-Wextra",
        "-Werror",
        f"-I{INCLUDE}",
        str(ROOT / "tests" / "c" / f"{program}.c"),
        f"-L{library.parent}",
        "-lneuralnetworks",
        f"-Wl,-rpath,{library.parent}",
        "-o",
        str(binary),
    ]
    built = subprocess.run(command, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return binary


def run(binary: pathlib.Path, *arguments: str) -> subprocess.CompletedProcess:
    env = os.environ.copy()
    if "libasan" in env.get("LD_PRELOAD", ""):
        # The last setting of a flag wins: a C program has no interpreter leaking at exit.
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=1"]))
    ran = subprocess.run(
        [str(binary), *arguments], capture_output=True, text=True, timeout=120, env=env
    )
    assert ran.returncode == 0, f"exit {ran.returncode}: {ran.stdout}{ran.stderr}"
    return ran


def test_run_add(tmp_path):
    assert run(build("run_add", tmp_path)).stdout.split() == ["11", "22", "33", "44"]


def test_api_tour(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    assert run(build("api_tour", tmp_path), str(cache)).stdout.strip() == "ok"
    assert len(list(cache.iterdir())) == 1  # the compilation cache file
