# SPDX-License-Identifier: Apache-2.0
"""Measurement rows for calibration (docs/cost-model.md, "Calibration"), and measuring them.

- **Rows** (:class:`Measurement`): ``workload, precision, device, measured, unit`` with the
  published range and the source, read from CSV or from the JSON document :func:`measure` writes
  (schema ``tvm_nnapi.measurements/1``). Both formats hold the same columns (:data:`COLUMNS`).
- **Measuring** (:func:`measure`): each workload (:mod:`tvm_nnapi.tools.workloads`) built on the
  NNAPI library in use and timed there (wall clock and NNAPI's getDuration), on a phone through
  ``TVM_NNAPI_LIBRARY`` or on the mock, where every number is modelled.

Nothing here needs TVM.
"""

from __future__ import annotations

import csv
import json
import math
import os
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

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
