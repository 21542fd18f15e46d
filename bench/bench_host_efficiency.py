# SPDX-License-Identifier: Apache-2.0
"""The efficiency of TVM's CPU code for an LLM, MEASURED side by side with OpenBLAS (numpy).

The host presets ``tvm-default`` and ``tvm-dlight`` of ``tvm_nnapi.tools.host_model``
(docs/cost-model.md, "Host code") rest on these ratios. Each kernel is an LLM projection
(``x @ W.T``, as ``nn.Linear`` exports it) built by ``relax.build(mod, "llvm")`` with the host
pipelines of :mod:`tvm_nnapi.llm.host_pipeline` (``default``: TVM's own pipeline, no schedule;
``dlight``: MLC-LLM's CPU schedules), measured in the same run against

- prefill's matrix-matrix product (``--rows`` tokens): numpy's OpenBLAS sgemm, the compute
  reference (:data:`OPENBLAS_FRACTION_OF_PEAK`, an assumption stated in docs/cost-model.md);
- decode's matrix-vector product (one token, a weight larger than the caches) and an
  element-wise add over as many bytes: the bandwidth this host delivers, the best of OpenBLAS's
  sgemv and numpy's add over the same bytes (the memory reference).

The fractions printed last are what the presets carry to a phone's CPU: compute efficiency
(GEMM against peak) and memory efficiency (GEMV, add against the reference bandwidth).

Every kernel is checked against numpy before it is timed. Kernels are timed alternately, best
of ``--repeat``, so that a noisy shared machine moves both sides of each ratio alike.

    python bench/bench_host_efficiency.py [--rows 128] [--features 2048] \
        [--gemv-shape 11008 4096] [--repeat 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import tvm
from tvm import relax

from tvm_nnapi.llm.host_pipeline import HOST_PIPELINES, host_pipeline
from tvm_nnapi.testing.modules import projection

#: OpenBLAS's sgemm as a fraction of a CPU's float32 peak (assumed; docs/cost-model.md).
OPENBLAS_FRACTION_OF_PEAK = 0.8


def residual_add(rows: int, features: int) -> tvm.IRModule:
    """``main(a[rows, features], b[rows, features]) = a + b``."""
    bb = relax.BlockBuilder()
    a = relax.Var("a", relax.TensorType([rows, features], "float32"))
    b = relax.Var("b", relax.TensorType([rows, features], "float32"))
    with bb.function("main", [a, b]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.add(a, b))
        bb.emit_func_output(out)
    return bb.get()


def best_seconds(functions: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Best time of each function, the functions run alternately ``repeat`` times each."""
    for function in functions.values():
        function()
    best = {name: float("inf") for name in functions}
    for _ in range(repeat):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def build(mod: tvm.IRModule, pipeline: str, target: tvm.target.Target) -> relax.VirtualMachine:
    return relax.VirtualMachine(
        relax.build(mod, target=target, relax_pipeline=host_pipeline(pipeline, target)), tvm.cpu()
    )


