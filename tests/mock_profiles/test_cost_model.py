# SPDX-License-Identifier: Apache-2.0
"""The cost model: modelled times follow docs/cost-model.md, checked on a profile with round
numbers (1 GOP/s, 1 GB/s: 1000 operations or bytes per microsecond)."""

from __future__ import annotations

import ctypes
import json

import pytest
from mock_nnapi.api import NnapiError

import mock_nnapi
from mock_nnapi import OperandCode, OperationCode, PreferenceCode, ResultCode, control

from .helpers import (
    DURATION_IN_DRIVER,
    DURATION_ON_HARDWARE,
    FENCED_DURATION_IN_DRIVER,
    FENCED_DURATION_ON_HARDWARE,
    MISSED_DEADLINE_TRANSIENT,
    UINT64_MAX,
    RawExecution,
    binary_model,
    call,
    conv_model,
    device_entry,
    devices_by_name,
    profile_with,
    run,
)

F32 = OperandCode.TENSOR_FLOAT32


@pytest.fixture
def roofline(write_profile):
    """cpu (runtime CPU): 1 GOP/s, 1 GB/s, step 10 us, operation 1 us; npu: ADD only, 2 GOP/s,
    2 GB/s, step 20 us, operation 2 us, transfers 3 us + 1 GB/s; runtime overhead 5 us."""
    npu = device_entry(
        "npu",
        "ACCELERATOR",
        support={"operations": ["ADD"], "data_types": "all", "max_rank": 4},
        throughput={"float32": 2, "float16": 2, "quant8": 2},
        memory_bandwidth_gbps=2,
        overhead_us={"execution": 20, "operation": 2},
        compilation_us={"fixed": 1000, "per_operation": 100, "cache_hit": 50},
        energy={"pj_per_op": {"float32": 0.5, "float16": 0.5, "quant8": 0.5}, "pj_per_byte": 0.5},
    )
    control.set_profile(write_profile(profile_with([npu, device_entry("cpu", "CPU")])))
    return devices_by_name()


def _events(trace):
    return [(e["kind"], e["device"], pytest.approx(e["duration_us"])) for e in trace["events"]]


def test_memory_bound_operation(roofline):
    model = binary_model([OperationCode.ADD], [1000], F32)
    execution = RawExecution(mock_nnapi.Compilation(model, [roofline["cpu"]]).finish())
    assert execution.measure_timing().compute() == ResultCode.NO_ERROR
    trace = control.last_execution_trace()
    (operation,) = [e for e in trace["events"] if e["kind"] == "operation"]
    # F = 1000 additions, B = 3 x 4000 bytes: memory bound, 12 us.
    assert operation["flops"] == 1000
    assert operation["bytes"] == 12000
    assert operation["compute_us"] == pytest.approx(1)
    assert operation["memory_us"] == pytest.approx(12)
    assert operation["bound"] == "memory"
    assert operation["duration_us"] == pytest.approx(13)  # + 1 us per operation
    assert _events(trace) == [
        ("runtime", "NNAPI runtime", 5),
        ("driver", "cpu", 10),
        ("operation", "cpu", 13),
    ]
    assert trace["modelled"] is True
    assert trace["modelled_on_hardware_us"] == pytest.approx(12)
    assert trace["modelled_in_driver_us"] == pytest.approx(23)
    assert trace["modelled_total_us"] == pytest.approx(28)
    assert trace["modelled_energy_uj"] == pytest.approx((1000 + 12000) * 1e-6)
    assert execution.duration(DURATION_ON_HARDWARE) == 12_000
    assert execution.duration(DURATION_IN_DRIVER) == 23_000


@pytest.mark.parametrize("size", [1000, 4000])
def test_bandwidth_bound_time_follows_bytes(roofline, size):
    small = binary_model([OperationCode.ADD], [size], F32)
    large = binary_model([OperationCode.ADD], [2 * size], F32)
    busy = []
    for model in (small, large):
        run(model, [roofline["cpu"]])
        (operation,) = [
            e for e in control.last_execution_trace()["events"] if e["kind"] == "operation"
        ]
        busy.append(operation["busy_us"])
    assert busy[1] == pytest.approx(2 * busy[0])
    assert busy[0] == pytest.approx(12 * size / 1000)


def _operation(trace):
    (operation,) = [e for e in trace["events"] if e["kind"] == "operation"]
    return operation


def test_compute_bound_time_follows_flops(roofline):
    # 1x1 convolution, 64 -> 64 channels: 8192 FLOPs per output position, weights dominate bytes.
    results = []
    for height in (16, 32):
        run(conv_model(height, 64, 64), [roofline["cpu"]])
        results.append(_operation(control.last_execution_trace()))
    small, large = results
    assert small["flops"] == 2 * 16 * 64 * 64
    assert large["flops"] == 2 * small["flops"]
    assert large["bytes"] < 1.5 * small["bytes"]
    assert small["bound"] == large["bound"] == "compute"
    assert small["busy_us"] == pytest.approx(small["flops"] / 1000)
    assert large["busy_us"] == pytest.approx(2 * small["busy_us"])
    assert large["duration_us"] == pytest.approx(2 * small["busy_us"] + 1)


