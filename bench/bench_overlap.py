# SPDX-License-Identifier: Apache-2.0
"""Overlap of an NNAPI subgraph with independent host code, measured side by side in one run.

A model with two independent branches: a chain of matmul + relu layers (one NNAPI subgraph,
run by the mock on this machine) and a chain of cumulative sums (host code: NNAPI has no
cumulative sum), added at the end. Built twice, with ``overlap=True`` (the subgraph is started,
the VM runs the host branch meanwhile, the join waits before the sum) and ``overlap=False``
(the subgraph runs to completion first); calls alternate between the two, and the report gives
the median wall-clock time of each and their ratio, with the time of each branch alone.

    python bench/bench_overlap.py [--rows 1024] [--features 256] [--layers 16]
                                  [--scan 512] [--scans 6] [--repeat 30] [--profile NAME]

What the numbers mean here: the mock computes on this machine's cores, the host branch too,
so the gain is bounded by how much of the two the cores can run at once (a phone's NPU or GPU
would not share the CPU with the host code). ``tvm-nnapi estimate`` models the same overlap on
a profile's devices (``modelled_overlap_us``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import tvm
from tvm import relax

import tvm_nnapi
from tvm_nnapi import runtime


def two_branches(rows: int, features: int, layers: int, scan: int, scans: int) -> tvm.IRModule:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([rows, features], "float32"))
    y = relax.Var("y", relax.TensorType([scan, scan], "float32"))
    weights = [relax.const(np.full([features, features], 1.0 / features, "float32"))] * layers
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = x
            for w in weights:
                a = bb.emit(relax.op.nn.relu(relax.op.matmul(a, w)))
            b = y
            for i in range(scans):
                b = bb.emit(relax.op.cumsum(b, axis=i % 2))
            out = bb.emit_output(relax.op.add(relax.op.sum(a), relax.op.sum(b)))
        bb.emit_func_output(out)
    return bb.get()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--scan", type=int, default=512, help="side of the host branch's matrix")
    parser.add_argument("--scans", type=int, default=6, help="cumulative sums in the host branch")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--profile",
        default="snapdragon-8-gen-2",
        help="the profile of the modelled timeline printed after the measurement",
    )
    args = parser.parse_args()

    mod = two_branches(args.rows, args.features, args.layers, args.scan, args.scans)
    print("building (overlap on and off) ...", flush=True)
    builds = {
        "overlap": tvm_nnapi.build(mod, overlap=True),
        "sequential": tvm_nnapi.build(mod, overlap=False),
    }
    rng = np.random.default_rng(0)
    x = tvm.runtime.tensor(rng.standard_normal([args.rows, args.features]).astype("float32"))
    y = tvm.runtime.tensor(rng.standard_normal([args.scan, args.scan]).astype("float32"))
    vms = {name: relax.VirtualMachine(exe, tvm.cpu()) for name, exe in builds.items()}
    results = {name: vm["main"](x, y).numpy() for name, vm in vms.items()}  # compiles NNAPI
    if not np.array_equal(results["overlap"], results["sequential"]):
        raise SystemExit(f"results differ: {results}")
    times: dict[str, list[float]] = {name: [] for name in vms}
    for _ in range(args.repeat):
        for name, vm in vms.items():
            start = time.perf_counter()
            vm["main"](x, y)
            times[name].append(time.perf_counter() - start)
    started = sum(s["started_calls"] for s in runtime.stats(builds["overlap"]).values())
    nnapi_ms = statistics.median(
        s["execute_time_ns"] / max(s["nnapi_calls"], 1) / 1e6
        for s in runtime.stats(builds["sequential"]).values()
    )
    median = {name: statistics.median(values) * 1e3 for name, values in times.items()}
    print(f"\nMEASURED on this machine, median of {args.repeat} calls each, alternating:")
    print(f"  sequential build: {median['sequential']:8.2f} ms")
    print(f"  overlapped build: {median['overlap']:8.2f} ms  ({started} calls started)")
    print(f"  NNAPI subgraph alone (runtime's execute time, sequential build): {nnapi_ms:.2f} ms")
    print(
        f"  host branch (sequential minus the subgraph): {median['sequential'] - nnapi_ms:.2f} ms"
    )
    print(f"  ratio sequential / overlapped: {median['sequential'] / median['overlap']:.2f}x")

    from tvm_nnapi.tools.estimate import PreparedEstimate

    estimate = PreparedEstimate(mod).run(args.profile)
    print(f"\nMODELLED on {args.profile} (tvm-nnapi estimate):")
    print(f"  serial program:     {estimate.modelled_serial_nnapi_program_us / 1e3:8.3f} ms")
    print(f"  overlapped program: {estimate.modelled_nnapi_program_us / 1e3:8.3f} ms")
    print(f"  hidden by overlap:  {estimate.modelled_overlap_us / 1e3:8.3f} ms")


if __name__ == "__main__":
    main()
