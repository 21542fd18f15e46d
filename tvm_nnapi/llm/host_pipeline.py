# SPDX-License-Identifier: Apache-2.0
"""How the host (TVM CPU) part of an LLM is compiled: TVM 0.27's default Relax pipeline for
``llvm``, or the schedules MLC-LLM adds for a CPU target.

- ``default``: ``relax.build``'s own pipeline for ``llvm`` (``relax.backend.cpu_generic``):
  legalization, operator fusion and lowering, **no schedule** (the TIR kernels run as
  written: single-threaded loop nests);
- ``dlight``: what MLC-LLM's compilation pipeline does for an ``llvm`` target on top of that:
  ``FuseTransposeMatmul`` (a projection's transposed weight read in place, not copied) before
  legalization and dlight's ``cpu.GEMV`` rule after fusion (matrix-vector kernels, i.e. decode's
  projections, split and run in parallel). Matrix-matrix kernels (prefill's projections) keep
  no schedule, as in MLC-LLM.

``bench/bench_host_efficiency.py`` measures the fraction of this machine's speed each reaches
for an LLM projection; ``tvm_nnapi.tools.host_model`` carries it to the phones (the host
presets ``tvm-default`` and ``tvm-dlight``).
"""

from __future__ import annotations

import tvm
from tvm import relax

__all__ = ["HOST_PIPELINES", "host_pipeline", "schedule_passes"]

HOST_PIPELINES = ("default", "dlight")


def schedule_passes(name: str, target: tvm.target.Target) -> list[tvm.transform.Pass]:
    """Pipeline ``name``'s passes up to and including scheduling (library dispatch,
    legalization, fusion and, for ``dlight``, its schedules); call them under ``target``."""
    if name not in HOST_PIPELINES:
        raise ValueError(f"unknown host pipeline {name!r}; known: {', '.join(HOST_PIPELINES)}")
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    if name == "default":
        return [*cpu.library_dispatch_passes(target), *cpu.legalize_passes(target)]
    from tvm.s_tir import dlight

    return [
        *cpu.library_dispatch_passes(target),
        relax.transform.FuseTransposeMatmul(),
        *cpu.legalize_passes(target),
        dlight.ApplyDefaultSchedule(dlight.cpu.GEMV()),
    ]


def host_pipeline(name: str, target: tvm.target.Target | str) -> tvm.transform.Pass | str:
    """The ``relax_pipeline`` argument of ``relax.build`` for pipeline ``name``."""
    if name not in HOST_PIPELINES:
        raise ValueError(f"unknown host pipeline {name!r}; known: {', '.join(HOST_PIPELINES)}")
    if name == "default":
        return "default"
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    target = tvm.target.Target(target) if isinstance(target, str) else target

    @tvm.transform.module_pass(opt_level=0, name="DlightCPUPipeline")
    def _pipeline(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        with target:
            passes = [
                *schedule_passes(name, target),
                *cpu.dataflow_lower_passes(target),
                *cpu.finalize_passes(target),
            ]
            return tvm.transform.Sequential(passes)(mod)

    return _pipeline
