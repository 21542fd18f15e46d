# SPDX-License-Identifier: Apache-2.0
"""bench/performance.py --quick: the code of every fast section runs and writes its table.

A smoke test of the benchmark's code on small shapes (a few seconds); nothing here looks at a
time or a ratio's value: the benchmark is not a timed test."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "performance.py"


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the benchmark drives mock_nnapi in process (mock target)")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300
    )


def test_quick_run_writes_every_section_and_keeps_the_analysis(tmp_path):
    out = tmp_path / "performance.md"
    out.write_text("old table\n<!-- analysis (kept when the table is regenerated) -->\nmy notes\n")
    # On x86-64 both sides' OpenBLAS run the kernels --openblas-coretype names.
    forced = ["--openblas-coretype", "Haswell"] if platform.machine() == "x86_64" else []
    result = run(
        "--quick",
        "--threads",
        "1",
        *forced,
        "--only",
        "roofline,gemm,memory-bound,overhead,conv",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "old table" not in text
    assert text.endswith("my notes\n")  # the hand-written part survives regeneration
    assert "**Roofline:** fp32 GEMM peak" in text
    # Which OpenBLAS kernels each side ran (the GEMM parity rows compare the same library).
    assert "**OpenBLAS kernels: mock " in text and ", numpy " in text
    if forced:
        kernels = "mock Haswell (OPENBLAS_CORETYPE=Haswell (environment)), numpy Haswell"
        assert f"**OpenBLAS kernels: {kernels} (the same kernels).**" in text
        # The peak is that of OpenBLAS's own choice, the forced kernels' rate beside it.
        assert "kernels OPENBLAS_CORETYPE=Haswell selects." in text
    for section in ("gemm", "memory-bound"):
        assert f"## {section} (" in text
    rows = [line for line in text.splitlines() if line.startswith("| FULLY_CONNECTED")]
    assert len(rows) == 2  # the two --quick shapes
    assert all(len(row.split("|")) == 12 for row in rows)
    assert "BATCH_MATMUL" in text and "SOFTMAX" in text and "MAX_POOL_2D" in text
    # conv and overhead need onnxruntime and onnx: their rows, or a note saying why not.
    for section in ("conv", "overhead"):
        assert f"## {section} (" in text or f"- {section}: skipped" in text


def test_unknown_section_is_a_usage_error():
    result = run("--only", "gemm,nonsense")
    assert result.returncode == 2
    assert "unknown section(s) nonsense" in result.stderr


def test_quick_int8_and_fp16_sections(tmp_path):
    out = tmp_path / "performance.md"
    result = run("--quick", "--threads", "1", "--only", "int8,fp16", "--out", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    # Progress lines on stderr, like the other sections.
    assert "int8 conv 1/2" in result.stderr and "fp16 fully_connected 1/1" in result.stderr
    # fp16 needs only the mock: the two --quick shapes, each relaxed and TENSOR_FLOAT16.
    assert "## fp16 (" in text and "rows meet the goal)" in text
    fp16 = [line for line in text.splitlines() if "relaxed fp32 |" in line or "FLOAT16 |" in line]
    assert len(fp16) == 4
    assert all(len(row.split("|")) == 12 and "| fp32 |" in row for row in fp16)
    # int8 needs onnxruntime and onnx: two conv layers and two FULLY_CONNECTED shapes, or a note.
    if "- int8: skipped" not in text:
        int8 = [line for line in text.splitlines() if " u8s8 |" in line or " u8u8 |" in line]
        assert len(int8) == 4
        assert "ort QLinearConv" in text and "ort QGemm" in text


# A thread that computes without the GIL (hashlib releases it for large buffers) for `seconds`,
# then the time wait_until_quiet took; run in a fresh interpreter (the bench sets its thread
# variables when it is imported).
QUIET_PROBE = """
import hashlib, sys, threading, time
sys.argv = ["performance.py"]
sys.path.insert(0, {bench!r})
import performance
data = bytes(1 << 20)
def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        hashlib.sha256(data).digest()
worker = threading.Thread(target=spin, args=({seconds},))
worker.start()
start = time.perf_counter()
performance.wait_until_quiet(limit=5.0)
print(time.perf_counter() - start)
worker.join()
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc/self/task")
@pytest.mark.parametrize("seconds", [0.0, 0.3])
def test_quiet_wait_outlasts_a_computing_thread(seconds):
    """Each sample waits for the other side's spinning threads: a thread computing on another
    core must hold the wait until it stops, however its CPU time is accounted (the kernel
    advances a running thread's CPU time only at scheduler ticks, so a check of CPU time over a
    short window can miss it); with none, the wait is short."""
    probe = QUIET_PROBE.format(bench=str(SCRIPT.parent), seconds=seconds)
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    waited = float(result.stdout.split()[-1])
    if seconds:
        assert waited >= 0.8 * seconds, f"returned after {waited:.3f} s, thread ran {seconds} s"
    else:
        assert waited < 0.5, f"no other thread, yet waited {waited:.3f} s"
