# SPDX-License-Identifier: Apache-2.0
"""The mock-only control API (``MockNnapi_*``): counters, fault injection, held compilations,
last error, device profiles, device faults, and the MODELLED timing traces of the cost model.

These functions exist only in mock_nnapi; calling them with a real ``libneuralnetworks.so``
loaded raises :class:`MockOnlyError`. Modelled times come from the cost model
(docs/cost-model.md): the mock computes on the host, so they say how long the selected phone
profile would take according to the model. They are never measurements.
"""

from __future__ import annotations

import contextlib
import ctypes
import enum
import functools
import json
import os
import pathlib
from collections.abc import Iterable, Iterator
from typing import Any

from . import _library
from .api import NnapiError, last_error
from .constants import BYTE_SIZE_OF_CACHE_TOKEN, OperationCode, ResultCode

COUNTER_NAMES = (
    "models_finished",
    "compilations_finished",
    "compilation_cache_hits",
    "compilation_cache_misses",
    "compilation_cache_discarded",
    "executions_started",
    "executions_completed",
    "executions_failed",
    "operations_executed",
    "temporary_bytes_peak",
    "derived_constants_built",
    "pool_jobs",
    "int8_gemm_products",
    "driver_failures",
    "live_models",
    "live_compilations",
    "live_executions",
    "live_events",
    "live_memories",
    "live_memory_descs",
    "live_bursts",
    "live_objects",
)


class MockOnlyError(RuntimeError):
    """A mock-only control was used while a real NNAPI library is loaded."""


def _mock() -> ctypes.CDLL:
    library = _library.load()
    if not _library.is_mock(library):
        raise MockOnlyError(
            f"{_library.library_path()} is not mock_nnapi; the MockNnapi_* controls are mock-only"
        )
    return library


def version() -> str:
    return _mock().MockNnapi_getVersion().decode()


def blas_info() -> dict[str, Any]:
    """The BLAS the mock's GEMM-shaped kernels call: ``config`` (OpenBLAS's build and kernel
    set), ``core`` (the kernel set OpenBLAS chose when it loaded, e.g. ``"SkylakeX"``),
    ``core_source`` (the ``OPENBLAS_CORETYPE`` it read then, or its own detection from the CPU)
    and ``threads`` (the thread count the kernels use)."""
    return json.loads(_mock().MockNnapi_getBlasInfo().decode())


def counter(name: str) -> int:
    """One counter of the mock (see :data:`COUNTER_NAMES`)."""
    value = ctypes.c_uint64()
    code = _mock().MockNnapi_getCounter(name.encode(), ctypes.byref(value))
    if code != ResultCode.NO_ERROR:
        raise NnapiError("MockNnapi_getCounter", code, last_error())
    return int(value.value)


def counters() -> dict[str, int]:
    """Every counter of the mock by name."""
    return {name: counter(name) for name in COUNTER_NAMES}


def live_objects() -> dict[str, int]:
    """NNAPI objects the mock has handed out and not yet freed, by kind (``models``,
    ``compilations``, ``executions``, ``events``, ``memories``, ``memory_descs``, ``bursts``) and
    in ``total``: zero everywhere once a client has freed everything it created."""
    kinds = [name for name in COUNTER_NAMES if name.startswith("live_") and name != "live_objects"]
    result = {name.removeprefix("live_"): counter(name) for name in kinds}
    result["total"] = counter("live_objects")
    return result


def compilation_cache_counters() -> dict[str, int]:
    """Compilation-cache hits and misses (ANeuralNetworksCompilation_setCaching) since the last
    reset, and the misses that found a file under the compilation's name and did not trust it
    (``discarded``: corrupted, truncated, for another model, a link...; the first one of a
    process is also said on stderr). A compilation whose cache directory does not exist counts
    as neither."""
    return {
        "hits": counter("compilation_cache_hits"),
        "misses": counter("compilation_cache_misses"),
        "discarded": counter("compilation_cache_discarded"),
    }


def compilation_cache_file(cache_dir: str | os.PathLike, token: bytes) -> pathlib.Path:
    """The file a compilation with caching token ``token`` uses in ``cache_dir``."""
    if len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
        raise ValueError(f"a caching token has {BYTE_SIZE_OF_CACHE_TOKEN} bytes")
    return pathlib.Path(cache_dir) / f"{token.hex()}.mock_nnapi_cache"


def operation_count(operation: int | str) -> int:
    """How many times operations of this type were executed since the last reset."""
    code = OperationCode[operation] if isinstance(operation, str) else int(operation)
    return int(_mock().MockNnapi_getOperationExecutedCount(code))


