# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi run``: build a model with NNAPI offload, run it on the mock NNAPI, check it against
the host ``llvm`` build of the same module, and keep the mock's execution traces.

:func:`run_model` returns a :class:`RunResult`: per output the maximum absolute and relative
error against the host reference and pass/fail, whether NNAPI really ran (the mock's counters),
wall-clock times measured on this host (the mock computes with its reference kernels on this
CPU, so they say nothing about a phone), and the MODELLED times of the NNAPI executions on the
active device profile (from the cost model, docs/cost-model.md). :func:`chrome_trace` turns the
traces into a Chrome trace-event document that Perfetto (https://ui.perfetto.dev) opens.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tvm
from tvm import relax

from ..compiler.patterns import PartitionOptions
from ..errors import target_failure
from .sources import ModelLoadError, ModelSource

# Relative error bound (max |nnapi - llvm| / max |llvm|) per precision the computation ran in
# (see :func:`computation_precision`); integer outputs must match exactly.
DEFAULT_TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "relaxed-float16": 1e-2, "quant8": 2.0}
# A quantized (QDQ) model ("quant8") is judged in steps of its output quantization instead:
# max |nnapi - llvm| / output scale. Each operator rounds within one step of the host's float
# computation; a difference of one step may propagate through the following layers, hence two.
QUANT8_STEP_UNIT = "output quantization steps"
# Largest LLM whose random weights `run` allocates (bytes); bigger ones are for `estimate`.
MAX_LLM_WEIGHT_BYTES = 2 << 30

Progress = Callable[[str], None]


@dataclass
class OutputCheck:
    index: int
    shape: list[int]
    dtype: str
    max_abs_error: float
    max_rel_error: float  # max |nnapi - llvm| / max |llvm|
    tolerance: float
    passed: bool
    # The precision the tolerance was chosen for (computation_precision), e.g. "float16" for a
    # float16 model whose logits are float32.
    precision: str = ""
    # quant8: the largest error in output quantization steps (the tolerance is in steps) and
    # whether the top-1 (argmax) of the NNAPI result agrees with the host's.
    max_error_steps: float | None = None
    top1_agrees: bool | None = None


@dataclass
class RunResult:
    """The differential result of one run (see the module docstring)."""

    model: dict[str, Any]
    profile: str
    nnapi_library: str
    outputs: list[OutputCheck] = field(default_factory=list)
    nnapi_executions: int = 0
    nnapi_operations: int = 0
    subgraphs: int = 0
    # Measured on this host: the first NNAPI call includes building the NNAPI models and
    # compiling them; the second is the call whose traces are kept.
    measured_seconds: dict[str, float] = field(default_factory=dict)
    # MODELLED by the cost model for the active profile (sum over the kept executions).
    modelled_nnapi_us: float = 0.0
    modelled_by_device_us: dict[str, float] = field(default_factory=dict)
    executions: list[dict[str, Any]] = field(default_factory=list)
    trace_file: str | None = None
    traces: list[dict[str, Any]] = field(default_factory=list, repr=False)
    # Where the NNAPI build ran (tvm_nnapi.targets) and the NNAPI runtime's statistics there
    # for the kept call (calls, fallbacks, compilations, cache hits; times MEASURED there).
    target: str = "mock"
    target_stats: dict[str, Any] = field(default_factory=dict)

    @property
    def max_abs_error(self) -> float:
        return max((o.max_abs_error for o in self.outputs), default=0.0)

    @property
    def max_rel_error(self) -> float:
        return max((o.max_rel_error for o in self.outputs), default=0.0)

    @property
    def nnapi_ran(self) -> bool:
        if self.target != "mock" and self.nnapi_operations < 0:  # a real NNAPI counts no ops
            return self.nnapi_executions > 0
        return self.nnapi_executions > 0 and self.nnapi_operations > 0

    @property
    def passed(self) -> bool:
        """Every output within tolerance and, if the model has NNAPI subgraphs, NNAPI ran."""
        return (
            bool(self.outputs)
            and all(o.passed for o in self.outputs)
            and (self.nnapi_ran or self.subgraphs == 0)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "profile": self.profile,
            "nnapi_library": self.nnapi_library,
            "passed": self.passed,
            "max_abs_error": self.max_abs_error,
            "max_rel_error": self.max_rel_error,
            "outputs": [vars(o) for o in self.outputs],
            "nnapi_ran": self.nnapi_ran,
            "nnapi_subgraphs": self.subgraphs,
            "nnapi_executions": self.nnapi_executions,
            "nnapi_operations_executed": self.nnapi_operations,
            "measured_seconds": self.measured_seconds,
            "modelled": {
                "label": "MODELLED by the mock's cost model, not measured",
                "nnapi_total_us": self.modelled_nnapi_us,
                "by_device_us": self.modelled_by_device_us,
                "executions": self.executions,
            },
            "trace_file": self.trace_file,
            "target": self.target,
            "target_stats": self.target_stats,
            "measured_on_target": _measured(self.target_stats),
        }


def _measured(stats: dict[str, Any]) -> dict[str, Any]:
    """The times of the kept call MEASURED where it ran, from the runtime's statistics: the
    NNAPI executions' wall clock and, where the driver reported it (single-device
    compilations), NNAPI's getDuration (the mock reports its modelled times there)."""
    if not stats:
        return {}
    timed = int(stats.get("timed_executions", 0))
    return {
        "label": "MEASURED on the target by its NNAPI runtime module (getDuration: as the NNAPI "
        "library reports it; the mock reports modelled times there)",
        "nnapi_execute_ms": stats.get("execute_time_ns", 0) / 1e6,
        "timed_executions": timed,
        "getduration_on_hardware_ms": stats.get("duration_on_hardware_ns", 0) / 1e6
        if timed
        else None,
        "getduration_in_driver_ms": stats.get("duration_in_driver_ns", 0) / 1e6 if timed else None,
    }


# ---- inputs --------------------------------------------------------------------------------------


def random_inputs(source: ModelSource, seed: int = 0) -> list[np.ndarray]:
    """Random arrays for every tensor parameter of the entry function (shapes must be static)."""
    rng = np.random.default_rng(seed)
    func = source.module[source.entry]
    arrays = []
    for param in func.params:
        ty = param.ty
        if not isinstance(ty, relax.TensorType) or ty.shape is None:
            raise ModelLoadError(
                f"{source.spec}: input {param.name} of {source.entry} is not a tensor with a "
                f"known shape ({ty}); `run` feeds tensors only"
            )
        dims = []
        for dim in ty.shape.values:
            if not hasattr(dim, "value"):
                raise ModelLoadError(
                    f"{source.spec}: input {param.name} has the symbolic dimension {dim}; give "
                    f"its value with --shapes {dim}=N"
                )
            dims.append(int(dim.value))
        dtype = str(ty.dtype)
        if dtype.startswith("float"):
            array = rng.standard_normal(dims).astype(dtype)
        elif dtype == "bool":
            array = rng.integers(0, 2, dims).astype(bool)
        else:
            array = rng.integers(0, 10, dims).astype(dtype)
        arrays.append(array)
    return arrays


def _flatten(value: Any) -> list[np.ndarray]:
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, list | tuple) or type(value).__name__ == "Array":
        return [array for item in value for array in _flatten(item)]
    return []  # objects such as a KV cache are not compared


