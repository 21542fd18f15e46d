# SPDX-License-Identifier: Apache-2.0
"""NNAPI dispatch for LLMs, in the spirit of MLC-LLM's ``BLASDispatch``: offload only the given
entry functions (by default ``prefill``), leave the others (``decode``, ``embed``, the KV-cache
creation) on the host.

An MLC-LLM user inserts :class:`NNAPIDispatch` into their Relax pipeline before the lowering
passes, like the BLAS dispatch::

    seq = tvm.transform.Sequential([NNAPIDispatch(entry_functions=["prefill"]), ...])

Offloading ``decode`` as well is possible (``entry_functions=["prefill", "decode"]``); with
``host_fallback=True`` the runtime's device-selection policy (``tvm_nnapi.runtime``,
e.g. ``policy="threshold:FLOPS"``) then decides per shape whether NNAPI or the host runs it.

:func:`offload_report` says what a partition of ``prefill`` sends to NNAPI (operators, FLOP
share) and what stays on the host (the attention through the KV-cache builtins).

:func:`bind_weights` (``build_llm(..., resident_weights=weights)``) binds the weight parameters
of the offloaded entry functions as constants before the dispatch, so that every NNAPI subgraph
carries its layer's weights in its constant blob ("weights resident": NNAPI receives them once,
at model compilation, instead of as inputs copied at every call).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import tvm
from tvm import IRModule, relax
from tvm.relax.expr_functor import PyExprMutator, mutator

from ..compiler.build import OffloadSummary, offload_summary
from ..compiler.codegen import drop_codegen_constants
from ..compiler.ir_utils import bindings
from ..compiler.partition import CODEGEN_NAME, nnapi_subgraphs, partition_with_report
from ..compiler.patterns import PartitionOptions, Refusal
from .config import LlamaConfig
from .host_pipeline import host_pipeline as pipeline_for
from .weights import WeightError

DEFAULT_ENTRY_FUNCTIONS = ("prefill",)
# The packed function that runs rotary embedding, the KV append and attention on the host.
ATTENTION_BUILTIN = "vm.builtin.attention_kv_cache_attention_with_fused_qkv"


@tvm.transform.module_pass(opt_level=0, name="NNAPIDispatch")
class NNAPIDispatch:
    """Partition the given entry functions for NNAPI and (by default) run the NNAPI codegen.

    Functions not named stay untouched. With ``run_codegen=False`` the pass only partitions
    (``Codegen="nnapi"`` subgraph functions), e.g. to inspect the result or to hand it to
    :func:`tvm_nnapi.build`.
    """

    def __init__(
        self,
        entry_functions: Sequence[str] = DEFAULT_ENTRY_FUNCTIONS,
        options: PartitionOptions | None = None,
        run_codegen: bool = True,
        host_fallback: bool = False,
        host_target: str = "llvm",
    ) -> None:
        self.entry_functions = list(entry_functions)
        self.options = options
        self.run_codegen = run_codegen
        self.host_fallback = host_fallback
        self.host_target = host_target
        self.refusals: list[Refusal] = []
        # Bytes of tensor constants (e.g. bound weights) left in each entry function after the
        # partition: what the host program, not an NNAPI subgraph, holds.
        self.host_constant_bytes: dict[str, int] = {}

    if TYPE_CHECKING:
        # module_pass turns the class into a ModulePass: an instance is applied to a module by
        # calling it (type checkers do not see what a class decorator does).
        def __call__(self, mod: IRModule) -> IRModule: ...

    def transform_module(self, mod: IRModule, _ctx: tvm.transform.PassContext) -> IRModule:
        names = [name for name in self.entry_functions if _has_function(mod, name)]
        if not names:
            return mod
        result = partition_with_report(mod, self.options, entry_functions=names)
        self.refusals = result.refusals
        mod = result.module
        self.host_constant_bytes = {name: constant_bytes(mod[name]) for name in names}
        if self.run_codegen:
            subgraphs = set(nnapi_subgraphs(mod))
            options = {"host_fallback": self.host_fallback, "host_target": self.host_target}
            mod = relax.transform.RunCodegen({CODEGEN_NAME: options})(mod)
            mod = drop_codegen_constants(mod, subgraphs)
        return mod


def constant_bytes(func: relax.Function) -> int:
    """Bytes of the tensor constants (rank >= 1) a function's body holds directly (not those of
    the functions it calls)."""
    sizes: list[int] = []

    def visit(node: object) -> None:
        value = getattr(node, "value", None) if isinstance(node, tvm.ir.Constant) else None
        if isinstance(value, tvm.runtime.Tensor) and len(value.shape) > 0:
            dtype = tvm.runtime.DataType(str(value.dtype))
            sizes.append(int(np.prod(value.shape)) * (dtype.bits * dtype.lanes + 7) // 8)

    relax.analysis.post_order_visit(func, visit)
    return sum(sizes)


def _has_function(mod: IRModule, name: str) -> bool:
    return any(gvar.name_hint == name for gvar in mod.get_global_vars())


def build_llm(
    mod: IRModule,
    entry_functions: Sequence[str] = DEFAULT_ENTRY_FUNCTIONS,
    options: PartitionOptions | None = None,
    host_fallback: bool = False,
    target: str = "llvm",
    resident_weights: Sequence[WeightArray] | None = None,
    weight_names: Sequence[str] | None = None,
    host_pipeline: str = "default",
) -> relax.VMExecutable:
    """Offload ``entry_functions`` with :class:`NNAPIDispatch` and build the whole module for
    the host ``target``. An empty ``entry_functions`` gives the pure host build.

    With ``resident_weights`` (the weights in the order of the packed parameters, as
    :func:`~tvm_nnapi.llm.param_specs` lists them) the offloaded entry functions get their
    weights bound as constants first (:func:`bind_weights`): the NNAPI subgraphs hold them in
    their constant blobs and those entries no longer take the weight argument
    (:class:`~tvm_nnapi.llm.LlamaEngine` notices). Entry functions not offloaded keep it.
    ``weight_names`` (e.g. the names of ``param_specs``) only improve error messages.
    ``host_pipeline`` compiles the host code with TVM's default pipeline (``default``) or with
    MLC-LLM's CPU schedules (``dlight``; :mod:`tvm_nnapi.llm.host_pipeline`).
    """
    if resident_weights is not None:
        if not entry_functions:
            raise ValueError("resident_weights needs at least one offloaded entry function")
        mod = bind_weights(mod, resident_weights, entry_functions, weight_names)
    if entry_functions:
        dispatch = NNAPIDispatch(
            entry_functions, options, host_fallback=host_fallback, host_target=target
        )
        mod = dispatch(mod)
    return relax.build(mod, target=target, relax_pipeline=pipeline_for(host_pipeline, target))


# ---- weights bound as constants ------------------------------------------------------------------

#: A weight given to :func:`bind_weights`: a NumPy array or a TVM tensor (used without a copy).
WeightArray: TypeAlias = np.ndarray | tvm.runtime.Tensor


@dataclass(frozen=True)
class _WeightSlot:
    """One tensor among an entry function's weight parameters."""

    param: relax.Var
    index: int | None  # position in a tuple parameter, None for a tensor parameter
    ty: relax.TensorType
    bound_to: str = ""  # the variable the function binds a tuple item to, if any

    @property
    def label(self) -> str:
        if self.index is None:
            return self.param.name
        suffix = f" ({self.bound_to})" if self.bound_to else ""
        return f"{self.param.name}[{self.index}]{suffix}"


