# SPDX-License-Identifier: Apache-2.0
"""Single-operation breakdown: one decoder layer's operations, each as its own NNAPI call, at
prefill and decode shapes, per NNAPI device of each phone profile (docs/experiments.md,
"Single-operation breakdown").

Each operation is an NNAPI model held as data (:class:`mock_nnapi.api.ModelRecord`) with the
NNAPI operations the backend's lowerings emit for it (FULLY_CONNECTED and its RESHAPE back to
``[1, tokens, units]`` for a projection; MUL, MEAN, ADD, RSQRT, MUL, MUL for RMSNorm; LOGISTIC,
MUL, MUL for SiLU-multiply). As in the LLM build, the weights are inputs of the model, copied to
the device at every call; the copies of weights and of activations are reported apart, so the
weights-resident case is the same row without the weight copies.

Two kinds of numbers, labelled in every record and table:

- **modelled** (:data:`MODELLED`): the phone's times, from the mock's cost model (the one
  implementation, docs/cost-model.md): the compilation equation on a cold compilation and on a
  hit in NNAPI's compilation cache, and the trace of one cost-only execution on the device
  alone (``createForDevices``): host-to-device copies of the inputs (weights, activations), the
  execution (busy time, per-operation, per-step and runtime overheads) and the device-to-host
  copies of the outputs. The cost model has no term for building a model: not modelled.
- **measured on this host (mock)** (:data:`MEASURED`): wall clock on this machine, median of
  ``repeats``: building the model on the mock (``mock_nnapi.api``: the NNAPI model calls through
  ctypes and ``finish``), compiling it for the device with caching into an empty cache
  directory (cold) and again with the same token (a cache hit), and the copies of the inputs
  and outputs into and out of shared memory, which Android's NNAPI runtime makes for pointer
  arguments of a driver (the mock's driver reads the caller's buffers in place). The execution
  is not measured: the mock's kernels are not the phone's.

    from tvm_nnapi.experiments import op_breakdown
    results = op_breakdown.run(["tiny-llama"], ["snapdragon-8-gen-2"], prefill_tokens=16)
    print(op_breakdown.format_tables(results))
"""

from __future__ import annotations

import gc
import hashlib
import mmap
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mock_nnapi.api import NUMPY_DTYPES, ModelRecord
from mock_nnapi.constants import DeviceTypeCode, FuseCode, OperandCode, OperationCode

from ..llm.config import LlamaConfig, get_config

#: The operations of one decoder layer, in the order the layer runs them, with their titles.
OPERATIONS: dict[str, str] = {
    "rms_norm": "RMSNorm",
    "qkv_projection": "QKV projection",
    "output_projection": "output projection",
    "gate_up_projection": "gate/up projection",
    "silu_multiply": "SiLU-multiply",
    "down_projection": "down projection",
}
#: Phases: a decode step (1 token) and a prefill of ``prefill_tokens`` tokens.
PHASES = ("decode", "prefill")
MODELS = ("llama-2-7b", "tinyllama-1.1b")
PHONE_PROFILES = ("snapdragon-8-gen-2", "tensor-g2", "dimensity-9000")
PREFILL_TOKENS = 128
DTYPES = {"float32": OperandCode.TENSOR_FLOAT32, "float16": OperandCode.TENSOR_FLOAT16}
#: The label of numbers from the cost model.
MODELLED = "modelled"
#: The label of numbers measured by the wall clock of this machine, on the mock.
MEASURED = "measured on this host (mock)"
#: The quantities of the breakdown; each record has ``<column>_us`` under ``modelled`` and
#: under ``measured`` (None where that side does not have the quantity).
COLUMNS = (
    "model_building",
    "compilation_cold",
    "compilation_cached",
    "input_copies",
    "execution",
    "output_copies",
)
SCHEMA = "tvm_nnapi.op_breakdown/1"


