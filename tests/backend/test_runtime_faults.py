# SPDX-License-Identifier: Apache-2.0
"""Every NNAPI call the runtime makes fails once (the mock's fault injection): the runtime raises
an error naming the call and the result code, or falls back to the host; the next call works;
and once the module is freed no NNAPI object is left alive.

The candidate calls are the runtime's loader table (tvm_nnapi/runtime/src/nnapi_loader.h): each one
that returns a result code is armed in turn while a subgraph is compiled and run along every
path the runtime has (burst or plain compute, with and without a compilation cache directory,
relaxed float32). A call the runtime made is recognised by the mock's injected-fault count.
"""

from __future__ import annotations

import gc
import json
import re
from pathlib import Path

import numpy as np
import pytest
import tvm
from mock_nnapi.control import clear_faults, inject_fault, injected_fault_count
from tvm.script import relax as R

import mock_nnapi
import tvm_nnapi
from mock_nnapi import ResultCode
from tvm_nnapi import runtime
from tvm_nnapi.compiler.graph_json import GraphBuilder
from tvm_nnapi.runtime._library import runtime_function

# The source tree's loader (tests run from a checkout; wheels do not ship the C++ sources).
LOADER = Path(__file__).resolve().parents[2] / "tvm_nnapi" / "runtime" / "src" / "nnapi_loader.h"
LOADER_FUNCTIONS = re.findall(
    r"TVM_NNAPI_FUNCTION_POINTER\((ANeuralNetworks\w+)\)", LOADER.read_text()
)
#: Calls every compile-and-run must make (so the enumeration cannot pass vacuously).
CORE_CALLS = {
    "ANeuralNetworksModel_create",
    "ANeuralNetworksModel_addOperand",
    "ANeuralNetworksModel_setOperandValue",
    "ANeuralNetworksModel_addOperation",
    "ANeuralNetworksModel_identifyInputsAndOutputs",
    "ANeuralNetworksModel_relaxComputationFloat32toFloat16",
    "ANeuralNetworksModel_finish",
    "ANeuralNetworksCompilation_create",
    "ANeuralNetworksCompilation_setPreference",
    "ANeuralNetworksCompilation_setCaching",
    "ANeuralNetworksCompilation_finish",
    "ANeuralNetworksBurst_create",
    "ANeuralNetworksExecution_create",
    "ANeuralNetworksExecution_setInput",
    "ANeuralNetworksExecution_setOutput",
    "ANeuralNetworksExecution_burstCompute",
    "ANeuralNetworksExecution_compute",
}
create = runtime_function("tvm_nnapi.runtime.create")


def faultable(function: str) -> bool:
    try:
        inject_fault(function, ResultCode.OP_FAILED, 1)
    except mock_nnapi.NnapiError:
        return False
    clear_faults()
    return True


CANDIDATES = [f for f in LOADER_FUNCTIONS if faultable(f)]


def subgraph() -> tuple[str, bytes]:
    builder = GraphBuilder("subgraph0")
    x = builder.add_input("float32", ["n", 4])
    c = builder.add_constant(np.arange(4, dtype=np.float32))
    act = builder.add_scalar("INT32", 0)
    out = builder.add_tensor("float32", ["n", 4])
    builder.add_operation("ADD", [x, c, act], [out], "relax.add")
    builder.outputs.append(out)
    graph = builder.to_dict()
    graph["relax_fp32_to_fp16"] = True
    return json.dumps(graph), bytes(builder.constants)


def run(module, rows: int = 3) -> None:
    x = np.ones((rows, 4), np.float32)
    out = tvm.runtime.tensor(np.zeros((rows, 4), np.float32))
    module["subgraph0"](tvm.runtime.tensor(x), out)
    np.testing.assert_allclose(out.numpy(), x + np.arange(4, dtype=np.float32), rtol=1e-3)


@pytest.fixture
def options(tmp_path):
    saved = runtime.options_in_effect()
    yield tmp_path
    runtime.configure(**saved)
    clear_faults()


