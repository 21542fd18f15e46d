# SPDX-License-Identifier: Apache-2.0
"""Calibrating a device profile against measurements (docs/cost-model.md, "Calibration").

Measurement rows and measuring them are :mod:`tvm_nnapi.tools.measurements` (re-exported
here). Two parts, usable without TVM:

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
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from ..errors import CalibrationError
from .measurements import (
    COLUMNS,
    MEASUREMENTS_SCHEMA,
    TIMINGS,
    UNITS,
    Measurement,
    Timing,
    _zeros_like_inputs,
    measure,
    read_measurements,
    write_measurements,
)

__all__ = [
    "COLUMNS",
    "MEASUREMENTS_SCHEMA",
    "TIMINGS",
    "UNITS",
    "FitResult",
    "Measurement",
    "ModelledRow",
    "RowFit",
    "Timing",
    "derive",
    "fit",
    "fit_summary",
    "measure",
    "model_rows",
    "read_measurements",
    "write_measurements",
    "write_profile",
]

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
    previous = control.profile_selection()
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
