// SPDX-License-Identifier: Apache-2.0
// The exact int8 GEMM (see int8_gemm.h): packing, micro-kernels, dispatch and the pool split.
#include "int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

#include "../ops/gemm.h"
#include "../statistics.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace mock_nnapi {
namespace int8_gemm {
namespace {

// Bytes of a panel's header (the column terms) and of one group of 4 k of its columns.
constexpr size_t kHeaderBytes = kPanelWidth * sizeof(int32_t);
constexpr size_t kGroupBytes = kPanelWidth * 4;

// One micro-kernel call: rows [0, row_count) of A times `panels` consecutive panels; the last
// has `cols` valid columns. c[r * ldc + j] = the exact sums (column terms and row_terms[r] added).
struct Block {
  const uint8_t* const* rows;
  const size_t* offsets;
  size_t segments;
  size_t full_groups;  // whole groups of 4 k per segment
  size_t tail;         // k left over per segment (0-3)
  const uint8_t* panel;
  size_t panel_stride;
  size_t panels;
  size_t row_count;
  size_t cols;
  const int32_t* row_terms;  // -p_zero * (row sum), one per row; null when p_zero is 0
  int32_t* c;
  size_t ldc;
};

using KernelFunction = void (*)(const Block& block);

inline int32_t RowTerm(const Block& b, int r) {
  return b.row_terms != nullptr ? b.row_terms[r] : 0;
}

struct Kernel {
  const char* name;
  size_t rows;        // rows of A per call at most
  size_t few_rows;    // calls with at most this many rows may take several panels
  size_t max_panels;  // panels per call then
  KernelFunction signed_input;
  KernelFunction unsigned_input;
};

// 4 bytes of A (unaligned), and the last 1-3 of a segment padded with zeros (the packed weights
// past the segment are 0, so what the padding holds does not matter; it must not be read past
// the row).
inline uint32_t LoadGroup(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// count is 1-3; byte loads, not a memcpy of a variable size (a library call).
inline uint32_t LoadTail(const uint8_t* p, size_t count) {
  uint32_t v = p[0];
  if (count > 1) v |= uint32_t{p[1]} << 8;
  if (count > 2) v |= uint32_t{p[2]} << 16;
  return v;
}

// ---- Portable: 4 rows x 32 columns, int32 (unsigned, wrapping) --------------------------------
constexpr size_t kPortableRows = 4;

template <bool kSignedInput, int R>
void PortableRows(const Block& b) {
  using X = typename std::conditional<kSignedInput, int8_t, uint8_t>::type;
  using W = typename std::conditional<kSignedInput, uint8_t, int8_t>::type;
  uint32_t acc[R][kPanelWidth] = {};
  const uint8_t* bp = b.panel + kHeaderBytes;
  auto step = [&](const uint32_t* x) {
    W w[kGroupBytes];
    std::memcpy(w, bp, kGroupBytes);
    for (int r = 0; r < R; ++r) {
      X xs[4];
      std::memcpy(xs, &x[r], 4);
      for (size_t j = 0; j < kPanelWidth; ++j) {
        int32_t sum = 0;
        for (int t = 0; t < 4; ++t) sum += int32_t{xs[t]} * int32_t{w[4 * j + t]};
        acc[r][j] += static_cast<uint32_t>(sum);
      }
    }
    bp += kGroupBytes;
  };
  for (size_t s = 0; s < b.segments; ++s) {
    const uint8_t* x_rows[R];
    for (int r = 0; r < R; ++r) x_rows[r] = b.rows[r] + b.offsets[s];
    uint32_t x[R];
    for (size_t g = 0; g < b.full_groups; ++g) {
      for (int r = 0; r < R; ++r) x[r] = LoadGroup(x_rows[r] + 4 * g);
      step(x);
    }
    if (b.tail > 0) {
      for (int r = 0; r < R; ++r) x[r] = LoadTail(x_rows[r] + 4 * b.full_groups, b.tail);
      step(x);
    }
  }
  int32_t terms[kPanelWidth];
  std::memcpy(terms, b.panel, kHeaderBytes);
  for (int r = 0; r < R; ++r) {
    int32_t* out = b.c + r * b.ldc;
    for (size_t j = 0; j < b.cols; ++j) {
      out[j] = static_cast<int32_t>(acc[r][j] + static_cast<uint32_t>(terms[j]) +
                                    static_cast<uint32_t>(RowTerm(b, r)));
    }
  }
}

template <bool kSignedInput>
void PortableKernel(const Block& b) {
  switch (b.row_count) {
    case 1:
      return PortableRows<kSignedInput, 1>(b);
    case 2:
      return PortableRows<kSignedInput, 2>(b);
    case 3:
      return PortableRows<kSignedInput, 3>(b);
    default:
      return PortableRows<kSignedInput, 4>(b);
  }
}

#if defined(__x86_64__)
// ---- AVX-512 VNNI: 8 rows x 32 columns; one or two rows over up to 4 panels ------------------
constexpr size_t kAvx512Rows = 8;
constexpr size_t kAvx512FewRows = 2;
constexpr size_t kAvx512Panels = 4;

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

// ---- AVX-VNNI: 6 rows x 16 columns (two ymm a row), two passes per panel ----------------------
constexpr size_t kAvxVnniRows = 6;

// Dpbusd512's AVX-VNNI form: the VEX encoding ({vex}; the EVEX one needs AVX512-VNNI), so ymm0-15
// only ("x").
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

// ---- AVX2: 4 rows x 8 columns per pass, bytes widened to int16, vpmaddwd ----------------------
// A group's 32 bytes of 8 columns widen to two vectors of 16 int16 (columns 0-3 and 4-7, 4 k
// each); the row's 4 bytes widen to 4 int16 repeated. vpmaddwd sums pairs of int16 products into
// int32 exactly (|u8 * s8| pairs stay far inside int32), so each accumulator holds two partial
// sums per column, added when stored.
constexpr size_t kAvx2Rows = 4;

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
#endif  // __x86_64__

#if defined(__x86_64__)
// AVX-VNNI: CPUID leaf 7, subleaf 1, EAX bit 4 (read directly: clang 14's
// __builtin_cpu_supports does not know "avxvnni"; the OS's ymm state is avx2's, checked too).
bool HasAvxVnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (eax >> 4) & 1u;
}
#endif

// The widest kernel the CPU runs, or the one MOCK_NNAPI_INT8_GEMM_KERNEL names if narrower.
Kernel ChooseKernel() {
  const char* wanted = std::getenv("MOCK_NNAPI_INT8_GEMM_KERNEL");
  int widest = 3;  // 3 avx512vnni, 2 avxvnni, 1 avx2, 0 portable
  if (wanted != nullptr && std::strcmp(wanted, "avxvnni") == 0) widest = 2;
  if (wanted != nullptr && std::strcmp(wanted, "avx2") == 0) widest = 1;
  if (wanted != nullptr && std::strcmp(wanted, "portable") == 0) widest = 0;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (widest >= 3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vnni")) {
    return {"avx512vnni",  kAvx512Rows,        kAvx512FewRows,
            kAvx512Panels, Avx512Kernel<true>, Avx512Kernel<false>};
  }
  if (widest >= 2 && __builtin_cpu_supports("avx2") && HasAvxVnni()) {
    return {"avxvnni", kAvxVnniRows, 0, 1, AvxVnniKernel<true>, AvxVnniKernel<false>};
  }
  if (widest >= 1 && __builtin_cpu_supports("avx2")) {
    return {"avx2", kAvx2Rows, 0, 1, Avx2Kernel<true>, Avx2Kernel<false>};
  }
#else
  (void)widest;
#endif
  return {"portable", kPortableRows, 0, 1, PortableKernel<true>, PortableKernel<false>};
}

const Kernel& TheKernel() {
  static const Kernel kernel = ChooseKernel();
  return kernel;
}

using gemm::DivideRoundingUp;

// Rows of A per job: a multiple of every kernel's row count (8, 6, 4); the block of A about
// kBlockBytes (it stays in the core's L2 cache while the panels pass over it), its sums about
// kSumBytes.
constexpr size_t kRowQuantum = 24;
constexpr size_t kBlockBytes = size_t{256} << 10;
constexpr size_t kSumBytes = size_t{32} << 10;
// Packed weights from which the panels are shared out (they do not stay in the cache), and the
// block of A then.
constexpr size_t kLargeWeightsBytes = size_t{2} << 20;
constexpr size_t kLargeBlockBytes = size_t{512} << 10;

// sum of a row's bytes (as X) over its segments, in wrapping 32-bit arithmetic.
template <typename X>
uint32_t RowSum(const uint8_t* row, const size_t* offsets, size_t segments, size_t length) {
  uint32_t total = 0;
  for (size_t s = 0; s < segments; ++s) {
    const X* x = reinterpret_cast<const X*>(row + offsets[s]);
    int32_t sum = 0;  // length * 255 stays far inside int32 for the reductions checked
    for (size_t i = 0; i < length; ++i) sum += x[i];
    total += static_cast<uint32_t>(sum);
  }
  return total;
}

}  // namespace

void PackedWeights::AlignedDelete::operator()(uint8_t* p) const {
  ::operator delete[](p, std::align_val_t(64));
}

size_t PackedWeights::panel_stride() const {
  return kHeaderBytes + segments_ * segment_groups() * kGroupBytes;
}

size_t PackedWeights::Bytes(size_t segments, size_t segment_length, size_t n) {
  const size_t stride = kHeaderBytes + segments * ((segment_length + 3) / 4) * kGroupBytes;
  return DivideRoundingUp(n, kPanelWidth) * stride;
}

PackedWeights::PackedWeights(Signedness signedness, size_t segments, size_t segment_length,
                             size_t n, const void* weights, size_t ldb, int32_t weight_zero_point,
                             int32_t input_zero_point)
    : signedness_(signedness), segments_(segments), segment_length_(segment_length), n_(n) {
  // The packed bytes: int8 (w - 128 for uint8 weights) for unsigned inputs, uint8 (w + 128 for
  // int8 weights) for signed ones; either way the byte is w ^ 0x80 when the signedness changes.
  const bool flip = signedness.input_signed == signedness.weights_signed;
  const int32_t shift = !flip ? 0 : (signedness.weights_signed ? 128 : -128);
  packed_zero_point_ = weight_zero_point + shift;
  const size_t bytes = Bytes(segments, segment_length, n);
  data_.reset(static_cast<uint8_t*>(::operator new[](bytes, std::align_val_t(64))));
  std::memset(data_.get(), 0, bytes);
  const uint8_t* w = static_cast<const uint8_t*>(weights);
  const size_t k_total = k();
  const size_t groups = segment_groups();
  for (size_t p = 0; p < panels(); ++p) {
    uint8_t* panel = data_.get() + p * panel_stride();
    const size_t first = p * kPanelWidth;
    const size_t cols = std::min(kPanelWidth, n - first);
    int32_t terms[kPanelWidth] = {};
    for (size_t j = 0; j < cols; ++j) {
      const uint8_t* row = w + (first + j) * ldb;
      uint32_t column_sum = 0;
      for (size_t s = 0; s < segments; ++s) {
        uint8_t* dst = panel + kHeaderBytes + s * groups * kGroupBytes;
        for (size_t t = 0; t < segment_length; ++t) {
          const uint8_t byte =
              static_cast<uint8_t>(row[s * segment_length + t] ^ (flip ? 0x80 : 0));
          dst[(t / 4) * kGroupBytes + 4 * j + t % 4] = byte;
          column_sum += signedness.input_signed ? uint32_t{byte}
                                                : static_cast<uint32_t>(int32_t{int8_t(byte)});
        }
      }
      // K x_zero p_zero - x_zero sum_k p (wrapping).
      const uint32_t x_zero = static_cast<uint32_t>(input_zero_point);
      terms[j] = static_cast<int32_t>(static_cast<uint32_t>(k_total) * x_zero *
                                          static_cast<uint32_t>(packed_zero_point_) -
                                      x_zero * column_sum);
    }
    std::memcpy(panel, terms, kHeaderBytes);
  }
}

bool CanMultiply(size_t k, double max_abs_input, double max_abs_weights) {
  return static_cast<double>(k) * max_abs_input * max_abs_weights < 2147483647.0;
}

void Multiply(size_t m, const RowSource& a, const PackedWeights& b, const Finish& finish) {
  const size_t n = b.n();
  if (m == 0 || n == 0) return;
  Increment(Counter::kInt8GemmProducts);
  const Kernel& kernel = TheKernel();
  const KernelFunction function =
      b.signedness().input_signed ? kernel.signed_input : kernel.unsigned_input;
  const size_t k = b.k();
  const size_t depth = std::max<size_t>(k, 1);
  const size_t panels = b.panels();
  const size_t threads = static_cast<size_t>(gemm::ThreadCount());
  const size_t wanted_jobs = 4 * threads;
  // Weights larger than the caches (FULLY_CONNECTED's): blocks of rows as large as the cache
  // holds, the panels shared out, so the weights are read from memory once per block of rows.
  // Otherwise (convolution filters) blocks of rows whose A and sums stay in the cache (the sums
  // are requantised right after), and enough of them to share out when there are rows enough.
  const bool large_weights = panels * b.panel_stride() > kLargeWeightsBytes;
  size_t block_rows = 0;
  if (large_weights) {
    block_rows = std::max(kRowQuantum, kLargeBlockBytes / depth / kRowQuantum * kRowQuantum);
  } else {
    const size_t by_a = kBlockBytes / depth;
    const size_t by_sums = kSumBytes / (n * sizeof(int32_t));
    const size_t by_jobs = DivideRoundingUp(m, wanted_jobs);
    block_rows =
        std::max(kRowQuantum, std::min({by_a, by_sums, by_jobs}) / kRowQuantum * kRowQuantum);
  }
  const size_t row_blocks = DivideRoundingUp(m, block_rows);
  // Two blocks a thread at least; otherwise the panels are shared out too.
  const bool by_rows = threads <= 1 || (!large_weights && row_blocks >= 2 * threads);
  const gemm::JobGrid grid(m, block_rows, panels,
                           by_rows ? panels
                                   : gemm::GroupPanels(panels, row_blocks, wanted_jobs,
                                                       m <= kernel.few_rows, kernel.max_panels));
  std::unique_ptr<int32_t[]> all_sums(by_rows ? nullptr : new int32_t[m * n]);
  const int32_t p_zero = b.packed_zero_point();
  const bool input_signed = b.signedness().input_signed;
  const size_t job_work = std::min(block_rows, m) * (b.segments() * b.segment_groups() * 4) *
                          grid.group_panels() * kPanelWidth / 4;
  gemm::ParallelFor(grid.jobs(), job_work, [&](size_t begin, size_t end) {
    // Uninitialised: written before they are read.
    std::unique_ptr<uint8_t[]> scratch(new uint8_t[block_rows * depth]);
    std::unique_ptr<const uint8_t*[]> rows(new const uint8_t*[block_rows]);
    std::unique_ptr<const size_t*[]> offsets(
        new const size_t*[DivideRoundingUp(block_rows, kernel.rows)]);
    std::unique_ptr<int32_t[]> row_terms(new int32_t[block_rows]);
    std::unique_ptr<int32_t[]> tile(by_rows ? new int32_t[block_rows * n] : nullptr);
    for (size_t index = begin; index < end; ++index) {
      const gemm::JobGrid::Job job = grid[index];
      const size_t row_begin = job.row_begin;
      const size_t row_count = job.row_end - job.row_begin;
      // The block's rows (kernel.rows at a time), and their terms -p_zero * row sum.
      for (size_t r = 0; r < row_count; r += kernel.rows) {
        const size_t count = std::min(kernel.rows, row_count - r);
        offsets[r / kernel.rows] =
            a.Rows(row_begin + r, count, scratch.get() + r * depth, rows.get() + r);
        for (size_t i = r; i < r + count; ++i) {
          uint32_t sum = 0;
          if (p_zero != 0) {
            sum = input_signed ? RowSum<int8_t>(rows[i], offsets[r / kernel.rows], a.segments(),
                                                a.segment_length())
                               : RowSum<uint8_t>(rows[i], offsets[r / kernel.rows], a.segments(),
                                                 a.segment_length());
          }
          row_terms[i] = static_cast<int32_t>(0u - static_cast<uint32_t>(p_zero) * sum);
        }
      }
      int32_t* c = by_rows ? tile.get() : all_sums.get() + row_begin * n;
      Block block{};
      block.segments = b.segments();
      block.full_groups = b.segment_length() / 4;
      block.tail = b.segment_length() % 4;
      block.panel_stride = b.panel_stride();
      block.ldc = n;
      // Panels outer: each passes over the block's rows while it is in the cache.
      const size_t panel_step = row_count <= kernel.few_rows ? kernel.max_panels : 1;
      for (size_t p = job.panel_begin; p < job.panel_end; p += block.panels) {
        block.panels = std::min(panel_step, job.panel_end - p);
        for (size_t r = 0; r < row_count; r += kernel.rows) {
          block.row_count = std::min(kernel.rows, row_count - r);
          block.rows = rows.get() + r;
          block.offsets = offsets[r / kernel.rows];
          block.row_terms = p_zero != 0 ? row_terms.get() + r : nullptr;
          const size_t last = p + block.panels - 1;
          block.panel = b.panel(p);
          block.cols = std::min(kPanelWidth, n - last * kPanelWidth);
          block.c = c + r * n + p * kPanelWidth;
          function(block);
        }
      }
      if (by_rows) finish(row_begin, row_count, tile.get());
    }
  });
  if (by_rows) return;
  const size_t finish_rows = std::max<size_t>(1, 16384 / n);
  gemm::ParallelFor(DivideRoundingUp(m, finish_rows), finish_rows * n * 4,
                    [&](size_t begin, size_t end) {
                      const size_t first = begin * finish_rows;
                      const size_t count = std::min(m, end * finish_rows) - first;
                      finish(first, count, all_sums.get() + first * n);
                    });
}

bool Enabled() {
  const char* value = std::getenv("MOCK_NNAPI_INT8_GEMM");
  if (value != nullptr && std::strcmp(value, "0") == 0) return false;
  // The portable kernel only when asked for: measured on x86-64 (SSE2) 5x slower than the
  // IntegerGemm path on OpenBLAS (FULLY_CONNECTED 128x2048x2048: 71 against 15 ms), so CPUs
  // without AVX2 (arm64 among them) keep that path by default.
  static const bool fast = std::strcmp(TheKernel().name, "portable") != 0;
  static const bool portable_asked = [] {
    const char* wanted = std::getenv("MOCK_NNAPI_INT8_GEMM_KERNEL");
    return wanted != nullptr && std::strcmp(wanted, "portable") == 0;
  }();
  return fast || portable_asked;
}

const char* KernelName() { return TheKernel().name; }

}  // namespace int8_gemm
}  // namespace mock_nnapi
