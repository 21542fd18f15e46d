# SPDX-License-Identifier: Apache-2.0
"""Partitioning: mark the Relax operators NNAPI can run and group them into NNAPI subgraphs.

``partition(mod)`` prepares a copy of the graph (:mod:`.prepare`: constant folding, batch norms
folded into convolutions), runs ``FuseOpsByPattern`` with our own pattern table, then merges
adjacent composite calls into subgraph functions annotated ``Codegen="nnapi"``
(``MergeCompositeFunctions``, applied per entry function so that any function name works, not
only ``main``), ready for ``relax.transform.RunCodegen``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import tvm
from tvm import IRModule, relax
from tvm.relax.expr_functor import PyExprMutator, mutator
from tvm.relax.utils import copy_with_new_vars

from .ir_utils import bindings, rename_functions
from .lowerings import offloadable_relax_ops, pattern_table
from .patterns import PartitionOptions, Refusal, RefusalKind, collect_refusals
from .prepare import dedicate_dequantize, prepare

CODEGEN_NAME = "nnapi"
#: Attribute of a module ``partition`` returned (with or without NNAPI subgraphs): ``build``
#: does not partition it again.
PARTITIONED_ATTR = "nnapi.partitioned"
#: Attribute of an NNAPI subgraph function partitioned with ``relax_fp32_to_fp16``: the codegen
#: writes it into the graph JSON, whose runtime calls relaxComputationFloat32toFloat16.
RELAXED_ATTR = "nnapi.relax_fp32_to_fp16"


@dataclass
class PartitionResult:
    """A partitioned module and what stayed on the host, and why."""

    module: IRModule
    refusals: list[Refusal] = field(default_factory=list)
    # The module as given, before the graph preparation (the host reference).
    original: IRModule | None = None

    @property
    def subgraphs(self) -> list[str]:
        return nnapi_subgraphs(self.module)


#: Attribute of a function :func:`_lift_control_flow` made of an ``If`` binding: it runs on the
#: host, branches included, and is not partitioned.
HOST_CONTROL_FLOW_ATTR = "nnapi.host_control_flow"


def _is_entry(func: object) -> bool:
    """A Relax function of the program (not a composite, an already offloaded subgraph or
    control flow lifted to the host)."""
    if not isinstance(func, relax.Function):
        return False
    attrs = func.attrs or {}
    return not any(
        key in attrs for key in ("Composite", "Codegen", "Primitive", HOST_CONTROL_FLOW_ATTR)
    )


def _lift_control_flow(
    mod: IRModule, entry_functions: Sequence[str] | None, refusals: list[Refusal]
) -> IRModule:
    """Move each ``If`` binding of the partitioned functions into a function of its own that
    runs on the host, branches included, called where the ``If`` was (TVM 0.27's
    MergeCompositeFunctions cannot visit an ``If``). Each gets a refusal; the operators before
    and after it are partitioned as usual."""
    builder = relax.BlockBuilder(mod)
    count = 0
    for gvar, func in list(mod.functions.items()):
        if not _is_entry(func) or (entry_functions and gvar.name_hint not in entry_functions):
            continue
        body = func.body
        if not isinstance(body, relax.SeqExpr) or not any(
            isinstance(b.value, relax.If) for block in body.blocks for b in block.bindings
        ):
            continue
        blocks = []
        for block in body.blocks:
            block_bindings = []
            for binding in block.bindings:
                value = binding.value
                if isinstance(binding, relax.VarBinding) and isinstance(value, relax.If):
                    name = f"{gvar.name_hint}_host_if_{count}"
                    count += 1
                    free = list(relax.analysis.free_vars(value))
                    # Its own variables (copy_with_new_vars): no variable is defined twice.
                    lifted = copy_with_new_vars(
                        relax.Function(free, relax.SeqExpr([], value), binding.var.ty, func.is_pure)
                    ).with_attr(HOST_CONTROL_FLOW_ATTR, True)
                    target = builder.add_func(lifted, name)
                    refusals.append(
                        Refusal(
                            "relax.If",
                            binding.var.name,
                            RefusalKind.UNSUPPORTED_OPERATOR,
                            "control flow: the If and both its branches run on the host (in "
                            f"{target.name_hint}); NNAPI's IF is not lowered",
                        )
                    )
                    binding = relax.VarBinding(binding.var, relax.Call(target, free))
                block_bindings.append(binding)
            kind = relax.DataflowBlock if isinstance(block, relax.DataflowBlock) else None
            blocks.append((kind or relax.BindingBlock)(block_bindings))
        new_body = relax.SeqExpr(blocks, body.body)
        builder.update_func(
            gvar, relax.Function(func.params, new_body, func.ret_ty, func.is_pure, func.attrs)
        )
    return builder.get() if count else mod


def _merge_composites(mod: IRModule, refusals: list[Refusal]) -> IRModule:
    """MergeCompositeFunctions for every entry function.

    TVM's pass groups only ``main``; we present each entry function to it as ``main``, together
    with just the composite functions it calls, then restore its name.
    """
    entries = [g.name_hint for g, f in mod.functions.items() if _is_entry(f)]
    for name in entries:
        gvar = mod.get_global_var(name)
        func = mod[gvar]
        used = {g.name_hint for g in relax.analysis.all_global_vars(func)}
        host_control_flow = {
            g.name_hint
            for g, f in mod.functions.items()
            if HOST_CONTROL_FLOW_ATTR in (getattr(f, "attrs", None) or {})
        }
        composites = {
            g: f
            for g, f in mod.functions.items()
            if g.name_hint in used
            and not _is_entry(f)
            and isinstance(f, relax.Function)
            and g.name_hint not in host_control_flow
        }
        if not any("Composite" in (f.attrs or {}) for f in composites.values()):
            continue
        builder = relax.BlockBuilder(IRModule(composites))
        func, opaque, casts = _hide_opaque_calls(
            func, builder, composites, refusals, host_control_flow
        )
        scratch = builder.get()
        scratch[tvm.ir.GlobalVar("main")] = func
        scratch = relax.transform.MergeCompositeFunctions()(scratch)
        scratch = _rename_subgraphs(scratch, prefix=f"{name}_nnapi")
        merged = {
            g: f
            for g, f in scratch.functions.items()
            if g.name_hint != "main" and g.name_hint not in opaque
        }
        for g, f in mod.functions.items():
            # Composites stay until every entry is merged: FuseOpsByPattern shares structurally
            # equal ones between functions (e.g. an LLM's prefill and decode).
            if g.name_hint != gvar.name_hint:
                merged[g] = f
        restored = _OpaqueCallRestorer(opaque).visit_expr(scratch["main"])
        merged[gvar] = _restore_match_casts(restored, casts)
        mod = IRModule(merged, attrs=mod.attrs, global_infos=mod.global_infos)
    return _remove_unused_composites(mod)


def _remove_unused_composites(mod: IRModule) -> IRModule:
    """Drop the composite functions no function calls any more (they were merged), and the
    NNAPI subgraphs MergeCompositeFunctions grouped for dead code it then removed."""
    used: set[str] = set()
    for gvar, func in mod.functions.items():
        attrs = getattr(func, "attrs", None) or {}
        if isinstance(func, relax.Function) and "Composite" not in attrs:
            used.update(
                g.name_hint
                for g in relax.analysis.all_global_vars(func)
                if g.name_hint != gvar.name_hint
            )

    def needed(gvar: tvm.ir.GlobalVar, func: object) -> bool:
        attrs = getattr(func, "attrs", None) or {}
        grouped = "Composite" in attrs or attrs.get("Codegen") == CODEGEN_NAME
        return gvar.name_hint in used or not grouped

    kept = {g: f for g, f in mod.functions.items() if needed(g, f)}
    if len(kept) == len(mod.functions):
        return mod
    return IRModule(kept, attrs=mod.attrs, global_infos=mod.global_infos)


def _contains_extern_func(expr: relax.Expr) -> bool:
    found: list[relax.Expr] = []
    relax.analysis.post_order_visit(
        expr, lambda node: found.append(node) if isinstance(node, relax.ExternFunc) else None
    )
    return bool(found)


def _leaf_vars(
    expr: relax.Expr, leaves: list[relax.Var], defined: set[relax.Var]
) -> list[relax.Var]:
    """The variables of the function (``defined``: its parameters and bindings) that ``expr``
    or the fields of its tuples are; symbolic dimensions (TIR variables) are not among them."""
    if isinstance(expr, relax.Var):
        if expr in defined:
            leaves.append(expr)
    elif isinstance(expr, relax.Tuple):
        for field in expr.fields:
            _leaf_vars(field, leaves, defined)
    return leaves


def _uses_symbolic_values(expr: relax.Expr, defined: set[relax.Var]) -> bool:
    """Whether ``expr`` (an argument: fields of tuples included) is or holds a TIR expression
    of symbolic dimensions, e.g. the ``(seq_len,)`` end of a strided_slice or the end of an
    arange; a ShapeExpr, which MergeCompositeFunctions can visit, does not count."""
    if isinstance(expr, relax.Tuple):
        return any(_uses_symbolic_values(field, defined) for field in expr.fields)
    if isinstance(expr, relax.Var):
        return expr not in defined
    if isinstance(getattr(expr, "ty", None), tvm.ir.PrimType):
        return bool(tvm.tirx.analysis.undefined_vars(expr))
    return False


def _substitute_leaves(expr: relax.Expr, mapping: dict[relax.Var, relax.Expr]) -> relax.Expr:
    if isinstance(expr, relax.Var):
        return mapping.get(expr, expr)
    if isinstance(expr, relax.Tuple):
        return relax.Tuple([_substitute_leaves(field, mapping) for field in expr.fields])
    return expr


# A call hidden from MergeCompositeFunctions: the original call and its variable arguments.
_OpaqueCall = tuple[relax.Call, list[relax.Var]]


def _cast_dims_used(call: relax.Call, cast_dims: set) -> set:
    """The dimensions of ``cast_dims`` that the call's shape arguments use."""
    used: set = set()
    if not cast_dims:
        return used
    for arg in call.args:
        if isinstance(arg, relax.ShapeExpr):
            for value in arg.values:
                used.update(v for v in tvm.tirx.analysis.undefined_vars(value) if v in cast_dims)
    return used


