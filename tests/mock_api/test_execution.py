# SPDX-License-Identifier: Apache-2.0
"""ANeuralNetworksExecution_*: arguments, the computation state machine, bursts, timing and
timeouts (TestValidation.cpp ValidationTestExecution, ExecutionUsability, ExecutionTiming)."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest
from mock_nnapi.constants import DurationCode, OperandCode, OperationCode

from .nn import (
    BAD_DATA,
    BAD_STATE,
    F32,
    NO_ERROR,
    OP_FAILED,
    UINT64_MAX,
    UNEXPECTED_NULL,
    devices,
    floats,
    lib,
    operand_type,
    ptr,
    rank_and_dims,
    raw_type,
)

INVALID_TYPE_1 = raw_type(F32, 1, with_pointer=False)  # dimensionCount without dimensions
INVALID_TYPE_2 = raw_type(F32, 0, with_pointer=True)  # dimensions without dimensionCount


@pytest.mark.parametrize("direction", ["Input", "Output"])
def test_set_argument_from_pointer(arena, direction):
    execution = arena.execution(arena.compilation(arena.binary_model()))
    function = getattr(lib, f"ANeuralNetworksExecution_set{direction}")
    buffer = arena.keep(np.zeros(5, np.float32))
    assert function(None, 0, None, ptr(buffer), 4) == UNEXPECTED_NULL
    assert function(execution, 0, None, None, 4) == UNEXPECTED_NULL
    assert function(execution, 0, None, ptr(buffer), 20) == BAD_DATA  # not the operand's size
    assert function(execution, 0, None, ptr(buffer), 4) == BAD_DATA
    assert function(execution, 999, None, ptr(buffer), 4) == BAD_DATA
    assert function(execution, -1, None, ptr(buffer), 4) == BAD_DATA
    assert function(execution, 0, ctypes.byref(INVALID_TYPE_1), ptr(buffer), 4) == BAD_DATA
    assert function(execution, 0, ctypes.byref(INVALID_TYPE_2), ptr(buffer), 4) == BAD_DATA
    assert function(execution, 0, None, ptr(buffer), 0) == BAD_DATA  # a buffer needs a length
    assert function(execution, 0, None, ptr(buffer), 8) == NO_ERROR
    assert function(execution, 0, None, ptr(buffer), 8) == BAD_STATE  # cannot do this twice
    memory, _ = arena.fd_memory(20)
    from_memory = getattr(lib, f"ANeuralNetworksExecution_set{direction}FromMemory")
    assert from_memory(execution, 0, None, memory, 0, 8) == BAD_STATE


@pytest.mark.parametrize("direction", ["Input", "Output"])
def test_set_argument_from_memory(arena, direction):
    execution = arena.execution(arena.compilation(arena.binary_model()))
    function = getattr(lib, f"ANeuralNetworksExecution_set{direction}FromMemory")
    memory, _ = arena.fd_memory(20)
    assert function(None, 0, None, memory, 0, 4) == UNEXPECTED_NULL
    assert function(execution, 0, None, None, 0, 4) == UNEXPECTED_NULL
    assert function(execution, 999, None, memory, 0, 4) == BAD_DATA
    assert function(execution, -1, None, memory, 0, 4) == BAD_DATA
    assert function(execution, 0, None, memory, 0, 20) == BAD_DATA  # not the operand's size
    assert function(execution, 0, None, memory, 21, 4) == BAD_DATA  # offset past the end
    assert function(execution, 0, None, memory, 17, 4) == BAD_DATA  # region past the end
    assert function(execution, 0, None, memory, 0, 0) == BAD_DATA  # size cannot be implied
    assert function(execution, 0, ctypes.byref(INVALID_TYPE_1), memory, 0, 8) == BAD_DATA
    assert function(execution, 0, ctypes.byref(INVALID_TYPE_2), memory, 0, 8) == BAD_DATA
    assert function(execution, 0, None, memory, 0, 8) == NO_ERROR
    assert function(execution, 0, None, memory, 0, 8) == BAD_STATE
    pointer = getattr(lib, f"ANeuralNetworksExecution_set{direction}")
    buffer = arena.keep(np.zeros(2, np.float32))
    assert pointer(execution, 0, None, ptr(buffer), 8) == BAD_STATE


def test_memory_protection_is_checked(arena):
    execution = arena.execution(arena.compilation(arena.binary_model()))
    read_only, _ = arena.fd_memory(8, protect=1)
    write_only, _ = arena.fd_memory(8, protect=2)
    assert lib.ANeuralNetworksExecution_setOutputFromMemory(
        execution, 0, None, read_only, 0, 8
    ) == (BAD_DATA)
    assert lib.ANeuralNetworksExecution_setInputFromMemory(
        execution, 0, None, write_only, 0, 8
    ) == (BAD_DATA)


def test_types_given_to_set_input(arena):
    execution = arena.execution(arena.compilation(arena.binary_model()))
    buffer = arena.keep(np.zeros(2, np.float32))
    set_input = lib.ANeuralNetworksExecution_setInput
    same = operand_type(F32, [2])
    other_size = operand_type(F32, [3])
    other_rank = operand_type(F32, [2, 1])
    unknown = operand_type(F32, [0])
    assert set_input(execution, 0, ctypes.byref(other_size), ptr(buffer), 8) == BAD_DATA
    assert set_input(execution, 0, ctypes.byref(other_rank), ptr(buffer), 8) == BAD_DATA
    assert set_input(execution, 0, ctypes.byref(unknown), ptr(buffer), 8) == BAD_DATA
    assert set_input(execution, 0, ctypes.byref(same), ptr(buffer), 8) == NO_ERROR
    # Android never compares the type code, scale or zero point with the model's operand (the
    # NDK says they "must be the same"): such a type is accepted and the model's is used.
    other_code = operand_type(OperandCode.TENSOR_INT32, [2])
    assert set_input(execution, 1, ctypes.byref(other_code), ptr(buffer), 8) == NO_ERROR


def test_unspecified_input_dimensions(arena):
    model = arena.binary_model(shape=(0,), out_shape=(0,))
    execution = arena.execution(arena.compilation(model))
    a = arena.keep(np.array([1, 2, 3], np.float32))
    set_input = lib.ANeuralNetworksExecution_setInput
    # An input with unknown dimensions needs a type that fills them in.
    assert set_input(execution, 0, None, ptr(a), 12) == BAD_DATA
    full = operand_type(F32, [3])
    assert set_input(execution, 0, ctypes.byref(full), ptr(a), 12) == NO_ERROR
    assert set_input(execution, 1, ctypes.byref(full), ptr(a), 8) == BAD_DATA  # wrong length
    assert set_input(execution, 1, ctypes.byref(full), ptr(a), 12) == NO_ERROR
    act = arena.keep(np.zeros(1, np.int32))
    assert set_input(execution, 2, None, ptr(act), 4) == NO_ERROR
    out = arena.keep(np.zeros(3, np.float32))
    assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(out), 12) == NO_ERROR
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    np.testing.assert_array_equal(out, [2, 4, 6])


def test_omitted_arguments(arena):
    execution = arena.execution(arena.compilation(arena.binary_model()))
    # (NULL, 0) omits an optional input or output. A type given with it may leave dimensions
    # unknown, but still may not contradict the model's.
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, None, 0) == NO_ERROR
    unknown = operand_type(F32, [0])
    assert lib.ANeuralNetworksExecution_setInput(execution, 1, ctypes.byref(unknown), None, 0) == (
        BAD_DATA
    )
    same = operand_type(F32, [2])
    assert lib.ANeuralNetworksExecution_setInput(execution, 1, ctypes.byref(same), None, 0) == 0
    assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, None, 0) == NO_ERROR


def test_padding(arena):
    compilation = arena.compilation(arena.binary_model())
    a = arena.keep(np.array([1, 2, 0, 0], np.float32))  # 8 bytes of value + 8 of padding
    set_input = lib.ANeuralNetworksExecution_setInput
    plain = arena.execution(compilation)
    assert set_input(plain, 0, None, ptr(a), 16) == BAD_DATA  # padding not enabled
    assert lib.ANeuralNetworksExecution_enableInputAndOutputPadding(plain, True) == BAD_STATE
    padded = arena.execution(compilation)
    assert lib.ANeuralNetworksExecution_enableInputAndOutputPadding(None, True) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksExecution_enableInputAndOutputPadding(padded, True) == NO_ERROR
    assert set_input(padded, 0, None, ptr(a), 4) == BAD_DATA  # smaller than the value
    assert set_input(padded, 0, None, ptr(a), 16) == NO_ERROR
    assert set_input(padded, 1, None, ptr(a), 12) == NO_ERROR
    act = arena.keep(np.zeros(1, np.int32))
    assert set_input(padded, 2, None, ptr(act), 4) == NO_ERROR
    out = arena.keep(np.full(4, -1, np.float32))
    assert lib.ANeuralNetworksExecution_setOutput(padded, 0, None, ptr(out), 16) == NO_ERROR
    assert lib.ANeuralNetworksExecution_compute(padded) == NO_ERROR
    np.testing.assert_array_equal(out[:2], [2, 4])
    assert lib.ANeuralNetworksExecution_enableInputAndOutputPadding(padded, False) == BAD_STATE


@pytest.mark.parametrize("mode", ["compute", "start", "fenced", "burst"])
def test_unset_argument_fails_the_computation(arena, mode):
    compilation = arena.compilation(arena.binary_model())
    execution = arena.execution(compilation)
    buffer = arena.keep(np.zeros(2, np.float32))
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(buffer), 8) == NO_ERROR
    if mode == "compute":
        code = lib.ANeuralNetworksExecution_compute(execution)
    elif mode == "start":
        code, event = arena.start(execution)
        assert event.value is None
    elif mode == "fenced":
        code, event = arena.start_with_dependencies(execution)
        assert event.value is None
    else:
        code = lib.ANeuralNetworksExecution_burstCompute(execution, arena.burst(compilation))
    assert code == BAD_DATA
    # Like Android, the failed start completed the execution.
    assert lib.ANeuralNetworksExecution_compute(execution) == BAD_STATE
    assert lib.ANeuralNetworksExecution_setInput(execution, 1, None, ptr(buffer), 8) == BAD_STATE
    assert rank_and_dims(execution)[0] == BAD_STATE


def test_compute_results_of_each_operation(arena):
    expected = {
        OperationCode.ADD: [4, 6],
        OperationCode.MUL: [3, 8],
        OperationCode.SUB: [-2, -2],
        OperationCode.DIV: [1 / 3, 0.5],
    }
    for operation, values in expected.items():
        execution, out = arena.add_execution(arena.binary_model(operation))
        assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
        np.testing.assert_allclose(out, values, rtol=1e-6)


def test_compute_null():
    assert lib.ANeuralNetworksExecution_compute(None) == UNEXPECTED_NULL
    lib.ANeuralNetworksExecution_free(None)


def too_late_checks(arena, compilation, execution, memory):
    """TestValidation's testTooLate: everything that needs an execution that has not started."""
    in0 = arena.keep(np.zeros(2, np.float32))
    assert lib.ANeuralNetworksExecution_setLoopTimeout(execution, 1_000_000_000) == BAD_STATE
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(in0), 8) == BAD_STATE
    assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(in0), 8) == BAD_STATE
    assert lib.ANeuralNetworksExecution_setInputFromMemory(execution, 0, None, memory, 0, 8) == (
        BAD_STATE
    )
    assert lib.ANeuralNetworksExecution_setOutputFromMemory(execution, 0, None, memory, 0, 8) == (
        BAD_STATE
    )
    assert lib.ANeuralNetworksExecution_setReusable(execution, True) == BAD_STATE
    assert lib.ANeuralNetworksExecution_enableInputAndOutputPadding(execution, True) == BAD_STATE
    assert arena.start(execution)[0] == BAD_STATE
    assert lib.ANeuralNetworksExecution_compute(execution) == BAD_STATE
    burst = arena.burst(compilation)
    assert lib.ANeuralNetworksExecution_burstCompute(execution, burst) == BAD_STATE
    arena.release(burst)
    assert arena.start_with_dependencies(execution)[0] == BAD_STATE


