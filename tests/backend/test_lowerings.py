# SPDX-License-Identifier: Apache-2.0
"""The lowering records (tvm_nnapi/compiler/lowerings): one record per pattern with its check,
its converter and the NNAPI operations it emits, collected in one list.

The invariants are checked on real lowerings: the modules of the differential tests
(test_ops.py, test_ops_extra.py), the built-in CNNs and tiny LLMs, and the functions below that
reach every case of every record, are partitioned and lowered, and the NNAPI operations each
composite's converter put in the graph JSON are compared with what its record declares and with
what the device check asked the target for.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import relax

import mock_nnapi
import tvm_nnapi
from tvm_nnapi.compiler import codegen, lowerings
from tvm_nnapi.compiler.lowerings import quantized as quantized_family
from tvm_nnapi.compiler.patterns import PartitionOptions, RefusalKind, single_op_name
from tvm_nnapi.tools.sources import CNN_MODELS, load_model_source

from . import test_ops, test_ops_extra, test_ops_frontend

PACKAGE = Path(tvm_nnapi.__file__).parent
RNG = np.random.default_rng(15)
INF = float("inf")
op = relax.op


def const(*shape: int) -> relax.Expr:
    return relax.const(RNG.uniform(-1, 1, shape).astype("float32"))


def scalar(value: float) -> relax.Expr:
    return relax.const(np.float32(value))


Shape = tuple[int, ...]
Build = Callable[[list[relax.Var]], relax.Expr]


@dataclass
class Function:
    """One representative Relax function: the input shapes (float32 unless given) and the body."""

    name: str
    inputs: Sequence[Shape | tuple[Shape, str]]
    build: Build

    def module(self) -> tvm.IRModule:
        params = []
        for index, spec in enumerate(self.inputs):
            shape, dtype = spec if isinstance(spec[0], tuple) else (spec, "float32")
            params.append(relax.Var(f"x{index}", relax.TensorType(list(shape), dtype)))
        builder = relax.BlockBuilder()
        with builder.function("main", params):
            with builder.dataflow():
                out = builder.emit_output(self.build(params))
            builder.emit_func_output(out)
        return builder.get()


# The fused forms of a conv: what follows it, given its output and its output channels.
Finish = Callable[[relax.Expr, int], relax.Expr]
CONV_FORMS: dict[str, Finish] = {
    "": lambda y, channels: y,
    "_bias": lambda y, channels: op.add(y, const(1, channels, 1, 1)),
    "_act": lambda y, channels: op.nn.relu(y),
    "_bias_act": lambda y, channels: op.clip(op.add(y, const(1, channels, 1, 1)), 0, 6),
}


def _conv(finish: Finish, weight: Shape, groups: int, filter_input: bool) -> Build:
    def build(p: list[relax.Var]) -> relax.Expr:
        kernel = p[1] if filter_input else const(*weight)
        return finish(op.nn.conv2d(p[0], kernel, groups=groups, padding=1), weight[0])

    return build


def _conv_transpose(finish: Finish, filter_input: bool) -> Build:
    def build(p: list[relax.Var]) -> relax.Expr:
        kernel = p[1] if filter_input else const(3, 4, 3, 3)
        return finish(op.nn.conv2d_transpose(p[0], kernel), 4)

    return build


def _conv_functions() -> list[Function]:
    """conv2d and conv2d_transpose in every fused form, with each NNAPI convolution, with
    constant filters and with filters that are inputs (rearranged by a TRANSPOSE)."""
    convs = {
        # name: (filter shape, groups)
        "conv": ((4, 4, 3, 3), 1),
        "depthwise": ((8, 1, 3, 3), 4),
        "grouped": ((4, 2, 3, 3), 2),
    }
    functions = []
    for form, finish in CONV_FORMS.items():
        for name, (weight, groups) in convs.items():
            build = _conv(finish, weight, groups, filter_input=False)
            functions.append(Function(f"{name}{form}", [(1, 4, 8, 8)], build))
        build = _conv(finish, (4, 4, 3, 3), 1, filter_input=True)
        functions.append(Function(f"conv_filter_input{form}", [(1, 4, 8, 8), (4, 4, 3, 3)], build))
        build = _conv_transpose(finish, filter_input=False)
        functions.append(Function(f"conv_transpose{form}", [(1, 3, 5, 5)], build))
        build = _conv_transpose(finish, filter_input=True)
        inputs = [(1, 3, 5, 5), (3, 4, 3, 3)]
        functions.append(Function(f"conv_transpose_filter_input{form}", inputs, build))
    return functions


def _matmul(
    w_shape: Shape, weight_input: bool, transposed: bool, bias: bool, relu: bool = False
) -> Build:
    def build(p: list[relax.Var]) -> relax.Expr:
        w = p[1] if weight_input else const(*w_shape)
        y = op.matmul(p[0], op.permute_dims(w) if transposed else w)
        y = op.add(y, const(w_shape[0] if transposed else w_shape[1])) if bias else y
        return op.nn.relu(y) if relu else y

    return build


def _matmul_functions() -> list[Function]:
    """matmul with a constant or input weight, transposed or not, with and without the bias and
    a fused relu, on 2-D and 3-D inputs (FULLY_CONNECTED, with TRANSPOSE and RESHAPE where
    needed), and batched (BATCH_MATMUL)."""
    functions = []
    for rank in (2, 3):
        x_shape = (2, 5, 6)[-rank:]
        for weight_input in (False, True):
            for transposed in (False, True):
                for bias in (False, True):
                    for relu in (False, True):
                        w_shape = (4, 6) if transposed else (6, 4)
                        inputs = [x_shape, w_shape] if weight_input else [x_shape]
                        name = f"matmul{rank}d_" + ("input" if weight_input else "const")
                        name += ("_t" if transposed else "") + ("_bias" if bias else "")
                        name += "_relu" if relu else ""
                        build = _matmul(w_shape, weight_input, transposed, bias, relu)
                        functions.append(Function(name, inputs, build))
    functions.append(
        Function("batch_matmul", [(2, 3, 4), (2, 4, 5)], lambda p: op.matmul(p[0], p[1]))
    )
    functions.append(
        Function(
            "batch_matmul_t",
            [(2, 3, 4), (2, 5, 4)],
            lambda p: op.matmul(p[0], op.permute_dims(p[1], [0, 2, 1])),
        )
    )
    return functions


Activation = Callable[[relax.Expr], relax.Expr]
RELU6_FORMS: dict[str, Activation] = {
    "": lambda v: op.clip(v, 0, 6),
    "_clip2": lambda v: op.clip(op.clip(v, 0, INF), -INF, 6),
}
SCALE_FORMS: dict[str, Activation] = {
    "": lambda v: op.divide(v, scalar(6.0)),
    "_mul": lambda v: op.multiply(v, scalar(1.0 / 6.0)),
}


def _hard_activation(kind: str, relu6: Activation, scale: Activation) -> Build:
    def build(p: list[relax.Var]) -> relax.Expr:
        x = p[0]
        shifted = relu6(op.add(x, scalar(3.0)))
        if kind == "hardsigmoid":
            return scale(shifted)
        if kind == "hardswish":
            return op.multiply(x, scale(shifted))
        return scale(op.multiply(x, shifted))  # hardswish_scaled_last

    return build


def _hard_activation_functions() -> list[Function]:
    """Every hardswish / hardsigmoid chain: one or two clips, the 1/6 as a divide or multiply."""
    return [
        Function(kind + clips + scaling, [(2, 8)], _hard_activation(kind, relu6, scale))
        for kind in ("hardsigmoid", "hardswish", "hardswish_scaled_last")
        for clips, relu6 in RELU6_FORMS.items()
        for scaling, scale in SCALE_FORMS.items()
    ]


def _gelu_chain(function: str, halved: bool) -> Build:
    """GELU written out (lowerings/gelu_chains.py): the erf form with a divide by sqrt(2), the
    tanh form with x^3 a power (the halved form: two multiplies), then the 1/2."""

    def build(p: list[relax.Var]) -> relax.Expr:
        x = p[0]
        if function == "erf":
            argument = op.erf(op.divide(x, scalar(2**0.5)))
        else:
            cube = op.multiply(op.multiply(x, x), x) if halved else op.power(x, scalar(3.0))
            inner = op.add(x, op.multiply(cube, scalar(0.044715)))
            argument = op.tanh(op.multiply(inner, scalar((2 / np.pi) ** 0.5)))
        product = op.multiply(x, op.add(argument, scalar(1.0)))
        return op.divide(product, scalar(2.0)) if halved else op.multiply(product, scalar(0.5))

    return build


def _gelu_chain_functions() -> list[Function]:
    return [
        Function(
            f"gelu_{function}_chain{'_halved' if halved else ''}",
            [(2, 8)],
            _gelu_chain(function, halved),
        )
        for function in ("erf", "tanh")
        for halved in (False, True)
    ]


def _single_operator_functions() -> list[Function]:
    """The cases of single-operator records the differential tests do not reach (test_ops.py
    has the clip to relu6 and to other bounds, split into sections, pad and resize)."""
    boolean = ((2, 3), "bool")
    return [
        Function("not_equal", [(2, 3), (2, 3)], lambda p: op.not_equal(p[0], p[1])),
        Function("greater_equal", [(2, 3), (2, 3)], lambda p: op.greater_equal(p[0], p[1])),
        Function("less_equal", [(2, 3), (2, 3)], lambda p: op.less_equal(p[0], p[1])),
        Function("logical_or", [boolean, boolean], lambda p: op.logical_or(p[0], p[1])),
        Function("logical_not", [boolean], lambda p: op.logical_not(p[0])),
        Function("prod", [(2, 3, 4)], lambda p: op.prod(p[0], axis=[1])),
        Function("flatten", [(2, 3, 4)], lambda p: op.flatten(p[0])),
        Function("clip_relu", [(2, 3)], lambda p: op.clip(p[0], 0, INF)),
        Function("clip_relu1", [(2, 3)], lambda p: op.clip(p[0], -1, 1)),
        Function("split_indices", [(2, 6)], lambda p: op.split(p[0], [1, 4], axis=1)[2]),
        Function(
            "pad_reflect",
            [(1, 3, 4)],
            lambda p: op.nn.pad(p[0], [0, 0, 1, 1, 2, 0], pad_mode="reflect"),
        ),
        Function(
            "batch_norm_runtime_channels_first",
            [(1, 3, 4, 4), (3,), (3,), (3,), (3,)],
            lambda p: op.nn.batch_norm(*p, axis=1, training=False)[0],
        ),
        Function(
            "batch_norm_runtime_channels_last",
            [(2, 3), (3,), (3,), (3,), (3,)],
            lambda p: op.nn.batch_norm(*p, axis=1, training=False)[0],
        ),
    ]


FUNCTIONS = [
    *_conv_functions(),
    *_matmul_functions(),
    *_hard_activation_functions(),
    *_gelu_chain_functions(),
    *_single_operator_functions(),
]


@dataclass
class Lowered:
    """One composite call of a representative function, as the codegen lowered it."""

    source: str  # the representative function or model
    lowering: str  # the record's name
    emitted: list[str]  # the NNAPI operations its converter emitted
    required: tuple[str, ...]  # what the device check asks the target for


def _lowered(name: str, result: tvm_nnapi.PartitionResult) -> list[Lowered]:
    found: list[Lowered] = []
    for gvar, func in result.module.functions.items():
        if (getattr(func, "attrs", None) or {}).get("Codegen") != "nnapi":
            continue
        emitted: dict[relax.Var, list[str]] = {}
        codegen.lower_function(func.with_attr("global_symbol", gvar.name_hint), emitted)
        bindings = [b for block in func.body.blocks for b in block.bindings]
        composites = {b.var: b.value for b in bindings if isinstance(b.value, relax.Function)}
        for binding in bindings:
            if isinstance(binding.value, relax.Call) and binding.value.op in composites:
                composite = composites[binding.value.op]
                lowering = lowerings.find(str(composite.attrs["Composite"]))
                assert lowering is not None, composite.attrs["Composite"]
                required = lowerings.required_operations(composite)
                found.append(Lowered(name, lowering.name, emitted[binding.var], required))
    return found


def _representative_modules():
    for module in (test_ops, test_ops_extra, test_ops_frontend):
        for case in module.CASES:
            yield (
                f"{module.__name__.rsplit('.', 1)[-1]}:{case.name}",
                case.module(),
                getattr(case, "options", None),
                None,
            )
    for function in FUNCTIONS:
        # The two-clip hard activations as they are: the graph preparation merges the clips.
        unprepared = "_clip2" in function.name
        options = PartitionOptions(prepare=False) if unprepared else None
        yield function.name, function.module(), options, None
    for model in CNN_MODELS:
        yield model, load_model_source(model).module, None, None
    for model in ("llm:tiny-llama", "llm:tiny-qwen"):
        for entry in ("prefill", "decode"):
            source = load_model_source(model, entry=entry)
            yield f"{model}:{entry}", source.module, None, [source.entry]


@pytest.fixture(scope="module")
def lowered() -> list[Lowered]:
    found = []
    for name, module, options, entries in _representative_modules():
        found += _lowered(name, tvm_nnapi.partition_with_report(module, options, entries))
    return found


# ---- the records ---------------------------------------------------------------------------------


def test_every_record_has_a_pattern_a_check_a_converter_and_its_operations():
    operations = set(mock_nnapi.OperationCode.__members__)
    assert len(lowerings.LOWERINGS) > 50
    for lowering in lowerings.LOWERINGS:
        assert lowering.name.startswith("nnapi."), lowering.name
        assert callable(lowering.check) and callable(lowering.convert), lowering.name
        _, annotations = lowering.pattern()
        assert "root" in annotations, f"{lowering.name}: the pattern names no root call"
        assert lowering.emits, f"{lowering.name} declares no NNAPI operation"
        assert len(set(lowering.emits)) == len(lowering.emits), lowering.name
        unknown = set(lowering.emits) - operations
        assert not unknown, f"{lowering.name} declares operations NNAPI lacks: {unknown}"


def test_a_conclusive_refusal_is_not_replaced_by_a_later_generic_one():
    from tvm_nnapi.compiler import patterns

    kind = tvm_nnapi.RefusalKind
    with patterns.collect_refusals() as collector:
        patterns._record("relax.add", "lv", kind.ATTRIBUTE, "a fused form's reason")
        patterns._record("relax.add", "lv", kind.RANK, "the single operator's reason")
        patterns._record("relax.reshape", "gv", kind.ATTRIBUTE, "conclusive", conclusive=True)
        patterns._record("relax.reshape", "gv", kind.RANK, "rank 6 > 4")
    reasons = {key: r.reason for key, r in collector.refusals.items()}
    assert reasons == {
        ("lv", "relax.add"): "the single operator's reason",
        ("gv", "relax.reshape"): "conclusive",
    }
    assert isinstance(patterns.Conclusive(kind.RANK, "r"), tuple)


def test_pattern_names_are_unique():
    names = [lowering.name for lowering in lowerings.LOWERINGS]
    names += [single_op_name(refused.relax_op) for refused in lowerings.REFUSED]
    assert len(names) == len(set(names))
    assert [pattern.name for pattern in lowerings.pattern_table()] == names


_IMPORT_AGAIN = """
import importlib, sys
from tvm_nnapi.compiler import lowerings
names = [lowering.name for lowering in lowerings.LOWERINGS]
families = [m for m in sys.modules if m.startswith("tvm_nnapi.compiler.lowerings.")]
for module in ["tvm_nnapi.compiler.patterns", "tvm_nnapi.compiler.converters", *families]:
    importlib.reload(sys.modules[module])
