# SPDX-License-Identifier: Apache-2.0
"""The host pipelines an LLM's TVM CPU code is compiled with: TVM's default and MLC-LLM's CPU
schedules (dlight) compute the same model."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from tvm_nnapi.llm.config import get_config
from tvm_nnapi.llm.dispatch import build_llm
from tvm_nnapi.llm.host_pipeline import HOST_PIPELINES, host_pipeline, schedule_passes
from tvm_nnapi.llm.model import export_model
from tvm_nnapi.testing.modules import projection


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("host builds only: nothing here runs on the target")


def test_unknown_pipeline_is_named():
    with pytest.raises(ValueError, match="unknown host pipeline 'tuned'; known: default, dlight"):
        host_pipeline("tuned", "llvm")


def _scheduled_projections(pipeline: str) -> list[str]:
    """TVMScript of the tiny model's projection kernels (``matmul`` in their name) after
    ``pipeline``'s scheduling passes."""
    mod, _, _ = export_model(get_config("tiny-llama"))
    target = tvm.target.Target("llvm")
    with target:
        scheduled = tvm.transform.Sequential(schedule_passes(pipeline, target))(mod)
    return [
        function.script()
        for gv, function in scheduled.functions.items()
        if "matmul" in gv.name_hint and not isinstance(function, tvm.relax.Function)
    ]


def test_dlight_schedules_projections_in_parallel_and_default_leaves_them_serial():
    default = _scheduled_projections("default")
    dlight = _scheduled_projections("dlight")
    assert default and dlight
    assert not any("T.parallel" in text for text in default)
    # dlight's CPU GEMV rule schedules decode's matrix-vector projections (one token); the
    # matrix-matrix ones of prefill stay unscheduled, as in MLC-LLM.
    assert any("T.parallel" in text for text in dlight)
    assert any("T.parallel" not in text for text in dlight)


def test_a_decode_projection_built_with_dlight_computes_the_product():
    """Decode's matrix-vector projection (one token, a 384 x 1024 weight), built by both
    pipelines, against numpy. (A whole tiny model is not built here: dlight's GEMV schedule
    fully unrolls reductions of at most 256 values across 128 vector lanes, which LLVM takes
    minutes to compile for the tiny model's 64- and 128-wide projections.)"""
    mod = projection(1, 384, 1024)
    target = tvm.target.Target("llvm")
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((1, 1024), dtype="float32")
    ws = rng.standard_normal((384, 1024), dtype="float32")
    for name in HOST_PIPELINES:
        vm = tvm.relax.VirtualMachine(
            tvm.relax.build(mod, target=target, relax_pipeline=host_pipeline(name, target)),
            tvm.cpu(),
        )
        got = vm["main"](tvm.runtime.tensor(xs), tvm.runtime.tensor(ws)).numpy()
        np.testing.assert_allclose(got, xs @ ws.T, rtol=1e-4, atol=1e-3, err_msg=name)


def test_build_llm_takes_the_pipeline_by_name():
    mod, _, _ = export_model(get_config("tiny-llama"))
    with pytest.raises(ValueError, match="unknown host pipeline 'tuned'"):
        build_llm(mod, [], host_pipeline="tuned")