@pytest.mark.parametrize("mode", ["async", "sync", "burst", "fenced"])
def test_execution_usability(arena, mode):
    compilation = arena.compilation(arena.binary_model())
    execution, out = arena.add_execution(compilation=compilation)
    memory, _ = arena.fd_memory(8)
    if mode == "async":
        code, event = arena.start(execution)
        assert code == NO_ERROR
        too_late_checks(arena, compilation, execution, memory)
        assert lib.ANeuralNetworksEvent_wait(event) == NO_ERROR
    elif mode == "sync":
        assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    elif mode == "burst":
        burst = arena.burst(compilation)
        assert lib.ANeuralNetworksExecution_burstCompute(execution, burst) == NO_ERROR
    else:
        code, event = arena.start_with_dependencies(execution)
        assert code == NO_ERROR
        too_late_checks(arena, compilation, execution, memory)
        assert lib.ANeuralNetworksEvent_wait(event) == NO_ERROR
    too_late_checks(arena, compilation, execution, memory)
    np.testing.assert_array_equal(out, [4, 6])


@pytest.mark.parametrize("mode", ["sync", "async", "burst"])
def test_reusable_execution(arena, mode):
    compilation = arena.compilation(arena.binary_model())
    execution = arena.execution(compilation)
    assert lib.ANeuralNetworksExecution_setReusable(None, True) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksExecution_setReusable(execution, True) == NO_ERROR
    a = arena.keep(np.array([1, 2], np.float32))
    act = arena.keep(np.zeros(1, np.int32))
    out = arena.keep(np.zeros(2, np.float32))
    set_input = lib.ANeuralNetworksExecution_setInput
    assert set_input(execution, 0, None, ptr(a), 8) == NO_ERROR
    assert set_input(execution, 1, None, ptr(a), 8) == NO_ERROR
    assert set_input(execution, 2, None, ptr(act), 4) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(out), 8) == NO_ERROR
    burst = arena.burst(compilation)
    for scale in (1, 2, 3):
        a[:] = [scale, 2 * scale]
        if mode == "sync":
            assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
        elif mode == "burst":
            assert lib.ANeuralNetworksExecution_burstCompute(execution, burst) == NO_ERROR
        else:
            code, event = arena.start(execution)
            assert code == NO_ERROR
            assert lib.ANeuralNetworksEvent_wait(event) == NO_ERROR
            arena.release(event)
        np.testing.assert_array_equal(out, [2 * scale, 4 * scale])
    # Still no changes to the arguments once computed.
    assert set_input(execution, 0, None, ptr(a), 8) == BAD_STATE


