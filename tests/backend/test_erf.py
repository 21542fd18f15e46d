# SPDX-License-Identifier: Apache-2.0
"""erf on NNAPI (the series at 0 below |x| = 1, a fit of erfc above, tvm_nnapi/compiler/
lowerings/elementwise.py) to float32 accuracy, and the GELU torch's ONNX exporter writes with it
(x * 0.5 * (1 + erf(x / sqrt(2)))) offloaded with the rest of a block as one subgraph (the chain
is lowered as GELU: tests/backend/test_gelu_chains.py)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special
import tvm
from tvm import relax

import tvm_nnapi

from .quantized_models import run_onnxruntime


def _erf_module(n: int) -> tvm.IRModule:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([n], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.erf(x))
        bb.emit_func_output(out)
    return bb.get()


def test_erf_is_within_three_ulp_of_the_float64_erf():
    dense = np.linspace(-8, 8, 160001, dtype="float32")
    tiny = np.float32(10.0) ** -np.linspace(1, 38, 400, dtype="float32")
    near_bound = np.nextafter(np.float32(1.0), np.float32([0.0, 2.0])).astype("float32")
    xs = np.concatenate([dense, tiny, -tiny, near_bound, [np.float32(0.0)]]).astype("float32")
    mod = _erf_module(xs.size)
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == [] and len(result.subgraphs) == 1
    vm = relax.VirtualMachine(tvm_nnapi.build(mod), tvm.cpu())
    got = vm["main"](tvm.runtime.tensor(xs)).numpy().astype(np.float64)
    want = scipy.special.erf(xs.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    errors = np.abs(got - want) / ulp
    assert errors.max() <= 3.0, (errors.max(), xs[errors.argmax()])
    assert got[-1] == 0.0 and np.all(np.abs(got) <= 1.0)


def _onnx_gelu_block():
    """A transformer MLP as torch.onnx.export writes it: MatMul, the erf GELU as five nodes,
    MatMul."""
    onnx = pytest.importorskip("onnx", reason="the ONNX block needs the onnx package")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal([16, 32]).astype("float32") * 0.5, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal([32, 16]).astype("float32") * 0.5, "w2")
    const = {
        name: numpy_helper.from_array(np.array(value, "float32"), name)
        for name, value in (("sqrt2", 2**0.5), ("one", 1.0), ("half", 0.5))
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Div", ["h", "sqrt2"], ["scaled"], name="gelu_div"),
        helper.make_node("Erf", ["scaled"], ["erf"], name="gelu_erf"),
        helper.make_node("Add", ["erf", "one"], ["shifted"], name="gelu_add"),
        helper.make_node("Mul", ["h", "shifted"], ["product"], name="gelu_mul"),
        helper.make_node("Mul", ["product", "half"], ["gelu"], name="gelu_half"),
        helper.make_node("MatMul", ["gelu", "w2"], ["y"], name="fc2"),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
        [w1, w2, *const.values()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def test_an_onnx_exported_gelu_block_is_one_subgraph():
    from tvm.relax.frontend.onnx import from_onnx

    model = _onnx_gelu_block()
    mod = from_onnx(model, keep_params_in_input=False)
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == []
    assert len(result.subgraphs) == 1
    x = np.random.default_rng(1).standard_normal([4, 16]).astype("float32")
    vm = relax.VirtualMachine(tvm_nnapi.build(mod), tvm.cpu())
    got = vm["main"](tvm.runtime.tensor(x)).numpy()
    (want,) = run_onnxruntime(model, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
