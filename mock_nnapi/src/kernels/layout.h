// SPDX-License-Identifier: Apache-2.0
// NHWC sizes of an activation tensor and the transposes between the [N, C, H, W] and
// [N, H, W, C] layouts: exact copies in cache-sized tiles, shared out over the gemm::ParallelFor
// pool (the result does not depend on the split).
#ifndef MOCK_NNAPI_SRC_KERNELS_LAYOUT_H_
#define MOCK_NNAPI_SRC_KERNELS_LAYOUT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../ops/gemm.h"

namespace mock_nnapi {
namespace conv {

// Sizes of a 4-D activation tensor in NHWC order, whatever its layout.
struct Shape4 {
  uint32_t batches = 0, height = 0, width = 0, channels = 0;
  size_t Elements() const { return size_t{batches} * height * width * channels; }
};

// out[j * rows + i] = in[i * cols + j]: a transpose in square tiles, so that both sides move
// whole cache lines (a plain loop strides through one of them an element at a time). Bands of
// tile rows are shared out over the gemm::ParallelFor pool (an exact copy: the result does not
// depend on the split).
template <typename T>
void Transpose2D(const T* __restrict__ in, size_t rows, size_t cols, T* __restrict__ out) {
  constexpr size_t kTile = 16;
  const size_t bands = (rows + kTile - 1) / kTile;
  gemm::ParallelFor(bands, kTile * cols, [&](size_t band_begin, size_t band_end) {
    for (size_t i0 = band_begin * kTile; i0 < std::min(rows, band_end * kTile); i0 += kTile) {
      const size_t i1 = std::min(rows, i0 + kTile);
      for (size_t j0 = 0; j0 < cols; j0 += kTile) {
        const size_t j1 = std::min(cols, j0 + kTile);
        for (size_t j = j0; j < j1; ++j) {
          for (size_t i = i0; i < i1; ++i) out[j * rows + i] = in[i * cols + j];
        }
      }
    }
  });
}

// Layout transforms between [N, C, H, W] and [N, H, W, C].
template <typename T>
void NchwToNhwc(const T* in, const Shape4& shape, T* out) {
  const size_t plane = size_t{shape.height} * shape.width;
  const size_t batch = plane * shape.channels;
  for (uint32_t n = 0; n < shape.batches; ++n) {
    Transpose2D(in + n * batch, shape.channels, plane, out + n * batch);
  }
}

template <typename T>
void NhwcToNchw(const T* in, const Shape4& shape, T* out) {
  const size_t plane = size_t{shape.height} * shape.width;
  const size_t batch = plane * shape.channels;
  for (uint32_t n = 0; n < shape.batches; ++n) {
    Transpose2D(in + n * batch, plane, shape.channels, out + n * batch);
  }
}

}  // namespace conv
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_LAYOUT_H_
