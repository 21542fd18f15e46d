# SPDX-License-Identifier: Apache-2.0
"""What the quantized (QDQ) lowerings share: NNAPI's quant8 rules, the parameters of a
``quantize`` / ``dequantize`` and their checks, the operands of a group, and the checks and the
pattern every group uses.

* the activation dtypes NNAPI quantizes (:data:`ACTIVATION_DTYPES`) and the output quantizations
  it fixes (:data:`FIXED_OUTPUT`) or keeps from the input (:data:`SAME_AS_INPUT`);
* :func:`check_activation_qdq` refuses a quantize / dequantize of an activation NNAPI has no
  operand type for (with the reason); :func:`activation_params` reads an accepted one;
* weights (:class:`Weights`): the checks of a constant weight's dequantize, its NNAPI filter
  operand and the TENSOR_INT32 bias (scale input scale x weight scale);
* :func:`quant_input` gives the quant8 operand a group's ``dequantize`` reads,
  :func:`requantize` moves a result to the model's quantization (DEQUANTIZE + QUANTIZE).

The operator families are in :mod:`.quantized_groups` and :mod:`.quantized_conv_matmul`, the
records in :mod:`.quantized`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax
from tvm.relax.dpl import DFPattern, is_const, is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import ConvertContext, operator_calls
from ..graph_json import QuantDType
from ..patterns import (
    FEATURE_LEVEL_1,
    FEATURE_LEVEL_3,
    FEATURE_LEVEL_4,
    CheckResult,
    PartitionOptions,
    RefusalKind,
)

QUANTIZE = "relax.quantize"
DEQUANTIZE = "relax.dequantize"

#: Activation dtypes of NNAPI's quant8 operations and the feature level that introduced them.
ACTIVATION_DTYPES = {"uint8": FEATURE_LEVEL_1, "int8": FEATURE_LEVEL_4}
_NNAPI_TYPE = {"uint8": "TENSOR_QUANT8_ASYMM", "int8": "TENSOR_QUANT8_ASYMM_SIGNED"}
_RANGE = {"uint8": (0, 255), "int8": (-128, 127)}

#: Quant8 outputs whose scale and zero point NNAPI fixes, per activation dtype (NDK reference).
FIXED_OUTPUT: dict[str, dict[str, tuple[float, int]]] = {
    "LOGISTIC": {"uint8": (1.0 / 256, 0), "int8": (1.0 / 256, -128)},
    "SOFTMAX": {"uint8": (1.0 / 256, 0), "int8": (1.0 / 256, -128)},
    "TANH": {"uint8": (1.0 / 128, 128), "int8": (1.0 / 128, 0)},
}
#: Quant8 operations whose output keeps the input's scale and zero point.
SAME_AS_INPUT = frozenset(
    {
        "RELU",
        "RELU1",
        "RELU6",
        "MAX_POOL_2D",
        "AVERAGE_POOL_2D",
        "MEAN",
        "RESHAPE",
        "TRANSPOSE",
        "RESIZE_BILINEAR",
        "RESIZE_NEAREST_NEIGHBOR",
    }
)
#: Of those, the operations that average: their result is rounded to the input's scale.
AVERAGING = frozenset({"MEAN", "AVERAGE_POOL_2D", "RESIZE_BILINEAR"})
#: QUANTIZE (the requantization of a result and a model's float input) needs feature level 3.
_REQUANTIZE_LEVEL = FEATURE_LEVEL_3


# ---- quantization parameters ---------------------------------------------------------------------


@dataclass(frozen=True)
class QuantParams:
    """Per-tensor quantization of an activation: dtype, scale, zero point."""

    dtype: str
    scale: float
    zero_point: int

    def as_dtype(self) -> QuantDType:
        return QuantDType(self.dtype, self.scale, self.zero_point)

    def same_as(self, other: QuantParams) -> bool:
        return (
            self.dtype == other.dtype
            and self.zero_point == other.zero_point
            and math.isclose(self.scale, other.scale, rel_tol=1e-6)
        )


def _constant(expr: relax.Expr) -> np.ndarray | None:
    return expr.value.numpy() if isinstance(expr, tvm.ir.Constant) else None


def _qdq_dtype(call: relax.Call) -> str:
    """The integer dtype of a quantize (its output) or dequantize (its input)."""
    value = call if str(call.op.name) == QUANTIZE else call.args[0]
    return str(value.ty.dtype)


def check_activation_qdq(call: relax.Call, options: PartitionOptions) -> CheckResult:
    """Whether a quantize / dequantize of an activation has an NNAPI quant8 operand type."""
    dtype = _qdq_dtype(call)
    if dtype in ("int16", "uint16"):
        return RefusalKind.DTYPE, (
            f"{dtype} activations: NNAPI's quantized operations take 8-bit activations only"
        )
    if dtype not in ACTIVATION_DTYPES:
        return RefusalKind.DTYPE, f"{dtype} quantization has no NNAPI quant8 type"
    if ACTIVATION_DTYPES[dtype] > options.feature_level:
        return RefusalKind.FEATURE_LEVEL, (
            f"{_NNAPI_TYPE[dtype]} needs NNAPI feature level {ACTIVATION_DTYPES[dtype]}, "
            f"target has {options.feature_level}"
        )
    scale, zero_point = _constant(call.args[1]), _constant(call.args[2])
    if scale is None or zero_point is None:
        return RefusalKind.ATTRIBUTE, "the scale and zero point must be constants"
    if scale.size != 1 or zero_point.size != 1:
        return RefusalKind.ATTRIBUTE, (
            "activations quantized per channel: NNAPI quantizes activations per tensor"
        )
    if not (np.isfinite(scale).all() and float(scale.reshape(-1)[0]) > 0):
        return RefusalKind.ATTRIBUTE, f"scale {float(scale.reshape(-1)[0])} is not positive"
    low, high = _RANGE[dtype]
    if not low <= int(zero_point.reshape(-1)[0]) <= high:
        return RefusalKind.ATTRIBUTE, f"zero point {int(zero_point.reshape(-1)[0])} out of range"
    return None


def activation_params(call: relax.Call) -> QuantParams:
    """The parameters of an accepted activation quantize / dequantize."""
    scale = float(_constant(call.args[1]).reshape(-1)[0])  # type: ignore[union-attr]
    zero_point = int(_constant(call.args[2]).reshape(-1)[0])  # type: ignore[union-attr]
    return QuantParams(_qdq_dtype(call), scale, zero_point)


# ---- weights -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Weights:
    """A dequantized weight: int8/uint8 values (None for a weight given at run time, see
    :func:`_check_weights`), scales (1 or per channel), zero points."""

    values: np.ndarray
    scales: np.ndarray
    zero_points: np.ndarray
    axis: int

    @property
    def per_channel(self) -> bool:
        return self.scales.size > 1


def _weights(dq: relax.Call) -> Weights:
    values = _constant(dq.args[0])
    scales = np.asarray(_constant(dq.args[1]), dtype=np.float64).reshape(-1)
    zero_points = np.asarray(_constant(dq.args[2])).reshape(-1).astype(np.int32)
    axis = int(dq.attrs.axis)
    rank = dq.args[0].ty.ndim
    return Weights(values, scales, zero_points, axis + rank if axis < 0 else axis)  # type: ignore[arg-type]


def is_weight_dequantize(call: relax.Call) -> bool:
    """A dequantize of a weight: of a constant, or with per-channel scales (activations are
    quantized per tensor, so such a dequantize reads a weight given at run time)."""
    if isinstance(call.args[0], tvm.ir.Constant):
        return True
    scale = _constant(call.args[1])
    return scale is not None and scale.size > 1


def _check_weights(
    dq: relax.Call, channel_axis: int, options: PartitionOptions, runtime_ok: bool = False
) -> CheckResult:
    """A weight dequantize NNAPI can take: constant 8-bit values, per tensor or symmetric per
    channel along ``channel_axis`` (the output channels). With ``runtime_ok`` the values may be
    given at run time (a subgraph input, e.g. weights passed at every call; the caller admits
    only per-channel ones): the scales, part of NNAPI's operand type, stay constants."""
    if _constant(dq.args[0]) is None and not runtime_ok:
        return RefusalKind.ATTRIBUTE, "the quantized weights must be a constant"
    if _constant(dq.args[1]) is None or _constant(dq.args[2]) is None:
        return RefusalKind.ATTRIBUTE, "the weight scale and zero point must be constants"
    dtype = str(dq.args[0].ty.dtype)
    if dtype not in ("int8", "uint8"):
        return RefusalKind.DTYPE, f"{dtype} weights: NNAPI's quantized weights are 8-bit"
    weights = _weights(dq)
    if not (np.isfinite(weights.scales).all() and (weights.scales > 0).all()):
        return RefusalKind.ATTRIBUTE, "a weight scale is not positive"
    if weights.per_channel:
        if weights.axis != channel_axis:
            return RefusalKind.ATTRIBUTE, (
                f"weights quantized per channel along axis {weights.axis}: NNAPI quantizes "
                f"per output channel (axis {channel_axis})"
            )
        if dtype != "int8" or (weights.zero_points != 0).any():
            return RefusalKind.ATTRIBUTE, (
                "asymmetric per-channel weights: NNAPI's TENSOR_QUANT8_SYMM_PER_CHANNEL is int8 "
                "with zero point 0"
            )
        if options.feature_level < FEATURE_LEVEL_3:
            return RefusalKind.FEATURE_LEVEL, "per-channel weights need feature level 3"
    elif dtype == "int8" and not -128 <= int(weights.zero_points[0]) + 128 <= 255:
        return RefusalKind.ATTRIBUTE, "the weight zero point is out of range"
    return None