def _inline_single_operator(composite: relax.Function, call: relax.Call) -> relax.Call | None:
    """The operator call of a single-operator composite with the call's arguments, or None."""
    calls = [
        b.value
        for b in bindings(composite)
        if isinstance(b.value, relax.Call) and isinstance(b.value.op, tvm.ir.Op)
    ]
    if len(calls) != 1:
        return None
    mapping = dict(zip(composite.params, call.args, strict=True))
    inner = calls[0]
    if any(isinstance(a, relax.Var) and a not in mapping for a in inner.args):
        return None
    args = [mapping.get(a, a) if isinstance(a, relax.Var) else a for a in inner.args]
    return relax.Call(inner.op, args, inner.attrs, inner.ty_args)


def _hide_opaque_calls(
    func: relax.Function,
    builder: relax.BlockBuilder,
    composites: dict[tvm.ir.GlobalVar, relax.Function],
    refusals: list[Refusal],
    host_functions: set[str] = frozenset(),  # type: ignore[assignment]
) -> tuple[relax.Function, dict[str, _OpaqueCall], dict[relax.Var, tvm.ir.Type]]:
    """Replace calls of packed functions (``call_dps_packed``/``call_pure_packed`` of an
    ExternFunc, e.g. the KV-cache builtins of an LLM), of ``host_functions`` (control flow
    lifted to the host) and host operators with symbolic
    dimensions among their arguments by calls of placeholder functions, and ``match_cast``
    bindings (which the ONNX frontend writes for Compress, NonZero and run-time
    Squeeze/Unsqueeze axes).

    TVM 0.27's MergeCompositeFunctions cannot visit an ExternFunc ("Do not have a default for
    relax.expr.ExternFunc"), nor a TIR variable in a call's arguments ("Could not find
    memo-ized group for expression of type ir.Var"), which a model with a symbolic sequence
    length has in the host operators torch.export writes for it: the ``(seq_len,)`` end of a
    strided_slice, the end of an arange. The placeholders take the call's variable arguments
    so that the grouping still sees the dataflow through them. :class:`_OpaqueCallRestorer`
    puts the original calls back.

    Nor can it visit a MatchCast binding ("Invalid type: relax.expr.MatchCast"): each becomes a
    plain binding of its value to the same variable (typed as the cast, so the symbolic
    variables it defines keep their meaning), returned with the result while grouping, and
    :func:`_restore_match_casts` turns it back into the cast (a placeholder call fails in the
    pass as soon as a shape argument uses the variables the cast defines).

    An offloaded operator whose shape argument uses the symbolic variables a cast defines (a
    reshape after Squeeze with run-time axes) is put back as a host operator, with a refusal:
    the grouping cannot see that it depends on the cast, and the NNAPI runtime binds a
    subgraph's dimensions from its inputs only.
    """
    opaque: dict[str, _OpaqueCall] = {}
    casts: dict[relax.Var, tvm.ir.Type] = {}
    cast_dims: set[tvm.tirx.Var] = set()
    body = func.body
    if not isinstance(body, relax.SeqExpr):
        return func, opaque, casts
    defined = {*func.params, *(b.var for block in body.blocks for b in block.bindings)}
    blocks = []
    for block in body.blocks:
        block_bindings = []
        for binding in block.bindings:
            value = binding.value
            if isinstance(binding, relax.MatchCast):
                casts[binding.var] = binding.ty
                cast_dims.update(relax.analysis.definable_tir_vars_in_type(binding.ty))
                binding = relax.VarBinding(binding.var, value)
            elif (
                isinstance(binding, relax.VarBinding)
                and isinstance(value, relax.Call)
                and isinstance(value.op, tvm.ir.GlobalVar)
                and value.op in composites
                and (dims := _cast_dims_used(value, cast_dims))
            ):
                # A shape argument made of dimensions a match_cast defines: a host operator.
                inlined = _inline_single_operator(composites[value.op], value)
                if inlined is not None:
                    names = ", ".join(sorted(str(d) for d in dims))
                    refusals.append(
                        Refusal(
                            str(inlined.op.name),
                            binding.var.name,
                            RefusalKind.DYNAMIC_SHAPE,
                            f"its shape argument uses {names}, which a match_cast computes at "
                            "run time (an NNAPI subgraph's dimensions come from its inputs)",
                        )
                    )
                    binding = relax.VarBinding(binding.var, inlined)
            elif (
                isinstance(binding, relax.VarBinding)
                and isinstance(value, relax.Call)
                and (
                    isinstance(value.op, relax.ExternFunc)
                    or (
                        isinstance(value.op, tvm.ir.GlobalVar)
                        and value.op.name_hint in host_functions
                    )
                    or any(_contains_extern_func(arg) for arg in value.args)
                    or (
                        isinstance(value.op, tvm.ir.Op)
                        and any(_uses_symbolic_values(arg, defined) for arg in value.args)
                    )
                )
            ):
                leaves = [v for arg in value.args for v in _leaf_vars(arg, [], defined)]
                name = f"__nnapi_opaque_call_{len(opaque)}"
                params = [relax.Var(f"arg{i}", leaf.ty) for i, leaf in enumerate(leaves)]
                result = relax.SeqExpr([], relax.Var("result", binding.var.ty))
                placeholder = relax.Function(params, result, binding.var.ty, is_pure=False)
                placeholder_var = builder.add_func(placeholder, name)
                if placeholder_var.name_hint != name:  # the builder found an equal function
                    raise ValueError(f"placeholder {name} for {binding.var.name} is not unique")
                opaque[name] = (value, leaves)
                # Normalized (typed) here: MergeCompositeFunctions would fill the type in place,
                # changing the structural hash of the function it has already recorded ("main
                # ... does not appear in the de-duplication map").
                call = builder.normalize(relax.Call(placeholder_var, leaves))
                binding = relax.VarBinding(binding.var, call)
            block_bindings.append(binding)
        if isinstance(block, relax.DataflowBlock):
            blocks.append(relax.DataflowBlock(block_bindings))
        else:
            blocks.append(relax.BindingBlock(block_bindings))
    if not opaque and not casts:
        return func, opaque, casts
    result, ret_ty = body.body, func.ret_ty
    if casts:
        # Returned while grouping, so that a cast used only through its symbolic variables (the
        # shape of a reshape on the host) is not dropped as unused.
        result = relax.Tuple([body.body, *casts])
        ret_ty = relax.TupleType([func.ret_ty, *(var.ty for var in casts)])
    new_body = relax.SeqExpr(blocks, result)
    func = relax.Function(func.params, new_body, ret_ty, func.is_pure, func.attrs)
    return func, opaque, casts


