// SPDX-License-Identifier: Apache-2.0
// Vectorised requantisation and fp16 conversions (see vector_convert.h). No operation is
// registered here.
#include "vector_convert.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "../ops/gemm.h"
#include "half.h"
#include "vector_math.h"

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target)
#include <immintrin.h>
#define MOCK_NNAPI_CONVERT_AVX512 1
#endif
#endif

namespace mock_nnapi {
namespace vector_convert {
namespace {

using vector_math::FloatV;
using vector_math::IntV;
using vector_math::kLanes;
using vector_math::UintV;

typedef uint16_t HalfV __attribute__((vector_size(2 * kLanes), aligned(2), may_alias));

// Requantisation works on eight lanes: eight doubles are one AVX-512 register, and GCC compiles
// the selects of wider double vectors (no machine mode) lane by lane.
constexpr size_t kDoubleLanes = 8;
typedef double Double8 __attribute__((vector_size(8 * kDoubleLanes), aligned(8), may_alias));
typedef int64_t Long8 __attribute__((vector_size(8 * kDoubleLanes), aligned(8), may_alias));
typedef int32_t Int8 __attribute__((vector_size(4 * kDoubleLanes), aligned(4), may_alias));
typedef uint8_t Bytes32 __attribute__((vector_size(32), aligned(1), may_alias));
typedef uint8_t Bytes16 __attribute__((vector_size(16), aligned(1), may_alias));
typedef uint8_t ByteV __attribute__((vector_size(kLanes), aligned(1), may_alias));
typedef int8_t SignedByteV __attribute__((vector_size(kLanes), aligned(1), may_alias));

// std::round(x) lane by lane (halves away from zero, the sign of a zero kept): for |x| < 2^52,
// (|x| + 2^52) - 2^52 is |x| rounded to an integer (nearest, ties to even); one less where that
// went up is the truncation, and the exact remainder |x| - t decides the half. Larger values are
// integers already.
MOCK_NNAPI_INLINE void RoundV(const Double8& x, Double8* out) {
  constexpr double kTwo52 = 4503599627370496.0;
  const Long8 sign_bit = Long8{} + static_cast<int64_t>(0x8000000000000000ull);
  const Double8 magnitude = reinterpret_cast<Double8>(reinterpret_cast<Long8>(x) & ~sign_bit);
  const Double8 nearest = (magnitude + kTwo52) - kTwo52;
  const Double8 truncated = nearest > magnitude ? nearest - 1.0 : nearest;
  Double8 rounded = magnitude - truncated >= 0.5 ? truncated + 1.0 : truncated;
  rounded = magnitude >= kTwo52 ? magnitude : rounded;
  *out = reinterpret_cast<Double8>(reinterpret_cast<Long8>(rounded) |
                                   (reinterpret_cast<Long8>(x) & sign_bit));
}

// Requantize of eight lanes, as int32 values in [low, high].
MOCK_NNAPI_INLINE void RequantizeV(const double* sums, const double* multipliers,
                                   const Double8& zero, const Double8& lowest,
                                   const Double8& highest, Int8* out) {
  Double8 sum, factors;
  std::memcpy(&sum, sums, sizeof(sum));
  std::memcpy(&factors, multipliers, sizeof(factors));
  Double8 scaled;
  RoundV(sum * factors, &scaled);
  scaled += zero;
  scaled = scaled < lowest ? lowest : scaled;
  scaled = highest < scaled ? highest : scaled;
  *out = __builtin_convertvector(scaled, Int8);
}

// Sixteen channels at a time (two groups of eight narrowed together: a 16-byte vector has a
// machine mode, an 8-byte one is narrowed lane by lane), then the scalar definition for the rest.
template <typename Q, typename QV>
MOCK_NNAPI_INLINE void RequantizeRowsImpl(const int32_t* accumulators, size_t rows, size_t channels,
                                          const int32_t* bias, const double* multipliers,
                                          int32_t zero_point, int32_t low, int32_t high, Q* out) {
  const Double8 zero = Double8{} + static_cast<double>(zero_point);
  const Double8 lowest = Double8{} + static_cast<double>(low);
  const Double8 highest = Double8{} + static_cast<double>(high);
  for (size_t r = 0; r < rows; ++r) {
    const int32_t* row = accumulators + r * channels;
    Q* target = out + r * channels;
    size_t c = 0;
    for (; c + kLanes <= channels; c += kLanes) {
      // The int32 sums plus the bias, exact in double as their int64 form in gemm::Requantize
      // is (a loop, which GCC vectorises with whole-register conversions).
      double sums[kLanes];
      for (size_t i = 0; i < kLanes; ++i) {
        sums[i] = static_cast<double>(row[c + i]) + static_cast<double>(bias[c + i]);
      }
      Int8 halves[2];
      RequantizeV(sums, multipliers + c, zero, lowest, highest, &halves[0]);
      RequantizeV(sums + kDoubleLanes, multipliers + c + kDoubleLanes, zero, lowest, highest,
                  &halves[1]);
      // The low byte of each lane (the value: it is in Q's range), picked by a byte shuffle
      // (little-endian): GCC 12 narrows int32 vectors with __builtin_convertvector lane by lane.
      Bytes32 bytes[2];
      std::memcpy(bytes, halves, sizeof(bytes));
      const Bytes16 picked = __builtin_shufflevector(bytes[0], bytes[1], 0, 4, 8, 12, 16, 20, 24,
                                                     28, 32, 36, 40, 44, 48, 52, 56, 60);
      QV narrow;
      std::memcpy(&narrow, &picked, sizeof(narrow));
      std::memcpy(target + c, &narrow, sizeof(narrow));
    }
    for (; c < channels; ++c) {
      target[c] =
          gemm::Requantize<Q>(int64_t{row[c]} + bias[c], multipliers[c], zero_point, low, high);
    }
  }
}

#if defined(__x86_64__)
#define MOCK_NNAPI_REQUANTIZE_AVX512 "avx512f,avx512bw,avx512dq,avx512vl"

// RequantizeRows on AVX-512 in float, falling back to the double definition for the lanes where
// float could decide differently; the same values. With s = accumulator + bias (exact in float
// when both are below 2^23 in magnitude) and f = float(multiplier), y' = s * f is within
// 2^-23 |y| (plus a hair) of the double product y = s * multiplier. Rounding half away from zero
// depends only on which side of a half-integer |y| lies, so y' decides it whenever |y'| < 1024
// and y' + copysign(0.5, y') is farther than 2^-12 from an integer (the sum's rounding moves it
// by 2^-14 at most: y' is more than 1.8e-4 from the half, past the 1.3e-4 bound); when
// |y'| >= 1024, both clamp to the same end of the output range (at most 255 from the zero
// point). Measured single-threaded on 96 channels of in-range values: 0.135 ns per element in
// cache (the double version 0.56).
// Other lanes (ties, near-ties, large accumulators or biases) take gemm::Requantize.
// GCC 12's AVX-512 conversion intrinsics start from _mm256_undefined_ps and the like, which
// -Wmaybe-uninitialized reports inside the headers (a false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <typename Q>
__attribute__((target(MOCK_NNAPI_REQUANTIZE_AVX512))) void RequantizeRowsAvx512(
    const int32_t* accumulators, size_t rows, size_t channels, const int32_t* bias,
    const double* multipliers, int32_t zero_point, int32_t low, int32_t high, Q* out) {
  const __m512i exact_offset = _mm512_set1_epi32(1 << 23);
  const __m512i exact_limit = _mm512_set1_epi32(1 << 24);
  const __m512 sign_bit = _mm512_set1_ps(-0.f);
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512 tolerance = _mm512_set1_ps(1.f / 4096);
  const __m512 decided = _mm512_set1_ps(1024.f);
  const __m512 zero = _mm512_set1_ps(static_cast<float>(zero_point));
  const __m512 lowest = _mm512_set1_ps(static_cast<float>(low));
  const __m512 highest = _mm512_set1_ps(static_cast<float>(high));
  for (size_t c = 0; c < channels; c += 16) {
    const size_t lanes = std::min<size_t>(16, channels - c);
    const __mmask16 valid = static_cast<__mmask16>((1u << lanes) - 1);
    const __m512i b = _mm512_maskz_loadu_epi32(valid, bias + c);
    const __m256 f_low = _mm512_cvtpd_ps(_mm512_maskz_loadu_pd(valid & 0xff, multipliers + c));
    const __m256 f_high = _mm512_cvtpd_ps(
        _mm512_maskz_loadu_pd(static_cast<__mmask8>(valid >> 8), multipliers + c + 8));
    const __m512 factor = _mm512_insertf32x8(_mm512_castps256_ps512(f_low), f_high, 1);
    const __mmask16 bias_exact =
        _mm512_cmplt_epu32_mask(_mm512_add_epi32(b, exact_offset), exact_limit);
    for (size_t r = 0; r < rows; ++r) {
      const int32_t* row = accumulators + r * channels + c;
      Q* target = out + r * channels + c;
      const __m512i a = _mm512_maskz_loadu_epi32(valid, row);
      const __mmask16 exact =
          bias_exact & _mm512_cmplt_epu32_mask(_mm512_add_epi32(a, exact_offset), exact_limit);
      const __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(a, b)), factor);
      // y + copysign(0.5, y) truncated is y rounded half away from zero, unless the sum rounded
      // onto or off an integer: then y is within 2^-14 of a half and the lane falls back below.
      const __m512 shifted = _mm512_add_ps(
          y, _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
                 _mm512_castps_si512(y), _mm512_castps_si512(sign_bit), _mm512_castps_si512(half),
                 0xEA)));  // (y & sign) | half
      const __m512 distance =
          _mm512_reduce_ps(shifted, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __mmask16 near_half =
          _mm512_cmp_ps_mask(_mm512_andnot_ps(sign_bit, distance), tolerance, _CMP_LT_OQ) &
          _mm512_cmp_ps_mask(_mm512_andnot_ps(sign_bit, y), decided, _CMP_LT_OQ);
      // NaN products (a multiplier past float's range times 0): fall back.
      const __mmask16 ordered = _mm512_cmp_ps_mask(y, y, _CMP_ORD_Q);
      const __mmask16 fallback = valid & ~(exact & ordered & ~near_half);
      __m512 value = _mm512_add_ps(
          _mm512_roundscale_ps(shifted, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), zero);
      value = _mm512_min_ps(_mm512_max_ps(value, lowest), highest);
      _mm512_mask_cvtepi32_storeu_epi8(target, valid, _mm512_cvttps_epi32(value));
      if (fallback != 0) {
        for (size_t i = 0; i < lanes; ++i) {
          if ((fallback >> i) & 1) {
            target[i] = gemm::Requantize<Q>(int64_t{row[i]} + bias[c + i], multipliers[c + i],
                                            zero_point, low, high);
          }
        }
      }
    }
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

bool HasAvx512Requantize() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }();
  return has;
}
#endif  // __x86_64__

