// SPDX-License-Identifier: Apache-2.0
// Requantisation of exact int32 accumulators into a quantised output (CONV_2D, GROUPED_CONV_2D,
// DEPTHWISE_CONV_2D, TRANSPOSE_CONV_2D, FULLY_CONNECTED): per output channel, round(sum *
// multiplier) + zero point, clamped to the fused activation's range (gemm::Requantize, computed
// by vector_convert::RequantizeRows over rows of channels), and the bounds that decide whether a
// kernel's int32 sums are exact.
#ifndef MOCK_NNAPI_SRC_KERNELS_REQUANTIZE_H_
#define MOCK_NNAPI_SRC_KERNELS_REQUANTIZE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "../ops/common.h"
#include "../ops/gemm.h"
#include "layout.h"
#include "vector_convert.h"

namespace mock_nnapi {
namespace conv {

// The real multiplier input_scale * filter_scale[channel] / output_scale of each output channel.
inline std::vector<double> OutputMultipliers(const OperandInfo& input, const OperandInfo& filter,
                                             const OperandInfo& output, uint32_t channels) {
  std::vector<double> multipliers(channels);
  for (uint32_t c = 0; c < channels; ++c) {
    const float filter_scale =
        filter.channel_quant != nullptr ? filter.channel_quant->scales[c] : filter.scale;
    multipliers[c] = static_cast<double>(input.scale * filter_scale) / output.scale;
  }
  return multipliers;
}

// The largest |value - zero_point| of a quantised operand.
inline float MaxAbsOffset(const OperandInfo& operand) {
  return operand.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM
             ? gemm::MaxAbsOffset<uint8_t>(operand.zero_point)
             : gemm::MaxAbsOffset<int8_t>(operand.zero_point);
}

// The quantised output's activation range and the per-channel terms of its requantisation (a
// missing bias reads as zeros).
template <typename Q>
struct Requantization {
  Requantization(const int32_t* bias_data, std::vector<double> channel_multipliers,
                 int32_t activation, const OperandInfo& output)
      : multipliers(std::move(channel_multipliers)), zero_point(output.zero_point) {
    QuantizedActivationRange<Q>(activation, output.scale, output.zero_point, &low, &high);
    if (bias_data == nullptr) {
      zeros.assign(multipliers.size(), 0);
      bias_data = zeros.data();
    }
    bias = bias_data;
  }
  // out[r * channels + c] = gemm::Requantize(accumulators[r * channels + c] + bias[c],
  // multipliers[c], ...) for `rows` rows of all channels (vectorised, the same values).
  void Rows(const int32_t* accumulators, size_t rows, Q* out) const {
    vector_convert::RequantizeRows(accumulators, rows, multipliers.size(), bias, multipliers.data(),
                                   zero_point, low, high, out);
  }

  std::vector<double> multipliers;
  std::vector<int32_t> zeros;
  const int32_t* bias = nullptr;
  int32_t zero_point = 0, low = 0, high = 0;
};

// Requantises NHWC int32 accumulators (+ bias) into the quantised output, per output channel
// (pixels shared out over the pool; every element is computed the same way whatever the split).
template <typename Q>
void StoreQuantized(const int32_t* accumulators, const Shape4& shape, const int32_t* bias,
                    const std::vector<double>& multipliers, int32_t activation,
                    const OperandInfo& output, bool nchw) {
  const Requantization<Q> requantization(bias, multipliers, activation, output);
  const size_t channels = shape.channels;
  const size_t pixels = channels == 0 ? 0 : shape.Elements() / channels;
  Q* out = output.MutableData<Q>();
  std::unique_ptr<Q[]> nhwc;
  Q* target = out;
  if (nchw) {
    nhwc.reset(new Q[shape.Elements()]);  // every element is written below
    target = nhwc.get();
  }
  constexpr size_t kBlockElements = 16384;
  const size_t block = channels == 0 ? 1 : std::max<size_t>(1, kBlockElements / channels);
  gemm::ParallelFor(
      (pixels + block - 1) / block, block * channels * 4, [&](size_t begin, size_t end) {
        const size_t first = begin * block;
        const size_t count = std::min(pixels, end * block) - first;
        requantization.Rows(accumulators + first * channels, count, target + first * channels);
      });
  if (nchw) NhwcToNchw(target, shape, out);
}

inline void StoreQuantizedOutput(const int32_t* accumulators, const Shape4& shape,
                                 const int32_t* bias, const std::vector<double>& multipliers,
                                 int32_t activation, const OperandInfo& output, bool nchw) {
  if (output.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM) {
    StoreQuantized<uint8_t>(accumulators, shape, bias, multipliers, activation, output, nchw);
  } else {
    StoreQuantized<int8_t>(accumulators, shape, bias, multipliers, activation, output, nchw);
  }
}

}  // namespace conv
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_REQUANTIZE_H_
