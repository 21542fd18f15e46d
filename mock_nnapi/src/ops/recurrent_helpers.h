// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the recurrent operations (rnn.cc, lstm.cc, svdf.cc): operand type lists,
// the shape checks of their prepare step, float views of TENSOR_FLOAT32/TENSOR_FLOAT16 operands,
// the activations they take and a row-major "x times W transposed" product.
//
// Conventions of these operations (Android's): addOperation checks operand counts and types
// only (BAD_DATA) and raises the feature level; the shapes, the omitted optional inputs and the
// scalar arguments' values are checked when the operation is prepared for execution
// (OP_FAILED), as Android's CPU executor does. The kernels compute in float32 for both
// TENSOR_FLOAT32 and TENSOR_FLOAT16 and round the results to the output type.
#ifndef MOCK_NNAPI_SRC_OPS_RECURRENT_HELPERS_H_
#define MOCK_NNAPI_SRC_OPS_RECURRENT_HELPERS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "gemm.h"
#include "index_helpers.h"
#include "shape_helpers.h"

namespace mock_nnapi {
namespace recurrent {

// Validate: inputs `first`..`last` (inclusive) must have `type`.
inline int CheckInputTypes(const OperationContext& context, uint32_t first, uint32_t last,
                           int32_t type) {
  for (uint32_t i = first; i <= last; ++i) {
    NN_CHECK_EQ(context.InputType(i), type, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input " << i << " must be " << OperandTypeName(type) << ", not "
        << OperandTypeName(context.InputType(i));
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Validate: every output must have `type`.
inline int CheckOutputTypes(const OperationContext& context, int32_t type) {
  for (uint32_t i = 0; i < context.OutputCount(); ++i) {
    NN_CHECK_EQ(context.Output(i).type, type, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " output " << i << " must be " << OperandTypeName(type) << ", not "
        << OperandTypeName(context.Output(i).type);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Validate: input 0 is TENSOR_FLOAT32 (FL `float32_level`) or TENSOR_FLOAT16 (FL3); returns
// its type in *type.
inline int CheckFloatInput(OperationContext& context, int64_t float32_level, int32_t* type) {
  NN_RETURN_IF_ERROR(CheckInputTypeLevel(context, 0,
                                         {{ANEURALNETWORKS_TENSOR_FLOAT32, float32_level},
                                          {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3}}));
  *type = context.InputType(0);
  return ANEURALNETWORKS_NO_ERROR;
}

// The scalar type of a float tensor type's scalar arguments (clipping thresholds).
inline int32_t ScalarTypeOf(int32_t tensor_type) {
  return tensor_type == ANEURALNETWORKS_TENSOR_FLOAT16 ? ANEURALNETWORKS_FLOAT16
                                                       : ANEURALNETWORKS_FLOAT32;
}

// Prepare: input i must not be omitted.
inline int CheckPresent(const OperationContext& context, uint32_t i, const char* what) {
  NN_CHECK(!context.IsOmitted(i), ANEURALNETWORKS_OP_FAILED)
      << context.name() << " input " << i << " (" << what << ") is required but omitted";
  return ANEURALNETWORKS_NO_ERROR;
}

// Prepare: input i has exactly the dimensions `expected`.
inline int CheckShape(const OperationContext& context, uint32_t i, const Dimensions& expected,
                      const char* what) {
  const OperandInfo& operand = context.Input(i);
  NN_CHECK(operand.dimensions == expected, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " input " << i << " (" << what << ") has shape "
      << DimensionsToString(operand.dimensions) << ", expected " << DimensionsToString(expected);
  return ANEURALNETWORKS_NO_ERROR;
}

// Prepare: input i has rank `rank`.
inline int CheckRank(const OperationContext& context, uint32_t i, uint32_t rank, const char* what) {
  NN_CHECK_EQ(context.Input(i).rank(), rank, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " input " << i << " (" << what << ") must have rank " << rank
      << ", not shape " << DimensionsToString(context.Input(i).dimensions);
  return ANEURALNETWORKS_NO_ERROR;
}

// The activations of the recurrent operations' `fused_activation_function` and LSTM's g: the
// FuseCode values NONE (0), RELU (1), RELU1 (2), RELU6 (3), and tanh (4) and the logistic
// sigmoid (6), the values of TensorFlow Lite's activation enumeration that LSTM's documentation
// lists (TFLite models delegate RNN and LSTM with tanh). Any other value fails at prepare.
inline bool IsRecurrentActivation(int32_t activation) {
  return (activation >= 0 && activation <= 4) || activation == 6;
}

inline int CheckActivation(const OperationContext& context, uint32_t i) {
  const int32_t activation = context.InputScalar<int32_t>(i);
  NN_CHECK(IsRecurrentActivation(activation), ANEURALNETWORKS_OP_FAILED)
      << context.name() << " activation " << activation
      << " is not one of 0 (none), 1 (relu), 2 (relu1), 3 (relu6), 4 (tanh), 6 (sigmoid)";
  return ANEURALNETWORKS_NO_ERROR;
}

inline float Sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

inline float Activate(int32_t activation, float x) {
  switch (activation) {
    case 4:
      return std::tanh(x);
    case 6:
      return Sigmoid(x);
    default:
      return ApplyActivation(x, activation);
  }
}

inline void ActivateAll(int32_t activation, float* values, size_t count) {
  for (size_t i = 0; i < count; ++i) values[i] = Activate(activation, values[i]);
}

// The elements of a TENSOR_FLOAT32 or TENSOR_FLOAT16 operand as float32; empty when omitted.
inline std::vector<float> FloatValues(const OperandInfo& operand) {
  if (operand.omitted || operand.data == nullptr) return {};
  const size_t count = indexing::Product(operand.dimensions);
  if (operand.type == ANEURALNETWORKS_TENSOR_FLOAT16) {
    return gemm::HalfToFloat(operand.Data<Half>(), count);
  }
  const float* data = operand.Data<float>();
  return std::vector<float>(data, data + count);
}

// Stores float32 values into a TENSOR_FLOAT32 or TENSOR_FLOAT16 output.
inline void StoreFloats(const OperandInfo& output, const float* values, size_t count) {
  if (output.type == ANEURALNETWORKS_TENSOR_FLOAT16) {
    gemm::FloatToHalf(values, count, output.MutableData<Half>());
  } else if (count != 0) {
    std::memcpy(output.MutableData<float>(), values, count * sizeof(float));
  }
}

// The value of a FLOAT32 or FLOAT16 scalar input.
inline float FloatScalar(const OperationContext& context, uint32_t i) {
  if (context.InputType(i) == ANEURALNETWORKS_FLOAT16) {
    return static_cast<float>(context.InputScalar<Half>(i));
  }
  return context.InputScalar<float>(i);
}

// `value` rounded to the nearest integer (half away from zero) and saturated to [low, high]
// (clamped before rounding, so that no out-of-range conversion happens; NaN gives 0).
inline int32_t RoundSaturated(double value, int32_t low, int32_t high) {
  if (std::isnan(value)) return 0;
  const double clamped = std::min(std::max(value, static_cast<double>(low)), double(high));
  return static_cast<int32_t>(std::lround(clamped));
}

// out[rows, units] += x[rows, inner] * W[units, inner]^T (row-major, dense).
inline void AccumulateProduct(const float* x, size_t rows, size_t inner, const float* weights,
                              size_t units, float* out) {
  if (rows == 0 || units == 0 || inner == 0) return;
  gemm::Sgemm(gemm::Transpose::kNo, gemm::Transpose::kYes, rows, units, inner, 1.f, x, inner,
              weights, inner, 1.f, out, units);
}

}  // namespace recurrent
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_RECURRENT_HELPERS_H_
