# SPDX-License-Identifier: Apache-2.0
"""One exception hierarchy for tvm_nnapi, and codegen errors that name the subgraph and the
operator wherever they surface (tvm_nnapi.build, which crosses tvm-ffi, and lower_function)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

import tvm_nnapi
from tvm_nnapi import errors
from tvm_nnapi.compiler.codegen import lower_function
from tvm_nnapi.compiler.graph_json import UnsupportedShapeError
from tvm_nnapi.llm.weights import WeightError
from tvm_nnapi.testing.android import TargetUnavailableError
from tvm_nnapi.testing.difftest import ReportError
from tvm_nnapi.tools.calibrate import CalibrationError
from tvm_nnapi.tools.sources import ModelLoadError

PACKAGE = Path(tvm_nnapi.__file__).parent


def test_every_error_class_of_the_package_is_defined_in_errors_py():
    elsewhere = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Error", "Exception")):
                elsewhere.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert elsewhere == []


@pytest.mark.parametrize(
    ("error", "compatible"),
    [
        (errors.CodegenError, None),
        (UnsupportedShapeError, ValueError),
        (ModelLoadError, ValueError),
        (WeightError, ValueError),
        (ReportError, ValueError),
        (CalibrationError, ValueError),
        (TargetUnavailableError, RuntimeError),
    ],
)
def test_errors_derive_from_the_backend_error_and_keep_their_old_base(error, compatible):
    assert issubclass(error, tvm_nnapi.NnapiBackendError)
    assert error is getattr(errors, error.__name__)
    if compatible is not None:
        assert issubclass(error, compatible)


def test_a_codegen_error_re_created_from_its_message_keeps_its_fields():
    original = errors.CodegenError("main_nnapi_0", "relax.add", "a reason: with a colon")
    again = errors.CodegenError(str(original))
    assert str(again) == str(original)
    assert (again.subgraph, again.operator, again.reason) == (
        "main_nnapi_0",
        "relax.add",
        "a reason: with a colon",
    )


@I.ir_module
class _TruncatedDivisionShape:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")) -> R.Tensor:
        n = T.int64()
        with R.dataflow():
            y = R.add(x, x)
            z = R.reshape(y, (T.truncdiv(n * 4, 2), 2))
            w = R.nn.relu(z)
            R.output(w)
        return w


def _check_names_subgraph_and_operator(error: UnsupportedShapeError) -> None:
    assert isinstance(error, ValueError) and isinstance(error, tvm_nnapi.CodegenError)
    assert (error.subgraph, error.operator) == ("main_nnapi_0", "relax.reshape")
    assert str(error).startswith(
        "NNAPI codegen of subgraph 'main_nnapi_0', operator relax.reshape: shape expression "
    )
    assert "(Div) is not supported" in str(error)


def test_an_unsupported_shape_names_the_subgraph_and_the_operator_from_build():
    with pytest.raises(UnsupportedShapeError) as raised:
        tvm_nnapi.build(_TruncatedDivisionShape)
    _check_names_subgraph_and_operator(raised.value)


def test_an_unsupported_shape_names_the_subgraph_and_the_operator_from_lower_function():
    # The estimate and the operator graph lower subgraphs directly, without tvm-ffi between.
    mod = tvm_nnapi.partition(_TruncatedDivisionShape)
    with pytest.raises(UnsupportedShapeError) as raised:
        lower_function(mod["main_nnapi_0"])
    _check_names_subgraph_and_operator(raised.value)
