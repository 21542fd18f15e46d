# SPDX-License-Identifier: Apache-2.0
"""The measured accuracy check of the W8A8 scheme (tvm_nnapi.llm.w8a8_accuracy), simulated in
numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tvm_nnapi.llm import w8a8_accuracy as w8a8


def test_quantized_matmul_error_is_within_the_quantization_steps():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    weight = rng.standard_normal((32, 64)).astype(np.float32)
    exact = x @ weight.T
    q = w8a8.Quantization()
    approx = w8a8.quantized_matmul(x, weight, (float(x.min()), float(x.max())), q)
    x_step = (x.max() - min(x.min(), 0)) / 255
    w_step = np.abs(weight).max(axis=1) / 127
    # Each product errs by at most half a step of each factor (plus their product).
    bound = 0.5 * (np.abs(weight).sum(axis=1) * x_step + np.abs(x).sum(axis=1)[:, None] * w_step)
    assert np.all(np.abs(approx - exact) <= bound + 1e-4)
    assert np.abs(approx - exact).max() > 0  # it did quantize
    fine = w8a8.quantized_matmul(
        x, weight, (float(x.min()), float(x.max())), w8a8.Quantization(bits=16)
    )
    assert np.abs(fine - exact).max() < np.abs(approx - exact).max() / 50


def test_per_channel_weights_beat_per_tensor_ones_when_rows_differ():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    weight = rng.standard_normal((4, 32)).astype(np.float32)
    weight[0] *= 1000  # one large row: a per-tensor scale wastes the others' resolution
    exact = x @ weight.T
    x_range = (float(x.min()), float(x.max()))
    errors = {}
    for scheme in w8a8.WEIGHT_SCHEMES:
        approx = w8a8.quantized_matmul(x, weight, x_range, w8a8.Quantization(weights=scheme))
        errors[scheme] = np.abs(approx - exact)[:, 1:].max()  # the small rows
    assert errors["per-channel"] < errors["per-tensor"] / 10
    with pytest.raises(ValueError, match="weights must be"):
        w8a8.quantized_matmul(x, weight, x_range, w8a8.Quantization(weights="per-row"))


def test_accuracy_check_on_tiny_llama():
    report = w8a8.accuracy_check(calibration_prompts=2, evaluation_prompts=3, prompt_length=12)
    # The numpy float32 model is TVM's host build of the same Relax model.
    assert report.reference_max_abs_difference is not None
    assert report.reference_max_abs_difference < 1e-4
    assert report.positions == 36
    assert 0 < report.mean_abs_logit_error <= report.max_abs_logit_error
    assert 0.5 < report.top1_agreement <= 1.0
    # Calibrated on the prompts it is judged on, little is clipped (only where quantization
    # itself moved an activation past the float32 range) and the error is mostly the
    # rounding's: four more bits cut it by well over 4x.
    small = dict(calibration_prompts=2, evaluation_prompts=3, prompt_length=12)
    in_sample = w8a8.accuracy_check(**small, in_sample=True, check_reference=False)
    assert in_sample.clipped_fraction < report.clipped_fraction
    assert in_sample.calibration_prompts == 0
    wider = w8a8.accuracy_check(**small, bits=12, in_sample=True, check_reference=False)
    assert wider.mean_abs_logit_error < in_sample.mean_abs_logit_error / 4