def reset_counters() -> None:
    _mock().MockNnapi_resetCounters()


def inject_fault(function: str, code: int, count: int = 1) -> None:
    """Make the next ``count`` calls of NNAPI ``function`` return ``code`` (count < 0: always)."""
    result = _mock().MockNnapi_injectFault(function.encode(), int(code), int(count))
    if result != ResultCode.NO_ERROR:
        raise NnapiError("MockNnapi_injectFault", result, last_error())


def clear_faults() -> None:
    _mock().MockNnapi_clearFaults()


def injected_fault_count() -> int:
    return int(_mock().MockNnapi_getInjectedFaultCount())


@contextlib.contextmanager
def FaultInjection(function: str, code: int, count: int = 1) -> Iterator[None]:  # noqa: N802
    """Context manager: inject a fault, clear all faults on exit."""
    inject_fault(function, code, count)
    try:
        yield
    finally:
        clear_faults()


def hold_compilations(hold: bool) -> None:
    """While held, every ``ANeuralNetworksCompilation_finish`` waits before compiling until
    released (``hold_compilations(False)`` or :func:`clear_faults`): a compilation stays in
    progress for as long as a test needs, without timing."""
    _mock().MockNnapi_holdCompilations(1 if hold else 0)


def held_compilations() -> int:
    """How many ``ANeuralNetworksCompilation_finish`` calls are waiting on the hold now."""
    return int(_mock().MockNnapi_getHeldCompilationCount())


@contextlib.contextmanager
def CompilationsHeld() -> Iterator[None]:  # noqa: N802
    """Context manager: hold compilations inside, release them on exit."""
    hold_compilations(True)
    try:
        yield
    finally:
        hold_compilations(False)


# ---- Device profiles, device faults, modelled timing ------------------------------------------

#: The profile, fault and timing functions (their signatures: _signatures.py, from the header).
_PROFILE_FUNCTIONS = (
    "MockNnapi_setProfile",
    "MockNnapi_getProfileName",
    "MockNnapi_getProfileOrigin",
    "MockNnapi_getProfileJson",
    "MockNnapi_getAvailableProfiles",
    "MockNnapi_getDevicePerformance",
    "MockNnapi_injectDeviceFault",
    "MockNnapi_injectOperationFault",
    "MockNnapi_getLastTrace",
    "MockNnapi_getTraces",
    "MockNnapi_clearTraces",
    "MockNnapi_setTraceCapacity",
    "MockNnapi_getModelledCompilationTime",
    "MockNnapi_setCostOnlyExecution",
    "MockNnapi_getCostOnlyExecution",
)


@functools.cache
def _profile_api(library: ctypes.CDLL) -> ctypes.CDLL:
    for name in _PROFILE_FUNCTIONS:
        if getattr(library, name, None) is None:
            raise MockOnlyError(f"this mock_nnapi build has no {name}; rebuild the library")
    return library


def _profiles() -> ctypes.CDLL:
    return _profile_api(_mock())


def set_profile(name_or_path: str | os.PathLike[str] | None) -> None:
    """Make the mock stand in for another phone: a built-in profile name or a .json path.

    ``None`` selects the default ``"reference"`` profile. Compilations made before the switch
    keep running on the devices they were compiled for. A bad profile raises BAD_DATA with a
    message naming the file and the field.
    """
    argument = None if name_or_path is None else os.fsencode(name_or_path)
    code = _profiles().MockNnapi_setProfile(argument)
    if code != ResultCode.NO_ERROR:
        raise NnapiError("MockNnapi_setProfile", code, last_error())


def profile_name() -> str:
    """Name of the active device profile."""
    return (_profiles().MockNnapi_getProfileName() or b"").decode()


def profile_selection() -> str:
    """What :func:`set_profile` takes to select the active profile again: the path of its file,
    or its name when it is built in (a profile read from a file may share no name with any
    profile :func:`set_profile` finds by name)."""
    from .device_profiles import ProfileNotFoundError, profile_path

    origin = (_profiles().MockNnapi_getProfileOrigin() or b"").decode()
    name = profile_name()
    if origin in ("", "built-in"):
        return name
    try:
        if os.path.samefile(profile_path(name), origin):  # the file the name finds
            return name
    except (OSError, ProfileNotFoundError):
        pass
    return origin


def profile() -> dict[str, Any]:
    """The active device profile (its JSON document, docs/device-profiles.md)."""
    return json.loads(_profiles().MockNnapi_getProfileJson() or b"{}")


