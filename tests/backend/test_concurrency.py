# SPDX-License-Identifier: Apache-2.0
"""Concurrency: many threads running the same compiled module, separate modules at once, and the
runtime's compiled-signature LRU cache inserting and evicting under concurrent calls, a new
signature compiling while calls on compiled ones go on (the mock holds the compilation); also the
mock's C API executing one compilation from many threads (small products, and large ones split
over the pool or threaded by OpenBLAS). Results must be exact and no NNAPI
object may be left alive. ``tox -e tsan`` runs this file under ThreadSanitizer.

``CONCURRENCY_ROUNDS`` (default 6) scales the number of calls per thread.
"""

from __future__ import annotations

import gc
import json
import os
import random
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest
import tvm

import mock_nnapi
from mock_nnapi import (
    Compilation,
    Execution,
    Model,
    OperandCode,
    OperationCode,
    ResultCode,
    control,
)
from tvm_nnapi import runtime
from tvm_nnapi.compiler.graph_json import GraphBuilder
from tvm_nnapi.runtime._library import runtime_function

THREADS = 8
ROUNDS = int(os.environ.get("CONCURRENCY_ROUNDS", "6"))
create = runtime_function("tvm_nnapi.runtime.create")


def subgraph(offset: float) -> tuple[str, bytes]:
    """y = relu(x + c) reshaped to [n * 2, 2], c = offset + [0, 1, 2, 3]; n is symbolic."""
    builder = GraphBuilder("subgraph0")
    x = builder.add_input("float32", ["n", 4])
    c = builder.add_constant(offset + np.arange(4, dtype=np.float32))
    act = builder.add_scalar("INT32", 1)
    summed = builder.add_tensor("float32", ["n", 4])
    builder.add_operation("ADD", [x, c, act], [summed], "relax.add")
    target = builder.add_int_vector(["n * 2", 2])
    out = builder.add_tensor("float32", ["n * 2", 2])
    builder.add_operation("RESHAPE", [summed, target], [out], "relax.reshape")
    builder.outputs.append(out)
    return json.dumps(builder.to_dict()), bytes(builder.constants)


def make_module(offset: float):
    return create("subgraph0", *subgraph(offset))


