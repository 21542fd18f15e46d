# SPDX-License-Identifier: Apache-2.0
"""Every kind of bad profile is rejected with a message naming the file and the field."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

import mock_nnapi
from mock_nnapi import ResultCode, control

from .helpers import device_entry, expect_error, profile_with


def _valid() -> dict[str, Any]:
    return profile_with([device_entry("npu", "ACCELERATOR"), device_entry("cpu", "CPU")])


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """Sets a dotted path ("devices.1.throughput.float16") in the profile."""

    def change(profile: dict) -> None:
        keys = path.split(".")
        target: Any = profile
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        last = keys[-1]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return change


def _delete(path: str) -> Callable[[dict], None]:
    def change(profile: dict) -> None:
        keys = path.split(".")
        target: Any = profile
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        del target[keys[-1]]

    return change


MUTATIONS = [
    (_set("schema", "v2"), 'schema: expected "mock_nnapi.device_profile/1"'),
    (_delete("name"), "name: required field is missing"),
    (_set("name", "My Phone"), "name: use lower-case letters"),
    (_delete("description"), "description: required field is missing"),
    (_set("colour", "blue"), "colour: unknown field"),
    (_set("soc", {"year": [2022]}), "soc.year: expected a string or a number"),
    (_set("runtime", {"feature_level": 0}), "runtime.feature_level: expected a feature level"),
    (_set("runtime", {"overhead_us": -1}), "runtime.overhead_us: expected a number >= 0"),
    (_set("sources", []), "sources: expected at least one entry"),
    (_set("sources.0.estimate", "yes"), "sources[0].estimate: expected true"),
    (_delete("sources.0.source"), "sources[0].source: required field is missing"),
    (_set("sources.0.fields", []), "sources[0].fields: expected at least one field path"),
    (_set("devices", []), "devices: expected at least one device"),
    (_set("devices", {"npu": {}}), "devices: expected an array"),
    (_set("devices.1.name", "npu"), 'devices[1].name: another device already has the name "npu"'),
    (_set("devices.0.name", ""), "devices[0].name: expected a non-empty string"),
    (_set("devices.0.type", "NPU"), "devices[0].type: expected"),
    (_set("devices.0.version", 3), "devices[0].version: expected a string"),
    (_set("devices.0.feature_level", 9), "devices[0].feature_level: expected a feature level"),
    (_set("devices.0.feature_level", 4.5), "devices[0].feature_level: expected a feature level"),
    (_set("devices.0.runtime_cpu", True), "devices[0].runtime_cpu: only a device of type"),
    (
        _set("devices.0", device_entry("cpu2", "CPU")),
        "devices[1].runtime_cpu: only one device can be the runtime CPU",
    ),
    (_set("devices.0.speed", 2), "devices[0].speed: unknown field"),
    (_delete("devices.0.support"), "devices[0].support: required field is missing"),
    (
        _set("devices.0.support.operations", ["CONV3D"]),
        'devices[0].support.operations[0]: unknown NNAPI operation "CONV3D"',
    ),
    (
        _set("devices.0.support.operations", ["ADD", "ADD"]),
        "devices[0].support.operations[1]: operation listed twice",
    ),
    (_set("devices.0.support.operations", "most"), "devices[0].support.operations: expected"),
    (
        _set("devices.0.support.data_types", ["INT32"]),
        'devices[0].support.data_types[0]: "INT32" is not a tensor operand type',
    ),
    (
        _set("devices.0.support.data_types", ["FLOAT64"]),
        'devices[0].support.data_types[0]: unknown operand type "FLOAT64"',
    ),
    (
        _set("devices.0.support.operation_data_types", {"SOFTMAXX": ["TENSOR_FLOAT16"]}),
        "devices[0].support.operation_data_types.SOFTMAXX: unknown NNAPI operation",
    ),
    (_set("devices.0.support.max_rank", 0), "devices[0].support.max_rank: expected an integer"),
    (_set("devices.0.support.relaxed_float32", 1), "devices[0].support.relaxed_float32"),
    (
        _set("devices.1.throughput.float16", -3),
        "devices[1].throughput.float16: expected a positive number",
    ),
    (_delete("devices.0.throughput.quant8"), "devices[0].throughput.quant8: required field"),
    (_set("devices.0.throughput.float64", 3), "devices[0].throughput.float64: unknown data class"),
    # Android's performance figures are derived from the cost model; a profile written for the
    # hand-written ones is refused (not silently read differently), naming what to do instead.
    (
        _set("devices.0.performance", {"float32": {"exec_time": 0.5, "power_usage": 1.0}}),
        "devices[0].performance: no longer read: Android's exec_time and power_usage figures are "
        "derived from the device's cost-model parameters",
    ),
    (_set("devices.0.memory_bandwidth_gbps", "fast"), "devices[0].memory_bandwidth_gbps"),
    (
        _set("devices.0.efficiency.default", 1.5),
        "devices[0].efficiency.default: expected a number in (0, 1]",
    ),
    (_set("devices.0.efficiency.convolutions", 0.5), "devices[0].efficiency.convolutions: unknown"),
    (_delete("devices.0.efficiency.default"), "devices[0].efficiency.default: required field"),
    (
        _set("devices.0.compute_efficiency", {"matmul": 0}),
        "devices[0].compute_efficiency.matmul: expected a number in (0, 1]",
    ),
    (
        _set("devices.0.memory_efficiency", {"pool": 0.5}),
        "devices[0].memory_efficiency.pool: unknown operation class",
    ),
    (
        _set("devices.0.memory_efficiency", {"default": {"float64": 0.5}}),
        "devices[0].memory_efficiency.default.float64: unknown data class",
    ),
    (
        _set("devices.0.compute_efficiency", {"matmul": {"float16": 2}}),
        "devices[0].compute_efficiency.matmul.float16: expected a number in (0, 1]",
    ),
    (_set("devices.0.compute_efficiency", [0.5]), "devices[0].compute_efficiency: expected"),
    (_set("devices.0.fuse_elementwise", 1), "devices[0].fuse_elementwise: expected true or false"),
    (_set("devices.0.overhead_us.execution", -1), "devices[0].overhead_us.execution"),
    (_delete("devices.0.transfer"), "devices[0].transfer: required field is missing"),
    (_set("devices.0.transfer.bandwidth_gbps", 0), "devices[0].transfer.bandwidth_gbps"),
    (_set("devices.0.compilation_us.cache_hit", "1ms"), "devices[0].compilation_us.cache_hit"),
    (_set("devices.1.energy.pj_per_byte", -2), "devices[1].energy.pj_per_byte"),
    # Numbers that parse but no phone has.
    (
        _set("devices.0.throughput.float32", 1e308),
        "devices[0].throughput.float32: expected at most 1e9 (no phone has such a figure)",
    ),
    (
        _set("devices.0.overhead_us.execution", 1e300),
        "devices[0].overhead_us.execution: expected at most 1e9",
    ),
    (_set("devices.0.memory_bandwidth_gbps", 2e9), "devices[0].memory_bandwidth_gbps: expected"),
    (_delete("devices.1.energy.pj_per_op.float32"), "devices[1].energy.pj_per_op.float32"),
]


@pytest.mark.parametrize(("mutate", "message"), MUTATIONS, ids=[m for _, m in MUTATIONS])
def test_bad_profile_names_the_field(mutate, message, tmp_path):
    profile = _valid()
    mutate(profile)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(profile))
    error = expect_error(ResultCode.BAD_DATA, control.set_profile, path)
    assert f"{path}: {message}" in str(error)
    # A rejected profile changes nothing.
    assert control.profile_name() == "reference"
    assert [d.name for d in mock_nnapi.devices()] == ["mock-reference"]


SYNTAX = [
    ('{"a": 1,}', "line 1, column 9: expected a string key"),
    ('{"a": 1, "a": 2}', 'line 1, column 10: duplicate key "a"'),
    ("{\n  // comment\n}", "line 2, column 3: expected a string key"),
    ('{"a": NaN}', "line 1, column 7: unexpected character 'N'"),
    ('{"a": 01}', "line 1, column 8: a number may not have leading zeros"),
    ('{"a": 1e999}', "line 1, column 7: number 1e999 is out of range"),
    ('{"a": "tab\there"}', "control character in a string"),
    ('{"a": "\\ud800"}', "unpaired high surrogate"),
    ('{"a": 1} 2', "line 1, column 10: unexpected text after the JSON value"),
    ("[" * 100, "nesting deeper than 64 levels"),
    ("", "unexpected end of input"),
]


@pytest.mark.parametrize(("text", "message"), SYNTAX, ids=[m for _, m in SYNTAX])
def test_invalid_json_is_rejected_with_line_and_column(text, message, tmp_path):
    path = tmp_path / "syntax.json"
    path.write_text(text)
    error = expect_error(ResultCode.BAD_DATA, control.set_profile, path)
    assert f"{path}: invalid JSON: " in str(error)
    assert message in str(error)


def test_invalid_utf8_is_rejected(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"a": "caf\xe9"}')
    error = expect_error(ResultCode.BAD_DATA, control.set_profile, path)
    assert "invalid UTF-8 in a string" in str(error)


def test_valid_json_details_are_accepted(tmp_path):
    profile = _valid()
    profile["description"] = 'Unicode \u00e9\U0001f4f1 and escapes \\ " / \n'
    text = json.dumps(profile, ensure_ascii=True).replace("/", "\\/")
    path = tmp_path / "escapes.json"
    path.write_text(text)
    control.set_profile(path)
    assert control.profile()["description"] == profile["description"]


def test_built_in_profiles_pass_the_strict_reader():
    for name in control.available_profiles():
        control.set_profile(name)
        document = copy.deepcopy(control.profile())
        assert document["name"] == name
