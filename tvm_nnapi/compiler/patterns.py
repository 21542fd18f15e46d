# SPDX-License-Identifier: Apache-2.0
"""The pattern infrastructure: partition options, typed refusals and the :class:`Lowering` record.

A :class:`Lowering` holds everything about one way of offloading Relax: its pattern (composite
name ``nnapi.<op>``, so ``RunCodegen`` calls ``relax.ext.nnapi``), the check that refuses what
NNAPI cannot take, the converter, and the NNAPI operations it may emit. The records live in
:mod:`tvm_nnapi.compiler.lowerings` (one module per operator family), which imports this module
and assembles the one ordered list; this module never imports the lowerings.

Every check states why it refuses a match and records a typed :class:`Refusal`, so ``explain``
can tell a user exactly what stopped an operator. :func:`fusion_patterns` builds the
FusionPatterns handed to ``FuseOpsByPattern`` directly: TVM's global pattern registry (which an
import of the upstream ``tvm.relax.backend.contrib.nnapi`` also fills with ``nnapi.*`` names) is
never read.
"""

from __future__ import annotations

import contextlib
import enum
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import tvm
from tvm import relax
from tvm.relax.backend.utils import has_leaking_intermediate_variables
from tvm.relax.dpl import DFPattern, is_op, wildcard
from tvm.relax.transform import FusionPattern, PatternCheckContext

from .converters import CallConverter, Converter, operator_calls, single_call

# The feature levels, re-exported: the lowerings import them from here.
from .feature_levels import (
    FEATURE_LEVEL_1 as FEATURE_LEVEL_1,
)
from .feature_levels import (
    FEATURE_LEVEL_2 as FEATURE_LEVEL_2,
)
from .feature_levels import (
    FEATURE_LEVEL_3 as FEATURE_LEVEL_3,
)
from .feature_levels import (
    FEATURE_LEVEL_4 as FEATURE_LEVEL_4,
)
from .feature_levels import (
    FEATURE_LEVEL_5 as FEATURE_LEVEL_5,
)
from .feature_levels import (
    FEATURE_LEVEL_6 as FEATURE_LEVEL_6,
)
from .feature_levels import (
    FEATURE_LEVEL_7 as FEATURE_LEVEL_7,
)
from .feature_levels import (
    FEATURE_LEVEL_8 as FEATURE_LEVEL_8,
)

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
    COST = "cost"  # the cost strategy's placement: modelled faster on the host


@dataclass(frozen=True)
class Refusal:
    """One operator that was not offloaded, with the reason."""

    operator: str  # Relax operator, e.g. "relax.add"
    binding: str  # the variable it binds, e.g. "lv3"
    kind: RefusalKind
    reason: str

    def __str__(self) -> str:
        return f"{self.binding} = {self.operator}(...): {self.kind.value}: {self.reason}"


#: What identifies an offload candidate to the device check: its composite name and, for each
#: Relax call it fuses, the operator, the call's attributes and the (dtype, shape) of its
#: arguments and result. Two candidates with one key lower to the same NNAPI operations on the
#: same operand types, so a device's answer for one holds for the other.
CandidateKey = tuple[str, tuple[tuple[str, ...], ...]]


def _tensor_key(expr: relax.Expr) -> str:
    info = expr.ty
    if isinstance(info, relax.TensorType):
        shape = list(info.shape) if info.shape is not None else f"ndim={info.ndim}"
        constant = " const" if isinstance(expr, tvm.ir.Constant) else ""
        return f"{info.dtype}{shape}{constant}"
    return str(info)


def candidate_key(composite: str, calls: Iterable[relax.Call]) -> CandidateKey:
    """The :data:`CandidateKey` of a composite named ``composite`` fusing ``calls``."""
    rows = []
    for call in calls:
        if not isinstance(call.op, tvm.ir.Op):
            continue
        attrs = str(call.attrs) if call.attrs is not None else ""
        rows.append(
            (str(call.op.name), attrs, *(_tensor_key(a) for a in call.args), _tensor_key(call))
        )
    return composite, tuple(sorted(rows))


def composite_key(composite: relax.Function) -> CandidateKey:
    """The :data:`CandidateKey` of a composite function as the partition made it (its
    ``Composite`` name and the calls of its body): what an oracle refuses."""
    calls = [
        binding.value
        for block in composite.body.blocks
        for binding in block.bindings
        if isinstance(binding.value, relax.Call)
    ]
    return candidate_key(str(composite.attrs["Composite"]), calls)


