# SPDX-License-Identifier: Apache-2.0
"""Compilation_create assigns each operation the way Android's ExecutionPlan does."""

from __future__ import annotations

import pytest

import mock_nnapi
from mock_nnapi import OperandCode, OperationCode, PreferenceCode, ResultCode, control

from .helpers import (
    binary_model,
    device_entry,
    devices_by_name,
    expect_error,
    operation_devices,
    profile_with,
    run,
)

F32 = OperandCode.TENSOR_FLOAT32
F16 = OperandCode.TENSOR_FLOAT16
Q8 = OperandCode.TENSOR_QUANT8_ASYMM
FAST = PreferenceCode.FAST_SINGLE_ANSWER
LOW_POWER = PreferenceCode.LOW_POWER
SUSTAINED = PreferenceCode.SUSTAINED_SPEED


@pytest.fixture
def test_phone(write_profile):
    """npu: ADD/MUL in float16/int8 (float32 only relaxed); gpu: float, everything but MUL;
    cpu (the runtime CPU): everything but MUL. Every device has 1 GB/s, 1 us per operation and
    1 pJ per byte; Android's figures follow from the compute-bound reference convolution of the
    derived figures (docs/device-profiles.md): speed from ``throughput`` (GOP/s), power from
    ``energy.pj_per_op``, against the cpu's 1 GOP/s and 1 pJ/op."""
    npu = device_entry(
        "npu",
        "ACCELERATOR",
        support={
            "operations": ["ADD", "MUL"],
            "data_types": ["TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM"],
            "relaxed_float32": True,
            "max_rank": 4,
        },
        throughput={"float32": 0.2, "relaxed_float32": 8, "float16": 8, "quant8": 10},
        energy={
            "pj_per_op": {"float32": 5, "relaxed_float32": 0.2, "float16": 0.1, "quant8": 0.05},
            "pj_per_byte": 1,
        },
    )
    gpu = device_entry(
        "gpu",
        "GPU",
        support={
            "operations": "all",
            "exclude_operations": ["MUL"],
            "data_types": ["TENSOR_FLOAT32", "TENSOR_FLOAT16"],
            "max_rank": 4,
        },
        throughput={"float32": 2, "float16": 4, "quant8": 0.5},
        energy={"pj_per_op": {"float32": 2, "float16": 0.05, "quant8": 3}, "pj_per_byte": 1},
    )
    cpu = device_entry(
        "cpu",
        "CPU",
        support={
            "operations": "all",
            "exclude_operations": ["MUL"],
            "data_types": "all",
            "max_rank": 6,
        },
    )
    control.set_profile(write_profile(profile_with([npu, gpu, cpu])))


def _assignment(model, preference=None, devices=None) -> list[tuple[str, str]]:
    run(model, devices, preference)
    trace = control.last_execution_trace()
    assert trace is not None
    return operation_devices(trace)


def test_an_operation_only_the_npu_supports_goes_to_the_npu(test_phone):
    model = binary_model([OperationCode.MUL], [4], F16)
    for preference in (FAST, LOW_POWER, SUSTAINED):
        assert _assignment(model, preference) == [("MUL", "npu")]


@pytest.mark.parametrize(
    ("code", "preference", "device"),
    [
        (F32, FAST, "gpu"),  # gpu 2 GOP/s > cpu 1: exec_time about 0.5
        (F32, SUSTAINED, "gpu"),
        (F32, LOW_POWER, "cpu"),  # cpu 1 pJ/op < gpu 2: the gpu's power_usage about 2
        (F16, FAST, "npu"),  # npu 8 GOP/s > gpu 4
        (F16, LOW_POWER, "gpu"),  # gpu 0.05 pJ/op < npu 0.1
        (Q8, FAST, "npu"),
        (Q8, LOW_POWER, "npu"),
    ],
)
def test_preference_picks_the_best_device(test_phone, code, preference, device):
    model = binary_model([OperationCode.ADD], [4], code, scale=0.5 if code == Q8 else 0.0)
    assert _assignment(model, preference) == [("ADD", device)]


def test_relaxed_float32_reaches_the_npu(test_phone):
    plain = binary_model([OperationCode.MUL, OperationCode.ADD], [4], F32)
    relaxed = binary_model([OperationCode.MUL, OperationCode.ADD], [4], F32, relaxed=True)
    devices = devices_by_name()
    assert mock_nnapi.supported_operations(plain, [devices["npu"]]) == [False, False]
    assert mock_nnapi.supported_operations(relaxed, [devices["npu"]]) == [True, True]
    # Relaxed: the npu's relaxed_float32 throughput (8 GOP/s) beats the gpu's (its float32 2).
    assert _assignment(relaxed, FAST) == [("MUL", "npu"), ("ADD", "npu")]


def test_operations_no_device_supports_run_on_the_cpu_fallback(test_phone):
    model = binary_model([OperationCode.MUL, OperationCode.ADD], [4], F32)
    run(model, None, FAST)
    trace = control.last_execution_trace()
    operations = [e for e in trace["events"] if e["kind"] == "operation"]
    assert [(e["name"], e["cpu_fallback"]) for e in operations] == [
        ("MUL", True),
        ("ADD", False),
    ]
    # The runtime CPU device models the fallback.
    assert operations[0]["device"] == "cpu"
    assert operations[1]["device"] == "gpu"


