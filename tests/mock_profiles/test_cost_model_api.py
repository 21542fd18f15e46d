# SPDX-License-Identifier: Apache-2.0
"""The cost model on its own (mock_nnapi.cost_model, docs/cost-model.md): the mock's one
implementation of the per-operation time and of the timeline, queried for any profile without
selecting it. Re-timing a recorded trace must give exactly what running on the other profile
gives; each operation's cost must be the trace's."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from mock_nnapi.cost_model import (
    CostModel,
    CostModelError,
    RecordedExecution,
    data_classes,
    operation_class_of,
    operation_classes,
)
from mock_nnapi.device_profiles import load_profile

from mock_nnapi import OperandCode, OperationCode, api, control

from .helpers import binary_model, device_entry, profile_with

BUILT_IN = ["reference", "snapdragon-8-gen-2", "tensor-g2", "dimensity-9000"]
TOTALS = ("modelled_total_us", "modelled_in_driver_us", "modelled_on_hardware_us")


def _zeros(model: api.Model) -> list[np.ndarray]:
    from tvm_nnapi.tools.calibrate import _zeros_like_inputs

    return _zeros_like_inputs(model)


def _trace_of(workload: str, precision: str, device_name: str) -> dict | None:
    """The cost-only trace of a calibration workload on one device of the selected profile, or
    None when the device cannot take it."""
    from tvm_nnapi.tools.workloads import build

    built = build(workload, precision)
    (device,) = [d for d in api.devices() if d.name == device_name]
    if not all(api.supported_operations(built.model, [device])):
        return None
    compilation = api.Compilation(built.model, [device]).finish()
    with control.CostOnlyExecution():
        compilation.execute(_zeros(built.model))
    return control.last_execution_trace()


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


@pytest.mark.parametrize("profile", BUILT_IN)
def test_retiming_a_trace_on_its_own_profile_gives_the_trace(profile):
    control.set_profile(profile)
    model = CostModel(profile)
    checked = 0
    for device in [d.name for d in api.devices()]:
        for precision in ("float32", "float16"):
            trace = _trace_of("mobilenet_v2", precision, device)
            if trace is None:
                continue
            times = model.retime(trace)
            assert _close(times.total_us, trace["modelled_total_us"])
            assert _close(times.in_driver_us, trace["modelled_in_driver_us"])
            assert _close(times.on_hardware_us, trace["modelled_on_hardware_us"])
            assert _close(times.energy_uj, trace["modelled_energy_uj"])
            assert _close(times.compilation_us, trace["compilation"]["modelled_us"])
            retimed = model.retimed_trace(trace)
            assert retimed["retimed_from"] == profile and retimed["profile"] == profile
            assert len(retimed["events"]) == len(trace["events"])
            for ours, theirs in zip(retimed["events"], trace["events"], strict=True):
                assert ours["kind"] == theirs["kind"] and ours["device"] == theirs["device"]
                assert _close(ours["start_us"], theirs["start_us"]), (ours, theirs)
                assert _close(ours["duration_us"], theirs["duration_us"]), (ours, theirs)
            checked += 1
    assert checked > 0


def _scaled(profile: dict, factor: float) -> dict:
    """The profile with every device's efficiencies, overheads and bandwidth changed."""
    changed = copy.deepcopy(profile)
    changed["name"] = "changed"
    changed["runtime"]["overhead_us"] = changed["runtime"].get("overhead_us", 0) * factor + 3
    for device in changed["devices"]:
        device["efficiency"] = {k: v / factor for k, v in device["efficiency"].items()}
        for table in ("compute_efficiency", "memory_efficiency"):
            device.pop(table, None)
        device["memory_bandwidth_gbps"] *= factor
        device["overhead_us"] = {k: v * factor + 1 for k, v in device["overhead_us"].items()}
    return changed


