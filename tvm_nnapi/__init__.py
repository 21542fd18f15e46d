# SPDX-License-Identifier: Apache-2.0
"""tvm_nnapi: run TVM Relax subgraphs on Android's NNAPI through BYOC.

Typical use::

    import tvm_nnapi
    mod = tvm_nnapi.partition(mod)            # offload what NNAPI can run
    ex = tvm_nnapi.build(mod, target="llvm")  # RunCodegen + relax.build
    vm = tvm.relax.VirtualMachine(ex, tvm.cpu())

On a host (x86) the NNAPI calls go to the mock_nnapi library built with this package; on
Android to the system libneuralnetworks.so. ``$TVM_NNAPI_LIBRARY`` selects another library.

Importing the package registers the ``relax.ext.nnapi`` codegen and loads the runtime library
(so that ``tvm.runtime.load_module`` reads exported programs) when TVM is installed. Without
TVM the package still imports, and so do the parts that need no TVM (calibration, device
profiles, the differential report, errors); the compiler's names then raise an ImportError that
says so when used.
"""

from __future__ import annotations

from ._lazy import lazy_attributes
from ._version import __version__ as __version__
from .errors import CodegenError, NnapiBackendError

#: Public names and the module that defines each (imported on first use).
_LAZY = {
    "build": ".compiler.build",
    "offload_summary": ".compiler.build",
    "nnapi_codegen": ".compiler.codegen",
    "PartitionResult": ".compiler.partition",
    "nnapi_subgraphs": ".compiler.partition",
    "partition": ".compiler.partition",
    "partition_with_report": ".compiler.partition",
    "PartitionOptions": ".compiler.patterns",
    "Refusal": ".compiler.patterns",
    "RefusalKind": ".compiler.patterns",
    "configure_nnapi_library": ".runtime._library",
}


__getattr__ = lazy_attributes(globals(), _LAZY, "TVM (pip install 'apache-tvm>=0.27,<0.28')")


def _register_with_tvm() -> None:
    """The codegen and the runtime library, where TVM is installed."""
    try:
        import tvm  # noqa: F401
    except ImportError:
        return
    from .compiler import codegen  # noqa: F401  (registers relax.ext.nnapi)
    from .runtime._library import load_runtime_library

    load_runtime_library()


_register_with_tvm()

__all__ = [
    "CodegenError",
    "NnapiBackendError",
    "PartitionOptions",
    "PartitionResult",
    "Refusal",
    "RefusalKind",
    "build",
    "configure_nnapi_library",
    "nnapi_codegen",
    "nnapi_subgraphs",
    "offload_summary",
    "partition",
    "partition_with_report",
]