def test_ties_go_to_the_runtime_cpu(write_profile):
    # Same cost-model parameters as the CPU, so the same derived figures (1.0 / 1.0).
    twin = device_entry("twin", "ACCELERATOR")
    control.set_profile(write_profile(profile_with([twin, device_entry("cpu", "CPU")])))
    model = binary_model([OperationCode.ADD], [4], F32)
    assert _assignment(model, FAST) == [("ADD", "cpu")]
    assert _assignment(model, LOW_POWER) == [("ADD", "cpu")]


def test_create_for_devices_uses_only_the_listed_devices(test_phone):
    devices = devices_by_name()
    model = binary_model([OperationCode.ADD], [4], F32)
    assert _assignment(model, FAST, [devices["npu"], devices["cpu"]]) == [("ADD", "cpu")]
    assert _assignment(model, FAST, [devices["cpu"], devices["gpu"]]) == [("ADD", "gpu")]


@pytest.mark.parametrize(
    ("code", "device_names"),
    [(F16, ["gpu"]), (F16, ["gpu", "cpu"]), (F32, ["npu"])],
)
def test_create_for_devices_fails_at_finish_when_no_listed_device_can_run(
    test_phone, code, device_names
):
    devices = devices_by_name()
    model = binary_model([OperationCode.MUL], [4], code)
    compilation = mock_nnapi.Compilation(model, [devices[name] for name in device_names])
    error = expect_error(ResultCode.BAD_DATA, compilation.finish)
    assert "no listed device supports operation 0 (MUL)" in str(error)


def test_supported_operations_per_device(test_phone):
    devices = devices_by_name()
    model = binary_model([OperationCode.MUL, OperationCode.ADD, OperationCode.SUB], [4], F16)
    support = {name: mock_nnapi.supported_operations(model, [d]) for name, d in devices.items()}
    assert support == {
        "npu": [True, True, False],
        "gpu": [False, True, True],
        "cpu": [False, True, True],
    }
    assert mock_nnapi.supported_operations(model, list(devices.values())) == [True] * 3


# The built-in phones' figures are derived from their cost-model parameters; each choice below
# is the device the cost model makes fastest (FAST, SUSTAINED) or least energy-hungry
# (LOW_POWER) among those supporting the type. Before the derivation the hand-written figures
# sent float16 to the Adreno GPU for FAST on the Snapdragon (GPU 4178 x 0.5 GFLOP/s modelled
# against the DSP's 7500 x 0.67) and kept float32 on the CPU for LOW_POWER (every GPU's
# 5-7 pJ/FLOP against the CPU's 25).
@pytest.mark.parametrize(
    ("profile", "code", "relaxed", "preference", "device"),
    [
        ("snapdragon-8-gen-2", F32, False, FAST, "qti-gpu"),  # the DSP takes float32 relaxed only
        ("snapdragon-8-gen-2", F32, False, LOW_POWER, "qti-gpu"),
        ("snapdragon-8-gen-2", F32, True, FAST, "qti-dsp"),
        ("snapdragon-8-gen-2", F32, True, LOW_POWER, "qti-dsp"),
        ("snapdragon-8-gen-2", F16, False, FAST, "qti-dsp"),
        ("snapdragon-8-gen-2", F16, False, LOW_POWER, "qti-dsp"),
        ("snapdragon-8-gen-2", Q8, False, FAST, "qti-dsp"),
        ("snapdragon-8-gen-2", Q8, False, LOW_POWER, "qti-dsp"),
        ("tensor-g2", Q8, False, FAST, "google-edgetpu"),
        ("tensor-g2", Q8, False, LOW_POWER, "google-edgetpu"),
        ("tensor-g2", F32, False, FAST, "google-armnn"),  # the Edge TPU is int8 only
        ("tensor-g2", F32, False, LOW_POWER, "google-armnn"),
        ("tensor-g2", F32, True, FAST, "google-armnn"),
        ("tensor-g2", F16, False, LOW_POWER, "google-armnn"),
        ("dimensity-9000", F16, False, FAST, "mtk-neuron"),
        ("dimensity-9000", F32, False, FAST, "mtk-gpu"),
        ("dimensity-9000", F32, False, LOW_POWER, "mtk-gpu"),
        ("dimensity-9000", F32, True, FAST, "mtk-neuron"),
        ("dimensity-9000", Q8, False, FAST, "mtk-neuron"),
        ("dimensity-9000", Q8, False, LOW_POWER, "mtk-neuron"),
    ],
)
def test_built_in_phones_assign_as_documented(profile, code, relaxed, preference, device):
    control.set_profile(profile)
    model = binary_model(
        [OperationCode.ADD], [1, 8, 8, 4], code, relaxed=relaxed, scale=0.5 if code == Q8 else 0.0
    )
    assert _assignment(model, preference) == [("ADD", device)]
