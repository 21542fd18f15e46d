# SPDX-License-Identifier: Apache-2.0
"""Locating and loading the built ``libneuralnetworks.so`` with ctypes."""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

#: Environment variable naming another ``libneuralnetworks.so`` to load instead of the mock
#: shipped in this package (shared with the tvm_nnapi runtime, which dlopen()s the same path).
LIBRARY_ENV = "TVM_NNAPI_LIBRARY"
_DISTRIBUTION = "tvm-nnapi"


class LibraryNotFoundError(FileNotFoundError):
    """Raised when a built library of this package cannot be located."""


def find_packaged_file(package: str, relative: str) -> Path:
    """Locate ``<package>/<relative>`` installed from this project's wheel.

    Looks next to the package first (regular installs), then in the wheel's file list (editable
    installs, where the package's Python sources stay in the source tree but the compiled
    libraries are installed into site-packages).
    """
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec(package)
    candidates = []
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / relative for p in spec.submodule_search_locations]
    try:
        for file in importlib.metadata.files(_DISTRIBUTION) or []:
            if str(file).replace("\\", "/") == f"{package}/{relative}":
                candidates.append(Path(file.locate()))
    except importlib.metadata.PackageNotFoundError:
        pass
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    searched = ", ".join(str(c) for c in candidates) or "(no candidate locations)"
    raise LibraryNotFoundError(
        f"cannot find {package}/{relative} (searched: {searched}); build and install the "
        "project with `pip install .` (or `pip install --no-build-isolation -ve .`)"
    )


def mock_library_path() -> Path:
    """Path of the mock ``libneuralnetworks.so`` built with this package."""
    return find_packaged_file("mock_nnapi", "lib/libneuralnetworks.so")


def library_path() -> Path:
    """The NNAPI library in use: ``$TVM_NNAPI_LIBRARY`` if set, else the packaged mock."""
    override = os.environ.get(LIBRARY_ENV)
    if override:
        path = Path(override)
        if not path.is_file():
            raise LibraryNotFoundError(f"{LIBRARY_ENV}={override} does not name a file")
        return path.resolve()
    return mock_library_path()


@functools.cache
def load() -> ctypes.CDLL:
    """Load the NNAPI library once per process (RTLD_GLOBAL, so later dlopen()s share it)."""
    lib = ctypes.CDLL(str(library_path()), mode=ctypes.RTLD_GLOBAL)
    _declare(lib)
    return lib


def is_mock(lib: ctypes.CDLL | None = None) -> bool:
    """True when the loaded library is mock_nnapi (it exports the MockNnapi_* control API)."""
    lib = lib or load()
    return hasattr(lib, "MockNnapi_getVersion")


class OperandType(ctypes.Structure):
    """``ANeuralNetworksOperandType``."""

    _fields_ = [
        ("type", ctypes.c_int32),
        ("dimensionCount", ctypes.c_uint32),
        ("dimensions", ctypes.POINTER(ctypes.c_uint32)),
        ("scale", ctypes.c_float),
        ("zeroPoint", ctypes.c_int32),
    ]


class SymmPerChannelQuantParams(ctypes.Structure):
    """``ANeuralNetworksSymmPerChannelQuantParams``."""

    _fields_ = [
        ("channelDim", ctypes.c_uint32),
        ("scaleCount", ctypes.c_uint32),
        ("scales", ctypes.POINTER(ctypes.c_float)),
    ]


_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_i32 = ctypes.c_int32
_u32 = ctypes.c_uint32
_u64 = ctypes.c_uint64
_size = ctypes.c_size_t
_bool = ctypes.c_bool
_str = ctypes.c_char_p
_u32p = ctypes.POINTER(ctypes.c_uint32)
_typep = ctypes.POINTER(OperandType)

