# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi run --layerwise``: compare every NNAPI operator's output with the host
computation of the same operator, and name the first one over the tolerance (like TFLite's
inference-diff tool).

For every NNAPI subgraph call of the entry function, in execution order:

1. the subgraph's inputs are the values the host build computes for them (the partitioned
   program with every subgraph compiled for the host, returning the arguments of every call), so
   a divergence upstream does not blame a later subgraph;
2. the subgraph is lowered as the runtime lowers it (:func:`~tvm_nnapi.compiler.codegen.
   lower_function`), with the result of every composite (one matched pattern: a Relax operator,
   or a fused group such as conv2d + add + relu, and the NNAPI operations it lowers to) made a
   model output, and run on NNAPI (``tvm_nnapi.testing.run_graph``);
3. the same function, every composite result an output, is compiled for the host
   (:func:`~tvm_nnapi.compiler.codegen.host_module`) and run on the same inputs;
4. each composite's NNAPI result is compared with its host result: max absolute error and max
   error relative to max |host|, against the tolerance of the precision the model computes in.
   A quantized composite (one ending in ``relax.quantize``: a quant8 result) is compared
   exactly, in quantization steps (the largest difference of the integer values), and one
   ending in ``relax.dequantize`` (a quant8 subgraph's float output) in steps of that
   dequantize's scale: by default any difference is over the tolerance
   (:data:`QUANT8_LAYER_TOLERANCE`), so the first row over it is the first operator whose
   quant8 result differs from the host's; ``--rtol`` gives another number of steps.

Inside a subgraph, NNAPI's results feed the next operators as they do in a real run, so the
first row over the tolerance is the operator where the results start to differ. A composite
with a float result in a quant8 model (a MUL between a DEQUANTIZE and a QUANTIZE) is judged
with the float32 tolerance, as the run's float outputs are.

Each row names the model's own nodes the composite computes (``model_nodes``): the ONNX node
names for an ``.onnx`` file (:attr:`~tvm_nnapi.tools.sources.ModelSource.node_names`), else the
binding names of the loaded module's entry function (unique there, unlike the names local to a
subgraph). A composite's operator is traced to the entry binding it was cut from by its name,
checked by structure, or by structure alone when partitioning renamed it (a DEQUANTIZE copied
for each of its consumers), alike operators in their order; the quantize/dequantize wrappers
of a quantized operator are named only when the composite holds nothing else. An operator the
graph preparation inserted or reshaped beyond recognition (a layout change's transpose, the
renamed result of an add rewritten to NHWC) gets no name rather than a guessed one.

:func:`error_text`, :func:`tolerance_text`, :func:`shown_rows` and :func:`verdict_text` format
rows for people: the terminal (``tvm-nnapi run``) and the HTML report use the same ones.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import tvm
from tvm import relax

from ..compiler.codegen import host_module, lower_function
from ..compiler.converters import operator_calls
from ..compiler.partition import CODEGEN_NAME
from .sources import ModelLoadError, ModelSource

#: A quantized composite's result must match the host's exactly (in quantization steps).
QUANT8_LAYER_TOLERANCE = 0.0


@dataclass
class LayerRow:
    """One composite (operator) of one NNAPI subgraph call."""

    subgraph: str
    call_index: int  # which call of this subgraph function (0, 1, ...)
    call_order: int  # which NNAPI subgraph call of the entry, in execution order
    composite_index: int  # position of the composite among the subgraph's composite calls
    binding: str  # the variable the composite's call binds inside the subgraph function
    relax_operators: list[str]
    nnapi_operations: list[str]
    shape: list[int]
    max_abs_error: float
    max_rel_error: float
    tolerance: float
    passed: bool
    # A quantized result (quant8, or dequantized from quant8): the largest error in its
    # quantization steps, which ``tolerance`` is then in; None for a float result.
    max_error_steps: float | None = None
    # The model's own nodes this composite computes (see the module docstring); empty when
    # none can be traced.
    model_nodes: list[str] = field(default_factory=list)


