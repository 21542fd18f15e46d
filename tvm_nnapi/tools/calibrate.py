# SPDX-License-Identifier: Apache-2.0
"""Calibrating a device profile against measurements (docs/cost-model.md, "Calibration").

Measurement rows and measuring them are :mod:`tvm_nnapi.tools.measurements` (re-exported
here). Three parts, usable without TVM:

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
  entry per fitted parameter naming the rows it came from, and the error of fit per row;
  warns (:class:`CalibrationWarning`) when the fitted parameters outnumber the rows or end at a
  bound.
- **Cross-validating** (:func:`cross_validate`, ``fit(..., cross_validate=True)``): each row
  left out in turn, the same fit to the other rows models it; the error per row, per row family
  (:func:`workload_family`) and overall (:class:`CrossValidation`).

Every time computed here is **modelled**; the measurements are what the rows say they are.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    "FAMILIES",
    "MEASUREMENTS_SCHEMA",
    "TIMINGS",
    "UNITS",
    "CalibrationWarning",
    "CrossValidation",
    "ErrorSummary",
    "FitResult",
    "HeldOutRow",
    "Measurement",
    "ModelledRow",
    "RowFit",
    "Timing",
    "before_calibration",
    "check",
    "check_table",
    "cross_validate",
    "derive",
    "fit",
    "fit_summary",
    "measure",
    "model_rows",
    "read_measurements",
    "workload_family",
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


#: Operation classes whose memory efficiency is one parameter for every device of the SoC: a
#: fully connected layer of an LLM streams its weights from the DRAM all devices share, at a
#: fraction of its peak that published rates put within 1.35x on the NPU, GPU and CPU of one
#: phone (docs/cost-model.md, "Calibration").
SHARED_MEMORY_CLASSES = ("fully_connected",)


#: Upper bound of a fitted on-chip bandwidth (GB/s): far above any phone NPU's scratchpad, so a
#: fit that ends there says on-chip traffic costs next to nothing.
ON_CHIP_BANDWIDTH_LIMIT_GBPS = 1e5


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
    dtype family), memory efficiency (one for every device for :data:`SHARED_MEMORY_CLASSES`,
    path ``devices[*]...``; one per device, ``memory_efficiency.default``, for the classes a
    device's ``memory_efficiency`` does not list when it states a default), the device's
    bandwidth (held at its value, not fitted) and per-operation overhead, and the device's
    on-chip bandwidth when the operation has traffic on chip (``on_chip_bytes``; at least the
    device's DRAM bandwidth: on-chip memory is not slower than the DRAM behind it)."""

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
            # Streaming efficiency does not depend on the dtype (the memory system does not see
            # it). Classes of SHARED_MEMORY_CLASSES are one parameter for every device of the
            # SoC; another class has its own parameter where the device's memory_efficiency
            # lists it, else it shares the device's memory_efficiency.default.
            memory = device.get("memory_efficiency", {})
            if k in SHARED_MEMORY_CLASSES:
                path, start = f"devices[*].memory_efficiency.{k}", None
            elif k in memory or "default" not in memory:
                path, start = f"{prefix}.memory_efficiency.{k}", None
            else:
                path, start = f"{prefix}.memory_efficiency.default", float(memory["default"])
            parameters.add(
                path,
                start
                if start is not None
                else cost_model.efficiency(device["name"], "memory", k, c),
                0.05,
                1.0,
            )
            bandwidth = float(device["memory_bandwidth_gbps"])
            bw = parameters.add(
                f"{prefix}.memory_bandwidth_gbps", bandwidth, 1.0, dram if dram else bandwidth
            )
            # Not fitted: the devices share one DRAM (its peak is each device's bandwidth in a
            # calibrated profile); the fraction of it a device reaches is its memory efficiency.
            parameters.parameters[bw].free = False
            parameters.add(
                f"{prefix}.overhead_us.operation",
                float(device["overhead_us"]["operation"]),
                0.0,
                1e3,
            )
            on_chip = device.get("on_chip_memory")
            if on_chip is not None and float(event.get("on_chip_bytes", 0)) > 0:
                parameters.add(
                    f"{prefix}.on_chip_memory.bandwidth_gbps",
                    float(on_chip["bandwidth_gbps"]),
                    bandwidth,
                    ON_CHIP_BANDWIDTH_LIMIT_GBPS,
                )