// FloatToHalfBits lane by lane on the bits of sixteen floats.
MOCK_NNAPI_INLINE void FloatBitsToHalfV(const UintV& bits, UintV* out) {
  const UintV sign = (bits >> 16) & 0x8000u;
  const UintV magnitude = bits & 0x7fffffffu;
  // Normal halves: rebias, and round the 13 dropped bits to nearest even (adding 0xfff plus the
  // lowest kept bit carries into the kept bits exactly when the scalar code increments).
  UintV result = ((magnitude + 0xfffu + ((magnitude >> 13) & 1u)) >> 13) - (112u << 10);
  // Subnormal halves (and zero): adding 0.5 rounds the value to a multiple of 2^-24 (the ulp of
  // [0.5, 1)), to nearest even; the bits above 0.5's are that multiple.
  const FloatV shifted = reinterpret_cast<FloatV>(magnitude) + 0.5f;
  const UintV subnormal = reinterpret_cast<UintV>(shifted) - 0x3f000000u;
  result = magnitude < 0x38800000u ? subnormal : result;
  result = magnitude >= 0x477ff000u ? UintV{} + 0x7c00u : result;  // rounds to infinity
  result = magnitude > 0x7f800000u ? UintV{} + 0x7e00u : result;   // NaN, made quiet
  *out = result | sign;
}

