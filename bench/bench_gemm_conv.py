# SPDX-License-Identifier: Apache-2.0
"""Throughput of the mock's GEMM-shaped and convolution kernels against reference libraries.

Each row is measured side by side in one process with the same thread count on both sides:

- FULLY_CONNECTED and BATCH_MATMUL (fp32) at LLM shapes against numpy's matmul on the same
  operands (x @ w.T for FULLY_CONNECTED's [num_units, input_size] weights). Goal: >= 0.8x.
- CONV_2D and DEPTHWISE_CONV_2D (fp32, NHWC) at MobileNetV2 layer shapes against onnxruntime's
  CPU execution provider running the same convolution (ONNX Conv, NCHW). Goal: >= 0.5x.

Times are the best of several rounds that alternate between the two sides (robust to other load
on the machine); a ratio > 1 means the mock is faster. Both sides run the way repeated inference
does, with buffers bound once: the mock a reusable ANeuralNetworksExecution (constant weights,
one ANeuralNetworksExecution_compute per run), numpy np.matmul(out=...), onnxruntime an
IOBinding.

    python -m pip install --target /tmp/bench-site onnxruntime onnx threadpoolctl
    TVM_NNAPI_LIBRARY=build/mock_nnapi/libneuralnetworks.so PYTHONPATH=/tmp/bench-site \\
        python bench/bench_gemm_conv.py [--threads N] [--rounds R] [--only fc,bmm,conv]

Without onnxruntime (and onnx) the convolution rows are skipped with a message. OpenBLAS reads
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE when loaded: where the environment sets them (some
processors), numpy's kernels are slowed; to compare fairly, unset both for this command alone
(``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ...``). The script prints which OpenBLAS kernel
each library runs (threadpoolctl) so the choice is visible.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds per row")
    parser.add_argument("--only", default="fc,bmm,conv", help="comma list of fc, bmm, conv")
    return parser.parse_args()


ARGS = parse_args()
# Thread counts must be fixed before the BLAS libraries load (threadpoolctl re-applies them).
for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[variable] = str(ARGS.threads)

import numpy as np  # noqa: E402

import mock_nnapi  # noqa: E402
from mock_nnapi import (  # noqa: E402
    Compilation,
    Execution,
    FuseCode,
    Model,
    OperandCode,
    OperationCode,
    PaddingCode,
    api,
)

F32 = OperandCode.TENSOR_FLOAT32
I32 = OperandCode.INT32


def best_times(ours, reference, rounds: int) -> tuple[float, float]:
    """Best wall time of each callable over alternating rounds (after one warm-up each)."""
    ours()
    reference()
    best_ours = best_reference = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        ours()
        best_ours = min(best_ours, time.perf_counter() - start)
        start = time.perf_counter()
        reference()
        best_reference = min(best_reference, time.perf_counter() - start)
    return best_ours, best_reference


def mock_runner(model: Model, feeds: list[np.ndarray], out_shape: tuple[int, ...]):
    """Runs the model the way an app repeats inference: one reusable execution (FL5) with its
    input and output buffers bound once; each run is one ANeuralNetworksExecution_compute."""
    compilation = Compilation(model).finish()
    out = np.empty(out_shape, np.float32)
    try:
        execution = Execution(compilation)
        api.call("ANeuralNetworksExecution_setReusable", execution.handle, True)
    except (AttributeError, api.NnapiError):  # a library without reusable executions

        def run_once() -> np.ndarray:
            return Execution(compilation).compute(feeds, [out_shape])[0]

        return run_once
    for index, array in enumerate(feeds):
        api.call(
            "ANeuralNetworksExecution_setInput",
            execution.handle,
            index,
            None,
            array.ctypes.data_as(ctypes.c_void_p),
            array.nbytes,
        )
    api.call(
        "ANeuralNetworksExecution_setOutput",
        execution.handle,
        0,
        None,
        out.ctypes.data_as(ctypes.c_void_p),
        out.nbytes,
    )
    compute = api.lib().ANeuralNetworksExecution_compute
    handle = execution.handle

    def run() -> np.ndarray:
        api.check("ANeuralNetworksExecution_compute", compute(handle))
        return out

    run.keep_alive = (compilation, execution, feeds)  # type: ignore[attr-defined]
    return run


# ---- FULLY_CONNECTED / BATCH_MATMUL vs numpy ----------------------------------------------


def fully_connected_row(m: int, k: int, n: int, rng) -> tuple:
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = (rng.standard_normal((n, k), dtype=np.float32) / np.sqrt(k)).astype(np.float32)
    b = np.zeros(n, np.float32)  # weights are [num_units, input_size]
    model = Model()
    xi = model.add_operand(F32, x.shape)
    wi = model.add_constant(F32, w)
    bi = model.add_constant(F32, b)
    act = model.add_scalar(I32, FuseCode.NONE)
    out = model.add_operand(F32, (m, n))
    model.add_operation(OperationCode.FULLY_CONNECTED, [xi, wi, bi, act], [out])
    model.identify_inputs_and_outputs([xi], [out])
    model.finish()
    ours = mock_runner(model, [x], (m, n))
    np.testing.assert_allclose(ours(), x @ w.T + b, rtol=1e-3, atol=1e-3)
    w_t = w.T  # a view: numpy passes the transposed operand to BLAS without a copy
    out = np.empty((m, n), np.float32)

    def reference() -> np.ndarray:
        np.matmul(x, w_t, out=out)
        np.add(out, b, out=out)
        return out

    return f"FULLY_CONNECTED {m}x{k} . ({n}x{k})^T", 2.0 * m * n * k, ours, reference, "numpy"


def batch_matmul_row(m: int, k: int, n: int, rng) -> tuple:
    x = rng.standard_normal((m, k), dtype=np.float32)
    y = (rng.standard_normal((k, n), dtype=np.float32) / np.sqrt(k)).astype(np.float32)
    model = Model()
    xi = model.add_operand(F32, x.shape)
    yi = model.add_operand(F32, y.shape)
    adj_x = model.add_scalar(OperandCode.BOOL, False)
    adj_y = model.add_scalar(OperandCode.BOOL, False)
    out = model.add_operand(F32, (m, n))
    model.add_operation(OperationCode.BATCH_MATMUL, [xi, yi, adj_x, adj_y], [out])
    model.identify_inputs_and_outputs([xi, yi], [out])
    model.finish()
    ours = mock_runner(model, [x, y], (m, n))
    np.testing.assert_allclose(ours(), x @ y, rtol=1e-3, atol=1e-3)
    out = np.empty((m, n), np.float32)
    label = f"BATCH_MATMUL {m}x{k} . {k}x{n}"
    return label, 2.0 * m * n * k, ours, lambda: np.matmul(x, y, out=out), "numpy"


# ---- CONV_2D / DEPTHWISE_CONV_2D vs onnxruntime --------------------------------------------


def onnx_conv_session(w_oihw, b, strides, pads, group, threads):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node(
        "Conv",
        ["X", "W", "B"],
        ["Y"],
        strides=list(strides),
        pads=list(pads),  # [top, left, bottom, right]
        group=group,
        kernel_shape=list(w_oihw.shape[2:]),
    )
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w_oihw, "W"), numpy_helper.from_array(b, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def conv_row(name, n, h, w, c_in, c_out, k, stride, depthwise, rng, threads) -> tuple:
    """A SAME-padded k x k convolution (depthwise: c_out == c_in, one filter per channel)."""
    x = rng.standard_normal((n, h, w, c_in), dtype=np.float32)
    if depthwise:
        filt = (rng.standard_normal((1, k, k, c_out), dtype=np.float32) / k).astype(np.float32)
    else:
        scale = 1.0 / np.sqrt(k * k * c_in)
        filt = (rng.standard_normal((c_out, k, k, c_in)) * scale).astype(np.float32)
    b = rng.standard_normal(c_out, dtype=np.float32)
    out_h, out_w = -(-h // stride), -(-w // stride)
    pad_h = max(0, (out_h - 1) * stride + k - h)
    pad_w = max(0, (out_w - 1) * stride + k - w)
    model = Model()
    xi = model.add_operand(F32, x.shape)
    args = [xi, model.add_constant(F32, filt), model.add_constant(F32, b)]
    scalars = [PaddingCode.SAME, stride, stride] + ([1] if depthwise else []) + [FuseCode.NONE]
    args += [model.add_scalar(I32, int(v)) for v in scalars]
    out = model.add_operand(F32, (n, out_h, out_w, c_out))
    op = OperationCode.DEPTHWISE_CONV_2D if depthwise else OperationCode.CONV_2D
    model.add_operation(op, args, [out])
    model.identify_inputs_and_outputs([xi], [out])
    model.finish()
    ours = mock_runner(model, [x], (n, out_h, out_w, c_out))

    w_oihw = np.ascontiguousarray(
        filt.transpose(3, 0, 1, 2) if depthwise else filt.transpose(0, 3, 1, 2)
    )
    pads = [pad_h // 2, pad_w // 2, pad_h - pad_h // 2, pad_w - pad_w // 2]
    session = onnx_conv_session(
        w_oihw, b, (stride, stride), pads, c_in if depthwise else 1, threads
    )
    x_nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    y_nchw = np.empty((n, c_out, out_h, out_w), np.float32)
    binding = session.io_binding()  # bound buffers, like the mock's reusable execution
    binding.bind_cpu_input("X", x_nchw)
    binding.bind_output("Y", "cpu", 0, np.float32, list(y_nchw.shape), y_nchw.ctypes.data)

    def reference() -> np.ndarray:
        session.run_with_iobinding(binding)
        return y_nchw

    np.testing.assert_allclose(ours(), reference().transpose(0, 2, 3, 1), rtol=1e-3, atol=1e-3)
    taps = k * k * (1 if depthwise else c_in)
    flops = 2.0 * n * out_h * out_w * c_out * taps
    label = f"{name} {n}x{h}x{w}x{c_in} {k}x{k}/s{stride} -> {c_out}"
    return label, flops, ours, reference, "onnxruntime"


def blas_report() -> list[str]:
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        return ["threadpoolctl not installed: thread counts set through OPENBLAS_NUM_THREADS only"]
    threadpool_limits(ARGS.threads, user_api="blas")
    lines = []
    for info in threadpool_info():
        lines.append(
            f"  {info.get('internal_api')} {info.get('version')} kernel={info.get('architecture')}"
            f" threads={info.get('num_threads')} ({os.path.basename(info.get('filepath', ''))})"
        )
    return lines


def main() -> int:
    rng = np.random.default_rng(0)
    only = set(ARGS.only.split(","))
    mock_nnapi.lib()  # load the mock (and its OpenBLAS) before reporting the BLAS libraries
    print(
        f"threads per side: {ARGS.threads}; rounds: {ARGS.rounds}; library: "
        f"{mock_nnapi.library_path()}"
    )
    for variable in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if os.environ.get(variable):
            print(
                f"note: {variable}={os.environ[variable]} is set and slows numpy's OpenBLAS; "
                "unset it for this command to compare fairly"
            )
    print("BLAS libraries (threadpoolctl):")
    print("\n".join(blas_report()))

    builders = []
    if "fc" in only:
        builders += [
            lambda: fully_connected_row(128, 4096, 4096, rng),
            lambda: fully_connected_row(1, 4096, 11008, rng),
        ]
    if "bmm" in only:
        builders += [
            lambda: batch_matmul_row(128, 4096, 4096, rng),
            lambda: batch_matmul_row(1, 4096, 11008, rng),
        ]
    conv_skip = None
    if "conv" in only:
        try:
            import onnx  # noqa: F401
            import onnxruntime

            print(
                f"onnxruntime {onnxruntime.__version__} (CPUExecutionProvider, "
                f"intra_op_num_threads={ARGS.threads})"
            )
            t = ARGS.threads
            builders += [
                lambda: conv_row("CONV_2D", 1, 224, 224, 3, 32, 3, 2, False, rng, t),
                lambda: conv_row("DEPTHWISE_CONV_2D", 1, 112, 112, 32, 32, 3, 1, True, rng, t),
                lambda: conv_row("CONV_2D", 1, 56, 56, 24, 144, 1, 1, False, rng, t),
                lambda: conv_row("DEPTHWISE_CONV_2D", 1, 56, 56, 144, 144, 3, 2, True, rng, t),
                lambda: conv_row("CONV_2D", 1, 28, 28, 32, 32, 3, 1, False, rng, t),
                lambda: conv_row("CONV_2D", 1, 14, 14, 384, 64, 1, 1, False, rng, t),
            ]
        except ImportError as error:
            conv_skip = (
                f"convolution rows skipped: {error.name} is not installed "
                "(python -m pip install --target /tmp/bench-site onnxruntime onnx; "
                "then run with PYTHONPATH=/tmp/bench-site)"
            )

    header = f"{'shape':<52} {'ours GFLOP/s':>12} {'ref GFLOP/s':>12} {'ratio':>6}  reference"
    print(header)
    print("-" * len(header))
    results = []
    for build in builders:
        label, flops, ours, reference, ref_name = build()
        t_ours, t_ref = best_times(ours, reference, ARGS.rounds)
        ratio = t_ref / t_ours
        goal = 0.8 if ref_name == "numpy" else 0.5
        results.append((label, ratio, goal))
        print(
            f"{label:<52} {flops / t_ours / 1e9:12.2f} {flops / t_ref / 1e9:12.2f} "
            f"{ratio:6.2f}  {ref_name} (goal >= {goal})",
            flush=True,
        )
        del ours, reference
    if conv_skip:
        print(conv_skip)
    print()
    for goal, what in ((0.8, "GEMM rows vs numpy"), (0.5, "convolution rows vs onnxruntime")):
        rows = [r for r in results if r[2] == goal]
        if not rows:
            continue
        missed = [r[0] for r in rows if r[1] < goal]
        status = "met" if not missed else f"missed by {', '.join(missed)}"
        print(f"goal >= {goal}x for {what}: {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