importlib.reload(lowerings)
assert [lowering.name for lowering in lowerings.LOWERINGS] == names
assert len(lowerings.pattern_table()) == len(names) + len(lowerings.REFUSED)
print(len(names))
"""


def test_importing_the_lowerings_again_does_not_duplicate_records():
    # In a fresh interpreter: reloading modules here would leave two versions of their classes.
    completed = subprocess.run(
        [sys.executable, "-c", _IMPORT_AGAIN], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert int(completed.stdout.split()[-1]) == len(lowerings.LOWERINGS)


def _imports(path: Path) -> set[str]:
    """The tvm_nnapi modules a file imports, at module level or inside functions."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if path.name == "__init__.py":
        package = module.removesuffix(".__init__")
    else:
        package = module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" for alias in node.names]
            found |= {target, *names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.startswith("tvm_nnapi")}


def test_the_infrastructure_never_imports_the_lowerings():
    compiler = PACKAGE / "compiler"
    for name in ("patterns.py", "converters.py", "graph_json.py", "ir_utils.py"):
        imported = _imports(compiler / name)
        assert not {m for m in imported if m.startswith("tvm_nnapi.compiler.lowerings")}, name
    for path in (compiler / "lowerings").glob("*.py"):
        if path.name == "__init__.py":
            continue
        imported = _imports(path)
        # A family module imports the infrastructure and at most a sibling family's helpers.
        assert "tvm_nnapi.compiler.lowerings" not in imported, path.name
        assert not {m for m in imported if m.startswith("tvm_nnapi.compiler.partition")}
        assert not {m for m in imported if m.startswith("tvm_nnapi.compiler.codegen")}


