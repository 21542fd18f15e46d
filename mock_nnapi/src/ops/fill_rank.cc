// SPDX-License-Identifier: Apache-2.0
// FILL and RANK.
//
// FILL: 0 TENSOR_INT32 1-D output shape (non-negative values); 1 the fill value, a scalar
//   of the output's element type: FLOAT16 for TENSOR_FLOAT16, FLOAT32 for TENSOR_FLOAT32, INT32 for
//   TENSOR_INT32. Output: a tensor of that shape filled with the value.
// RANK: 0 a tensor of TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32, TENSOR_BOOL8,
//   TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT8_SYMM,
//   TENSOR_QUANT8_SYMM_PER_CHANNEL, TENSOR_QUANT16_ASYMM or TENSOR_QUANT16_SYMM. Output: an INT32
//   scalar, the input's rank.
// Zero-sized inputs are rejected (Android registers neither with allowZeroSizedInput).
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

// ---- FILL ------------------------------------------------------------------------------------

int32_t ValueType(int32_t output_type) {
  switch (output_type) {
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      return ANEURALNETWORKS_FLOAT16;
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      return ANEURALNETWORKS_FLOAT32;
    default:
      return ANEURALNETWORKS_INT32;
  }
}

int InferFill(const OperationContext& context, int error, Dimensions* output) {
  const OperandInfo& dims = context.Input(0);
  NN_CHECK_EQ(dims.rank(), 1u, error) << context.name() << " shape must be 1-D";
  output->clear();
  for (int32_t value : shape::Int32Values(dims)) {
    NN_CHECK_GE(value, 0, error) << context.name() << " shape values must be non-negative";
    output->push_back(static_cast<uint32_t>(value));
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateFill(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  context.RequireFeatureLevel(kFeatureLevel4);
  const int32_t type = context.Output(0).type;
  NN_CHECK(type == ANEURALNETWORKS_TENSOR_FLOAT16 || type == ANEURALNETWORKS_TENSOR_FLOAT32 ||
               type == ANEURALNETWORKS_TENSOR_INT32,
           ANEURALNETWORKS_BAD_DATA)
      << context.name() << " does not support output type " << OperandTypeName(type);
  NN_RETURN_IF_ERROR(CheckInputType(context, 0, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 1, ValueType(type)));
  const OperandInfo& dims = context.Input(0);
  if (dims.rank_known) {
    NN_CHECK_EQ(dims.rank(), 1u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " shape must be 1-D";
  }
  if (!context.HasInputValue(0)) return ANEURALNETWORKS_NO_ERROR;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferFill(context, ANEURALNETWORKS_BAD_DATA, &output));
  return shape::CheckDeclaredOutputShape(context, 0, output);
}

int PrepareFill(OperationContext& context) {
  Dimensions output;
  NN_RETURN_IF_ERROR(InferFill(context, ANEURALNETWORKS_OP_FAILED, &output));
  return context.SetOutputShape(0, output);
}

int ExecuteFill(OperationContext& context) {
  const OperandInfo& output = context.Output(0);
  const size_t count = indexing::Product(output.dimensions);
  switch (output.type) {
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      std::fill_n(output.MutableData<Half>(), count, context.InputScalar<Half>(1));
      break;
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      std::fill_n(output.MutableData<float>(), count, context.InputScalar<float>(1));
      break;
    default:
      std::fill_n(output.MutableData<int32_t>(), count, context.InputScalar<int32_t>(1));
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- RANK ------------------------------------------------------------------------------------

int ValidateRank(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {1}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel4},
                                  {ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel4},
                                  {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel4},
                                  {ANEURALNETWORKS_TENSOR_BOOL8, kFeatureLevel4},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel4},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_SYMM, kFeatureLevel4},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL, kFeatureLevel4},
                                  {ANEURALNETWORKS_TENSOR_QUANT16_ASYMM, kFeatureLevel4},
                                  {ANEURALNETWORKS_TENSOR_QUANT16_SYMM, kFeatureLevel4}}));
  NN_CHECK_EQ(context.Output(0).type, ANEURALNETWORKS_INT32, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output must be an INT32 scalar";
  return ANEURALNETWORKS_NO_ERROR;
}

int PrepareRank(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  return context.SetOutputShape(0, {});
}

int ExecuteRank(OperationContext& context) {
  const int32_t rank = static_cast<int32_t>(context.Input(0).rank());
  std::memcpy(context.Output(0).data, &rank, sizeof(rank));
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(FILL, ValidateFill, PrepareFill, ExecuteFill);
NN_REGISTER_OPERATION(RANK, ValidateRank, PrepareRank, ExecuteRank);

}  // namespace mock_nnapi
