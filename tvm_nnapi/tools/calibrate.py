# SPDX-License-Identifier: Apache-2.0
"""Calibrating a device profile against measurements (docs/cost-model.md, "Calibration").

Three parts, all usable without TVM:

- **Measurements** (:class:`Measurement`): rows of ``workload, precision, device, measured,
  unit`` with the published range and the source, read from CSV or from the JSON document
  :func:`measure` writes on a phone (schema ``tvm_nnapi.measurements/1``). Both formats hold
  the same columns (:data:`COLUMNS`).
- **Modelling** (:class:`ModelledRow`): each row's workload (:mod:`tvm_nnapi.tools.workloads`)
  is compiled for the row's NNAPI device of the profile and executed once on the mock in
  cost-only mode; its trace (each operation's FLOPs, bytes, classes and device) is then
  re-timed for any value of the profile's free parameters by the mock's cost model
  (:class:`mock_nnapi.cost_model.CostModel`, the one implementation of the equations), without
  re-running the workload (:meth:`ModelledRow.time_us`).
- **Fitting** (:func:`fit`): bounded least squares on log time over the rows
  (``scipy.optimize.least_squares``, trust-region reflective), with a weak
  prior pulling each parameter to its value in the starting profile (so parameters that no row
  determines stay where the profile had them). Writes the calibrated profile with a ``sources``
  entry per fitted parameter naming the rows it came from, and the error of fit per row.

Every time computed here is **modelled**; the measurements are what the rows say they are.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import os
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from ..errors import CalibrationError

#: The JSON document of measurements (what :func:`measure` writes).
MEASUREMENTS_SCHEMA = "tvm_nnapi.measurements/1"
#: The columns of a measurement row, in CSV order (the JSON rows have the same keys).
COLUMNS = (
    "id",
    "workload",
    "precision",
    "device",
    "measured",
    "unit",
    "low",
    "high",
    "timing",
    "configuration",
    "source",
)
#: Units of ``measured``: a time per run, or a rate of weights streamed / operations done.
UNITS = ("ms", "us", "GB/s", "GOP/s")
#: What a measured time covers: the application's wall clock (the modelled total), NNAPI's
#: ``DURATION_IN_DRIVER`` (total minus the runtime's overhead) or ``DURATION_ON_HARDWARE``.
TIMINGS = ("wall", "in_driver", "on_hardware")


#: A parameter counts as fitted to a row when the row's modelled value changes by at least
#: this fraction of a relative change of the parameter (d log m / d log p).
INFORMED_ELASTICITY = 0.01

#: Operation classes fitted as one: a class -> the class whose parameters it shares. NNAPI's
#: FULLY_CONNECTED and BATCH_MATMUL run the same GEMM/GEMV kernels on these devices, and the
#: host model costs TVM's matmuls under `matmul`.
TIES = {"matmul": "fully_connected"}


#: Data classes whose compute efficiency is fitted as one (the representative's): the float
#: kernels of one device share their design, their peaks differ and are in `throughput`.
DTYPE_FAMILIES = {"float32": "float16", "relaxed_float32": "float16", "quant16": "quant8"}


def _aliases(path: str) -> list[str]:
    """The other profile paths a fitted parameter's value is written to: tied operation
    classes (:data:`TIES`) and, for a compute efficiency, the data classes of its family."""
    parts = path.split(".")
    if len(parts) < 3 or not parts[1].endswith("_efficiency"):
        return []
    classes = [parts[2], *[tie for tie, canonical in TIES.items() if canonical == parts[2]]]
    dtypes: list[str | None] = [None]
    if parts[1] == "compute_efficiency" and len(parts) == 4:
        dtypes = [parts[3], *[d for d, family in DTYPE_FAMILIES.items() if family == parts[3]]]
    aliases = []
    for k in classes:
        for c in dtypes:
            alias = ".".join([parts[0], parts[1], k] + ([c] if c else []))
            if alias != path:
                aliases.append(alias)
    return aliases


# ---- measurements ------------------------------------------------------------------------------


@dataclass
class Measurement:
    """One measured row (docs/cost-model.md, "Calibration")."""

    id: str
    workload: str
    precision: str
    device: str
    measured: float
    unit: str = "ms"
    low: float | None = None
    high: float | None = None
    timing: str = "wall"
    configuration: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        from .workloads import PRECISIONS, WORKLOADS

        where = f"measurement {self.id!r}"
        if self.workload not in WORKLOADS:
            known = ", ".join(sorted(WORKLOADS))
            raise CalibrationError(f"{where}: unknown workload {self.workload!r} (known: {known})")
        if self.precision not in PRECISIONS:
            raise CalibrationError(f"{where}: unknown precision {self.precision!r}")
        if self.unit not in UNITS:
            raise CalibrationError(f"{where}: unit {self.unit!r} is not one of {UNITS}")
        if self.timing not in TIMINGS:
            raise CalibrationError(f"{where}: timing {self.timing!r} is not one of {TIMINGS}")
        self.measured = float(self.measured)
        if not self.measured > 0:
            raise CalibrationError(f"{where}: measured must be > 0, got {self.measured}")
        self.low = None if self.low in (None, "") else float(self.low)
        self.high = None if self.high in (None, "") else float(self.high)

    def row(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in COLUMNS}


def _measurement(raw: Mapping[str, Any], where: str) -> Measurement:
    missing = [k for k in ("id", "workload", "precision", "device", "measured") if not raw.get(k)]
    if missing:
        raise CalibrationError(f"{where}: missing {', '.join(missing)}")
    unknown = sorted(set(raw) - set(COLUMNS) - {"extra"})
    if unknown:
        raise CalibrationError(f"{where}: unknown columns {', '.join(unknown)}")
    values = {k: raw[k] for k in COLUMNS if k in raw and raw[k] not in (None, "")}
    try:
        return Measurement(**values)
    except (TypeError, ValueError) as error:
        if isinstance(error, CalibrationError):
            raise
        raise CalibrationError(f"{where}: {error}") from error


def read_measurements(path: str | os.PathLike[str]) -> list[Measurement]:
    """Rows of a CSV file (header = :data:`COLUMNS`, ``#`` lines are comments) or of a
    ``tvm_nnapi.measurements/1`` JSON document."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise CalibrationError(f"{path}: cannot read ({error.strerror})") from error
    if path.suffix == ".json":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise CalibrationError(f"{path}: not JSON ({error})") from error
        if not isinstance(document, dict) or document.get("schema") != MEASUREMENTS_SCHEMA:
            raise CalibrationError(
                f"{path}: expected a JSON object with schema {MEASUREMENTS_SCHEMA}"
            )
        rows = document.get("measurements")
        if not isinstance(rows, list):
            raise CalibrationError(f"{path}: 'measurements' must be a list of rows")
        return [_measurement(row, f"{path}: measurements[{i}]") for i, row in enumerate(rows)]
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    reader = csv.DictReader(lines)
    return [
        _measurement(row, f"{path}: row {row.get('id') or i + 1}") for i, row in enumerate(reader)
    ]


def write_measurements(
    path: str | os.PathLike[str],
    rows: Sequence[Measurement],
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Writes rows as CSV (``.csv``) or as a ``tvm_nnapi.measurements/1`` document."""
    path = Path(path)
    if path.suffix == ".csv":
        with path.open("w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=COLUMNS, lineterminator="\n")
            writer.writeheader()
            for row in rows:
                writer.writerow({k: "" if v is None else v for k, v in row.row().items()})
        return
    document = {"schema": MEASUREMENTS_SCHEMA, **(metadata or {})}
    document["measurements"] = [row.row() for row in rows]
    path.write_text(json.dumps(document, indent=2) + "\n")


# ---- measuring (the phone side) ----------------------------------------------------------------


def _zeros_like_inputs(model: Any) -> list[np.ndarray]:
    from mock_nnapi.api import NUMPY_DTYPES

    arrays = []
    for index in model.inputs:
        code, shape, _, _ = model.operand_types[index]
        arrays.append(np.zeros(shape, NUMPY_DTYPES[code]))
    return arrays


def _timed_execution(compilation: Any, inputs: list[np.ndarray]) -> tuple[float, float, float]:
    """One execution with NNAPI timing: (wall, in_driver, on_hardware) in microseconds
    (NaN for a duration the driver does not report)."""
    import ctypes

    from mock_nnapi.api import NUMPY_DTYPES, Execution, check, lib

    execution = Execution(compilation)
    check(
        "ANeuralNetworksExecution_setMeasureTiming",
        lib().ANeuralNetworksExecution_setMeasureTiming(execution.handle, True),
    )
    model = compilation.model
    keep = []
    for i, array in enumerate(inputs):
        keep.append(array)
        check(
            "ANeuralNetworksExecution_setInput",
            lib().ANeuralNetworksExecution_setInput(
                execution.handle, i, None, array.ctypes.data_as(ctypes.c_void_p), array.nbytes
            ),
        )
    for i, index in enumerate(model.outputs):
        code, shape, _, _ = model.operand_types[index]
        array = np.empty(shape, NUMPY_DTYPES[code])
        keep.append(array)
        check(
            "ANeuralNetworksExecution_setOutput",
            lib().ANeuralNetworksExecution_setOutput(
                execution.handle, i, None, array.ctypes.data_as(ctypes.c_void_p), array.nbytes
            ),
        )
    start = time.perf_counter()
    check(
        "ANeuralNetworksExecution_compute", lib().ANeuralNetworksExecution_compute(execution.handle)
    )
    wall = (time.perf_counter() - start) * 1e6
    durations = []
    for code in (1, 0):  # DURATION_IN_DRIVER, DURATION_ON_HARDWARE
        value = ctypes.c_uint64()
        result = lib().ANeuralNetworksExecution_getDuration(
            execution.handle, code, ctypes.byref(value)
        )
        ok = result == 0 and value.value != 2**64 - 1
        durations.append(value.value / 1e3 if ok else math.nan)
    return wall, durations[0], durations[1]


@dataclass
class Timing:
    """Median timings of one workload on one NNAPI device (microseconds)."""

    workload: str
    precision: str
    device: str
    repeats: int
    wall_us: float
    in_driver_us: float
    on_hardware_us: float
    modelled: bool  # the NNAPI library is the mock: every duration is modelled

    def measurement(self, timing: str = "wall", source: str = "") -> Measurement:
        value = {"wall": self.wall_us, "in_driver": self.in_driver_us}.get(
            timing, self.on_hardware_us
        )
        if math.isnan(value):
            raise CalibrationError(
                f"{self.workload} on {self.device}: the driver reported no {timing} duration"
            )
        label = "modelled (mock_nnapi)" if self.modelled else "measured"
        return Measurement(
            id=f"{self.workload}-{self.precision}-{self.device}-{timing}",
            workload=self.workload,
            precision=self.precision,
            device=self.device,
            measured=value / 1e3,
            unit="ms",
            timing=timing,
            configuration=f"median of {self.repeats} executions, {label}",
            source=source,
        )


def measure(
    specs: Iterable[tuple[str, str, str]], repeats: int = 10, warmup: int = 2
) -> list[Timing]:
    """Times each ``(workload, precision, NNAPI device name)`` on the NNAPI library in use
    (``TVM_NNAPI_LIBRARY``: a phone's ``libneuralnetworks.so``, or the mock): one compilation
    for that device alone (``createForDevices``, so ``getDuration`` reports), ``warmup``
    executions, then the median over ``repeats`` of the wall clock around
    ``ANeuralNetworksExecution_compute`` and of NNAPI's ``DURATION_IN_DRIVER`` and
    ``DURATION_ON_HARDWARE``. On the mock, executions are cost-only and every number is
    modelled (``Timing.modelled``): the wall column is the modelled total of the execution's
    trace, not the host's clock."""
    import contextlib

    from mock_nnapi import _library, api, control

    from .workloads import build

    on_mock = _library.is_mock()
    devices = {device.name: device for device in api.devices()}
    timings = []
    for workload_name, precision, device_name in specs:
        if device_name not in devices:
            raise CalibrationError(
                f"no NNAPI device {device_name!r} (available: {', '.join(sorted(devices))})"
            )
        workload = build(workload_name, precision)
        compilation = api.Compilation(workload.model, [devices[device_name]]).finish()
        inputs = _zeros_like_inputs(workload.model)
        cost_only = control.CostOnlyExecution() if on_mock else contextlib.nullcontext()
        samples = []
        with cost_only:
            for _ in range(warmup):
                _timed_execution(compilation, inputs)
            for _ in range(repeats):
                wall, in_driver, on_hardware = _timed_execution(compilation, inputs)
                trace = control.last_execution_trace() if on_mock else None
                if trace is not None:  # the host's clock says nothing of the phone: modelled
                    wall = float(trace["modelled_total_us"])
                samples.append((wall, in_driver, on_hardware))
        wall, in_driver, on_hardware = (statistics.median(s[i] for s in samples) for i in range(3))
        timings.append(
            Timing(
                workload_name,
                precision,
                device_name,
                repeats,
                wall,
                in_driver,
                on_hardware,
                on_mock,
            )
        )
    return timings


# ---- modelling ---------------------------------------------------------------------------------


@dataclass
class Parameter:
    """One profile parameter of the timing model: where it is, its value, its bounds."""

    path: str  # e.g. devices[0].compute_efficiency.convolution.float16
    value: float
    lower: float
    upper: float
    free: bool = True


class ParameterSet:
    """The timing parameters of a profile the rows touch, by path."""

    def __init__(self, profile: Mapping[str, Any]) -> None:
        self.profile = profile
        self.parameters: dict[str, Parameter] = {}

    def index(self, path: str) -> int:
        return list(self.parameters).index(path)

    def add(self, path: str, value: float, lower: float, upper: float) -> str:
        if path not in self.parameters:
            value = min(max(value, lower), upper)
            self.parameters[path] = Parameter(path, value, lower, upper)
        return path

    def vector(self) -> np.ndarray:
        return np.array([p.value for p in self.parameters.values()], dtype=float)


def _device_index(profile: Mapping[str, Any], name: str) -> int:
    for i, device in enumerate(profile["devices"]):
        if device["name"] == name:
            return i
    raise CalibrationError(f"profile {profile.get('name')!r} has no device named {name!r}")


def _dram_peak(profile: Mapping[str, Any]) -> float | None:
    value = profile.get("soc", {}).get("dram_peak_gbps")
    return float(value) if isinstance(value, (int, float)) else None


class _Retimer:
    """Re-times recorded traces for parameter values: the profile document with the values set
    at their paths (and the paths tied to them, :func:`_aliases`) is handed to the mock's cost
    model (:class:`mock_nnapi.cost_model.CostModel`), which re-times each trace with the same
    equations the mock times executions with. The model of the last values is kept."""

    def __init__(self, profile: Mapping[str, Any], parameters: ParameterSet) -> None:
        self.profile = profile
        self.parameters = parameters
        self._text = json.dumps(profile)
        self._key: bytes | None = None
        self._model: Any = None

    def document(self, values: np.ndarray) -> dict[str, Any]:
        """The profile with ``values`` at the parameters' paths and their aliases."""
        document: dict[str, Any] = json.loads(self._text)
        for path, value in zip(self.parameters.parameters, values, strict=True):
            for target in (path, *_aliases(path)):
                _set_path(document, target, float(value), rounded=False)
        return document

    def model(self, values: np.ndarray) -> Any:
        from mock_nnapi.cost_model import CostModel

        key = np.asarray(values, dtype=float).tobytes()
        if key != self._key:
            self._model = CostModel(self.document(values))
            self._key = key
        return self._model


@dataclass
class ModelledRow:
    """A measurement with its workload's trace on the profile's device."""

    measurement: Measurement
    retimer: _Retimer
    trace: Any  # the workload's trace, read for re-timing (mock_nnapi.cost_model)
    weight_bytes: float
    flops: float
    trace_total_us: float
    trace_in_driver_us: float
    trace_on_hardware_us: float

    def time_us(self, values: np.ndarray) -> float:
        """The modelled time the row's ``timing`` covers, for parameter values ``values``
        (the mock's cost model re-timing the row's trace)."""
        times = self.retimer.model(values).retime(self.trace)
        if self.measurement.timing == "on_hardware":
            return float(times.on_hardware_us)
        if self.measurement.timing == "in_driver":
            return float(times.in_driver_us)
        return float(times.total_us)

    def value(self, values: np.ndarray) -> float:
        """The modelled counterpart of ``measured``, in its unit."""
        time_us = self.time_us(values)
        unit = self.measurement.unit
        if unit == "ms":
            return time_us / 1e3
        if unit == "us":
            return time_us
        if unit == "GB/s":
            return self.weight_bytes / time_us / 1e3
        return self.flops / time_us / 1e3  # GOP/s


def model_rows(
    profile: str | os.PathLike[str], rows: Sequence[Measurement]
) -> tuple[dict[str, Any], ParameterSet, list[ModelledRow]]:
    """Runs each row's workload on the mock with ``profile`` selected (cost-only) and returns
    the profile document, its parameters the rows touch, and the modelled rows."""
    from mock_nnapi.cost_model import CostModel, RecordedExecution
    from mock_nnapi.device_profiles import load_profile, profile_path

    from mock_nnapi import api, control

    from .workloads import build

    path = profile_path(profile)
    data = load_profile(path)
    parameters = ParameterSet(data)
    retimer = _Retimer(data, parameters)
    cost_model = CostModel(data)
    dram = _dram_peak(data)
    parameters.add(
        "runtime.overhead_us", float(data.get("runtime", {}).get("overhead_us", 0)), 0.0, 1e4
    )
    modelled = []
    previous = control.profile_name()
    control.set_profile(str(path))
    try:
        devices = {device.name: device for device in api.devices()}
        cache: dict[tuple[str, str, str], Any] = {}
        for row in rows:
            _device_index(data, row.device)
            key = (row.workload, row.precision, row.device)
            if key not in cache:
                workload = build(row.workload, row.precision)
                compilation = api.Compilation(workload.model, [devices[row.device]]).finish()
                with control.CostOnlyExecution():
                    compilation.execute(_zeros_like_inputs(workload.model))
                trace = control.last_execution_trace()
                if trace is None:
                    raise CalibrationError(f"{row.id}: the mock recorded no trace (tracing off?)")
                cache[key] = (workload.weight_bytes, trace, RecordedExecution(trace))
            weight_bytes, trace, recorded = cache[key]
            _add_parameters(trace, data, parameters, cost_model, dram)
            modelled.append(
                ModelledRow(
                    row,
                    retimer,
                    recorded,
                    weight_bytes,
                    float(trace["flops"]),
                    float(trace["modelled_total_us"]),
                    float(trace["modelled_in_driver_us"]),
                    float(trace["modelled_on_hardware_us"]),
                )
            )
    finally:
        control.set_profile(previous)
    return data, parameters, modelled


def _add_parameters(
    trace: Mapping[str, Any],
    data: Mapping[str, Any],
    parameters: ParameterSet,
    cost_model: Any,
    dram: float | None,
) -> None:
    """Adds the parameters a trace's times depend on, at their values in the profile: each
    device's execution-step overhead, and per operation its class's compute efficiency (per
    dtype family), memory efficiency, the device's bandwidth and per-operation overhead."""

    def device_parameters(name: str) -> tuple[int, dict[str, Any]]:
        i = _device_index(data, name)
        return i, data["devices"][i]

    for event in trace["events"]:
        if event["kind"] == "driver":
            i, device = device_parameters(event["device"])
            value = float(device["overhead_us"]["execution"])
            parameters.add(f"devices[{i}].overhead_us.execution", value, 0.0, 1e4)
        elif event["kind"] == "operation":
            i, device = device_parameters(event["device"])
            k = TIES.get(event["operation_class"], event["operation_class"])
            c = event["data_class"]
            prefix = f"devices[{i}]"
            parameters.add(
                f"{prefix}.compute_efficiency.{k}.{DTYPE_FAMILIES.get(c, c)}",
                cost_model.efficiency(device["name"], "compute", k, c),
                0.01,
                1.0,
            )
            # Streaming efficiency is one per class: the memory system does not see the dtype.
            parameters.add(
                f"{prefix}.memory_efficiency.{k}",
                cost_model.efficiency(device["name"], "memory", k, c),
                0.05,
                1.0,
            )
            bandwidth = float(device["memory_bandwidth_gbps"])
            bw = parameters.add(
                f"{prefix}.memory_bandwidth_gbps", bandwidth, 1.0, dram if dram else bandwidth
            )
            if dram is None:
                parameters.parameters[bw].free = False
            parameters.add(
                f"{prefix}.overhead_us.operation",
                float(device["overhead_us"]["operation"]),
                0.0,
                1e3,
            )


# ---- fitting -----------------------------------------------------------------------------------


@dataclass
class RowFit:
    """The error of fit of one row."""

    id: str
    workload: str
    precision: str
    device: str
    unit: str
    measured: float
    low: float | None
    high: float | None
    modelled_before: float
    modelled: float
    source: str

    @property
    def ratio(self) -> float:
        """modelled / measured (> 1: the model is slower for times, faster for rates)."""
        return self.modelled / self.measured

    @property
    def factor(self) -> float:
        """How far off, as a factor >= 1 (1.5 = within 1.5x either way)."""
        return max(self.ratio, 1 / self.ratio)


@dataclass
class FitResult:
    profile: dict[str, Any]
    rows: list[RowFit]
    fitted: dict[str, tuple[float, float]]  # path -> (before, after)
    iterations: int
    cost: float
    notes: list[str] = field(default_factory=list)

    def report(self) -> str:
        """The error of fit as a Markdown table (every modelled number labelled modelled)."""
        lines = [
            "| row | workload | precision | device | published | modelled before | "
            "modelled (calibrated) | modelled / published |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in self.rows:
            published = f"{_g(row.measured)} {row.unit}"
            if row.low is not None and row.high is not None:
                published += f" ({_g(row.low)}-{_g(row.high)})"
            lines.append(
                f"| {row.id} | {row.workload} | {row.precision} | {row.device} | {published} | "
                f"{_g(row.modelled_before)} {row.unit} | {_g(row.modelled)} {row.unit} | "
                f"{row.ratio:.2f} |"
            )
        return "\n".join(lines) + "\n"


def _g(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def _set_path(profile: dict[str, Any], path: str, value: float, rounded: bool = True) -> None:
    """Sets ``devices[i].a.b.c`` (creating objects) or ``runtime.overhead_us``; ``rounded``
    writes 6 decimals (a profile for people to read), else the value as it is."""
    parts = path.split(".")
    target: Any = profile
    head = parts[0]
    if head.startswith("devices["):
        target = profile["devices"][int(head[len("devices[") : -1])]
    else:
        target = profile.setdefault(head, {})
    for key in parts[1:-1]:
        entry = target.get(key)
        if not isinstance(entry, dict):
            entry = {} if entry is None else {"default": entry}
            target[key] = entry
        target = entry
    target[parts[-1]] = round(float(value), 6) if rounded else float(value)


def fit(
    profile: str | os.PathLike[str],
    rows: Sequence[Measurement],
    prior_weight: float = 0.05,
    name: str | None = None,
    free: Iterable[str] | None = None,
) -> FitResult:
    """Fits the parameters of ``profile`` that ``rows`` depend on.

    Minimises ``sum over rows of log(modelled / measured)^2 + prior_weight^2 x sum over
    parameters of log(p / p_profile)^2`` over log-parameters, inside the bounds: compute
    efficiencies in [0.01, 1], memory efficiencies in [0.05, 1] (at most the peak throughput
    and the bandwidth), each device's ``memory_bandwidth_gbps`` in [1, soc.dram_peak_gbps]
    (fixed when the profile does not state the DRAM peak), overheads in [0.01 us, 10 ms].
    ``free`` restricts the fit to those parameter paths (the others keep their values).
    """
    if not rows:
        raise CalibrationError("no measurement rows to fit")
    data, parameters, modelled = model_rows(profile, rows)
    names = list(parameters.parameters)
    chosen = set(free) if free is not None else None
    if chosen is not None:
        unknown = chosen - set(names)
        if unknown:
            raise CalibrationError(f"no row depends on {', '.join(sorted(unknown))}")
    start = parameters.vector()
    floor = 0.01  # overheads may go to (almost) zero: log needs a positive floor
    lower = np.log(np.maximum([p.lower for p in parameters.parameters.values()], floor))
    upper = np.log(np.maximum([p.upper for p in parameters.parameters.values()], floor))
    x0 = np.log(np.maximum(start, floor))
    fixed = np.array(
        [
            not p.free or (chosen is not None and p.path not in chosen)
            for p in parameters.parameters.values()
        ]
    )
    free_index = np.flatnonzero(~fixed & (upper > lower))
    measured = np.log([row.measurement.measured for row in modelled])

    def values_of(x_free: np.ndarray) -> np.ndarray:
        values = start.copy()
        values[free_index] = np.exp(x_free)
        return values

    def residuals(x_free: np.ndarray) -> np.ndarray:
        values = values_of(x_free)
        model = np.log([row.value(values) for row in modelled])
        return np.concatenate([model - measured, prior_weight * (x_free - x0[free_index])])

    before = [row.value(start) for row in modelled]
    if free_index.size:
        # Bounded least squares (trust-region reflective), finite-difference Jacobian.
        solution = least_squares(
            residuals,
            np.clip(x0[free_index], lower[free_index], upper[free_index]),
            bounds=(lower[free_index], upper[free_index]),
            method="trf",
            x_scale="jac",
        )
        x_free, iterations = solution.x, int(solution.njev or solution.nfev)
    else:
        x_free, iterations = x0[free_index], 0
    values = values_of(x_free)
    r = residuals(x_free)

    # Which rows inform each parameter: those whose modelled value moves by at least
    # INFORMED_ELASTICITY percent per percent of the parameter. A parameter no row informs keeps
    # its starting value exactly (the prior held it there anyway).
    informed: dict[str, list[str]] = {}
    for j, path in enumerate(names):
        if j not in free_index:
            continue
        probe = values.copy()
        # 1% up, or down where up would leave the parameter's range (an efficiency at 1).
        upward = probe[j] * 1.01 <= parameters.parameters[path].upper
        probe[j] = probe[j] * 1.01 if upward else probe[j] / 1.01
        for row in modelled:
            elasticity = abs(math.log(row.value(probe) / row.value(values))) / math.log(1.01)
            if elasticity >= INFORMED_ELASTICITY:
                informed.setdefault(path, []).append(row.measurement.id)
    values = np.where([path in informed for path in names], values, start)

    calibrated = copy.deepcopy(data)
    if name:
        calibrated["name"] = name
    fitted: dict[str, tuple[float, float]] = {}
    tied: dict[str, list[str]] = {}
    for j, path in enumerate(names):
        if path not in informed:
            continue
        _set_path(calibrated, path, values[j])
        fitted[path] = (float(start[j]), float(values[j]))
        for alias in _aliases(path):
            _set_path(calibrated, alias, values[j])
            tied.setdefault(path, []).append(alias)
    by_id = {row.measurement.id: row.measurement for row in modelled}
    if informed:
        cited_rows = sorted({i for ids in informed.values() for i in ids})
        calibrated["sources"].append(
            {
                "fields": sorted({f for p in informed for f in (p, *tied.get(p, []))}),
                "value": "the measurement rows the fitted parameters below cite",
                "source": "; ".join(
                    f"{i} = {by_id[i].workload} {by_id[i].precision} on {by_id[i].device}: "
                    f"{_g(by_id[i].measured)} {by_id[i].unit} ({by_id[i].configuration}; "
                    f"{by_id[i].source})"
                    for i in cited_rows
                ),
                "estimate": False,
            }
        )
    for path, ids in informed.items():
        cited = ", ".join(ids)
        calibrated["sources"].append(
            {
                "fields": [path, *tied.get(path, [])],
                "value": f"{_g(fitted[path][1])} (before calibration {_g(fitted[path][0])})",
                "source": (
                    "Fitted by tvm-nnapi calibrate (least squares on log time, prior weight "
                    f"{prior_weight:g} towards the value before) to measurement rows: {cited}"
                    + (
                        f"; {', '.join(tied[path])} take the value (tied class, dtype family)"
                        if path in tied
                        else ""
                    )
                ),
                "estimate": True,
            }
        )
    results = [
        RowFit(
            row.measurement.id,
            row.measurement.workload,
            row.measurement.precision,
            row.measurement.device,
            row.measurement.unit,
            row.measurement.measured,
            row.measurement.low,
            row.measurement.high,
            before[i],
            row.value(values),
            row.measurement.source,
        )
        for i, row in enumerate(modelled)
    ]
    return FitResult(calibrated, results, fitted, iterations, float(r @ r))


def _format(value: Any, indent: int = 0) -> str:
    """JSON in the built-in profiles' style: an object or array whose members are all
    scalars stays on one line when it fits in 100 columns."""
    pad = " " * (indent + 2)
    if isinstance(value, dict) and value:
        inline = (
            "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in value.items()) + "}"
        )
        scalar = all(not isinstance(v, (dict, list)) for v in value.values())
        if scalar and indent + len(inline) <= 96:
            return inline
        items = [f"{pad}{json.dumps(k)}: {_format(v, indent + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(value, list) and value:
        inline = "[" + ", ".join(json.dumps(v) for v in value) + "]"
        scalar = all(not isinstance(v, (dict, list)) for v in value)
        if scalar and indent + len(inline) <= 96:
            return inline
        items = [f"{pad}{_format(v, indent + 2)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"
    return json.dumps(value)


def write_profile(profile: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Writes a profile document (the same data as ``json.dumps``, laid out for review)."""
    text = _format(profile) + "\n"
    assert json.loads(text) == profile
    Path(path).write_text(text)


def fit_summary(result: FitResult) -> dict[str, Any]:
    """A JSON-able summary: the rows' error of fit and the fitted parameters."""
    return {
        "modelled": True,
        "iterations": result.iterations,
        "cost": result.cost,
        "rows": [{**asdict(row), "ratio": row.ratio} for row in result.rows],
        "fitted": {k: {"before": a, "after": b} for k, (a, b) in result.fitted.items()},
    }


# ---- carrying a calibration over to another SoC ------------------------------------------------

#: What :func:`derive` copies from a calibrated device to a device of the same type.
DERIVED_FIELDS = ("compute_efficiency", "memory_efficiency", "fuse_elementwise", "overhead_us")


def derive(calibrated: Mapping[str, Any], target: Mapping[str, Any]) -> dict[str, Any]:
    """``target`` with the timing parameters of ``calibrated``'s device of the same type
    (ACCELERATOR, GPU, CPU), for a SoC with no published measurement: the compute and memory
    efficiency tables, ``fuse_elementwise`` and the overheads are copied, ``memory_bandwidth_gbps``
    is the same fraction of the target's ``soc.dram_peak_gbps`` as in the calibrated profile
    (when both state it), and ``runtime.overhead_us`` (the same Android runtime) is copied. Each
    changed field gets a ``sources`` entry saying it is an estimate carried over."""
    result = copy.deepcopy(dict(target))
    by_type: dict[str, Mapping[str, Any]] = {}
    for device in calibrated["devices"]:
        by_type.setdefault(device["type"], device)
    source_dram, target_dram = _dram_peak(calibrated), _dram_peak(target)
    name = calibrated.get("name")
    changed: dict[str, list[str]] = {}
    for i, device in enumerate(result["devices"]):
        like = by_type.get(device["type"])
        if like is None:
            continue
        fields = changed.setdefault(like["name"], [])
        for key in DERIVED_FIELDS:
            if key in like:
                device[key] = copy.deepcopy(like[key])
                fields.append(f"devices[{i}].{key}")
        if source_dram and target_dram:
            fraction = float(like["memory_bandwidth_gbps"]) / source_dram
            device["memory_bandwidth_gbps"] = round(fraction * target_dram, 6)
            fields.append(f"devices[{i}].memory_bandwidth_gbps")
    if "overhead_us" in calibrated.get("runtime", {}):
        result.setdefault("runtime", {})["overhead_us"] = calibrated["runtime"]["overhead_us"]
        changed.setdefault("the runtime", []).append("runtime.overhead_us")
    for like_name, fields in changed.items():
        if not fields:
            continue
        result["sources"].append(
            {
                "fields": fields,
                "source": (
                    f"Estimate carried over from the calibrated {name} profile ({like_name}, the "
                    "same device kind): no latency or throughput of these workloads is published "
                    "for this SoC. Bandwidths keep the calibrated fraction of the DRAM peak."
                    if like_name != "the runtime"
                    else f"Estimate carried over from the calibrated {name} profile (the same "
                    "Android NNAPI runtime)."
                ),
                "estimate": True,
            }
        )
    return result