def _weight_slots(func: relax.Function, entry: str) -> tuple[int, list[_WeightSlot]]:
    """``num_input`` and the tensors of the parameters after it (the weights), in order."""
    attrs = func.attrs or {}
    if "num_input" not in attrs:
        raise ValueError(
            f"{entry} has no 'num_input' attribute, so its weight parameters are unknown "
            "(export the model with tvm.relax.frontend.nn, as llm.export_model does)"
        )
    num_input = int(attrs["num_input"])
    item_names: dict[tuple[relax.Var, int], str] = {}
    for binding in bindings(func):
        value = binding.value
        if isinstance(value, relax.TupleGetItem) and isinstance(value.tuple_value, relax.Var):
            item_names.setdefault((value.tuple_value, int(value.index)), binding.var.name)
    slots = []
    for param in func.params[num_input:]:
        if isinstance(param.ty, relax.TensorType):
            slots.append(_WeightSlot(param, None, param.ty))
        elif isinstance(param.ty, relax.TupleType):
            for index, field_type in enumerate(param.ty.fields):
                if not isinstance(field_type, relax.TensorType):
                    raise ValueError(
                        f"{entry}: weight parameter {param.name}[{index}] is not a tensor "
                        f"({field_type})"
                    )
                slots.append(
                    _WeightSlot(param, index, field_type, item_names.get((param, index), ""))
                )
        else:
            raise ValueError(f"{entry}: weight parameter {param.name} has type {param.ty}")
    return num_input, slots


