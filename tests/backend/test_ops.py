# SPDX-License-Identifier: Apache-2.0
"""Per-operator differential tests: each Relax operator (or fused pattern) is partitioned,
lowered to NNAPI, run on the mock and compared with TVM's own llvm build of the same module.
Every case also asserts that the expected NNAPI operations really ran."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_nnapi

from .helpers import run_host

RNG = np.random.default_rng(1234)


def rand(*shape: int, dtype: str = "float32", low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return RNG.uniform(low, high, shape).astype(dtype)


@dataclass
class Case:
    name: str
    build: Callable[[list[relax.Var]], relax.Expr]
    inputs: list[np.ndarray]
    nnapi_ops: list[str]
    rtol: float = 1e-5
    atol: float = 1e-5
    symbolic: dict[int, int] = field(default_factory=dict)  # input dim index -> symbol position

    def module(self) -> tvm.IRModule:
        builder = relax.BlockBuilder()
        params = []
        for i, array in enumerate(self.inputs):
            shape = list(array.shape)
            if i == 0 and self.symbolic:
                for axis in self.symbolic:
                    shape[axis] = tvm.tirx.Var(f"n{axis}", "int64")
            params.append(relax.Var(f"x{i}", relax.TensorType(shape, str(array.dtype))))
        with builder.function("main", params):
            with builder.dataflow():
                out = builder.emit_output(self.build(params))
            builder.emit_func_output(out)
        return builder.get()


def c(array: np.ndarray | np.generic) -> relax.Expr:
    return relax.const(array)


op = relax.op
CASES = [
    # elementwise binary with broadcasting
    Case("add", lambda p: op.add(p[0], p[1]), [rand(2, 3, 4), rand(4)], ["ADD"]),
    Case("subtract", lambda p: op.subtract(p[0], p[1]), [rand(2, 1, 4), rand(3, 1)], ["SUB"]),
    Case(
        "multiply_f16",
        lambda p: op.multiply(p[0], p[1]),
        [rand(3, 4, dtype="float16"), rand(4, dtype="float16")],
        ["MUL"],
        2e-3,
        2e-3,
    ),
    Case("divide", lambda p: op.divide(p[0], p[1]), [rand(2, 5), rand(2, 5, low=0.5)], ["DIV"]),
    Case("maximum", lambda p: op.maximum(p[0], p[1]), [rand(2, 5), rand(5)], ["MAXIMUM"]),
    Case("minimum", lambda p: op.minimum(p[0], p[1]), [rand(2, 5), rand(2, 1)], ["MINIMUM"]),
    Case(
        "power", lambda p: op.power(p[0], p[1]), [rand(2, 5, low=0.1), rand(5)], ["POW"], 1e-5, 1e-5
    ),
    Case(
        "add_int32",
        lambda p: op.add(p[0], p[1]),
        [np.arange(6, dtype="int32").reshape(2, 3), np.arange(3, dtype="int32")],
        ["ADD"],
    ),
    Case("greater", lambda p: op.greater(p[0], p[1]), [rand(3, 4), rand(4)], ["GREATER"]),
    Case(
        "equal_int32",
        lambda p: op.equal(p[0], p[1]),
        [np.array([1, 2, 3], "int32"), np.array([1, 0, 3], "int32")],
        ["EQUAL"],
    ),
    Case(
        "logical_and",
        lambda p: op.logical_and(
            op.greater(p[0], c(np.float32(0))), op.less(p[0], c(np.float32(1)))
        ),
        [rand(8)],
        ["LOGICAL_AND", "GREATER", "LESS"],
    ),
    # unary
    Case("exp", lambda p: op.exp(p[0]), [rand(2, 3)], ["EXP"]),
    Case("log", lambda p: op.log(p[0]), [rand(2, 3, low=0.1)], ["LOG"]),
    Case("sqrt", lambda p: op.sqrt(p[0]), [rand(2, 3, low=0.1)], ["SQRT"]),
    Case("rsqrt", lambda p: op.rsqrt(p[0]), [rand(2, 3, low=0.1)], ["RSQRT"]),
    Case("sin", lambda p: op.sin(p[0]), [rand(7)], ["SIN"]),
    Case("abs_negative", lambda p: op.negative(op.abs(p[0])), [rand(7)], ["ABS", "NEG"]),
    Case("floor", lambda p: op.floor(p[0]), [rand(7)], ["FLOOR"]),
    Case("tanh", lambda p: op.tanh(p[0]), [rand(2, 8)], ["TANH"]),
    Case("sigmoid", lambda p: op.sigmoid(p[0]), [rand(2, 8)], ["LOGISTIC"]),
    Case("relu", lambda p: op.nn.relu(p[0]), [rand(2, 8)], ["RELU"]),
    Case("silu", lambda p: op.nn.silu(p[0]), [rand(2, 8)], ["LOGISTIC", "MUL"]),
    Case("gelu_tanh", lambda p: op.nn.gelu_tanh(p[0]), [rand(2, 8)], ["TANH"], 1e-5, 1e-5),
    Case("relu6", lambda p: op.clip(p[0], 0, 6), [rand(3, 4, low=-8, high=8)], ["RELU6"]),
    Case("clip_minmax", lambda p: op.clip(p[0], -0.5, 1.5), [rand(3, 4)], ["MAXIMUM", "MINIMUM"]),
    Case("astype_f16", lambda p: op.astype(p[0], "float16"), [rand(3, 4)], ["CAST"]),
    Case(
        "where",
        lambda p: op.where(op.greater(p[0], p[1]), p[0], p[1]),
        [rand(3, 4), rand(3, 4)],
        ["SELECT", "GREATER"],
    ),
    # matmul
    Case(
        "matmul_fc_transposed",
        lambda p: op.matmul(p[0], op.permute_dims(c(rand(6, 8)), [1, 0])),
        [rand(4, 8)],
        ["FULLY_CONNECTED"],
    ),
    Case(
        "matmul_fc_3d",
        lambda p: op.matmul(p[0], c(rand(8, 5))),
        [rand(2, 3, 8)],
        ["FULLY_CONNECTED", "RESHAPE"],
    ),
    Case(
        "matmul_fc_bias",
        lambda p: op.add(op.matmul(p[0], c(rand(8, 5))), c(rand(5))),
        [rand(3, 8)],
        ["FULLY_CONNECTED"],
    ),
    Case(
        "matmul_fc_symbolic",
        lambda p: op.matmul(p[0], op.permute_dims(c(rand(6, 8)), [1, 0])),
        [rand(1, 5, 8)],
        ["FULLY_CONNECTED", "RESHAPE"],
        symbolic={1: 0},
    ),
    Case(
        "matmul_fc_runtime_weight",
        lambda p: op.matmul(p[0], op.permute_dims(p[1], [1, 0])),
        [rand(4, 8), rand(6, 8)],
        ["FULLY_CONNECTED"],
    ),
    Case(
        "batch_matmul",
        lambda p: op.matmul(p[0], p[1]),
        [rand(2, 3, 4), rand(2, 4, 5)],
        ["BATCH_MATMUL"],
    ),
    Case(
        "batch_matmul_adj_y",
        lambda p: op.matmul(p[0], op.permute_dims(p[1], [0, 2, 1])),
        [rand(2, 3, 4), rand(2, 5, 4)],
        ["BATCH_MATMUL"],
    ),
    # convolutions
    Case(
        "conv2d_nchw",
        lambda p: op.nn.conv2d(p[0], c(rand(4, 3, 3, 3))),
        [rand(1, 3, 8, 8)],
        ["CONV_2D"],
    ),
    Case(
        "conv2d_nhwc_hwio",
        lambda p: op.nn.conv2d(p[0], c(rand(3, 3, 3, 4)), data_layout="NHWC", kernel_layout="HWIO"),
        [rand(1, 8, 8, 3)],
        ["CONV_2D"],
    ),
    Case(
        "conv2d_strides_padding_dilation",
        lambda p: op.nn.conv2d(
            p[0], c(rand(4, 3, 3, 2)), strides=(1, 2), padding=(1, 0, 2, 1), dilation=(2, 1)
        ),
        [rand(1, 3, 9, 10)],
        ["CONV_2D"],
    ),
    Case(
        "conv2d_bias_relu",
        lambda p: op.nn.relu(op.add(op.nn.conv2d(p[0], c(rand(4, 3, 1, 1))), c(rand(1, 4, 1, 1)))),
        [rand(2, 3, 5, 5)],
        ["CONV_2D"],
    ),
    Case(
        "conv2d_bias_relu6",
        lambda p: op.clip(
            op.add(op.nn.conv2d(p[0], c(rand(4, 3, 3, 3)), padding=1), c(rand(1, 4, 1, 1))), 0, 6
        ),
        [rand(1, 3, 6, 6)],
        ["CONV_2D"],
    ),
    Case(
        "depthwise",
        lambda p: op.nn.conv2d(p[0], c(rand(6, 1, 3, 3)), groups=3, padding=1, strides=2),
        [rand(1, 3, 8, 8)],
        ["DEPTHWISE_CONV_2D"],
    ),
    Case(
        "grouped",
        lambda p: op.nn.conv2d(p[0], c(rand(4, 2, 3, 3)), groups=2),
        [rand(1, 4, 6, 6)],
        ["GROUPED_CONV_2D"],
    ),
    Case(
        "conv2d_transpose",
        lambda p: op.nn.conv2d_transpose(p[0], c(rand(3, 4, 3, 3)), strides=2, padding=1),
        [rand(1, 3, 5, 5)],
        ["TRANSPOSE_CONV_2D"],
    ),
    # pooling
    Case(
        "max_pool2d",
        lambda p: op.nn.max_pool2d(p[0], pool_size=(3, 2), strides=(2, 1), padding=(1, 0, 1, 1)),
        [rand(1, 2, 7, 6)],
        ["MAX_POOL_2D"],
    ),
    Case(
        "avg_pool2d_nhwc",
        lambda p: op.nn.avg_pool2d(p[0], pool_size=(2, 3), strides=(2, 2), layout="NHWC"),
        [rand(1, 6, 7, 3)],
        ["AVERAGE_POOL_2D"],
    ),
    Case(
        "global_avg_pool",
        lambda p: op.nn.adaptive_avg_pool2d(p[0], output_size=(1, 1)),
        [rand(2, 4, 5, 5)],
        ["MEAN"],
    ),
    # softmax and reductions
    Case("softmax", lambda p: op.nn.softmax(p[0]), [rand(3, 10)], ["SOFTMAX"]),
    Case(
        "softmax_axis1_f16",
        lambda p: op.nn.softmax(p[0], axis=1),
        [rand(2, 5, 3, dtype="float16")],
        ["SOFTMAX"],
        2e-3,
        2e-3,
    ),
    Case("log_softmax", lambda p: op.nn.log_softmax(p[0]), [rand(3, 10)], ["LOG_SOFTMAX"]),
    Case(
        "mean_keepdims",
        lambda p: op.mean(p[0], axis=[1, 2], keepdims=True),
        [rand(2, 3, 4)],
        ["MEAN"],
    ),
    Case("sum", lambda p: op.sum(p[0], axis=[-1]), [rand(2, 3, 4)], ["REDUCE_SUM"]),
    Case(
        "max_min",
        lambda p: op.subtract(op.max(p[0], axis=[0]), op.min(p[0], axis=[0])),
        [rand(4, 3)],
        ["REDUCE_MAX", "REDUCE_MIN"],
    ),
    # shape ops
    Case("reshape", lambda p: op.reshape(op.add(p[0], p[0]), (3, 8)), [rand(2, 3, 4)], ["RESHAPE"]),
    Case(
        "reshape_symbolic",
        lambda p: op.reshape(p[0], (-1, 2, 2)),
        [rand(6, 4)],
        ["RESHAPE"],
        symbolic={0: 0},
    ),
    Case(
        "permute_dims", lambda p: op.permute_dims(p[0], [0, 2, 1]), [rand(2, 3, 4)], ["TRANSPOSE"]
    ),
    Case(
        "concat",
        lambda p: op.concat([p[0], op.exp(p[1])], axis=1),
        [rand(2, 3), rand(2, 5)],
        ["CONCATENATION"],
    ),
    Case(
        "split_sections",
        lambda p: op.add(op.split(p[0], 2, axis=1)[0], op.split(p[0], 2, axis=1)[1]),
        [rand(2, 6)],
        ["SPLIT"],
    ),
    Case(
        "split_sections_symbolic",  # an LLM's gate/up split: only the split axis is static
        lambda p: op.multiply(op.split(p[0], 2, axis=-1)[0], op.split(p[0], 2, axis=-1)[1]),
        [rand(1, 5, 8)],
        ["SPLIT"],
        symbolic={1: 0},
    ),
    Case(
        "strided_slice",
        lambda p: op.strided_slice(p[0], axes=[1, 2], begin=[1, 0], end=[3, 4], strides=[1, 2]),
        [rand(2, 4, 5)],
        ["STRIDED_SLICE"],
    ),
    Case(
        "take",
        lambda p: op.take(c(rand(10, 4)), p[0], axis=0),
        [np.array([3, 0, 9], "int32")],
        ["GATHER"],
    ),
    Case(
        "expand_squeeze",
        lambda p: op.squeeze(op.expand_dims(op.exp(p[0]), 1), [1]),
        [rand(3, 4)],
        ["RESHAPE"],
    ),
    Case(
        "pad_constant",
        lambda p: op.nn.pad(p[0], pad_width=[0, 0, 1, 2, 2, 1]),
        [rand(1, 3, 4)],
        ["PAD"],
    ),
    Case(
        "pad_value",
        lambda p: op.nn.pad(p[0], pad_width=[0, 0, 1, 0], pad_value=1.5),
        [rand(2, 3)],
        ["PAD_V2"],
    ),
    Case(
        "resize_bilinear_half_pixel",
        lambda p: op.image.resize2d(p[0], (8, 6)),
        [rand(1, 2, 4, 3)],
        ["RESIZE_BILINEAR"],
    ),
    Case(
        "resize_bilinear_align_corners",
        lambda p: op.image.resize2d(p[0], (7, 7), coordinate_transformation_mode="align_corners"),
        [rand(1, 2, 4, 3)],
        ["RESIZE_BILINEAR"],
    ),
    Case(
        "resize_nearest",
        lambda p: op.image.resize2d(
            p[0],
            (8, 6),
            method="nearest_neighbor",
            coordinate_transformation_mode="asymmetric",
            rounding_method="floor",
        ),
        [rand(1, 2, 4, 3)],
        ["RESIZE_NEAREST_NEIGHBOR"],
    ),
    # normalisations
    Case(
        "rms_norm",
        lambda p: op.nn.rms_norm(p[0], c(rand(8)), axes=[-1]),
        [rand(2, 3, 8)],
        ["MEAN", "RSQRT"],
        1e-5,
        1e-5,
    ),
    Case(
        "layer_norm",
        lambda p: op.nn.layer_norm(p[0], c(rand(8)), c(rand(8)), axes=[-1]),
        [rand(3, 8)],
        ["MEAN", "RSQRT"],
        1e-5,
        1e-5,
    ),
    Case(
        "batch_norm",
        lambda p: op.nn.batch_norm(
            p[0], c(rand(3)), c(rand(3)), c(rand(3)), c(rand(3, low=0.5)), axis=1, training=False
        )[0],
        [rand(2, 3, 4, 4)],
        ["MUL", "ADD"],
    ),
    # weights that are inputs, not constants: rearranged on NNAPI by a TRANSPOSE (appended last,
    # so that the random inputs of the cases above stay the same)
    Case(
        "matmul_fc_runtime_weight_kn",
        lambda p: op.matmul(p[0], p[1]),
        [rand(3, 8), rand(8, 5)],
        ["FULLY_CONNECTED", "TRANSPOSE"],
    ),
    Case(
        "conv2d_runtime_filter",
        lambda p: op.nn.conv2d(p[0], p[1], padding=1),
        [rand(1, 3, 6, 6), rand(4, 3, 3, 3)],
        ["CONV_2D", "TRANSPOSE"],
    ),
    Case(
        "depthwise_conv2d_runtime_filter",
        lambda p: op.nn.conv2d(p[0], p[1], groups=3, padding=1),
        [rand(1, 3, 6, 6), rand(6, 1, 3, 3)],
        ["DEPTHWISE_CONV_2D", "TRANSPOSE"],
    ),
    Case(
        "conv2d_transpose_runtime_filter",
        lambda p: op.nn.conv2d_transpose(p[0], p[1], strides=2, padding=1),
        [rand(1, 3, 5, 5), rand(3, 4, 3, 3)],
        ["TRANSPOSE_CONV_2D", "TRANSPOSE"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_operator_matches_llvm_and_runs_on_nnapi(case: Case, target, difftest):
    mod = case.module()
    report = tvm_nnapi.partition_with_report(mod)
    assert report.subgraphs, f"nothing offloaded: {[str(r) for r in report.refusals]}"
    executable = tvm_nnapi.build(report.module, target=target.compile_target)
    counts = {name: target.operation_count(name) for name in case.nnapi_ops}
    result = target.run(executable, "main", case.inputs)
    for name in case.nnapi_ops:
        if counts[name] >= 0:  # the mock reports its counters; a real NNAPI does not
            assert target.operation_count(name) > counts[name], f"{name} did not run on NNAPI"
    expected = run_host(mod, "main", case.inputs)
    exact = result.dtype == np.bool_ or np.issubdtype(result.dtype, np.integer)
    tolerances = dict(rtol=0.0, atol=0.0) if exact else dict(rtol=case.rtol, atol=case.atol)
    difftest.check(result, expected, **tolerances, reference="host llvm")