def test_fully_connected_flops(roofline):
    model = mock_nnapi.Model()
    x = model.add_tensor(F32, [8, 32])
    weights = model.add_constant(F32, [[0.5] * 32] * 16)
    bias = model.add_constant(F32, [0.0] * 16)
    act = model.add_scalar(OperandCode.INT32, 0)
    out = model.add_tensor(F32, [8, 16])
    try:
        model.add_operation(OperationCode.FULLY_CONNECTED, [x, weights, bias, act], [out])
    except NnapiError:
        pytest.skip("FULLY_CONNECTED is not implemented by the mock yet")
    model.identify_inputs_and_outputs([x], [out])
    run(model.finish(), [roofline["cpu"]])
    assert _operation(control.last_execution_trace())["flops"] == 2 * 8 * 16 * 32


def test_selection_sampling_and_hashing_flops(roofline):
    # docs/cost-model.md: TOPK_V2 input elements x ceil(log2(k + 1)); RANDOM_MULTINOMIAL
    # 4 x input elements + output elements x ceil(log2(classes + 1)); LSH_PROJECTION below.
    import numpy as np
    from mock_ops.op_tester import OpTester

    topk = (
        OpTester(OperationCode.TOPK_V2)
        .input(np.zeros((4, 100), np.float32))
        .scalar(OperandCode.INT32, 5)
        .output(F32, (4, 5))
        .output(OperandCode.TENSOR_INT32, (4, 5))
    )
    run(topk.build(), [roofline["cpu"]])
    assert _operation(control.last_execution_trace())["flops"] == 400 * 3
    multinomial = (
        OpTester(OperationCode.RANDOM_MULTINOMIAL)
        .input(np.zeros((2, 7), np.float32))
        .scalar(OperandCode.INT32, 10)
        .constant(np.array([1, 2], np.int32))
        .output(OperandCode.TENSOR_INT32, (2, 10))
    )
    run(multinomial.build(), [roofline["cpu"]])
    assert _operation(control.last_execution_trace())["flops"] == 4 * 14 + 20 * 3
    # LSH_PROJECTION: num_hash x num_bits x input elements.
    lsh = (
        OpTester(OperationCode.LSH_PROJECTION)
        .constant(np.ones((3, 4), np.float32))
        .input(np.ones((5, 2), np.int32))
        .input(np.ones(5, np.float32))
        .scalar(OperandCode.INT32, 2)
        .output(OperandCode.TENSOR_INT32, (12,))
    )
    run(lsh.build(), [roofline["cpu"]])
    assert _operation(control.last_execution_trace())["flops"] == 3 * 4 * 10


def test_transfers_between_devices(roofline):
    # ADD runs on the npu (figure 0.5 < 1.0), MUL only on the cpu.
    model = binary_model([OperationCode.ADD, OperationCode.MUL], [1000], F32)
    run(model, None, PreferenceCode.FAST_SINGLE_ANSWER)
    trace = control.last_execution_trace()
    assert _events(trace) == [
        ("runtime", "NNAPI runtime", 5),
        ("driver", "npu", 20),
        ("transfer", "npu", 7),  # x: 3 us + 4000 B / 1 GB/s
        ("transfer", "npu", 7),  # y
        ("operation", "npu", 8),  # 12000 B / 2 GB/s + 2 us
        ("driver", "cpu", 10),
        ("transfer", "npu", 7),  # the ADD result back to host memory
        ("operation", "cpu", 13),  # y is already in host memory: no transfer
    ]
    transfers = [e for e in trace["events"] if e["kind"] == "transfer"]
    assert [e["direction"] for e in transfers] == ["host_to_device"] * 2 + ["device_to_host"]
    assert all(e["bytes"] == 4000 for e in transfers)
    assert trace["transfer_bytes"] == 12000
    assert trace["modelled_total_us"] == pytest.approx(77)
    # One modelled clock: each event starts where the previous one ended.
    for previous, event in zip(trace["events"], trace["events"][1:], strict=False):
        assert event["start_us"] == pytest.approx(previous["end_us"])
    assert trace["events"][-1]["end_us"] == pytest.approx(trace["modelled_total_us"])


