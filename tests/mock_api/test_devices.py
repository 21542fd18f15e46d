# SPDX-License-Identifier: Apache-2.0
"""Devices, feature levels, loop timeouts and getSupportedOperationsForDevices."""

from __future__ import annotations

import ctypes
import json
import pathlib

import pytest
from mock_nnapi.constants import DeviceTypeCode, FeatureLevelCode

from mock_nnapi import control

from .nn import (
    BAD_DATA,
    BAD_STATE,
    NO_ERROR,
    UNEXPECTED_NULL,
    devices,
    handle_array,
    lib,
)

PROFILES = pathlib.Path(__file__).resolve().parents[2] / "mock_nnapi" / "profiles"


def test_device_count_and_get_device():
    count = ctypes.c_uint32()
    assert lib.ANeuralNetworks_getDeviceCount(ctypes.byref(count)) == NO_ERROR
    assert count.value >= 1
    assert lib.ANeuralNetworks_getDeviceCount(None) == UNEXPECTED_NULL
    device = ctypes.c_void_p()
    for index in range(count.value):
        assert lib.ANeuralNetworks_getDevice(index, ctypes.byref(device)) == NO_ERROR
        assert device.value
    assert lib.ANeuralNetworks_getDevice(0, None) == UNEXPECTED_NULL
    assert lib.ANeuralNetworks_getDevice(count.value, ctypes.byref(device)) == BAD_DATA
    assert lib.ANeuralNetworks_getDevice(2**32 - 1, ctypes.byref(device)) == BAD_DATA


def test_device_properties():
    names = set()
    runtime_level = lib.ANeuralNetworks_getRuntimeFeatureLevel()
    for device in devices():
        name = ctypes.c_char_p()
        version = ctypes.c_char_p()
        device_type = ctypes.c_int32(-1)
        level = ctypes.c_int64()
        assert lib.ANeuralNetworksDevice_getName(device, ctypes.byref(name)) == NO_ERROR
        assert lib.ANeuralNetworksDevice_getVersion(device, ctypes.byref(version)) == NO_ERROR
        assert lib.ANeuralNetworksDevice_getType(device, ctypes.byref(device_type)) == NO_ERROR
        assert lib.ANeuralNetworksDevice_getFeatureLevel(device, ctypes.byref(level)) == NO_ERROR
        assert name.value and version.value
        assert name.value not in names, "device names are unique"
        names.add(name.value)
        assert device_type.value in set(DeviceTypeCode)
        # Android reports min(runtime feature level, device feature level).
        assert level.value <= runtime_level
        assert level.value in set(FeatureLevelCode)
        assert lib.ANeuralNetworksDevice_wait(device) == NO_ERROR
        for getter in ("getName", "getVersion", "getType", "getFeatureLevel"):
            function = getattr(lib, f"ANeuralNetworksDevice_{getter}")
            assert function(device, None) == UNEXPECTED_NULL
            assert function(None, None) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksDevice_getName(None, ctypes.byref(ctypes.c_char_p())) == (
        UNEXPECTED_NULL
    )
    assert lib.ANeuralNetworksDevice_wait(None) == UNEXPECTED_NULL


def test_runtime_feature_level_and_loop_timeouts():
    assert lib.ANeuralNetworks_getRuntimeFeatureLevel() == FeatureLevelCode.FEATURE_LEVEL_8
    assert lib.ANeuralNetworks_getDefaultLoopTimeout() == 2_000_000_000
    assert lib.ANeuralNetworks_getMaximumLoopTimeout() == 15_000_000_000


def test_extension_support():
    device = devices()[0]
    supported = ctypes.c_bool(True)
    name = b"com.example.extension"
    get = lib.ANeuralNetworksDevice_getExtensionSupport
    assert get(device, name, ctypes.byref(supported)) == NO_ERROR
    assert supported.value is False
    assert get(None, name, ctypes.byref(supported)) == UNEXPECTED_NULL
    assert get(device, None, ctypes.byref(supported)) == UNEXPECTED_NULL
    assert get(device, name, None) == UNEXPECTED_NULL


