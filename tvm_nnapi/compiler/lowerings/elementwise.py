# SPDX-License-Identifier: Apache-2.0
"""Elementwise operators: arithmetic, comparisons, logic, unary math, activations, casts.

:data:`LOWERINGS` lists this family's records (the exact GELU among them, from an erf
approximation: :func:`convert_gelu`); :data:`REFUSED` is empty.
"""

from __future__ import annotations

import math

import numpy as np
import tvm
import tvm_ffi
from tvm import relax
from tvm.relax.dpl import DFPattern, is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import FUSED_NONE, FUSED_RELU, FUSED_RELU1, FUSED_RELU6, ConvertContext
from ..patterns import (
    FEATURE_LEVEL_1,
    FEATURE_LEVEL_2,
    FEATURE_LEVEL_3,
    FEATURE_LEVEL_4,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    Refused,
    check_tensors,
    dtype_of,
    single_op,
    static_shape,
    tensor_info,
)

FLOAT = {"float32": FEATURE_LEVEL_1, "float16": FEATURE_LEVEL_3}
FLOAT_FL3 = {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3}


def _dtype_check(
    dtypes: dict[str, int], output_dtypes: dict[str, int] | None = None, scalars: bool = False
):
    """Accept the listed input dtypes (and output dtypes, if they differ), rank <= 4; with
    ``scalars``, rank-0 variable inputs too (a broadcasting operator: NNAPI broadcasts the [1]
    tensor the codegen declares for one exactly like the scalar)."""

    def check(call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext) -> CheckResult:
        all_dtypes = {**dtypes, **(output_dtypes or {})}
        result = check_tensors(call, all_dtypes, options, allow_rank0_variables=scalars)
        if result is not None:
            return result
        for arg in call.args:
            if dtype_of(arg) not in dtypes:
                return RefusalKind.DTYPE, f"input dtype {dtype_of(arg)} is not supported"
        return None

    return check


# ---- binary arithmetic ---------------------------------------------------------------------------

_ARITHMETIC = {
    "relax.add": (
        "ADD",
        {"float32": FEATURE_LEVEL_1, "float16": FEATURE_LEVEL_3, "int32": FEATURE_LEVEL_4},
    ),
    "relax.subtract": (
        "SUB",
        {"float32": FEATURE_LEVEL_2, "float16": FEATURE_LEVEL_3, "int32": FEATURE_LEVEL_4},
    ),
    "relax.multiply": (
        "MUL",
        {"float32": FEATURE_LEVEL_1, "float16": FEATURE_LEVEL_3, "int32": FEATURE_LEVEL_4},
    ),
    "relax.divide": ("DIV", {"float32": FEATURE_LEVEL_2, "float16": FEATURE_LEVEL_3}),
}


def convert_arithmetic(ctx: ConvertContext, call: relax.Call) -> int:
    op = _ARITHMETIC[str(call.op.name)][0]
    lhs, rhs = ctx.operand(call.args[0]), ctx.operand(call.args[1])
    return ctx.binary(op, lhs, rhs, call, str(call.op.name))


# ---- other binary operators ----------------------------------------------------------------------

_BINARY = {
    "relax.maximum": ("MAXIMUM", {**FLOAT_FL3, "int32": FEATURE_LEVEL_3}),
    "relax.minimum": ("MINIMUM", {**FLOAT_FL3, "int32": FEATURE_LEVEL_3}),
    "relax.power": ("POW", FLOAT_FL3),
}
_COMPARISONS = {
    "relax.equal": "EQUAL",
    "relax.not_equal": "NOT_EQUAL",
    "relax.greater": "GREATER",
    "relax.greater_equal": "GREATER_EQUAL",
    "relax.less": "LESS",
    "relax.less_equal": "LESS_EQUAL",
}
_COMPARABLE = {**FLOAT_FL3, "int32": FEATURE_LEVEL_3}

_LOGICAL = {"relax.logical_and": "LOGICAL_AND", "relax.logical_or": "LOGICAL_OR"}


def convert_binary(ctx: ConvertContext, call: relax.Call) -> int:
    name = str(call.op.name)
    op = _BINARY[name][0] if name in _BINARY else _COMPARISONS.get(name) or _LOGICAL[name]
    out = ctx.output(call)
    ctx.emit(op, [ctx.operand(call.args[0]), ctx.operand(call.args[1])], [out], name)
    return out


# ---- unary operators -----------------------------------------------------------------------------