def _restore_match_casts(
    func: relax.Function, casts: dict[relax.Var, tvm.ir.Type]
) -> relax.Function:
    """Put back the ``match_cast`` bindings that :func:`_hide_opaque_calls` made plain bindings
    (their variables, which MergeCompositeFunctions keeps, say which) and the result."""
    body = func.body
    if not casts or not isinstance(body, relax.SeqExpr):
        return func
    if not isinstance(body.body, relax.Tuple):
        raise ValueError("the result of a function with match_cast bindings was not kept")
    blocks = []
    for block in body.blocks:
        block_bindings = []
        for binding in block.bindings:
            if isinstance(binding, relax.VarBinding) and binding.var in casts:
                binding = relax.MatchCast(binding.var, binding.value, casts[binding.var])
            block_bindings.append(binding)
        block_type = relax.DataflowBlock if isinstance(block, relax.DataflowBlock) else None
        blocks.append((block_type or relax.BindingBlock)(block_bindings))
    new_body = relax.SeqExpr(blocks, body.body.fields[0])
    return relax.Function(func.params, new_body, func.ret_ty.fields[0], func.is_pure, func.attrs)


@mutator
class _OpaqueCallRestorer(PyExprMutator):
    """Put back the calls that :func:`_hide_opaque_calls` replaced, with their (possibly
    renamed) variable arguments."""

    def __init__(self, opaque: dict[str, _OpaqueCall]) -> None:
        super().__init__()
        self.opaque = opaque

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        if isinstance(call.op, tvm.ir.GlobalVar) and call.op.name_hint in self.opaque:
            original, leaves = self.opaque[call.op.name_hint]
            mapping = dict(zip(leaves, (self.visit_expr(arg) for arg in call.args), strict=True))
            args = [_substitute_leaves(arg, mapping) for arg in original.args]
            return relax.Call(original.op, args, original.attrs, original.ty_args)
        return super().visit_call_(call)


