# SPDX-License-Identifier: Apache-2.0
"""Helpers for differential tests: build a module for host llvm and with NNAPI offload, run both."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tvm
from tvm import relax

import mock_nnapi
import tvm_nnapi


def to_tvm(arrays: Sequence[np.ndarray]) -> list[tvm.runtime.Tensor]:
    return [tvm.runtime.tensor(a) for a in arrays]


def run_host(mod: tvm.IRModule, function: str, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """The oracle: the same module built for host llvm without any offload."""
    executable = relax.build(mod, target="llvm")
    vm = relax.VirtualMachine(executable, tvm.cpu())
    return vm[function](*to_tvm(inputs)).numpy()


def run_nnapi(
    mod: tvm.IRModule,
    function: str,
    inputs: Sequence[np.ndarray],
    options: tvm_nnapi.PartitionOptions | None = None,
) -> tuple[np.ndarray, int]:
    """Partition + build with NNAPI offload; returns (result, NNAPI executions during the call)."""
    executable = tvm_nnapi.build(mod, options=options)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    before = mock_nnapi.counter("executions_completed")
    result = vm[function](*to_tvm(inputs)).numpy()
    return result, mock_nnapi.counter("executions_completed") - before
