# SPDX-License-Identifier: Apache-2.0
"""Quantized (QDQ) models on NNAPI quant8 operations (lowerings/quantized.py).

Each operator is written as a float ONNX model, quantized by onnxruntime's static quantizer
(per-channel int8 weights, uint8 activations), imported by TVM's ONNX frontend and run three
ways: NNAPI (the mock), TVM's host llvm build of the same QDQ module, and onnxruntime's CPU
execution of the same ONNX model. Every element must agree within one quantization step of the
output.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_nnapi
from tvm_nnapi.compiler import codegen, lowerings
from tvm_nnapi.compiler.build import offload_summary
from tvm_nnapi.compiler.patterns import PartitionOptions, RefusalKind

from .helpers import run_host, run_nnapi
from .quantized_models import (
    float_model,
    helper,
    initializer,
    output_scales,
    qdq_model,
    quantize_static,
    run_onnxruntime,
    small_cnn,
)

node = helper.make_node
RNG = np.random.default_rng(7)


def _w(*shape: int, scale: float = 0.3) -> np.ndarray:
    return RNG.standard_normal(shape) * scale


# name -> (nodes, initializers, inputs, outputs, the NNAPI operation that must run on quant8)
CASES = {
    "conv2d": (
        [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
        [initializer("w", _w(6, 4, 3, 3)), initializer("b", _w(6, scale=0.1))],
        {"x": [1, 4, 8, 8]},
        {"y": [1, 6, 8, 8]},
        "CONV_2D",
    ),
    "conv2d_strided_no_bias": (
        [node("Conv", ["x", "w"], ["y"], strides=[2, 2])],
        [initializer("w", _w(5, 3, 3, 3))],
        {"x": [1, 3, 9, 9]},
        {"y": [1, 5, 4, 4]},
        "CONV_2D",
    ),
    "depthwise_conv2d": (
        [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], group=6)],
        [initializer("w", _w(6, 1, 3, 3)), initializer("b", _w(6, scale=0.1))],
        {"x": [1, 6, 7, 7]},
        {"y": [1, 6, 7, 7]},
        "DEPTHWISE_CONV_2D",
    ),
    "grouped_conv2d": (
        [node("Conv", ["x", "w", "b"], ["y"], group=2)],
        [initializer("w", _w(6, 2, 1, 1)), initializer("b", _w(6, scale=0.1))],
        {"x": [1, 4, 5, 5]},
        {"y": [1, 6, 5, 5]},
        "GROUPED_CONV_2D",
    ),
    "conv2d_relu": (
        [node("Conv", ["x", "w", "b"], ["c"]), node("Relu", ["c"], ["y"])],
        [initializer("w", _w(4, 3, 1, 1)), initializer("b", _w(4, scale=0.1))],
        {"x": [1, 3, 6, 6]},
        {"y": [1, 4, 6, 6]},
        "CONV_2D",
    ),
    "gemm": (
        [node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
        [initializer("w", _w(7, 12)), initializer("b", _w(7, scale=0.1))],
        {"x": [2, 12]},
        {"y": [2, 7]},
        "CONV_2D",  # per-channel weights: a 1x1 CONV_2D (FULLY_CONNECTED has none)
    ),
    "matmul": (
        [node("MatMul", ["x", "w"], ["y"])],
        [initializer("w", _w(12, 5))],
        {"x": [3, 12]},
        {"y": [3, 5]},
        "CONV_2D",
    ),
    "add": (
        [node("Add", ["a", "b"], ["y"])],
        [],
        {"a": [1, 4, 5, 5], "b": [1, 4, 5, 5]},
        {"y": [1, 4, 5, 5]},
        "ADD",
    ),
    "mul": (
        [node("Mul", ["a", "b"], ["y"])],
        [],
        {"a": [2, 8], "b": [2, 8]},
        {"y": [2, 8]},
        "MUL",
    ),
    "concat": (
        [node("Concat", ["a", "b"], ["y"], axis=1)],
        [],
        {"a": [1, 3, 4, 4], "b": [1, 2, 4, 4]},
        {"y": [1, 5, 4, 4]},
        "CONCATENATION",
    ),
    "max_pool": (
        [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
        [],
        {"x": [1, 3, 8, 8]},
        {"y": [1, 3, 4, 4]},
        "MAX_POOL_2D",
    ),
    "avg_pool": (
        [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[1, 1])],
        [],
        {"x": [1, 3, 6, 6]},
        {"y": [1, 3, 4, 4]},
        "AVERAGE_POOL_2D",
    ),
    "global_avg_pool": (
        [node("GlobalAveragePool", ["x"], ["y"])],
        [],
        {"x": [1, 5, 6, 6]},
        {"y": [1, 5, 1, 1]},
        # onnxruntime gives the average a finer scale than the input's, which NNAPI's MEAN
        # keeps: a whole-image DEPTHWISE_CONV_2D averages with the model's output scale.
        "DEPTHWISE_CONV_2D",
    ),
    "reshape": (
        [node("Flatten", ["x"], ["y"])],
        [],
        {"x": [2, 3, 2, 2]},
        {"y": [2, 12]},
        "RESHAPE",
    ),
    "transpose": (
        [node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])],
        [],
        {"x": [1, 3, 4, 5]},
        {"y": [1, 4, 5, 3]},
        "TRANSPOSE",
    ),
    "squeeze": (
        [node("Squeeze", ["x", "axes"], ["y"])],
        [],
        {"x": [1, 3, 1, 5]},
        {"y": [1, 3, 5]},
        "RESHAPE",
    ),
    # onnxruntime quantizes sigmoid and softmax to 1/255, not NNAPI's fixed 1/256: computed in
    # float inside the subgraph (a requantization would round twice).
    "sigmoid": ([node("Sigmoid", ["x"], ["y"])], [], {"x": [2, 16]}, {"y": [2, 16]}, "DEQUANTIZE"),
    "softmax": (
        [node("Softmax", ["x"], ["y"], axis=-1)],
        [],
        {"x": [2, 10]},
        {"y": [2, 10]},
        "DEQUANTIZE",
    ),
    "resize": (
        [node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
        [initializer("scales", np.array([1, 1, 2, 2]))],
        {"x": [1, 3, 4, 4]},
        {"y": [1, 3, 8, 8]},
        "RESIZE_BILINEAR",
    ),
}


# Operators onnxruntime's quantizer leaves in float, as QDQ graphs written directly:
# name -> (node, inputs, outputs, input (scale, zero point), output (scale, zero point), operation)
DIRECT_CASES = {
    "relu": (
        node("Relu", ["x"], ["y"]),
        {"x": [2, 16]},
        {"y": [2, 16]},
        (0.02, 128),
        (0.02, 128),
        "RELU",
    ),
    "relu_requantized": (
        node("Relu", ["x"], ["y"]),
        {"x": [2, 16]},
        {"y": [2, 16]},
        (0.02, 128),
        (0.01, 0),
        "RELU",
    ),
    "sigmoid_fixed": (
        node("Sigmoid", ["x"], ["y"]),
        {"x": [2, 16]},
        {"y": [2, 16]},
        (0.03, 128),
        (1.0 / 256, 0),
        "LOGISTIC",
    ),
    "softmax_fixed": (
        node("Softmax", ["x"], ["y"], axis=-1),
        {"x": [2, 10]},
        {"y": [2, 10]},
        (0.05, 128),
        (1.0 / 256, 0),
        "SOFTMAX",
    ),
    "tanh_requantized": (
        node("Tanh", ["x"], ["y"]),
        {"x": [2, 16]},
        {"y": [2, 16]},
        (0.03, 128),
        (1.0 / 127, 127),
        "DEQUANTIZE",
    ),
    "tanh": (
        node("Tanh", ["x"], ["y"]),
        {"x": [2, 16]},
        {"y": [2, 16]},
        (0.03, 128),
        (1.0 / 128, 128),
        "TANH",
    ),
    "hardswish": (
        node("HardSwish", ["x"], ["y"]),
        {"x": [2, 16]},
        {"y": [2, 16]},
        (0.03, 128),
        (0.02, 20),
        "HARD_SWISH",
    ),
    "reduce_mean": (
        node("ReduceMean", ["x"], ["y"], axes=[2], keepdims=0),
        {"x": [1, 3, 6, 4]},
        {"y": [1, 3, 4]},
        (0.03, 120),
        (0.03, 120),
        "MEAN",
    ),
    "reduce_mean_finer_output": (
        node("ReduceMean", ["x"], ["y"], axes=[2], keepdims=0),
        {"x": [1, 3, 6, 4]},
        {"y": [1, 3, 4]},
        (0.03, 120),
        (0.005, 128),
        "DEQUANTIZE",  # NNAPI's MEAN keeps the input scale: computed in float instead
    ),
    "global_mean_same_output": (
        node("GlobalAveragePool", ["x"], ["y"]),
        {"x": [1, 4, 5, 5]},
        {"y": [1, 4, 1, 1]},
        (0.03, 120),
        (0.03, 120),
        "MEAN",
    ),
    "global_mean_finer_output": (
        node("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=0),
        {"x": [1, 4, 6, 5]},
        {"y": [1, 4]},
        (0.03, 120),
        (0.004, 128),
        "DEPTHWISE_CONV_2D",  # then a RESHAPE drops the 1x1 spatial axes
    ),
    "global_mean_coarser_output": (
        node("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=1),
        {"x": [1, 3, 4, 4]},
        {"y": [1, 3, 1, 1]},
        (0.02, 128),
        (0.05, 100),
        "DEPTHWISE_CONV_2D",  # one rounding, not MEAN's and a requantization's
    ),
}


def _squeeze_axes() -> list:
    from onnx import numpy_helper

    return [numpy_helper.from_array(np.array([2], dtype=np.int64), "axes")]


def _case_model(name: str):
    nodes, initializers, inputs, outputs, operation = CASES[name]
    if name == "squeeze":
        initializers = _squeeze_axes()
    model = float_model(nodes, inputs, outputs, initializers)
    # Like a user of a whole network would get: operators such as MaxPool and Transpose are
    # quantized even when their input does not come from a quantized operator.
    extra = {"ForceQuantizeNoInputCheck": True}
    return quantize_static(model, inputs, extra_options=extra), inputs, operation


def _quant8_operations(partitioned: tvm.IRModule) -> set[str]:
    """The NNAPI operations of the subgraphs whose first input is a quant8 operand."""
    found = set()
    for name in tvm_nnapi.nnapi_subgraphs(partitioned):
        graph = codegen.lower_function(partitioned[name]).to_dict()
        for operation in graph["operations"]:
            first = graph["operands"][operation["inputs"][0]]
            if first["type"].startswith("TENSOR_QUANT8"):
                found.add(operation["op"])
    return found


def _emitted_by_record(partitioned: tvm.IRModule) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for name in tvm_nnapi.nnapi_subgraphs(partitioned):
        func = partitioned[name]
        emitted: dict[relax.Var, list[str]] = {}
        codegen.lower_function(func, emitted)
        bindings = [b for block in func.body.blocks for b in block.bindings]
        composites = {b.var: b.value for b in bindings if isinstance(b.value, relax.Function)}
        for binding in bindings:
            if isinstance(binding.value, relax.Call) and binding.value.op in composites:
                record = str(composites[binding.value.op].attrs["Composite"])
                found.setdefault(record, set()).update(emitted[binding.var])
    return found


def _check_records(partitioned: tvm.IRModule) -> None:
    """Every quantized record emits only the operations it declares."""
    for record, operations in _emitted_by_record(partitioned).items():
        lowering = lowerings.find(record)
        assert lowering is not None
        assert operations <= set(lowering.emits), (record, operations)


def _steps(got: np.ndarray, want: np.ndarray, scale: float) -> float:
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max() / scale)


@pytest.mark.parametrize("name", sorted(CASES) + sorted(DIRECT_CASES))
def test_quantized_operator_matches_host_and_onnxruntime(name: str) -> None:
    from tvm.relax.frontend.onnx import from_onnx

    if name in CASES:
        model, inputs, operation = _case_model(name)
    else:
        op, inputs, outputs, in_quant, out_quant, operation = DIRECT_CASES[name]
        model = qdq_model(op, inputs, outputs, in_quant, out_quant)
    mod = from_onnx(model, keep_params_in_input=False)
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == [], [str(r) for r in result.refusals]
    assert len(result.subgraphs) == 1
    assert operation in _quant8_operations(result.module)
    _check_records(result.module)
    rng = np.random.default_rng(1)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in inputs.items()}
    arrays = list(feeds.values())
    got, executions = run_nnapi(mod, "main", arrays)
    assert executions == 1
    host = run_host(mod, "main", arrays)
    (reference,) = run_onnxruntime(model, feeds)
    (scale,) = output_scales(model)
    assert _steps(got, host, scale) <= 1.0 + 1e-3
    assert _steps(got, reference, scale) <= 1.0 + 1e-3


def test_small_cnn_is_one_quantized_subgraph() -> None:
    from tvm.relax.frontend.onnx import from_onnx

    float_cnn, inputs = small_cnn()
    model = quantize_static(float_cnn, inputs)
    mod = from_onnx(model, keep_params_in_input=False)
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == []
    assert len(result.subgraphs) == 1
    ops = _quant8_operations(result.module)
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "ADD"} <= ops
    summary = offload_summary(result.module)
    assert summary.quantized_flops >= 0.95 * (summary.offloaded_flops + summary.host_flops)
    rng = np.random.default_rng(3)
    feeds = {"x": rng.standard_normal(inputs["x"]).astype(np.float32)}
    got, _ = run_nnapi(mod, "main", [feeds["x"]])
    host = run_host(mod, "main", [feeds["x"]])
    (reference,) = run_onnxruntime(model, feeds)
    (scale,) = output_scales(model)
    # Rounding differences of one step may propagate through the layers.
    assert _steps(got, host, scale) <= 3
    assert _steps(got, reference, scale) <= 3
    assert got.argmax() == host.argmax()


def _qdq(x, scale: float, zero_point: int, dtype: str):
    zp = relax.const(np.array(zero_point, dtype=dtype))
    q = relax.op.quantize(x, relax.const(np.float32(scale)), zp, axis=-1, out_dtype=dtype)
    return relax.op.dequantize(q, relax.const(np.float32(scale)), zp, axis=-1)


def _relax_qdq_module(build_body) -> tvm.IRModule:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4, 6, 6), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(build_body(bb, x))
        bb.emit_func_output(out)
    return bb.get()


def _weight_dq(values: np.ndarray, scales: np.ndarray, zero_points: np.ndarray, axis: int = 0):
    return relax.op.dequantize(
        relax.const(values), relax.const(scales), relax.const(zero_points), axis=axis
    )


def _conv_module(weight_zero_point: int) -> tvm.IRModule:
    def body(bb, x):
        xq = bb.emit(_qdq(x, 0.05, 128, "uint8"))
        w = _weight_dq(
            RNG.integers(-100, 100, (3, 4, 1, 1)).astype("int8"),
            np.array([0.01, 0.02, 0.03], "float32"),
            np.full(3, weight_zero_point, "int8"),
        )
        wv = bb.emit(w)
        conv = bb.emit(relax.op.nn.conv2d(xq, wv))
        return _qdq(conv, 0.1, 120, "uint8")

    return _relax_qdq_module(body)


def test_symmetric_per_channel_weights_are_offloaded() -> None:
    result = tvm_nnapi.partition_with_report(_conv_module(0))
    assert result.refusals == []
    assert "CONV_2D" in _quant8_operations(result.module)


def test_asymmetric_per_channel_weights_are_refused() -> None:
    result = tvm_nnapi.partition_with_report(_conv_module(3))
    conv = [r for r in result.refusals if r.operator == "relax.nn.conv2d"]
    assert conv and conv[0].kind == RefusalKind.ATTRIBUTE
    assert "asymmetric per-channel weights" in conv[0].reason


def test_int16_activations_are_refused() -> None:
    def body(bb, x):
        return relax.op.nn.relu(bb.emit(_qdq(x, 0.001, 0, "int16")))

    result = tvm_nnapi.partition_with_report(_relax_qdq_module(body))
    refused = {r.operator: r for r in result.refusals}
    assert refused["relax.quantize"].kind == RefusalKind.DTYPE
    assert "int16 activations" in refused["relax.quantize"].reason


def test_per_channel_activations_are_refused() -> None:
    def body(bb, x):
        scales = relax.const(np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "float32"))
        zps = relax.const(np.zeros(6, "uint8"))
        return relax.op.quantize(x, scales, zps, axis=-1, out_dtype="uint8")

    result = tvm_nnapi.partition_with_report(_relax_qdq_module(body))
    (refusal,) = [r for r in result.refusals if r.operator == "relax.quantize"]
    assert "activations quantized per channel" in refusal.reason


def test_multiplier_rule_of_old_feature_levels_is_refused() -> None:
    # FL2: a conv whose output scale (0.1) is not above input x weight scale (0.05 x 0.03 is
    # below it: accepted); with weight scale 3.0 the multiplier exceeds 1 and is refused.
    def body_with(scale: float):
        def body(bb, x):
            xq = bb.emit(_qdq(x, 0.05, 128, "uint8"))
            w = bb.emit(
                _weight_dq(
                    np.ones((3, 1, 1, 6), "int8"),
                    np.array([scale], "float32"),
                    np.zeros(1, "int8"),
                )
            )
            conv = relax.op.nn.conv2d(xq, w, data_layout="NHWC", kernel_layout="OHWI")
            return _qdq(bb.emit(conv), 0.1, 120, "uint8")

        return body

    options = PartitionOptions(feature_level=28)
    accepted = tvm_nnapi.partition_with_report(_relax_qdq_module(body_with(0.03)), options)
    assert not [r for r in accepted.refusals if r.operator == "relax.nn.conv2d"]
    refused = tvm_nnapi.partition_with_report(_relax_qdq_module(body_with(3.0)), options)
    (conv,) = [r for r in refused.refusals if r.operator == "relax.nn.conv2d"]
    assert conv.kind == RefusalKind.FEATURE_LEVEL and "multiplier" in conv.reason


def test_shared_dequantize_is_dedicated_per_reader() -> None:
    def body(bb, x):
        dq = bb.emit(_qdq(x, 0.05, 128, "uint8"))
        a = bb.emit(relax.op.nn.relu(dq))
        b = bb.emit(relax.op.sigmoid(dq))
        qa = bb.emit(_qdq(a, 0.05, 128, "uint8"))
        qb = bb.emit(_qdq(b, 1.0 / 256, 0, "uint8"))
        return relax.op.add(qa, qb)

    mod = _relax_qdq_module(body)
    result = tvm_nnapi.partition_with_report(mod)
    assert {"RELU", "LOGISTIC"} <= _quant8_operations(result.module)
    x = np.random.default_rng(0).standard_normal((1, 4, 6, 6)).astype("float32")
    got, _ = run_nnapi(mod, "main", [x])
    np.testing.assert_allclose(got, run_host(mod, "main", [x]), atol=0.05 + 1.0 / 256 + 1e-6)


def test_quant8_verdict_is_in_output_steps() -> None:
    from tvm_nnapi.tools.run import DEFAULT_TOLERANCE, compare

    want = np.array([0.0, 0.5, 1.0], "float32")
    (close,) = compare([want + 0.02], [want], precision="quant8", steps=[0.01])
    assert close.passed and close.max_error_steps == pytest.approx(2.0)
    assert close.tolerance == DEFAULT_TOLERANCE["quant8"] == 2.0 and close.top1_agrees
    (far,) = compare([want + 0.03], [want], precision="quant8", steps=[0.01])
    assert not far.passed and far.max_error_steps == pytest.approx(3.0)


def test_run_judges_a_quantized_onnx_model_in_steps(tmp_path) -> None:
    from tvm_nnapi.tools.run import run_model
    from tvm_nnapi.tools.sources import load_model_source

    from .quantized_models import onnx

    float_cnn, inputs = small_cnn()
    path = tmp_path / "cnn_qdq.onnx"
    onnx.save(quantize_static(float_cnn, inputs), str(path))
    from mock_nnapi import control

    previous = control.profile_name()
    result = run_model(load_model_source(str(path)), profile="snapdragon-8-gen-2")
    assert control.profile_name() == previous  # run_model's profile switch is scoped
    (output,) = result.outputs
    assert output.precision == "quant8" and output.max_error_steps is not None
    assert result.passed and result.subgraphs == 1 and output.top1_agrees
    # Every operation on the Hexagon DSP: the QUANTIZE of the float input and the DEQUANTIZE of
    # the output (the profile's QUANTIZE reads float32), the global average pool in quant8.
    assert result.executions and all(e["devices"] == ["qti-dsp"] for e in result.executions)
    assert result.modelled_by_device_us.keys() == {"qti-dsp"}


def test_matmul_with_a_float_bias_keeps_its_bias() -> None:
    # PT2E leaves biases in float: add(bias, matmul(dq(x), permute_dims(dq(W)))).
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 8), "float32"))
    weights = RNG.integers(-127, 128, (4, 8)).astype("int8")
    scales = np.array([0.01, 0.02, 0.015, 0.03], "float32")
    bias = np.array([0.5, -0.25, 1.0, -1.0], "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            xq = bb.emit(_qdq(x, 0.02, 3, "int8"))
            w = bb.emit(_weight_dq(weights, scales, np.zeros(4, "int8")))
            mm = bb.emit(relax.op.matmul(xq, bb.emit(relax.op.permute_dims(w, [1, 0]))))
            out = bb.emit_output(
                _qdq(bb.emit(relax.op.add(relax.const(bias), mm)), 0.01, 0, "int8")
            )
        bb.emit_func_output(out)
    mod = bb.get()
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == [] and "CONV_2D" in _quant8_operations(result.module)
    data = np.random.default_rng(4).standard_normal((2, 8)).astype("float32")
    got, _ = run_nnapi(mod, "main", [data])
    assert _steps(got, run_host(mod, "main", [data]), 0.01) <= 1.0 + 1e-3


# ---- a matmul of two quantized activations (attention): BATCH_MATMUL, uint8 shifted to int8 -----


def _activation_matmul_onnx(shapes: dict[str, list[int]], out: list[int], activation_type):
    model = float_model([node("MatMul", ["a", "b"], ["y"])], shapes, {"y": out})
    return quantize_static(model, shapes, activation_type=activation_type)


@pytest.mark.parametrize(
    "shapes, out",
    [
        ({"a": [3, 4, 8], "b": [3, 8, 5]}, [3, 4, 5]),
        ({"a": [2, 3, 4, 8], "b": [2, 3, 8, 5]}, [2, 3, 4, 5]),
        ({"a": [6, 8], "b": [8, 7]}, [6, 7]),
    ],
)
def test_matmul_of_two_int8_activations_is_a_quant8_batch_matmul(shapes, out) -> None:
    from onnxruntime.quantization import QuantType
    from tvm.relax.frontend.onnx import from_onnx

    model = _activation_matmul_onnx(shapes, out, QuantType.QInt8)
    mod = from_onnx(model, keep_params_in_input=False)
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == [] and len(result.subgraphs) == 1
    assert "BATCH_MATMUL" in _quant8_operations(result.module)
    _check_records(result.module)
    rng = np.random.default_rng(2)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    got, _ = run_nnapi(mod, "main", list(feeds.values()))
    host = run_host(mod, "main", list(feeds.values()))
    (reference,) = run_onnxruntime(model, feeds)
    (scale,) = output_scales(model)
    assert _steps(got, host, scale) <= 1.0 + 1e-3
    assert _steps(got, reference, scale) <= 1.0 + 1e-3


def _attention_scores_module(dtype: str) -> tvm.IRModule:
    """softmax's input of attention, q @ k^T, on quantized q and k of [heads, tokens, 16]."""
    zero_point = 3 if dtype == "int8" else 131
    bb = relax.BlockBuilder()
    q = relax.Var("q", relax.TensorType((2, 6, 16), "float32"))
    k = relax.Var("k", relax.TensorType((2, 6, 16), "float32"))
    with bb.function("main", [q, k]):
        with bb.dataflow():
            qq = bb.emit(_qdq(q, 0.03, zero_point, dtype))
            kq = bb.emit(_qdq(k, 0.02, -zero_point if dtype == "int8" else 125, dtype))
            scores = bb.emit(relax.op.matmul(qq, bb.emit(relax.op.permute_dims(kq, [0, 2, 1]))))
            out = bb.emit_output(_qdq(scores, 0.05, 0 if dtype == "int8" else 128, dtype))
        bb.emit_func_output(out)
    return bb.get()


