# SPDX-License-Identifier: Apache-2.0
"""Driver failures a profile describes (`driver_failures`): a device reports an operation
supported, then fails it at ANeuralNetworksCompilation_finish or at execution, through the C API.

With an explicit device list (createForDevices) the failure's result code reaches the caller;
without one, NNAPI's runtime falls back to its CPU for the model, as Android does for a driver
failure that is not a user error (BAD_DATA is returned as it is)."""

from __future__ import annotations

import ctypes
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mock_nnapi.constants import OperationCode

from mock_nnapi import control

from .nn import BAD_DATA, NO_ERROR, OP_FAILED, devices, handle_array, last_error, lib

PROFILES = Path(__file__).resolve().parents[2] / "mock_nnapi" / "profiles"
pytestmark = pytest.mark.skipif(not hasattr(lib, "MockNnapi_setProfile"), reason="no profiles")


def lying_profile(tmp_path: Path, failures: list[dict[str, Any]]) -> Path:
    """The reference profile plus "npu-liar", a fast accelerator that reports ADD and MUL
    supported (so NNAPI assigns them to it) and has `failures` as its driver_failures."""
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
def liar(tmp_path, request):
    """Selects a lying profile with the test's `failures` marker argument; yields the devices
    (npu-liar, mock-reference)."""
    with control.Profile(lying_profile(tmp_path, request.param)):
        yield devices()


def compile_on(arena, model, on_devices) -> tuple[int, ctypes.c_void_p]:
    compilation = ctypes.c_void_p()
    if on_devices is None:
        assert lib.ANeuralNetworksCompilation_create(model, ctypes.byref(compilation)) == 0
    else:
        code = lib.ANeuralNetworksCompilation_createForDevices(
            model, handle_array(on_devices), len(on_devices), ctypes.byref(compilation)
        )
        assert code == NO_ERROR, last_error()
    arena.own("ANeuralNetworksCompilation_free", compilation)
    return lib.ANeuralNetworksCompilation_finish(compilation), compilation


def run(arena, compilation) -> tuple[int, np.ndarray]:
    """One execution of the ADD model on [1, 2] + [3, 4]: its result code and output."""
    execution, out = arena.add_execution(compilation=compilation)
    return lib.ANeuralNetworksExecution_compute(execution), out


def supported(model, device) -> bool:
    flags = (ctypes.c_bool * 1)()
    get = lib.ANeuralNetworksModel_getSupportedOperationsForDevices
    assert get(model, handle_array([device]), 1, flags) == NO_ERROR
    return bool(flags[0])


COMPILE_ADD = [{"operation": "ADD", "at": "compilation"}]


@pytest.mark.parametrize("liar", [COMPILE_ADD], indirect=True)
def test_a_device_that_claims_an_operation_fails_to_compile_it(arena, liar):
    npu, cpu = liar
    model = arena.binary_model()
    assert supported(model, npu)  # what the driver says
    before = control.counter("driver_failures")
    code, _ = compile_on(arena, model, [npu])
    assert code == OP_FAILED
    message = last_error()
    assert "npu-liar fails ADD (TENSOR_FLOAT32) at compilation" in message
    assert "ANEURALNETWORKS_OP_FAILED" in message and "reports the operation supported" in message
    assert control.counter("driver_failures") == before + 1
    # Another device set compiles and runs it.
    code, compilation = compile_on(arena, model, [cpu])
    assert code == NO_ERROR
    assert run(arena, compilation)[1].tolist() == [4.0, 6.0]


@pytest.mark.parametrize("liar", [COMPILE_ADD], indirect=True)
def test_without_a_device_list_nnapi_falls_back_to_its_cpu(arena, liar):
    model = arena.binary_model()
    code, compilation = compile_on(arena, model, None)
    assert code == NO_ERROR
    code, out = run(arena, compilation)
    assert code == NO_ERROR and out.tolist() == [4.0, 6.0]
    trace = control.last_execution_trace()
    assert trace is not None
    operations = [event for event in trace["events"] if event["kind"] == "operation"]
    assert [event["cpu_fallback"] for event in operations] == [True]


@pytest.mark.parametrize(
    "liar", [[{"operation": "ADD", "at": "compilation", "result": "BAD_DATA"}]], indirect=True
)
def test_bad_data_is_returned_even_without_a_device_list(arena, liar):
    # Android treats BAD_DATA as the caller's error: no CPU fallback.
    model = arena.binary_model()
    assert compile_on(arena, model, None)[0] == BAD_DATA
    assert compile_on(arena, model, [liar[0]])[0] == BAD_DATA


@pytest.mark.parametrize(
    "liar",
    [[{"operation": "ADD", "data_types": ["TENSOR_FLOAT16"], "at": "compilation"}]],
    indirect=True,
)
def test_a_failure_applies_to_its_data_types_only(arena, liar):
    model = arena.binary_model()  # float32
    assert compile_on(arena, model, [liar[0]])[0] == NO_ERROR


