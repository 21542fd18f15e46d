# SPDX-License-Identifier: Apache-2.0
"""Subgraph calls that overlap with the program after them (tvm_nnapi/compiler/overlap.py and
the runtime's "<symbol>_async" / tvm_nnapi.runtime.join): where they are placed, the same
results as the synchronous build, errors at the join, tuple outputs, threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_nnapi
from mock_nnapi import ResultCode, control
from tvm_nnapi import runtime
from tvm_nnapi.compiler.overlap import ASYNC_SUFFIX, JOIN_FUNCTION, overlap_subgraph_calls
from tvm_nnapi.compiler.partition import nnapi_subgraphs


def two_branches(size: int = 32) -> tvm.IRModule:
    """x -> relu -> add (an NNAPI subgraph) beside y -> cumsum (host code: no lowering); both
    summed at the end, so neither branch reads the other before the sum."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([1, size, size, 8], "float32"))
    y = relax.Var("y", relax.TensorType([size, size], "float32"))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit(relax.op.nn.relu(x))
            b = bb.emit(relax.op.add(a, a))
            c = bb.emit(relax.op.cumsum(y, axis=1))
            d = bb.emit(relax.op.add(relax.op.sum(b), relax.op.sum(c)))
            out = bb.emit_output(d)
        bb.emit_func_output(out)
    return bb.get()


def two_subgraphs_and_host() -> tvm.IRModule:
    """Two NNAPI subgraphs with host code between them, none reading another before the end;
    the second subgraph has two outputs (a tuple)."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([4, 16], "float32"))
    y = relax.Var("y", relax.TensorType([4, 16], "float32"))
    z = relax.Var("z", relax.TensorType([16, 16], "float32"))
    with bb.function("main", [x, y, z]):
        with bb.dataflow():
            a = bb.emit(relax.op.nn.relu(relax.op.multiply(x, x)))
            c = bb.emit(relax.op.cumsum(z, axis=0))
            parts = bb.emit(relax.op.split(relax.op.tanh(y), 2, axis=1))
            e = bb.emit(relax.op.cumsum(c, axis=1))
            first = bb.emit(relax.TupleGetItem(parts, 0))
            second = bb.emit(relax.TupleGetItem(parts, 1))
            total = relax.op.add(relax.op.sum(a), relax.op.sum(e))
            total = relax.op.add(total, relax.op.sum(relax.op.subtract(first, second)))
            out = bb.emit_output(total)
        bb.emit_func_output(out)
    return bb.get()


def tuple_outputs() -> tvm.IRModule:
    """One NNAPI subgraph with two outputs, each read by host code after independent work."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([8, 8], "float32"))
    z = relax.Var("z", relax.TensorType([8, 8], "float32"))
    with bb.function("main", [x, z]):
        with bb.dataflow():
            a = bb.emit(relax.op.nn.relu(x))
            b = bb.emit(relax.op.tanh(a))
            c = bb.emit(relax.op.cumsum(z, axis=0))
            d = bb.emit(relax.op.cumsum(a, axis=1))
            e = bb.emit(relax.op.cumsum(b, axis=0))
            out = bb.emit_output(relax.op.add(relax.op.add(c, d), e))
        bb.emit_func_output(out)
    return bb.get()


def _run(executable, *inputs):
    vm = relax.VirtualMachine(executable, tvm.cpu())
    return vm["main"](*[tvm.runtime.tensor(v) for v in inputs]).numpy()


def _started(executable) -> int:
    return sum(s["started_calls"] for s in runtime.stats(executable).values())


def test_a_call_followed_by_independent_work_is_started_and_joined_before_its_reader():
    mod = relax.transform.RunCodegen()(tvm_nnapi.partition(two_branches()))
    symbols = nnapi_subgraphs(tvm_nnapi.partition(two_branches()))
    rewritten, count = overlap_subgraph_calls(mod, symbols)
    assert count == 1
    text = rewritten["main"].script()
    started = text.index(symbols[0] + ASYNC_SUFFIX)
    host = text.index("R.cumsum")
    joined = text.index(JOIN_FUNCTION)
    reader = text.index("R.sum(lv_joined")
    assert started < host < joined < reader


def test_a_call_read_by_the_next_binding_stays_synchronous():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([8, 8], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.nn.relu(x))
            out = bb.emit_output(relax.op.cumsum(a, axis=0))
        bb.emit_func_output(out)
    partitioned = tvm_nnapi.partition(bb.get())
    mod = relax.transform.RunCodegen()(partitioned)
    _, count = overlap_subgraph_calls(mod, nnapi_subgraphs(partitioned))
    assert count == 0