class DeviceOracle(Protocol):
    """Answers for the chosen NNAPI devices of a target which candidates they cannot run
    (:mod:`tvm_nnapi.tools.partition_target` asks the target's NNAPI library)."""

    def refused_candidates(self, mod: tvm.IRModule) -> dict[CandidateKey, str]:
        """The candidates of ``mod``'s NNAPI subgraphs that no chosen device runs, each with
        the reason (the devices, and the NNAPI operation and operand type they lack)."""
        ...

    def describe(self) -> str:
        """The chosen devices, as a user named them (``qti-dsp``, ``every device without
        CPUs``)."""
        ...


class CostOracle(Protocol):
    """Places the candidates of a partition at the least modelled time and refuses those it
    keeps on the host (:class:`tvm_nnapi.tools.cost_partition.CostOracle`)."""

    def refused_candidates(
        self, mod: tvm.IRModule
    ) -> dict[CandidateKey, tuple[RefusalKind, str]]: ...


@dataclass
class PartitionOptions:
    """What the target can do: feature level and (optionally) per-op device support."""

    feature_level: int = DEFAULT_FEATURE_LEVEL
    # NNAPI operation names the target's devices support (None: everything the mock implements).
    supported_nnapi_ops: frozenset[str] | None = None
    # Let NNAPI compute float32 subgraphs in float16 range and precision
    # (ANeuralNetworksModel_relaxComputationFloat32toFloat16; docs/runtime.md).
    relax_fp32_to_fp16: bool = False
    # Fold constants, batch norms into convolutions and nested clips first (compiler/prepare.py).
    prepare: bool = True
    # With prepare: NCHW convolutions, and the elementwise operators and poolings between them,
    # in NHWC (compiler/layout.py): one transpose where a chain starts and one where it ends,
    # instead of two per convolution inside the NNAPI implementation.
    nhwc: bool = True
    # The chosen devices' answers: partition_with_report partitions, asks the oracle which
    # candidates of the subgraphs no chosen device runs, and partitions again with those in
    # ``candidate_refusals`` (kept on the host with their kinds and reasons) until the devices
    # take all.
    device_oracle: DeviceOracle | None = None
    # The cost strategy (``strategy="cost"``): once the devices take everything offloaded, the
    # oracle's placement refuses what is modelled faster on the host (tools/cost_partition.py).
    strategy: str = "all"
    cost_oracle: CostOracle | None = None
    candidate_refusals: Mapping[CandidateKey, tuple[RefusalKind, str]] = field(default_factory=dict)


class Conclusive(tuple[RefusalKind, str]):
    """A check's refusal ``(kind, reason)`` that recognized its operator's form and says what
    NNAPI lacks for it (e.g. depth_to_space in CRD order): a later refusal of the same binding
    by a smaller pattern (one operator's rank limit, say) does not replace it in the report."""

    def __new__(cls, kind: RefusalKind, reason: str) -> Conclusive:
        return super().__new__(cls, (kind, reason))


@dataclass
class _Collector:
    refusals: dict[tuple[str, str], Refusal] = field(default_factory=dict)
    conclusive: set[tuple[str, str]] = field(default_factory=set)


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


def _record(
    operator: str, binding: str, kind: RefusalKind, reason: str, conclusive: bool = False
) -> None:
    """Keep a binding's last refusal, unless an earlier one is :class:`Conclusive` and this one
    is not (the patterns are tried from the largest form to the single operator)."""
    collector = getattr(_state, "collector", None)
    if collector is None:
        return
    key = (binding, operator)
    if key in collector.conclusive and not conclusive:
        return
    collector.refusals[key] = Refusal(operator, binding, kind, reason)
    if conclusive:
        collector.conclusive.add(key)


# A check returns None to accept, or (kind, reason) to refuse. It gets the matched root call, the
# options and the pattern context (context.annotated_expr has the pattern's named parts).
# DECLINED leaves the match to another record of the same pattern without a refusal (forms
# one record does not take and another does, e.g. int8 and uint8 quantized matmuls).
CheckResult = tuple[RefusalKind, str] | None


class _Declined(tuple[RefusalKind, str]):
    pass


#: A check's answer for a match another record of the same pattern takes: no refusal recorded.
DECLINED = _Declined((RefusalKind.ATTRIBUTE, "left to another record of the pattern"))
Check = Callable[[relax.Call, PartitionOptions, PatternCheckContext], CheckResult]


PatternMaker = Callable[[], tuple[DFPattern, dict[str, DFPattern]]]
# The NNAPI operations one match emits, computed from its root call.
Requires = Callable[[relax.Call], Iterable[str]]


