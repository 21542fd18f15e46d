# SPDX-License-Identifier: Apache-2.0
"""The Python package's NNAPI constants (mock_nnapi.constants) are the ABI header's enums, and
the operation, operand-type and result-code tables of common/*.inc list the same names: the C
header is the one source of the numbers, the tables and the Python enums are checked against it."""

from __future__ import annotations

import enum
import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

from mock_nnapi import constants

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADER = ROOT / "mock_nnapi" / "include" / "android" / "NeuralNetworksTypes.h"
RESULT_CODE_NAMES = ("ANEURALNETWORKS_NO_ERROR", "ANEURALNETWORKS_DEAD_OBJECT")


def header_enums() -> dict[str, dict[str, int]]:
    """Each `typedef enum { ... } Name;` of the header as {member without prefix: value}."""
    text = HEADER.read_text()
    enums: dict[str, dict[str, int]] = {}
    for body, name in re.findall(r"typedef enum \{(.*?)\}\s*(\w+);", text, flags=re.S):
        members: dict[str, int] = {}
        for member, value in re.findall(r"ANEURALNETWORKS_(\w+)\s*=\s*(-?\d+)", body):
            members[member] = int(value)
        enums[name] = members
    return enums


def table_rows(name: str, macro: str) -> list[str]:
    text = (ROOT / "common" / name).read_text()
    return re.findall(rf"^{macro}\((\w+)", text, flags=re.M)


def members(cls: type[enum.IntEnum]) -> dict[str, int]:
    return {member.name: int(member.value) for member in cls}


# Python member names drop the header's per-enum prefix (ANEURALNETWORKS_PADDING_SAME ->
# PaddingCode.SAME); the OEM values (NeuralNetworksOEM.h, deprecated) are not in the Python enums.
PYTHON_NAMES = {
    "OperandCode": lambda name: name,
    "OperationCode": lambda name: name,
    "FuseCode": lambda name: name.removeprefix("FUSED_"),
    "PaddingCode": lambda name: name.removeprefix("PADDING_"),
    "PreferenceCode": lambda name: name.removeprefix("PREFER_"),
    "DeviceTypeCode": lambda name: name.removeprefix("DEVICE_"),
    "DurationCode": lambda name: name.replace("DURATION_", ""),
    "PriorityCode": lambda name: name.removeprefix("PRIORITY_"),
    "FeatureLevelCode": lambda name: name,
}


@pytest.mark.parametrize("header_enum", sorted(PYTHON_NAMES))
def test_python_enums_are_the_header_enums(header_enum):
    header = header_enums()[header_enum]
    assert header, f"{header_enum} not found in {HEADER}"
    expected = {
        PYTHON_NAMES[header_enum](name): value
        for name, value in header.items()
        if "OEM" not in name and name != "PRIORITY_DEFAULT"  # an alias of PRIORITY_MEDIUM
    }
    assert members(getattr(constants, header_enum)) == expected


def test_result_codes_match_the_header_and_the_table():
    text = HEADER.read_text()
    header = dict(
        (name, int(value))
        for name, value in re.findall(r"ANEURALNETWORKS_(\w+)\s*=\s*(\d+)", text)
        if name in members(constants.ResultCode)
    )
    assert header == members(constants.ResultCode)
    assert table_rows("nnapi_result_codes.inc", "NNAPI_RESULT_CODE") == list(
        members(constants.ResultCode)
    )


def test_operation_table_lists_every_operation_code_in_order():
    rows = table_rows("nnapi_operations.inc", "NNAPI_OPERATION")
    codes = header_enums()["OperationCode"]
    public = [
        name for name, value in sorted(codes.items(), key=lambda item: item[1]) if value < 10000
    ]
    assert rows == public
    assert rows == [m.name for m in constants.OperationCode if "OEM" not in m.name]


def test_operand_type_table_lists_every_operand_code_in_order():
    rows = table_rows("nnapi_operand_types.inc", "NNAPI_OPERAND_TYPE")
    codes = header_enums()["OperandCode"]
    public = [
        name for name, value in sorted(codes.items(), key=lambda item: item[1]) if value < 10000
    ]
    assert rows == public


def test_generated_python_files_are_up_to_date():
    """constants.py, _signatures.py and tvm_nnapi/compiler/feature_levels.py are what the
    generator writes from the headers today."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_nnapi_python.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_generator_names_a_stale_file(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location(
        "generate_nnapi_python", ROOT / "scripts" / "generate_nnapi_python.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    stale = tmp_path / "constants.py"
    stale.write_text("# edited by hand\n")
    monkeypatch.setattr(generator, "CONSTANTS", stale)
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0
    assert generator.main(["--check"]) == 0
    assert "class OperationCode(enum.IntEnum):" in stale.read_text()


def test_generated_signatures_declare_every_exported_function():
    """Every function the mock library exports has a ctypes signature from the headers."""
    from mock_nnapi._signatures import SIGNATURES

    from mock_nnapi import _library

    version_script = (ROOT / "mock_nnapi" / "libneuralnetworks.map.txt").read_text()
    exported = re.findall(r"^\s+(A\w+|MockNnapi_\w+);", version_script, flags=re.M)
    assert exported
    assert sorted(set(exported) - set(SIGNATURES)) == []
    library = _library.load()
    assert (
        library.ANeuralNetworksModel_addOperand.argtypes
        == SIGNATURES["ANeuralNetworksModel_addOperand"][1]
    )