_UNARY = {
    "relax.exp": ("EXP", FLOAT_FL3),
    "relax.log": ("LOG", FLOAT_FL3),
    "relax.sqrt": ("SQRT", FLOAT_FL3),
    "relax.rsqrt": ("RSQRT", FLOAT_FL3),
    "relax.sin": ("SIN", FLOAT_FL3),
    "relax.abs": ("ABS", FLOAT_FL3),
    "relax.negative": ("NEG", {**FLOAT_FL3, "int32": FEATURE_LEVEL_3}),
    "relax.floor": ("FLOOR", FLOAT),
    "relax.tanh": ("TANH", FLOAT),
    "relax.sigmoid": ("LOGISTIC", FLOAT),
    "relax.nn.relu": ("RELU", FLOAT),
    "relax.logical_not": ("LOGICAL_NOT", {"bool": FEATURE_LEVEL_3}),
}


def convert_unary(ctx: ConvertContext, call: relax.Call) -> int:
    name = str(call.op.name)
    return ctx.unary(_UNARY[name][0], ctx.operand(call.args[0]), call, name)


# ---- composite activations -----------------------------------------------------------------------


def convert_silu(ctx: ConvertContext, call: relax.Call) -> int:
    """silu(x) = x * sigmoid(x)."""
    x = ctx.operand(call.args[0])
    sigmoid = ctx.unary("LOGISTIC", x, call, "relax.nn.silu")
    return ctx.binary("MUL", x, sigmoid, call, "relax.nn.silu")


