# SPDX-License-Identifier: Apache-2.0
"""int8_gemm: the mock's exact 8-bit GEMM for constant quantised weights (CONV_2D filters,
FULLY_CONNECTED weights), element for element against the defined result (the exact integer sums
requantised, as tests/mock_ops/test_quantized_exact.py defines it) and against the other paths.

Covered: reductions that are not multiples of 4 (the kernels' groups) or 64, panels of 32
columns with N not a multiple of them (1, 17, 33, 70, 100, 1100), M = 1 and row tails, weights
small enough to stay in the cache and larger ones (other blocking), receptive
fields read in place, assembled at the padding (the zero point) and per tap (dilation), strided
1x1, NCHW; QUANT8_ASYMM and QUANT8_ASYMM_SIGNED, per-tensor and per-channel filters, zero points
at the ends of their ranges (0 and 255, -128 and 127) and in between (the row-sum correction of
weights whose zero point is not the packing's); every kernel (MOCK_NNAPI_INT8_GEMM_KERNEL) and one
or two threads give the same bits as the IntegerGemm path requantised in double
(MOCK_NNAPI_REQUANTIZE=double); constant weights (int8_gemm) and the same weights as inputs
(the IntegerGemm path) or MOCK_NNAPI_INT8_GEMM=0 give the same bits; the packed weights declined
by the DerivedConstants store (packed per run: the same bits); products whose sums could leave
int32 keep the saturating path.
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import pytest

from mock_nnapi import FuseCode, OperationCode

from .helpers import run_probe
from .test_conv_2d import PER_CHANNEL, QUANT_TYPES, build, conv_reference, conv_scalars
from .test_fully_connected import fc_tester
from .test_quantized_exact import multiplier_of, requantized

# (input zero point, weights zero point) per input type: the ends of the ranges both ways, and
# values in between (weights whose zero point is not 128 / -128 need the input's row sums).
ZERO_POINTS = {
    "uint8": {"ends": (0, 255), "ends_swapped": (255, 0), "between": (3, 77)},
    "int8": {"ends": (-128, 127), "ends_swapped": (127, -128), "between": (-5, 33)},
}

# (x shape NHWC, filter shape, explicit pads (l, r, t, b), strides (w, h), dilations (w, h))
CONV_SHAPES = {
    "pointwise_k1_n1": ((1, 3, 5, 1), (1, 1, 1, 1), (0, 0, 0, 0), (1, 1), (1, 1)),
    "pointwise_k3_n33": ((1, 7, 9, 3), (33, 1, 1, 3), (0, 0, 0, 0), (1, 1), (1, 1)),
    "pointwise_k65_n100_many_rows": (
        (1, 20, 21, 65),
        (100, 1, 1, 65),
        (0, 0, 0, 0),
        (1, 1),
        (1, 1),
    ),
    "pointwise_m1_k130_n70": ((1, 1, 1, 130), (70, 1, 1, 130), (0, 0, 0, 0), (1, 1), (1, 1)),
    "1x1_stride2": ((1, 9, 9, 6), (7, 1, 1, 6), (0, 0, 0, 0), (2, 2), (1, 1)),
    "3x3_c3_s2_padded_n17": ((1, 17, 19, 3), (17, 3, 3, 3), (1, 1, 1, 1), (2, 2), (1, 1)),
    "3x3_dilated": ((1, 12, 11, 5), (20, 3, 3, 5), (2, 2, 2, 2), (1, 1), (2, 2)),
    "5x5_k1600_batch2": ((2, 8, 9, 64), (40, 5, 5, 64), (2, 2, 1, 3), (1, 1), (1, 1)),
}


def centred_scale(sums: np.ndarray, x_scale: float, w_scale: float) -> float:
    """An output scale that spreads the sums' range over about 200 steps."""
    spread = max(1.0, float(sums.max() - sums.min()))
    return float(x_scale * w_scale * spread / 200.0)


