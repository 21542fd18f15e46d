// SPDX-License-Identifier: Apache-2.0
// TRANSPOSE: permutes the dimensions of a tensor.
//
// Inputs: 0 tensor (rank <= 4); 1 optional TENSOR_INT32 1-D permutation of length rank with the
// values 0..rank-1 (omitted: the reverse order rank-1..0). Output dimension i is input dimension
// perm[i]; type, scale and zero point are the input's.
// Types: TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL2), TENSOR_FLOAT16 (FL3),
// TENSOR_QUANT8_ASYMM_SIGNED (FL4). A zero-sized input gives the zero-sized permuted output
// (Android registers TRANSPOSE with allowZeroSizedInput).
// The copy is a strided view of the input: runs that stay contiguous are copied with memcpy.
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

int Permutation(const OperationContext& context, uint32_t rank, int error,
                std::vector<uint32_t>* permutation) {
  permutation->assign(rank, 0);
  if (context.IsOmitted(1)) {
    for (uint32_t i = 0; i < rank; ++i) (*permutation)[i] = rank - 1 - i;
    return ANEURALNETWORKS_NO_ERROR;
  }
  const std::vector<int32_t> values = shape::Int32Values(context.Input(1));
  NN_CHECK_EQ(values.size(), rank, error)
      << context.name() << " permutation length must equal the input rank";
  std::vector<bool> seen(rank, false);
  for (uint32_t i = 0; i < rank; ++i) {
    const int32_t value = values[i];
    NN_CHECK(value >= 0 && static_cast<uint32_t>(value) < rank && !seen[value], error)
        << context.name() << " perm is not a permutation of 0.." << rank - 1;
    seen[value] = true;
    (*permutation)[i] = static_cast<uint32_t>(value);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int InferShape(const OperationContext& context, int error, Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  std::vector<uint32_t> permutation;
  NN_RETURN_IF_ERROR(
      Permutation(context, static_cast<uint32_t>(input.size()), error, &permutation));
  output->resize(input.size());
  for (size_t i = 0; i < input.size(); ++i) (*output)[i] = input[permutation[i]];
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel2},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel2},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, context.Input(0), 4, "input rank"));
  const OperandInfo& perm = context.Input(1);
  if (!perm.omitted && perm.rank_known) {
    NN_CHECK_EQ(perm.rank(), 1u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " permutation must be 1-D";
  }
  const bool perm_known = context.IsOmitted(1) || context.HasInputValue(1);
  if (!perm_known || !context.Input(0).rank_known) return ANEURALNETWORKS_NO_ERROR;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, &output));
  if (!shape::ShapeKnown(context.Input(0))) return ANEURALNETWORKS_NO_ERROR;
  return shape::CheckDeclaredOutputShape(context, 0, output);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, context.Input(0), 4, "input rank"));
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &output));
  return context.SetOutputShape(0, output);
}

int Execute(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  std::vector<uint32_t> permutation;
  NN_RETURN_IF_ERROR(Permutation(context, input.rank(), ANEURALNETWORKS_OP_FAILED, &permutation));
  const std::vector<int64_t> input_strides = indexing::DenseStrides(input.dimensions);
  std::vector<int64_t> strides(permutation.size());
  for (size_t i = 0; i < permutation.size(); ++i) strides[i] = input_strides[permutation[i]];
  shape::CopyView(input.data, shape::ElementBytes(input), 0, output.dimensions, strides,
                  output.data);
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(TRANSPOSE, Validate, Prepare, Execute);

}  // namespace mock_nnapi