def convert_gelu_tanh(ctx: ConvertContext, call: relax.Call) -> int:
    """gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return gelu_tanh_operations(ctx, ctx.operand(call.args[0]), call, "relax.nn.gelu_tanh")


def gelu_tanh_operations(ctx: ConvertContext, x: int, like: relax.Expr, source: str) -> int:
    """The MUL, ADD and TANH operations of gelu_tanh of operand ``x``, shaped like ``like``."""
    call = like
    dtype = ctx.dtype(call)

    def const(value: float) -> int:
        return ctx.constant(np.array([value], dtype=dtype))

    x2 = ctx.binary("MUL", x, x, call, source)
    x3 = ctx.binary("MUL", x2, x, call, source)
    inner = ctx.binary("ADD", x, ctx.binary("MUL", x3, const(0.044715), call, source), call, source)
    scaled = ctx.binary("MUL", inner, const(math.sqrt(2.0 / math.pi)), call, source)
    t = ctx.unary("TANH", scaled, call, source)
    one_plus = ctx.binary("ADD", t, const(1.0), call, source)
    half_x = ctx.binary("MUL", x, const(0.5), call, source)
    return ctx.binary("MUL", half_x, one_plus, call, source)


# Abramowitz & Stegun, Handbook of Mathematical Functions, 7.1.26: for z >= 0,
# erf(z) = 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2), t = 1 / (1 + p z),
# with an absolute error below 1.5e-7.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def convert_gelu(ctx: ConvertContext, call: relax.Call) -> int:
    """The exact GELU, 0.5 x (1 + erf(x / sqrt(2))), from NNAPI elementwise operations.

    x erf(x / sqrt(2)) is even, so gelu(x) = 0.5 (x + |x|) - 0.5 |x| q(z) exp(-z^2) with
    z = |x| / sqrt(2) and q the polynomial of A&S 7.1.26 (erf(z) = 1 - q(z) exp(-z^2)): no sign
    is needed, and the negative side is the small product itself, not a difference of nearly
    equal values. The absolute error is at most 0.5 |x| 1.5e-7 plus float32 rounding.
    """
    return gelu_operations(ctx, ctx.operand(call.args[0]), call, "relax.nn.gelu")


def gelu_operations(ctx: ConvertContext, x: int, like: relax.Expr, source: str) -> int:
    """The operations of :func:`convert_gelu` on operand ``x``, shaped like ``like``."""
    call = like
    dtype = ctx.dtype(call)

    def const(value: float) -> int:
        return ctx.constant(np.array([value], dtype=dtype))

    a = ctx.unary("ABS", x, call, source)
    z = ctx.binary("MUL", a, const(1.0 / math.sqrt(2.0)), call, source)
    denominator = ctx.binary(
        "ADD", ctx.binary("MUL", z, const(_ERF_P), call, source), const(1.0), call, source
    )
    t = ctx.binary("DIV", const(1.0), denominator, call, source)
    poly = ctx.binary("MUL", t, const(_ERF_A[-1]), call, source)
    for coefficient in reversed(_ERF_A[:-1]):
        poly = ctx.binary(
            "MUL", ctx.binary("ADD", poly, const(coefficient), call, source), t, call, source
        )
    gauss = ctx.unary(
        "EXP",
        ctx.binary("MUL", ctx.binary("MUL", z, z, call, source), const(-1.0), call, source),
        call,
        source,
    )
    tail = ctx.binary(
        "MUL",
        ctx.binary("MUL", a, const(0.5), call, source),
        ctx.binary("MUL", poly, gauss, call, source),
        call,
        source,
    )
    half_sum = ctx.binary("MUL", ctx.binary("ADD", x, a, call, source), const(0.5), call, source)
    return ctx.binary("SUB", half_sum, tail, call, source)


# erf's series at 0 (2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1)), n = 0..11) for |x| < 1, and
# the Chebyshev fit of erfc of Numerical Recipes (fractional error below 1.2e-7 for z >= 0) above.
_ERF_SERIES = tuple(
    2.0 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(12)
)
_ERFC_FIT = (
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)
_ERF_SERIES_BOUND = 1.0


def convert_erf(ctx: ConvertContext, call: relax.Call) -> int:
    """erf(x) to float32 accuracy from NNAPI elementwise operations.

    |x| < 1: the series at 0 to x^23 (truncation below 1e-9 there; no cancellation near 0);
    otherwise sign(x) (1 - erfc(|x|)) with erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2),
    P the fit of :data:`_ERFC_FIT` (erfc's fractional error below 1.2e-7, at most 0.16 of erf
    there). SELECT(LESS(|x|, 1)) picks the side per element; the sign is x / max(|x|, 1),
    exactly +-1 where that side is chosen. Measured in float32 against erf in float64: at most
    2.5 ulp over [-8, 8] and magnitudes down to 1e-38 (tests/backend/test_erf.py).
    """
    source = "relax.erf"
    dtype = ctx.dtype(call)
    x = ctx.operand(call.args[0])

    def const(value: float) -> int:
        return ctx.constant(np.array([value], dtype=dtype))

    def mul(a: int, b: int) -> int:
        return ctx.binary("MUL", a, b, call, source)

    def add(a: int, b: int) -> int:
        return ctx.binary("ADD", a, b, call, source)

    a = ctx.unary("ABS", x, call, source)
    square = mul(x, x)
    series = const(_ERF_SERIES[-1])
    for coefficient in reversed(_ERF_SERIES[:-1]):
        series = add(mul(series, square), const(coefficient))
    near_zero = mul(series, x)
    t = ctx.binary("DIV", const(1.0), add(mul(a, const(0.5)), const(1.0)), call, source)
    fit = const(_ERFC_FIT[-1])
    for coefficient in reversed(_ERFC_FIT[:-1]):
        fit = add(mul(fit, t), const(coefficient))
    erfc = mul(t, ctx.unary("EXP", ctx.binary("SUB", fit, square, call, source), call, source))
    bounded = ctx.output(call)
    ctx.emit("MAXIMUM", [a, const(_ERF_SERIES_BOUND)], [bounded], source)
    sign = ctx.binary("DIV", x, bounded, call, source)
    far = mul(sign, ctx.binary("SUB", const(1.0), erfc, call, source))
    small = ctx.tensor("bool", ctx.shape(call))
    ctx.emit("LESS", [a, const(_ERF_SERIES_BOUND)], [small], source)
    out = ctx.output(call)
    ctx.emit("SELECT", [small, near_zero, far], [out], source)
    return out


REFUSED: list[Refused] = []


# ---- clip -> fused activations or MAXIMUM/MINIMUM ------------------------------------------------


def _clip_bounds(call: relax.Call) -> tuple[float, float] | None:
    bounds = []
    for arg in call.args[1:3]:
        value = getattr(arg, "value", None)
        if value is None:
            return None
        bounds.append(float(value.value) if hasattr(value, "value") else float(value))
    return bounds[0], bounds[1]


def _check_clip(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    result = check_tensors(call, FLOAT, options, inputs=[call.args[0]])
    if result is not None:
        return result
    bounds = _clip_bounds(call)
    if bounds is None:
        return RefusalKind.ATTRIBUTE, "clip bounds are not constants"
    if bounds not in ((0.0, 6.0), (-1.0, 1.0)) and options.feature_level < FEATURE_LEVEL_3:
        return RefusalKind.FEATURE_LEVEL, "clip to other bounds needs MAXIMUM/MINIMUM (FL3)"
    return None


_FUSED_CLIPS = {(0.0, 6.0): ("RELU6", FUSED_RELU6), (-1.0, 1.0): ("RELU1", FUSED_RELU1)}


def _clip_lowering(call: relax.Call) -> tuple[str | None, float, float]:
    """The NNAPI activation equal to an accepted clip, with its bounds; None for a clip that
    becomes MAXIMUM then MINIMUM (the bounds clamped to the range of the dtype)."""
    low, high = _clip_bounds(call)  # type: ignore[misc]
    if (low, high) in _FUSED_CLIPS:
        return _FUSED_CLIPS[(low, high)][0], low, high
    finfo = np.finfo(dtype_of(call))
    low, high = max(low, float(finfo.min)), min(high, float(finfo.max))
    if low == 0.0 and high == float(finfo.max):
        return "RELU", low, high
    return None, low, high


def _clip_operations(call: relax.Call) -> tuple[str, ...]:
    activation = _clip_lowering(call)[0]
    return (activation,) if activation is not None else ("MAXIMUM", "MINIMUM")


def convert_clip(ctx: ConvertContext, call: relax.Call) -> int:
    x = ctx.operand(call.args[0])
    activation, low, high = _clip_lowering(call)
    if activation is not None:
        return ctx.unary(activation, x, call, "relax.clip")
    dtype = ctx.dtype(call)
    lower = ctx.output(call)
    ctx.emit("MAXIMUM", [x, ctx.constant(np.array([low], dtype))], [lower], "relax.clip")
    out = ctx.output(call)
    ctx.emit("MINIMUM", [lower, ctx.constant(np.array([high], dtype))], [out], "relax.clip")
    return out


#: The activations a convolution or matmul pattern may end with (activation_code says which of
#: their forms fuse).
ACTIVATIONS = ("relax.nn.relu", "relax.clip")


def activation_pattern(out: DFPattern) -> DFPattern:
    """``out`` followed by one of :data:`ACTIVATIONS`."""
    return is_op("relax.nn.relu")(out) | is_op("relax.clip")(out, wildcard(), wildcard())


def activation_call(calls: dict[str, relax.Call]) -> relax.Call | None:
    """The activation call of a composite (by operator name, see composite_calls)."""
    return next((calls[name] for name in ACTIVATIONS if name in calls), None)


def activation_code(call: relax.Call | None) -> int | None:
    """The NNAPI FuseCode for an activation call that can be fused into the producer, or None."""
    if call is None:
        return FUSED_NONE
    name = str(call.op.name)
    if name == "relax.nn.relu":
        return FUSED_RELU
    if name == "relax.clip":
        bounds = _clip_bounds(call)
        if bounds in _FUSED_CLIPS:
            return _FUSED_CLIPS[bounds][1]
        if bounds is not None and bounds[0] == 0.0 and math.isinf(bounds[1]):
            return FUSED_RELU  # clip(x, 0, inf), torch.export's relu
    return None


# ---- leaky_relu and prelu -> PRELU ---------------------------------------------------------------


def _check_prelu(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    result = check_tensors(call, FLOAT_FL3, options, inputs=list(call.args))
    if result is not None or str(call.op.name) == "relax.nn.leakyrelu":
        return result
    # prelu(x, alpha, axis): alpha has one value per channel of the axis.
    rank = call.ty.ndim
    axis = int(call.attrs.axis)
    axis = axis + rank if axis < 0 else axis
    alpha = tensor_info(call.args[1])
    if alpha is None or alpha.ndim != 1:
        return RefusalKind.ATTRIBUTE, "prelu's alpha must be a vector along its axis"
    return None


def convert_prelu(ctx: ConvertContext, call: relax.Call) -> int:
    """leaky_relu(x, a) = PRELU(x, [a]); prelu(x, alpha, axis) = PRELU(x, alpha shaped to
    broadcast along the axis)."""
    name = str(call.op.name)
    dtype = ctx.dtype(call)
    x = ctx.operand(call.args[0])
    if name == "relax.nn.leakyrelu":
        alpha = ctx.constant(np.array([float(call.attrs.alpha)], dtype=dtype))
    else:
        rank = ctx.rank(call)
        axis = int(call.attrs.axis)
        axis = axis + rank if axis < 0 else axis
        alpha = ctx.operand(call.args[1])
        trailing = rank - axis - 1
        if trailing:
            shape = ctx.shape(call.args[1]) + [1] * trailing
            alpha = ctx.reshape(alpha, dtype, shape, name)
    out = ctx.output(call)
    ctx.emit("PRELU", [x, alpha], [out], name)
    return out


def _prelu_operations(call: relax.Call) -> tuple[str, ...]:
    """PRELU, and a RESHAPE of a prelu's alpha that is not a constant and must broadcast along
    an axis that is not the last."""
    if str(call.op.name) == "relax.nn.prelu":
        rank = call.ty.ndim
        axis = int(call.attrs.axis)
        axis = axis + rank if axis < 0 else axis
        if axis != rank - 1 and not isinstance(call.args[1], tvm.ir.Constant):
            return ("PRELU", "RESHAPE")
    return ("PRELU",)


# ---- casts and select ----------------------------------------------------------------------------

_CASTABLE = {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3, "int32": FEATURE_LEVEL_3}


def _check_astype(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    if dtype_of(call.args[0]) == "bool":
        # NNAPI's CAST takes no bool: SELECT between constants of ones and zeros instead.
        result = check_tensors(call, {"bool": FEATURE_LEVEL_3, **_CASTABLE}, options)
        if result is None and dtype_of(call) == "bool":
            return RefusalKind.DTYPE, "a cast from bool to bool"
        if result is None and static_shape(call) is None:
            return (
                RefusalKind.DYNAMIC_SHAPE,
                "a cast from bool is a SELECT of constants, which need a static shape",
            )
        return result
    return check_tensors(call, _CASTABLE, options)


def _astype_operations(call: relax.Call) -> tuple[str, ...]:
    return ("SELECT",) if dtype_of(call.args[0]) == "bool" else ("CAST",)


def convert_astype(ctx: ConvertContext, call: relax.Call) -> int:
    if dtype_of(call.args[0]) == "bool":
        shape, dtype = static_shape(call), ctx.dtype(call)
        assert shape is not None
        ones = ctx.constant(np.ones(shape, dtype=dtype))
        zeros = ctx.constant(np.zeros(shape, dtype=dtype))
        out = ctx.output(call)
        ctx.emit("SELECT", [ctx.operand(call.args[0]), ones, zeros], [out], "relax.astype")
        return out
    return ctx.unary("CAST", ctx.operand(call.args[0]), call, "relax.astype")


_SELECTABLE = {**FLOAT_FL3, "int32": FEATURE_LEVEL_3, "bool": FEATURE_LEVEL_3}
# Values TILE can broadcast to the result's shape (a constant is materialized instead).
_TILEABLE = {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3, "int32": FEATURE_LEVEL_3}


def _same_shape(a: relax.Expr, b: relax.Expr) -> bool:
    ta, tb = tensor_info(a), tensor_info(b)
    return (
        ta is not None
        and tb is not None
        and ta.shape is not None
        and tb.shape is not None
        and tvm_ffi.structural_equal(ta.shape, tb.shape)
    )


def _broadcast_values(call: relax.Call) -> list[int]:
    """The value operands (1, 2) of a where whose shape is not the result's."""
    return [i for i in (1, 2) if not _same_shape(call.args[i], call)]


