// SPDX-License-Identifier: Apache-2.0
// Elementary functions on sixteen floats at a time (GCC/Clang vector extensions, so the same source
// runs on SSE2, AVX2, AVX-512, NEON and under the sanitizers): plain IEEE float arithmetic and
// integer bit operations, no branches, no calls into libm.
//
// ExpV(x) is e^x lane by lane: n = round(x / ln 2) (the 1.5 * 2^23 rounding trick), r = x - n ln 2
// in two steps (Cody-Waite, ln 2 split so that n * kLn2Hi is exact), e^r by a degree-6 polynomial
// on [-ln 2 / 2, ln 2 / 2] (relative error 1.1e-8 in exact arithmetic), then scaled by 2^n as two
// powers of two (so that results in the subnormal range round once and 2^128 still overflows to
// infinity). Measured against e^x rounded from double over every float in [-104, 89]
// (tests/c/exp_ulp.cc): at most 1 ulp from the correctly rounded value (docs/performance.md).
// +inf gives +inf, -inf gives 0, NaN stays NaN; overflow gives +inf, underflow 0.
//
// The mock is built with -ffp-contract=off and without -ffast-math, so every build of these
// functions (the x86-64 target_clones below, NEON on arm64, the sanitizer builds) computes the
// same bits.
#ifndef MOCK_NNAPI_SRC_KERNELS_VECTOR_MATH_H_
#define MOCK_NNAPI_SRC_KERNELS_VECTOR_MATH_H_

#include <cstddef>
#include <cstdint>

// Vector values passed between inline functions: no ABI is involved (GCC warns regardless).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

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

// Sixteen floats (GCC/Clang vector extensions: one AVX-512 register, two AVX, four SSE or NEON
// registers).
// Written with explicit vector operations rather than left to the auto-vectoriser: e^x needs
// selects (the clamp), which GCC does not vectorise for SSE2, AVX2 or NEON under the default
// -ftrapping-math (it only does with AVX-512's masks).
constexpr size_t kLanes = 16;
typedef float FloatV __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t IntV __attribute__((vector_size(64), aligned(4), may_alias));
typedef uint32_t UintV __attribute__((vector_size(64), aligned(4), may_alias));
typedef double DoubleV __attribute__((vector_size(128), aligned(4), may_alias));
typedef int64_t LongV __attribute__((vector_size(128), aligned(4), may_alias));

// Vector values never cross a function boundary by value: Clang rejects AVX-sized vector
// arguments and results in functions compiled for the SSE2 baseline (the default clone), even when
// they are inlined. Helpers take references and write through pointers.
#define MOCK_NNAPI_INLINE __attribute__((always_inline)) inline

// *out = mask ? a : b, lane by lane (mask lanes are 0 or -1, as comparisons give).
MOCK_NNAPI_INLINE void Select(const IntV& mask, const FloatV& a, const FloatV& b, FloatV* out) {
  *out = reinterpret_cast<FloatV>((mask & reinterpret_cast<IntV>(a)) |
                                  (~mask & reinterpret_cast<IntV>(b)));
}
MOCK_NNAPI_INLINE void Select(const LongV& mask, const DoubleV& a, const DoubleV& b, DoubleV* out) {
  *out = reinterpret_cast<DoubleV>((mask & reinterpret_cast<LongV>(a)) |
                                   (~mask & reinterpret_cast<LongV>(b)));
}

// *out = e^(x + tail), lane by lane, for a `tail` below half an ulp of x (the rounding error of
// an argument computed in higher precision, added to the reduced argument where it is not lost).
MOCK_NNAPI_INLINE void ExpV(const FloatV& x, const FloatV& tail, FloatV* out) {
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
  const FloatV low = FloatV{} - 104.f;
  const FloatV high = FloatV{} + 89.f;
  // Beyond these e^x is 0 or infinity in float; clamping keeps n within [-150, 128]. NaN
  // compares false and passes through: every step below then gives NaN.
  FloatV above, clamped;
  Select(x < low, low, x, &above);
  Select(above > high, high, above, &clamped);
  const FloatV shifted = clamped * kLog2e + kRound;
  const FloatV n = shifted - kRound;
  // The integer n from the low mantissa bits of `shifted` (no float-to-int conversion; unsigned
  // arithmetic, so that the meaningless bits of a NaN cannot overflow).
  const FloatV round = FloatV{} + kRound;
  const IntV ni =
      reinterpret_cast<IntV>(reinterpret_cast<UintV>(shifted) - reinterpret_cast<UintV>(round));
  const FloatV r = ((clamped - n * kLn2Hi) - n * kLn2Lo) + tail;
  const FloatV q = kC2 + r * (kC3 + r * (kC4 + r * (kC5 + r * kC6)));
  const FloatV p = 1.f + (r + (r * r) * q);
  // 2^n as 2^(n/2) * 2^(n - n/2): both factors are normal floats for n in [-150, 128].
  const IntV n1 = ni / 2;
  const IntV n2 = ni - n1;
  const FloatV s1 = reinterpret_cast<FloatV>(reinterpret_cast<UintV>(n1 + 127) << 23);
  const FloatV s2 = reinterpret_cast<FloatV>(reinterpret_cast<UintV>(n2 + 127) << 23);
  *out = (p * s1) * s2;
}

// e^x of one float: lane 0 of ExpV, so a loop's scalar remainder matches its vector lanes.
MOCK_NNAPI_INLINE float ExpFloat(float x) {
  const FloatV in = FloatV{} + x;
  FloatV out;
  ExpV(in, FloatV{}, &out);
  return out[0];
}

}  // namespace vector_math
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_VECTOR_MATH_H_