def test_burst(arena):
    compilation = arena.compilation(arena.binary_model())
    execution, out = arena.add_execution(compilation=compilation)
    burst = arena.burst(compilation)
    assert lib.ANeuralNetworksExecution_burstCompute(execution, None) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksExecution_burstCompute(None, burst) == UNEXPECTED_NULL
    other = arena.compilation(arena.binary_model())
    other_execution, _ = arena.add_execution(compilation=other)
    assert lib.ANeuralNetworksExecution_burstCompute(other_execution, burst) == BAD_DATA
    assert lib.ANeuralNetworksExecution_burstCompute(execution, burst) == NO_ERROR
    np.testing.assert_array_equal(out, [4, 6])
    # One burst serves many executions, one after the other.
    second, second_out = arena.add_execution(compilation=compilation)
    assert lib.ANeuralNetworksExecution_burstCompute(second, burst) == NO_ERROR
    np.testing.assert_array_equal(second_out, [4, 6])


def test_burst_compute_concurrent(arena):
    compilation = arena.compilation(arena.binary_model())
    burst = arena.burst(compilation)
    executions = [arena.add_execution(compilation=compilation)[0] for _ in range(8)]
    results = [None] * len(executions)

    def run(i):
        results[i] = lib.ANeuralNetworksExecution_burstCompute(executions[i], burst)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(executions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # A burst serves one execution at a time: the others may get BAD_STATE.
    assert set(results) <= {NO_ERROR, BAD_STATE}
    assert NO_ERROR in results


@pytest.mark.parametrize("free_memory_first", [True, False])
def test_free_burst_and_memory_in_either_order(arena, free_memory_first):
    compilation = arena.compilation(arena.binary_model())
    burst = arena.burst(compilation)
    memory, fd = arena.fd_memory(8)
    execution = arena.execution(compilation)
    a = arena.keep(np.array([1, 2], np.float32))
    act = arena.keep(np.zeros(1, np.int32))
    for i, value in enumerate((a, a, act)):
        assert (
            lib.ANeuralNetworksExecution_setInput(execution, i, None, ptr(value), value.nbytes) == 0
        )
    assert lib.ANeuralNetworksExecution_setOutputFromMemory(execution, 0, None, memory, 0, 8) == 0
    assert lib.ANeuralNetworksExecution_burstCompute(execution, burst) == NO_ERROR
    np.testing.assert_array_equal(floats(fd, 2), [2, 4])
    arena.release(execution)
    for handle in (memory, burst) if free_memory_first else (burst, memory):
        arena.release(handle)


def single_device_compilation(arena, model=None):
    return arena.compilation(model or arena.binary_model(), devices()[:1])


def run(arena, mode, compilation, execution):
    if mode == "sync":
        return lib.ANeuralNetworksExecution_compute(execution)
    if mode == "burst":
        return lib.ANeuralNetworksExecution_burstCompute(execution, arena.burst(compilation))
    code, event = (arena.start if mode == "async" else arena.start_with_dependencies)(execution)
    assert code == NO_ERROR
    return lib.ANeuralNetworksEvent_wait(event)


@pytest.mark.parametrize("mode", ["async", "sync", "burst", "fenced"])
def test_timing(arena, mode):
    compilation = single_device_compilation(arena)
    execution, _ = arena.add_execution(compilation=compilation)
    assert lib.ANeuralNetworksExecution_setMeasureTiming(None, True) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksExecution_setMeasureTiming(execution, False) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setMeasureTiming(execution, True) == NO_ERROR
    duration = ctypes.c_uint64()
    get = lib.ANeuralNetworksExecution_getDuration
    assert get(execution, DurationCode.ON_HARDWARE, ctypes.byref(duration)) == BAD_STATE
    assert get(execution, DurationCode.IN_DRIVER, ctypes.byref(duration)) == BAD_STATE
    assert run(arena, mode, compilation, execution) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setMeasureTiming(execution, True) == BAD_STATE
    assert lib.ANeuralNetworksExecution_setTimeout(execution, 1000) == BAD_STATE
    bogus = UINT64_MAX - 1
    measured = {}
    for code in (-1, *DurationCode, 4):
        for execution_arg in (None, execution):
            for with_duration in (False, True):
                duration.value = bogus
                result = get(execution_arg, code, ctypes.byref(duration) if with_duration else None)
                if execution_arg is None or not with_duration:
                    assert result == UNEXPECTED_NULL
                elif code not in set(DurationCode):
                    assert result == BAD_DATA
                else:
                    assert result == NO_ERROR
                    assert duration.value != bogus
                    measured[code] = duration.value
    assert measured[DurationCode.ON_HARDWARE] <= measured[DurationCode.IN_DRIVER] < UINT64_MAX


def test_duration_needs_measurement_and_success(arena):
    compilation = single_device_compilation(arena)
    duration = ctypes.c_uint64()
    unmeasured, _ = arena.add_execution(compilation=compilation)
    assert lib.ANeuralNetworksExecution_compute(unmeasured) == NO_ERROR
    code = lib.ANeuralNetworksExecution_getDuration(unmeasured, 0, ctypes.byref(duration))
    assert (code, duration.value) == (BAD_STATE, UINT64_MAX)
    failed = arena.execution(compilation)
    assert lib.ANeuralNetworksExecution_setMeasureTiming(failed, True) == NO_ERROR
    assert lib.ANeuralNetworksExecution_compute(failed) == BAD_DATA  # no arguments set
    code = lib.ANeuralNetworksExecution_getDuration(failed, 0, ctypes.byref(duration))
    assert (code, duration.value) == (BAD_STATE, UINT64_MAX)


def test_timing_and_timeouts_need_a_single_device(arena):
    model = arena.binary_model()
    all_devices = devices()
    cases = [
        (arena.compilation(model), BAD_DATA),  # Compilation_create: never
        (arena.compilation(model, all_devices), NO_ERROR if len(all_devices) == 1 else BAD_DATA),
        (arena.compilation(model, all_devices[:1]), NO_ERROR),
    ]
    assert lib.ANeuralNetworksExecution_setTimeout(None, 1) == UNEXPECTED_NULL
    for compilation, expected in cases:
        execution = arena.execution(compilation)
        assert lib.ANeuralNetworksExecution_setMeasureTiming(execution, False) == expected
        assert lib.ANeuralNetworksExecution_setMeasureTiming(execution, True) == expected
        assert lib.ANeuralNetworksExecution_setTimeout(execution, 1000) == expected


@pytest.mark.parametrize("mode", ["async", "sync", "burst", "fenced"])
@pytest.mark.parametrize("timeout", [1_000_000_000, UINT64_MAX])
def test_execution_timeout(arena, mode, timeout):
    compilation = single_device_compilation(arena)
    execution, out = arena.add_execution(compilation=compilation)
    assert lib.ANeuralNetworksExecution_setTimeout(execution, timeout) == NO_ERROR
    assert run(arena, mode, compilation, execution) == NO_ERROR
    np.testing.assert_array_equal(out, [4, 6])


def test_loop_timeout(arena):
    execution = arena.execution(arena.compilation(arena.binary_model()))
    assert lib.ANeuralNetworksExecution_setLoopTimeout(None, 1) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksExecution_setLoopTimeout(execution, 0) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setLoopTimeout(execution, UINT64_MAX) == NO_ERROR  # clamped


def test_output_rank_and_dimensions(arena):
    execution, _ = arena.add_execution()
    rank = ctypes.c_uint32()
    dims = (ctypes.c_uint32 * 4)()
    get_rank = lib.ANeuralNetworksExecution_getOutputOperandRank
    get_dims = lib.ANeuralNetworksExecution_getOutputOperandDimensions
    assert get_rank(execution, 0, ctypes.byref(rank)) == BAD_STATE  # not computed yet
    assert get_dims(execution, 0, dims) == BAD_STATE
    code, event = arena.start(execution)
    assert code == NO_ERROR and lib.ANeuralNetworksEvent_wait(event) == NO_ERROR
    assert get_rank(None, 0, ctypes.byref(rank)) == UNEXPECTED_NULL
    assert get_dims(None, 0, dims) == UNEXPECTED_NULL
    assert get_rank(execution, 0, None) == UNEXPECTED_NULL
    assert get_dims(execution, 0, None) == UNEXPECTED_NULL
    for index in (-1, 999):
        assert get_rank(execution, index, ctypes.byref(rank)) == BAD_DATA
        assert get_dims(execution, index, dims) == BAD_DATA
    assert get_rank(execution, 0, ctypes.byref(rank)) == NO_ERROR and rank.value == 1
    assert get_dims(execution, 0, dims) == NO_ERROR and dims[0] == 2


def test_contradicting_output_dimensions_fail_the_run(arena):
    model = arena.binary_model(out_shape=(0,))
    execution = arena.execution(arena.compilation(model))
    a = arena.keep(np.zeros(2, np.float32))
    act = arena.keep(np.zeros(1, np.int32))
    for i, value in enumerate((a, a, act)):
        assert (
            lib.ANeuralNetworksExecution_setInput(execution, i, None, ptr(value), value.nbytes) == 0
        )
    # setOutput may fill in unknown dimensions; a run producing others fails with OP_FAILED.
    wrong = operand_type(F32, [5])
    out = arena.keep(np.zeros(5, np.float32))
    assert (
        lib.ANeuralNetworksExecution_setOutput(execution, 0, ctypes.byref(wrong), ptr(out), 20)
        == NO_ERROR
    )
    assert lib.ANeuralNetworksExecution_compute(execution) == OP_FAILED
    assert rank_and_dims(execution)[0] == BAD_STATE


def test_execution_extension_attribute(arena):
    add = lib.ANeuralNetworksExecution_addExtensionAttribute
    name = b"com.example.extension"
    data = ctypes.c_int32(1)
    plain = arena.execution(arena.compilation(arena.binary_model()))
    single = arena.execution(single_device_compilation(arena))
    assert add(None, name, 0, ctypes.byref(data), 4) == UNEXPECTED_NULL
    assert add(plain, None, 0, ctypes.byref(data), 4) == UNEXPECTED_NULL
    assert add(plain, name, 0, ctypes.byref(data), 4) == BAD_DATA
    assert add(single, name, 0, ctypes.byref(data), 4) == BAD_DATA  # unknown extension


def test_constant_activation(arena):
    model = arena.binary_model(activation_input=False, activation=1)  # FUSED_RELU constant
    execution = arena.execution(arena.compilation(model))
    a = arena.keep(np.array([-5, 2], np.float32))
    out = arena.keep(np.zeros(2, np.float32))
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(a), 8) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setInput(execution, 1, None, ptr(a), 8) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setInput(execution, 2, None, ptr(a), 8) == BAD_DATA
    assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(out), 8) == NO_ERROR
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    np.testing.assert_array_equal(out, [0, 4])


