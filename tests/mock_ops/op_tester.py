# SPDX-License-Identifier: Apache-2.0
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

On another target (``pytest --target rpc|device``) every ``run()`` also sends the same
operation, as a graph JSON (``graph()``), to the target's NNAPI through the runtime library's
``tvm_nnapi.testing.run_graph`` over TVM RPC; the target's outputs are compared with the local
mock's (recorded in the differential report) and returned, so the test's own reference check
judges the target. Validation failures are raised by the local mock before anything is sent.
"""

from __future__ import annotations

import json
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


#: The remote target of the session (tests/mock_ops/conftest.py), or None: mock only.
_remote_target: Any = None


def set_remote_target(target: Any) -> None:
    """Run every OpTester also on ``target`` (a tests/targets.py RemoteTarget), or stop (None)."""
    global _remote_target
    _remote_target = target


def _recorder():
    try:
        import difftest_plugin
    except ImportError:  # used outside this test suite
        return None
    return difftest_plugin.current()


#: Graph JSON constants are aligned like the codegen's blob (docs/graph-json.md).
_CONSTANT_ALIGNMENT = 64


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

    def omitted(self, code: int, scale: float = 0.0, zero_point: int = 0) -> OpTester:
        """An omitted optional operand (setOperandValue(NULL, 0)); quantised types need a
        scale."""
        self._inputs.append(dict(kind="omitted", code=code, scale=scale, zp=zero_point))
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
                index = model.add_operand(
                    spec["code"], dims, spec.get("scale", 0.0), spec.get("zp", 0)
                )
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

    def graph(self) -> tuple[str, bytes]:
        """The operation as a graph JSON document and its constant blob (docs/graph-json.md),
        with the same operand order, types, values and flags as ``build()``."""
        operands: list[dict[str, Any]] = []
        blob = bytearray()
        inputs, feeds = [], []
        for spec in self._inputs:
            kind = spec["kind"]
            code = OperandCode(spec["code"])
            if kind == "scalar":
                value = spec["value"]
                value = bool(value) if code == OperandCode.BOOL else value
                value = (
                    float(value) if code in (OperandCode.FLOAT32, OperandCode.FLOAT16) else value
                )
                value = int(value) if isinstance(value, (int, np.integer)) else value
                operands.append({"type": code.name, "value": value})
            elif kind == "omitted":
                operand = {"type": code.name, "omitted": True}
                if code.name.startswith("TENSOR_"):
                    operand["shape"] = []
                if spec.get("scale") or spec.get("zp"):
                    operand.update(scale=float(spec["scale"]), zero_point=int(spec["zp"]))
                operands.append(operand)
            else:
                array = np.ascontiguousarray(spec["array"], dtype=NUMPY_DTYPES[code])
                operand = {"type": code.name, "shape": [int(d) for d in array.shape]}
                if spec["scale"] or spec["zp"]:
                    operand.update(scale=float(spec["scale"]), zero_point=int(spec["zp"]))
                if spec["channel_quant"] is not None:
                    channel_dim, scales = spec["channel_quant"]
                    operand["channel_quant"] = {
                        "channel_dim": int(channel_dim),
                        "scales": [float(x) for x in scales],
                    }
                if kind == "constant":
                    blob.extend(b"\0" * (-len(blob) % _CONSTANT_ALIGNMENT))
                    operand["constant"] = {"offset": len(blob), "nbytes": array.nbytes}
                    blob.extend(array.tobytes())
                else:
                    feeds.append(len(operands))
                operands.append(operand)
            inputs.append(len(operands) - 1)
        outputs = []
        for spec in self._outputs:
            shape = [0 for _ in spec["shape"]] if self._dynamic else list(spec["shape"])
            operand = {"type": OperandCode(spec["code"]).name, "shape": shape}
            if spec["scale"] or spec["zp"]:
                operand.update(scale=float(spec["scale"]), zero_point=int(spec["zp"]))
            outputs.append(len(operands))
            operands.append(operand)
        document = {
            "format": "tvm-nnapi-graph",
            "version": 1,
            "symbol": f"op_tester_{self.operation.name.lower()}",
            "relax_fp32_to_fp16": self._relaxed,
            "operands": operands,
            "operations": [{"op": self.operation.name, "inputs": inputs, "outputs": outputs}],
            "inputs": feeds,
            "outputs": outputs,
        }
        return json.dumps(document), bytes(blob)

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
        if _remote_target is not None:
            return self._run_on_target(_remote_target, feeds, results)
        return results

    def _run_on_target(
        self, target: Any, feeds: list[np.ndarray], mock_results: list[np.ndarray]
    ) -> list[np.ndarray]:
        """Runs the operation on the target's NNAPI; returns its outputs after recording how
        they differ from the local mock's."""
        graph_json, constants = self.graph()
        codes = [OperandCode(s["code"]) for s in self._inputs if s["kind"] == "input"]
        inputs = [
            np.ascontiguousarray(a, dtype=NUMPY_DTYPES[c])
            for a, c in zip(feeds, codes, strict=True)
        ]
        outputs = [(tuple(r.shape), r.dtype) for r in mock_results]
        before = target.operation_count(self.operation.name)
        results, info = target.run_graph(graph_json, constants, inputs, outputs)
        after = target.operation_count(self.operation.name)
        if before >= 0:  # the target is the mock (it counts); a real NNAPI does not count
            assert after == before + 1, f"{self.operation.name} did not run on {target.name}"
            evidence = f"{target.name}: the remote mock counted 1 {self.operation.name}"
        else:
            evidence = (
                f"{target.name}: {info['library']} (feature level {info['feature_level']}) "
                f"completed the {self.operation.name} execution"
            )
        for index, shape in enumerate(info["output_shapes"]):
            assert tuple(shape) == outputs[index][0], (
                f"{target.name}: output {index} has shape {tuple(shape)}, expected "
                f"{outputs[index][0]}"
            )
        recorder = _recorder()
        if recorder is not None:
            recorder.target(target.name)
            recorder.nnapi(True, evidence)
            kind = "relaxed" if self._relaxed else None
            for index, (remote, local) in enumerate(zip(results, mock_results, strict=True)):
                recorder.record(
                    _comparison(remote, local, kind, f"output {index}", "local mock NNAPI")
                )
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


