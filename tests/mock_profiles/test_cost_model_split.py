# SPDX-License-Identifier: Apache-2.0
"""Split compute and memory efficiencies and on-chip fusion of element-wise chains
(docs/cost-model.md), on a CPU-only profile with round numbers (1 GOP/s, 1 GB/s)."""

from __future__ import annotations

import pytest
from mock_nnapi.cost_model import CostModel

from mock_nnapi import OperandCode, OperationCode, control

from .helpers import binary_model, conv_model, conv_relu_add_chain, device_entry, profile_with, run

F32 = OperandCode.TENSOR_FLOAT32


def _select(write_profile, **cpu_fields):
    control.set_profile(write_profile(profile_with([device_entry("cpu", "CPU", **cpu_fields)])))


def _operations():
    trace = control.last_execution_trace()
    return [e for e in trace["events"] if e["kind"] == "operation"], trace


def test_memory_and_compute_efficiencies_scale_their_own_side(write_profile):
    _select(
        write_profile,
        efficiency={"default": 1, "convolution": 0.5},
        compute_efficiency={"elementwise": {"float32": 0.5}},
        memory_efficiency={"default": 0.25},
    )
    run(binary_model([OperationCode.ADD], [1000], F32))
    (add,), _ = _operations()
    # compute 1 us / 0.5 = 2 us; memory 12 us / 0.25 = 48 us: memory bound.
    assert add["compute_us"] == pytest.approx(1)
    assert add["memory_us"] == pytest.approx(12)
    assert add["compute_efficiency"] == 0.5
    assert add["memory_efficiency"] == 0.25
    assert add["busy_us"] == pytest.approx(48)
    assert add["bound"] == "memory"
    assert add["efficiency"] == 0.25
    # The convolution's compute efficiency falls back to its single efficiency, 0.5.
    run(conv_model(16, 64, 64))
    (conv,), _ = _operations()
    assert conv["compute_efficiency"] == 0.5
    assert conv["memory_efficiency"] == 0.25
    assert conv["bound"] == "compute"
    assert conv["busy_us"] == pytest.approx(2 * 16 * 64 * 64 / 1000 / 0.5)


def test_one_efficiency_models_both_sides_as_before(write_profile):
    _select(write_profile, efficiency={"default": 0.5})
    run(binary_model([OperationCode.ADD], [1000], F32))
    (add,), _ = _operations()
    assert add["compute_efficiency"] == add["memory_efficiency"] == add["efficiency"] == 0.5
    assert add["busy_us"] == pytest.approx(12 / 0.5)


def test_efficiency_by_data_class(write_profile):
    _select(
        write_profile,
        memory_efficiency={"elementwise": {"default": 0.5, "float16": 0.25}},
    )
    run(binary_model([OperationCode.ADD], [1000], F32))
    (f32,), _ = _operations()
    run(binary_model([OperationCode.ADD], [1000], OperandCode.TENSOR_FLOAT16))
    (f16,), _ = _operations()
    assert f32["memory_efficiency"] == 0.5
    assert f32["busy_us"] == pytest.approx(12 / 0.5)
    assert f16["memory_efficiency"] == 0.25
    assert f16["busy_us"] == pytest.approx(6 / 0.25)


@pytest.mark.parametrize(
    ("tables", "side", "operation_class", "data_class", "expected"),
    [
        ({}, "compute", "matmul", "float32", 0.4),
        ({}, "memory", "pooling", "float32", 0.2),
        ({"compute_efficiency": {"default": 0.9}}, "compute", "matmul", "float32", 0.9),
        ({"compute_efficiency": {"default": 0.9}}, "memory", "matmul", "float32", 0.4),
        ({"memory_efficiency": {"default": {"quant8": 0.7}}}, "memory", "pooling", "quant8", 0.7),
        ({"memory_efficiency": {"default": {"quant8": 0.7}}}, "memory", "pooling", "float16", 0.2),
        (
            {"compute_efficiency": {"default": 0.9, "matmul": {"float16": 0.3}}},
            "compute",
            "matmul",
            "float32",
            0.9,
        ),
        (
            {"compute_efficiency": {"default": 0.9, "matmul": {"float16": 0.3}}},
            "compute",
            "matmul",
            "float16",
            0.3,
        ),
    ],
)
def test_the_cost_model_reads_efficiencies_with_the_documented_precedence(
    tables, side, operation_class, data_class, expected
):
    device = {"efficiency": {"default": 0.2, "matmul": 0.4}, **tables}
    model = CostModel(profile_with([device_entry("cpu", "CPU", **device)]))
    assert model.efficiency("cpu", side, operation_class, data_class) == expected