def test_attention_scores_with_a_transposed_key_are_one_batch_matmul() -> None:
    mod = _attention_scores_module("int8")
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == []
    graph = codegen.lower_function(result.module[tvm_nnapi.nnapi_subgraphs(result.module)[0]])
    matmuls = [o for o in graph.to_dict()["operations"] if o["op"] == "BATCH_MATMUL"]
    assert len(matmuls) == 1  # adj_y: no TRANSPOSE of the key
    assert "TRANSPOSE" not in _quant8_operations(result.module)
    rng = np.random.default_rng(5)
    q, k = (rng.standard_normal((2, 6, 16)).astype("float32") for _ in range(2))
    got, _ = run_nnapi(mod, "main", [q, k])
    assert _steps(got, run_host(mod, "main", [q, k]), 0.05) <= 1.0 + 1e-3


def test_batch_matmul_of_uint8_activations_is_shifted_to_int8_exactly() -> None:
    """uint8 sides move to int8 (zero point - 128, the same scale) and the int8 result back:
    exact, so the NNAPI result equals the host's within the one rounding step of the
    matmul."""
    mod = _attention_scores_module("uint8")
    result = tvm_nnapi.partition_with_report(mod)
    assert [r for r in result.refusals if r.operator == "relax.matmul"] == []
    graph = codegen.lower_function(result.module[tvm_nnapi.nnapi_subgraphs(result.module)[0]])
    operations = graph.to_dict()["operations"]
    assert [o["op"] for o in operations].count("BATCH_MATMUL") == 1
    _check_records(result.module)
    rng = np.random.default_rng(5)
    q, k = (rng.standard_normal((2, 6, 16)).astype("float32") for _ in range(2))
    got, _ = run_nnapi(mod, "main", [q, k])
    assert _steps(got, run_host(mod, "main", [q, k]), 0.05) <= 1.0 + 1e-3


