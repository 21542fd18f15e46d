# SPDX-License-Identifier: Apache-2.0
"""Peak memory of ``tvm-nnapi run`` on ONNX models with one large constant weight.

For each size (MiB of float32 weights) it writes an ONNX model, ``x[1, 4096] @ W[4096, n]``
then ``Relu``, with ``W`` one initializer of that size (``onnx.helper``), runs the real command
(``python -m tvm_nnapi run MODEL --quiet``) as the child of a fresh small process and reads the
child's peak resident set size (``wait4``'s ``ru_maxrss``). A model with a 256 KiB weight, run
the same way first, gives the interpreter's own peak (Python, TVM, the mock, the compilers);
the figure that matters is the growth over it per weight byte::

    ratio = (peak - baseline peak) / weight bytes

Weights are copied where they must be: the relax module holds them as constants (what the host
reference build runs on), the NNAPI module holds its constant blob, and the mock NNAPI copies
large values at ``ANeuralNetworksModel_finish`` (as Android's runtime does). While loading,
``onnx.load``, ``onnx.checker`` and TVM's ONNX frontend hold the file's bytes, the parsed
model and the converted constant at once. docs/reliability.md has the measured figures.

``--phases`` runs each model once more with the peak measured per phase (``VmHWM``, reset
through ``/proc/self/clear_refs`` between phases; Linux only): loading, checking, importing,
partitioning, the NNAPI codegen, the builds, the first NNAPI call (building the NNAPI model).

Usage: python bench/bench_large_weights.py [SIZE_MIB ...] [--phases] [--json OUT.json]
(default sizes 64 and 256: about a minute). ``--peak MODEL`` measures one run of the command
on MODEL (what tests/backend/test_large_weights.py does).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROWS = 4096  # the weight's first dimension (the input's width)
BASELINE_KIB = 256  # the weight of the baseline model


def write_model(path: Path, weight_bytes: int) -> int:
    """An ONNX MatMul + Relu with one float32 weight of about ``weight_bytes``; returns the
    weight's exact size in bytes."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    columns = max(1, weight_bytes // 4 // ROWS)
    weight = np.random.default_rng(0).standard_normal((ROWS, columns), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
        "large_weight",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, ROWS])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, columns])],
        [numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return int(weight.nbytes)


def run_command(model: Path, timeout: float) -> dict[str, Any]:
    """``tvm-nnapi run MODEL`` in a subprocess: its exit code, peak RSS (bytes) and wall time."""
    command = [sys.executable, "-m", "tvm_nnapi", "run", str(model), "--quiet", "--trace", "-"]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, status, usage = _wait(process, timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return {"exit_code": None, "peak_bytes": None, "seconds": timeout, "timed_out": True}
    seconds = time.perf_counter() - start
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {code}: {stderr.strip()[-2000:]}")
    return {"exit_code": code, "peak_bytes": usage.ru_maxrss * 1024, "seconds": seconds}


def measure_peak(model: Path, timeout: float) -> dict[str, Any]:
    """:func:`run_command` from a fresh small process (``--peak``): a child's peak RSS counts
    the memory it shares with its parent when forked, so the command must not be forked from a
    process that holds a model's weights (this one, after writing them) or TVM (a test's)."""
    command = [sys.executable, __file__, "--peak", str(model), "--timeout", str(timeout)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 60)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def _wait(process: subprocess.Popen, timeout: float) -> tuple[int, int, Any]:
    """``os.wait4`` on the process (its own resource usage, not all children's), polled so
    that a run longer than ``timeout`` can be stopped."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return pid, status, usage
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(process.args, timeout)
        time.sleep(0.05)


# ---- the per-phase peaks (--phases) --------------------------------------------------------------

# (module, attribute, phase): functions the command calls once per phase, in the order it does.
PHASES = (
    ("tvm_nnapi.tools.sources", "_load_onnx", "ONNX file -> Relax (load, check, frontend)"),
    ("onnx", "load", "onnx.load"),
    ("onnx.checker", "check_model", "onnx.checker"),
    ("tvm_nnapi.commands.pipeline", "_explain_document", "partition + explain"),
    ("tvm_nnapi", "partition", "partition (run)"),
    ("tvm_nnapi.compiler.codegen", "compile_function", "NNAPI codegen + module"),
    ("tvm_nnapi", "build", "NNAPI build"),
    ("tvm.relax", "build", "relax.build"),
    ("tvm_nnapi.tools.run", "_prepare_mock", "first NNAPI call (model, compilation)"),
)


def _child_phases(model: str) -> None:
    """In the child: run the command with the peak RSS of each phase written to stderr as one
    JSON line per phase, the innermost phase first."""
    import functools
    import importlib

    def status() -> dict[str, int]:
        values = {}
        with open("/proc/self/status", encoding="ascii") as file:
            for line in file:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    values[key] = int(value.split()[0]) * 1024
        return values

    def reset_peak() -> None:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as file:
            file.write("5")

    peaks: list[int] = []  # the peak so far of each phase being measured, outermost first
    phase_start = [time.perf_counter()]

    def measured(function: Any, name: str) -> Any:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start_rss = status()["VmRSS"]
            if peaks:
                peaks[-1] = max(peaks[-1], status()["VmHWM"])
            reset_peak()
            peaks.append(0)
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                now = status()
                peak = max(peaks.pop(), now["VmHWM"])
                if peaks:
                    peaks[-1] = max(peaks[-1], peak)
                record = {
                    "phase": name,
                    "depth": len(peaks),
                    "start_rss": start_rss,
                    "peak_rss": peak,
                    "end_rss": now["VmRSS"],
                    "seconds": time.perf_counter() - start,
                }
                print("PHASE " + json.dumps(record), file=sys.stderr, flush=True)
                reset_peak()

        return wrapper

    def first_call(function: Any, name: str) -> Any:
        # _prepare_mock runs right after the first NNAPI call: that call's peak is the peak
        # since the VMs were created.
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            now = status()
            record = {
                "phase": name,
                "depth": len(peaks),
                "start_rss": None,
                "peak_rss": now["VmHWM"],
                "end_rss": now["VmRSS"],
                "seconds": time.perf_counter() - phase_start[0],
            }
            print("PHASE " + json.dumps(record), file=sys.stderr, flush=True)
            return function(*args, **kwargs)

        return wrapper

    from tvm import relax

    original_vm = relax.VirtualMachine

    def vm(*args: Any, **kwargs: Any) -> Any:
        result = original_vm(*args, **kwargs)
        reset_peak()
        phase_start[0] = time.perf_counter()
        return result

    for module_name, attribute, name in PHASES:
        module = importlib.import_module(module_name)
        wrap = first_call if attribute == "_prepare_mock" else measured
        setattr(module, attribute, wrap(getattr(module, attribute), name))
    relax.VirtualMachine = vm
    from tvm_nnapi.cli import main

    sys.argv = ["tvm-nnapi", "run", model, "--quiet", "--trace", "-"]
    sys.exit(main())


def run_phases(model: Path, timeout: float) -> list[dict[str, Any]]:
    """The per-phase peaks of one run (``--phases``)."""
    command = [sys.executable, __file__, "--child-phases", str(model)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the phases run failed ({done.returncode}): {done.stderr[-2000:]}")
    return [
        json.loads(line.removeprefix("PHASE "))
        for line in done.stderr.splitlines()
        if line.startswith("PHASE ")
    ]


# ---- the report ----------------------------------------------------------------------------------


def measure(sizes_mib: list[float], phases: bool, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench_large_weights_") as directory:
        base_model = Path(directory) / "baseline.onnx"
        write_model(base_model, BASELINE_KIB << 10)
        baseline = measure_peak(base_model, timeout)
        rows = []
        for size in sizes_mib:
            path = Path(directory) / f"weights_{size:g}mib.onnx"
            weight_bytes = write_model(path, int(size * (1 << 20)))
            row: dict[str, Any] = {"size_mib": size, "weight_bytes": weight_bytes}
            row.update(measure_peak(path, timeout))
            if row["peak_bytes"] is not None:
                growth = row["peak_bytes"] - baseline["peak_bytes"]
                row["growth_bytes"] = growth
                row["ratio"] = growth / weight_bytes
            if phases and not row.get("timed_out"):
                row["phases"] = run_phases(path, timeout)
            path.unlink()
            rows.append(row)
    return {
        "command": "python -m tvm_nnapi run MODEL --quiet --trace -",
        "ratio": "(peak RSS - the baseline's peak RSS) / weight bytes",
        "baseline": {"weight_bytes": BASELINE_KIB << 10, **baseline},
        "runs": rows,
    }


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value / (1 << 20):.0f}"


def print_report(report: dict[str, Any]) -> None:
    baseline = report["baseline"]
    print(
        f"baseline (a {BASELINE_KIB} KiB weight): peak {_mib(baseline['peak_bytes'])} MiB, "
        f"{baseline['seconds']:.1f} s"
    )
    print(f"{'weights MiB':>12} {'peak MiB':>9} {'growth MiB':>11} {'ratio':>6} {'seconds':>8}")
    for row in report["runs"]:
        ratio = f"{row['ratio']:.2f}" if row.get("ratio") is not None else "-"
        timed_out = " (timed out)" if row.get("timed_out") else ""
        print(
            f"{row['weight_bytes'] / (1 << 20):12.0f} {_mib(row['peak_bytes']):>9} "
            f"{_mib(row.get('growth_bytes')):>11} {ratio:>6} {row['seconds']:8.1f}{timed_out}"
        )
        for phase in row.get("phases", []):
            indent = "  " * (phase["depth"] + 1)
            growth = (phase["peak_rss"] - baseline["peak_bytes"]) / row["weight_bytes"]
            label = f"{indent}{phase['phase']:<{44 - len(indent)}}"
            print(
                f"{label} peak {_mib(phase['peak_rss']):>6} MiB ({growth:+.2f} x weights over "
                f"the baseline), after {_mib(phase['end_rss'])} MiB, {phase['seconds']:.1f} s"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=float, default=[64, 256], metavar="SIZE_MIB")
    parser.add_argument("--phases", action="store_true", help="also the peak of each phase")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--json", metavar="OUT.json", help="write the figures as JSON")
    parser.add_argument(
        "--peak",
        metavar="MODEL",
        help="only run the command on MODEL and print its peak RSS and time as JSON (from a "
        "small process: a child forked from a large one starts with its parent's peak)",
    )
    parser.add_argument("--child-phases", metavar="MODEL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_phases:
        _child_phases(args.child_phases)
        return 0
    if args.peak:
        print(json.dumps(run_command(Path(args.peak), args.timeout)))
        return 0
    report = measure(args.sizes, args.phases, args.timeout)
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
