// SPDX-License-Identifier: Apache-2.0
// packed_gemm's portable micro-kernel (packed_gemm_microkernels.h), built for every target.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "packed_gemm_microkernels.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace mock_nnapi {
namespace packed_gemm {
namespace microkernels {
namespace {

// ---- Portable: 4 rows x 16 columns per pass, two passes per panel ------------------------------
// Every loop over rows, panels and vectors is unrolled by pragma: only then does GCC keep the
// accumulator arrays in registers across the segment loop (without it, GCC 12 -O3 stored the 16
// AVX-512 accumulators to the stack and reloaded them around every segment: 210 spills and
// reloads in the 8x32 kernel, a third of a 1x1 convolution's time when K is 16).
// NEON's fused multiply-add on arm64 (the same bits as the x86-64 FMA kernels); elsewhere a
// multiply and an add (GCC/Clang vector extensions, SSE2 on x86-64).
#if defined(__aarch64__)
typedef float32x4_t Float4;
inline Float4 Load4(const float* p) { return vld1q_f32(p); }
inline void Store4(float* p, Float4 v) { vst1q_f32(p, v); }
inline Float4 Broadcast4(float x) { return vdupq_n_f32(x); }
inline Float4 MultiplyAdd4(Float4 acc, Float4 x, Float4 b) { return vfmaq_f32(acc, x, b); }
// The mock's Clamp: x < low ? low : x, then high < x ? high : x (NaN stays NaN).
inline Float4 Clamp4(Float4 v, Float4 low, Float4 high) {
  const Float4 at_least_low = vbslq_f32(vcltq_f32(v, low), low, v);
  return vbslq_f32(vcltq_f32(high, at_least_low), high, at_least_low);
}
#else
typedef float Float4 __attribute__((vector_size(16), aligned(4), may_alias));
typedef int32_t Int4 __attribute__((vector_size(16), aligned(4), may_alias));
inline Float4 Load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void Store4(float* p, Float4 v) { std::memcpy(p, &v, sizeof(v)); }
inline Float4 Broadcast4(float x) { return Float4{x, x, x, x}; }
inline Float4 MultiplyAdd4(Float4 acc, Float4 x, Float4 b) { return acc + x * b; }
inline Float4 Clamp4(Float4 v, Float4 low, Float4 high) {
  const Int4 below = v < low;
  const Float4 at_least_low = below ? low : v;
  const Int4 above = high < at_least_low;
  return above ? high : at_least_low;
}
#endif

template <int R>
inline void PortableHalf(const Block& b, size_t half) {
  constexpr int kVectors = 4;  // 16 columns
  Float4 acc[R][kVectors];
  const float* bp = b.panel + half * 16;
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int v = 0; v < kVectors; ++v) acc[r][v] = Load4(bp + 4 * v);
  }
  bp += kPanelWidth;
  for (size_t s = 0; s < b.segments; ++s) {
    const float* x_rows[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) x_rows[r] = b.rows[r] + b.offsets[s];
    for (size_t j = 0; j < b.segment_length; ++j, bp += kPanelWidth) {
      Float4 w[kVectors];
#pragma GCC unroll 16
      for (int v = 0; v < kVectors; ++v) w[v] = Load4(bp + 4 * v);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const Float4 x = Broadcast4(x_rows[r][j]);
#pragma GCC unroll 16
        for (int v = 0; v < kVectors; ++v) acc[r][v] = MultiplyAdd4(acc[r][v], x, w[v]);
      }
    }
  }
  const Float4 low = Broadcast4(b.low);
  const Float4 high = Broadcast4(b.high);
  const size_t first = half * 16;
  const size_t cols = std::min<size_t>(16, b.cols - first);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    float* out = b.c + r * b.ldc + first;
    float tail[16];
    float* dst = cols == 16 ? out : tail;
#pragma GCC unroll 16
    for (int v = 0; v < kVectors; ++v) {
      Store4(dst + 4 * v, b.clamp ? Clamp4(acc[r][v], low, high) : acc[r][v]);
    }
    if (cols < 16) std::memcpy(out, tail, cols * sizeof(float));
  }
}

template <int R>
void PortableRows(const Block& b) {
  PortableHalf<R>(b, 0);
  if (b.cols > 16) PortableHalf<R>(b, 1);
}

}  // namespace

void PortableKernel(const Block& b) {
  switch (b.row_count) {
    case 1:
      return PortableRows<1>(b);
    case 2:
      return PortableRows<2>(b);
    case 3:
      return PortableRows<3>(b);
    default:
      return PortableRows<4>(b);
  }
}

}  // namespace microkernels
}  // namespace packed_gemm
}  // namespace mock_nnapi
