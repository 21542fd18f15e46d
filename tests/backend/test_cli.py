# SPDX-License-Identifier: Apache-2.0
"""The tvm-nnapi command line: devices, models, explain, estimate and run on a CNN, an LLM
configuration and an ONNX file the tests write."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tvm_nnapi.cli import build_parser, main

from .cli_runner import run_cli


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The command line in a fresh process (for device profiles, which are process-wide)."""
    return run_cli(*args, columns=200, check=check)


SUBCOMMANDS = ("demo", "devices", "models", "explain", "estimate", "run")


def _json(capsys: pytest.CaptureFixture, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# ---- models the tests write ----------------------------------------------------------------------

TINY_CNN = textwrap.dedent(
    """
    import numpy as np
    import tvm
    from tvm import relax

    def get_model():
        rng = np.random.default_rng(0)
        bb = relax.BlockBuilder()
        x = relax.Var("image", relax.TensorType([1, 3, 16, 16], "float32"))
        weight = relax.const(rng.standard_normal((8, 3, 3, 3)).astype("float32") * 0.3)
        bias = relax.const(rng.standard_normal((1, 8, 1, 1)).astype("float32"))
        dense = relax.const(rng.standard_normal((8, 4)).astype("float32"))
        with bb.function("main", [x]):
            with bb.dataflow():
                y = bb.emit(relax.op.nn.conv2d(x, weight, padding=1))
                y = bb.emit(relax.op.nn.relu(relax.op.add(y, bias)))
                y = bb.emit(relax.op.nn.max_pool2d(y, pool_size=2, strides=2))
                y = bb.emit(relax.op.mean(y, axis=[2, 3]))
                out = bb.emit_output(relax.op.matmul(y, dense))
            bb.emit_func_output(out)
        return bb.get()
    """
)


def write_tiny_cnn(tmp_path) -> str:
    path = tmp_path / "tiny_cnn.py"
    path.write_text(TINY_CNN)
    return str(path)


def write_onnx_cnn(tmp_path, unsupported: str | None = None) -> str:
    """A small ONNX CNN: Conv, Relu, MaxPool, GlobalAveragePool, Flatten, Gemm (+ Cos, which
    NNAPI has no operation for), with a symbolic batch dimension."""
    onnx = pytest.importorskip("onnx", reason="ONNX models need the onnx package: pip install onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    initializers = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3, "w"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b"),
        numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), "fc"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "fc"], ["m"], name="fc"),
        helper.make_node(unsupported or "Cos", ["m"], ["out"], name="activation"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 5])],
        initializer=initializers,
    )
    path = tmp_path / "tiny_cnn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


# ---- help, devices, models -----------------------------------------------------------------------


def test_help_lists_every_subcommand():
    text = build_parser().format_help()
    for command in SUBCOMMANDS:
        assert command in text
    for command in ("explain", "estimate", "run"):
        sub = build_parser().parse_args([command, "residual"])
        assert sub.model == "residual" and sub.report is None and not sub.json


def test_devices_lists_the_mock_device(capsys):
    assert main(["devices"]) == 0
    assert "mock-reference" in capsys.readouterr().out


def test_devices_of_a_phone_profile_with_types_levels_and_operations():
    data = json.loads(_cli("devices", "--profile", "snapdragon-8-gen-2", "--json").stdout)
    assert data["profile"] == "snapdragon-8-gen-2"
    kinds = {device["type"] for device in data["devices"]}
    assert kinds == {"ACCELERATOR", "GPU", "CPU"}
    dsp = next(d for d in data["devices"] if d["type"] == "ACCELERATOR")
    assert "CONV_2D" in dsp["supported_operations"] and dsp["feature_level"] > 0
    # The derived (modelled) figures that pick the device: the DSP beats the GPU for relaxed
    # float32 and int8, the runtime CPU is 1.0.
    gpu = next(d for d in data["devices"] if d["type"] == "GPU")
    cpu = next(d for d in data["devices"] if d["type"] == "CPU")
    for data_class in ("relaxed_float32", "quant8"):
        dsp_time = dsp["modelled_performance"][data_class]["exec_time"]
        assert dsp_time < gpu["modelled_performance"][data_class]["exec_time"] < 1
    assert cpu["modelled_performance"]["float32"] == {"exec_time": 1.0, "power_usage": 1.0}