def _rename_subgraphs(mod: IRModule, prefix: str) -> IRModule:
    """Give the merged subgraphs short names (``<entry>_nnapi_<k>`` in call order) instead of
    the concatenation of every fused operator's name that MergeCompositeFunctions produces."""
    main = mod["main"]
    order = [
        binding.value.op
        for binding in bindings(main)
        if isinstance(binding.value, relax.Call) and isinstance(binding.value.op, tvm.ir.GlobalVar)
    ]
    subgraphs = [g for g in order if (mod[g].attrs or {}).get("Codegen") == CODEGEN_NAME]
    names = {gvar: f"{prefix}_{index}" for index, gvar in enumerate(dict.fromkeys(subgraphs))}
    return rename_functions(mod, names)


def _unsupported_operators(
    mod: IRModule, known: set[tuple[str, str]], entry_functions: Sequence[str] | None = None
) -> list[Refusal]:
    """Operators left in the entry functions (those partitioned) that no pattern covers."""
    offloadable = offloadable_relax_ops()
    refusals = []
    for gvar, func in mod.functions.items():
        if not _is_entry(func):
            continue
        if entry_functions and gvar.name_hint not in entry_functions:
            continue
        for binding in bindings(func):
            value = binding.value
            if not (isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op)):
                continue
            name = str(value.op.name)
            if (binding.var.name, name) in known:
                continue
            if name in offloadable:
                # A pattern exists for the operator but not for this form (argument kinds).
                kind = RefusalKind.ATTRIBUTE
                reason = f"this form of {name} is not offloaded (in {gvar.name_hint})"
            else:
                kind = RefusalKind.UNSUPPORTED_OPERATOR
                reason = f"no NNAPI pattern for {name} (in {gvar.name_hint})"
                callee = next(
                    (str(a.global_symbol) for a in value.args if isinstance(a, relax.ExternFunc)),
                    None,
                )
                kernel = value.args[0] if name == "relax.call_tir" and value.args else None
                if isinstance(kernel, tvm.ir.GlobalVar):
                    reason = _tir_kernel_reason(kernel.name_hint, gvar.name_hint)
                if callee is not None:
                    # A packed call: the host function it calls is what stays on the host.
                    reason = (
                        f"{name} of the packed function {callee}, a host function NNAPI "
                        f"cannot run (in {gvar.name_hint})"
                    )
            refusals.append(Refusal(name, binding.var.name, kind, reason))
    return refusals


