# SPDX-License-Identifier: Apache-2.0
"""Graph preparation: what a mobile converter does to a graph before choosing operations.

:func:`prepare` runs in :func:`tvm_nnapi.compiler.partition.partition_with_report` before the
patterns are matched (``PartitionOptions(prepare=False)`` skips it); the module it is given is
not changed, so the host reference of a test or of ``tvm-nnapi run`` is the original graph.
Per Relax function, in one walk over its bindings:

* **constant folding**: an operator of :data:`FOLDABLE` whose tensor arguments are all
  constants (after the folding of earlier bindings) becomes a constant, computed with NumPy
  (exactly, in the operator's dtype; TVM's ``FoldConstant`` would compile a kernel for each);
* **batch norm into the convolution**: ``batch_norm(conv2d(x, W) [+ b])[0]`` with constant
  statistics becomes ``conv2d(x, W * s) + (b - mean) * s + beta`` with
  ``s = gamma / sqrt(var + eps)`` (in float64, then cast back), for any data and kernel layout
  whose channel axis is the batch norm's axis, when the convolution's result is used by the
  batch norm only;
* nested clips become one clip of the intersection (torch.export writes relu6 as
  ``clip(clip(x, 0, inf), -inf, 6)``), so that the activation can be fused;
* 1-D convolutions and poolings (``conv1d``, ``max_pool1d``, ``avg_pool1d``) become their 2-D
  forms on a unit height, between two reshapes (NNAPI has 2-D operations only);
* ONNX Clip: the ``call_tir`` of TOPI's maximum / minimum kernels that TVM's ONNX frontend
  emits become ``maximum`` / ``minimum`` (each kernel compared with the one TOPI builds for the
  same arguments), and ``minimum(maximum(x, low), high)`` with scalar bounds becomes
  ``clip(x, low, high)``, which fuses as relu6 / relu1 into a convolution;
* ``argmax`` / ``argmin`` (int64 in Relax) become ``astype(astype(argmax(x), "int32"),
  "int64")``: NNAPI's ARGMAX returns int32 and NNAPI has no int64 tensor, so the narrowed
  pair is offloaded and the widening stays on the host;
* ``take(x, astype(i, "int64"))`` of int32 indices ``i`` (a widened argmax: greedy decoding's
  embedding lookup) takes ``i`` itself, which NNAPI's GATHER reads.
* a ``broadcast_to`` to the shape its input already has (torch.export's ``expand`` before a
  batched matmul) is its input.

Then, per function, strided slices proven in bounds (:func:`inbound_slices`): a slice up to a
symbolic length, ``strided_slice(position_ids, [1], [0], [seq_len])`` of a [1, 128] buffer in
a transformer, has the shape ``(1, min(seq_len, 128))`` in Relax, and every tensor computed
from it an unknown shape; with the function's ``tir_var_upper_bound`` (torch.export's
``Dim(max=...)``) proving ``seq_len <= 128`` it is the same slice marked ``assume_inbound``,
of shape ``(1, seq_len)``, and its negative axes count from the front (TVM 0.27 cannot legalize
a negative axis of a slice with symbolic bounds); the shape arguments after it are simplified
under the same bounds (a reshape to ``(min(seq_len, 128),)`` is one to ``(seq_len,)``) and the
types inferred again.

The activation of a convolution or a matmul (relu, relu6, relu1 after its bias) is then fused
by the patterns themselves (``nnapi.conv2d_bias_act``, ``nnapi.matmul_bias_t_act``): NNAPI's
FuseCode operand.

:func:`dedicate_dequantize` is the one rewrite the quantized lowerings
(:mod:`.lowerings.quantized`) need: partitioning runs it on the dataflow form of every module,
after :func:`prepare` and also when ``PartitionOptions(prepare=False)`` skips that. A
dequantized value read by several operators is dequantized once per reader, so that each
``dequantize -> op -> quantize`` group owns the ``dequantize`` of its input.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import tvm
import tvm_ffi
from tvm import IRModule, relax, sym
from tvm.relax.expr_functor import PyExprMutator, mutator

from .ir_utils import constant_array, make_constant, substitute_vars
from .layout import nhwc_convolutions
from .patterns import static_shape

__all__ = ["FOLDABLE", "dedicate_dequantize", "inbound_slices", "prepare", "prepare_function"]


def _ints(values: object) -> list[int]:
    return [int(getattr(v, "value", v)) for v in values]  # type: ignore[attr-defined]


def _axes(call: relax.Call, name: str = "axes") -> list[int] | None:
    axes = getattr(call.attrs, name)
    return None if axes is None else _ints(axes)


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    return lambda call, a: fn(a[0], a[1])


def _unary(fn: Callable[[np.ndarray], np.ndarray]):
    return lambda call, a: fn(a[0])


# Operators folded when every tensor argument is a constant: the NumPy computation of the call
# from its constant arguments (shape arguments are read from the call's type).
FOLDABLE: dict[str, Callable[[relax.Call, list[np.ndarray]], np.ndarray]] = {
    "relax.reshape": lambda call, a: a[0].reshape(static_shape(call)),
    "relax.flatten": lambda call, a: a[0].reshape(static_shape(call)),
    "relax.expand_dims": lambda call, a: a[0].reshape(static_shape(call)),
    "relax.squeeze": lambda call, a: a[0].reshape(static_shape(call)),
    "relax.broadcast_to": lambda call, a: np.broadcast_to(a[0], static_shape(call) or []),
    "relax.permute_dims": lambda call, a: np.transpose(a[0], _axes(call)),
    "relax.astype": lambda call, a: a[0].astype(str(call.attrs.dtype)),
    "relax.add": _binary(np.add),
    "relax.subtract": _binary(np.subtract),
    "relax.multiply": _binary(np.multiply),
    "relax.divide": lambda call, a: (
        np.true_divide(a[0], a[1])
        if np.issubdtype(a[0].dtype, np.floating)
        else np.trunc(np.true_divide(a[0], a[1]))
    ),
    "relax.negative": _unary(np.negative),
    "relax.sqrt": _unary(np.sqrt),
    "relax.rsqrt": _unary(lambda x: 1.0 / np.sqrt(x)),
    "relax.exp": _unary(np.exp),
    "relax.isnan": _unary(np.isnan),
    "relax.where": lambda call, a: np.where(a[0], a[1], a[2]),
}


def _constant(expr: relax.Expr) -> np.ndarray | None:
    """A constant's value, read in place (read-only), else None."""
    return constant_array(expr) if isinstance(expr, tvm.ir.Constant) else None