@pytest.mark.parametrize("liar", [[{"operation": "ADD", "at": "execution"}]], indirect=True)
def test_a_device_that_compiled_an_operation_fails_every_execution(arena, liar):
    npu, _ = liar
    model = arena.binary_model()
    code, compilation = compile_on(arena, model, [npu])
    assert code == NO_ERROR
    for _ in range(3):
        assert run(arena, compilation)[0] == OP_FAILED
    assert "npu-liar fails ADD (TENSOR_FLOAT32) at execution" in last_error()
    # The same failure through a burst.
    execution, _ = arena.add_execution(compilation=compilation)
    burst = arena.burst(compilation)
    assert lib.ANeuralNetworksExecution_burstCompute(execution, burst) == OP_FAILED
    # NNAPI's own device choice falls back to its CPU: the execution succeeds.
    code, compilation = compile_on(arena, model, None)
    assert code == NO_ERROR
    code, out = run(arena, compilation)
    assert code == NO_ERROR and out.tolist() == [4.0, 6.0]


@pytest.mark.parametrize(
    "liar", [[{"operation": "ADD", "at": "execution", "every": 3}]], indirect=True
)
def test_every_nth_execution_fails(arena, liar):
    model = arena.binary_model()
    code, compilation = compile_on(arena, model, [liar[0]])
    assert code == NO_ERROR
    codes = [run(arena, compilation)[0] for _ in range(7)]
    assert codes == [0, 0, OP_FAILED, 0, 0, OP_FAILED, 0]
    # Clearing the faults restarts the count.
    control.clear_faults()
    assert [run(arena, compilation)[0] for _ in range(3)] == [0, 0, OP_FAILED]


@pytest.mark.parametrize("liar", [[{"operation": "MUL", "at": "execution"}]], indirect=True)
def test_other_operations_are_unaffected(arena, liar):
    model = arena.binary_model(operation=OperationCode.ADD)
    code, compilation = compile_on(arena, model, [liar[0]])
    assert code == NO_ERROR and run(arena, compilation)[0] == NO_ERROR
    mul = arena.binary_model(operation=OperationCode.MUL)
    code, compilation = compile_on(arena, mul, [liar[0]])
    assert code == NO_ERROR
    execution, _ = arena.add_execution(compilation=compilation)
    assert lib.ANeuralNetworksExecution_compute(execution) == OP_FAILED
    assert "npu-liar fails MUL" in last_error()


def test_an_entry_for_an_operation_the_device_does_not_support_never_applies(arena, tmp_path):
    path = lying_profile(tmp_path, [{"operation": "SUB", "at": "compilation"}])
    with control.Profile(path):
        model = arena.binary_model(operation=OperationCode.SUB)
        # SUB has no device among the listed ones: the ordinary refusal, not a driver failure.
        before = control.counter("driver_failures")
        assert compile_on(arena, model, devices())[0] == NO_ERROR  # the CPU takes it
        assert control.counter("driver_failures") == before


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"at": "compilation"}, "operation"),
        ({"operation": "ADD"}, "at"),
        ({"operation": "ADD", "at": "link"}, "at"),
        ({"operation": "ADDITION", "at": "compilation"}, "operation"),
        ({"operation": "ADD", "at": "execution", "result": "BAD_DATA"}, "result"),
        ({"operation": "ADD", "at": "compilation", "result": "DEAD_OBJECT"}, "result"),
        ({"operation": "ADD", "at": "compilation", "every": 2}, "every"),
        ({"operation": "ADD", "at": "execution", "every": 0}, "every"),
        ({"operation": "ADD", "at": "execution", "every": 1.5}, "every"),
        ({"operation": "ADD", "at": "execution", "data_types": ["FLOAT32"]}, "data_types[0]"),
        ({"operation": "ADD", "at": "execution", "after": 3}, "after"),
    ],
)
def test_a_bad_entry_is_refused_by_both_readers_naming_the_field(entry, field, tmp_path):
    from mock_nnapi.api import NnapiError

    from mock_nnapi import device_profiles

    path = lying_profile(tmp_path, [entry])
    expected = f"devices[0].driver_failures[0].{field}: "
    with pytest.raises(NnapiError) as refused:
        control.set_profile(path)
    assert expected in str(refused.value)
    with pytest.raises(device_profiles.ProfileValidationError) as invalid:
        device_profiles.load_profile(path)
    assert expected in str(invalid.value)


def test_a_good_entry_is_accepted_by_both_readers(tmp_path):
    from mock_nnapi import device_profiles

    failures = [
        {"operation": "ADD", "data_types": ["TENSOR_FLOAT32"], "at": "compilation"},
        {"operation": "MUL", "at": "compilation", "result": "BAD_DATA", "notes": "a vendor bug"},
        {"operation": "ADD", "at": "execution", "result": "OP_FAILED", "every": 10},
    ]
    path = lying_profile(tmp_path, failures)
    device_profiles.load_profile(path)
    with control.Profile(path):
        assert control.profile_name() == "lying-phone"
