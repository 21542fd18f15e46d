// SPDX-License-Identifier: Apache-2.0
#include "packed_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace mock_nnapi {
namespace packed_gemm {
namespace {

// One micro-kernel call: rows [0, rows) of A (rows <= the kernel's row count) times `panels`
// consecutive panels (1 unless the kernel has a multi-panel variant for few rows); the first
// panels are full, the last has `cols` valid columns (cols <= kPanelWidth).
struct Block {
  const float* const* rows;  // row pointers (RowSource)
  const size_t* offsets;     // segment offsets
  size_t segments;
  size_t segment_length;
  const float* panel;
  size_t panel_stride;  // floats from one panel to the next
  size_t panels;
  size_t row_count;
  size_t cols;
  float low;
  float high;
  bool clamp;
  float* c;
  size_t ldc;
};

using KernelFunction = void (*)(const Block& block);

struct Kernel {
  const char* name;
  size_t rows;        // rows of A per call at most
  size_t few_rows;    // calls with at most this many rows may take several panels
  size_t max_panels;  // panels per call then
  KernelFunction function;
};

// ---- Portable: 4 rows x 16 columns per pass, two passes per panel ------------------------------
// Every loop over rows, panels and vectors is unrolled by pragma: only then does GCC keep the
// accumulator arrays in registers across the segment loop (without it, GCC 12 -O3 stored the 16
// AVX-512 accumulators to the stack and reloaded them around every segment: 210 spills and
// reloads in the 8x32 kernel, a third of a 1x1 convolution's time when K is 16).
// NEON's fused multiply-add on arm64 (the same bits as the x86-64 FMA kernels); elsewhere a
// multiply and an add (GCC/Clang vector extensions, SSE2 on x86-64).
constexpr size_t kPortableRows = 4;

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

#if defined(__x86_64__)
// ---- AVX-512: 8 rows x 32 columns (two zmm accumulators a row; one when 16 columns suffice); ---
// one or two rows take up to four panels at once (independent accumulators hide the FMA latency).
constexpr size_t kAvx512Rows = 8;
constexpr size_t kAvx512FewRows = 2;
constexpr size_t kAvx512Panels = 4;

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

// ---- AVX2 + FMA: 6 rows x 16 columns (two ymm a row), two passes per panel ---------------------
constexpr size_t kAvx2Rows = 6;

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
#endif  // __x86_64__

// The widest kernel the CPU runs, or the one MOCK_NNAPI_PACKED_GEMM_KERNEL names if narrower.
Kernel ChooseKernel() {
  const char* wanted = std::getenv("MOCK_NNAPI_PACKED_GEMM_KERNEL");
  int widest = 2;  // 2 avx512, 1 avx2, 0 portable
  if (wanted != nullptr && std::strcmp(wanted, "avx2") == 0) widest = 1;
  if (wanted != nullptr && std::strcmp(wanted, "portable") == 0) widest = 0;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (widest >= 2 && __builtin_cpu_supports("avx512f")) {
    return {"avx512", kAvx512Rows, kAvx512FewRows, kAvx512Panels, Avx512Kernel};
  }
  if (widest >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {"avx2", kAvx2Rows, 0, 1, Avx2Kernel};
  }
#else
  (void)widest;
#endif
  return {"portable", kPortableRows, 0, 1, PortableKernel};
}

const Kernel& TheKernel() {
  static const Kernel kernel = ChooseKernel();
  return kernel;
}

using gemm::DivideRoundingUp;

// Rows of A per job: a multiple of every kernel's row count (8, 6, 4), with the block of A about
// kBlockBytes (it stays in the core's L2 cache while the panels pass over it).
constexpr size_t kRowQuantum = 24;
constexpr size_t kBlockBytes = size_t{64} << 10;

}  // namespace

void PackedMatrix::AlignedDelete::operator()(float* p) const {
  ::operator delete[](p, std::align_val_t(64));
}

size_t PackedMatrix::Bytes(size_t k, size_t n) {
  return (n + kPanelWidth - 1) / kPanelWidth * (k + 1) * kPanelWidth * sizeof(float);
}

PackedMatrix::PackedMatrix(gemm::Transpose trans_b, size_t k, size_t n, const float* b, size_t ldb,
                           const float* bias)
    : k_(k), n_(n) {
  const size_t count = Bytes(k, n) / sizeof(float);
  data_.reset(static_cast<float*>(::operator new[](count * sizeof(float), std::align_val_t(64))));
  for (size_t p = 0; p < panels(); ++p) {
    float* out = data_.get() + p * (k + 1) * kPanelWidth;
    const size_t first = p * kPanelWidth;
    const size_t cols = std::min(kPanelWidth, n - first);
    std::fill(out, out + (k + 1) * kPanelWidth, 0.f);
    for (size_t j = 0; j < cols; ++j) out[j] = bias == nullptr ? 0.f : bias[first + j];
    out += kPanelWidth;
    for (size_t i = 0; i < k; ++i, out += kPanelWidth) {
      for (size_t j = 0; j < cols; ++j) {
        out[j] =
            trans_b == gemm::Transpose::kYes ? b[(first + j) * ldb + i] : b[i * ldb + first + j];
      }
    }
  }
}

void Multiply(size_t m, const float* a, size_t lda, const PackedMatrix& b, float low, float high,
              float* c, size_t ldc) {
  Multiply(m, gemm::StridedRows<float>(a, lda, b.k()), b, low, high, c, ldc);
}

void Multiply(size_t m, const RowSource& a, const PackedMatrix& b, float low, float high, float* c,
              size_t ldc) {
  if (m == 0 || b.n() == 0) return;
  const Kernel& kernel = TheKernel();
  const size_t k = b.k();
  const size_t panels = b.panels();
  const size_t panel_stride = (k + 1) * kPanelWidth;
  const bool clamp = !(low == -std::numeric_limits<float>::infinity() &&
                       high == std::numeric_limits<float>::infinity());
  // Jobs: blocks of rows times groups of panels; panels are grouped when there are too few row
  // blocks to share out (a few jobs per thread balance a loaded machine).
  const size_t by_bytes = std::max<size_t>(1, kBlockBytes / (std::max<size_t>(k, 1) * 4));
  const size_t block_rows = std::min(DivideRoundingUp(m, kRowQuantum) * kRowQuantum,
                                     std::max(kRowQuantum, by_bytes / kRowQuantum * kRowQuantum));
  const gemm::JobGrid grid(m, block_rows, panels,
                           gemm::GroupPanels(panels, DivideRoundingUp(m, block_rows),
                                             4 * static_cast<size_t>(gemm::ThreadCount()),
                                             m <= kernel.few_rows, kernel.max_panels));
  const size_t job_work = std::min(block_rows, m) * (k + 1) * grid.group_panels() * kPanelWidth;
  gemm::ParallelFor(grid.jobs(), job_work, [&](size_t begin, size_t end) {
    // Uninitialised: a RowSource writes the rows it assembles before they are read.
    std::unique_ptr<float[]> scratch(new float[kMaxBlockRows * std::max<size_t>(k, 1)]);
    const float* rows[kMaxBlockRows];
    for (size_t index = begin; index < end; ++index) {
      const gemm::JobGrid::Job job = grid[index];
      for (size_t r = job.row_begin; r < job.row_end; r += kernel.rows) {
        Block block{};
        block.row_count = std::min(kernel.rows, job.row_end - r);
        block.offsets = a.Rows(r, block.row_count, scratch.get(), rows);
        block.rows = rows;
        block.segments = a.segments();
        block.segment_length = a.segment_length();
        block.panel_stride = panel_stride;
        block.low = low;
        block.high = high;
        block.clamp = clamp;
        block.ldc = ldc;
        const size_t step = block.row_count <= kernel.few_rows ? kernel.max_panels : 1;
        for (size_t p = job.panel_begin; p < job.panel_end; p += block.panels) {
          block.panels = std::min(step, job.panel_end - p);
          const size_t last = p + block.panels - 1;
          block.panel = b.panel(p);
          block.cols = std::min(kPanelWidth, b.n() - last * kPanelWidth);
          block.c = c + r * ldc + p * kPanelWidth;
          kernel.function(block);
        }
      }
    }
  });
}

bool Enabled() {
  const char* value = std::getenv("MOCK_NNAPI_PACKED_GEMM");
  return value == nullptr || std::strcmp(value, "0") != 0;
}

const char* KernelName() { return TheKernel().name; }

}  // namespace packed_gemm
}  // namespace mock_nnapi
