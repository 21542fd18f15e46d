# SPDX-License-Identifier: Apache-2.0
"""`tvm-nnapi explain`: what is offloaded, as which NNAPI operations, and why the rest is not."""

from __future__ import annotations

import json
import textwrap

import pytest

from tvm_nnapi.cli import main
from tvm_nnapi.tools.explain import ModelLoadError, explain, load_model


def test_explain_names_the_unsupported_operator_and_the_reason(capsys):
    assert main(["explain", "residual"]) == 0
    out = capsys.readouterr().out
    assert "relax.cumsum" in out and "unsupported operator" in out
    assert "main_nnapi_0" in out and "ADD x1" in out


def test_explain_json_for_a_cnn_counts_operations_and_flops(capsys):
    assert main(["explain", "mobilenet_v2_small", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["explain"]
    (subgraph,) = data["subgraphs"]
    assert subgraph["nnapi_operations"]["CONV_2D"] == 35
    assert subgraph["nnapi_operations"]["DEPTHWISE_CONV_2D"] == 17
    assert data["flop_share"] == 1.0 and data["refusals"] == []


def test_feature_level_changes_the_partition():
    mod = load_model("mobilenet_v2_small")
    options = __import__("tvm_nnapi").PartitionOptions
    # NCHW convolutions need feature level 3 (the layout operand).
    old = explain(mod, options(feature_level=28, nhwc=False))
    kinds = {refusal["kind"] for refusal in old.refusals}
    assert "feature level too low" in kinds
    assert old.flop_share < 0.5
    # Made NHWC by the graph preparation (compiler/layout.py), they need feature level 1 and
    # the input's TRANSPOSE level 2.
    nhwc = explain(mod, options(feature_level=28))
    assert nhwc.refusals == [] and nhwc.flop_share == 1.0


def test_python_and_tvmscript_files(tmp_path, capsys):
    script = tmp_path / "model.py"
    script.write_text(
        textwrap.dedent(
            """
            import tvm
            from tvm.script import relax as R

            @tvm.script.ir_module
            class mod:
                @R.function
                def main(x: R.Tensor((2, 8), "float32")):
                    with R.dataflow():
                        y = R.nn.softmax(R.exp(x))
                        z = R.cumsum(y, axis=1)
                        R.output(z)
                    return z
            """
        )
    )
    assert main(["explain", str(script)]) == 0
    assert "SOFTMAX x1" in capsys.readouterr().out
    tvmscript = tmp_path / "model.tvmscript"
    tvmscript.write_text(load_model(str(script)).script())
    result = explain(load_model(str(tvmscript)))
    assert result.subgraphs and result.refusals[0]["operator"] == "relax.cumsum"


def test_onnx_file(tmp_path):
    onnx = pytest.importorskip("onnx", reason="ONNX models need the onnx package: pip install onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones((8, 4), np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["y"]),
            helper.make_node("Relu", ["y"], ["r"]),
            helper.make_node("Cos", ["r"], ["out"]),
        ],
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 4])],
        initializer=[weight],
    )
    path = tmp_path / "small.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    result = explain(load_model(str(path)))
    operations = {op for sub in result.subgraphs for op in sub.nnapi_operations}
    assert operations == {"FULLY_CONNECTED"}  # the relu is FULLY_CONNECTED's fused activation
    assert any(refusal["operator"] == "relax.cos" for refusal in result.refusals)


def test_a_missing_model_file_is_named(capsys):
    assert main(["explain", "no/such/model.onnx"]) == 2
    assert "no/such/model.onnx" in capsys.readouterr().err
    with pytest.raises(ModelLoadError, match="built-in model"):
        load_model("not-a-model")


def test_explain_names_a_dtype_refusal_with_the_operator(tmp_path, capsys):
    script = tmp_path / "float64.py"
    script.write_text(
        textwrap.dedent(
            """
            import tvm
            from tvm.script import relax as R

            @tvm.script.ir_module
            class mod:
                @R.function
                def main(x: R.Tensor((4, 8), "float64"), y: R.Tensor((4, 8), "float32")):
                    with R.dataflow():
                        a = R.add(x, x)
                        b = R.nn.relu(y)
                        R.output(a, b)
                    return (a, b)
            """
        )
    )
    assert main(["explain", str(script), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["explain"]
    (refusal,) = data["refusals"]
    assert refusal["operator"] == "relax.add" and refusal["kind"] == "unsupported dtype"
    assert "float64" in refusal["reason"]
    assert [sub["nnapi_operations"] for sub in data["subgraphs"]] == [{"RELU": 1}]
    assert main(["explain", str(script)]) == 0
    out = capsys.readouterr().out
    assert "relax.add" in out and "unsupported dtype" in out and "float64" in out