def computation_precision(source: ModelSource, relaxed_float16: bool = False) -> str:
    """The floating-point precision the model computes in, which decides the default tolerance.

    An LLM computes in its configured dtype (a float16 LLM returns float32 logits computed in
    float16); any other module in float16 when a tensor of its entry function is float16, else
    float32. ``relaxed_float16``: float32 computed with NNAPI's
    ``relaxComputationFloat32toFloat16`` (the graph JSON's ``relax_fp32_to_fp16``), which may run
    in float16 range and precision ("relaxed-float16").
    """
    if source.kind == "llm":
        precision = str(source.llm_dtype)
    else:
        found: set[str] = set()

        def visit(node: object) -> None:
            ty = getattr(node, "ty", None) if isinstance(node, relax.Expr) else None
            if isinstance(ty, relax.TensorType):
                found.add(str(ty.dtype))

        relax.analysis.post_order_visit(source.module[source.entry], visit)
        for param in source.module[source.entry].params:
            visit(param)
        precision = "float16" if "float16" in found else "float32"
        if _is_quantized(source.module[source.entry]):
            return "quant8"
    if precision == "float32" and relaxed_float16:
        return "relaxed-float16"
    return precision


def _is_quantized(func: relax.Function) -> bool:
    found: list[object] = []

    def visit(node: object) -> None:
        if isinstance(node, relax.Call) and getattr(node.op, "name", "") == "relax.quantize":
            found.append(node)

    relax.analysis.post_order_visit(func, visit)
    return bool(found)