SCENARIOS = {
    "burst+cache": dict(use_burst=1, cache="dir"),
    "compute": dict(use_burst=0, cache=""),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_runtime_nnapi_call_failing_once_is_reported_and_leaks_nothing(options, scenario):
    config = SCENARIOS[scenario]
    runtime.configure(
        use_burst=config["use_burst"],
        cache_dir=str(options / "cache") if config["cache"] else "",
    )
    text, constants = subgraph()
    called = set()
    gc.collect()
    baseline = mock_nnapi.counter("live_objects")
    for function in CANDIDATES:
        module = create("subgraph0", text, constants)
        clear_faults()
        inject_fault(function, ResultCode.OP_FAILED, 1)
        try:
            run(module)
            error = None
        except Exception as raised:
            error = str(raised)
        hit = injected_fault_count() > 0
        clear_faults()
        if hit:
            called.add(function)
            assert error is not None, f"{function} failed but the call succeeded"
            assert function in error and "ANEURALNETWORKS_OP_FAILED (5)" in error, error
            assert "subgraph0" in error, error
            run(module, rows=3)  # the failure was not cached: the same signature now works
        else:
            assert error is None, f"{function} was not called, yet the run failed: {error}"
        del module  # the last reference: its NNAPI objects go now
        if mock_nnapi.counter("live_objects") != baseline:
            gc.collect()  # (a traceback may hold the module)
        live = mock_nnapi.control.live_objects()
        assert live["total"] == baseline, (function, live)
    expected = set(CORE_CALLS)
    if config["use_burst"]:
        expected.discard("ANeuralNetworksExecution_compute")
    else:
        expected -= {"ANeuralNetworksBurst_create", "ANeuralNetworksExecution_burstCompute"}
    if not config["cache"]:
        expected.discard("ANeuralNetworksCompilation_setCaching")
    assert expected <= called, f"not exercised: {sorted(expected - called)}"


@tvm.script.ir_module
class Small:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 8), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.add(y, x)
            R.output(z)
        return z


@pytest.mark.parametrize(
    "function",
    ["ANeuralNetworksCompilation_finish", "ANeuralNetworksExecution_burstCompute"],
)
def test_module_with_host_fallback_falls_back_on_a_fault(options, function):
    executable = tvm_nnapi.build(Small, host_fallback=True)
    vm = tvm.relax.VirtualMachine(executable, tvm.cpu())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.standard_normal((8, 8)).astype(np.float32)
    inject_fault(function, ResultCode.OP_FAILED, 1)
    out = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(w)).numpy()
    assert injected_fault_count() == 1
    np.testing.assert_allclose(out, x @ w + x, rtol=1e-5, atol=1e-5)
    (stats,) = runtime.stats(vm).values()
    assert stats["fallbacks"] == 1 and stats["host_calls"] == 1
    # The executable reports the modules its VirtualMachine runs: the same ones, since it runs
    # as built (no empty C module to compile and reload).
    assert "c" not in [m.kind for m in executable.mod.imports]
    assert runtime.stats(executable) == runtime.stats(vm)


@pytest.mark.parametrize(
    "code", [ResultCode.OUT_OF_MEMORY, ResultCode.UNAVAILABLE_DEVICE, ResultCode.DEAD_OBJECT]
)
def test_the_error_names_the_result_code(options, code):
    text, constants = subgraph()
    module = create("subgraph0", text, constants)
    with mock_nnapi.FaultInjection("ANeuralNetworksCompilation_finish", code):
        with pytest.raises(Exception) as error:
            run(module)
    assert f"ANEURALNETWORKS_{ResultCode(code).name} ({int(code)})" in str(error.value)
    assert "ANeuralNetworksCompilation_finish" in str(error.value)
    # The mock's explanation is this failure's, not a stale one from an earlier call.
    assert "injected fault: ANeuralNetworksCompilation_finish" in str(error.value)