def test_cost_model_times_transfers_as_the_traces_do(roofline):
    """CostModel.transfer_us is the equation of the traces' transfer events; a CPU device
    shares host memory and transfers nothing."""
    from mock_nnapi.cost_model import CostModel, CostModelError

    model = binary_model([OperationCode.ADD, OperationCode.MUL], [1000], F32)
    run(model, None, PreferenceCode.FAST_SINGLE_ANSWER)
    transfers = [e for e in control.last_execution_trace()["events"] if e["kind"] == "transfer"]
    costs = CostModel(control.profile())
    for event in transfers:
        assert costs.transfer_us(event["device"], event["bytes"]) == pytest.approx(
            event["duration_us"]
        )
    assert costs.transfer_us("npu", 0) == pytest.approx(3)
    assert costs.transfer_us("cpu", 1 << 20) == 0
    with pytest.raises(CostModelError, match="no device named 'gpu'"):
        costs.transfer_us("gpu", 1)
    with pytest.raises(CostModelError, match="non-negative"):
        costs.transfer_us("npu", -1)


def test_accelerator_inputs_and_outputs_cross_to_the_host(roofline):
    model = binary_model([OperationCode.ADD], [1000], F32)
    execution = RawExecution(mock_nnapi.Compilation(model, [roofline["npu"]]).finish())
    assert execution.measure_timing().compute() == ResultCode.NO_ERROR
    trace = control.last_execution_trace()
    assert [e["kind"] for e in trace["events"]] == [
        "runtime",
        "driver",
        "transfer",
        "transfer",
        "operation",
        "transfer",
    ]
    assert execution.duration(DURATION_ON_HARDWARE) == 6_000
    assert execution.duration(DURATION_IN_DRIVER) == 49_000  # 6 + 2 + 20 + 3 x 7


def test_durations_need_measure_timing(roofline):
    model = binary_model([OperationCode.ADD], [1000], F32)
    execution = RawExecution(mock_nnapi.Compilation(model, [roofline["cpu"]]).finish())
    assert execution.compute() == ResultCode.NO_ERROR
    for code in (DURATION_ON_HARDWARE, DURATION_IN_DRIVER):
        assert execution.duration(code) == UINT64_MAX


def test_fenced_durations(roofline):
    model = binary_model([OperationCode.ADD], [1000], F32)
    execution = RawExecution(mock_nnapi.Compilation(model, [roofline["cpu"]]).finish())
    assert execution.measure_timing().compute_fenced() == ResultCode.NO_ERROR
    assert execution.duration(FENCED_DURATION_ON_HARDWARE) == 12_000
    assert execution.duration(FENCED_DURATION_IN_DRIVER) == 23_000
    assert execution.duration(DURATION_ON_HARDWARE) == 12_000


@pytest.mark.parametrize(("timeout_ns", "expected"), [(27_999, 10), (28_000, 0)])
def test_execution_timeout_compares_the_modelled_time(roofline, timeout_ns, expected):
    model = binary_model([OperationCode.ADD], [1000], F32)  # modelled total: 28 us
    execution = RawExecution(mock_nnapi.Compilation(model, [roofline["cpu"]]).finish())
    assert execution.set_timeout(timeout_ns).compute() == expected
    assert control.last_execution_trace()["result"] == ResultCode(expected).name
    if expected == MISSED_DEADLINE_TRANSIENT:
        assert "modelled execution time 28000 ns exceeds the timeout" in mock_nnapi.api.last_error()


@pytest.mark.parametrize(("duration_ns", "expected"), [(20_000, 10), (30_000, 0)])
def test_fenced_duration_is_a_deadline(roofline, duration_ns, expected):
    model = binary_model([OperationCode.ADD], [1000], F32)
    execution = RawExecution(mock_nnapi.Compilation(model, [roofline["cpu"]]).finish())
    assert execution.compute_fenced(duration_ns) == expected


def _compile(model, devices=None, timeout_ns=0, cache=None):
    compilation = mock_nnapi.Compilation(model, devices)
    if timeout_ns:
        call("ANeuralNetworksCompilation_setTimeout", compilation.handle, timeout_ns)
    if cache is not None:
        directory, token = cache
        call(
            "ANeuralNetworksCompilation_setCaching",
            compilation.handle,
            str(directory).encode(),
            (ctypes.c_uint8 * 32)(*token),
        )
    return compilation, call("ANeuralNetworksCompilation_finish", compilation.handle)


def test_compilation_time_is_modelled(roofline):
    one = binary_model([OperationCode.ADD], [8], F32)
    two = binary_model([OperationCode.ADD, OperationCode.MUL], [8], F32)
    compilation, code = _compile(one)
    assert code == ResultCode.NO_ERROR
    assert control.modelled_compilation_time_ns(compilation) == 1_100_000  # npu: 1000 + 100
    compilation, code = _compile(two)
    assert control.modelled_compilation_time_ns(compilation) == 1_210_000  # + cpu: 100 + 10