def output_steps(source: ModelSource) -> list[float | None]:
    """The quantization step of each output of a quantized model: the scale of the per-tensor
    ``dequantize`` that produces it (None for an output that is not dequantized)."""
    func = source.module[source.entry]
    values: dict[relax.Var, relax.Expr] = {}
    if isinstance(func.body, relax.SeqExpr):
        for block in func.body.blocks:
            for binding in block.bindings:
                values[binding.var] = binding.value
    result = func.body.body if isinstance(func.body, relax.SeqExpr) else func.body
    while isinstance(result, relax.Var) and isinstance(values.get(result), relax.Var | relax.Tuple):
        result = values[result]
    fields = list(result.fields) if isinstance(result, relax.Tuple) else [result]
    steps: list[float | None] = []
    for item in fields:
        value = values.get(item, item)
        step = None
        if isinstance(value, relax.Call) and getattr(value.op, "name", "") == "relax.dequantize":
            scale = value.args[1]
            if isinstance(scale, tvm.ir.Constant) and scale.value.numpy().size == 1:
                step = float(scale.value.numpy().reshape(-1)[0])
        steps.append(step)
    return steps


def compare(
    actual: list[np.ndarray],
    expected: list[np.ndarray],
    rtol: float | None = None,
    precision: str | None = None,
    steps: list[float | None] | None = None,
) -> list[OutputCheck]:
    """Per output: max absolute error, max error relative to max |expected|, pass/fail.

    The tolerance is ``rtol`` if given, else :data:`DEFAULT_TOLERANCE` of ``precision`` (the
    precision the computation ran in, :func:`computation_precision`) for floating-point
    outputs, else of the output's dtype; integer outputs must match exactly. For "quant8" the
    tolerance is in output quantization steps (``steps``: the step of each output); an output
    without a step is judged with the float32 tolerance."""
    if len(actual) != len(expected):
        raise ValueError(f"the NNAPI build returned {len(actual)} outputs, llvm {len(expected)}")
    checks = []
    for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
        dtype = str(want.dtype)
        chosen = precision if precision is not None and dtype.startswith("float") else dtype
        tolerance = rtol if rtol is not None else DEFAULT_TOLERANCE.get(chosen, 0.0)
        if got.shape != want.shape:
            checks.append(
                OutputCheck(index, list(want.shape), dtype, np.inf, np.inf, 0, False, chosen)
            )
            continue
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        abs_error = float(diff.max()) if diff.size else 0.0
        scale = float(np.abs(want.astype(np.float64)).max()) if want.size else 0.0
        rel_error = abs_error / scale if scale else abs_error
        finite = bool(np.isfinite(got.astype(np.float64)).all()) if got.size else True
        step = steps[index] if steps is not None and index < len(steps) else None
        if chosen == "quant8" and step:
            error_steps = abs_error / step
            top1 = bool(got.size == 0 or np.argmax(got) == np.argmax(want))
            checks.append(
                OutputCheck(
                    index,
                    list(want.shape),
                    dtype,
                    abs_error,
                    rel_error,
                    tolerance,
                    finite and error_steps <= tolerance,
                    chosen,
                    max_error_steps=error_steps,
                    top1_agrees=top1,
                )
            )
            continue
        if chosen == "quant8":
            chosen = "float32"
            tolerance = rtol if rtol is not None else DEFAULT_TOLERANCE["float32"]
        checks.append(
            OutputCheck(
                index,
                list(want.shape),
                dtype,
                abs_error,
                rel_error,
                tolerance,
                finite and rel_error <= tolerance,
                chosen,
            )
        )
    return checks


# ---- text for people (the terminal and the HTML report use the same) ---------------------------