def test_scalar_output_has_no_dimensions(arena):
    # RANK is the one operation with a scalar output (another engineer's kernel: skipped if the
    # mock does not implement it yet).
    model = arena.model()
    x = arena.add_operand(model, F32, [2, 3])
    out = arena.add_operand(model, OperandCode.INT32)
    code = lib.ANeuralNetworksModel_addOperation(
        model, OperationCode.RANK, 1, (ctypes.c_uint32 * 1)(x), 1, (ctypes.c_uint32 * 1)(out)
    )
    if code != NO_ERROR:
        pytest.skip("RANK is not implemented by this mock")
    ins, outs = (ctypes.c_uint32 * 1)(x), (ctypes.c_uint32 * 1)(out)
    assert lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 1, ins, 1, outs) == NO_ERROR
    assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR
    execution = arena.execution(arena.compilation(model))
    data = arena.keep(np.zeros(6, np.float32))
    rank = arena.keep(np.zeros(1, np.int32))
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(data), 24) == NO_ERROR
    assert lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(rank), 4) == NO_ERROR
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    assert rank[0] == 2
    rank_code, output_rank, _, dims_code = rank_and_dims(execution)
    assert (rank_code, output_rank, dims_code) == (NO_ERROR, 0, BAD_DATA)


def test_temporaries_are_freed_after_their_last_reader():
    """A chain of ADDs through 1 MiB temporaries holds about two of them at once (the one being
    read and the one being written), not one per operation, and computes the same values."""
    import mock_nnapi
    from mock_nnapi import control

    shape = (256, 1024)  # 1 MiB of float32
    steps = 12
    model = mock_nnapi.Model()
    x = model.add_operand(OperandCode.TENSOR_FLOAT32, shape)
    one = model.add_constant(OperandCode.TENSOR_FLOAT32, np.ones(shape, np.float32))
    current = x
    for _ in range(steps):
        out = model.add_operand(OperandCode.TENSOR_FLOAT32, shape)
        model.add_operation(
            OperationCode.ADD, [current, one, model.add_scalar(OperandCode.INT32, 0)], [out]
        )
        current = out
    model.identify_inputs_and_outputs([x], [current])
    model.finish()
    compilation = mock_nnapi.Compilation(model).finish()
    value = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    control.reset_counters()
    for _ in range(2):  # a second run reuses nothing stale
        (result,) = mock_nnapi.Execution(compilation).compute([value])
        expected = value.copy()
        for _ in range(steps):
            expected += np.float32(1)
        np.testing.assert_array_equal(result, expected)
    peak = control.counter("temporary_bytes_peak")
    temporary = int(np.prod(shape)) * 4
    assert peak == 2 * temporary, f"{peak} bytes of temporaries held at once"


