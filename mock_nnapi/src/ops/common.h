// SPDX-License-Identifier: Apache-2.0
// Helpers shared by operation kernels: fused activations, quantisation, broadcasting.
#ifndef MOCK_NNAPI_SRC_OPS_COMMON_H_
#define MOCK_NNAPI_SRC_OPS_COMMON_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "../operation.h"
#include "half.h"

namespace mock_nnapi {

using nnapi_common::Half;

// ---- Fused activations (FuseCode) ------------------------------------------------------------
//
// One rule, in the two forms the kernels need; they differ on purpose:
//   * real values (float and half results, and the real value of a quantised result that a kernel
//     computes before quantising it): clamp to the FuseCode's interval;
//   * quantised results of accumulating kernels (convolutions, fully connected, pooling): clamp
//     the quantised value to the interval's bounds quantised with the output's scale and zero
//     point in float arithmetic, rounding half away from zero, within Q's range (Android's
//     CalculateActivationRangeUint8/Int8).

// The interval a FuseCode keeps: [0, inf) RELU, [-1, 1] RELU1, [0, 6] RELU6, everything NONE.
inline void FloatActivationRange(int32_t activation, float* low, float* high) {
  *low = -std::numeric_limits<float>::infinity();
  *high = std::numeric_limits<float>::infinity();
  switch (activation) {
    case ANEURALNETWORKS_FUSED_RELU:
      *low = 0.f;
      break;
    case ANEURALNETWORKS_FUSED_RELU1:
      *low = -1.f;
      *high = 1.f;
      break;
    case ANEURALNETWORKS_FUSED_RELU6:
      *low = 0.f;
      *high = 6.f;
      break;
    default:
      break;
  }
}

// Applies a FuseCode to a real value.
inline float ApplyActivation(float value, int32_t activation) {
  float low, high;
  FloatActivationRange(activation, &low, &high);
  return std::min(std::max(value, low), high);
}

// The range [*low, *high] of quantised values of Q with (scale, zero_point) that a FuseCode
// leaves unchanged.
template <typename Q>
inline void QuantizedActivationRange(int32_t activation, float scale, int32_t zero_point,
                                     int32_t* low, int32_t* high) {
  float real_low, real_high;
  FloatActivationRange(activation, &real_low, &real_high);
  auto quantize = [&](float real) {
    return zero_point + static_cast<int32_t>(std::round(real / scale));
  };
  *low = std::numeric_limits<Q>::min();
  *high = std::numeric_limits<Q>::max();
  if (std::isfinite(real_low)) *low = std::max(*low, quantize(real_low));
  if (std::isfinite(real_high)) *high = std::min(*high, quantize(real_high));
}

// Real value of a quantised element.
template <typename Q>
inline float Dequantize(Q value, float scale, int32_t zero_point) {
  return scale * (static_cast<int32_t>(value) - zero_point);
}

// Nearest quantised element (ties away from zero, like std::round), saturated to Q's range.
template <typename Q>
inline Q Quantize(float value, float scale, int32_t zero_point) {
  const float scaled = std::round(value / scale) + static_cast<float>(zero_point);
  const float low = static_cast<float>(std::numeric_limits<Q>::min());
  const float high = static_cast<float>(std::numeric_limits<Q>::max());
  return static_cast<Q>(std::min(std::max(scaled, low), high));
}

// Element i of a TENSOR_FLOAT32, TENSOR_FLOAT16, asymmetric quantised (8-bit unsigned or
// signed, 16-bit) or TENSOR_QUANT16_SYMM tensor as a real number; 0 for other types (operations
// validate first). The detection and region operations compute in real numbers on every type
// they accept.
inline float RealElement(const OperandInfo& operand, size_t i) {
  switch (operand.type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      return operand.Data<float>()[i];
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      return static_cast<float>(operand.Data<Half>()[i]);
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      return Dequantize(operand.Data<uint8_t>()[i], operand.scale, operand.zero_point);
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      return Dequantize(operand.Data<int8_t>()[i], operand.scale, operand.zero_point);
    case ANEURALNETWORKS_TENSOR_QUANT16_ASYMM:
      return Dequantize(operand.Data<uint16_t>()[i], operand.scale, operand.zero_point);
    case ANEURALNETWORKS_TENSOR_QUANT16_SYMM:
      return Dequantize(operand.Data<int16_t>()[i], operand.scale, 0);
    default:
      return 0.f;
  }
}

// Stores the real `value` as element i of a tensor of one of RealElement's types (quantised
// types round and saturate as Quantize does); other types are left untouched.
inline void StoreRealElement(const OperandInfo& operand, size_t i, float value) {
  switch (operand.type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      operand.MutableData<float>()[i] = value;
      break;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      operand.MutableData<Half>()[i] = Half(value);
      break;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      operand.MutableData<uint8_t>()[i] =
          Quantize<uint8_t>(value, operand.scale, operand.zero_point);
      break;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      operand.MutableData<int8_t>()[i] = Quantize<int8_t>(value, operand.scale, operand.zero_point);
      break;
    case ANEURALNETWORKS_TENSOR_QUANT16_ASYMM:
      operand.MutableData<uint16_t>()[i] =
          Quantize<uint16_t>(value, operand.scale, operand.zero_point);
      break;
    default:
      break;
  }
}

// Numpy-style broadcast of two shapes (trailing dimensions aligned; equal, or one of them 1).
// Returns false when the shapes are incompatible.
bool BroadcastShapes(const Dimensions& a, const Dimensions& b, Dimensions* out);

// Calls run(out_index, a_index, b_index, count, step_a, step_b) for every run of `count`
// consecutive elements of `out` (the broadcast of a and b), in row-major order of `out`: element
// k of the run is out[out_index + k] = f(a[a_index + k * step_a], b[b_index + k * step_b]), each
// step 0 (broadcast) or 1. Dimensions that are contiguous in all three shapes are merged, so
// inputs of the same shape give one run of every element.
template <typename Run>
void ForEachBroadcastRun(const Dimensions& out, const Dimensions& a, const Dimensions& b,
                         Run&& run) {
  const size_t rank = out.size();
  // Extents and strides of a and b in out's index space (0 where broadcast), merged where
  // contiguous.
  std::vector<size_t> extent, stride_a, stride_b;
  extent.reserve(rank);
  stride_a.reserve(rank);
  stride_b.reserve(rank);
  size_t running_a = 1;
  size_t running_b = 1;
  size_t total = 1;
  for (size_t i = rank; i-- > 0;) {  // innermost first; reversed below
    const size_t offset_a = rank - a.size();
    const size_t offset_b = rank - b.size();
    const size_t da = i >= offset_a ? a[i - offset_a] : 1;
    const size_t db = i >= offset_b ? b[i - offset_b] : 1;
    const size_t sa = da == 1 ? 0 : running_a;
    const size_t sb = db == 1 ? 0 : running_b;
    total *= out[i];
    if (out[i] == 1) {  // nothing to iterate
      running_a *= da;
      running_b *= db;
      continue;
    }
    if (!extent.empty()) {
      // Merge with the inner dimension when both inputs continue it (or both broadcast).
      const size_t inner = extent.back();
      const bool a_merges = sa == 0 ? stride_a.back() == 0 : sa == stride_a.back() * inner;
      const bool b_merges = sb == 0 ? stride_b.back() == 0 : sb == stride_b.back() * inner;
      if (a_merges && b_merges) {
        extent.back() *= out[i];
        running_a *= da;
        running_b *= db;
        continue;
      }
    }
    extent.push_back(out[i]);
    stride_a.push_back(sa);
    stride_b.push_back(sb);
    running_a *= da;
    running_b *= db;
  }
  if (total == 0) return;
  if (extent.empty()) {  // a single element
    run(size_t{0}, size_t{0}, size_t{0}, size_t{1}, size_t{0}, size_t{0});
    return;
  }
  std::reverse(extent.begin(), extent.end());
  std::reverse(stride_a.begin(), stride_a.end());
  std::reverse(stride_b.begin(), stride_b.end());
  const size_t dims = extent.size();
  const size_t inner = extent[dims - 1];
  // Innermost strides are 0 or the element stride 1.
  const size_t inner_a = stride_a[dims - 1];
  const size_t inner_b = stride_b[dims - 1];
  std::vector<size_t> counter(dims, 0);
  size_t base_a = 0;
  size_t base_b = 0;
  for (size_t out_index = 0; out_index < total; out_index += inner) {
    run(out_index, base_a, base_b, inner, inner_a, inner_b);
    // Advance the odometer over all but the innermost dimension.
    for (size_t d = dims - 1; d-- > 0;) {
      ++counter[d];
      base_a += stride_a[d];
      base_b += stride_b[d];
      if (counter[d] < extent[d]) break;
      base_a -= stride_a[d] * counter[d];
      base_b -= stride_b[d] * counter[d];
      counter[d] = 0;
    }
  }
}

// Calls body(out_index, a_index, b_index) for every element of `out` (the broadcast of a and b),
// in row-major order of `out`.
template <typename Body>
void ForEachBroadcast(const Dimensions& out, const Dimensions& a, const Dimensions& b,
                      Body&& body) {
  ForEachBroadcastRun(
      out, a, b, [&](size_t o, size_t i, size_t j, size_t count, size_t step_a, size_t step_b) {
        for (size_t k = 0; k < count; ++k) body(o + k, i + k * step_a, j + k * step_b);
      });
}

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_COMMON_H_
