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
first row over the tolerance is the operator where the results start to differ.
"""

from __future__ import annotations

import json
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
    described_row = tuple[int, str, list[str], list[str], float | None]
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
        for (composite_index, binding, operators, emitted_ops, step), got, want in zip(
            described, actual, expected, strict=True
        ):
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            abs_error = float(diff.max()) if diff.size else 0.0
            scale = float(np.abs(want.astype(np.float64)).max()) if want.size else 0.0
            rel_error = abs_error / scale if scale else abs_error
            dtype = str(want.dtype)
            chosen = precision if dtype.startswith("float") else dtype
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
            "tolerance": row.tolerance,
            "passed": row.passed,
            "first_divergence": row is first,
        }


__all__ = ["QUANT8_LAYER_TOLERANCE", "LayerRow", "LayerwiseResult", "layerwise", "mark_graph"]
