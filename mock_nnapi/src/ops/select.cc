// SPDX-License-Identifier: Apache-2.0
// SELECT: out = condition ? input1 : input2, elementwise.
//
// Inputs: 0 TENSOR_BOOL8 condition, 1 tensor, 2 tensor of the same type as input 1. All three
// must have the same shape: Android's SELECT does not broadcast (the NDK documents input 1 and 2
// as having input 0's shape, and Android's kernel refuses differing shapes). Output: input 1's
// type and shape. No rank limit.
// Types by feature level (NDK reference and Android's operation validator):
//   TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM (FL3),
//   TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// Quantised inputs and output may each have their own scale and zero point: the chosen value is
// requantised to the output's. Shapes that differ are rejected when the operation is added if
// all are known, and fail the execution otherwise. Zero-sized inputs fail at execution (Android
// registers SELECT without allowZeroSizedInput).
#include "elementwise_helpers.h"

namespace mock_nnapi {
namespace {

// Equal shapes, or not yet known.
bool ShapesCompatible(const OperandInfo& a, const OperandInfo& b) {
  if (!a.IsFullySpecified() || !b.IsFullySpecified()) return true;
  return a.dimensions == b.dimensions;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {3}, 1));
  NN_RETURN_IF_ERROR(CheckInputType(context, 0, {ANEURALNETWORKS_TENSOR_BOOL8}));
  NN_RETURN_IF_ERROR(elementwise::CheckInputTypeLevel(
      context, 1,
      {{ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(elementwise::CheckInputTypeMatches(context, 2, 1));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 1));
  for (uint32_t i : {1u, 2u}) {
    NN_CHECK(ShapesCompatible(context.Input(0), context.Input(i)), ANEURALNETWORKS_BAD_DATA)
        << "SELECT input " << i << " " << DimensionsToString(context.Input(i).dimensions)
        << " differs from the condition's shape "
        << DimensionsToString(context.Input(0).dimensions);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(elementwise::CheckRunnableInputs(context, /*allow_zero_sized=*/false));
  const Dimensions& condition = context.Input(0).dimensions;
  for (uint32_t i : {1u, 2u}) {
    NN_CHECK(context.Input(i).dimensions == condition, ANEURALNETWORKS_OP_FAILED)
        << "SELECT input " << i << " " << DimensionsToString(context.Input(i).dimensions)
        << " differs from the condition's shape " << DimensionsToString(condition);
  }
  return elementwise::PrepareSameShape(context, 1);
}

template <typename T>
void Run(OperationContext& context) {
  const uint8_t* condition = context.Input(0).Data<uint8_t>();
  const T* a = context.Input(1).Data<T>();
  const T* b = context.Input(2).Data<T>();
  T* out = context.Output(0).MutableData<T>();
  const size_t count = indexing::Product(context.Input(0).dimensions);
  for (size_t i = 0; i < count; ++i) out[i] = condition[i] != 0 ? a[i] : b[i];
}

template <typename Q>
void RunQuantized(OperationContext& context) {
  const uint8_t* condition = context.Input(0).Data<uint8_t>();
  const OperandInfo& a_info = context.Input(1);
  const OperandInfo& b_info = context.Input(2);
  const OperandInfo& out_info = context.Output(0);
  const Q* a = a_info.Data<Q>();
  const Q* b = b_info.Data<Q>();
  Q* out = out_info.MutableData<Q>();
  const size_t count = indexing::Product(context.Input(0).dimensions);
  for (size_t i = 0; i < count; ++i) {
    out[i] = condition[i] != 0 ? elementwise::Requantize(a[i], a_info, out_info)
                               : elementwise::Requantize(b[i], b_info, out_info);
  }
}

int Execute(OperationContext& context) {
  const int32_t type = context.InputType(1);
  switch (type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
    case ANEURALNETWORKS_TENSOR_INT32:
      Run<uint32_t>(context);  // a bit-exact copy of the chosen element
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      Run<uint16_t>(context);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      RunQuantized<uint8_t>(context);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      RunQuantized<int8_t>(context);
      return ANEURALNETWORKS_NO_ERROR;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED) << "SELECT: unsupported type " << OperandTypeName(type);
  }
}

}  // namespace

NN_REGISTER_OPERATION(SELECT, Validate, Prepare, Execute);

}  // namespace mock_nnapi
