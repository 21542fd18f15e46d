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


# A check returns None to accept, or (kind, reason) to refuse.
CheckResult = tuple[RefusalKind, str] | None
Check = Callable[[relax.Call, PartitionOptions], CheckResult]


@dataclass(frozen=True)
class PatternSpec:
    name: str  # "nnapi.add"
    relax_op: str  # "relax.add"
    nnapi_ops: tuple[str, ...]  # NNAPI operations the converter emits
    make_pattern: Callable[[], tuple[DFPattern, dict[str, DFPattern]]]
    check: Check


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
) -> CheckResult:
    """Common checks: tensor operands, allowed dtypes (with their feature level), known rank."""
    values = [*call.args, call]
    for index, value in enumerate(values):
        role = "output" if index == len(call.args) else f"input {index}"
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


# ---- elementwise binary --------------------------------------------------------------------------


def _binary_pattern(op: str) -> Callable[[], tuple[DFPattern, dict[str, DFPattern]]]:
    def make() -> tuple[DFPattern, dict[str, DFPattern]]:
        lhs, rhs = wildcard(), wildcard()
        call = is_op(op)(lhs, rhs)
        return call, {"lhs": lhs, "rhs": rhs, "root": call}

    return make


def _binary_check(first_level: int, int32: bool) -> Check:
    dtypes = {"float32": first_level, "float16": FEATURE_LEVEL_3}
    if int32:
        dtypes["int32"] = FEATURE_LEVEL_4

    def check(call: relax.Call, options: PartitionOptions) -> CheckResult:
        return check_tensors(call, dtypes, options)

    return check


for _relax_op, _nnapi_op, _level, _int32 in [
    ("add", "ADD", FEATURE_LEVEL_1, True),
    ("subtract", "SUB", FEATURE_LEVEL_2, True),
    ("multiply", "MUL", FEATURE_LEVEL_1, True),
    ("divide", "DIV", FEATURE_LEVEL_2, False),
]:
    register(
        PatternSpec(
            name=f"nnapi.{_relax_op}",
            relax_op=f"relax.{_relax_op}",
            nnapi_ops=(_nnapi_op,),
            make_pattern=_binary_pattern(f"relax.{_relax_op}"),
            check=_binary_check(_level, _int32),
        )
    )


# ---- building the table --------------------------------------------------------------------------


def _binding_name(context: PatternCheckContext, call: relax.Expr) -> str:
    var = context.value_to_bound_var.get(call)
    return var.name if var is not None else "?"


def _make_check(spec: PatternSpec, root: DFPattern, options: PartitionOptions):
    def check(context: PatternCheckContext) -> bool:
        call = context.annotated_expr["root"]
        result = spec.check(call, options) or check_device_support(spec, options)
        if result is None:
            return True
        kind, reason = result
        _record(spec.relax_op, _binding_name(context, call), kind, reason)
        return False

    return check


def pattern_table(options: PartitionOptions | None = None) -> list[FusionPattern]:
    """The FusionPatterns for ``FuseOpsByPattern``, in priority order."""
    options = options or PartitionOptions()
    table = []
    for spec in _SPECS:
        pattern, annotations = spec.make_pattern()
        table.append(
            FusionPattern(spec.name, pattern, annotations, _make_check(spec, pattern, options))
        )
    return table


def offloadable_relax_ops() -> set[str]:
    """Relax operators that some pattern can offload."""
    return {spec.relax_op for spec in _SPECS}