@dataclass(frozen=True)
class Lowering:
    """One lowering: what it matches, what it refuses, how it is lowered, what it emits.

    ``pattern`` returns the pattern and its annotations, which must name the root call
    ``"root"`` (the operator whose refusal is reported). ``check`` refuses what NNAPI cannot
    take. ``convert`` lowers the composite function of a match. ``emits`` lists every NNAPI
    operation ``convert`` may emit. When that depends on the match (a conv2d emits one of three
    convolutions, and a TRANSPOSE when its filter is not a constant), ``requires`` gives the
    operations one match emits, from its root call, and the device check asks the target for
    those only; without it a match requires all of ``emits``. tests/backend/test_lowerings.py
    checks both against what the converters emit.
    """

    name: str  # "nnapi.add": the composite name
    relax_op: str  # "relax.add": the root operator
    pattern: PatternMaker
    check: Check
    convert: Converter
    emits: tuple[str, ...]
    requires: Requires | None = None

    def required_operations(self, root: relax.Call) -> tuple[str, ...]:
        """The NNAPI operations the match rooted at ``root`` emits (a subset of ``emits``)."""
        return self.emits if self.requires is None else tuple(self.requires(root))

    def root_call(self, composite: relax.Function) -> relax.Call:
        """The root call inside a composite function of this lowering (the last call of
        ``relax_op``: the operator a pattern's ``"root"`` annotation names)."""
        roots = [c for c in operator_calls(composite) if str(c.op.name) == self.relax_op]
        if not roots:
            raise ValueError(f"composite {self.name} has no call of {self.relax_op}")
        return roots[-1]


def single_op(
    relax_op: str,
    arity: int,
    check: Check,
    convert: CallConverter,
    emits: tuple[str, ...],
    requires: Requires | None = None,
    name: str | None = None,
) -> Lowering:
    """The lowering of one call of ``relax_op`` with ``arity`` arguments, named ``nnapi.<op>``
    (``relax.nn.softmax`` -> ``nnapi.nn_softmax``) unless ``name`` is given."""
    return Lowering(
        name=name or single_op_name(relax_op),
        relax_op=relax_op,
        pattern=single_op_pattern(relax_op, arity),
        check=check,
        convert=single_call(convert),
        emits=emits,
        requires=requires,
    )


def single_op_name(relax_op: str) -> str:
    return f"nnapi.{relax_op.removeprefix('relax.').replace('.', '_')}"


