# SPDX-License-Identifier: Apache-2.0
"""Loading the C++ runtime library and choosing the NNAPI library it dlopen()s."""

from __future__ import annotations

import ctypes
import functools
import os
import sys

from mock_nnapi._library import LIBRARY_ENV, find_packaged_file, mock_library_path


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
    path = str(mock_library_path())
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
