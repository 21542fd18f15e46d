# SPDX-License-Identifier: Apache-2.0
"""The on-chip term of the cost model (docs/cost-model.md, "On-chip memory"): a temporary tensor
produced and read within one execution step, of at most the device's on-chip capacity, is read
and written at the device's on-chip bandwidth instead of through DRAM. On a profile with round
numbers (1 GOP/s, 1 GB/s, an on-chip memory at 10 GB/s)."""

from __future__ import annotations

from typing import Any

import pytest
from mock_nnapi.cost_model import CostModel, RecordedExecution

from mock_nnapi import Model, OperandCode, control

from .helpers import conv_relu_add_chain, device_entry, profile_with, run

F32 = OperandCode.TENSOR_FLOAT32
TENSOR = 4 * 4 * 8 * 4  # bytes of one [1, 4, 4, 8] float32 tensor
WEIGHTS = 8 * 8 * 4 + 8 * 4  # the 1x1 convolution's filter and bias
ON_CHIP_GBPS = 10.0
TOTALS = ("modelled_total_us", "modelled_in_driver_us", "modelled_on_hardware_us")


def _profile(kib: float | None = None, fuse: bool = False, **extra_devices):
    fields: dict[str, Any] = {"fuse_elementwise": fuse}
    if kib is not None:
        fields["on_chip_memory"] = {"kib": kib, "bandwidth_gbps": ON_CHIP_GBPS}
    return profile_with([device_entry("cpu", "CPU", **fields)])


def _select(write_profile, profile) -> None:
    control.set_profile(write_profile(profile))


def _trace(model: Model, devices=None) -> tuple[list[dict], dict]:
    run(model, devices)
    trace = control.last_execution_trace()
    assert trace is not None
    return [e for e in trace["events"] if e["kind"] == "operation"], trace


def test_temporaries_under_the_capacity_are_costed_on_chip(write_profile):
    _select(write_profile, _profile())
    dram, dram_trace = _trace(conv_relu_add_chain())
    _select(write_profile, _profile(kib=1))  # 1024 bytes: each [1, 4, 4, 8] tensor fits
    (conv, relu, add), trace = _trace(conv_relu_add_chain())
    # t (conv -> relu) and u (relu -> add) stay within the step; x, y, z and the weights do not.
    assert conv["step_temporary_bytes"] == [TENSOR]  # writes t
    assert relu["step_temporary_bytes"] == [TENSOR, TENSOR]  # reads t, writes u
    assert add["step_temporary_bytes"] == [TENSOR]  # reads u
    for event, before in zip((conv, relu, add), dram, strict=True):
        assert event["bytes"] == before["bytes"]  # the traffic is the same, its rate is not
        assert event["on_chip_bytes"] == sum(event["step_temporary_bytes"])
        assert event["memory_us"] == pytest.approx((event["bytes"] - event["on_chip_bytes"]) / 1e3)
        assert event["on_chip_us"] == pytest.approx(event["on_chip_bytes"] / (ON_CHIP_GBPS * 1e3))
        memory = max(event["memory_us"] / event["memory_efficiency"], event["on_chip_us"])
        compute = event["compute_us"] / event["compute_efficiency"]
        assert event["busy_us"] == pytest.approx(max(compute, memory))
        assert event["bound"] == ("compute" if compute >= memory else "memory")
    # RELU's traffic is all on chip: 1024 B at 10 GB/s, below its 128 operations at 1 GOP/s.
    assert relu["memory_us"] == 0 and relu["busy_us"] == pytest.approx(0.128)
    assert dram[1]["busy_us"] == pytest.approx(1.024)
    # ADD reads y and writes z through DRAM, and u on chip at the same time.
    assert add["busy_us"] == pytest.approx(2 * TENSOR / 1e3)
    assert add["on_chip_us"] == pytest.approx(TENSOR / 1e4)
    saved = sum(d["busy_us"] - e["busy_us"] for d, e in zip(dram, (conv, relu, add), strict=True))
    assert saved > 0
    for key in TOTALS:
        assert trace[key] == pytest.approx(dram_trace[key] - saved)


def test_constants_model_inputs_and_outputs_stay_in_dram(write_profile):
    _select(write_profile, _profile(kib=1e6))  # room for everything
    (conv, _, add), _ = _trace(conv_relu_add_chain())
    assert conv["bytes"] == 2 * TENSOR + WEIGHTS
    assert conv["on_chip_bytes"] == TENSOR  # t only: not x, the filter or the bias
    assert add["bytes"] == 3 * TENSOR
    assert add["on_chip_bytes"] == TENSOR  # u only: not the model input y or output z


def test_temporaries_over_the_capacity_and_profiles_without_it_are_unchanged(write_profile):
    _select(write_profile, _profile())
    dram, dram_trace = _trace(conv_relu_add_chain())
    for event in dram:
        assert event["on_chip_bytes"] == 0 and event["on_chip_us"] == 0
        assert event["memory_us"] == event["bytes"] / 1e3
    _select(write_profile, _profile(kib=0.25))  # 256 bytes: no tensor fits
    small, small_trace = _trace(conv_relu_add_chain())
    assert [e["step_temporary_bytes"] for e in small] == [[TENSOR], [TENSOR, TENSOR], [TENSOR]]
    for event, before in zip(small, dram, strict=True):
        assert event["on_chip_bytes"] == 0
        for key in ("memory_us", "busy_us", "duration_us", "bound", "energy_uj"):
            assert event[key] == before[key], key  # exactly: no on-chip term at all
    for key in (*TOTALS, "modelled_energy_uj"):
        assert small_trace[key] == dram_trace[key]