@dataclass(frozen=True)
class Refused:
    """A Relax operator with no lowering whose refusal says more than "no NNAPI pattern"
    (e.g. the exact GELU, whose tanh form is lowered)."""

    relax_op: str
    arity: int
    kind: RefusalKind
    reason: str


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
    allow_rank0_variables: bool = False,
) -> CheckResult:
    """Common checks: tensor operands, allowed dtypes (with their feature level), known rank.

    ``inputs`` defaults to the call's arguments; pass the tensor arguments explicitly for
    operators whose other arguments are attributes (shapes, bounds). ``allow_rank0_variables``
    accepts rank-0 variable inputs, for operators that broadcast them: no lowering produces a
    rank-0 value, so such a value is a subgraph input, which the codegen declares as [1].
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
        if tensor_type.shape is None:
            # e.g. TVM's result of adding (1, n, 64) and (1, min(n, 128), 64): NNAPI operands
            # need their dimensions (symbolic ones included) to be known expressions.
            return (
                RefusalKind.DYNAMIC_SHAPE,
                f"{role} has an unknown shape (rank {tensor_type.ndim})",
            )
        if tensor_type.ndim > max_rank:
            return RefusalKind.RANK, f"{role} has rank {tensor_type.ndim} > {max_rank}"
        is_input = index < len(values) - 1
        if tensor_type.ndim == 0 and not (
            (allow_rank0_constants and isinstance(value, tvm.ir.Constant))
            or (allow_rank0_variables and is_input and not isinstance(value, tvm.ir.Constant))
        ):
            return RefusalKind.RANK, f"{role} is a rank-0 tensor"
    return None


def check_device_support(
    lowering: Lowering, root: relax.Call, options: PartitionOptions
) -> CheckResult:
    if options.supported_nnapi_ops is None:
        return None
    required = lowering.required_operations(root)
    missing = [op for op in required if op not in options.supported_nnapi_ops]
    if missing:
        chosen = (
            f"the chosen NNAPI devices ({options.device_oracle.describe()}) do not"
            if options.device_oracle is not None
            else "no device of the target can"
        )
        return RefusalKind.DEVICE_SUPPORT, f"{chosen} run {', '.join(missing)}"
    return None


def _check_reads_an_input(context: PatternCheckContext) -> CheckResult:
    """An NNAPI model needs at least one input: a candidate whose tensor arguments are all
    constants (or values it computes itself) is left to constant folding or the host."""
    inside = set(context.matched_bindings)
    for value in context.matched_bindings.values():
        if not isinstance(value, relax.Call):
            continue
        for arg in value.args:
            for item in arg.fields if isinstance(arg, relax.Tuple) else [arg]:
                if isinstance(item, relax.Var) and item not in inside:
                    return None
    return (
        RefusalKind.ATTRIBUTE,
        "reads only constants: an NNAPI model needs an input (constant folding, "
        "PartitionOptions(prepare=True), computes it once instead)",
    )


def _refused_in_a_round(
    lowering: Lowering, context: PatternCheckContext, options: PartitionOptions
) -> bool:
    """Whether an earlier round (the chosen devices, the cost placement) refused this
    candidate; if so, the refusal is recorded for each operator it fuses (smaller patterns may
    still offload some of them, and the partition then drops their refusals)."""
    if not options.candidate_refusals:
        return False
    matched = [
        (var, value)
        for var, value in context.matched_bindings.items()
        if isinstance(value, relax.Call)
    ]
    refusal = options.candidate_refusals.get(candidate_key(lowering.name, [v for _, v in matched]))
    if refusal is None:
        return False
    kind, reason = refusal
    for var, call in matched:
        if isinstance(call.op, tvm.ir.Op):
            _record(str(call.op.name), var.name, kind, reason)
    return True


# ---- building the table --------------------------------------------------------------------------


def _binding_name(context: PatternCheckContext, call: relax.Expr) -> str:
    var = context.value_to_bound_var.get(call)
    return var.name if var is not None else "?"


def _lowering_check(lowering: Lowering, options: PartitionOptions):
    def check(context: PatternCheckContext) -> bool:
        call = context.annotated_expr["root"]
        result = (
            _check_reads_an_input(context)
            or lowering.check(call, options, context)
            or check_device_support(lowering, call, options)
        )
        if result is None and len(context.matched_bindings) > 1:
            if has_leaking_intermediate_variables(context):
                # A value inside the match is also used outside it: a composite has one
                # output, so smaller patterns take the operators (nothing to report).
                return False
        if result is None and _refused_in_a_round(lowering, context, options):
            return False
        if result is None:
            return True
        if result is DECLINED:
            return False
        kind, reason = result
        binding = _binding_name(context, call)
        _record(lowering.relax_op, binding, kind, reason, isinstance(result, Conclusive))
        return False

    return check


def _refusal_check(refused: Refused):
    def check(context: PatternCheckContext) -> bool:
        call = context.annotated_expr["root"]
        _record(refused.relax_op, _binding_name(context, call), refused.kind, refused.reason)
        return False

    return check


def fusion_patterns(
    lowerings: Sequence[Lowering], refused: Sequence[Refused], options: PartitionOptions
) -> list[FusionPattern]:
    """The FusionPatterns for ``FuseOpsByPattern``, in the order of ``lowerings`` (the first
    that matches wins), then the patterns that only record the refusals of ``refused``."""
    table = []
    for lowering in lowerings:
        pattern, annotations = lowering.pattern()
        table.append(
            FusionPattern(lowering.name, pattern, annotations, _lowering_check(lowering, options))
        )
    for entry in refused:
        pattern, annotations = single_op_pattern(entry.relax_op, entry.arity)()
        name = single_op_name(entry.relax_op)
        table.append(FusionPattern(name, pattern, annotations, _refusal_check(entry)))
    return table


def single_op_pattern(op: str, arity: int) -> PatternMaker:
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


def static_dims(expr: relax.Expr, axes: Iterable[int]) -> list[int] | None:
    """The sizes of the given axes (negative ones count from the end) as ints, or None when one
    of them is symbolic or the shape is unknown; the other dimensions may be symbolic.

    A check asks for exactly the dimensions it needs: a conv2d needs its input channels, not a
    static batch."""
    tensor_type = tensor_info(expr)
    if tensor_type is None or tensor_type.shape is None:
        return None
    values = list(tensor_type.shape.values)
    dims = []
    for axis in axes:
        if not -len(values) <= axis < len(values):
            return None
        value = values[axis]
        if not hasattr(value, "value"):
            return None
        dims.append(int(value.value))
    return dims


def static_dim(expr: relax.Expr, axis: int) -> int | None:
    """The size of one axis as an int, or None when it is symbolic (see :func:`static_dims`)."""
    dims = static_dims(expr, [axis])
    return None if dims is None else dims[0]


def is_constant(expr: relax.Expr) -> bool:
    return isinstance(expr, tvm.ir.Constant)
