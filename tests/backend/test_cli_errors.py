# SPDX-License-Identifier: Apache-2.0
"""User errors of the tvm-nnapi commands, run as a user runs them (a fresh process): one line on
stderr naming what is at fault and what to do, exit code 2, no traceback (unless --debug)."""

from __future__ import annotations

import subprocess

import pytest

from .cli_runner import run_cli


def _user_error(completed: subprocess.CompletedProcess, *expected: str) -> str:
    """Exit code 2 and one line on stderr containing ``expected``; returns the line."""
    assert completed.returncode == 2, completed.stderr + completed.stdout
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    (line,) = lines
    assert line.startswith("error: ")
    for text in expected:
        assert text in line, line
    return line


def test_misspelled_llm_model_gets_a_suggestion():
    _user_error(
        run_cli("llm", "generate", "--model", "tiny-lama", "--tokens", "1"),
        "--model tiny-lama",
        "did you mean tiny-llama?",
    )
    _user_error(
        run_cli("explain", "llm:tiny-lama"), "llm:tiny-lama", "did you mean llm:tiny-llama?"
    )
    _user_error(run_cli("explain", "mobilenet_v3"), "did you mean mobilenet_v2?")


def test_missing_llm_files_are_named(tmp_path):
    config = tmp_path / "nope.json"
    _user_error(
        run_cli("llm", "generate", "--config", str(config), "--tokens", "1"),
        str(config),
        "no such config file",
    )
    tokenizer = tmp_path / "missing.json"
    _user_error(
        run_cli("llm", "generate", "--tokenizer", str(tokenizer), "--prompt", "hi"),
        str(tokenizer),
        "no such tokenizer file",
    )
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama"}')
    _user_error(
        run_cli("llm", "generate", "--config", str(bad), "--tokens", "1"),
        str(bad),
        "hidden_size",
    )


def test_report_into_a_missing_directory_fails_before_the_work(tmp_path):
    target = tmp_path / "no" / "dir" / "out.html"
    completed = run_cli("explain", "residual", "--report", str(target))
    _user_error(completed, f"--report {target}", "does not exist")
    assert completed.stdout == ""  # nothing was explained first
    _user_error(run_cli("run", "residual", "--trace", str(target)), "--trace", "does not exist")


def test_bad_nnapi_library_is_one_line(tmp_path):
    missing = tmp_path / "libnn.so"
    _user_error(
        run_cli("devices", env={"TVM_NNAPI_LIBRARY": str(missing)}),
        f"TVM_NNAPI_LIBRARY={missing}",
    )


@pytest.mark.parametrize("command", ["devices", "explain", "estimate", "run"])
def test_bad_profile_name_without_the_mock_source_location(command):
    args = [command] + ([] if command == "devices" else ["residual"])
    line = _user_error(
        run_cli(*args, "--profile", "no-such-phone"),
        "--profile no-such-phone",
        'no device profile named "no-such-phone"',
        "reference",
    )
    assert ".cc:" not in line and "check failed" not in line


def test_unbound_symbols_have_one_message(tmp_path):
    from .test_cli import write_onnx_cnn

    path = write_onnx_cnn(tmp_path)
    lines = {
        command: _user_error(run_cli(command, path, "--trace", "-"), "--shapes batch=N")
        if command == "run"
        else _user_error(run_cli(command, path), "--shapes batch=N")
        for command in ("run", "estimate")
    }
    assert lines["run"] == lines["estimate"]
    assert "symbolic dimension batch of main has no value" in lines["run"]


def test_batch_must_be_positive():
    completed = run_cli("run", "residual", "--batch", "0")
    assert (
        completed.returncode == 2 and "--batch: '0' is not a positive integer" in completed.stderr
    )
    assert run_cli("demo", "--batch", "-1").returncode == 2


def test_missing_model_file_says_no_such_file():
    _user_error(run_cli("explain", "missing.onnx"), "missing.onnx: no such file")


def test_version():
    import tvm_nnapi

    completed = run_cli("--version")
    assert completed.returncode == 0
    assert completed.stdout.strip() == f"tvm-nnapi {tvm_nnapi.__version__}"


