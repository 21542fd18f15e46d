# SPDX-License-Identifier: Apache-2.0
"""The cost model on its own: the mock's one implementation of MODELLED times, for any profile.

The equations (docs/cost-model.md) live once, in the mock library's C++ (``src/cost_model.cc``);
the mock times its own executions with them, and everything else asks them through this module:

    model = CostModel("snapdragon-8-gen-2")          # a name, a path or a profile document
    cost = model.operation("qti-dsp", "convolution", "float16", flops=2.3e8, bytes=1.2e6)
    cost.busy_us, cost.compute_efficiency            # modelled, never measured
    model.efficiency("qti-dsp", "memory", "matmul", "float32")
    model.retime(trace)                              # a recorded trace on this profile's devices

No profile is selected and no NNAPI object is made: the model reads its profile on its own, so it
works beside any active profile, and with a phone's ``libneuralnetworks.so`` in use (it loads the
mock library built with this package for its equations only). Class names come from the same
table the mock uses (:func:`operation_classes`, :func:`data_classes`, :func:`operation_class_of`).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import _library
from ._signatures import MockNnapi_ModelledTimes, MockNnapi_OperationCost

__all__ = [
    "CostModel",
    "CostModelError",
    "ModelledTimes",
    "OperationCost",
    "RecordedExecution",
    "data_classes",
    "operation_class_of",
    "operation_classes",
]


class CostModelError(ValueError):
    """A profile the cost model cannot read, or a query it cannot answer (the message names the
    field, device, class or trace event at fault)."""


_OperationCost = MockNnapi_OperationCost
_ModelledTimes = MockNnapi_ModelledTimes


@dataclass(frozen=True)
class OperationCost:
    """The modelled cost of one operation on one device (docs/cost-model.md, "Time of an
    operation"): ``busy_us = max(compute_us / compute_efficiency, memory_us /
    memory_efficiency, on-chip time)``, the on-chip time that of the bytes in the device's
    on-chip memory (0 without them); ``overhead_us`` is the device's per-operation driver cost,
    paid by an operation that is not fused into its producer."""

    compute_us: float
    memory_us: float
    compute_efficiency: float
    memory_efficiency: float
    busy_us: float
    overhead_us: float
    energy_uj: float
    compute_bound: bool

    @property
    def time_us(self) -> float:
        """Busy time plus the per-operation overhead (an unfused operation's duration)."""
        return self.busy_us + self.overhead_us


@dataclass(frozen=True)
class ModelledTimes:
    """Totals of a modelled execution: the application's wait (``total_us``), NNAPI's
    ``DURATION_IN_DRIVER`` and ``DURATION_ON_HARDWARE``, energy, and compilation."""

    total_us: float
    in_driver_us: float
    on_hardware_us: float
    energy_uj: float
    compilation_us: float


#: The cost-model functions (their signatures: _signatures.py, from mock_nnapi.h).
_FUNCTIONS = (
    "MockNnapi_createCostModel",
    "MockNnapi_freeCostModel",
    "MockNnapi_costOfOperation",
    "MockNnapi_costOfOperationOnChip",
    "MockNnapi_costOfTransfer",
    "MockNnapi_createRecordedExecution",
    "MockNnapi_freeRecordedExecution",
    "MockNnapi_retimeExecution",
    "MockNnapi_getCostClasses",
    "MockNnapi_getLastError",
)


@functools.cache
def _library_with_equations() -> ctypes.CDLL:
    """The mock library: the one in use when it is the mock, else the one built with this
    package (loaded privately, for its equations only)."""
    library = _library.load()
    if not _library.is_mock(library):
        library = ctypes.CDLL(str(_library.mock_library_path()))
        _library.declare(library)
    for name in _FUNCTIONS:
        if getattr(library, name, None) is None:
            raise CostModelError(f"this mock_nnapi build has no {name}; rebuild the library")
    return library


#: A failed check's location and condition, before the reason (check.h's message format).
_CHECK_PREFIX = re.compile(r"^.*?: check failed: .*?: ")


def _raise_last_error(library: ctypes.CDLL, what: str) -> None:
    message = (library.MockNnapi_getLastError() or b"").decode()
    raise CostModelError(f"{what}: {_CHECK_PREFIX.sub('', message) or 'refused'}")


@functools.cache
def _classes() -> dict[str, Any]:
    return dict(json.loads(_library_with_equations().MockNnapi_getCostClasses()))


def operation_classes() -> tuple[str, ...]:
    """The cost model's operation classes (the keys of a profile's efficiency tables)."""
    return tuple(_classes()["operation_classes"])


def data_classes() -> tuple[str, ...]:
    """The cost model's data classes (the keys of a profile's throughput tables)."""
    return tuple(_classes()["data_classes"])


def operation_class_of(operation: str) -> str:
    """The operation class of an NNAPI operation by name (``"CONV_2D"`` -> ``"convolution"``)."""
    try:
        return str(_classes()["operations"][operation])
    except KeyError:
        raise CostModelError(f"unknown NNAPI operation {operation!r}") from None


class CostModel:
    """The cost model of one profile: a built-in name, a path to a profile file, or a profile
    document (a mapping, validated as the mock validates profiles)."""

    def __init__(self, profile: str | os.PathLike[str] | Mapping[str, Any]) -> None:
        self._library = _library_with_equations()
        self._handle = ctypes.c_void_p()
        if isinstance(profile, Mapping):
            text = json.dumps(profile)
            self.name = str(profile.get("name", "profile document"))
        else:
            text = os.fspath(profile)
            self.name = text
        code = self._library.MockNnapi_createCostModel(text.encode(), ctypes.byref(self._handle))
        if code != 0:
            _raise_last_error(self._library, f"cannot read the profile {self.name!r}")

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle:
            self._library.MockNnapi_freeCostModel(handle)
            self._handle = ctypes.c_void_p()

    def operation(
        self,
        device: str,
        operation_class: str,
        data_class: str,
        flops: float,
        bytes: float,
        on_chip_bytes: float = 0.0,
    ) -> OperationCost:
        """The modelled cost of ``flops`` operations on ``bytes`` of tensors of one operation
        of ``operation_class`` in ``data_class`` on the profile's ``device``, ``on_chip_bytes``
        of them in the device's on-chip memory (a trace event's ``on_chip_bytes``; through DRAM
        on a device without one). ``memory_us`` is then the DRAM part of the traffic."""
        out = _OperationCost()
        code = self._library.MockNnapi_costOfOperationOnChip(
            self._handle,
            device.encode(),
            operation_class.encode(),
            data_class.encode(),
            float(flops),
            float(bytes),
            float(on_chip_bytes),
            ctypes.byref(out),
        )
        if code != 0:
            _raise_last_error(self._library, f"profile {self.name!r}")
        return OperationCost(
            out.compute_us,
            out.memory_us,
            out.compute_efficiency,
            out.memory_efficiency,
            out.busy_us,
            out.overhead_us,
            out.energy_uj,
            bool(out.compute_bound),
        )

    def transfer_us(self, device: str, nbytes: float) -> float:
        """The modelled time of copying ``nbytes`` between host memory and ``device``'s memory
        (0 for a CPU device, which shares host memory), as the mock's traces time it."""
        out = ctypes.c_double()
        code = self._library.MockNnapi_costOfTransfer(
            self._handle, device.encode(), float(nbytes), ctypes.byref(out)
        )
        if code != 0:
            _raise_last_error(self._library, f"profile {self.name!r}")
        return float(out.value)

    def efficiency(self, device: str, side: str, operation_class: str, data_class: str) -> float:
        """The fraction of peak compute (``side="compute"``) or of memory bandwidth
        (``side="memory"``) ``device`` reaches for one operation class and data class, with the
        precedence of docs/device-profiles.md."""
        if side not in ("compute", "memory"):
            raise ValueError(f"side must be 'compute' or 'memory', got {side!r}")
        cost = self.operation(device, operation_class, data_class, 1.0, 1.0)
        return cost.compute_efficiency if side == "compute" else cost.memory_efficiency

    def _retime(self, trace: RecordedExecution | Mapping[str, Any] | str, with_trace: bool) -> Any:
        recorded = trace if isinstance(trace, RecordedExecution) else RecordedExecution(trace)
        times = _ModelledTimes()
        retimed = ctypes.c_char_p()
        code = self._library.MockNnapi_retimeExecution(
            self._handle,
            recorded._handle,
            ctypes.byref(times),
            ctypes.byref(retimed) if with_trace else None,
        )
        if code != 0:
            _raise_last_error(self._library, f"cannot re-time the trace on {self.name!r}")
        if with_trace:
            return json.loads(retimed.value or b"null")
        return ModelledTimes(
            times.total_us,
            times.in_driver_us,
            times.on_hardware_us,
            times.energy_uj,
            times.compilation_us,
        )

    def retime(self, trace: RecordedExecution | Mapping[str, Any] | str) -> ModelledTimes:
        """The totals of a recorded execution (a :class:`RecordedExecution`, or a trace of
        :func:`mock_nnapi.control.last_execution_trace` or its JSON text) on this profile's
        devices, found by the trace's device names. With the profile it was recorded on, these
        are the trace's own totals. Re-timing one trace for many profiles: read it once as a
        :class:`RecordedExecution`."""
        times: ModelledTimes = self._retime(trace, with_trace=False)
        return times

    def retimed_trace(self, trace: RecordedExecution | Mapping[str, Any] | str) -> dict[str, Any]:
        """The whole trace re-timed (every event's modelled start and duration on this profile),
        with ``retimed_from`` naming the profile it was recorded on."""
        return dict(self._retime(trace, with_trace=True))


class RecordedExecution:
    """A trace (:func:`mock_nnapi.control.last_execution_trace`, or its JSON text) read once
    for re-timing on any number of profiles (:meth:`CostModel.retime`)."""

    def __init__(self, trace: Mapping[str, Any] | str) -> None:
        self._library = _library_with_equations()
        self._handle = ctypes.c_void_p()
        text = trace if isinstance(trace, str) else json.dumps(trace)
        code = self._library.MockNnapi_createRecordedExecution(
            text.encode(), ctypes.byref(self._handle)
        )
        if code != 0:
            _raise_last_error(self._library, "cannot read the trace")

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle:
            self._library.MockNnapi_freeRecordedExecution(handle)
            self._handle = ctypes.c_void_p()
