# SPDX-License-Identifier: Apache-2.0
"""Events: startCompute, sync fences (an eventfd or a pipe stands in for a sync_file) and
startComputeWithDependencies."""

from __future__ import annotations

import ctypes
import os
import select
import threading
import time

import numpy as np
import pytest
from mock_nnapi.constants import ResultCode

from .nn import (
    BAD_DATA,
    BAD_STATE,
    NO_ERROR,
    UNEXPECTED_NULL,
    devices,
    handle_array,
    lib,
)


def fence_event(arena, fd: int) -> ctypes.c_void_p:
    event = ctypes.c_void_p()
    assert lib.ANeuralNetworksEvent_createFromSyncFenceFd(fd, ctypes.byref(event)) == NO_ERROR
    return arena.own("ANeuralNetworksEvent_free", event)


def signal_later(fd: int, seconds: float) -> threading.Thread:
    def signal() -> None:
        time.sleep(seconds)
        os.eventfd_write(fd, 1)

    thread = threading.Thread(target=signal)
    thread.start()
    return thread


@pytest.fixture
def eventfd():
    fd = os.eventfd(0)
    yield fd
    os.close(fd)


def test_start_compute_and_wait(arena):
    execution, out = arena.add_execution()
    event = ctypes.c_void_p()
    assert lib.ANeuralNetworksExecution_startCompute(None, ctypes.byref(event)) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksExecution_startCompute(execution, None) == UNEXPECTED_NULL
    code, event = arena.start(execution)
    assert code == NO_ERROR
    assert lib.ANeuralNetworksEvent_wait(event) == NO_ERROR
    assert lib.ANeuralNetworksEvent_wait(event) == NO_ERROR  # waiting again is fine
    np.testing.assert_array_equal(out, [4, 6])
    assert lib.ANeuralNetworksEvent_wait(None) == UNEXPECTED_NULL
    lib.ANeuralNetworksEvent_free(None)


def test_free_event_without_waiting(arena):
    execution, out = arena.add_execution()
    code, event = arena.start(execution)
    assert code == NO_ERROR
    arena.release(event)  # Event_free waits for the computation
    np.testing.assert_array_equal(out, [4, 6])


def test_create_from_sync_fence_fd(arena, eventfd):
    event = ctypes.c_void_p()
    create = lib.ANeuralNetworksEvent_createFromSyncFenceFd
    assert create(-1, ctypes.byref(event)) == BAD_DATA
    assert create(0, ctypes.byref(event)) == BAD_DATA
    assert create(1, None) == UNEXPECTED_NULL
    fence = fence_event(arena, eventfd)
    fd = ctypes.c_int(-7)
    assert lib.ANeuralNetworksEvent_getSyncFenceFd(fence, ctypes.byref(fd)) == NO_ERROR
    assert fd.value > 0 and fd.value != eventfd
    os.close(fd.value)  # the caller owns the duplicate


def test_get_sync_fence_fd(arena):
    fd = ctypes.c_int(7)
    assert lib.ANeuralNetworksEvent_getSyncFenceFd(None, ctypes.byref(fd)) == UNEXPECTED_NULL
    assert fd.value == -1
    execution, _ = arena.add_execution()
    code, event = arena.start(execution)
    assert code == NO_ERROR
    assert lib.ANeuralNetworksEvent_getSyncFenceFd(event, None) == UNEXPECTED_NULL
    fd.value = 7
    # An event that is not backed by a sync fence has none to give.
    assert lib.ANeuralNetworksEvent_getSyncFenceFd(event, ctypes.byref(fd)) == BAD_DATA
    assert fd.value == -1


def test_wait_on_a_fence(arena, eventfd):
    fence = fence_event(arena, eventfd)
    start = time.monotonic()
    thread = signal_later(eventfd, 0.2)
    assert lib.ANeuralNetworksEvent_wait(fence) == NO_ERROR
    assert time.monotonic() - start >= 0.15
    thread.join()


def test_compute_with_fence_dependency(arena, eventfd):
    execution, out = arena.add_execution()
    fence = fence_event(arena, eventfd)
    start = time.monotonic()
    thread = signal_later(eventfd, 0.2)
    code, event = arena.start_with_dependencies(execution, [fence])
    thread.join()
    assert code == NO_ERROR
    assert time.monotonic() - start >= 0.15, "the execution did not wait for its fence"
    assert lib.ANeuralNetworksEvent_wait(event) == NO_ERROR
    np.testing.assert_array_equal(out, [4, 6])
    # A fenced execution's event is backed by a sync fence (an eventfd), signalled by now.
    fd = ctypes.c_int()
    assert lib.ANeuralNetworksEvent_getSyncFenceFd(event, ctypes.byref(fd)) == NO_ERROR
    try:
        assert readable(fd.value, 0)
    finally:
        os.close(fd.value)


def readable(fd: int, timeout_s: float) -> bool:
    ready, _, _ = select.select([fd], [], [], timeout_s)
    return bool(ready)


def fence_of(event) -> int:
    fd = ctypes.c_int(-1)
    assert lib.ANeuralNetworksEvent_getSyncFenceFd(event, ctypes.byref(fd)) == NO_ERROR
    assert fd.value > 0
    return fd.value


