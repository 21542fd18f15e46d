// SPDX-License-Identifier: Apache-2.0
// packed_gemm's AVX2 + FMA micro-kernel (packed_gemm_microkernels.h); x86-64 only.
#include "packed_gemm_microkernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace mock_nnapi {
namespace packed_gemm {
namespace microkernels {
namespace {

// ---- AVX2 + FMA: 6 rows x 16 columns (two ymm a row), two passes per panel ---------------------
template <int R>
__attribute__((target("avx2,fma"), always_inline)) inline void Avx2Half(const Block& b,
                                                                        size_t half) {
  __m256 acc[R][2];
  const float* bp = b.panel + half * 16;
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int v = 0; v < 2; ++v) acc[r][v] = _mm256_load_ps(bp + 8 * v);
  }
  bp += kPanelWidth;
  for (size_t s = 0; s < b.segments; ++s) {
    const float* x_rows[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) x_rows[r] = b.rows[r] + b.offsets[s];
    for (size_t j = 0; j < b.segment_length; ++j, bp += kPanelWidth) {
      const __m256 w0 = _mm256_load_ps(bp);
      const __m256 w1 = _mm256_load_ps(bp + 8);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const __m256 x = _mm256_broadcast_ss(x_rows[r] + j);
        acc[r][0] = _mm256_fmadd_ps(x, w0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(x, w1, acc[r][1]);
      }
    }
  }
  const __m256 low = _mm256_set1_ps(b.low);
  const __m256 high = _mm256_set1_ps(b.high);
  const size_t first = half * 16;
  const size_t cols = std::min<size_t>(16, b.cols - first);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    float* out = b.c + r * b.ldc + first;
#pragma GCC unroll 16
    for (int v = 0; v < 2; ++v) {
      __m256 value = acc[r][v];
      // maxps(low, x) is low > x ? low : x, so x when x is NaN (the mock's Clamp); likewise
      // minps(high, x).
      if (b.clamp) value = _mm256_min_ps(high, _mm256_max_ps(low, value));
      const size_t skip = 8 * static_cast<size_t>(v);
      const size_t lanes = cols > skip ? std::min<size_t>(8, cols - skip) : 0;
      if (lanes == 8) {
        _mm256_storeu_ps(out + skip, value);
      } else if (lanes > 0) {
        alignas(32) float tail[8];
        _mm256_store_ps(tail, value);
        std::memcpy(out + skip, tail, std::min<size_t>(lanes, 7) * sizeof(float));  // lanes < 8
      }
    }
  }
}

template <int R>
__attribute__((target("avx2,fma"))) void Avx2Rows(const Block& b) {
  Avx2Half<R>(b, 0);
  if (b.cols > 16) Avx2Half<R>(b, 1);
}

}  // namespace

void Avx2Kernel(const Block& b) {
  switch (b.row_count) {
    case 1:
      return Avx2Rows<1>(b);
    case 2:
      return Avx2Rows<2>(b);
    case 3:
      return Avx2Rows<3>(b);
    case 4:
      return Avx2Rows<4>(b);
    case 5:
      return Avx2Rows<5>(b);
    default:
      return Avx2Rows<6>(b);
  }
}

}  // namespace microkernels
}  // namespace packed_gemm
}  // namespace mock_nnapi

#endif  // __x86_64__