@dataclass
class OperationModel:
    """One operation at one shape as an NNAPI model: its record and which of its inputs (by
    position among the model's inputs) are weights."""

    operation: str
    phase: str
    tokens: int
    record: ModelRecord
    weight_inputs: frozenset[int]
    dtype: str

    def input_arrays(self, fill: float | None = None) -> list[np.ndarray]:
        """Arrays for the model's inputs: zeros (untouched pages) or filled with ``fill``."""
        arrays = []
        for index in self.record.inputs:
            code, shape, _, _ = self.record.operand_types[index]
            dtype = NUMPY_DTYPES[code]
            arrays.append(np.zeros(shape, dtype) if fill is None else np.full(shape, fill, dtype))
        return arrays

    def output_shapes(self) -> list[tuple[tuple[int, ...], np.dtype]]:
        result = []
        for index in self.record.outputs:
            code, shape, _, _ = self.record.operand_types[index]
            result.append((shape, NUMPY_DTYPES[code]))
        return result


class _Builder:
    def __init__(self, code: OperandCode) -> None:
        self.code = code
        self.record = ModelRecord()
        self.inputs: list[int] = []
        self.weights: set[int] = set()

    def input(self, shape: Sequence[int], weight: bool = False) -> int:
        index = self.record.add_tensor(self.code, list(shape))
        if weight:
            self.weights.add(len(self.inputs))
        self.inputs.append(index)
        return index

    def tensor(self, shape: Sequence[int]) -> int:
        return self.record.add_tensor(self.code, list(shape))

    def constant(self, value: np.ndarray) -> int:
        index = self.record.add_tensor(self.code, list(value.shape))
        self.record.set_value(index, value)
        return index

    def int_vector(self, values: Sequence[int]) -> int:
        index = self.record.add_tensor(OperandCode.TENSOR_INT32, [len(values)])
        self.record.set_value(index, np.array(values, np.int32))
        return index

    def scalar(self, value: int) -> int:
        return self.record.add_scalar(OperandCode.INT32, int(value))

    def emit(self, operation: int, inputs: Sequence[int], shape: Sequence[int]) -> int:
        out = self.tensor(shape)
        self.record.add_operation(operation, list(inputs), [out])
        return out

    def binary(self, operation: int, a: int, b: int, shape: Sequence[int]) -> int:
        return self.emit(operation, [a, b, self.scalar(FuseCode.NONE)], shape)


