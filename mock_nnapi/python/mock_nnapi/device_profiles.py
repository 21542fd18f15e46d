# SPDX-License-Identifier: Apache-2.0
"""Reading device profiles (docs/device-profiles.md) without loading any NNAPI library.

The mock's C++ reader (``src/profile.cc``) is the truth: it validates a profile strictly and
``mock_nnapi.control.profile()`` returns the document of the profile it has selected. This
module is the one Python reader of the same files, for what must work where the mock is not the
NNAPI library in use (on a phone the system ``libneuralnetworks.so`` is, but the modelled
estimates and the ``cost:`` policy still read a profile) and for reading a profile without
selecting it. It finds a profile by name in the mock's order and answers the questions the
Python side asks of a profile's facts (devices, support, feature level); it does not validate
(select the profile in the mock for that) and computes no time: every modelled time and
efficiency comes from :mod:`mock_nnapi.cost_model`, the mock's one implementation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ._library import find_packaged_file
from .constants import OperationCode

#: The directory the mock searches first for a profile given by name.
PROFILE_DIR_ENV = "MOCK_NNAPI_PROFILE_DIR"
#: The built-in profiles of a source tree (mock_nnapi/python/mock_nnapi/ -> mock_nnapi/profiles/).
SOURCE_TREE_PROFILES = Path(__file__).resolve().parents[2] / "profiles"


class ProfileNotFoundError(FileNotFoundError):
    """No profile file of that name or path (the message lists where it was looked for)."""


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


def load_profile(name_or_path: str | os.PathLike[str]) -> dict[str, Any]:
    """A profile's JSON document by built-in name or file path (see :func:`profile_path`).

    A file found by name must have that ``name``, as in the mock."""
    path = profile_path(name_or_path)
    with open(path, encoding="utf-8") as file:
        data = json.load(file)
    if not looks_like_path(name_or_path) and data.get("name") != os.fspath(name_or_path):
        raise ValueError(
            f"{path}: name: {data.get('name')!r} differs from the file name "
            f"{os.fspath(name_or_path)!r}"
        )
    return data


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
