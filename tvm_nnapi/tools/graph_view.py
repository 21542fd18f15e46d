# SPDX-License-Identifier: Apache-2.0
"""The partitioned program as a graph of operators, for drawing it (``--report``).

:func:`operator_graph` walks one entry function of a partitioned module in execution order.
Each node is either

- an ``nnapi`` node: one composite (a matched pattern, e.g. conv2d + add + clip) inside an NNAPI
  subgraph call, with its Relax operators and the NNAPI operations the codegen emitted for it;
- a ``host`` node: a Relax operator (or a packed call such as an LLM's KV-cache attention, or a
  call of another function) that stays on TVM's host code, with its refusal reason if one was
  recorded;
- an ``input`` node: a tensor input of the entry function (weights passed as parameters are
  not drawn).

Edges follow the dataflow. With ``detail="subgraph"`` every NNAPI subgraph call is one node
(used for large programs such as a 7B LLM's prefill).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import tvm
from tvm import relax

from ..compiler.flops import call_flops
from ..compiler.partition import CODEGEN_NAME

# A value: the nodes producing it, or a tuple of such values.
_Value = frozenset[int] | tuple[Any, ...]
_EMPTY: frozenset[int] = frozenset()


@dataclass
class GraphNode:
    id: int
    kind: str  # "input", "nnapi" or "host"
    label: str
    binding: str
    relax_operators: list[str] = field(default_factory=list)
    nnapi_operations: list[str] = field(default_factory=list)
    subgraph: str | None = None  # the NNAPI subgraph function (nnapi nodes)
    call_index: int | None = None  # which call of an NNAPI subgraph (0, 1, ... in call order)
    composite: str | None = None
    shape: str = ""
    flops: int = 0
    refusal: dict[str, str] | None = None
    # NNAPI devices that ran the node's operations (filled from a run's traces when known).
    devices: list[str] = field(default_factory=list)


@dataclass
class OperatorGraph:
    entry: str
    detail: str  # "operator" or "subgraph"
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)
    # NNAPI subgraph calls in execution order: (subgraph function, node ids of the call).
    subgraph_calls: list[tuple[str, list[int]]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "detail": self.detail,
            "nodes": [asdict(node) for node in self.nodes],
            "edges": [list(edge) for edge in self.edges],
            "subgraph_calls": [
                {"subgraph": name, "nodes": ids} for name, ids in self.subgraph_calls
            ],
        }


def _union(value: _Value) -> frozenset[int]:
    if isinstance(value, frozenset):
        return value
    result: frozenset[int] = _EMPTY
    for item in value:
        result |= _union(item)
    return result


def _shape_text(expr: relax.Expr) -> str:
    ty = expr.ty
    if isinstance(ty, relax.TensorType) and ty.shape is not None:
        dims = "x".join(str(d.value) if hasattr(d, "value") else str(d) for d in ty.shape.values)
        return f"{dims} {ty.dtype}"
    if isinstance(ty, relax.TupleType):
        return "(" + ", ".join(_shape_text(relax.Var("f", f)) for f in ty.fields) + ")"
    return ""


def _operator_calls(expr: relax.Expr) -> list[relax.Call]:
    found: list[relax.Call] = []
    relax.analysis.post_order_visit(
        expr,
        lambda node: (
            found.append(node)
            if isinstance(node, relax.Call) and isinstance(node.op, tvm.ir.Op)
            else None
        ),
    )
    return found


def _extern_name(call: relax.Call) -> str | None:
    if isinstance(call.op, relax.ExternFunc):
        return str(call.op.global_symbol)
    for arg in call.args:
        if isinstance(arg, relax.ExternFunc):
            return str(arg.global_symbol)
    return None


class _Walker:
    def __init__(
        self, mod: tvm.IRModule, refusals: dict[tuple[str, str], dict[str, str]], detail: str
    ) -> None:
        self.mod = mod
        self.refusals = refusals
        self.detail = detail
        self.graph: OperatorGraph | None = None
        self.calls_per_subgraph: Counter = Counter()
        self._lowered: dict[str, dict[relax.Var, list[str]]] = {}

    def lowered(self, name: str, func: relax.Function) -> dict[relax.Var, list[str]]:
        """The operations the codegen emits per composite call of subgraph ``name`` (lowered
        once per subgraph function, however often it is called)."""
        if name not in self._lowered:
            self._lowered[name] = lowered_operations(func)
        return self._lowered[name]

    def add(self, node: GraphNode, inputs: frozenset[int]) -> int:
        assert self.graph is not None
        node.id = len(self.graph.nodes)
        self.graph.nodes.append(node)
        self.graph.edges.extend((source, node.id) for source in sorted(inputs))
        return node.id

    def walk(self, entry: str) -> OperatorGraph:
        self.graph = OperatorGraph(entry, self.detail)
        func = self.mod[entry]
        values: dict[relax.Var, _Value] = {}
        count = (func.attrs or {}).get("num_input")
        inputs = func.params if count is None else func.params[: int(count)]
        for param in func.params:
            values[param] = _EMPTY
        for param in inputs:
            if isinstance(param.ty, relax.TensorType):
                node = GraphNode(0, "input", param.name, param.name, shape=_shape_text(param))
                values[param] = frozenset([self.add(node, _EMPTY)])
        self.function_body(func, values)
        return self.graph

    def value_of(self, expr: relax.Expr, values: dict[relax.Var, _Value]) -> _Value:
        if isinstance(expr, relax.Var):
            return values.get(expr, _EMPTY)
        if isinstance(expr, relax.Tuple):
            return tuple(self.value_of(field, values) for field in expr.fields)
        if isinstance(expr, relax.TupleGetItem):
            inner = self.value_of(expr.tuple_value, values)
            if isinstance(inner, tuple) and int(expr.index) < len(inner):
                return inner[int(expr.index)]
            return _union(inner)
        if isinstance(expr, relax.Call):
            result: frozenset[int] = _EMPTY
            for arg in expr.args:
                result |= _union(self.value_of(arg, values))
            return result
        return _EMPTY

    def function_body(self, func: relax.Function, values: dict[relax.Var, _Value]) -> _Value:
        body = func.body
        blocks = body.blocks if isinstance(body, relax.SeqExpr) else []
        for block in blocks:
            for binding in block.bindings:
                values[binding.var] = self.binding(binding, values)
        result = body.body if isinstance(body, relax.SeqExpr) else body
        return self.value_of(result, values)

    def binding(self, binding: relax.Binding, values: dict[relax.Var, _Value]) -> _Value:
        value = binding.value
        name = binding.var.name
        if not isinstance(value, relax.Call):
            return self.value_of(value, values)
        arguments = [self.value_of(arg, values) for arg in value.args]
        inputs = _EMPTY
        for argument in arguments:
            inputs |= _union(argument)
        if isinstance(value.op, tvm.ir.GlobalVar):
            callee = self.mod[value.op]
            attrs = getattr(callee, "attrs", None) or {}
            if attrs.get("Codegen") == CODEGEN_NAME:
                return self.subgraph_call(value.op.name_hint, callee, arguments, inputs, name)
            return frozenset(
                [self.add(GraphNode(0, "host", f"call {value.op.name_hint}", name), inputs)]
            )
        extern = _extern_name(value)
        if extern is not None:
            label = extern.removeprefix("vm.builtin.")
            node = GraphNode(0, "host", label, name, relax_operators=[extern])
            node.shape = _shape_text(binding.var)
            if isinstance(value.op, tvm.ir.Op):
                node.refusal = self.refusals.get((name, str(value.op.name)))
            return frozenset([self.add(node, inputs)])
        if isinstance(value.op, tvm.ir.Op):
            operator = str(value.op.name)
            node = GraphNode(
                0,
                "host",
                operator.removeprefix("relax."),
                name,
                relax_operators=[operator],
                shape=_shape_text(binding.var),
                flops=call_flops(value),
                refusal=self.refusals.get((name, operator)),
            )
            return frozenset([self.add(node, inputs)])
        return inputs

    def subgraph_call(
        self,
        name: str,
        func: relax.Function,
        arguments: list[_Value],
        inputs: frozenset[int],
        binding: str,
    ) -> _Value:
        assert self.graph is not None
        call_index = self.calls_per_subgraph[name]
        self.calls_per_subgraph[name] += 1
        first = len(self.graph.nodes)
        if self.detail == "subgraph":
            operators: list[str] = []
            flops = 0
            for block in func.body.blocks:
                for item in block.bindings:
                    if isinstance(item.value, relax.Function):
                        continue
                    callee = item.value.op if isinstance(item.value, relax.Call) else None
                    local_function = self._local_function(func, callee)
                    if local_function is not None:
                        calls = _operator_calls(local_function.body)
                        operators += [str(c.op.name) for c in calls]
                        flops += sum(call_flops(c) for c in calls)
            # The operations the runtime executes: the codegen's lowering of this function.
            operations = [op for ops in self.lowered(name, func).values() for op in ops]
            node = GraphNode(
                0,
                "nnapi",
                name,
                binding,
                relax_operators=operators,
                nnapi_operations=operations,
                subgraph=name,
                call_index=call_index,
                flops=flops,
                shape=_shape_text(func.body.body),
            )
            node_id = self.add(node, inputs)
            self.graph.subgraph_calls.append((name, [node_id]))
            return frozenset([node_id])
        emitted = self.lowered(name, func)
        values: dict[relax.Var, _Value] = dict(zip(func.params, arguments, strict=True))
        local: dict[relax.Var, relax.Function] = {}
        for block in func.body.blocks:
            for item in block.bindings:
                value = item.value
                if isinstance(value, relax.Function):
                    local[item.var] = value
                    continue
                if isinstance(value, relax.Call) and value.op in local:
                    composite = local[value.op]
                    composite_name = str(composite.attrs["Composite"])
                    calls = _operator_calls(composite.body)
                    args = _EMPTY
                    for arg in value.args:
                        args |= _union(self.value_of(arg, values))
                    node = GraphNode(
                        0,
                        "nnapi",
                        " + ".join(str(c.op.name).removeprefix("relax.") for c in calls)
                        or composite_name,
                        item.var.name,
                        relax_operators=[str(c.op.name) for c in calls],
                        nnapi_operations=list(emitted.get(item.var, ())),
                        subgraph=name,
                        call_index=call_index,
                        composite=composite_name,
                        shape=_shape_text(item.var),
                        flops=sum(call_flops(c) for c in calls),
                    )
                    values[item.var] = frozenset([self.add(node, args)])
                else:
                    values[item.var] = self.value_of(value, values)
        self.graph.subgraph_calls.append((name, list(range(first, len(self.graph.nodes)))))
        return self.value_of(func.body.body, values)

    @staticmethod
    def _local_function(func: relax.Function, callee: object) -> relax.Function | None:
        if not isinstance(callee, relax.Var):
            return None
        for block in func.body.blocks:
            for item in block.bindings:
                if item.var.same_as(callee) and isinstance(item.value, relax.Function):
                    return item.value
        return None


def lowered_operations(func: relax.Function) -> dict[relax.Var, list[str]]:
    """The NNAPI operations the codegen emits for each composite call of an NNAPI subgraph
    function, by the variable the call binds: the runtime's own lowering
    (:func:`tvm_nnapi.compiler.codegen.lower_function`) records them. Raises the lowering's
    error (a subgraph the codegen cannot lower cannot be built either)."""
    from ..compiler.codegen import lower_function

    emitted: dict[relax.Var, list[str]] = {}
    lower_function(func, emitted)
    return emitted


def operator_graph(
    mod: tvm.IRModule,
    entry: str,
    refusals: list[dict[str, str]] | None = None,
    detail: str = "auto",
    max_operator_nodes: int = 400,
) -> OperatorGraph:
    """The graph of ``entry`` in the partitioned ``mod`` (see the module docstring).

    ``detail="auto"`` draws composites unless that gives more than ``max_operator_nodes`` nodes,
    then one node per NNAPI subgraph call.
    """
    by_binding = {(r["binding"], r["operator"]): r for r in refusals or []}
    if detail == "auto":
        graph = _Walker(mod, by_binding, "operator").walk(entry)
        if len(graph.nodes) <= max_operator_nodes:
            return graph
        detail = "subgraph"
    return _Walker(mod, by_binding, detail).walk(entry)


def assign_devices_from_traces(graph: OperatorGraph, traces: list[dict[str, Any]]) -> bool:
    """Fill every NNAPI node's ``devices`` from the mock's execution traces of one run.

    The runtime executes the NNAPI subgraph calls in the entry's order, one NNAPI execution
    each, and the mock runs a model's operations in their order, which is the order the codegen
    emitted them (composite by composite). Returns False (and assigns nothing) when the traces
    do not line up with the calls, e.g. when the run used the host fallback.
    """
    if len(traces) != len(graph.subgraph_calls):
        return False
    plan: list[tuple[list[int], list[str]]] = []
    for (_, node_ids), trace in zip(graph.subgraph_calls, traces, strict=True):
        devices = [e["device"] for e in trace.get("events", []) if e.get("kind") == "operation"]
        plan.append((node_ids, devices))
    for node_ids, devices in plan:
        nodes = [graph.nodes[i] for i in node_ids]
        expected = sum(len(node.nnapi_operations) for node in nodes)
        if graph.detail == "subgraph" or expected != len(devices):
            # Operation counts differ from the declared ones (a converter emitted extra
            # operations): give every node of the call the call's devices.
            for node in nodes:
                node.devices = sorted(set(devices))
            continue
        position = 0
        for node in nodes:
            count = len(node.nnapi_operations)
            node.devices = sorted(set(devices[position : position + count]))
            position += count
    return True


__all__ = ["GraphNode", "OperatorGraph", "assign_devices_from_traces", "operator_graph"]