def _import_graph() -> dict[str, set[str]]:
    """Module -> the tvm_nnapi modules it imports (anywhere in it, lazy imports included). A
    package importing its own submodules is how it is assembled, not an edge."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    return {
        name: {m for m in _imports(path) if m in modules and m != name}
        - {m for m in modules if m.startswith(name + ".")}
        for name, path in modules.items()
    }


def test_tvm_nnapi_has_no_import_cycle():
    graph = _import_graph()
    visiting: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        assert name not in visiting, " -> ".join([*visiting[visiting.index(name) :], name])
        visiting.append(name)
        for imported in sorted(graph[name]):
            visit(imported)
        visiting.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_the_compiler_never_imports_the_tools():
    for name, imported in _import_graph().items():
        if name.startswith("tvm_nnapi.compiler"):
            above = {
                m
                for m in imported
                if m.startswith(("tvm_nnapi.tools", "tvm_nnapi.llm", "tvm_nnapi.cli"))
            }
            assert not above, f"{name} imports {sorted(above)}"


def _package_of(module: str) -> str:
    """``tvm_nnapi.tools.estimate`` -> ``tools``; a top-level module is its own package."""
    return module.split(".")[1] if module.count(".") else module


def test_tvm_nnapi_packages_import_one_way():
    """No cycle between packages (tools, llm, experiments, commands, ...), nothing imports the
    commands but the entry points, and the runtime imports nothing of the mock's package (it finds
    the mock library it defaults to on a host by its path in the wheel; profiles, cost model and
    controls are the tools' business)."""
    edges: dict[str, set[str]] = {}
    for name, imported in _import_graph().items():
        if name.count(".") == 0:
            continue
        source = _package_of(name)
        edges.setdefault(source, set()).update(
            _package_of(m) for m in imported if _package_of(m) != source
        )
    for source, targets in edges.items():
        if "commands" in targets:
            assert source in ("cli", "__main__"), f"{source} imports the commands"
    visiting: list[str] = []
    done: set[str] = set()

    def visit(package: str) -> None:
        if package in done:
            return
        assert package not in visiting, " -> ".join([*visiting[visiting.index(package) :], package])
        visiting.append(package)
        for target in sorted(edges.get(package, ())):
            visit(target)
        visiting.pop()
        done.add(package)

    for package in sorted(edges):
        visit(package)
    for path in (PACKAGE / "runtime").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            mock = [n for n in names if n.split(".")[0] == "mock_nnapi"]
            assert not mock, f"{path} imports {mock}: the runtime does not depend on the mock"


