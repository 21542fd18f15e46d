# SPDX-License-Identifier: Apache-2.0
"""The int8 weight path (W8A8): the quantized matmul lowering it relies on (symbolic rows,
per-channel filters given at run time), calibration, requantized weights, the engine's NNAPI
build against the host build of the same QDQ module and against the float model, its
modelled cost from the real graphs, its memory plan and the commands' --int8-weights."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_nnapi
from tvm_nnapi import cli, llm
from tvm_nnapi.compiler.partition import partition_with_report
from tvm_nnapi.llm import int8
from tvm_nnapi.llm.engine import build_engine
from tvm_nnapi.llm.quantized_accuracy import fixed_prompts
from tvm_nnapi.runtime import stats

PROMPTS = fixed_prompts(llm.TINY.vocab_size, count=4)


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the LLM engine runs in process here (mock target)")


# ---- the lowering: a QDQ projection with symbolic rows -------------------------------------------


def _qdq_projection(weight_given_at_run_time: bool, held_as_filter: bool = True) -> tvm.IRModule:
    """x [1, n, 32] -> uint8 QDQ -> matmul with an int8 [48, 32] weight per output channel
    (held as [48, 1, 1, 32] under a reshape) -> uint8 QDQ, in float16."""
    rng = np.random.default_rng(0)
    values = rng.integers(-127, 128, (48, 32)).astype("int8")
    scales = (rng.random(48) * 0.01 + 0.001).astype("float32")
    n = tvm.tirx.Var("n", "int64")
    shape = [48, 1, 1, 32] if held_as_filter else [48, 32]
    x = relax.Var("x", relax.TensorType([1, n, 32], "float16"))
    params = [x]
    if weight_given_at_run_time:
        w = relax.Var("w", relax.TensorType(shape, "int8"))
        params.append(w)
    else:
        w = relax.const(values.reshape(shape))

    def c(value, dtype):
        return relax.const(np.array(value, dtype))

    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            q = bb.emit(
                relax.op.quantize(x, c(0.02, "float32"), c(128, "uint8"), out_dtype="uint8")
            )
            d = bb.emit(relax.op.dequantize(q, c(0.02, "float32"), c(128, "uint8")))
            zeros = relax.const(np.zeros(48, "int8"))
            wd = bb.emit(relax.op.dequantize(w, relax.const(scales), zeros, axis=0))
            if held_as_filter:
                wd = bb.emit(relax.op.reshape(wd, (48, 32)))
            y = bb.emit(relax.op.matmul(d, relax.op.permute_dims(wd)))
            yq = bb.emit(
                relax.op.quantize(y, c(0.05, "float32"), c(120, "uint8"), out_dtype="uint8")
            )
            out = bb.emit_output(
                relax.op.dequantize(yq, c(0.05, "float32"), c(120, "uint8"), out_dtype="float16")
            )
        bb.emit_func_output(out)
    return bb.get(), values.reshape(shape)


@pytest.mark.parametrize("at_run_time", [False, True], ids=["constant", "input"])
def test_a_qdq_projection_with_symbolic_rows_is_one_quantized_conv(at_run_time):
    mod, weight = _qdq_projection(at_run_time)
    result = partition_with_report(mod)
    assert result.refusals == []
    main = result.module["main"]
    called = [g.name_hint for g in relax.analysis.all_global_vars(main)]
    assert len(called) == 1  # QUANTIZE, CONV_2D, DEQUANTIZE: one subgraph
    executable = tvm_nnapi.build(mod)
    host = relax.build(mod, target="llvm")
    rng = np.random.default_rng(1)
    for length in (3, 9):  # one build, two sequence lengths
        x = tvm.runtime.tensor(rng.standard_normal((1, length, 32)).astype("float16"))
        args = [x, tvm.runtime.tensor(weight)] if at_run_time else [x]
        vm = relax.VirtualMachine(executable, tvm.cpu())
        got = vm["main"](*args).numpy().astype(np.float32)
        want = relax.VirtualMachine(host, tvm.cpu())["main"](*args).numpy().astype(np.float32)
        assert got.shape == (1, length, 48)
        # Within one output step, plus float16's rounding of results below 8 (2^-7).
        assert np.abs(want).max() < 8 and np.abs(got - want).max() <= 0.05 + 2**-7
    counts = stats(executable)
    assert sum(s["nnapi_calls"] for s in counts.values()) == 2


def test_a_per_channel_weight_given_at_run_time_must_be_held_as_the_filter():
    mod, _ = _qdq_projection(True, held_as_filter=False)
    reasons = [r.reason for r in partition_with_report(mod).refusals if "matmul" in r.operator]
    assert any("[N, 1, 1, K]" in reason for reason in reasons), reasons


# ---- weights and calibration ---------------------------------------------------------------------


def test_requantized_weights_are_within_half_a_step_per_row():
    rng = np.random.default_rng(2)
    weight = rng.standard_normal((5, 40)).astype(np.float32)
    weight[3] = 0  # a row of zeros keeps scale 1
    stored, scales = int8.requantize_weight(weight)
    assert stored.dtype == np.int8 and stored.shape == (5, 1, 1, 40) and scales.shape == (5,)
    assert scales[3] == 1 and not stored[3].any()
    assert np.abs(stored).max() <= 127
    restored = stored.reshape(5, 40) * scales[:, None]
    assert np.all(np.abs(restored - weight) <= 0.5 * scales[:, None] + 1e-7)


def test_activation_ranges_include_zero():
    quant = int8.ActivationQuant(0.5, 2.0)  # all positive: widened down to 0
    assert quant.zero_point == 0 and quant.scale == pytest.approx(2.0 / 255)
    quant = int8.ActivationQuant(-1.0, 3.0)
    assert quant.scale == pytest.approx(4.0 / 255) and quant.zero_point == 64


# ---- the engine ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engines():
    """The float32 reference, and the int8 path's host and NNAPI builds of tiny-llama's q4f16_1
    weights with one calibration."""
    reference = build_engine(llm.TINY, "float32", False, None, 0)
    host = build_engine(
        llm.TINY, "float16", False, None, 0, quantization="q4f16_1", weight_path="int8"
    )
    nnapi = build_engine(
        llm.TINY,
        "float16",
        True,
        None,
        0,
        quantization="q4f16_1",
        weight_path="int8",
        calibration=host.calibration,
    )
    return reference, host, nnapi


def _logits(engine, prompts):
    result = []
    for prompt in prompts:
        engine.reset()
        result.append(np.asarray(engine.prefill(prompt), np.float64))
    return result


def test_the_calibration_covers_every_projection(engines):
    calibration = engines[1].calibration
    sites = int8.projection_sites(llm.TINY)
    assert set(calibration.inputs) == set(sites) == set(calibration.outputs)
    assert calibration.prompts == 4
    for site in sites:  # real ranges of the float model, both signs (RMSNorm outputs)
        assert calibration.inputs[site].low < 0 < calibration.inputs[site].high


def test_int8_prefill_on_nnapi_matches_the_host_build_of_the_same_module(engines):
    _, host, nnapi = engines
    got, want = _logits(nnapi, PROMPTS), _logits(host, PROMPTS)
    counts = nnapi.nnapi_stats()
    assert counts["nnapi_calls"] > 0 and counts["fallbacks"] == 0 and counts["host_calls"] == 0
    # The same QDQ arithmetic; NNAPI's integer sums and the host's float ones may round an
    # intermediate value to the neighbouring step, which moves a logit by a few LM-head steps.
    step = nnapi.calibration.outputs["lm_head"].scale
    for a, b in zip(got, want, strict=True):
        assert np.abs(a - b).max() <= 8 * step
        assert np.argmax(a) == np.argmax(b)
    assert nnapi.generate(PROMPTS[1], 4).tokens == host.generate(PROMPTS[1], 4).tokens


def test_int8_prefill_stays_close_to_the_float_model_of_the_same_weights(engines):
    reference, _, nnapi = engines
    got, want = _logits(nnapi, PROMPTS), _logits(reference, PROMPTS)
    agree = np.mean([np.argmax(a) == np.argmax(b) for a, b in zip(got, want, strict=True)])
    relative = max(np.abs(a - b).max() / np.abs(b).max() for a, b in zip(got, want, strict=True))
    # Measured on tiny-llama's random weights (docs/llm.md): 88% top-1, 39% over 8 prompts.
    assert agree >= 0.75 and relative < 0.5


# ---- cost, memory and report ---------------------------------------------------------------------


def test_the_estimate_costs_the_int8_graphs():
    from tvm_nnapi.tools.llm_int8 import Int8Estimator

    estimator = Int8Estimator(llm.TINY, "float16")
    prepared = estimator.prepared("prefill", 8)
    operations = [
        op["op"] for doc in prepared.graph_documents().values() for op in doc["operations"]
    ]
    sites = len(int8.projection_sites(llm.TINY))
    assert operations.count("CONV_2D") == sites and "FULLY_CONNECTED" not in operations
    assert operations.count("QUANTIZE") == sites
    estimate = estimator.estimate("prefill", 8, "snapdragon-8-gen-2")
    totals = estimate.to_dict()["totals"]
    assert estimate.weights == "int8" and totals["modelled_weight_setup_us"] == 0
    assert totals["modelled_nnapi_program_us"] > 0


def test_the_int8_plan_holds_a_quarter_of_the_float32_constants():
    from tvm_nnapi.tools import memory

    config = llm.get_config("llama-2-7b")
    resident = memory.plan_memory(config, "q0f32", "nnapi-resident", 128)
    int8_plan = memory.plan_memory(config, "q0f32", "nnapi-int8", 128)
    ratio = int8_plan.nnapi_constant_bytes / resident.nnapi_constant_bytes
    assert 0.25 <= ratio < 0.26  # int8 values, plus a float32 scale per row and the norms
    assert int8_plan.host_weights_bytes < resident.host_weights_bytes


def test_a_7b_int8_plan_is_refused_on_an_8_gb_phone_with_its_own_advice():
    from tvm_nnapi.errors import UsageError
    from tvm_nnapi.tools import memory

    config = llm.get_config("llama-2-7b")
    report = memory.bench_memory_report(config, "q4f16_1", "snapdragon-8-gen-2", 32, 8, int8=True)
    assert [p.plan for p in report.unfit()] == ["nnapi-int8"]
    with pytest.raises(UsageError) as refused:
        report.refuse()
    assert "plan nnapi-int8" in str(refused.value)
    assert "use weights as inputs (the nnapi plan)" in str(refused.value)


def test_the_report_names_each_projections_path():
    rows = int8.projection_rows(llm.TINY, "int8")
    assert [path for _, path, _ in rows] == ["int8"] * 5
    assert "CONV_2D" in rows[0][2]
    tied = int8.projection_rows(llm.TINY_QWEN, "int8")
    assert tied[-1][1] == "resident" and "tied" in tied[-1][2]
    assert {path for _, path, _ in int8.projection_rows(llm.TINY, "input")} == {"input"}


# ---- the commands --------------------------------------------------------------------------------


def test_generate_takes_the_int8_weight_path(capsys):
    argv = ["llm", "generate", "--tokens", "1,2,3", "--max-new-tokens", "2", "--json"]
    assert cli.main([*argv, "--int8-weights"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["weights"] == "int8" and len(result["tokens"]) == 2
    assert result["target_stats"]["nnapi_calls"] > 0
    with pytest.raises(SystemExit) as error:
        cli.main([*argv, "--int8-weights", "--resident-weights"])
    assert error.value.code == 2


def test_estimate_costs_the_int8_path_of_an_llm(capsys):
    argv = ["estimate", "llm:tiny-llama:q4f16_1", "--profile", "snapdragon-8-gen-2", "--json"]
    assert cli.main([*argv, "--weights", "int8"]) == 0
    estimate = json.loads(capsys.readouterr().out)["estimate"]
    assert estimate["weights"] == "int8" and "nnapi-int8" in estimate["memory"]["plans"]
    assert estimate["totals"]["modelled_weight_setup_us"] == 0
    assert {row["path"] for row in estimate["projections"]} == {"int8"}
    operations = {op for sub in estimate["subgraphs"] for op in sub["nnapi_operations"]}
    assert "CONV_2D" in operations and "FULLY_CONNECTED" not in operations
    assert cli.main(["estimate", "residual", "--weights", "int8"]) == 2
    assert "int8 weight path of llm: models" in capsys.readouterr().err
