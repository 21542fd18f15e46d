// SPDX-License-Identifier: Apache-2.0
// packed_gemm's micro-kernels, one translation unit per instruction set (packed_gemm_<isa>.cc);
// packed_gemm.cc chooses one at run time and calls it through a KernelFunction. Each computes a
// Block as packed_gemm.h defines the product: every output starts from its bias and adds
// a[i, k] * b[k, j] for k ascending, then the clamp when the Block asks for it. The x86-64 kernels
// take their instructions function by function (__attribute__((target))), so the file needs no
// flags of its own and a CPU without them never runs them.
#ifndef MOCK_NNAPI_SRC_KERNELS_PACKED_GEMM_MICROKERNELS_H_
#define MOCK_NNAPI_SRC_KERNELS_PACKED_GEMM_MICROKERNELS_H_

#include <cstddef>

#include "packed_gemm.h"

namespace mock_nnapi {
namespace packed_gemm {
namespace microkernels {

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

// Portable (packed_gemm_portable.cc, every target): 4 rows x 16 columns per pass, two passes per
// panel.
constexpr size_t kPortableRows = 4;
void PortableKernel(const Block& b);

#if defined(__x86_64__)
// AVX-512F (packed_gemm_avx512.cc): 8 rows x 32 columns; one or two rows take up to
// kAvx512Panels panels at once.
constexpr size_t kAvx512Rows = 8;
constexpr size_t kAvx512FewRows = 2;
constexpr size_t kAvx512Panels = 4;
void Avx512Kernel(const Block& b);

// AVX2 + FMA (packed_gemm_avx2.cc): 6 rows x 16 columns, two passes per panel.
constexpr size_t kAvx2Rows = 6;
void Avx2Kernel(const Block& b);
#endif  // __x86_64__

}  // namespace microkernels
}  // namespace packed_gemm
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_PACKED_GEMM_MICROKERNELS_H_
