// SPDX-License-Identifier: Apache-2.0
// packed_gemm (see packed_gemm.h): packing, the choice of micro-kernel
// (packed_gemm_microkernels.h) and the pool split.
#include "packed_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "packed_gemm_microkernels.h"

namespace mock_nnapi {
namespace packed_gemm {
namespace {

using microkernels::Block;
using microkernels::kPortableRows;
using microkernels::PortableKernel;
#if defined(__x86_64__)
using microkernels::Avx2Kernel;
using microkernels::Avx512Kernel;
using microkernels::kAvx2Rows;
using microkernels::kAvx512FewRows;
using microkernels::kAvx512Panels;
using microkernels::kAvx512Rows;
#endif

using KernelFunction = void (*)(const Block& block);

struct Kernel {
  const char* name;
  size_t rows;        // rows of A per call at most
  size_t few_rows;    // calls with at most this many rows may take several panels
  size_t max_panels;  // panels per call then
  KernelFunction function;
};

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