def test_fenced_execution_fence_signals_when_the_execution_finishes(arena, eventfd):
    execution, out = arena.add_execution()
    code, event = arena.start_with_dependencies(execution, [fence_event(arena, eventfd)])
    # The execution waits (on its worker) for its input fence; start returned at once.
    assert code == NO_ERROR
    fd = fence_of(event)
    try:
        assert not readable(fd, 0.1), "the fence signalled before the execution ran"
        np.testing.assert_array_equal(out, [0, 0])
        os.eventfd_write(eventfd, 1)
        assert readable(fd, 5.0)
        assert lib.ANeuralNetworksEvent_wait(event) == NO_ERROR
        np.testing.assert_array_equal(out, [4, 6])
        # The fence can stand for the execution in another process or API: as a dependency.
        second, second_out = arena.add_execution()
        code, second_event = arena.start_with_dependencies(second, [fence_event(arena, fd)])
        assert code == NO_ERROR
        assert lib.ANeuralNetworksEvent_wait(second_event) == NO_ERROR
        np.testing.assert_array_equal(second_out, [4, 6])
    finally:
        os.close(fd)


def test_fenced_duration_is_a_deadline_reported_by_wait(arena):
    # A 1 ns duration on a single-device compilation: the modelled run misses it. The start
    # succeeds; the fence still signals (the execution completed) and Event_wait reports the error.
    single = arena.compilation(arena.binary_model(), devices()[:1])
    execution, _ = arena.add_execution(compilation=single)
    code, event = arena.start_with_dependencies(execution, duration=1)
    assert code == NO_ERROR
    assert lib.ANeuralNetworksEvent_wait(event) == ResultCode.MISSED_DEADLINE_TRANSIENT
    fd = fence_of(event)
    try:
        assert readable(fd, 0)
    finally:
        os.close(fd)
    # A fenced execution that depends on the failed one fails too (its fence stands for an error).
    second, second_out = arena.add_execution()
    code, second_event = arena.start_with_dependencies(second, [event])
    assert code == NO_ERROR
    assert lib.ANeuralNetworksEvent_wait(second_event) == ResultCode.OP_FAILED
    np.testing.assert_array_equal(second_out, [0, 0])


def test_compute_with_pipe_dependency(arena):
    read_end, write_end = os.pipe()
    try:
        fence = fence_event(arena, read_end)
        os.write(write_end, b"x")
        execution, out = arena.add_execution()
        code, event = arena.start_with_dependencies(execution, [fence])
        assert code == NO_ERROR
        assert lib.ANeuralNetworksEvent_wait(event) == NO_ERROR
        np.testing.assert_array_equal(out, [4, 6])
    finally:
        os.close(read_end)
        os.close(write_end)


def test_chained_dependencies(arena):
    # execution 2 waits for execution 1's event (not a fence: waited for by the runtime).
    first, first_out = arena.add_execution()
    code, first_event = arena.start(first)
    assert code == NO_ERROR
    second, second_out = arena.add_execution()
    code, second_event = arena.start_with_dependencies(second, [first_event])
    assert code == NO_ERROR
    third, third_out = arena.add_execution()
    code, third_event = arena.start_with_dependencies(third, [first_event, second_event])
    assert code == NO_ERROR
    assert lib.ANeuralNetworksEvent_wait(third_event) == NO_ERROR
    for out in (first_out, second_out, third_out):
        np.testing.assert_array_equal(out, [4, 6])


def test_fenced_execution_null_arguments(arena):
    execution, _ = arena.add_execution()
    code, event1 = arena.start_with_dependencies(execution)
    assert code == NO_ERROR
    second, _ = arena.add_execution()
    event2 = ctypes.c_void_p()
    start = lib.ANeuralNetworksExecution_startComputeWithDependencies
    assert start(None, handle_array([event1]), 1, 0, ctypes.byref(event2)) == UNEXPECTED_NULL
    assert start(second, None, 1, 0, ctypes.byref(event2)) == UNEXPECTED_NULL
    assert start(second, handle_array([event1]), 1, 0, None) == UNEXPECTED_NULL
    assert start(second, handle_array([event1, None]), 2, 0, ctypes.byref(event2)) == (
        UNEXPECTED_NULL
    )
    assert event2.value is None


def test_fenced_duration_needs_a_single_device(arena):
    execution, _ = arena.add_execution()
    code, event = arena.start_with_dependencies(execution, duration=1_000_000)
    assert (code, event.value) == (BAD_DATA, None)
    # The failed start completed the execution.
    assert arena.start_with_dependencies(execution)[0] == BAD_STATE
    single = arena.compilation(arena.binary_model(), devices()[:1])
    execution, out = arena.add_execution(compilation=single)
    code, event = arena.start_with_dependencies(execution, duration=1_000_000_000)
    assert code == NO_ERROR
    assert lib.ANeuralNetworksEvent_wait(event) == NO_ERROR
    np.testing.assert_array_equal(out, [4, 6])


def test_fenced_execution_needs_specified_outputs(arena):
    # Fenced executions do not support dynamic output shapes (the model's declaration counts).
    model = arena.binary_model(out_shape=(0,))
    execution, _ = arena.add_execution(model)
    code, event = arena.start_with_dependencies(execution)
    assert (code, event.value) == (BAD_DATA, None)
