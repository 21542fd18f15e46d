// SPDX-License-Identifier: Apache-2.0
// int8_gemm's AVX2 micro-kernel (int8_gemm_microkernels.h); x86-64 only.
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

// ---- AVX2: 4 rows x 8 columns per pass, bytes widened to int16, vpmaddwd ----------------------
// A group's 32 bytes of 8 columns widen to two vectors of 16 int16 (columns 0-3 and 4-7, 4 k
// each); the row's 4 bytes widen to 4 int16 repeated. vpmaddwd sums pairs of int16 products into
// int32 exactly (|u8 * s8| pairs stay far inside int32), so each accumulator holds two partial
// sums per column, added when stored.
template <bool kSignedInput>
__attribute__((target("avx2"), always_inline)) inline __m256i Avx2WidenWeights(const uint8_t* p) {
  const __m128i bytes = _mm_load_si128(reinterpret_cast<const __m128i*>(p));
  return kSignedInput ? _mm256_cvtepu8_epi16(bytes) : _mm256_cvtepi8_epi16(bytes);
}

template <bool kSignedInput, int R>
__attribute__((target("avx2"), always_inline)) inline void Avx2Step(__m256i (&acc)[R][2],
                                                                    const uint8_t*& bp,
                                                                    const uint32_t* x) {
  const __m256i w0 = Avx2WidenWeights<kSignedInput>(bp);
  const __m256i w1 = Avx2WidenWeights<kSignedInput>(bp + 16);
  bp += kGroupBytes;
  for (int r = 0; r < R; ++r) {
    const __m128i bytes = _mm_cvtsi32_si128(static_cast<int>(x[r]));
    const __m128i words = kSignedInput ? _mm_cvtepi8_epi16(bytes) : _mm_cvtepu8_epi16(bytes);
    const __m256i xb = _mm256_broadcastq_epi64(words);
    acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(w0, xb));
    acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(w1, xb));
  }
}

template <bool kSignedInput, int R>
__attribute__((target("avx2"), always_inline)) inline void Avx2Pass(const Block& b, size_t pass) {
  __m256i acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  const uint8_t* bp = b.panel + kHeaderBytes + pass * 32;
  for (size_t s = 0; s < b.segments; ++s) {
    const uint8_t* x_rows[R];
    for (int r = 0; r < R; ++r) x_rows[r] = b.rows[r] + b.offsets[s];
    uint32_t x[R];
    for (size_t g = 0; g < b.full_groups; ++g) {
      for (int r = 0; r < R; ++r) x[r] = LoadGroup(x_rows[r] + 4 * g);
      Avx2Step<kSignedInput, R>(acc, bp, x);
    }
    if (b.tail > 0) {
      for (int r = 0; r < R; ++r) x[r] = LoadTail(x_rows[r] + 4 * b.full_groups, b.tail);
      Avx2Step<kSignedInput, R>(acc, bp, x);
    }
  }
  const size_t first = pass * 8;
  const size_t cols = std::min<size_t>(8, b.cols - first);
  const __m256i term =
      _mm256_load_si256(reinterpret_cast<const __m256i*>(b.panel + first * sizeof(int32_t)));
  for (int r = 0; r < R; ++r) {
    // hadd: per 128-bit lane (columns 0 1 4 5 | 2 3 6 7); the permutation puts them in order.
    const __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xD8);
    const __m256i value =
        _mm256_add_epi32(_mm256_add_epi32(sums, term), _mm256_set1_epi32(RowTerm(b, r)));
    int32_t* out = b.c + r * b.ldc + first;
    if (cols == 8) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), value);
    } else {
      alignas(32) int32_t values[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(values), value);
      std::memcpy(out, values, cols * sizeof(int32_t));
    }
  }
}

template <bool kSignedInput, int R>
__attribute__((target("avx2"))) void Avx2Rows(const Block& b) {
  for (size_t pass = 0; pass * 8 < b.cols; ++pass) Avx2Pass<kSignedInput, R>(b, pass);
}

}  // namespace

template <bool kSignedInput>
void Avx2Kernel(const Block& b) {
  switch (b.row_count) {
    case 1:
      return Avx2Rows<kSignedInput, 1>(b);
    case 2:
      return Avx2Rows<kSignedInput, 2>(b);
    case 3:
      return Avx2Rows<kSignedInput, 3>(b);
    default:
      return Avx2Rows<kSignedInput, 4>(b);
  }
}

template void Avx2Kernel<true>(const Block& b);
template void Avx2Kernel<false>(const Block& b);

}  // namespace microkernels
}  // namespace int8_gemm
}  // namespace mock_nnapi

#endif  // __x86_64__
