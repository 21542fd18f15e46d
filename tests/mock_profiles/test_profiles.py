# SPDX-License-Identifier: Apache-2.0
"""Profile selection, device enumeration and per-device support for every built-in profile."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mock_nnapi._library import library_path

import mock_nnapi
from mock_nnapi import DeviceTypeCode, OperandCode, OperationCode, ResultCode, control

from .helpers import binary_model, device_entry, expect_error, profile_with, run

BUILT_IN = [
    "dimensity-9000",
    "reference",
    "snapdragon-8-elite",
    "snapdragon-8-gen-2",
    "snapdragon-8-gen-3",
    "tensor-g2",
]
PHONES = [
    "dimensity-9000",
    "snapdragon-8-elite",
    "snapdragon-8-gen-2",
    "snapdragon-8-gen-3",
    "tensor-g2",
]
FEATURE_LEVEL_CODES = [27, 28, 29, 30, 31, 1000006, 1000007, 1000008]
TYPE_CODES = {"CPU": 2, "GPU": 3, "ACCELERATOR": 4, "OTHER": 1}


def _python(code: str, **environment: str | None) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter (the first profile is chosen once per process)."""
    env = dict(os.environ)
    for key, value in environment.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )


def _level(value: int) -> int:
    return FEATURE_LEVEL_CODES[value - 1] if value <= 8 else value


def test_default_profile_is_the_single_reference_cpu_device():
    result = _python(
        "import mock_nnapi; from mock_nnapi import control\n"
        "print([(d.name, d.type, d.version, d.feature_level) for d in mock_nnapi.devices()])\n"
        "print(control.profile_name())",
        MOCK_NNAPI_PROFILE=None,
    )
    assert result.returncode == 0, result.stderr
    devices, name = result.stdout.strip().splitlines()
    assert devices == "[('mock-reference', 2, 'mock_nnapi-1', 1000008)]"
    assert name == "reference"