// HalfBitsToFloat lane by lane (half bits in the low 16 bits of each lane).
MOCK_NNAPI_INLINE void HalfBitsToFloatV(const UintV& half, FloatV* out) {
  const UintV sign = (half & 0x8000u) << 16;
  const UintV exponent = (half >> 10) & 0x1fu;
  const UintV mantissa = half & 0x3ffu;
  UintV result = ((half & 0x7fffu) << 13) + (112u << 23);  // normal
  const UintV special = (mantissa << 13) | 0x7f800000u;    // infinity or NaN
  result = exponent == 0x1fu ? special : result;
  // Zero and subnormals: mantissa * 2^-24, exact.
  const FloatV small = __builtin_convertvector(mantissa, FloatV) * 5.9604644775390625e-8f;
  result = exponent == 0u ? reinterpret_cast<UintV>(small) : result;
  *out = reinterpret_cast<FloatV>(result | sign);
}

}  // namespace

// The double definition on vectors (AVX-512 / AVX2 clones).
namespace {

MOCK_NNAPI_SIMD_CLONES
void RequantizeRowsVector(const int32_t* accumulators, size_t rows, size_t channels,
                          const int32_t* bias, const double* multipliers, int32_t zero_point,
                          int32_t low, int32_t high, uint8_t* out) {
  RequantizeRowsImpl<uint8_t, ByteV>(accumulators, rows, channels, bias, multipliers, zero_point,
                                     low, high, out);
}

MOCK_NNAPI_SIMD_CLONES
void RequantizeRowsVector(const int32_t* accumulators, size_t rows, size_t channels,
                          const int32_t* bias, const double* multipliers, int32_t zero_point,
                          int32_t low, int32_t high, int8_t* out) {
  RequantizeRowsImpl<int8_t, SignedByteV>(accumulators, rows, channels, bias, multipliers,
                                          zero_point, low, high, out);
}

}  // namespace