def test_matmul_of_two_uint8_activations_matches_onnxruntime() -> None:
    from onnxruntime.quantization import QuantType
    from tvm.relax.frontend.onnx import from_onnx

    shapes = {"a": [3, 4, 8], "b": [3, 8, 5]}
    model = _activation_matmul_onnx(shapes, [3, 4, 5], QuantType.QUInt8)
    mod = from_onnx(model, keep_params_in_input=False)
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == [] and len(result.subgraphs) == 1
    rng = np.random.default_rng(2)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    got, _ = run_nnapi(mod, "main", list(feeds.values()))
    (reference,) = run_onnxruntime(model, feeds)
    (scale,) = output_scales(model)
    assert _steps(got, run_host(mod, "main", list(feeds.values())), scale) <= 1.0 + 1e-3
    assert _steps(got, reference, scale) <= 1.0 + 1e-3


def test_uint8_batch_matmul_below_feature_level_6_is_refused() -> None:
    from tvm_nnapi.compiler.patterns import FEATURE_LEVEL_5

    options = PartitionOptions(feature_level=FEATURE_LEVEL_5)
    result = tvm_nnapi.partition_with_report(_attention_scores_module("uint8"), options)
    (refusal,) = [r for r in result.refusals if r.operator == "relax.matmul"]
    assert refusal.kind == RefusalKind.FEATURE_LEVEL and "feature level" in refusal.reason