def operation_model(
    config: LlamaConfig, operation: str, tokens: int, dtype: str = "float32"
) -> OperationModel:
    """``operation`` (a key of :data:`OPERATIONS`) of one decoder layer of ``config`` for
    ``tokens`` tokens as an NNAPI model with the operations the backend emits for it."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown operation {operation!r}; known: {', '.join(OPERATIONS)}")
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPES)}")
    b = _Builder(DTYPES[dtype])
    numpy_dtype = NUMPY_DTYPES[DTYPES[dtype]]
    h, m, n = config.hidden_size, config.intermediate_size, tokens
    projections = {
        "qkv_projection": (h, config.q_size + 2 * config.kv_size),
        "output_projection": (config.q_size, h),
        "gate_up_projection": (h, 2 * m),
        "down_projection": (m, h),
    }
    if operation in projections:
        size, units = projections[operation]
        x = b.input([1, n, size])
        weight = b.input([units, size], weight=True)
        if operation == "qkv_projection" and config.qkv_bias:
            bias = b.input([units], weight=True)
        else:
            bias = b.constant(np.zeros(units, numpy_dtype))
        y = b.emit(
            OperationCode.FULLY_CONNECTED, [x, weight, bias, b.scalar(FuseCode.NONE)], [n, units]
        )
        out = b.emit(OperationCode.RESHAPE, [y, b.int_vector([1, n, units])], [1, n, units])
    elif operation == "rms_norm":
        x = b.input([1, n, h])
        weight = b.input([h], weight=True)
        squares = b.binary(OperationCode.MUL, x, x, [1, n, h])
        mean = b.emit(OperationCode.MEAN, [squares, b.int_vector([2]), b.scalar(1)], [1, n, 1])
        eps = b.constant(np.array([config.rms_norm_eps], numpy_dtype))
        shifted = b.binary(OperationCode.ADD, mean, eps, [1, n, 1])
        inverse = b.emit(OperationCode.RSQRT, [shifted], [1, n, 1])
        normalized = b.binary(OperationCode.MUL, x, inverse, [1, n, h])
        out = b.binary(OperationCode.MUL, normalized, weight, [1, n, h])
    else:  # silu_multiply: silu(gate) * up, the gate and up halves as inputs
        gate = b.input([1, n, m])
        up = b.input([1, n, m])
        sigmoid = b.emit(OperationCode.LOGISTIC, [gate], [1, n, m])
        silu = b.binary(OperationCode.MUL, gate, sigmoid, [1, n, m])
        out = b.binary(OperationCode.MUL, silu, up, [1, n, m])
    b.record.identify_inputs_and_outputs(b.inputs, [out])
    phase = "decode" if tokens == 1 else "prefill"
    return OperationModel(operation, phase, tokens, b.record, frozenset(b.weights), dtype)


# ---- measured on this host ----------------------------------------------------------------------


def _median_us(function: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        function()
        samples.append((time.perf_counter_ns() - start) / 1e3)
    return float(statistics.median(samples))


def measure_copies(op: OperationModel, repeats: int = 3) -> dict[str, float]:
    """Wall clock (us, median of ``repeats`` after one warm-up) of copying the inputs'
    bytes (weights and activations apart) into shared memory and the outputs' bytes out of it,
    as Android's NNAPI runtime does for pointer arguments of a driver."""
    inputs = op.input_arrays(fill=1.0)
    outputs = [np.ones(shape, dtype) for shape, dtype in op.output_shapes()]
    shared = mmap.mmap(-1, max(a.nbytes for a in [*inputs, *outputs]))  # MAP_SHARED, as ashmem
    try:
        weights = [a for i, a in enumerate(inputs) if i in op.weight_inputs]
        activations = [a for i, a in enumerate(inputs) if i not in op.weight_inputs]
        return _copy_times(np.frombuffer(shared, np.uint8), weights, activations, outputs, repeats)
    finally:
        try:
            shared.close()
        except BufferError:  # a view of the mapping is still alive in a reference cycle
            gc.collect()
            shared.close()


def _copy_times(
    region: np.ndarray,
    weights: list[np.ndarray],
    activations: list[np.ndarray],
    outputs: list[np.ndarray],
    repeats: int,
) -> dict[str, float]:
    def copy_in(arrays: list[np.ndarray]) -> Callable[[], None]:
        def copy() -> None:
            for array in arrays:
                np.copyto(region[: array.nbytes], array.reshape(-1).view(np.uint8))

        return copy

    def copy_out() -> None:
        for array in outputs:
            np.copyto(array.reshape(-1).view(np.uint8), region[: array.nbytes])

    result = {}
    for key, function in (
        ("input_copies_weights_us", copy_in(weights)),
        ("input_copies_activations_us", copy_in(activations)),
        ("output_copies_us", copy_out),
    ):
        function()  # warm-up: page faults of the shared region and the destinations
        result[key] = _median_us(function, repeats)
    result["input_copies_us"] = (
        result["input_copies_weights_us"] + result["input_copies_activations_us"]
    )
    return result


# ---- one device ----------------------------------------------------------------------------------


def _token(*parts: object) -> bytes:
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()