// The AVX-512 float version where the CPU runs it (MOCK_NNAPI_REQUANTIZE=double keeps the double
// one everywhere, read once: for measurements), else the double one; the same values.
#if defined(__x86_64__)
namespace {

bool UseAvx512Requantize() {
  static const bool use = [] {
    const char* mode = std::getenv("MOCK_NNAPI_REQUANTIZE");
    return HasAvx512Requantize() && !(mode != nullptr && std::strcmp(mode, "double") == 0);
  }();
  return use;
}

}  // namespace
#endif

void RequantizeRows(const int32_t* accumulators, size_t rows, size_t channels, const int32_t* bias,
                    const double* multipliers, int32_t zero_point, int32_t low, int32_t high,
                    uint8_t* out) {
#if defined(__x86_64__)
  if (UseAvx512Requantize()) {
    return RequantizeRowsAvx512(accumulators, rows, channels, bias, multipliers, zero_point, low,
                                high, out);
  }
#endif
  RequantizeRowsVector(accumulators, rows, channels, bias, multipliers, zero_point, low, high, out);
}

void RequantizeRows(const int32_t* accumulators, size_t rows, size_t channels, const int32_t* bias,
                    const double* multipliers, int32_t zero_point, int32_t low, int32_t high,
                    int8_t* out) {
#if defined(__x86_64__)
  if (UseAvx512Requantize()) {
    return RequantizeRowsAvx512(accumulators, rows, channels, bias, multipliers, zero_point, low,
                                high, out);
  }
#endif
  RequantizeRowsVector(accumulators, rows, channels, bias, multipliers, zero_point, low, high, out);
}

namespace {

MOCK_NNAPI_SIMD_CLONES
void HalfToFloatVector(const uint16_t* in, size_t count, float* out) {
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    HalfV halves;
    std::memcpy(&halves, in + i, sizeof(halves));
    FloatV values;
    HalfBitsToFloatV(__builtin_convertvector(halves, UintV), &values);
    std::memcpy(out + i, &values, sizeof(values));
  }
  for (; i < count; ++i) out[i] = nnapi_common::HalfBitsToFloat(in[i]);
}

MOCK_NNAPI_SIMD_CLONES
void FloatToHalfVector(const float* in, size_t count, uint16_t* out) {
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    UintV bits;
    std::memcpy(&bits, in + i, sizeof(bits));
    UintV halves;
    FloatBitsToHalfV(bits, &halves);
    const HalfV narrow = __builtin_convertvector(halves, HalfV);
    std::memcpy(out + i, &narrow, sizeof(narrow));
  }
  for (; i < count; ++i) out[i] = nnapi_common::FloatToHalfBits(in[i]);
}

MOCK_NNAPI_SIMD_CLONES
void RoundToHalfVector(float* data, size_t count) {
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    UintV bits;
    std::memcpy(&bits, data + i, sizeof(bits));
    UintV halves;
    FloatBitsToHalfV(bits, &halves);
    FloatV values;
    HalfBitsToFloatV(halves, &values);
    std::memcpy(data + i, &values, sizeof(values));
  }
  for (; i < count; ++i) {
    data[i] = nnapi_common::HalfBitsToFloat(nnapi_common::FloatToHalfBits(data[i]));
  }
}