# ---- what the converters emit --------------------------------------------------------------------


def test_every_converter_emits_exactly_what_the_device_check_asks_for(lowered):
    problems = [
        f"{item.source}: {item.lowering} emitted {sorted(set(item.emitted))}, the device check "
        f"asks for {sorted(item.required)}"
        for item in lowered
        if set(item.emitted) != set(item.required)
    ]
    assert not problems, "\n".join(problems)


def test_every_converter_emits_only_what_its_record_declares(lowered):
    declared = {lowering.name: set(lowering.emits) for lowering in lowerings.LOWERINGS}
    problems = [
        f"{item.source}: {item.lowering} emitted undeclared "
        f"{sorted(set(item.emitted) - declared[item.lowering])}"
        for item in lowered
        if not set(item.emitted) <= declared[item.lowering]
    ]
    assert not problems, "\n".join(problems)


def test_every_record_and_every_declared_operation_is_reached(lowered):
    """The representative functions reach every record and every operation it declares, so the
    two tests above cover all of them (and a declared operation no case emits is an error)."""
    emitted: dict[str, set[str]] = defaultdict(set)
    for item in lowered:
        emitted[item.lowering].update(item.emitted)
    # The quantized records emit a requantization or not depending on the quantization
    # parameters of their match; tests/backend/test_quantized.py reaches and checks them.
    family = quantized_family
    quantized = {lowering.name for lowering in (*family.LOWERINGS, *family.BOUNDARIES)}
    problems = [
        f"{lowering.name}: never reached"
        if lowering.name not in emitted
        else f"{lowering.name}: declares {sorted(set(lowering.emits) - emitted[lowering.name])}, "
        "which no case emits"
        for lowering in lowerings.LOWERINGS
        if lowering.name not in quantized and set(lowering.emits) != emitted.get(lowering.name)
    ]
    assert not problems, "\n".join(problems)