def _weight_operand(
    ctx: ConvertContext, weights: Weights, values: np.ndarray, channel_dim: int, act: str
) -> tuple[int, np.ndarray]:
    """The NNAPI filter operand of (rearranged) weight ``values`` for ``act`` activations, and
    the weight scale of each output channel."""
    if weights.per_channel:
        operand = ctx.constant(values.astype(np.int8))
        ctx.builder.quantize_operand(
            operand,
            0.0,
            0,
            type="TENSOR_QUANT8_SYMM_PER_CHANNEL",
            channel_quant=(channel_dim, weights.scales.tolist()),
        )
        return operand, weights.scales
    zero_point = int(weights.zero_points[0])
    stored = values.astype(np.int32)
    if str(values.dtype) != act:
        # The filter has the input's type: shift between int8 and uint8 (exact).
        shift = 128 if act == "uint8" else -128
        stored, zero_point = stored + shift, zero_point + shift
    operand = ctx.constant(stored.astype(act))
    ctx.builder.quantize_operand(operand, float(weights.scales[0]), zero_point)
    return operand, np.full(values.shape[channel_dim], weights.scales[0])


def _bias_operand(
    ctx: ConvertContext, bias: relax.Expr | None, channels: int, input_scale: float, scales
) -> int:
    """The TENSOR_INT32 bias (scale input scale x weight scale, zero point 0)."""
    expected = input_scale * np.asarray(scales, dtype=np.float64)
    if bias is None:
        values = np.zeros(channels, dtype=np.int32)
    else:
        real = _bias_real(bias).reshape(-1).astype(np.float64)
        values = np.round(real / expected)
        values = np.clip(values, -(2**31), 2**31 - 1).astype(np.int32)
    operand = ctx.constant(values)
    per_channel = not np.allclose(expected, expected[0], rtol=1e-7, atol=0)
    ctx.builder.quantize_operand(operand, 0.0 if per_channel else float(expected[0]), 0)
    return operand