def _check_where(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    result = check_tensors(call, _SELECTABLE, options, inputs=[call.args[0]])
    if result is not None:
        return result
    if dtype_of(call.args[0]) != "bool":
        return RefusalKind.DTYPE, "the condition must be a bool tensor"
    if not _same_shape(call.args[0], call):
        return (
            RefusalKind.ATTRIBUTE,
            "NNAPI SELECT does not broadcast; the condition must have the result's shape",
        )
    # A rank-0 constant is broadcast like any other; a rank-0 variable is a subgraph input,
    # which the codegen declares as [1], and is broadcast by a RESHAPE and a TILE.
    values = [call.args[1], call.args[2]]
    result = check_tensors(call, _SELECTABLE, options, inputs=values, allow_rank0_variables=True)
    if result is not None:
        return result
    broadcast = _broadcast_values(call)
    if broadcast and static_shape(call) is None:
        return (
            RefusalKind.DYNAMIC_SHAPE,
            "a value of another shape is broadcast for NNAPI SELECT, which needs the result's "
            "shape at compile time",
        )
    dtype = dtype_of(call)
    for index in broadcast:
        if not isinstance(call.args[index], tvm.ir.Constant) and dtype not in _TILEABLE:
            return RefusalKind.DTYPE, f"TILE cannot broadcast a {dtype} value for SELECT"
    return None


def _where_operations(call: relax.Call) -> tuple[str, ...]:
    """SELECT, after a RESHAPE and a TILE of each variable value of another shape (constants
    are broadcast at compile time)."""
    variables = [
        i for i in _broadcast_values(call) if not isinstance(call.args[i], tvm.ir.Constant)
    ]
    return ("SELECT", "RESHAPE", "TILE") if variables else ("SELECT",)


def convert_where(ctx: ConvertContext, call: relax.Call) -> int:
    """SELECT(condition, a, b), whose three operands must have one shape: a constant value of
    another shape is broadcast at compile time, a variable one by a RESHAPE (to the result's
    rank) and a TILE."""
    source = "relax.where"
    dtype = ctx.dtype(call)
    shape = static_shape(call)
    operands = [ctx.operand(call.args[0])]
    for index in (1, 2):
        value_expr = call.args[index]
        if index not in _broadcast_values(call):
            operands.append(ctx.operand(value_expr))
            continue
        assert shape is not None
        if isinstance(value_expr, tvm.ir.Constant):
            array = np.broadcast_to(value_expr.value.numpy().astype(dtype), shape)
            operands.append(ctx.constant(np.ascontiguousarray(array)))
            continue
        value_shape = [1] * (len(shape) - value_expr.ty.ndim) + [
            int(d) for d in static_shape(value_expr) or []
        ]
        value = ctx.reshape(ctx.operand(value_expr), dtype, value_shape, source)
        multiples = [want // have for want, have in zip(shape, value_shape, strict=True)]
        tiled = ctx.output(call)
        ctx.emit("TILE", [value, ctx.constant(np.array(multiples, np.int32))], [tiled], source)
        operands.append(tiled)
    out = ctx.output(call)
    ctx.emit("SELECT", operands, [out], source)
    return out


LOWERINGS: list[Lowering] = [
    *(
        single_op(op, 2, _dtype_check(dtypes, scalars=True), convert_arithmetic, (nnapi,))
        for op, (nnapi, dtypes) in _ARITHMETIC.items()
    ),
    *(
        single_op(op, 2, _dtype_check(dtypes, scalars=True), convert_binary, (nnapi,))
        for op, (nnapi, dtypes) in _BINARY.items()
    ),
    *(
        single_op(
            op,
            2,
            _dtype_check(_COMPARABLE, {"bool": FEATURE_LEVEL_3}, scalars=True),
            convert_binary,
            (nnapi,),
        )
        for op, nnapi in _COMPARISONS.items()
    ),
    *(
        single_op(
            op, 2, _dtype_check({"bool": FEATURE_LEVEL_3}, scalars=True), convert_binary, (nnapi,)
        )
        for op, nnapi in _LOGICAL.items()
    ),
    *(
        single_op(op, 1, _dtype_check(dtypes), convert_unary, (nnapi,))
        for op, (nnapi, dtypes) in _UNARY.items()
    ),
    single_op("relax.nn.silu", 1, _dtype_check(FLOAT), convert_silu, ("LOGISTIC", "MUL")),
    single_op(
        "relax.nn.gelu_tanh", 1, _dtype_check(FLOAT), convert_gelu_tanh, ("MUL", "ADD", "TANH")
    ),
    single_op(
        "relax.nn.gelu",
        1,
        _dtype_check(FLOAT_FL3),
        convert_gelu,
        ("ABS", "MUL", "ADD", "DIV", "EXP", "SUB"),
    ),
    single_op(
        "relax.erf",
        1,
        _dtype_check(FLOAT_FL3),
        convert_erf,
        ("ABS", "MUL", "ADD", "DIV", "EXP", "SUB", "MAXIMUM", "LESS", "SELECT"),
    ),
    single_op(
        "relax.clip",
        3,
        _check_clip,
        convert_clip,
        ("RELU6", "RELU1", "RELU", "MAXIMUM", "MINIMUM"),
        requires=_clip_operations,
    ),
    single_op("relax.nn.leakyrelu", 1, _check_prelu, convert_prelu, ("PRELU",)),
    single_op(
        "relax.nn.prelu",
        2,
        _check_prelu,
        convert_prelu,
        ("PRELU", "RESHAPE"),
        requires=_prelu_operations,
    ),
    single_op(
        "relax.astype",
        1,
        _check_astype,
        convert_astype,
        ("CAST", "SELECT"),
        requires=_astype_operations,
    ),
    single_op(
        "relax.where",
        3,
        _check_where,
        convert_where,
        ("SELECT", "RESHAPE", "TILE"),
        requires=_where_operations,
    ),
]
