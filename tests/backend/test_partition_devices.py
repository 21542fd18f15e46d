# SPDX-License-Identifier: Apache-2.0
"""Device-aware partitioning: with --devices / --no-nnapi-cpu the partition asks the chosen
devices (getSupportedOperationsForDevices on the target's NNAPI) what they run, keeps the rest
on the host with the reason, and explain, estimate and run agree."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tvm
from tvm import relax

import mock_nnapi
import tvm_nnapi
from mock_nnapi import control
from tvm_nnapi.compiler.codegen import lower_function
from tvm_nnapi.compiler.patterns import candidate_key
from tvm_nnapi.targets import MockTarget
from tvm_nnapi.tools.explain import load_model
from tvm_nnapi.tools.partition_target import ChosenDevices, partition_options, probe_shapes

from .cli_runner import run_cli

# A small network with a transposed convolution, layer norm, GELU and attention-style matmuls.
NETWORK = """
import numpy as np
from tvm.script import ir as I, relax as R

rng = np.random.default_rng(0)
W = rng.standard_normal((8, 4, 3, 3)).astype("float32") * 0.1
T = rng.standard_normal((8, 8, 2, 2)).astype("float32") * 0.1


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 8, 8), "float32")):
        with R.dataflow():
            c = R.nn.conv2d(x, R.const(W), padding=1)
            t = R.nn.conv2d_transpose(c, R.const(T), strides=2)
            a = R.abs(t)
            r = R.reshape(a, (1, 8, 256))
            p = R.permute_dims(r, (0, 2, 1))
            n = R.nn.layer_norm(
                p, R.const(np.ones(8, "float32")), R.const(np.zeros(8, "float32")), axes=[-1]
            )
            g = R.nn.gelu(n)
            q = R.matmul(g, R.permute_dims(g, (0, 2, 1)))
            s = R.nn.softmax(q, axis=-1)
            o = R.matmul(s, g)
            R.output(o)
        return o