def _fold_call(call: relax.Expr) -> relax.Expr | None:
    """The constant a foldable call with constant tensor arguments computes, else None."""
    if not (isinstance(call, relax.Call) and isinstance(call.op, tvm.ir.Op)):
        return None
    fold = FOLDABLE.get(str(call.op.name))
    shape = static_shape(call)
    if fold is None or shape is None:
        return None
    tensors = [a for a in call.args if isinstance(a.ty, relax.TensorType)]
    arrays = [_constant(a) for a in tensors]
    if not arrays or any(a is None for a in arrays):
        return None
    dtype = str(call.ty.dtype)
    with np.errstate(all="ignore"):
        value = np.asarray(fold(call, arrays))  # type: ignore[arg-type]
    if list(value.shape) != shape:
        return None
    return make_constant(value, dtype)


# ---- batch norm into the convolution -------------------------------------------------------------


def _bound_call(values: dict[relax.Var, relax.Expr], expr: relax.Expr, op: str):
    value = values.get(expr) if isinstance(expr, relax.Var) else None
    if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op):
        if str(value.op.name) == op:
            return value
    return None


def _batch_norm_fold(
    values: dict[relax.Var, relax.Expr], uses: Counter, item: relax.TupleGetItem
) -> tuple[relax.Call, relax.Var, relax.Expr, list[relax.Var]] | None:
    """How a ``batch_norm(...)[0]`` folds: the new convolution, its variable, the new bias
    (the item's new value is their sum) and the bindings no longer needed; None when it does
    not fold."""
    if int(item.index) != 0 or not isinstance(item.tuple_value, relax.Var):
        return None
    norm_var = item.tuple_value
    norm = _bound_call(values, norm_var, "relax.nn.batch_norm")
    if norm is None or uses[norm_var] != 1 or bool(norm.attrs.training):
        return None
    stats = [_constant(a) for a in norm.args[1:5]]
    if any(s is None for s in stats):
        return None
    producer = norm.args[0]
    add = _bound_call(values, producer, "relax.add")
    bias = None
    conv_var = producer
    if add is not None:
        consts = [a for a in add.args if isinstance(a, tvm.ir.Constant)]
        others = [a for a in add.args if not isinstance(a, tvm.ir.Constant)]
        if len(consts) != 1 or len(others) != 1 or uses[producer] != 1:
            return None
        bias, conv_var = _constant(consts[0]), others[0]
    conv = _bound_call(values, conv_var, "relax.nn.conv2d")
    if conv is None or uses[conv_var] != 1 or _constant(conv.args[1]) is None:
        return None
    attrs = conv.attrs
    out_layout = str(attrs.out_layout or attrs.data_layout)
    kernel_layout = str(attrs.kernel_layout)
    ty = conv.ty
    if "C" not in out_layout or "O" not in kernel_layout or ty.shape is None:
        return None
    rank = ty.ndim
    channel_axis = out_layout.index("C")
    axis = int(norm.attrs.axis)
    if (axis + rank if axis < 0 else axis) != channel_axis:
        return None
    # Only the channels must be static (the batch may be symbolic).
    channels = getattr(ty.shape.values[channel_axis], "value", None)
    if channels is None:
        return None
    channels = int(channels)
    gamma, beta, mean, var = (np.asarray(s, np.float64).reshape(-1) for s in stats)
    if any(s.size != channels for s in (gamma, beta, mean, var)):
        return None
    if not bool(norm.attrs.scale):
        gamma = np.ones_like(gamma)
    if not bool(norm.attrs.center):
        beta = np.zeros_like(beta)
    scale = gamma / np.sqrt(var + float(norm.attrs.epsilon))
    shift = beta - mean * scale
    if bias is not None:
        # The bias must be per output channel: [C] aligned on the channel axis.
        aligned = [1] * (rank - bias.ndim) + list(bias.shape)
        if len(aligned) != rank or any(d != 1 for i, d in enumerate(aligned) if i != channel_axis):
            return None
        shift = shift + bias.astype(np.float64).reshape(-1) * scale
    kernel = _constant(conv.args[1])
    dtype = str(conv.ty.dtype)
    o_axis = kernel_layout.index("O")
    broadcast = [1] * kernel.ndim  # type: ignore[union-attr]
    broadcast[o_axis] = channels
    if kernel.shape[o_axis] != channels:  # type: ignore[union-attr]
        return None
    folded = (kernel.astype(np.float64) * scale.reshape(broadcast)).astype(kernel.dtype)  # type: ignore[union-attr]
    bias_shape = [1] * rank
    bias_shape[channel_axis] = channels
    new_bias = relax.const(shift.astype(dtype).reshape(bias_shape), dtype)
    new_conv = relax.Call(conv.op, [conv.args[0], relax.const(folded)], conv.attrs)
    removed = [norm_var] + ([producer] if add is not None else [])
    return new_conv, conv_var, new_bias, removed


