# SPDX-License-Identifier: Apache-2.0
"""packed_gemm: the mock's own GEMM for constant fp32 weights (CONV_2D, GROUPED_CONV_2D, small
FULLY_CONNECTED weights), against a float64 reference and against itself.

Covered: M, N and K that are not multiples of the kernels' blocks (8 or 6 or 4 rows, panels of
32 columns), K = 1, N = 1, zero and non-zero biases, every fused activation, receptive fields
read in place and assembled at the padding (the same bits), the same bits whatever the thread
count and between the AVX-512 and AVX2 kernels, the OpenBLAS path (weights fed as inputs, or
MOCK_NNAPI_PACKED_GEMM=0) within fp32 rounding, the DerivedConstants store declining the packed
weights (packed for each run instead: the same bits), and which FULLY_CONNECTED products are
packed (two or more rows, weights of at most 12 MiB).

Operands stay small (|x| <= 1, short reductions) so that other machines' kernels (the arm64
device job compares its outputs with the x86 mock's under assert_close's fp32 criterion) agree.
"""

from __future__ import annotations

import platform

import numpy as np
import pytest

from mock_nnapi import FuseCode, PaddingCode

from .helpers import FUSED_ACTIVATIONS, run_probe
from .op_tester import assert_close
from .test_conv_2d import random_float, run_float_conv
from .test_fully_connected import fc_tester, reference


@pytest.fixture
def local_switches(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """monkeypatch for the MOCK_NNAPI_* switches of this process's mock. With --target rpc or
    device the operation's results come from the target's NNAPI in another process, which the
    switches do not reach: such a test is skipped there."""
    target = request.config.getoption("--target")
    if target != "mock":
        pytest.skip(
            f"sets MOCK_NNAPI_* switches of this process's mock; --target {target} runs the "
            "operation elsewhere: run it with --target mock"
        )
    return monkeypatch


# (input NHWC, filter [C_out, kH, kW, C_in], padding, strides (w, h), dilations, groups)
CONV_CASES = {
    "pointwise_k1_n1": ((1, 5, 7, 1), (1, 1, 1, 1), PaddingCode.VALID, (1, 1), None, None),
    "pointwise_n33": ((2, 3, 5, 17), (33, 1, 1, 17), PaddingCode.VALID, (1, 1), None, None),
    "pointwise_n64_m81": ((1, 9, 9, 40), (64, 1, 1, 40), PaddingCode.VALID, (1, 1), None, None),
    "pointwise_n70_threads": (
        (1, 20, 20, 40),
        (70, 1, 1, 40),
        PaddingCode.VALID,
        (1, 1),
        None,
        None,
    ),
    "pointwise_m1": ((1, 1, 1, 96), (131, 1, 1, 96), PaddingCode.VALID, (1, 1), None, None),
    "stem_3x3_s2_n16": ((1, 17, 19, 3), (16, 3, 3, 3), PaddingCode.SAME, (2, 2), None, None),
    "stem_3x3_s2_n35": ((2, 16, 15, 3), (35, 3, 3, 3), PaddingCode.SAME, (2, 2), None, None),
    "kxk_explicit_asym": ((1, 11, 10, 5), (9, 2, 3, 5), (2, 1, 1, 0), (1, 2), None, None),
    "kxk_dilated": ((1, 12, 11, 4), (17, 3, 3, 4), PaddingCode.SAME, (1, 1), (2, 3), None),
    "pointwise_stride2": ((1, 9, 9, 6), (7, 1, 1, 6), PaddingCode.SAME, (2, 2), None, None),
    "grouped_3x3": ((1, 8, 9, 6), (10, 3, 3, 3), PaddingCode.SAME, (1, 1), None, 2),
    "grouped_pointwise": ((1, 7, 7, 8), (12, 1, 1, 2), PaddingCode.VALID, (1, 1), None, 4),
}


@pytest.mark.parametrize("bias", ["bias", "zero_bias"])
@pytest.mark.parametrize("case", list(CONV_CASES))
def test_packed_conv_float32(case, bias):
    x_shape, w_shape, padding, strides, dilations, groups = CONV_CASES[case]
    rng = np.random.default_rng(sum(map(ord, case)))
    x = random_float(rng, x_shape)
    w = random_float(rng, w_shape)
    b = random_float(rng, w_shape[0]) if bias == "bias" else np.zeros(w_shape[0], np.float32)
    nchw = False if dilations else None  # the dilation inputs follow the layout flag
    actual, expected = run_float_conv(
        x, w, b, padding, strides, dilations, nchw=nchw, groups=groups
    )
    assert_close(actual, expected)


@pytest.mark.parametrize("activation", list(FUSED_ACTIVATIONS))
def test_packed_conv_activations(activation):
    # Sums spread over [-3, 3]: every clamp bound is crossed, on edge columns too (N = 37).
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (1, 9, 10, 8)).astype(np.float32)
    w = rng.uniform(-0.4, 0.4, (37, 1, 1, 8)).astype(np.float32)
    b = rng.uniform(-1, 1, 37).astype(np.float32)
    actual, expected = run_float_conv(x, w, b, PaddingCode.VALID, activation=activation)
    assert_close(actual, expected)
    w3 = rng.uniform(-0.15, 0.15, (37, 3, 3, 8)).astype(np.float32)
    actual, expected = run_float_conv(x, w3, b, PaddingCode.SAME, (2, 1), activation=activation)
    assert_close(actual, expected)