def conv_case(shape, dtype_name, per_channel, zero_points, *, nchw=False, seed=0):
    """(run(weights_as_inputs) -> NHWC output, expected NHWC output)."""
    dtype, code = QUANT_TYPES[dtype_name]
    info = np.iinfo(dtype)
    x_shape, w_shape, pads, strides, dilations = CONV_SHAPES[shape]
    rng = np.random.default_rng(seed)
    x_zp, w_zp = ZERO_POINTS[dtype_name][zero_points]
    x = rng.integers(info.min, info.max + 1, x_shape, dtype=dtype)
    c_out = w_shape[0]
    x_scale = 0.05
    if per_channel:
        w = rng.integers(-128, 128, w_shape, dtype=np.int8)
        w_scales = rng.uniform(0.008, 0.012, c_out).astype(np.float32)
        offsets = w.astype(np.int64)
        w_quant, channel_quant, filter_code = None, (0, w_scales.tolist()), PER_CHANNEL
        b_scale = 0.0
    else:
        w = rng.integers(info.min, info.max + 1, w_shape, dtype=dtype)
        w_scales = np.full(c_out, 0.01, np.float32)
        offsets = w.astype(np.int64) - w_zp
        w_quant, channel_quant, filter_code = (0.01, w_zp), None, code
        b_scale = float(np.float32(x_scale) * np.float32(0.01))
    no_bias = conv_reference(
        x.astype(np.int64) - x_zp, offsets, np.zeros(c_out), pads, strides, dilations
    )
    # A bias that centres each channel's sums (zero points at the ends make them one-signed).
    b = (-np.round(no_bias.reshape(-1, c_out).mean(axis=0))).astype(np.int32)
    sums = no_bias + b
    out_scale = centred_scale(sums, x_scale, 0.01)
    out_zp = int(info.min) + 128
    multipliers = np.array([multiplier_of(x_scale, s, out_scale) for s in w_scales])
    expected = requantized(sums, multipliers, out_scale, out_zp, dtype)
    scalars = conv_scalars(pads, strides, FuseCode.NONE, nchw, dilations)

    def run(weights_as_inputs=False):
        result = build(
            OperationCode.CONV_2D,
            np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x,
            w,
            b,
            scalars,
            code,
            expected.transpose(0, 3, 1, 2).shape if nchw else expected.shape,
            x_quant=(x_scale, x_zp),
            w_quant=w_quant,
            channel_quant=channel_quant,
            b_scale=b_scale,
            out_quant=(out_scale, out_zp),
            filter_code=filter_code,
            weights_as_inputs=weights_as_inputs,
        ).run()[0]
        return np.ascontiguousarray(result.transpose(0, 2, 3, 1)) if nchw else result

    return run, expected


# (batch, input size, units)
FC_SHAPES = {
    "m1_k1_n1": (1, 1, 1),
    "m1_k7_n33": (1, 7, 33),
    "m3_k130_n70": (3, 130, 70),
    "m5_k64_n32": (5, 64, 32),
    "m17_k301_n100": (17, 301, 100),
    "m70_k1100_n65": (70, 1100, 65),
}
# Packed weights past 2 MiB (blocks of rows of up to 512 KiB, the panels shared out): checked in
# this process only (the blocking does not depend on the kernel; the probe stays quick).
LARGE_FC_SHAPES = {
    "m1_k2048_n1100_large": (1, 2048, 1100),
    "m260_k2048_n1100_large": (260, 2048, 1100),
}


def fc_case(shape, dtype_name, zero_points, *, activation=FuseCode.NONE, seed=0):
    dtype, code = QUANT_TYPES[dtype_name]
    info = np.iinfo(dtype)
    batch, k, units = {**FC_SHAPES, **LARGE_FC_SHAPES}[shape]
    rng = np.random.default_rng(seed)
    x_zp, w_zp = ZERO_POINTS[dtype_name][zero_points]
    x = rng.integers(info.min, info.max + 1, (batch, k), dtype=dtype)
    w = rng.integers(info.min, info.max + 1, (units, k), dtype=dtype)
    x_scale, w_scale = 0.04, 0.02
    # In float64 (BLAS): exact, the sums stay far below 2^53.
    no_bias = ((x.astype(np.float64) - x_zp) @ (w.astype(np.float64) - w_zp).T).astype(np.int64)
    b = (-np.round(no_bias.mean(axis=0))).astype(np.int32)
    sums = no_bias + b
    out_scale = centred_scale(sums, x_scale, w_scale)
    out_zp = int(info.min) + 128
    expected = requantized(
        sums, multiplier_of(x_scale, w_scale, out_scale), out_scale, out_zp, dtype, activation
    )

    def run(weights_as_inputs=False):
        return fc_tester(
            x,
            w,
            b,
            activation,
            code,
            expected.shape,
            x_quant=(x_scale, x_zp),
            w_quant=(w_scale, w_zp),
            b_scale=float(np.float32(x_scale) * np.float32(w_scale)),
            out_quant=(out_scale, out_zp),
            weights_as_inputs=weights_as_inputs,
        ).run()[0]

    return run, expected


