# SPDX-License-Identifier: Apache-2.0
"""What the single-operation tests share besides :class:`OpTester`: operand-type shorthands, the
dtypes the data-movement operations take, the fused activations and the quantisation rule as
numpy references, random samples, the error checks, zero-sized inputs and probe scripts run in
a fresh process."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mock_nnapi.api import call

from mock_nnapi import (
    Compilation,
    Execution,
    FuseCode,
    Model,
    NnapiError,
    OperandCode,
    OperationCode,
    ResultCode,
)

from .op_tester import OpTester

REPOSITORY = Path(__file__).resolve().parents[2]

F16 = OperandCode.TENSOR_FLOAT16
F32 = OperandCode.TENSOR_FLOAT32
I32 = OperandCode.TENSOR_INT32
U8 = OperandCode.TENSOR_QUANT8_ASYMM
S8 = OperandCode.TENSOR_QUANT8_ASYMM_SIGNED
BOOL8 = OperandCode.TENSOR_BOOL8

#: ``(numpy dtype, scale, zero point)`` of the tensor types the data-movement operations take.
DTYPES = [
    (np.float32, 0.0, 0),
    (np.float16, 0.0, 0),
    (np.uint8, 0.5, 3),
    (np.int8, 0.25, -7),
]
#: :data:`DTYPES` and TENSOR_INT32, for the operations that also move int32 tensors.
DTYPES_AND_INT32 = [*DTYPES[:2], (np.int32, 0.0, 0), *DTYPES[2:]]


#: The fused activations (FuseCode operands) as numpy functions.
FUSED_ACTIVATIONS = {
    FuseCode.NONE: lambda x: x,
    FuseCode.RELU: lambda x: np.maximum(x, 0),
    FuseCode.RELU1: lambda x: np.clip(x, -1, 1),
    FuseCode.RELU6: lambda x: np.clip(x, 0, 6),
}


def op_name(op: OperationCode) -> str:
    """Test ids by operation name."""
    return op.name


def sample(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    """Random values: integers over the dtype's whole range, floats uniform in [-4, 4)."""
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return rng.uniform(-4, 4, shape).astype(dtype)


def quantize(real: Any, scale: float, zero_point: int, dtype: Any) -> np.ndarray:
    """Round half away from zero, then saturate (the NNAPI reference rule); NaN saturates to
    the maximum."""
    info = np.iinfo(dtype)
    scaled = np.asarray(real, np.float64) / scale
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
    with np.errstate(invalid="ignore"):
        return np.clip(np.nan_to_num(rounded + zero_point, nan=info.max), info.min, info.max)


def run_unary(op, x, out_code=None, dynamic=False, quant=None):
    """Runs a one-input operation with an output shaped like ``x``; returns the output."""
    quant = quant or {}
    code = out_code if out_code is not None else OpTester.default_code(x)
    return (
        OpTester(op)
        .input(x, **quant.get("x", {}))
        .output(code, x.shape, **quant.get("out", {}))
        .dynamic_outputs(dynamic)
        .run()[0]
    )


def _raised(action: Callable[[], object]) -> NnapiError:
    # Not pytest.raises: its traceback would keep the failed model alive until a garbage
    # collection, which the live-object checks of other test modules would then notice.
    try:
        action()
    except NnapiError as error:
        error.__traceback__ = None
        return error
    raise AssertionError("expected an NnapiError")


def expect_error(action: Callable[[], object], code: int = ResultCode.BAD_DATA) -> None:
    """``action()`` must fail with ``code``; BAD_DATA must come from the operation's own
    validation (``ANeuralNetworksModel_addOperation``), not from a later step."""
    error = _raised(action)
    assert error.code == code, str(error)
    if code == ResultCode.BAD_DATA:
        assert error.function == "ANeuralNetworksModel_addOperation", str(error)


def expect_bad_data(tester: OpTester) -> str:
    """Building the tester's model must fail with BAD_DATA; returns the message."""
    error = _raised(tester.build)
    assert error.code == ResultCode.BAD_DATA, str(error)
    return str(error)


def expect_bad_data_at_add(tester: OpTester) -> str:
    """expect_bad_data, refused by ANeuralNetworksModel_addOperation itself (Android validates
    an operation when it is added); returns the message."""
    error = _raised(tester.build)
    assert error.code == ResultCode.BAD_DATA, str(error)
    assert error.function == "ANeuralNetworksModel_addOperation", str(error)
    return str(error)