def _bias_real(bias: relax.Expr) -> np.ndarray:
    """The real values of a bias: a float constant, or a dequantize of an int32 constant."""
    if isinstance(bias, tvm.ir.Constant):
        return np.asarray(bias.value.numpy(), dtype=np.float64)
    values = np.asarray(_constant(bias.args[0]), dtype=np.float64)
    scale = np.asarray(_constant(bias.args[1]), dtype=np.float64)
    zero_point = np.asarray(_constant(bias.args[2]), dtype=np.float64)
    return (values - zero_point) * scale


# ---- operands of a group ------------------------------------------------------------------------


def quant_input(ctx: ConvertContext, dq: relax.Call) -> int:
    """The quant8 operand a group's ``dequantize`` reads, with the dequantize's parameters."""
    params = activation_params(dq)
    x = dq.args[0]
    if isinstance(x, tvm.ir.Constant):
        operand = ctx.constant(x.value.numpy())
        ctx.builder.quantize_operand(operand, params.scale, params.zero_point)
        return operand
    operand = ctx.operand(x)
    entry = ctx.builder.operands[operand]
    if entry.type != _NNAPI_TYPE[params.dtype]:
        raise ctx.fail(x, f"is {entry.type}, its dequantize reads {params.dtype}")
    if entry.scale == 0:  # a subgraph input: its quantization is its reader's
        ctx.builder.quantize_operand(operand, params.scale, params.zero_point)
    elif not params.same_as(QuantParams(params.dtype, entry.scale, entry.zero_point)):
        raise ctx.fail(
            x,
            f"is quantized with scale {entry.scale}, zero point {entry.zero_point} but read "
            f"with scale {params.scale}, zero point {params.zero_point}",
        )
    return operand


