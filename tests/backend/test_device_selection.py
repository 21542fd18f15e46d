# SPDX-License-Identifier: Apache-2.0
"""Input-based device selection: per shape signature, NNAPI or TVM's host code for the same
subgraph; fallback to the host when NNAPI fails."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.script import relax as R

import mock_nnapi
import tvm_nnapi
from tvm_nnapi import runtime
from tvm_nnapi.tools.cost_policy import cost_policy_from_profile


@tvm.script.ir_module
class Projection:
    @R.function
    def main(x: R.Tensor(("seq_len", 32), "float32"), w: R.Tensor((32, 32), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.nn.silu(y)
            R.output(z)
        return z


@pytest.fixture
def options():
    saved = runtime.options_in_effect()
    yield runtime
    runtime.configure(**saved)


RNG = np.random.default_rng(0)
WEIGHT = RNG.standard_normal((32, 32)).astype(np.float32) * 0.2


def reference(x: np.ndarray) -> np.ndarray:
    y = x @ WEIGHT
    return y / (1 + np.exp(-y))


def run(vm: relax.VirtualMachine, rows: int) -> tuple[np.ndarray, int]:
    x = RNG.standard_normal((rows, 32)).astype(np.float32)
    before = mock_nnapi.counter("executions_completed")
    out = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(WEIGHT)).numpy()
    np.testing.assert_allclose(out, reference(x), rtol=1e-4, atol=1e-5)
    return out, mock_nnapi.counter("executions_completed") - before


@pytest.fixture(scope="module")
def executable():
    return tvm_nnapi.build(Projection, host_fallback=True)


def test_threshold_policy_sends_small_shapes_to_the_host(options, executable):
    # 2 * rows * 32 * 32 FLOPs for the matmul plus rows * 32 elementwise: rows >= 8 -> NNAPI.
    options.configure(policy=f"threshold:{2 * 8 * 32 * 32}")
    vm = relax.VirtualMachine(executable, tvm.cpu())
    assert run(vm, 1)[1] == 0  # decode-like: host
    assert run(vm, 64)[1] == 1  # prefill-like: NNAPI
    (stats,) = runtime.stats(executable).values()
    assert stats["signatures_on_host"] == 1 and stats["signatures_on_nnapi"] == 1


def test_cost_policy_weighs_call_overhead_against_throughput(options, executable):
    options.configure(policy="cost:nnapi_gflops=100,host_gflops=5,call_us=500,transfer_gbps=10")
    vm = relax.VirtualMachine(executable, tvm.cpu())
    assert run(vm, 1)[1] == 0  # 500 us of NNAPI overhead beats nothing at 2 KFLOP
    assert run(vm, 4096)[1] == 1  # 8.6 GFLOP: NNAPI's throughput wins


def test_host_and_nnapi_give_identical_results(options, executable):
    x = RNG.standard_normal((5, 32)).astype(np.float32)
    results = {}
    for policy in ("host", "nnapi"):
        options.configure(policy=policy)
        vm = relax.VirtualMachine(executable, tvm.cpu())
        results[policy] = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(WEIGHT)).numpy()
    np.testing.assert_allclose(results["host"], results["nnapi"], rtol=1e-5, atol=1e-6)


def test_nnapi_failure_falls_back_to_the_host(executable):
    vm = relax.VirtualMachine(executable, tvm.cpu())
    with mock_nnapi.FaultInjection(
        "ANeuralNetworksCompilation_finish", mock_nnapi.ResultCode.OP_FAILED, count=-1
    ):
        _, executions = run(vm, 3)
    assert executions == 0
    stats = next(iter(runtime.stats(executable).values()))
    assert stats["fallbacks"] >= 1


def test_without_host_fallback_the_error_names_subgraph_shape_and_code():
    vm = relax.VirtualMachine(tvm_nnapi.build(Projection), tvm.cpu())
    with (
        mock_nnapi.FaultInjection(
            "ANeuralNetworksExecution_compute", mock_nnapi.ResultCode.OP_FAILED, count=-1
        ),
        mock_nnapi.FaultInjection(
            "ANeuralNetworksExecution_burstCompute", mock_nnapi.ResultCode.OP_FAILED, count=-1
        ),
    ):
        with pytest.raises(Exception) as error:
            run(vm, 9)
    message = str(error.value)
    assert "main_nnapi_0" in message and "seq_len=9" in message
    assert "ANEURALNETWORKS_OP_FAILED" in message


def test_bad_policy_is_rejected(options):
    with pytest.raises(Exception, match="unknown NNAPI policy"):
        options.configure(policy="fastest")
    with pytest.raises(Exception, match="unknown cost key"):
        options.configure(policy="cost:speed=3")


def test_exported_module_keeps_its_host_fallback(tmp_path, executable):
    import json
    import os
    import subprocess
    import sys
    import textwrap

    library = tmp_path / "projection.so"
    executable.export_library(str(library))
    script = textwrap.dedent(
        f"""
        import json
        import numpy as np
        import tvm
        from tvm import relax
        import tvm_nnapi, mock_nnapi
        from tvm_nnapi import runtime
        lib = tvm.runtime.load_module({str(library)!r})
        vm = relax.VirtualMachine(lib, tvm.cpu())
        x = np.ones((3, 32), "float32")
        w = np.eye(32, dtype="float32")
        out = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(w)).numpy()
        print(json.dumps({{"value": float(out[0, 0]), "stats": runtime.stats(lib),
                           "nnapi": mock_nnapi.counter("executions_completed")}}))
        """
    )
    environment = dict(os.environ, TVM_NNAPI_POLICY="host")
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environment, check=False
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["nnapi"] == 0
    assert result["stats"]["main_nnapi_0"]["host_calls"] == 1
    assert abs(result["value"] - 1 / (1 + np.exp(-1))) < 1e-6


@tvm.script.ir_module
class WideProjection:
    @R.function
    def main(x: R.Tensor(("seq_len", 512), "float32"), w: R.Tensor((512, 512), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            R.output(y)
        return y


@pytest.mark.parametrize("profile", ["snapdragon-8-gen-2", "dimensity-9000"])
def test_cost_policy_from_a_phone_profile_splits_decode_and_prefill(options, profile):
    # A 512x512 projection: one token is dominated by NNAPI's per-call and transfer cost,
    # a 512-token prompt by arithmetic, where the accelerator is several times faster.
    policy = cost_policy_from_profile(profile)
    assert policy.startswith("cost:")
    options.configure(policy=policy)
    vm = relax.VirtualMachine(tvm_nnapi.build(WideProjection, host_fallback=True), tvm.cpu())
    weight = tvm.runtime.tensor(RNG.standard_normal((512, 512)).astype(np.float32))
    executions = []
    for rows in (1, 512):
        x = RNG.standard_normal((rows, 512)).astype(np.float32)
        before = mock_nnapi.counter("executions_completed")
        out = vm["main"](tvm.runtime.tensor(x), weight).numpy()
        np.testing.assert_allclose(out, x @ weight.numpy(), rtol=1e-4, atol=1e-3)
        executions.append(mock_nnapi.counter("executions_completed") - before)
    assert executions == [0, 1]