def _tolerance(kind: str, expected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(elementwise tolerance, elementwise error basis) of the accuracy criteria."""
    if kind == "float32":
        e = expected.astype(np.float32)
        return 1e-5 + 5 * np.spacing(np.abs(e)), e.astype(np.float64)
    if kind in ("float16", "relaxed"):
        e = expected.astype(np.float64)
        return 5 * 2.0**-10 * np.maximum(1.0, np.abs(e)), e
    return np.ones(expected.shape), expected.astype(np.int64)


def _error(actual: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """|actual - basis| (integers exactly; inf - inf is NaN, which the callers handle)."""
    if basis.dtype == np.int64:
        return np.abs(actual.astype(np.int64) - basis)
    with np.errstate(invalid="ignore"):
        return np.abs(actual.astype(np.float64) - basis)


def _comparison(actual, expected, dtype: str | None, label: str, reference: str):
    """The differential-report record of ``actual`` vs ``expected`` under the criteria of
    ``assert_close`` (atol/rtol are the criteria's nominal values)."""
    from difftest_plugin import compare_arrays

    actual = np.asarray(actual)
    expected = np.asarray(expected)
    kind = dtype or str(actual.dtype)
    nominal = {"float32": (1e-5, 5 * 2.0**-23), "float16": (5 * 2.0**-10, 5 * 2.0**-10)}
    atol, rtol = nominal.get("float16" if kind == "relaxed" else kind, (1.0, 0.0))
    comparison = compare_arrays(
        actual, expected, rtol=rtol, atol=atol, label=label, reference=reference
    )
    if actual.shape == expected.shape:
        tolerance, basis = _tolerance(kind, expected)
        error = _error(actual, basis)
        nan_ok = np.isnan(actual.astype(np.float64)) & np.isnan(expected.astype(np.float64))
        bad = (error > tolerance) & ~nan_ok
        comparison.mismatched = int(bad.sum())
        comparison.within_tolerance = not bool(bad.any())
    return comparison


def assert_close(actual: np.ndarray, expected: np.ndarray, dtype: str | None = None) -> None:
    """The accuracy criteria of the operation tests.

    fp32: |a - e| <= 1e-5 + 5 ULP(e); fp16 (or relaxed fp32): 5 * 2^-10 absolute and relative;
    integers and quantised values: within 1. The errors go to the differential report.
    """
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    recorder = _recorder()
    if recorder is not None:
        recorder.record(_comparison(actual, expected, dtype, "output", "numpy reference"))
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    kind = dtype or str(actual.dtype)
    tolerance, basis = _tolerance(kind, expected)
    error = _error(actual, basis)
    nan_ok = np.isnan(actual.astype(np.float64)) & np.isnan(expected.astype(np.float64))
    bad = (error > tolerance) & ~nan_ok
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.size} elements out of tolerance; first at "
        f"{np.argwhere(bad)[0].tolist()}: {actual[tuple(np.argwhere(bad)[0])]} vs "
        f"{expected[tuple(np.argwhere(bad)[0])]}"
    )


__all__ = ["NUMPY_DTYPES", "OpTester", "assert_close", "set_remote_target"]
