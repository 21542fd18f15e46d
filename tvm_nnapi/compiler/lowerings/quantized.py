# SPDX-License-Identifier: Apache-2.0
"""Quantized (QDQ) Relax -> NNAPI quant8 operations.

TVM's ONNX frontend turns QuantizeLinear / DequantizeLinear into ``relax.quantize`` /
``relax.dequantize``, so a quantized network is a float network whose operators read
dequantized values and whose results are quantized again. Each ``dequantize -> op -> quantize``
group becomes one NNAPI operation on quant8 operands:

* activations: ``TENSOR_QUANT8_ASYMM`` (uint8) or ``TENSOR_QUANT8_ASYMM_SIGNED`` (int8, FL4),
  quantized per tensor, with the scale and zero point of the group's ``quantize``;
* convolution and fully-connected weights: per-tensor quant8 of the input's type, or
  ``TENSOR_QUANT8_SYMM_PER_CHANNEL`` (FL3) for per-channel int8 weights (a per-channel matmul
  weight becomes a 1x1 CONV_2D, since FULLY_CONNECTED has no per-channel weights);
* bias: ``TENSOR_INT32``, zero point 0, scale input scale x weight scale (requantized at compile
  time when the model's bias scale differs);
* a relu / relu6 / relu1 between the operator and its ``quantize`` is the fused activation;
* a matmul of two quantized activations (attention's q @ k^T, scores @ v) is BATCH_MATMUL
  (feature level 6), whose quant8 form takes int8 activations only (TENSOR_QUANT8_ASYMM_SIGNED).

NNAPI fixes some output quantizations (:data:`FIXED_OUTPUT`) and keeps the input's for others
(:data:`SAME_AS_INPUT`). When the model's ``quantize`` asks for other parameters, the result is
requantized with DEQUANTIZE + QUANTIZE. A ``quantize`` of a float value and a ``dequantize`` of
a quantized one outside such groups become NNAPI QUANTIZE / DEQUANTIZE, so the model's float
inputs and outputs are converted inside the subgraph and a whole quantized network is one
subgraph with float inputs and outputs.

What NNAPI cannot express is refused with a reason naming it: activations quantized per channel,
16-bit activations, asymmetric per-channel weights, per-channel weights along another axis than
the output channels, non-positive scales, and the FL1/FL2 rule that a convolution's output scale
must exceed input scale x weight scale. docs/quantization.md describes all of it.

The family spans four modules; its records are listed here, in the order they are tried
(:data:`LOWERINGS`, then :data:`BOUNDARIES`):

* :mod:`.qdq`: what they share (the quant8 rules, the parameters and checks of a quantize /
  dequantize, weight and bias operands, the operands of a group);
* :mod:`.quantized_conv_matmul`: convolutions and matmuls with constant quantized weights, and
  BATCH_MATMUL of two quantized activations;
* :mod:`.quantized_groups`: the single-operator groups and hardswish, computed by the float
  lowerings' converters on quant8 operands;
* here: the model boundaries (QUANTIZE of a float input, DEQUANTIZE of a quantized output).

Before partitioning, :func:`tvm_nnapi.compiler.prepare.dedicate_dequantize` gives each reader of
a dequantized value its own ``dequantize``, so that each group owns its input's dequantize.
"""

from __future__ import annotations

import tvm
from tvm import relax
from tvm.relax.dpl import DFPattern, is_const, is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import ConvertContext, operator_calls
from ..patterns import (
    FEATURE_LEVEL_1,
    FEATURE_LEVEL_3,
    FEATURE_LEVEL_4,
    CheckResult,
    Lowering,
    PartitionOptions,
    RefusalKind,
    check_tensors,
)
from .qdq import (
    ACTIVATION_DTYPES,
    DEQUANTIZE,
    QUANTIZE,
    _qdq_dtype,
    activation_params,
    check_activation_qdq,
    quant_input,
)
from .quantized_conv_matmul import ACTIVATION_MATMUL, CONV, MATMUL
from .quantized_groups import HARDSWISH, SINGLE

# ---- model boundaries: quantize of a float value, dequantize of a quantized one ------------------


def _check_quantize(
    call: relax.Call, options: PartitionOptions, context: PatternCheckContext
) -> CheckResult:
    result = check_activation_qdq(call, options)
    if result is not None:
        return result
    if str(call.args[0].ty.dtype) not in ("float32", "float16"):
        return RefusalKind.DTYPE, "QUANTIZE takes a float input"
    dtypes = {"float32": FEATURE_LEVEL_3, "float16": FEATURE_LEVEL_3, **ACTIVATION_DTYPES}
    return check_tensors(call, dtypes, options, inputs=[call.args[0]])


def convert_quantize(ctx: ConvertContext, call: relax.Call) -> int:
    out = ctx.tensor(activation_params(call).as_dtype(), ctx.shape(call))
    ctx.emit("QUANTIZE", [ctx.operand(call.args[0])], [out], QUANTIZE)
    return out


def _check_dequantize(
    call: relax.Call, options: PartitionOptions, context: PatternCheckContext
) -> CheckResult:
    if isinstance(call.args[0], tvm.ir.Constant):
        return RefusalKind.ATTRIBUTE, (
            "a dequantized constant outside a quantized group (its reader is not quantized)"
        )
    result = check_activation_qdq(call, options)
    if result is not None:
        return result
    if str(call.ty.dtype) != "float32" and options.feature_level < FEATURE_LEVEL_3:
        return RefusalKind.FEATURE_LEVEL, "DEQUANTIZE to float16 needs feature level 3"
    if _qdq_dtype(call) == "int8" and options.feature_level < FEATURE_LEVEL_4:
        return RefusalKind.FEATURE_LEVEL, "DEQUANTIZE of int8 needs feature level 4"
    return check_tensors(
        call, {"float32": FEATURE_LEVEL_1, "float16": FEATURE_LEVEL_3, **ACTIVATION_DTYPES}, options
    )


def convert_dequantize(ctx: ConvertContext, call: relax.Call) -> int:
    data = quant_input(ctx, call)
    out = ctx.output(call)
    ctx.emit("DEQUANTIZE", [data], [out], DEQUANTIZE)
    return out


# ---- the records ---------------------------------------------------------------------------------

#: Groups of several operators (conv2d / matmul with bias and activation), each form before the
#: smaller ones it contains, then the single-operator groups, then the model boundaries.
LOWERINGS: list[Lowering] = [
    *CONV,
    *MATMUL,
    *ACTIVATION_MATMUL,
    *HARDSWISH,
    *SINGLE,
]
BOUNDARIES: list[Lowering] = [
    Lowering(
        name="nnapi.quantize",
        relax_op=QUANTIZE,
        pattern=lambda: _single(QUANTIZE),
        check=_check_quantize,
        convert=lambda ctx, f: convert_quantize(ctx, operator_calls(f)[0]),
        emits=("QUANTIZE",),
    ),
    Lowering(
        name="nnapi.dequantize",
        relax_op=DEQUANTIZE,
        pattern=lambda: _single(DEQUANTIZE),
        check=_check_dequantize,
        convert=lambda ctx, f: convert_dequantize(ctx, operator_calls(f)[0]),
        emits=("DEQUANTIZE",),
    ),
]


def _single(op: str) -> tuple[DFPattern, dict[str, DFPattern]]:
    x = wildcard()
    call = is_op(op)(x, is_const(), is_const())
    return call, {"root": call, "arg0": x}