def test_environment_variable_selects_the_first_profile():
    result = _python(
        "import mock_nnapi; print([d.name for d in mock_nnapi.devices()])",
        MOCK_NNAPI_PROFILE="snapdragon-8-gen-2",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['qti-dsp', 'qti-gpu', 'nnapi-reference']"


def test_bad_environment_profile_falls_back_to_reference_with_a_message(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    result = _python(
        "import mock_nnapi; print([d.name for d in mock_nnapi.devices()])",
        MOCK_NNAPI_PROFILE=str(bad),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['mock-reference']"
    assert f"{bad}: invalid JSON: line 1, column 2" in result.stderr


def test_built_in_profiles_are_embedded_in_the_library():
    # No MOCK_NNAPI_PROFILE_DIR and no installed copy next to the build-tree library.
    result = _python(
        "from mock_nnapi import control; print(control.available_profiles())\n"
        "control.set_profile('tensor-g2'); print(control.profile_name())",
        MOCK_NNAPI_PROFILE_DIR=None,
        MOCK_NNAPI_PROFILE=None,
    )
    assert result.returncode == 0, result.stderr
    names, active = result.stdout.strip().splitlines()
    assert all(name in names for name in BUILT_IN)
    assert active == "tensor-g2"


def test_profiles_are_found_next_to_an_installed_library(tmp_path, write_profile):
    # The installed layout: <prefix>/lib/libneuralnetworks.so and <prefix>/profiles/*.json.
    (tmp_path / "lib").mkdir()
    (tmp_path / "profiles").mkdir()
    installed = tmp_path / "lib" / "libneuralnetworks.so"
    shutil.copy(library_path(), installed)
    profile = profile_with([device_entry("installed-cpu", "CPU")], name="installed-phone")
    (tmp_path / "profiles" / "installed-phone.json").write_text(json.dumps(profile))
    # The copy no longer sits where its RUNPATH finds OpenBLAS; point the loader at it.
    import scipy_openblas32

    search_path = os.pathsep.join(
        p for p in (scipy_openblas32.get_lib_dir(), os.environ.get("LD_LIBRARY_PATH")) if p
    )
    result = _python(
        "import mock_nnapi; from mock_nnapi import control\n"
        "control.set_profile('installed-phone'); print(mock_nnapi.devices()[0].name)",
        TVM_NNAPI_LIBRARY=str(installed),
        LD_LIBRARY_PATH=search_path,
        MOCK_NNAPI_PROFILE_DIR=None,
        MOCK_NNAPI_PROFILE=None,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "installed-cpu"


def test_available_profiles_lists_the_built_in_ones():
    assert set(BUILT_IN) <= set(control.available_profiles())


@pytest.mark.parametrize("name", BUILT_IN)
def test_devices_follow_the_profile(name):
    control.set_profile(name)
    assert control.profile_name() == name
    document = control.profile()
    runtime_level = _level(document.get("runtime", {}).get("feature_level", 8))
    assert mock_nnapi.lib().ANeuralNetworks_getRuntimeFeatureLevel() == runtime_level
    devices = mock_nnapi.devices()
    assert [d.name for d in devices] == [d["name"] for d in document["devices"]]
    for device, entry in zip(devices, document["devices"], strict=True):
        assert device.type == TYPE_CODES[entry["type"]]
        assert device.version == entry["version"]
        assert device.feature_level == min(runtime_level, _level(entry["feature_level"]))
    # Sources: every profile says where its numbers come from, estimates labelled.
    assert document["sources"]
    assert all(isinstance(source["estimate"], bool) for source in document["sources"])


@pytest.mark.parametrize("name", PHONES)
def test_phones_have_cpu_gpu_and_npu_devices(name):
    control.set_profile(name)
    types = sorted(d.type for d in mock_nnapi.devices())
    assert types == [DeviceTypeCode.CPU, DeviceTypeCode.GPU, DeviceTypeCode.ACCELERATOR]


def _expected_support(entry: dict, operation: str, code: int, rank: int, relaxed: bool) -> bool:
    support = entry["support"]
    operations = support["operations"]
    if operations != "all" and operation not in operations:
        return False
    if operation in support.get("exclude_operations", []):
        return False
    types = support.get("operation_data_types", {}).get(operation, support["data_types"])
    name = OperandCode(code).name
    if types != "all" and f"{name}" not in types:
        relaxed_ok = (
            support.get("relaxed_float32", False)
            and relaxed
            and name == "TENSOR_FLOAT32"
            and "TENSOR_FLOAT16" in types
        )
        if not relaxed_ok:
            return False
    return rank <= support["max_rank"]


CASES = [
    # operation, operand type, rank, relaxed
    ("ADD", OperandCode.TENSOR_FLOAT32, 2, False),
    ("ADD", OperandCode.TENSOR_FLOAT32, 2, True),
    ("ADD", OperandCode.TENSOR_FLOAT16, 2, False),
    ("ADD", OperandCode.TENSOR_QUANT8_ASYMM, 2, False),
    ("MAXIMUM", OperandCode.TENSOR_FLOAT32, 5, False),
    ("MUL", OperandCode.TENSOR_FLOAT16, 4, False),
    ("SUB", OperandCode.TENSOR_QUANT8_ASYMM, 3, False),
    ("MAXIMUM", OperandCode.TENSOR_FLOAT32, 2, False),
]


@pytest.mark.parametrize("name", BUILT_IN)
def test_supported_operations_follow_the_profile(name):
    control.set_profile(name)
    document = control.profile()
    devices = mock_nnapi.devices()
    for operation, code, rank, relaxed in CASES:
        scale = 0.5 if code == OperandCode.TENSOR_QUANT8_ASYMM else 0.0
        model = binary_model(
            [OperationCode[operation]], [2] * rank, code, relaxed=relaxed, scale=scale
        )
        for device, entry in zip(devices, document["devices"], strict=True):
            expected = _expected_support(entry, operation, code, rank, relaxed)
            supported = mock_nnapi.supported_operations(model, [device])
            assert supported == [expected], (name, device.name, operation, code, rank, relaxed)
        # Several devices: an operation is supported if any of them supports it.
        assert mock_nnapi.supported_operations(model, devices) == [True]


def test_feature_level_limits_support(write_profile):
    # ADD on TENSOR_QUANT8_ASYMM_SIGNED needs feature level 4.
    profile = profile_with(
        [
            device_entry("npu-fl3", "ACCELERATOR", feature_level=3),
            device_entry("npu-fl4", "ACCELERATOR", feature_level=4),
            device_entry("cpu", "CPU"),
        ]
    )
    control.set_profile(write_profile(profile))
    levels = {d.name: d.feature_level for d in mock_nnapi.devices()}
    assert levels == {"npu-fl3": 29, "npu-fl4": 30, "cpu": 1000008}
    model = binary_model(
        [OperationCode.ADD], [2, 2], OperandCode.TENSOR_QUANT8_ASYMM_SIGNED, scale=0.5
    )
    supported = [mock_nnapi.supported_operations(model, [d])[0] for d in mock_nnapi.devices()]
    assert supported == [False, True, True]


def test_runtime_feature_level_caps_reported_levels(write_profile):
    profile = profile_with(
        [device_entry("npu", "ACCELERATOR", feature_level=8), device_entry("cpu", "CPU")],
        runtime={"feature_level": 5},
    )
    control.set_profile(write_profile(profile))
    assert mock_nnapi.lib().ANeuralNetworks_getRuntimeFeatureLevel() == 31
    assert [d.feature_level for d in mock_nnapi.devices()] == [31, 31]


def test_compilations_survive_a_profile_switch():
    model = binary_model([OperationCode.ADD], [2])
    compilation = mock_nnapi.Compilation(model).finish()
    control.set_profile("tensor-g2")
    assert control.profile_name() == "tensor-g2"
    assert [d.name for d in mock_nnapi.devices()] != ["mock-reference"]
    (result,) = compilation.execute([np.ones(2, np.float32), np.ones(2, np.float32)])
    np.testing.assert_array_equal(result, [2.0, 2.0])


def test_stale_device_handles_become_unknown():
    old = mock_nnapi.devices()[0]
    control.set_profile("dimensity-9000")
    model = binary_model([OperationCode.ADD], [2])
    expect_error(ResultCode.BAD_DATA, mock_nnapi.Compilation, model, [old])
    assert run(model)[0].shape == (2,)


def test_profile_loaded_by_name_must_carry_that_name(tmp_path, write_profile, monkeypatch):
    write_profile(profile_with([device_entry("cpu", "CPU")], name="real-name"), name="other")
    monkeypatch.setenv("MOCK_NNAPI_PROFILE_DIR", str(tmp_path))
    error = expect_error(ResultCode.BAD_DATA, control.set_profile, "other")
    assert 'name: "real-name" differs from the file name "other"' in str(error)
    write_profile(profile_with([device_entry("cpu", "CPU")], name="custom"))
    control.set_profile("custom")
    assert control.profile_name() == "custom"
    assert "custom" in control.available_profiles()


def test_profile_directory_overrides_built_in_profiles(tmp_path, write_profile, monkeypatch):
    write_profile(profile_with([device_entry("my-cpu", "CPU")], name="tensor-g2"))
    monkeypatch.setenv("MOCK_NNAPI_PROFILE_DIR", str(tmp_path))
    control.set_profile("tensor-g2")
    assert [d.name for d in mock_nnapi.devices()] == ["my-cpu"]


def test_unknown_profiles_are_rejected(tmp_path):
    error = expect_error(ResultCode.BAD_DATA, control.set_profile, "no-such-phone")
    assert 'no device profile named "no-such-phone"' in str(error)
    assert "tensor-g2" in str(error)
    missing = Path(tmp_path) / "missing.json"
    error = expect_error(ResultCode.BAD_DATA, control.set_profile, missing)
    assert f"{missing}: no such profile file" in str(error)