# name: (restype, argtypes). Every NNAPI function of feature levels 1-5.
_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "ANeuralNetworksMemory_createFromFd": (_i32, [_size, ctypes.c_int, ctypes.c_int, _size, _pp]),
    "ANeuralNetworksMemory_free": (None, [_p]),
    "ANeuralNetworksModel_create": (_i32, [_pp]),
    "ANeuralNetworksModel_free": (None, [_p]),
    "ANeuralNetworksModel_finish": (_i32, [_p]),
    "ANeuralNetworksModel_addOperand": (_i32, [_p, _typep]),
    "ANeuralNetworksModel_setOperandValue": (_i32, [_p, _i32, _p, _size]),
    "ANeuralNetworksModel_setOperandValueFromMemory": (_i32, [_p, _i32, _p, _size, _size]),
    "ANeuralNetworksModel_addOperation": (_i32, [_p, _i32, _u32, _u32p, _u32, _u32p]),
    "ANeuralNetworksModel_identifyInputsAndOutputs": (_i32, [_p, _u32, _u32p, _u32, _u32p]),
    "ANeuralNetworksCompilation_create": (_i32, [_p, _pp]),
    "ANeuralNetworksCompilation_free": (None, [_p]),
    "ANeuralNetworksCompilation_setPreference": (_i32, [_p, _i32]),
    "ANeuralNetworksCompilation_finish": (_i32, [_p]),
    "ANeuralNetworksExecution_create": (_i32, [_p, _pp]),
    "ANeuralNetworksExecution_free": (None, [_p]),
    "ANeuralNetworksExecution_setInput": (_i32, [_p, _i32, _typep, _p, _size]),
    "ANeuralNetworksExecution_setInputFromMemory": (_i32, [_p, _i32, _typep, _p, _size, _size]),
    "ANeuralNetworksExecution_setOutput": (_i32, [_p, _i32, _typep, _p, _size]),
    "ANeuralNetworksExecution_setOutputFromMemory": (_i32, [_p, _i32, _typep, _p, _size, _size]),
    "ANeuralNetworksExecution_startCompute": (_i32, [_p, _pp]),
    "ANeuralNetworksEvent_wait": (_i32, [_p]),
    "ANeuralNetworksEvent_free": (None, [_p]),
    "ANeuralNetworksModel_relaxComputationFloat32toFloat16": (_i32, [_p, _bool]),
    "ANeuralNetworks_getDeviceCount": (_i32, [_u32p]),
    "ANeuralNetworks_getDevice": (_i32, [_u32, _pp]),
    "ANeuralNetworksDevice_getName": (_i32, [_p, ctypes.POINTER(_str)]),
    "ANeuralNetworksDevice_getType": (_i32, [_p, ctypes.POINTER(_i32)]),
    "ANeuralNetworksDevice_getVersion": (_i32, [_p, ctypes.POINTER(_str)]),
    "ANeuralNetworksDevice_getFeatureLevel": (_i32, [_p, ctypes.POINTER(ctypes.c_int64)]),
    "ANeuralNetworksModel_getSupportedOperationsForDevices": (
        _i32,
        [_p, _pp, _u32, ctypes.POINTER(_bool)],
    ),
    "ANeuralNetworksCompilation_createForDevices": (_i32, [_p, _pp, _u32, _pp]),
    "ANeuralNetworksCompilation_setCaching": (_i32, [_p, _str, ctypes.POINTER(ctypes.c_uint8)]),
    "ANeuralNetworksExecution_compute": (_i32, [_p]),
    "ANeuralNetworksExecution_getOutputOperandRank": (_i32, [_p, _i32, _u32p]),
    "ANeuralNetworksExecution_getOutputOperandDimensions": (_i32, [_p, _i32, _u32p]),
    "ANeuralNetworksBurst_create": (_i32, [_p, _pp]),
    "ANeuralNetworksBurst_free": (None, [_p]),
    "ANeuralNetworksExecution_burstCompute": (_i32, [_p, _p]),
    "ANeuralNetworksMemory_createFromAHardwareBuffer": (_i32, [_p, _pp]),
    "ANeuralNetworksExecution_setMeasureTiming": (_i32, [_p, _bool]),
    "ANeuralNetworksExecution_getDuration": (_i32, [_p, _i32, ctypes.POINTER(_u64)]),
    "ANeuralNetworksModel_setOperandSymmPerChannelQuantParams": (
        _i32,
        [_p, _i32, ctypes.POINTER(SymmPerChannelQuantParams)],
    ),
    "ANeuralNetworksMemoryDesc_create": (_i32, [_pp]),
    "ANeuralNetworksMemoryDesc_free": (None, [_p]),
    "ANeuralNetworksMemoryDesc_addInputRole": (_i32, [_p, _p, _u32, ctypes.c_float]),
    "ANeuralNetworksMemoryDesc_addOutputRole": (_i32, [_p, _p, _u32, ctypes.c_float]),
    "ANeuralNetworksMemoryDesc_setDimensions": (_i32, [_p, _u32, _u32p]),
    "ANeuralNetworksMemoryDesc_finish": (_i32, [_p]),
    "ANeuralNetworksMemory_createFromDesc": (_i32, [_p, _pp]),
    "ANeuralNetworksMemory_copy": (_i32, [_p, _p]),
    "ANeuralNetworksDevice_wait": (_i32, [_p]),
    "ANeuralNetworksModel_setOperandValueFromModel": (_i32, [_p, _i32, _p]),
    "ANeuralNetworksCompilation_setPriority": (_i32, [_p, ctypes.c_int]),
    "ANeuralNetworksCompilation_setTimeout": (_i32, [_p, _u64]),
    "ANeuralNetworksExecution_setTimeout": (_i32, [_p, _u64]),
    "ANeuralNetworksExecution_setLoopTimeout": (_i32, [_p, _u64]),
    "ANeuralNetworks_getDefaultLoopTimeout": (_u64, []),
    "ANeuralNetworks_getMaximumLoopTimeout": (_u64, []),
    "ANeuralNetworksEvent_createFromSyncFenceFd": (_i32, [ctypes.c_int, _pp]),
    "ANeuralNetworksEvent_getSyncFenceFd": (_i32, [_p, ctypes.POINTER(ctypes.c_int)]),
    "ANeuralNetworksExecution_startComputeWithDependencies": (_i32, [_p, _pp, _u32, _u64, _pp]),
    "ANeuralNetworks_getRuntimeFeatureLevel": (ctypes.c_int64, []),
    "ANeuralNetworksExecution_enableInputAndOutputPadding": (_i32, [_p, _bool]),
    "ANeuralNetworksCompilation_getPreferredMemoryAlignmentForInput": (_i32, [_p, _u32, _u32p]),
    "ANeuralNetworksCompilation_getPreferredMemoryPaddingForInput": (_i32, [_p, _u32, _u32p]),
    "ANeuralNetworksCompilation_getPreferredMemoryAlignmentForOutput": (_i32, [_p, _u32, _u32p]),
    "ANeuralNetworksCompilation_getPreferredMemoryPaddingForOutput": (_i32, [_p, _u32, _u32p]),
    "ANeuralNetworksExecution_setReusable": (_i32, [_p, _bool]),
}