def _static_shape(ty: relax.TensorType, what: str) -> list[int]:
    values = ty.shape.values if ty.shape is not None else None
    if values is None or not all(isinstance(v, tvm.tirx.IntImm) for v in values):
        raise ValueError(f"{what} has no static shape ({ty}); only static weights can be bound")
    return [int(v) for v in values]


def _check_weight(
    weight: WeightArray, slot: _WeightSlot, entry: str, position: int, name: str
) -> None:
    """Raise a WeightError naming the parameter unless ``weight`` has its shape and dtype."""
    expected_shape = _static_shape(slot.ty, f"{entry}'s parameter {slot.label}")
    expected_dtype = str(slot.ty.dtype)
    if isinstance(weight, tvm.runtime.Tensor):
        shape, dtype = [int(d) for d in weight.shape], str(weight.dtype)
    else:
        array = np.asarray(weight)
        shape, dtype = list(array.shape), str(array.dtype)
    named = f" '{name}'" if name else ""
    where = f"weight {position}{named} for {entry}'s parameter {slot.label}"
    if shape != expected_shape:
        raise WeightError(f"{where} has shape {shape}, the parameter needs {expected_shape}")
    if dtype != expected_dtype:
        raise WeightError(f"{where} has dtype {dtype}, the parameter needs {expected_dtype}")


def _tensor(weight: WeightArray) -> tvm.runtime.Tensor:
    if isinstance(weight, tvm.runtime.Tensor):
        return weight
    return tvm.runtime.tensor(np.ascontiguousarray(weight))


@mutator
class _WeightBinder(PyExprMutator):
    """Replace the weight parameters (tensor parameters, or items of a tuple parameter) by
    constants."""

    def __init__(self, tensors: dict[relax.Var, relax.Expr], items: dict[relax.Var, list]):
        super().__init__()
        self.tensors = tensors
        self.items = items

    def visit_var_(self, var: relax.Var) -> relax.Expr:
        return self.tensors.get(var, var)

    def visit_tuple_getitem_(self, op: relax.TupleGetItem) -> relax.Expr:
        value = op.tuple_value
        if isinstance(value, relax.Var) and value in self.items:
            return self.items[value][int(op.index)]
        return super().visit_tuple_getitem_(op)