def run_and_check(module, offset: float, rows: int, seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal((rows, 4)).astype(np.float32)
    out = tvm.runtime.tensor(np.zeros((rows * 2, 2), np.float32))
    module["subgraph0"](tvm.runtime.tensor(x), out)
    expected = np.maximum(x + (offset + np.arange(4, dtype=np.float32)), 0).reshape(rows * 2, 2)
    np.testing.assert_array_equal(out.numpy(), expected)


def in_threads(work: Callable[[int], None], threads: int = THREADS) -> None:
    """Runs work(thread_index) on `threads` threads started together; re-raises the first error."""
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def body(index: int) -> None:
        try:
            barrier.wait()
            work(index)
        except BaseException as error:
            errors.append(error)

    workers = [threading.Thread(target=body, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]


def live_objects_after(action: Callable[[], None]) -> int:
    gc.collect()
    before = mock_nnapi.counter("live_objects")
    action()
    gc.collect()
    return mock_nnapi.counter("live_objects") - before


def test_many_threads_share_one_compiled_signature():
    def scenario() -> None:
        module = make_module(0.5)
        run_and_check(module, 0.5, 3, seed=0)  # compiled once, before the threads start

        def work(index: int) -> None:
            for round_ in range(ROUNDS * 4):
                run_and_check(module, 0.5, 3, seed=index * 1000 + round_)

        in_threads(work)
        stats = {str(k): int(v) for k, v in module["get_stats"]().items()}
        assert stats["compilations"] == 1
        assert stats["calls"] == 1 + THREADS * ROUNDS * 4
        # One burst serves one call at a time; the others fall back to plain compute.
        assert stats["burst_computes_cached"] >= 1

    assert live_objects_after(scenario) == 0


def test_separate_modules_run_at_once():
    def scenario() -> None:
        offsets = [0.0, 1.0, 2.5, -3.0]
        modules = [make_module(offset) for offset in offsets]

        def work(index: int) -> None:
            rng = random.Random(index)
            for round_ in range(ROUNDS * 3):
                which = rng.randrange(len(modules))
                run_and_check(modules[which], offsets[which], rng.randint(1, 4), index + round_)

        in_threads(work)

    assert live_objects_after(scenario) == 0


def test_lru_insertions_and_evictions_under_concurrent_calls():
    saved = runtime.options_in_effect()
    runtime.configure(cache_max_entries=2)

    def scenario() -> None:
        module = make_module(1.5)

        def work(index: int) -> None:
            rng = random.Random(100 + index)
            for round_ in range(ROUNDS * 3):
                # Six signatures over a two-entry cache: every thread inserts and evicts.
                run_and_check(module, 1.5, rng.randint(1, 6), index * 100 + round_)
                if round_ % 5 == 0:
                    module["get_stats"]()  # readers of the cache, concurrently

        in_threads(work)
        stats = {str(k): int(v) for k, v in module["get_stats"]().items()}
        assert stats["cached_signatures"] <= 2
        assert stats["evictions"] == stats["compilations"] - stats["cached_signatures"]
        assert stats["cache_hits"] + stats["compilations"] == stats["calls"]
        assert stats["compilations"] > 6  # evicted signatures came back

    try:
        assert live_objects_after(scenario) == 0
    finally:
        runtime.configure(**saved)


def stats_of(module) -> dict[str, int]:
    return {str(k): int(v) for k, v in module["get_stats"]().items()}


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Polls a condition the test is about to rely on; the timeout only turns a hang into a
    failure."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.001)


def in_thread(work: Callable[[], None], errors: list[BaseException]) -> threading.Thread:
    def body() -> None:
        try:
            work()
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=body)
    thread.start()
    return thread


def test_compiled_signatures_and_stats_do_not_wait_for_a_new_signature():
    """The mock holds the compilation of a new signature (n=5) in Compilation_finish until the
    test releases it. Meanwhile a call on the compiled signature (n=3) and get_stats complete, so
    the module does not compile under its lock. A second call asking for n=5 while it compiles
    does not compile it again: one compilation serves both."""

    def scenario() -> None:
        module = make_module(0.25)
        run_and_check(module, 0.25, 3, seed=0)  # n=3 compiled before the hold
        finished_before = mock_nnapi.counter("compilations_finished")
        errors: list[BaseException] = []
        threads: list[threading.Thread] = []
        with control.CompilationsHeld():
            threads.append(in_thread(lambda: run_and_check(module, 0.25, 5, seed=1), errors))
            wait_until(lambda: control.held_compilations() == 1, "the n=5 compilation to start")

            during: dict[str, int] = {}

            def compiled_call_and_stats() -> None:
                run_and_check(module, 0.25, 3, seed=2)
                during.update(stats_of(module))

            quick = in_thread(compiled_call_and_stats, errors)
            quick.join(timeout=60)
            assert not quick.is_alive(), "a compiled signature waited for another's compilation"
            assert errors == []
            assert control.held_compilations() == 1  # n=5 is still compiling
            assert during["compilations"] == 1 and during["cached_signatures"] == 1
            assert during["cache_hits"] == 1 and during["calls"] == 3

            threads.append(in_thread(lambda: run_and_check(module, 0.25, 5, seed=3), errors))
            wait_until(lambda: stats_of(module)["calls"] == 4, "the second n=5 call")
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []
        stats = stats_of(module)
        assert stats["compilations"] == 2 and stats["cached_signatures"] == 2
        assert stats["cache_hits"] == 2 and stats["calls"] == 4
        assert mock_nnapi.counter("compilations_finished") == finished_before + 1

    assert live_objects_after(scenario) == 0


def test_a_failed_compilation_leaves_the_signature_to_the_next_call():
    """The held n=5 compilation fails after Compilation_finish (an injected Burst_create fault):
    its call raises, and the other n=5 call, whether it was waiting for that compilation or
    arrives after it, compiles the signature itself and succeeds."""

    def scenario() -> None:
        module = make_module(0.75)
        run_and_check(module, 0.75, 3, seed=0)
        first: list[BaseException] = []
        second: list[BaseException] = []
        with control.CompilationsHeld():
            failing = in_thread(lambda: run_and_check(module, 0.75, 5, seed=1), first)
            wait_until(lambda: control.held_compilations() == 1, "the n=5 compilation to start")
            control.inject_fault("ANeuralNetworksBurst_create", ResultCode.OP_FAILED, 1)
            retrying = in_thread(lambda: run_and_check(module, 0.75, 5, seed=2), second)
            wait_until(lambda: stats_of(module)["calls"] == 3, "the second n=5 call")
        failing.join(timeout=60)
        retrying.join(timeout=60)
        control.clear_faults()
        assert not failing.is_alive() and not retrying.is_alive()
        assert len(first) == 1 and "ANeuralNetworksBurst_create" in str(first[0])
        assert second == []
        stats = stats_of(module)
        assert stats["compilations"] == 2 and stats["cached_signatures"] == 2
        assert stats["cache_hits"] == 0 and stats["calls"] == 3

    try:
        assert live_objects_after(scenario) == 0
    finally:
        control.clear_faults()


def test_modules_created_and_freed_while_others_run():
    def scenario() -> None:
        shared = make_module(2.0)

        def work(index: int) -> None:
            for round_ in range(ROUNDS):
                if index % 2:
                    own = make_module(float(index))
                    run_and_check(own, float(index), 1 + round_ % 3, round_)
                    del own  # freed on this thread while the others run
                else:
                    run_and_check(shared, 2.0, 1 + round_ % 3, index + round_)

        in_threads(work)

    assert live_objects_after(scenario) == 0


def test_mock_executes_one_compilation_from_many_threads():
    """The C API directly: one finished compilation, an execution per call on every thread."""

    def scenario() -> None:
        model = Model()
        a = model.add_tensor(OperandCode.TENSOR_FLOAT32, [16])
        b = model.add_tensor(OperandCode.TENSOR_FLOAT32, [16])
        act = model.add_scalar(OperandCode.INT32, 0)
        out = model.add_tensor(OperandCode.TENSOR_FLOAT32, [16])
        model.add_operation(OperationCode.MUL, [a, b, act], [out])
        model.identify_inputs_and_outputs([a, b], [out])
        model.finish()
        compilation = Compilation(model).finish()

        def work(index: int) -> None:
            rng = np.random.default_rng(index)
            for _ in range(ROUNDS * 4):
                x = rng.standard_normal(16).astype(np.float32)
                y = rng.standard_normal(16).astype(np.float32)
                (result,) = Execution(compilation).compute([x, y])
                np.testing.assert_array_equal(result, x * y)

        in_threads(work)

    assert live_objects_after(scenario) == 0


@pytest.mark.parametrize("threading_mode", ["pool", "blas"])
def test_mock_large_products_from_many_threads(monkeypatch, threading_mode):
    """Large FULLY_CONNECTED products and SOFTMAX (a pool job) from many threads at once, the
    products split over the pool (the
    default) or, with MOCK_NNAPI_GEMM_THREADING=blas, each one OpenBLAS call on its own threads
    (one at a time, while no pool job runs: gemm.cc's BlasThreads). Every result has the bits of
    the product computed alone, whatever the other threads do meanwhile."""
    monkeypatch.setenv("MOCK_NNAPI_GEMM_THREADING", threading_mode)

    def scenario() -> None:
        rng = np.random.default_rng(5)
        x = rng.uniform(-1, 1, (256, 512)).astype(np.float32)
        w = rng.uniform(-1, 1, (1024, 512)).astype(np.float32)
        model = Model()
        xi = model.add_tensor(OperandCode.TENSOR_FLOAT32, [256, 512])
        wi = model.add_constant(OperandCode.TENSOR_FLOAT32, w)
        bi = model.add_constant(OperandCode.TENSOR_FLOAT32, np.zeros(1024, np.float32))
        act = model.add_scalar(OperandCode.INT32, 0)
        out = model.add_tensor(OperandCode.TENSOR_FLOAT32, [256, 1024])
        model.add_operation(OperationCode.FULLY_CONNECTED, [xi, wi, bi, act], [out])
        model.identify_inputs_and_outputs([xi], [out])
        model.finish()
        compilation = Compilation(model).finish()
        (alone,) = Execution(compilation).compute([x])
        # A few rows against float64 sums without BLAS (numpy's threaded OpenBLAS, which TSan
        # cannot see synchronise, stays out of this file's run under ThreadSanitizer).
        rows = (x[:4, None, :].astype(np.float64) * w[None].astype(np.float64)).sum(-1)
        np.testing.assert_allclose(alone[:4], rows, rtol=1e-4, atol=1e-4)
        # SOFTMAX lines shared over the pool (a pool job, OpenBLAS single-threaded meanwhile).
        softmax = Model()
        si = softmax.add_tensor(OperandCode.TENSOR_FLOAT32, [256, 1024])
        beta = softmax.add_scalar(OperandCode.FLOAT32, 1.0)
        so = softmax.add_tensor(OperandCode.TENSOR_FLOAT32, [256, 1024])
        softmax.add_operation(OperationCode.SOFTMAX, [si, beta], [so])
        softmax.identify_inputs_and_outputs([si], [so])
        softmax.finish()
        softmax_compilation = Compilation(softmax).finish()
        (softmax_alone,) = Execution(softmax_compilation).compute([alone])

        def work(index: int) -> None:
            for _ in range(ROUNDS):
                if index % 2:
                    (result,) = Execution(softmax_compilation).compute([alone])
                    np.testing.assert_array_equal(result, softmax_alone)
                else:
                    (result,) = Execution(compilation).compute([x])
                    np.testing.assert_array_equal(result, alone)

        in_threads(work, threads=4)

    assert live_objects_after(scenario) == 0