def output_tolerance_text(tolerance: float, precision: str) -> str:
    """A tolerance with its unit: output quantization steps for quant8, else relative."""
    if precision == "quant8":
        return f"{tolerance:g} steps ({precision})"
    return f"{tolerance:.0e} ({precision})"


def output_facts(run: dict[str, Any]) -> list[tuple[str, str]]:
    """(what, value) of a run's comparison (``RunResult.to_dict()``): the tolerances with their
    units, and for quantized outputs the error in quantization steps and whether the top-1
    agrees with llvm."""
    tolerances = sorted(
        {(o["tolerance"], o.get("precision") or o["dtype"]) for o in run["outputs"]}
    )
    facts = [
        (
            "tolerance (precision computed in)",
            ", ".join(output_tolerance_text(tol, precision) for tol, precision in tolerances),
        )
    ]
    quantized = [o for o in run["outputs"] if o.get("max_error_steps") is not None]
    if quantized:
        facts.append(
            (
                "max error in output quantization steps",
                ", ".join(f"{o['max_error_steps']:.2f}" for o in quantized),
            )
        )
        facts.append(
            (
                "top-1 agrees with llvm",
                ", ".join("yes" if o["top1_agrees"] else "no" for o in quantized),
            )
        )
    return facts


# ---- running -------------------------------------------------------------------------------------


@contextlib.contextmanager
def profile_scope(profile: str | None) -> Iterator[str]:
    """Select the mock's device profile ``profile`` (a name or a .json path; None keeps the
    active one) for the ``with`` block and restore the one active before on exit, also when the
    block raises; yields the active profile's name. The profile is process-wide state of the
    mock: a caller that switched it and forgot to switch back changed the devices of every
    later compilation in the process."""
    from mock_nnapi import control

    previous = control.profile_name()
    if profile is None or profile == previous:
        yield previous
        return
    with control.Profile(profile):
        yield control.profile_name()


def run_model(
    source: ModelSource,
    profile: str | None = None,
    seed: int = 0,
    rtol: float | None = None,
    progress: Progress | None = None,
    options: PartitionOptions | None = None,
    partitioned: tvm.IRModule | None = None,
    target: Any = None,
) -> RunResult:
    """Build ``source`` with NNAPI offload and for host llvm, run both, compare (see module
    docstring). ``profile`` selects the mock's device profile for the run (a name or a .json
    path; the profile active before is restored when it returns or raises);
    ``options`` (feature level, supported operations, relaxed float16) go to the partitioner; a
    float32 model built with ``relax_fp32_to_fp16`` is judged with the float16 tolerance.
    ``partitioned``: a module already partitioned for NNAPI to build instead of partitioning
    ``source.module`` again (e.g. ``source.symbolic_module`` partitioned, to run the deployment
    that keeps symbolic dimensions on inputs of the bound shapes); not for LLMs.
    ``target``: a remote :class:`tvm_nnapi.targets.Target` to run the NNAPI build on (built for
    its ``compile_target``, uploaded and run there; its runtime statistics come back); None
    runs it in this process."""
    import tvm_nnapi

    say = progress or (lambda message: None)
    if target is not None and getattr(target, "remote", False):
        try:
            return _run_on_target(source, seed, rtol, say, options, target)
        except tvm.error.RPCError as failure:  # the target's own error, without RPC's wrapping
            raise target_failure(failure, f"on {target.describe()}") from failure
    library = tvm_nnapi.configure_nnapi_library()
    with profile_scope(profile) as profile_name:
        return _run_on_profile(source, seed, rtol, say, options, partitioned, profile_name, library)


def _run_on_profile(
    source: ModelSource,
    seed: int,
    rtol: float | None,
    say: Progress,
    options: PartitionOptions | None,
    partitioned: tvm.IRModule | None,
    profile_name: str,
    library: str,
) -> RunResult:
    import mock_nnapi
    from mock_nnapi import control

    result = RunResult(source.to_dict(), profile_name, library)
    if source.kind == "llm":
        if partitioned is not None:
            raise ValueError(f"{source.spec}: an LLM is partitioned by its engine; pass no module")
        nnapi_out, host_out = _run_llm(source, seed, result, say, options)
    else:
        nnapi_out, host_out = _run_module(source, seed, result, say, options, partitioned)
    relaxed = options is not None and options.relax_fp32_to_fp16
    precision = computation_precision(source, relaxed)
    steps = output_steps(source) if precision == "quant8" else None
    result.outputs = compare(nnapi_out, host_out, rtol, precision, steps)
    counters = mock_nnapi.counters()
    result.nnapi_executions = counters["executions_completed"]
    result.nnapi_operations = counters["operations_executed"]
    result.traces = control.execution_traces()
    _summarise_traces(result)
    return result


