# SPDX-License-Identifier: Apache-2.0
"""PartitionOptions(relax_fp32_to_fp16=True) and --relax-fp16: the flag reaches the graph JSON
(so the runtime calls ANeuralNetworksModel_relaxComputationFloat32toFloat16), the mock then lets
float16 devices take float32 operations, the estimate costs that placement and the comparison
uses the float16 tolerance. The commands run as a user runs them (a fresh process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import tvm_nnapi
from tvm_nnapi.compiler.codegen import lower_function
from tvm_nnapi.tools.run import DEFAULT_TOLERANCE

from .cli_runner import run_cli

PROFILE = "snapdragon-8-gen-2"


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("device placement and profiles are the mock's")


@I.ir_module
class _Float32:
    @R.function
    def main(x: R.Tensor((1, 8), "float32"), y: R.Tensor((1, 8), "float32")):
        with R.dataflow():
            a = R.add(x, y)
            b = R.multiply(a, y)
            R.output(b)
        return b


@I.ir_module
class _Float16:
    @R.function
    def main(x: R.Tensor((1, 8), "float16"), y: R.Tensor((1, 8), "float16")):
        with R.dataflow():
            a = R.add(x, y)
            b = R.multiply(a, y)
            R.output(b)
        return b


def _graphs(mod: tvm.IRModule, relaxed: bool) -> list[dict]:
    options = tvm_nnapi.PartitionOptions(relax_fp32_to_fp16=relaxed)
    partitioned = tvm_nnapi.partition(mod, options)
    names = tvm_nnapi.nnapi_subgraphs(partitioned)
    assert names
    return [json.loads(lower_function(partitioned[name]).to_json()) for name in names]


@pytest.mark.parametrize("mod", [_Float32, _Float16], ids=["float32", "float16"])
def test_the_option_reaches_the_graph_json(mod):
    assert all(g["relax_fp32_to_fp16"] is True for g in _graphs(mod, relaxed=True))
    assert all(g["relax_fp32_to_fp16"] is False for g in _graphs(mod, relaxed=False))


def test_prepartitioned_module_keeps_the_flag_through_build():
    """build() of a module partitioned with the option (as demo does) still relaxes: the
    runtime module's graph carries the flag."""
    options = tvm_nnapi.PartitionOptions(relax_fp32_to_fp16=True)
    partitioned = tvm_nnapi.partition(_Float32, options)
    (name,) = tvm_nnapi.nnapi_subgraphs(partitioned)
    assert bool(partitioned[name].attrs["nnapi.relax_fp32_to_fp16"])
    executable = tvm_nnapi.build(partitioned)
    assert relax.VirtualMachine(executable, tvm.cpu()) is not None


def _fastest_for_relaxed_float32() -> str:
    """Android's choice for a relaxed float32 operation with FAST_SINGLE_ANSWER: the device
    that takes it with the lowest relaxed_float32 exec_time, as the mock derives the figures
    from the cost model (control.device_performance)."""
    from mock_nnapi.device_profiles import load_profile

    from mock_nnapi import control

    def takes_it(support: dict) -> bool:
        types = support.get("data_types", "all")
        if types == "all" or "TENSOR_FLOAT32" in types:
            return True
        return bool(support.get("relaxed_float32")) and "TENSOR_FLOAT16" in types

    previous = control.profile_selection()
    control.set_profile(PROFILE)
    try:
        figures = control.device_performance()
    finally:
        control.set_profile(previous)
    devices = [d["name"] for d in load_profile(PROFILE)["devices"] if takes_it(d["support"])]
    return min(devices, key=lambda name: figures[name]["relaxed_float32"]["exec_time"])


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


_PLACEMENT = """
import json, numpy as np, tvm
from tvm import relax
import tvm_nnapi
from mock_nnapi import control
from tvm_nnapi.tools.sources import load_model_source
control.set_profile("{profile}")
control.set_trace_capacity(64)
mod = load_model_source("residual").module
options = tvm_nnapi.PartitionOptions(relax_fp32_to_fp16={relaxed})
vm = relax.VirtualMachine(tvm_nnapi.build(mod, options=options), tvm.cpu())
x = np.random.default_rng(0).standard_normal([int(d) for d in mod["main"].params[0].ty.shape])
vm["main"](tvm.runtime.tensor(x.astype("float32")))
events = [e for t in control.execution_traces() for e in t["events"]]
print(json.dumps(sorted({{str(e["device"]) for e in events if e["kind"] == "operation"}})))
"""


@pytest.mark.parametrize(
    ("relaxed", "preference", "devices"),
    [
        # The DSP takes float16 (and float32 only relaxed). Its derived figures (from the cost
        # model: 7500 GFLOP/s x 0.67 against the GPU's 4178 x 0.5, 0.8 pJ/FLOP against 2.5)
        # make it the fastest and the least energy-hungry device for a relaxed model.
        (True, "low_power", ["qti-dsp"]),
        (True, "fast", ["qti-dsp"]),
        # Not relaxed, float32 cannot use the DSP; the GPU models less energy than the CPU
        # (5 pJ/FLOP against 25), so LOW_POWER picks it too.
        (False, "low_power", ["qti-gpu"]),
        # The rule itself: the device with the lowest derived relaxed_float32 exec_time.
        (True, "fast", None),
    ],
)
def test_relaxed_model_placement_read_from_the_mock_traces(relaxed, preference, devices):
    devices = devices or [_fastest_for_relaxed_float32()]
    code = _PLACEMENT.format(profile=PROFILE, relaxed=relaxed)
    completed = _python(code, {"TVM_NNAPI_PREFERENCE": preference})
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout.splitlines()[-1]) == devices