def requantize(
    ctx: ConvertContext, operand: int, like: relax.Expr, to: QuantParams, source: str
) -> int:
    """``operand`` with the quantization ``to`` (DEQUANTIZE + QUANTIZE), or itself."""
    entry = ctx.builder.operands[operand]
    if to.same_as(QuantParams(to.dtype, entry.scale, entry.zero_point)):
        return operand
    shape_ = ctx.shape(like)
    real = ctx.tensor("float32", shape_)
    ctx.emit("DEQUANTIZE", [operand], [real], source)
    out = ctx.tensor(to.as_dtype(), shape_)
    ctx.emit("QUANTIZE", [real], [out], source)
    return out


def _bound_calls(composite: relax.Function) -> dict[relax.Var, relax.Call]:
    return {
        binding.var: binding.value
        for block in composite.body.blocks
        for binding in block.bindings
        if isinstance(binding.value, relax.Call)
    }


def _output_quantize(composite: relax.Function) -> relax.Call:
    calls = operator_calls(composite)
    if not calls or str(calls[-1].op.name) != QUANTIZE:
        raise ValueError("a quantized group ends with its quantize")
    return calls[-1]


def _bind_dequantized(ctx: ConvertContext, composite: relax.Function) -> None:
    """Bind the variables of the group's activation dequantizes to their quant8 operands."""
    bound = _bound_calls(composite)
    for var, call in bound.items():
        if str(call.op.name) == DEQUANTIZE:
            # (a dequantized constant, e.g. an added one, becomes a quant8 constant)
            ctx.values[var] = quant_input(ctx, call)
            ctx.dtype_overrides[var] = activation_params(call).as_dtype()


# ---- checks and the input pattern shared by the groups -------------------------------------------


def _used_once(context: PatternCheckContext, exprs: list[relax.Expr]) -> CheckResult:
    for expr in exprs:
        var = context.value_to_bound_var.get(expr)
        if var is not None and len(context.var_usages.get(var, [])) > 1:
            return RefusalKind.ATTRIBUTE, (
                f"{var.name} inside the quantized group is also used outside it"
            )
    return None


def _check_group_qdq(
    context: PatternCheckContext, options: PartitionOptions, names: list[str]
) -> CheckResult:
    annotated = context.annotated_expr
    for name in names:
        result = check_activation_qdq(annotated[name], options)
        if result is not None:
            return result
    dtypes = {_qdq_dtype(annotated[name]) for name in names}
    if len(dtypes) > 1:
        return RefusalKind.DTYPE, "the group mixes uint8 and int8 activations"
    return None


def _dq_pattern() -> DFPattern:
    """The ``dequantize`` of a group's activation input (constant scale and zero point)."""
    return is_op(DEQUANTIZE)(wildcard(), is_const(), is_const())
