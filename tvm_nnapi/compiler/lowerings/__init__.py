# SPDX-License-Identifier: Apache-2.0
"""The Relax-to-NNAPI lowerings: one :class:`~tvm_nnapi.compiler.patterns.Lowering` record per
pattern (its pattern, check, converter and the NNAPI operations it emits), written in one module
per operator family and collected here in :data:`LOWERINGS`, the one list that partitioning and
the codegen read.

The list is in the order ``FuseOpsByPattern`` tries the patterns (where two match the same
operator, the first wins): the patterns of several operators first, each before the smaller
ones it contains (a hardswish chain before the hardsigmoid in it, conv2d + bias + relu before
conv2d + bias), then the single operators, the constant-statistics batch_norm (folded at compile
time) before its run-time form.

The family modules import only the infrastructure (:mod:`..patterns`, :mod:`..converters`),
which never imports this package; nothing registers anything at import.
"""

from __future__ import annotations

from tvm import relax
from tvm.relax.transform import FusionPattern

from ..patterns import Lowering, PartitionOptions, Refused, fusion_patterns
from . import (
    batch_norm_runtime,
    conv,
    elementwise,
    gelu_chains,
    hard_activations,
    matmul,
    norm,
    pooling,
    quantized,
    reduce,
    search,
    shape,
)

LOWERINGS: tuple[Lowering, ...] = (
    # Quantized groups (dequantize -> op -> quantize) before the float operators inside them,
    # then the quantize / dequantize left at the model's float boundaries.
    *quantized.LOWERINGS,
    *quantized.BOUNDARIES,
    # Patterns of several operators.
    *hard_activations.LOWERINGS,  # add, clip, divide / multiply (and multiply)
    *gelu_chains.LOWERINGS,  # GELU written out: erf or tanh, add, multiplies
    *conv.FUSED,  # conv2d / conv2d_transpose with a bias add and an activation
    *matmul.FUSED,  # matmul with a permute_dims of the weight, a bias add, an activation
    *search.LOWERINGS,  # argmax / argmin with the cast of their indices to int32
    *shape.BLOCK_MOVES,  # depth_to_space / space_to_depth as reshape, permute_dims, reshape
    # Single operators.
    norm.BATCH_NORM,
    *elementwise.LOWERINGS,
    *conv.SINGLE,
    *matmul.SINGLE,
    *pooling.LOWERINGS,
    *reduce.LOWERINGS,
    *norm.LOWERINGS,
    *shape.LOWERINGS,
    batch_norm_runtime.LOWERING,
)

#: Operators with no lowering whose refusal explains more than "no NNAPI pattern".
REFUSED: tuple[Refused, ...] = (*elementwise.REFUSED, *search.REFUSED)


def _by_name(lowerings: tuple[Lowering, ...]) -> dict[str, Lowering]:
    named: dict[str, Lowering] = {}
    for lowering in lowerings:
        if lowering.name in named:
            raise ValueError(f"two lowerings are named {lowering.name}")
        named[lowering.name] = lowering
    return named


_BY_NAME = _by_name(LOWERINGS)


def find(name: str) -> Lowering | None:
    """The lowering whose composite name is ``name`` (``"nnapi.conv2d_bias_act"``)."""
    return _BY_NAME.get(name)


def pattern_table(options: PartitionOptions | None = None) -> list[FusionPattern]:
    """The FusionPatterns for ``FuseOpsByPattern``, in the order of :data:`LOWERINGS`."""
    return fusion_patterns(LOWERINGS, REFUSED, options or PartitionOptions())


def offloadable_relax_ops() -> set[str]:
    """Relax operators that some lowering can offload."""
    return {lowering.relax_op for lowering in LOWERINGS}


def required_operations(composite: relax.Function) -> tuple[str, ...]:
    """The NNAPI operations the lowering of a composite function emits (from its record; empty
    for a composite of another backend)."""
    lowering = find(str((composite.attrs or {}).get("Composite", "")))
    if lowering is None:
        return ()
    return lowering.required_operations(lowering.root_call(composite))