@dataclass
class LayerwiseResult:
    rows: list[LayerRow] = field(default_factory=list)
    precision: str = "float32"

    @property
    def first_divergence(self) -> LayerRow | None:
        return next((row for row in self.rows if not row.passed), None)

    def to_dict(self) -> dict[str, Any]:
        first = self.first_divergence
        return {
            "precision": self.precision,
            "operators_compared": len(self.rows),
            "operators_over_tolerance": sum(not row.passed for row in self.rows),
            "first_divergence": asdict(first) if first is not None else None,
            "rows": [asdict(row) for row in self.rows],
        }


def _is_nnapi(mod: tvm.IRModule, gvar: tvm.ir.GlobalVar) -> bool:
    func = mod[gvar]
    return (getattr(func, "attrs", None) or {}).get("Codegen") == CODEGEN_NAME


def _entry_calls(mod: tvm.IRModule, entry: str) -> list[relax.Call]:
    """The NNAPI subgraph calls of ``entry``, in execution order."""
    func = mod[entry]
    calls = []
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if (
                isinstance(value, relax.Call)
                and isinstance(value.op, tvm.ir.GlobalVar)
                and _is_nnapi(mod, value.op)
            ):
                calls.append(value)
    return calls


def _tensor_args(call: relax.Call) -> list[relax.Expr]:
    return [arg for arg in call.args if isinstance(arg.ty, relax.TensorType)]


def _host_program(mod: tvm.IRModule, entry: str) -> tvm.IRModule:
    """``mod`` (partitioned) with its NNAPI subgraphs as host functions and ``entry`` returning
    the tensor arguments of every NNAPI subgraph call, in call order."""
    calls = _entry_calls(mod, entry)
    functions: dict[tvm.ir.GlobalVar, relax.BaseFunc] = {}
    for gvar, func in mod.functions.items():
        if isinstance(func, relax.Function) and _is_nnapi(mod, gvar):
            func = func.without_attr("Codegen")
        functions[gvar] = func
    probe = relax.transform.ToNonDataflow()(tvm.IRModule(functions))
    main = probe[entry]
    fields = [arg for call in calls for arg in _tensor_args(call)]
    # ToNonDataflow keeps the bindings in order (dataflow variables become new variables): map
    # each variable of the original function to its counterpart by position, not by name (names
    # repeat after partitioning).
    original = mod[entry]
    counterpart = {
        old.id_: new
        for old, new in zip(
            [*original.params, *(b.var for block in original.body.blocks for b in block.bindings)],
            [*main.params, *(b.var for block in main.body.blocks for b in block.bindings)],
            strict=True,
        )
    }
    remapped = [
        counterpart.get(expr.id_, expr) if isinstance(expr, relax.Var) else expr for expr in fields
    ]
    body = relax.SeqExpr(main.body.blocks, relax.Tuple(remapped))
    ret = relax.TupleType([expr.ty for expr in remapped])
    probe[entry] = relax.Function(main.params, body, ret, attrs=main.attrs)
    probe = relax.transform.LambdaLift()(probe)
    cleaned = {}
    for gvar, func in probe.functions.items():
        if isinstance(func, relax.Function) and "Composite" in (func.attrs or {}):
            func = func.without_attr("Composite").without_attr("Primitive")
        cleaned[gvar] = func
    return relax.transform.Normalize()(tvm.IRModule(cleaned, attrs=mod.attrs))


def _composites(func: relax.Function) -> list[tuple[relax.Var, relax.Function]]:
    """The composite calls of an NNAPI subgraph function, in order: (bound variable,
    composite function)."""
    local: dict[relax.Var, relax.Function] = {}
    found = []
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Function):
                local[binding.var] = value
            elif isinstance(value, relax.Call) and value.op in local:
                found.append((binding.var, local[value.op]))
    return found


