// SPDX-License-Identifier: Apache-2.0
// ABS, NEG, EXP, LOG, SIN, SQRT, RSQRT, FLOOR, LOGICAL_NOT: elementwise functions of one tensor.
//
// Inputs: 0 tensor. Output: same type and shape.
// Types by feature level (NDK reference and Android's operation validators):
//   ABS:                 TENSOR_FLOAT16, TENSOR_FLOAT32 (FL3), TENSOR_INT32 (FL4).
//   NEG:                 TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32 (FL3).
//   EXP, LOG, SIN, SQRT: TENSOR_FLOAT16, TENSOR_FLOAT32 (FL3).
//   RSQRT:               TENSOR_FLOAT16, TENSOR_FLOAT32 (FL3), TENSOR_QUANT8_ASYMM and
//                        TENSOR_QUANT8_ASYMM_SIGNED (FL7; the output may have its own scale and
//                        zero point).
//   FLOOR:               TENSOR_FLOAT32 (FL1), TENSOR_FLOAT16 (FL3); rank at most 4.
//   LOGICAL_NOT:         TENSOR_BOOL8 (FL3).
// Other ranks are unrestricted. Floating-point results are computed in float with the C library:
// LOG, SQRT and RSQRT of a negative value are NaN, LOG(0) is -inf, RSQRT(0) is +inf. TENSOR_INT32
// ABS and NEG wrap around (ABS(INT32_MIN) == INT32_MIN). Quantised RSQRT dequantises, computes in
// float and requantises (NaN saturates to the maximum, like Android's kernel). Zero-sized inputs
// fail at execution (Android registers these operations without allowZeroSizedInput).
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

int ValidateTypes(OperationContext& context) {
  switch (context.type()) {
    case ANEURALNETWORKS_ABS:
      return elementwise::CheckInputTypeLevel(
          context, 0,
          {{kFloat16, kFeatureLevel3}, {kFloat32, kFeatureLevel3}, {kInt32, kFeatureLevel4}});
    case ANEURALNETWORKS_NEG:
      return elementwise::CheckInputTypeLevel(
          context, 0,
          {{kFloat16, kFeatureLevel3}, {kFloat32, kFeatureLevel3}, {kInt32, kFeatureLevel3}});
    case ANEURALNETWORKS_RSQRT:
      return elementwise::CheckInputTypeLevel(context, 0,
                                              {{kFloat16, kFeatureLevel3},
                                               {kFloat32, kFeatureLevel3},
                                               {kQuant8, kFeatureLevel7},
                                               {kQuant8Signed, kFeatureLevel7}});
    case ANEURALNETWORKS_FLOOR:
      return elementwise::CheckInputTypeLevel(
          context, 0, {{kFloat32, kFeatureLevel1}, {kFloat16, kFeatureLevel3}});
    case ANEURALNETWORKS_LOGICAL_NOT:
      return elementwise::CheckInputTypeLevel(context, 0, {{kBool8, kFeatureLevel3}});
    default:  // EXP, LOG, SIN, SQRT
      return elementwise::CheckInputTypeLevel(
          context, 0, {{kFloat16, kFeatureLevel3}, {kFloat32, kFeatureLevel3}});
  }
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {1}, 1));
  NN_RETURN_IF_ERROR(ValidateTypes(context));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  if (context.type() == ANEURALNETWORKS_FLOOR) {
    NN_RETURN_IF_ERROR(CheckRankAtMost(context, context.Input(0), 4, "input rank"));
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(elementwise::CheckRunnableInputs(context, /*allow_zero_sized=*/false));
  if (context.type() == ANEURALNETWORKS_FLOOR) {
    NN_RETURN_IF_ERROR(elementwise::CheckPreparedRankAtMost(context, 0, 4));
  }
  return elementwise::PrepareSameShape(context);
}

float ApplyFloat(int32_t operation, float x) {
  switch (operation) {
    case ANEURALNETWORKS_ABS:
      return std::fabs(x);
    case ANEURALNETWORKS_NEG:
      return -x;
    case ANEURALNETWORKS_EXP:
      return std::exp(x);
    case ANEURALNETWORKS_LOG:
      return std::log(x);
    case ANEURALNETWORKS_SIN:
      return std::sin(x);
    case ANEURALNETWORKS_SQRT:
      return std::sqrt(x);
    case ANEURALNETWORKS_RSQRT:
      return 1.f / std::sqrt(x);
    default:  // FLOOR
      return std::floor(x);
  }
}

template <typename T>
void RunFloat(OperationContext& context) {
  const T* x = context.Input(0).Data<T>();
  T* y = context.Output(0).MutableData<T>();
  const size_t count = indexing::Product(context.Input(0).dimensions);
  const int32_t operation = context.type();
  for (size_t i = 0; i < count; ++i) y[i] = T(ApplyFloat(operation, float(x[i])));
}

// Wrap-around integer ABS and NEG through uint32 (defined behaviour for INT32_MIN).
void RunInt32(OperationContext& context) {
  const int32_t* x = context.Input(0).Data<int32_t>();
  int32_t* y = context.Output(0).MutableData<int32_t>();
  const size_t count = indexing::Product(context.Input(0).dimensions);
  const bool negate_all = context.type() == ANEURALNETWORKS_NEG;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t magnitude = static_cast<uint32_t>(x[i]);
    const bool negate = negate_all || x[i] < 0;
    y[i] = static_cast<int32_t>(negate ? 0u - magnitude : magnitude);
  }
}

template <typename Q>
void RunQuantized(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const Q* x = input.Data<Q>();
  Q* y = output.MutableData<Q>();
  const size_t count = indexing::Product(input.dimensions);
  const int32_t operation = context.type();
  for (size_t i = 0; i < count; ++i) {
    const float real = ApplyFloat(operation, Dequantize(x[i], input.scale, input.zero_point));
    y[i] = elementwise::QuantizeResult<Q>(real, output.scale, output.zero_point);
  }
}

void RunLogicalNot(OperationContext& context) {
  const uint8_t* x = context.Input(0).Data<uint8_t>();
  uint8_t* y = context.Output(0).MutableData<uint8_t>();
  const size_t count = indexing::Product(context.Input(0).dimensions);
  for (size_t i = 0; i < count; ++i) y[i] = x[i] == 0 ? 1 : 0;
}

int Execute(OperationContext& context) {
  return elementwise::Dispatch(
      context, context.InputType(0), [&](auto tag) { RunFloat<decltype(tag)>(context); },
      [&](auto tag) { RunQuantized<decltype(tag)>(context); }, [&] { RunInt32(context); },
      [&] { RunLogicalNot(context); });
}

}  // namespace

NN_REGISTER_OPERATION(ABS, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(NEG, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(EXP, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(LOG, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(SIN, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(SQRT, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(RSQRT, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(FLOOR, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(LOGICAL_NOT, Validate, Prepare, Execute);

}  // namespace mock_nnapi
