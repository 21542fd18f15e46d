// SPDX-License-Identifier: Apache-2.0
// TENSOR_FLOAT16 convolutions on their fp32 kernels, band by band (CONV_2D, DEPTHWISE_CONV_2D).
#ifndef MOCK_NNAPI_SRC_KERNELS_HALF_BANDS_H_
#define MOCK_NNAPI_SRC_KERNELS_HALF_BANDS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../ops/common.h"
#include "../ops/gemm.h"
#include "layout.h"
#include "scratch.h"
#include "vector_convert.h"

namespace mock_nnapi {
namespace conv {

// TENSOR_FLOAT16 NHWC convolutions run their fp32 kernels band by band: one band is some output
// rows of one image; its receptive input rows are converted to fp32 and its output rows back to
// fp16 in per-thread buffers that stay in cache (no whole-tensor fp32 copies). Every output row
// is computed as on the whole map, so the results are those of the fp32 kernel rounded to fp16.
//
// Runs body(const Geometry& band, const float* input, float* output) for every band of
// `geometry` on the pool and converts the outputs: `band` is the band as a map of its own (one
// image of band.input.height converted rows, band.output.height output rows, its own top
// padding), `input` its rows in fp32, `output` room for its output rows, which `body` writes
// all of. Geometry is the operation's (CONV_2D's or DEPTHWISE_CONV_2D's): NHWC Shape4s `input`
// and `output`, `filter_height` and `params` (stride_h, dilation_h, pad_top). Bands hold their
// receptive rows and output rows in fp32 within 512 KiB (half the L2 cache of this machine's
// cores) and are at least two per thread where the map allows; `cost_per_row` is a band row's
// multiply-adds (the pool's threshold).
template <typename Geometry, typename Body>
void ForEachHalfBand(const Geometry& geometry, size_t cost_per_row, const Half* input, Half* output,
                     Body&& body) {
  const Shape4& in = geometry.input;
  const Shape4& out = geometry.output;
  const int64_t stride_h = geometry.params.stride_h;
  const int64_t pad_top = geometry.params.pad_top;
  const size_t window_rows = size_t{geometry.filter_height - 1} * geometry.params.dilation_h + 1;
  const size_t in_row = size_t{in.width} * in.channels;
  const size_t out_row = size_t{out.width} * out.channels;
  constexpr size_t kBandBytes = size_t{512} << 10;
  const size_t fitting = kBandBytes / sizeof(float);
  size_t band_rows = 1;
  while (band_rows < out.height &&
         ((band_rows * stride_h + window_rows) * in_row + (band_rows + 1) * out_row) <= fitting) {
    ++band_rows;
  }
  const size_t wanted = 2 * static_cast<size_t>(gemm::ThreadCount());
  const size_t per_image = (wanted + in.batches - 1) / std::max<size_t>(in.batches, 1);
  band_rows = std::max<size_t>(1, std::min(band_rows, (out.height + per_image - 1) / per_image));
  const size_t bands_per_image = (out.height + band_rows - 1) / band_rows;
  const uint16_t* input_bits = reinterpret_cast<const uint16_t*>(input);
  uint16_t* output_bits = reinterpret_cast<uint16_t*>(output);
  gemm::ParallelFor(
      out.batches * bands_per_image, band_rows * cost_per_row, [&](size_t begin, size_t end) {
        thread_local ScratchArray<float> input_rows, output_rows;
        for (size_t index = begin; index < end; ++index) {
          const size_t image = index / bands_per_image;
          const size_t first_row = index % bands_per_image * band_rows;
          const size_t rows = std::min<size_t>(out.height - first_row, band_rows);
          // Input rows [iy_begin, iy_end) hold every valid tap of the band's output rows.
          const int64_t first = static_cast<int64_t>(first_row) * stride_h - pad_top;
          const int64_t last = static_cast<int64_t>(first_row + rows - 1) * stride_h - pad_top +
                               static_cast<int64_t>(window_rows);
          const int64_t iy_begin = std::max<int64_t>(0, first);
          const int64_t iy_end = std::max<int64_t>(iy_begin, std::min<int64_t>(in.height, last));
          const size_t input_rows_count = static_cast<size_t>(iy_end - iy_begin);
          Geometry band = geometry;
          band.input.batches = band.output.batches = 1;
          band.input.height = static_cast<uint32_t>(input_rows_count);
          band.output.height = static_cast<uint32_t>(rows);
          band.params.pad_top = static_cast<int32_t>(iy_begin - first);
          float* input_floats = input_rows.Get(std::max<size_t>(1, input_rows_count * in_row));
          float* output_floats = output_rows.Get(rows * out_row);
          vector_convert::HalfToFloat(input_bits + (image * in.height + iy_begin) * in_row,
                                      input_rows_count * in_row, input_floats);
          body(static_cast<const Geometry&>(band), static_cast<const float*>(input_floats),
               output_floats);
          vector_convert::FloatToHalf(output_floats, rows * out_row,
                                      output_bits + (image * out.height + first_row) * out_row);
        }
      });
}

}  // namespace conv
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_HALF_BANDS_H_
