# SPDX-License-Identifier: Apache-2.0
"""tvm_nnapi: run TVM Relax subgraphs on Android's NNAPI through BYOC.

Typical use::

    import tvm_nnapi
    mod = tvm_nnapi.partition(mod)            # offload what NNAPI can run
    ex = tvm_nnapi.build(mod, target="llvm")  # RunCodegen + relax.build
    vm = tvm.relax.VirtualMachine(ex, tvm.cpu())

On a host (x86) the NNAPI calls go to the mock_nnapi library built with this package; on
Android to the system libneuralnetworks.so. ``$TVM_NNAPI_LIBRARY`` selects another library.
"""

from __future__ import annotations

from ._version import __version__ as __version__
from .compiler.build import build, offload_summary
from .compiler.codegen import nnapi_codegen
from .compiler.partition import PartitionResult, nnapi_subgraphs, partition, partition_with_report
from .compiler.patterns import PartitionOptions, Refusal, RefusalKind
from .errors import CodegenError, NnapiBackendError
from .runtime._library import configure_nnapi_library, load_runtime_library

load_runtime_library()

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
