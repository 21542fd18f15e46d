# SPDX-License-Identifier: Apache-2.0
"""GELU written out as elementwise operators, recognised and lowered as the GELU operators are.

Exporters that have no GELU operator write it out: torch's ONNX export of ``nn.GELU`` as
``(x * (erf(x / sqrt(2)) + 1)) * 0.5``, Hugging Face and Keras code as
``x * 0.5 * (1 + erf(x / sqrt(2)))`` or with ``x * 0.7071...``, JAX as
``x * (erf(x / sqrt(2)) + 1) / 2``; the tanh approximation as
``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` with ``x^3`` a power or two
multiplies. NNAPI has no GELU operation at any feature level, and the operators one by one
lower erf to its float32-accurate form, far more operations than the GELU lowering (relax.erf
and relax.nn.gelu in :mod:`.elementwise`), so each chain becomes the operations of the GELU
operator it computes:

  erf form  -> :func:`~.elementwise.gelu_operations` (ABS, MUL, ADD, DIV, EXP, SUB; FL3)
  tanh form -> :func:`~.elementwise.gelu_tanh_operations` (MUL, ADD, TANH)

Only true GELUs match: every constant is a one-element tensor whose value is the GELU constant
within a few units of its dtype's precision, and the result has the shape of x. A chain that is
not a GELU (another constant) is declined without a refusal: its operators are lowered one by
one, and their own checks report what stays on the host. The pattern matches ``add`` and
``multiply`` either way round (the matcher tries both argument orders), and the 1/2 either
as a multiply by 0.5, before or after the product with x, or as a divide by 2.
"""

from __future__ import annotations

import math

import numpy as np
import tvm_ffi
from tvm import relax
from tvm.relax.dpl import DFPattern, is_const, is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import ConvertContext, operator_calls
from ..ir_utils import scalar_value
from ..patterns import (
    DECLINED,
    CheckResult,
    Lowering,
    PartitionOptions,
    check_tensors,
    dtype_of,
)
from .elementwise import FLOAT, FLOAT_FL3, gelu_operations, gelu_tanh_operations

# The constants of each form: annotation -> value. "scale" is 1/sqrt(2) or sqrt(2/pi) as a
# multiply, sqrt(2) for the erf form's divide; "half" is 0.5, or 2 for a divide.
_ERF = {"one": 1.0, "scale": 1.0 / math.sqrt(2.0)}
_TANH = {"one": 1.0, "scale": math.sqrt(2.0 / math.pi), "kappa": 0.044715}
# How many units of the constant's dtype precision (relative) a constant may be off: the GELU
# constant rounded to the dtype, or computed in it (1 / sqrt(2) in float32), is within this.
_ULPS = 4


def _erf_argument(x: DFPattern, scale: DFPattern, annotations: dict) -> DFPattern:
    scaled = is_op("relax.divide")(x, scale) | is_op("relax.multiply")(x, scale)
    annotations["scaled"] = scaled
    return is_op("relax.erf")(scaled)


def _tanh_argument(x: DFPattern, scale: DFPattern, annotations: dict) -> DFPattern:
    kappa, three = is_const(), is_const()
    cube = is_op("relax.power")(x, three) | is_op("relax.multiply")(
        is_op("relax.multiply")(x, x), x
    )
    inner = is_op("relax.add")(x, is_op("relax.multiply")(cube, kappa))
    annotations.update(kappa=kappa, three=three, cube=cube)
    return is_op("relax.tanh")(is_op("relax.multiply")(inner, scale))


def _make_pattern(function: str, halved: bool):
    def make():
        x, scale, one, half = wildcard(), is_const(), is_const(), is_const()
        annotations: dict[str, DFPattern] = {"x": x, "scale": scale, "one": one, "half": half}
        if function == "erf":
            argument = _erf_argument(x, scale, annotations)
        else:
            argument = _tanh_argument(x, scale, annotations)
        shifted = is_op("relax.add")(argument, one)
        if halved:
            root = is_op("relax.divide")(is_op("relax.multiply")(x, shifted), half)
        else:
            multiply = is_op("relax.multiply")
            root = (
                multiply(multiply(x, shifted), half)
                | multiply(multiply(x, half), shifted)
                | multiply(x, multiply(shifted, half))
            )
        annotations["root"] = root
        return root, annotations

    return make


def _is(expr: relax.Expr, want: float) -> bool:
    """Whether ``expr`` is a one-element constant equal to ``want`` within :data:`_ULPS` of its
    dtype's precision."""
    value = scalar_value(expr)
    if value is None:
        return False
    dtype = dtype_of(expr)
    eps = float(np.finfo(dtype).eps) if dtype in ("float16", "float32", "float64") else 0.0
    return math.isclose(value, want, rel_tol=_ULPS * eps, abs_tol=0.0)


def _make_check(function: str, halved: bool):
    dtypes = FLOAT_FL3 if function == "erf" else FLOAT
    constants = dict(_ERF if function == "erf" else _TANH)
    constants["half"] = 2.0 if halved else 0.5

    def check(call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext) -> CheckResult:
        annotated = ctx.annotated_expr
        x = annotated["x"]
        # Whatever this record cannot take, its operators are lowered (or refused) one by one.
        if check_tensors(call, dtypes, options, inputs=[x]) is not None:
            return DECLINED
        if not tvm_ffi.structural_equal(x.ty, call.ty):
            return DECLINED  # the constants broadcast x to another shape
        wanted = dict(constants)
        if function == "erf" and str(annotated["scaled"].op.name) == "relax.divide":
            wanted["scale"] = math.sqrt(2.0)
        cube = annotated.get("cube")
        if cube is not None and str(cube.op.name) == "relax.power":
            wanted["three"] = 3.0
        if not all(_is(annotated[name], value) for name, value in wanted.items()):
            return DECLINED
        return None

    return check


def _x(ctx: ConvertContext, composite: relax.Function) -> int:
    """The operand of x, the composite's one parameter (its constants are bound inside)."""
    if len(composite.params) != 1:
        raise ctx.fail(composite.body.body, "a GELU chain must read one value, x")
    return ctx.operand(composite.params[0])


def _root(composite: relax.Function) -> relax.Call:
    """The last call of the chain (its result)."""
    return operator_calls(composite)[-1]


def convert_gelu_erf(ctx: ConvertContext, composite: relax.Function) -> int:
    return gelu_operations(ctx, _x(ctx, composite), _root(composite), "gelu")


def convert_gelu_tanh(ctx: ConvertContext, composite: relax.Function) -> int:
    return gelu_tanh_operations(ctx, _x(ctx, composite), _root(composite), "gelu_tanh")


_EMITS = {
    "erf": ("ABS", "MUL", "ADD", "DIV", "EXP", "SUB"),
    "tanh": ("MUL", "ADD", "TANH"),
}


def _lowering(function: str, halved: bool) -> Lowering:
    return Lowering(
        name=f"nnapi.gelu_{function}_chain" + ("_halved" if halved else ""),
        # The root (last) operator: the product with 0.5, or the divide by 2.
        relax_op="relax.divide" if halved else "relax.multiply",
        pattern=_make_pattern(function, halved),
        check=_make_check(function, halved),
        convert=convert_gelu_erf if function == "erf" else convert_gelu_tanh,
        emits=_EMITS[function],
    )


LOWERINGS: list[Lowering] = [
    _lowering(function, halved) for function in ("erf", "tanh") for halved in (False, True)
]
