# SPDX-License-Identifier: Apache-2.0
"""A built program used from many threads: one ``relax.VirtualMachine`` per thread over one
executable (``tvm_nnapi.runtime.PerThreadVM``), the NNAPI runtime modules shared. (Not in the
ThreadSanitizer selection: TVM itself is not built with it.)"""

from __future__ import annotations

import numpy as np
import tvm

from tvm_nnapi import runtime

THREADS = 8
ROUNDS = 6


def test_one_per_thread_vm_serves_many_threads_exactly():
    """A symbolic-batch network called from eight threads through PerThreadVM: each thread
    gets its own VM over the one executable, every result equals the single-threaded one."""
    from concurrent.futures import ThreadPoolExecutor

    import tvm_nnapi
    from tvm_nnapi.tools.explain import load_model

    executable = tvm_nnapi.build(tvm_nnapi.partition(load_model("residual")))
    vm = runtime.PerThreadVM(executable, tvm.cpu())
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((batch, 16)).astype(np.float32) for batch in range(1, 9)]
    expected = [vm["main"](tvm.runtime.tensor(x)).numpy() for x in inputs]

    def work(index: int) -> bool:
        for _ in range(ROUNDS):
            x = inputs[index % len(inputs)]
            out = vm["main"](tvm.runtime.tensor(x)).numpy()
            if not np.array_equal(out, expected[index % len(inputs)]):
                return False
        return True

    with ThreadPoolExecutor(THREADS) as pool:
        assert all(pool.map(work, range(THREADS * 2)))
    assert 2 <= vm.created <= THREADS + 1