def _merge_clips(values: dict[relax.Var, relax.Expr], uses: Counter, call: relax.Call):
    """``clip(clip(x, a, b), c, d)`` as one clip when the inner one is used only here."""
    inner_var = call.args[0]
    inner = _bound_call(values, inner_var, "relax.clip")
    if inner is None or uses[inner_var] != 1:
        return None
    bounds = []
    for clip in (inner, call):
        pair = []
        for arg in clip.args[1:3]:
            value = getattr(arg, "value", None)
            if value is None:
                return None
            pair.append(float(getattr(value, "value", value)))
        bounds.append(pair)
    (a, b), (c, d) = bounds
    low, high = max(a, c), min(b, d)
    if low > high:
        return None
    return relax.op.clip(inner.args[0], low, high)


_STEP = "__nnapi_prepare_step"


def _step(index: int, ty: relax.Type) -> relax.Var:
    """A placeholder for the result of the ``index``-th expression of a rewrite."""
    return relax.Var(f"{_STEP}{index}", ty)


def _replace_placeholder(expr: relax.Expr, index: int, var: relax.Var) -> relax.Expr:
    found = [v for v in relax.analysis.free_vars(expr) if v.name == f"{_STEP}{index}"]
    return substitute_vars(expr, {found[0]: var}) if found else expr