# ---- fitting -----------------------------------------------------------------------------------

#: A fitted parameter ends at a bound of its range (an active bound) when its logarithm is within
#: this distance of the bound's (0.1%).
ACTIVE_BOUND_TOLERANCE = 1e-3

#: The row families the error is summarised by, in report order; a workload of none of them is
#: ``other`` (:func:`workload_family`).
FAMILIES = ("CNN", "transformer", "LLM prefill", "LLM decode")

#: Workload name prefixes of each family (names of networks; the LLM phases go by suffix).
_FAMILY_PREFIXES = {
    "transformer": ("vit", "deit", "swin", "mobilevit", "bert", "mobilebert", "distilbert",
                    "albert", "whisper", "transformer"),
    "CNN": ("mobilenet", "efficientnet", "resnet", "wide_resnet", "resnext", "inception",
            "squeezenet", "shufflenet", "mnasnet", "regnet", "densenet", "vgg", "googlenet",
            "convnext", "yolo", "deeplab", "unet"),
}  # fmt: skip


def workload_family(workload: str) -> str:
    """The row family of a workload (one of :data:`FAMILIES`, else ``other``): ``LLM decode``
    for a name with ``-decode``, ``LLM prefill`` for one with ``-prefill``, else ``transformer``
    or ``CNN`` by the network the name starts with (case-insensitive)."""
    name = workload.lower()
    if "-decode" in name:
        return "LLM decode"
    if "-prefill" in name:
        return "LLM prefill"
    for family, prefixes in _FAMILY_PREFIXES.items():
        if name.startswith(prefixes):
            return family
    return "other"


class CalibrationWarning(UserWarning):
    """A fit the rows do not determine (more fitted parameters than rows, fitted parameters
    that end at a bound of their range), or a cross-validation from a starting profile already
    fitted to its rows (:attr:`FitResult.warnings` words each)."""


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
class HeldOutRow:
    """One row's error of fit beside its leave-one-out error: the row modelled with the
    parameters refitted to all the other rows (the same fit, prior and bounds)."""

    id: str
    workload: str
    precision: str
    device: str
    family: str  # workload_family(workload)
    unit: str
    measured: float
    modelled: float  # by the fit to every row
    held_out: float  # by the fit to the other rows
    #: The parameters the fit to every row fits and the other rows do not inform: they keep
    #: their starting values when this row is left out (its prediction rests on the start).
    only_this_row: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """Fitted modelled / measured."""
        return self.modelled / self.measured

    @property
    def held_out_ratio(self) -> float:
        """Left-out modelled / measured."""
        return self.held_out / self.measured

    @property
    def factor(self) -> float:
        """The error of fit as a factor >= 1."""
        return max(self.ratio, 1 / self.ratio)

    @property
    def held_out_factor(self) -> float:
        """The leave-one-out error as a factor >= 1."""
        return max(self.held_out_ratio, 1 / self.held_out_ratio)


@dataclass
class ErrorSummary:
    """The error of a group of rows (a family or ``all``), fitted and left out: the geometric
    mean of the factors (each >= 1) and the largest, with the row it belongs to."""

    family: str
    rows: int
    fit_geomean: float
    fit_worst: float
    held_out_geomean: float
    held_out_worst: float
    worst_row: str  # the row of held_out_worst


def _summary(family: str, rows: Sequence[HeldOutRow]) -> ErrorSummary:
    fit_factors = [row.factor for row in rows]
    held_factors = [row.held_out_factor for row in rows]
    worst = max(rows, key=lambda row: row.held_out_factor)
    return ErrorSummary(
        family,
        len(rows),
        math.exp(float(np.mean(np.log(fit_factors)))),
        max(fit_factors),
        math.exp(float(np.mean(np.log(held_factors)))),
        max(held_factors),
        worst.id,
    )


