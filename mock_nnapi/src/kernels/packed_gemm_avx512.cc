// SPDX-License-Identifier: Apache-2.0
// packed_gemm's AVX-512F micro-kernel (packed_gemm_microkernels.h); x86-64 only.
#include "packed_gemm_microkernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

namespace mock_nnapi {
namespace packed_gemm {
namespace microkernels {
namespace {

// ---- AVX-512: 8 rows x 32 columns (two zmm accumulators a row; one when 16 columns suffice); ---
// one or two rows take up to four panels at once (independent accumulators hide the FMA latency).
template <int R, int P, int V>
__attribute__((target("avx512f"), always_inline)) inline void Avx512Rows(const Block& b) {
  __m512 acc[R][P][V];
  const float* bp[P];
#pragma GCC unroll 16
  for (int q = 0; q < P; ++q) {
    bp[q] = b.panel + q * b.panel_stride;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v) acc[r][q][v] = _mm512_load_ps(bp[q] + 16 * v);
    }
    bp[q] += kPanelWidth;
  }
  for (size_t s = 0; s < b.segments; ++s) {
    const float* x_rows[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) x_rows[r] = b.rows[r] + b.offsets[s];
    for (size_t j = 0; j < b.segment_length; ++j) {
      __m512 w[P][V];
#pragma GCC unroll 16
      for (int q = 0; q < P; ++q) {
#pragma GCC unroll 16
        for (int v = 0; v < V; ++v) w[q][v] = _mm512_load_ps(bp[q] + 16 * v);
        bp[q] += kPanelWidth;
      }
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const __m512 x = _mm512_set1_ps(x_rows[r][j]);
#pragma GCC unroll 16
        for (int q = 0; q < P; ++q) {
#pragma GCC unroll 16
          for (int v = 0; v < V; ++v) acc[r][q][v] = _mm512_fmadd_ps(x, w[q][v], acc[r][q][v]);
        }
      }
    }
  }
  const __m512 low = _mm512_set1_ps(b.low);
  const __m512 high = _mm512_set1_ps(b.high);
  __mmask16 masks[2];
  masks[0] = b.cols >= 16 ? 0xffff : static_cast<__mmask16>((1u << b.cols) - 1);
  masks[1] = b.cols >= 32  ? 0xffff
             : b.cols > 16 ? static_cast<__mmask16>((1u << (b.cols - 16)) - 1)
                           : 0;
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    float* out = b.c + r * b.ldc;
#pragma GCC unroll 16
    for (int q = 0; q < P; ++q, out += kPanelWidth) {
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v) {
        __m512 value = acc[r][q][v];
        if (b.clamp) {  // the mock's Clamp: x < low ? low : x, then high < x ? high : x
          value = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(value, low, _CMP_LT_OQ), value, low);
          value = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(high, value, _CMP_LT_OQ), value, high);
        }
        const __mmask16 mask = q + 1 < P ? static_cast<__mmask16>(0xffff) : masks[v];
        _mm512_mask_storeu_ps(out + 16 * v, mask, value);
      }
    }
  }
}

template <int V>
__attribute__((target("avx512f"))) void Avx512Width(const Block& b) {
  switch (b.row_count) {
    case 1:
      return Avx512Rows<1, 1, V>(b);
    case 2:
      return Avx512Rows<2, 1, V>(b);
    case 3:
      return Avx512Rows<3, 1, V>(b);
    case 4:
      return Avx512Rows<4, 1, V>(b);
    case 5:
      return Avx512Rows<5, 1, V>(b);
    case 6:
      return Avx512Rows<6, 1, V>(b);
    case 7:
      return Avx512Rows<7, 1, V>(b);
    default:
      return Avx512Rows<8, 1, V>(b);
  }
}

template <int R>
__attribute__((target("avx512f"))) void Avx512Panels(const Block& b) {
  switch (b.panels) {
    case 2:
      return Avx512Rows<R, 2, 2>(b);
    case 3:
      return Avx512Rows<R, 3, 2>(b);
    default:
      return Avx512Rows<R, 4, 2>(b);
  }
}

}  // namespace

void Avx512Kernel(const Block& b) {
  if (b.panels > 1) {
    if (b.row_count == 1) {
      Avx512Panels<1>(b);
    } else {
      Avx512Panels<2>(b);
    }
  } else if (b.cols <= 16) {
    Avx512Width<1>(b);
  } else {
    Avx512Width<2>(b);
  }
}

}  // namespace microkernels
}  // namespace packed_gemm
}  // namespace mock_nnapi

#endif  // __x86_64__
