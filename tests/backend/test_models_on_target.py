# SPDX-License-Identifier: Apache-2.0
"""Whole models and the runtime's features on the target (``--target mock|rpc|device``,
docs/targets.md): each test builds for the target, runs there, compares with the host ``llvm``
build run here, and reads what happened from the target's own NNAPI runtime statistics
(compilations, signature-cache hits, NNAPI and host calls, getDuration). The differential
report records the target and whether NNAPI ran (tests/targets.py)."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R

import tvm_nnapi
from tvm_nnapi.compiler.patterns import PartitionOptions
from tvm_nnapi.models import mobilenet_v2

from .helpers import run_host

RNG = np.random.default_rng(11)


@pytest.fixture
def options(target):
    """The target's runtime options, restored after the test."""
    before = target.options()
    yield target
    target.configure(**{k: before.get(k, "") for k in ("devices", "exclude_cpu", "policy")})
    target.configure(cache_dir=before.get("cache_dir", ""))


def _build(target, mod: tvm.IRModule, options: PartitionOptions | None = None, **build):
    partitioned = tvm_nnapi.partition(mod, options)
    assert tvm_nnapi.nnapi_subgraphs(partitioned), "nothing offloaded"
    return tvm_nnapi.build(partitioned, target=target.compile_target, **build)