def test_debug_shows_the_traceback():
    completed = run_cli("llm", "generate", "--model", "tiny-lama", "--tokens", "1", "--debug")
    assert completed.returncode == 1 and "Traceback" in completed.stderr
    assert "UsageError" in completed.stderr
    completed = run_cli("--debug", "explain", "missing.onnx")
    assert "Traceback" in completed.stderr and "ModelLoadError" in completed.stderr


def test_precompile_names_a_symbol_the_program_does_not_have():
    import numpy as np
    from tvm import relax

    import tvm_nnapi
    from tvm_nnapi import runtime

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([2, 3], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.add(x, relax.const(np.ones((2, 3), "float32"))))
        bb.emit_func_output(out)
    executable = tvm_nnapi.build(tvm_nnapi.partition(bb.get()))
    with pytest.raises(ValueError, match=r"seq_len.*symbols: none"):
        runtime.precompile(executable, seq_len=[1])
    assert runtime.precompile(executable) == 0


def _broken_onnx(tmp_path, what: str) -> str:
    onnx = pytest.importorskip("onnx", reason="ONNX models need the onnx package: pip install onnx")
    from onnx import TensorProto, helper

    relu = helper.make_node("Relu", ["x"], ["r"], name="relu")
    neg = helper.make_node("Neg", ["r"], ["y"], name="neg")
    if what == "attribute":
        relu = helper.make_node("Relu", ["x"], ["r"], name="relu", pads=[1, 1])
    nodes = [neg, relu] if what == "order" else [relu, neg]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    path = tmp_path / f"{what}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        ("attribute", "Unrecognized attribute: pads for operator Relu"),
        ("order", "topologically sorted"),
    ],
)
def test_an_onnx_model_its_checker_refuses_is_one_line(tmp_path, what, expected):
    path = _broken_onnx(tmp_path, what)
    _user_error(run_cli("run", path), "not a valid ONNX model (onnx.checker)", expected)


def test_a_file_that_is_no_onnx_model_is_refused(tmp_path):
    pytest.importorskip("onnx", reason="ONNX models need the onnx package: pip install onnx")
    path = tmp_path / "tiny.onnx"
    path.write_bytes(b"\n\x00")
    _user_error(run_cli("run", str(path)), "not an ONNX model with outputs")


def _onnx_with_input_shape(tmp_path, dims) -> str:
    onnx = pytest.importorskip("onnx", reason="ONNX models need the onnx package: pip install onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
    )
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


@pytest.mark.parametrize("size", [0, -3])
def test_an_onnx_input_of_a_dimension_that_cannot_be_is_named(tmp_path, size):
    path = _onnx_with_input_shape(tmp_path, [2, size])
    _user_error(run_cli("run", path), f"input x has dimension 1 of size {size}")


def test_inputs_larger_than_the_machine_are_refused_at_once(tmp_path):
    """2^40 floats: refused before any work, with the sizes, not after a long MemoryError."""
    path = _onnx_with_input_shape(tmp_path, [1024, 1024, 1024, 1024])
    line = _user_error(run_cli("run", path), "its inputs need 4.00 TiB", "of memory")
    assert "MemoryError" not in line
    line = _user_error(run_cli("run", "residual", "--shapes", "batch=100000000000"), "TiB")
    assert "residual" in line


def test_library_warnings_stay_off_the_terminal_unless_debug(tmp_path):
    script = tmp_path / "warns.py"
    script.write_text(
        "import warnings\n"
        "from tvm.script import ir as I, relax as R\n"
        "warnings.warn('a frontend warning', UserWarning)\n"
        "@I.ir_module\n"
        "class mod:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((2, 2), 'float32')):\n"
        "        return R.add(x, x)\n"
    )
    quiet = run_cli("explain", str(script), "--quiet")
    assert quiet.returncode == 0 and "a frontend warning" not in quiet.stderr
    loud = run_cli("--debug", "explain", str(script), "--quiet")
    assert loud.returncode == 0 and "a frontend warning" in loud.stderr