mod = Module
"""

CHOICES = {
    "relaxed float16 on the DSP": (
        ["--profile", "snapdragon-8-gen-2", "--relax-fp16", "--devices", "qti-dsp"],
        "qti-dsp",
    ),
    "no NNAPI CPU": (["--profile", "tensor-g2", "--no-nnapi-cpu"], "every device without CPUs"),
    "float32 on the DSP": (["--profile", "snapdragon-8-gen-2", "--devices", "qti-dsp"], "qti-dsp"),
}


@pytest.fixture(scope="module")
def network(tmp_path_factory):
    path = tmp_path_factory.mktemp("network") / "network.py"
    path.write_text(NETWORK)
    return path


def _document(command: str, network, options: list[str]) -> dict:
    completed = run_cli(command, str(network), *options, "--json", "--quiet")
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


@pytest.mark.parametrize("choice", list(CHOICES))
def test_explain_estimate_and_run_agree_on_what_the_devices_take(network, choice):
    options, described = CHOICES[choice]
    explained = _document("explain", network, options)["explain"]
    estimated = _document("estimate", network, options)
    ran = _document("run", network, [*options, "--trace", "-"])
    assert ran["run"]["passed"]
    for document in (estimated["explain"], ran["explain"]):
        assert document["refusals"] == explained["refusals"]
        assert document["subgraphs"] == explained["subgraphs"]
    refused = [r for r in explained["refusals"] if r["kind"] == "no device supports it"]
    assert refused, explained["refusals"]
    assert all(f"the chosen NNAPI devices ({described}) do not run" in r["reason"] for r in refused)
    # Operations are named by NNAPI name and code, never by their index in a model.
    assert not any("operation " in r["reason"] for r in refused)


def test_float32_on_the_dsp_keeps_everything_on_the_host_with_the_operand_type(network):
    explained = _document("explain", network, CHOICES["float32 on the DSP"][0])["explain"]
    assert explained["subgraphs"] == [] and explained["offloaded_operators"] == 0
    reasons = {r["operator"]: r["reason"] for r in explained["refusals"]}
    assert "CONV_2D (code 3) on TENSOR_FLOAT32 of rank 4" in reasons["relax.nn.conv2d"]


def _operations_the_chosen_devices_lack(module, chosen: list[str]) -> list[str]:
    lacking = []
    for name in tvm_nnapi.nnapi_subgraphs(module):
        builder = lower_function(module[name])
        shapes = probe_shapes(builder)
        assert shapes is not None
        answer = MockTarget().supported_operations(
            builder.to_json(), bytes(builder.constants), shapes
        )
        for index, operation in enumerate(builder.operations):
            if not any(answer["devices"][device][index] for device in chosen):
                lacking.append(f"{name}: {operation.op}")
    return lacking


@pytest.mark.parametrize(
    ("model", "profile", "devices", "relaxed"),
    [
        ("mobilenet_v2_small", "snapdragon-8-gen-2", ("qti-dsp",), True),
        ("mobilenet_v2_small", "tensor-g2", ("google-edgetpu",), False),
        ("residual", "dimensity-9000", ("mtk-neuron",), True),
    ],
)
def test_every_offloaded_operation_runs_on_a_chosen_device(model, profile, devices, relaxed):
    module = load_model(model)
    with control.Profile(profile):
        options = partition_options(profile, relax_fp16=relaxed, devices=devices)
        partitioned = tvm_nnapi.partition(module, options)
        assert _operations_the_chosen_devices_lack(partitioned, list(devices)) == []


def test_devices_that_take_everything_leave_the_partition_as_it_was():
    module = load_model("mobilenet_v2_small")
    with control.Profile("snapdragon-8-gen-2"):
        plain = tvm_nnapi.partition_with_report(module, partition_options("snapdragon-8-gen-2"))
        gpu = partition_options("snapdragon-8-gen-2", devices=("qti-gpu",))
        chosen = tvm_nnapi.partition_with_report(module, gpu)
    assert chosen.refusals == plain.refusals == []
    assert tvm_nnapi.nnapi_subgraphs(chosen.module) == tvm_nnapi.nnapi_subgraphs(plain.module)
    assert chosen.module["main_nnapi_0"].script() == plain.module["main_nnapi_0"].script()


class _NoRelu:
    """An oracle whose devices run everything but a ReLU (alone or fused)."""

    asked = 0

    def describe(self) -> str:
        return "a device without ReLU"

    def refused_candidates(self, mod):
        self.asked += 1
        refused = {}
        for name in tvm_nnapi.nnapi_subgraphs(mod):
            spans: dict = {}
            lower_function(mod[name], spans=spans)
            for composite, _ in spans.values():
                calls = [
                    b.value
                    for block in composite.body.blocks
                    for b in block.bindings
                    if isinstance(b.value, relax.Call)
                ]
                if any(str(call.op.name) == "relax.nn.relu" for call in calls):
                    refused[candidate_key(str(composite.attrs["Composite"]), calls)] = "no ReLU"
        return refused


def test_a_refused_fused_pattern_gives_way_to_smaller_ones():
    """A convolution fused with its ReLU is refused as a whole; the next round offloads the
    convolution alone and keeps the ReLU on the host, and the result runs correctly."""
    from tvm.script import ir as I
    from tvm.script import relax as R

    weight = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype("float32")

    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((1, 3, 8, 8), "float32")):
            with R.dataflow():
                c = R.nn.conv2d(x, R.const(weight), padding=1)
                y = R.nn.relu(c)
                R.output(y)
            return y

    oracle = _NoRelu()
    options = tvm_nnapi.PartitionOptions(device_oracle=oracle)
    result = tvm_nnapi.partition_with_report(Module, options)
    assert oracle.asked >= 2
    assert [(r.operator, r.reason) for r in result.refusals] == [("relax.nn.relu", "no ReLU")]
    operations = [
        op.op
        for name in tvm_nnapi.nnapi_subgraphs(result.module)
        for op in lower_function(result.module[name]).operations
    ]
    assert [op for op in operations if op != "TRANSPOSE"] == ["CONV_2D"]
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype("float32")
    vm = relax.VirtualMachine(tvm_nnapi.build(result.module), tvm.cpu())
    host = relax.VirtualMachine(relax.build(Module, target="llvm"), tvm.cpu())
    arguments = [tvm.runtime.tensor(x)]
    np.testing.assert_allclose(
        vm["main"](*arguments).numpy(), host["main"](*arguments).numpy(), rtol=1e-4, atol=1e-5
    )


def test_build_keeps_a_partition_with_everything_on_the_host():
    """A module partitioned with no NNAPI subgraph (the chosen devices take nothing) is built
    as it is, not partitioned again for every device."""
    module = load_model("residual")
    with control.Profile("tensor-g2"):
        options = partition_options("tensor-g2", devices=("google-edgetpu",))
        partitioned = tvm_nnapi.partition(module, options)
    assert tvm_nnapi.nnapi_subgraphs(partitioned) == []
    vm = relax.VirtualMachine(tvm_nnapi.build(partitioned), tvm.cpu())
    before = mock_nnapi.counter("executions_completed")
    vm["main"](tvm.runtime.tensor(np.ones((1, 16), np.float32)))
    assert mock_nnapi.counter("executions_completed") == before


def test_the_chosen_devices_describe_themselves():
    assert ChosenDevices(("qti-dsp", "qti-gpu")).describe() == "qti-dsp, qti-gpu"
    assert ChosenDevices((), True).describe() == "every device without CPUs"


def test_the_environment_chooses_devices_as_the_flags_do(network):
    """TVM_NNAPI_DEVICES (the runtime's devices option from the environment) narrows the
    partition exactly as --devices does."""
    options = ["--profile", "snapdragon-8-gen-2", "--relax-fp16"]
    flagged = _document("explain", network, [*options, "--devices", "qti-dsp"])
    completed = run_cli(
        "explain", str(network), *options, "--json", "--quiet", env={"TVM_NNAPI_DEVICES": "qti-dsp"}
    )
    assert completed.returncode == 0, completed.stderr
    from_env = json.loads(completed.stdout)
    assert from_env["device_choice"] == {"devices": ["qti-dsp"], "exclude_cpu": False}
    assert from_env["explain"]["refusals"] == flagged["explain"]["refusals"]