def all_cases():
    """name -> (run, expected) factories of every case the kernel probe runs."""
    cases = {}
    for shape in CONV_SHAPES:
        for dtype_name in QUANT_TYPES:
            for per_channel in (False, True):
                for zero_points in ("ends", "ends_swapped"):
                    name = f"conv/{shape}/{dtype_name}/{per_channel}/{zero_points}"
                    cases[name] = (conv_case, (shape, dtype_name, per_channel, zero_points))
    for shape in FC_SHAPES:
        for dtype_name in QUANT_TYPES:
            for zero_points in ZERO_POINTS[dtype_name]:
                name = f"fc/{shape}/{dtype_name}/{zero_points}"
                cases[name] = (fc_case, (shape, dtype_name, zero_points))
    return cases


@pytest.fixture
def local_switches(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """monkeypatch for this process's MOCK_NNAPI_* switches (test_packed_gemm's, for the same
    reason: with --target rpc/device the switches do not reach the operation's process)."""
    target = request.config.getoption("--target")
    if target != "mock":
        pytest.skip(
            f"sets MOCK_NNAPI_* switches of this process's mock; --target {target} runs the "
            "operation elsewhere: run it with --target mock"
        )
    return monkeypatch


def int8_gemm_by_default() -> bool:
    """Whether this machine's mock takes int8_gemm without MOCK_NNAPI_INT8_GEMM_KERNEL=portable:
    with a vector kernel (x86-64 with AVX2); elsewhere it keeps the IntegerGemm path."""
    return platform.machine() == "x86_64" and "avx2" in _cpu_flags()


def counter(name: str) -> int:
    from mock_nnapi import control

    return control.counter(name)


@pytest.mark.parametrize("zero_points", ["ends", "ends_swapped", "between"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("shape", list(CONV_SHAPES))
def test_conv_int8_gemm_is_exact(shape, dtype_name, per_channel, zero_points):
    from mock_nnapi import control

    run, expected = conv_case(shape, dtype_name, per_channel, zero_points, seed=len(shape))
    control.reset_counters()
    np.testing.assert_array_equal(run(), expected)
    # The constant filter took int8_gemm.
    assert counter("int8_gemm_products") == int(int8_gemm_by_default())


@pytest.mark.parametrize("zero_points", ["ends", "between"])
@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("shape", ["pointwise_k3_n33", "3x3_c3_s2_padded_n17", "3x3_dilated"])
def test_conv_int8_gemm_nchw_is_exact(shape, dtype_name, zero_points):
    run, expected = conv_case(shape, dtype_name, True, zero_points, nchw=True, seed=3)
    np.testing.assert_array_equal(run(), expected)


@pytest.mark.parametrize("zero_points", ["ends", "ends_swapped", "between"])
@pytest.mark.parametrize("dtype_name", list(QUANT_TYPES))
@pytest.mark.parametrize("shape", list(FC_SHAPES) + list(LARGE_FC_SHAPES))
def test_fully_connected_int8_gemm_is_exact(shape, dtype_name, zero_points):
    from mock_nnapi import control

    run, expected = fc_case(shape, dtype_name, zero_points, seed=len(shape))
    control.reset_counters()
    np.testing.assert_array_equal(run(), expected)
    assert counter("int8_gemm_products") == int(int8_gemm_by_default())


@pytest.mark.parametrize("activation", [FuseCode.RELU, FuseCode.RELU6])
def test_fully_connected_int8_gemm_activations_are_exact(activation):
    run, expected = fc_case("m17_k301_n100", "uint8", "between", activation=activation, seed=8)
    np.testing.assert_array_equal(run(), expected)


@pytest.mark.parametrize(
    "case",
    [
        (conv_case, ("3x3_c3_s2_padded_n17", "uint8", False, "ends")),
        (conv_case, ("pointwise_k65_n100_many_rows", "int8", True, "between")),
        (conv_case, ("3x3_dilated", "int8", False, "ends_swapped")),
        (fc_case, ("m3_k130_n70", "uint8", "between")),
        (fc_case, ("m70_k1100_n65", "int8", "ends")),
    ],
    ids=["conv_u8", "conv_s8_per_channel", "conv_s8_dilated", "fc_m3", "fc_m70"],
)
def test_same_bits_as_the_other_paths(case, local_switches):
    from mock_nnapi import control

    factory, arguments = case
    run, expected = factory(*arguments, seed=21)
    control.reset_counters()
    packed = run()
    assert counter("int8_gemm_products") == int(int8_gemm_by_default())
    np.testing.assert_array_equal(packed, expected)
    # Weights as model inputs: not constants, the IntegerGemm (or direct) path.
    control.reset_counters()
    np.testing.assert_array_equal(run(weights_as_inputs=True), packed)
    assert counter("int8_gemm_products") == 0
    local_switches.setenv("MOCK_NNAPI_INT8_GEMM", "0")
    control.reset_counters()
    np.testing.assert_array_equal(run(), packed)
    assert counter("int8_gemm_products") == 0


def test_declined_packed_weights_are_packed_per_run_with_the_same_bits(local_switches):
    from mock_nnapi import control

    run, expected = conv_case("3x3_dilated", "uint8", True, "between", seed=5)
    control.reset_counters()
    kept = run()
    assert control.counter("derived_constants_built") == 1  # the packed filter
    local_switches.setenv("MOCK_NNAPI_DERIVED_BUDGET_BYTES", "0")
    control.reset_counters()
    declined = run()
    assert control.counter("derived_constants_built") == 0
    assert counter("int8_gemm_products") == int(int8_gemm_by_default())
    np.testing.assert_array_equal(declined, kept)
    np.testing.assert_array_equal(kept, expected)


def test_sums_that_could_leave_int32_keep_the_saturating_path():
    # 33100 products of up to 255 * 255: the bound passes 2^31, so int8_gemm does not apply
    # (IntegerGemm saturates what leaves int32); a 33000-long reduction stays below it.
    from mock_nnapi import control

    rng = np.random.default_rng(6)
    for k, used in ((33100, 0), (33000, 1)):
        x = rng.integers(0, 256, (2, k), dtype=np.uint8)
        w = rng.integers(0, 256, (3, k), dtype=np.uint8)
        b = np.zeros(3, np.int32)
        sums = x.astype(np.int64) @ (w.astype(np.int64) - 255).T
        out_scale = float(0.25 * 0.25 * 1e6)
        expected = requantized(sums, multiplier_of(0.25, 0.25, out_scale), out_scale, 128, np.uint8)
        control.reset_counters()
        actual = fc_tester(
            x,
            w,
            b,
            FuseCode.NONE,
            QUANT_TYPES["uint8"][1],
            expected.shape,
            x_quant=(0.25, 0),
            w_quant=(0.25, 255),
            b_scale=0.0625,
            out_quant=(out_scale, 128),
        ).run()[0]
        assert counter("int8_gemm_products") == used * int(int8_gemm_by_default()), k
        np.testing.assert_array_equal(actual, expected)


# Runs in a fresh process (the kernel and the thread count are chosen when the library loads):
# every case of all_cases(), checked against its expected output, printed as digests.
PROBE = """
import hashlib, json, sys
import numpy as np
from tests.mock_ops import test_int8_gemm as t
digests = {}
for name, (factory, arguments) in t.all_cases().items():
    run, expected = factory(*arguments, seed=len(name))
    actual = run()
    if not np.array_equal(actual, expected):
        sys.exit(f"{name}: not the exact result")
    digests[name] = hashlib.sha256(actual.tobytes()).hexdigest()
from mock_nnapi import control
print(json.dumps({"digests": digests, "products": control.counter("int8_gemm_products")}))
"""


def _probe(**environment: str) -> dict:
    return run_probe(PROBE, **environment)


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


KERNELS = ["portable", "avx2", "avxvnni", "avx512vnni"]
KERNEL_FLAGS = {
    "portable": set(),
    "avx2": {"avx2"},
    "avxvnni": {"avx2", "avx_vnni"},
    "avx512vnni": {"avx512f", "avx512bw", "avx512_vnni"},
}


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_kernel_and_thread_count_exact_and_same_bits(kernel, request):
    if request.config.getoption("--target") != "mock":
        pytest.skip("runs this machine's mock in a subprocess: run it with --target mock")
    if kernel != "portable" and platform.machine() != "x86_64":
        pytest.skip(f"the {kernel} kernel is x86-64's")
    missing = KERNEL_FLAGS[kernel] - _cpu_flags()
    if missing:
        pytest.skip(f"this CPU lacks {sorted(missing)} for the {kernel} kernel")
    one = _probe(MOCK_NNAPI_INT8_GEMM_KERNEL=kernel, OPENBLAS_NUM_THREADS="1")
    two = _probe(MOCK_NNAPI_INT8_GEMM_KERNEL=kernel, OPENBLAS_NUM_THREADS="2")
    assert one["digests"] == two["digests"]
    assert one["products"] == len(all_cases())  # every case ran on int8_gemm
    # The old path, requantised by the double definition (vector_convert's AVX-512 float version
    # off): the same bits.
    reference = _probe(
        MOCK_NNAPI_INT8_GEMM="0", MOCK_NNAPI_REQUANTIZE="double", OPENBLAS_NUM_THREADS="2"
    )
    assert reference["products"] == 0
    assert one["digests"] == reference["digests"]