def _unit_height(expr: relax.Expr, layout: str) -> list:
    """The shape of ``expr`` (layout ``layout`` with a W) with a unit H before its W."""
    dims = list(expr.ty.shape.values)
    dims.insert(layout.index("W"), 1)
    return dims


def _as_2d(value: relax.Expr) -> list[relax.Expr] | None:
    """A 1-D convolution or pooling as reshape, its 2-D form, reshape: the expressions to bind
    in order (each later one reads the earlier results through placeholders), or None."""
    if not (isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op)):
        return None
    name = str(value.op.name)
    if name not in ("relax.nn.conv1d", "relax.nn.max_pool1d", "relax.nn.avg_pool1d"):
        return None
    x = value.args[0]
    if not isinstance(x.ty, relax.TensorType) or x.ty.shape is None or value.ty.shape is None:
        return None
    attrs = value.attrs
    layout = str(attrs.data_layout if name == "relax.nn.conv1d" else attrs.layout)
    out_layout = str(attrs.out_layout or layout)
    if sorted(layout) != sorted("NCW") or out_layout != layout:
        return None
    (stride,), (dilation,) = _ints(attrs.strides), _ints(attrs.dilation)
    left, right = _ints(attrs.padding)
    layout_2d = layout.replace("W", "HW")
    x_2d = relax.op.reshape(x, _unit_height(x, layout))
    out_2d = _step(0, relax.TensorType(_unit_height(x, layout), str(x.ty.dtype)))
    if name == "relax.nn.conv1d":
        kernel = _constant(value.args[1])
        kernel_layout = str(attrs.kernel_layout)
        if kernel is None or sorted(kernel_layout) != sorted("OIW"):
            return None
        shape = list(kernel.shape)
        shape.insert(kernel_layout.index("W"), 1)
        conv = relax.op.nn.conv2d(
            out_2d,
            make_constant(kernel.reshape(shape), str(kernel.dtype)),
            strides=(1, stride),
            padding=(0, left, 0, right),
            dilation=(1, dilation),
            groups=int(attrs.groups),
            data_layout=layout_2d,
            kernel_layout=kernel_layout.replace("W", "HW"),
            out_dtype=attrs.out_dtype if str(attrs.out_dtype) not in ("", "void") else None,
        )
        op_2d = conv
    else:
        pool = relax.op.nn.max_pool2d if name == "relax.nn.max_pool1d" else relax.op.nn.avg_pool2d
        (size,) = _ints(attrs.pool_size)
        op_2d = pool(
            out_2d,
            pool_size=(1, size),
            strides=(1, stride),
            padding=(0, left, 0, right),
            dilation=(1, dilation),
            ceil_mode=bool(attrs.ceil_mode),
            count_include_pad=bool(attrs.count_include_pad),
            layout=layout_2d,
        )
    result = _step(1, relax.TensorType(_unit_height(value, layout), str(value.ty.dtype)))
    return [x_2d, op_2d, relax.op.reshape(result, list(value.ty.shape.values))]


def _narrowable_search(value: relax.Expr) -> bool:
    """Whether ``value`` is an int64 argmax / argmin (over an axis) of a tensor NNAPI takes."""
    if not (isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op)):
        return False
    if str(value.op.name) not in ("relax.argmax", "relax.argmin") or value.attrs.axis is None:
        return False
    x = value.args[0].ty
    if not isinstance(x, relax.TensorType) or str(x.dtype) not in ("float32", "float16", "int32"):
        return False
    return str(value.ty.dtype) == "int64"


# ---- the walk ------------------------------------------------------------------------------------


def _uses(func: relax.Function) -> Counter:
    uses: Counter = Counter()
    body = func.body
    if not isinstance(body, relax.SeqExpr):
        return uses
    for block in body.blocks:
        for binding in block.bindings:
            uses.update(relax.analysis.free_vars(binding.value))
    uses.update(relax.analysis.free_vars(body.body))
    return uses


