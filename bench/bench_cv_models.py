# SPDX-License-Identifier: Apache-2.0
"""CV networks: the NNAPI-offloaded build on the mock vs TVM's llvm build, side by side.

Reports, per network: NNAPI subgraphs, share of FLOPs offloaded, and the steady-state latency of
one inference of each build measured alternately in the same process (median of --repeat runs),
with their ratio. The mock's numbers are host measurements of the reference kernels, not a phone
estimate: the device profiles' cost model gives modelled phone times.

    python bench/bench_cv_models.py [--resolution 224] [--width 1.0] [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import tvm
from tvm import relax

import tvm_nnapi
from tvm_nnapi.models import mobilenet_v2


def measure(functions: dict[str, callable], repeat: int) -> dict[str, float]:
    """Median seconds per call, calling the functions alternately (same machine state)."""
    samples: dict[str, list[float]] = {name: [] for name in functions}
    for function in functions.values():
        function()  # warm-up (first NNAPI call compiles the model)
    for _ in range(repeat):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resolution", type=int, default=224)
    parser.add_argument("--width", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--layout", default="NCHW", choices=["NCHW", "NHWC"])
    args = parser.parse_args()

    networks = {
        f"mobilenet_v2 (width {args.width}, {args.resolution}px, {args.layout})": mobilenet_v2(
            width=args.width, resolution=args.resolution, layout=args.layout
        )
    }
    print(
        f"{'network':48s} {'subgraphs':>9s} {'FLOPs on NNAPI':>15s} {'mock ms':>9s} "
        f"{'llvm ms':>9s} {'mock/llvm':>9s}"
    )
    for name, (mod, info) in networks.items():
        report = tvm_nnapi.partition_with_report(mod)
        summary = tvm_nnapi.offload_summary(report.module)
        nnapi_vm = relax.VirtualMachine(tvm_nnapi.build(report.module), tvm.cpu())
        host_vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
        image = tvm.runtime.tensor(
            np.random.default_rng(0).standard_normal(info["input_shape"]).astype(np.float32)
        )
        nnapi_main, host_main = nnapi_vm["main"], host_vm["main"]
        times = measure(
            {"mock": lambda f=nnapi_main, x=image: f(x), "llvm": lambda f=host_main, x=image: f(x)},
            args.repeat,
        )
        print(
            f"{name:48s} {len(report.subgraphs):9d} {summary.offloaded_flop_share:15.1%} "
            f"{times['mock'] * 1e3:9.2f} {times['llvm'] * 1e3:9.2f} "
            f"{times['mock'] / times['llvm']:9.2f}"
        )


if __name__ == "__main__":
    main()
