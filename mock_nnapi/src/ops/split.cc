// SPDX-License-Identifier: Apache-2.0
// SPLIT: splits a tensor into equal parts along an axis.
//
// Inputs: 0 tensor; 1 INT32 axis in [-rank, rank); 2 INT32 num_splits, which must equal the number
// of outputs and divide the axis dimension. Outputs 0..num_splits-1: the input's type, scale and
// zero point, with the axis dimension divided by num_splits.
// Types: TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM (FL3),
// TENSOR_QUANT8_ASYMM_SIGNED (FL4). Zero-sized inputs are rejected.
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

int InferShape(const OperationContext& context, int error, uint32_t* axis, Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  const int32_t splits = context.InputScalar<int32_t>(2);
  NN_RETURN_IF_ERROR(indexing::ReadAxisInput(context, 1, error, axis));
  NN_CHECK(splits > 0 && input[*axis] % static_cast<uint32_t>(splits) == 0, error)
      << context.name() << " cannot split dimension " << input[*axis] << " into " << splits
      << " equal parts";
  *output = input;
  (*output)[*axis] /= static_cast<uint32_t>(splits);
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_CHECK_EQ(context.InputCount(), 3u, ANEURALNETWORKS_BAD_DATA) << context.name() << " inputs";
  NN_CHECK_GE(context.OutputCount(), 1u, ANEURALNETWORKS_BAD_DATA) << context.name() << " outputs";
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 1, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 2, ANEURALNETWORKS_INT32));
  for (uint32_t o = 0; o < context.OutputCount(); ++o) {
    NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, o, 0));
  }
  if (context.HasInputValue(2)) {
    const int32_t splits = context.InputScalar<int32_t>(2);
    NN_CHECK_EQ(static_cast<int64_t>(splits), static_cast<int64_t>(context.OutputCount()),
                ANEURALNETWORKS_BAD_DATA)
        << context.name() << " num_splits must equal the number of outputs";
  }
  if (!context.HasInputValue(1) || !context.HasInputValue(2) ||
      !shape::ShapeKnown(context.Input(0))) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  uint32_t axis = 0;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, &axis, &output));
  for (uint32_t o = 0; o < context.OutputCount(); ++o) {
    NN_RETURN_IF_ERROR(shape::CheckDeclaredOutputShape(context, o, output));
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  NN_CHECK_EQ(static_cast<int64_t>(context.InputScalar<int32_t>(2)),
              static_cast<int64_t>(context.OutputCount()), ANEURALNETWORKS_OP_FAILED)
      << context.name() << " num_splits must equal the number of outputs";
  uint32_t axis = 0;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &axis, &output));
  for (uint32_t o = 0; o < context.OutputCount(); ++o) {
    NN_RETURN_IF_ERROR(context.SetOutputShape(o, output));
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Execute(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  uint32_t axis = 0;
  indexing::ResolveAxis(context.InputScalar<int32_t>(1), input.rank(), &axis);
  const size_t outer = indexing::Product(input.dimensions, 0, axis);
  const size_t chunk = indexing::Product(context.Output(0).dimensions, axis, input.rank()) *
                       shape::ElementBytes(input);
  const uint8_t* source = input.data;
  for (size_t o = 0; o < outer; ++o) {
    for (uint32_t s = 0; s < context.OutputCount(); ++s) {
      std::memcpy(context.Output(s).data + o * chunk, source, chunk);
      source += chunk;
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(SPLIT, Validate, Prepare, Execute);

}  // namespace mock_nnapi