def bind_weights(
    mod: IRModule,
    weights: Sequence[WeightArray],
    entry_functions: Sequence[str] = DEFAULT_ENTRY_FUNCTIONS,
    weight_names: Sequence[str] | None = None,
) -> IRModule:
    """Bind the weight parameters of ``entry_functions`` to ``weights`` as constants.

    An entry function's weight parameters are those after its ``num_input`` inputs (the
    attribute ``tvm.relax.frontend.nn`` exports): one packed tuple (``param_mode="packed"``, as
    :func:`~tvm_nnapi.llm.export_model` exports) or one tensor per weight. ``weights`` lists
    their tensors in that order. The entry functions then take only their inputs; other
    functions are unchanged. Weights no longer used (e.g. the embedding table in ``prefill``)
    are dropped. NumPy weights are copied once into TVM tensors shared by the constants of all
    the entry functions; TVM tensors are used as they are (no copy). A weight of the wrong shape
    or dtype, or a wrong number of weights, raises :class:`~tvm_nnapi.llm.WeightError` naming
    the parameter.
    """
    weights = list(weights)
    names = list(weight_names) if weight_names is not None else None
    if names is not None and len(names) != len(weights):
        raise ValueError(f"{len(names)} weight names for {len(weights)} weights")
    tensors_made: dict[int, tvm.runtime.Tensor] = {}
    result = IRModule(dict(mod.functions), attrs=mod.attrs, global_infos=mod.global_infos)
    for entry in dict.fromkeys(entry_functions):
        if not _has_function(mod, entry):
            raise ValueError(f"the module has no function {entry!r} to bind weights in")
        gvar = mod.get_global_var(entry)
        func = mod[gvar]
        num_input, slots = _weight_slots(func, entry)
        if len(slots) != len(weights):
            params = ", ".join(p.name for p in func.params[num_input:]) or "none"
            raise WeightError(
                f"{entry} takes {len(slots)} weights (parameters after its {num_input} inputs: "
                f"{params}), got {len(weights)}"
            )
        tensors: dict[relax.Var, relax.Expr] = {}
        items: dict[relax.Var, list] = {}
        for position, (slot, weight) in enumerate(zip(slots, weights, strict=True)):
            name = names[position] if names is not None else ""
            _check_weight(weight, slot, entry, position, name)
            # One TVM tensor per weight, shared by the constants of every entry function (each
            # gets its own constant node: the partitioner needs them distinct).
            if position not in tensors_made:
                tensors_made[position] = _tensor(weight)
            constant = relax.const(tensors_made[position])
            if slot.index is None:
                tensors[slot.param] = constant
            else:
                items.setdefault(slot.param, [None] * len(slot.param.ty.fields))[slot.index] = (
                    constant
                )
        body = _WeightBinder(tensors, items).visit_expr(func.body)
        bound = relax.Function(func.params[:num_input], body, func.ret_ty, func.is_pure, func.attrs)
        weight_params = set(func.params[num_input:])
        left = [v.name for v in relax.analysis.free_vars(bound) if v in weight_params]
        if left:
            raise ValueError(
                f"{entry} uses its weight parameter {left[0]} other than through its items; "
                "it cannot be bound"
            )
        result[gvar] = relax.analysis.remove_all_unused(bound)
    return result


# ---- offload report ------------------------------------------------------------------------------


