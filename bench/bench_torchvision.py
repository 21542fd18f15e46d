# SPDX-License-Identifier: Apache-2.0
"""torchvision's CV networks (random weights, torch.export + TVM's PyTorch frontend): the
NNAPI-offloaded build on the mock vs TVM's llvm build of the same Relax module, side by side.

Reports, per network: Relax operators and NNAPI operations in the NNAPI subgraphs, operators left
on the host, NNAPI subgraphs, share of FLOPs offloaded, the largest difference of the logits from
the llvm build (absolute, and relative to the largest logit), and the steady-state latency of one
inference of each build measured alternately in the same process (median of --repeat runs),
with their ratio. The mock's numbers are host measurements of its reference kernels, not a phone
estimate: the device profiles' cost model gives modelled phone times.

Needs the `models` extra (torch, torchvision).

    python bench/bench_torchvision.py [--resolution 224] [--repeat 20] [--networks ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import tvm
from bench_cv_models import measure  # same alternating, median-of-runs measurement
from tvm import relax

import tvm_nnapi
from tvm_nnapi.compiler.codegen import lower_function
from tvm_nnapi.models.torchvision_models import TORCHVISION_NETWORKS, torchvision_model


def nnapi_operations(mod: tvm.IRModule, subgraphs: list[str]) -> int:
    """NNAPI operations the subgraphs are lowered to."""
    return sum(len(lower_function(mod[name]).operations) for name in subgraphs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resolution", type=int, default=224)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--networks", nargs="+", default=list(TORCHVISION_NETWORKS))
    args = parser.parse_args()

    header = (
        f"{'network':20s} {'relax ops':>9s} {'NNAPI ops':>9s} {'host ops':>8s} "
        f"{'subgraphs':>9s} {'FLOPs on NNAPI':>14s} {'GFLOPs':>7s} {'max |diff|':>10s} "
        f"{'rel diff':>8s} {'mock ms':>8s} {'llvm ms':>8s} {'mock/llvm':>9s}"
    )
    print(f"{args.resolution}x{args.resolution}, batch 1, float32, NCHW; median of {args.repeat}")
    print(header)
    for name in args.networks:
        start = time.perf_counter()
        model = torchvision_model(name, resolution=args.resolution)
        report = tvm_nnapi.partition_with_report(model.module)
        summary = tvm_nnapi.offload_summary(report.module)
        nnapi_vm = relax.VirtualMachine(tvm_nnapi.build(report.module), tvm.cpu())
        host_vm = relax.VirtualMachine(relax.build(model.module, target="llvm"), tvm.cpu())
        prepared = time.perf_counter() - start
        image = tvm.runtime.tensor(model.random_input())
        nnapi_main, host_main = nnapi_vm["main"], host_vm["main"]
        logits, expected = nnapi_main(image).numpy(), host_main(image).numpy()
        difference = float(np.abs(logits - expected).max())
        times = measure(
            {"mock": lambda f=nnapi_main, x=image: f(x), "llvm": lambda f=host_main, x=image: f(x)},
            args.repeat,
        )
        total = summary.offloaded_flops + summary.host_flops
        print(
            f"{name:20s} {summary.offloaded_operators:9d} "
            f"{nnapi_operations(report.module, report.subgraphs):9d} "
            f"{summary.host_operators:8d} {len(report.subgraphs):9d} "
            f"{summary.offloaded_flop_share:14.1%} {total / 1e9:7.3f} {difference:10.2e} "
            f"{difference / float(np.abs(expected).max()):8.1e} {times['mock'] * 1e3:8.2f} "
            f"{times['llvm'] * 1e3:8.2f} {times['mock'] / times['llvm']:9.2f}"
        )
        for refusal in report.refusals:
            print(f"    host: {refusal}")
        print(f"    (import, partition and both builds: {prepared:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
