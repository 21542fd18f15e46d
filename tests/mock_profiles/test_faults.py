# SPDX-License-Identifier: Apache-2.0
"""Device faults: every kind, and MockNnapi_clearFaults restoring the devices."""

from __future__ import annotations

import pytest
from mock_nnapi.control import DeviceFault

import mock_nnapi
from mock_nnapi import OperandCode, OperationCode, PreferenceCode, ResultCode, control

from .helpers import (
    DURATION_ON_HARDWARE,
    MISSED_DEADLINE_PERSISTENT,
    MISSED_DEADLINE_TRANSIENT,
    RawExecution,
    binary_model,
    call,
    devices_by_name,
    expect_error,
    operation_devices,
    run,
)

F16 = OperandCode.TENSOR_FLOAT16
Q8S = OperandCode.TENSOR_QUANT8_ASYMM_SIGNED


@pytest.fixture
def snapdragon():
    control.set_profile("snapdragon-8-gen-2")
    return devices_by_name()


def test_hidden_device_disappears(snapdragon):
    control.inject_device_fault("qti-dsp", DeviceFault.HIDDEN)
    assert [d.name for d in mock_nnapi.devices()] == ["qti-gpu", "nnapi-reference"]
    model = binary_model([OperationCode.ADD], [4], F16)
    expect_error(ResultCode.BAD_DATA, mock_nnapi.Compilation, model, [snapdragon["qti-dsp"]])
    # LOW_POWER would pick the DSP for float16; without it the GPU wins.
    run(model, None, PreferenceCode.LOW_POWER)
    assert operation_devices(control.last_execution_trace()) == [("ADD", "qti-gpu")]
    control.clear_faults()
    assert [d.name for d in mock_nnapi.devices()] == ["qti-dsp", "qti-gpu", "nnapi-reference"]


def test_hidden_runtime_cpu_still_serves_the_cpu_fallback(snapdragon):
    control.inject_device_fault("nnapi-reference", DeviceFault.HIDDEN)
    model = binary_model([OperationCode.MAXIMUM], [2, 2, 2, 2, 2], OperandCode.TENSOR_FLOAT32)
    # Rank 5 exceeds the DSP's and the GPU's limit: the runtime's CPU fallback runs it.
    run(model)
    (event,) = [e for e in control.last_execution_trace()["events"] if e["kind"] == "operation"]
    assert event["cpu_fallback"] is True


def test_unavailable_device(snapdragon):
    control.inject_device_fault("qti-dsp", DeviceFault.UNAVAILABLE)
    assert call("ANeuralNetworksDevice_wait", snapdragon["qti-dsp"].handle) == (
        ResultCode.UNAVAILABLE_DEVICE
    )
    assert call("ANeuralNetworksDevice_wait", snapdragon["qti-gpu"].handle) == ResultCode.NO_ERROR
    model = binary_model([OperationCode.ADD], [4], F16)
    compilation = mock_nnapi.Compilation(model, [snapdragon["qti-dsp"]])
    error = expect_error(ResultCode.UNAVAILABLE_DEVICE, compilation.finish)
    assert "qti-dsp is unavailable" in str(error)
    # Compilation_create: Android falls back to the CPU for the whole model.
    run(model, None, PreferenceCode.LOW_POWER)
    trace = control.last_execution_trace()
    assert operation_devices(trace) == [("ADD", "nnapi-reference")]
    assert all(e["cpu_fallback"] for e in trace["events"] if e["kind"] == "operation")
    control.clear_faults()
    assert call("ANeuralNetworksDevice_wait", snapdragon["qti-dsp"].handle) == ResultCode.NO_ERROR
    run(model, None, PreferenceCode.LOW_POWER)
    assert operation_devices(control.last_execution_trace()) == [("ADD", "qti-dsp")]


def test_lower_feature_level(snapdragon):
    dsp = snapdragon["qti-dsp"]
    model = binary_model([OperationCode.ADD], [4], Q8S, scale=0.5)  # needs feature level 4
    assert mock_nnapi.supported_operations(model, [dsp]) == [True]
    control.inject_device_fault("qti-dsp", DeviceFault.FEATURE_LEVEL, 29)
    assert devices_by_name()["qti-dsp"].feature_level == 29
    assert mock_nnapi.supported_operations(model, [dsp]) == [False]
    run(model)
    assert operation_devices(control.last_execution_trace()) == [("ADD", "qti-gpu")]
    control.clear_faults()
    assert devices_by_name()["qti-dsp"].feature_level == 1000006
    assert mock_nnapi.supported_operations(model, [dsp]) == [True]


