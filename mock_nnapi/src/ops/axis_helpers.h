// SPDX-License-Identifier: Apache-2.0
// Helpers for the pooling, softmax, reduction, arg-min/max and normalisation operations, on top
// of index_helpers.h: reading FLOAT32/FLOAT16/BOOL scalars, checks of
// required and quantised operands, conversion of elements to and from real values.
//
// Everything lives in namespace axis_helpers so that helpers of other operation files cannot
// collide with these inline definitions.
#ifndef MOCK_NNAPI_SRC_OPS_AXIS_HELPERS_H_
#define MOCK_NNAPI_SRC_OPS_AXIS_HELPERS_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "common.h"
#include "index_helpers.h"

namespace mock_nnapi {
namespace axis_helpers {

// The scalar type that accompanies a floating-point tensor type (FLOAT16 for TENSOR_FLOAT16,
// FLOAT32 otherwise, quantised tensors included).
inline int32_t FloatScalarTypeFor(int32_t tensor_type) {
  return tensor_type == ANEURALNETWORKS_TENSOR_FLOAT16 ? ANEURALNETWORKS_FLOAT16
                                                       : ANEURALNETWORKS_FLOAT32;
}

// Value of a FLOAT32 or FLOAT16 scalar input; only call when context.HasInputValue(i).
inline float FloatScalar(const OperationContext& context, uint32_t i) {
  if (context.InputType(i) == ANEURALNETWORKS_FLOAT16) {
    return nnapi_common::HalfBitsToFloat(context.InputScalar<uint16_t>(i));
  }
  return context.InputScalar<float>(i);
}

// Value of a BOOL scalar input (any non-zero byte is true).
inline bool BoolScalar(const OperationContext& context, uint32_t i) {
  return context.InputScalar<uint8_t>(i) != 0;
}

// Value of an optional scalar input, or `fallback` when it is absent or omitted.
inline int32_t OptionalInt32(const OperationContext& context, uint32_t i, int32_t fallback) {
  return i < context.InputCount() && !context.IsOmitted(i) ? context.InputScalar<int32_t>(i)
                                                           : fallback;
}
inline bool OptionalBool(const OperationContext& context, uint32_t i, bool fallback) {
  return i < context.InputCount() && !context.IsOmitted(i) ? BoolScalar(context, i) : fallback;
}

// Inputs [first, last] must have a value (not omitted with setOperandValue(NULL, 0)).
inline int CheckNotOmitted(const OperationContext& context, uint32_t first, uint32_t last) {
  for (uint32_t i = first; i <= last && i < context.InputCount(); ++i) {
    NN_CHECK(!context.IsOmitted(i), ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input " << i << " is required but omitted";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// The axis scalar input i, when its value is known, lies in [-rank, rank) of `operand`
// (skipped while the rank is unknown). `code` is BAD_DATA at validation, OP_FAILED later.
inline int CheckAxisInput(const OperationContext& context, uint32_t i, const OperandInfo& operand,
                          int code) {
  if (!context.HasInputValue(i) || !operand.rank_known) return ANEURALNETWORKS_NO_ERROR;
  const int32_t axis = context.InputScalar<int32_t>(i);
  uint32_t resolved = 0;
  NN_CHECK(indexing::ResolveAxis(axis, operand.rank(), &resolved), code)
      << context.name() << " axis " << axis << " is outside [-" << operand.rank() << ", "
      << operand.rank() << ")";
  return ANEURALNETWORKS_NO_ERROR;
}

// Output 0 of a quantised operation must carry exactly this scale and zero point.
inline int CheckOutputQuantization(const OperationContext& context, float scale,
                                   int32_t zero_point) {
  const OperandInfo& output = context.Output(0);
  NN_CHECK(output.scale == scale && output.zero_point == zero_point, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output 0 must have scale " << scale << " and zeroPoint " << zero_point
      << ", got scale " << output.scale << " and zeroPoint " << output.zero_point;
  return ANEURALNETWORKS_NO_ERROR;
}

// For quantised input 0, output 0 must have the same scale and zero point.
inline int CheckOutputQuantizationMatchesInput(const OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  if (!IsQuantizedType(input.type)) return ANEURALNETWORKS_NO_ERROR;
  return CheckOutputQuantization(context, input.scale, input.zero_point);
}

// Real value of an element: identity for float types, dequantised for 8-bit quantised types.
inline double LoadReal(float value, const OperandInfo&) { return value; }
inline double LoadReal(Half value, const OperandInfo&) { return static_cast<float>(value); }
inline double LoadReal(uint8_t value, const OperandInfo& info) {
  return static_cast<double>(info.scale) * (static_cast<int32_t>(value) - info.zero_point);
}
inline double LoadReal(int8_t value, const OperandInfo& info) {
  return static_cast<double>(info.scale) * (static_cast<int32_t>(value) - info.zero_point);
}

// Nearest quantised value of `real` (ties away from zero), saturated to Q's range.
template <typename Q>
inline Q QuantizeReal(double real, const OperandInfo& info) {
  const double scaled = std::round(real / info.scale) + info.zero_point;
  const double low = std::numeric_limits<Q>::min();
  const double high = std::numeric_limits<Q>::max();
  if (!(scaled >= low)) return std::numeric_limits<Q>::min();  // also NaN
  if (scaled > high) return std::numeric_limits<Q>::max();
  return static_cast<Q>(scaled);
}

// Element of type T for the real value `real` in the operand described by `info`.
template <typename T>
inline T StoreReal(double real, const OperandInfo& info);
template <>
inline float StoreReal<float>(double real, const OperandInfo&) {
  return static_cast<float>(real);
}
template <>
inline Half StoreReal<Half>(double real, const OperandInfo&) {
  return Half(static_cast<float>(real));
}
template <>
inline uint8_t StoreReal<uint8_t>(double real, const OperandInfo& info) {
  return QuantizeReal<uint8_t>(real, info);
}
template <>
inline int8_t StoreReal<int8_t>(double real, const OperandInfo& info) {
  return QuantizeReal<int8_t>(real, info);
}

}  // namespace axis_helpers
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_AXIS_HELPERS_H_
