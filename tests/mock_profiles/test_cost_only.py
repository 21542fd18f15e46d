# SPDX-License-Identifier: Apache-2.0
"""Cost-only executions (MockNnapi_setCostOnlyExecution): the same modelled trace as a real
run, no kernel executed, and temporaries that take no memory."""

from __future__ import annotations

import numpy as np
import pytest

import mock_nnapi
from mock_nnapi import OperandCode, OperationCode, control

from .helpers import binary_model, conv_model, inputs_for


def _modelled(trace):
    return [(e["kind"], e["name"], e["device"], e["duration_us"]) for e in trace["events"]]


def test_cost_only_trace_equals_the_real_run():
    control.set_profile("snapdragon-8-gen-2")
    model = conv_model(64, 32, 48)
    compilation = mock_nnapi.Compilation(model).finish()
    real = compilation.execute(inputs_for(model))[0]
    real_trace = control.last_execution_trace()
    control.reset_counters()
    with control.CostOnlyExecution():
        compilation.execute(inputs_for(model))
        cost_trace = control.last_execution_trace()
    assert not control.cost_only_execution()
    assert control.operation_count(OperationCode.CONV_2D) == 0  # no kernel ran
    assert real_trace["cost_only"] is False and cost_trace["cost_only"] is True
    assert _modelled(cost_trace) == _modelled(real_trace)
    for key in ("modelled_total_us", "modelled_in_driver_us", "modelled_on_hardware_us", "flops"):
        assert cost_trace[key] == real_trace[key], key
    np.testing.assert_allclose(real, np.full_like(real, 0.32), rtol=1e-5)  # 32 x 1 x 0.01


def test_cost_only_temporaries_take_no_memory():
    psutil = pytest.importorskip("psutil", reason="needs psutil (the 'test' extra)")
    elements = 1 << 26  # 256 MiB per float32 tensor: three temporaries and the output
    model = binary_model([OperationCode.ADD] * 4, [elements], OperandCode.TENSOR_FLOAT32)
    compilation = mock_nnapi.Compilation(model).finish()
    inputs = [np.zeros(elements, np.float32) for _ in range(2)]  # calloc: untouched pages
    process = psutil.Process()
    before = process.memory_info().rss
    with control.CostOnlyExecution():
        compilation.execute(inputs)
    grown = process.memory_info().rss - before
    trace = control.last_execution_trace()
    assert trace["cost_only"] and trace["flops"] == 4 * elements
    assert grown < 128 << 20, f"RSS grew by {grown >> 20} MiB"