def test_a_trace_retimed_on_another_profile_is_a_run_on_that_profile(write_profile):
    """What calibration relies on: re-timing gives exactly the numbers a real execution on the
    changed profile gives (its step overheads included, where the recorded profile had none)."""
    base = load_profile("snapdragon-8-gen-2")
    for device in base["devices"]:
        device["overhead_us"]["execution"] = 0  # recorded without step events
    changed = _scaled(base, 2.0)
    base["name"] = "base"
    control.set_profile(write_profile(base))
    recorded = {
        (w, p, d): _trace_of(w, p, d)
        for w, p, d in [
            ("mobilenet_v3_large", "float16", "qti-gpu"),
            ("smollm2-1.7b-decode", "quant8", "nnapi-reference"),
            ("mobilenet_v2", "float16", "qti-dsp"),
        ]
    }
    assert not any(e["kind"] == "driver" for t in recorded.values() for e in t["events"])
    model = CostModel(changed)
    control.set_profile(write_profile(changed))
    for (workload, precision, device), trace in recorded.items():
        again = _trace_of(workload, precision, device)
        assert any(e["kind"] == "driver" for e in again["events"])
        times = model.retime(RecordedExecution(trace))
        for total, key in zip(
            (times.total_us, times.in_driver_us, times.on_hardware_us), TOTALS, strict=True
        ):
            assert _close(total, again[key]), (workload, key, total, again[key])
        assert _close(times.compilation_us, again["compilation"]["modelled_us"])


@pytest.mark.parametrize("profile", BUILT_IN)
def test_each_operation_costs_what_the_trace_says(profile):
    control.set_profile(profile)
    model = CostModel(profile)
    for device in [d.name for d in api.devices()]:
        trace = _trace_of("mobilenet_v3_large", "float16", device)
        if trace is None:
            continue
        for event in trace["events"]:
            if event["kind"] != "operation":
                continue
            cost = model.operation(
                event["device"],
                event["operation_class"],
                event["data_class"],
                event["flops"],
                event["bytes"],
                event["on_chip_bytes"],
            )
            assert _close(cost.busy_us, event["busy_us"]), event
            assert _close(cost.compute_us, event["compute_us"])
            assert _close(cost.memory_us, event["memory_us"])
            assert cost.compute_efficiency == pytest.approx(event["compute_efficiency"])
            assert cost.memory_efficiency == pytest.approx(event["memory_efficiency"])
            assert cost.compute_bound == (event["bound"] == "compute")
            expected_overhead = 0.0 if event["fused"] else cost.overhead_us
            assert _close(event["overhead_us"], expected_overhead)


def test_the_cost_model_ignores_the_selected_profile():
    control.set_profile("reference")
    phone = CostModel("snapdragon-8-gen-2")
    cost = phone.operation("qti-dsp", "convolution", "float16", 2e9, 1e6)
    control.set_profile("tensor-g2")
    assert phone.operation("qti-dsp", "convolution", "float16", 2e9, 1e6) == cost
    control.set_profile(None)


def test_class_names_are_the_mocks_table():
    assert "convolution" in operation_classes() and "other" in operation_classes()
    assert data_classes()[:3] == ("float32", "relaxed_float32", "float16")
    assert operation_class_of("CONV_2D") == "convolution"
    assert operation_class_of("FULLY_CONNECTED") == "fully_connected"
    assert set(json.loads(json.dumps(operation_classes()))) >= {"matmul", "elementwise"}
    with pytest.raises(CostModelError, match="unknown NNAPI operation 'CONV_3D'"):
        operation_class_of("CONV_3D")


def test_the_tools_use_class_names_of_the_table():
    """The class names the host model, calibration and the estimate write in Python are the
    cost model's own."""
    from tvm_nnapi.tools import calibrate
    from tvm_nnapi.tools.host_model import HostWork

    classes = set(operation_classes())
    assert set(calibrate.TIES) | set(calibrate.TIES.values()) <= classes
    assert set(calibrate.DTYPE_FAMILIES) | set(calibrate.DTYPE_FAMILIES.values()) <= set(
        data_classes()
    )
    assert HostWork(0, 0).operation_class in classes
    assert HostWork(0, 0).data_class in data_classes()


