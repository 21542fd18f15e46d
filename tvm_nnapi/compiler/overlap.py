# SPDX-License-Identifier: Apache-2.0
"""Overlapping NNAPI subgraphs with the work that follows them.

After ``RunCodegen`` a subgraph call is ``v = R.call_dps_packed("<symbol>", args, out_sinfo)``:
the VM runs it to completion before the next binding. When the next binding does not read
``v`` (an independent branch: host code, or another subgraph), the call is rewritten to start
the subgraph and return at once, and a join is placed just before the first binding that reads
it::

    v = R.call_dps_packed("<symbol>_async", args, out_sinfo)      # starts, returns at once
    ...                                                           # bindings that do not read v
    w = R.call_dps_packed("tvm_nnapi.runtime.join", (v, *args), out_sinfo)
    ... w ...                                                     # readers of v read w

The join waits for the execution, raises its error if it failed, and copies its outputs into
``w``. It takes the call's arguments as well, so Relax's memory planner keeps their storage
(and that of ``v``) from being reused until the execution has finished: the planner assumes a
packed call keeps no reference to its arguments once it returns, and this one does until the
join. The copy is what keeps the planner right: ``w`` is a planned allocation of its own, where
an alias of ``v`` would let the planner reuse ``v``'s storage while ``w`` is still read.

What the VM allows: it runs one binding at a time, so the overlap is between a subgraph in
flight and the bindings the VM runs before its join (host operators, other subgraphs, started
or synchronous); two host operators never run at once, and nothing moves bindings to make more
room than the program order gives. Only bindings of one block are considered: a call whose
readers are all in later blocks is joined at the end of its block.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator

#: Suffix of the runtime module function that starts a subgraph and returns at once.
ASYNC_SUFFIX = "_async"
#: The runtime's global function that waits for a started subgraph and copies its outputs.
JOIN_FUNCTION = "tvm_nnapi.runtime.join"


def overlap_subgraph_calls(mod: tvm.IRModule, symbols: Collection[str]) -> tuple[tvm.IRModule, int]:
    """``mod`` with the calls of the subgraphs named in ``symbols`` started asynchronously where
    a binding that does not read their outputs follows them; and how many calls were rewritten."""
    rewriter = _Overlap(mod, frozenset(symbols))
    for gvar, func in mod.functions.items():
        if isinstance(func, relax.Function) and not (func.attrs or {}).get("Codegen"):
            rewriter.builder_.update_func(gvar, rewriter.visit_expr(func))
    return rewriter.builder_.finalize(), rewriter.started


@dataclass(frozen=True)
class Join:
    """Where a started subgraph call of a block joins: before the binding at ``reader``
    (``len(bindings)``: after the last one). ``projections`` are the bindings that only take
    items of the call's tuple of outputs before that reader; they move to just after the join,
    projecting the joined outputs."""

    reader: int
    projections: tuple[int, ...] = ()


def join_points(
    bindings: Sequence[relax.Binding], is_subgraph_call: Callable[[relax.Expr], bool]
) -> dict[int, Join]:
    """Which subgraph calls of one block start, and where they join: {index of the call: its
    :class:`Join`}. A call is started when some binding after it, before its first reader,
    does other work (``is_subgraph_call(value)`` says which values are subgraph calls; taking
    an item of the call's outputs is not a read). The estimate's timeline and the compiler's
    rewrite both follow this plan."""
    plan = {}
    for i, binding in enumerate(bindings):
        if not is_subgraph_call(binding.value):
            continue
        names = {binding.var}
        projections = []
        reader = len(bindings)
        for j in range(i + 1, len(bindings)):
            value = bindings[j].value
            if isinstance(value, relax.TupleGetItem) and value.tuple_value.same_as(binding.var):
                names.add(bindings[j].var)
                projections.append(j)
            elif names & set(relax.analysis.free_vars(value)):
                reader = j
                break
        if reader - (i + 1) > len(projections):  # something else runs before the reader
            plan[i] = Join(reader, tuple(projections))
    return plan


def _subgraph_symbol(value: relax.Expr, symbols: frozenset[str]) -> str | None:
    if not (isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op)):
        return None
    if value.op.name != "relax.call_dps_packed":
        return None
    callee = value.args[0]
    if isinstance(callee, relax.ExternFunc) and str(callee.global_symbol) in symbols:
        return str(callee.global_symbol)
    return None


#: A started call's binding and the projections of its outputs moved after its join.
_Started = tuple[relax.VarBinding, list[relax.VarBinding]]


@mutator
class _Overlap(PyExprMutator):
    def __init__(self, mod: tvm.IRModule, symbols: frozenset[str]) -> None:
        super().__init__(mod)
        self.symbols = symbols
        self.started = 0
        # Per block being visited: the original binding var -> the calls to join before it
        # (the original call binding), and the calls to join after the block's last binding.
        self.join_before: dict[relax.Var, list[_Started]] = {}
        self.join_after: dict[relax.Var, list[_Started]] = {}
        self.overlapped: set[relax.Var] = set()
        self.deferred: set[relax.Var] = set()  # projections emitted after their join

    def _plan(self, block: relax.BindingBlock) -> None:
        bindings = list(block.bindings)
        is_call = lambda value: _subgraph_symbol(value, self.symbols) is not None  # noqa: E731
        for i, join in join_points(bindings, is_call).items():
            started = bindings[i]
            self.overlapped.add(started.var)
            projections = [bindings[j] for j in join.projections]
            self.deferred.update(p.var for p in projections)
            if join.reader == len(bindings):
                self.join_after.setdefault(bindings[-1].var, []).append((started, projections))
            else:
                self.join_before.setdefault(bindings[join.reader].var, []).append(
                    (started, projections)
                )

    def visit_dataflow_block_(self, block: relax.DataflowBlock) -> relax.BindingBlock:
        self._plan(block)
        return super().visit_dataflow_block_(block)

    def visit_binding_block_(self, block: relax.BindingBlock) -> relax.BindingBlock:
        self._plan(block)
        return super().visit_binding_block_(block)

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        for started in self.join_before.pop(binding.var, []):
            self._join(*started)
        if binding.var in self.deferred:
            pass
        elif binding.var in self.overlapped:
            call = binding.value
            symbol = str(call.args[0].global_symbol)
            started = relax.Call(
                call.op,
                [relax.ExternFunc(symbol + ASYNC_SUFFIX), self.visit_expr(call.args[1])],
                call.attrs,
                call.ty_args,
            )
            self.builder_.emit_normalized(
                relax.VarBinding(binding.var, self.builder_.normalize(started))
            )
            self.started += 1
        else:
            super().visit_var_binding_(binding)
        for started in self.join_after.pop(binding.var, []):
            self._join(*started)

    def _join(self, binding: relax.VarBinding, projections: list[relax.VarBinding]) -> None:
        var = binding.var
        arguments = list(self.visit_expr(binding.value.args[1]).fields)
        join = relax.Call(
            binding.value.op,
            [relax.ExternFunc(JOIN_FUNCTION), relax.Tuple([var, *arguments])],
            binding.value.attrs,
            binding.value.ty_args,
        )
        name = var.name + "_joined"
        joined = (
            self.builder_.emit(join, name_hint=name)
            if isinstance(var, relax.DataflowVar) or not self.builder_.current_block_is_dataflow()
            else self.builder_.emit_output(join, name_hint=name)
        )
        self.set_var_remap(var, joined)
        for projection in projections:
            item = relax.TupleGetItem(joined, projection.value.index)
            self.builder_.emit_normalized(
                relax.VarBinding(projection.var, self.builder_.normalize(item))
            )