def _with_every_composite_output(func: relax.Function) -> tuple[relax.Function, list[int]]:
    """``func`` returning the result of every composite call with a tensor result, and the
    positions (in :func:`_composites` order) of those composites."""
    plain = relax.transform.ToNonDataflow()(tvm.IRModule({"f": func}))["f"]
    kept = [
        (index, var)
        for index, (var, _) in enumerate(_composites(plain))
        if isinstance(var.ty, relax.TensorType) and var.ty.shape is not None
    ]
    outputs = [var for _, var in kept]
    body = relax.SeqExpr(plain.body.blocks, relax.Tuple(outputs))
    ret = relax.TupleType([var.ty for var in outputs])
    return relax.Function(plain.params, body, ret, attrs=plain.attrs), [i for i, _ in kept]


def _operators(composite: relax.Function) -> list[str]:
    names: list[str] = []
    relax.analysis.post_order_visit(
        composite.body,
        lambda node: (
            names.append(str(node.op.name))
            if isinstance(node, relax.Call) and isinstance(node.op, tvm.ir.Op)
            else None
        ),
    )
    return names


def _result_step(composite: relax.Function) -> float | None:
    """The quantization step of a composite's result: 1 for a quantized (integer) result, the
    scale of a per-tensor dequantize for a dequantized one; None for other results."""
    calls = operator_calls(composite)
    if not calls:
        return None
    last = calls[-1]
    name = str(last.op.name)
    if name == "relax.quantize":
        return 1.0
    if name == "relax.dequantize" and isinstance(last.args[1], tvm.ir.Constant):
        scale = last.args[1].value.numpy()
        if scale.size == 1 and float(scale.reshape(-1)[0]) > 0:
            return float(scale.reshape(-1)[0])
    return None


#: Operators that only move a value between its quantized and float forms.
_QDQ_OPERATORS = frozenset({"relax.quantize", "relax.dequantize"})


def _op_bindings(func: relax.Function) -> list[relax.VarBinding]:
    """The bindings of ``func`` whose value is a call of a Relax operator, in order."""
    body = func.body
    blocks = body.blocks if isinstance(body, relax.SeqExpr) else []
    return [
        binding
        for block in blocks
        for binding in block.bindings
        if isinstance(binding, relax.VarBinding)
        and isinstance(binding.value, relax.Call)
        and isinstance(binding.value.op, tvm.ir.Op)
    ]


def _signature(call: relax.Call) -> tuple:
    """A call's structure up to the variables it reads (which are another function's after
    partitioning): its operator, attributes, constant arguments, and the types of its variable
    arguments and of its result."""
    import tvm_ffi

    def hashed(value: object) -> int:
        return int(tvm_ffi.structural_hash(value, map_free_vars=True)) if value is not None else 0

    arguments = tuple(
        ("var", hashed(arg.ty)) if isinstance(arg, relax.Var) else ("expr", hashed(arg))
        for arg in call.args
    )
    return (str(call.op.name), hashed(call.attrs), arguments, hashed(call.ty))


