"""Concurrency: many threads running the same compiled module, separate modules at once, and the
runtime's compiled-signature LRU cache inserting and evicting under concurrent calls; also the
mock's C API executing one compilation from many threads. Results must be exact and no NNAPI
object may be left alive. ``tox -e tsan`` runs this file under ThreadSanitizer.

``CONCURRENCY_ROUNDS`` (default 6) scales the number of calls per thread.
"""

from __future__ import annotations

import gc
import json
import os
import random
import threading
from collections.abc import Callable

import numpy as np
import tvm

import mock_nnapi
from mock_nnapi import Compilation, Execution, Model, OperandCode, OperationCode
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