def _run_on_target(
    source: ModelSource,
    seed: int,
    rtol: float | None,
    say: Progress,
    options: PartitionOptions | None,
    target: Any,
) -> RunResult:
    """The differential run with the NNAPI build on a remote target, the host build here."""
    import tvm_nnapi

    info = json.loads(str(target.function("tvm_nnapi.testing.nnapi_info")()))
    result = RunResult(source.to_dict(), "", str(info.get("library", "")))
    result.target = target.describe()
    if info.get("mock"):
        result.profile = str(info.get("mock_profile", "the server's mock"))
    else:
        result.profile = "the device's own NNAPI (no profile)"
    relaxed = options is not None and options.relax_fp32_to_fp16
    precision = computation_precision(source, relaxed)
    steps = output_steps(source) if precision == "quant8" else None
    if source.kind == "llm":
        operations_before = target.counter("operations_executed")  # -1: not the mock
        nnapi_out, host_out = _run_llm(source, seed, result, say, options, target)
        result.nnapi_executions = int(result.target_stats.get("nnapi_calls", 0))
        operations = target.counter("operations_executed") - operations_before
        result.nnapi_operations = operations if operations_before >= 0 else -1
        result.outputs = compare(nnapi_out, host_out, rtol, precision, steps)
        return result
    inputs = random_inputs(source, seed)
    say("partitioning for NNAPI...")
    partitioned = tvm_nnapi.partition(source.module, options, source.partition_entries)
    result.subgraphs = len(tvm_nnapi.nnapi_subgraphs(partitioned))
    say(f"building with NNAPI offload for {target.compile_target}...")
    executable = tvm_nnapi.build(partitioned, target=target.compile_target)
    say(f"uploading to {target.describe()}...")
    program = target.load(executable)
    say("running on the target (first call builds and compiles the NNAPI models)...")
    first = program(source.entry, inputs)
    result.measured_seconds["target_first_call"] = first.wall_s
    before = dict(first.stats)
    operations_before = target.counter("operations_executed")  # -1: not the mock
    kept = program(source.entry, inputs)
    result.measured_seconds["target_call"] = kept.wall_s
    result.target_stats = _stats_delta(before, kept.stats)
    result.nnapi_executions = int(result.target_stats.get("nnapi_calls", 0))
    operations_after = target.counter("operations_executed")
    result.nnapi_operations = operations_after - operations_before if operations_before >= 0 else -1
    say("building and running the host llvm reference here...")
    host_vm = relax.VirtualMachine(relax.build(source.module, target="llvm"), tvm.cpu())
    start = time.perf_counter()
    host_out = _flatten(host_vm[source.entry](*[tvm.runtime.tensor(a) for a in inputs]))
    result.measured_seconds["host_call"] = time.perf_counter() - start
    result.outputs = compare(kept.outputs, host_out, rtol, precision, steps)
    return result


