# SPDX-License-Identifier: Apache-2.0
"""The commands past the in-process mock (docs/targets.md): ``devices`` and ``run`` with
``--target rpc`` (a TVM RPC server on loopback, the mock loaded in it, as a phone's server has
its NNAPI), the profile ``devices --write-profile`` writes from a target, and the NNAPI
timings the runtime measures where it runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tvm
from mock_nnapi.device_profiles import load_profile
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import tvm_nnapi
from mock_nnapi import control
from tvm_nnapi import runtime
from tvm_nnapi.cli import main
from tvm_nnapi.targets import MockTarget, RpcTarget, TargetUnavailableError

pytest.importorskip("psutil", reason="TVM's RPC server needs psutil: pip install 'tvm-nnapi[test]'")


def _json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def restore_profile():
    previous = control.profile_selection()
    yield
    control.set_profile(previous)


def test_devices_of_an_rpc_target_are_its_nnapi_devices(capsys, tmp_path, restore_profile):
    """The server's NNAPI lists the profile's devices; the probe asks each of them; the written
    profile carries the real names, types and support, validates, and `explain` partitions
    with it."""
    out = tmp_path / "phone.json"
    argv = ["devices", "--target", "rpc", "--profile", "tensor-g2", "--json"]
    document = _json(capsys, [*argv, "--write-profile", str(out), "--name", "probed-g2"])
    assert document["target"].startswith("rpc 127.0.0.1:") and document["mock"] is True
    reference = load_profile("tensor-g2")
    names = [d["name"] for d in reference["devices"]]
    assert [d["name"] for d in document["devices"]] == names
    assert [d["type"] for d in document["devices"]] == [d["type"] for d in reference["devices"]]
    # The Edge TPU takes quantized operations only: every float probe was refused there.
    tpu = document["devices"][0]["probed"]
    assert "TENSOR_FLOAT32" in tpu["refused"]["CONV_2D"]
    assert tpu["supported"]["CONV_2D"] == ["TENSOR_QUANT8_ASYMM"]
    # The same probe in this process (the mock target) answers the same.
    control.set_profile("tensor-g2")
    from tvm_nnapi.tools.device_probe import probe_support

    local, _, _ = probe_support(MockTarget())
    for device in document["devices"]:
        assert device["probed"]["supported"] == {
            op: sorted(types) for op, types in local[device["name"]].supported.items()
        }
    written = load_profile(out)  # validated against the schema
    assert written["name"] == "probed-g2"
    assert [d["name"] for d in written["devices"]] == names
    assert written["devices"][0]["support"]["operations"] == sorted(tpu["supported"])
    control.set_profile(str(out))  # and by the mock's strict reader
    assert control.profile_name() == "probed-g2"
    explained = _json(capsys, ["explain", "residual", "--profile", str(out), "--json"])
    assert explained["profile"] == "probed-g2"
    assert explained["explain"]["subgraphs"]


def test_run_on_an_rpc_target_reports_the_servers_nnapi(capsys, tmp_path):
    document = _json(capsys, ["run", "mobilenet_v2_small", "--target", "rpc", "--json"])
    run = document["run"]
    assert run["passed"] and run["nnapi_ran"]
    assert run["target"].startswith("rpc 127.0.0.1:")
    stats = run["target_stats"]
    assert stats["nnapi_calls"] == 1 and stats["fallbacks"] == 0
    assert stats["cache_hits"] == 1 and stats["compilations"] == 0  # the first call compiled
    assert run["nnapi_operations_executed"] > 10  # the server's mock counted them
    assert run["measured_on_target"]["nnapi_execute_ms"] > 0
    assert run["measured_on_target"]["timed_executions"] == 0  # NNAPI chose the devices


def test_one_device_on_an_rpc_target_reports_nnapi_durations(capsys):
    argv = ["run", "residual", "--target", "rpc", "--profile", "snapdragon-8-gen-2"]
    document = _json(capsys, [*argv, "--devices", "qti-gpu", "--json", "--trace", "-"])
    measured = document["run"]["measured_on_target"]
    assert measured["timed_executions"] >= 1
    assert measured["getduration_in_driver_ms"] > measured["getduration_on_hardware_ms"] > 0
    assert document["run"]["profile"] == "snapdragon-8-gen-2"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "residual", "--target", "device"], "TVM_TRACKER_HOST"),
        (["devices", "--target", "device"], "TVM_NNAPI_ADB_SERIALS"),
        (["measure", "mobilenet_v2:float16:cpu", "-o", "m.json", "--target", "device"], "TVM_"),
        (["llm", "generate", "--tokens", "1", "--target", "device"], "TVM_TRACKER_HOST"),
        (["llm", "bench", "--target", "device"], "TVM_NNAPI_ADB_SERIALS"),
        (["run", "residual", "--target", "device", "--profile", "tensor-g2"], "--profile"),
        (
            ["run", "residual", "--target", "rpc", "--profile", "tensor-g2", "--devices", "npu"],
            "has no NNAPI device named npu",
        ),
        (["devices", "--write-profile", "out.txt"], "give a .json file name"),
    ],
)
def test_target_mistakes_are_one_line(capsys, monkeypatch, argv, message):
    for name in ("TVM_TRACKER_HOST", "TVM_NNAPI_ADB_SERIALS", "TVM_NNAPI_RPC_SERVER"):
        monkeypatch.delenv(name, raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_a_named_rpc_server_is_used_and_a_bad_one_refused(capsys, monkeypatch):
    from tvm import rpc

    from tvm_nnapi.runtime._library import load_runtime_library

    monkeypatch.setenv("TVM_NNAPI_RPC_SERVER", "nowhere")
    with pytest.raises(TargetUnavailableError, match="TVM_NNAPI_RPC_SERVER=nowhere"):
        RpcTarget()
    server = rpc.Server(
        host="127.0.0.1",
        port=9400,
        port_end=9600,
        server_init_callback=load_runtime_library,
        silent=True,
    )
    try:
        monkeypatch.setenv("TVM_NNAPI_RPC_SERVER", f"127.0.0.1:{server.port}")
        document = _json(capsys, ["devices", "--target", "rpc", "--json"])
        assert document["target"] == f"rpc 127.0.0.1:{server.port}"
        assert document["devices"]
    finally:
        server.terminate()


@I.ir_module
class _Projection:
    @R.function
    def main(x: R.Tensor((4, 32), "float32"), w: R.Tensor((32, 32), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.nn.relu(y)
            R.output(z)
        return z


def test_the_runtime_measures_executions_and_reads_nnapi_durations(restore_profile):
    """In process: the runtime's statistics carry the NNAPI executions' wall clock and, for a
    single-device compilation, NNAPI's getDuration, which the mock answers with its modelled
    in-driver and on-hardware times (the trace's)."""
    control.set_profile("snapdragon-8-gen-2")
    previous = runtime.options_in_effect()
    runtime.configure(devices="qti-gpu")
    try:
        vm = relax.VirtualMachine(tvm_nnapi.build(tvm_nnapi.partition(_Projection)), tvm.cpu())
        x = tvm.runtime.tensor(np.ones((4, 32), "float32"))
        w = tvm.runtime.tensor(np.eye(32, dtype="float32"))
        vm["main"](x, w)
        (stats,) = runtime.stats(vm).values()
        trace = control.last_execution_trace()
    finally:
        runtime.configure(devices=previous.get("devices", ""))
    assert stats["timed_executions"] == 1 and stats["execute_time_ns"] > 0
    assert stats["duration_in_driver_ns"] == round(trace["modelled_in_driver_us"] * 1000)
    assert stats["duration_on_hardware_ns"] == round(trace["modelled_on_hardware_us"] * 1000)


def test_measure_on_an_rpc_target_times_the_workloads_there(tmp_path, capsys, restore_profile):
    """``measure --target rpc``: the runtime library in the server builds and times each
    workload from its graph JSON (zero weights travel as a size); the server's mock models
    exactly what this process's mock does with the same profile."""
    specs = ["mobilenet_v2:float16:qti-dsp", "smollm2-1.7b-decode:quant8:qti-gpu"]
    argv = ["measure", *specs, "--profile", "snapdragon-8-gen-2", "--timing", "in_driver"]
    argv += ["--repeats", "2"]
    assert main([*argv, "-o", str(tmp_path / "here.json")]) == 0
    assert main([*argv, "--target", "rpc", "-o", str(tmp_path / "there.json")]) == 0
    here = json.loads((tmp_path / "here.json").read_text())
    there = json.loads((tmp_path / "there.json").read_text())
    assert here["target"] == "mock" and there["target"].startswith("rpc 127.0.0.1:")
    assert there["mock"] is True and there["profile"] == "snapdragon-8-gen-2"
    assert len(there["measurements"]) == 2
    assert there["measurements"] == here["measurements"]
    assert all("modelled (mock_nnapi)" in row["configuration"] for row in there["measurements"])


def test_measure_names_the_operations_a_device_refuses(capsys):
    argv = ["measure", "mobilenet_v3_large:float32:qti-dsp", "--profile", "snapdragon-8-gen-2"]
    assert main([*argv, "--target", "rpc", "-o", "/dev/null"]) == 3
    err = capsys.readouterr().err
    assert "timing mobilenet_v3_large (float32) on qti-dsp" in err
    assert "ANEURALNETWORKS_BAD_DATA" in err
    assert "the chosen NNAPI devices (qti-dsp) do not support" in err
    assert "HARD_SWISH (code 99) x21" in err and "RPCError" not in err
    (line,) = [line for line in err.splitlines() if not line.startswith("measuring ")]
    assert line.startswith("error: measure failed: TargetError: timing mobilenet_v3_large")


def test_the_llm_commands_run_on_an_rpc_target(capsys):
    """``run llm:...``, ``llm generate`` and ``llm bench`` with ``--target rpc``: the engine on
    the server (program, weights, KV cache), NNAPI run there (its statistics), the same greedy
    tokens as in this process."""
    run = _json(capsys, ["run", "llm:tiny-llama", "--target", "rpc", "--json"])["run"]
    assert run["passed"] and run["nnapi_ran"] and run["target"].startswith("rpc 127.0.0.1:")
    assert run["target_stats"]["nnapi_calls"] >= 1
    argv = ["llm", "generate", "--tokens", "1,5,9", "--max-new-tokens", "4", "--json"]
    here = _json(capsys, argv)
    there = _json(capsys, [*argv, "--target", "rpc"])
    assert here["target"] == "mock" and there["target"].startswith("rpc 127.0.0.1:")
    assert there["tokens"] == here["tokens"] and len(there["tokens"]) == 4
    assert there["target_stats"]["nnapi_calls"] == here["target_stats"]["nnapi_calls"] >= 1
    argv = ["llm", "bench", "--target", "rpc", "--json", "--repeat", "1", "--prompt-length", "8"]
    bench = _json(capsys, [*argv, "--decode-tokens", "2"])
    assert bench["target"].startswith("rpc 127.0.0.1:") and "round trips" in bench["measured_on"]
    assert bench["target_stats"]["nnapi"]["nnapi_calls"] >= 1
    assert bench["target_stats"]["host"]["nnapi_modules"] == 0
    assert bench["modelled"]["profile"] == "snapdragon-8-gen-2"


def test_run_layerwise_on_an_rpc_target(capsys):
    argv = ["run", "residual", "--target", "rpc", "--layerwise", "--json"]
    run = _json(capsys, [*argv, "--trace", "-"])["run"]
    assert run["passed"] and run["target"].startswith("rpc 127.0.0.1:")
    rows = run["layerwise"]["rows"]
    assert len(rows) == 4 and all(row["passed"] for row in rows)
    assert {row["subgraph"] for row in rows} == {"main_nnapi_0", "main_nnapi_1"}


def test_the_report_of_a_remote_run_names_the_target_and_its_measured_times(capsys, tmp_path):
    report = tmp_path / "run.html"
    argv = ["run", "residual", "--target", "rpc", "--json", "--report", str(report)]
    run = _json(capsys, argv)["run"]
    page = report.read_text()
    assert run["target"] in page and "Run on rpc 127.0.0.1:" in page
    assert "NNAPI executions&#x27; wall clock" in page or "NNAPI executions' wall clock" in page
    assert "MEASURED on the target" in page
    calls = run["target_stats"]["nnapi_calls"]
    assert f"{calls} / 0 / " in page


def test_the_partition_asks_the_targets_devices_what_they_run(capsys):
    """A float model for the target's Edge TPU (quantized operations only): the partition asks
    the target's NNAPI (getSupportedOperationsForDevices), keeps every operator on the host
    with the devices and the operations they lack, and the run passes."""
    argv = ["run", "residual", "--target", "rpc", "--profile", "tensor-g2", "--json"]
    document = _json(capsys, [*argv, "--devices", "google-edgetpu"])
    assert document["run"]["passed"] and document["explain"]["subgraphs"] == []
    reasons = {r["reason"] for r in document["explain"]["refusals"]}
    assert any(
        "the chosen NNAPI devices (google-edgetpu) do not run ADD (code 0) on TENSOR_FLOAT32" in r
        for r in reasons
    ), reasons
    kinds = {r["operator"]: r["kind"] for r in document["explain"]["refusals"]}
    assert kinds["relax.add"] == kinds["relax.multiply"] == "no device supports it"


def test_a_device_that_refuses_a_built_model_is_named_with_the_operations():
    """A module partitioned for every device, then compiled for the Edge TPU only: the failure
    names the devices, the operations none of them takes (NNAPI name and code, with their
    Relax operators) and NNAPI's result code, not a model-internal operation index."""
    from tvm_nnapi.tools.explain import load_model

    executable = tvm_nnapi.build(tvm_nnapi.partition(load_model("residual")))
    target = RpcTarget(env={}, profile="tensor-g2")
    try:
        target.configure(devices=["google-edgetpu"])
        program = target.load(executable)
        with pytest.raises(Exception) as raised:
            program("main", [np.ones((1, 16), np.float32)])
    finally:
        target.close()
    message = str(raised.value)
    assert "ANEURALNETWORKS_BAD_DATA" in message and "(google-edgetpu)" in message
    assert "do not support ADD (code 0, relax.add), MUL (code 18, relax.multiply)" in message
    assert "operation 0 " not in message
