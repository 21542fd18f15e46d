# SPDX-License-Identifier: Apache-2.0
"""Runtime overheads, measured side by side in one run.

1. Per-call time of a cached dynamic-shape subgraph (symbolic seq_len, signature already
   compiled) vs the same subgraph built with static shapes. Goal: within 10%.
2. NNAPI compilation of a subgraph: cold (empty compilation cache directory) vs cache hit
   (a second module compiled with the same cache directory), as measured on this host by the
   runtime's statistics. On the mock, the cost model's modelled compilation times are printed
   too when the library provides them (labelled modelled).

    python bench/bench_runtime.py [--rows 64] [--features 256] [--repeat 2000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
import tvm
from tvm import relax

import mock_nnapi
import tvm_nnapi
from tvm_nnapi import runtime


def projection(rows: int | str, features: int) -> tvm.IRModule:
    seq = tvm.tirx.Var("seq_len", "int64") if isinstance(rows, str) else rows
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([seq, features], "float32"))
    w = relax.Var("w", relax.TensorType([features, features], "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(relax.op.matmul(x, w))
            out = bb.emit_output(relax.op.add(y, x))
        bb.emit_func_output(out)
    return bb.get()


def per_call(functions: dict[str, callable], repeat: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in functions}
    for function in functions.values():
        function()
    for _ in range(repeat):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = tvm.runtime.tensor(rng.standard_normal((args.rows, args.features)).astype(np.float32))
    w = tvm.runtime.tensor(rng.standard_normal((args.features, args.features)).astype(np.float32))

    dynamic = relax.VirtualMachine(tvm_nnapi.build(projection("seq", args.features)), tvm.cpu())
    static = relax.VirtualMachine(tvm_nnapi.build(projection(args.rows, args.features)), tvm.cpu())
    fd, fs = dynamic["main"], static["main"]
    times = per_call({"dynamic": lambda: fd(x, w), "static": lambda: fs(x, w)}, args.repeat)
    ratio = times["dynamic"] / times["static"]
    print(f"1. per-call time, {args.rows}x{args.features} matmul + add, median of {args.repeat}")
    print(f"   dynamic (cached signature): {times['dynamic'] * 1e6:9.1f} us")
    print(f"   static:                     {times['static'] * 1e6:9.1f} us")
    print(
        f"   dynamic / static:           {ratio:9.3f}  (goal <= 1.10: "
        f"{'met' if ratio <= 1.10 else 'not met'})"
    )

    with tempfile.TemporaryDirectory() as cache_dir:
        saved = runtime.options_in_effect()
        runtime.configure(cache_dir=cache_dir)
        results = {}
        for label in ("cold", "cache hit"):
            executable = tvm_nnapi.build(projection("seq", args.features))
            hits_before = mock_nnapi.counter("compilation_cache_hits")
            runtime.precompile(executable, seq_len=[args.rows])
            (stats,) = runtime.stats(executable).values()
            results[label] = (
                stats["compile_time_ns"] / 1e6,
                mock_nnapi.counter("compilation_cache_hits") - hits_before,
                stats["modelled_compile_time_ns"] / 1e6,
            )
        runtime.configure(**saved)
    print("2. NNAPI compilation of the subgraph")
    print(f"   {'':10s} {'measured here':>14s} {'modelled (phone)':>17s}  mock cache hits")
    for label, (measured, hits, modelled) in results.items():
        print(f"   {label:10s} {measured:11.3f} ms {modelled:14.3f} ms  {hits}")
    cold, hit = results["cold"], results["cache hit"]
    print(
        f"   cold / hit: measured {cold[0] / max(hit[0], 1e-9):.2f}, "
        f"modelled {cold[2] / max(hit[2], 1e-9):.2f}"
    )


if __name__ == "__main__":
    main()
