// SPDX-License-Identifier: Apache-2.0
// int8_gemm's AVX-512 VNNI micro-kernel (int8_gemm_microkernels.h); x86-64 only.
#include "int8_gemm_microkernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

namespace mock_nnapi {
namespace int8_gemm {
namespace microkernels {
namespace {

// ---- AVX-512 VNNI: 8 rows x 32 columns; one or two rows over up to 4 panels ------------------
#define MOCK_NNAPI_AVX512VNNI "avx512f,avx512bw,avx512vnni"

// acc + vpdpbusd(unsigned, signed), in place. Inline assembly: with the intrinsic, GCC 12 copied
// every accumulator to another register and back on each group (vpdpbusd's destination is also a
// source), twice as many instructions as the products themselves.
__attribute__((target(MOCK_NNAPI_AVX512VNNI), always_inline)) inline __m512i Dpbusd512(
    __m512i acc, __m512i unsigned_bytes, __m512i signed_bytes) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(unsigned_bytes), "v"(signed_bytes));
  return acc;
}

// One group of 4 k: the panels' weights, then each row's 4 bytes (X_BYTES, an expression of r)
// broadcast against them (a macro: the full groups and the segment's tail use it).
#define MOCK_NNAPI_AVX512_STEP(X_BYTES)                                                  \
  do {                                                                                   \
    __m512i w[P][V];                                                                     \
    for (int q = 0; q < P; ++q) {                                                        \
      for (int v = 0; v < V; ++v) w[q][v] = _mm512_load_si512(bp + q * stride + 64 * v); \
    }                                                                                    \
    bp += kGroupBytes;                                                                   \
    for (int r = 0; r < R; ++r) {                                                        \
      const __m512i xb = _mm512_set1_epi32(static_cast<int>(X_BYTES));                   \
      for (int q = 0; q < P; ++q) {                                                      \
        for (int v = 0; v < V; ++v) {                                                    \
          if (kSignedInput) {                                                            \
            acc[r][q][v] = Dpbusd512(acc[r][q][v], w[q][v], xb);                         \
          } else {                                                                       \
            acc[r][q][v] = Dpbusd512(acc[r][q][v], xb, w[q][v]);                         \
          }                                                                              \
        }                                                                                \
      }                                                                                  \
    }                                                                                    \
  } while (false)

template <bool kSignedInput, int R, int P, int V>
__attribute__((target(MOCK_NNAPI_AVX512VNNI),
               always_inline)) inline void Avx512Rows(const Block& b) {
  __m512i acc[R][P][V];  // from the column terms
  for (int q = 0; q < P; ++q) {
    for (int v = 0; v < V; ++v) {
      const __m512i terms = _mm512_load_si512(b.panel + q * b.panel_stride + 64 * v);
      for (int r = 0; r < R; ++r) acc[r][q][v] = terms;
    }
  }
  const uint8_t* bp = b.panel + kHeaderBytes;
  const size_t stride = b.panel_stride;
  const size_t full_groups = b.full_groups;
  for (size_t s = 0; s < b.segments; ++s) {
    const uint8_t* x_rows[R];
    for (int r = 0; r < R; ++r) x_rows[r] = b.rows[r] + b.offsets[s];
    for (size_t g = 0; g < full_groups; ++g) {
      MOCK_NNAPI_AVX512_STEP(LoadGroup(x_rows[r] + 4 * g));
    }
    if (b.tail > 0) MOCK_NNAPI_AVX512_STEP(LoadTail(x_rows[r] + 4 * full_groups, b.tail));
  }
#undef MOCK_NNAPI_AVX512_STEP
  __mmask16 masks[2];
  masks[0] = b.cols >= 16 ? 0xffff : static_cast<__mmask16>((1u << b.cols) - 1);
  masks[1] = b.cols >= 32  ? 0xffff
             : b.cols > 16 ? static_cast<__mmask16>((1u << (b.cols - 16)) - 1)
                           : 0;
  for (int r = 0; r < R; ++r) {
    int32_t* out = b.c + r * b.ldc;
    const __m512i row_term = _mm512_set1_epi32(b.row_terms != nullptr ? b.row_terms[r] : 0);
    for (int q = 0; q < P; ++q, out += kPanelWidth) {
      for (int v = 0; v < V; ++v) {
        const __m512i value =
            b.row_terms != nullptr ? _mm512_add_epi32(acc[r][q][v], row_term) : acc[r][q][v];
        const __mmask16 mask = q + 1 < P ? static_cast<__mmask16>(0xffff) : masks[v];
        _mm512_mask_storeu_epi32(out + 16 * v, mask, value);
      }
    }
  }
}

template <bool kSignedInput, int V>
__attribute__((target(MOCK_NNAPI_AVX512VNNI))) void Avx512Width(const Block& b) {
  switch (b.row_count) {
    case 1:
      return Avx512Rows<kSignedInput, 1, 1, V>(b);
    case 2:
      return Avx512Rows<kSignedInput, 2, 1, V>(b);
    case 3:
      return Avx512Rows<kSignedInput, 3, 1, V>(b);
    case 4:
      return Avx512Rows<kSignedInput, 4, 1, V>(b);
    case 5:
      return Avx512Rows<kSignedInput, 5, 1, V>(b);
    case 6:
      return Avx512Rows<kSignedInput, 6, 1, V>(b);
    case 7:
      return Avx512Rows<kSignedInput, 7, 1, V>(b);
    default:
      return Avx512Rows<kSignedInput, 8, 1, V>(b);
  }
}

template <bool kSignedInput, int R>
__attribute__((target(MOCK_NNAPI_AVX512VNNI))) void Avx512Panels(const Block& b) {
  switch (b.panels) {
    case 2:
      return Avx512Rows<kSignedInput, R, 2, 2>(b);
    case 3:
      return Avx512Rows<kSignedInput, R, 3, 2>(b);
    default:
      return Avx512Rows<kSignedInput, R, 4, 2>(b);
  }
}

}  // namespace

template <bool kSignedInput>
void Avx512Kernel(const Block& b) {
  if (b.panels > 1) {
    if (b.row_count == 1) {
      Avx512Panels<kSignedInput, 1>(b);
    } else {
      Avx512Panels<kSignedInput, 2>(b);
    }
  } else if (b.cols <= 16) {
    Avx512Width<kSignedInput, 1>(b);
  } else {
    Avx512Width<kSignedInput, 2>(b);
  }
}

template void Avx512Kernel<true>(const Block& b);
template void Avx512Kernel<false>(const Block& b);

}  // namespace microkernels
}  // namespace int8_gemm
}  // namespace mock_nnapi

#endif  // __x86_64__
