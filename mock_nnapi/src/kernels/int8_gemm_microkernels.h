// SPDX-License-Identifier: Apache-2.0
// int8_gemm's micro-kernels, one translation unit per instruction set (int8_gemm_<isa>.cc);
// int8_gemm.cc chooses one at run time and calls it through a KernelFunction. Each computes the
// exact sums of a Block (int8_gemm.h: wrapping int32, the column terms and the row terms added),
// for signed (kSignedInput) or unsigned input bytes. The x86-64 kernels take their instructions
// function by function (__attribute__((target))), so the files need no flags of their own and a
// CPU without them never runs them.
#ifndef MOCK_NNAPI_SRC_KERNELS_INT8_GEMM_MICROKERNELS_H_
#define MOCK_NNAPI_SRC_KERNELS_INT8_GEMM_MICROKERNELS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "int8_gemm.h"

namespace mock_nnapi {
namespace int8_gemm {
namespace microkernels {

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

inline int32_t RowTerm(const Block& b, int r) {
  return b.row_terms != nullptr ? b.row_terms[r] : 0;
}

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

// Portable (int8_gemm_portable.cc, every target): 4 rows x 32 columns, int32.
constexpr size_t kPortableRows = 4;
template <bool kSignedInput>
void PortableKernel(const Block& b);

#if defined(__x86_64__)
// AVX-512 VNNI (int8_gemm_avx512vnni.cc): 8 rows x 32 columns; one or two rows over up to
// kAvx512Panels panels.
constexpr size_t kAvx512Rows = 8;
constexpr size_t kAvx512FewRows = 2;
constexpr size_t kAvx512Panels = 4;
template <bool kSignedInput>
void Avx512Kernel(const Block& b);

// AVX-VNNI (int8_gemm_avxvnni.cc): 6 rows x 16 columns, two passes per panel.
constexpr size_t kAvxVnniRows = 6;
template <bool kSignedInput>
void AvxVnniKernel(const Block& b);

// AVX2 (int8_gemm_avx2.cc): 4 rows x 8 columns per pass, bytes widened to int16.
constexpr size_t kAvx2Rows = 4;
template <bool kSignedInput>
void Avx2Kernel(const Block& b);
#endif  // __x86_64__

}  // namespace microkernels
}  // namespace int8_gemm
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_INT8_GEMM_MICROKERNELS_H_