def _tir_kernel_reason(kernel: str, function: str) -> str:
    """Why a ``relax.call_tir`` of ``kernel`` (a TVM kernel of the program) stays on the host."""
    if kernel.startswith("dequantize"):
        return (
            f"relax.call_tir of {kernel}: group-quantized weights (4-bit, which no NNAPI type "
            f"holds) are dequantized by this TVM kernel on the host at every call; the "
            f"projection's FULLY_CONNECTED on NNAPI takes the float weight as an input "
            f"(in {function})"
        )
    return f"relax.call_tir of the TVM kernel {kernel}, which NNAPI cannot run (in {function})"


def _host_bindings(mod: IRModule, entry_functions: Sequence[str] | None) -> set[tuple[str, str]]:
    """(binding, operator) of the operator calls left in the partitioned entry functions."""
    left = set()
    for gvar, func in mod.functions.items():
        if not _is_entry(func) or (entry_functions and gvar.name_hint not in entry_functions):
            continue
        for binding in bindings(func):
            value = binding.value
            if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op):
                left.add((binding.var.name, str(value.op.name)))
    return left


def _mark_relaxed(mod: IRModule) -> IRModule:
    """Mark every NNAPI subgraph function as allowed to compute float32 in float16 (``mod`` is
    the partitioner's own copy)."""
    for gvar, func in list(mod.functions.items()):
        if isinstance(func, relax.Function) and (func.attrs or {}).get("Codegen") == CODEGEN_NAME:
            mod[gvar] = func.with_attr(RELAXED_ATTR, True)
    return mod


