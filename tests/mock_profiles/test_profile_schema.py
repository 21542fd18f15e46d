# SPDX-License-Identifier: Apache-2.0
"""The JSON Schema of device profiles (mock_nnapi/python/mock_nnapi/device_profile.schema.json)
and mock_nnapi.device_profiles.validate_profile against the mock's reader (src/profile.cc), the
authority: both accept every built-in profile and a set of valid variations, both refuse a
corpus of bad profiles naming the same field, the schema's NNAPI names are the rows of
common/*.inc, and the field tables of docs/device-profiles.md name the schema's fields."""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-not-found, import-untyped, unused-ignore]
import pytest

from mock_nnapi import NnapiError, ResultCode, control, device_profiles

from .helpers import device_entry, profile_with
from .test_bad_profiles import MUTATIONS as MOCK_MUTATIONS

ROOT = Path(__file__).resolve().parents[2]


class _Delete:
    """The value that removes a field (its repr names the test)."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE = _Delete()


def _valid() -> dict[str, Any]:
    """An accelerator that needs a transfer and the runtime CPU, as test_bad_profiles uses."""
    return profile_with([device_entry("npu", "ACCELERATOR"), device_entry("cpu", "CPU")])


def _apply(profile: dict[str, Any], where: str, value: Any) -> None:
    """Sets (or with DELETE removes) a dotted path of the profile: "devices.1.throughput"; an
    index one past the end of a list appends."""
    keys = where.split(".")
    target: Any = profile
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    last: Any = int(keys[-1]) if isinstance(target, list) else keys[-1]
    if value is DELETE:
        del target[last]
    elif isinstance(target, list) and last == len(target):
        target.append(copy.deepcopy(value))
    else:
        target[last] = copy.deepcopy(value)


def _write(tmp_path: Path, profile: dict[str, Any]) -> Path:
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(profile, indent=1))
    return path


def _schema_paths(profile: Any) -> list[str]:
    """The field paths validate_profile names (empty when it accepts the profile)."""
    try:
        device_profiles.validate_profile(profile)
    except device_profiles.ProfileValidationError as error:
        return error.paths
    return []


# ---- The schema itself --------------------------------------------------------------------


def test_the_schema_is_a_draft_2020_12_schema():
    schema = device_profiles.profile_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def _subschemas(node: Any, where: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from _subschemas(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _subschemas(value, f"{where}/{index}")


def test_every_property_has_a_description():
    for where, node in _subschemas(device_profiles.profile_schema()):
        if "/if" in where:
            continue  # a condition, not a field
        for name, property_schema in node.get("properties", {}).items():
            assert isinstance(property_schema.get("description"), str), f"{where}/{name}"
            assert property_schema["description"], f"{where}/{name}"


def test_the_schema_is_not_a_profile():
    # It lives in the Python package, outside every directory profiles are listed from (the
    # embedding glob profiles/*.json, the installed profiles, $MOCK_NNAPI_PROFILE_DIR).
    assert device_profiles.SCHEMA_FILE.parent != device_profiles.SOURCE_TREE_PROFILES
    for names in (device_profiles.available_profiles(), control.available_profiles()):
        assert not [name for name in names if "schema" in name]


def _inc_rows(name: str, macro: str) -> list[list[str]]:
    text = (ROOT / "common" / name).read_text()
    return [row.split(", ") for row in re.findall(rf"^{macro}\((.*)\)$", text, re.MULTILINE)]


def test_the_nnapi_names_are_the_rows_of_common_inc():
    # The schema spells the enumerations out (editors complete them); they must stay the rows.
    defs = device_profiles.profile_schema()["$defs"]
    operations = [row[0] for row in _inc_rows("nnapi_operations.inc", "NNAPI_OPERATION")]
    assert defs["operation"]["enum"] == operations
    tensors = [
        row[0]
        for row in _inc_rows("nnapi_operand_types.inc", "NNAPI_OPERAND_TYPE")
        if row[3] != "Scalar"
    ]
    assert defs["tensorOperandType"]["enum"] == tensors


def _cc_names(array: str) -> list[str]:
    text = (ROOT / "mock_nnapi" / "src" / "device.cc").read_text()
    body = re.search(rf"{array}\[\w+\] = \{{(.*?)\}};", text, re.DOTALL)
    assert body is not None, array
    return re.findall(r'"(\w+)"', body.group(1))


def test_the_class_names_are_the_mocks():
    defs = device_profiles.profile_schema()["$defs"]
    data_classes = _cc_names("kDataClassNames")
    operation_classes = _cc_names("kOperationClassNames")
    for table in ("throughputTable", "energyTable"):
        assert list(defs[table]["properties"]) == data_classes
    assert list(defs["splitEntry"]["else"]["properties"]) == ["default", *data_classes]
    assert list(defs["splitTable"]["properties"]) == ["default", *operation_classes]
    efficiency = defs["device"]["properties"]["efficiency"]
    assert list(efficiency["properties"]) == ["default", *operation_classes]


# ---- Built-in profiles ----------------------------------------------------------------------


@pytest.mark.parametrize("name", device_profiles.available_profiles())
def test_a_built_in_profile_validates(name):
    document = device_profiles.load_profile(name)  # validates
    device_profiles.validate_profile(document)
    control.set_profile(name)
    device_profiles.validate_profile(control.profile())


# ---- Bad profiles: refused by both ------------------------------------------------------------

# (what to change, its new value or DELETE, the field both readers must name). The mock stops at
# its first problem; each mutation makes exactly one.
BAD: list[tuple[str, Any, str]] = [
    ("schema", DELETE, "schema"),
    ("schema", "mock_nnapi.device_profile/2", "schema"),
    ("schema", 1, "schema"),
    ("name", "Test Phone", "name"),
    ("name", "", "name"),
    ("name", 7, "name"),
    ("description", DELETE, "description"),
    ("description", "", "description"),
    ("notes", "", "notes"),
    ("notes", ["a"], "notes"),
    ("$schema", "https://json-schema.org/draft/2020-12/schema", "$schema"),
    ("soc", "Snapdragon", "soc"),
    ("soc", {"year": True}, "soc.year"),
    ("soc", {"cpu": None}, "soc.cpu"),
    ("runtime", [], "runtime"),
    ("runtime.feature_level", 9, "runtime.feature_level"),
    ("runtime.feature_level", 8.0, "runtime.feature_level"),
    ("runtime.feature_level", "8", "runtime.feature_level"),
    ("runtime.feature_level", 1000009, "runtime.feature_level"),
    ("runtime.overhead_us", -0.5, "runtime.overhead_us"),
    ("runtime.overhead", 5, "runtime.overhead"),
    ("sources", DELETE, "sources"),
    ("sources", [], "sources"),
    ("sources.0", "made up", "sources[0]"),
    ("sources.0.fields", DELETE, "sources[0].fields"),
    ("sources.0.fields", "devices", "sources[0].fields"),
    ("sources.0.fields", [3], "sources[0].fields[0]"),
    ("sources.0.source", "", "sources[0].source"),
    ("sources.0.value", 3.5, "sources[0].value"),
    ("sources.0.estimate", DELETE, "sources[0].estimate"),
    ("sources.0.estimate", "yes", "sources[0].estimate"),
    ("sources.0.url", "https://example.com", "sources[0].url"),
    ("devices", DELETE, "devices"),
    ("devices", [], "devices"),
    ("devices.0", "npu", "devices[0]"),
    ("devices.1.name", "npu", "devices[1].name"),
    ("devices.0.name", DELETE, "devices[0].name"),
    ("devices.0.type", "NPU", "devices[0].type"),
    ("devices.0.type", "cpu", "devices[0].type"),
    ("devices.0.version", "", "devices[0].version"),
    ("devices.0.feature_level", DELETE, "devices[0].feature_level"),
    ("devices.0.feature_level", 0, "devices[0].feature_level"),
    ("devices.0.feature_level", True, "devices[0].feature_level"),
    ("devices.0.runtime_cpu", True, "devices[0].runtime_cpu"),
    ("devices.0", device_entry("cpu2", "CPU"), "devices[1].runtime_cpu"),
    ("devices.1.runtime_cpu", "yes", "devices[1].runtime_cpu"),
    ("devices.0.notes", 5, "devices[0].notes"),
    ("devices.0.colour", "red", "devices[0].colour"),
    ("devices.0.performance", {"float32": {"exec_time": 0.5}}, "devices[0].performance"),
    ("devices.0.support", DELETE, "devices[0].support"),
    ("devices.0.support", "all", "devices[0].support"),
    ("devices.0.support.operations", DELETE, "devices[0].support.operations"),
    ("devices.0.support.operations", [], "devices[0].support.operations"),
    ("devices.0.support.operations", ["conv_2d"], "devices[0].support.operations[0]"),
    ("devices.0.support.operations", ["ADD", "OEM_OPERATION"], "devices[0].support.operations[1]"),
    ("devices.0.support.operations", ["ADD", "MUL", "ADD"], "devices[0].support.operations[2]"),
    ("devices.0.support.operations", ["all"], "devices[0].support.operations[0]"),
    ("devices.0.support.exclude_operations", "IF", "devices[0].support.exclude_operations"),
    (
        "devices.0.support.exclude_operations",
        ["WHILE", "WHILE"],
        "devices[0].support.exclude_operations[1]",
    ),
    ("devices.0.support.exclude_operations", ["LOOP"], "devices[0].support.exclude_operations[0]"),
    ("devices.0.support.data_types", DELETE, "devices[0].support.data_types"),
    ("devices.0.support.data_types", [], "devices[0].support.data_types"),
    (
        "devices.0.support.data_types",
        ["TENSOR_FLOAT16", "TENSOR_FLOAT16"],
        "devices[0].support.data_types[1]",
    ),
    ("devices.0.support.data_types", ["FLOAT16"], "devices[0].support.data_types[0]"),
    ("devices.0.support.data_types", ["TENSOR_OEM_BYTE"], "devices[0].support.data_types[0]"),
    ("devices.0.support.data_types", "float16", "devices[0].support.data_types"),
    (
        "devices.0.support.operation_data_types",
        ["QUANTIZE"],
        "devices[0].support.operation_data_types",
    ),
    (
        "devices.0.support.operation_data_types",
        {"QUANTIZE": []},
        "devices[0].support.operation_data_types.QUANTIZE",
    ),
    (
        "devices.0.support.operation_data_types",
        {"QUANTIZE": ["TENSOR_INT32", "BOOL"]},
        "devices[0].support.operation_data_types.QUANTIZE[1]",
    ),
    (
        "devices.0.support.operation_data_types",
        {"QUANTISE": "all"},
        "devices[0].support.operation_data_types.QUANTISE",
    ),
    ("devices.0.support.max_rank", DELETE, "devices[0].support.max_rank"),
    ("devices.0.support.max_rank", 9, "devices[0].support.max_rank"),
    ("devices.0.support.max_rank", 4.0, "devices[0].support.max_rank"),
    ("devices.0.support.max_rank", "4", "devices[0].support.max_rank"),
    ("devices.0.support.relaxed", True, "devices[0].support.relaxed"),
    ("devices.0.throughput", DELETE, "devices[0].throughput"),
    ("devices.0.throughput", 100, "devices[0].throughput"),
    ("devices.0.throughput.float32", 0, "devices[0].throughput.float32"),
    ("devices.0.throughput.float16", DELETE, "devices[0].throughput.float16"),
    ("devices.0.throughput.int8", 4, "devices[0].throughput.int8"),
    ("devices.0.throughput.bool8", "1", "devices[0].throughput.bool8"),
    ("devices.0.throughput.quant8", True, "devices[0].throughput.quant8"),
    ("devices.0.memory_bandwidth_gbps", DELETE, "devices[0].memory_bandwidth_gbps"),
    ("devices.0.memory_bandwidth_gbps", -1, "devices[0].memory_bandwidth_gbps"),
    ("devices.0.efficiency", DELETE, "devices[0].efficiency"),
    ("devices.0.efficiency", 0.5, "devices[0].efficiency"),
    ("devices.0.efficiency.default", 0, "devices[0].efficiency.default"),
    ("devices.0.efficiency.matmul", 1.01, "devices[0].efficiency.matmul"),
    ("devices.0.efficiency.float16", 0.5, "devices[0].efficiency.float16"),
    ("devices.0.compute_efficiency", 0.5, "devices[0].compute_efficiency"),
    ("devices.0.compute_efficiency", {"matmul": "high"}, "devices[0].compute_efficiency.matmul"),
    (
        "devices.0.compute_efficiency",
        {"matmul": {"default": 0}},
        "devices[0].compute_efficiency.matmul.default",
    ),
    (
        "devices.0.memory_efficiency",
        {"default": {"float16": 1.5}},
        "devices[0].memory_efficiency.default.float16",
    ),
    (
        "devices.0.memory_efficiency",
        {"convolution": {"int8": 0.5}},
        "devices[0].memory_efficiency.convolution.int8",
    ),
    ("devices.0.fuse_elementwise", "true", "devices[0].fuse_elementwise"),
    ("devices.0.overhead_us", DELETE, "devices[0].overhead_us"),
    ("devices.0.overhead_us.operation", DELETE, "devices[0].overhead_us.operation"),
    ("devices.0.overhead_us.step", 1, "devices[0].overhead_us.step"),
    ("devices.0.transfer", DELETE, "devices[0].transfer"),
    ("devices.0.transfer.latency_us", -1, "devices[0].transfer.latency_us"),
    ("devices.0.transfer.bandwidth_gbps", DELETE, "devices[0].transfer.bandwidth_gbps"),
    ("devices.0.transfer.setup_us", 1, "devices[0].transfer.setup_us"),
    # A CPU device needs no transfer, but one it has is checked.
    (
        "devices.1.transfer",
        {"latency_us": 0, "bandwidth_gbps": 0},
        "devices[1].transfer.bandwidth_gbps",
    ),
    ("devices.0.compilation_us", DELETE, "devices[0].compilation_us"),
    ("devices.0.compilation_us.cache_hit", DELETE, "devices[0].compilation_us.cache_hit"),
    ("devices.0.compilation_us.fixed", -100, "devices[0].compilation_us.fixed"),
    ("devices.0.energy", DELETE, "devices[0].energy"),
    ("devices.0.energy.pj_per_op", DELETE, "devices[0].energy.pj_per_op"),
    ("devices.0.energy.pj_per_op.quant8", -1, "devices[0].energy.pj_per_op.quant8"),
    ("devices.0.energy.pj_per_byte", DELETE, "devices[0].energy.pj_per_byte"),
    ("devices.0.energy.pj_per_bit", 1, "devices[0].energy.pj_per_bit"),
    # Figures that parse but no phone has.
    ("devices.0.throughput.float32", 1e308, "devices[0].throughput.float32"),
    ("devices.0.overhead_us.execution", 1e300, "devices[0].overhead_us.execution"),
    ("devices.0.transfer.latency_us", 5e9, "devices[0].transfer.latency_us"),
]


@pytest.mark.parametrize(("where", "value", "field"), BAD, ids=[f"{w}={v!r}" for w, v, _ in BAD])
def test_a_bad_profile_is_refused_by_both_naming_the_same_field(where, value, field, tmp_path):
    profile = _valid()
    _apply(profile, where, value)
    path = _write(tmp_path, profile)
    with pytest.raises(NnapiError) as refused:
        control.set_profile(path)
    assert refused.value.code == ResultCode.BAD_DATA
    assert f"{path}: {field}: " in str(refused.value)
    assert field in _schema_paths(profile)
    with pytest.raises(device_profiles.ProfileValidationError, match=re.escape(f"{path}: ")):
        device_profiles.load_profile(path)


@pytest.mark.parametrize(
    ("mutate", "message"), MOCK_MUTATIONS, ids=[message for _, message in MOCK_MUTATIONS]
)
def test_the_schema_refuses_the_mocks_own_corpus(mutate, message):
    # tests/mock_profiles/test_bad_profiles.py checks the mock's message; the schema must refuse
    # the same profile naming the same field.
    profile = _valid()
    mutate(profile)
    assert message.split(": ")[0] in _schema_paths(profile)


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_a_number_that_is_not_finite_is_refused(number, tmp_path):
    profile = _valid()
    profile["devices"][0]["throughput"]["float32"] = number
    path = _write(tmp_path, profile)  # json.dumps writes NaN / Infinity, which is not JSON
    with pytest.raises(NnapiError, match="invalid JSON"):
        control.set_profile(path)
    assert _schema_paths(profile) == ["devices[0].throughput.float32"]
    with pytest.raises(ValueError, match=f"{path}: invalid JSON: .*not a JSON number"):
        device_profiles.load_profile(path)


def test_a_duplicate_key_is_refused(tmp_path):
    path = tmp_path / "duplicate.json"
    text = json.dumps(_valid())
    path.write_text(text.replace('"name": "test-phone"', '"name": "a", "name": "test-phone"'))
    with pytest.raises(NnapiError, match='duplicate key "name"'):
        control.set_profile(path)
    with pytest.raises(ValueError, match=f"{path}: invalid JSON: duplicate key 'name'"):
        device_profiles.load_profile(path)


def test_the_message_names_the_field_as_the_mock_does(tmp_path):
    profile = _valid()
    profile["devices"][1]["throughput"]["float16"] = -3
    with pytest.raises(device_profiles.ProfileValidationError) as error:
        device_profiles.validate_profile(profile)
    expected = "devices[1].throughput.float16: expected a positive number, found the number -3"
    assert str(error.value) == expected
    assert error.value.path == "devices[1].throughput.float16"
    with pytest.raises(NnapiError, match=re.escape(expected)):
        control.set_profile(_write(tmp_path, profile))
    # Every problem is listed, the first in the message's lead.
    del profile["description"]
    profile["devices"][0]["support"]["max_rank"] = 9
    with pytest.raises(device_profiles.ProfileValidationError) as error:
        device_profiles.validate_profile(profile, origin="phone.json")
    assert sorted(error.value.paths) == [
        "description",
        "devices[0].support.max_rank",
        "devices[1].throughput.float16",
    ]
    assert str(error.value).startswith("phone.json: ")
    assert "(and 2 more: " in str(error.value)
    assert device_profiles.ProfileValidationError.__mro__[1] is ValueError
    with pytest.raises(device_profiles.ProfileValidationError) as error:
        device_profiles.validate_profile([profile])
    assert str(error.value) == "(top level): expected an object, found an array"


def test_load_profile_validates_unless_told_not_to(tmp_path):
    profile = _valid()
    profile["devices"][0]["performance"] = {"float32": {"exec_time": 0.5}}
    path = _write(tmp_path, profile)
    with pytest.raises(
        device_profiles.ProfileValidationError, match=re.escape("devices[0].performance: refused")
    ):
        device_profiles.load_profile(path)
    assert device_profiles.load_profile(path, validate=False) == profile


# ---- Valid variations: accepted by both ----------------------------------------------------


def _minimal(profile: dict[str, Any]) -> None:
    del profile["runtime"]
    cpu = profile["devices"][1]
    del cpu["runtime_cpu"]  # a profile without one models the fallback with built-in numbers


def _every_class(profile: dict[str, Any]) -> None:
    for device in profile["devices"]:
        classes = ["float32", "relaxed_float32", "float16", "quant8", "quant16", "int32", "bool8"]
        device["throughput"] = {c: 10 * (i + 1) for i, c in enumerate(classes)}
        device["energy"]["pj_per_op"] = {c: 0 for c in classes}
        device["efficiency"] = dict.fromkeys(
            [
                "default",
                "convolution",
                "depthwise_convolution",
                "fully_connected",
                "matmul",
                "pooling",
                "elementwise",
                "softmax",
                "reduction",
                "normalization",
                "data_movement",
                "other",
            ],
            1,
        )
        device["efficiency"]["softmax"] = 1e-9


def _changes(*changes: tuple[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(profile: dict[str, Any]) -> None:
        for where, value in changes:
            _apply(profile, where, value)

    return change


VALID: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("the base profile", _changes()),
    ("no runtime, soc, notes or runtime CPU", _minimal),
    ("every data and operation class", _every_class),
    (
        "feature levels as codes",
        _changes(
            ("runtime.feature_level", 27),
            ("devices.0.feature_level", 1000006),
            ("devices.1.feature_level", 1000008),
        ),
    ),
    ("feature level 1", _changes(("devices.0.feature_level", 1))),
    (
        "an operation list with exclusions",
        _changes(
            ("devices.0.support.operations", ["ADD", "MUL", "CONV_2D"]),
            ("devices.0.support.exclude_operations", ["MUL"]),
        ),
    ),
    ("all but control flow", _changes(("devices.0.support.exclude_operations", ["IF", "WHILE"]))),
    ("no exclusions", _changes(("devices.0.support.exclude_operations", []))),
    (
        "data types per operation",
        _changes(
            ("devices.0.support.data_types", ["TENSOR_QUANT8_ASYMM", "TENSOR_FLOAT16"]),
            (
                "devices.0.support.operation_data_types",
                {"QUANTIZE": ["TENSOR_FLOAT32", "TENSOR_FLOAT16"], "DEQUANTIZE": "all"},
            ),
            ("devices.0.support.relaxed_float32", True),
            ("devices.0.support.notes", "int8 first"),
        ),
    ),
    (
        "rank 1 and rank 8",
        _changes(("devices.0.support.max_rank", 1), ("devices.1.support.max_rank", 8)),
    ),
    (
        "split efficiency tables",
        _changes(
            (
                "devices.0.compute_efficiency",
                {"default": 0.5, "matmul": {"default": 0.3, "float16": 0.9}, "convolution": 1},
            ),
            ("devices.0.memory_efficiency", {"default": {"quant8": 0.2}}),
            ("devices.1.compute_efficiency", {}),
        ),
    ),
    (
        "soc facts and notes everywhere",
        _changes(
            ("soc", {"vendor": "Made-up", "year": 2023, "dram_peak_gbps": 67.2, "npu": ""}),
            ("notes", "a note"),
            ("devices.0.notes", "a device note"),
        ),
    ),
    ("an empty soc", _changes(("soc", {}))),
    (
        "several sources",
        _changes(
            (
                "sources",
                [
                    {
                        "fields": ["devices[0].throughput.quant8"],
                        "value": "30 TOPS",
                        "source": "a",
                        "estimate": False,
                    },
                    {"fields": [""], "source": "b", "estimate": True},
                ],
            ),
        ),
    ),
    (
        "a GPU, an OTHER and a CPU with a transfer",
        _changes(
            ("devices.0.type", "GPU"),
            ("devices.1.transfer", {"latency_us": 0, "bandwidth_gbps": 0.5}),
            ("devices.2", device_entry("dsp", "OTHER", runtime_cpu=False)),
        ),
    ),
    (
        "zero costs",
        _changes(
            ("runtime.overhead_us", 0),
            ("devices.0.overhead_us", {"execution": 0, "operation": 0.0}),
            ("devices.0.compilation_us", {"fixed": 0, "per_operation": 0, "cache_hit": 0}),
            ("devices.0.energy.pj_per_byte", 0),
            ("devices.0.transfer.latency_us", 0),
        ),
    ),
    (
        "fusion flags and large numbers",
        _changes(
            ("devices.0.fuse_elementwise", True),
            ("devices.1.fuse_elementwise", False),
            ("devices.0.throughput.quant8", 30000),
            ("devices.0.memory_bandwidth_gbps", 67.2),
        ),
    ),
    ("a name with digits and punctuation", _changes(("name", "phone_2.v-1"))),
    ("a Unicode description", _changes(("description", "Caf\u00e9 phone \U0001f4f1"))),
]


@pytest.mark.parametrize(("label", "change"), VALID, ids=[label for label, _ in VALID])
def test_a_valid_variation_is_accepted_by_both(label, change, tmp_path):
    profile = _valid()
    change(profile)
    device_profiles.validate_profile(profile)
    path = _write(tmp_path, profile)
    control.set_profile(path)
    assert device_profiles.load_profile(path) == profile


# ---- The docs' field tables -----------------------------------------------------------------


def _docs_tables() -> dict[str, list[str]]:
    """The field names of each table in the "Schema" section of docs/device-profiles.md, by the
    table's heading ("Top level", "devices[i]", ...)."""
    text = (ROOT / "docs" / "device-profiles.md").read_text()
    section = text.split("\n## Schema", 1)[1].split("\n## ", 1)[0]
    tables: dict[str, list[str]] = {}
    for block in section.split("\n### ")[1:]:
        heading = block.splitlines()[0].strip().strip("`")
        names: list[str] = []
        for line in block.splitlines():
            cells = line.split("|")
            if len(cells) < 3 or cells[1].strip() in ("Field", "") or set(cells[1]) <= set("-| "):
                continue
            prefix = ""
            for name in re.findall(r"`([^`]+)`", cells[1]):
                if name.startswith("."):
                    name = prefix + name  # `compilation_us.fixed`, `.per_operation`
                prefix = name.rsplit(".", 1)[0] if "." in name else ""
                names.append(name)
        tables[heading] = names
    return tables


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].removeprefix("#/$defs/")]
    return node