def measure(
    rows: int, features: int, gemv_shape: tuple[int, int], repeat: int, target: tvm.target.Target
) -> dict[str, Any]:
    """The measurements and the efficiencies the host presets carry (fractions)."""
    rng = np.random.default_rng(0)
    results: dict[str, Any] = {"pipelines": {}}

    # Prefill: matrix-matrix, compute-bound.
    x = rng.standard_normal((rows, features), dtype="float32")
    w = rng.standard_normal((features, features), dtype="float32")
    tx, tw = tvm.runtime.tensor(x), tvm.runtime.tensor(w)
    gemm_flops = 2.0 * rows * features * features
    # Decode: matrix-vector, memory-bound (the weight is far larger than the caches).
    n, k = gemv_shape
    v = rng.standard_normal((1, k), dtype="float32")
    big = rng.standard_normal((n, k), dtype="float32")
    tv, tbig = tvm.runtime.tensor(v), tvm.runtime.tensor(big)
    gemv_bytes = big.nbytes + v.nbytes + 4.0 * n
    # Element-wise: a residual add over as many bytes as the decode weight.
    add_rows = max(1, big.nbytes // (2 * 4 * features))
    a = rng.standard_normal((add_rows, features), dtype="float32")
    b = rng.standard_normal((add_rows, features), dtype="float32")
    ta, tb = tvm.runtime.tensor(a), tvm.runtime.tensor(b)
    add_bytes = 3.0 * a.nbytes
    add_out = np.empty_like(a)

    kernels: dict[str, Callable[[], Any]] = {
        "openblas_gemm": lambda: x @ w.T,
        "openblas_gemv": lambda: v @ big.T,
        "numpy_add": lambda: np.add(a, b, out=add_out),
    }
    for pipeline in HOST_PIPELINES:
        vm_gemm = build(projection(rows, features, features), pipeline, target)
        vm_gemv = build(projection(1, n, k), pipeline, target)
        vm_add = build(residual_add(add_rows, features), pipeline, target)
        np.testing.assert_allclose(vm_gemm["main"](tx, tw).numpy(), x @ w.T, rtol=1e-3, atol=1e-2)
        np.testing.assert_allclose(
            vm_gemv["main"](tv, tbig).numpy(), v @ big.T, rtol=1e-3, atol=1e-2
        )
        np.testing.assert_allclose(vm_add["main"](ta, tb).numpy(), a + b, rtol=1e-6)
        kernels[f"{pipeline}_gemm"] = functools.partial(vm_gemm["main"], tx, tw)
        kernels[f"{pipeline}_gemv"] = functools.partial(vm_gemv["main"], tv, tbig)
        kernels[f"{pipeline}_add"] = functools.partial(vm_add["main"], ta, tb)

    best = best_seconds(kernels, repeat)
    bandwidth = max(gemv_bytes / best["openblas_gemv"], add_bytes / best["numpy_add"]) / 1e9
    results["reference"] = {
        "openblas_gemm_gflops": gemm_flops / best["openblas_gemm"] / 1e9,
        "openblas_gemv_gbps": gemv_bytes / best["openblas_gemv"] / 1e9,
        "numpy_add_gbps": add_bytes / best["numpy_add"] / 1e9,
        "bandwidth_gbps": bandwidth,
        "seconds": {key: best[key] for key in ("openblas_gemm", "openblas_gemv", "numpy_add")},
    }
    for pipeline in HOST_PIPELINES:
        gemm_s, gemv_s, add_s = (best[f"{pipeline}_{kind}"] for kind in ("gemm", "gemv", "add"))
        results["pipelines"][pipeline] = {
            "gemm_seconds": gemm_s,
            "gemm_gflops": gemm_flops / gemm_s / 1e9,
            "gemm_vs_openblas": best["openblas_gemm"] / gemm_s,
            "gemv_seconds": gemv_s,
            "gemv_gbps": gemv_bytes / gemv_s / 1e9,
            "add_seconds": add_s,
            "add_gbps": add_bytes / add_s / 1e9,
            # What a host preset carries to a phone (fractions of peak / of the bandwidth).
            "compute_efficiency": best["openblas_gemm"] / gemm_s * OPENBLAS_FRACTION_OF_PEAK,
            "gemv_memory_efficiency": gemv_bytes / gemv_s / 1e9 / bandwidth,
            "add_memory_efficiency": add_bytes / add_s / 1e9 / bandwidth,
        }
    results["shapes"] = {
        "gemm": [rows, features, features],
        "gemv": [1, n, k],
        "add": [add_rows, features],
    }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=128, help="prefill tokens (GEMM rows)")
    parser.add_argument("--features", type=int, default=2048, help="GEMM's square weight side")
    parser.add_argument(
        "--gemv-shape",
        type=int,
        nargs=2,
        default=(11008, 4096),
        metavar=("OUT", "IN"),
        help="decode's weight [out, in] (default Llama-2-7B's gate projection, 180 MB)",
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--target",
        default="host",
        help="TVM target (JSON or name); 'host': this CPU as TVM detects it (with its -mcpu)",
    )
    parser.add_argument("--json", help="write the measurements to this file")
    args = parser.parse_args()
    target = (
        tvm.target.Target.from_device(tvm.cpu())
        if args.target == "host"
        else tvm.target.Target(args.target)
    )
    r = measure(args.rows, args.features, tuple(args.gemv_shape), args.repeat, target)
    r["target"] = str(target)
    ref = r["reference"]
    rows, f, _ = r["shapes"]["gemm"]
    _, n, k = r["shapes"]["gemv"]
    print(f"MEASURED on this host, best of {args.repeat}, run alternately; target {target}")
    print(
        f"  GEMM x[{rows}, {f}] @ W[{f}, {f}].T; GEMV x[1, {k}] @ W[{n}, {k}].T "
        f"({n * k * 4 / 2**20:.0f} MiB); add over the same bytes"
    )
    print(
        f"  OpenBLAS sgemm {ref['openblas_gemm_gflops']:.2f} GFLOP/s; "
        f"bandwidth {ref['bandwidth_gbps']:.2f} GB/s (OpenBLAS sgemv "
        f"{ref['openblas_gemv_gbps']:.2f}, numpy add {ref['numpy_add_gbps']:.2f})"
    )
    print(
        f"  {'pipeline':<9} {'GEMM GFLOP/s':>13} {'vs OpenBLAS':>12} {'GEMV GB/s':>10} "
        f"{'add GB/s':>9} | {'compute eff':>11} {'GEMV mem eff':>12} {'add mem eff':>11}"
    )
    for name, p in r["pipelines"].items():
        print(
            f"  {name:<9} {p['gemm_gflops']:13.3f} {p['gemm_vs_openblas']:12.4f} "
            f"{p['gemv_gbps']:10.3f} {p['add_gbps']:9.3f} | {p['compute_efficiency']:11.4f} "
            f"{p['gemv_memory_efficiency']:12.4f} {p['add_memory_efficiency']:11.4f}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(r, out, indent=1)
            out.write("\n")


if __name__ == "__main__":
    main()