def partition_with_report(
    mod: IRModule,
    options: PartitionOptions | None = None,
    entry_functions: Sequence[str] | None = None,
) -> PartitionResult:
    """Partition ``mod`` for NNAPI and report every operator left on the host.

    ``entry_functions`` limits partitioning (and the report) to those functions, e.g.
    ``["prefill"]`` for an LLM whose decode stays on the host. The graph preparation
    (``options.prepare``) works on a copy: ``mod`` is not changed, and the result keeps it as
    ``original`` (the host reference).

    With ``options.device_oracle`` (the chosen devices of a target), every candidate the
    oracle says no chosen device runs is kept on the host with its reason, and the graph is
    partitioned again, smaller patterns taking over from refused fused ones, until the devices
    take every offloaded operation. With ``strategy="cost"`` and a ``cost_oracle``, that
    partition is then placed by modelled time (docs/cli.md, "Partition strategies") and
    partitioned again with the candidates kept on the host refused as ``cost``, round after
    round until the placement keeps every offloaded candidate.
    """
    options = options or PartitionOptions()
    oracle = options.device_oracle
    costing = options.strategy == "cost" and options.cost_oracle is not None
    if oracle is None and not costing:
        return _partition_once(mod, options, entry_functions)
    refused = dict(options.candidate_refusals)
    while True:
        attempt = replace(options, candidate_refusals=refused)
        result = _partition_once(mod, attempt, entry_functions)
        new: dict = {}
        if oracle is not None:
            new = {
                key: (RefusalKind.DEVICE_SUPPORT, reason)
                for key, reason in oracle.refused_candidates(result.module).items()
                if key not in refused
            }
        if not new and costing:
            # The devices take everything offloaded: place it by modelled time. Smaller
            # patterns that take over from refused candidates are placed in the next round.
            assert options.cost_oracle is not None
            new = {
                key: value
                for key, value in options.cost_oracle.refused_candidates(result.module).items()
                if key not in refused
            }
        if not new:
            return result
        # Each round refuses keys no earlier round refused, and a module has finitely many.
        refused.update(new)


