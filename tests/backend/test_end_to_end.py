# SPDX-License-Identifier: Apache-2.0
"""The whole path: partition -> relax.ext.nnapi -> runtime module -> mock NNAPI, vs host llvm."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.script import relax as R

import mock_nnapi
import tvm_nnapi

from .helpers import run_host, run_nnapi


@tvm.script.ir_module
class BroadcastAdd:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32"), y: R.Tensor((4,), "float32")):
        with R.dataflow():
            out = R.add(x, y)
            R.output(out)
        return out


@tvm.script.ir_module
class MixedGraph:
    """Offloaded arithmetic around an operator NNAPI does not have (cumsum), in a non-main
    function with a symbolic batch dimension and a bound constant."""

    @R.function
    def forward(x: R.Tensor(("n", 3), "float32"), y: R.Tensor((3,), "float32")):
        with R.dataflow():
            a = R.add(x, y)
            b = R.multiply(a, R.const(np.array([0.5, -2.0, 3.0], "float32")))
            c = R.cumsum(b, axis=1)
            d = R.subtract(c, x)
            R.output(d)
        return d


def test_add_with_broadcasting_runs_on_nnapi_and_matches_llvm():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y = rng.standard_normal(4).astype(np.float32)
    adds_before = mock_nnapi.operation_count("ADD")
    result, executions = run_nnapi(BroadcastAdd, "main", [x, y])
    assert executions == 1
    assert mock_nnapi.operation_count("ADD") == adds_before + 1
    np.testing.assert_array_equal(result, run_host(BroadcastAdd, "main", [x, y]))


def test_partition_marks_one_subgraph_per_connected_region():
    report = tvm_nnapi.partition_with_report(MixedGraph)
    assert len(report.subgraphs) == 2
    (refusal,) = report.refusals
    assert refusal.operator == "relax.cumsum"
    assert refusal.kind == tvm_nnapi.RefusalKind.UNSUPPORTED_OPERATOR
    summary = tvm_nnapi.offload_summary(report.module)
    assert summary.offloaded_operators == 3
    assert dict(summary.host) == {"relax.cumsum": 1}


@pytest.mark.parametrize("rows", [1, 5, 17])
def test_symbolic_shapes_any_function_name_and_constants(rows):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 3)).astype(np.float32)
    y = rng.standard_normal(3).astype(np.float32)
    result, executions = run_nnapi(MixedGraph, "forward", [x, y])
    assert executions == 2
    np.testing.assert_allclose(result, run_host(MixedGraph, "forward", [x, y]), rtol=1e-6)


def test_dtype_refusal_is_recorded():
    @tvm.script.ir_module
    class Float64:
        @R.function
        def main(x: R.Tensor((4,), "float64")):
            with R.dataflow():
                out = R.add(x, x)
                R.output(out)
            return out

    report = tvm_nnapi.partition_with_report(Float64)
    assert report.subgraphs == []
    (refusal,) = report.refusals
    assert refusal.kind == tvm_nnapi.RefusalKind.DTYPE
    assert "float64" in refusal.reason


def test_feature_level_gates_float16():
    @tvm.script.ir_module
    class Half:
        @R.function
        def main(x: R.Tensor((4,), "float16")):
            with R.dataflow():
                out = R.add(x, x)
                R.output(out)
            return out

    old = tvm_nnapi.PartitionOptions(feature_level=tvm_nnapi.compiler.patterns.FEATURE_LEVEL_2)
    report = tvm_nnapi.partition_with_report(Half, old)
    assert report.subgraphs == []
    assert report.refusals[0].kind == tvm_nnapi.RefusalKind.FEATURE_LEVEL
    assert tvm_nnapi.partition_with_report(Half).subgraphs


def test_upstream_pattern_table_does_not_change_partitioning():
    before = tvm_nnapi.partition_with_report(MixedGraph).subgraphs
    import tvm.relax.backend.contrib.nnapi  # noqa: F401  (registers upstream nnapi.* patterns)

    assert tvm_nnapi.partition_with_report(MixedGraph).subgraphs == before


def test_export_and_reload_in_a_fresh_process(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 3)).astype(np.float32)
    y = rng.standard_normal(3).astype(np.float32)
    library = tmp_path / "mixed.so"
    tvm_nnapi.build(MixedGraph).export_library(str(library))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    script = textwrap.dedent(
        f"""
        import json
        import numpy as np
        import tvm
        from tvm import relax
        import tvm_nnapi, mock_nnapi
        lib = tvm.runtime.load_module({str(library)!r})
        vm = relax.VirtualMachine(lib, tvm.cpu())
        x = np.load({str(tmp_path / "x.npy")!r}); y = np.load({str(tmp_path / "y.npy")!r})
        out = vm["forward"](tvm.runtime.tensor(x), tvm.runtime.tensor(y)).numpy()
        np.save({str(tmp_path / "out.npy")!r}, out)
        print(json.dumps(mock_nnapi.counters()))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
    counters = json.loads(completed.stdout.strip().splitlines()[-1])
    assert counters["executions_completed"] == 2  # both subgraphs ran on NNAPI in the new process
    out = np.load(tmp_path / "out.npy")
    np.testing.assert_allclose(out, run_host(MixedGraph, "forward", [x, y]), rtol=1e-6)


def test_vm_reports_nnapi_errors_with_the_subgraph_name():
    executable = tvm_nnapi.build(BroadcastAdd)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    x = tvm.runtime.tensor(np.ones((2, 3, 4), np.float32))
    y = tvm.runtime.tensor(np.ones(4, np.float32))
    with mock_nnapi.FaultInjection(
        "ANeuralNetworksCompilation_finish", mock_nnapi.ResultCode.OP_FAILED
    ):
        with pytest.raises(Exception) as error:
            vm["main"](x, y)
    message = str(error.value)
    assert "ANeuralNetworksCompilation_finish" in message
    assert "ANEURALNETWORKS_OP_FAILED" in message
    assert "main_nnapi_0" in message


def test_relax_vm_can_run_host_and_nnapi_builds_of_the_same_module():
    ex_host = relax.build(BroadcastAdd, target="llvm")
    ex_nnapi = tvm_nnapi.build(BroadcastAdd)
    assert isinstance(ex_host, relax.VMExecutable) and isinstance(ex_nnapi, relax.VMExecutable)
