// SPDX-License-Identifier: Apache-2.0
// The exact integer kernel of the quantised DEPTHWISE_CONV_2D (TENSOR_QUANT8_ASYMM and
// TENSOR_QUANT8_ASYMM_SIGNED activations, filters of the input's type or
// TENSOR_QUANT8_SYMM_PER_CHANNEL): offset-subtracted int16 operands, exact int32 sums, vectorised
// over the NHWC channels (AVX-512BW and AVX2 clones on x86-64 and portable vector code elsewhere,
// the same integers everywhere): two int16 channels per int32 lane, multiplied in place.
//
// The output is computed in tiles (a few output rows of one image by a group of at most
// kChannelGroup output channels), shared out over gemm::ParallelFor. Each tile converts the input
// rows its windows read (its receptive rows) into int16 offsets once, padded with zeros (the zero
// point) on every side and with each input channel repeated depth-multiplier times, so the
// multiply-add loop has no edge cases; every output row is then requantised from a row of int32
// sums straight into the output (vector_convert::RequantizeRows, the requantisation of
// conv::Requantization): no whole-tensor conversion or int32 buffer.
#ifndef MOCK_NNAPI_SRC_KERNELS_DEPTHWISE_QUANTIZED_H_
#define MOCK_NNAPI_SRC_KERNELS_DEPTHWISE_QUANTIZED_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../ops/common.h"
#include "requantize.h"

namespace mock_nnapi {
namespace depthwise_quantized {

// Output channels are computed in groups of this many (the last may be smaller).
constexpr size_t kChannelGroup = 256;
// Channels of one vector of int32 sums; filters and tile buffers pad the channels to a multiple.
constexpr size_t kLanes = 16;

// The NHWC geometry of one run (explicit padding resolved).
struct Geometry {
  uint32_t batches = 0;
  uint32_t in_height = 0, in_width = 0, in_channels = 0;
  uint32_t multiplier = 1;  // output channel c reads input channel c / multiplier
  uint32_t out_height = 0, out_width = 0;
  uint32_t filter_height = 0, filter_width = 0;
  int32_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int32_t pad_top = 0, pad_left = 0;
  size_t out_channels() const { return size_t{in_channels} * multiplier; }
};

// The filter as the kernel reads it: the filter's values minus its zero point (int16 range, held
// in int32 lanes), tap t's row at values[t * padded_channels]; within a row, blocks of 32 channels
// (then one of 16 if the padded count asks), each laid out as its even channels, then its odd
// ones (the kernel's lane order); padding channels are 0. With each output channel's real
// multiplier (conv::OutputMultipliers). Built once per model for a constant filter.
struct PreparedFilter {
  std::vector<int32_t> values;
  size_t padded_channels = 0;
  std::vector<double> multipliers;
};
PreparedFilter PrepareFilter(const OperandInfo& input, const OperandInfo& filter,
                             const OperandInfo& output);

// Whether every sum of the run is exact in int32: taps * max|input offset| * max|filter offset|
// below 2^31 (true for any filter of up to 33025 taps).
bool SumsFitInt32(const Geometry& g, const OperandInfo& input, const OperandInfo& filter);

// output (NHWC, out_channels() channels) = the requantised sums of input (NHWC) with the
// prepared filter, plus requantization's bias, zero point and clamp.
void Run(const Geometry& g, const uint8_t* input, int32_t input_zero_point,
         const PreparedFilter& filter, const conv::Requantization<uint8_t>& requantization,
         uint8_t* output);
void Run(const Geometry& g, const int8_t* input, int32_t input_zero_point,
         const PreparedFilter& filter, const conv::Requantization<int8_t>& requantization,
         int8_t* output);

}  // namespace depthwise_quantized
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_DEPTHWISE_QUANTIZED_H_
