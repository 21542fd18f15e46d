# SPDX-License-Identifier: Apache-2.0
"""Locating and loading the built ``libneuralnetworks.so`` with ctypes."""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path
from typing import Any

from ._signatures import (
    SIGNATURES,
    ANeuralNetworksOperandType,
    ANeuralNetworksSymmPerChannelQuantParams,
)

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
    declare(lib)
    return lib


def is_mock(lib: ctypes.CDLL | None = None) -> bool:
    """True when the loaded library is mock_nnapi (it exports the MockNnapi_* control API)."""
    lib = lib or load()
    return hasattr(lib, "MockNnapi_getVersion")


#: The C structs by their names without the ``ANeuralNetworks`` prefix.
OperandType = ANeuralNetworksOperandType
SymmPerChannelQuantParams = ANeuralNetworksSymmPerChannelQuantParams

#: The NNAPI functions the headers declare (those of feature levels 1-5 and the extensions).
NNAPI_FUNCTIONS = tuple(name for name in SIGNATURES if name.startswith("ANeuralNetworks"))


@functools.cache
def _dlsym() -> Any:
    dlsym = ctypes.CDLL(None).dlsym
    dlsym.restype = ctypes.c_void_p
    dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    return dlsym


def exports(lib: ctypes.CDLL, name: str) -> bool:
    """Whether ``lib`` resolves ``name`` (dlsym gives an address).

    Asked of dlsym directly: the mock standing in for an older Android
    (``MOCK_NNAPI_LIBRARY_FEATURE_LEVEL``) resolves newer functions to NULL without a dlerror,
    on which CPython 3.11's ``getattr(lib, name)`` crashes instead of raising AttributeError."""
    return bool(_dlsym()(lib._handle, name.encode()))


def declare(lib: ctypes.CDLL) -> None:
    """Gives every function the headers declare its ctypes signature (those the library
    exports: an older real NNAPI lacks newer functions, a real one the MockNnapi_* API)."""
    for name, (restype, argtypes) in SIGNATURES.items():
        if not exports(lib, name):
            continue
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
