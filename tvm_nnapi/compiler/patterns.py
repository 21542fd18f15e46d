"""The NNAPI pattern table: which Relax operators can be offloaded, and why others are refused.

Each entry is ``(name, pattern, annotations, check)`` with a composite name ``nnapi.<op>`` (so
``RunCodegen`` calls ``relax.ext.nnapi``). Every check states why it refuses a match and records
a typed :class:`Refusal`, so ``explain`` can tell a user exactly what stopped an operator.

The table is built per call of :func:`pattern_table` and handed to ``FuseOpsByPattern``
directly: TVM's global pattern registry (which an import of the upstream
``tvm.relax.backend.contrib.nnapi`` also fills with ``nnapi.*`` names) is never read.
"""

from __future__ import annotations

import contextlib
import enum
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import tvm
from tvm import relax
from tvm.relax.dpl import DFPattern, is_op, wildcard
from tvm.relax.transform import FusionPattern, PatternCheckContext

# NNAPI feature levels (the values Android reports).
FEATURE_LEVEL_1 = 27
FEATURE_LEVEL_2 = 28
FEATURE_LEVEL_3 = 29
FEATURE_LEVEL_4 = 30
FEATURE_LEVEL_5 = 31
FEATURE_LEVEL_6 = 1000006
FEATURE_LEVEL_7 = 1000007
FEATURE_LEVEL_8 = 1000008
DEFAULT_FEATURE_LEVEL = FEATURE_LEVEL_8


class RefusalKind(enum.StrEnum):
    """Why an operator stays on the host."""

    UNSUPPORTED_OPERATOR = "unsupported operator"
    DTYPE = "unsupported dtype"
    RANK = "unsupported rank"
    ATTRIBUTE = "unsupported attribute"
    DYNAMIC_SHAPE = "dynamic shape"
    FEATURE_LEVEL = "feature level too low"
    DEVICE_SUPPORT = "no device supports it"
    COST_POLICY = "cost policy"


@dataclass(frozen=True)
class Refusal:
    """One operator that was not offloaded, with the reason."""

    operator: str  # Relax operator, e.g. "relax.add"
    binding: str  # the variable it binds, e.g. "lv3"
    kind: RefusalKind
    reason: str

    def __str__(self) -> str:
        return f"{self.binding} = {self.operator}(...): {self.kind.value}: {self.reason}"


@dataclass
class PartitionOptions:
    """What the target can do: feature level and (optionally) per-op device support."""

    feature_level: int = DEFAULT_FEATURE_LEVEL
    # NNAPI operation names the target's devices support (None: everything the mock implements).
    supported_nnapi_ops: frozenset[str] | None = None
    # Let NNAPI compute float32 subgraphs in float16 range and precision
    # (ANeuralNetworksModel_relaxComputationFloat32toFloat16; docs/runtime.md).
    relax_fp32_to_fp16: bool = False


@dataclass
class _Collector:
    refusals: dict[tuple[str, str], Refusal] = field(default_factory=dict)


_state = threading.local()


@contextlib.contextmanager
def collect_refusals() -> Iterator[_Collector]:
    """Collect the refusals recorded by pattern checks while partitioning."""
    collector = _Collector()
    previous = getattr(_state, "collector", None)
    _state.collector = collector
    try:
        yield collector
    finally:
        _state.collector = previous


def _record(operator: str, binding: str, kind: RefusalKind, reason: str) -> None:
    collector = getattr(_state, "collector", None)
    if collector is not None:
        collector.refusals[(binding, operator)] = Refusal(operator, binding, kind, reason)


# A check returns None to accept, or (kind, reason) to refuse. It gets the matched root call, the
# options and the pattern context (context.annotated_expr has the pattern's named parts).
CheckResult = tuple[RefusalKind, str] | None
Check = Callable[[relax.Call, PartitionOptions, PatternCheckContext], CheckResult]


@dataclass(frozen=True)
class PatternSpec:
    """One entry of the table. ``make_pattern`` returns the pattern and its annotations, which
    must name the root call ``"root"`` (the operator whose refusal is reported)."""

    name: str  # "nnapi.add"
    relax_op: str  # "relax.add": the root operator
    nnapi_ops: tuple[str, ...]  # NNAPI operations the converter emits
    make_pattern: Callable[[], tuple[DFPattern, dict[str, DFPattern]]]
    check: Check
    # Larger first: a fused pattern (conv2d + bias + relu) must be tried before the single
    # operators it contains, whatever the module import order.
    priority: int = 0


_SPECS: list[PatternSpec] = []


def register(spec: PatternSpec) -> PatternSpec:
    _SPECS.append(spec)
    return spec


def specs() -> list[PatternSpec]:
    return list(_SPECS)


# ---- shared checks -------------------------------------------------------------------------------


def tensor_info(expr: relax.Expr) -> relax.TensorType | None:
    tensor_type = expr.ty
    return tensor_type if isinstance(tensor_type, relax.TensorType) else None


