# SPDX-License-Identifier: Apache-2.0
"""bench/model_coverage.py on ONNX models written here with ``onnx.helper`` (no torch): the
per-model record (operators, FLOPs offloaded, subgraphs, boundary values, error against the
host build), refusals aggregated by the FLOPs they keep on the host, the goals, errors reported
per model, resuming a run, the report and the command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX models need the onnx package: pip install onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("the bench runs its models on mock_nnapi in process (mock target)")


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import model_coverage

        yield model_coverage
    finally:
        sys.path.remove(str(ROOT / "bench"))


def _weights(name: str, shape: tuple[int, ...], seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def _model(nodes, inputs, outputs, initializers) -> Any:
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _tensor(name: str, shape: list) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _convnet() -> Any:
    """conv + batch norm + relu + max pool + global average pool + flatten + gemm."""
    variance = numpy_helper.from_array(np.full(8, 0.5, np.float32), "var")
    return _model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", ["c", "g", "beta", "mean", "var"], ["n"]),
            helper.make_node("Relu", ["n"], ["r"]),
            helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("GlobalAveragePool", ["p"], ["a"]),
            helper.make_node("Flatten", ["a"], ["f"]),
            helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
        ],
        [_tensor("x", [1, 3, 8, 8])],
        [_tensor("y", [1, 10])],
        [
            _weights("w", (8, 3, 3, 3)),
            _weights("b", (8,), 1),
            _weights("g", (8,), 2),
            _weights("beta", (8,), 3),
            _weights("mean", (8,), 4),
            variance,
            _weights("fc", (10, 8), 5),
            _weights("fcb", (10,), 6),
        ],
    )


def _matmul_cos(name: str = "cos") -> Any:
    """matmul + relu on NNAPI, cos on the host (NNAPI has no cosine), relu."""
    return _model(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Relu", ["m"], ["r"]),
            helper.make_node("Cos", ["r"], ["e"]),
            helper.make_node("Relu", ["e"], ["y"]),
        ],
        [_tensor("x", [2, 8])],
        [_tensor("y", [2, 4])],
        [_weights("w", (8, 4))],
    )


def _attention(seq: int | str) -> Any:
    """One self-attention block: q, k, v projections, softmax(q k^T / 4) v, residual add."""
    d = 16
    return _model(
        [
            helper.make_node("MatMul", ["x", "wq"], ["q"]),
            helper.make_node("MatMul", ["x", "wk"], ["k"]),
            helper.make_node("MatMul", ["x", "wv"], ["v"]),
            helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
            helper.make_node("MatMul", ["q", "kt"], ["s"]),
            helper.make_node("Mul", ["s", "scale"], ["scaled"]),
            helper.make_node("Softmax", ["scaled"], ["p"], axis=-1),
            helper.make_node("MatMul", ["p", "v"], ["a"]),
            helper.make_node("Add", ["a", "x"], ["y"]),
        ],
        [_tensor("x", [seq, d])],
        [_tensor("y", [seq, d])],
        [
            _weights("wq", (d, d), 1),
            _weights("wk", (d, d), 2),
            _weights("wv", (d, d), 3),
            numpy_helper.from_array(np.array(0.25, np.float32), "scale"),
        ],
    )


def _operator_count(model: Any) -> int:
    from tvm_nnapi.compiler.ir_utils import operator_calls
    from tvm_nnapi.tools.sources import onnx_to_relax

    return len(operator_calls(onnx_to_relax(model)["main"]))


def test_a_convnet_is_measured_end_to_end(bench):
    model = _convnet()
    record = bench.measure_onnx(model, "test:convnet")
    assert record["status"] == "ok", record.get("error")
    assert record["imported"] and record["symbolic"] == {}
    assert record["relax_operators"] == _operator_count(model)
    assert record["host_operators"] == {} and record["refusals"] == []
    # The 3x3 convolution alone: 2 x (8 x 8 x 8 outputs) x (3 x 9 terms).
    assert record["total_flops"] >= 2 * 8 * 8 * 8 * 27
    assert record["offloaded_flops"] == record["total_flops"] and record["flop_share"] == 1.0
    assert record["subgraphs"] == 1
    assert record["boundary_values"] == 2  # the image in, the logits out
    assert {"CONV_2D", "MAX_POOL_2D", "FULLY_CONNECTED"} <= set(record["nnapi_operation_kinds"])
    assert record["nnapi_operations"] == sum(record["nnapi_operation_kinds"].values())
    assert record["nnapi_ran"] and record["passed"]
    assert record["nnapi_operations_executed"] == record["nnapi_operations"]
    assert 0 <= record["max_rel_error"] <= 1e-4
    assert record["outputs"] == [
        {"shape": [1, 10], "dtype": "float32", "max_rel_error": record["max_rel_error"]}
    ]
    assert bench.missed_goals(record) == []


def test_squeeze_and_unsqueeze_run_on_nnapi(bench):
    model = _model(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("Unsqueeze", ["r", "axes"], ["u"]),
            helper.make_node("Sigmoid", ["u"], ["s"]),
            helper.make_node("Squeeze", ["s", "axes"], ["y"]),
        ],
        [_tensor("x", [2, 8])],
        [_tensor("y", [2, 8])],
        [numpy_helper.from_array(np.array([0], np.int64), "axes")],
    )
    record = bench.measure_onnx(model, "test:squeeze")
    assert record["status"] == "ok", record.get("error")
    assert record["flop_share"] == 1.0 and record["subgraphs"] == 1
    assert record["nnapi_ran"] and record["max_rel_error"] <= 1e-4


def test_refusals_carry_the_flops_they_keep_on_the_host(bench):
    record = bench.measure_onnx(_matmul_cos(), "test:cos", family="transformer")
    assert record["status"] == "ok", record.get("error")
    (refusal,) = record["refusals"]
    assert refusal["operator"] == "relax.cos" and refusal["kind"] == "unsupported operator"
    assert refusal["count"] == 1 and refusal["flops"] == 8  # one per output element
    assert "(in main)" not in refusal["reason"]
    assert record["host_operators"] == {"relax.cos": 1}
    # matmul 2 x 8 outputs x 8 terms = 128, each relu 8: 144 of 152 FLOPs on NNAPI.
    assert (record["offloaded_flops"], record["total_flops"]) == (144, 152)
    assert record["subgraphs"] == 2
    assert record["boundary_values"] == 4  # each subgraph: one value in, one out
    assert record["nnapi_ran"] and record["max_rel_error"] <= 1e-4

    other = dict(record, key="test:cos2")
    rows = bench.aggregate_refusals([record, other])
    assert [(r["operator"], r["count"], r["flops"]) for r in rows] == [("relax.cos", 2, 16)]
    assert rows[0]["models"] == ["test:cos", "test:cos2"]
    (by_op,) = bench.aggregate_by_operator([record, other])
    assert by_op["models"] == ["test:cos", "test:cos2"] and by_op["flops"] == 16


def test_a_symbolic_sequence_length_is_kept_and_bound_for_the_run(bench):
    static = bench.measure_onnx(_attention(32), "test:attention", family="transformer")
    assert static["status"] == "ok", static.get("error")
    assert static["flop_share"] == 1.0 and static["max_rel_error"] <= 1e-4
    record = bench.measure_onnx(_attention("seq"), "test:attention_seq", family="transformer")
    assert record["symbolic"] == {"seq": bench.HF_SEQ_LEN}
    if record["status"] == "ok":
        # FLOPs counted with seq bound: the same module as the static one.
        assert record["total_flops"] == static["total_flops"]
        assert record["flop_share"] == 1.0 and record["max_rel_error"] <= 1e-4
        assert bench.missed_goals(record) == []
    else:
        # The backend fails with the symbolic length: named, and measured bound for information.
        assert record["status"] in ("partition error", "codegen error"), record
        assert record["imported"] and record["error"]
        assert record["static"]["status"] == "ok"
        assert record["static"]["total_flops"] == static["total_flops"]
        assert bench.missed_goals(record) == [record["status"]]


def test_a_model_the_frontend_cannot_import_is_reported_as_such(bench):
    model = _model(
        [helper.make_node("NoSuchOperator", ["x"], ["y"], name="odd")],
        [_tensor("x", [2, 2])],
        [_tensor("y", [2, 2])],
        [],
    )
    record = bench.measure_onnx(model, "test:unimportable")
    assert record["status"] == "import error" and not record["imported"]
    assert "odd (NoSuchOperator)" in record["error"]
    assert "relax_operators" not in record and bench.aggregate_refusals([record]) == []
    assert bench.missed_goals(record) == ["does not import (import error)"]


def test_a_backend_crash_is_that_models_partition_error(bench, monkeypatch):
    import tvm_nnapi

    def crash(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(tvm_nnapi, "partition_with_report", crash)
    record = bench.measure_onnx(_attention("seq"), "test:crash", family="transformer")
    assert record["status"] == "partition error" and record["imported"]
    assert record["error"] == "RuntimeError: boom"
    assert record["static"] == {"status": "partition error", "error": "RuntimeError: boom"}
    assert bench.missed_goals(record) == ["partition error"]


def test_a_host_build_tvm_cannot_do_is_told_apart_from_a_run_error(bench, monkeypatch):
    import tvm.relax

    import tvm_nnapi.tools.run

    def fail(*args, **kwargs):
        raise RuntimeError("no build")

    monkeypatch.setattr(tvm_nnapi.tools.run, "run_model", fail)
    record = bench.measure_onnx(_matmul_cos(), "test:run")
    assert (record["status"], record["error"]) == ("run error", "RuntimeError: no build")
    monkeypatch.setattr(tvm.relax, "build", fail)
    record = bench.measure_onnx(_matmul_cos(), "test:host")
    assert record["status"] == "host build error" and "flop_share" in record
    assert bench.missed_goals(record)[0].startswith("host build error (TVM cannot build")


def test_goals(bench):
    base = {"key": "k", "imported": True, "status": "ok", "passed": True}
    cv = dict(base, family="cv-classification", flop_share=0.95, max_rel_error=2e-5)
    assert bench.missed_goals(cv) == []
    assert bench.missed_goals(dict(cv, flop_share=0.5, max_rel_error=3e-3)) == [
        "FLOPs on NNAPI 50.0% < 90%",
        "relative error 3.0e-03 > 1e-4",
    ]
    assert bench.missed_goals(dict(cv, max_rel_error=None)) == [
        "relative error a shape mismatch > 1e-4"
    ]
    transformer = dict(base, family="transformer", flop_share=0.85, max_rel_error=3e-3)
    assert bench.missed_goals(transformer) == []  # no error goal for the transformers
    assert bench.missed_goals(dict(transformer, flop_share=0.79)) == ["FLOPs on NNAPI 79.0% < 80%"]
    assert bench.missed_goals(dict(base, family="cv-segmentation", flop_share=0.1)) == []


def _args(tmp_path: Path, **overrides) -> argparse.Namespace:
    values = {"redo": False, "timeout": 5.0, "no_run": False, "json": tmp_path / "r.json"}
    values.update(overrides)
    return argparse.Namespace(**values)


def test_a_run_resumes_where_it_stopped(bench, tmp_path):
    cases = bench.select_cases("resnet18,hf:bert", None)
    assert [c.key for c in cases] == ["torch:resnet18", "onnx:resnet18", "hf:bert"]
    measured = []

    def fake(case, timeout, run):
        measured.append(case.key)
        return dict(bench._case_header(case), status="ok", imported=True, seconds=1.0)

    document = {"schema": bench.SCHEMA, "models": {}, "order": []}
    document["models"]["onnx:resnet18"] = dict(bench._case_header(cases[1]), status="ok")
    bench._run_cases(_args(tmp_path), cases, document, fake)
    assert measured == ["torch:resnet18", "hf:bert"]
    saved = bench.load_document(tmp_path / "r.json")
    assert saved["order"] == ["torch:resnet18", "onnx:resnet18", "hf:bert"]
    assert set(saved["models"]) == set(saved["order"])
    measured.clear()
    bench._run_cases(_args(tmp_path), cases, saved, fake)
    assert measured == []  # everything is there
    bench._run_cases(_args(tmp_path, redo=True), cases[:1], saved, fake)
    assert measured == ["torch:resnet18"]


def test_the_report_has_the_table_refusals_goals_and_command(bench):
    erf = bench.measure_onnx(_matmul_cos(), "test:cos", family="cv-classification", run=False)
    broken = {
        "key": "test:broken",
        "frontend": "onnx",
        "model": "broken",
        "family": "cv-classification",
        "imported": False,
        "status": "import error",
        "error": "ModelLoadError: no converter | for X",
    }
    document = {
        "schema": bench.SCHEMA,
        "models": {"test:cos": erf, "test:broken": broken},
        "order": ["test:cos", "test:broken"],
        "wall_seconds": 600.0,
    }
    text = bench.render_markdown(document, "python bench/model_coverage.py --fresh")
    assert "python bench/model_coverage.py --fresh" in text and "about 10 min" in text
    assert "2 models: 1 import, 1 partition and run without an error." in text
    row = next(line for line in text.splitlines() if line.startswith("| test:cos "))
    assert "| 94.7% |" in row and "| 2 |" in row  # FLOPs share, subgraphs
    assert "| `relax.cos` | unsupported operator |" in text
    assert "- `test:broken` (import error): ModelLoadError: no converter \\| for X" in text
    assert "- `test:broken`: does not import (import error)" in text
    assert "- `test:cos`" not in text.split("## Goals")[1]  # it meets its goals


def test_command_line(bench, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--help"])
    assert exit_info.value.code == 0
    assert "--frontends" in capsys.readouterr().out
    assert bench.main(["--models", "resnet9000"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "resnet9000" in error and "--list" in error
    assert bench.main(["--frontends", "tflite"]) == 2
    assert "tflite" in capsys.readouterr().err
    empty = ["--json", str(tmp_path / "none.json"), "--markdown", str(tmp_path / "m.md")]
    assert bench.main(["--report-only", *empty]) == 2
    assert "run the bench first" in capsys.readouterr().err
    assert bench.main(["--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 2 * len(bench.TORCHVISION_RESOLUTION) + len(bench.HF_MODELS)

    record = bench.measure_onnx(_matmul_cos(), "test:cos", run=False)
    assert "max_rel_error" not in record and record["flop_share"] == pytest.approx(144 / 152)
    document = {"schema": bench.SCHEMA, "models": {"test:cos": record}, "order": ["test:cos"]}
    (tmp_path / "r.json").write_text(json.dumps(document))
    paths = ["--json", str(tmp_path / "r.json"), "--markdown", str(tmp_path / "m.md")]
    assert bench.main(["--report-only", "--frontends", "onnx", *paths]) == 0
    assert (
        "python bench/model_coverage.py --fresh --models test:cos\n"
        in (tmp_path / "m.md").read_text()
    )
    assert bench._regenerate_command({"models": {c.key: {} for c in bench.all_cases()}}).startswith(
        "python bench/model_coverage.py --fresh   # or: tox -e models"
    )