def _trace_breakdown(trace: dict[str, Any], op: OperationModel) -> dict[str, Any]:
    """The modelled parts of one execution from its trace: the copies of the inputs (weights,
    activations) and of the outputs, the execution (busy time and fixed overheads), the bound
    of the busiest operation, FLOPs and bytes."""
    inputs = {int(operand): i for i, operand in enumerate(op.record.inputs)}
    outputs = {int(operand) for operand in op.record.outputs}
    weights = activations = out = busy = overhead = 0.0
    heaviest: tuple[float, str] = (-1.0, "")
    flops = nbytes = 0.0
    for event in trace["events"]:
        kind, duration = event["kind"], float(event["duration_us"])
        if kind == "transfer":
            operand = int(event["operand"])
            if event["direction"] == "host_to_device" and operand in inputs:
                if inputs[operand] in op.weight_inputs:
                    weights += duration
                else:
                    activations += duration
            elif event["direction"] == "device_to_host" and operand in outputs:
                out += duration
            else:
                raise RuntimeError(f"unexpected transfer in a single-device trace: {event}")
        elif kind == "operation":
            busy += float(event["busy_us"])
            overhead += float(event["overhead_us"])
            flops += float(event["flops"])
            nbytes += float(event["bytes"])
            heaviest = max(heaviest, (float(event["busy_us"]), str(event["bound"])))
        else:  # the runtime's per-execution overhead, the driver's per-step overhead
            overhead += duration
    total = float(trace["modelled_total_us"])
    return {
        "input_copies_weights_us": weights,
        "input_copies_activations_us": activations,
        "input_copies_us": weights + activations,
        "execution_busy_us": busy,
        "execution_overhead_us": overhead,
        "execution_us": total - weights - activations - out,
        "output_copies_us": out,
        "total_us": total,
        "bound": heaviest[1],
        "flops": flops,
        "bytes": nbytes,
    }


def _on_device(
    op: OperationModel, device_index: int, cache_root: Path, repeats: int
) -> dict[str, Any]:
    """Build, compile (cold and cached) and run ``op`` on one device of the active profile."""
    from mock_nnapi import api

    device = api.devices()[device_index]
    row: dict[str, Any] = {"device": device.name, "device_type": _device_type(device.type)}
    models = []

    def build() -> None:
        models.append(op.record.build())

    building = _median_us(build, repeats)
    model = models[-1]
    del models[:-1]
    row["modelled"] = {"label": MODELLED}
    row["measured"] = {"label": MEASURED, "model_building_us": building}
    supported = api.supported_operations(model, [device])
    if not all(supported):
        refused = sorted(
            {
                OperationCode(code).name
                for (code, _, _), ok in zip(op.record.operations, supported, strict=True)
                if not ok
            }
        )
        row["supported"] = False
        row["reason"] = f"does not support {', '.join(refused)} in {op.dtype}"
        return row
    try:
        _compile_and_run(op, model, device, cache_root, repeats, row)
    except api.NnapiError as error:  # a driver that fails what it reported supported
        row["supported"] = False
        row["reason"] = f"failed: {error}"
    return row


def _compile_and_run(
    op: OperationModel,
    model: Any,
    device: Any,
    cache_root: Path,
    repeats: int,
    row: dict[str, Any],
) -> None:
    """Compiles ``model`` for ``device`` cold and from the cache ``repeats`` times, runs it
    once cost-only, and fills ``row``'s modelled and measured numbers."""
    from mock_nnapi import api, control

    token = _token(op.operation, op.phase, op.tokens, device.name, control.profile_name())
    cold_wall, cached_wall, cold_modelled, cached_modelled = [], [], [], []
    compilation = None
    for _ in range(repeats):
        directory = Path(tempfile.mkdtemp(dir=cache_root))
        before = control.compilation_cache_counters()
        start = time.perf_counter_ns()
        cold = api.Compilation(model, [device]).set_caching(directory, token).finish()
        cold_wall.append((time.perf_counter_ns() - start) / 1e3)
        start = time.perf_counter_ns()
        cached = api.Compilation(model, [device]).set_caching(directory, token).finish()
        cached_wall.append((time.perf_counter_ns() - start) / 1e3)
        after = control.compilation_cache_counters()
        misses, hits = after["misses"] - before["misses"], after["hits"] - before["hits"]
        if (misses, hits) != (1, 1):
            raise RuntimeError(
                f"{op.operation} on {device.name}: expected one compilation-cache miss then one "
                f"hit, got {misses} misses and {hits} hits"
            )
        cold_modelled.append(control.modelled_compilation_time_ns(cold) / 1e3)
        cached_modelled.append(control.modelled_compilation_time_ns(cached) / 1e3)
        compilation = cold
        del cached
        shutil.rmtree(directory, ignore_errors=True)
    assert compilation is not None
    with control.CostOnlyExecution():
        control.clear_traces()
        compilation.execute(op.input_arrays())
        trace = control.last_execution_trace()
    if trace is None or trace.get("result") != "NO_ERROR":
        raise RuntimeError(f"{op.operation} on {device.name}: the cost-only run failed: {trace}")
    modelled = _trace_breakdown(trace, op)
    modelled.update(
        label=MODELLED,
        model_building_us=None,  # the cost model has no term for building a model
        compilation_cold_us=statistics.median(cold_modelled),
        compilation_cached_us=statistics.median(cached_modelled),
    )
    row["supported"] = True
    row["modelled"] = modelled
    row["measured"].update(
        compilation_cold_us=statistics.median(cold_wall),
        compilation_cached_us=statistics.median(cached_wall),
        execution_us=None,  # the mock's kernels are not the phone's
    )


