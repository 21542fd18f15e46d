// SPDX-License-Identifier: Apache-2.0
// Vectorised requantisation and fp16 conversions (see vector_convert.h). No operation is
// registered here.
#include "vector_convert.h"

#include <cstring>

#include "gemm.h"
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

#ifdef MOCK_NNAPI_CONVERT_AVX512
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, see below
#endif
// Requantize of eight lanes with AVX-512F's rounding instruction: the scaled sum truncated toward
// zero (vrndscalepd), plus one away from zero where the exact remainder is at least a half, which
// is std::round; then the zero point and the clamp, as the portable code.
__attribute__((target("avx512f"))) inline __m256i RequantizeAvx512(const int32_t* sums,
                                                                   const int32_t* bias,
                                                                   const double* multipliers,
                                                                   __m512d zero, __m512d lowest,
                                                                   __m512d highest) {
  const __m512d sum =
      _mm512_add_pd(_mm512_cvtepi32_pd(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums))),
                    _mm512_cvtepi32_pd(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias))));
  const __m512d scaled = _mm512_mul_pd(sum, _mm512_loadu_pd(multipliers));
  const __m512d truncated = _mm512_roundscale_pd(scaled, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512d remainder = _mm512_sub_pd(scaled, truncated);
  const __mmask8 half =
      _mm512_cmp_pd_mask(_mm512_abs_pd(remainder), _mm512_set1_pd(0.5), _CMP_GE_OQ);
  // +-1 with the scaled sum's sign.
  const __m512d away = _mm512_castsi512_pd(_mm512_or_si512(
      _mm512_and_si512(_mm512_castpd_si512(scaled),
                       _mm512_set1_epi64(static_cast<int64_t>(0x8000000000000000ull))),
      _mm512_castpd_si512(_mm512_set1_pd(1.0))));
  __m512d rounded = _mm512_mask_add_pd(truncated, half, truncated, away);
  rounded = _mm512_add_pd(rounded, zero);
  rounded = _mm512_min_pd(_mm512_max_pd(rounded, lowest), highest);
  return _mm512_cvttpd_epi32(rounded);
}

template <typename Q>
__attribute__((target("avx512f"))) inline void RequantizeRowsAvx512(
    const int32_t* accumulators, size_t rows, size_t channels, const int32_t* bias,
    const double* multipliers, int32_t zero_point, int32_t low, int32_t high, Q* out) {
  const __m512d zero = _mm512_set1_pd(static_cast<double>(zero_point));
  const __m512d lowest = _mm512_set1_pd(static_cast<double>(low));
  const __m512d highest = _mm512_set1_pd(static_cast<double>(high));
  for (size_t r = 0; r < rows; ++r) {
    const int32_t* row = accumulators + r * channels;
    Q* target = out + r * channels;
    size_t c = 0;
    for (; c + 16 <= channels; c += 16) {
      const __m256i first =
          RequantizeAvx512(row + c, bias + c, multipliers + c, zero, lowest, highest);
      const __m256i second =
          RequantizeAvx512(row + c + 8, bias + c + 8, multipliers + c + 8, zero, lowest, highest);
      // Every lane is in Q's range: its low byte is the value.
      const __m128i bytes =
          _mm512_cvtepi32_epi8(_mm512_inserti64x4(_mm512_castsi256_si512(first), second, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(target + c), bytes);
    }
    for (; c < channels; ++c) {
      target[c] =
          gemm::Requantize<Q>(int64_t{row[c]} + bias[c], multipliers[c], zero_point, low, high);
    }
  }
}

__attribute__((target("avx512f"))) void RequantizeRowsAvx512U8(
    const int32_t* accumulators, size_t rows, size_t channels, const int32_t* bias,
    const double* multipliers, int32_t zero_point, int32_t low, int32_t high, uint8_t* out) {
  RequantizeRowsAvx512(accumulators, rows, channels, bias, multipliers, zero_point, low, high, out);
}

__attribute__((target("avx512f"))) void RequantizeRowsAvx512S8(
    const int32_t* accumulators, size_t rows, size_t channels, const int32_t* bias,
    const double* multipliers, int32_t zero_point, int32_t low, int32_t high, int8_t* out) {
  RequantizeRowsAvx512(accumulators, rows, channels, bias, multipliers, zero_point, low, high, out);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

bool RequantizeHasAvx512() {
  static const bool supported = __builtin_cpu_supports("avx512f");
  return supported;
}
#endif

}  // namespace

void RequantizeRows(const int32_t* accumulators, size_t rows, size_t channels, const int32_t* bias,
                    const double* multipliers, int32_t zero_point, int32_t low, int32_t high,
                    uint8_t* out) {
#ifdef MOCK_NNAPI_CONVERT_AVX512
  if (RequantizeHasAvx512()) {
    return RequantizeRowsAvx512U8(accumulators, rows, channels, bias, multipliers, zero_point, low,
                                  high, out);
  }
#endif
  RequantizeRowsVector(accumulators, rows, channels, bias, multipliers, zero_point, low, high, out);
}

void RequantizeRows(const int32_t* accumulators, size_t rows, size_t channels, const int32_t* bias,
                    const double* multipliers, int32_t zero_point, int32_t low, int32_t high,
                    int8_t* out) {
#ifdef MOCK_NNAPI_CONVERT_AVX512
  if (RequantizeHasAvx512()) {
    return RequantizeRowsAvx512S8(accumulators, rows, channels, bias, multipliers, zero_point, low,
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
