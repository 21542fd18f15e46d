# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi run`` on an ONNX model with one large weight stays within a few copies of it.

The command runs in subprocesses, each one's peak resident set size read by ``wait4``:
once on a model with a 256 KiB weight (the interpreter's own peak: Python, TVM, the mock, the
compilers) and once on the same model with a 48 MiB weight. The growth between them, per
weight byte, is about 3 (the Relax constant the host reference runs on, the NNAPI module's
blob, the mock NNAPI's copy at finish; bench/bench_large_weights.py, docs/reliability.md).
The bound, 5, is far above what the noise of a shared machine moves (tens of MiB at most over
the baseline's hundreds) and below what a needless copy of the weight in one phase adds. It
compares memory, not time."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "bench_large_weights.py"
WEIGHT_MIB = 48
BOUND = 5.0


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("measures the peak memory of the command run on this host's mock NNAPI")


def _bench():
    spec = importlib.util.spec_from_file_location("bench_large_weights", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB: Linux")
def test_run_peak_memory_grows_by_a_few_weights(tmp_path):
    bench = _bench()
    baseline_model, large_model = tmp_path / "baseline.onnx", tmp_path / "large.onnx"
    bench.write_model(baseline_model, bench.BASELINE_KIB << 10)
    weight_bytes = bench.write_model(large_model, WEIGHT_MIB << 20)
    # Measured by the bench's --peak, from a small process (a child forked from this one, with
    # TVM loaded, would start with this process's peak); both at once, each peak its own.
    processes = [
        subprocess.Popen(
            [sys.executable, str(BENCH), "--peak", str(model)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for model in (baseline_model, large_model)
    ]
    peaks = []
    for process in processes:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-2000:]
        peaks.append(json.loads(out)["peak_bytes"])
    baseline, large = peaks
    ratio = (large - baseline) / weight_bytes
    assert ratio < BOUND, (
        f"tvm-nnapi run peaked at {large / 2**20:.0f} MiB with a {WEIGHT_MIB} MiB weight, "
        f"{baseline / 2**20:.0f} MiB with a {bench.BASELINE_KIB} KiB one: {ratio:.2f} x the "
        f"weight (bound {BOUND})"
    )
    # The weight is there once at least: the measurement sees the model.
    assert ratio > 0.9, (baseline, large, weight_bytes)