def _scalar_constant(expr: relax.Expr) -> float | None:
    value = _constant(expr)
    if value is None or value.size != 1 or not np.issubdtype(value.dtype, np.floating):
        return None
    return float(value.reshape(-1)[0])


def _int32_indices(values: dict[relax.Var, relax.Expr], take: relax.Call) -> relax.Expr | None:
    """The int32 tensor that ``take``'s int64 indices widen (``astype(i, "int64")``, e.g. the
    widened argmax of the preparation), which NNAPI's GATHER takes as it is."""
    cast = _bound_call(values, take.args[1], "relax.astype")
    if cast is None or take.attrs.axis is None:
        return None
    source = cast.args[0]
    if not isinstance(source.ty, relax.TensorType) or str(source.ty.dtype) != "int32":
        return None
    return source if str(cast.ty.dtype) == "int64" else None


def _min_max_clip(values: dict[relax.Var, relax.Expr], uses: Counter, call: relax.Call):
    """``minimum(maximum(x, low), high)`` with scalar constant bounds (ONNX Clip) as
    ``clip(x, low, high)``, when the maximum is used only here."""
    high = _scalar_constant(call.args[1])
    inner_var = call.args[0]
    inner = _bound_call(values, inner_var, "relax.maximum")
    if high is None or inner is None or uses[inner_var] != 1:
        return None
    low = _scalar_constant(inner.args[1])
    x = inner.args[0]
    if low is None or low > high or not isinstance(x.ty, relax.TensorType):
        return None
    if not tvm_ffi.structural_equal(x.ty, call.ty):  # the bounds do not broadcast x
        return None
    return relax.op.clip(x, low, high)


_TE_BINARY = {"maximum": relax.op.maximum, "minimum": relax.op.minimum}