# The mock-only control API (absent from a real libneuralnetworks.so).
_MOCK_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "MockNnapi_getVersion": (_str, []),
    "MockNnapi_getBlasInfo": (_str, []),
    "MockNnapi_getCounter": (_i32, [_str, ctypes.POINTER(_u64)]),
    "MockNnapi_getOperationExecutedCount": (_u64, [_i32]),
    "MockNnapi_resetCounters": (None, []),
    "MockNnapi_getLastError": (_str, []),
    "MockNnapi_clearLastError": (None, []),
    "MockNnapi_injectFault": (_i32, [_str, ctypes.c_int, _i32]),
    "MockNnapi_clearFaults": (None, []),
    "MockNnapi_getInjectedFaultCount": (_u64, []),
    "MockNnapi_holdCompilations": (None, [_i32]),
    "MockNnapi_getHeldCompilationCount": (_u32, []),
}

#: The NNAPI functions of feature levels 1-5 with their ctypes signatures.
NNAPI_FUNCTIONS = tuple(_SIGNATURES)


def _declare(lib: ctypes.CDLL) -> None:
    for table in (_SIGNATURES, _MOCK_SIGNATURES):
        for name, (restype, argtypes) in table.items():
            function = getattr(lib, name, None)
            if function is None:
                continue  # an older real NNAPI, or the mock API on a real library
            function.restype = restype
            function.argtypes = argtypes
