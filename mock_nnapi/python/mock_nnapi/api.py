# SPDX-License-Identifier: Apache-2.0
"""A small Pythonic layer over the NNAPI C API, for tests and tools.

    model = Model()
    a = model.add_tensor(OperandCode.TENSOR_FLOAT32, [2, 3])
    b = model.add_tensor(OperandCode.TENSOR_FLOAT32, [3])
    act = model.add_scalar(OperandCode.INT32, FuseCode.NONE)
    out = model.add_tensor(OperandCode.TENSOR_FLOAT32, [2, 3])
    model.add_operation(OperationCode.ADD, [a, b, act], [out])
    model.identify_inputs_and_outputs([a, b], [out])
    model.finish()
    (result,) = Compilation(model).finish().execute([x, y])

Every failing call raises :class:`NnapiError` carrying the result code and, on the mock, the
mock's explanation of the failure.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence

import numpy as np

from . import _library
from .constants import (
    BYTE_SIZE_OF_CACHE_TOKEN,
    OperandCode,
    OperationCode,
    PreferenceCode,
    ResultCode,
)

#: numpy dtype of each tensor operand type.
NUMPY_DTYPES: dict[OperandCode, np.dtype] = {
    OperandCode.TENSOR_FLOAT32: np.dtype(np.float32),
    OperandCode.TENSOR_FLOAT16: np.dtype(np.float16),
    OperandCode.TENSOR_INT32: np.dtype(np.int32),
    OperandCode.TENSOR_QUANT8_ASYMM: np.dtype(np.uint8),
    OperandCode.TENSOR_QUANT8_ASYMM_SIGNED: np.dtype(np.int8),
    OperandCode.TENSOR_QUANT8_SYMM: np.dtype(np.int8),
    OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL: np.dtype(np.int8),
    OperandCode.TENSOR_QUANT16_ASYMM: np.dtype(np.uint16),
    OperandCode.TENSOR_QUANT16_SYMM: np.dtype(np.int16),
    OperandCode.TENSOR_BOOL8: np.dtype(np.bool_),
    OperandCode.FLOAT32: np.dtype(np.float32),
    OperandCode.FLOAT16: np.dtype(np.float16),
    OperandCode.INT32: np.dtype(np.int32),
    OperandCode.UINT32: np.dtype(np.uint32),
    OperandCode.BOOL: np.dtype(np.bool_),
}


class NnapiError(RuntimeError):
    """An NNAPI call returned an error code."""

    def __init__(self, function: str, code: int, detail: str = "") -> None:
        self.function = function
        self.code = code
        try:
            self.code_name = ResultCode(code).name
        except ValueError:
            self.code_name = f"UNKNOWN({code})"
        message = f"{function} returned ANEURALNETWORKS_{self.code_name} ({code})"
        if detail:
            message += f": {detail}"
        super().__init__(message)


def lib() -> ctypes.CDLL:
    """The loaded NNAPI library (the mock unless ``$TVM_NNAPI_LIBRARY`` says otherwise)."""
    return _library.load()


def last_error() -> str:
    """The mock's explanation of the last failed call on this thread ("" on a real NNAPI)."""
    library = lib()
    if not _library.is_mock(library):
        return ""
    return (library.MockNnapi_getLastError() or b"").decode()


def check(function: str, code: int) -> None:
    """Raise :class:`NnapiError` unless ``code`` is NO_ERROR."""
    if code != ResultCode.NO_ERROR:
        raise NnapiError(function, code, last_error())


def call(function: str, *args: object) -> None:
    """Call an NNAPI function by name and raise on failure."""
    check(function, getattr(lib(), function)(*args))


def operand_type(
    code: int, dimensions: Sequence[int] | None = None, scale: float = 0.0, zero_point: int = 0
) -> _library.OperandType:
    """Build an ``ANeuralNetworksOperandType`` (keeps its dimension array alive)."""
    dims = list(dimensions or [])
    array = (ctypes.c_uint32 * len(dims))(*dims) if dims else None
    value = _library.OperandType(
        int(code),
        len(dims),
        ctypes.cast(array, ctypes.POINTER(ctypes.c_uint32)) if array else None,
        scale,
        zero_point,
    )
    value._keepalive = array
    return value