def test_receptive_fields_in_place_and_at_the_padding_agree_bitwise():
    # A SAME convolution (rows crossing the padding are assembled, the others read in place)
    # and the VALID convolution of the zero-padded input (every row read in place) sum the same
    # products in the same order.
    rng = np.random.default_rng(12)
    x = random_float(rng, (1, 13, 14, 3))
    w = random_float(rng, (21, 3, 3, 3))
    b = random_float(rng, 21)
    same, expected = run_float_conv(x, w, b, (1, 1, 1, 1), (2, 2))
    assert_close(same, expected)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    valid, _ = run_float_conv(padded, w, b, PaddingCode.VALID, (2, 2))
    np.testing.assert_array_equal(same, valid)


def test_openblas_path_within_rounding_and_same_bits_with_weights_as_inputs(local_switches):
    rng = np.random.default_rng(13)
    x = random_float(rng, (1, 12, 12, 24))
    w = random_float(rng, (40, 1, 1, 24))
    b = random_float(rng, 40)
    packed, expected = run_float_conv(x, w, b, PaddingCode.VALID)
    as_inputs, _ = run_float_conv(x, w, b, PaddingCode.VALID, weights_as_inputs=True)
    assert_close(packed, expected)
    assert_close(as_inputs, expected)
    # With packed_gemm switched off, constant weights take the OpenBLAS path of input weights.
    local_switches.setenv("MOCK_NNAPI_PACKED_GEMM", "0")
    unpacked, _ = run_float_conv(x, w, b, PaddingCode.VALID)
    np.testing.assert_array_equal(unpacked, as_inputs)


def test_declined_packed_weights_are_packed_per_run_with_the_same_bits(local_switches):
    from mock_nnapi import control

    rng = np.random.default_rng(14)
    x = random_float(rng, (1, 10, 11, 5))
    w = random_float(rng, (19, 3, 3, 5))
    b = random_float(rng, 19)
    control.reset_counters()
    kept, expected = run_float_conv(x, w, b, PaddingCode.SAME)
    assert control.counter("derived_constants_built") == 1  # the packed filter
    assert_close(kept, expected)
    local_switches.setenv("MOCK_NNAPI_DERIVED_BUDGET_BYTES", "0")
    control.reset_counters()
    declined, _ = run_float_conv(x, w, b, PaddingCode.SAME)
    assert control.counter("derived_constants_built") == 0
    np.testing.assert_array_equal(declined, kept)


FC_CASES = [
    ((2, 1), (1, 1)),
    ((3, 7), (33, 7)),
    ((9, 64), (31, 64)),
    ((17, 40), (70, 40)),
    ((2, 3, 20), (65, 20)),
    ((120, 24), (96, 24)),
]


@pytest.mark.parametrize("x_shape,w_shape", FC_CASES, ids=[f"{x}x{w}" for x, w in FC_CASES])
def test_packed_fully_connected_float32(x_shape, w_shape):
    rng = np.random.default_rng(x_shape[0] * 100 + w_shape[0])
    x = random_float(rng, x_shape)
    w = random_float(rng, w_shape)
    b = random_float(rng, w_shape[0])
    result = fc_tester(x, w, b).run()[0]
    assert_close(result, reference(x, w, b))
    as_inputs = fc_tester(x, w, b, weights_as_inputs=True).run()[0]
    assert_close(as_inputs, reference(x, w, b))


@pytest.mark.parametrize("activation", list(FUSED_ACTIVATIONS))
def test_packed_fully_connected_activations(activation):
    rng = np.random.default_rng(15)
    x = rng.uniform(-1, 1, (5, 8)).astype(np.float32)
    w = rng.uniform(-0.4, 0.4, (45, 8)).astype(np.float32)
    b = rng.uniform(-1, 1, 45).astype(np.float32)
    result = fc_tester(x, w, b, activation).run()[0]
    assert_close(result, FUSED_ACTIVATIONS[activation](reference(x, w, b)))


def test_fully_connected_declined_weights_same_bits(local_switches):
    from mock_nnapi import control

    rng = np.random.default_rng(16)
    x = random_float(rng, (6, 30))
    w = random_float(rng, (50, 30))
    b = random_float(rng, 50)
    control.reset_counters()
    kept = fc_tester(x, w, b, FuseCode.RELU6).run()[0]
    assert control.counter("derived_constants_built") == 1  # the packed weights
    local_switches.setenv("MOCK_NNAPI_DERIVED_BUDGET_BYTES", "0")
    control.reset_counters()
    declined = fc_tester(x, w, b, FuseCode.RELU6).run()[0]
    assert control.counter("derived_constants_built") == 0
    np.testing.assert_array_equal(declined, kept)
    assert_close(kept, np.clip(reference(x, w, b), 0, 6))