@dataclass
class OffloadReport:
    """What a partition of one entry function offloads, for a given sequence length."""

    entry: str
    seq_len: int
    summary: OffloadSummary
    # Host FLOPs inside the KV-cache attention builtin (not visible as Relax operators), see
    # attention_flops: 2 * h_q * d * n * (n + 1) per layer for a causal prefill of n tokens.
    attention_flops: int = 0
    partition_seconds: float = 0.0
    refusals: list[Refusal] = field(default_factory=list)

    @property
    def offloaded_operators(self) -> Counter:
        total: Counter = Counter()
        for ops in self.summary.subgraphs.values():
            total.update(ops)
        return total

    @property
    def host_operators(self) -> Counter:
        return self.summary.host

    @property
    def flop_share(self) -> float:
        """Offloaded share of the FLOPs of the Relax operators (attention builtin excluded)."""
        return self.summary.offloaded_flop_share

    @property
    def flop_share_with_attention(self) -> float:
        """Offloaded share once the host attention's FLOPs are counted as well."""
        total = self.summary.offloaded_flops + self.summary.host_flops + self.attention_flops
        return self.summary.offloaded_flops / total if total else 0.0

    def format(self) -> str:
        """A short human-readable summary."""
        s = self.summary
        lines = [
            f"{self.entry} (seq_len={self.seq_len}): {len(s.subgraphs)} distinct NNAPI subgraphs, "
            f"partitioned in {self.partition_seconds:.2f} s",
            f"  offloaded: {s.offloaded_operators} operators, {s.offloaded_flops / 1e9:.3f} GFLOP "
            f"({self.flop_share:.1%} of Relax-operator FLOPs, "
            f"{self.flop_share_with_attention:.1%} counting attention)",
            f"  host: {s.host_operators} operators, {s.host_flops / 1e9:.3f} GFLOP "
            f"+ attention {self.attention_flops / 1e9:.3f} GFLOP (estimate)",
            "  offloaded operators: " + _format_counter(self.offloaded_operators),
            "  host operators: " + _format_counter(self.host_operators),
        ]
        return "\n".join(lines)


def _format_counter(counter: Counter) -> str:
    return ", ".join(f"{name.removeprefix('relax.')} x{n}" for name, n in counter.most_common())


def _entry_module(mod: IRModule, entry: str) -> IRModule:
    """``entry`` and the NNAPI subgraphs it calls (for a per-entry offload summary)."""
    used = {g.name_hint for g in relax.analysis.all_global_vars(mod[entry])}
    return IRModule(
        {
            g: f
            for g, f in mod.functions.items()
            if g.name_hint == entry
            or (g.name_hint in used and (getattr(f, "attrs", None) or {}).get("Codegen"))
        }
    )


def attention_flops(config: LlamaConfig, seq_len: int, history: int = 0) -> int:
    """FLOPs of one layer's causal attention of ``seq_len`` new tokens after ``history`` cached
    ones (QK^T and PV, multiply-adds as two)."""
    pairs = seq_len * history + seq_len * (seq_len + 1) // 2
    return 2 * 2 * config.num_attention_heads * config.head_dim * pairs


def _attention_calls(func: relax.Function) -> int:
    found: list[relax.Call] = []

    def visit(node: object) -> None:
        if isinstance(node, relax.Call) and any(
            isinstance(arg, relax.ExternFunc) and str(arg.global_symbol) == ATTENTION_BUILTIN
            for arg in node.args
        ):
            found.append(node)

    relax.analysis.post_order_visit(func, visit)
    return len(found)


def offload_report(
    mod: IRModule,
    config: LlamaConfig,
    seq_len: int = 128,
    entry: str = "prefill",
    options: PartitionOptions | None = None,
    history: int = 0,
) -> OffloadReport:
    """Partition ``entry`` for NNAPI and summarise the result for ``seq_len`` new tokens after
    ``history`` cached ones.

    FLOPs need concrete shapes, so the summary comes from a copy of ``entry`` specialised to
    ``seq_len``; ``partition_seconds`` times the partition of the symbolic function (what
    :class:`NNAPIDispatch` does).
    """
    start = time.perf_counter()
    partition_with_report(mod, options, entry_functions=[entry])
    seconds = time.perf_counter() - start
    func = mod[entry]
    symbols = {str(v): seq_len for v in relax.analysis.defined_symbolic_vars(func)}
    specialised = IRModule({tvm.ir.GlobalVar(entry): func.bind_symbolic_vars(symbols)})
    result = partition_with_report(specialised, options, entry_functions=[entry])
    summary = offload_summary(_entry_module(result.module, entry))
    flops = _attention_calls(func) * attention_flops(config, seq_len, history)
    return OffloadReport(entry, seq_len, summary, flops, seconds, result.refusals)
