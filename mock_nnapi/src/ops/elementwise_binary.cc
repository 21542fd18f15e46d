// SPDX-License-Identifier: Apache-2.0
// POW, MAXIMUM, MINIMUM, LOGICAL_AND, LOGICAL_OR: elementwise functions of two tensors with
// numpy-style broadcasting (trailing dimensions aligned; equal, or one of them 1).
//
// Inputs: 0 tensor A, 1 tensor B of the same type. Output: same type, broadcast shape. No rank
// limit.
// Types by feature level (NDK reference and Android's operation validators):
//   POW:                    TENSOR_FLOAT16, TENSOR_FLOAT32 (FL3); out = A ^ B (std::pow in
//                           float: a negative base with a non-integer exponent gives NaN).
//   MAXIMUM, MINIMUM:       TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM
//                           (FL3), TENSOR_QUANT8_ASYMM_SIGNED (FL4). Quantised inputs may have
//                           their own scales and zero points: both are requantised to the
//                           output's parameters, then compared.
//   LOGICAL_AND, LOGICAL_OR: TENSOR_BOOL8 (FL3); any non-zero byte is true, results are 0 or 1.
// Shapes that cannot broadcast are rejected when the operation is added if both are known, and
// fail the execution otherwise. Zero-sized inputs: POW, MAXIMUM and MINIMUM (run by Android's
// CPU executor outside the operation resolver) accept them; LOGICAL_AND and LOGICAL_OR fail.
#include <algorithm>
#include <cmath>

#include "elementwise_helpers.h"

namespace mock_nnapi {
namespace {

constexpr int32_t kFloat32 = ANEURALNETWORKS_TENSOR_FLOAT32;
constexpr int32_t kFloat16 = ANEURALNETWORKS_TENSOR_FLOAT16;
constexpr int32_t kInt32 = ANEURALNETWORKS_TENSOR_INT32;
constexpr int32_t kQuant8 = ANEURALNETWORKS_TENSOR_QUANT8_ASYMM;
constexpr int32_t kQuant8Signed = ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED;
constexpr int32_t kBool8 = ANEURALNETWORKS_TENSOR_BOOL8;

bool IsLogical(int32_t operation) {
  return operation == ANEURALNETWORKS_LOGICAL_AND || operation == ANEURALNETWORKS_LOGICAL_OR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  switch (context.type()) {
    case ANEURALNETWORKS_POW:
      NN_RETURN_IF_ERROR(elementwise::CheckInputTypeLevel(
          context, 0, {{kFloat16, kFeatureLevel3}, {kFloat32, kFeatureLevel3}}));
      break;
    case ANEURALNETWORKS_LOGICAL_AND:
    case ANEURALNETWORKS_LOGICAL_OR:
      NN_RETURN_IF_ERROR(elementwise::CheckInputTypeLevel(context, 0, {{kBool8, kFeatureLevel3}}));
      break;
    default:  // MAXIMUM, MINIMUM
      NN_RETURN_IF_ERROR(elementwise::CheckInputTypeLevel(context, 0,
                                                          {{kFloat16, kFeatureLevel3},
                                                           {kFloat32, kFeatureLevel3},
                                                           {kInt32, kFeatureLevel3},
                                                           {kQuant8, kFeatureLevel3},
                                                           {kQuant8Signed, kFeatureLevel4}}));
  }
  NN_RETURN_IF_ERROR(elementwise::CheckInputTypeMatches(context, 1, 0));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  return elementwise::CheckBroadcastableIfKnown(context, 0, 1);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(
      elementwise::CheckRunnableInputs(context, /*allow_zero_sized=*/!IsLogical(context.type())));
  return elementwise::PrepareBroadcast(context, 0, 1);
}

// Runs body(output_index, a_index, b_index) over the broadcast of inputs 0 and 1.
template <typename Body>
void ForEachOutput(OperationContext& context, Body&& body) {
  ForEachBroadcast(context.Output(0).dimensions, context.Input(0).dimensions,
                   context.Input(1).dimensions, body);
}

template <typename T>
void RunFloat(OperationContext& context) {
  const T* a = context.Input(0).Data<T>();
  const T* b = context.Input(1).Data<T>();
  T* out = context.Output(0).MutableData<T>();
  switch (context.type()) {
    case ANEURALNETWORKS_POW:
      ForEachOutput(context, [&](size_t o, size_t i, size_t j) {
        out[o] = T(std::pow(float(a[i]), float(b[j])));
      });
      break;
    case ANEURALNETWORKS_MAXIMUM:
      ForEachOutput(context, [&](size_t o, size_t i, size_t j) {
        out[o] = T(std::max(float(a[i]), float(b[j])));
      });
      break;
    default:  // MINIMUM
      ForEachOutput(context, [&](size_t o, size_t i, size_t j) {
        out[o] = T(std::min(float(a[i]), float(b[j])));
      });
  }
}

void RunInt32(OperationContext& context) {
  const int32_t* a = context.Input(0).Data<int32_t>();
  const int32_t* b = context.Input(1).Data<int32_t>();
  int32_t* out = context.Output(0).MutableData<int32_t>();
  const bool minimum = context.type() == ANEURALNETWORKS_MINIMUM;
  ForEachOutput(context, [&](size_t o, size_t i, size_t j) {
    out[o] = minimum ? std::min(a[i], b[j]) : std::max(a[i], b[j]);
  });
}

template <typename Q>
void RunQuantized(OperationContext& context) {
  const OperandInfo& a_info = context.Input(0);
  const OperandInfo& b_info = context.Input(1);
  const OperandInfo& out_info = context.Output(0);
  const Q* a = a_info.Data<Q>();
  const Q* b = b_info.Data<Q>();
  Q* out = out_info.MutableData<Q>();
  const bool minimum = context.type() == ANEURALNETWORKS_MINIMUM;
  ForEachOutput(context, [&](size_t o, size_t i, size_t j) {
    const Q x = elementwise::Requantize(a[i], a_info, out_info);
    const Q y = elementwise::Requantize(b[j], b_info, out_info);
    out[o] = minimum ? std::min(x, y) : std::max(x, y);
  });
}

void RunLogical(OperationContext& context) {
  const uint8_t* a = context.Input(0).Data<uint8_t>();
  const uint8_t* b = context.Input(1).Data<uint8_t>();
  uint8_t* out = context.Output(0).MutableData<uint8_t>();
  const bool is_and = context.type() == ANEURALNETWORKS_LOGICAL_AND;
  ForEachOutput(context, [&](size_t o, size_t i, size_t j) {
    const bool x = a[i] != 0;
    const bool y = b[j] != 0;
    out[o] = (is_and ? (x && y) : (x || y)) ? 1 : 0;
  });
}

int Execute(OperationContext& context) {
  return elementwise::Dispatch(
      context, context.InputType(0), [&](auto tag) { RunFloat<decltype(tag)>(context); },
      [&](auto tag) { RunQuantized<decltype(tag)>(context); }, [&] { RunInt32(context); },
      [&] { RunLogical(context); });
}

}  // namespace

NN_REGISTER_OPERATION(POW, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(MAXIMUM, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(MINIMUM, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(LOGICAL_AND, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(LOGICAL_OR, Validate, Prepare, Execute);

}  // namespace mock_nnapi