def device_performance() -> dict[str, dict[str, dict[str, float]]]:
    """Android's relative performance figures of each device of the active profile, per data
    class: ``{device: {data_class: {"exec_time": x, "power_usage": y}}}`` (lower is better, the
    runtime CPU 1.0). They are DERIVED by the mock from each device's cost-model parameters
    (docs/device-profiles.md, "Performance figures") and pick the device of each operation."""
    return dict(json.loads(_profiles().MockNnapi_getDevicePerformance() or b"{}"))


def available_profiles() -> list[str]:
    """Names :func:`set_profile` finds: built-in profiles and ``$MOCK_NNAPI_PROFILE_DIR``."""
    return list(json.loads(_profiles().MockNnapi_getAvailableProfiles() or b"[]"))


@contextlib.contextmanager
def Profile(name_or_path: str | os.PathLike[str]) -> Iterator[None]:  # noqa: N802
    """Context manager: select a profile for the block, then the one active before (also when
    the block raises)."""
    previous = profile_selection()
    set_profile(name_or_path)
    try:
        yield
    finally:
        set_profile(previous)


class DeviceFault(enum.IntEnum):
    """Fault kinds of :func:`inject_device_fault` (``MOCK_NNAPI_DEVICE_FAULT_*``)."""

    HIDDEN = 1  #: the device is not enumerated
    UNAVAILABLE = 2  #: compilations needing it and Device_wait fail with UNAVAILABLE_DEVICE
    FEATURE_LEVEL = 3  #: the device reports (and supports) feature level ``value``
    EXECUTION_TIMEOUT = 4  #: executions using it fail with ``value`` (MISSED_DEADLINE_*)
    THROTTLE = 5  #: the device's modelled compute runs at ``value`` percent of its speed


def inject_device_fault(device: str, fault: int, value: int = 0, count: int = -1) -> None:
    """Inject a device fault; :func:`clear_faults` restores every device.

    ``count`` is the number of executions an EXECUTION_TIMEOUT affects (< 0: all).
    """
    result = _profiles().MockNnapi_injectDeviceFault(
        device.encode(), int(fault), int(value), int(count)
    )
    if result != ResultCode.NO_ERROR:
        raise NnapiError("MockNnapi_injectDeviceFault", result, last_error())


def inject_operation_fault(operation: int | str, offset: float, count: int = -1) -> None:
    """A numeric fault: the next ``count`` executed operations of this type (count < 0: all)
    get ``offset`` added to every element of their float32 outputs; :func:`clear_faults`
    removes it."""
    code = OperationCode[operation] if isinstance(operation, str) else int(operation)
    result = _profiles().MockNnapi_injectOperationFault(code, float(offset), int(count))
    if result != ResultCode.NO_ERROR:
        raise NnapiError("MockNnapi_injectOperationFault", result, last_error())


@contextlib.contextmanager
def OperationFaultInjection(  # noqa: N802
    operation: int | str, offset: float, count: int = -1
) -> Iterator[None]:
    """Context manager: inject a numeric fault, clear all faults on exit."""
    inject_operation_fault(operation, offset, count)
    try:
        yield
    finally:
        clear_faults()


@contextlib.contextmanager
def DeviceFaultInjection(  # noqa: N802
    device: str, fault: int, value: int = 0, count: int = -1
) -> Iterator[None]:
    """Context manager: inject a device fault, clear all faults on exit."""
    inject_device_fault(device, fault, value, count)
    try:
        yield
    finally:
        clear_faults()


def modelled_compilation_time_ns(compilation: Any) -> int:
    """MODELLED compilation time (ns) of a finished compilation (an ``api.Compilation`` or a
    raw ``ANeuralNetworksCompilation*``)."""
    handle = getattr(compilation, "handle", compilation)
    value = ctypes.c_uint64()
    code = _profiles().MockNnapi_getModelledCompilationTime(handle, ctypes.byref(value))
    if code != ResultCode.NO_ERROR:
        raise NnapiError("MockNnapi_getModelledCompilationTime", code, last_error())
    return int(value.value)


def last_execution_trace() -> dict[str, Any] | None:
    """The MODELLED trace of the newest execution, or None.

    Keys: ``id``, ``modelled`` (always True), ``profile``, ``result``, ``preference``,
    ``compilation`` (devices, modelled_us, cache_hit), ``modelled_total_us``,
    ``modelled_in_driver_us``, ``modelled_on_hardware_us``, ``modelled_energy_uj``, ``flops``,
    ``bytes``, ``transfer_bytes``, ``lanes`` and ``events`` (each with ``kind`` = runtime,
    driver, transfer or operation, ``name``, ``device``, ``start_us``, ``duration_us``,
    ``end_us`` and, for
    operations, ``flops``, ``bytes``, ``compute_us``, ``memory_us``, ``bound``, ...).
    """
    return json.loads(_profiles().MockNnapi_getLastTrace() or b"null")


