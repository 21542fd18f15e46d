# SPDX-License-Identifier: Apache-2.0
"""Measurement rows for calibration (docs/cost-model.md, "Calibration"), and measuring them.

- **Rows** (:class:`Measurement`): ``workload, precision, device, measured, unit`` with the
  published range and the source, read from CSV or from the JSON document :func:`measure` writes
  (schema ``tvm_nnapi.measurements/1``). Both formats hold the same columns (:data:`COLUMNS`).
- **Measuring** (:func:`measure`): each workload (:mod:`tvm_nnapi.tools.workloads`) sent as
  graph JSON to the runtime library where NNAPI runs (this process, an RPC server, a phone) and
  timed there (wall clock and NNAPI's getDuration); on the mock every number is modelled.

Nothing here needs TVM (the runtime library needs only tvm-ffi).
"""

from __future__ import annotations

import csv
import json
import math
import os
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CalibrationError, target_failure

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
        from . import workloads

        where = f"measurement {self.id!r}"
        if not workloads.known(self.workload):
            raise CalibrationError(
                f"{where}: unknown workload {self.workload!r} (known: {workloads.names()})"
            )
        if self.precision not in workloads.PRECISIONS:
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


def _median_duration_us(samples_ns: Sequence[int]) -> float:
    """The median of NNAPI durations in microseconds; NaN when the driver reported none (-1)."""
    if any(ns < 0 for ns in samples_ns):
        return math.nan
    return statistics.median(samples_ns) / 1e3


def _runtime_function(name: str) -> Callable[..., Any]:
    from ..runtime._library import runtime_function

    return runtime_function(name)


def measure(
    specs: Iterable[tuple[str, str, str]],
    repeats: int = 10,
    warmup: int = 2,
    function: Callable[[str], Callable[..., Any]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Timing], dict[str, Any]]:
    """Times each ``(workload, precision, NNAPI device name)`` on an NNAPI library through the
    runtime library's ``tvm_nnapi.testing.time_graph``: ``function(name)`` gives the runtime's
    global functions where NNAPI runs (a target's :meth:`~tvm_nnapi.targets.Target.function`:
    a phone, an RPC server), by default this process's (``TVM_NNAPI_LIBRARY``, else the mock).
    Each workload is sent as graph JSON (zero weights travel as a size only), compiled for that
    device alone (``createForDevices``, so ``getDuration`` reports), run ``warmup`` times, then
    timed over ``repeats`` executions: the median wall clock around the compute and of NNAPI's
    ``DURATION_IN_DRIVER`` and ``DURATION_ON_HARDWARE``. On the mock, executions are cost-only
    and every number is modelled (``Timing.modelled``): the wall column is the modelled total of
    the execution's trace, not the host's clock. Returns the timings and what the target's
    NNAPI is (``library``, ``mock``, ``mock_profile``, ``feature_level``)."""
    from .workloads import build

    function = function or _runtime_function
    listing = json.loads(str(function("tvm_nnapi.testing.nnapi_devices")()))
    devices = [device["name"] for device in listing["devices"]]
    keys = ("library", "mock", "feature_level", "mock_profile")
    info = {key: listing[key] for key in keys if key in listing}
    time_graph = function("tvm_nnapi.testing.time_graph")
    timings = []
    for workload_name, precision, device_name in specs:
        if device_name not in devices:
            raise CalibrationError(
                f"no NNAPI device {device_name!r} (available: {', '.join(sorted(devices))})"
            )
        if progress is not None:
            progress(f"{workload_name} {precision} on {device_name}")
        graph, blob, size = build(workload_name, precision).graph()
        try:
            answer = time_graph(
                graph, bytearray(blob), 0 if blob else size, device_name, repeats, warmup
            )
        except Exception as failure:  # the target's error, e.g. its NNAPI refusing the model
            raise target_failure(
                failure, f"timing {workload_name} ({precision}) on {device_name}"
            ) from failure
        result = json.loads(str(answer))
        modelled = bool(result.get("cost_only"))
        walls = result["modelled_total_us"] if modelled else [ns / 1e3 for ns in result["wall_ns"]]

        timings.append(
            Timing(
                workload_name,
                precision,
                device_name,
                repeats,
                statistics.median(walls),
                _median_duration_us(result["in_driver_ns"]),
                _median_duration_us(result["on_hardware_ns"]),
                modelled,
            )
        )
    return timings, info