def test_batch_matmul_below_feature_level_6_is_refused() -> None:
    from tvm_nnapi.compiler.patterns import FEATURE_LEVEL_5

    options = PartitionOptions(feature_level=FEATURE_LEVEL_5)
    result = tvm_nnapi.partition_with_report(_attention_scores_module("int8"), options)
    # (the float matmul, tried next, is BATCH_MATMUL too and gives the same reason)
    (refusal,) = [r for r in result.refusals if r.operator == "relax.matmul"]
    assert refusal.kind == RefusalKind.FEATURE_LEVEL and "feature level" in refusal.reason
    assert "BATCH_MATMUL" not in {
        o["op"]
        for name in tvm_nnapi.nnapi_subgraphs(result.module)
        for o in codegen.lower_function(result.module[name]).to_dict()["operations"]
    }


# ---- run --layerwise on a quantized model: exact comparison in quantization steps -------------


def test_layerwise_compares_quantized_results_in_steps(tmp_path) -> None:
    from mock_nnapi import control
    from tvm_nnapi.tools.layerwise import QUANT8_LAYER_TOLERANCE, layerwise
    from tvm_nnapi.tools.run import random_inputs
    from tvm_nnapi.tools.sources import load_model_source

    from .quantized_models import onnx

    float_cnn, inputs = small_cnn()
    model = quantize_static(float_cnn, inputs)
    path = tmp_path / "cnn_qdq.onnx"
    onnx.save(model, str(path))
    source = load_model_source(str(path))
    partitioned = tvm_nnapi.partition(source.module)
    arrays = random_inputs(source, 0)
    clean = layerwise(source, partitioned, arrays, "quant8")
    quantized = [r for r in clean.rows if r.relax_operators[-1] == "relax.quantize"]
    assert len(quantized) >= 6 and clean.first_divergence is None
    for row in quantized:  # integer results, compared exactly in whole steps
        assert row.max_error_steps == row.max_abs_error == 0.0
        assert row.tolerance == QUANT8_LAYER_TOLERANCE == 0.0
    (scale,) = output_scales(model)
    # Three output steps added to the float output of the final DEQUANTIZE.
    with control.OperationFaultInjection("DEQUANTIZE", 3 * scale):
        faulty = layerwise(source, partitioned, arrays, "quant8")
    first = faulty.first_divergence
    assert first is not None and first.nnapi_operations == ["DEQUANTIZE"]
    assert first.max_error_steps == pytest.approx(3.0, rel=1e-3)
    assert not first.passed and first.tolerance == QUANT8_LAYER_TOLERANCE
    # --rtol is a number of steps for these rows.
    with control.OperationFaultInjection("DEQUANTIZE", 3 * scale):
        lenient = layerwise(source, partitioned, arrays, "quant8", rtol=3.5)
    assert lenient.first_divergence is None


