# SPDX-License-Identifier: Apache-2.0
"""LLM prefill with its weights resident: bound as constants of the NNAPI subgraphs
(``llm.build_llm(..., resident_weights=...)``) instead of passed as inputs at every call.

The resident build must generate what TVM's pure host build generates, its NNAPI subgraphs must
really hold the weights (in their constant blobs, once each, with fewer call arguments), and the
executable must not keep a second copy of them. tiny-llama fp32 (untied LM head) and tiny-qwen
fp16 (tied: the embedding table is a host weight of embed and an NNAPI constant of prefill).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
import tvm
from tvm import relax

import mock_nnapi
import tvm_nnapi
from tvm_nnapi import cli, llm, runtime
from tvm_nnapi.compiler.codegen import lower_function

PROMPTS = [[1, 2, 3], [5, 17, 99, 200, 3, 4, 8], list(range(10, 50))]


def _tolerance(dtype: str, reference: np.ndarray) -> dict[str, float]:
    """fp32 differs in summation order only. fp16 rounds every intermediate result: allow 4
    fp16 ulps of the largest logit (the logits are float32 casts of fp16 values)."""
    if dtype == "float32":
        return {"rtol": 1e-4, "atol": 1e-4}
    ulp = 2.0 ** (np.floor(np.log2(np.abs(reference).max())) - 10)
    return {"rtol": 2e-2, "atol": 4 * ulp}


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the LLM tests drive the KV cache in process; they run on the mock target")


@dataclass
class Builds:
    config: llm.LlamaConfig
    dtype: str
    mod: tvm.IRModule
    names: list[str]
    weights: list[np.ndarray]
    executable: relax.VMExecutable
    resident: llm.LlamaEngine  # prefill on NNAPI with its weights as NNAPI constants
    host: llm.LlamaEngine  # the oracle: the same module built for llvm only


@pytest.fixture(scope="module")
def build_cache() -> dict[tuple[str, str], Builds]:
    return {}


def _builds(cache: dict[tuple[str, str], Builds], name: str, dtype: str) -> Builds:
    if (name, dtype) not in cache:
        config = llm.get_config(name)
        mod, named_params, _ = llm.export_model(config, dtype)
        specs = llm.param_specs(named_params)
        names = [n for n, _ in specs]
        weights = llm.random_weights(specs, dtype, seed=11)
        executable = llm.build_llm(mod, ["prefill"], resident_weights=weights, weight_names=names)
        resident = llm.LlamaEngine(executable, config, weights, dtype)
        host = llm.LlamaEngine(llm.build_llm(mod, []), config, weights, dtype)
        cache[(name, dtype)] = Builds(
            config, dtype, mod, names, weights, executable, resident, host
        )
    return cache[(name, dtype)]


@pytest.fixture(
    params=[("tiny-llama", "float32"), ("tiny-qwen", "float16")], ids=lambda p: f"{p[0]}-{p[1]}"
)
def builds(request, build_cache) -> Builds:
    return _builds(build_cache, *request.param)


@pytest.fixture
def fp32(build_cache) -> Builds:
    return _builds(build_cache, "tiny-llama", "float32")


def _subgraph_calls(executable) -> int:
    return sum(s["nnapi_calls"] for s in runtime.stats(executable).values())


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda p: f"{len(p)}tokens")
def test_resident_prefill_generates_the_same_greedy_tokens_as_llvm(builds, prompt):
    layers = builds.config.num_hidden_layers
    before = mock_nnapi.operation_count("FULLY_CONNECTED")
    calls_before = _subgraph_calls(builds.executable)
    resident = builds.resident.generate(prompt, max_new_tokens=6)
    # One prefill on NNAPI: 4 projections per layer and the LM head; decode stays on the host.
    assert mock_nnapi.operation_count("FULLY_CONNECTED") - before == 4 * layers + 1
    assert _subgraph_calls(builds.executable) > calls_before

    reference = builds.host.generate(prompt, max_new_tokens=6)
    assert resident.tokens == reference.tokens
    np.testing.assert_allclose(
        resident.prefill_logits,
        reference.prefill_logits,
        **_tolerance(builds.dtype, reference.prefill_logits),
    )


def test_only_prefill_is_called_without_weights(builds):
    assert builds.resident.takes_weights == {"embed": True, "prefill": False, "decode": True}
    assert builds.host.takes_weights == {"embed": True, "prefill": True, "decode": True}


def _prefill_weights(b: Builds) -> dict[str, np.ndarray]:
    """The weights prefill uses: all but the embedding table, unless the LM head is tied."""
    return {
        name: w
        for name, w in zip(b.names, b.weights, strict=True)
        if "embed_tokens" not in name or b.config.tie_word_embeddings
    }


def test_subgraphs_hold_each_weight_once_as_a_constant(builds):
    bound = llm.bind_weights(builds.mod, builds.weights, ["prefill"], builds.names)
    assert [p.name for p in bound["prefill"].params] == ["input_embed", "kv_cache"]
    tvm.ir.assert_structural_equal(bound["decode"], builds.mod["decode"])

    dispatch = llm.NNAPIDispatch(["prefill"], run_codegen=False)
    mod = dispatch(bound)
    # Every weight went into an NNAPI subgraph: the host program of prefill holds none.
    assert dispatch.host_constant_bytes == {"prefill": 0}
    graphs = [lower_function(mod[name]) for name in tvm_nnapi.nnapi_subgraphs(mod)]
    blobs = [bytes(g.constants) for g in graphs]
    for name, weight in _prefill_weights(builds).items():
        copies = sum(blob.count(weight.tobytes()) for blob in blobs)
        assert copies == 1, f"{name} is in the constant blobs {copies} times"
    # The graph JSON names the weights as constants, not as subgraph inputs.
    constant_operands = [op for g in graphs for op in g.to_dict()["operands"] if "constant" in op]
    assert len(constant_operands) >= len(_prefill_weights(builds))


def _subgraph_arguments(mod: tvm.IRModule, entry: str) -> int:
    """Tensor arguments of the calls from ``entry`` to its NNAPI subgraphs."""
    count = 0

    def visit(node: object) -> None:
        nonlocal count
        if isinstance(node, relax.Call) and isinstance(node.op, tvm.ir.GlobalVar):
            if node.op.name_hint.startswith(f"{entry}_nnapi_"):
                count += sum(isinstance(a.ty, relax.TensorType) for a in node.args)

    relax.analysis.post_order_visit(mod[entry], visit)
    return count


def test_subgraph_calls_no_longer_pass_the_weights(fp32):
    as_inputs = llm.NNAPIDispatch(["prefill"], run_codegen=False)(fp32.mod)
    bound = llm.bind_weights(fp32.mod, fp32.weights, ["prefill"])
    resident = llm.NNAPIDispatch(["prefill"], run_codegen=False)(bound)
    weights_used = len(_prefill_weights(fp32))
    assert _subgraph_arguments(as_inputs, "prefill") == (
        _subgraph_arguments(resident, "prefill") + weights_used
    )


def test_the_executable_keeps_no_second_copy_of_the_weights(fp32):
    def kinds(module) -> list[str]:
        return [module.kind] + [k for m in module.imports for k in kinds(m)]

    # RunCodegen lists the subgraphs' constants for the VM linker, which would keep them all in
    # a constant-loader module; the NNAPI modules hold them in their own blobs instead.
    found = kinds(fp32.executable.mod)
    assert "const_loader" not in found
    assert found.count("nnapi") == len(runtime.stats(fp32.executable))


def _tensor_constants(func: relax.Function) -> list:
    found: list = []

    def visit(node: object) -> None:
        if isinstance(node, tvm.ir.Constant) and isinstance(
            getattr(node, "value", None), tvm.runtime.Tensor
        ):
            found.append(node)

    relax.analysis.post_order_visit(func, visit)
    return found


def test_prefill_and_decode_both_resident(fp32):
    bound = llm.bind_weights(fp32.mod, fp32.weights, ["prefill", "decode"])
    prefill, decode = _tensor_constants(bound["prefill"]), _tensor_constants(bound["decode"])
    assert len(prefill) == len(decode) == len(_prefill_weights(fp32))
    # One TVM tensor per weight behind both functions' constants, not a copy per function.
    assert all(any(c.value.same_as(d.value) for d in decode) for c in prefill)
    tvm.ir.assert_structural_equal(bound["embed"], fp32.mod["embed"])

    # TVM tensors are bound as they are, without a copy.
    tensors = [tvm.runtime.tensor(w) for w in fp32.weights]
    rebound = _tensor_constants(llm.bind_weights(fp32.mod, tensors, ["decode"])["decode"])
    assert all(any(c.value.same_as(t) for t in tensors) for c in rebound)

    executable = llm.build_llm(fp32.mod, ["prefill", "decode"], resident_weights=tensors)
    engine = llm.LlamaEngine(executable, fp32.config, fp32.weights)
    assert engine.takes_weights == {"embed": True, "prefill": False, "decode": False}
    before = mock_nnapi.counter("executions_completed")
    result = engine.generate(PROMPTS[1], max_new_tokens=5)
    assert mock_nnapi.counter("executions_completed") > before
    assert any(name.startswith("decode_nnapi_") for name in runtime.stats(executable))
    reference = fp32.host.generate(PROMPTS[1], max_new_tokens=5)
    assert result.tokens == reference.tokens


def test_the_estimate_of_the_resident_build_is_the_modelled_resident_option(fp32):
    """The cost model's weights="resident" (the input build's trace without the weight copies)
    is what costing the real resident build, its weights as graph constants, gives."""
    from tvm_nnapi.tools.estimate import estimate

    bound = llm.bind_weights(fp32.mod, fp32.weights, ["prefill"])
    shapes, profile = {"seq_len": 16}, "snapdragon-8-gen-2"
    real = estimate(bound, profile, shapes, "prefill").to_dict()["totals"]
    modelled = estimate(fp32.mod, profile, shapes, "prefill", weights="resident")
    as_inputs = estimate(fp32.mod, profile, shapes, "prefill").to_dict()["totals"]
    assert real["modelled_weight_setup_us"] == 0.0
    for key, value in modelled.to_dict()["totals"].items():
        assert real[key] == pytest.approx(value, rel=1e-9), key
    assert as_inputs["modelled_weight_setup_us"] > 0
    assert real["modelled_nnapi_program_us"] < as_inputs["modelled_nnapi_program_us"]


def test_weights_as_separate_tensor_parameters_are_bound_too():
    """``param_mode="plain"`` exports one tensor parameter per weight, after ``num_input``."""
    builder = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([2, 8], "float32"))
    w = relax.Var("w", relax.TensorType([4, 8], "float32"))
    b = relax.Var("b", relax.TensorType([4], "float32"))
    with builder.function("project", [x, w, b], attrs={"num_input": 1}):
        with builder.dataflow():
            y = builder.emit(relax.op.matmul(x, relax.op.permute_dims(w)))
            out = builder.emit_output(relax.op.add(y, b))
        builder.emit_func_output(out)
    mod = builder.get()
    rng = np.random.default_rng(3)
    weight, bias = rng.standard_normal((4, 8), "float32"), rng.standard_normal(4, "float32")
    bound = llm.bind_weights(mod, [weight, bias], ["project"], ["w", "b"])
    assert [p.name for p in bound["project"].params] == ["x"]

    dispatch = llm.NNAPIDispatch(["project"])
    executable = relax.build(dispatch(bound), target="llvm")
    assert dispatch.host_constant_bytes == {"project": 0}
    data = rng.standard_normal((2, 8), "float32")
    before = mock_nnapi.operation_count("FULLY_CONNECTED")
    result = relax.VirtualMachine(executable, tvm.cpu())["project"](tvm.runtime.tensor(data))
    assert mock_nnapi.operation_count("FULLY_CONNECTED") == before + 1
    np.testing.assert_allclose(result.numpy(), data @ weight.T + bias, rtol=1e-5, atol=1e-5)
    with pytest.raises(llm.WeightError, match=r"weight 1 'b' for project's parameter b has shape"):
        llm.bind_weights(mod, [weight, weight], ["project"], ["w", "b"])


# ---- bad weights -------------------------------------------------------------------------------


def test_a_misshaped_weight_is_named(fp32):
    weights = list(fp32.weights)
    weights[5] = np.ones(63, np.float32)
    with pytest.raises(
        llm.WeightError,
        match=r"weight 5 'model\.layers\.0\.input_layernorm\.weight' for prefill's parameter "
        r"packed_params\[5\] \(model_layers_0_input_layernorm_weight\d*\) has shape \[63\], "
        r"the parameter needs \[64\]",
    ):
        llm.build_llm(fp32.mod, ["prefill"], resident_weights=weights, weight_names=fp32.names)


def test_a_weight_of_the_wrong_dtype_is_named(fp32):
    weights = list(fp32.weights)
    weights[1] = weights[1].astype(np.float64)
    with pytest.raises(
        llm.WeightError,
        match=r"weight 1 for prefill's parameter packed_params\[1\] "
        r"\(model_layers_0_self_attn_qkv_proj_weight\d*\) has dtype float64, "
        r"the parameter needs float32",
    ):
        llm.bind_weights(fp32.mod, weights, ["prefill"])


def test_a_wrong_number_of_weights_is_refused(fp32):
    with pytest.raises(
        llm.WeightError,
        match=rf"prefill takes {len(fp32.weights)} weights \(parameters after its 2 inputs: "
        rf"packed_params\), got {len(fp32.weights) - 1}",
    ):
        llm.bind_weights(fp32.mod, fp32.weights[:-1], ["prefill"])


def test_resident_weights_need_an_offloaded_entry_with_num_input(fp32):
    with pytest.raises(ValueError, match="needs at least one offloaded entry function"):
        llm.build_llm(fp32.mod, [], resident_weights=fp32.weights)
    with pytest.raises(ValueError, match="no function 'verify'"):
        llm.bind_weights(fp32.mod, fp32.weights, ["verify"])
    stripped = tvm.IRModule({"prefill": fp32.mod["prefill"].without_attr("num_input")})
    with pytest.raises(ValueError, match="prefill has no 'num_input' attribute"):
        llm.bind_weights(stripped, fp32.weights, ["prefill"])


# ---- command line --------------------------------------------------------------------------------


def test_generate_with_resident_weights_matches_the_host_build(capsys):
    common = ["llm", "generate", "--tokens", "3,1,4,1,5", "--max-new-tokens", "5", "--json"]
    assert cli.main([*common, "--resident-weights"]) == 0
    resident = json.loads(capsys.readouterr().out)
    assert resident["placement"] == "nnapi" and resident["weights"] == "resident"
    assert cli.main([*common, "--host"]) == 0
    assert resident["tokens"] == json.loads(capsys.readouterr().out)["tokens"]
    assert cli.main([*common, "--host", "--resident-weights"]) == 2  # bad input
    assert "--resident-weights needs the NNAPI build" in capsys.readouterr().err


def test_bench_measures_and_models_the_resident_build(capsys):
    argv = ["llm", "bench", "--resident-weights", "--prompt-length", "4", "--decode-tokens", "1"]
    assert cli.main([*argv, "--repeat", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["measured"]) == {"nnapi", "nnapi-resident", "host"}
    assert result["measured_prefill_ratio_nnapi_over_nnapi_resident"] > 0
    for phase in ("prefill", "decode"):
        modelled, resident = result["modelled"][phase], result["modelled_resident"][phase]
        assert resident["modelled_weight_setup_us"] == 0 < modelled["modelled_weight_setup_us"]
        assert resident["modelled_nnapi_program_us"] < modelled["modelled_nnapi_program_us"]
