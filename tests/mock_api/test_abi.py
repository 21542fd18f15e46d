# SPDX-License-Identifier: Apache-2.0
"""The library's ABI: the exported symbols and the layout of the public structs."""

from __future__ import annotations

import ctypes
import pathlib
import shutil
import subprocess

import pytest

from mock_nnapi import _library

from .nn import lib

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXTENSIONS = [
    "ANeuralNetworksDevice_getExtensionSupport",
    "ANeuralNetworksModel_getExtensionOperandType",
    "ANeuralNetworksModel_getExtensionOperationType",
    "ANeuralNetworksModel_setOperandExtensionData",
    "ANeuralNetworksCompilation_addExtensionAttribute",
    "ANeuralNetworksExecution_addExtensionAttribute",
]


def public_functions() -> list[str]:
    text = (ROOT / "tests" / "data" / "nnapi_public_functions.txt").read_text()
    return [name for name in text.split() if name.startswith("ANeuralNetworks")]


def test_every_public_function_is_exported():
    functions = public_functions()
    assert len(functions) == 69
    missing = [name for name in functions + EXTENSIONS if not hasattr(lib, name)]
    assert missing == []


def test_nothing_else_is_exported():
    if shutil.which("nm") is None:  # e.g. the emulated ARM64 device's minimal userland
        pytest.skip("nm is not installed: install binutils")
    nm = subprocess.run(
        ["nm", "-D", "--defined-only", str(_library.library_path())],
        capture_output=True,
        text=True,
    )
    if nm.returncode != 0:
        pytest.skip("nm is not available")
    symbols = {line.split()[-1].split("@")[0] for line in nm.stdout.splitlines() if " T " in line}
    allowed = set(public_functions()) | set(EXTENSIONS)
    unexpected = sorted(s for s in symbols - allowed if not s.startswith("MockNnapi_"))
    assert unexpected == []


def test_struct_layouts():
    pointer = ctypes.sizeof(ctypes.c_void_p)
    operand = _library.OperandType
    assert (operand.type.offset, operand.dimensionCount.offset, operand.dimensions.offset) == (
        0,
        4,
        8,
    )
    assert (operand.scale.offset, operand.zeroPoint.offset) == (8 + pointer, 12 + pointer)
    assert ctypes.sizeof(operand) == 16 + pointer
    quant = _library.SymmPerChannelQuantParams
    assert (quant.channelDim.offset, quant.scaleCount.offset, quant.scales.offset) == (0, 4, 8)
    assert ctypes.sizeof(quant) == 8 + pointer
