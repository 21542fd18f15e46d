// SPDX-License-Identifier: Apache-2.0
// An exact 8-bit integer GEMM of the mock's own for constant quantised weights (CONV_2D filters,
// FULLY_CONNECTED weights): S[i, j] = sum_k (x[i, k] - x_zero) * (w[j, k] - w_zero) in int32,
// the same sums gemm::IntegerGemm computes through fp32 (so requantised outputs are the same bits).
//
// The instruction it is built around, vpdpbusd (AVX-512 VNNI, AVX-VNNI), multiplies unsigned by
// signed bytes. The input is used as it is (no per-run conversion): unsigned (QUANT8_ASYMM) inputs
// meet weights made signed (uint8 weights minus 128), signed (QUANT8_ASYMM_SIGNED) inputs meet
// weights made unsigned (int8 weights plus 128). With p[j, k] the packed weight and p_zero its
// zero point (w_zero moved the same way),
//   S[i, j] = sum_k x[i, k] p[j, k] + K x_zero p_zero - x_zero sum_k p[j, k]
//             - p_zero sum_k x[i, k],
// all in wrapping 32-bit arithmetic: the result is exact whenever the true sum fits int32, which
// the callers check (CanMultiply) before taking this path; each term may wrap on the way.
// The column terms are folded in when the weights are packed; the row sums are computed only when
// p_zero is not 0 (not for uint8 weights with zero point 128, nor for per-channel int8 filters
// with unsigned inputs). p_zero is one value: the mock's quantised weights have one zero point
// (per-channel filters have 0).
//
// Packing: B in column panels of kPanelWidth columns; panel p holds its columns' constant terms
// (int32), then, for each segment of the reduction (see RowSource) padded to a
// multiple of 4, groups of 4 consecutive k: 4 bytes of each of the 32 columns (zero past N and
// past the segment), so a 64-byte vector holds 16 columns x 4 k, vpdpbusd's layout.
//
// Micro-kernels, one file each (int8_gemm_<isa>.cc), chosen when first used (the widest the CPU
// runs; MOCK_NNAPI_INT8_GEMM_KERNEL=avx512vnni|avxvnni|avx2|portable selects a narrower one, read
// once, for tests and measurements):
// - avx512vnni: 8 rows x 32 columns (two zmm accumulators a row), one or two rows over up to 4
//   panels at once (independent accumulators hide vpdpbusd's latency);
// - avxvnni: the same instruction on ymm, 6 rows x 16 columns per pass;
// - avx2: bytes widened to int16 and multiplied with vpmaddwd (exact: vpmaddubsw would saturate
//   its int16 pair sums), 4 rows x 8 columns per pass;
// - portable: plain C++ on int32 (what arm64 and other targets build), 4 rows x 32 columns; used
//   only when MOCK_NNAPI_INT8_GEMM_KERNEL=portable asks for it (see Enabled).
// All of them compute the same exact sums.
#ifndef MOCK_NNAPI_SRC_KERNELS_INT8_GEMM_H_
#define MOCK_NNAPI_SRC_KERNELS_INT8_GEMM_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "gemm_blocks.h"

namespace mock_nnapi {
namespace int8_gemm {

// Columns per panel.
constexpr size_t kPanelWidth = 32;

// Whether the weights' bytes are int8 (QUANT8_ASYMM_SIGNED, QUANT8_SYMM_PER_CHANNEL) or uint8,
// and likewise the input's.
struct Signedness {
  bool input_signed = false;
  bool weights_signed = false;
};

// B = the weights, N rows of K bytes (w[j * ldb + k]: CONV_2D filters [C_out, kH, kW, C_in],
// FULLY_CONNECTED weights [num_units, input_size]), packed (see the file comment). The reduction
// is `segments` runs of `segment_length` k each (the RowSource's shape).
class PackedWeights {
 public:
  // weight_zero_point: the weights' (0 for per-channel filters); input_zero_point: the input's,
  // folded into the column terms (Multiply's rows must have it).
  PackedWeights(Signedness signedness, size_t segments, size_t segment_length, size_t n,
                const void* weights, size_t ldb, int32_t weight_zero_point,
                int32_t input_zero_point);

  // Bytes a PackedWeights of these sizes holds (the DerivedConstants budget's charge).
  static size_t Bytes(size_t segments, size_t segment_length, size_t n);

  Signedness signedness() const { return signedness_; }
  size_t segments() const { return segments_; }
  size_t segment_length() const { return segment_length_; }
  size_t k() const { return segments_ * segment_length_; }
  size_t n() const { return n_; }
  size_t panels() const { return (n_ + kPanelWidth - 1) / kPanelWidth; }
  // Groups of 4 k per segment.
  size_t segment_groups() const { return (segment_length_ + 3) / 4; }
  // Bytes from one panel to the next.
  size_t panel_stride() const;
  // Panel p: kPanelWidth int32 column terms, then the weight groups; 64-byte aligned.
  const uint8_t* panel(size_t p) const { return data_.get() + p * panel_stride(); }
  // p_zero: the packed weights' zero point (S needs the input's row sums unless it is 0).
  int32_t packed_zero_point() const { return packed_zero_point_; }

 private:
  struct AlignedDelete {
    void operator()(uint8_t* p) const;
  };
  Signedness signedness_;
  size_t segments_;
  size_t segment_length_;
  size_t n_;
  int32_t packed_zero_point_ = 0;
  std::unique_ptr<uint8_t[], AlignedDelete> data_;
};

// A's rows (gemm_blocks.h): the input's bytes (uint8 or int8 data alike).
using RowSource = gemm::RowSource<uint8_t>;
using StridedRows = gemm::StridedRows<uint8_t>;

// Whether no sum of k products of (x - x_zero) and (w - w_zero) can leave the int32 range
// (max_abs_*: the largest |x - x_zero|, |w - w_zero|); otherwise callers keep their saturating
// path.
bool CanMultiply(size_t k, double max_abs_input, double max_abs_weights);

// finish(first, count, sums): the exact sums of rows [first, first + count), sums[r * n + j] for
// r < count, j < n. Called from several threads at once (disjoint rows).
using Finish = std::function<void(size_t first, size_t count, const int32_t* sums)>;

// S for the m rows of `a` (a.segments() and a.segment_length() must be b's), handed to `finish`
// block by block: the work is shared out over gemm::ParallelFor in blocks of rows (each block's
// sums in a buffer of the job, finished as soon as computed), or, with too few rows to share out
// or weights larger than the caches (past 2 MiB packed: FULLY_CONNECTED's, then in blocks of up
// to 512 KiB of A, so the weights stream from memory once per block), in groups of panels into
// one m x n buffer finished by blocks of rows over the pool afterwards.
void Multiply(size_t m, const RowSource& a, const PackedWeights& b, const Finish& finish);

// Whether kernels use int8_gemm for their constant weights: yes unless the environment variable
// MOCK_NNAPI_INT8_GEMM is 0 (read on every call, for A/B measurements and tests in one process:
// the other path computes the same bits), and only with a vector kernel (x86-64 with AVX2 or
// better) unless MOCK_NNAPI_INT8_GEMM_KERNEL=portable asks for the portable one: elsewhere
// (arm64) the IntegerGemm path on OpenBLAS is faster.
bool Enabled();

// The micro-kernel in use: "avx512vnni", "avxvnni", "avx2" or "portable".
const char* KernelName();

}  // namespace int8_gemm
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_INT8_GEMM_H_