def _object_at(schema: dict[str, Any], heading: str) -> dict[str, Any]:
    """The object schema a table describes: "Top level", "sources[i]", "devices[i].support"."""
    node = schema
    if heading == "Top level":
        return node
    for part in heading.split("."):
        name, items = part.removesuffix("[i]"), part.endswith("[i]")
        node = _resolve(schema, node["properties"][name])
        if items:
            node = _resolve(schema, node["items"])
    return node


def _covered(schema: dict[str, Any], node: dict[str, Any], names: set[str], prefix: str) -> bool:
    """Every property of ``node`` is named, or all of its own properties are."""
    for name, property_schema in node.get("properties", {}).items():
        full = f"{prefix}{name}"
        if full in names:
            continue
        inner = _resolve(schema, property_schema)
        if "properties" not in inner or not _covered(schema, inner, names, f"{full}."):
            return False
    return True


def test_the_docs_tables_and_the_schema_name_the_same_fields():
    schema = device_profiles.profile_schema()
    tables = _docs_tables()
    assert set(tables) == {
        "Top level",
        "sources[i]",
        "devices[i]",
        "devices[i].support",
        "devices[i].driver_failures[i]",
    }
    for heading, names in tables.items():
        node = _object_at(schema, heading)
        for name in names:  # every field in the table is in the schema
            inner = node
            for part in name.split("."):
                assert part in inner.get("properties", {}), f"{heading}: {name}"
                inner = _resolve(schema, inner["properties"][part])
        for name, property_schema in node["properties"].items():  # and vice versa
            assert _covered(schema, {"properties": {name: property_schema}}, set(names), ""), (
                f"{heading}: {name} is not in the table of docs/device-profiles.md"
            )


def test_the_docs_class_lists_are_the_schemas():
    text = (ROOT / "docs" / "device-profiles.md").read_text()
    defs = device_profiles.profile_schema()["$defs"]
    paragraph = text.split("A **data-class table** is an object keyed by", 1)[1].split(".", 1)[0]
    assert re.findall(r"`(\w+)`", paragraph) == list(defs["throughputTable"]["properties"])
    row = next(line for line in text.splitlines() if line.startswith("| `efficiency` |"))
    classes = re.findall(r"`(\w+)`", row.split("|")[3])
    assert classes == list(defs["device"]["properties"]["efficiency"]["properties"])
