// SPDX-License-Identifier: Apache-2.0
// The exact int8 GEMM (see int8_gemm.h): packing, the choice of micro-kernel
// (int8_gemm_microkernels.h) and the pool split.
#include "int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "../ops/gemm.h"
#include "../statistics.h"
#include "int8_gemm_microkernels.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace mock_nnapi {
namespace int8_gemm {
namespace {

using microkernels::Block;
using microkernels::kGroupBytes;
using microkernels::kHeaderBytes;
using microkernels::kPortableRows;
using microkernels::PortableKernel;
#if defined(__x86_64__)
using microkernels::Avx2Kernel;
using microkernels::Avx512Kernel;
using microkernels::AvxVnniKernel;
using microkernels::kAvx2Rows;
using microkernels::kAvx512FewRows;
using microkernels::kAvx512Panels;
using microkernels::kAvx512Rows;
using microkernels::kAvxVnniRows;
#endif

using KernelFunction = void (*)(const Block& block);

struct Kernel {
  const char* name;
  size_t rows;        // rows of A per call at most
  size_t few_rows;    // calls with at most this many rows may take several panels
  size_t max_panels;  // panels per call then
  KernelFunction signed_input;
  KernelFunction unsigned_input;
};

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