class _ModelNodes:
    """Traces the operators of a composite back to the entry function of the loaded module and
    names them as the model does (see the module docstring)."""

    def __init__(self, source: ModelSource) -> None:
        entry = source.module[source.entry] if source.entry in source.module else None
        bindings = _op_bindings(entry) if isinstance(entry, relax.Function) else []
        names = getattr(source, "node_names", None) or {}
        # A binding name repeated in the entry function gets its occurrence number, so that it
        # is unique (a node of the model file may compute several bindings: it keeps its name).
        totals: dict[str, int] = {}
        for binding in bindings:
            totals[binding.var.name] = totals.get(binding.var.name, 0) + 1
        seen: dict[str, int] = {}
        self._bindings: list[tuple[relax.VarBinding, str]] = []
        for binding in bindings:
            name = binding.var.name
            seen[name] = seen.get(name, 0) + 1
            label = name if totals[name] == 1 else f"{name}#{seen[name]}"
            self._bindings.append((binding, names.get(name, label)))
        self._by_name: dict[str, list[int]] = {}
        self._by_signature: dict[tuple, list[int]] = {}
        self._traced: set[int] = set()
        for index, (binding, _) in enumerate(self._bindings):
            self._by_name.setdefault(binding.var.name, []).append(index)
            self._by_signature.setdefault(_signature(binding.value), []).append(index)

    def _trace(self, binding: relax.VarBinding, renamed: bool) -> str | None:
        """``renamed``: the binding's name is the composite's own (its result), not the one
        it had in the module."""
        from ..compiler.layout import NHWC_SUFFIX

        value = binding.value
        op = str(value.op.name)
        name = binding.var.name.removesuffix(NHWC_SUFFIX)
        named = [
            i
            for i in ([] if renamed else self._by_name.get(name, []))
            if str(self._bindings[i][0].value.op.name) == op
        ]
        alike = self._by_signature.get(_signature(value), [])
        # The same name and structure; else a binding of that structure (a renamed copy);
        # else one of that name and operator (attributes or layout rewritten when the graph
        # was prepared). Among several, the first not yet traced: partitioning keeps the
        # order of the operators, so alike ones (two adds of equal shapes) are met in order.
        for found in ([i for i in named if i in alike], alike, named):
            if found:
                fresh = [i for i in found if i not in self._traced]
                chosen = (fresh or found)[0]
                self._traced.add(chosen)
                return self._bindings[chosen][1]
        # Nothing else: an operator the graph preparation inserted, or the renamed result of a
        # composite whose shapes it changed (an NHWC add); no name rather than a wrong one.
        return None

    def names(self, composite: relax.Function) -> list[str]:
        """The model nodes of ``composite``'s operators, in order, without repeats."""
        bindings = _op_bindings(composite)
        core = [b for b in bindings if str(b.value.op.name) not in _QDQ_OPERATORS]
        found: list[str] = []
        for binding in core or bindings:
            name = self._trace(binding, renamed=binding.same_as(bindings[-1]))
            if name is not None and name not in found:
                found.append(name)
        return found


def _run_on_nnapi(
    func: relax.Function, inputs: list[np.ndarray], like: list[np.ndarray], target: Any = None
) -> list[np.ndarray]:
    from ..runtime._library import runtime_function

    builder = lower_function(func)
    if target is not None:
        shapes = [(a.shape, a.dtype) for a in like]
        outputs, _ = target.run_graph(builder.to_json(), bytes(builder.constants), inputs, shapes)
        return outputs
    arguments = [tvm.runtime.tensor(np.ascontiguousarray(a)) for a in inputs]
    results = [tvm.runtime.empty(a.shape, str(a.dtype), tvm.cpu()) for a in like]
    run = runtime_function("tvm_nnapi.testing.run_graph")
    json.loads(str(run(builder.to_json(), bytes(builder.constants), *arguments, *results)))
    return [r.numpy() for r in results]


def _flatten(value: Any) -> list[np.ndarray]:
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    return [array for item in value for array in _flatten(item)]


