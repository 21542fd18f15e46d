# SPDX-License-Identifier: Apache-2.0
"""Shape and data-movement operators: reshape family, permute_dims, concat, split,
strided_slice, take, tile, broadcast_to, pad, resize2d.

Target shapes, slice bounds and split sizes may be symbolic: they are written as dimension
expressions in inline TENSOR_INT32 operands and evaluated by the runtime per shape signature.
"""

from __future__ import annotations

import numpy as np
import tvm
import tvm_ffi
from tvm import relax
from tvm.relax.backend.utils import has_leaking_intermediate_variables
from tvm.relax.dpl import is_op, wildcard
from tvm.relax.transform import PatternCheckContext

from ..converters import ConvertContext, int_attr, int_tuple, normalize_axis
from ..graph_json import Dim
from ..patterns import (
    FEATURE_LEVEL_1,
    FEATURE_LEVEL_2,
    FEATURE_LEVEL_3,
    FEATURE_LEVEL_4,
    FEATURE_LEVEL_6,
    FEATURE_LEVEL_7,
    CheckResult,
    Conclusive,
    Lowering,
    PartitionOptions,
    RefusalKind,
    check_tensors,
    single_op,
    static_dim,
    static_dims,
    tensor_info,
)

_FLOAT = {"float32": FEATURE_LEVEL_1, "float16": FEATURE_LEVEL_3}


# ---- reshape, expand_dims, squeeze, flatten -> RESHAPE -------------------------------------------

_RESHAPES = {"relax.reshape": 2, "relax.expand_dims": 1, "relax.squeeze": 1, "relax.flatten": 1}