def test_executions_use_the_cost_models_efficiencies(write_profile):
    device = {
        "efficiency": {"default": 0.2, "elementwise": 0.4},
        "memory_efficiency": {"default": {"float16": 0.7}, "elementwise": {"float32": 0.9}},
        "compute_efficiency": {"default": 0.3},
    }
    _select(write_profile, **device)
    model = CostModel(profile_with([device_entry("cpu", "CPU", **device)]))
    for code, data_class in ((F32, "float32"), (OperandCode.TENSOR_FLOAT16, "float16")):
        run(binary_model([OperationCode.ADD], [1000], code))
        (add,), _ = _operations()
        for side in ("compute", "memory"):
            expected = model.efficiency("cpu", side, "elementwise", data_class)
            assert add[f"{side}_efficiency"] == expected, (side, data_class)


TENSOR = 4 * 4 * 8 * 4  # bytes of one [1, 4, 4, 8] float32 tensor


def test_elementwise_chain_fuses_into_its_producer(write_profile):
    _select(write_profile, fuse_elementwise=False)
    run(conv_relu_add_chain())
    unfused, unfused_trace = _operations()
    _select(write_profile, fuse_elementwise=True)
    run(conv_relu_add_chain())
    (conv, relu, add), trace = _operations()
    assert [e["fused"] for e in unfused] == [False, False, False]
    assert (relu["fused"], add["fused"], conv["fused"]) == (True, True, False)
    assert relu["fused_bytes"] == add["fused_bytes"] == TENSOR
    # t is neither written by the convolution nor read by RELU; u neither written nor read.
    assert conv["bytes"] == unfused[0]["bytes"] - TENSOR
    assert relu["bytes"] == unfused[1]["bytes"] - 2 * TENSOR == 0
    assert add["bytes"] == unfused[2]["bytes"] - TENSOR  # y in, z out remain
    assert relu["flops"] == unfused[1]["flops"]
    # A fused operation has no per-operation overhead (1 us in this profile).
    assert relu["overhead_us"] == add["overhead_us"] == 0
    assert relu["duration_us"] == pytest.approx(relu["flops"] / 1000)
    # Each operation's time follows the roofline on the bytes that remain (1 GOP/s, 1 GB/s).
    for event in (conv, relu, add):
        expected = max(event["flops"], event["bytes"]) / 1000 + (0 if event["fused"] else 1)
        assert event["duration_us"] == pytest.approx(expected)
    saved = sum(e["duration_us"] for e in unfused) - conv["duration_us"] - relu["duration_us"]
    saved -= add["duration_us"]
    assert saved > 2  # two overheads and the traffic of t and u
    assert trace["modelled_total_us"] == pytest.approx(unfused_trace["modelled_total_us"] - saved)


def test_a_tensor_with_another_reader_or_a_model_output_goes_to_memory(write_profile):
    _select(write_profile, fuse_elementwise=True)
    run(conv_relu_add_chain(second_reader=True))
    operations, _ = _operations()
    fused = {e["operation"]: e["fused"] for e in operations}
    # Operations 1 and 3 read t (the convolution's output): neither runs on chip.
    assert fused[1] is False and fused[3] is False
    run(conv_relu_add_chain(output_middle=True))
    operations, _ = _operations()
    assert [e["fused"] for e in operations] == [False, True, False]  # u is a model output
