# SPDX-License-Identifier: Apache-2.0
"""The runtime's answer to a lying driver: a device that reports an operation supported, then
fails to compile or to execute it (a profile's `driver_failures`, docs/device-profiles.md).

A small Relax model (add, then multiply) built with tvm_nnapi runs on a profile where
"npu-liar", a fast accelerator, claims ADD and MUL. With device sets configured the runtime
moves to the next set and says why; with the host fallback it runs TVM's code; with neither it
raises an error naming the device, the operation and the result code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_nnapi
from mock_nnapi import control
from tvm_nnapi import runtime

PROFILES = Path(__file__).resolve().parents[2] / "mock_nnapi" / "profiles"
X = np.arange(32, dtype="float32").reshape(4, 8) / 8
EXPECTED = (X + 1) * (X + 1)


def _lying_profile(tmp_path: Path, failures: list[dict[str, Any]]) -> Path:
    """The reference profile plus "npu-liar", which claims ADD and MUL and fails `failures`."""
    profile = json.loads((PROFILES / "reference.json").read_text())
    profile["name"] = "lying-phone"
    cpu = profile["devices"][0]
    npu = json.loads(json.dumps(cpu))
    npu.update(name="npu-liar", type="ACCELERATOR", runtime_cpu=False)
    npu["support"] = {"operations": ["ADD", "MUL"], "data_types": "all", "max_rank": 4}
    npu["throughput"] = {"float32": 10000, "float16": 10000, "quant8": 10000}
    npu["energy"] = {"pj_per_op": {"float32": 1, "float16": 1, "quant8": 1}, "pj_per_byte": 5}
    npu["transfer"] = {"latency_us": 1, "bandwidth_gbps": 10}
    npu["driver_failures"] = failures
    profile["devices"] = [npu, cpu]
    path = tmp_path / "lying-phone.json"
    path.write_text(json.dumps(profile))
    return path


@pytest.fixture
def lying_phone(tmp_path, request) -> Iterator[None]:
    """Selects the lying profile with the test's parameter as driver failures; restores the
    runtime's device options afterwards."""
    before = runtime.options_in_effect()
    with control.Profile(_lying_profile(tmp_path, request.param)):
        try:
            yield
        finally:
            runtime.configure(
                devices=before.get("devices", ""), exclude_cpu=before.get("exclude_cpu") == "1"
            )


def _build(host_fallback: bool = False) -> Any:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([4, 8], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, relax.const(np.ones((4, 8), "float32"))))
            out = bb.emit_output(relax.op.multiply(y, y))
        bb.emit_func_output(out)
    return tvm_nnapi.build(tvm_nnapi.partition(bb.get()), host_fallback=host_fallback)


def _run(executable: Any) -> np.ndarray:
    vm = relax.VirtualMachine(executable, tvm.cpu())
    return vm["main"](tvm.runtime.tensor(X)).numpy()


def _devices_that_ran() -> set[str]:
    trace = control.last_execution_trace()
    assert trace is not None
    return {e["device"] for e in trace["events"] if e["kind"] == "operation"}


def _only(mapping: dict[str, Any]) -> Any:
    assert len(mapping) == 1, mapping
    return next(iter(mapping.values()))


COMPILE_MUL = [{"operation": "MUL", "at": "compilation"}]
EXECUTE_ADD = [{"operation": "ADD", "at": "execution"}]


@pytest.mark.parametrize("lying_phone", [COMPILE_MUL], indirect=True)
def test_a_failed_compilation_moves_to_the_next_device_set(lying_phone, capfd):
    runtime.configure(devices=[["npu-liar"], ["mock-reference"]])
    assert runtime.options_in_effect()["devices"] == "npu-liar;mock-reference"
    executable = _build()
    np.testing.assert_allclose(_run(executable), EXPECTED, rtol=1e-6)
    assert _devices_that_ran() == {"mock-reference"}
    stats = _only(runtime.stats(executable))
    assert (stats["device_set_fallbacks"], stats["execution_failures"]) == (1, 0)
    assert (stats["fallbacks"], stats["nnapi_calls"]) == (0, 1)
    (reason,) = _only(runtime.fallback_reasons(executable))
    for part in (
        "ANeuralNetworksCompilation_finish returned ANEURALNETWORKS_OP_FAILED (5)",
        "on NNAPI device npu-liar",
        "npu-liar reports supporting ADD (code 0, relax.add), MUL (code 18, relax.multiply)",
        "npu-liar fails MUL (TENSOR_FLOAT32) at compilation",  # the driver's own word
        "compiling for device set 2 of 2 (mock-reference) instead",
        "[shape signature: static]",
    ):
        assert part in reason
    assert reason in capfd.readouterr().err
    # The signature stays on the set that compiled.
    np.testing.assert_allclose(_run(executable), EXPECTED, rtol=1e-6)
    assert _only(runtime.stats(executable))["device_set_fallbacks"] == 1


@pytest.mark.parametrize("lying_phone", [COMPILE_MUL], indirect=True)
def test_a_failed_compilation_without_a_fallback_names_device_operation_and_code(lying_phone):
    runtime.configure(devices="npu-liar")
    with pytest.raises(Exception) as raised:
        _run(_build())
    message = str(raised.value)
    for part in (
        "NNAPI subgraph '",
        "ANeuralNetworksCompilation_finish returned ANEURALNETWORKS_OP_FAILED (5) on NNAPI "
        "device npu-liar",
        "the driver failed an operation it reports supported",
        "fails MUL (TENSOR_FLOAT32) at compilation",
        "no host fallback in this module",
    ):
        assert part in message


