# SPDX-License-Identifier: Apache-2.0
"""Reading device profiles (docs/device-profiles.md) without loading any NNAPI library.

The mock's C++ reader (``src/profile.cc``) is the truth: it validates a profile strictly and
``mock_nnapi.control.profile()`` returns the document of the profile it has selected. This
module is the one Python reader of the same files, for what must work where the mock is not the
NNAPI library in use (on a phone the system ``libneuralnetworks.so`` is, but the modelled
estimates and the ``cost:`` policy still read a profile) and for reading a profile without
selecting it. It finds a profile by name in the mock's order and answers the questions the
Python side asks of a profile's facts (devices, support, feature level). It validates a profile
against the JSON Schema of the format (``device_profile.schema.json`` next to this module, which
describes what the C++ reader accepts: :func:`validate_profile`) and computes no time: every
modelled time and efficiency comes from :mod:`mock_nnapi.cost_model`, the mock's one
implementation.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._library import find_packaged_file
from .constants import OperationCode

#: The directory the mock searches first for a profile given by name.
PROFILE_DIR_ENV = "MOCK_NNAPI_PROFILE_DIR"
#: The built-in profiles of a source tree (mock_nnapi/python/mock_nnapi/ -> mock_nnapi/profiles/).
SOURCE_TREE_PROFILES = Path(__file__).resolve().parents[2] / "profiles"
#: The JSON Schema (draft 2020-12) of a profile document, shipped in this package.
SCHEMA_FILE = Path(__file__).resolve().with_name("device_profile.schema.json")
#: The largest figure a profile may give (GOP/s, GB/s, microseconds, picojoules): no phone's
#: comes near it, so a larger one is a mistake (the schema's ``maximum``, the mock's check).
PHYSICAL_LIMIT = 1e9


class ProfileNotFoundError(FileNotFoundError):
    """No profile file of that name or path (the message lists where it was looked for)."""


class ProfileValidationError(ValueError):
    """A profile document the mock's reader refuses.

    ``problems`` lists every problem found, each ``<field path>: <what is wrong>`` with the
    field paths of the mock's messages (``devices[1].throughput.float16: expected a positive
    number, found the number -3``; ``(top level)`` for the document itself), and ``paths``
    their field paths (``""`` for the document); ``path`` is the first. The message is the
    first problem (and the others), after ``<origin>: `` when the document came from a file.
    """

    def __init__(self, problems: Sequence[tuple[str, str]], origin: str | None = None) -> None:
        self.paths = [path for path, _ in problems]
        self.path = self.paths[0]
        self.problems = [f"{path or '(top level)'}: {message}" for path, message in problems]
        text = self.problems[0]
        if len(self.problems) > 1:
            text += f" (and {len(self.problems) - 1} more: {'; '.join(self.problems[1:])})"
        super().__init__(f"{origin}: {text}" if origin else text)


def looks_like_path(name_or_path: str | os.PathLike[str]) -> bool:
    """The mock's rule: a value containing ``/`` or ending in ``.json`` is a file path."""
    text = os.fspath(name_or_path)
    return "/" in text or text.endswith(".json")


def search_directories() -> list[Path]:
    """Where a profile given by name is looked for, in order: ``$MOCK_NNAPI_PROFILE_DIR``, then
    the built-in profiles installed with the mock library (the copies embedded in the library
    are the same files), or, when the package is used from a source tree without being
    installed (the sanitizer jobs), the tree's ``mock_nnapi/profiles``: the files the library
    embedded when it was built."""
    directories = []
    directory = os.environ.get(PROFILE_DIR_ENV)
    if directory:
        directories.append(Path(directory))
    try:
        directories.append(find_packaged_file("mock_nnapi", "profiles/reference.json").parent)
    except FileNotFoundError:
        if (SOURCE_TREE_PROFILES / "reference.json").is_file():
            directories.append(SOURCE_TREE_PROFILES)
    return directories


def available_profiles() -> list[str]:
    """The names :func:`profile_path` finds."""
    names: set[str] = set()
    for directory in search_directories():
        if directory.is_dir():
            names.update(path.stem for path in directory.glob("*.json"))
    return sorted(names)


def profile_path(name_or_path: str | os.PathLike[str]) -> Path:
    """The file of a profile: a path as given, or the first ``<name>.json`` of
    :func:`search_directories` (the mock's order)."""
    if looks_like_path(name_or_path):
        path = Path(name_or_path)
        if not path.is_file():
            raise ProfileNotFoundError(f"{os.fspath(name_or_path)}: no such profile file")
        return path
    name = os.fspath(name_or_path)
    for directory in search_directories():
        candidate = directory / f"{name}.json"
        if candidate.is_file():
            return candidate
    raise ProfileNotFoundError(
        f"no device profile named {name!r} (available: {', '.join(available_profiles())}; "
        "or give a path to a .json file)"
    )