def test_bad_queries_name_what_is_wrong():
    model = CostModel(profile_with([device_entry("cpu", "CPU")]))
    with pytest.raises(CostModelError, match="no device named 'npu'"):
        model.operation("npu", "convolution", "float32", 1, 1)
    with pytest.raises(CostModelError, match="unknown operation class 'convolutions'"):
        model.operation("cpu", "convolutions", "float32", 1, 1)
    with pytest.raises(CostModelError, match="unknown data class 'float64'"):
        model.operation("cpu", "convolution", "float64", 1, 1)
    with pytest.raises(CostModelError, match="work must be non-negative"):
        model.operation("cpu", "convolution", "float32", -1, 1)
    with pytest.raises(ValueError, match="side must be"):
        model.efficiency("cpu", "both", "convolution", "float32")


def test_bad_profiles_and_traces_are_refused_naming_the_field():
    with pytest.raises(CostModelError, match=r"devices\[0\].memory_bandwidth_gbps"):
        CostModel(profile_with([device_entry("cpu", "CPU", memory_bandwidth_gbps=-1)]))
    with pytest.raises(CostModelError, match=r"cannot read the profile 'no-such-phone'"):
        CostModel("no-such-phone")
    with pytest.raises(CostModelError, match=r"events: expected an array"):
        RecordedExecution({"events": 3})
    bad = {"events": [{"kind": "runtime"}, {"kind": "operation", "device": "cpu"}]}
    with pytest.raises(CostModelError, match=r"events\[1\]\.operation_type"):
        RecordedExecution(bad)
    with pytest.raises(CostModelError, match=r"line 1"):
        RecordedExecution("{")
    control.set_profile("snapdragon-8-gen-2")
    trace = _trace_of("mobilenet_v2", "float16", "qti-dsp")
    control.set_profile(None)
    elsewhere = CostModel(profile_with([device_entry("cpu", "CPU")]))
    with pytest.raises(CostModelError, match=r"events\[\d+\]\.device: .*no device named 'qti-dsp'"):
        elsewhere.retime(trace)


def test_a_fallback_operation_is_retimed_on_the_runtime_cpu(write_profile):
    """An operation no listed device supports runs on the runtime's CPU fallback; re-timing
    finds that device by its role, not by its name."""

    def support(operation: str) -> dict:
        return {"operations": [operation], "data_types": "all", "max_rank": 6}

    npu = device_entry("npu", "ACCELERATOR", support=support("ADD"))
    cpu = device_entry("cpu-a", "CPU", support=support("SUB"), memory_bandwidth_gbps=3)
    control.set_profile(write_profile(profile_with([npu, cpu])))
    operations = [OperationCode.ADD, OperationCode.MUL]
    model_ops = binary_model(operations, [64], OperandCode.TENSOR_FLOAT32)
    compilation = api.Compilation(model_ops).finish()  # MUL: no device, the runtime's CPU
    compilation.execute(_zeros(model_ops))
    trace = control.last_execution_trace()
    assert any(e.get("cpu_fallback") for e in trace["events"] if e["kind"] == "operation")
    renamed = profile_with(
        [npu, device_entry("cpu-b", "CPU", support=support("SUB"), memory_bandwidth_gbps=3)]
    )
    times = CostModel(renamed).retime(trace)
    assert _close(times.total_us, trace["modelled_total_us"])
    control.set_profile(None)


def test_conv_costs_scale_with_the_profile():
    """A sanity check of the equation through the API: a compute-bound convolution on a device
    with half the efficiency takes twice as long."""
    half = profile_with([device_entry("cpu", "CPU", efficiency={"default": 0.5})])
    full = profile_with([device_entry("cpu", "CPU")])
    flops, bytes_ = 2e6, 1e3
    slow = CostModel(half).operation("cpu", "convolution", "float32", flops, bytes_)
    fast = CostModel(full).operation("cpu", "convolution", "float32", flops, bytes_)
    assert fast.compute_bound and _close(slow.busy_us, 2 * fast.busy_us)
    assert _close(fast.busy_us, flops / 1e3)  # 1 GOP/s