def _u32_array(values: Sequence[int]) -> ctypes.Array:
    return (ctypes.c_uint32 * max(len(values), 1))(*values)


class ModelRecord:
    """An NNAPI model as data: operands (type, dimensions, scale, zero point), constant values,
    operations, inputs and outputs, in the order NNAPI numbers them, with helpers that return
    operand indices. :class:`Model` is the same on the NNAPI library; :meth:`build` replays a
    record there."""

    def __init__(self) -> None:
        self.operand_types: list[tuple[OperandCode, tuple[int, ...], float, int]] = []
        self.values: dict[int, np.ndarray] = {}
        self.channel_quant: dict[int, tuple[int, np.ndarray]] = {}
        self.operations: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def add_operand(
        self,
        code: int,
        dimensions: Sequence[int] | None = None,
        scale: float = 0.0,
        zero_point: int = 0,
    ) -> int:
        self.operand_types.append(
            (OperandCode(code), tuple(dimensions or ()), float(scale), int(zero_point))
        )
        return len(self.operand_types) - 1

    add_tensor = add_operand

    def _array(self, index: int, value: object) -> np.ndarray:
        """``value`` as a contiguous array of operand ``index``'s element type."""
        code = self.operand_types[index][0]
        return np.ascontiguousarray(np.asarray(value, dtype=NUMPY_DTYPES[code]))

    def set_value(self, index: int, value: object) -> None:
        self.values[index] = self._array(index, value)

    def set_channel_quant(
        self, index: int, channel_dim: int, scales: Sequence[float] | np.ndarray
    ) -> None:
        """Per-channel scales of a ``TENSOR_QUANT8_SYMM_PER_CHANNEL`` operand along
        ``channel_dim``."""
        array = np.ascontiguousarray(np.asarray(scales, dtype=np.float32).reshape(-1))
        self.channel_quant[index] = (int(channel_dim), array)

    def add_scalar(self, code: int, value: object) -> int:
        index = self.add_operand(code)
        self.set_value(index, value)
        return index

    def add_constant(
        self, code: int, value: np.ndarray, scale: float = 0.0, zero_point: int = 0
    ) -> int:
        array = np.asarray(value)
        index = self.add_operand(code, array.shape, scale, zero_point)
        self.set_value(index, array)
        return index

    def add_operation(self, operation: int, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        self.operations.append((int(operation), tuple(inputs), tuple(outputs)))

    def identify_inputs_and_outputs(self, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        self.inputs = list(inputs)
        self.outputs = list(outputs)

    def build(self) -> Model:
        """The recorded model built and finished on the loaded NNAPI library."""
        model = Model()
        for code, dimensions, scale, zero_point in self.operand_types:
            model.add_operand(code, dimensions or None, scale, zero_point)
        for index, (channel_dim, scales) in self.channel_quant.items():
            model.set_channel_quant(index, channel_dim, scales)
        for index, value in self.values.items():
            model.set_value(index, value)
        for operation, inputs, outputs in self.operations:
            model.add_operation(operation, inputs, outputs)
        model.identify_inputs_and_outputs(self.inputs, self.outputs)
        return model.finish()


class Model(ModelRecord):
    """``ANeuralNetworksModel``: each call goes to the NNAPI library, then into the record (the
    record's values keep the buffers NNAPI references alive)."""

    def __init__(self) -> None:
        super().__init__()
        self.handle = ctypes.c_void_p()
        call("ANeuralNetworksModel_create", ctypes.byref(self.handle))

    def __del__(self) -> None:
        if getattr(self, "handle", None) and self.handle.value:
            lib().ANeuralNetworksModel_free(self.handle)
            self.handle = ctypes.c_void_p()

    def add_operand(
        self,
        code: int,
        dimensions: Sequence[int] | None = None,
        scale: float = 0.0,
        zero_point: int = 0,
    ) -> int:
        call(
            "ANeuralNetworksModel_addOperand",
            self.handle,
            ctypes.byref(operand_type(code, dimensions, scale, zero_point)),
        )
        return super().add_operand(code, dimensions, scale, zero_point)

    add_tensor = add_operand

    def set_value(self, index: int, value: object) -> None:
        array = self._array(index, value)
        call(
            "ANeuralNetworksModel_setOperandValue",
            self.handle,
            index,
            array.ctypes.data_as(ctypes.c_void_p),
            array.nbytes,
        )
        self.values[index] = array  # after the call: a refused value leaves the one NNAPI has

    def set_channel_quant(
        self, index: int, channel_dim: int, scales: Sequence[float] | np.ndarray
    ) -> None:
        array = np.ascontiguousarray(np.asarray(scales, dtype=np.float32).reshape(-1))
        params = _library.SymmPerChannelQuantParams(
            channel_dim, len(array), array.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        )
        call(
            "ANeuralNetworksModel_setOperandSymmPerChannelQuantParams",
            self.handle,
            index,
            ctypes.byref(params),
        )
        super().set_channel_quant(index, channel_dim, array)

    def add_operation(self, operation: int, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        call(
            "ANeuralNetworksModel_addOperation",
            self.handle,
            int(operation),
            len(inputs),
            _u32_array(inputs),
            len(outputs),
            _u32_array(outputs),
        )
        super().add_operation(operation, inputs, outputs)

    def identify_inputs_and_outputs(self, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        call(
            "ANeuralNetworksModel_identifyInputsAndOutputs",
            self.handle,
            len(inputs),
            _u32_array(inputs),
            len(outputs),
            _u32_array(outputs),
        )
        super().identify_inputs_and_outputs(inputs, outputs)

    def relax_computation_float32_to_float16(self, allow: bool = True) -> None:
        call("ANeuralNetworksModel_relaxComputationFloat32toFloat16", self.handle, allow)

    def finish(self) -> Model:
        call("ANeuralNetworksModel_finish", self.handle)
        return self


class Device:
    """An ``ANeuralNetworksDevice`` and its properties."""

    def __init__(self, handle: ctypes.c_void_p) -> None:
        self.handle = handle
        name = ctypes.c_char_p()
        call("ANeuralNetworksDevice_getName", handle, ctypes.byref(name))
        version = ctypes.c_char_p()
        call("ANeuralNetworksDevice_getVersion", handle, ctypes.byref(version))
        device_type = ctypes.c_int32()
        call("ANeuralNetworksDevice_getType", handle, ctypes.byref(device_type))
        level = ctypes.c_int64()
        call("ANeuralNetworksDevice_getFeatureLevel", handle, ctypes.byref(level))
        self.name = (name.value or b"").decode()
        self.version = (version.value or b"").decode()
        self.type = int(device_type.value)
        self.feature_level = int(level.value)

    def __repr__(self) -> str:
        return f"Device({self.name!r}, type={self.type}, feature_level={self.feature_level})"


def devices() -> list[Device]:
    """The NNAPI devices, in enumeration order."""
    count = ctypes.c_uint32()
    call("ANeuralNetworks_getDeviceCount", ctypes.byref(count))
    result = []
    for index in range(count.value):
        handle = ctypes.c_void_p()
        call("ANeuralNetworks_getDevice", index, ctypes.byref(handle))
        result.append(Device(handle))
    return result


def _device_array(selected: Sequence[Device]) -> ctypes.Array:
    return (ctypes.c_void_p * len(selected))(*[d.handle.value for d in selected])


def supported_operations(model: Model, selected: Sequence[Device]) -> list[bool]:
    """``getSupportedOperationsForDevices`` for a finished model."""
    count = len(model.operations)
    flags = (ctypes.c_bool * max(count, 1))()
    call(
        "ANeuralNetworksModel_getSupportedOperationsForDevices",
        model.handle,
        _device_array(selected),
        len(selected),
        flags,
    )
    return [bool(flags[i]) for i in range(count)]


class Compilation:
    """``ANeuralNetworksCompilation`` (all devices, or an explicit device list)."""

    def __init__(self, model: Model, on_devices: Sequence[Device] | None = None) -> None:
        self.model = model
        self.handle = ctypes.c_void_p()
        if on_devices:
            call(
                "ANeuralNetworksCompilation_createForDevices",
                model.handle,
                _device_array(on_devices),
                len(on_devices),
                ctypes.byref(self.handle),
            )
        else:
            call("ANeuralNetworksCompilation_create", model.handle, ctypes.byref(self.handle))

    def __del__(self) -> None:
        if getattr(self, "handle", None) and self.handle.value:
            lib().ANeuralNetworksCompilation_free(self.handle)
            self.handle = ctypes.c_void_p()

    def set_preference(self, preference: int = PreferenceCode.FAST_SINGLE_ANSWER) -> Compilation:
        call("ANeuralNetworksCompilation_setPreference", self.handle, int(preference))
        return self

    def set_caching(self, cache_dir: str | os.PathLike[str], token: bytes) -> Compilation:
        """Compilation caching: ``token`` (32 bytes) names this compilation in ``cache_dir``."""
        if len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
            raise ValueError(f"a caching token has {BYTE_SIZE_OF_CACHE_TOKEN} bytes")
        call(
            "ANeuralNetworksCompilation_setCaching",
            self.handle,
            os.fsencode(cache_dir),
            (ctypes.c_uint8 * BYTE_SIZE_OF_CACHE_TOKEN)(*token),
        )
        return self

    def finish(self) -> Compilation:
        call("ANeuralNetworksCompilation_finish", self.handle)
        return self

    def execute(
        self,
        inputs: Sequence[np.ndarray],
        output_shapes: Sequence[Sequence[int]] | None = None,
    ) -> list[np.ndarray]:
        """Run once with numpy inputs; returns the outputs (shapes from the model or given)."""
        return Execution(self).compute(inputs, output_shapes)


class Execution:
    """``ANeuralNetworksExecution`` for numpy arrays."""

    def __init__(self, compilation: Compilation) -> None:
        self.compilation = compilation
        self.handle = ctypes.c_void_p()
        call("ANeuralNetworksExecution_create", compilation.handle, ctypes.byref(self.handle))

    def __del__(self) -> None:
        if getattr(self, "handle", None) and self.handle.value:
            lib().ANeuralNetworksExecution_free(self.handle)
            self.handle = ctypes.c_void_p()

    def compute(
        self,
        inputs: Sequence[np.ndarray],
        output_shapes: Sequence[Sequence[int]] | None = None,
    ) -> list[np.ndarray]:
        model = self.compilation.model
        keep = []
        for i, (index, value) in enumerate(zip(model.inputs, inputs, strict=True)):
            code = model.operand_types[index][0]
            array = np.ascontiguousarray(np.asarray(value, dtype=NUMPY_DTYPES[code]))
            keep.append(array)
            declared = model.operand_types[index][1]
            type_arg = None
            if array.ndim and (not declared or 0 in declared):
                scale, zero_point = model.operand_types[index][2:]
                type_arg = ctypes.byref(operand_type(code, array.shape, scale, zero_point))
            call(
                "ANeuralNetworksExecution_setInput",
                self.handle,
                i,
                type_arg,
                array.ctypes.data_as(ctypes.c_void_p),
                array.nbytes,
            )
        results = []
        for i, index in enumerate(model.outputs):
            code, declared, _, _ = model.operand_types[index]
            shape = tuple(output_shapes[i]) if output_shapes else declared
            array = np.empty(shape, dtype=NUMPY_DTYPES[code])
            results.append(array)
            call(
                "ANeuralNetworksExecution_setOutput",
                self.handle,
                i,
                None,
                array.ctypes.data_as(ctypes.c_void_p),
                array.nbytes,
            )
        call("ANeuralNetworksExecution_compute", self.handle)
        return results

    def output_dimensions(self, index: int) -> tuple[int, ...]:
        rank = ctypes.c_uint32()
        check(
            "ANeuralNetworksExecution_getOutputOperandRank",
            lib().ANeuralNetworksExecution_getOutputOperandRank(
                self.handle, index, ctypes.byref(rank)
            ),
        )
        dims = (ctypes.c_uint32 * max(rank.value, 1))()
        check(
            "ANeuralNetworksExecution_getOutputOperandDimensions",
            lib().ANeuralNetworksExecution_getOutputOperandDimensions(self.handle, index, dims),
        )
        return tuple(dims[i] for i in range(rank.value))


__all__ = [
    "Compilation",
    "Device",
    "Execution",
    "Model",
    "NnapiError",
    "OperationCode",
    "call",
    "check",
    "devices",
    "last_error",
    "lib",
    "operand_type",
    "supported_operations",
]
