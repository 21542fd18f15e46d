// SPDX-License-Identifier: Apache-2.0
// CHANNEL_SHUFFLE: splits one dimension into num_groups groups and transposes the groups:
// output index i * num_groups + j along the axis takes input index j * group_size + i.
//
// Inputs: 0 tensor (rank <= 4); 1 INT32 num_groups > 0, dividing the axis dimension; 2 INT32 axis
// in [-rank, rank). Output: the input's shape, type, scale and zero point.
// Types: TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL3), TENSOR_QUANT8_ASYMM_SIGNED
// (FL4). Zero-sized inputs are rejected.
// The output is a strided view of the input with the axis split into [group_size, num_groups].
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

int ResolveArguments(const OperationContext& context, int error, uint32_t* axis, uint32_t* groups) {
  const Dimensions& input = context.Input(0).dimensions;
  NN_RETURN_IF_ERROR(indexing::ReadAxisInput(context, 2, error, axis));
  const int32_t num_groups = context.InputScalar<int32_t>(1);
  NN_CHECK(num_groups > 0 && input[*axis] % static_cast<uint32_t>(num_groups) == 0, error)
      << context.name() << " num_groups " << num_groups << " must be positive and divide "
      << input[*axis];
  *groups = static_cast<uint32_t>(num_groups);
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {3}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 1, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 2, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  const OperandInfo& input = context.Input(0);
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, input, 4, "input rank"));
  if (!context.HasInputValue(1) || !context.HasInputValue(2) || !shape::ShapeKnown(input)) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  uint32_t axis = 0;
  uint32_t groups = 0;
  NN_RETURN_IF_ERROR(ResolveArguments(context, ANEURALNETWORKS_BAD_DATA, &axis, &groups));
  return shape::CheckDeclaredOutputShape(context, 0, input.dimensions);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  uint32_t axis = 0;
  uint32_t groups = 0;
  NN_RETURN_IF_ERROR(ResolveArguments(context, ANEURALNETWORKS_OP_FAILED, &axis, &groups));
  return context.SetOutputShape(0, context.Input(0).dimensions);
}

int Execute(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  uint32_t axis = 0;
  uint32_t groups = 0;
  NN_RETURN_IF_ERROR(ResolveArguments(context, ANEURALNETWORKS_OP_FAILED, &axis, &groups));
  const std::vector<int64_t> dense = indexing::DenseStrides(input.dimensions);
  const uint32_t group_size = input.dim(axis) / groups;
  Dimensions view;
  std::vector<int64_t> strides;
  for (uint32_t d = 0; d < input.rank(); ++d) {
    if (d == axis) {
      view.push_back(group_size);
      strides.push_back(dense[d]);
      view.push_back(groups);
      strides.push_back(group_size * dense[d]);
    } else {
      view.push_back(input.dim(d));
      strides.push_back(dense[d]);
    }
  }
  shape::CopyView(input.data, shape::ElementBytes(input), 0, view, strides, context.Output(0).data);
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(CHANNEL_SHUFFLE, Validate, Prepare, Execute);

}  // namespace mock_nnapi
