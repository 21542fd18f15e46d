# SPDX-License-Identifier: Apache-2.0
"""ANeuralNetworksCompilation_*: creation, settings before/after finish, preferred memory
queries (TestValidation.cpp ValidationTestCompilation / ...ForDevices_1)."""

from __future__ import annotations

import ctypes

import pytest
from mock_nnapi.constants import PreferenceCode, PriorityCode, ResultCode

from .nn import (
    BAD_DATA,
    BAD_STATE,
    NO_ERROR,
    UNEXPECTED_NULL,
    devices,
    handle_array,
    lib,
)

SHORT_WAIT_NS = 1_000_000_000
TOKEN = (ctypes.c_uint8 * 32)()


def test_create(arena):
    compilation = ctypes.c_void_p()
    unfinished = arena.binary_model(finish=False)
    assert lib.ANeuralNetworksCompilation_create(None, ctypes.byref(compilation)) == (
        UNEXPECTED_NULL
    )
    assert lib.ANeuralNetworksCompilation_create(unfinished, None) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksCompilation_create(unfinished, ctypes.byref(compilation)) == (
        BAD_STATE
    )
    assert compilation.value is None
    lib.ANeuralNetworksCompilation_free(None)


def test_create_for_devices(arena):
    model = arena.binary_model()
    device = devices()[0]
    compilation = ctypes.c_void_p()
    create = lib.ANeuralNetworksCompilation_createForDevices
    out = ctypes.byref(compilation)
    assert create(None, handle_array([device]), 1, out) == UNEXPECTED_NULL
    assert create(model, handle_array([device]), 1, None) == UNEXPECTED_NULL
    assert create(model, None, 1, out) == UNEXPECTED_NULL
    assert create(model, None, 1, None) == UNEXPECTED_NULL
    assert create(model, handle_array([device]), 0, out) == BAD_DATA  # empty device list
    assert create(model, handle_array([device, device]), 2, out) == BAD_DATA
    assert create(model, handle_array([device, None]), 2, out) == UNEXPECTED_NULL
    unfinished = arena.binary_model(finish=False)
    assert create(unfinished, handle_array([device]), 1, out) == BAD_STATE
    assert create(model, handle_array([device]), 1, out) == NO_ERROR
    arena.own("ANeuralNetworksCompilation_free", compilation)


@pytest.mark.parametrize("on_devices", [False, True])
def test_settings_before_and_after_finish(arena, on_devices, tmp_path):
    model = arena.binary_model()
    cache = str(tmp_path).encode()
    compilation = arena.compilation(model, devices()[:1] if on_devices else None, finish=False)
    assert lib.ANeuralNetworksCompilation_setPreference(None, 0) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksCompilation_setPreference(compilation, 40) == BAD_DATA
    assert lib.ANeuralNetworksCompilation_setPreference(compilation, 3) == BAD_DATA
    for preference in PreferenceCode:
        assert lib.ANeuralNetworksCompilation_setPreference(compilation, preference) == NO_ERROR
    assert lib.ANeuralNetworksCompilation_setPriority(None, 100) == UNEXPECTED_NULL
    for priority in (0, 89, 91, 101, 111):
        assert lib.ANeuralNetworksCompilation_setPriority(compilation, priority) == BAD_DATA
    for priority in PriorityCode:
        assert lib.ANeuralNetworksCompilation_setPriority(compilation, priority) == NO_ERROR
    set_caching = lib.ANeuralNetworksCompilation_setCaching
    assert set_caching(None, cache, TOKEN) == UNEXPECTED_NULL
    assert set_caching(compilation, None, TOKEN) == UNEXPECTED_NULL
    assert set_caching(compilation, cache, None) == UNEXPECTED_NULL
    assert set_caching(compilation, cache, TOKEN) == NO_ERROR
    assert lib.ANeuralNetworksCompilation_setTimeout(None, SHORT_WAIT_NS) == UNEXPECTED_NULL
    # Timeouts need a compilation made by createForDevices with exactly one device.
    expected = NO_ERROR if on_devices else BAD_DATA
    assert lib.ANeuralNetworksCompilation_setTimeout(compilation, SHORT_WAIT_NS) == expected
    assert lib.ANeuralNetworksCompilation_setTimeout(compilation, 2**64 - 1) == expected
    assert lib.ANeuralNetworksCompilation_finish(None) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksCompilation_finish(compilation) == NO_ERROR
    # Everything after finish is BAD_STATE (before the other checks).
    assert lib.ANeuralNetworksCompilation_setPreference(compilation, 1) == BAD_STATE
    assert lib.ANeuralNetworksCompilation_setPreference(compilation, 40) == BAD_STATE
    assert lib.ANeuralNetworksCompilation_setPriority(compilation, 100) == BAD_STATE
    assert lib.ANeuralNetworksCompilation_setTimeout(compilation, SHORT_WAIT_NS) == BAD_STATE
    assert set_caching(compilation, cache, TOKEN) == BAD_STATE
    assert lib.ANeuralNetworksCompilation_finish(compilation) == BAD_STATE


