# SPDX-License-Identifier: Apache-2.0
"""MockNnapi_injectFault: make an NNAPI function fail once, N times or always, like TFLite's
NnApiHandler; and MockNnapi_holdCompilations, which keeps compilations in progress."""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest
from mock_nnapi.constants import ResultCode

from mock_nnapi import control

from .nn import BAD_DATA, NO_ERROR, UNEXPECTED_NULL, counter, lib

OOM = ResultCode.OUT_OF_MEMORY


def create_model() -> tuple[int, ctypes.c_void_p]:
    model = ctypes.c_void_p()
    code = lib.ANeuralNetworksModel_create(ctypes.byref(model))
    if model.value:
        lib.ANeuralNetworksModel_free(model)
    return code, model


def test_once(arena):
    assert lib.MockNnapi_injectFault(b"ANeuralNetworksModel_create", OOM, 1) == NO_ERROR
    code, model = create_model()
    assert code == OOM and model.value is None  # nothing was done
    assert create_model()[0] == NO_ERROR
    assert control.injected_fault_count() == 1


def test_n_times(arena):
    control.inject_fault("ANeuralNetworksModel_create", ResultCode.OP_FAILED, 3)
    assert [create_model()[0] for _ in range(5)] == [5, 5, 5, 0, 0]
    assert control.injected_fault_count() == 3


def test_always_until_cleared(arena):
    control.inject_fault("ANeuralNetworksExecution_compute", ResultCode.DEAD_OBJECT, -1)
    execution, _ = arena.add_execution()
    for _ in range(4):
        assert lib.ANeuralNetworksExecution_compute(execution) == ResultCode.DEAD_OBJECT
    control.clear_faults()
    assert control.injected_fault_count() == 0
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR


def test_fault_replaces_even_null_checks(arena):
    # The fault comes first: the function returns the code without looking at its arguments.
    control.inject_fault("ANeuralNetworksModel_finish", ResultCode.BAD_STATE, 1)
    assert lib.ANeuralNetworksModel_finish(None) == ResultCode.BAD_STATE
    assert lib.ANeuralNetworksModel_finish(None) == UNEXPECTED_NULL


def test_context_manager(arena):
    with control.FaultInjection("ANeuralNetworks_getDeviceCount", OOM, -1):
        count = ctypes.c_uint32()
        assert lib.ANeuralNetworks_getDeviceCount(ctypes.byref(count)) == OOM
    assert lib.ANeuralNetworks_getDeviceCount(ctypes.byref(count)) == NO_ERROR


@pytest.mark.parametrize(
    "name, count",
    [
        (b"ANeuralNetworksModel_bogus", 1),  # no such function
        (b"ANeuralNetworksModel_free", 1),  # returns nothing: cannot fail
        (b"ANeuralNetworks_getDefaultLoopTimeout", 1),  # returns a duration, not a code
        (b"ANeuralNetworks_getRuntimeFeatureLevel", 1),
        (b"ANeuralNetworksModel_create", 0),  # a count of 0
    ],
)
def test_refused_faults(arena, name, count):
    assert lib.MockNnapi_injectFault(name, OOM, count) == BAD_DATA
    assert create_model()[0] == NO_ERROR


def test_null_name():
    assert lib.MockNnapi_injectFault(None, OOM, 1) == UNEXPECTED_NULL


