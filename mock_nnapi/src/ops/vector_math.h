// SPDX-License-Identifier: Apache-2.0
// Elementary functions written so that a loop over an array of them vectorises: plain IEEE
// float arithmetic and integer bit operations, no branches, no calls into libm.
//
// ExpFloat(x) is e^x in float32 (ExpFloat(x, tail): e^(x + tail)): n = round(x / ln 2) (the 1.5 *
// 2^23 rounding trick), r = x - n ln 2 in two steps (Cody-Waite, ln 2 split so that n * kLn2Hi is
// exact), e^r by a degree-6 polynomial on [-ln 2 / 2, ln 2 / 2] (relative error 1.1e-8 in exact
// arithmetic), then scaled by 2^n as two powers of two (so that results in the subnormal range
// round once and 2^128 still overflows to infinity). Measured against e^x rounded from double over
// every float in
// [-104, 89] (tools/exp_ulp.cc): at most 1 ulp from the correctly rounded value for normal
// results (see docs/performance.md). +inf gives +inf, -inf gives 0, NaN stays NaN; overflow
// gives +inf, underflow 0.
//
// The mock is built with -ffp-contract=off and without -ffast-math, so every clone of a loop
// (the x86-64 target_clones below, NEON on arm64, the sanitizer builds) computes the same bits.
#ifndef MOCK_NNAPI_SRC_OPS_VECTOR_MATH_H_
#define MOCK_NNAPI_SRC_OPS_VECTOR_MATH_H_

#include <cstdint>
#include <cstring>

namespace mock_nnapi {
namespace vector_math {

// Loops that call these functions carry AVX-512 and AVX2 clones on x86-64, chosen when the
// library loads (the default clone is the SSE2 baseline). Same results on each: no FMA
// contraction, no reassociation.
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define MOCK_NNAPI_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef MOCK_NNAPI_SIMD_CLONES
#define MOCK_NNAPI_SIMD_CLONES
#endif

inline int32_t FloatBits(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float BitsFloat(int32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// e^(x + tail) for a `tail` below half an ulp of x (the rounding error of an argument computed in
// higher precision): added to the reduced argument, where it is not lost.
inline float ExpFloat(float x, float tail) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693145751953125f;  // 0x3f317200: 15 significant bits
  constexpr float kLn2Lo = 1.42860676533018704e-6f;
  constexpr float kRound = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
  // Polynomial coefficients of (e^r - 1 - r) / r^2, fitted on [-ln 2 / 2, ln 2 / 2].
  constexpr float kC2 = 0.5f;
  constexpr float kC3 = 0.16666576266288757f;
  constexpr float kC4 = 0.04166646674275398f;
  constexpr float kC5 = 0.008363175205886364f;
  constexpr float kC6 = 0.0013933643931522965f;
  // Beyond these e^x is 0 or infinity in float; clamping keeps n within [-150, 128]. NaN
  // compares false and passes through (the result is replaced below).
  const float clamped = x < -104.f ? -104.f : (x > 89.f ? 89.f : x);
  const float shifted = clamped * kLog2e + kRound;
  const float n = shifted - kRound;
  // The integer n from the low mantissa bits of `shifted` (no float-to-int conversion).
  const int32_t ni = FloatBits(shifted) - FloatBits(kRound);
  // A clamped argument ignores its tail (which may be infinite or NaN when x is infinite).
  const float r = ((clamped - n * kLn2Hi) - n * kLn2Lo) + (clamped == x ? tail : 0.f);
  const float q = kC2 + r * (kC3 + r * (kC4 + r * (kC5 + r * kC6)));
  const float p = 1.f + (r + (r * r) * q);
  // 2^n as 2^(n/2) * 2^(n - n/2): both factors are normal floats for n in [-150, 128].
  const int32_t n1 = ni / 2;
  const int32_t n2 = ni - n1;
  const float y = (p * BitsFloat((n1 + 127) << 23)) * BitsFloat((n2 + 127) << 23);
  return x != x ? x : y;
}

inline float ExpFloat(float x) { return ExpFloat(x, 0.f); }

}  // namespace vector_math
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_VECTOR_MATH_H_
