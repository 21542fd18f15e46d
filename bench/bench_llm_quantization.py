# SPDX-License-Identifier: Apache-2.0
"""MLC-LLM's quantized weights (q4f16_1, q4f32_1): accuracy of the NNAPI weight paths, their
modelled cost on a phone, and what loading and estimating cost here.

Four parts, each printed as it finishes:

1. **Accuracy (MEASURED)**: ``tvm_nnapi.llm.quantized_accuracy.accuracy_check`` on the tiny
   models: top-1 agreement and largest logit error of each weight path (host build of the
   quantized model; NNAPI with weights dequantized on the host at every call; NNAPI with the
   weights dequantized once into resident constants; the int8 path's host and NNAPI builds)
   against the float32 model of the same weights.
2. **Cost (MODELLED)**: prefill and decode of ``--estimate-model`` on ``--profile`` for the
   float formats and each quantized path (LlmEstimator; the int8 path: Int8Estimator, from its
   own graphs), NNAPI-offloaded and all-host.
3. **Loading memory (MEASURED, child process)**: peak resident memory growth while random
   weights of ``--load-model`` (default TinyLlama-1.1B) are made and quantized one matrix at a
   time, as a multiple of the quantized weights' size (goal: below 2x).
4. **Estimating a 7B model (MEASURED, child process)**: wall time and peak memory of
   ``tvm-nnapi llm bench --estimate-model llama-2-7b --quantization q4f16_1`` (goal: under a
   minute; no 7B weights are allocated, so the peak stays far below their 3.5 GiB).

    python bench/bench_llm_quantization.py [--profile snapdragon-8-gen-2]
        [--estimate-model llama-2-7b] [--load-model tinyllama-1.1b] [--skip PART,...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

_LOAD_CHILD = """
import json, resource, sys, time
from tvm_nnapi import llm
from tvm_nnapi.llm.engine import load_weights
from tvm_nnapi.llm.model import export_model
config = llm.get_config(sys.argv[1])
_, named, _ = export_model(config, quantization=sys.argv[2])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
arrays = load_weights(config, sys.argv[2], named, None, 0)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"quantized_bytes": sum(a.nbytes for a in arrays), "seconds": seconds,
                  "rss_before_bytes": before * 1024, "rss_peak_bytes": peak * 1024}))
"""


def accuracy() -> None:
    from tvm_nnapi.llm import quantized_accuracy

    for quantization in ("q4f16_1", "q4f32_1"):
        for model in ("tiny-llama", "tiny-qwen"):
            print(quantized_accuracy.accuracy_check(quantization, model).format(), flush=True)


def cost(model: str, profile: str, prompt: int, context: int) -> None:
    from tvm_nnapi.experiments.llm import LlmEstimator

    print(
        f"MODELLED on {profile}: {model}, prefill of {prompt} tokens and one decode step with "
        f"{context} tokens cached (ms; host = the all-host program, profile-cpu preset)"
    )
    print(
        f"  {'format':<9} {'NNAPI weights':<34} {'prefill':>9} {'host':>9} "
        f"{'decode':>9} {'host':>9}"
    )
    rows = [
        ("q0f32", "inputs at every call", "input"),
        ("q0f32", "resident constants", "resident"),
        ("q0f16", "inputs at every call", "input"),
        ("q0f16", "resident constants", "resident"),
        ("q4f16_1", "dequantized on the host per call", "input"),
    ]
    estimators: dict[str, LlmEstimator] = {}
    for name, label, weights in rows:
        estimator = estimators.setdefault(name, LlmEstimator(model, quantization=name))
        prefill = estimator.estimate("prefill", prompt, profile, weights=weights)
        decode = estimator.estimate("decode", context, profile, weights=weights)
        print(
            f"  {name:<9} {label:<34} {prefill.modelled_nnapi_program_us / 1e3:>9.1f} "
            f"{prefill.modelled_host_program_us / 1e3:>9.1f} "
            f"{decode.modelled_nnapi_program_us / 1e3:>9.1f} "
            f"{decode.modelled_host_program_us / 1e3:>9.1f}",
            flush=True,
        )
    from tvm_nnapi.llm import get_config
    from tvm_nnapi.tools.llm_int8 import Int8Estimator

    # The int8 path costed from its own graphs (QUANTIZE -> CONV_2D per-channel -> DEQUANTIZE).
    int8 = Int8Estimator(get_config(model), "float16")
    prefill = int8.estimate("prefill", prompt, profile)
    decode = int8.estimate("decode", context, profile)
    print(
        f"  {'q4f16_1':<9} {'int8 (W8A8), resident constants':<34} "
        f"{prefill.modelled_nnapi_program_us / 1e3:>9.1f} "
        f"{prefill.modelled_host_program_us / 1e3:>9.1f} "
        f"{decode.modelled_nnapi_program_us / 1e3:>9.1f} "
        f"{decode.modelled_host_program_us / 1e3:>9.1f}",
        flush=True,
    )
    print(
        "  q4f16_1 dequantized once at load into resident constants costs what q0f16 with "
        "resident constants costs (the NNAPI subgraphs hold the same float16 weights); the "
        "int8 row's host column is the all-host build of the int8 QDQ module."
    )


def loading(model: str, quantization: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _LOAD_CHILD, model, quantization],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    r = json.loads(out.strip().splitlines()[-1])
    growth = r["rss_peak_bytes"] - r["rss_before_bytes"]
    print(
        f"MEASURED loading {model} ({quantization}, random weights): quantized weights "
        f"{r['quantized_bytes'] / 2**20:.0f} MiB, peak memory growth {growth / 2**20:.0f} MiB = "
        f"{growth / r['quantized_bytes']:.2f}x the quantized weights (goal < 2x), "
        f"{r['seconds']:.1f} s",
        flush=True,
    )


def estimate_7b(model: str, profile: str) -> None:
    argv = [sys.executable, "-m", "tvm_nnapi", "llm", "bench", "--estimate-model", model]
    argv += ["--quantization", "q4f16_1", "--profile", profile, "--json", "--repeat", "1"]
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    status = "ok" if result.returncode == 0 else f"exit {result.returncode}: {result.stderr[-300:]}"
    print(
        f"MEASURED `tvm-nnapi llm bench --estimate-model {model} --quantization q4f16_1`: "
        f"{seconds:.1f} s wall (goal < 60 s), peak memory of the child processes "
        f"{peak / 2**20:.0f} MiB ({status})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="snapdragon-8-gen-2")
    parser.add_argument("--estimate-model", default="llama-2-7b")
    parser.add_argument("--load-model", default="tinyllama-1.1b")
    parser.add_argument("--prompt-length", type=int, default=128)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument(
        "--skip", default="", help="comma-separated parts to skip: accuracy,cost,loading,estimate"
    )
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    if "accuracy" not in skip:
        accuracy()
    if "cost" not in skip:
        cost(args.estimate_model, args.profile, args.prompt_length, args.context)
    if "loading" not in skip:
        loading(args.load_model, "q4f16_1")
    if "estimate" not in skip:
        estimate_7b(args.estimate_model, args.profile)


if __name__ == "__main__":
    main()