def layerwise(
    source: ModelSource,
    partitioned: tvm.IRModule,
    inputs: list[np.ndarray],
    precision: str,
    rtol: float | None = None,
    target: Any = None,
) -> LayerwiseResult:
    """Compare every composite of every NNAPI subgraph call of ``partitioned`` (the
    partitioned ``source.module``) with the host, on ``inputs`` (see the module docstring).
    The NNAPI side runs on this process's NNAPI, or on ``target``'s (:mod:`tvm_nnapi.targets`:
    each subgraph, with every composite's result as an output, sent as graph JSON and run by
    the runtime library there); the host side always runs here."""
    from ..compiler.codegen import lower_function as lower
    from .run import DEFAULT_TOLERANCE

    if source.kind == "llm":
        raise ModelLoadError(
            f"{source.spec}: --layerwise compares the subgraphs of one function run on its "
            "inputs; an LLM runs through its engine (KV cache, several functions) and is not "
            "supported yet: use a module (a built-in CNN, .py, .onnx, TVMScript)"
        )
    entry = source.entry
    calls = _entry_calls(partitioned, entry)
    result = LayerwiseResult(precision=precision)
    if not calls:
        return result
    program = relax.build(_host_program(partitioned, entry), target="llvm")
    vm = relax.VirtualMachine(program, tvm.cpu())
    captured = _flatten(vm[entry](*[tvm.runtime.tensor(a) for a in inputs]))
    position = 0
    model_nodes = _ModelNodes(source)
    described_row = tuple[int, str, list[str], list[str], float | None, list[str]]
    prepared: dict[str, tuple[relax.Function, list[described_row], Any]]
    prepared = {}
    call_counts: dict[str, int] = {}
    for order, call in enumerate(calls):
        name = call.op.name_hint
        count = len(_tensor_args(call))
        arguments, position = captured[position : position + count], position + count
        if name not in prepared:
            func = partitioned[call.op]
            every, kept = _with_every_composite_output(func)
            emitted: dict[relax.Var, list[str]] = {}
            lower(func, emitted)  # in composite order: the operations each one emits
            operations = list(emitted.values())
            composites = _composites(func)
            described = [
                (
                    i,
                    composites[i][0].name,
                    _operators(composites[i][1]),
                    operations[i],
                    _result_step(composites[i][1]),
                    model_nodes.names(composites[i][1]),
                )
                for i in kept
            ]
            host = relax.VirtualMachine(relax.build(host_module(every), target="llvm"), tvm.cpu())
            prepared[name] = (every, described, host)
        every, described, host = prepared[name]
        index = call_counts.get(name, 0)
        call_counts[name] = index + 1
        expected = _flatten(host["main"](*[tvm.runtime.tensor(a) for a in arguments]))
        actual = _run_on_nnapi(every, arguments, expected, target)
        for (composite_index, binding, operators, emitted_ops, step, nodes), got, want in zip(
            described, actual, expected, strict=True
        ):
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            abs_error = float(diff.max()) if diff.size else 0.0
            scale = float(np.abs(want.astype(np.float64)).max()) if want.size else 0.0
            rel_error = abs_error / scale if scale else abs_error
            dtype = str(want.dtype)
            chosen = precision if dtype.startswith("float") else dtype
            if chosen == "quant8":  # a float result inside a quantized model
                chosen = "float32"
            tolerance = rtol if rtol is not None else DEFAULT_TOLERANCE.get(chosen, 0.0)
            finite = bool(np.isfinite(got.astype(np.float64)).all()) if got.size else True
            steps = None
            passed = finite and rel_error <= tolerance
            if step is not None:
                # Integer results differ by whole steps: the comparison is exact.
                steps = abs_error / step
                tolerance = rtol if rtol is not None else QUANT8_LAYER_TOLERANCE
                passed = finite and steps <= tolerance + 1e-6  # (a dequantize's float rounding)
            result.rows.append(
                LayerRow(
                    subgraph=name,
                    call_index=index,
                    call_order=order,
                    composite_index=composite_index,
                    binding=binding,
                    relax_operators=operators,
                    nnapi_operations=list(emitted_ops),
                    shape=list(want.shape),
                    max_abs_error=abs_error,
                    max_rel_error=rel_error,
                    tolerance=tolerance,
                    passed=passed,
                    max_error_steps=steps,
                    model_nodes=nodes,
                )
            )
    return result