def _check_reshape(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    dtypes = {**_FLOAT, "int32": FEATURE_LEVEL_6}
    result = check_tensors(call, dtypes, options, inputs=[call.args[0]])
    if result is None and call.ty.ndim == 0:
        return RefusalKind.RANK, "a reshape to a scalar has no NNAPI shape"
    return result


def convert_reshape(ctx: ConvertContext, call: relax.Call) -> int:
    out = ctx.output(call)
    target = ctx.int_vector(ctx.shape(call))
    ctx.emit("RESHAPE", [ctx.operand(call.args[0]), target], [out], str(call.op.name))
    return out


# ---- permute_dims -> TRANSPOSE -------------------------------------------------------------------


def _check_permute(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    # TRANSPOSE has no TENSOR_INT32 form (reshapes have, since FL6).
    dtypes = {"float32": FEATURE_LEVEL_2, "float16": FEATURE_LEVEL_3}
    return check_tensors(call, dtypes, options)


def convert_permute(ctx: ConvertContext, call: relax.Call) -> int:
    rank = ctx.rank(call)
    axes = call.attrs.axes
    perm = (
        list(reversed(range(rank)))
        if axes is None
        else [normalize_axis(a, rank) for a in int_tuple(axes)]
    )
    out = ctx.output(call)
    ctx.emit(
        "TRANSPOSE", [ctx.operand(call.args[0]), ctx.int_vector(perm)], [out], "relax.permute_dims"
    )
    return out


# ---- concat -> CONCATENATION ---------------------------------------------------------------------


def _check_concat(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    if call.attrs.axis is None:
        return RefusalKind.ATTRIBUTE, "concat with axis=None (flattening) is not offloaded"
    fields = call.args[0].fields if isinstance(call.args[0], relax.Tuple) else None
    if fields is None:
        return RefusalKind.ATTRIBUTE, "concat of a tuple variable is not offloaded"
    # CONCATENATION has no TENSOR_INT32 form.
    return check_tensors(call, _FLOAT, options, inputs=list(fields))


def convert_concat(ctx: ConvertContext, call: relax.Call) -> int:
    rank = ctx.rank(call)
    inputs = [*ctx.operands(call.args[0]), ctx.int32(normalize_axis(int(call.attrs.axis), rank))]
    out = ctx.output(call)
    ctx.emit("CONCATENATION", inputs, [out], "relax.concat")
    return out


# ---- split -> SPLIT (equal sections) or SLICE per piece ------------------------------------------


def _split_indices(call: relax.Call) -> bool:
    """Whether the split is at indices (not into equal sections)."""
    return isinstance(call.attrs.indices_or_sections, tvm.ir.Array | list | tuple)


def _check_split(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    x = tensor_info(call.args[0])
    dtypes = {**_FLOAT, "int32": FEATURE_LEVEL_3}
    if x is None or str(x.dtype) not in dtypes:
        return RefusalKind.DTYPE, "split input must be float32, float16 or int32"
    if x.ndim > 4 or x.ndim < 1:
        return RefusalKind.RANK, f"rank {x.ndim} is outside 1-4"
    if options.feature_level < FEATURE_LEVEL_3:
        return RefusalKind.FEATURE_LEVEL, "SPLIT and SLICE need FL3"
    axis = normalize_axis(int(call.attrs.axis), x.ndim)
    # Only the split axis must be static; other dimensions (an LLM's seq_len) may be symbolic.
    size = getattr(x.shape.values[axis], "value", None) if x.shape is not None else None
    sections = call.attrs.indices_or_sections
    if not _split_indices(call):
        if size is None or int(size) % int_attr(sections) != 0:
            return RefusalKind.ATTRIBUTE, "SPLIT needs the axis to divide evenly (static size)"
    return None


def _split_operations(call: relax.Call) -> tuple[str, ...]:
    """SPLIT for equal sections, else one SLICE per piece."""
    return ("SLICE",) if _split_indices(call) else ("SPLIT",)


def convert_split(ctx: ConvertContext, call: relax.Call) -> tuple[int, ...]:
    x_expr = call.args[0]
    x = ctx.operand(x_expr)
    rank = ctx.rank(x_expr)
    dtype = ctx.dtype(x_expr)
    shape = ctx.shape(x_expr)
    axis = normalize_axis(int(call.attrs.axis), rank)
    sections = call.attrs.indices_or_sections
    output_types = call.ty.fields
    outputs = []
    for field in output_types:
        dims = ctx.builder.shape(list(field.shape.values), ctx.shape_vars)
        outputs.append(ctx.tensor(dtype, dims))
    if not _split_indices(call):
        inputs = [x, ctx.int32(axis), ctx.int32(int_attr(sections))]
        ctx.emit("SPLIT", inputs, outputs, "relax.split")
        return tuple(outputs)
    bounds = [0, *int_tuple(sections)]
    for index, out in enumerate(outputs):
        begin = [0] * rank
        begin[axis] = bounds[index]
        size = list(ctx.builder.shape(list(output_types[index].shape.values), ctx.shape_vars))
        ctx.emit("SLICE", [x, ctx.int_vector(begin), ctx.int_vector(size)], [out], "relax.split")
    del shape
    return tuple(outputs)


# ---- strided_slice -> STRIDED_SLICE --------------------------------------------------------------


def _check_strided_slice(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    # STRIDED_SLICE has no TENSOR_INT32 form.
    dtypes = {"float32": FEATURE_LEVEL_2, "float16": FEATURE_LEVEL_3}
    result = check_tensors(call, dtypes, options, inputs=[call.args[0]])
    if result is not None:
        return result
    if len(call.args) > 4:
        strides = call.args[4]
        values = [getattr(v, "value", None) for v in strides.fields]
        if any(v is None or int(v) == 0 for v in values):
            return RefusalKind.ATTRIBUTE, "only constant non-zero strides are offloaded"
        rank = call.args[0].ty.ndim
        for axis, b, e, v in zip(
            call.args[1].fields, call.args[2].fields, call.args[3].fields, values, strict=True
        ):
            if int(v) < 0 and (  # type: ignore[arg-type]
                static_dim(call.args[0], normalize_axis(int_attr(axis), rank)) is None
                or not all(hasattr(x, "value") for x in (b, e))
            ):
                return (
                    RefusalKind.DYNAMIC_SHAPE,
                    "a negative stride needs a static axis and constant bounds",
                )
    out = static_dims(call, range(call.ty.ndim))
    if out is not None and 0 in out:
        return RefusalKind.ATTRIBUTE, "the slice is empty (NNAPI has no zero-sized tensors)"
    return None


def _canonical_bounds(begin: int, end: int, stride: int, dim: int) -> tuple[int, int]:
    """Relax's (and NumPy's) slice bounds: negative ones count from the end, then they are
    clamped to [0, dim] for a positive stride and to [-1, dim - 1] for a negative one."""
    begin = begin + dim if begin < 0 else begin
    end = end + dim if end < 0 else end
    if stride > 0:
        return min(max(begin, 0), dim), min(max(end, 0), dim)
    return min(max(begin, -1), dim - 1), min(max(end, -1), dim - 1)


def convert_strided_slice(ctx: ConvertContext, call: relax.Call) -> int:
    x_expr = call.args[0]
    rank = ctx.rank(x_expr)
    axes = [normalize_axis(int_attr(a), rank) for a in call.args[1].fields]
    begins = list(call.args[2].fields)
    ends = list(call.args[3].fields)
    strides = list(call.args[4].fields) if len(call.args) > 4 else [1] * len(axes)
    begin: list[Dim] = [0] * rank
    end: list[Dim] = [0] * rank
    step = [1] * rank
    begin_mask = end_mask = 0
    shape = ctx.shape(x_expr)
    for axis in range(rank):
        if axis not in axes:
            begin_mask |= 1 << axis
            end_mask |= 1 << axis
    int32_max = 2**31 - 1
    for axis, b, e, s in zip(axes, begins, ends, strides, strict=True):
        begin_value = ctx.builder.shape([b], ctx.shape_vars)[0]
        end_value = ctx.builder.shape([e], ctx.shape_vars)[0]
        dim = shape[axis]
        stride = int_attr(s)
        if isinstance(begin_value, int) and isinstance(end_value, int) and isinstance(dim, int):
            # Static: the bounds as Relax clamps them (ONNX Slice's INT64_MAX / INT64_MIN ends
            # included), which also keeps them in NNAPI's int32.
            begin_value, end_value = _canonical_bounds(begin_value, end_value, stride, dim)
            if stride < 0 and end_value == -1:
                # Down to index 0: NNAPI would read -1 as the last index, the mask says "all".
                end_mask |= 1 << axis
                end_value = 0
        elif isinstance(end_value, int) and (
            end_value >= int32_max or (isinstance(dim, int) and end_value >= dim)
        ):
            end_mask |= 1 << axis
            end_value = 0
        begin[axis] = begin_value
        end[axis] = end_value
        step[axis] = stride
    inputs = [
        ctx.operand(x_expr),
        ctx.int_vector(begin),
        ctx.int_vector(end),
        ctx.int_vector(step),
        ctx.int32(begin_mask),
        ctx.int32(end_mask),
        ctx.int32(0),
    ]
    out = ctx.output(call)
    ctx.emit("STRIDED_SLICE", inputs, [out], "relax.strided_slice")
    return out


# ---- take -> GATHER ------------------------------------------------------------------------------


def _check_take(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    dtypes = {**{k: FEATURE_LEVEL_3 for k in _FLOAT}, "int32": FEATURE_LEVEL_3}
    result = check_tensors(call, dtypes, options, inputs=[call.args[0]])
    if result is not None:
        return result
    indices = tensor_info(call.args[1])
    if indices is None or str(indices.dtype) not in ("int32", "int64"):
        return RefusalKind.DTYPE, "indices must be int32"
    if str(indices.dtype) == "int64" and not isinstance(call.args[1], tvm.ir.Constant):
        return RefusalKind.DTYPE, "int64 indices are offloaded only as constants (NNAPI uses int32)"
    if indices.ndim == 0:
        return RefusalKind.RANK, "scalar indices are not offloaded"
    if call.attrs.axis is None:
        return RefusalKind.ATTRIBUTE, "take without an axis (flattened) is not offloaded"
    return None


def convert_take(ctx: ConvertContext, call: relax.Call) -> int:
    rank = ctx.rank(call.args[0])
    indices_expr = call.args[1]
    if isinstance(indices_expr, tvm.ir.Constant):
        indices = ctx.constant(indices_expr.value.numpy().astype(np.int32))
    else:
        indices = ctx.operand(indices_expr)
    axis = ctx.int32(normalize_axis(int(call.attrs.axis), rank))
    out = ctx.output(call)
    ctx.emit("GATHER", [ctx.operand(call.args[0]), axis, indices], [out], "relax.take")
    return out


# ---- tile -> TILE --------------------------------------------------------------------------------


def _check_tile(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    dtypes = {k: FEATURE_LEVEL_3 for k in (*_FLOAT, "int32")}
    result = check_tensors(call, dtypes, options)
    if result is None and any(r < 1 for r in int_tuple(call.attrs.repeats)):
        return RefusalKind.ATTRIBUTE, "TILE needs positive multiples"
    return result


def _tile_operations(call: relax.Call) -> tuple[str, ...]:
    """TILE, after a RESHAPE adding leading unit axes when there are more repeats than axes."""
    if len(call.attrs.repeats) > call.args[0].ty.ndim:
        return ("RESHAPE", "TILE")
    return ("TILE",)


def convert_tile(ctx: ConvertContext, call: relax.Call) -> int:
    x_expr = call.args[0]
    x = ctx.operand(x_expr)
    rank = ctx.rank(call)
    repeats = int_tuple(call.attrs.repeats)
    # Relax (like NumPy) prepends unit repeats, or unit axes of the input, to match ranks.
    repeats = [1] * (rank - len(repeats)) + repeats
    shape: list[Dim] = ctx.shape(x_expr)
    if len(shape) < rank:
        shape = [*([1] * (rank - len(shape))), *shape]
        x = ctx.reshape(x, ctx.dtype(x_expr), shape, "relax.tile")
    out = ctx.output(call)
    ctx.emit("TILE", [x, ctx.constant(np.array(repeats, dtype=np.int32))], [out], "relax.tile")
    return out


# ---- broadcast_to -> TILE (or a RESHAPE when nothing is repeated) --------------------------------


def _target_dims(call: relax.Call) -> list:
    """The dimensions a broadcast_to's shape argument gives (an expression, or in a composite
    function a parameter whose type holds them)."""
    shape = call.args[1]
    if isinstance(shape, relax.ShapeExpr):
        return list(shape.values)
    values = getattr(shape.ty, "values", None)
    return list(values) if values is not None else list(call.ty.shape.values)


def _broadcast_multiples(call: relax.Call) -> list[int] | str:
    """TILE's multiples for a broadcast_to (the input's dimensions padded in front with units),
    or why there are none: a unit axis broadcast to a symbolic size."""
    source = list(call.args[0].ty.shape.values)
    target = _target_dims(call)
    source = [tvm.tirx.IntImm("int64", 1)] * (len(target) - len(source)) + source
    multiples = []
    for axis, (have, want) in enumerate(zip(source, target, strict=True)):
        if tvm_ffi.structural_equal(have, want):
            multiples.append(1)
        elif getattr(have, "value", None) == 1 and hasattr(want, "value"):
            multiples.append(int(want.value))
        else:
            return f"axis {axis} of size {have} broadcast to {want}: TILE's multiples are constants"
    return multiples


def _check_broadcast_to(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    dtypes = {k: FEATURE_LEVEL_3 for k in (*_FLOAT, "int32")}
    result = check_tensors(call, dtypes, options, inputs=[call.args[0]])
    if result is not None:
        return result
    multiples = _broadcast_multiples(call)
    if isinstance(multiples, str):
        return RefusalKind.DYNAMIC_SHAPE, multiples
    if any(not hasattr(d, "value") for d in _target_dims(call)):
        # In the subgraph the shape becomes a parameter, and the result's type (its shape the
        # parameter) no longer says the dimensions outside it.
        return RefusalKind.DYNAMIC_SHAPE, "a broadcast to a symbolic shape"
    return None


def _broadcast_to_operations(call: relax.Call) -> tuple[str, ...]:
    """A RESHAPE adding the leading unit axes (or, nothing repeated, the only operation), then
    TILE."""
    multiples = _broadcast_multiples(call)
    assert not isinstance(multiples, str)
    operations = []
    if call.args[0].ty.ndim != call.ty.ndim or all(m == 1 for m in multiples):
        operations.append("RESHAPE")
    if any(m != 1 for m in multiples):
        operations.append("TILE")
    return tuple(operations)


def convert_broadcast_to(ctx: ConvertContext, call: relax.Call) -> int:
    x_expr = call.args[0]
    x = ctx.operand(x_expr)
    multiples = _broadcast_multiples(call)
    assert not isinstance(multiples, str)
    dtype = ctx.dtype(x_expr)
    # In a composite function the shape is a parameter, which is the call's type's shape.
    target = ctx.builder.shape(_target_dims(call), ctx.shape_vars)
    if all(m == 1 for m in multiples):
        # The same tensor (torch.export's expand before a batched matmul): a RESHAPE to itself.
        return ctx.reshape(x, dtype, target, "relax.broadcast_to")
    shape: list[Dim] = ctx.shape(x_expr)
    if len(shape) < len(target):
        shape = [*([1] * (len(target) - len(shape))), *shape]
        x = ctx.reshape(x, dtype, shape, "relax.broadcast_to")
    out = ctx.tensor(dtype, target)
    multiples_operand = ctx.constant(np.array(multiples, dtype=np.int32))
    ctx.emit("TILE", [x, multiples_operand], [out], "relax.broadcast_to")
    return out


# ---- depth_to_space / space_to_depth: reshape, permute_dims, reshape -> DEPTH_TO_SPACE ... ------

# The 6-D permutations TVM's ONNX frontend writes (NCHW), by ONNX operator and mode.
_BLOCK_PERMUTATIONS = {
    (0, 3, 4, 1, 5, 2): "DEPTH_TO_SPACE",  # DepthToSpace, DCR: NNAPI's (TensorFlow's) order
    (0, 1, 4, 2, 5, 3): "CRD",  # DepthToSpace, CRD: no NNAPI operation
    (0, 3, 5, 1, 2, 4): "SPACE_TO_DEPTH",  # SpaceToDepth
}


def _block_pattern(operation: str):
    """reshape, permute_dims by one of ``operation``'s permutations, reshape."""

    def make():
        x = wildcard()
        inner = is_op("relax.reshape")(x, wildcard())
        perms = [
            list(p) for p, case in _BLOCK_PERMUTATIONS.items() if _CASE_OF.get(case) == operation
        ]
        permute = None
        for perm in perms:
            alternative = is_op("relax.permute_dims")(inner).has_attr({"axes": perm})
            permute = alternative if permute is None else permute | alternative
        outer = is_op("relax.reshape")(permute, wildcard())
        return outer, {"root": outer, "x": x, "inner": inner, "permute": permute}

    return make


# Which record a permutation's case belongs to (CRD is matched, and refused, by depth_to_space).
_CASE_OF = {
    "DEPTH_TO_SPACE": "DEPTH_TO_SPACE",
    "CRD": "DEPTH_TO_SPACE",
    "SPACE_TO_DEPTH": "SPACE_TO_DEPTH",
}


def _block_case(
    x: relax.Expr, inner: relax.Expr, permute: relax.Call, outer: relax.Expr
) -> tuple[str, int] | None:
    """(NNAPI operation or "CRD", block size) when the chain is a depth/space rearrangement of
    a static NCHW tensor, else None."""
    data, six, out = (
        static_dims(e, range(e.ty.ndim)) if tensor_info(e) else None for e in (x, inner, outer)
    )
    if data is None or six is None or out is None or permute.attrs.axes is None:
        return None
    if len(data) != 4 or len(six) != 6 or len(out) != 4:
        return None
    case = _BLOCK_PERMUTATIONS.get(tuple(int_tuple(permute.attrs.axes)))  # type: ignore[arg-type]
    if case is None:
        return None
    n, c, h, w = data
    if case == "SPACE_TO_DEPTH":
        block = six[3]
        expected_six = [n, c, h // block, block, w // block, block]
        expected_out = [n, c * block * block, h // block, w // block]
    else:
        block = six[2]
        depth = c // (block * block)
        expected_six = (
            [n, block, block, depth, h, w] if case != "CRD" else [n, depth, block, block, h, w]
        )
        expected_out = [n, depth, h * block, w * block]
    if block < 1 or six != expected_six or out != expected_out:
        return None
    return case, block


def _check_block(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    annotated = ctx.annotated_expr
    x = annotated["x"]
    result = check_tensors(call, {**_FLOAT, "int32": FEATURE_LEVEL_3}, options, inputs=[x])
    if result is not None:
        return result
    found = _block_case(x, annotated["inner"], annotated["permute"], call)
    if found is None:
        return RefusalKind.ATTRIBUTE, "this reshape / permute_dims / reshape is no block move"
    if found[0] == "CRD":
        return Conclusive(
            RefusalKind.ATTRIBUTE,
            "depth_to_space in CRD order: NNAPI's DEPTH_TO_SPACE takes the DCR order only",
        )
    if options.feature_level < FEATURE_LEVEL_3:
        return RefusalKind.FEATURE_LEVEL, "the NCHW layout flag needs FL3"
    if has_leaking_intermediate_variables(ctx):
        return RefusalKind.ATTRIBUTE, "an intermediate reshape is used outside the block move"
    return None


def convert_block(ctx: ConvertContext, composite: relax.Function) -> int:
    from ..converters import operator_calls

    inner, permute, outer = operator_calls(composite)
    found = _block_case(inner.args[0], inner, permute, outer)
    if found is None:
        raise ctx.fail(outer, "the block move changed since it was matched")
    case, block = found
    out = ctx.output(outer)
    inputs = [ctx.operand(inner.args[0]), ctx.int32(block), ctx.bool(True)]
    ctx.emit(case, inputs, [out], "relax.reshape")
    return out


# ---- pad -> PAD / PAD_V2 / MIRROR_PAD ------------------------------------------------------------


def _check_pad(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    result = check_tensors(call, {"float32": FEATURE_LEVEL_2, "float16": FEATURE_LEVEL_3}, options)
    if result is not None:
        return result
    mode = str(call.attrs.pad_mode)
    if mode == "constant":
        if float(call.attrs.pad_value) != 0.0 and options.feature_level < FEATURE_LEVEL_3:
            return RefusalKind.FEATURE_LEVEL, "PAD_V2 (non-zero pad value) needs FL3"
        return None
    if mode == "reflect":
        if options.feature_level < FEATURE_LEVEL_7:
            return RefusalKind.FEATURE_LEVEL, "MIRROR_PAD needs FL7"
        return None
    return RefusalKind.ATTRIBUTE, f"pad mode {mode} has no NNAPI operation"


def _pad_operation(call: relax.Call) -> str:
    if str(call.attrs.pad_mode) == "reflect":
        return "MIRROR_PAD"
    return "PAD_V2" if float(call.attrs.pad_value) != 0.0 else "PAD"


def convert_pad(ctx: ConvertContext, call: relax.Call) -> int:
    attrs = call.attrs
    rank = ctx.rank(call)
    widths = np.array(int_tuple(attrs.pad_width), dtype=np.int32).reshape(rank, 2)
    inputs = [ctx.operand(call.args[0]), ctx.constant(widths)]
    op = _pad_operation(call)
    if op == "MIRROR_PAD":
        inputs.append(ctx.int32(0))  # REFLECT
    elif op == "PAD_V2":
        inputs.append(ctx.float_scalar(float(attrs.pad_value), ctx.dtype(call)))
    out = ctx.output(call)
    ctx.emit(op, inputs, [out], "relax.nn.pad")
    return out


# ---- resize2d -> RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR ---------------------------------------

_RESIZE_MODES = {
    "align_corners": (True, False),
    "half_pixel": (False, True),
    "asymmetric": (False, False),
}


def _check_resize(
    call: relax.Call, options: PartitionOptions, ctx: PatternCheckContext
) -> CheckResult:
    result = check_tensors(call, _FLOAT, options, inputs=[call.args[0]])
    if result is not None:
        return result
    attrs = call.attrs
    layout = str(attrs.layout)
    if layout not in ("NCHW", "NHWC"):
        return RefusalKind.ATTRIBUTE, f"layout {layout} is not NHWC or NCHW"
    method = str(attrs.method)
    mode = str(attrs.coordinate_transformation_mode)
    if method == "linear":
        if mode not in _RESIZE_MODES:
            return RefusalKind.ATTRIBUTE, f"coordinate mode {mode} has no NNAPI equivalent"
    elif method == "nearest_neighbor":
        if mode != "asymmetric" or str(attrs.rounding_method) not in ("floor", ""):
            return RefusalKind.ATTRIBUTE, "nearest resize is offloaded for asymmetric/floor only"
    else:
        return RefusalKind.ATTRIBUTE, f"resize method {method} has no NNAPI operation"
    if static_dims(call, [layout.index("H"), layout.index("W")]) is None:
        return RefusalKind.DYNAMIC_SHAPE, "the output height and width must be static"
    level = FEATURE_LEVEL_4 if mode != "asymmetric" else FEATURE_LEVEL_3 if layout == "NCHW" else 0
    if level > options.feature_level:
        return RefusalKind.FEATURE_LEVEL, f"this resize needs feature level {level}"
    return None


def _resize_operation(call: relax.Call) -> str:
    return "RESIZE_BILINEAR" if str(call.attrs.method) == "linear" else "RESIZE_NEAREST_NEIGHBOR"


def convert_resize(ctx: ConvertContext, call: relax.Call) -> int:
    attrs = call.attrs
    layout = str(attrs.layout)
    out_shape = ctx.shape(call)
    height, width = out_shape[layout.index("H")], out_shape[layout.index("W")]
    align, half = _RESIZE_MODES[str(attrs.coordinate_transformation_mode)]
    op = _resize_operation(call)
    inputs = [
        ctx.operand(call.args[0]),
        ctx.int32(width),
        ctx.int32(height),
        ctx.bool(layout == "NCHW"),
    ]
    if align or half:
        inputs += [ctx.bool(align), ctx.bool(half)]
    out = ctx.output(call)
    ctx.emit(op, inputs, [out], "relax.image.resize2d")
    return out


#: The patterns of several operators (tried before the single reshape and permute_dims).
BLOCK_MOVES: list[Lowering] = [
    Lowering(
        name=f"nnapi.{operation.lower()}",
        relax_op="relax.reshape",
        pattern=_block_pattern(operation),
        check=_check_block,
        convert=convert_block,
        emits=(operation,),
    )
    for operation in ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
]

LOWERINGS: list[Lowering] = [
    *(
        single_op(op, arity, _check_reshape, convert_reshape, ("RESHAPE",))
        for op, arity in _RESHAPES.items()
    ),
    single_op("relax.permute_dims", 1, _check_permute, convert_permute, ("TRANSPOSE",)),
    single_op("relax.concat", 1, _check_concat, convert_concat, ("CONCATENATION",)),
    single_op(
        "relax.split",
        1,
        _check_split,
        convert_split,
        ("SPLIT", "SLICE"),
        requires=_split_operations,
    ),
    single_op(
        "relax.strided_slice", 4, _check_strided_slice, convert_strided_slice, ("STRIDED_SLICE",)
    ),
    single_op(
        "relax.strided_slice",
        5,
        _check_strided_slice,
        convert_strided_slice,
        ("STRIDED_SLICE",),
        name="nnapi.strided_slice_strides",
    ),
    single_op("relax.take", 2, _check_take, convert_take, ("GATHER",)),
    single_op(
        "relax.tile",
        1,
        _check_tile,
        convert_tile,
        ("TILE", "RESHAPE"),
        requires=_tile_operations,
    ),
    single_op(
        "relax.broadcast_to",
        2,
        _check_broadcast_to,
        convert_broadcast_to,
        ("RESHAPE", "TILE"),
        requires=_broadcast_to_operations,
    ),
    single_op(
        "relax.nn.pad",
        1,
        _check_pad,
        convert_pad,
        ("PAD", "PAD_V2", "MIRROR_PAD"),
        requires=lambda call: (_pad_operation(call),),
    ),
    single_op(
        "relax.image.resize2d",
        2,
        _check_resize,
        convert_resize,
        ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"),
        requires=lambda call: (_resize_operation(call),),
    ),
]
