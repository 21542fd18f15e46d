# SPDX-License-Identifier: Apache-2.0
"""The runtime on an older Android: a libneuralnetworks.so without the newer functions (the mock
with MOCK_NNAPI_LIBRARY_FEATURE_LEVEL, so that the runtime's loader finds them missing).

The runtime loads NNAPI once per process, so each feature level runs in a child process: it
builds a small Relax model with tvm_nnapi and runs it, runs a subgraph with per-channel
quantised weights, and reports what the runtime did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mock_nnapi import _library

pytestmark = pytest.mark.skipif(not _library.is_mock(), reason="needs the mock NNAPI")

CHILD = r"""
import json
import numpy as np
import tvm
from tvm import relax
import tvm_nnapi
from tvm_nnapi import runtime
from tvm_nnapi.runtime._library import runtime_function

report = {"info": json.loads(str(runtime_function("tvm_nnapi.testing.nnapi_devices")()))}
# A small model built with tvm_nnapi, run twice.
bb = relax.BlockBuilder()
x = relax.Var("x", relax.TensorType([4, 8], "float32"))
with bb.function("main", [x]):
    with bb.dataflow():
        y = bb.emit(relax.op.add(x, relax.const(np.ones((4, 8), "float32"))))
        out = bb.emit_output(relax.op.multiply(y, y))
    bb.emit_func_output(out)
executable = tvm_nnapi.build(tvm_nnapi.partition(bb.get()))
vm = relax.VirtualMachine(executable, tvm.cpu())
data = np.arange(32, dtype="float32").reshape(4, 8) / 8
for _ in range(2):
    result = vm["main"](tvm.runtime.tensor(data)).numpy()
report["correct"] = bool(np.allclose(result, (data + 1) ** 2, rtol=1e-6))
report["stats"] = next(iter(runtime.stats(executable).values()))
# A subgraph with per-channel quantised weights, as graph JSON.
graph = {
    "format": "tvm-nnapi-graph", "version": 1, "symbol": "per_channel_conv",
    "operands": [
        {"type": "TENSOR_QUANT8_ASYMM", "shape": [1, 2, 2, 2], "scale": 0.5,
         "zero_point": 128},
        {"type": "TENSOR_QUANT8_SYMM_PER_CHANNEL", "shape": [3, 1, 1, 2],
         "channel_quant": {"channel_dim": 0, "scales": [0.25, 0.5, 1.0]},
         "constant": {"offset": 0, "nbytes": 6}},
        {"type": "TENSOR_INT32", "shape": [3], "value": [0, 0, 0]},
        *[{"type": "INT32", "value": v} for v in (0, 0, 0, 0, 1, 1, 0)],
        {"type": "TENSOR_QUANT8_ASYMM", "shape": [1, 2, 2, 3], "scale": 0.5,
         "zero_point": 128},
    ],
    "operations": [{"op": "CONV_2D", "inputs": list(range(10)), "outputs": [10]}],
    "inputs": [0], "outputs": [10],
}
weights = np.array([1, 1, 2, -1, 0, 3], np.int8).tobytes()
module = runtime_function("tvm_nnapi.runtime.create")(
    "per_channel_conv", json.dumps(graph), weights)
x = tvm.runtime.tensor(np.full((1, 2, 2, 2), 130, np.uint8))
y = tvm.runtime.tensor(np.zeros((1, 2, 2, 3), np.uint8))
try:
    module["per_channel_conv"](x, y)
    report["output"] = y.numpy()[0, 0, 0].tolist()
except Exception as error:
    report["error"] = str(error)
print("REPORT " + json.dumps(report))
"""


def _child(tmp_path: Path, level: str) -> tuple[dict[str, Any], str]:
    """Runs CHILD with the mock at feature ``level``, the devices option and a cache directory
    (``tmp_path / "cache"``); returns its report and its stderr."""
    env = dict(
        os.environ,
        MOCK_NNAPI_LIBRARY_FEATURE_LEVEL=level,
        TVM_NNAPI_DEVICES="mock-reference",
        TVM_NNAPI_CACHE_DIR=str(tmp_path / "cache"),
    )
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("REPORT "))
    return json.loads(line.removeprefix("REPORT ")), done.stderr


@pytest.fixture(scope="module")
def android(tmp_path_factory) -> Callable[[str], tuple[dict[str, Any], str, Path]]:
    """The child's (report, stderr, cache directory) at a feature level, run once per level."""
    results: dict[str, tuple[dict[str, Any], str, Path]] = {}

    def run(level: str) -> tuple[dict[str, Any], str, Path]:
        if level not in results:
            directory = tmp_path_factory.mktemp(f"feature-level-{level}")
            report, stderr = _child(directory, level)
            results[level] = (report, stderr, directory / "cache")
        return results[level]

    return run


def test_android_9_runs_on_nnapis_own_devices_without_a_cache(android):
    """Feature level 2 has no device functions, no caching, no compute and no bursts: the
    runtime compiles for NNAPI's own devices, compiles in full and waits on events; it says
    which options it cannot honour, naming the missing functions."""
    report, stderr, cache = android("2")
    assert report["info"]["feature_level"] == 28  # inferred from the functions present
    assert report["correct"]
    stats = report["stats"]
    assert (stats["nnapi_calls"], stats["compilations"], stats["fallbacks"]) == (2, 1, 0)
    assert stats["burst_computes_cached"] == 0
    assert "has no ANeuralNetworks_getDeviceCount (NNAPI feature level 3, Android 10): the " in (
        stderr
    )
    assert "devices and exclude_cpu options are ignored and NNAPI chooses the devices" in stderr
    assert stderr.count("has no ANeuralNetworksCompilation_setCaching (NNAPI feature level 3") == 1
    assert not cache.exists() or not any(cache.iterdir())


def test_android_10_has_devices_and_caching(android):
    report, stderr, cache = android("3")
    assert report["info"]["feature_level"] == 29
    assert [d["name"] for d in report["info"]["devices"]] == ["mock-reference"]
    assert report["correct"] and report["stats"]["burst_computes_cached"] == 2
    assert "has no" not in stderr
    assert any(cache.iterdir())


def test_per_channel_weights_without_the_function_are_a_clear_error(android):
    report, _, _ = android("2")
    assert "error" in report
    message = report["error"]
    assert "NNAPI subgraph 'per_channel_conv': " in message
    assert "needs per-channel quantisation" in message
    assert "has no ANeuralNetworksModel_setOperandSymmPerChannelQuantParams (NNAPI feature " in (
        message
    )
    # The same subgraph runs where the function exists (real outputs 0.5, 0.5 and 3.0).
    report, _, _ = android("3")
    assert report.get("output") == [129, 129, 134], report
