"""The ``relax.ext.nnapi`` codegen: NNAPI subgraph functions -> "nnapi" runtime modules.

``relax.transform.RunCodegen`` calls :func:`nnapi_codegen` with every function annotated
``Codegen="nnapi"``. Each function is lowered to the graph JSON (see docs/graph-json.md) plus a
constant blob, and handed to the C++ runtime, which validates it and returns a tvm-ffi module of
kind "nnapi".
"""

from __future__ import annotations

from typing import Any

import tvm_ffi
from tvm import relax, tirx

from . import converters
from ._runtime import runtime_function
from .errors import CodegenError
from .graph_json import Dim, GraphBuilder


def lower_function(func: relax.Function) -> GraphBuilder:
    """Lower one ``Codegen="nnapi"`` function to a :class:`GraphBuilder`."""
    symbol = str(func.attrs["global_symbol"])
    builder = GraphBuilder(symbol)
    ctx = converters.ConvertContext(builder)
    for param in func.params:
        param_type = param.ty
        if not isinstance(param_type, relax.TensorType):
            raise CodegenError(symbol, param.name, f"parameter type {param_type} is not a tensor")
        ctx.values[param] = builder.add_input(str(param_type.dtype), ctx.shape(param))
    composites: dict[relax.Var, relax.Function] = {}
    body = func.body
    for block in body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Function):
                composites[binding.var] = value
            elif isinstance(value, relax.Call) and value.op in composites:
                ctx.values[binding.var] = _lower_composite(ctx, composites[value.op], value)
            elif isinstance(value, relax.Var) and value in ctx.values:
                ctx.values[binding.var] = ctx.values[value]
            else:
                raise CodegenError(
                    symbol, binding.var.name, f"unexpected binding {type(value).__name__}"
                )
    results = body.body
    fields = results.fields if isinstance(results, relax.Tuple) else [results]
    for field in fields:
        operand = ctx.operand(field)
        if operand in builder.inputs or operand in builder.outputs:
            raise CodegenError(symbol, converters.describe(field), "an input is returned as is")
        builder.outputs.append(operand)
    return builder


def _lower_composite(
    ctx: converters.ConvertContext, composite: relax.Function, call: relax.Call
) -> int:
    name = str(composite.attrs["Composite"])
    outer_values = dict(ctx.values)
    outer_vars = ctx.shape_vars
    # Bind the composite's parameters (and their shape variables) to the caller's arguments.
    inner: dict[relax.Var, int] = {}
    shape_vars: dict[tirx.Var, Dim] = dict(outer_vars)
    for param, arg in zip(composite.params, call.args, strict=True):
        inner[param] = ctx.operand(arg)
        _match_shape_vars(param, arg, shape_vars, ctx)
    ctx.values = inner
    ctx.shape_vars = shape_vars
    try:
        result = None
        for block in composite.body.blocks:
            for binding in block.bindings:
                value = binding.value
                if isinstance(value, relax.Call) and hasattr(value.op, "name"):
                    convert = converters.find_converter(value.op.name)
                    if convert is None:
                        raise ctx.fail(value, f"no converter (composite {name})")
                    result = convert(ctx, value)
                    ctx.values[binding.var] = result
                elif isinstance(value, relax.Var):
                    ctx.values[binding.var] = ctx.operand(value)
                else:
                    raise CodegenError(ctx.symbol, binding.var.name, "unexpected binding")
        result = ctx.operand(composite.body.body)
    finally:
        ctx.values = outer_values
        ctx.shape_vars = outer_vars
    return result


def _match_shape_vars(
    param: relax.Var,
    arg: relax.Expr,
    shape_vars: dict[tirx.Var, Dim],
    ctx: converters.ConvertContext,
) -> None:
    """Map the composite parameter's shape variables to the argument's graph dimensions."""
    inner = param.ty
    outer = arg.ty
    if not (isinstance(inner, relax.TensorType) and isinstance(outer, relax.TensorType)):
        return
    if inner.shape is None or outer.shape is None:
        return
    outer_dims = ctx.shape(arg)
    for inner_dim, outer_dim in zip(inner.shape.values, outer_dims, strict=False):
        if isinstance(inner_dim, tirx.Var) and inner_dim not in shape_vars:
            shape_vars[inner_dim] = outer_dim


def compile_function(func: relax.Function) -> tvm_ffi.Module:
    """Lower one subgraph and create its runtime module."""
    builder = lower_function(func)
    create = runtime_function("tvm_nnapi.runtime.create")
    return create(builder.symbol, builder.to_json(), bytes(builder.constants))


@tvm_ffi.register_global_func("relax.ext.nnapi", override=True)
def nnapi_codegen(
    functions: list[relax.Function], options: dict[str, Any], constant_names: dict[Any, str]
) -> list[tvm_ffi.Module]:
    """Entry point called by ``relax.transform.RunCodegen`` for ``Codegen="nnapi"``."""
    return [compile_function(func) for func in functions]
