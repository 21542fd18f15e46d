# SPDX-License-Identifier: Apache-2.0
"""Loading the C++ runtime library and choosing the NNAPI library it dlopen()s."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from pathlib import Path

#: Environment variable naming the NNAPI library to dlopen(); the C++ loader
#: (src/nnapi_loader.cc) reads it, and so does mock_nnapi's Python package.
LIBRARY_ENV = "TVM_NNAPI_LIBRARY"
_DISTRIBUTION = "tvm-nnapi"


def find_packaged_file(package: str, relative: str) -> Path:
    """``<package>/<relative>`` as installed from this project's wheel, found without importing
    ``package``: next to the package's sources (regular installs), or in the wheel's file list
    (editable installs keep the sources in the tree and install built libraries elsewhere).
    Raises FileNotFoundError naming the places searched."""
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec(package)
    candidates = [Path(p) / relative for p in (spec and spec.submodule_search_locations) or []]
    try:
        wanted = f"{package}/{relative}"
        files = importlib.metadata.files(_DISTRIBUTION) or []
        candidates += [Path(str(f.locate())) for f in files if str(f).replace("\\", "/") == wanted]
    except importlib.metadata.PackageNotFoundError:
        pass
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    searched = ", ".join(str(c) for c in candidates) or "no install of the tvm-nnapi package"
    raise FileNotFoundError(
        f"cannot find {package}/{relative} (searched: {searched}); build and install the "
        "project with `pip install .` (or `pip install --no-build-isolation -ve .`)"
    )


def on_android() -> bool:
    return sys.platform == "android" or "ANDROID_ROOT" in os.environ


def configure_nnapi_library() -> str:
    """Make sure the runtime will dlopen a usable NNAPI library; returns its path or name.

    ``$TVM_NNAPI_LIBRARY`` wins when set. On Android the system ``libneuralnetworks.so`` is used;
    elsewhere the mock built with this package is selected (and exported to child processes
    through the environment, so an RPC server or a worker sees the same library).
    """
    chosen = os.environ.get(LIBRARY_ENV)
    if chosen:
        return chosen
    if on_android():
        return "libneuralnetworks.so"
    path = str(find_packaged_file("mock_nnapi", "lib/libneuralnetworks.so"))
    os.environ[LIBRARY_ENV] = path
    return path


#: Environment variable naming another build of the runtime library (development builds).
RUNTIME_LIBRARY_ENV = "TVM_NNAPI_RUNTIME_LIBRARY"


@functools.cache
def load_runtime_library() -> ctypes.CDLL:
    """Load ``libtvm_nnapi_runtime.so`` (registers the "nnapi" module kind with tvm-ffi)."""
    import tvm_ffi  # noqa: F401  (loads libtvm_ffi.so first)

    configure_nnapi_library()
    override = os.environ.get(RUNTIME_LIBRARY_ENV)
    if override:
        if not os.path.isfile(override):
            raise FileNotFoundError(f"{RUNTIME_LIBRARY_ENV}={override} does not name a file")
        path = override
    else:
        path = str(find_packaged_file("tvm_nnapi", "lib/libtvm_nnapi_runtime.so"))
    return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def runtime_function(name: str):
    """A global function registered by the runtime library."""
    import tvm_ffi

    load_runtime_library()
    return tvm_ffi.get_global_func(name)
