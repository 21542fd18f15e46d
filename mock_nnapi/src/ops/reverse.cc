// SPDX-License-Identifier: Apache-2.0
// REVERSE: reverses a tensor along one axis.
//
// Inputs: 0 tensor (rank 1..8); 1 TENSOR_INT32 of shape [1] holding the axis, in [0, rank)
// (Android's implementation takes no negative axis). Output: the input's type, shape, scale and
// zero point. Types: TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM,
// TENSOR_QUANT8_ASYMM_SIGNED. Zero-sized inputs are rejected.
// The output is a strided view of the input with a negative stride along the axis.
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

int ResolveReverseAxis(const OperationContext& context, int error, uint32_t* axis) {
  const OperandInfo& input = context.Input(0);
  const std::vector<int32_t> values = shape::Int32Values(context.Input(1));
  NN_CHECK_EQ(values.size(), 1u, error) << context.name() << " axis tensor must hold one value";
  NN_CHECK(values[0] >= 0 && static_cast<uint32_t>(values[0]) < input.rank(), error)
      << context.name() << " axis " << values[0] << " must be in [0, " << input.rank() << ")";
  *axis = static_cast<uint32_t>(values[0]);
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel7},
                                  {ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel7},
                                  {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel7},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel7},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel7}}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, context.Input(0), 8, "input rank"));
  const OperandInfo& axis = context.Input(1);
  if (axis.rank_known) {
    NN_CHECK(axis.rank() == 1 && (axis.dim(0) == 0 || axis.dim(0) == 1), ANEURALNETWORKS_BAD_DATA)
        << context.name() << " axis must have shape [1]";
  }
  const OperandInfo& input = context.Input(0);
  if (!input.rank_known) return ANEURALNETWORKS_NO_ERROR;
  if (context.HasInputValue(1)) {
    uint32_t resolved = 0;
    NN_RETURN_IF_ERROR(ResolveReverseAxis(context, ANEURALNETWORKS_BAD_DATA, &resolved));
  }
  if (!shape::ShapeKnown(input)) return ANEURALNETWORKS_NO_ERROR;
  return shape::CheckDeclaredOutputShape(context, 0, input.dimensions);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  const OperandInfo& input = context.Input(0);
  NN_CHECK(input.rank() >= 1 && input.rank() <= 8, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " needs rank 1..8";
  uint32_t axis = 0;
  NN_RETURN_IF_ERROR(ResolveReverseAxis(context, ANEURALNETWORKS_OP_FAILED, &axis));
  return context.SetOutputShape(0, input.dimensions);
}

int Execute(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  uint32_t axis = 0;
  NN_RETURN_IF_ERROR(ResolveReverseAxis(context, ANEURALNETWORKS_OP_FAILED, &axis));
  std::vector<int64_t> strides = indexing::DenseStrides(input.dimensions);
  const int64_t offset = (static_cast<int64_t>(input.dim(axis)) - 1) * strides[axis];
  strides[axis] = -strides[axis];
  shape::CopyView(input.data, shape::ElementBytes(input), offset, input.dimensions, strides,
                  context.Output(0).data);
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(REVERSE, Validate, Prepare, Execute);

}  // namespace mock_nnapi
