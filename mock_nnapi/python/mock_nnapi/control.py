"""The mock-only control API (``MockNnapi_*``): counters, fault injection, last error.

These functions exist only in mock_nnapi; calling them with a real ``libneuralnetworks.so``
loaded raises :class:`MockOnlyError`.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator

from . import _library
from .api import NnapiError, last_error
from .constants import OperationCode, ResultCode

COUNTER_NAMES = (
    "models_finished",
    "compilations_finished",
    "compilation_cache_hits",
    "compilation_cache_misses",
    "executions_started",
    "executions_completed",
    "executions_failed",
    "operations_executed",
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
