// SPDX-License-Identifier: Apache-2.0
// Checks mock_nnapi/src/kernels/vector_convert.cc against the scalar definitions it replaces,
// bit for bit, and times it:
// - FloatToHalf and RoundToHalf over every one of the 2^32 float bit patterns (FloatToHalfBits,
//   and HalfBitsToFloat of it), HalfToFloat over every half (HalfBitsToFloat);
// - RequantizeRows against gemm::Requantize on random accumulators, biases and multipliers, on
//   exact ties (multipliers 0.5 and 0.25), on sums near the int32 limits and on huge multipliers,
//   one ulp off the ties, for uint8 and int8 outputs and odd channel counts (the tails).
// Build and run (from the repository root):
//   g++ -O3 -ffp-contract=off -Imock_nnapi/src/kernels -Imock_nnapi/src -Icommon \
//     -Imock_nnapi/include tests/c/vector_convert_check.cc mock_nnapi/src/kernels/vector_convert.cc
//     \ -o /tmp/vector_convert_check && /tmp/vector_convert_check
// Exits 1 on the first mismatch.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "gemm.h"
#include "half.h"
#include "vector_convert.h"

namespace {

using mock_nnapi::vector_convert::FloatToHalf;
using mock_nnapi::vector_convert::HalfToFloat;
using mock_nnapi::vector_convert::RequantizeRows;
using mock_nnapi::vector_convert::RoundToHalf;

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

int CheckHalves() {
  std::vector<uint16_t> halves(65536);
  for (uint32_t h = 0; h < 65536; ++h) halves[h] = static_cast<uint16_t>(h);
  std::vector<float> floats(65536);
  HalfToFloat(halves.data(), halves.size(), floats.data());
  for (uint32_t h = 0; h < 65536; ++h) {
    const float expected = nnapi_common::HalfBitsToFloat(static_cast<uint16_t>(h));
    if (Bits(floats[h]) != Bits(expected)) {
      std::printf("HalfToFloat(0x%04x) = 0x%08x, expected 0x%08x\n", h, Bits(floats[h]),
                  Bits(expected));
      return 1;
    }
  }
  std::printf("HalfToFloat: all 65536 halves match\n");
  return 0;
}

int CheckFloats() {
  constexpr size_t kBlock = size_t{1} << 20;
  std::vector<float> in(kBlock), rounded(kBlock);
  std::vector<uint16_t> out(kBlock);
  double seconds = 0;
  for (uint64_t start = 0; start < (uint64_t{1} << 32); start += kBlock) {
    for (size_t i = 0; i < kBlock; ++i) {
      const uint32_t bits = static_cast<uint32_t>(start + i);
      std::memcpy(&in[i], &bits, sizeof(bits));
    }
    const auto begin = std::chrono::steady_clock::now();
    FloatToHalf(in.data(), kBlock, out.data());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    rounded = in;
    RoundToHalf(rounded.data(), kBlock);
    for (size_t i = 0; i < kBlock; ++i) {
      const uint16_t expected = nnapi_common::FloatToHalfBits(in[i]);
      const float expected_rounded = nnapi_common::HalfBitsToFloat(expected);
      if (out[i] != expected || Bits(rounded[i]) != Bits(expected_rounded)) {
        std::printf(
            "float 0x%08x: FloatToHalf 0x%04x (expected 0x%04x), RoundToHalf 0x%08x "
            "(expected 0x%08x)\n",
            Bits(in[i]), out[i], expected, Bits(rounded[i]), Bits(expected_rounded));
        return 1;
      }
    }
  }
  std::printf("FloatToHalf, RoundToHalf: all 2^32 floats match (FloatToHalf %.2f ns/element)\n",
              seconds * 1e9 / 4294967296.0);
  return 0;
}

template <typename Q>
int CheckRequantize(std::mt19937_64& rng) {
  const size_t channel_counts[] = {1, 7, 8, 9, 16, 31, 96, 100};
  double seconds = 0;
  size_t elements = 0;
  for (int trial = 0; trial < 480; ++trial) {
    const size_t channels = channel_counts[trial % 8];
    const size_t rows = 1 + rng() % 64;
    std::vector<int32_t> acc(rows * channels), bias(channels);
    std::vector<double> multipliers(channels);
    std::vector<Q> out(rows * channels);
    const int kind = trial % 6;
    for (size_t c = 0; c < channels; ++c) {
      bias[c] = static_cast<int32_t>(rng() % 4001) - 2000;
      switch (kind) {
        case 0:  // typical: small real multipliers
          multipliers[c] = std::ldexp(static_cast<double>(rng() % 1000000 + 1), -32);
          break;
        case 1:  // exact ties
          multipliers[c] = (c % 2) ? 0.5 : 0.25;
          break;
        case 2:  // huge
          multipliers[c] = std::ldexp(1.0, static_cast<int>(rng() % 80));
          break;
        case 5:  // one ulp off the exact ties (float rounds such a multiplier onto the tie)
          multipliers[c] = std::nextafter((c % 2) ? 0.5 : 0.25, (c % 4) < 2 ? 0.0 : 1.0);
          break;
        default:  // float-product multipliers as OutputMultipliers makes them
          multipliers[c] = static_cast<double>(0.05f * (0.001f + (rng() % 1000) * 1e-5f)) / 0.7f;
      }
    }
    for (auto& a : acc) {
      const uint64_t r = rng();
      a = kind == 4   ? static_cast<int32_t>(r)               // the whole int32 range
          : kind == 5 ? static_cast<int32_t>(r % 1201) - 600  // near-ties inside the range
                      : static_cast<int32_t>(r % 2000001) - 1000000;
    }
    int32_t zero_point = static_cast<int32_t>(rng() % 256);
    int32_t low = 0, high = 255;
    if (sizeof(Q) == 1 && static_cast<Q>(-1) < 0) {
      zero_point -= 128;
      low = -128;
      high = 127;
    }
    if (trial % 3 == 0) low += 6;  // an activation's narrower range
    const auto begin = std::chrono::steady_clock::now();
    RequantizeRows(acc.data(), rows, channels, bias.data(), multipliers.data(), zero_point, low,
                   high, out.data());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    elements += acc.size();
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < channels; ++c) {
        const Q expected = mock_nnapi::gemm::Requantize<Q>(int64_t{acc[r * channels + c]} + bias[c],
                                                           multipliers[c], zero_point, low, high);
        if (out[r * channels + c] != expected) {
          std::printf(
              "RequantizeRows: acc %d bias %d multiplier %.17g zero point %d: %d, "
              "expected %d\n",
              acc[r * channels + c], bias[c], multipliers[c], zero_point,
              int{out[r * channels + c]}, int{expected});
          return 1;
        }
      }
    }
  }
  std::printf("RequantizeRows (%s): %zu elements match (%.2f ns/element)\n",
              sizeof(Q) == 1 && static_cast<Q>(-1) < 0 ? "int8" : "uint8", elements,
              seconds * 1e9 / elements);
  return 0;
}

}  // namespace

int main() {
  std::mt19937_64 rng(21);
  if (CheckHalves() != 0) return 1;
  if (CheckRequantize<uint8_t>(rng) != 0) return 1;
  if (CheckRequantize<int8_t>(rng) != 0) return 1;
  if (CheckFloats() != 0) return 1;
  return 0;
}
