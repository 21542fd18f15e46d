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


def _float16_edge_values() -> np.ndarray:
    """Every float16 value, the midpoints between neighbours (ties) and the floats on either side
    of them, values that round to infinity or below the smallest subnormal, float32 subnormals,
    infinities, NaNs and random floats: the cases of float32 -> float16 rounding."""
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = np.sort(halves[np.isfinite(halves)].astype(np.float32))
    middles = (finite[:-1].astype(np.float64) + finite[1:].astype(np.float64)) / 2
    middles = middles.astype(np.float32)  # exact: a float16 midpoint has 12 significant bits
    bits = middles.view(np.uint32)
    around = np.concatenate([bits - 1, bits + 1]).view(np.float32)
    special = np.array(
        [
            65504,
            65519.996,
            65520,
            65536,
            3.4e38,
            2**-24,
            2**-25,
            2**-25 * 1.0000001,
            2**-26,
            1e-40,
            -1e-45,
            np.inf,
            -np.inf,
            np.nan,
            -np.nan,
        ],
        np.float32,
    )
    quiet_payload = np.array([0x7F800001, 0xFFA00000, 0x7FC12345], np.uint32).view(np.float32)
    rng = np.random.default_rng(0)
    random = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    values = np.concatenate([finite, middles, around, special, quiet_payload, random])
    return np.concatenate([values, -values, values[:13]])  # an odd count: the scalar tail


def test_relaxed_rounding_is_float16_round_to_nearest_even():
    """The relaxed float32 emulation rounds each output to the nearest float16 (ties to even, to
    infinity past 65520, subnormals); NaN becomes float16's quiet NaN of the same sign."""
    from mock_nnapi import Compilation, OperationCode

    control.set_profile("snapdragon-8-gen-2")
    x = _float16_edge_values()
    model = binary_model([OperationCode.MUL], [x.size], relaxed=True)
    (result,) = Compilation(model).finish().execute([x, np.ones_like(x)])
    with np.errstate(over="ignore"):
        expected = x.astype(np.float16).astype(np.float32)
    nan = np.isnan(x)
    np.testing.assert_array_equal(result.view(np.uint32)[~nan], expected.view(np.uint32)[~nan])
    sign = x.view(np.uint32)[nan] & 0x80000000
    np.testing.assert_array_equal(result.view(np.uint32)[nan], sign | 0x7FC00000)