def _partition_once(
    mod: IRModule, options: PartitionOptions, entry_functions: Sequence[str] | None
) -> PartitionResult:
    original = mod
    if options.prepare:
        mod = prepare(mod, entry_functions, nhwc=options.nhwc)
    merge_refusals: list[Refusal] = []
    mod = _lift_control_flow(mod, entry_functions, merge_refusals)
    mod = dedicate_dequantize(relax.transform.ConvertToDataflow(min_size=1)(mod))
    partitioned = list(entry_functions) if entry_functions else None
    if partitioned is None and any(
        HOST_CONTROL_FLOW_ATTR in (getattr(f, "attrs", None) or {}) for f in mod.functions.values()
    ):
        partitioned = [g.name_hint for g, f in mod.functions.items() if _is_entry(f)]
    with collect_refusals() as collector:
        mod = relax.transform.FuseOpsByPattern(
            pattern_table(options),
            bind_constants=True,
            annotate_codegen=False,
            entry_functions=partitioned,
        )(mod)
    mod = _merge_composites(mod, merge_refusals)
    if options.relax_fp32_to_fp16:
        mod = _mark_relaxed(mod)
    known = {**collector.refusals, **{(r.binding, r.operator): r for r in merge_refusals}}
    if options.candidate_refusals:
        # A fused candidate an earlier round refused records each of its operators; those a
        # smaller pattern then offloaded are no longer on the host.
        host = _host_bindings(mod, entry_functions)
        rounds = (RefusalKind.DEVICE_SUPPORT, RefusalKind.COST)
        known = {
            key: r
            for key, r in known.items()
            if r.kind not in rounds or (r.binding, r.operator) in host
        }
    refusals = list(known.values())
    refusals += _unsupported_operators(mod, set(known), entry_functions)
    return PartitionResult(mod.with_attr(PARTITIONED_ATTR, True), refusals, original)


def partition(
    mod: IRModule,
    options: PartitionOptions | None = None,
    entry_functions: Sequence[str] | None = None,
) -> IRModule:
    """Partition ``mod`` for NNAPI; returns the module with ``Codegen="nnapi"`` subgraphs."""
    return partition_with_report(mod, options, entry_functions).module


def is_partitioned(mod: IRModule) -> bool:
    """Whether ``mod`` is a result of :func:`partition` (it may have no NNAPI subgraph) or has
    NNAPI subgraphs."""
    return bool((mod.attrs or {}).get(PARTITIONED_ATTR, False)) or bool(nnapi_subgraphs(mod))


def nnapi_subgraphs(mod: IRModule) -> list[str]:
    """Names of the functions marked for the NNAPI codegen."""
    names = []
    for gvar, func in mod.functions.items():
        attrs = getattr(func, "attrs", None) or {}
        if attrs.get("Codegen") == CODEGEN_NAME:
            names.append(gvar.name_hint)
    return sorted(names)
