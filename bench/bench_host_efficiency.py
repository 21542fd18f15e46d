# SPDX-License-Identifier: Apache-2.0
"""The efficiency of TVM's unscheduled CPU code, MEASURED side by side with OpenBLAS (numpy).

The ``tvm-default`` host model of ``tvm_nnapi.tools.estimate`` (docs/cost-model.md, "Host code")
rests on this ratio: an LLM projection (``x @ W.T``, as ``nn.Linear`` exports it) built by
``relax.build(mod, "llvm")`` with the default pipeline (no dlight, no MetaSchedule), against
numpy's OpenBLAS sgemm on the same host, same shapes, same run.

    python bench/bench_host_efficiency.py [--rows 128] [--features 2048] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import tvm
from tvm import relax


def projection(rows: int, features: int) -> tvm.IRModule:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([rows, features], "float32"))
    w = relax.Var("w", relax.TensorType([features, features], "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.matmul(x, relax.op.permute_dims(w)))
        bb.emit_func_output(out)
    return bb.get()


def best_seconds(function, repeat: int) -> float:
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=128)
    parser.add_argument("--features", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, k = args.rows, args.features
    flops = 2 * n * k * k
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, k), dtype="float32")
    w = rng.standard_normal((k, k), dtype="float32")
    vm = relax.VirtualMachine(relax.build(projection(n, k), target="llvm"), tvm.cpu())
    tx, tw = tvm.runtime.tensor(x), tvm.runtime.tensor(w)
    tvm_s = best_seconds(lambda: vm["main"](tx, tw), args.repeat)
    blas_s = best_seconds(lambda: x @ w.T, max(args.repeat, 10))
    np.testing.assert_allclose(vm["main"](tx, tw).numpy(), x @ w.T, rtol=1e-3, atol=1e-2)
    print(f"x[{n}, {k}] @ W[{k}, {k}].T, float32, measured on this host:")
    print(f"  TVM default llvm build: {tvm_s * 1e3:10.1f} ms  {flops / tvm_s / 1e9:8.2f} GFLOP/s")
    print(f"  numpy (OpenBLAS):       {blas_s * 1e3:10.1f} ms  {flops / blas_s / 1e9:8.2f} GFLOP/s")
    print(f"  ratio TVM / OpenBLAS:   {blas_s / tvm_s:.4f}")


if __name__ == "__main__":
    main()
