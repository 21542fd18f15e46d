# SPDX-License-Identifier: Apache-2.0
"""The PT2E converters' refusals (tools/pt2e.py) without torch: the converters read only a
node's ``name`` and ``args`` and the importer's ``env``, so plain objects stand in for torch.fx
nodes. A quantization NNAPI cannot take, or per-channel parameters the program computes instead
of holding, raise ValueError naming the node (the CLI prints it as one line, exit 2)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from tvm import relax

from tvm_nnapi.tools import pt2e


def _importer() -> SimpleNamespace:
    return SimpleNamespace(env={}, block_builder=relax.BlockBuilder())


def _node(name: str, *args) -> SimpleNamespace:
    return SimpleNamespace(name=name, args=args)


def test_an_unsupported_quantized_dtype_is_refused_naming_it():
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    node = _node("quantize_per_tensor_3", x, 0.1, 0, -(2**31), 2**31 - 1, "torch.int32")
    with pytest.raises(ValueError, match=r"PT2E quantization to torch\.int32 is not supported"):
        pt2e._quantize_per_tensor(node, _importer())


def _per_channel_node(name: str, weight: relax.Expr) -> SimpleNamespace:
    """A dequantize_per_channel node on axis 0 of an int8 weight, its scales and zero points
    named as the program's constants."""
    return _node(
        name,
        weight,
        SimpleNamespace(name="scales"),
        SimpleNamespace(name="zero_points"),
        0,
        -128,
        127,
        "torch.int8",
    )


@pytest.mark.parametrize("missing, what", [("scales", "scales"), ("zero_points", "zero points")])
def test_per_channel_parameters_that_are_not_constants_are_refused(missing, what):
    values = {"scales": np.full(4, 0.02, "float32"), "zero_points": np.zeros(4, "int64")}
    del values[missing]
    weight = relax.const(np.ones((4, 3), "int8"))
    node = _per_channel_node("dequantize_per_channel_7", weight)
    convert = pt2e._dequantize_per_channel(values)
    with pytest.raises(ValueError, match=f"dequantize_per_channel_7: the per-channel {what}"):
        convert(node, _importer())


def test_per_channel_constants_become_a_dequantize_along_the_axis():
    values = {"scales": np.array([0.5, 0.25], "float32"), "zero_points": np.zeros(2, "int64")}
    weight = relax.const(np.array([[2, 4], [8, -8]], "int8"))
    node = _per_channel_node("dq", weight)
    importer = _importer()
    with importer.block_builder.function("main", []):
        out = pt2e._dequantize_per_channel(values)(node, importer)
        importer.block_builder.emit_func_output(out)
    call = importer.block_builder.get()["main"].body.blocks[0].bindings[-1].value
    assert str(call.op.name) == "relax.dequantize" and int(call.attrs.axis) == 0
    np.testing.assert_array_equal(call.args[1].value.numpy(), values["scales"])
    assert str(call.args[2].value.numpy().dtype) == "int8"