@pytest.mark.parametrize("lying_phone", [COMPILE_MUL], indirect=True)
def test_a_failed_compilation_runs_the_host_fallback_and_says_why(lying_phone):
    runtime.configure(devices="npu-liar")
    executable = _build(host_fallback=True)
    np.testing.assert_allclose(_run(executable), EXPECTED, rtol=1e-6)
    stats = _only(runtime.stats(executable))
    assert (stats["fallbacks"], stats["host_calls"], stats["device_set_fallbacks"]) == (1, 1, 0)
    (reason,) = _only(runtime.fallback_reasons(executable))
    assert "npu-liar" in reason and "ANEURALNETWORKS_OP_FAILED" in reason
    assert reason.endswith("running TVM's host code instead [shape signature: static]")


@pytest.mark.parametrize("lying_phone", [EXECUTE_ADD], indirect=True)
def test_a_failed_execution_is_run_again_on_the_next_device_set(lying_phone):
    runtime.configure(devices="npu-liar;mock-reference")
    executable = _build()
    np.testing.assert_allclose(_run(executable), EXPECTED, rtol=1e-6)
    assert _devices_that_ran() == {"mock-reference"}
    stats = _only(runtime.stats(executable))
    assert (stats["execution_failures"], stats["device_set_fallbacks"]) == (1, 1)
    assert (stats["compilations"], stats["nnapi_calls"], stats["fallbacks"]) == (2, 1, 0)
    (reason,) = _only(runtime.fallback_reasons(executable))
    for part in (
        "returned ANEURALNETWORKS_OP_FAILED (5) on NNAPI device npu-liar running ADD",
        "npu-liar fails ADD (TENSOR_FLOAT32) at execution",
        "running on device set 2 of 2 instead",
    ):
        assert part in reason
    # Later calls go to the set that worked: no further failure.
    np.testing.assert_allclose(_run(executable), EXPECTED, rtol=1e-6)
    stats = _only(runtime.stats(executable))
    assert (stats["execution_failures"], stats["compilations"]) == (1, 2)


@pytest.mark.parametrize(
    "lying_phone", [[{"operation": "ADD", "at": "execution", "every": 2}]], indirect=True
)
def test_every_other_execution_failing_without_a_fallback(lying_phone):
    runtime.configure(devices="npu-liar")
    executable = _build()
    vm = relax.VirtualMachine(executable, tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(X)).numpy(), EXPECTED, rtol=1e-6)
    with pytest.raises(Exception) as raised:
        vm["main"](tvm.runtime.tensor(X))
    message = str(raised.value)
    assert "returned ANEURALNETWORKS_OP_FAILED (5) on NNAPI device npu-liar running ADD" in message
    assert "no host fallback in this module" in message
    # The next execution succeeds: the failure was the driver's, not the compilation's.
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(X)).numpy(), EXPECTED, rtol=1e-6)
    assert _only(runtime.stats(executable))["execution_failures"] == 1


@pytest.mark.parametrize("lying_phone", [COMPILE_MUL + EXECUTE_ADD], indirect=True)
def test_when_nnapi_chooses_its_runtime_falls_back_to_its_cpu(lying_phone):
    # No device option: Compilation_create, where NNAPI itself recovers from driver failures
    # (as Android does); the runtime sees no failure, the mock counts it.
    before = control.counter("driver_failures")
    executable = _build()
    np.testing.assert_allclose(_run(executable), EXPECTED, rtol=1e-6)
    stats = _only(runtime.stats(executable))
    assert (stats["execution_failures"], stats["device_set_fallbacks"]) == (0, 0)
    assert control.counter("driver_failures") == before + 1  # the compilation's


@pytest.mark.parametrize("lying_phone", [EXECUTE_ADD], indirect=True)
def test_a_failed_execution_on_the_last_set_runs_the_host_fallback(lying_phone):
    runtime.configure(devices="npu-liar")
    executable = _build(host_fallback=True)
    np.testing.assert_allclose(_run(executable), EXPECTED, rtol=1e-6)
    stats = _only(runtime.stats(executable))
    assert (stats["execution_failures"], stats["fallbacks"], stats["host_calls"]) == (1, 1, 1)
    (reason,) = _only(runtime.fallback_reasons(executable))
    assert "on NNAPI device npu-liar running ADD" in reason
    assert reason.endswith("running TVM's host code instead [shape signature: static]")


@pytest.mark.parametrize(
    "lying_phone", [[{"operation": "ADD", "at": "execution", "every": 3}]], indirect=True
)
def test_threads_meeting_a_failing_execution_all_get_the_right_answer(lying_phone):
    """Calls from several threads share the signature's compilation; the first failure moves it
    to the next set once, and every call's result is right."""
    import threading

    runtime.configure(devices="npu-liar;mock-reference")
    executable = _build()
    vm = runtime.PerThreadVM(executable, tvm.cpu())
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(4):
                results.append(vm["main"](tvm.runtime.tensor(X)).numpy())
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 16
    for result in results:
        np.testing.assert_allclose(result, EXPECTED, rtol=1e-6)
    stats = _only(runtime.stats(executable))
    assert stats["fallbacks"] == 0 and stats["nnapi_calls"] == 16
    # The third execution on npu-liar failed; the calls in flight on it may have failed too.
    assert 1 <= stats["execution_failures"] <= 4
    assert stats["device_set_fallbacks"] == stats["execution_failures"]
    assert stats["compilations"] == 2
