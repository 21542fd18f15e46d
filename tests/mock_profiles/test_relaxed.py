# SPDX-License-Identifier: Apache-2.0
"""relaxComputationFloat32toFloat16 is honoured: float32 operations that the compilation puts on
a device computing relaxed float32 in float16 produce float16-precision results; the runtime's
CPU (and models without the relaxed flag) stay exact float32."""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import control

from .helpers import binary_model

# Values a float16 cannot represent exactly (11 significant bits).
X = np.array([1.0001, 3.14159265, -2.7182818, 1000.123], np.float32)
Y = np.array([1.0, 1.0, 1.0, 1.0], np.float32)


def _multiply(relaxed: bool) -> np.ndarray:
    from mock_nnapi import Compilation, OperationCode

    model = binary_model([OperationCode.MUL], [4], relaxed=relaxed)
    (result,) = Compilation(model).finish().execute([X, Y])
    return result


@pytest.mark.parametrize("profile", ["snapdragon-8-gen-2", "dimensity-9000"])
def test_relaxed_model_on_an_accelerator_computes_in_float16(profile):
    control.set_profile(profile)
    relaxed = _multiply(relaxed=True)
    np.testing.assert_array_equal(relaxed, X.astype(np.float16).astype(np.float32))
    trace = control.last_execution_trace()
    assert trace is not None
    devices = {event["device"] for event in trace["events"] if event["kind"] == "operation"}
    assert devices and "nnapi-reference" not in devices


def test_float32_model_stays_exact_on_a_phone():
    control.set_profile("snapdragon-8-gen-2")
    np.testing.assert_array_equal(_multiply(relaxed=False), X)


def test_reference_cpu_ignores_the_relaxed_flag():
    np.testing.assert_array_equal(_multiply(relaxed=True), X)
