# SPDX-License-Identifier: Apache-2.0
"""mock_nnapi: Python access to the mock NNAPI library (and to a real one through the same API).

- :mod:`mock_nnapi.api`: build models, compile and execute with numpy arrays.
- :mod:`mock_nnapi.control`: the mock-only controls (counters, fault injection, last error).
- :mod:`mock_nnapi.device_profiles`: reading device profile files (no library needed).
- :mod:`mock_nnapi.constants`: the NNAPI enums with their ABI values.
"""

from __future__ import annotations

from ._library import LIBRARY_ENV, library_path, mock_library_path
from .api import (
    Compilation,
    Device,
    Execution,
    Model,
    NnapiError,
    devices,
    lib,
    supported_operations,
)
from .constants import (
    DeviceTypeCode,
    FuseCode,
    OperandCode,
    OperationCode,
    PaddingCode,
    PreferenceCode,
    ResultCode,
)
from .control import (
    FaultInjection,
    clear_faults,
    counter,
    counters,
    inject_fault,
    operation_count,
    reset_counters,
)

__all__ = [
    "LIBRARY_ENV",
    "Compilation",
    "Device",
    "DeviceTypeCode",
    "Execution",
    "FaultInjection",
    "FuseCode",
    "Model",
    "NnapiError",
    "OperandCode",
    "OperationCode",
    "PaddingCode",
    "PreferenceCode",
    "ResultCode",
    "clear_faults",
    "counter",
    "counters",
    "devices",
    "inject_fault",
    "lib",
    "library_path",
    "mock_library_path",
    "operation_count",
    "reset_counters",
    "supported_operations",
]
