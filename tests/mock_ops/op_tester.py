"""A fluent tester for single NNAPI operations on the mock, in the style of XNNPACK's testers.

    result = (
        OpTester(OperationCode.ADD)
        .input(x)                                  # model input (numpy array)
        .input(y, scale=0.5, zero_point=3)         # quantised input: numpy integer array
        .scalar(OperandCode.INT32, FuseCode.NONE)  # constant scalar operand
        .output(OperandCode.TENSOR_FLOAT32, shape) # declared output
        .run()
    )
    assert_close(result[0], expected)

Inputs may also be constants (``.constant(array)``) or omitted optional operands
(``.omitted(OperandCode.TENSOR_FLOAT32)``). ``.dynamic_outputs()`` declares every output dimension
unknown (0), like Android's DynamicOutputShapeTest, and checks the reported shape. Every run
asserts that the operation really executed on the mock.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mock_nnapi.api import NUMPY_DTYPES

import mock_nnapi
from mock_nnapi import Compilation, Execution, Model, OperandCode, OperationCode

_DEFAULT_TENSOR_TYPES = {
    np.dtype(np.float32): OperandCode.TENSOR_FLOAT32,
    np.dtype(np.float16): OperandCode.TENSOR_FLOAT16,
    np.dtype(np.int32): OperandCode.TENSOR_INT32,
    np.dtype(np.uint8): OperandCode.TENSOR_QUANT8_ASYMM,
    np.dtype(np.int8): OperandCode.TENSOR_QUANT8_ASYMM_SIGNED,
    np.dtype(np.bool_): OperandCode.TENSOR_BOOL8,
}


class OpTester:
    def __init__(self, operation: int) -> None:
        self.operation = OperationCode(operation)
        self._inputs: list[dict[str, Any]] = []
        self._outputs: list[dict[str, Any]] = []
        self._dynamic = False
        self._relaxed = False

    def input(
        self,
        array: np.ndarray,
        code: int | None = None,
        scale: float = 0.0,
        zero_point: int = 0,
        channel_quant: tuple[int, list[float]] | None = None,
    ) -> OpTester:
        """A model input (its value is given at execution)."""
        array = np.asarray(array)
        code = code if code is not None else _DEFAULT_TENSOR_TYPES[array.dtype]
        self._inputs.append(
            dict(
                kind="input",
                array=array,
                code=code,
                scale=scale,
                zp=zero_point,
                channel_quant=channel_quant,
            )
        )
        return self

    def constant(
        self,
        array: np.ndarray,
        code: int | None = None,
        scale: float = 0.0,
        zero_point: int = 0,
        channel_quant: tuple[int, list[float]] | None = None,
    ) -> OpTester:
        """A constant tensor operand (setOperandValue)."""
        array = np.asarray(array)
        code = code if code is not None else _DEFAULT_TENSOR_TYPES[array.dtype]
        self._inputs.append(
            dict(
                kind="constant",
                array=array,
                code=code,
                scale=scale,
                zp=zero_point,
                channel_quant=channel_quant,
            )
        )
        return self

    def scalar(self, code: int, value: Any) -> OpTester:
        """A constant scalar operand (INT32, FLOAT32, FLOAT16, BOOL, UINT32)."""
        self._inputs.append(dict(kind="scalar", code=code, value=value))
        return self

    def omitted(self, code: int) -> OpTester:
        """An omitted optional operand (setOperandValue(NULL, 0))."""
        self._inputs.append(dict(kind="omitted", code=code))
        return self

    def output(
        self, code: int, shape: tuple[int, ...], scale: float = 0.0, zero_point: int = 0
    ) -> OpTester:
        self._outputs.append(dict(code=code, shape=tuple(shape), scale=scale, zp=zero_point))
        return self

    def dynamic_outputs(self, enabled: bool = True) -> OpTester:
        """Declare all output dimensions as unknown and check the shapes the mock reports."""
        self._dynamic = enabled
        return self

    def relaxed(self, enabled: bool = True) -> OpTester:
        """Allow fp32 computation in fp16 (relaxComputationFloat32toFloat16)."""
        self._relaxed = enabled
        return self

    @staticmethod
    def default_code(array: np.ndarray) -> OperandCode:
        """The tensor operand type this tester uses for an array's dtype."""
        return _DEFAULT_TENSOR_TYPES[np.asarray(array).dtype]

    def build(self) -> Model:
        model = Model()
        inputs, feeds = [], []
        for spec in self._inputs:
            kind = spec["kind"]
            if kind == "scalar":
                inputs.append(model.add_scalar(spec["code"], spec["value"]))
                continue
            if kind == "omitted":
                dims = None
                index = model.add_operand(spec["code"], dims)
                mock_nnapi.api.call(
                    "ANeuralNetworksModel_setOperandValue", model.handle, index, None, 0
                )
                inputs.append(index)
                continue
            array = spec["array"]
            index = model.add_operand(spec["code"], array.shape, spec["scale"], spec["zp"])
            if spec["channel_quant"] is not None:
                _set_channel_quant(model, index, *spec["channel_quant"])
            if kind == "constant":
                model.set_value(index, array)
            else:
                feeds.append(index)
            inputs.append(index)
        outputs = []
        for spec in self._outputs:
            shape = tuple(0 for _ in spec["shape"]) if self._dynamic else spec["shape"]
            outputs.append(model.add_operand(spec["code"], shape, spec["scale"], spec["zp"]))
        model.add_operation(self.operation, inputs, outputs)
        model.identify_inputs_and_outputs(feeds, outputs)
        if self._relaxed:
            model.relax_computation_float32_to_float16(True)
        model.finish()
        return model

    def run(self) -> list[np.ndarray]:
        model = self.build()
        compilation = Compilation(model).finish()
        feeds = [s["array"] for s in self._inputs if s["kind"] == "input"]
        before = mock_nnapi.operation_count(self.operation)
        execution = Execution(compilation)
        shapes = [s["shape"] for s in self._outputs]
        results = execution.compute(feeds, shapes)
        assert mock_nnapi.operation_count(self.operation) == before + 1, "operation did not run"
        if self._dynamic:
            for index, shape in enumerate(shapes):
                assert execution.output_dimensions(index) == tuple(shape)
        return results