def _te_binary(mod: IRModule | None, value: relax.Expr) -> relax.Expr | None:
    """A ``call_tir`` of the TE maximum / minimum kernel the ONNX frontend emits for Clip with
    tensor bounds, as the Relax operator (checked against the kernel TOPI builds for the same
    arguments, not only by name)."""
    if (
        mod is None
        or not isinstance(value, relax.Call)
        or value.op != tvm.ir.Op.get("relax.call_tir")
    ):
        return None
    callee, args = value.args[0], value.args[1]
    if not isinstance(callee, tvm.ir.GlobalVar) or not isinstance(args, relax.Tuple):
        return None
    name = callee.name_hint.rstrip("0123456789")
    if name not in _TE_BINARY or len(args.fields) != 2 or callee not in mod.functions:
        return None
    if not all(isinstance(a.ty, relax.TensorType) for a in args.fields):
        return None
    from tvm import topi

    builder = relax.BlockBuilder()
    params = [relax.Var(f"arg{i}", a.ty) for i, a in enumerate(args.fields)]
    with builder.function("reference", params):
        with builder.dataflow():
            out = builder.emit_output(builder.call_te(getattr(topi, name), *params))
        builder.emit_func_output(out)
    kernels = [f for f in builder.get().functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
    if len(kernels) != 1 or not tvm_ffi.structural_equal(kernels[0], mod[callee]):
        return None
    return _TE_BINARY[name](*args.fields)


def prepare_function(func: relax.Function, mod: IRModule | None = None) -> relax.Function:
    """One Relax function prepared (see the module docstring); the same object when nothing
    changes. ``mod`` holds the TIR kernels the function's ``call_tir`` calls."""
    body = func.body
    if not isinstance(body, relax.SeqExpr):
        return func
    uses = _uses(func)
    values: dict[relax.Var, relax.Expr] = {}
    for block in body.blocks:
        for binding in block.bindings:
            if isinstance(binding, relax.VarBinding):
                values[binding.var] = binding.value
    # Batch norms folded into their convolutions and nested clips merged: new values of some
    # bindings, and the bindings they make unused.
    rewritten: dict[relax.Var, relax.Expr] = {}
    removed: set[relax.Var] = set()
    for var, value in values.items():
        if isinstance(value, relax.TupleGetItem):
            fold = _batch_norm_fold(values, uses, value)
            if fold is not None:
                new_conv, conv_var, new_bias, unused = fold
                rewritten[conv_var] = new_conv
                rewritten[var] = relax.op.add(conv_var, new_bias)
                removed.update(unused)
        elif isinstance(value, relax.Call) and str(getattr(value.op, "name", "")) == "relax.clip":
            merged = _merge_clips(values, uses, value)
            if merged is not None and value.args[0] not in rewritten:
                rewritten[var] = merged
                removed.add(value.args[0])
        elif isinstance(value, relax.Call) and str(getattr(value.op, "name", "")) == "relax.take":
            narrow = _int32_indices(values, value)
            if narrow is not None:
                rewritten[var] = relax.op.take(value.args[0], narrow, axis=value.attrs.axis)
                if uses[value.args[1]] == 1:
                    removed.add(value.args[1])
        elif isinstance(value, relax.Call) and str(getattr(value.op, "name", "")) == (
            "relax.minimum"
        ):
            merged = _min_max_clip(values, uses, value)
            if merged is not None and value.args[0] not in rewritten:
                rewritten[var] = merged
                removed.add(value.args[0])
    # Searches already narrowed (by an earlier walk): their result is cast to int32.
    narrowed = {
        value.args[0]
        for value in values.values()
        if isinstance(value, relax.Call)
        and str(getattr(value.op, "name", "")) == "relax.astype"
        and str(value.attrs.dtype) == "int32"
    }
    known: dict[relax.Var, relax.Expr] = {}  # bindings folded to constants
    changed = bool(rewritten)
    blocks = []
    for block in body.blocks:
        kept: list[relax.Binding] = []
        for binding in block.bindings:
            var = binding.var
            if var in removed:
                continue
            value = rewritten.get(var, binding.value)
            if known and any(v in known for v in relax.analysis.free_vars(value)):
                value = substitute_vars(value, known)
                changed = True
            operator = _te_binary(mod, value)
            if operator is not None:
                rewritten[var] = operator
                changed = True
                value = operator
            if var in rewritten:
                value = relax.BlockBuilder().normalize(value)
            if isinstance(binding, relax.MatchCast):
                kept.append(relax.MatchCast(var, value, binding.ty))
                continue
            folded = _fold_call(value)
            if folded is None and isinstance(var, relax.DataflowVar):
                folded = _identity_broadcast(value)
            if folded is not None:
                known[var] = folded
                changed = True
                continue
            as_2d = _as_2d(value)
            if as_2d is not None:
                for step in range(len(as_2d)):
                    step_value = relax.BlockBuilder().normalize(as_2d[step])
                    if step == len(as_2d) - 1:
                        value = step_value
                        break
                    step_var = type(var)(f"{var.name}_2d{step}", step_value.ty)
                    kept.append(relax.VarBinding(step_var, step_value))
                    as_2d = [_replace_placeholder(e, step, step_var) for e in as_2d]
                changed = True
            elif _narrowable_search(value) and var not in narrowed:
                wide = type(var)(f"{var.name}_int64", value.ty)
                kept.append(relax.VarBinding(wide, value))
                narrow_value = relax.BlockBuilder().normalize(relax.op.astype(wide, "int32"))
                narrow = type(var)(f"{var.name}_int32", narrow_value.ty)
                kept.append(relax.VarBinding(narrow, narrow_value))
                value = relax.BlockBuilder().normalize(relax.op.astype(narrow, "int64"))
                changed = True
            kept.append(relax.VarBinding(var, value))
        kind = relax.DataflowBlock if isinstance(block, relax.DataflowBlock) else relax.BindingBlock
        blocks.append(kind(kept))
    if not changed:
        return func
    result = substitute_vars(body.body, known) if known else body.body
    return relax.Function(
        func.params, relax.SeqExpr(blocks, result), func.ret_ty, func.is_pure, func.attrs, func.span
    )


def _symbol_bounds(func: relax.Function) -> sym.Analyzer:
    """An analyzer that knows the bounds the function's attributes give its symbolic dimensions
    (``tir_var_lower_bound`` / ``tir_var_upper_bound``; a dimension is at least 0)."""
    analyzer = sym.Analyzer()
    attrs = func.attrs or {}
    lower = attrs.get("tir_var_lower_bound", {}) or {}
    upper = attrs.get("tir_var_upper_bound", {}) or {}
    for var in relax.analysis.defined_symbolic_vars(func):
        name = str(var)
        low = int(lower[name]) if name in lower else 0
        high = int(upper[name]) if name in upper else sym.ConstIntBound.POS_INF
        analyzer.update(var, sym.ConstIntBound(low, high))
    return analyzer


def _inbound_slice(call: relax.Call, analyzer: sym.Analyzer) -> relax.Expr | None:
    """The strided_slice ``call`` with ``assume_inbound`` and non-negative axes when its
    bounds provably lie in its static axes (unit strides); None otherwise."""
    if bool(call.attrs.assume_inbound) or len(call.args) not in (4, 5):
        return None
    data, axes, begin, end = call.args[:4]
    strides = call.args[4] if len(call.args) == 5 else None
    shape = data.ty.shape if isinstance(data.ty, relax.TensorType) else None
    if shape is None or not all(isinstance(a, relax.Tuple) for a in (axes, begin, end)):
        return None
    rank = len(shape.values)
    if strides is not None and not (
        isinstance(strides, relax.Tuple)
        and all(getattr(v, "value", None) == 1 for v in strides.fields)
    ):
        return None
    normalized = []
    for axis, first, last in zip(axes.fields, begin.fields, end.fields, strict=True):
        if not hasattr(axis, "value") or not -rank <= int(axis.value) < rank:
            return None
        index = int(axis.value) % rank
        size = shape.values[index]
        if not (
            analyzer.can_prove(first >= 0)
            and analyzer.can_prove(first <= last)
            and analyzer.can_prove(last <= size)
        ):
            return None
        normalized.append(index)
    return relax.op.strided_slice(
        data, normalized, list(begin.fields), list(end.fields), None, assume_inbound=True
    )


@mutator
class _InboundSlices(PyExprMutator):
    def __init__(self, analyzer: sym.Analyzer) -> None:
        super().__init__()
        self.analyzer = analyzer
        self.changed = False

    def visit_shape_expr_(self, shape: relax.ShapeExpr) -> relax.Expr:
        # A reshape to (min(seq_len, 128),) after the slice: (seq_len,) under the same bounds.
        values = [self.analyzer.simplify(value) for value in shape.values]
        if all(new.same_as(old) for new, old in zip(values, shape.values, strict=True)):
            return shape
        self.changed = True
        return relax.ShapeExpr(values)

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = super().visit_call_(call)
        if isinstance(call, relax.Call) and str(getattr(call.op, "name", "")) == (
            "relax.strided_slice"
        ):
            inbound = _inbound_slice(call, self.analyzer)
            if inbound is not None:
                self.changed = True
                return inbound
        return call


def inbound_slices(func: relax.Function) -> relax.Function:
    """``func`` with its strided slices proven in bounds marked so (see the module docstring)
    and the types after them inferred again; the same object when there is none."""
    if not any(
        isinstance(b.value, relax.Call)
        and str(getattr(b.value.op, "name", "")) == "relax.strided_slice"
        for b in _bindings(func)
    ):
        return func
    rewriter = _InboundSlices(_symbol_bounds(func))
    result = rewriter.visit_expr(func)
    return result if rewriter.changed else func


def _bindings(func: relax.Function) -> list[relax.Binding]:
    body = func.body
    if not isinstance(body, relax.SeqExpr):
        return []
    return [b for block in body.blocks for b in block.bindings]


def _identity_broadcast(value: relax.Expr) -> relax.Expr | None:
    """The input of a broadcast_to to its own shape (torch.export's expand before a batched
    matmul), or None."""
    if not (
        isinstance(value, relax.Call)
        and str(getattr(value.op, "name", "")) == "relax.broadcast_to"
        and isinstance(value.args[0].ty, relax.TensorType)
        and value.args[0].ty.shape is not None
        and isinstance(value.ty, relax.TensorType)
        and value.ty.shape is not None
    ):
        return None
    same = tvm_ffi.structural_equal(value.args[0].ty, value.ty)
    return value.args[0] if same else None


def _is_program(func: object) -> bool:
    if not isinstance(func, relax.Function):
        return False
    attrs = func.attrs or {}
    return "Composite" not in attrs and "Codegen" not in attrs and "Primitive" not in attrs


def prepare(
    mod: IRModule, entry_functions: Sequence[str] | None = None, nhwc: bool = True
) -> IRModule:
    """The module with its Relax functions (those named, if given) prepared; ``mod`` itself is
    not changed. ``nhwc``: then NCHW convolutions become NHWC (:mod:`.layout`)."""
    functions = {}
    changed = False
    for gvar, func in mod.functions.items():
        if _is_program(func) and (not entry_functions or gvar.name_hint in entry_functions):
            # Twice: what the first walk folds (ONNX Clip's bounds) is merged by the second.
            prepared = inbound_slices(prepare_function(prepare_function(func, mod), mod))
            if nhwc:
                prepared = nhwc_convolutions(prepared)
            changed = changed or prepared is not func
            func = prepared
        functions[gvar] = func
    if not changed:
        return mod
    return IRModule(functions, attrs=mod.attrs, global_infos=mod.global_infos)


# ---- dedicated dequantizes -----------------------------------------------------------------------

_DEQUANTIZE = "relax.dequantize"


def _call_arg_uses(value: relax.Expr, counts: dict, other: set) -> None:
    """Count the uses of variables as call arguments (directly or in a tuple argument); any
    other use goes to ``other``."""
    if isinstance(value, relax.Call):
        for arg in value.args:
            fields = arg.fields if isinstance(arg, relax.Tuple) else [arg]
            for item in fields:
                if isinstance(item, relax.Var):
                    counts[item] = counts.get(item, 0) + 1
                elif not isinstance(item, tvm.ir.Constant | relax.ShapeExpr):
                    relax.analysis.post_order_visit(
                        item, lambda n: other.add(n) if isinstance(n, relax.Var) else None
                    )
    else:
        relax.analysis.post_order_visit(
            value, lambda n: other.add(n) if isinstance(n, relax.Var) else None
        )


@mutator
class _DedicateDequantize(PyExprMutator):
    def __init__(self, shared: dict[relax.Var, relax.Call]) -> None:
        super().__init__()
        self.shared = shared

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        if binding.var in self.shared:
            return  # re-emitted at each reader
        super().visit_var_binding_(binding)

    def _fresh(self, arg: relax.Expr) -> relax.Expr:
        if isinstance(arg, relax.Var) and arg in self.shared:
            dq = self.shared[arg]
            args = [self.visit_expr(a) for a in dq.args]
            return self.builder_.emit(relax.Call(dq.op, args, dq.attrs, dq.ty_args), arg.name)
        if isinstance(arg, relax.Tuple):
            return relax.Tuple([self._fresh(field) for field in arg.fields])
        return self.visit_expr(arg)

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        args = [self._fresh(arg) for arg in call.args]
        return relax.Call(call.op, args, call.attrs, call.ty_args)


def dedicate_dequantize(mod: tvm.IRModule) -> tvm.IRModule:
    """Give every reader of a dequantized value read by several operators its own
    ``dequantize`` (of the same quantized value), so that each quantized group owns its input's
    dequantize. Values used otherwise (returned, aliased) keep their one dequantize."""
    changed = False
    functions = {}
    for gvar, func in mod.functions.items():
        functions[gvar] = func
        if not isinstance(func, relax.Function) or (func.attrs or {}).get("Composite"):
            continue
        dequantizes: dict[relax.Var, relax.Call] = {}
        counts: dict[relax.Var, int] = {}
        other: set = set()
        if not isinstance(func.body, relax.SeqExpr):
            continue
        for block in func.body.blocks:
            for binding in block.bindings:
                value = binding.value
                if isinstance(value, relax.Call) and value.op == tvm.ir.Op.get(_DEQUANTIZE):
                    if isinstance(block, relax.DataflowBlock):
                        dequantizes[binding.var] = value
                _call_arg_uses(value, counts, other)
        _call_arg_uses(func.body.body, counts, other)
        shared = {
            var: call
            for var, call in dequantizes.items()
            if counts.get(var, 0) > 1 and var not in other
        }
        if shared:
            functions[gvar] = _DedicateDequantize(shared).visit_expr(func)
            changed = True
    if not changed:
        return mod
    return tvm.IRModule(functions, attrs=mod.attrs, global_infos=mod.global_infos)
