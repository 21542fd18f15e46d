# SPDX-License-Identifier: Apache-2.0
"""Random Relax programs through the whole backend, differential against the host build.

Hypothesis draws a program of 1-7 operators over one input (float32, a float16 stretch, or
int32; sometimes a symbolic batch): element-wise unary and binary operators with values and
constants, matmul with constant weights and biases, conv2d (plain, depthwise and grouped; NCHW
and NHWC; strides, dilation and paddings that NNAPI takes and that it refuses), pooling,
reductions, softmax, layer norm, reshape, permute_dims, concat, strided_slice, take, where and
casts; intermediates are reused, so fused patterns meet values used outside them. Each program
is partitioned, built with NNAPI offload and run on the mock, and must either give the host
``llvm`` build's answer or keep operators on the host with a reason: never raise at partition,
build or run time. A failure shrinks to a small program; its TVMScript is in the message.

Budget: ``RANDOM_PROGRAMS`` programs (default 12, derandomised so CI is reproducible);
``HYPOTHESIS_PROFILE=campaign`` (``tox -e fuzz``) draws ``RANDOM_PROGRAMS_CAMPAIGN`` (default
2000) random programs (docs/reliability.md).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import pytest
import tvm
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tvm import relax, tirx

import tvm_nnapi

PROGRAMS = int(os.environ.get("RANDOM_PROGRAMS", "12"))
CAMPAIGN = int(os.environ.get("RANDOM_PROGRAMS_CAMPAIGN", "2000"))
_CAMPAIGN_RUN = os.environ.get("HYPOTHESIS_PROFILE") == "campaign"
BUDGET = settings(
    max_examples=CAMPAIGN if _CAMPAIGN_RUN else PROGRAMS,
    deadline=None,
    derandomize=not _CAMPAIGN_RUN,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

op = relax.op


@dataclass
class Value:
    """A value of the program: its variable, its shape (the batch may be the symbol ``n``)
    and dtype."""

    var: relax.Expr
    shape: tuple
    dtype: str

    @property
    def rank(self) -> int:
        return len(self.shape)

    def static(self, axis: int) -> bool:
        return isinstance(self.shape[axis], int)


class Program:
    """Draws operators one by one on a BlockBuilder inside a dataflow block."""

    def __init__(self, draw, builder: relax.BlockBuilder, first: Value, seed: int) -> None:
        self.draw = draw
        self.builder = builder
        self.values = [first]
        self.rng = np.random.default_rng(seed)
        self.half = False  # a float16 stretch ran: float16 tolerances

    def emit(self, expr: relax.Expr, keep: bool = True) -> Value:
        """Bind ``expr``; ``keep``: later operators may use it (not a where's boolean)."""
        var = self.builder.emit(expr)
        shape = tuple(
            int(d.value) if isinstance(d, tirx.IntImm) else "n" for d in var.ty.shape.values
        )
        value = Value(var, shape, str(var.ty.dtype))
        if keep:
            self.values.append(value)
        return value

    def pick(self, predicate=lambda v: True) -> Value | None:
        choices = [v for v in self.values if predicate(v)]
        return self.draw(st.sampled_from(choices)) if choices else None

    def constant(self, shape, dtype: str, scale: float = 1.0) -> relax.Expr:
        if dtype == "int32":
            return relax.const(self.rng.integers(-5, 6, shape).astype("int32"))
        values = (self.rng.standard_normal(shape) * scale).astype(dtype)
        return relax.const(values)

    # ---- the operators (each returns False when the drawn value does not suit it) ---------

    def unary(self) -> bool:
        v = self.pick(lambda v: v.dtype != "int32")
        if v is None:
            return False
        name = self.draw(
            st.sampled_from(["tanh", "sigmoid", "relu", "abs", "negative", "exp", "sqrt", "gelu"])
        )
        x = v.var
        if name == "exp":
            x = self.emit(op.tanh(x)).var  # bounded: no overflow to compare
        if name == "sqrt":
            x = self.emit(op.abs(x)).var
        function = {"relu": op.nn.relu, "gelu": op.nn.gelu}.get(name) or getattr(op, name)
        self.emit(function(x))
        return True

    def binary(self) -> bool:
        v = self.pick()
        assert v is not None
        name = self.draw(st.sampled_from(["add", "subtract", "multiply", "maximum", "minimum"]))
        same = [w for w in self.values if w.shape == v.shape and w.dtype == v.dtype]
        kind = self.draw(st.sampled_from(["value", "row", "scalar"]))
        if v.dtype == "int32" and name == "multiply":
            kind = "scalar"  # products of values would overflow int32 in a few steps
        if kind == "value":
            other = self.draw(st.sampled_from(same)).var
        elif kind == "row" and v.static(v.rank - 1):
            other = self.constant((v.shape[-1],), v.dtype)
        else:
            other = self.constant((), v.dtype)
        left, right = (v.var, other) if self.draw(st.booleans()) else (other, v.var)
        self.emit(getattr(op, name)(left, right))
        return True

    def matmul(self) -> bool:
        v = self.pick(lambda v: v.dtype != "int32" and v.rank >= 2 and v.static(v.rank - 1))
        if v is None:
            return False
        k, n = v.shape[-1], self.draw(st.integers(1, 8))
        weight = self.constant((k, n), v.dtype, 1 / math.sqrt(k))
        out = self.emit(op.matmul(v.var, weight))
        if self.draw(st.booleans()):
            self.emit(op.add(out.var, self.constant((n,), v.dtype)))
        return True

    def conv2d(self) -> bool:
        v = self.pick(
            lambda v: v.rank == 4 and v.dtype != "int32" and all(map(v.static, [1, 2, 3]))
        )
        if v is None:
            return False
        layout = self.draw(st.sampled_from(["NCHW", "NHWC"]))
        c_axis, h_axis, w_axis = (1, 2, 3) if layout == "NCHW" else (3, 1, 2)
        channels = v.shape[c_axis]
        kernel = self.draw(st.integers(1, 3))
        dilation = self.draw(st.integers(1, 2))
        stride = self.draw(st.integers(1, 2))
        padding = self.draw(st.integers(0, kernel + 1))  # kernel and above: NNAPI refuses
        groups = self.draw(
            st.sampled_from(sorted({1, channels} | ({2} if channels % 2 == 0 else set())))
        )
        out_channels = groups * self.draw(st.integers(1, 2))
        effective = dilation * (kernel - 1) + 1
        for axis in (h_axis, w_axis):
            if (v.shape[axis] + 2 * padding - effective) // stride + 1 < 1:
                return False
        weight = self.constant(
            (out_channels, channels // groups, kernel, kernel),
            v.dtype,
            1 / math.sqrt(kernel * kernel * channels / groups),
        )
        self.emit(
            op.nn.conv2d(
                v.var,
                weight,
                strides=stride,
                padding=padding,
                dilation=dilation,
                groups=groups,
                data_layout=layout,
            )
        )
        return True

    def pool(self) -> bool:
        v = self.pick(lambda v: v.rank == 4 and v.dtype != "int32" and all(map(v.static, [2, 3])))
        if v is None:
            return False
        size = self.draw(st.integers(1, 3))
        stride = self.draw(st.integers(1, 2))
        padding = self.draw(st.integers(0, size // 2))
        if min(v.shape[2], v.shape[3]) + 2 * padding < size:
            return False
        if self.draw(st.booleans()):
            self.emit(op.nn.max_pool2d(v.var, size, stride, padding))
        else:
            self.emit(op.nn.avg_pool2d(v.var, size, stride, padding, count_include_pad=False))
        return True

    def reduce(self) -> bool:
        v = self.pick(lambda v: v.dtype != "int32" and v.rank >= 2)
        if v is None:
            return False
        axis = self.draw(st.integers(1, v.rank - 1))
        name = self.draw(st.sampled_from(["sum", "mean", "max"]))
        self.emit(getattr(op, name)(v.var, axis=[axis], keepdims=self.draw(st.booleans())))
        return True

    def softmax(self) -> bool:
        v = self.pick(lambda v: v.dtype != "int32" and v.rank >= 1)
        if v is None:
            return False
        self.emit(
            op.nn.softmax(v.var, axis=self.draw(st.integers(1, v.rank - 1)) if v.rank > 1 else 0)
        )
        return True

    def layer_norm(self) -> bool:
        v = self.pick(lambda v: v.dtype == "float32" and v.rank >= 2 and v.static(v.rank - 1))
        if v is None:
            return False
        n = v.shape[-1]
        gamma, beta = self.constant((n,), v.dtype), self.constant((n,), v.dtype)
        self.emit(op.nn.layer_norm(v.var, gamma, beta, axes=[-1]))
        return True

    def reshape(self) -> bool:
        v = self.pick(lambda v: all(isinstance(d, int) for d in v.shape) and v.rank >= 2)
        if v is None:
            return False
        size = math.prod(v.shape)
        target = self.draw(st.sampled_from([(size,), (v.shape[0], size // v.shape[0]), (1, size)]))
        self.emit(op.reshape(v.var, target))
        return True

    def permute(self) -> bool:
        v = self.pick(lambda v: v.rank >= 2)
        assert v is not None
        axes = self.draw(st.permutations(list(range(v.rank))))
        self.emit(op.permute_dims(v.var, axes))
        return True

    def concat(self) -> bool:
        v = self.pick(lambda v: v.rank >= 1)
        assert v is not None
        same = [w for w in self.values if w.shape == v.shape and w.dtype == v.dtype]
        other = self.draw(st.sampled_from(same))
        axis = self.draw(st.integers(1 if "n" in v.shape[:1] else 0, v.rank - 1))
        self.emit(op.concat([v.var, other.var], axis=axis))
        return True

    def strided_slice(self) -> bool:
        v = self.pick(lambda v: any(isinstance(d, int) and d > 1 for d in v.shape))
        if v is None:
            return False
        axes = [a for a in range(v.rank) if isinstance(v.shape[a], int) and v.shape[a] > 1]
        axis = self.draw(st.sampled_from(axes))
        begin = self.draw(st.integers(0, v.shape[axis] - 1))
        end = self.draw(st.integers(begin + 1, v.shape[axis]))
        stride = self.draw(st.integers(1, 2))
        self.emit(op.strided_slice(v.var, axes=[axis], begin=[begin], end=[end], strides=[stride]))
        return True

    def take(self) -> bool:
        v = self.pick(lambda v: v.rank >= 1 and v.static(v.rank - 1))
        assert v is not None
        n = v.shape[-1]
        indices = self.rng.integers(0, n, self.draw(st.integers(1, 4))).astype(
            self.draw(st.sampled_from(["int32", "int64"]))
        )
        self.emit(op.take(v.var, relax.const(indices), axis=v.rank - 1))
        return True

    def where(self) -> bool:
        v = self.pick(lambda v: v.dtype != "int32")
        if v is None:
            return False
        same = [w for w in self.values if w.shape == v.shape and w.dtype == v.dtype]
        other = self.draw(st.sampled_from(same))
        condition = self.emit(op.greater(v.var, relax.const(np.zeros((), v.dtype))), keep=False).var
        self.emit(op.where(condition, v.var, other.var))
        return True

    def half_stretch(self) -> bool:
        v = self.pick(lambda v: v.dtype == "float32")
        if v is None:
            return False
        half = self.emit(op.astype(op.tanh(v.var), "float16"))
        inner = self.emit(op.multiply(half.var, relax.const(np.float16(0.5))))
        self.emit(op.astype(inner.var, "float32"))
        self.half = True
        return True


OPERATORS = [
    "unary", "binary", "matmul", "conv2d", "pool", "reduce", "softmax", "layer_norm",
    "reshape", "permute", "concat", "strided_slice", "take", "where", "half_stretch",
]  # fmt: skip


@st.composite
def programs(draw):
    dtype = draw(st.sampled_from(["float32", "float32", "float32", "int32"]))
    rank = draw(st.integers(2, 4))
    shape = [draw(st.integers(1, 5)) for _ in range(rank)]
    if rank == 4:
        shape[2], shape[3] = draw(st.integers(3, 7)), draw(st.integers(3, 7))
    symbolic = draw(st.booleans()) and draw(st.booleans())
    batch = tirx.Var("n", "int64")
    dims = [batch if symbolic and i == 0 else d for i, d in enumerate(shape)]
    x = relax.Var("x", relax.TensorType(dims, dtype))
    builder = relax.BlockBuilder()
    steps = draw(st.integers(1, 7))
    with builder.function("main", [x]):
        with builder.dataflow():
            program = Program(
                draw,
                builder,
                Value(
                    x, tuple("n" if symbolic and i == 0 else d for i, d in enumerate(shape)), dtype
                ),
                draw(st.integers(0, 2**16)),
            )
            done = 0
            while done < steps:
                name = draw(st.sampled_from(OPERATORS))
                if getattr(program, name)():
                    done += 1
            outputs = program.values[-1:]
            if len(program.values) > 2 and draw(st.booleans()):
                outputs = [program.values[-2], program.values[-1]]
            result = builder.emit_output(
                relax.Tuple([v.var for v in outputs]) if len(outputs) > 1 else outputs[0].var
            )
        builder.emit_func_output(result)
    inputs = np.random.default_rng(0).standard_normal(shape)
    if dtype == "int32":
        inputs = np.random.default_rng(0).integers(-20, 21, shape)
    return builder.get(), inputs.astype(dtype), program.half


def _flatten(value) -> list[np.ndarray]:
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    return [item for part in value for item in _flatten(part)]


@pytest.mark.filterwarnings("ignore::UserWarning")
@BUDGET
@given(case=programs())
def test_a_random_program_gives_the_host_answer_or_stays_on_the_host(case):
    mod, x, half = case
    script = mod.script()
    try:
        report = tvm_nnapi.partition_with_report(mod)
        executable = tvm_nnapi.build(report.module)
        got = _flatten(relax.VirtualMachine(executable, tvm.cpu())["main"](tvm.runtime.tensor(x)))
    except Exception as error:  # the property: no exception at all
        raise AssertionError(f"{type(error).__name__}: {error}\n{script}") from error
    for refusal in report.refusals:
        assert refusal.reason, refusal
        event(f"kept on the host: {refusal.kind.value}")
    event("offloaded" if report.subgraphs else "all on the host")
    host = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    expected = _flatten(host["main"](tvm.runtime.tensor(x)))
    rtol, atol = (1e-2, 1e-2) if half else (1e-4, 1e-4)
    for index, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, (index, a.shape, b.shape, script)
        if np.issubdtype(b.dtype, np.integer):
            np.testing.assert_array_equal(a, b, err_msg=script)
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=script)
