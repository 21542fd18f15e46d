# SPDX-License-Identifier: Apache-2.0
"""The ``relax.ext.nnapi`` codegen: NNAPI subgraph functions -> "nnapi" runtime modules.

``relax.transform.RunCodegen`` calls :func:`nnapi_codegen` with every function annotated
``Codegen="nnapi"``. Each function is lowered to the graph JSON (see docs/graph-json.md) plus a
constant blob, and handed to the C++ runtime, which validates it and returns a tvm-ffi module of
kind "nnapi".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import tvm
import tvm_ffi
from tvm import relax, tirx
from tvm.relax.expr_functor import PyExprMutator, mutator

from ..errors import CodegenError, UnsupportedShapeError
from ..runtime._library import runtime_function
from . import converters, lowerings
from .converters import ConvertContext, Value, locating
from .graph_json import Dim, GraphBuilder
from .ir_utils import prefix_prim_funcs_pass
from .partition import RELAXED_ATTR

# Errors raised in the codegen reach Python again through tvm-ffi (RunCodegen calls it from C++):
# registered, they keep their class there instead of becoming a bare RuntimeError.
for _error in (CodegenError, UnsupportedShapeError):
    tvm_ffi.register_error(f"tvm_nnapi.{_error.__name__}", _error)


def lower_function(
    func: relax.Function,
    emitted: dict[relax.Var, list[str]] | None = None,
    spans: dict[relax.Var, tuple[relax.Function, range]] | None = None,
) -> GraphBuilder:
    """Lower one ``Codegen="nnapi"`` function to a :class:`GraphBuilder`.

    ``emitted``, if given, receives for each composite call the NNAPI operations its lowering
    added, by the variable the call binds (what the report's graph labels its nodes with);
    ``spans`` the composite function and the indices of those operations in the graph."""
    symbol = str(func.attrs["global_symbol"])
    builder = GraphBuilder(symbol)
    # Partitioned with PartitionOptions(relax_fp32_to_fp16=True).
    builder.relax_fp32_to_fp16 = bool(func.attrs.get(RELAXED_ATTR, False))
    ctx = ConvertContext(builder)
    for index, param in enumerate(func.params):
        if isinstance(param.ty, relax.TensorType):
            with locating(symbol, param.name):
                # A rank-0 value (a scalar operand of an elementwise operator) is declared as a
                # [1] tensor: an NNAPI tensor of rank 0 is not fully specified, and [1] holds
                # the same one element (the runtime takes a rank-0 tensor for it).
                shape = ctx.shape(param) or [1]
                ctx.values[param] = builder.add_input(ctx.dtype(param), shape)
        elif isinstance(param.ty, relax.ShapeType | tvm.ir.PrimType):
            # Shape information only (e.g. a reshape target), already in the operand shapes.
            builder.skip_arguments.append(index)
            ctx.values[param] = converters.UNAVAILABLE
        else:
            raise CodegenError(symbol, param.name, f"parameter type {param.ty} is not supported")
    composites: dict[relax.Var, relax.Function] = {}
    body = func.body
    for block in body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Function):
                composites[binding.var] = value
            elif isinstance(value, relax.Call) and value.op in composites:
                composite = composites[value.op]
                before = len(builder.operations)
                with locating(symbol, str(composite.attrs["Composite"])):
                    ctx.values[binding.var] = _lower_composite(ctx, composite, value)
                if emitted is not None:
                    emitted[binding.var] = [op.op for op in builder.operations[before:]]
                if spans is not None:
                    spans[binding.var] = (composite, range(before, len(builder.operations)))
            else:
                ctx.values[binding.var] = _lower_plumbing(ctx, binding)
    for field in _fields(body.body):
        operand = ctx.operand(field)
        if operand in builder.inputs:
            # NNAPI cannot return an input as an output; the partitioner never produces this.
            raise CodegenError(symbol, converters.describe(field), "an input is returned as is")
        builder.outputs.append(operand)
    builder.drop_unused_constants()
    return builder


def _fields(expr: relax.Expr) -> list[relax.Expr]:
    return list(expr.fields) if isinstance(expr, relax.Tuple) else [expr]


def _lower_plumbing(ctx: ConvertContext, binding: relax.Binding) -> Value:
    """Bindings that only move values around: aliases, tuples and tuple items."""
    value = binding.value
    if isinstance(value, relax.Var):
        return ctx.values[value]
    if isinstance(value, relax.Tuple):
        return tuple(ctx.operand(field) for field in value.fields)
    if isinstance(value, relax.TupleGetItem):
        items = (
            ctx.values.get(value.tuple_value) if isinstance(value.tuple_value, relax.Var) else None
        )
        if not isinstance(items, tuple):
            raise ctx.fail(value.tuple_value, "tuple item of something that is not a tuple")
        return items[int(value.index)]
    raise CodegenError(ctx.symbol, binding.var.name, f"unexpected binding {type(value).__name__}")


def _lower_composite(ctx: ConvertContext, composite: relax.Function, call: relax.Call) -> Value:
    name = str(composite.attrs["Composite"])
    lowering = lowerings.find(name)
    if lowering is None:
        raise CodegenError(ctx.symbol, name, "no NNAPI lowering has this composite name")
    arguments = [ctx.values[a] if isinstance(a, relax.Var) else ctx.operand(a) for a in call.args]
    outer_values = ctx.values
    outer_vars = ctx.shape_vars
    # Bind the composite's parameters (and their shape variables) to the caller's arguments.
    shape_vars: dict[tirx.Var, Dim] = dict(outer_vars)
    for param, arg in zip(composite.params, call.args, strict=True):
        _match_shape_vars(param, arg, shape_vars, ctx)
    ctx.values = dict(zip(composite.params, arguments, strict=True))
    ctx.shape_vars = shape_vars
    try:
        return lowering.convert(ctx, composite)
    finally:
        ctx.values = outer_values
        ctx.shape_vars = outer_vars


def _match_shape_vars(
    param: relax.Var, arg: relax.Expr, shape_vars: dict[tirx.Var, Dim], ctx: ConvertContext
) -> None:
    """Map the composite parameter's shape variables to the argument's graph dimensions."""
    inner, outer = param.ty, arg.ty
    if not (isinstance(inner, relax.TensorType) and isinstance(outer, relax.TensorType)):
        return
    if inner.shape is None or outer.shape is None:
        return
    for inner_dim, outer_dim in zip(inner.shape.values, ctx.shape(arg), strict=False):
        if isinstance(inner_dim, tirx.Var) and inner_dim not in shape_vars:
            shape_vars[inner_dim] = outer_dim


def host_module(func: relax.Function) -> tvm.IRModule:
    """The same subgraph as a plain Relax function ``main`` for TVM's own code generation:
    composite functions are lifted and inlined back into ordinary operators.

    Composites whose body uses their own symbolic variables (the strided_slice bounds
    ``seq_len - 1`` of an LLM's last-position slice) stay private functions called from
    ``main``: InlinePrivateFunctions gives the inlined body fresh symbolic variables without
    binding them to the caller's, which leaves them undefined.
    """
    main = func.without_attr("Codegen").with_attr("global_symbol", "main")
    mod = relax.transform.LambdaLift()(tvm.IRModule({"main": main}))
    functions = {}
    for gvar, function in mod.functions.items():
        if isinstance(function, relax.Function) and "Composite" in (function.attrs or {}):
            function = function.without_attr("Composite").without_attr("Primitive")
        functions[gvar] = function
    mod = tvm.IRModule(functions)
    if not any(_uses_symbolic_vars(f) for g, f in functions.items() if g.name_hint != "main"):
        mod = relax.transform.InlinePrivateFunctions()(mod)
    for gvar, function in list(mod.functions.items()):
        if isinstance(function, relax.Function):
            mod[gvar] = _bind_shape_arguments(function)
    return mod


def _uses_symbolic_vars(func: relax.BaseFunc) -> bool:
    """Whether a function's body (not only its parameter types) refers to symbolic variables."""
    found: list[object] = []
    if isinstance(func, relax.Function):
        relax.analysis.post_order_visit(
            func.body, lambda node: found.append(node) if isinstance(node, tirx.Var) else None
        )
    return bool(found)


def _bind_shape_arguments(func: relax.Function) -> relax.Function:
    """Shape arguments (a reshape target with a symbolic dimension, e.g. an LLM's seq_len)
    carry their value in their type; legalization needs the ShapeExpr itself, not a variable."""
    shapes = {
        param: relax.ShapeExpr(param.ty.values)
        for param in func.params
        if isinstance(param.ty, relax.ShapeType) and param.ty.values is not None
    }
    return _ShapeArgumentBinder(shapes).visit_expr(func) if shapes else func


@mutator
class _ShapeArgumentBinder(PyExprMutator):
    def __init__(self, shapes: dict[relax.Var, relax.ShapeExpr]) -> None:
        super().__init__()
        self.shapes = shapes

    def visit_var_(self, var: relax.Var) -> relax.Expr:
        return self.shapes.get(var, var)


def compile_function(func: relax.Function, options: dict[str, Any] | None = None) -> tvm_ffi.Module:
    """Lower one subgraph and create its runtime module.

    With ``options["host_fallback"]`` the subgraph is also compiled by TVM for the host target
    (``options.get("host_target", "llvm")``) and imported into the module, so the runtime can run
    it on the host when the device-selection policy or an NNAPI failure calls for it.
    """
    options = options or {}
    builder = lower_function(func)
    create = runtime_function("tvm_nnapi.runtime.create")
    # The blob goes to the runtime as a tensor it keeps, not as bytes it would copy.
    blob = tvm_ffi.from_dlpack(builder.constant_blob())
    module = create(builder.symbol, builder.to_json(), blob)
    if options.get("host_fallback"):
        target = tvm.target.Target(str(options.get("host_target", "llvm")))
        # The host library is linked into the same shared library as the main program by
        # export_library: prefix its TIR symbols to keep them apart from the program's.
        pipeline = tvm.transform.Sequential(
            [relax.get_default_pipeline(target), prefix_prim_funcs_pass(f"{builder.symbol}_host_")]
        )
        host = relax.build(host_module(func), target=target, relax_pipeline=pipeline)
        module.import_module(host.mod)
    return module


def drop_codegen_constants(mod: tvm.IRModule, subgraphs: Iterable[str]) -> tvm.IRModule:
    """Forget the constants of the NNAPI subgraphs that ``RunCodegen`` lists in the module
    attribute ``const_name_to_constant``.

    ``relax.build`` hands that attribute to the VM linker, which keeps every listed tensor in a
    constant-loader module of the executable (and writes it out with ``export_library``). The
    NNAPI runtime modules never read it: their constants are in their own blob, so keeping the
    list would hold a second copy of every weight. ``subgraphs`` are the global symbols of the
    NNAPI subgraph functions the codegen ran on; constants of other subgraphs (another
    codegen's) stay.
    """
    subgraphs = set(subgraphs)
    attrs = dict(mod.attrs) if mod.attrs else {}
    constants = attrs.get("const_name_to_constant")
    if not constants:
        return mod

    def ours(name: str) -> bool:
        return any(name.startswith(f"{symbol}_") for symbol in subgraphs)

    kept = {str(name): value for name, value in constants.items() if not ours(str(name))}
    if len(kept) == len(constants):
        return mod
    if kept:
        return mod.with_attr("const_name_to_constant", kept)
    return mod.without_attr("const_name_to_constant")


@tvm_ffi.register_global_func("relax.ext.nnapi", override=True)
def nnapi_codegen(
    functions: list[relax.Function], options: dict[str, Any], constant_names: dict[Any, str]
) -> list[tvm_ffi.Module]:
    """Entry point called by ``relax.transform.RunCodegen`` for ``Codegen="nnapi"``."""
    settings = {str(k): getattr(v, "value", v) for k, v in (options or {}).items()}
    return [compile_function(func, settings) for func in functions]