#ifdef MOCK_NNAPI_CONVERT_AVX512
// GCC 12's unmasked AVX-512 intrinsics start from _mm512_undefined_*(), which -Wall reports as
// maybe uninitialised once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// AVX-512F's conversion instructions, sixteen values per instruction, IEEE-exact (round to
// nearest even, subnormals, overflow to infinity) in the default MXCSR state the mock runs in.
// Only their NaNs differ from the scalar definitions: converting a half NaN sets the quiet bit
// (HalfBitsToFloat keeps the payload as it is) and converting a float NaN keeps the payload's
// top bits (FloatToHalfBits gives 0x7e00 with the sign), so vectors holding a NaN are fixed up.
__attribute__((target("avx512f"))) void HalfToFloatAvx512(const uint16_t* in, size_t count,
                                                          float* out) {
  size_t i = 0;
  const __m512i magnitude_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i infinity = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet_bit = _mm512_set1_epi32(0x00400000);
  for (; i + 16 <= count; i += 16) {
    const __m256i halves = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    __m512i bits = _mm512_castps_si512(_mm512_cvtph_ps(halves));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, magnitude_mask), infinity);
    if (nan != 0) {
      // The quiet bit (float bit 22) as the half's mantissa bit 9 had it.
      const __m512i half_quiet =
          _mm512_and_si512(_mm512_slli_epi32(_mm512_cvtepu16_epi32(halves), 13), quiet_bit);
      bits = _mm512_mask_mov_epi32(
          bits, nan, _mm512_or_si512(_mm512_andnot_si512(quiet_bit, bits), half_quiet));
    }
    _mm512_storeu_si512(out + i, bits);
  }
  for (; i < count; ++i) out[i] = nnapi_common::HalfBitsToFloat(in[i]);
}

__attribute__((target("avx512f"))) void FloatToHalfAvx512(const float* in, size_t count,
                                                          uint16_t* out) {
  size_t i = 0;
  const __m512i magnitude_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i infinity = _mm512_set1_epi32(0x7f800000);
  for (; i + 16 <= count; i += 16) {
    const __m512 values = _mm512_loadu_ps(in + i);
    __m256i halves = _mm512_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i bits = _mm512_castps_si512(values);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, magnitude_mask), infinity);
    if (nan != 0) {
      // 0x7e00 with the float's sign, in the NaN lanes.
      const __m512i quiet =
          _mm512_or_si512(_mm512_srli_epi32(_mm512_andnot_si512(magnitude_mask, bits), 16),
                          _mm512_set1_epi32(0x7e00));
      const __m512i wide = _mm512_mask_mov_epi32(_mm512_cvtepu16_epi32(halves), nan, quiet);
      halves = _mm512_cvtepi32_epi16(wide);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), halves);
  }
  for (; i < count; ++i) out[i] = nnapi_common::FloatToHalfBits(in[i]);
}

// The round trip: a float NaN comes back as FloatToHalfBits' 0x7e00 read as a float (the sign,
// the quiet bit, no other payload).
__attribute__((target("avx512f"))) void RoundToHalfAvx512(float* data, size_t count) {
  size_t i = 0;
  const __m512i magnitude_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i infinity = _mm512_set1_epi32(0x7f800000);
  for (; i + 16 <= count; i += 16) {
    const __m512 values = _mm512_loadu_ps(data + i);
    __m512 rounded =
        _mm512_cvtph_ps(_mm512_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m512i bits = _mm512_castps_si512(values);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, magnitude_mask), infinity);
    if (nan != 0) {
      const __m512i quiet =
          _mm512_or_si512(_mm512_andnot_si512(magnitude_mask, bits), _mm512_set1_epi32(0x7fc00000));
      rounded = _mm512_mask_mov_ps(rounded, nan, _mm512_castsi512_ps(quiet));
    }
    _mm512_storeu_ps(data + i, rounded);
  }
  for (; i < count; ++i) {
    data[i] = nnapi_common::HalfBitsToFloat(nnapi_common::FloatToHalfBits(data[i]));
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

bool HasAvx512() {
  static const bool supported = __builtin_cpu_supports("avx512f");
  return supported;
}
#endif

}  // namespace

void HalfToFloat(const uint16_t* in, size_t count, float* out) {
#ifdef MOCK_NNAPI_CONVERT_AVX512
  if (HasAvx512()) return HalfToFloatAvx512(in, count, out);
#endif
  HalfToFloatVector(in, count, out);
}

void FloatToHalf(const float* in, size_t count, uint16_t* out) {
#ifdef MOCK_NNAPI_CONVERT_AVX512
  if (HasAvx512()) return FloatToHalfAvx512(in, count, out);
#endif
  FloatToHalfVector(in, count, out);
}

void RoundToHalf(float* data, size_t count) {
#ifdef MOCK_NNAPI_CONVERT_AVX512
  if (HasAvx512()) return RoundToHalfAvx512(data, count);
#endif
  RoundToHalfVector(data, count);
}

}  // namespace vector_convert
}  // namespace mock_nnapi