def test_a_call_with_a_tuple_of_outputs_is_joined_whole():
    partitioned = tvm_nnapi.partition(tuple_outputs())
    mod = relax.transform.RunCodegen()(partitioned)
    rewritten, count = overlap_subgraph_calls(mod, nnapi_subgraphs(partitioned))
    assert count == 1
    text = rewritten["main"].script()
    joined = text.index(JOIN_FUNCTION)
    assert "out_ty=[R.Tensor((8, 8)" in text[joined:].splitlines()[0]  # both outputs
    assert text.index('lv1: R.Tensor((8, 8), dtype="float32") = lv_joined[0]') > joined


@pytest.mark.parametrize("model", [two_branches, two_subgraphs_and_host, tuple_outputs])
def test_overlapped_build_gives_the_synchronous_results(model):
    rng = np.random.default_rng(3)
    mod = model()
    inputs = [
        rng.standard_normal([int(d) for d in p.ty.shape]).astype("float32")
        for p in mod["main"].params
    ]
    overlapped = tvm_nnapi.build(mod)
    synchronous = tvm_nnapi.build(mod, overlap=False)
    expected = _run(synchronous, *inputs)
    for _ in range(3):
        np.testing.assert_array_equal(_run(overlapped, *inputs), expected)
    assert _started(overlapped) >= 3
    assert _started(synchronous) == 0
    reference = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    host = reference["main"](*[tvm.runtime.tensor(v) for v in inputs]).numpy()
    np.testing.assert_allclose(expected, host, rtol=1e-5, atol=1e-4)


def test_a_failed_started_call_raises_at_the_join_with_its_subgraph():
    executable = tvm_nnapi.build(two_branches())
    x = np.ones([1, 32, 32, 8], "float32")
    y = np.ones([32, 32], "float32")
    _run(executable, x, y)  # compiled; the fault hits the next execution
    control.inject_fault("ANeuralNetworksExecution_burstCompute", ResultCode.OP_FAILED, 1)
    control.inject_fault("ANeuralNetworksExecution_compute", ResultCode.OP_FAILED, 1)
    try:
        with pytest.raises(Exception, match=r"OP_FAILED") as raised:
            _run(executable, x, y)
        assert "nnapi" in str(raised.value)
    finally:
        control.clear_faults()
    np.testing.assert_array_equal(_run(executable, x, y), _run(executable, x, y))


def test_overlapped_calls_from_several_threads():
    """One VM per thread over one overlapped executable: the joins find their own calls."""
    executable = tvm_nnapi.build(two_branches(16))
    rng = np.random.default_rng(5)
    cases = [
        (rng.standard_normal([1, 16, 16, 8]).astype("float32"), rng.standard_normal([16, 16]))
        for _ in range(4)
    ]
    cases = [(x, y.astype("float32")) for x, y in cases]
    synchronous = tvm_nnapi.build(two_branches(16), overlap=False)
    expected = [_run(synchronous, x, y) for x, y in cases]
    failures: list[str] = []

    def worker(index: int) -> None:
        vm = runtime.PerThreadVM(executable, tvm.cpu())
        x, y = cases[index]
        for _ in range(20):
            got = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(y)).numpy()
            if not np.array_equal(got, expected[index]):
                failures.append(f"thread {index}: {got} != {expected[index]}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_the_estimate_models_the_overlap_on_the_programs_timeline():
    """The host bindings between a started call and its join run while the call does: the
    modelled program hides the shorter of the two; a program without such bindings hides
    nothing."""
    from tvm_nnapi.tools.estimate import PreparedEstimate

    estimate = PreparedEstimate(two_branches()).run("snapdragon-8-gen-2")
    (subgraph,) = estimate.subgraphs
    cumsum = next(r for r in estimate.host_rows if r.name == "relax.cumsum")
    assert estimate.modelled_overlap_us == pytest.approx(
        min(cumsum.modelled_host_us, subgraph.modelled_nnapi_us)
    )
    assert estimate.modelled_overlap_us > 0
    assert estimate.modelled_nnapi_program_us == pytest.approx(
        estimate.modelled_serial_nnapi_program_us - estimate.modelled_overlap_us
    )
    assert estimate.to_dict()["totals"]["modelled_overlap_us"] == estimate.modelled_overlap_us

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([8, 8], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.nn.relu(x))
            out = bb.emit_output(relax.op.cumsum(a, axis=0))
        bb.emit_func_output(out)
    chain = PreparedEstimate(bb.get()).run("snapdragon-8-gen-2")
    assert chain.modelled_overlap_us == 0
    assert chain.modelled_nnapi_program_us == chain.modelled_serial_nnapi_program_us


def test_two_started_calls_share_the_nnapi_lane_in_the_model():
    """Two subgraph calls in flight at once run one after the other on the modelled NNAPI
    lane; only host time is hidden."""
    from tvm_nnapi.tools.estimate import PreparedEstimate

    estimate = PreparedEstimate(two_subgraphs_and_host()).run("tensor-g2")
    assert 0 < estimate.modelled_overlap_us <= estimate.modelled_host_only_us + 1e-9