# ---- device gating -------------------------------------------------------------------------------

ALL_OPERATIONS = frozenset(mock_nnapi.OperationCode.__members__)


# The differential cases whose record emits different operations from case to case.
GATED_CASES = ["relu6", "clip_minmax", "split_sections", "pad_constant", "pad_value"]
GATED_CASES += ["resize_bilinear_half_pixel", "resize_nearest"]
GATED = [*FUNCTIONS, *(case for case in test_ops.CASES if case.name in GATED_CASES)]


@pytest.mark.parametrize("function", GATED, ids=lambda f: f.name)
def test_a_target_needs_exactly_the_operations_a_match_emits(function):
    """Partitioning for devices that run exactly what the lowering emitted offloads the same
    subgraphs; without any one of those operations, the match is refused for device support."""
    module = function.module()
    result = tvm_nnapi.partition_with_report(module)
    assert result.subgraphs, [str(r) for r in result.refusals]
    emitted = {op for item in _lowered(function.name, result) for op in item.emitted}
    exact = tvm_nnapi.partition_with_report(
        module, PartitionOptions(supported_nnapi_ops=frozenset(emitted))
    )
    assert tvm_ffi.structural_equal(exact.module, result.module)
    for missing in sorted(emitted):
        options = PartitionOptions(supported_nnapi_ops=ALL_OPERATIONS - {missing})
        refused = tvm_nnapi.partition_with_report(module, options)
        device = [r for r in refused.refusals if r.kind == RefusalKind.DEVICE_SUPPORT]
        assert device and any(missing in r.reason for r in device), (missing, refused.refusals)


def test_a_plain_conv_does_not_need_the_other_convolutions():
    module = Function("conv", [(1, 4, 8, 8)], lambda p: op.nn.conv2d(p[0], const(4, 4, 3, 3)))
    options = PartitionOptions(supported_nnapi_ops=frozenset({"CONV_2D"}))
    assert tvm_nnapi.partition_with_report(module.module(), options).subgraphs == ["main_nnapi_0"]


def test_the_exact_gelu_is_offloaded():
    function = Function("gelu", [(2, 3)], lambda p: op.nn.gelu(p[0]))
    result = tvm_nnapi.partition_with_report(function.module())
    assert result.subgraphs == ["main_nnapi_0"] and result.refusals == []