def _run_json(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    completed = run_cli(
        "run", "residual", "--profile", PROFILE, "--trace", "-", "--json", *args, env=env
    )
    assert completed.returncode in (0, 1), completed.stderr
    return completed.returncode, json.loads(completed.stdout)["run"]


def _ran_on(run: dict) -> set[str]:
    return {device for e in run["modelled"]["executions"] for device in e["devices"]}


def test_run_relaxed_on_the_dsp_passes_with_the_float16_tolerance():
    # The default preference (fast): the DSP is the modelled fastest device for relaxed float32.
    code, run = _run_json("--relax-fp16")
    assert code == 0 and run["passed"]
    assert _ran_on(run) == {"qti-dsp"}
    (output,) = run["outputs"]
    assert output["dtype"] == "float32" and output["precision"] == "relaxed-float16"
    assert output["tolerance"] == DEFAULT_TOLERANCE["relaxed-float16"] == 1e-2
    # The DSP computed in float16: not bit-exact with the float32 host build.
    assert 0 < output["max_rel_error"] < output["tolerance"]


def test_run_without_the_flag_stays_float32():
    code, run = _run_json(env={"TVM_NNAPI_PREFERENCE": "low_power"})
    assert code == 0 and "qti-dsp" not in _ran_on(run)
    (output,) = run["outputs"]
    assert output["precision"] == "float32" and output["tolerance"] == 1e-4


def test_run_relaxed_on_the_dsp_via_devices():
    """--devices qti-dsp without --relax-fp16 leaves the float32 operations nowhere to go on
    the DSP; with it, the DSP runs them."""
    code, run = _run_json("--relax-fp16", "--devices", "qti-dsp")
    assert code == 0 and _ran_on(run) == {"qti-dsp"}


def _estimate(*args: str, preference: str) -> tuple[set[str], dict]:
    completed = run_cli(
        "estimate", "mobilenet_v2_small", "--profile", PROFILE, "--json", *args,
        env={"TVM_NNAPI_PREFERENCE": preference},
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    estimate = json.loads(completed.stdout)["estimate"]
    devices = {d for row in estimate["subgraphs"] for d in row["devices"]}
    return devices, estimate["totals"]


def test_the_estimate_follows_the_flag():
    """The estimate costs the relaxed lowering on the devices the mock assigns it to."""
    plain_devices, plain = _estimate(preference="low_power")
    relaxed_devices, relaxed = _estimate("--relax-fp16", preference="low_power")
    assert plain_devices == {"qti-gpu"} and relaxed_devices == {"qti-dsp"}
    assert relaxed["modelled_compute_us"] < plain["modelled_compute_us"]
    assert relaxed["modelled_nnapi_program_us"] != plain["modelled_nnapi_program_us"]
    # FAST_SINGLE_ANSWER: the device Android's rule picks for relaxed float32.
    assert _estimate("--relax-fp16", preference="fast")[0] == {_fastest_for_relaxed_float32()}
    assert _fastest_for_relaxed_float32() == "qti-dsp"


def test_explain_and_demo_accept_the_flag():
    completed = run_cli(
        "explain", "residual", "--profile", PROFILE, "--relax-fp16", "--json",
        env={"TVM_NNAPI_PREFERENCE": "low_power"},
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    explanation = json.loads(completed.stdout)["explain"]
    assert explanation["relax_fp32_to_fp16"] is True
    # explain's devices come from the estimate, which costs the relaxed lowering.
    assert "qti-dsp" in json.dumps(explanation["subgraph_devices"])
    completed = run_cli("demo", "--model", "residual", "--relax-fp16", "--profile", "none")
    assert completed.returncode == 0, completed.stderr
    assert "tolerance 1e-02, relaxed-float16" in completed.stdout


def test_llm_commands_accept_the_flag():
    completed = run_cli(
        "llm", "generate", "--tokens", "1,2,3", "--max-new-tokens", "2", "--relax-fp16", "--json"
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["relax_fp16"] is True
    completed = run_cli("llm", "generate", "--tokens", "1", "--host", "--relax-fp16")
    assert completed.returncode == 2 and "--relax-fp16 needs the NNAPI build" in completed.stderr
    bench = ["llm", "bench", "--prompt-length", "8", "--decode-tokens", "1", "--repeat", "1"]
    low_power = {"TVM_NNAPI_PREFERENCE": "low_power"}
    plain = json.loads(run_cli(*bench, "--json", env=low_power).stdout)
    completed = run_cli(*bench, "--relax-fp16", "--json", env=low_power)
    assert completed.returncode == 0, completed.stderr
    relaxed = json.loads(completed.stdout)
    assert relaxed["relax_fp16"] is True and plain["relax_fp16"] is False
    # The modelled prefill costs the relaxed lowering (on the DSP instead of the GPU).
    assert (
        relaxed["modelled"]["prefill"]["modelled_nnapi_program_us"]
        != plain["modelled"]["prefill"]["modelled_nnapi_program_us"]
    )


def test_run_relaxed_llm_prefill():
    """The LLM path of `run` (NNAPIDispatch, build_llm) gets the option too."""
    completed = run_cli(
        "run", "llm:tiny-llama", "--shapes", "seq_len=4", "--profile", PROFILE, "--relax-fp16",
        "--trace", "-", "--json", env={"TVM_NNAPI_PREFERENCE": "low_power"},
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    run = json.loads(completed.stdout)["run"]
    assert run["passed"] and run["outputs"][0]["precision"] == "relaxed-float16"
    assert "qti-dsp" in _ran_on(run)
