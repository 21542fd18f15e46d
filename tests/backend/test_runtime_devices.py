# SPDX-License-Identifier: Apache-2.0
"""The runtime's device choice: the devices/exclude_cpu options make every NNAPI compilation
use ANeuralNetworksCompilation_createForDevices with the chosen devices."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_nnapi
from mock_nnapi import control
from tvm_nnapi import runtime


def _add_mul():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([4, 8], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, relax.const(np.ones((4, 8), "float32"))))
            out = bb.emit_output(relax.op.multiply(y, y))
        bb.emit_func_output(out)
    return tvm_nnapi.build(tvm_nnapi.partition(bb.get()))


def _devices_that_ran(**options) -> set[str]:
    before = runtime.options_in_effect()
    runtime.configure(**options)
    try:
        vm = relax.VirtualMachine(_add_mul(), tvm.cpu())
        control.clear_traces()
        vm["main"](tvm.runtime.tensor(np.ones((4, 8), "float32")))
        return {
            e["device"]
            for trace in control.execution_traces()
            for e in trace["events"]
            if e["kind"] == "operation"
        }
    finally:
        runtime.configure(
            devices=before.get("devices", ""), exclude_cpu=before.get("exclude_cpu") == "1"
        )


@pytest.fixture
def phone():
    with control.Profile("snapdragon-8-gen-2"):
        yield


def test_devices_option_compiles_for_the_named_devices(phone):
    assert _devices_that_ran(devices="nnapi-reference") == {"nnapi-reference"}
    assert _devices_that_ran(devices=["qti-gpu"]) == {"qti-gpu"}
    assert "nnapi-reference" not in _devices_that_ran(exclude_cpu=True)


def test_unknown_device_names_the_subgraph_and_the_devices(phone):
    with pytest.raises(Exception, match=r"no NNAPI device named nope \(devices: qti-dsp"):
        _devices_that_ran(devices="nope")
