// SPDX-License-Identifier: Apache-2.0
// Elementary functions on eight floats at a time (GCC/Clang vector extensions, so the same source
// runs on SSE2, AVX2, AVX-512, NEON and under the sanitizers): plain IEEE float arithmetic and
// integer bit operations, no branches, no calls into libm.
//
// Exp8(x) is e^x lane by lane: n = round(x / ln 2) (the 1.5 * 2^23 rounding trick), r = x - n ln 2
// in two steps (Cody-Waite, ln 2 split so that n * kLn2Hi is exact), e^r by a degree-6 polynomial
// on [-ln 2 / 2, ln 2 / 2] (relative error 1.1e-8 in exact arithmetic), then scaled by 2^n as two
// powers of two (so that results in the subnormal range round once and 2^128 still overflows to
// infinity). Measured against e^x rounded from double over every float in [-104, 89]
// (tools/exp_ulp.cc): at most 1 ulp from the correctly rounded value (docs/performance.md).
// +inf gives +inf, -inf gives 0, NaN stays NaN; overflow gives +inf, underflow 0.
//
// The mock is built with -ffp-contract=off and without -ffast-math, so every build of these
// functions (the x86-64 target_clones below, NEON on arm64, the sanitizer builds) computes the
// same bits.
#ifndef MOCK_NNAPI_SRC_OPS_VECTOR_MATH_H_
#define MOCK_NNAPI_SRC_OPS_VECTOR_MATH_H_

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

// Eight floats (GCC/Clang vector extensions: one AVX register, two SSE or NEON registers).
// Written with explicit vector operations rather than left to the auto-vectoriser: e^x needs
// selects (the clamp), which GCC does not vectorise for SSE2, AVX2 or NEON under the default
// -ftrapping-math (it only does with AVX-512's masks).
typedef float Float8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef int32_t Int8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef uint32_t Uint8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef double Double8 __attribute__((vector_size(64), aligned(4), may_alias));
typedef int64_t Long8 __attribute__((vector_size(64), aligned(4), may_alias));

// Vector values never cross a function boundary by value: Clang rejects AVX-sized vector
// arguments and results in functions compiled for the SSE2 baseline (the default clone), even when
// they are inlined. Helpers take references and write through pointers.
#define MOCK_NNAPI_INLINE __attribute__((always_inline)) inline

// *out = mask ? a : b, lane by lane (mask lanes are 0 or -1, as comparisons give).
MOCK_NNAPI_INLINE void Select(const Int8& mask, const Float8& a, const Float8& b, Float8* out) {
  *out = reinterpret_cast<Float8>((mask & reinterpret_cast<Int8>(a)) |
                                  (~mask & reinterpret_cast<Int8>(b)));
}
MOCK_NNAPI_INLINE void Select(const Long8& mask, const Double8& a, const Double8& b, Double8* out) {
  *out = reinterpret_cast<Double8>((mask & reinterpret_cast<Long8>(a)) |
                                   (~mask & reinterpret_cast<Long8>(b)));
}

// *out = e^(x + tail), lane by lane, for a `tail` below half an ulp of x (the rounding error of
// an argument computed in higher precision, added to the reduced argument where it is not lost).
MOCK_NNAPI_INLINE void Exp8(const Float8& x, const Float8& tail, Float8* out) {
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
  const Float8 low = Float8{} - 104.f;
  const Float8 high = Float8{} + 89.f;
  // Beyond these e^x is 0 or infinity in float; clamping keeps n within [-150, 128]. NaN
  // compares false and passes through: every step below then gives NaN.
  Float8 above, clamped;
  Select(x < low, low, x, &above);
  Select(above > high, high, above, &clamped);
  const Float8 shifted = clamped * kLog2e + kRound;
  const Float8 n = shifted - kRound;
  // The integer n from the low mantissa bits of `shifted` (no float-to-int conversion; unsigned
  // arithmetic, so that the meaningless bits of a NaN cannot overflow).
  const Float8 round = Float8{} + kRound;
  const Int8 ni =
      reinterpret_cast<Int8>(reinterpret_cast<Uint8>(shifted) - reinterpret_cast<Uint8>(round));
  const Float8 r = ((clamped - n * kLn2Hi) - n * kLn2Lo) + tail;
  const Float8 q = kC2 + r * (kC3 + r * (kC4 + r * (kC5 + r * kC6)));
  const Float8 p = 1.f + (r + (r * r) * q);
  // 2^n as 2^(n/2) * 2^(n - n/2): both factors are normal floats for n in [-150, 128].
  const Int8 n1 = ni / 2;
  const Int8 n2 = ni - n1;
  const Float8 s1 = reinterpret_cast<Float8>(reinterpret_cast<Uint8>(n1 + 127) << 23);
  const Float8 s2 = reinterpret_cast<Float8>(reinterpret_cast<Uint8>(n2 + 127) << 23);
  *out = (p * s1) * s2;
}

// e^x of one float: lane 0 of Exp8, so a loop's scalar remainder matches its vector lanes.
MOCK_NNAPI_INLINE float ExpFloat(float x) {
  const Float8 in = Float8{} + x;
  Float8 out;
  Exp8(in, Float8{}, &out);
  return out[0];
}

}  // namespace vector_math
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_VECTOR_MATH_H_
