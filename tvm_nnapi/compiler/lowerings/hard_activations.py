# SPDX-License-Identifier: Apache-2.0
"""hardswish and hardsigmoid, recognised in the elementwise chains TVM's PyTorch frontend emits.

Relax has no hardswish / hardsigmoid operator: the frontend writes ``relu6(x + 3) / 6`` with
the relu6 either as ``clip(v, 0, 6)`` or, after torch.export's decompositions, as
``clip(clip(v, 0, inf), -inf, 6)``; the scaling by 1/6 is a divide by 6 (or a multiply by 1/6).

  hardsigmoid(x) = relu6(x + 3) / 6         -> ADD(x, 3, fused RELU6), DIV(., 6) (or MUL 1/6)
  hardswish(x)   = x * hardsigmoid(x)        -> HARD_SWISH (feature level 4)
                 = (x * relu6(x + 3)) / 6    (the decomposed form)

Below feature level 4 hardswish is refused and its parts are offloaded one by one (the inner
hardsigmoid by the pattern above). Each chain is fused only when no intermediate value is used
outside it.
"""

from __future__ import annotations

import math

import numpy as np
import tvm
import tvm_ffi
from tvm import relax
from tvm.relax.backend.utils import has_leaking_intermediate_variables
from tvm.relax.dpl import is_const, is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import FUSED_RELU6, ConvertContext, operator_calls
from ..ir_utils import scalar_value
from ..patterns import (
    FEATURE_LEVEL_2,
    FEATURE_LEVEL_3,
    FEATURE_LEVEL_4,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    check_tensors,
)
from .elementwise import _clip_bounds

# ADD (FL1) with DIV (FL2) for float32; float16 arithmetic needs FL3.
_HARDSIGMOID_DTYPES = {"float32": FEATURE_LEVEL_2, "float16": FEATURE_LEVEL_3}
_HARDSWISH_DTYPES = {"float32": FEATURE_LEVEL_4, "float16": FEATURE_LEVEL_4}

# (kind, clips, scale op): kind is where the 1/6 scaling sits (see the module docstring).
# In the order they are tried: hardswish before the hardsigmoid it contains.
_KINDS = ("hardswish", "hardswish_scaled_last", "hardsigmoid")
_SCALES = {"relax.divide": 6.0, "relax.multiply": 1.0 / 6.0}


def _make_pattern(kind: str, clips: int, scale_op: str):
    def make():
        x, three, six = wildcard(), is_const(), is_const()
        add = is_op("relax.add")(x, three)
        clip = is_op("relax.clip")(add, wildcard(), wildcard())
        annotations = {"x": x, "three": three, "six": six, "add": add, "clip": clip}
        if clips == 2:
            annotations["inner_clip"] = clip
            clip = is_op("relax.clip")(clip, wildcard(), wildcard())
            annotations["clip"] = clip
        if kind == "hardswish_scaled_last":
            product = is_op("relax.multiply")(x, clip)
            root = is_op(scale_op)(product, six)
        else:
            root = is_op(scale_op)(clip, six)
            if kind == "hardswish":
                root = is_op("relax.multiply")(x, root)
        annotations["root"] = root
        return root, annotations

    return make


def _relu6_bounds(annotated: dict) -> tuple[float, float] | None:
    """The interval of the clip, or of the two nested clips, when it is a single interval."""
    outer = _clip_bounds(annotated["clip"])
    if "inner_clip" not in annotated or outer is None:
        return outer
    inner = _clip_bounds(annotated["inner_clip"])
    if inner is None or inner[0] > outer[1] or outer[0] > inner[1]:
        return None  # disjoint intervals: the result is a constant, not a clip
    return max(inner[0], outer[0]), min(inner[1], outer[1])


def _make_check(kind: str, scale_op: str):
    dtypes = _HARDSIGMOID_DTYPES if kind == "hardsigmoid" else _HARDSWISH_DTYPES
    name = "hardsigmoid" if kind == "hardsigmoid" else "hardswish"

    def check(call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext) -> CheckResult:
        annotated = ctx.annotated_expr
        x = annotated["x"]
        result = check_tensors(call, dtypes, options, inputs=[x])
        if result is not None:
            if result[0] == RefusalKind.FEATURE_LEVEL:
                return result[0], f"{name}: {result[1]}"
            return result
        if not tvm_ffi.structural_equal(x.ty, call.ty):
            return RefusalKind.ATTRIBUTE, f"{name}: the constants broadcast x to another shape"
        if scalar_value(annotated["three"]) != 3.0:
            return RefusalKind.ATTRIBUTE, f"{name}: the offset added to x is not 3"
        six = scalar_value(annotated["six"])
        if six is None or not math.isclose(six, _SCALES[scale_op], rel_tol=1e-6):
            return RefusalKind.ATTRIBUTE, f"{name}: the scale is not 1/6"
        if _relu6_bounds(annotated) != (0.0, 6.0):
            return RefusalKind.ATTRIBUTE, f"{name}: the clip is not relu6 (0, 6)"
        if has_leaking_intermediate_variables(ctx):
            return RefusalKind.ATTRIBUTE, f"{name}: an intermediate value is used outside the chain"
        return None

    return check


def _chain(composite: relax.Function) -> tuple[relax.Call, relax.Call]:
    """The ``x + 3`` call and the result call of a hard-activation composite."""
    calls = operator_calls(composite)
    add = next(call for call in calls if str(call.op.name) == "relax.add")
    return add, calls[-1]


def _x_and_three(add: relax.Call) -> tuple[relax.Expr, relax.Expr]:
    # The add pattern matches commutatively: x + 3 or 3 + x.
    if isinstance(add.args[1], tvm.ir.Constant):
        return add.args[0], add.args[1]
    return add.args[1], add.args[0]


def convert_hardsigmoid(ctx: ConvertContext, composite: relax.Function) -> int:
    source = "hardsigmoid"
    add, root = _chain(composite)
    x, three = _x_and_three(add)
    shifted = ctx.output(add)
    ctx.emit("ADD", [ctx.operand(x), ctx.operand(three), ctx.int32(FUSED_RELU6)], [shifted], source)
    scale = next(arg for arg in root.args if isinstance(arg, tvm.ir.Constant))
    op = "DIV" if str(root.op.name) == "relax.divide" else "MUL"
    value = np.asarray(scale.value.numpy(), dtype=ctx.dtype(root)).reshape(1)
    return ctx.binary(op, shifted, ctx.constant(value), root, source)


def convert_hardswish(ctx: ConvertContext, composite: relax.Function) -> int:
    add, root = _chain(composite)
    x, _ = _x_and_three(add)
    return ctx.unary("HARD_SWISH", ctx.operand(x), root, "hardswish")


def _lowering(kind: str, clips: int, scale_op: str) -> Lowering:
    suffix = ("_clip2" if clips == 2 else "") + ("_mul" if scale_op == "relax.multiply" else "")
    hardsigmoid = kind == "hardsigmoid"
    return Lowering(
        name=f"nnapi.{kind}{suffix}",
        # The root (last) operator, under which a refusal is reported.
        relax_op="relax.multiply" if kind == "hardswish" else scale_op,
        pattern=_make_pattern(kind, clips, scale_op),
        check=_make_check(kind, scale_op),
        convert=convert_hardsigmoid if hardsigmoid else convert_hardswish,
        emits=("ADD", "DIV" if scale_op == "relax.divide" else "MUL")
        if hardsigmoid
        else ("HARD_SWISH",),
    )


LOWERINGS: list[Lowering] = [
    _lowering(kind, clips, scale_op) for kind in _KINDS for clips in (1, 2) for scale_op in _SCALES
]
