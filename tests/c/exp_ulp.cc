// SPDX-License-Identifier: Apache-2.0
// Measures vector_math::ExpFloat (mock_nnapi/src/kernels/vector_math.h) against e^x computed in
// double and rounded to float, over every float in [lo, hi] (default [-104, 89], where e^x goes
// from 0 to infinity), and prints the largest error in ulps of the float result, for normal and
// for subnormal results. Build and run:
//   g++ -O2 -ffp-contract=off -Imock_nnapi/src/kernels tests/c/exp_ulp.cc -o /tmp/exp_ulp \
//     && /tmp/exp_ulp
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "vector_math.h"

namespace {

int64_t OrderedBits(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits < 0 ? -int64_t{bits & 0x7fffffff} : int64_t{bits};
}

MOCK_NNAPI_SIMD_CLONES void ExpArray(const float* x, float* y, size_t count) {
  for (size_t i = 0; i < count; ++i) y[i] = mock_nnapi::vector_math::ExpFloat(x[i]);
}

}  // namespace

int main(int argc, char** argv) {
  const float lo = argc > 1 ? std::strtof(argv[1], nullptr) : -104.f;
  const float hi = argc > 2 ? std::strtof(argv[2], nullptr) : 89.f;
  // In chunks of 2^20 floats (the range holds about 2^31).
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<float> x(kChunk), y(kChunk);
  int64_t worst_normal = 0, worst_subnormal = 0;
  float at_normal = 0.f, at_subnormal = 0.f;
  size_t total = 0, inexact = 0, mismatches = 0;
  float next = lo;
  bool done = false;
  while (!done) {
    size_t count = 0;
    while (count < kChunk && !done) {
      x[count++] = next;
      done = next >= hi;
      next = std::nextafter(next, std::numeric_limits<float>::infinity());
    }
    ExpArray(x.data(), y.data(), count);
    total += count;
    for (size_t i = 0; i < count; ++i) {
      const float expected = static_cast<float>(std::exp(static_cast<double>(x[i])));
      if (std::isinf(expected) || std::isinf(y[i])) {
        if (expected != y[i]) ++mismatches;
        continue;
      }
      const int64_t error = std::llabs(OrderedBits(y[i]) - OrderedBits(expected));
      if (error != 0) ++inexact;
      if (expected >= std::numeric_limits<float>::min()) {
        if (error > worst_normal) worst_normal = error, at_normal = x[i];
      } else if (error > worst_subnormal) {
        worst_subnormal = error, at_subnormal = x[i];
      }
    }
  }
  const float special[] = {std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), 0.f, -0.f};
  float special_out[5];
  ExpArray(special, special_out, 5);
  std::printf("%zu floats in [%g, %g], %zu not correctly rounded (%.2f%%)\n", total, lo, hi,
              inexact, 100.0 * static_cast<double>(inexact) / static_cast<double>(total));
  std::printf("max error, normal results: %lld ulp (at x = %.9g)\n",
              static_cast<long long>(worst_normal), at_normal);
  std::printf("max error, subnormal results: %lld ulp (at x = %.9g)\n",
              static_cast<long long>(worst_subnormal), at_subnormal);
  std::printf("overflow mismatches: %zu\n", mismatches);
  std::printf("exp(inf) = %g, exp(-inf) = %g, exp(nan) = %g, exp(0) = %g, exp(-0) = %g\n",
              special_out[0], special_out[1], special_out[2], special_out[3], special_out[4]);
  return 0;
}