def check_tensors(
    call: relax.Call,
    dtypes: dict[str, int],
    options: PartitionOptions,
    max_rank: int = 4,
    allow_rank0_constants: bool = True,
    inputs: list[relax.Expr] | None = None,
) -> CheckResult:
    """Common checks: tensor operands, allowed dtypes (with their feature level), known rank.

    ``inputs`` defaults to the call's arguments; pass the tensor arguments explicitly for
    operators whose other arguments are attributes (shapes, bounds).
    """
    values = [*(call.args if inputs is None else inputs), call]
    for index, value in enumerate(values):
        role = "output" if index == len(values) - 1 else f"input {index}"
        tensor_type = tensor_info(value)
        if tensor_type is None:
            return RefusalKind.ATTRIBUTE, f"{role} is not a tensor ({value.ty})"
        dtype = str(tensor_type.dtype)
        if dtype not in dtypes:
            allowed = ", ".join(sorted(dtypes))
            return RefusalKind.DTYPE, f"{role} has dtype {dtype}; NNAPI takes {allowed}"
        level = dtypes[dtype]
        if level > options.feature_level:
            return (
                RefusalKind.FEATURE_LEVEL,
                f"{dtype} needs NNAPI feature level {level}, target has {options.feature_level}",
            )
        if tensor_type.ndim < 0:
            return RefusalKind.RANK, f"{role} has unknown rank"
        if tensor_type.ndim > max_rank:
            return RefusalKind.RANK, f"{role} has rank {tensor_type.ndim} > {max_rank}"
        if tensor_type.ndim == 0 and not (
            allow_rank0_constants and isinstance(value, tvm.ir.Constant)
        ):
            return RefusalKind.RANK, f"{role} is a rank-0 tensor"
    return None


def check_device_support(spec: PatternSpec, options: PartitionOptions) -> CheckResult:
    if options.supported_nnapi_ops is None:
        return None
    missing = [op for op in spec.nnapi_ops if op not in options.supported_nnapi_ops]
    if missing:
        return RefusalKind.DEVICE_SUPPORT, f"no target device runs {', '.join(missing)}"
    return None


# ---- building the table --------------------------------------------------------------------------


def _binding_name(context: PatternCheckContext, call: relax.Expr) -> str:
    var = context.value_to_bound_var.get(call)
    return var.name if var is not None else "?"


def _make_check(spec: PatternSpec, options: PartitionOptions):
    def check(context: PatternCheckContext) -> bool:
        call = context.annotated_expr["root"]
        result = spec.check(call, options, context) or check_device_support(spec, options)
        if result is None:
            return True
        kind, reason = result
        _record(spec.relax_op, _binding_name(context, call), kind, reason)
        return False

    return check


def pattern_table(options: PartitionOptions | None = None) -> list[FusionPattern]:
    """The FusionPatterns for ``FuseOpsByPattern``, highest priority first (then registration
    order)."""
    from . import lowerings  # noqa: F401  (registers the specs)

    options = options or PartitionOptions()
    table = []
    for spec in sorted(_SPECS, key=lambda s: -s.priority):
        pattern, annotations = spec.make_pattern()
        table.append(FusionPattern(spec.name, pattern, annotations, _make_check(spec, options)))
    return table


def offloadable_relax_ops() -> set[str]:
    """Relax operators that some pattern can offload."""
    from . import lowerings  # noqa: F401  (registers the specs)

    return {spec.relax_op for spec in _SPECS}


def register_single_op(
    relax_op: str, nnapi_ops: tuple[str, ...], arity: int, check: Check, name: str | None = None
) -> PatternSpec:
    """Register a pattern that matches one call of ``relax_op`` with ``arity`` arguments, named
    ``nnapi.<op>`` (``relax.nn.softmax`` -> ``nnapi.nn_softmax``) unless ``name`` is given."""
    return register(
        PatternSpec(
            name=name or f"nnapi.{relax_op.removeprefix('relax.').replace('.', '_')}",
            relax_op=relax_op,
            nnapi_ops=nnapi_ops,
            make_pattern=single_op_pattern(relax_op, arity),
            check=check,
        )
    )


def single_op_pattern(op: str, arity: int) -> Callable[[], tuple[DFPattern, dict[str, DFPattern]]]:
    """A pattern matching one call of ``op`` with ``arity`` arguments of any kind."""

    def make() -> tuple[DFPattern, dict[str, DFPattern]]:
        args = [wildcard() for _ in range(arity)]
        call = is_op(op)(*args)
        return call, {"root": call, **{f"arg{i}": a for i, a in enumerate(args)}}

    return make


def dtype_of(expr: relax.Expr) -> str:
    tensor_type = tensor_info(expr)
    return str(tensor_type.dtype) if tensor_type is not None else ""


def static_shape(expr: relax.Expr) -> list[int] | None:
    """The shape as ints, or None when any dimension is symbolic or unknown."""
    tensor_type = tensor_info(expr)
    if tensor_type is None or tensor_type.shape is None:
        return None
    dims = []
    for value in tensor_type.shape.values:
        if not hasattr(value, "value"):
            return None
        dims.append(int(value.value))
    return dims


def is_constant(expr: relax.Expr) -> bool:
    return isinstance(expr, tvm.ir.Constant)