def test_fused_tensors_are_neither_on_chip_nor_in_dram(write_profile):
    _select(write_profile, _profile(kib=1, fuse=True))
    (conv, relu, add), _ = _trace(conv_relu_add_chain())
    assert (relu["fused"], add["fused"]) == (True, True)
    # t and u never leave the fused kernel: no traffic of theirs is left to cost.
    assert [e["step_temporary_bytes"] for e in (conv, relu, add)] == [[], [], []]
    assert [e["on_chip_bytes"] for e in (conv, relu, add)] == [0, 0, 0]
    # With a second reader t cannot be fused; it still stays within the step, on chip.
    operations, _ = _trace(conv_relu_add_chain(second_reader=True))
    by_index = {e["operation"]: e for e in operations}
    assert not by_index[1]["fused"] and not by_index[3]["fused"]
    assert by_index[0]["step_temporary_bytes"] == [TENSOR]  # t written
    # The first RELU reads t, and writes u unless u is fused into the ADD after it.
    u = [] if by_index[2]["fused"] else [TENSOR]
    assert by_index[1]["step_temporary_bytes"] == [TENSOR, *u]
    assert by_index[3]["step_temporary_bytes"] == [TENSOR]  # t read (w is a model output)


def test_a_tensor_read_in_another_step_goes_through_dram(write_profile):
    npu = device_entry(
        "npu",
        "ACCELERATOR",
        throughput={"float32": 1000, "float16": 1000, "quant8": 1000},
        support={"operations": ["CONV_2D"], "data_types": "all", "max_rank": 6},
        on_chip_memory={"kib": 1e6, "bandwidth_gbps": ON_CHIP_GBPS},
    )
    cpu = device_entry("cpu", "CPU", on_chip_memory={"kib": 1e6, "bandwidth_gbps": ON_CHIP_GBPS})
    _select(write_profile, profile_with([npu, cpu]))
    (conv, relu, add), _ = _trace(conv_relu_add_chain())
    assert [e["device"] for e in (conv, relu, add)] == ["npu", "cpu", "cpu"]
    # t is written on the NPU and read on the CPU: it crosses steps (and memories).
    assert conv["step_temporary_bytes"] == [] and conv["on_chip_bytes"] == 0
    assert relu["step_temporary_bytes"] == [TENSOR]  # u, within the CPU's step
    assert add["step_temporary_bytes"] == [TENSOR]


def test_retiming_applies_the_capacity_and_rate_of_the_other_profile(write_profile):
    """What calibration relies on: a trace recorded with one capacity re-timed with another
    capacity or on-chip rate gives exactly what a run with those gives."""
    _select(write_profile, _profile(kib=1))
    _, recorded = _trace(conv_relu_add_chain())
    for kib, rate in ((0.25, ON_CHIP_GBPS), (1, 3.0), (None, ON_CHIP_GBPS)):
        other = _profile(kib=kib)
        if kib is not None:
            other["devices"][0]["on_chip_memory"]["bandwidth_gbps"] = rate
        _select(write_profile, other)
        _, again = _trace(conv_relu_add_chain())
        times = CostModel(other).retime(RecordedExecution(recorded))
        for total, key in zip(
            (times.total_us, times.in_driver_us, times.on_hardware_us), TOTALS, strict=True
        ):
            assert total == pytest.approx(again[key], rel=1e-9), (kib, rate, key)


def test_the_cost_of_one_operation_takes_its_on_chip_bytes():
    model = CostModel(_profile(kib=1))
    dram = model.operation("cpu", "elementwise", "float32", 0, 1000)
    on_chip = model.operation("cpu", "elementwise", "float32", 0, 1000, 600)
    assert dram.busy_us == pytest.approx(1.0)
    assert on_chip.memory_us == pytest.approx(0.4)
    assert on_chip.busy_us == pytest.approx(0.4)  # the DRAM side: 400 B at 1 GB/s
    slow = CostModel(_profile(kib=1)).operation("cpu", "elementwise", "float32", 0, 1000, 990)
    assert slow.busy_us == pytest.approx(990 / (ON_CHIP_GBPS * 1e3))  # the on-chip side
    # A device without on-chip memory moves every byte through DRAM.
    plain = CostModel(_profile()).operation("cpu", "elementwise", "float32", 0, 1000, 600)
    assert plain.busy_us == dram.busy_us and plain.memory_us == dram.memory_us


def test_the_on_chip_rate_is_a_fitted_parameter_of_the_calibration():
    from tvm_nnapi.tools import calibrate
    from tvm_nnapi.tools.measurements import Measurement

    row = Measurement(
        id="row",
        workload="mobilenet_v2",
        precision="quant8",
        device="qti-dsp",
        measured=0.2,
        unit="ms",
        timing="wall",
    )
    data, parameters, (modelled,) = calibrate.model_rows("snapdragon-8-elite", [row])
    path = "devices[0].on_chip_memory.bandwidth_gbps"
    parameter = parameters.parameters[path]
    assert parameter.free
    assert parameter.value == data["devices"][0]["on_chip_memory"]["bandwidth_gbps"]
    assert parameter.lower == data["devices"][0]["memory_bandwidth_gbps"]  # not below DRAM
    values = parameters.vector()
    assert modelled.time_us(values) == pytest.approx(modelled.trace_total_us, rel=1e-9)
    faster = values.copy()
    faster[parameters.index(path)] *= 2
    assert modelled.time_us(faster) < modelled.time_us(values)