def _stats_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The runtime statistics of what ran between two readings (gauges as they are after)."""
    gauges = ("nnapi_modules", "cached_signatures", "cached_bytes")
    return {
        key: value if key in gauges else value - before.get(key, 0) for key, value in after.items()
    }


def _prepare_mock(capacity: int = 4096) -> None:
    import mock_nnapi
    from mock_nnapi import control

    control.set_trace_capacity(capacity)
    control.clear_traces()
    mock_nnapi.reset_counters()


def _run_module(
    source: ModelSource,
    seed: int,
    result: RunResult,
    say: Progress,
    options: PartitionOptions | None = None,
    partitioned: tvm.IRModule | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    import tvm_nnapi

    inputs = random_inputs(source, seed)
    if partitioned is None:
        say("partitioning for NNAPI...")
        partitioned = tvm_nnapi.partition(source.module, options, source.partition_entries)
    result.subgraphs = len(tvm_nnapi.nnapi_subgraphs(partitioned))
    say("building with NNAPI offload...")
    nnapi_vm = relax.VirtualMachine(tvm_nnapi.build(partitioned), tvm.cpu())
    # The NNAPI modules hold the subgraphs' constants now; the partitioned module's own (a weight
    # that preparation folded) need not live on while both builds run.
    del partitioned
    say("building the host-only llvm reference...")
    host_vm = relax.VirtualMachine(relax.build(source.module, target="llvm"), tvm.cpu())
    arguments = [tvm.runtime.tensor(a) for a in inputs]
    say("running on the mock NNAPI (first call builds and compiles the NNAPI models)...")
    start = time.perf_counter()
    nnapi_vm[source.entry](*arguments)
    result.measured_seconds["nnapi_first_call"] = time.perf_counter() - start
    _prepare_mock()
    start = time.perf_counter()
    nnapi_out = _flatten(nnapi_vm[source.entry](*arguments))
    result.measured_seconds["nnapi_call"] = time.perf_counter() - start
    say("running the host llvm build...")
    start = time.perf_counter()
    host_out = _flatten(host_vm[source.entry](*arguments))
    result.measured_seconds["host_call"] = time.perf_counter() - start
    return nnapi_out, host_out


def check_llm_weights(spec: str, config: Any, weight_format: str) -> None:
    """Refuse an LLM whose random weights would exceed :data:`MAX_LLM_WEIGHT_BYTES`
    (``weight_format``: a float type or an MLC weight format)."""
    from ..llm.quantization import QUANTIZATIONS

    if weight_format in QUANTIZATIONS:
        per_weight = QUANTIZATIONS[weight_format].bytes_per_weight()
    else:
        per_weight = np.dtype(weight_format).itemsize
    weight_bytes = int(config.parameter_count() * per_weight)
    if weight_bytes > MAX_LLM_WEIGHT_BYTES:
        raise ModelLoadError(
            f"{spec}: `run` would allocate {weight_bytes / 2**30:.1f} GiB of random "
            f"weights (limit {MAX_LLM_WEIGHT_BYTES / 2**30:.0f} GiB); run a tiny configuration "
            f"(llm:tiny-llama, llm:tiny-qwen) or use `explain`/`estimate` for this one"
        )


def check_runnable(source: ModelSource) -> None:
    """Raise :class:`ModelLoadError` early for what `run` cannot do: an LLM too large to hold
    random weights for, a prompt longer than the context window, an input with a symbolic
    dimension that ``--shapes`` does not bind."""
    source.check_bound()
    if source.kind != "llm":
        random_inputs(source)
        return
    config = source.llm_config
    check_llm_weights(source.spec, config, source.llm_quantization)
    seq_len = source.shapes.get("seq_len", 1)
    if seq_len > config.context_window_size - 1:
        raise ModelLoadError(
            f"{source.spec}: seq_len={seq_len} does not fit the context window "
            f"({config.context_window_size})"
        )


def _run_llm(
    source: ModelSource,
    seed: int,
    result: RunResult,
    say: Progress,
    options: PartitionOptions | None = None,
    target: Any = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The LLM's entry (prefill, or prefill then one decode step) with NNAPI offload, on this
    process's NNAPI or on a remote ``target`` (its statistics of the second run go to
    ``result.target_stats``), against the host llvm build here."""
    from .. import llm
    from ..llm.engine import load_weights

    check_runnable(source)
    config = source.llm_config
    seq_len = source.shapes.get("seq_len", 1)
    entry = source.entry
    weights = load_weights(
        config, source.llm_quantization, source.llm_named_params, None, seed=seed
    )
    say(f"building {config.name} with {entry} on NNAPI...")
    dispatch = llm.NNAPIDispatch([entry], options, run_codegen=False)
    partitioned = dispatch(source.symbolic_module)
    result.subgraphs = len(_called_subgraphs(partitioned, entry))
    where = "llvm" if target is None else target.compile_target
    nnapi_exe = llm.build_llm(
        source.symbolic_module, entry_functions=[entry], options=options, target=where
    )
    say(f"building {config.name} for host llvm (the reference)...")
    host_exe = llm.build_llm(source.symbolic_module, entry_functions=[])
    tokens = np.random.default_rng(seed).integers(0, config.vocab_size, seq_len + 1).tolist()
    prompt, next_token = tokens[:seq_len], tokens[seq_len]

    def step(engine: Any) -> np.ndarray:
        engine.reset()
        logits = engine.prefill(prompt)
        if entry == "decode":
            logits = engine.decode(next_token)
        return logits

    host_engine = llm.LlamaEngine(host_exe, config, weights, source.llm_dtype)
    if target is not None:
        say(f"uploading to {target.describe()}...")
    nnapi_engine = llm.LlamaEngine(nnapi_exe, config, weights, source.llm_dtype, target=target)
    place = "the mock NNAPI" if target is None else target.describe()
    label = "nnapi" if target is None else "target"
    say(f"running {entry} ({seq_len} tokens) on {place}...")
    start = time.perf_counter()
    step(nnapi_engine)
    result.measured_seconds[f"{label}_first_call"] = time.perf_counter() - start
    if target is None:
        _prepare_mock()
    before = nnapi_engine.nnapi_stats()
    start = time.perf_counter()
    nnapi_logits = step(nnapi_engine)
    result.measured_seconds[f"{label}_call"] = time.perf_counter() - start
    if target is not None:
        result.target_stats = _stats_delta(before, nnapi_engine.nnapi_stats())
    say(f"running {entry} on the host llvm build...")
    start = time.perf_counter()
    host_logits = step(host_engine)
    result.measured_seconds["host_call"] = time.perf_counter() - start
    return [nnapi_logits], [host_logits]