def test_execution_timeout_once(snapdragon):
    model = binary_model([OperationCode.ADD], [4], F16)
    compilation = mock_nnapi.Compilation(model, [snapdragon["qti-dsp"]]).finish()
    control.inject_device_fault(
        "qti-dsp", DeviceFault.EXECUTION_TIMEOUT, MISSED_DEADLINE_TRANSIENT, count=1
    )
    before = control.injected_fault_count()
    assert RawExecution(compilation).compute() == MISSED_DEADLINE_TRANSIENT
    assert control.injected_fault_count() == before + 1
    assert "missed its deadline" in mock_nnapi.api.last_error()
    assert control.last_execution_trace()["result"] == "MISSED_DEADLINE_TRANSIENT"
    assert RawExecution(compilation).compute() == ResultCode.NO_ERROR


def test_execution_timeout_always_until_cleared(snapdragon):
    model = binary_model([OperationCode.ADD], [4], F16)
    on_dsp = mock_nnapi.Compilation(model, [snapdragon["qti-dsp"]]).finish()
    on_gpu = mock_nnapi.Compilation(model, [snapdragon["qti-gpu"]]).finish()
    control.inject_device_fault(
        "qti-dsp", DeviceFault.EXECUTION_TIMEOUT, MISSED_DEADLINE_PERSISTENT
    )
    for _ in range(3):
        assert RawExecution(on_dsp).compute() == MISSED_DEADLINE_PERSISTENT
    assert RawExecution(on_gpu).compute() == ResultCode.NO_ERROR  # other devices unaffected
    control.clear_faults()
    assert RawExecution(on_dsp).compute() == ResultCode.NO_ERROR


def test_throttled_device_is_modelled_slower(snapdragon):
    model = binary_model([OperationCode.ADD], [1, 32, 32, 32], F16)
    compilation = mock_nnapi.Compilation(model, [snapdragon["qti-gpu"]]).finish()

    def on_hardware() -> int:
        execution = RawExecution(compilation).measure_timing()
        assert execution.compute() == ResultCode.NO_ERROR
        return execution.duration(DURATION_ON_HARDWARE)

    normal = on_hardware()
    with control.DeviceFaultInjection("qti-gpu", DeviceFault.THROTTLE, 50):
        assert on_hardware() == pytest.approx(2 * normal, abs=1)
    assert on_hardware() == normal


@pytest.mark.parametrize(
    ("device", "fault", "value", "message"),
    [
        ("npu-x", DeviceFault.HIDDEN, 0, 'has no device named "npu-x"'),
        ("qti-dsp", 99, 0, "unknown fault kind 99"),
        ("qti-dsp", DeviceFault.FEATURE_LEVEL, 12, "12 is not a FeatureLevelCode"),
        ("qti-dsp", DeviceFault.EXECUTION_TIMEOUT, 4, "MISSED_DEADLINE_TRANSIENT (10)"),
        ("qti-dsp", DeviceFault.THROTTLE, 0, "expected 1-100"),
    ],
)
def test_bad_fault_arguments(snapdragon, device, fault, value, message):
    error = expect_error(ResultCode.BAD_DATA, control.inject_device_fault, device, fault, value)
    assert message in str(error)


def test_clear_faults_restores_every_device(snapdragon):
    for fault, value in [
        (DeviceFault.HIDDEN, 0),
        (DeviceFault.UNAVAILABLE, 0),
        (DeviceFault.FEATURE_LEVEL, 27),
        (DeviceFault.EXECUTION_TIMEOUT, MISSED_DEADLINE_TRANSIENT),
        (DeviceFault.THROTTLE, 10),
    ]:
        control.inject_device_fault("qti-gpu", fault, value)
    assert "qti-gpu" not in devices_by_name()
    control.clear_faults()
    devices = devices_by_name()
    assert devices["qti-gpu"].feature_level == 1000006
    assert call("ANeuralNetworksDevice_wait", devices["qti-gpu"].handle) == ResultCode.NO_ERROR
    model = binary_model([OperationCode.ADD], [4], F16)
    assert RawExecution(mock_nnapi.Compilation(model, [devices["qti-gpu"]]).finish()).compute() == 0