def _device_type(code: int) -> str:
    try:
        return DeviceTypeCode(code).name
    except ValueError:
        return f"UNKNOWN({code})"


def _device_count() -> int:
    from mock_nnapi import api

    return len(api.devices())


def _profile_rows(
    op: OperationModel, profile: str, cache_root: Path, repeats: int
) -> list[dict[str, Any]]:
    from mock_nnapi import control

    # The rows keep no NNAPI object: the compilations are gone before the profile changes back.
    with control.Profile(profile):
        return [_on_device(op, i, cache_root, repeats) for i in range(_device_count())]


# ---- the experiment ------------------------------------------------------------------------------


def run(
    models: Sequence[str] = MODELS,
    profiles: Sequence[str] = PHONE_PROFILES,
    prefill_tokens: int = PREFILL_TOKENS,
    dtypes: Sequence[str] = ("float32",),
    repeats: int = 5,
    copy_repeats: int = 3,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The breakdown of every operation of :data:`OPERATIONS` of each model at decode (1 token)
    and prefill (``prefill_tokens``) shapes, in each of ``dtypes``, on every device of each
    profile: a JSON-ready document with one record per (model, dtype, profile, device,
    operation, phase). A device that does not support an operation at a dtype has a record
    with ``supported`` false and the reason."""
    if prefill_tokens < 2:
        raise ValueError(f"prefill_tokens must be at least 2, got {prefill_tokens}")
    unknown = [dtype for dtype in dtypes if dtype not in DTYPES]
    if unknown:
        raise ValueError(f"unknown dtype {unknown[0]!r}; known: {', '.join(DTYPES)}")
    configs = [get_config(name) for name in models]  # an unknown name fails before any work
    start = time.perf_counter()
    records = []
    with tempfile.TemporaryDirectory(prefix="op-breakdown-") as scratch:
        cache_root = Path(scratch)
        for config in configs:
            for dtype in dtypes:
                for operation in OPERATIONS:
                    for phase in PHASES:
                        tokens = 1 if phase == "decode" else prefill_tokens
                        if progress is not None:
                            progress(f"{config.name} {dtype} {operation} {phase} ({tokens} tokens)")
                        records += _operation_records(
                            operation_model(config, operation, tokens, dtype),
                            profiles,
                            cache_root,
                            repeats,
                            copy_repeats,
                            {"model": config.name, "dtype": dtype},
                        )
    return {
        "schema": SCHEMA,
        "dtypes": list(dtypes),
        "prefill_tokens": prefill_tokens,
        "models": list(models),
        "profiles": list(profiles),
        "operations": list(OPERATIONS),
        "repeats": repeats,
        "copy_repeats": copy_repeats,
        "labels": {
            "modelled": "the phone profile's cost model (mock_nnapi's one implementation)",
            "measured": f"{MEASURED}: wall clock of this machine, median of the repeats",
        },
        "host": {"machine": platform.machine(), "processor": platform.processor() or ""},
        "seconds": round(time.perf_counter() - start, 1),
        "records": records,
    }


def _operation_records(
    op: OperationModel,
    profiles: Sequence[str],
    cache_root: Path,
    repeats: int,
    copy_repeats: int,
    keys: dict[str, Any],
) -> list[dict[str, Any]]:
    copies = measure_copies(op, copy_repeats)
    records = []
    for profile in profiles:
        for row in _profile_rows(op, profile, cache_root, repeats):
            if row["supported"]:
                row["measured"].update(copies)
            records.append(
                {
                    **keys,
                    "profile": profile,
                    "operation": op.operation,
                    "phase": op.phase,
                    "tokens": op.tokens,
                    **row,
                }
            )
    return records


# ---- tables --------------------------------------------------------------------------------------


def _ms(us: float | None) -> str:
    if us is None:
        return "-"
    ms = us / 1e3
    if ms >= 100:
        return f"{ms:,.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


#: The parts of a modelled call, for naming the one that dominates.
_PARTS = {
    "input_copies_weights_us": "weight copies",
    "input_copies_activations_us": "activation copies",
    "execution_busy_us": "device busy",
    "execution_overhead_us": "fixed overheads",
    "output_copies_us": "output copies",
}


def dominant_part(modelled: dict[str, Any]) -> str:
    """The largest part of a modelled call (weight copies, activation copies, device busy,
    fixed overheads or output copies) and its share of the call."""
    key = max(_PARTS, key=lambda k: float(modelled[k]))
    return f"{_PARTS[key]} ({100 * float(modelled[key]) / float(modelled['total_us']):.0f}%)"


def _records(results: dict[str, Any], **where: Any) -> list[dict[str, Any]]:
    return [r for r in results["records"] if all(r[k] == v for k, v in where.items())]


def modelled_table(results: dict[str, Any], model: str, profile: str, dtype: str) -> str:
    """The modelled breakdown of ``model``'s operations on ``profile``'s devices (ms per call)."""
    records = _records(results, model=model, profile=profile, dtype=dtype)
    lines = [
        f"#### {model} on {profile}, {dtype}: modelled (ms per call; decode 1 token, prefill "
        f"{results['prefill_tokens']} tokens)",
        "",
        "| operation | phase | device | compilation cold | compilation cached | input copies: "
        "weights | input copies: activations | execution | output copies | total | per token "
        "| dominant part | busiest operation |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    refused: dict[str, list[str]] = {}
    for operation in results["operations"]:
        for phase in PHASES:
            for r in records:
                if r["operation"] != operation or r["phase"] != phase:
                    continue
                if not r["supported"]:
                    refused.setdefault(r["device"], []).append(
                        f"{OPERATIONS[operation]} {phase}: {r['reason']}"
                    )
                    continue
                m = r["modelled"]
                lines.append(
                    f"| {OPERATIONS[operation]} | {phase} | `{r['device']}` "
                    f"| {_ms(m['compilation_cold_us'])} | {_ms(m['compilation_cached_us'])} "
                    f"| {_ms(m['input_copies_weights_us'])} "
                    f"| {_ms(m['input_copies_activations_us'])} | {_ms(m['execution_us'])} "
                    f"| {_ms(m['output_copies_us'])} | {_ms(m['total_us'])} "
                    f"| {_ms(m['total_us'] / r['tokens'])} | {dominant_part(m)} "
                    f"| {m['bound']} bound |"
                )
    lines.append("")
    lines.append(
        "Model building: not modelled (the cost model has no term for it; measured below)."
        + "".join(
            f" `{device}`: {len(reasons)} of {2 * len(results['operations'])} operation shapes "
            f"refused (first: {reasons[0]})."
            for device, reasons in sorted(refused.items())
        )
    )
    return "\n".join(lines)


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def measured_table(results: dict[str, Any], model: str, dtype: str) -> str:
    """What was measured on this host for ``model``'s operations (ms): building and compilation
    (medians over the profiles' devices that run the operation) and the copies."""
    lines = [
        f"#### {model}, {dtype}: {MEASURED} (ms per call; building and compilation: median of "
        f"{results['repeats']} per device, then over the devices; copies: median of "
        f"{results['copy_repeats']})",
        "",
        "| operation | phase | model building | compilation cold | compilation cached | input "
        "copies: weights | input copies: activations | output copies |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = (
        "model_building_us",
        "compilation_cold_us",
        "compilation_cached_us",
        "input_copies_weights_us",
        "input_copies_activations_us",
        "output_copies_us",
    )
    for operation in results["operations"]:
        for phase in PHASES:
            rows = [
                r["measured"]
                for r in _records(
                    results, model=model, dtype=dtype, operation=operation, phase=phase
                )
                if r["supported"]
            ]
            cells = [
                _ms(_median([float(m[k]) for m in rows if m.get(k) is not None])) for k in keys
            ]
            lines.append(f"| {OPERATIONS[operation]} | {phase} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def gap_table(results: dict[str, Any], model: str, profile: str, dtype: str) -> str:
    """Per operation and device: the modelled time per token at decode and at prefill, their
    ratio, the device's speedup over the profile's CPU device at each, and the part that
    dominates each."""
    lines = [
        f"#### {model} on {profile}, {dtype}: modelled time per token, decode vs prefill "
        f"({results['prefill_tokens']} tokens)",
        "",
        "| operation | device | decode (ms/token) | prefill (ms/token) | decode / prefill, "
        "per token | vs the CPU device: decode | vs the CPU device: prefill "
        "| decode: dominant part | prefill: dominant part |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for operation in results["operations"]:
        by_device: dict[str, dict[str, dict[str, Any]]] = {}
        for r in _records(results, model=model, profile=profile, dtype=dtype, operation=operation):
            if r["supported"]:
                by_device.setdefault(r["device"], {})[r["phase"]] = r
        per_token = {
            device: {p: r["modelled"]["total_us"] / r["tokens"] for p, r in phases.items()}
            for device, phases in by_device.items()
            if set(phases) == set(PHASES)
        }
        cpu = next(
            (
                per_token[device]
                for device, phases in by_device.items()
                if device in per_token and phases["decode"].get("device_type") == "CPU"
            ),
            None,
        )
        for device, times in per_token.items():
            decode = by_device[device]["decode"]["modelled"]
            prefill = by_device[device]["prefill"]["modelled"]
            versus = [
                "-" if cpu is None else f"{cpu[phase] / times[phase]:.2f}x" for phase in PHASES
            ]
            lines.append(
                f"| {OPERATIONS[operation]} | `{device}` | {_ms(times['decode'])} "
                f"| {_ms(times['prefill'])} | {times['decode'] / times['prefill']:.0f}x "
                f"| {versus[0]} | {versus[1]} "
                f"| {dominant_part(decode)} | {dominant_part(prefill)} |"
            )
    return "\n".join(lines)


def format_tables(results: dict[str, Any], detailed_models: Sequence[str] | None = None) -> str:
    """The docs' generated section: per model, profile and dtype the decode-vs-prefill table;
    the per-call tables (modelled) of ``detailed_models`` (default: every model); the measured
    table of every model and dtype."""
    detailed = results["models"] if detailed_models is None else detailed_models
    parts = []
    for model in results["models"]:
        for dtype in results["dtypes"]:
            for profile in results["profiles"]:
                parts.append(gap_table(results, model, profile, dtype))
    for model in results["models"]:
        for dtype in results["dtypes"]:
            if model in detailed:
                for profile in results["profiles"]:
                    parts.append(modelled_table(results, model, profile, dtype))
            parts.append(measured_table(results, model, dtype))
    return "\n\n".join(parts)
