# SPDX-License-Identifier: Apache-2.0
"""Object lifetimes: free(NULL), freeing related objects in every legal order, and the mock's
live-object counters returning to zero."""

from __future__ import annotations

import ctypes
import itertools
import os

import numpy as np
import pytest

from mock_nnapi import control

from .nn import NO_ERROR, counter, lib, ptr

FREE_FUNCTIONS = [
    "ANeuralNetworksMemory_free",
    "ANeuralNetworksModel_free",
    "ANeuralNetworksCompilation_free",
    "ANeuralNetworksExecution_free",
    "ANeuralNetworksEvent_free",
    "ANeuralNetworksBurst_free",
    "ANeuralNetworksMemoryDesc_free",
]


@pytest.mark.parametrize("function", FREE_FUNCTIONS)
def test_free_null_is_a_no_op(function):
    getattr(lib, function)(None)


@pytest.mark.parametrize(
    "order", list(itertools.permutations(["event", "execution", "burst", "memory", "desc"]))
)
def test_free_in_any_order(arena, order):
    compilation = arena.compilation(arena.binary_model())
    desc = arena.desc()
    assert lib.ANeuralNetworksMemoryDesc_addOutputRole(desc, compilation, 0, 1.0) == NO_ERROR
    memory, _ = arena.fd_memory(8)
    burst = arena.burst(compilation)
    execution = arena.execution(compilation)
    a = arena.keep(np.array([1, 2], np.float32))
    act = arena.keep(np.zeros(1, np.int32))
    for i, value in enumerate((a, a, act)):
        assert (
            lib.ANeuralNetworksExecution_setInput(execution, i, None, ptr(value), value.nbytes) == 0
        )
    assert lib.ANeuralNetworksExecution_setOutputFromMemory(execution, 0, None, memory, 0, 8) == 0
    code, event = arena.start(execution)
    assert code == NO_ERROR
    handles = {
        "event": event,
        "execution": execution,
        "burst": burst,
        "memory": memory,
        "desc": desc,
    }
    # Freeing an event waits for its computation; freeing an execution after its computation
    # completed (or an event, burst, memory or descriptor it no longer needs) is always fine.
    assert lib.ANeuralNetworksEvent_wait(event) == NO_ERROR
    for name in order:
        arena.release(handles[name])


def test_live_object_counters(arena):
    kinds = ["models", "compilations", "executions", "events", "memories", "memory_descs", "bursts"]
    before = {kind: counter(f"live_{kind}") for kind in kinds}
    model = arena.binary_model()
    compilation = arena.compilation(model)
    execution, _ = arena.add_execution(compilation=compilation)
    arena.start(execution)
    arena.burst(compilation)
    arena.fd_memory(4)
    arena.desc()
    after = {kind: counter(f"live_{kind}") for kind in kinds}
    assert {kind: after[kind] - before[kind] for kind in kinds} == dict.fromkeys(kinds, 1)
    assert counter("live_objects") >= len(kinds)
    assert set(control.counters()) >= {f"live_{kind}" for kind in kinds}
    arena.close()
    assert {kind: counter(f"live_{kind}") for kind in kinds} == before


def test_statistics_count_work(arena):
    control.reset_counters()
    execution, _ = arena.add_execution()
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    failed = arena.execution(arena.compilation(arena.binary_model()))
    assert lib.ANeuralNetworksExecution_compute(failed) != NO_ERROR
    stats = control.counters()
    assert stats["models_finished"] == 2
    assert stats["compilations_finished"] == 2
    assert stats["executions_started"] == 2
    assert stats["executions_completed"] == 1
    assert stats["executions_failed"] == 1
    assert control.operation_count("ADD") == 1


def test_no_file_descriptor_leaks(arena):
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    fd = os.eventfd(1)
    try:
        before = open_fds()
        for _ in range(20):
            memory, _ = arena.fd_memory(16)
            arena.release(memory)
            event = ctypes.c_void_p()
            assert lib.ANeuralNetworksEvent_createFromSyncFenceFd(fd, ctypes.byref(event)) == 0
            assert lib.ANeuralNetworksEvent_wait(event) == NO_ERROR
            lib.ANeuralNetworksEvent_free(event)
        arena.close()  # closes the memfds the arena opened
        assert open_fds() == before
    finally:
        os.close(fd)