def test_get_supported_operations_for_devices(arena):
    model = arena.binary_model()
    device = devices()[0]
    flags = (ctypes.c_bool * 4)()
    get = lib.ANeuralNetworksModel_getSupportedOperationsForDevices
    assert get(model, handle_array([device]), 1, flags) == NO_ERROR
    assert flags[0] is True
    assert get(None, handle_array([device]), 1, flags) == UNEXPECTED_NULL
    assert get(model, handle_array([device]), 1, None) == UNEXPECTED_NULL
    assert get(model, None, 1, flags) == UNEXPECTED_NULL
    assert get(model, handle_array([device]), 0, flags) == BAD_DATA  # empty device list
    assert get(model, handle_array([device, device]), 2, flags) == BAD_DATA  # duplicates
    assert get(model, handle_array([device, None]), 2, flags) == UNEXPECTED_NULL
    assert get(model, handle_array([None, device]), 2, flags) == UNEXPECTED_NULL
    # Android checks device i for NULL, then for a repeat later in the list, before i + 1.
    assert get(model, handle_array([device, None, device]), 3, flags) == BAD_DATA


def test_get_supported_operations_checks_order(arena):
    unfinished = arena.binary_model(finish=False)
    device = devices()[0]
    flags = (ctypes.c_bool * 4)()
    get = lib.ANeuralNetworksModel_getSupportedOperationsForDevices
    # An empty list is reported before the model's state, the model's state before the list.
    assert get(unfinished, handle_array([device]), 0, flags) == BAD_DATA
    assert get(unfinished, handle_array([device]), 1, flags) == BAD_STATE
    assert get(unfinished, handle_array([device, device]), 2, flags) == BAD_STATE


def test_foreign_device_pointer_is_rejected(arena):
    model = arena.binary_model()
    bogus = ctypes.c_uint64(0)
    flags = (ctypes.c_bool * 4)()
    get = lib.ANeuralNetworksModel_getSupportedOperationsForDevices
    assert get(model, handle_array([ctypes.addressof(bogus)]), 1, flags) == BAD_DATA


@pytest.mark.skipif(not hasattr(lib, "MockNnapi_setProfile"), reason="no device profiles")
def test_feature_level_is_the_lower_of_runtime_and_device(tmp_path):
    # A profile whose runtime (feature level 5) is older than its device (feature level 8).
    profile = json.loads((PROFILES / "reference.json").read_text())
    profile["name"] = "old-runtime"
    profile["runtime"]["feature_level"] = 5
    path = tmp_path / "old-runtime.json"
    path.write_text(json.dumps(profile))
    with control.Profile(path):
        assert lib.ANeuralNetworks_getRuntimeFeatureLevel() == FeatureLevelCode.FEATURE_LEVEL_5
        level = ctypes.c_int64()
        assert lib.ANeuralNetworksDevice_getFeatureLevel(devices()[0], ctypes.byref(level)) == 0
        assert level.value == FeatureLevelCode.FEATURE_LEVEL_5
    level = ctypes.c_int64()
    assert lib.ANeuralNetworksDevice_getFeatureLevel(devices()[0], ctypes.byref(level)) == 0
    assert level.value == FeatureLevelCode.FEATURE_LEVEL_8


@pytest.mark.skipif(not hasattr(lib, "MockNnapi_setProfile"), reason="no device profiles")
def test_a_profile_read_from_a_file_is_selected_again_by_its_path(tmp_path):
    """A file's profile need not be found by its name: the selection to restore is the path,
    and a Profile block restores the one active before it (not the default)."""
    profile = json.loads((PROFILES / "reference.json").read_text())
    profile["name"] = "only-in-a-file"
    path = tmp_path / "phone.json"
    path.write_text(json.dumps(profile))
    assert control.profile_selection() == control.profile_name() == "reference"
    with control.Profile(path):
        assert control.profile_name() == "only-in-a-file"
        assert control.profile_selection() == str(path)
        with control.Profile("snapdragon-8-gen-2"):
            assert control.profile_selection() == "snapdragon-8-gen-2"
        assert control.profile_name() == "only-in-a-file"
    assert control.profile_name() == "reference"
