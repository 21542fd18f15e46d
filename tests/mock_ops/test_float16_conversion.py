# SPDX-License-Identifier: Apache-2.0
"""The float16 <-> float32 conversions of the fp16 kernels (input read as float32, result stored
as float16): FULLY_CONNECTED of every float16 value with a 1x1 identity weight and a -0 bias
returns each value's bits (NaNs as float16's quiet NaN of their sign), through the vectorised
loops and their scalar tail."""

from __future__ import annotations

import numpy as np

from .test_fully_connected import fc_tester


def test_float16_round_trip_of_every_half():
    bits = np.arange(65536 + 7, dtype=np.uint32) % 65536  # 7 more: a count that leaves a tail
    x = bits.astype(np.uint16).view(np.float16).reshape(-1, 1)
    w = np.ones((1, 1), np.float16)
    b = np.array([-0.0], np.float16)
    result = fc_tester(x, w, b).run()[0].reshape(-1).view(np.uint16)
    nan = np.isnan(x.reshape(-1))
    np.testing.assert_array_equal(result[~nan], bits.astype(np.uint16)[~nan])
    np.testing.assert_array_equal(result[nan], (bits[nan] & 0x8000).astype(np.uint16) | 0x7E00)