# ---- a QDQ attention head: the rank-0 scale of the scores is a quant8 [1] operand --------------


def test_qdq_attention_scales_its_scores_by_a_rank0_constant_in_quant8() -> None:
    """onnxruntime quantizes attention's 1/sqrt(d) as a rank-0 int8 constant: the multiply
    of the scores is a quant8 MUL whose scale is a one-element operand NNAPI broadcasts, so the
    whole head is one quantized subgraph with no refusal."""
    from tvm.relax.frontend.onnx import from_onnx

    from .quantized_models import attention

    float_attention, inputs = attention()
    model = quantize_static(float_attention, inputs)
    mod = from_onnx(model, keep_params_in_input=False)
    result = tvm_nnapi.partition_with_report(mod)
    assert result.refusals == [], [str(r) for r in result.refusals]
    assert len(result.subgraphs) == 1
    _check_records(result.module)
    (name,) = tvm_nnapi.nnapi_subgraphs(result.module)
    graph = codegen.lower_function(result.module[name]).to_dict()
    (mul,) = [o for o in graph["operations"] if o["op"] == "MUL"]
    lhs, rhs = (graph["operands"][i] for i in mul["inputs"][:2])
    assert lhs["type"].startswith("TENSOR_QUANT8") and rhs["type"] == lhs["type"]
    assert rhs["shape"] == [1]
    summary = offload_summary(result.module)
    assert summary.host_operators == 0
    assert summary.quantized_flops >= 0.98 * summary.offloaded_flops
    rng = np.random.default_rng(4)
    feeds = {"x": rng.standard_normal(inputs["x"]).astype(np.float32)}
    got, executions = run_nnapi(mod, "main", [feeds["x"]])
    assert executions == 1
    (reference,) = run_onnxruntime(model, feeds)
    (scale,) = output_scales(model)
    # Rounding differences of one step may propagate through the head's six quantized steps.
    assert _steps(got, run_host(mod, "main", [feeds["x"]]), scale) <= 3
    assert _steps(got, reference, scale) <= 3