def _called_subgraphs(mod: tvm.IRModule, entry: str) -> set[str]:
    from ..compiler.partition import CODEGEN_NAME

    return {
        g.name_hint
        for g in relax.analysis.all_global_vars(mod[entry])
        if (getattr(mod[g], "attrs", None) or {}).get("Codegen") == CODEGEN_NAME
    }


def _summarise_traces(result: RunResult) -> None:
    by_device: dict[str, float] = {}
    total = 0.0
    for trace in result.traces:
        total += float(trace.get("modelled_total_us", 0.0))
        devices: dict[str, float] = {}
        for event in trace.get("events", []):
            if event.get("kind") == "operation":
                device = str(event.get("device"))
                devices[device] = devices.get(device, 0.0) + float(event.get("duration_us", 0))
        for device, micros in devices.items():
            by_device[device] = by_device.get(device, 0.0) + micros
        result.executions.append(
            {
                "id": trace.get("id"),
                "result": trace.get("result"),
                "modelled_total_us": trace.get("modelled_total_us"),
                "devices": sorted(devices),
                "operations": sum(1 for e in trace.get("events", []) if e["kind"] == "operation"),
            }
        )
    result.modelled_nnapi_us = total
    result.modelled_by_device_us = by_device


def chrome_trace(result: RunResult, labels: list[str] | None = None) -> dict[str, Any]:
    """The run's traces as a Chrome trace-event document (Perfetto), times MODELLED.

    ``labels`` (one per execution, e.g. the NNAPI subgraph each one ran) rename the execution
    spans; the run's differential result goes to ``otherData``.
    """
    from mock_nnapi import control

    document = json.loads(control.trace_to_chrome_json(result.traces))
    if labels and len(labels) == len(result.traces):
        executions = [e for e in document["traceEvents"] if e.get("cat") == "execution"]
        for event, label in zip(executions, labels, strict=True):
            event["name"] = f"{label} ({event['name']})"
            event.setdefault("args", {})["subgraph"] = label
    summary = result.to_dict()
    summary.pop("modelled")
    document["otherData"].update(
        {
            "times": "MODELLED microseconds on the profile's devices (not measurements)",
            "model": result.model,
            "differential": summary,
        }
    )
    return document


__all__ = [
    "DEFAULT_TOLERANCE",
    "OutputCheck",
    "RunResult",
    "check_runnable",
    "chrome_trace",
    "compare",
    "computation_precision",
    "random_inputs",
    "run_model",
]
