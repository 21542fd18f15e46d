# SPDX-License-Identifier: Apache-2.0
"""What the host model counts of a program's operators: transposes read in place, and a
weight's dequantization fused into its matmul as TVM's fusion builds it."""

from __future__ import annotations

import pytest
from tvm import relax

from tvm_nnapi.compiler.ir_utils import bindings
from tvm_nnapi.llm.config import get_config
from tvm_nnapi.llm.model import export_model
from tvm_nnapi.testing.modules import projection
from tvm_nnapi.tools.program_work import Fusion, operator_work, tir_call_work


def test_a_transpose_read_by_a_matmul_costs_nothing_and_the_matmul_reads_the_weight():
    func_bindings = bindings(projection(4, 64, 32)["main"])
    fusion = Fusion.of(func_bindings)
    transpose, matmul = (b.value for b in func_bindings)
    assert operator_work(transpose, fusion).bytes == 0
    work = operator_work(matmul, fusion)
    # x (4x32), W (64x32) read once in place, the result (4x64) written: float32.
    assert work.bytes == 4 * (4 * 32 + 64 * 32 + 4 * 64)
    assert work.flops == 2 * 4 * 32 * 64
    # Without fusion the transpose is a copy of W (read and written).
    assert operator_work(transpose).bytes == 2 * 4 * 64 * 32


def test_dequantization_fuses_into_the_matmul_that_reads_the_4_bit_weight():
    config = get_config("tiny-llama")
    mod, _, _ = export_model(config, quantization="q4f16_1")
    func_bindings = bindings(mod["decode"])
    fusion = Fusion.of(func_bindings)
    kernels = [
        b.value
        for b in func_bindings
        if isinstance(b.value, relax.Call)
        and str(getattr(b.value.op, "name", "")) == "relax.call_tir"
    ]
    matmuls = [
        b.value
        for b in func_bindings
        if isinstance(b.value, relax.Call)
        and str(getattr(b.value.op, "name", "")) == "relax.matmul"
    ]
    assert kernels and all(k in fusion.free for k in kernels)
    assert all(tir_call_work(k, fusion).bytes == 0 for k in kernels)
    fused = sum(operator_work(m, fusion).bytes for m in matmuls)
    unfused = sum(operator_work(m).bytes for m in matmuls)
    # float16 weights are 2 bytes per value; q4f16_1 stores 0.5 + 2/32 bytes per value.
    assert fused < 0.4 * unfused
    # The dequantization's operations move into the matmuls.
    assert sum(operator_work(m, fusion).flops for m in matmuls) == pytest.approx(
        sum(operator_work(m).flops for m in matmuls) + sum(tir_call_work(k).flops for k in kernels)
    )
