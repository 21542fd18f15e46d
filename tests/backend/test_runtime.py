# SPDX-License-Identifier: Apache-2.0
"""The runtime module's lifecycle: NNAPI objects are freed, calls from many threads are safe,
one NNAPI model is compiled per shape signature."""

from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import tvm
from tvm import relax
from tvm.script import relax as R

import mock_nnapi
import tvm_nnapi


@tvm.script.ir_module
class Dynamic:
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), w: R.Tensor((8, 8), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.add(y, x)
            R.output(z)
        return z


def _vm() -> relax.VirtualMachine:
    return relax.VirtualMachine(tvm_nnapi.build(Dynamic), tvm.cpu())


def test_every_nnapi_object_is_freed_with_the_module():
    gc.collect()
    baseline = mock_nnapi.counter("live_objects")
    vm = _vm()
    w = tvm.runtime.tensor(np.eye(8, dtype=np.float32))
    for rows in (1, 3, 5):
        vm["main"](tvm.runtime.tensor(np.ones((rows, 8), np.float32)), w)
    assert mock_nnapi.counter("live_compilations") > 0
    del vm
    gc.collect()
    assert mock_nnapi.counter("live_objects") == baseline


def test_one_compilation_per_shape_signature():
    vm = _vm()
    w = tvm.runtime.tensor(np.eye(8, dtype=np.float32))
    before = mock_nnapi.counter("compilations_finished")
    for rows in (1, 7, 1, 7, 64, 1):
        x = np.full((rows, 8), 2.0, np.float32)
        out = vm["main"](tvm.runtime.tensor(x), w).numpy()
        np.testing.assert_array_equal(out, x + x)
    assert mock_nnapi.counter("compilations_finished") - before == 3


def test_concurrent_calls_on_one_module_are_correct():
    vm_factory = tvm_nnapi.build(Dynamic)
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((8, 8)).astype(np.float32)
    inputs = [rng.standard_normal((rows, 8)).astype(np.float32) for rows in (1, 2, 3, 4) * 8]

    def run(x: np.ndarray) -> np.ndarray:
        # A VirtualMachine is not thread-safe; the NNAPI runtime module it shares is.
        vm = relax.VirtualMachine(vm_factory, tvm.cpu())
        return vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(weight)).numpy()

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(run, inputs))
    for x, out in zip(inputs, results, strict=True):
        np.testing.assert_allclose(out, x @ weight + x, rtol=1e-5, atol=1e-5)
