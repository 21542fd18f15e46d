// SPDX-License-Identifier: Apache-2.0
// TILE: repeats a tensor along each dimension.
//
// Inputs: 0 tensor; 1 TENSOR_INT32 1-D multiples of length rank (the mock requires each to be
// positive). Output dimension i is input dimension i * multiples[i]; type, scale and zero point are
// the input's.
// Types: TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM (FL3),
// TENSOR_QUANT8_ASYMM_SIGNED (FL4). Zero-sized inputs are rejected.
// The output is a strided view of the input with a zero stride for every repetition:
// dimensions [m0, d0, m1, d1, ...] with strides [0, s0, 0, s1, ...].
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

int InferShape(const OperationContext& context, int error, Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  const std::vector<int32_t> multiples = shape::Int32Values(context.Input(1));
  NN_CHECK_EQ(multiples.size(), input.size(), error)
      << context.name() << " needs one multiple per input dimension";
  output->resize(input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    NN_CHECK_GT(multiples[i], 0, error) << context.name() << " multiple " << i;
    const uint64_t extent = uint64_t{input[i]} * static_cast<uint64_t>(multiples[i]);
    NN_CHECK_LE(extent, uint64_t{kMaxDimension}, error)
        << context.name() << " output dimension " << i << " (" << input[i] << " x " << multiples[i]
        << ") does not fit in uint32";
    (*output)[i] = static_cast<uint32_t>(extent);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  const OperandInfo& multiples = context.Input(1);
  if (multiples.rank_known) {
    NN_CHECK_EQ(multiples.rank(), 1u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " multiples must be 1-D";
  }
  if (!context.HasInputValue(1) || !shape::ShapeKnown(context.Input(0))) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, &output));
  return shape::CheckDeclaredOutputShape(context, 0, output);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &output));
  return context.SetOutputShape(0, output);
}

int Execute(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const std::vector<int64_t> input_strides = indexing::DenseStrides(input.dimensions);
  Dimensions view;
  std::vector<int64_t> strides;
  for (uint32_t i = 0; i < input.rank(); ++i) {
    view.push_back(output.dim(i) / input.dim(i));
    strides.push_back(0);
    view.push_back(input.dim(i));
    strides.push_back(input_strides[i]);
  }
  shape::CopyView(input.data, shape::ElementBytes(input), 0, view, strides, output.data);
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(TILE, Validate, Prepare, Execute);

}  // namespace mock_nnapi
