// SPDX-License-Identifier: Apache-2.0
// GEMM and quantisation helpers shared by the matrix-shaped kernels (FULLY_CONNECTED,
// BATCH_MATMUL, CONV_2D, GROUPED_CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV_2D).
//
// - Sgemm: a row-major wrapper over OpenBLAS's scipy_cblas_sgemm (the scipy-openblas32 wheel).
// - IntegerGemm: exact int32 products of integer-valued matrices through sgemm. A float holds
//   every integer up to 2^24 exactly, so the reduction dimension is split into chunks whose
//   partial sums cannot exceed that; chunks are added in double precision.
// - fp16 <-> fp32 conversion, offset subtraction for quantised operands, fused-activation ranges
//   and requantisation with a real multiplier (round half away from zero, like Android's CPU
//   path up to its fixed-point rounding: results agree within one quantisation step).
// - ParallelFor: splits a loop over the OpenBLAS thread count (the GEMM blocks and the direct
//   loops).
#ifndef MOCK_NNAPI_SRC_OPS_GEMM_H_
#define MOCK_NNAPI_SRC_OPS_GEMM_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common.h"

namespace mock_nnapi {
namespace gemm {

enum class Transpose { kNo, kYes };

// Row-major C[M, N] = alpha * op(A)[M, K] * op(B)[K, N] + beta * C. op(A) is A (stored M x K,
// leading dimension lda) or A transposed (stored K x M); likewise for B. A single row or column
// goes to sgemv (sgemm would pack the whole matrix operand for one vector). Large products
// (matrix-vector ones too) are split into column (or row) blocks computed on the ParallelFor
// pool, with OpenBLAS single-threaded: its helper threads spin for a while after each threaded
// call and would compete with the pool's workers (and anyone else's) for the cores; on a loaded
// machine its static split also waits for its slowest thread, while the pool's dynamic one does
// not (docs/performance.md). With MOCK_NNAPI_GEMM_THREADING=blas a large matrix-matrix product
// (not inside a pool job) is one OpenBLAS call on OpenBLAS's own threads instead, one such call
// at a time while no pool job runs (callers wait for each other; the bits depend only on the
// shape and the thread count). Either way a product's result is the same run after run.
// Multiply-adds (m * n * k) from which Sgemm splits one product over the pool.
constexpr size_t kParallelGemmWork = size_t{1} << 21;

void Sgemm(Transpose trans_a, Transpose trans_b, size_t m, size_t n, size_t k, float alpha,
           const float* a, size_t lda, const float* b, size_t ldb, float beta, float* c,
           size_t ldc);

// Exact C[M, N] = op(A) * op(B) for matrices holding integers (stored as float) with
// |a| <= max_abs_a and |b| <= max_abs_b. Sums are saturated to the int32 range.
void IntegerGemm(Transpose trans_a, Transpose trans_b, size_t m, size_t n, size_t k, const float* a,
                 size_t lda, float max_abs_a, const float* b, size_t ldb, float max_abs_b,
                 int32_t* c, size_t ldc);

// The number of threads the kernels may use: OpenBLAS's current setting (OPENBLAS_NUM_THREADS,
// threadpoolctl), so one knob controls the library.
int ThreadCount();

// The BLAS in use as a JSON object (MockNnapi_getBlasInfo): "config" (openblas_get_config),
// "core" (the kernel set OpenBLAS chose when it loaded, openblas_get_corename), "core_source"
// (the OPENBLAS_CORETYPE it saw then, or OpenBLAS's own detection from the CPU) and "threads".
std::string BlasInfoJson();

// Calls body(begin, end) over [0, count) split into contiguous ranges, in parallel when the work
// (count * cost_per_item, in rough multiply-adds) is large enough to pay for threads.
//
// Ranges go to a persistent pool and to the calling thread: each thread first runs its own
// contiguous share (the same ranges every time, so data stays in the cache of the core that read
// it), then takes what is left of the others' shares, so a worker that the OS schedules late (a
// loaded machine) delays nothing it has not started. Idle workers, and the caller waiting for the
// last ranges, poll for 100 microseconds before they sleep (a model's operations follow each
// other closely). While the body runs, OpenBLAS is limited to one thread, so kernels that call
// Sgemm on their own range do not oversubscribe the cores (OpenBLAS splits work statically and
// waits for every thread it started).
void ParallelFor(size_t count, size_t cost_per_item,
                 const std::function<void(size_t begin, size_t end)>& body);

// fp16 <-> fp32 (vector_convert's conversions, large arrays shared out over the pool), and
// data[i] rounded to fp16 precision (the relaxed-fp32 emulation).
std::vector<float> HalfToFloat(const Half* data, size_t count);
void FloatToHalf(const float* data, size_t count, Half* out);
void RoundToHalf(float* data, size_t count);

// Quantised elements minus their zero point, as floats (exact).
template <typename Q>
std::vector<float> OffsetToFloat(const Q* data, size_t count, int32_t zero_point) {
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    out[i] = static_cast<float>(static_cast<int32_t>(data[i]) - zero_point);
  }
  return out;
}

// The largest |x - zero_point| a quantised type can hold (a bound for IntegerGemm).
template <typename Q>
float MaxAbsOffset(int32_t zero_point) {
  const int32_t low = std::numeric_limits<Q>::min() - zero_point;
  const int32_t high = std::numeric_limits<Q>::max() - zero_point;
  return static_cast<float>(std::max(std::abs(low), std::abs(high)));
}

// round(accumulator * multiplier) + zero_point, clamped to [low, high].
template <typename Q>
inline Q Requantize(int64_t accumulator, double multiplier, int32_t zero_point, int32_t low,
                    int32_t high) {
  const double scaled = std::round(static_cast<double>(accumulator) * multiplier) + zero_point;
  const double clamped = std::min(std::max(scaled, static_cast<double>(low)), double(high));
  return static_cast<Q>(clamped);
}

}  // namespace gemm
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_GEMM_H_