@pytest.mark.parametrize(("timeout_ns", "expected"), [(109_999, 10), (110_000, 0)])
def test_compilation_timeout_compares_the_modelled_time(roofline, timeout_ns, expected):
    model = binary_model([OperationCode.ADD], [8], F32)
    _, code = _compile(model, [roofline["cpu"]], timeout_ns=timeout_ns)  # modelled: 110 us
    assert code == expected


def test_compilation_cache_hit_is_cheaper(roofline, tmp_path):
    model = binary_model([OperationCode.ADD, OperationCode.MUL], [8], F32)
    token = list(range(32))
    hits = mock_nnapi.counter("compilation_cache_hits")
    miss, code = _compile(model, cache=(tmp_path, token))
    assert code == ResultCode.NO_ERROR
    hit, code = _compile(model, cache=(tmp_path, token))
    assert code == ResultCode.NO_ERROR
    assert mock_nnapi.counter("compilation_cache_hits") == hits + 1
    assert control.modelled_compilation_time_ns(miss) == 1_210_000
    assert control.modelled_compilation_time_ns(hit) == 55_000  # npu 50 + cpu 5
    RawExecution(hit).compute()
    assert control.last_execution_trace()["compilation"]["cache_hit"] is True


def test_traces_are_bounded(roofline):
    control.set_trace_capacity(3)
    model = binary_model([OperationCode.ADD], [8], F32)
    for _ in range(5):
        run(model, [roofline["cpu"]])
    traces = control.execution_traces()
    assert len(traces) == 3
    assert [t["id"] for t in traces] == list(range(traces[0]["id"], traces[0]["id"] + 3))
    assert control.last_execution_trace()["id"] == traces[-1]["id"]
    control.set_trace_capacity(0)
    control.clear_traces()
    run(model, [roofline["cpu"]])
    assert control.last_execution_trace() is None
    assert control.execution_traces() == []


def test_chrome_trace_is_valid_trace_event_json(roofline, tmp_path):
    model = binary_model([OperationCode.ADD, OperationCode.MUL], [1000], F32)
    run(model)
    run(model, [roofline["cpu"]])
    document = json.loads(control.trace_to_chrome_json())
    events = document["traceEvents"]
    assert document["otherData"]["modelled"] is True
    for event in events:
        assert {"ph", "ts", "dur", "name", "pid", "tid"} <= event.keys(), event
        assert event["ph"] in ("X", "M")
        assert event["dur"] >= 0
    names = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {"NNAPI runtime", "npu", "cpu"} <= names
    spans = [e for e in events if e["ph"] == "X" and e["cat"] == "execution"]
    assert len(spans) == 2
    assert spans[1]["ts"] == pytest.approx(spans[0]["ts"] + spans[0]["dur"])
    assert "MODELLED" in next(e for e in events if e["name"] == "process_name")["args"]["name"]
    path = tmp_path / "trace.json"
    control.write_chrome_trace(path, control.last_execution_trace())
    assert json.loads(path.read_text())["traceEvents"]


@pytest.mark.parametrize(
    ("profile", "npu", "cpu"),
    [
        ("dimensity-9000", "mtk-neuron", "nnapi-reference"),
        ("snapdragon-8-gen-2", "qti-dsp", "nnapi-reference"),
    ],
)
def test_built_in_npu_is_modelled_faster_than_the_cpu(profile, npu, cpu):
    control.set_profile(profile)
    devices = devices_by_name()
    model = binary_model([OperationCode.MUL], [1, 64, 64, 64], OperandCode.TENSOR_FLOAT16)
    on_hardware = {}
    for name in (npu, cpu):
        execution = RawExecution(mock_nnapi.Compilation(model, [devices[name]]).finish())
        assert execution.measure_timing().compute() == ResultCode.NO_ERROR
        on_hardware[name] = execution.duration(DURATION_ON_HARDWARE)
    assert 0 < on_hardware[npu] < on_hardware[cpu]


def test_recurrent_flops(roofline):
    # docs/cost-model.md: 2 x rows (time steps x batch) x the elements of the weight matrices.
    import numpy as np
    from mock_ops.op_tester import OpTester

    sequence = (
        OpTester(OperationCode.UNIDIRECTIONAL_SEQUENCE_RNN)
        .input(np.zeros((5, 2, 3), np.float32))  # time-major: 5 steps, batch 2, input 3
        .constant(np.zeros((4, 3), np.float32))
        .constant(np.zeros((4, 4), np.float32))
        .constant(np.zeros(4, np.float32))
        .input(np.zeros((2, 4), np.float32))
        .scalar(OperandCode.INT32, 0)
        .scalar(OperandCode.INT32, 1)
        .output(F32, (5, 2, 4))
    )
    run(sequence.build(), [roofline["cpu"]])
    assert _operation(control.last_execution_trace())["flops"] == 2 * 10 * (12 + 16)