def test_negative_preference_is_accepted_like_android(arena):
    # Android compares the preference against the number of preferences only.
    compilation = arena.compilation(arena.binary_model(), finish=False)
    assert lib.ANeuralNetworksCompilation_setPreference(compilation, -1) == NO_ERROR


def test_unfinished_compilation_cannot_be_used(arena):
    compilation = arena.compilation(arena.binary_model(), finish=False)
    execution = ctypes.c_void_p()
    burst = ctypes.c_void_p()
    assert lib.ANeuralNetworksExecution_create(None, ctypes.byref(execution)) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksExecution_create(compilation, None) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksExecution_create(compilation, ctypes.byref(execution)) == BAD_STATE
    assert lib.ANeuralNetworksBurst_create(compilation, ctypes.byref(burst)) == BAD_STATE
    assert lib.ANeuralNetworksBurst_create(None, ctypes.byref(burst)) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksBurst_create(compilation, None) == UNEXPECTED_NULL
    value = ctypes.c_uint32()
    for query in ("AlignmentForInput", "PaddingForInput", "AlignmentForOutput", "PaddingForOutput"):
        function = getattr(lib, f"ANeuralNetworksCompilation_getPreferredMemory{query}")
        assert function(compilation, 0, ctypes.byref(value)) == BAD_STATE
    lib.ANeuralNetworksBurst_free(None)


@pytest.mark.parametrize(
    "query", ["AlignmentForInput", "PaddingForInput", "AlignmentForOutput", "PaddingForOutput"]
)
def test_preferred_memory_queries(arena, query):
    compilation = arena.compilation(arena.binary_model())
    function = getattr(lib, f"ANeuralNetworksCompilation_getPreferredMemory{query}")
    value = ctypes.c_uint32()
    assert function(compilation, 0, ctypes.byref(value)) == NO_ERROR
    assert value.value > 0 and value.value & (value.value - 1) == 0  # a power of two
    assert function(None, 0, ctypes.byref(value)) == UNEXPECTED_NULL
    assert function(compilation, 0, None) == UNEXPECTED_NULL
    count = 3 if "Input" in query else 1
    assert function(compilation, count, ctypes.byref(value)) == BAD_DATA
    assert function(compilation, 2**32 - 1, ctypes.byref(value)) == BAD_DATA


def test_compilation_extension_attribute(arena):
    model = arena.binary_model()
    add = lib.ANeuralNetworksCompilation_addExtensionAttribute
    name = b"com.example.extension"
    data = ctypes.c_int32(1)
    on_all = arena.compilation(model, finish=False)
    on_one = arena.compilation(model, devices()[:1], finish=False)
    assert add(None, name, 0, ctypes.byref(data), 4) == UNEXPECTED_NULL
    assert add(on_all, name, 0, ctypes.byref(data), 4) == BAD_DATA  # not a single device
    assert add(on_one, name, 0, ctypes.byref(data), 4) == BAD_DATA  # unknown extension
    assert lib.ANeuralNetworksCompilation_finish(on_one) == NO_ERROR
    assert add(on_one, name, 0, ctypes.byref(data), 4) == BAD_STATE


@pytest.mark.skipif(
    not hasattr(lib, "MockNnapi_injectDeviceFault"), reason="no device fault injection"
)
def test_failed_finish_leaves_an_invalid_compilation(arena):
    from mock_nnapi import control

    device = devices()[0]
    name = ctypes.c_char_p()
    assert lib.ANeuralNetworksDevice_getName(device, ctypes.byref(name)) == NO_ERROR
    compilation = arena.compilation(arena.binary_model(), [device], finish=False)
    control.inject_device_fault(name.value.decode(), control.DeviceFault.UNAVAILABLE)
    code = lib.ANeuralNetworksCompilation_finish(compilation)
    control.clear_faults()
    assert code == ResultCode.UNAVAILABLE_DEVICE
    # Like Android, a failed finish cannot be retried and leaves an unusable compilation.
    assert lib.ANeuralNetworksCompilation_finish(compilation) == BAD_STATE
    assert lib.ANeuralNetworksCompilation_setPreference(compilation, 0) == BAD_STATE
    execution = ctypes.c_void_p()
    burst = ctypes.c_void_p()
    assert lib.ANeuralNetworksExecution_create(compilation, ctypes.byref(execution)) == BAD_STATE
    assert lib.ANeuralNetworksBurst_create(compilation, ctypes.byref(burst)) == BAD_STATE
    value = ctypes.c_uint32()
    query = lib.ANeuralNetworksCompilation_getPreferredMemoryAlignmentForInput
    assert query(compilation, 0, ctypes.byref(value)) == BAD_STATE
    desc = arena.desc()
    assert lib.ANeuralNetworksMemoryDesc_addInputRole(desc, compilation, 0, 1.0) == BAD_DATA