def test_constant_weights_are_converted_once_per_model():
    """A float16 FULLY_CONNECTED's constant weights and bias are converted to float once, on the
    model's first run, and kept for later runs and other compilations of the model (the
    DerivedConstants store); weights fed as a model input are converted on every run. Both give
    the same values."""
    import mock_nnapi
    from mock_nnapi import control

    rng = np.random.default_rng(1)
    x_value = rng.standard_normal((3, 8)).astype(np.float16)
    w_value = rng.standard_normal((5, 8)).astype(np.float16)
    b_value = rng.standard_normal(5).astype(np.float16)

    def build(weights_constant: bool):
        model = mock_nnapi.Model()
        x = model.add_operand(OperandCode.TENSOR_FLOAT16, x_value.shape)
        if weights_constant:
            w = model.add_constant(OperandCode.TENSOR_FLOAT16, w_value)
        else:
            w = model.add_operand(OperandCode.TENSOR_FLOAT16, w_value.shape)
        b = model.add_constant(OperandCode.TENSOR_FLOAT16, b_value)
        out = model.add_operand(OperandCode.TENSOR_FLOAT16, (3, 5))
        activation = model.add_scalar(OperandCode.INT32, 0)
        model.add_operation(OperationCode.FULLY_CONNECTED, [x, w, b, activation], [out])
        model.identify_inputs_and_outputs([x] if weights_constant else [x, w], [out])
        model.finish()
        return model

    constant_model = build(True)
    control.reset_counters()
    results = []
    for _ in range(2):  # two compilations of one model, two runs each
        compilation = mock_nnapi.Compilation(constant_model).finish()
        for _ in range(2):
            results.append(mock_nnapi.Execution(compilation).compute([x_value])[0])
    assert control.counter("derived_constants_built") == 2  # the weights and the bias, once
    input_model = build(False)
    compilation = mock_nnapi.Compilation(input_model).finish()
    for _ in range(2):
        results.append(mock_nnapi.Execution(compilation).compute([x_value, w_value])[0])
    assert control.counter("derived_constants_built") == 3  # only the second model's bias
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])
    expected = x_value.astype(np.float32) @ w_value.astype(np.float32).T + b_value
    np.testing.assert_allclose(results[0].astype(np.float32), expected, rtol=2e-3, atol=2e-3)