def test_every_result_returning_function_can_fail(arena):
    import pathlib

    names = (pathlib.Path(__file__).parents[1] / "data" / "nnapi_public_functions.txt").read_text()
    void_or_value = {
        "ANeuralNetworksMemory_free",
        "ANeuralNetworksModel_free",
        "ANeuralNetworksCompilation_free",
        "ANeuralNetworksExecution_free",
        "ANeuralNetworksEvent_free",
        "ANeuralNetworksBurst_free",
        "ANeuralNetworksMemoryDesc_free",
        "ANeuralNetworks_getDefaultLoopTimeout",
        "ANeuralNetworks_getMaximumLoopTimeout",
        "ANeuralNetworks_getRuntimeFeatureLevel",
    }
    extensions = [
        "ANeuralNetworksDevice_getExtensionSupport",
        "ANeuralNetworksModel_getExtensionOperandType",
        "ANeuralNetworksModel_getExtensionOperationType",
        "ANeuralNetworksModel_setOperandExtensionData",
        "ANeuralNetworksCompilation_addExtensionAttribute",
        "ANeuralNetworksExecution_addExtensionAttribute",
    ]
    functions = [n for n in names.split() if n.startswith("ANeuralNetworks")]
    for name in functions + extensions:
        expected = BAD_DATA if name in void_or_value else NO_ERROR
        assert lib.MockNnapi_injectFault(name.encode(), OOM, 1) == expected, name
    control.clear_faults()
    # The extension functions have their injection point too.
    control.inject_fault("ANeuralNetworksDevice_getExtensionSupport", OOM)
    supported = ctypes.c_bool()
    assert lib.ANeuralNetworksDevice_getExtensionSupport(None, b"x", ctypes.byref(supported)) == OOM


# ---- numeric faults: MockNnapi_injectOperationFault ----------------------------------------------


def _add_and_mul(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from mock_ops.op_tester import OpTester

    from mock_nnapi import FuseCode, OperandCode, OperationCode

    def run(operation: int) -> np.ndarray:
        tester = OpTester(operation).input(x).input(y).scalar(OperandCode.INT32, FuseCode.NONE)
        return tester.output(OperandCode.TENSOR_FLOAT32, x.shape).run()[0]

    return run(OperationCode.ADD), run(OperationCode.MUL)


def test_an_operation_fault_perturbs_only_that_operation(arena):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 2.0, np.float32)
    with control.OperationFaultInjection("MUL", 0.25, count=1):
        added, multiplied = _add_and_mul(x, y)
        np.testing.assert_array_equal(added, x + y)  # another operation type is untouched
        np.testing.assert_array_equal(multiplied, x * y + 0.25)
        assert control.injected_fault_count() == 1
        # count=1: the next MUL computes correctly again.
        np.testing.assert_array_equal(_add_and_mul(x, y)[1], x * y)
    with control.OperationFaultInjection("ADD", -1.0):  # count < 0: every ADD until cleared
        assert all((_add_and_mul(x, y)[0] == x + y - 1).all() for _ in range(2))
    np.testing.assert_array_equal(_add_and_mul(x, y)[0], x + y)  # cleared on exit


def test_an_operation_fault_needs_a_count(arena):
    with pytest.raises(control.NnapiError, match="count 0 arms nothing"):
        control.inject_operation_fault("MUL", 1.0, count=0)


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Polls a condition the test is about to rely on; the timeout only turns a hang into a
    failure."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.001)


def finish_in_thread(compilation, results: list[int]) -> threading.Thread:
    """ANeuralNetworksCompilation_finish on a thread of its own (ctypes releases the GIL)."""
    thread = threading.Thread(
        target=lambda: results.append(lib.ANeuralNetworksCompilation_finish(compilation))
    )
    thread.start()
    return thread


def test_held_compilations_wait_until_released(arena):
    model = arena.binary_model()
    compilations = [arena.compilation(model, finish=False) for _ in range(2)]
    finished_before = counter("compilations_finished")
    results: list[int] = []
    control.hold_compilations(True)
    try:
        threads = [finish_in_thread(compilation, results) for compilation in compilations]
        wait_until(lambda: control.held_compilations() == 2, "two held compilations")
        assert results == [] and counter("compilations_finished") == finished_before
    finally:
        control.hold_compilations(False)
    for thread in threads:
        thread.join(timeout=60)
    assert results == [NO_ERROR, NO_ERROR]
    assert control.held_compilations() == 0
    assert counter("compilations_finished") == finished_before + 2
    # Released: a compilation finishes at once again.
    arena.compilation(model)


def test_clear_faults_releases_held_compilations(arena):
    model = arena.binary_model()
    compilation = arena.compilation(model, finish=False)
    results: list[int] = []
    with control.CompilationsHeld():
        thread = finish_in_thread(compilation, results)
        wait_until(lambda: control.held_compilations() == 1, "a held compilation")
        control.clear_faults()
        thread.join(timeout=60)
        assert results == [NO_ERROR]
