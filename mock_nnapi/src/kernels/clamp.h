// SPDX-License-Identifier: Apache-2.0
// The mock's clamp of floats to an activation range (NaN stays NaN), written so that loops over
// it vectorise, and its application to a whole array over the gemm::ParallelFor pool.
#ifndef MOCK_NNAPI_SRC_KERNELS_CLAMP_H_
#define MOCK_NNAPI_SRC_KERNELS_CLAMP_H_

#include <algorithm>
#include <cstddef>

#include "../ops/gemm.h"

namespace mock_nnapi {
namespace conv {

// x clamped to [low, high]: the expressions of std::min(std::max(x, low), high) (NaN stays NaN),
// written on values so that loops over it vectorise (std::min and std::max return references,
// which GCC turned into a scalar loop of conditional pointer moves).
inline float Clamp(float x, float low, float high) {
  const float at_least_low = x < low ? low : x;
  return high < at_least_low ? high : at_least_low;
}

// data[i] = Clamp(data[i], low, high) for i in [0, count), shared out over the pool.
inline void ClampAll(float* data, size_t count, float low, float high) {
  constexpr size_t kBlock = 4096;
  const size_t blocks = (count + kBlock - 1) / kBlock;
  gemm::ParallelFor(blocks, kBlock, [&](size_t begin, size_t end) {
    float* __restrict__ p = data;
    const size_t last = std::min(count, end * kBlock);
    for (size_t i = begin * kBlock; i < last; ++i) p[i] = Clamp(p[i], low, high);
  });
}

}  // namespace conv
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_CLAMP_H_
