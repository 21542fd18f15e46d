// SPDX-License-Identifier: Apache-2.0
// int8_gemm's AVX-VNNI micro-kernel (int8_gemm_microkernels.h); x86-64 only.
#include "int8_gemm_microkernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace mock_nnapi {
namespace int8_gemm {
namespace microkernels {
namespace {

// ---- AVX-VNNI: 6 rows x 16 columns (two ymm a row), two passes per panel ----------------------
// acc + vpdpbusd(unsigned, signed), in place, in inline assembly as int8_gemm_avx512vnni.cc's
// Dpbusd512: the VEX encoding ({vex}; the EVEX one needs AVX512-VNNI), so ymm0-15 only ("x").
__attribute__((target("avx2,avxvnni"), always_inline)) inline __m256i Dpbusd256(
    __m256i acc, __m256i unsigned_bytes, __m256i signed_bytes) {
  asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(unsigned_bytes), "x"(signed_bytes));
  return acc;
}

template <bool kSignedInput, int R>
__attribute__((target("avx2,avxvnni"), always_inline)) inline void AvxVnniStep(__m256i (&acc)[R][2],
                                                                               const uint8_t*& bp,
                                                                               const uint32_t* x) {
  const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bp));
  const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bp + 32));
  bp += kGroupBytes;
  for (int r = 0; r < R; ++r) {
    const __m256i xb = _mm256_set1_epi32(static_cast<int>(x[r]));
    if (kSignedInput) {
      acc[r][0] = Dpbusd256(acc[r][0], w0, xb);
      acc[r][1] = Dpbusd256(acc[r][1], w1, xb);
    } else {
      acc[r][0] = Dpbusd256(acc[r][0], xb, w0);
      acc[r][1] = Dpbusd256(acc[r][1], xb, w1);
    }
  }
}

template <bool kSignedInput, int R>
__attribute__((target("avx2,avxvnni"), always_inline)) inline void AvxVnniHalf(const Block& b,
                                                                               size_t half) {
  __m256i acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  const uint8_t* bp = b.panel + kHeaderBytes + half * 64;
  for (size_t s = 0; s < b.segments; ++s) {
    const uint8_t* x_rows[R];
    for (int r = 0; r < R; ++r) x_rows[r] = b.rows[r] + b.offsets[s];
    uint32_t x[R];
    for (size_t g = 0; g < b.full_groups; ++g) {
      for (int r = 0; r < R; ++r) x[r] = LoadGroup(x_rows[r] + 4 * g);
      AvxVnniStep<kSignedInput, R>(acc, bp, x);
    }
    if (b.tail > 0) {
      for (int r = 0; r < R; ++r) x[r] = LoadTail(x_rows[r] + 4 * b.full_groups, b.tail);
      AvxVnniStep<kSignedInput, R>(acc, bp, x);
    }
  }
  const size_t first = half * 16;
  const size_t cols = std::min<size_t>(16, b.cols - first);
  const uint8_t* terms = b.panel + first * sizeof(int32_t);
  for (int r = 0; r < R; ++r) {
    int32_t* out = b.c + r * b.ldc + first;
    const __m256i row_term = _mm256_set1_epi32(RowTerm(b, r));
    alignas(32) int32_t values[16];
    for (int v = 0; v < 2; ++v) {
      const __m256i term = _mm256_load_si256(reinterpret_cast<const __m256i*>(terms + 32 * v));
      _mm256_store_si256(reinterpret_cast<__m256i*>(values + 8 * v),
                         _mm256_add_epi32(_mm256_add_epi32(acc[r][v], term), row_term));
    }
    std::memcpy(out, values, cols * sizeof(int32_t));
  }
}

template <bool kSignedInput, int R>
__attribute__((target("avx2,avxvnni"))) void AvxVnniRows(const Block& b) {
  AvxVnniHalf<kSignedInput, R>(b, 0);
  if (b.cols > 16) AvxVnniHalf<kSignedInput, R>(b, 1);
}

}  // namespace

template <bool kSignedInput>
void AvxVnniKernel(const Block& b) {
  switch (b.row_count) {
    case 1:
      return AvxVnniRows<kSignedInput, 1>(b);
    case 2:
      return AvxVnniRows<kSignedInput, 2>(b);
    case 3:
      return AvxVnniRows<kSignedInput, 3>(b);
    case 4:
      return AvxVnniRows<kSignedInput, 4>(b);
    case 5:
      return AvxVnniRows<kSignedInput, 5>(b);
    default:
      return AvxVnniRows<kSignedInput, 6>(b);
  }
}

template void AvxVnniKernel<true>(const Block& b);
template void AvxVnniKernel<false>(const Block& b);

}  // namespace microkernels
}  // namespace int8_gemm
}  // namespace mock_nnapi

#endif  // __x86_64__