@dataclass
class CrossValidation:
    """Leave-one-out cross-validation of a fit: per row, the fit to every row and the refit to
    the other rows, both modelled through the one cost model (every modelled number is
    modelled; the measured ones are the rows')."""

    rows: list[HeldOutRow]
    seconds: float  # the wall time of the refits (modelling the rows' workloads excluded)

    def families(self) -> list[ErrorSummary]:
        """The error per row family present (:data:`FAMILIES` order, then ``other``), then
        over all rows (family ``all``)."""
        order = [*FAMILIES, "other"]
        present = sorted({row.family for row in self.rows}, key=order.index)
        summaries = [_summary(f, [r for r in self.rows if r.family == f]) for f in present]
        return [*summaries, self.overall()]

    def overall(self) -> ErrorSummary:
        """The error over all rows."""
        return _summary("all", self.rows)

    def report(self) -> str:
        """Markdown: the per-row table (fit and left out) and the summary per family."""
        lines = [
            "| row | family | published | modelled (fit) | modelled / published | "
            "modelled (row left out) | modelled / published | parameters only this row "
            "informs |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in self.rows:
            only = ", ".join(f"`{p}`" for p in row.only_this_row) or "-"
            lines.append(
                f"| {row.id} | {row.family} | {_g(row.measured)} {row.unit} | "
                f"{_g(row.modelled)} {row.unit} | {row.ratio:.2f} | {_g(row.held_out)} "
                f"{row.unit} | {row.held_out_ratio:.2f} | {only} |"
            )
        lines += [
            "",
            "| family | rows | fit: geometric mean | fit: worst | left out: geometric mean | "
            "left out: worst | worst row left out |",
            "|---|---|---|---|---|---|---|",
        ]
        for s in self.families():
            lines.append(
                f"| {s.family} | {s.rows} | {s.fit_geomean:.2f}x | {s.fit_worst:.2f}x | "
                f"{s.held_out_geomean:.2f}x | {s.held_out_worst:.2f}x | {s.worst_row} |"
            )
        return "\n".join(lines) + "\n"


@dataclass
class FitResult:
    profile: dict[str, Any]
    rows: list[RowFit]
    fitted: dict[str, tuple[float, float]]  # path -> (before, after)
    iterations: int
    cost: float
    notes: list[str] = field(default_factory=list)
    #: Fitted parameters that end at a bound of their range: path -> "lower" or "upper".
    active_bounds: dict[str, str] = field(default_factory=dict)
    #: What makes the fit or its cross-validation less than it seems, worded for people (each
    #: also issued as a :class:`CalibrationWarning`).
    warnings: list[str] = field(default_factory=list)
    #: Leave-one-out cross-validation, when :func:`fit` was asked for it.
    cross_validation: CrossValidation | None = None

    def table(self) -> str:
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

    def report(self) -> str:
        """Markdown: the error-of-fit table (:meth:`table`), the warnings, and the leave-one-out
        tables when cross-validated (:meth:`CrossValidation.report`)."""
        text = self.table()
        if self.warnings:
            text += "\n" + "".join(f"**Warning:** {w}\n\n" for w in self.warnings).rstrip() + "\n"
        if self.cross_validation is not None:
            text += "\nLeave-one-out cross-validation (each row modelled by the fit to the "
            text += "other rows):\n\n" + self.cross_validation.report()
        return text


def _g(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def _set_path(profile: dict[str, Any], path: str, value: float, rounded: bool = True) -> None:
    """Sets ``devices[i].a.b.c`` (creating objects; ``devices[*]`` sets it on every device) or
    ``runtime.overhead_us``; ``rounded`` writes 6 decimals (a profile for people to read), else
    the value as it is."""
    if path.startswith("devices[*]."):
        for i in range(len(profile["devices"])):
            _set_path(profile, f"devices[{i}]" + path[len("devices[*]") :], value, rounded)
        return
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


@dataclass
class _Solution:
    values: np.ndarray  # every parameter; those no fitted row informs at their start
    informed: dict[str, list[str]]  # path -> ids of the fitted rows that inform it
    iterations: int
    cost: float


class _Problem:
    """The least-squares problem of :func:`fit` (objective, bounds, prior) over the modelled
    rows, solvable on any subset of them (:meth:`solve`)."""

    FLOOR = 0.01  # overheads may go to (almost) zero: log needs a positive floor

    def __init__(
        self,
        parameters: ParameterSet,
        modelled: Sequence[ModelledRow],
        prior_weight: float,
        chosen: set[str] | None,
    ) -> None:
        self.parameters = parameters
        self.modelled = modelled
        self.prior_weight = prior_weight
        self.names = list(parameters.parameters)
        self.start = parameters.vector()
        entries = list(parameters.parameters.values())
        self.lower = np.log(np.maximum([p.lower for p in entries], self.FLOOR))
        self.upper = np.log(np.maximum([p.upper for p in entries], self.FLOOR))
        self.x0 = np.log(np.maximum(self.start, self.FLOOR))
        fixed = np.array(
            [not p.free or (chosen is not None and p.path not in chosen) for p in entries]
        )
        self.free_index = np.flatnonzero(~fixed & (self.upper > self.lower))
        self.measured = np.log([row.measurement.measured for row in modelled])

    def values_of(self, x_free: np.ndarray) -> np.ndarray:
        values = self.start.copy()
        values[self.free_index] = np.exp(x_free)
        return values

    def residuals(self, x_free: np.ndarray, rows: Sequence[int]) -> np.ndarray:
        values = self.values_of(x_free)
        model = np.log([self.modelled[i].value(values) for i in rows])
        prior = self.prior_weight * (x_free - self.x0[self.free_index])
        return np.concatenate([model - self.measured[list(rows)], prior])

    def solve(self, rows: Sequence[int]) -> _Solution:
        """Fits the free parameters to the rows at indices ``rows``. Parameters that none of
        them informs (:data:`INFORMED_ELASTICITY`) keep their starting values exactly."""
        free = self.free_index
        x_start = np.clip(self.x0[free], self.lower[free], self.upper[free])
        if free.size and rows:
            # Bounded least squares (trust-region reflective), finite-difference Jacobian.
            solution = least_squares(
                self.residuals,
                x_start,
                bounds=(self.lower[free], self.upper[free]),
                method="trf",
                x_scale="jac",
                args=(rows,),
            )
            x_free, iterations = solution.x, int(solution.njev or solution.nfev)
        else:
            x_free, iterations = x_start, 0
        values = self.values_of(x_free)
        r = self.residuals(x_free, rows)
        informed: dict[str, list[str]] = {}
        # A row informs a parameter it depends on at the fitted values or at the starting
        # ones: a fit that drives an overhead towards zero leaves it informed (and written).
        for point in (values, self.values_of(x_start)):
            base = [self.modelled[i].value(point) for i in rows]
            for j, path in enumerate(self.names):
                if j not in free or (point is not values and path in informed):
                    continue
                probe = point.copy()
                # 1% up, or down where up would leave the parameter's range (an efficiency at 1).
                upward = probe[j] * 1.01 <= self.parameters.parameters[path].upper
                probe[j] = probe[j] * 1.01 if upward else probe[j] / 1.01
                for i, before in zip(rows, base, strict=True):
                    row = self.modelled[i]
                    elasticity = abs(math.log(row.value(probe) / before)) / math.log(1.01)
                    ids = informed.setdefault(path, []) if elasticity >= INFORMED_ELASTICITY else []
                    if elasticity >= INFORMED_ELASTICITY and row.measurement.id not in ids:
                        ids.append(row.measurement.id)
        order = [self.modelled[i].measurement.id for i in rows]
        informed = {
            path: sorted(informed[path], key=order.index)
            for path in self.names
            if informed.get(path)
        }
        values = np.where([path in informed for path in self.names], values, self.start)
        return _Solution(values, informed, iterations, float(r @ r))

    def active_bounds(self, solution: _Solution) -> dict[str, str]:
        """The fitted parameters within :data:`ACTIVE_BOUND_TOLERANCE` of a bound."""
        active = {}
        for j, path in enumerate(self.names):
            if path not in solution.informed:
                continue
            x = math.log(max(float(solution.values[j]), self.FLOOR))
            if x - self.lower[j] <= ACTIVE_BOUND_TOLERANCE:
                active[path] = "lower"
            elif self.upper[j] - x <= ACTIVE_BOUND_TOLERANCE:
                active[path] = "upper"
        return active


def fit(
    profile: str | os.PathLike[str],
    rows: Sequence[Measurement],
    prior_weight: float = 0.05,
    name: str | None = None,
    free: Iterable[str] | None = None,
    cross_validate: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> FitResult:
    """Fits the parameters of ``profile`` that ``rows`` depend on.

    Minimises ``sum over rows of log(modelled / measured)^2 + prior_weight^2 x sum over
    parameters of log(p / p_profile)^2`` over log-parameters, inside the bounds: compute
    efficiencies in [0.01, 1], memory efficiencies in [0.05, 1] (at most the peak throughput
    and the bandwidth), overheads in [0.01 us, 10 ms]; each device's ``memory_bandwidth_gbps``
    keeps its value. ``free`` restricts the fit to those parameter paths (the others keep their
    values). A parameter is fitted when a row depends on it at the starting or at the fitted
    values.

    The result's ``warnings`` (each also issued as a :class:`CalibrationWarning`) say when the
    fitted parameters outnumber the rows and which fitted parameters end at a bound. With
    ``cross_validate`` the result carries leave-one-out cross-validation
    (:class:`CrossValidation`): for each row the same fit to the other rows, from the same
    starting profile, predicts it; ``progress(fold, folds, row id)`` is called before each
    refit. The rows' workloads are modelled once for all the fits.
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
    problem = _Problem(parameters, modelled, prior_weight, chosen)
    start = problem.start
    everything = list(range(len(modelled)))
    solution = problem.solve(everything)
    informed, values = solution.informed, solution.values

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
            row.value(start),
            row.value(values),
            row.measurement.source,
        )
        for row in modelled
    ]
    active = problem.active_bounds(solution)
    messages = []
    if len(fitted) > len(modelled):
        messages.append(
            f"{len(fitted)} fitted parameters outnumber the {len(modelled)} rows: the rows do "
            "not determine them (the prior towards the starting values splits what they "
            "leave open), so the error of fit overstates how well unseen workloads are modelled"
        )
    if active:
        listed = ", ".join(
            f"{path} = {_g(values[names.index(path)])} ({side})" for path, side in active.items()
        )
        messages.append(
            f"{len(active)} fitted parameters end at a bound of their range: {listed}; the rows "
            "ask for values the cost model's limits do not allow"
        )
    for message in messages:
        warnings.warn(message, CalibrationWarning, stacklevel=2)
    result = FitResult(
        calibrated,
        results,
        fitted,
        solution.iterations,
        solution.cost,
        active_bounds=active,
        warnings=messages,
    )
    if cross_validate:
        result.cross_validation = _leave_one_out(problem, solution, progress)
        shaped = _fitted_to(data, [row.measurement.id for row in modelled])
        if shaped:
            message = (
                f"the starting profile was already fitted to rows {', '.join(shaped)}: when one "
                "is left out, the other rows and the prior start from values it shaped, so its "
                "leave-one-out error is optimistic (start from before_calibration(profile), the "
                "command's --from-estimates)"
            )
            warnings.warn(message, CalibrationWarning, stacklevel=2)
            result.warnings.append(message)
    return result


def check(profile: str | os.PathLike[str], rows: Sequence[Measurement]) -> list[RowFit]:
    """Each of ``rows`` modelled by ``profile`` as it is (no fit): a check of a calibrated
    profile on rows no fit saw (a held-out set). ``modelled_before`` and ``modelled`` are both
    the profile's value."""
    if not rows:
        raise CalibrationError("no measurement rows to check")
    _, parameters, modelled = model_rows(profile, rows)
    values = parameters.vector()
    results = []
    for row in modelled:
        m = row.measurement
        value = row.value(values)
        results.append(
            RowFit(
                m.id,
                m.workload,
                m.precision,
                m.device,
                m.unit,
                m.measured,
                m.low,
                m.high,
                value,
                value,
                m.source,
            )
        )
    return results


def check_table(rows: Sequence[RowFit]) -> str:
    """Rows of :func:`check` as a Markdown table, with the geometric mean and the worst of the
    factors (every modelled number is the cost model's; published is the row)."""
    lines = [
        "| row | workload | precision | device | published | modelled | modelled / published |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.id} | {row.workload} | {row.precision} | {row.device} | "
            f"{_g(row.measured)} {row.unit} | {_g(row.modelled)} {row.unit} | "
            f"{row.ratio:.2f} |"
        )
    factors = [row.factor for row in rows]
    mean = math.exp(sum(math.log(f) for f in factors) / len(factors))
    lines.append("")
    lines.append(
        f"{len(rows)} rows: geometric mean {mean:.2f}x, worst {max(factors):.2f}x "
        f"({rows[factors.index(max(factors))].id})"
    )
    return "\n".join(lines) + "\n"


def _fitted_to(profile: Mapping[str, Any], ids: Sequence[str]) -> list[str]:
    """The ``ids`` that a fit's ``sources`` entries in ``profile`` cite."""
    cited: set[str] = set()
    for entry in profile.get("sources", []):
        source = str(entry.get("source", ""))
        if source.startswith(_FITTED_SOURCE) and "measurement rows: " in source:
            listed = source.split("measurement rows: ", 1)[1].split(";", 1)[0]
            cited.update(part.strip() for part in listed.split(","))
    return [i for i in ids if i in cited]


def _leave_one_out(
    problem: _Problem,
    full: _Solution,
    progress: Callable[[int, int, str], None] | None,
) -> CrossValidation:
    """Refits ``problem`` once per row without it and models the row with that fit."""
    began = time.perf_counter()
    rows = []
    count = len(problem.modelled)
    for i, row in enumerate(problem.modelled):
        measurement = row.measurement
        if progress is not None:
            progress(i + 1, count, measurement.id)
        fold = problem.solve([k for k in range(count) if k != i])
        rows.append(
            HeldOutRow(
                measurement.id,
                measurement.workload,
                measurement.precision,
                measurement.device,
                workload_family(measurement.workload),
                measurement.unit,
                measurement.measured,
                row.value(full.values),
                row.value(fold.values),
                [path for path in full.informed if path not in fold.informed],
            )
        )
    return CrossValidation(rows, time.perf_counter() - began)


def cross_validate(
    profile: str | os.PathLike[str],
    rows: Sequence[Measurement],
    prior_weight: float = 0.05,
    free: Iterable[str] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> CrossValidation:
    """Leave-one-out cross-validation of :func:`fit` of ``profile`` to ``rows`` (the same
    arguments): each row modelled by the fit to every row and by the fit to the other rows."""
    result = fit(profile, rows, prior_weight, free=free, cross_validate=True, progress=progress)
    assert result.cross_validation is not None
    return result.cross_validation


#: How a fit words a parameter's value in the sources entry it writes.
_BEFORE_CALIBRATION = re.compile(r"\(before calibration ([^)]+)\)")
_FITTED_SOURCE = "Fitted by tvm-nnapi calibrate"
_CITED_ROWS_VALUE = "the measurement rows the fitted parameters below cite"


def before_calibration(profile: Mapping[str, Any]) -> dict[str, Any]:
    """``profile`` as it was before :func:`fit` calibrated it: every field a fit's ``sources``
    entry names gets the value the entry says it had before calibration (the first such entry of
    a field, as the entry prints it: 3 significant digits), and the entries :func:`fit` wrote
    are dropped. A profile no fit wrote is returned unchanged (as a copy)."""
    result = copy.deepcopy(dict(profile))
    restored: set[str] = set()
    kept = []
    for entry in result.get("sources", []):
        source, value = str(entry.get("source", "")), str(entry.get("value", ""))
        if value == _CITED_ROWS_VALUE:
            continue
        match = _BEFORE_CALIBRATION.search(value)
        if not source.startswith(_FITTED_SOURCE) or match is None:
            kept.append(entry)
            continue
        before = float(match.group(1))
        for path in entry["fields"]:
            if path not in restored:
                _set_path(result, path, before)
                restored.add(path)
    if "sources" in result:
        result["sources"] = kept
    return result


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
    """A JSON-able summary: the rows' error of fit, the fitted parameters, the active bounds
    and the warnings, and (``cross_validation``, null when not run) the rows' leave-one-out
    error with its summary per family and overall. Ratios are modelled / measured; factors are
    the same error as a number >= 1."""
    validation = result.cross_validation
    return {
        "modelled": True,
        "iterations": result.iterations,
        "cost": result.cost,
        "rows": [{**asdict(row), "ratio": row.ratio} for row in result.rows],
        "fitted": {k: {"before": a, "after": b} for k, (a, b) in result.fitted.items()},
        "active_bounds": dict(result.active_bounds),
        "warnings": list(result.warnings),
        "cross_validation": None
        if validation is None
        else {
            "method": "leave-one-out",
            "seconds": validation.seconds,
            "rows": [
                {
                    **asdict(row),
                    "ratio": row.ratio,
                    "held_out_ratio": row.held_out_ratio,
                    "factor": row.factor,
                    "held_out_factor": row.held_out_factor,
                }
                for row in validation.rows
            ],
            "families": [asdict(s) for s in validation.families()],
        },
    }


# ---- carrying a calibration over to another SoC ------------------------------------------------

#: What :func:`derive` copies from a calibrated device to a device of the same type.
DERIVED_FIELDS = (
    "compute_efficiency",
    "memory_efficiency",
    "fuse_elementwise",
    "on_chip_memory",
    "overhead_us",
)


#: How the ``sources`` entries :func:`derive` writes begin.
_CARRIED_OVER = "Estimate carried over from the calibrated"


def derive(calibrated: Mapping[str, Any], target: Mapping[str, Any]) -> dict[str, Any]:
    """``target`` with the timing parameters of ``calibrated``'s device of the same type
    (ACCELERATOR, GPU, CPU), for a SoC with no published measurement: the compute and memory
    efficiency tables, ``fuse_elementwise``, ``on_chip_memory`` and the overheads are copied,
    ``memory_bandwidth_gbps`` is the same fraction of the target's ``soc.dram_peak_gbps`` as in
    the calibrated profile (when both state it), and ``runtime.overhead_us`` (the same Android
    runtime) is copied. Each changed field gets a ``sources`` entry saying it is an estimate
    carried over; the entries an earlier derivation wrote are replaced, so deriving again from a
    refitted profile gives what deriving the first time would."""
    result = copy.deepcopy(dict(target))
    result["sources"] = [
        entry
        for entry in result.get("sources", [])
        if not str(entry.get("source", "")).startswith(_CARRIED_OVER)
    ]
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
                    f"{_CARRIED_OVER} {name} profile ({like_name}, the "
                    "same device kind): no latency or throughput of these workloads is published "
                    "for this SoC. Bandwidths keep the calibrated fraction of the DRAM peak."
                    if like_name != "the runtime"
                    else f"{_CARRIED_OVER} {name} profile (the same Android NNAPI runtime)."
                ),
                "estimate": True,
            }
        )
    return result