def test_fully_connected_packs_only_small_weights_and_several_rows():
    # One row stays a matrix-vector product on sgemv, and weights above 12 MiB (an LLM's) get no
    # second copy: neither builds a packed matrix.
    from mock_nnapi import control

    rng = np.random.default_rng(19)
    cases = [((1, 48), (70, 48), 0), ((2, 48), (70, 48), 1), ((2, 4), (3 * 2**20 + 1, 4), 0)]
    for x_shape, w_shape, built in cases:
        x = random_float(rng, x_shape)
        w = random_float(rng, w_shape)
        b = random_float(rng, w_shape[0])
        control.reset_counters()
        result = fc_tester(x, w, b).run()[0]
        assert control.counter("derived_constants_built") == built, (x_shape, w_shape)
        assert_close(result, reference(x, w, b))


# Runs in a fresh process (the thread count and the kernel are chosen when the library loads):
# products large enough to be shared out over the threads (and split into row blocks and panel
# groups differently for 1 and 2 threads); prints the outputs' bytes as hex.
PROBE = """
import json, sys
import numpy as np
import mock_nnapi
from mock_nnapi import OperandCode, OperationCode
rng = np.random.default_rng(17)
def conv(x_shape, w_shape, pads, stride):
    x = rng.uniform(-1, 1, x_shape).astype(np.float32)
    w = rng.uniform(-1, 1, w_shape).astype(np.float32)
    b = rng.uniform(-1, 1, w_shape[0]).astype(np.float32)
    n, h, wd, _ = x_shape
    oh = (h + pads[2] + pads[3] - w_shape[1]) // stride + 1
    ow = (wd + pads[0] + pads[1] - w_shape[2]) // stride + 1
    model = mock_nnapi.Model()
    xi = model.add_operand(OperandCode.TENSOR_FLOAT32, x.shape)
    ins = [xi, model.add_constant(OperandCode.TENSOR_FLOAT32, w),
           model.add_constant(OperandCode.TENSOR_FLOAT32, b)]
    ins += [model.add_scalar(OperandCode.INT32, v) for v in (*pads, stride, stride, 1)]
    out = model.add_operand(OperandCode.TENSOR_FLOAT32, (n, oh, ow, w_shape[0]))
    model.add_operation(OperationCode.CONV_2D, ins, [out])
    model.identify_inputs_and_outputs([xi], [out])
    model.finish()
    compilation = mock_nnapi.Compilation(model).finish()
    return mock_nnapi.Execution(compilation).compute([x])[0]
outputs = [
    conv((1, 30, 30, 24), (70, 1, 1, 24), (0, 0, 0, 0), 1),
    conv((1, 3, 3, 200), (300, 1, 1, 200), (0, 0, 0, 0), 1),
    conv((1, 1, 1, 300), (500, 1, 1, 300), (0, 0, 0, 0), 1),
    conv((1, 61, 59, 3), (35, 3, 3, 3), (1, 1, 1, 1), 2),
]
print(json.dumps([o.tobytes().hex() for o in outputs]))
"""


def _probe(**environment: str) -> list[str]:
    return run_probe(PROBE, **environment)


def test_same_bits_for_one_and_two_threads():
    assert _probe(OPENBLAS_NUM_THREADS="1") == _probe(OPENBLAS_NUM_THREADS="2")


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the AVX2 kernel is x86-64's")
def test_avx2_and_avx512_kernels_same_bits_portable_within_rounding():
    widest = _probe(OPENBLAS_NUM_THREADS="2")
    assert _probe(OPENBLAS_NUM_THREADS="2", MOCK_NNAPI_PACKED_GEMM_KERNEL="avx2") == widest
    # The SSE2 baseline multiplies then adds (no FMA): fp32 rounding apart.
    portable = _probe(OPENBLAS_NUM_THREADS="1", MOCK_NNAPI_PACKED_GEMM_KERNEL="portable")
    for ours, theirs in zip(portable, widest, strict=True):
        a = np.frombuffer(bytes.fromhex(ours), np.float32)
        b = np.frombuffer(bytes.fromhex(theirs), np.float32)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("activation", [FuseCode.NONE, FuseCode.RELU, FuseCode.RELU6])
def test_packed_conv_nan_stays_nan(activation):
    # A NaN input reaches every output of its pixel, through the clamp of every activation.
    rng = np.random.default_rng(18)
    x = random_float(rng, (1, 4, 5, 6))
    x[0, 1, 2, 3] = np.nan
    w = random_float(rng, (40, 1, 1, 6))
    b = random_float(rng, 40)
    actual, expected = run_float_conv(x, w, b, PaddingCode.VALID, activation=activation)
    assert np.isnan(actual[0, 1, 2]).all() and np.isnan(actual).sum() == 40
    assert_close(actual, expected)