def execution_traces() -> list[dict[str, Any]]:
    """Every kept execution trace, oldest first (see :func:`last_execution_trace`)."""
    return list(json.loads(_profiles().MockNnapi_getTraces() or b"[]"))


def clear_traces() -> None:
    _profiles().MockNnapi_clearTraces()


def set_trace_capacity(capacity: int) -> None:
    """How many execution traces the mock keeps (default 16; 0 turns tracing off)."""
    _profiles().MockNnapi_setTraceCapacity(int(capacity))


def set_cost_only_execution(enabled: bool) -> None:
    """Cost-only executions (process-wide, for executions started afterwards): operations are
    validated and shaped and the MODELLED trace is produced, but kernels are skipped, outputs
    are left unwritten and inputs are never read. For costing full-size models; never use the
    outputs."""
    _profiles().MockNnapi_setCostOnlyExecution(1 if enabled else 0)


def cost_only_execution() -> bool:
    """Whether executions are cost-only (see :func:`set_cost_only_execution`)."""
    return bool(_profiles().MockNnapi_getCostOnlyExecution())


@contextlib.contextmanager
def CostOnlyExecution(enabled: bool = True) -> Iterator[None]:  # noqa: N802
    """Context manager: cost-only executions inside, the previous setting restored on exit."""
    previous = cost_only_execution()
    set_cost_only_execution(enabled)
    try:
        yield
    finally:
        set_cost_only_execution(previous)


def trace_to_chrome_json(traces: dict[str, Any] | Iterable[dict[str, Any]] | None = None) -> str:
    """Chrome trace-event JSON (opens in Perfetto / chrome://tracing) for execution traces.

    ``traces``: one trace, a list of them, or None for every kept trace. Executions are laid
    end to end on one modelled clock; each device is a thread, and each execution also
    appears as one span on the runtime thread. Every event carries ph, ts, dur, name, pid and
    tid; times are MODELLED microseconds.
    """
    if traces is None:
        traces = execution_traces()
    elif isinstance(traces, dict):
        traces = [traces]
    pid = 1
    lanes: dict[str, int] = {}
    events: list[dict[str, Any]] = [
        _metadata("process_name", pid, 0, "mock_nnapi (MODELLED times, not measurements)")
    ]

    def lane_id(name: str) -> int:
        if name not in lanes:
            lanes[name] = len(lanes)
            events.append(_metadata("thread_name", pid, lanes[name], name))
        return lanes[name]

    clock = 0.0
    profiles = set()
    for trace in traces:
        profiles.add(trace["profile"])
        runtime = lane_id(trace["lanes"][0])
        events.append(
            {
                "ph": "X",
                "name": f"execution {trace['id']} ({trace['result']})",
                "cat": "execution",
                "pid": pid,
                "tid": runtime,
                "ts": clock,
                "dur": trace["modelled_total_us"],
                "args": {
                    key: trace[key]
                    for key in (
                        "profile",
                        "preference",
                        "result",
                        "modelled_total_us",
                        "modelled_in_driver_us",
                        "modelled_on_hardware_us",
                        "modelled_energy_uj",
                        "flops",
                        "bytes",
                        "transfer_bytes",
                    )
                },
            }
        )
        for event in trace["events"]:
            args = {
                key: value
                for key, value in event.items()
                if key not in ("name", "kind", "start_us", "duration_us", "end_us", "lane")
            }
            events.append(
                {
                    "ph": "X",
                    "name": event["name"],
                    "cat": event["kind"],
                    "pid": pid,
                    "tid": lane_id(event["device"]),
                    "ts": clock + event["start_us"],
                    "dur": event["duration_us"],
                    "args": args,
                }
            )
        clock += trace["modelled_total_us"]
    document = {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "source": "mock_nnapi cost model (docs/cost-model.md)",
            "modelled": True,
            "profiles": sorted(profiles),
        },
    }
    return json.dumps(document)


def write_chrome_trace(
    path: str | os.PathLike[str],
    traces: dict[str, Any] | Iterable[dict[str, Any]] | None = None,
) -> None:
    """Write :func:`trace_to_chrome_json` to ``path`` (open it in https://ui.perfetto.dev)."""
    with open(path, "w", encoding="utf-8") as file:
        file.write(trace_to_chrome_json(traces))


def _metadata(kind: str, pid: int, tid: int, name: str) -> dict[str, Any]:
    return {
        "ph": "M",
        "name": kind,
        "pid": pid,
        "tid": tid,
        "ts": 0,
        "dur": 0,
        "args": {"name": name},
    }
