# SPDX-License-Identifier: Apache-2.0
"""Helpers for differential tests: build a module for host llvm and with NNAPI offload, run both."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

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


@dataclass
class OpCase:
    """One operator test: a Relax function of the inputs, the NNAPI operations that must run
    (and those that must not, e.g. an activation fused into the operation before it)."""

    name: str
    build: Callable[[list[relax.Var]], relax.Expr]
    inputs: list[np.ndarray]
    nnapi_ops: list[str]
    absent_ops: list[str] = field(default_factory=list)
    rtol: float = 1e-5
    atol: float = 1e-5
    # input 0's axes that are symbolic, each with its variable's name
    symbolic: dict[int, str] = field(default_factory=dict)
    host_operators: int = 0  # Relax operators that stay on the host
    options: tvm_nnapi.PartitionOptions | None = None

    def module(self) -> tvm.IRModule:
        builder = relax.BlockBuilder()
        params = []
        for index, array in enumerate(self.inputs):
            shape: list = list(array.shape)
            if index == 0:
                for axis, name in self.symbolic.items():
                    shape[axis] = tvm.tirx.Var(name, "int64")
            params.append(relax.Var(f"x{index}", relax.TensorType(shape, str(array.dtype))))
        with builder.function("main", params):
            with builder.dataflow():
                out = builder.emit_output(self.build(params))
            builder.emit_func_output(out)
        return builder.get()


def run_op_case(case: OpCase) -> tvm_nnapi.PartitionResult:
    """Partition and build ``case`` on the mock, check that its NNAPI operations ran (and its
    absent ones did not), that only ``host_operators`` stayed on the host, and that the result
    equals host llvm's (exactly for integers and booleans); returns the partition report."""
    mod = case.module()
    report = tvm_nnapi.partition_with_report(mod, case.options)
    assert report.subgraphs, [str(r) for r in report.refusals]
    summary = tvm_nnapi.offload_summary(report.module)
    assert summary.host_operators == case.host_operators, (summary.host, report.refusals)
    executable = tvm_nnapi.build(report.module)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    watched = [*case.nnapi_ops, *case.absent_ops]
    counts = {name: mock_nnapi.operation_count(name) for name in watched}
    result = vm["main"](*to_tvm(case.inputs)).numpy()
    for name in case.nnapi_ops:
        assert mock_nnapi.operation_count(name) > counts[name], f"{name} did not run on NNAPI"
    for name in case.absent_ops:
        assert mock_nnapi.operation_count(name) == counts[name], f"{name} ran on NNAPI"
    expected = run_host(mod, "main", case.inputs)
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape
    exact = result.dtype == np.bool_ or np.issubdtype(result.dtype, np.integer)
    rtol, atol = (0.0, 0.0) if exact else (case.rtol, case.atol)
    np.testing.assert_allclose(result, expected, rtol=rtol, atol=atol)
    return report
