# SPDX-License-Identifier: Apache-2.0
"""Model files recognised by their content: the formats tvm-nnapi does not read are refused in
one line (exit 2) that names what the file is and the accepted formats, before any frontend
(and its tracebacks) sees them."""

from __future__ import annotations

import pickle
import zipfile

import pytest

from tvm_nnapi.tools.sources import ACCEPTED_FORMATS, ModelLoadError, model_format

from .cli_runner import run_cli


def _zip(path, names):
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.writestr(name, b"x")
    return path


CASES = {
    "model.tflite": (
        lambda p: p.write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(64)),
        "TensorFlow Lite",
    ),
    "junk.bin": (lambda p: p.write_bytes(bytes(range(200, 256)) * 8), "not a model format"),
    "weights.pt": (lambda p: _zip(p, ["weights/data.pkl", "weights/data/0"]), "torch.save pickle"),
    "scripted.pt": (
        lambda p: _zip(p, ["m/code/__torch__.py", "m/constants.pkl", "m/data.pkl"]),
        "TorchScript archive",
    ),
    "legacy.pt": (lambda p: p.write_bytes(pickle.dumps({"w": [1, 2]}, protocol=2)), "pickle"),
    "model.h5": (lambda p: p.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(32)), "HDF5"),
    "notes.txt": (lambda p: p.write_text("hello, this is not a model\n"), "neither TVMScript"),
    "fake.onnx": (lambda p: p.write_text("not protobuf\n"), "not an ONNX model"),
    "empty.zip": (lambda p: _zip(p, ["readme.txt"]), "ZIP archive that holds no model"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_file_of_another_format_is_refused_naming_it(tmp_path, name):
    make, what = CASES[name]
    path = tmp_path / name
    make(path)
    with pytest.raises(ModelLoadError, match=what) as raised:
        model_format(path)
    assert str(path) in str(raised.value) and ACCEPTED_FORMATS in str(raised.value)


def test_formats_read_are_found_by_content(tmp_path):
    exported = _zip(tmp_path / "program.bin", ["program/archive_format", "program/models/m.json"])
    assert model_format(exported) == "torch.export"
    onnx_without_suffix = tmp_path / "model.data"
    onnx_without_suffix.write_bytes(b"\x08\x08\x12\x07pytorch" + bytes(8))
    assert model_format(onnx_without_suffix) == "onnx"
    script = tmp_path / "model.tvmscript"
    script.write_text("@I.ir_module\nclass Module:\n    pass\n")
    assert model_format(script) == "tvmscript"
    python = tmp_path / "model.py"
    python.write_text("mod = None\n")
    assert model_format(python) == "python"


@pytest.mark.parametrize("name", ["model.tflite", "weights.pt", "scripted.pt"])
def test_the_command_refuses_it_in_one_line(tmp_path, name):
    make, what = CASES[name]
    path = tmp_path / name
    make(path)
    completed = run_cli("explain", str(path))
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: ")
    assert what in lines[0] and "Traceback" not in completed.stderr