def mark_graph(graph: dict[str, Any], result: LayerwiseResult) -> None:
    """Put each row's errors on its node of an operator graph (``OperatorGraph.to_dict()``):
    ``layerwise`` {max_rel_error, tolerance, passed, first_divergence}."""
    if graph.get("detail") != "operator":
        return
    calls = graph.get("subgraph_calls", [])
    nodes = {node["id"]: node for node in graph["nodes"]}
    first = result.first_divergence
    for row in result.rows:
        if row.call_order >= len(calls):
            continue
        ids = calls[row.call_order]["nodes"]
        if row.composite_index >= len(ids):
            continue
        nodes[ids[row.composite_index]]["layerwise"] = {
            "max_rel_error": row.max_rel_error,
            "max_error_steps": row.max_error_steps,
            "tolerance": row.tolerance,
            "passed": row.passed,
            "first_divergence": row is first,
            "model_nodes": list(row.model_nodes),
        }


# ---- text for people (the terminal and the HTML report use the same) ---------------------------


def error_text(row: dict[str, Any]) -> str:
    """A row's error: in quantization steps for a quantized result, else relative to max
    |host|. ``row``: a row of :meth:`LayerwiseResult.to_dict` (or a graph node's
    ``layerwise``)."""
    if row.get("max_error_steps") is not None:
        return f"{row['max_error_steps']:g} steps"
    return f"{row['max_rel_error']:.3e}"


def tolerance_text(row: dict[str, Any]) -> str:
    """A row's tolerance, in the unit of :func:`error_text`."""
    if row.get("max_error_steps") is not None:
        return f"{row['tolerance']:g} steps"
    return f"{row['tolerance']:.0e}"


def excess(row: dict[str, Any]) -> float:
    """A row's error as a multiple of its tolerance (the worst rows first)."""
    error = row.get("max_error_steps")
    error = row["max_rel_error"] if error is None else error
    tolerance = row["tolerance"]
    return error / tolerance if tolerance else (math.inf if error else 0.0)


def operators_text(row: dict[str, Any]) -> str:
    return " + ".join(op.removeprefix("relax.") for op in row["relax_operators"])


def node_text(row: dict[str, Any]) -> str:
    """The model's nodes of a row, else the subgraph's own binding (``subgraph/binding``)."""
    return ", ".join(row.get("model_nodes") or []) or f"{row['subgraph']}/{row['binding']}"


def row_text(row: dict[str, Any]) -> str:
    """One row in one line: model nodes, where it ran, operators and NNAPI operations."""
    operations = ", ".join(row["nnapi_operations"]) or "?"
    return (
        f"{node_text(row)} ({row['subgraph']} call {row['call_index']}: "
        f"{operators_text(row)} -> NNAPI {operations})"
    )


def shown_rows(layers: dict[str, Any], limit: int | None) -> list[dict[str, Any]]:
    """The rows to show, at most ``limit`` (None: every row, in execution order): the first
    over the tolerance, then the largest errors against their tolerance."""
    rows = layers["rows"]
    if limit is None or len(rows) <= limit:
        return list(rows)
    first = layers.get("first_divergence")
    shown = sorted(rows, key=lambda r: -excess(r))[:limit]
    if first is not None and first not in shown:
        shown = [first, *shown[: limit - 1]]
    return shown


def verdict_text(layers: dict[str, Any]) -> str:
    """The comparison's verdict in one line (without markup)."""
    first = layers.get("first_divergence")
    count = len(layers["rows"])
    if first is None:
        return f"every one of the {count} NNAPI operators is within tolerance"
    if first.get("max_error_steps") is not None:
        measure = "max |NNAPI - host|"
    else:
        measure = "max |NNAPI - host| / max |host|"
    return (
        f"first operator over the tolerance: {row_text(first)}: {measure} = "
        f"{error_text(first)} > {tolerance_text(first)}"
    )


__all__ = [
    "QUANT8_LAYER_TOLERANCE",
    "LayerRow",
    "LayerwiseResult",
    "error_text",
    "excess",
    "layerwise",
    "mark_graph",
    "node_text",
    "operators_text",
    "row_text",
    "shown_rows",
    "tolerance_text",
    "verdict_text",
]