def expect_failed_when_prepared(case: OpTester | Callable[[], object]) -> str:
    """Android validates an operation at addOperation and finish from its operands' types and
    shapes only (its validation never sees a value), so an argument value the operation refuses,
    or a shape that follows from one, passes there and fails the execution with OP_FAILED, when
    the CPU executor prepares the operation. ``case`` is a tester (run here) or an action that
    builds and runs the operation; returns the message."""
    if isinstance(case, OpTester):
        for spec in case._outputs:
            if 0 in spec["shape"]:
                # Declared with an unknown (or an empty) dimension: the run still needs a buffer,
                # which the operation refuses to fill; it is declared fully unknown instead.
                spec["shape"] = tuple(d or 1 for d in spec["shape"])
                case.dynamic_outputs(True)
    error = _raised(case.run if isinstance(case, OpTester) else case)
    assert error.code == ResultCode.OP_FAILED, str(error)
    assert error.function == "ANeuralNetworksExecution_compute", str(error)
    return str(error)


def expect_refused(tester: OpTester, when_prepared: bool, at_add: bool = False) -> str:
    """expect_failed_when_prepared for a case refused by an argument's value, else
    expect_bad_data (expect_bad_data_at_add with ``at_add``)."""
    if when_prepared:
        return expect_failed_when_prepared(tester)
    return expect_bad_data_at_add(tester) if at_add else expect_bad_data(tester)


def run_on_zero_sized(op, scalars=(), constants=(), out_code=None, out_params=None):
    """Runs `op` on a zero-sized [0, 3] TENSOR_FLOAT32 made inside the model by SLICE.

    Model inputs cannot be zero-sized, so SLICE (size 0 along axis 0) produces one. The output
    buffer is 4 bytes, like CTS's at-least-one-byte buffers for zero-sized outputs. Returns the
    output dimensions the mock reports; raises NnapiError when the execution fails.
    """
    model = Model()
    source = model.add_operand(OperandCode.TENSOR_FLOAT32, (2, 3))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, 0], np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, 3], np.int32))
    empty = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 3))
    try:
        model.add_operation(OperationCode.SLICE, [source, begin, size], [empty])
    except NnapiError as error:
        pytest.skip(f"SLICE is needed to make a zero-sized tensor: {error}")
    inputs = [empty]
    inputs += [model.add_constant(OperandCode.TENSOR_FLOAT32, value) for value in constants]
    inputs += [model.add_scalar(code, value) for code, value in scalars]
    out_code = out_code if out_code is not None else OperandCode.TENSOR_FLOAT32
    output = model.add_operand(out_code, (0, 3), **(out_params or {}))
    model.add_operation(op, inputs, [output])
    model.identify_inputs_and_outputs([source], [output])
    model.finish()
    execution = Execution(Compilation(model).finish())
    data = np.ones((2, 3), np.float32)
    buffer = (ctypes.c_uint8 * 4)()
    handle = execution.handle
    call("ANeuralNetworksExecution_setInput", handle, 0, None, data.ctypes.data, data.nbytes)
    call("ANeuralNetworksExecution_setOutput", handle, 0, None, buffer, len(buffer))
    call("ANeuralNetworksExecution_compute", handle)
    return execution.output_dimensions(0)


@contextlib.contextmanager
def feature_level_profile(tmp_path):
    """A device profile with one device per feature level; yields the devices FL1..FL8."""
    import mock_nnapi
    from mock_nnapi import _library, control

    if not _library.is_mock():
        pytest.skip("device profiles are a mock_nnapi feature")
    helpers = pytest.importorskip("mock_profiles.helpers")
    devices = [
        helpers.device_entry(f"fl{level}", "ACCELERATOR", feature_level=level)
        for level in range(1, 9)
    ]
    profile = helpers.profile_with([*devices, helpers.device_entry("cpu", "CPU")], "levels")
    path = tmp_path / "levels.json"
    path.write_text(json.dumps(profile))
    control.set_profile(path)
    try:
        by_name = {device.name: device for device in mock_nnapi.devices()}
        yield [by_name[f"fl{level}"] for level in range(1, 9)]
    finally:
        control.set_profile(None)


def run_probe(script: str, **environment: str) -> Any:
    """Runs `script` in a fresh Python process (the repository root its working directory and on
    its PYTHONPATH, so it can import the tests' modules) with `environment` added to this one's,
    and returns the JSON its last line of output prints. For what a process reads once: thread
    counts, kernel choices (MOCK_NNAPI_*), counters from zero."""
    env = dict(os.environ, **environment)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=REPOSITORY
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
