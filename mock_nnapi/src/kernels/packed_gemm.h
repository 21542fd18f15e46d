// SPDX-License-Identifier: Apache-2.0
// A GEMM of the mock's own for a constant right-hand side (CONV_2D filters, small
// FULLY_CONNECTED weights): C[M, N] = clamp(bias + A[M, K] * B[K, N], low, high).
//
// B (with the bias) is packed once into column panels of kPanelWidth floats: panel j holds the
// bias of columns [32 j, 32 j + 32) and then B's rows k = 0 .. K-1 restricted to those columns
// (K-major, zero past N), so a micro-kernel reads it sequentially. A is read in place (row-major,
// any leading dimension): each element is broadcast against a panel row. The fused activation's
// clamp is applied when the accumulators are stored. OpenBLAS packs both operands again on every
// call (and the pool split re-packs B once per block): on the small products of the convolution
// layers that costs as much as the arithmetic (docs/performance.md).
//
// Summation order: every output element starts from its bias and adds a[i, k] * b[k, j] for k
// ascending, one fused multiply-add each (AVX-512, AVX2+FMA, NEON) or a multiply then an add (the
// SSE2 baseline of other x86-64 CPUs, and builds for other targets). The order depends on
// nothing else, so the result is the same bits whatever the thread count, the split into blocks
// or the kernel (among the FMA ones); it differs from OpenBLAS's sgemm by fp32 rounding only.
//
// Each micro-kernel has a file of its own (packed_gemm_<isa>.cc). The one in use is chosen when
// first used (the widest the CPU runs); the environment variable
// MOCK_NNAPI_PACKED_GEMM_KERNEL=avx512|avx2|portable selects a narrower one (read once; for tests
// and measurements; a kernel the CPU cannot run is never chosen).
#ifndef MOCK_NNAPI_SRC_KERNELS_PACKED_GEMM_H_
#define MOCK_NNAPI_SRC_KERNELS_PACKED_GEMM_H_

#include <cstddef>
#include <memory>

#include "../ops/gemm.h"
#include "gemm_blocks.h"

namespace mock_nnapi {
namespace packed_gemm {

// Columns per panel.
constexpr size_t kPanelWidth = 32;

// B[K, N] and a bias, packed (see the file comment).
class PackedMatrix {
 public:
  // B is stored K x N (trans_b kNo: element (k, j) at b[k * ldb + j]) or N x K (kYes: at
  // b[j * ldb + k], the layout of CONV_2D filters and FULLY_CONNECTED weights). bias has N
  // elements or is null (zeros).
  PackedMatrix(gemm::Transpose trans_b, size_t k, size_t n, const float* b, size_t ldb,
               const float* bias);

  // Bytes a PackedMatrix of these sizes holds (the DerivedConstants budget's charge).
  static size_t Bytes(size_t k, size_t n);

  size_t k() const { return k_; }
  size_t n() const { return n_; }
  size_t panels() const { return (n_ + kPanelWidth - 1) / kPanelWidth; }
  // Panel p: (1 + k) rows of kPanelWidth floats, 64-byte aligned.
  const float* panel(size_t p) const { return data_.get() + p * (k_ + 1) * kPanelWidth; }

 private:
  struct AlignedDelete {
    void operator()(float* p) const;
  };
  size_t k_;
  size_t n_;
  std::unique_ptr<float[], AlignedDelete> data_;
};

// A's rows (gemm_blocks.h): floats.
using RowSource = gemm::RowSource<float>;
using gemm::kMaxBlockRows;

// C[i, j] = clamp(bias[j] + sum_k A[i, k] * B[k, j], low, high) for i < m, j < b.n();
// c[i * ldc + j]. low/high are FloatActivationRange's (-inf/+inf: no clamp; NaN stays NaN).
// Shared out over gemm::ParallelFor in blocks of rows (and of panels when there are few rows);
// run inside a pool job, it stays on the calling thread. a.depth() must be b.k().
void Multiply(size_t m, const RowSource& a, const PackedMatrix& b, float low, float high, float* c,
              size_t ldc);
// The same for a row-major A (row i at a + i * lda).
void Multiply(size_t m, const float* a, size_t lda, const PackedMatrix& b, float low, float high,
              float* c, size_t ldc);

// Whether kernels use packed_gemm for their constant weights: yes unless the environment variable
// MOCK_NNAPI_PACKED_GEMM is 0 (read on every call, for A/B measurements and tests in one
// process; the OpenBLAS path computes the same values up to fp32 rounding).
bool Enabled();

// The micro-kernel in use: "avx512", "avx2" or "portable".
const char* KernelName();

}  // namespace packed_gemm
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_PACKED_GEMM_H_
