# SPDX-License-Identifier: Apache-2.0
"""The mock's kernels against the libraries that set the bar, MEASURED side by side.

One entry point for every row, each measured in one process with the same thread
count on both sides, alternating the two sides over several rounds (the ratio reported is the
median of the per-round ratios, robust to other load on a shared machine):

- roofline: the machine's measured fp32 GEMM peak (numpy's OpenBLAS sgemm, best of several
  runs) and memory bandwidth (a large np.copyto): the line every row is read against;
- gemm: FULLY_CONNECTED ([num_units, input_size] constant weights, the layout
  ``matmul(x, permute_dims(w))`` lowers to) and BATCH_MATMUL at every projection of the LLM
  configurations (TinyLlama-1.1B, Llama-2-7B, Mistral-7B) for decode (1 token) and prefill of 32 to
  1024 tokens, vs numpy's matmul on the same operands; goal >= 1.0x;
- conv: every distinct CONV_2D / DEPTHWISE_CONV_2D layer of MobileNetV2, MobileNetV3-Large and
  EfficientNet-B0 (bench/conv_shapes.json, recorded from torchvision by ``--record-shapes``) vs
  onnxruntime's CPU provider; goal >= 0.8x;
- int8: the same conv layers quantised (uint8 activations TENSOR_QUANT8_ASYMM, int8 filters per
  output channel TENSOR_QUANT8_SYMM_PER_CHANNEL, int32 bias) vs onnxruntime's QLinearConv (u8s8),
  and FULLY_CONNECTED (uint8 activations and weights: NNAPI's FULLY_CONNECTED takes weights of
  the input's type) vs onnxruntime's QGemm on the same operands, at every projection of
  TinyLlama-1.1B and Llama-2-7B for decode (1 token) and a prefill of 128 tokens; goal >= 0.5x;
- fp16: the mock's relaxed fp32 (relaxComputationFloat32toFloat16, on a GPU device of the
  snapdragon-8-gen-2 profile, whose fp32 outputs the mock rounds to fp16) and TENSOR_FLOAT16
  models vs the same model in fp32 on the same device, for the largest and smallest pointwise,
  3x3 and depthwise conv layers and TinyLlama-1.1B's projections (decode and 128 tokens);
  ratio = fp32 time / its time, goal >= 1/1.5x;
- memory-bound: pooling, elementwise and softmax vs numpy; goal >= 1/1.5x;
- networks: the three networks built by tvm_nnapi (NNAPI subgraphs on the mock) vs torch eager;
  goal >= 1/1.2x; the tiny-llama prefill of the NNAPI build vs the host llvm build
  (``tvm-nnapi llm bench``); goal >= 1.0x;
- overhead: one ADD of 1x16 per execution, the mock vs onnxruntime's run of the same node;
- memory: the peak resident memory of a TinyLlama-1.1B-configuration prefill of 128 tokens
  (random weights, the NNAPI build) against the size of its weights; goal <= 1.3x.

A ratio > 1 means the mock is faster. The mock runs the way repeated inference does: one
reusable ANeuralNetworksExecution with its buffers bound once (numpy writes into ``out=``,
onnxruntime uses an IOBinding). The mock's cost model (modelled phone times) plays no part: every
number here is a host measurement.

    python bench/performance.py                 # everything; writes docs/performance.md
    python bench/performance.py --quick         # small shapes, seconds (a smoke test of this code)
    python bench/performance.py --only gemm,conv --rounds 7
    python bench/performance.py --only int8,fp16 --openblas-coretype ''
    python bench/performance.py --record-shapes # re-enumerate the conv layers (needs torch)

Needs numpy; onnxruntime and onnx for the conv, int8 and overhead rows, torch and torchvision (the
`models` extra) for the networks; a missing library skips its rows with a message.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES_FILE = Path(__file__).resolve().parent / "conv_shapes.json"
DOC = ROOT / "docs" / "performance.md"
SECTIONS = (
    "roofline",
    "gemm",
    "conv",
    "int8",
    "fp16",
    "memory-bound",
    "networks",
    "overhead",
    "memory",
)
NETWORKS = ("mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=0, help="alternations per row (default 5)")
    parser.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma list of {', '.join(SECTIONS)}"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small shapes and 2 rounds, no networks and no 1B-parameter run (checks the code)",
    )
    parser.add_argument(
        "--out",
        help="write the markdown table here (default: docs/performance.md for a full run, "
        "nothing with --quick or --only)",
    )
    parser.add_argument(
        "--record-shapes",
        action="store_true",
        help=f"enumerate the conv layers from torchvision into {SHAPES_FILE.name} and exit",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=1024,
        help="longest prefill of the GEMM rows (default %(default)s; of 1, 32, 128, 512, 1024)",
    )
    parser.add_argument(
        "--openblas-coretype",
        metavar="CORE",
        help="OPENBLAS_CORETYPE for both sides' OpenBLAS (numpy's and the mock's), set before they "
        "load; '' unsets it (OpenBLAS's own detection); default: the environment's",
    )
    parser.add_argument("--memory-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = set(args.only.split(",")) - set(SECTIONS)
    if unknown:
        parser.error(f"--only: unknown section(s) {', '.join(sorted(unknown))}")
    if args.rounds <= 0:
        args.rounds = 2 if args.quick else 5
    return args


ARGS = parse_args()
# Thread counts must be fixed before the BLAS libraries load.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[_variable] = str(ARGS.threads)
# OpenBLAS's helper threads (numpy's) spin for 2^THREAD_TIMEOUT cycles after each threaded call
# before they sleep: with the library's default they were measured spinning for more than half a
# second, which wait_until_quiet would wait out before every mock sample. 2^20 cycles (under a
# millisecond) still covers the gap between the back-to-back calls of one sample.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")
# So are OpenBLAS's kernels (it reads OPENBLAS_CORETYPE once, when it loads).
if ARGS.openblas_coretype == "":
    os.environ.pop("OPENBLAS_CORETYPE", None)
elif ARGS.openblas_coretype:
    os.environ["OPENBLAS_CORETYPE"] = ARGS.openblas_coretype

import numpy as np  # noqa: E402


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---- measurement ---------------------------------------------------------------------------


def _loops_for(function: Callable[[], object], target_seconds: float) -> int:
    start = time.perf_counter()
    function()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, min(10000, int(target_seconds / once)))


BEST_RATIO: list[float] = []  # the ratio of the best times of the last side_by_side


def _other_threads_running() -> bool | None:
    """Whether a thread of this process other than the calling one is running or runnable
    (state R in /proc/self/task/<tid>/stat), None where that cannot be read.

    The state, not CPU time: a thread's CPU time in schedstat advances only at scheduler events
    (the timer tick, 4 ms here), so a thread spinning on another core can show no CPU for a 2 ms
    window; its state is R at every look."""
    me = threading.get_native_id()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for task in tasks:
        if int(task) == me:
            continue
        try:
            stat = Path(f"/proc/self/task/{task}/stat").read_text()
        except OSError:
            continue  # the thread ended
        if stat.rsplit(")", 1)[-1].split()[:1] == ["R"]:
            return True
    return False


# Consecutive looks, 1 ms apart, that must find every other thread asleep.
QUIET_LOOKS = 3


def wait_until_quiet(limit: float = 1.0) -> None:
    """Waits (up to `limit` seconds) until no other thread of this process runs.

    After a call, OpenBLAS's threads (numpy), onnxruntime's and OpenMP's (torch) keep spinning for
    a while, waiting for more work; measured right after them, the other side would share its
    cores with those spinning threads (measured: numpy's OpenBLAS thread took 13 ms of a core
    during 39 ms of mock GEMMs that ran in 24 ms after a pause; onnxruntime's worker spins about
    40 ms after its last run, which halved the mock's next 1x1-convolution sample). Each sample
    starts once every helper thread of either side has gone to sleep."""
    if _other_threads_running() is None:
        time.sleep(0.05)
        return
    deadline = time.perf_counter() + limit
    asleep = 0
    while asleep < QUIET_LOOKS and time.perf_counter() < deadline:
        time.sleep(0.001)
        asleep = 0 if _other_threads_running() else asleep + 1


# Untimed calls before each sample: at least this long, and at least one call.
WARM_UP_SECONDS = 0.005


def warm_up(function: Callable[[], object]) -> None:
    """Calls `function` untimed for WARM_UP_SECONDS (at least once).

    After the quiet wait the cores have idled: the first calls of either side ran 2-5x slower
    than the steady state (measured, 1x1 convolution 112x112x16 -> 96: the mock 1.0 ms falling
    to 0.19 ms over 8 calls, onnxruntime 0.9 ms to 0.20 ms over 5; the virtual CPUs' wake-up and
    clock ramp, and each side's sleeping threads). The samples measure the steady state, as in a
    model whose operations follow each other."""
    deadline = time.perf_counter() + WARM_UP_SECONDS
    function()
    while time.perf_counter() < deadline:
        function()


def side_by_side(
    ours: Callable[[], object], reference: Callable[[], object], rounds: int
) -> tuple[float, float, float]:
    """(median seconds of ours, of the reference, median of the per-round ratios ref/ours).

    Each side is warmed up, then both run alternately `rounds` times; a short call is looped so
    that one sample lasts about 20 ms, and each sample starts once the other side's helper
    threads have stopped spinning (wait_until_quiet) and its own calls have run untimed for a
    few milliseconds (warm_up). The ratio of the best times (each side's
    least disturbed round) is left in BEST_RATIO[0]."""
    ours()
    reference()
    target = 0.005 if ARGS.quick else 0.02
    loops_ours, loops_ref = _loops_for(ours, target), _loops_for(reference, target)
    t_ours, t_ref = [], []
    for _ in range(rounds):
        for loops, function, samples in (
            (loops_ours, ours, t_ours),
            (loops_ref, reference, t_ref),
        ):
            wait_until_quiet()
            warm_up(function)
            start = time.perf_counter()
            for _ in range(loops):
                function()
            samples.append((time.perf_counter() - start) / loops)
    ratio = statistics.median(r / o for o, r in zip(t_ours, t_ref, strict=True))
    BEST_RATIO[:] = [min(t_ref) / min(t_ours)]
    return statistics.median(t_ours), statistics.median(t_ref), ratio


@dataclass
class Row:
    section: str
    label: str
    reference: str
    ours_s: float
    ref_s: float
    ratio: float
    goal: float  # ratio >= goal (for memory: ratio <= goal)
    work: float = 0.0  # FLOPs (or bytes for memory-bound rows), 0: not shown
    unit: str = "GFLOP/s"
    note: str = ""
    best_ratio: float = 0.0

    def __post_init__(self) -> None:
        if not self.best_ratio and BEST_RATIO and self.section not in ("memory",):
            self.best_ratio = BEST_RATIO[0]

    @property
    def met(self) -> bool:
        return self.ratio <= self.goal if self.section == "memory" else self.ratio >= self.goal


ROWS: list[Row] = []
NOTES: list[str] = []


def record(row: Row) -> None:
    ROWS.append(row)
    BEST_RATIO.clear()
    rate = ""
    if row.work:
        rate = f"{row.work / row.ours_s / 1e9:9.1f} {row.work / row.ref_s / 1e9:9.1f} {row.unit}"
    flag = "" if row.met else "  MISS"
    print(
        f"{row.section:<12} {row.label:<58} {row.ours_s * 1e3:10.3f} {row.ref_s * 1e3:10.3f} ms "
        f"{row.ratio:6.2f}x (goal {row.goal:.2f}){flag} best {row.best_ratio:5.2f}x {rate}",
        flush=True,
    )


def skip(section: str, reason: str) -> None:
    message = f"{section}: skipped ({reason})"
    NOTES.append(message)
    progress(message)


# ---- the mock --------------------------------------------------------------------------------


def mock():
    import mock_nnapi

    return mock_nnapi


# The devices mock_runner compiles for (empty: ANeuralNetworksCompilation_create, all devices).
MOCK_DEVICES: list = []


def mock_runner(model, feeds: list[np.ndarray], out_shape: tuple[int, ...], dtype=np.float32):
    """One reusable execution with its buffers bound once; a run is one compute call."""
    m = mock()
    compilation = m.Compilation(model, MOCK_DEVICES or None).finish()
    out = np.empty(out_shape, dtype)
    execution = m.Execution(compilation)
    m.api.call("ANeuralNetworksExecution_setReusable", execution.handle, True)
    for index, array in enumerate(feeds):
        m.api.call(
            "ANeuralNetworksExecution_setInput",
            execution.handle,
            index,
            None,
            array.ctypes.data_as(ctypes.c_void_p),
            array.nbytes,
        )
    m.api.call(
        "ANeuralNetworksExecution_setOutput",
        execution.handle,
        0,
        None,
        out.ctypes.data_as(ctypes.c_void_p),
        out.nbytes,
    )
    compute = m.api.lib().ANeuralNetworksExecution_compute
    handle = execution.handle

    def run() -> np.ndarray:
        m.api.check("ANeuralNetworksExecution_compute", compute(handle))
        return out

    run.keep_alive = (model, compilation, execution, feeds)  # type: ignore[attr-defined]
    return run


def one_operation(operation: int, inputs: list, out_shape, feeds: list[np.ndarray]):
    """A model of one operation. `inputs` holds arrays (model inputs when they are in `feeds`,
    by identity; else constants) and ('i32'|'bool'|'f32', value) scalars."""
    m = mock()
    model = m.Model()
    indices, model_inputs = [], []
    for value in inputs:
        if isinstance(value, tuple):
            codes = {"i32": m.OperandCode.INT32, "bool": m.OperandCode.BOOL}
            code = codes.get(value[0], m.OperandCode.FLOAT32)
            indices.append(model.add_scalar(code, value[1]))
        elif any(value is feed for feed in feeds):
            index = model.add_operand(m.OperandCode.TENSOR_FLOAT32, value.shape)
            indices.append(index)
            model_inputs.append(index)
        else:
            indices.append(model.add_constant(m.OperandCode.TENSOR_FLOAT32, value))
    out = model.add_operand(m.OperandCode.TENSOR_FLOAT32, out_shape)
    model.add_operation(operation, indices, [out])
    model.identify_inputs_and_outputs(model_inputs, [out])
    model.finish()
    return mock_runner(model, feeds, tuple(out_shape))


# ---- BLAS kernels ----------------------------------------------------------------------------

BLAS: dict[str, str] = {}


def numpy_blas_core() -> str:
    """The kernel set numpy's OpenBLAS (scipy-openblas64) chose, '' when it cannot be asked."""
    paths = set()
    try:
        maps = Path("/proc/self/maps").read_text().splitlines()
    except OSError:  # not Linux
        return ""
    for line in maps:
        fields = line.split()
        if len(fields) >= 6 and "openblas" in os.path.basename(fields[-1]):
            paths.add(fields[-1])
    for path in sorted(paths):
        library = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_corename64_", "openblas_get_corename64_"):
            function = getattr(library, name, None)
            if function is not None:
                function.restype = ctypes.c_char_p
                return function().decode()
    return ""


def blas_kernels() -> None:
    """Records and prints which OpenBLAS kernel set each side runs (the GEMM parity rows compare
    the same library: with the same kernels, or the line says which differ)."""
    from mock_nnapi import control

    info = control.blas_info()
    np.matmul(np.ones((64, 64), np.float32), np.ones((64, 64), np.float32))  # numpy's BLAS loaded
    BLAS["mock"] = info["core"]
    BLAS["mock_source"] = info["core_source"]
    BLAS["numpy"] = numpy_blas_core() or "unknown"
    same = "the same kernels" if BLAS["mock"] == BLAS["numpy"] else "DIFFERENT kernels"
    BLAS["line"] = (
        f"OpenBLAS kernels: mock {BLAS['mock']} ({BLAS['mock_source']}), numpy {BLAS['numpy']} "
        f"({same})"
    )
    progress(BLAS["line"])


# ---- roofline --------------------------------------------------------------------------------

PEAK: dict[str, float] = {}


def roofline() -> None:
    size = 512 if ARGS.quick else 2048
    a = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((size, size), dtype=np.float32)
    c = np.empty_like(a)
    np.matmul(a, b, out=c)
    best = math.inf
    for _ in range(3 if ARGS.quick else 10):
        start = time.perf_counter()
        np.matmul(a, b, out=c)
        best = min(best, time.perf_counter() - start)
    PEAK["gflops"] = 2.0 * size**3 / best / 1e9
    PEAK["gemm_size"] = size
    PEAK["runs"] = 3 if ARGS.quick else 10
    PEAK["kernels"] = BLAS.get("numpy", "")
    if os.environ.get("OPENBLAS_CORETYPE"):
        # The machine's peak is that of the kernels OpenBLAS picks for this CPU on its own.
        own = own_kernel_peak(size, PEAK["runs"])
        if own:
            PEAK["forced_gflops"], PEAK["forced_kernels"] = PEAK["gflops"], PEAK["kernels"]
            PEAK["gflops"], PEAK["kernels"] = own
    elements = (1 << 22) if ARGS.quick else (1 << 26)  # 16 MiB / 256 MiB
    src = np.ones(elements, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = math.inf
    for _ in range(3 if ARGS.quick else 10):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    PEAK["gbps"] = 2.0 * src.nbytes / best / 1e9  # read + write
    PEAK["copy_mib"] = src.nbytes / 2**20
    print(
        f"roofline: fp32 GEMM peak {PEAK['gflops']:.1f} GFLOP/s (numpy sgemm {size}^3, best of "
        f"runs, {PEAK['kernels']} kernels{roofline_forced_note()}), memory bandwidth "
        f"{PEAK['gbps']:.1f} GB/s (np.copyto {PEAK['copy_mib']:.0f} MiB, "
        f"read + write), {ARGS.threads} threads",
        flush=True,
    )


def roofline_forced_note() -> str:
    if "forced_gflops" not in PEAK:
        return ""
    return (
        f"; {PEAK['forced_gflops']:.1f} GFLOP/s with the {PEAK['forced_kernels']} kernels "
        f"OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} selects"
    )


OWN_KERNEL_PROBE = """
import ctypes, json, os, sys, time
import numpy as np
size, runs = int(sys.argv[1]), int(sys.argv[2])
a = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
b = np.random.default_rng(1).standard_normal((size, size), dtype=np.float32)
c = np.empty_like(a)
np.matmul(a, b, out=c)
best = min(
    (lambda start: (np.matmul(a, b, out=c), time.perf_counter() - start)[1])(time.perf_counter())
    for _ in range(runs)
)
paths = {l.split()[-1] for l in open("/proc/self/maps") if "openblas" in l.rsplit("/", 1)[-1]}
core = ""
for path in paths:
    function = getattr(ctypes.CDLL(path), "scipy_openblas_get_corename64_", None)
    if function is not None:
        function.restype = ctypes.c_char_p
        core = function().decode()
print(json.dumps({"gflops": 2.0 * size**3 / best / 1e9, "core": core}))
"""


def own_kernel_peak(size: int, runs: int) -> tuple[float, str] | None:
    """numpy's sgemm peak in a child process without OPENBLAS_CORETYPE (OpenBLAS's own kernels)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    result = subprocess.run(
        [sys.executable, "-c", OWN_KERNEL_PROBE, str(size), str(runs)],
        capture_output=True,
        text=True,
        env=env,
    )
    if result.returncode != 0:
        progress(f"roofline: the probe without OPENBLAS_CORETYPE failed: {result.stderr[-200:]}")
        return None
    probe = json.loads(result.stdout)
    return probe["gflops"], probe["core"]


# ---- GEMM ------------------------------------------------------------------------------------


def llm_gemm_shapes() -> list[tuple[str, int, int, int]]:
    """(label, M, K, N) of every projection FULLY_CONNECTED of the LLM configurations."""
    if ARGS.quick:
        return [("quick qkv", 1, 256, 384), ("quick mlp", 32, 256, 1024)]
    from tvm_nnapi.llm.config import LLAMA2_7B, MISTRAL_7B, TINYLLAMA_1_1B

    shapes = []
    for config in (TINYLLAMA_1_1B, LLAMA2_7B, MISTRAL_7B):
        h, i = config.hidden_size, config.intermediate_size
        projections = [
            ("qkv", h, config.q_size + 2 * config.kv_size),
            ("o", config.q_size, h),
            ("gate_up", h, 2 * i),
            ("down", i, h),
        ]
        for tokens in (t for t in (1, 32, 128, 512, 1024) if t <= ARGS.max_tokens):
            for name, k, n in projections:
                shapes.append((f"{config.name} {name}", tokens, k, n))
        shapes.append((f"{config.name} lm_head", 1, h, config.vocab_size))
    return shapes


def fully_connected_row(label: str, m: int, k: int, n: int, rng) -> None:
    ops = mock().OperationCode
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32) / np.float32(np.sqrt(k))
    b = np.zeros(n, np.float32)
    ours = one_operation(ops.FULLY_CONNECTED, [x, w, b, ("i32", 0)], (m, n), [x])
    np.testing.assert_allclose(ours(), x @ w.T, rtol=1e-3, atol=1e-3)
    w_t, out = w.T, np.empty((m, n), np.float32)  # numpy passes the transposed view to BLAS

    def reference() -> None:
        np.matmul(x, w_t, out=out)
        np.add(out, b, out=out)

    t_ours, t_ref, ratio = side_by_side(ours, reference, ARGS.rounds)
    shape = f"FULLY_CONNECTED {m}x{k}.({n}x{k})^T {label}"
    record(Row("gemm", shape, "numpy", t_ours, t_ref, ratio, 1.0, 2.0 * m * n * k))


def batch_matmul_row(label: str, m: int, k: int, n: int, adj_y: bool, rng) -> None:
    ops = mock().OperationCode
    x = rng.standard_normal((1, m, k), dtype=np.float32)
    y_shape = (1, n, k) if adj_y else (1, k, n)
    y = rng.standard_normal(y_shape, dtype=np.float32) / np.float32(np.sqrt(k))
    inputs = [x, y, ("bool", False), ("bool", adj_y)]
    ours = one_operation(ops.BATCH_MATMUL, inputs, (1, m, n), [x, y])
    y_view = y.transpose(0, 2, 1) if adj_y else y
    np.testing.assert_allclose(ours(), x @ y_view, rtol=1e-3, atol=1e-3)
    # numpy's stacked matmul with out= loops without BLAS: the reference multiplies the single
    # matrices (BLAS, as numpy does for 2-D operands).
    x2, y2, out = x[0], y_view[0], np.empty((m, n), np.float32)
    t_ours, t_ref, ratio = side_by_side(ours, lambda: np.matmul(x2, y2, out=out), ARGS.rounds)
    layout = f"({n}x{k})^T" if adj_y else f"{k}x{n}"
    shape = f"BATCH_MATMUL 1x{m}x{k}.{layout} {label}"
    record(Row("gemm", shape, "numpy", t_ours, t_ref, ratio, 1.0, 2.0 * m * n * k))


def gemm_rows() -> None:
    rng = np.random.default_rng(0)
    shapes = llm_gemm_shapes()
    for index, (label, m, k, n) in enumerate(shapes):
        progress(f"gemm {index + 1}/{len(shapes)}: {label} M={m}")
        fully_connected_row(label, m, k, n, rng)
    # BATCH_MATMUL carries the batched (activation x activation) products; at the projection
    # shapes both of its layouts: [K, N] and adj_y (a permute_dims'd right side).
    batched = shapes[:2] if ARGS.quick else [s for s in shapes if s[1] == 128]
    for index, (label, m, k, n) in enumerate(batched):
        progress(f"batch_matmul {index + 1}/{len(batched)}: {label} M={m}")
        for adj_y in (False, True):
            batch_matmul_row(label, m, k, n, adj_y, rng)


# ---- convolutions ----------------------------------------------------------------------------


def record_shapes() -> int:
    """Enumerates every Conv2d of the three networks (forward hooks on a 224x224 input)."""
    import torch
    import torchvision

    layers: dict[tuple, dict] = {}
    for name in NETWORKS:
        model = getattr(torchvision.models, name)(weights=None).eval()

        def hook(module, inputs, _output, network=name):
            _, c, h, w = inputs[0].shape
            key = (
                int(h),
                int(w),
                int(c),
                module.out_channels,
                module.kernel_size[0],
                module.kernel_size[1],
                module.stride[0],
                module.padding[0],
                module.padding[1],
                module.dilation[0],
                module.groups,
            )
            entry = layers.setdefault(key, {"networks": {}})
            entry["networks"][network] = entry["networks"].get(network, 0) + 1

        handles = [
            m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)
        ]
        with torch.inference_mode():
            model(torch.zeros(1, 3, 224, 224))
        for handle in handles:
            handle.remove()
    fields = "h w c_in c_out kh kw stride pad_h pad_w dilation groups".split()
    result = {
        "generated_by": "python bench/performance.py --record-shapes",
        "source": f"torchvision {torchvision.__version__} (weights=None), 1x3x224x224 input",
        "layers": [dict(zip(fields, key, strict=True)) | value for key, value in layers.items()],
    }
    SHAPES_FILE.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{len(layers)} distinct conv layers written to {SHAPES_FILE}")
    return 0


def conv_layers() -> list[dict]:
    layers = json.loads(SHAPES_FILE.read_text())["layers"]
    supported = [
        layer
        for layer in layers
        if layer["groups"] == 1 or layer["groups"] == layer["c_in"] == layer["c_out"]
    ]
    if len(supported) != len(layers):
        NOTES.append(f"{len(layers) - len(supported)} grouped (non-depthwise) conv layers left out")
    if ARGS.quick:  # the smallest layer of each kind
        size = lambda layer: layer["h"] * layer["w"] * layer["c_in"] * layer["c_out"]  # noqa: E731
        return [
            min((x for x in supported if x["groups"] == 1), key=size),
            min((x for x in supported if x["groups"] > 1), key=size),
        ]
    return supported


def ort_session(graph_nodes, inputs, outputs, initializers):
    import onnxruntime as ort
    from onnx import helper

    graph = helper.make_graph(graph_nodes, "bench", inputs, outputs, initializers)
    # com.microsoft: onnxruntime's contrib operators (QGemm of the int8 rows).
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = ARGS.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def bound_run(session, feeds: dict[str, np.ndarray], out_name: str, out: np.ndarray):
    binding = session.io_binding()
    for name, array in feeds.items():
        binding.bind_cpu_input(name, array)
    binding.bind_output(out_name, "cpu", 0, out.dtype.type, list(out.shape), out.ctypes.data)

    def run() -> np.ndarray:
        session.run_with_iobinding(binding)
        return out

    return run


def conv_row(layer: dict, rng) -> None:
    from onnx import TensorProto, helper, numpy_helper

    ops = mock().OperationCode
    h, w, c_in, c_out = layer["h"], layer["w"], layer["c_in"], layer["c_out"]
    kh, kw, s, ph, pw, d = (layer[k] for k in ("kh", "kw", "stride", "pad_h", "pad_w", "dilation"))
    depthwise = layer["groups"] > 1
    out_h = (h + 2 * ph - d * (kh - 1) - 1) // s + 1
    out_w = (w + 2 * pw - d * (kw - 1) - 1) // s + 1
    x = rng.standard_normal((1, h, w, c_in), dtype=np.float32)
    taps = kh * kw * (1 if depthwise else c_in)
    filt_shape = (1, kh, kw, c_out) if depthwise else (c_out, kh, kw, c_in)
    filt = rng.standard_normal(filt_shape, dtype=np.float32) / np.float32(np.sqrt(taps))
    bias = rng.standard_normal(c_out, dtype=np.float32)
    scalars = [("i32", v) for v in (pw, pw, ph, ph, s, s)]
    scalars += [("i32", 1)] if depthwise else []
    scalars += [("i32", 0)]  # FUSED_NONE
    if d != 1:
        scalars += [("bool", False), ("i32", d), ("i32", d)]
    op = ops.DEPTHWISE_CONV_2D if depthwise else ops.CONV_2D
    ours = one_operation(op, [x, filt, bias, *scalars], (1, out_h, out_w, c_out), [x])

    w_oihw = np.ascontiguousarray(
        filt.transpose(3, 0, 1, 2) if depthwise else filt.transpose(0, 3, 1, 2)
    )
    node = helper.make_node(
        "Conv",
        ["X", "W", "B"],
        ["Y"],
        strides=[s, s],
        pads=[ph, pw, ph, pw],
        dilations=[d, d],
        group=layer["groups"],
        kernel_shape=[kh, kw],
    )
    session = ort_session(
        [node],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w_oihw, "W"), numpy_helper.from_array(bias, "B")],
    )
    x_nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    y_nchw = np.empty((1, c_out, out_h, out_w), np.float32)
    reference = bound_run(session, {"X": x_nchw}, "Y", y_nchw)
    np.testing.assert_allclose(ours(), reference().transpose(0, 2, 3, 1), rtol=1e-3, atol=1e-3)
    t_ours, t_ref, ratio = side_by_side(ours, reference, ARGS.rounds)
    name = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    label = f"{name} {h}x{w}x{c_in} {kh}x{kw}/s{s}" + (f"/d{d}" if d > 1 else "") + f" -> {c_out}"
    nets = ",".join(
        {"mobilenet_v2": "v2", "mobilenet_v3_large": "v3", "efficientnet_b0": "b0"}[n]
        for n in layer["networks"]
    )
    flops = 2.0 * out_h * out_w * c_out * taps
    record(Row("conv", label, "onnxruntime", t_ours, t_ref, ratio, 0.8, flops, note=nets))


def conv_rows() -> None:
    try:
        import onnx  # noqa: F401
        import onnxruntime
    except ImportError as error:
        skip("conv", f"{error.name} is not installed: pip install onnxruntime onnx")
        return
    progress(f"onnxruntime {onnxruntime.__version__}, CPUExecutionProvider")
    rng = np.random.default_rng(0)
    layers = conv_layers()
    for index, layer in enumerate(layers):
        progress(f"conv {index + 1}/{len(layers)}")
        conv_row(layer, rng)


# ---- int8 convolutions and FULLY_CONNECTED ---------------------------------------------------

INT8_TOKENS = (1, 128)  # decode and one prefill length of the int8 FULLY_CONNECTED rows


def _output_scale(x_scale: float, w_scale: float, taps: int) -> float:
    """An output scale that holds about three standard deviations of the accumulator of uniform
    random uint8 (zero point 128) times int8 operands: 74 * 73 * sqrt(taps) per unit scale."""
    return float(x_scale * w_scale * 74.0 * 73.0 * math.sqrt(taps) * 3.0 / 128.0)


def _assert_within_one_step(ours: np.ndarray, reference: np.ndarray, what: str) -> None:
    """Both sides requantise a real multiplier; their roundings may differ by one step."""
    difference = np.abs(ours.astype(np.int32) - reference.astype(np.int32))
    if difference.max() > 1:
        raise AssertionError(f"{what}: the mock and onnxruntime differ by {difference.max()} steps")


def int8_conv_row(layer: dict, rng) -> None:
    ours, reference, label, flops = int8_conv_case(layer, rng)
    _assert_within_one_step(ours(), reference().transpose(0, 2, 3, 1), label)
    t_ours, t_ref, ratio = side_by_side(ours, reference, ARGS.rounds)
    record(Row("int8", label, "ort QLinearConv", t_ours, t_ref, ratio, 0.5, flops, "GOP/s"))


def int8_conv_case(layer: dict, rng):
    """CONV_2D / DEPTHWISE_CONV_2D: uint8 activations (TENSOR_QUANT8_ASYMM), int8 weights per
    output channel (TENSOR_QUANT8_SYMM_PER_CHANNEL), int32 bias, vs QLinearConv (u8s8).
    (mock run, onnxruntime run (NCHW output), label, operations)."""
    from onnx import TensorProto, helper, numpy_helper

    m = mock()
    codes, ops = m.OperandCode, m.OperationCode
    h, w, c_in, c_out = layer["h"], layer["w"], layer["c_in"], layer["c_out"]
    kh, kw, s, ph, pw, d = (layer[k] for k in ("kh", "kw", "stride", "pad_h", "pad_w", "dilation"))
    depthwise = layer["groups"] > 1
    out_h = (h + 2 * ph - d * (kh - 1) - 1) // s + 1
    out_w = (w + 2 * pw - d * (kw - 1) - 1) // s + 1
    taps = kh * kw * (1 if depthwise else c_in)
    x = rng.integers(0, 256, (1, h, w, c_in), dtype=np.uint8)
    filt_shape = (1, kh, kw, c_out) if depthwise else (c_out, kh, kw, c_in)
    filt = rng.integers(-127, 128, filt_shape, dtype=np.int8)
    x_scale, x_zp = 0.05, 128
    w_scales = rng.uniform(0.005, 0.02, c_out).astype(np.float32)
    bias = rng.integers(-2000, 2000, c_out).astype(np.int32)
    y_scale, y_zp = _output_scale(x_scale, float(w_scales.mean()), taps), 128

    model = m.Model()
    x_index = model.add_operand(codes.TENSOR_QUANT8_ASYMM, x.shape, x_scale, x_zp)
    f_index = model.add_operand(codes.TENSOR_QUANT8_SYMM_PER_CHANNEL, filt.shape)
    model.set_channel_quant(f_index, 3 if depthwise else 0, w_scales)
    model.set_value(f_index, filt)
    b_index = model.add_operand(codes.TENSOR_INT32, bias.shape)
    model.set_value(b_index, bias)
    scalars = [pw, pw, ph, ph, s, s] + ([1] if depthwise else []) + [0]
    indices = [x_index, f_index, b_index] + [model.add_scalar(codes.INT32, v) for v in scalars]
    if d != 1:
        indices += [model.add_scalar(codes.BOOL, False)]
        indices += [model.add_scalar(codes.INT32, d), model.add_scalar(codes.INT32, d)]
    out_shape = (1, out_h, out_w, c_out)
    y_index = model.add_operand(codes.TENSOR_QUANT8_ASYMM, out_shape, y_scale, y_zp)
    model.add_operation(ops.DEPTHWISE_CONV_2D if depthwise else ops.CONV_2D, indices, [y_index])
    model.identify_inputs_and_outputs([x_index], [y_index])
    model.finish()
    ours = mock_runner(model, [x], out_shape, np.uint8)

    w_oihw = np.ascontiguousarray(
        filt.transpose(3, 0, 1, 2) if depthwise else filt.transpose(0, 3, 1, 2)
    )
    scalar = lambda name, value, dtype: numpy_helper.from_array(  # noqa: E731
        np.array(value, dtype), name
    )
    initializers = [
        scalar("x_scale", x_scale, np.float32),
        scalar("x_zp", x_zp, np.uint8),
        numpy_helper.from_array(w_oihw, "W"),
        numpy_helper.from_array(w_scales, "w_scale"),
        numpy_helper.from_array(np.zeros(c_out, np.int8), "w_zp"),
        scalar("y_scale", y_scale, np.float32),
        scalar("y_zp", y_zp, np.uint8),
        numpy_helper.from_array(bias, "B"),
    ]
    node = helper.make_node(
        "QLinearConv",
        ["X", "x_scale", "x_zp", "W", "w_scale", "w_zp", "y_scale", "y_zp", "B"],
        ["Y"],
        strides=[s, s],
        pads=[ph, pw, ph, pw],
        dilations=[d, d],
        group=layer["groups"],
        kernel_shape=[kh, kw],
    )
    session = ort_session(
        [node],
        [helper.make_tensor_value_info("X", TensorProto.UINT8, None)],
        [helper.make_tensor_value_info("Y", TensorProto.UINT8, None)],
        initializers,
    )
    x_nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    y_nchw = np.empty((1, c_out, out_h, out_w), np.uint8)
    reference = bound_run(session, {"X": x_nchw}, "Y", y_nchw)
    name = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    label = f"{name} {h}x{w}x{c_in} {kh}x{kw}/s{s}" + (f"/d{d}" if d > 1 else "") + f" -> {c_out}"
    return ours, reference, f"{label} u8s8", 2.0 * out_h * out_w * c_out * taps


def int8_fc_shapes() -> list[tuple[str, int, int, int]]:
    """(label, M, K, N): every projection of TinyLlama-1.1B and Llama-2-7B (hidden sizes 2048 and
    4096) at decode (M=1) and a prefill of 128 tokens. Mistral-7B (the largest MLP) and the other
    prefill lengths are left out to keep the section within minutes."""
    if ARGS.quick:
        return [("quick qkv", 1, 256, 384), ("quick mlp", 32, 256, 1024)]
    from tvm_nnapi.llm.config import LLAMA2_7B, TINYLLAMA_1_1B

    shapes = []
    for config in (TINYLLAMA_1_1B, LLAMA2_7B):
        h, i = config.hidden_size, config.intermediate_size
        projections = [
            ("qkv", h, config.q_size + 2 * config.kv_size),
            ("o", config.q_size, h),
            ("gate_up", h, 2 * i),
            ("down", i, h),
        ]
        for tokens in INT8_TOKENS:
            for name, k, n in projections:
                shapes.append((f"{config.name} {name}", tokens, k, n))
    return shapes


def int8_fc_row(label: str, m_rows: int, k: int, n: int, rng) -> None:
    ours, reference, shape = int8_fc_case(label, m_rows, k, n, rng)
    _assert_within_one_step(ours(), reference(), shape)
    t_ours, t_ref, ratio = side_by_side(ours, reference, ARGS.rounds)
    work = 2.0 * m_rows * n * k
    record(Row("int8", shape, "ort QGemm", t_ours, t_ref, ratio, 0.5, work, "GOP/s"))


def int8_fc_case(label: str, m_rows: int, k: int, n: int, rng):
    """FULLY_CONNECTED on TENSOR_QUANT8_ASYMM (uint8 activations and weights: NNAPI's
    FULLY_CONNECTED takes weights of the input's type) vs onnxruntime's QGemm on the same uint8
    operands (transB=1, int32 bias, uint8 output). (mock run, onnxruntime run, label)."""
    from onnx import TensorProto, helper, numpy_helper

    m = mock()
    codes, ops = m.OperandCode, m.OperationCode
    x = rng.integers(0, 256, (m_rows, k), dtype=np.uint8)
    weights = rng.integers(0, 256, (n, k), dtype=np.uint8)
    x_scale, x_zp, w_scale, w_zp = 0.05, 128, 0.01, 128
    bias = rng.integers(-2000, 2000, n).astype(np.int32)
    y_scale, y_zp = _output_scale(x_scale, w_scale, k), 128
    bias_scale = float(np.float32(x_scale) * np.float32(w_scale))

    model = m.Model()
    x_index = model.add_operand(codes.TENSOR_QUANT8_ASYMM, x.shape, x_scale, x_zp)
    w_index = model.add_constant(codes.TENSOR_QUANT8_ASYMM, weights, w_scale, w_zp)
    b_index = model.add_constant(codes.TENSOR_INT32, bias, bias_scale, 0)
    y_index = model.add_operand(codes.TENSOR_QUANT8_ASYMM, (m_rows, n), y_scale, y_zp)
    indices = [x_index, w_index, b_index, model.add_scalar(codes.INT32, 0)]
    model.add_operation(ops.FULLY_CONNECTED, indices, [y_index])
    model.identify_inputs_and_outputs([x_index], [y_index])
    model.finish()
    ours = mock_runner(model, [x], (m_rows, n), np.uint8)

    scalar = lambda name, value, dtype: numpy_helper.from_array(  # noqa: E731
        np.array(value, dtype), name
    )
    initializers = [
        scalar("a_scale", x_scale, np.float32),
        scalar("a_zp", x_zp, np.uint8),
        numpy_helper.from_array(weights, "B"),
        scalar("b_scale", w_scale, np.float32),
        scalar("b_zp", w_zp, np.uint8),
        numpy_helper.from_array(bias, "C"),
        scalar("y_scale", y_scale, np.float32),
        scalar("y_zp", y_zp, np.uint8),
    ]
    node = helper.make_node(
        "QGemm",
        ["A", "a_scale", "a_zp", "B", "b_scale", "b_zp", "C", "y_scale", "y_zp"],
        ["Y"],
        domain="com.microsoft",
        transB=1,
    )
    session = ort_session(
        [node],
        [helper.make_tensor_value_info("A", TensorProto.UINT8, None)],
        [helper.make_tensor_value_info("Y", TensorProto.UINT8, None)],
        initializers,
    )
    reference = bound_run(session, {"A": x}, "Y", np.empty((m_rows, n), np.uint8))
    return ours, reference, f"FULLY_CONNECTED {m_rows}x{k}.({n}x{k})^T {label} u8u8"


def int8_rows() -> None:
    try:
        import onnx  # noqa: F401
        import onnxruntime
    except ImportError as error:
        skip("int8", f"{error.name} is not installed: pip install onnxruntime onnx")
        return
    progress(f"int8: onnxruntime {onnxruntime.__version__}, CPUExecutionProvider")
    rng = np.random.default_rng(0)
    layers = conv_layers()
    for index, layer in enumerate(layers):
        progress(f"int8 conv {index + 1}/{len(layers)}")
        int8_conv_row(layer, rng)
    shapes = int8_fc_shapes()
    for index, (label, m_rows, k, n) in enumerate(shapes):
        progress(f"int8 fully_connected {index + 1}/{len(shapes)}: {label} M={m_rows}")
        int8_fc_row(label, m_rows, k, n, rng)


# ---- relaxed fp32 (computed in fp16) and TENSOR_FLOAT16 models --------------------------------

# The phone profile and its device whose relaxed float32 the mock emulates: a GPU computes relaxed
# float32 in float16, so the mock rounds that device's fp32 outputs to fp16 (the CPU devices,
# Android's reference included, compute it in fp32: no emulation to measure there).
FP16_PROFILE, FP16_DEVICE = "snapdragon-8-gen-2", "qti-gpu"


def fp16_layers() -> list[dict]:
    """The conv layers of the fp16 rows: of each kind (pointwise, 3x3, depthwise), the layers with
    the most and the fewest multiply-adds, to keep the section short."""
    layers = conv_layers()
    if ARGS.quick:
        return layers[:1]

    def macs(layer: dict) -> int:
        per_pixel = layer["kh"] * layer["kw"] * layer["c_out"]
        per_pixel *= 1 if layer["groups"] > 1 else layer["c_in"]
        return layer["h"] * layer["w"] * per_pixel // layer["stride"] ** 2

    chosen = []
    for kind in (
        lambda x: x["groups"] == 1 and x["kh"] == 1,
        lambda x: x["groups"] == 1 and x["kh"] > 1,
        lambda x: x["groups"] > 1,
    ):
        group = sorted((x for x in layers if kind(x)), key=macs)
        chosen += [group[0], group[-1]] if len(group) > 1 else group
    return chosen


def _float_conv_model(layer: dict, x, filt, bias, code: int, relaxed: bool):
    m = mock()
    codes, ops = m.OperandCode, m.OperationCode
    h, w, c_out = layer["h"], layer["w"], layer["c_out"]
    kh, kw, s, ph, pw, d = (layer[k] for k in ("kh", "kw", "stride", "pad_h", "pad_w", "dilation"))
    depthwise = layer["groups"] > 1
    out_h = (h + 2 * ph - d * (kh - 1) - 1) // s + 1
    out_w = (w + 2 * pw - d * (kw - 1) - 1) // s + 1
    model = m.Model()
    x_index = model.add_operand(code, x.shape)
    indices = [x_index, model.add_constant(code, filt), model.add_constant(code, bias)]
    scalars = [pw, pw, ph, ph, s, s] + ([1] if depthwise else []) + [0]
    indices += [model.add_scalar(codes.INT32, v) for v in scalars]
    if d != 1:
        indices += [model.add_scalar(codes.BOOL, False)]
        indices += [model.add_scalar(codes.INT32, d), model.add_scalar(codes.INT32, d)]
    out_shape = (1, out_h, out_w, c_out)
    y_index = model.add_operand(code, out_shape)
    model.add_operation(ops.DEPTHWISE_CONV_2D if depthwise else ops.CONV_2D, indices, [y_index])
    model.identify_inputs_and_outputs([x_index], [y_index])
    if relaxed:
        model.relax_computation_float32_to_float16(True)
    model.finish()
    return model, out_shape


def _float_fc_model(x, weights, bias, code: int, relaxed: bool):
    m = mock()
    codes = m.OperandCode
    model = m.Model()
    x_index = model.add_operand(code, x.shape)
    indices = [x_index, model.add_constant(code, weights), model.add_constant(code, bias)]
    indices.append(model.add_scalar(codes.INT32, 0))
    out_shape = (x.shape[0], weights.shape[0])
    y_index = model.add_operand(code, out_shape)
    model.add_operation(m.OperationCode.FULLY_CONNECTED, indices, [y_index])
    model.identify_inputs_and_outputs([x_index], [y_index])
    if relaxed:
        model.relax_computation_float32_to_float16(True)
    model.finish()
    return model, out_shape


def _fp16_pair(section_label: str, build, feeds32, feeds16, work: float) -> None:
    """Two rows for one operation: the relaxed fp32 model and the TENSOR_FLOAT16 model, each vs
    the same model in fp32 (ratio = fp32 time / its time; goal >= 1/1.5)."""
    model32, shape = build(np.float32, False)
    fp32 = mock_runner(model32, feeds32, shape)
    relaxed_model, _ = build(np.float32, True)
    relaxed = mock_runner(relaxed_model, feeds32, shape)
    np.testing.assert_allclose(relaxed(), fp32(), rtol=2e-3, atol=2e-3 * np.abs(fp32()).max())
    t_relaxed, t_fp32, ratio = side_by_side(relaxed, fp32, ARGS.rounds)
    record(Row("fp16", f"{section_label} relaxed fp32", "fp32", t_relaxed, t_fp32, ratio, 1 / 1.5))
    model16, _ = build(np.float16, False)
    half = mock_runner(model16, feeds16, shape, np.float16)
    np.testing.assert_allclose(
        half().astype(np.float32), fp32(), rtol=1e-2, atol=1e-2 * np.abs(fp32()).max()
    )
    t_half, t_fp32, ratio = side_by_side(half, fp32, ARGS.rounds)
    record(
        Row("fp16", f"{section_label} TENSOR_FLOAT16", "fp32", t_half, t_fp32, ratio, 1 / 1.5, work)
    )


def fp16_rows() -> None:
    m = mock()
    from mock_nnapi import control

    control.set_profile(FP16_PROFILE)
    try:
        device = next(d for d in m.devices() if d.name == FP16_DEVICE)
        MOCK_DEVICES[:] = [device]
        progress(f"fp16: on {FP16_PROFILE}'s {FP16_DEVICE} (relaxed fp32 outputs rounded to fp16)")
        codes = m.OperandCode
        code_of = {np.float32: codes.TENSOR_FLOAT32, np.float16: codes.TENSOR_FLOAT16}
        rng = np.random.default_rng(0)
        layers = fp16_layers()
        for index, layer in enumerate(layers):
            progress(f"fp16 conv {index + 1}/{len(layers)}")
            depthwise = layer["groups"] > 1
            c_in, c_out, kh, kw = layer["c_in"], layer["c_out"], layer["kh"], layer["kw"]
            taps = kh * kw * (1 if depthwise else c_in)
            x = rng.standard_normal((1, layer["h"], layer["w"], c_in), dtype=np.float32)
            shape = (1, kh, kw, c_out) if depthwise else (c_out, kh, kw, c_in)
            filt = rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(taps))
            bias = rng.standard_normal(c_out, dtype=np.float32)
            x16, filt16, bias16 = (a.astype(np.float16) for a in (x, filt, bias))
            x32 = x16.astype(np.float32)  # the same values on both sides
            filt32, bias32 = filt16.astype(np.float32), bias16.astype(np.float32)

            def build(
                dtype, relaxed, layer=layer, x=x32, f32=(filt32, bias32), f16=(filt16, bias16)
            ):
                filt_, bias_ = f32 if dtype is np.float32 else f16
                return _float_conv_model(layer, x, filt_, bias_, code_of[dtype], relaxed)

            name = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
            label = f"{name} {layer['h']}x{layer['w']}x{c_in} {kh}x{kw}/s{layer['stride']}"
            out_pixels = math.prod(build(np.float32, False)[1][1:3])
            _fp16_pair(f"{label} -> {c_out}", build, [x32], [x16], 2.0 * out_pixels * c_out * taps)
        shapes = llm_gemm_fp16_shapes()
        for index, (label, m_rows, k, n) in enumerate(shapes):
            progress(f"fp16 fully_connected {index + 1}/{len(shapes)}: {label} M={m_rows}")
            x16 = rng.standard_normal((m_rows, k), dtype=np.float32).astype(np.float16)
            w16 = (rng.standard_normal((n, k), dtype=np.float32) / np.sqrt(k)).astype(np.float16)
            b16 = np.zeros(n, np.float16)
            x32, w32, b32 = (a.astype(np.float32) for a in (x16, w16, b16))

            def build(dtype, relaxed, f32=(x32, w32, b32), f16=(x16, w16, b16)):
                x_, w_, b_ = f32 if dtype is np.float32 else f16
                return _float_fc_model(x_, w_, b_, code_of[dtype], relaxed)

            shape = f"FULLY_CONNECTED {m_rows}x{k}.({n}x{k})^T {label}"
            _fp16_pair(shape, build, [x32], [x16], 2.0 * m_rows * n * k)
    finally:
        MOCK_DEVICES.clear()
        control.set_profile(None)


def llm_gemm_fp16_shapes() -> list[tuple[str, int, int, int]]:
    """TinyLlama-1.1B's projections at decode (M=1) and a prefill of 128 tokens."""
    if ARGS.quick:
        return [("quick mlp", 32, 256, 1024)]
    from tvm_nnapi.llm.config import TINYLLAMA_1_1B

    c = TINYLLAMA_1_1B
    projections = [
        ("qkv", c.hidden_size, c.q_size + 2 * c.kv_size),
        ("o", c.q_size, c.hidden_size),
        ("gate_up", c.hidden_size, 2 * c.intermediate_size),
        ("down", c.intermediate_size, c.hidden_size),
    ]
    return [(f"{c.name} {p}", t, k, n) for t in INT8_TOKENS for p, k, n in projections]


# ---- pooling, elementwise, softmax -----------------------------------------------------------


def memory_bound_rows() -> None:
    ops = mock().OperationCode
    rng = np.random.default_rng(0)
    scale = 4 if ARGS.quick else 1
    n56, c = 56 // scale, 144
    a = rng.standard_normal((1, n56, n56, c), dtype=np.float32)
    b = rng.standard_normal((1, n56, n56, c), dtype=np.float32)
    out = np.empty_like(a)
    rows = []

    # ADD / MUL of two activations (no broadcast): 3 tensors of traffic.
    for name, op, ufunc in (("ADD", ops.ADD, np.add), ("MUL", ops.MUL, np.multiply)):
        ours = one_operation(op, [a, b, ("i32", 0)], a.shape, [a, b])
        np.testing.assert_allclose(ours(), ufunc(a, b), rtol=1e-6)
        rows.append((f"{name} {a.shape}", ours, lambda u=ufunc: u(a, b, out=out), 3 * a.nbytes))
    # ADD of a per-channel bias (broadcast).
    bias = rng.standard_normal(c, dtype=np.float32)
    ours = one_operation(ops.ADD, [a, bias, ("i32", 0)], a.shape, [a])
    rows.append((f"ADD {a.shape} + [{c}]", ours, lambda: np.add(a, bias, out=out), 2 * a.nbytes))
    # Unary: LOGISTIC (numpy: 1 / (1 + exp(-x)) in three in-place passes), RELU.
    ours = one_operation(ops.RELU, [a], a.shape, [a])
    rows.append((f"RELU {a.shape}", ours, lambda: np.maximum(a, 0, out=out), 2 * a.nbytes))

    def logistic() -> None:
        np.negative(a, out=out)
        np.exp(out, out=out)
        np.add(out, 1, out=out)
        np.reciprocal(out, out=out)

    ours = one_operation(ops.LOGISTIC, [a], a.shape, [a])
    np.testing.assert_allclose(ours(), 1 / (1 + np.exp(-a)), rtol=1e-5, atol=1e-6)
    rows.append((f"LOGISTIC {a.shape}", ours, logistic, 2 * a.nbytes))

    # Pooling: global average (MobileNetV2's head) and a 3x3/s2 max pool.
    g = rng.standard_normal((1, 7, 7, 1280), dtype=np.float32)
    g_out = np.empty((1, 1, 1, 1280), np.float32)
    args = [("i32", v) for v in (0, 0, 0, 0, 1, 1, 7, 7, 0)]
    ours = one_operation(ops.AVERAGE_POOL_2D, [g, *args], g_out.shape, [g])
    np.testing.assert_allclose(ours(), g.mean(axis=(1, 2), keepdims=True), rtol=1e-5, atol=1e-6)
    rows.append(
        (
            "AVERAGE_POOL_2D 1x7x7x1280 7x7",
            ours,
            lambda: np.mean(g, (1, 2), keepdims=True, out=g_out),
            g.nbytes,
        )
    )
    p = rng.standard_normal((1, 112 // scale, 112 // scale, 64), dtype=np.float32)
    ph = (p.shape[1] - 3) // 2 + 1
    p_out = np.empty((1, ph, ph, 64), np.float32)
    args = [("i32", v) for v in (0, 0, 0, 0, 2, 2, 3, 3, 0)]
    ours = one_operation(ops.MAX_POOL_2D, [p, *args], p_out.shape, [p])
    windows = np.lib.stride_tricks.sliding_window_view(p, (3, 3), axis=(1, 2))[:, ::2, ::2]
    np.testing.assert_allclose(ours(), windows.max(axis=(-2, -1)), rtol=0)
    rows.append(
        (
            f"MAX_POOL_2D {p.shape} 3x3/s2",
            ours,
            lambda: np.max(windows, axis=(-2, -1), out=p_out),
            p.nbytes + p_out.nbytes,
        )
    )

    # SOFTMAX over LLM logits (numpy: max, subtract, exp, sum, divide).
    s = rng.standard_normal((32 // scale, 32000 // scale), dtype=np.float32)
    s_out = np.empty_like(s)
    s_max = np.empty((s.shape[0], 1), np.float32)
    s_sum = np.empty((s.shape[0], 1), np.float32)
    ours = one_operation(ops.SOFTMAX, [s, ("f32", 1.0)], s.shape, [s])

    def softmax() -> None:
        np.max(s, axis=1, keepdims=True, out=s_max)
        np.subtract(s, s_max, out=s_out)
        np.exp(s_out, out=s_out)
        np.sum(s_out, axis=1, keepdims=True, out=s_sum)
        np.divide(s_out, s_sum, out=s_out)

    softmax()
    np.testing.assert_allclose(ours(), s_out, rtol=1e-4, atol=1e-7)
    rows.append((f"SOFTMAX {s.shape}", ours, softmax, 2 * s.nbytes))

    for label, ours, reference, traffic in rows:
        progress(f"memory-bound: {label}")
        t_ours, t_ref, ratio = side_by_side(ours, reference, ARGS.rounds)
        record(Row("memory-bound", label, "numpy", t_ours, t_ref, ratio, 1 / 1.5, traffic, "GB/s"))


# ---- whole networks --------------------------------------------------------------------------


def network_rows() -> None:
    if ARGS.quick:
        skip("networks", "--quick")
        return
    try:
        import torch
        import tvm
        from tvm import relax

        import tvm_nnapi
        from tvm_nnapi.models.torchvision_models import torchvision_model
    except ImportError as error:
        skip("networks", f"{error.name} is not installed (the `models` extra)")
        return
    torch.set_num_threads(ARGS.threads)
    for name in NETWORKS:
        progress(f"networks: importing and building {name}...")
        model = torchvision_model(name)
        executable = tvm_nnapi.build(tvm_nnapi.partition_with_report(model.module).module)
        vm = relax.VirtualMachine(executable, tvm.cpu())
        image = model.random_input()
        tensor = tvm.runtime.tensor(image)
        torch_image = torch.from_numpy(image)
        main = vm["main"]

        def ours(f=main, x=tensor):
            return f(x)

        def reference(m=model.torch_module, x=torch_image):
            with torch.inference_mode():
                return m(x)

        ours_out = ours()
        ours_out = ours_out[0] if isinstance(ours_out, tvm.ir.Array) else ours_out
        np.testing.assert_allclose(
            ours_out.numpy(),
            reference().numpy(),
            rtol=1e-2,
            atol=1e-3 * np.abs(reference().numpy()).max(),
        )
        t_ours, t_ref, ratio = side_by_side(ours, reference, max(ARGS.rounds, 7))
        record(
            Row(
                "networks", f"{name} 1x3x224x224 fp32", "torch eager", t_ours, t_ref, ratio, 1 / 1.2
            )
        )
        del vm, executable, model
    progress("networks: tvm-nnapi llm bench (tiny-llama, NNAPI build vs host llvm build)...")
    result = subprocess.run(
        [sys.executable, "-m", "tvm_nnapi", "llm", "bench", "--json", "--repeat", str(ARGS.rounds)],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ | {"OPENBLAS_NUM_THREADS": str(ARGS.threads)},
    )
    measured = json.loads(result.stdout)["measured"]
    nnapi, host = measured["nnapi"], measured["host"]
    record(
        Row(
            "networks",
            f"tiny-llama prefill {json.loads(result.stdout)['prompt_length']} tokens (NNAPI build)",
            "host llvm build",
            nnapi["prefill_seconds"],
            host["prefill_seconds"],
            host["prefill_seconds"] / nnapi["prefill_seconds"],
            1.0,
            note="tvm-nnapi llm bench: medians, the builds taking turns",
        )
    )
    record(
        Row(
            "networks",
            "tiny-llama decode per token (the NNAPI build decodes on the host)",
            "host llvm build",
            nnapi["decode_seconds_per_token"],
            host["decode_seconds_per_token"],
            host["decode_seconds_per_token"] / nnapi["decode_seconds_per_token"],
            1.0,
            note="same host code on both sides",
        )
    )


# ---- fixed per-execution overhead ------------------------------------------------------------


def overhead_rows() -> None:
    try:
        from onnx import TensorProto, helper
    except ImportError as error:
        skip("overhead", f"{error.name} is not installed: pip install onnxruntime onnx")
        return
    ops = mock().OperationCode
    a = np.ones((1, 16), np.float32)
    b = np.ones((1, 16), np.float32)
    ours = one_operation(ops.ADD, [a, b, ("i32", 0)], (1, 16), [a, b])
    node = helper.make_node("Add", ["A", "B"], ["Y"])
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 16]) for n in ("A", "B", "Y")]
    session = ort_session([node], info[:2], info[2:], [])
    reference = bound_run(session, {"A": a, "B": b}, "Y", np.empty((1, 16), np.float32))
    t_ours, t_ref, ratio = side_by_side(ours, reference, max(ARGS.rounds, 7))
    record(
        Row(
            "overhead",
            "ADD 1x16, one execution (reusable, buffers bound)",
            "onnxruntime run",
            t_ours,
            t_ref,
            ratio,
            0.0,
            note="reported, no goal",
        )
    )
    m = mock()
    compilation = m.Compilation(ours.keep_alive[0]).finish()

    def fresh_execution() -> None:
        m.Execution(compilation).compute([a, b])

    t_ours, t_ref, ratio = side_by_side(fresh_execution, reference, max(ARGS.rounds, 7))
    record(
        Row(
            "overhead",
            "ADD 1x16, create + bind + compute + free (Python)",
            "onnxruntime run",
            t_ours,
            t_ref,
            ratio,
            0.0,
            note="reported, no goal",
        )
    )


# ---- peak memory of a 1B-parameter prefill ---------------------------------------------------


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def memory_probe() -> int:
    """In a child process: build TinyLlama-1.1B (random weights, NNAPI prefill), then reset the
    peak-RSS counter and run one prefill of 128 tokens. Prints JSON."""
    from tvm_nnapi.llm import build_engine
    from tvm_nnapi.llm.config import TINYLLAMA_1_1B

    config = TINYLLAMA_1_1B
    start = time.perf_counter()
    engine = build_engine(config, "float32", True, None, 0)
    built = time.perf_counter() - start
    ready_kib = _rss_kib("VmRSS")
    build_peak_kib = _rss_kib("VmHWM")
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    prompt = [int(t) for t in np.random.default_rng(0).integers(0, config.vocab_size, 128)]
    start = time.perf_counter()
    engine.prefill(prompt)
    prefill = time.perf_counter() - start
    print(
        json.dumps(
            {
                "weights_bytes": config.parameter_count() * 4,
                "ready_rss_bytes": ready_kib * 1024,
                "build_peak_rss_bytes": build_peak_kib * 1024,
                "prefill_peak_rss_bytes": _rss_kib("VmHWM") * 1024,
                "build_seconds": built,
                "prefill_seconds": prefill,
            }
        )
    )
    return 0


def memory_rows() -> None:
    if ARGS.quick:
        skip("memory", "--quick")
        return
    progress("memory: TinyLlama-1.1B prefill of 128 tokens in a child process (minutes)...")
    result = subprocess.run(
        [sys.executable, __file__, "--memory-probe", "--threads", str(ARGS.threads)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        skip("memory", f"the probe failed: {result.stderr.strip().splitlines()[-1:]}")
        return
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    weights = probe["weights_bytes"]
    for label, key in (
        ("peak RSS during the prefill", "prefill_peak_rss_bytes"),
        ("peak RSS of the whole run (weights made, build)", "build_peak_rss_bytes"),
    ):
        peak = probe[key]
        record(
            Row(
                "memory",
                f"TinyLlama-1.1B prefill 128 tokens: {label}",
                "weights (fp32)",
                peak / 1e9,
                weights / 1e9,
                peak / weights,
                1.3,
                unit="GB",
                note=f"{peak / 2**30:.2f} GiB vs {weights / 2**30:.2f} GiB (peak / weights)",
            )
        )


# ---- report ----------------------------------------------------------------------------------


def markdown(elapsed: float) -> str:
    lines = [
        "# Performance of the mock's kernels (measured)",
        "",
        f"Generated by `python bench/performance.py{COMMAND_LINE}` "
        f"({elapsed:.0f} s, {ARGS.threads} threads per side, {ARGS.rounds} alternating rounds per "
        f"row; {platform.machine()}, {os.cpu_count()} logical CPUs). Every number is MEASURED on "
        "this host (a shared machine: absolute times are noisy, the ratios are medians of "
        "per-round ratios of the two sides run alternately in one process, each sample starting "
        "once no other thread of the process runs (the other side's helper threads have stopped "
        f"spinning) and after {WARM_UP_SECONDS * 1e3:.0f} ms of untimed calls of its own side; "
        f"OpenBLAS's helper threads spin 2^{os.environ.get('OPENBLAS_THREAD_TIMEOUT')} cycles "
        "after a call, "
        "OPENBLAS_THREAD_TIMEOUT). The mock's cost model "
        "(modelled phone times, docs/cost-model.md) plays no part. Ratio > 1: the mock is faster "
        "(memory rows: peak / weights, lower is better). 'ratio' is the median of the per-round "
        "ratios (what the goals are judged on); 'best-time ratio' divides each side's best round, "
        "the least disturbed by other load. Issue 21 states the goals.",
        "",
    ]
    if PEAK:
        lines += [
            f"**Roofline:** fp32 GEMM peak {PEAK['gflops']:.1f} GFLOP/s (numpy's OpenBLAS sgemm "
            f"{PEAK['gemm_size']}^3, best of {PEAK['runs']}), memory bandwidth "
            f"{PEAK['gbps']:.1f} GB/s "
            f"(np.copyto of {PEAK['copy_mib']:.0f} MiB, read + write), {ARGS.threads} threads; "
            f"{PEAK['kernels']} kernels{roofline_forced_note()}.",
            "",
        ]
    if BLAS:
        lines += [f"**{BLAS['line']}.**", ""]
    for section in SECTIONS:
        rows = [row for row in ROWS if row.section == section]
        if not rows:
            continue
        met = sum(row.met for row in rows if row.goal)
        goals = sum(1 for row in rows if row.goal)
        status = f"{met}/{goals} rows meet the goal" if goals else "reported, no goal"
        lines += [
            f"## {section} ({status})",
            "",
            "| row | reference | mock | reference | ratio | goal | best-time ratio | mock rate "
            "| % of peak | note |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for row in rows:
            unit = "GB" if row.section == "memory" else "ms"
            scale = 1 if unit == "GB" else 1e3
            rate = share = ""
            if row.work:
                value = row.work / row.ours_s / 1e9
                rate = f"{value:.1f} {row.unit}"
                peak = {"GFLOP/s": PEAK.get("gflops"), "GB/s": PEAK.get("gbps")}.get(row.unit)
                share = f"{value / peak:.0%}" if peak else ""
            goal = ("<= " if row.section == "memory" else ">= ") + f"{row.goal:.2f}"
            goal = "-" if row.goal == 0 else goal + ("" if row.met else " **miss**")
            best = f"{row.best_ratio:.2f}" if row.best_ratio else ""
            lines.append(
                f"| {row.label} | {row.reference} | {row.ours_s * scale:.3f} {unit} | "
                f"{row.ref_s * scale:.3f} {unit} | {row.ratio:.2f} | {goal} | {best} | {rate} | "
                f"{share} | {row.note} |"
            )
        lines.append("")
    if NOTES:
        lines += ["Notes:", ""] + [f"- {note}" for note in NOTES] + [""]
    return "\n".join(lines)


# Quoted as a shell would need it (an empty --openblas-coretype value stays visible as '').
COMMAND_LINE = "".join(f" {shlex.quote(a)}" for a in sys.argv[1:])

ANALYSIS_MARK = "<!-- analysis (kept when the table is regenerated) -->"


def write(path: Path, text: str) -> None:
    """Writes the generated part, keeping a hand-written analysis after ANALYSIS_MARK."""
    kept = ""
    if path.exists() and ANALYSIS_MARK in path.read_text():
        kept = path.read_text().split(ANALYSIS_MARK, 1)[1]
    path.write_text(text + "\n" + ANALYSIS_MARK + (kept or "\n"))
    progress(f"wrote {path}")


def main() -> int:
    if ARGS.record_shapes:
        return record_shapes()
    if ARGS.memory_probe:
        return memory_probe()
    sections = ARGS.only.split(",")
    start = time.perf_counter()
    progress(f"mock library: {mock().library_path()}; {ARGS.threads} threads, {ARGS.rounds} rounds")
    blas_kernels()
    header = f"{'section':<12} {'row':<58} {'mock':>10} {'reference':>10}    ratio"
    print(header)
    steps = {
        "roofline": roofline,
        "gemm": gemm_rows,
        "conv": conv_rows,
        "int8": int8_rows,
        "fp16": fp16_rows,
        "memory-bound": memory_bound_rows,
        "networks": network_rows,
        "overhead": overhead_rows,
        "memory": memory_rows,
    }
    for section in SECTIONS:
        if section in sections:
            steps[section]()
    elapsed = time.perf_counter() - start
    print()
    for section in SECTIONS:
        rows = [row for row in ROWS if row.section == section and row.goal]
        if rows:
            missed = [row for row in rows if not row.met]
            worst = min(rows, key=lambda r: r.ratio if section != "memory" else -r.ratio)
            print(
                f"{section}: {len(rows) - len(missed)}/{len(rows)} rows meet the goal"
                f" (worst {worst.ratio:.2f}x: {worst.label})"
            )
    out = ARGS.out
    if out is None and not ARGS.quick and set(sections) == set(SECTIONS):
        out = str(DOC)
    if out:
        write(Path(out), markdown(elapsed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