def test_devices_names_a_bad_profile():
    completed = _cli("devices", "--profile", "no-such-phone", check=False)
    assert completed.returncode == 2
    assert "no-such-phone" in completed.stderr


def test_models_lists_cnns_and_llm_configurations(capsys):
    assert main(["models"]) == 0
    names = capsys.readouterr().out.split()
    assert "mobilenet_v2_small" in names and "llm:tiny-llama" in names
    assert "llm:llama-2-7b" in names and "torchvision:mobilenet_v3_large" in names


def test_demo_reports_subgraphs_refusals_and_a_match(capsys):
    assert main(["demo", "--model", "residual"]) == 0
    out = capsys.readouterr().out
    assert "main_nnapi_0" in out and "main_nnapi_1" in out
    assert "relax.cumsum" in out
    assert "results match" in out
    # The modelled estimate on the default phone profile comes before the run.
    assert "Modelled on snapdragon-8-gen-2" in out
    assert "NNAPI: qti-gpu" in out and "modelled speedup" in out
    assert out.index("Modelled on") < out.index("Run on the mock")
    # The model itself has the refusal: the demo does not show a second model for it.
    assert "An operator NNAPI cannot take" not in out


def test_python_dash_m_entry_point():
    completed = subprocess.run(
        [sys.executable, "-m", "tvm_nnapi", "--help"], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0
    assert "demo" in completed.stdout


# ---- explain on a CNN, an LLM and an ONNX file ---------------------------------------------------


def test_explain_cnn_json_has_the_graph(capsys):
    data = _json(capsys, "explain", "mobilenet_v2_small")
    assert data["schema"] == "tvm-nnapi.cli/1" and data["command"] == "explain"
    graph = data["explain"]["graph"]
    kinds = {node["kind"] for node in graph["nodes"]}
    assert kinds == {"input", "nnapi"}
    convs = [n for n in graph["nodes"] if "CONV_2D" in n["nnapi_operations"]]
    assert len(convs) == 35 and all(n["subgraph"] == "main_nnapi_0" for n in convs)
    assert data["estimate"] is None and data["run"] is None


def test_explain_llm_binds_seq_len(capsys):
    data = _json(capsys, "explain", "llm:tiny-llama", "--shapes", "seq_len=16")
    assert data["model"]["entry"] == "prefill" and data["model"]["shapes"] == {"seq_len": 16}
    explanation = data["explain"]
    names = [sub["name"] for sub in explanation["subgraphs"]]
    assert names and all(name.startswith("prefill_nnapi_") for name in names)
    operations = {op for sub in explanation["subgraphs"] for op in sub["nnapi_operations"]}
    assert "FULLY_CONNECTED" in operations
    assert all(sub["symbols"] == [] for sub in explanation["subgraphs"])  # seq_len is bound
    assert explanation["flop_share"] is not None and explanation["flop_share"] > 0.9
    labels = {node["label"] for node in explanation["graph"]["nodes"] if node["kind"] == "host"}
    assert "attention_kv_cache_attention_with_fused_qkv" in labels


def test_explain_llm_decode_entry(capsys):
    data = _json(capsys, "explain", "llm:tiny-llama", "--entry", "decode")
    assert [s["name"].split("_nnapi_")[0] for s in data["explain"]["subgraphs"]] == ["decode"] * 3


def test_explain_full_size_llm_draws_one_node_per_subgraph_call(capsys):
    data = _json(capsys, "explain", "llm:llama-2-7b", "--shapes", "seq_len=128")
    graph = data["explain"]["graph"]
    assert graph["detail"] == "subgraph"
    calls = [node for node in graph["nodes"] if node["kind"] == "nnapi"]
    assert len(calls) == 33  # one before the first attention, one per layer after it
    # Everything but the KV-cache attention calls (packed calls, counted one FLOP per output
    # element) is offloaded.
    assert data["explain"]["flop_share"] > 0.9999
    assert set(data["explain"]["host_operators"]) == {"relax.call_dps_packed"}


def test_explain_onnx_names_the_refused_operator(tmp_path, capsys):
    path = write_onnx_cnn(tmp_path)
    data = _json(capsys, "explain", path, "--shapes", "batch=2")
    explanation = data["explain"]
    operations = {op for sub in explanation["subgraphs"] for op in sub["nnapi_operations"]}
    assert {"CONV_2D", "MAX_POOL_2D"} <= operations
    (refusal,) = explanation["refusals"]
    assert refusal["operator"] == "relax.cos" and refusal["kind"] == "unsupported operator"
    assert main(["explain", path]) == 0
    assert "relax.cos" in capsys.readouterr().out


def test_explain_onnx_unknown_operator_names_the_node(tmp_path, capsys):
    path = write_onnx_cnn(tmp_path, unsupported="NoSuchOperator")
    assert main(["explain", path]) == 2
    err = capsys.readouterr().err
    assert path in err and "activation (NoSuchOperator)" in err


def test_shapes_errors_name_the_symbol(capsys):
    assert main(["explain", "residual", "--shapes", "seq_len=4"]) == 2
    err = capsys.readouterr().err
    assert "seq_len" in err and "batch" in err
    assert main(["explain", "residual", "--shapes", "batch=four"]) == 2
    assert "batch='four'" in capsys.readouterr().err


def test_torch_export_file_without_torch_says_what_to_install(tmp_path, capsys):
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("torch is installed; test_torch_export_file covers .pt2 files")
    import zipfile

    path = tmp_path / "model.pt2"
    with zipfile.ZipFile(path, "w") as archive:  # what torch.export.save writes first
        archive.writestr("model/archive_format", "pt2")
    assert main(["explain", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "torch" in err and "models" in err


def test_torch_export_file(tmp_path, capsys):
    torch = pytest.importorskip(
        "torch", reason="torch.export files need torch: pip install '.[models]' (tox -e models)"
    )

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.norm = torch.nn.BatchNorm2d(8)
            self.fc = torch.nn.Linear(8, 4)

        def forward(self, x):
            y = torch.relu(self.norm(self.conv(x)))
            return torch.cos(self.fc(torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)))

    torch.manual_seed(0)
    path = tmp_path / "net.pt2"
    torch.export.save(torch.export.export(Net().eval(), (torch.randn(1, 3, 16, 16),)), str(path))
    data = _json(capsys, "run", str(path), "--trace", "-")
    assert data["model"]["kind"] == "torch.export" and data["run"]["passed"]
    operations = {op for sub in data["explain"]["subgraphs"] for op in sub["nnapi_operations"]}
    assert {"CONV_2D", "FULLY_CONNECTED"} <= operations
    assert [r["operator"] for r in data["explain"]["refusals"]] == ["relax.cos"]


# ---- estimate (MODELLED) -------------------------------------------------------------------------


def _estimate_engine():
    return pytest.importorskip(
        "tvm_nnapi.tools.estimate",
        reason="the estimation engine tvm_nnapi.tools.estimate is not installed",
    )


@pytest.mark.parametrize("profile", ["snapdragon-8-gen-2"])
def test_estimate_cnn(profile):
    _estimate_engine()
    data = json.loads(_cli("estimate", "mobilenet_v2_small", "--profile", profile, "--json").stdout)
    estimate = data["estimate"]
    assert estimate["modelled"] is True and estimate["profile"] == profile
    (row,) = estimate["subgraphs"]
    assert row["name"] == "main_nnapi_0" and row["modelled_nnapi_us"] > 0
    totals = estimate["totals"]
    assert totals["modelled_nnapi_program_us"] > 0 and totals["modelled_host_program_us"] > 0


def test_explain_with_a_profile_names_the_devices_of_each_subgraph():
    _estimate_engine()
    data = json.loads(_cli("explain", "residual", "--profile", "tensor-g2", "--json").stdout)
    devices = data["explain"]["subgraph_devices"]
    assert set(devices) == {"main_nnapi_0", "main_nnapi_1"}
    profile_devices = {
        d["name"]
        for d in json.loads(_cli("devices", "--profile", "tensor-g2", "--json").stdout)["devices"]
    }
    assert all(names and set(names) <= profile_devices for names in devices.values())


def test_explain_reads_a_profile_file_whose_name_is_not_the_file_name(tmp_path):
    # The partition options come from the profile the mock selected, not from a built-in
    # profile looked up by the name inside the file.
    from mock_nnapi import device_profiles

    profile = device_profiles.load_profile("tensor-g2")
    profile["name"] = "my-phone"
    profile["runtime"]["feature_level"] = 6
    path = tmp_path / "phone.json"
    path.write_text(json.dumps(profile))
    data = json.loads(_cli("explain", "residual", "--profile", str(path), "--json").stdout)
    assert data["profile"] == "my-phone"
    assert data["explain"]["feature_level"] == 1000006


def test_estimate_llm_and_onnx(tmp_path):
    _estimate_engine()
    data = json.loads(
        _cli(
            "estimate",
            "llm:tiny-llama",
            "--shapes",
            "seq_len=32",
            "--profile",
            "tensor-g2",
            "--json",
        ).stdout
    )
    assert {row["name"] for row in data["estimate"]["subgraphs"]} == {
        sub["name"] for sub in data["explain"]["subgraphs"]
    }
    report = tmp_path / "estimate.html"
    path = write_onnx_cnn(tmp_path)
    text = _cli("estimate", path, "--shapes", "batch=1", "--report", str(report)).stdout
    assert "MODELLED" in text and "speedup" in text
    page = report.read_text()
    assert "Estimate" in page and "main_nnapi_0" in page and "relax.cos" in page


# ---- run -----------------------------------------------------------------------------------------


def test_run_cnn_writes_trace_and_result(tmp_path, capsys):
    trace, result = tmp_path / "cnn.trace.json", tmp_path / "cnn.result.json"
    args = ["run", write_tiny_cnn(tmp_path), "--trace", str(trace), "--result", str(result)]
    data = _json(capsys, *args)
    run = data["run"]
    assert run["passed"] and run["nnapi_ran"] and run["max_rel_error"] < 1e-4
    assert run["outputs"][0]["shape"] == [1, 4]
    assert json.loads(result.read_text())["passed"] is True
    document = json.loads(trace.read_text())
    assert document["otherData"]["modelled"] is True
    assert document["otherData"]["differential"]["passed"] is True
    operations = [e for e in document["traceEvents"] if e.get("cat") == "operation"]
    assert {e["name"] for e in operations} >= {"CONV_2D", "MAX_POOL_2D"}
    # The graph's NNAPI nodes carry the device the mock ran them on.
    nodes = data["explain"]["graph"]["nodes"]
    assert all(n["devices"] == ["mock-reference"] for n in nodes if n["kind"] == "nnapi")


def test_run_llm_prefill_matches_host(tmp_path, capsys):
    trace = tmp_path / "llm.trace.json"
    args = ["run", "llm:tiny-llama", "--shapes", "seq_len=8", "--trace", str(trace)]
    data = _json(capsys, *args)
    run = data["run"]
    assert run["passed"] and run["nnapi_ran"]
    assert run["outputs"][0]["shape"] == [256]  # logits over the vocabulary
    executions = [
        e for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "execution"
    ]
    assert executions and executions[0]["name"].startswith("prefill_nnapi_0")


def test_run_onnx_on_a_phone_profile(tmp_path):
    path = write_onnx_cnn(tmp_path)
    trace = tmp_path / "onnx.trace.json"
    completed = _cli(
        "run", path, "--shapes", "batch=2", "--profile", "dimensity-9000", "--trace", str(trace)
    )
    assert "results match" in completed.stdout and "dimensity-9000" in completed.stdout
    lanes = {
        e["args"]["name"]
        for e in json.loads(trace.read_text())["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    assert lanes - {"NNAPI runtime"}  # at least one device of the profile ran operations


def test_run_reports_a_mismatch_with_exit_code_1(tmp_path, capsys):
    args = ["run", write_tiny_cnn(tmp_path), "--trace", "-", "--rtol", "0", "--json"]
    assert main(args) == 1
    run = json.loads(capsys.readouterr().out)["run"]
    assert not run["passed"] and run["outputs"][0]["tolerance"] == 0


def test_run_symbolic_input_without_shapes_names_the_symbol(tmp_path, capsys):
    path = write_onnx_cnn(tmp_path)
    assert main(["run", path, "--trace", "-"]) == 2
    err = capsys.readouterr().err
    assert "--shapes batch=N" in err


def test_run_refuses_full_size_llm_weights(capsys):
    assert main(["run", "llm:llama-2-7b", "--trace", "-"]) == 2
    err = capsys.readouterr().err
    assert "GiB" in err and "llm:tiny-llama" in err