def _set_channel_quant(model: Model, index: int, channel_dim: int, scales: list[float]) -> None:
    import ctypes

    from mock_nnapi._library import SymmPerChannelQuantParams

    array = (ctypes.c_float * len(scales))(*scales)
    params = SymmPerChannelQuantParams(channel_dim, len(scales), array)
    mock_nnapi.api.call(
        "ANeuralNetworksModel_setOperandSymmPerChannelQuantParams",
        model.handle,
        index,
        ctypes.byref(params),
    )


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype: str | None = None) -> None:
    """The accuracy criteria of the operation tests.

    fp32: |a - e| <= 1e-5 + 5 ULP(e); fp16 (or relaxed fp32): 5 * 2^-10 absolute and relative;
    integers and quantised values: within 1.
    """
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    kind = dtype or str(actual.dtype)
    if kind == "float32":
        e = expected.astype(np.float32)
        tolerance = 1e-5 + 5 * np.spacing(np.abs(e))
        error = np.abs(actual.astype(np.float64) - e.astype(np.float64))
    elif kind in ("float16", "relaxed"):
        e = expected.astype(np.float64)
        tolerance = 5 * 2.0**-10 * np.maximum(1.0, np.abs(e))
        error = np.abs(actual.astype(np.float64) - e)
    else:
        tolerance = np.ones(expected.shape)
        error = np.abs(actual.astype(np.int64) - expected.astype(np.int64))
    nan_ok = np.isnan(actual.astype(np.float64)) & np.isnan(expected.astype(np.float64))
    bad = (error > tolerance) & ~nan_ok
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.size} elements out of tolerance; first at "
        f"{np.argwhere(bad)[0].tolist()}: {actual[tuple(np.argwhere(bad)[0])]} vs "
        f"{expected[tuple(np.argwhere(bad)[0])]}"
    )


__all__ = ["NUMPY_DTYPES", "OpTester", "assert_close"]
