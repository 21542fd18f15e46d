// SPDX-License-Identifier: Apache-2.0
// TOPK_V2: the k largest entries of each slice along the last dimension, and their
// indices.
//
// Inputs: 0 tensor of rank >= 1; 1 INT32 k, 1 <= k <= the last dimension.
// Outputs: 0 the values, the input's type, scale and zero point, shape input.shape[:-1] + [k],
//   sorted in descending order; 1 TENSOR_INT32 of the same shape, their indices within the last
//   dimension. Of two equal values the one with the larger index comes first (the NDK's rule,
//   which differs from TensorFlow's). The mock orders NaN above every number (NaNs among
//   themselves by index, larger first), so that the order is total.
// Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32, TENSOR_QUANT8_ASYMM (FL3),
// TENSOR_QUANT8_ASYMM_SIGNED (FL4). Quantised values are compared as stored (the scale is
// positive, so the order is the order of the real values). Zero-sized inputs are rejected.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "index_helpers.h"
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

int InferShape(const OperationContext& context, int error, Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  NN_CHECK_GE(input.size(), 1u, error) << context.name() << " input must have rank >= 1";
  const int32_t k = context.InputScalar<int32_t>(1);
  NN_CHECK(k >= 1 && static_cast<uint32_t>(k) <= input.back(), error)
      << context.name() << " k = " << k << " must be in [1, " << input.back()
      << "] (the last dimension of " << DimensionsToString(input) << ")";
  *output = input;
  output->back() = static_cast<uint32_t>(k);
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 2));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 1, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  NN_CHECK_EQ(context.Output(1).type, ANEURALNETWORKS_TENSOR_INT32, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output 1 (the indices) must be TENSOR_INT32, not "
      << OperandTypeName(context.Output(1).type);
  const OperandInfo& input = context.Input(0);
  if (input.rank_known) {
    NN_CHECK_GE(input.rank(), 1u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input must have rank >= 1";
  }
  if (context.HasInputValue(1)) {
    NN_CHECK_GE(context.InputScalar<int32_t>(1), 1, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " k must be >= 1";
  }
  if (!context.HasInputValue(1) || !shape::ShapeKnown(input)) return ANEURALNETWORKS_NO_ERROR;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, &output));
  NN_RETURN_IF_ERROR(shape::CheckDeclaredOutputShape(context, 0, output));
  return shape::CheckDeclaredOutputShape(context, 1, output);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &output));
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, output));
  return context.SetOutputShape(1, output);
}

// True when element a comes before element b: larger value first, NaN above every number, ties
// (and NaN with NaN) by the larger index.
template <typename T>
bool Before(T va, int32_t a, T vb, int32_t b) {
  bool nan_a = false, nan_b = false;
  if constexpr (std::is_floating_point_v<T>) {
    nan_a = std::isnan(va);
    nan_b = std::isnan(vb);
  }
  if (nan_a || nan_b) {
    if (nan_a && nan_b) return a > b;
    return nan_a;
  }
  if (va != vb) return va > vb;
  return a > b;
}

template <typename T, typename Key = T>
void TopK(const OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const size_t row = input.dimensions.back();
  const size_t rows = indexing::Product(input.dimensions) / row;
  const size_t k = static_cast<size_t>(context.InputScalar<int32_t>(1));
  const T* in = input.Data<T>();
  T* values = context.Output(0).MutableData<T>();
  int32_t* indices = context.Output(1).MutableData<int32_t>();
  std::vector<int32_t> order(row);
  for (size_t r = 0; r < rows; ++r) {
    const T* slice = in + r * row;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
      return Before<Key>(static_cast<Key>(slice[a]), a, static_cast<Key>(slice[b]), b);
    });
    for (size_t i = 0; i < k; ++i) {
      values[r * k + i] = slice[order[i]];
      indices[r * k + i] = order[i];
    }
  }
}

int Execute(OperationContext& context) {
  switch (context.InputType(0)) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      TopK<float>(context);
      break;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      TopK<Half, float>(context);
      break;
    case ANEURALNETWORKS_TENSOR_INT32:
      TopK<int32_t>(context);
      break;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      TopK<uint8_t>(context);
      break;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      TopK<int8_t>(context);
      break;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED) << context.name() << " unsupported type";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(TOPK_V2, Validate, Prepare, Execute);

}  // namespace mock_nnapi