def _check(difftest, got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    """Recorded in the differential report: every element within rtol x max |llvm|."""
    difftest.check(got, want, rtol=0.0, atol=rtol * float(np.max(np.abs(want))))


def _close(got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    error = float(np.max(np.abs(got.astype(np.float64) - want))) / max(
        float(np.max(np.abs(want))), 1e-30
    )
    assert error <= rtol, f"max |target - llvm| / max |llvm| = {error:.3e} > {rtol:g}"


def test_a_float32_cnn_runs_as_one_subgraph(target, difftest):
    mod, _ = mobilenet_v2(width=0.35, resolution=32, num_classes=10)
    x = RNG.standard_normal((1, 3, 32, 32)).astype(np.float32)
    run = target.call(_build(target, mod), "main", [x])
    want = run_host(mod, "main", [x])
    _check(difftest, run.outputs[0], want, 1e-4)
    assert run.stats["nnapi_modules"] == 1 and run.stats["nnapi_calls"] == 1
    assert run.stats["fallbacks"] == 0


def test_a_quantized_qdq_cnn_runs_in_quant8(target, difftest):
    pytest.importorskip("onnxruntime", reason="the QDQ model is made by onnxruntime's quantizer")
    from tvm.relax.frontend.onnx import from_onnx

    from .quantized_models import output_scales, quantize_static, small_cnn

    float_cnn, inputs = small_cnn()
    model = quantize_static(float_cnn, inputs)
    mod = from_onnx(model, keep_params_in_input=False)
    x = RNG.standard_normal(inputs["x"]).astype(np.float32)
    run = target.call(_build(target, mod), "main", [x])
    want = run_host(mod, "main", [x])
    (scale,) = output_scales(model)
    steps = float(np.max(np.abs(run.outputs[0] - want))) / scale
    difftest.check(run.outputs[0], want, atol=3 * scale, rtol=0.0)
    assert steps <= 3, f"{steps} output quantization steps from the host"
    assert run.outputs[0].argmax() == want.argmax()
    assert run.nnapi_ran


@I.ir_module
class _Block:
    @R.function
    def main(x: R.Tensor(("n", 32), "float32"), w: R.Tensor((32, 32), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.nn.relu(R.add(y, x))
            R.output(z)
        return z


def test_relaxed_float16_runs_within_the_float16_tolerance(target, difftest):
    x = RNG.standard_normal((4, 32)).astype(np.float32)
    w = (RNG.standard_normal((32, 32)) / 8).astype(np.float32)
    executable = _build(target, _Block, PartitionOptions(relax_fp32_to_fp16=True))
    run = target.call(executable, "main", [x, w])
    want = run_host(_Block, "main", [x, w])
    _check(difftest, run.outputs[0], want, 1e-2)
    assert run.nnapi_ran


def test_one_module_at_three_shapes_compiles_each_once(target):
    """Symbolic dimensions: one NNAPI compilation per shape signature, reused afterwards (the
    runtime's signature cache, read from the target's statistics)."""
    w = (RNG.standard_normal((32, 32)) / 8).astype(np.float32)
    program = target.load(_build(target, _Block))
    for rows in (1, 5, 17, 5):
        x = RNG.standard_normal((rows, 32)).astype(np.float32)
        run = program("main", [x, w])
        _close(run.outputs[0], run_host(_Block, "main", [x, w]), 1e-4)
    assert run.stats["compilations"] == 3
    assert run.stats["cache_hits"] == 1
    assert run.stats["nnapi_calls"] == 4 and run.stats["cached_signatures"] == 3


def test_one_named_device_compiles_for_it_and_reports_durations(options):
    """``devices=NAME``: createForDevices with that one device; NNAPI then reports the
    execution's durations (getDuration), summed in the target's statistics."""
    from tvm_nnapi.compiler.codegen import lower_function

    target = options
    partitioned = tvm_nnapi.partition(_Block)
    (name,) = tvm_nnapi.nnapi_subgraphs(partitioned)
    graph = lower_function(partitioned[name].with_attr("global_symbol", name))
    answer = target.supported_operations(
        graph.to_json(), bytes(graph.constants), [[3, 32], [32, 32]]
    )
    # A device that takes the whole subgraph, accelerators first (type 2 is CPU).
    types = {d["name"]: d["type"] for d in target.nnapi_devices()["devices"]}
    able = [device for device, flags in answer["devices"].items() if all(flags)]
    chosen = sorted(able, key=lambda device: types[device] == 2)[0]
    target.configure(devices=chosen)
    x = RNG.standard_normal((3, 32)).astype(np.float32)
    w = (RNG.standard_normal((32, 32)) / 8).astype(np.float32)
    run = target.call(_build(target, _Block), "main", [x, w])
    _close(run.outputs[0], run_host(_Block, "main", [x, w]), 1e-2)
    assert run.stats["timed_executions"] == 1
    assert run.stats["duration_in_driver_ns"] >= run.stats["duration_on_hardware_ns"] > 0


def test_the_host_fallback_policy_keeps_small_shapes_on_the_host(options):
    """A threshold policy on the target: a one-row call stays on TVM's host code there, a
    64-row call goes to NNAPI; both agree with llvm."""
    target = options
    target.configure(policy="threshold:100000")
    program = target.load(_build(target, _Block, host_fallback=True))
    w = (RNG.standard_normal((32, 32)) / 8).astype(np.float32)
    for rows in (1, 64):
        x = RNG.standard_normal((rows, 32)).astype(np.float32)
        run = program("main", [x, w])
        _close(run.outputs[0], run_host(_Block, "main", [x, w]), 1e-4)
    assert run.stats["host_calls"] == 1 and run.stats["nnapi_calls"] == 1
    assert run.stats["signatures_on_host"] == 1 and run.stats["signatures_on_nnapi"] == 1


def test_the_nnapi_compilation_cache_carries_over_to_a_second_process(options):
    """With a cache directory, a second process on the target compiles the same subgraph from
    NNAPI's compilation cache (on the mock: its cache-hit counter; a real driver keeps its own
    books, so there only the results are compared)."""
    target = options
    try:
        second = target.second_session()
    except NotImplementedError as missing:
        pytest.skip(
            f"{missing}; the mock's cache across processes is tests/backend/test_runtime_cache.py"
        )
    directory = tempfile.mkdtemp(prefix="tvm-nnapi-cache-")
    x = RNG.standard_normal((2, 32)).astype(np.float32)
    w = (RNG.standard_normal((32, 32)) / 8).astype(np.float32)
    want = run_host(_Block, "main", [x, w])
    executable = _build(target, _Block)
    try:
        target.configure(cache_dir=directory)
        second.configure(cache_dir=directory)
        _close(target.call(executable, "main", [x, w]).outputs[0], want, 1e-4)
        mock = bool(second.info().get("mock"))
        hits = second.counter("compilation_cache_hits") if mock else -1
        run = second.call(executable, "main", [x, w])
        _close(run.outputs[0], want, 1e-4)
        assert run.stats["compilations"] == 1
        if mock:
            assert second.counter("compilation_cache_hits") == hits + 1
    finally:
        second.close()


def test_the_calibration_loop_measures_on_the_target_then_fits_and_estimates(
    target, tmp_path, capsys
):
    """docs/targets.md, "A day with a phone": probe the target's devices into a profile,
    measure a calibration workload there (the runtime library times it: no Python needed on a
    phone), fit the profile to the rows, estimate a model with the fitted profile beside a run
    on the target. On the mock and the emulated device the times are modelled (the mock's
    executions are cost-only): this checks the plumbing, not a phone's speed."""
    import json

    from mock_nnapi.device_profiles import load_profile

    from mock_nnapi import control
    from tvm_nnapi.cli import main
    from tvm_nnapi.tools import calibrate
    from tvm_nnapi.tools.device_probe import probe_support, profile_from_probe, write_profile

    support, _, skipped = probe_support(target)
    info = target.nnapi_devices()
    base = load_profile("snapdragon-8-gen-2")
    phone = tmp_path / "phone.json"
    write_profile(
        profile_from_probe(info, support, base, "phone", target.describe(), skipped), phone
    )
    # A device that takes every operation of the float32 workload, accelerators first.
    needed = ("CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "MEAN", "RESHAPE", "FULLY_CONNECTED")
    able = [
        d
        for d in info["devices"]
        if all("TENSOR_FLOAT32" in support[d["name"]].supported.get(op, ()) for op in needed)
    ]
    assert able, f"no device of {target.describe()} takes a float32 CNN"
    device = sorted(able, key=lambda d: d["type"] == 2)[0]["name"]

    timings, where = calibrate.measure(
        [("mobilenet_v2", "float32", device)], repeats=2, warmup=1, function=target.function
    )
    assert where["mock"] == timings[0].modelled
    rows = [timings[0].measurement("wall", source=target.describe())]
    calibrate.write_measurements(tmp_path / "rows.csv", rows)
    fitted = calibrate.fit(phone, calibrate.read_measurements(tmp_path / "rows.csv"))
    (row,) = fitted.rows
    before = max(row.modelled_before / row.measured, row.measured / row.modelled_before)
    assert row.factor <= before + 1e-9 and row.factor < 1.5
    calibrated = tmp_path / "phone-calibrated.json"
    calibrate.write_profile(fitted.profile, calibrated)

    previous = control.profile_selection()
    capsys.readouterr()
    try:
        code = main(["estimate", "mobilenet_v2_small", "--profile", str(calibrated), "--json"])
    finally:
        control.set_profile(previous)
    printed = capsys.readouterr()
    assert code == 0, printed.err
    estimate = json.loads(printed.out)["estimate"]
    assert estimate["modelled"] and estimate["totals"]["modelled_nnapi_program_us"] > 0
    mod, _ = mobilenet_v2(width=0.35, resolution=32, num_classes=10)
    x = RNG.standard_normal((1, 3, 32, 32)).astype(np.float32)
    run = target.call(_build(target, mod), "main", [x])
    assert run.nnapi_ran and run.stats["execute_time_ns"] > 0


def test_the_llm_prefills_on_nnapi_there_and_decodes_the_same_greedy_tokens(target, difftest):
    """tiny-llama's engine on the target: the program built for it, weights and KV cache there,
    prefill through NNAPI and decode on TVM's CPU code there, driven from here; the same greedy
    tokens as the host build here."""
    from tvm_nnapi.llm import build_engine, get_config

    config = get_config("tiny-llama")
    host = build_engine(config, "float32", False, None, 0)
    there = build_engine(config, "float32", True, None, 0, target=target)
    prompt = [1, 5, 9, 22, 7]
    want, got = host.generate(prompt, 6), there.generate(prompt, 6)
    _check(difftest, got.prefill_logits, want.prefill_logits, 1e-4)
    assert got.tokens == want.tokens
    stats = there.nnapi_stats()
    assert stats["nnapi_calls"] >= 1 and stats["host_calls"] == 0


def test_the_layerwise_comparison_runs_every_operator_on_the_target(target, difftest):
    """``run --layerwise`` on the target: each NNAPI subgraph, with every composite's result as
    an output, runs on the target's NNAPI (graph JSON through the runtime library there), the
    host side here; every operator agrees."""
    from tvm_nnapi.tools.layerwise import layerwise
    from tvm_nnapi.tools.run import random_inputs
    from tvm_nnapi.tools.sources import load_model_source

    source = load_model_source("mobilenet_v2_small")
    partitioned = tvm_nnapi.partition(source.module, None, source.partition_entries)
    result = layerwise(source, partitioned, random_inputs(source, 0), "float32", target=target)
    assert len(result.rows) > 20, "one row per composite"
    assert result.first_divergence is None, result.first_divergence
    assert all(row.passed for row in result.rows)
    calls = len({(row.subgraph, row.call_index) for row in result.rows})
    difftest.nnapi(True, f"{target.name}: run_graph ran {calls} subgraph calls' composites")