def load_profile(name_or_path: str | os.PathLike[str], validate: bool = True) -> dict[str, Any]:
    """A profile's JSON document by built-in name or file path (see :func:`profile_path`).

    With ``validate`` (the default) the file is read as strictly as the mock reads it (no
    duplicate keys, no NaN or Infinity) and checked by :func:`validate_profile`: a bad file
    raises ValueError (:class:`ProfileValidationError` for a bad document) naming the file and
    the field. ``validate=False`` returns any JSON document as it is. Either way a file found
    by name must have that ``name``, as in the mock."""
    path = profile_path(name_or_path)
    if validate:
        status = os.stat(path)
        data = copy.deepcopy(_valid_document(str(path), status.st_mtime_ns, status.st_size))
    else:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    if not looks_like_path(name_or_path) and data.get("name") != os.fspath(name_or_path):
        raise ValueError(
            f"{path}: name: {data.get('name')!r} differs from the file name "
            f"{os.fspath(name_or_path)!r}"
        )
    return data


@functools.lru_cache(maxsize=32)
def _valid_document(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """The document of a profile file read strictly and validated, once per file version (the
    modification time and size are part of the key)."""
    with open(path, encoding="utf-8") as file:
        try:
            data = json.load(file, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
        except ValueError as error:
            raise ValueError(f"{path}: invalid JSON: {error}") from error
    validate_profile(data, origin=path)
    return dict(data)


def profile_schema() -> dict[str, Any]:
    """The JSON Schema of a profile document (:data:`SCHEMA_FILE`), a copy the caller may
    change."""
    return copy.deepcopy(_schema())


def validate_profile(document: Any, origin: str | None = None) -> None:
    """Raises :class:`ProfileValidationError` unless ``document`` (a profile's parsed JSON) is
    one the mock's reader accepts: the schema of :data:`SCHEMA_FILE`, with integers that are
    Python ints (JSON written without fraction or exponent) and finite numbers, and the rule
    the schema cannot state, unique device names. ``origin`` (a file name) starts the message.

    The mock's reader (``src/profile.cc``) stays the authority: the tests check that the two
    agree on the built-in profiles and on a corpus of bad ones.
    """
    validator = _validator()
    problems: list[tuple[str, str]] = []
    for error in validator.iter_errors(document):
        for problem in _problems(error, validator):
            if problem not in problems:
                problems.append(problem)
    devices = document.get("devices") if isinstance(document, dict) else None
    if isinstance(devices, list):
        seen: set[str] = set()
        for index, device in enumerate(devices):
            name = device.get("name") if isinstance(device, dict) else None
            if isinstance(name, str) and name in seen:
                problems.append(
                    (
                        f"devices[{index}].name",
                        f"another device already has the name {json.dumps(name)}",
                    )
                )
            elif isinstance(name, str):
                seen.add(name)
    if problems:
        raise ProfileValidationError(problems, origin)


def host_cpu_device(data: dict[str, Any]) -> dict[str, Any]:
    """The CPU device of a loaded profile that models TVM's host code: the one marked
    ``runtime_cpu`` (Android's own CPU fallback), else the first CPU device."""
    cpus = [d for d in data["devices"] if d["type"] == "CPU"]
    if not cpus:
        raise ValueError(f"profile {data.get('name')!r} has no CPU device to model the host")
    return next((d for d in cpus if d.get("runtime_cpu")), cpus[0])


def device_operations(device: dict[str, Any]) -> frozenset[str]:
    """The NNAPI operations a profile device supports, as the mock reads its ``support``:
    ``"all"`` is every operation code, minus ``exclude_operations``."""
    support = device.get("support", {})
    listed = support.get("operations", "all")
    operations = set(OperationCode.__members__) if listed == "all" else set(listed)
    operations.difference_update(support.get("exclude_operations", []))
    return frozenset(operations)


def supported_operations(data: dict[str, Any]) -> frozenset[str] | None:
    """The NNAPI operations some device of the profile supports; None when that is every one."""
    operations: set[str] = set()
    for device in data.get("devices", []):
        operations.update(device_operations(device))
    return None if operations >= set(OperationCode.__members__) else frozenset(operations)


def runtime_feature_level(data: dict[str, Any]) -> int:
    """The runtime's feature level as written in the profile (1-8 or a FeatureLevelCode;
    default 8)."""
    return int(data.get("runtime", {}).get("feature_level", 8))


# ---- Validation helpers ----------------------------------------------------------------------


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json.load's object hook: refuses a duplicate key, as the mock's JSON reader does."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    """json.load's constant hook: NaN and Infinity are not JSON (RFC 8259)."""
    raise ValueError(f"{name} is not a JSON number")


@functools.cache
def _schema() -> dict[str, Any]:
    with open(SCHEMA_FILE, encoding="utf-8") as file:
        schema: dict[str, Any] = json.load(file)
    return schema


@functools.cache
def _validator() -> Any:
    """A draft 2020-12 validator of the schema whose ``integer`` is a Python int (the mock reads
    ``8.0`` as no integer) and whose ``number`` is finite."""
    import jsonschema

    base = jsonschema.Draft202012Validator

    def is_integer(_checker: Any, instance: Any) -> bool:
        return isinstance(instance, int) and not isinstance(instance, bool)

    def is_number(_checker: Any, instance: Any) -> bool:
        return (
            isinstance(instance, int | float)
            and not isinstance(instance, bool)
            and math.isfinite(instance)
        )

    checker = base.TYPE_CHECKER.redefine_many({"integer": is_integer, "number": is_number})
    strict = jsonschema.validators.extend(base, type_checker=checker)
    return strict(_schema())


def _field_path(parts: Sequence[str | int]) -> str:
    """``devices[1].throughput.float16``, as the mock's messages write a field."""
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if value is None:
        return "null"
    return "an array" if isinstance(value, list) else "an object"


_TYPE_PHRASES = {
    "string": "a string",
    "boolean": "true or false",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


def _expected(schema: dict[str, Any]) -> str:
    """What a (sub)schema accepts, in words: its ``title``, else its value or type and range."""
    if "title" in schema:
        return str(schema["title"])
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    kind = schema.get("type")
    if kind == "number":
        if schema.get("exclusiveMinimum") == 0 and schema.get("maximum") == 1:
            return "a number in (0, 1]"
        if schema.get("exclusiveMinimum") == 0:
            return "a positive number"
        if schema.get("minimum") == 0:
            return "a number >= 0"
        return "a number"
    if kind == "integer":
        if "minimum" in schema and "maximum" in schema:
            return f"an integer from {schema['minimum']} to {schema['maximum']}"
        return "an integer"
    if kind == "string" and schema.get("minLength"):
        return "a non-empty string"
    if isinstance(kind, list):
        return " or ".join(_TYPE_PHRASES.get(k, "a number") for k in kind)
    return _TYPE_PHRASES.get(str(kind), "a valid value")


def _problems(error: Any, validator: Any) -> list[tuple[str, str]]:
    """One jsonschema error as (field path, message) pairs in the mock's terms."""
    parts: list[str | int] = list(error.absolute_path)
    schema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    instance = error.instance
    keyword = error.validator
    if "propertyNames" in error.relative_schema_path:
        # The error is about a key (the instance), which jsonschema leaves out of the path.
        return [(_field_path([*parts, instance]), f"expected {_expected(schema)} as the key")]
    if keyword == "required":
        return [
            (_field_path([*parts, key]), "required field is missing")
            for key in error.validator_value
            if key not in instance
        ]
    if keyword == "additionalProperties":
        known = list(schema.get("properties", {}))
        return [
            (_field_path([*parts, key]), f"unknown field (expected one of: {', '.join(known)})")
            for key in instance
            if key not in known
        ]
    if keyword == "uniqueItems":
        for index, item in enumerate(instance):
            if item in instance[:index]:
                return [(_field_path([*parts, index]), "listed twice")]
    if keyword == "maxContains":
        # The first entry too many, and the field that makes it match when there is one.
        contains = schema["contains"]
        matches = [
            i for i, item in enumerate(instance) if validator.evolve(schema=contains).is_valid(item)
        ]
        parts += [matches[error.validator_value], *contains.get("required", [])[:1]]
        message = contains.get("title", f"at most {error.validator_value} entries may match")
        return [(_field_path(parts), str(message))]
    if keyword == "not":
        return [(_field_path(parts), str(schema.get("description", "not allowed here")))]
    if keyword == "minItems":
        least = error.validator_value
        return [(_field_path(parts), f"expected at least {'one' if least == 1 else least} entry")]
    if keyword == "minLength":
        return [(_field_path(parts), "expected a non-empty string")]
    if keyword == "maximum" and schema.get("maximum") == PHYSICAL_LIMIT:
        expected = "at most 1e9 (no phone has such a figure)"
        return [(_field_path(parts), f"expected {expected}, found {_describe(instance)}")]
    return [(_field_path(parts), f"expected {_expected(schema)}, found {_describe(instance)}")]
