// SPDX-License-Identifier: Apache-2.0
// ARGMAX and ARGMIN: index of the largest (smallest) element along one axis.
//
// Inputs: 0 tensor of rank >= 1, 1 INT32 axis in [-n, n) (negative counts from the end).
// Output: TENSOR_INT32 with the axis removed; a 1-D input gives shape [1]. Ties resolve to the
// smallest index. Quantised inputs compare their raw values (the scale is positive).
// Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32, TENSOR_QUANT8_ASYMM (FL3),
// TENSOR_QUANT8_ASYMM_SIGNED (FL4).
#include "axis_helpers.h"
#include "common.h"

namespace mock_nnapi {
namespace {

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  const OperandInfo& input = context.Input(0);
  NN_RETURN_IF_ERROR(CheckInputType(
      context, 0,
      {ANEURALNETWORKS_TENSOR_FLOAT32, ANEURALNETWORKS_TENSOR_FLOAT16, ANEURALNETWORKS_TENSOR_INT32,
       ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED}));
  context.RequireFeatureLevel(
      input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED ? kFeatureLevel4 : kFeatureLevel3);
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_INT32}));
  NN_RETURN_IF_ERROR(axis_helpers::CheckNotOmitted(context, 0, 1));
  NN_CHECK_EQ(context.Output(0).type, ANEURALNETWORKS_TENSOR_INT32, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output must be TENSOR_INT32, got "
      << OperandTypeName(context.Output(0).type);
  return axis_helpers::CheckAxisInput(context, 1, input, ANEURALNETWORKS_BAD_DATA);
}

int Prepare(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  uint32_t axis = 0;
  NN_RETURN_IF_ERROR(indexing::ReadAxisInput(context, 1, ANEURALNETWORKS_OP_FAILED, &axis));
  Dimensions out;
  for (uint32_t d = 0; d < input.rank(); ++d) {
    if (d != axis) out.push_back(input.dim(d));
  }
  if (out.empty()) out.push_back(1);
  return context.SetOutputShape(0, out);
}

template <typename T>
void Run(const OperationContext& context, uint32_t axis) {
  const OperandInfo& input = context.Input(0);
  const T* x = input.Data<T>();
  int32_t* y = context.Output(0).MutableData<int32_t>();
  const bool is_max = context.type() == ANEURALNETWORKS_ARGMAX;
  const indexing::AxisSplit split = indexing::SplitAtAxis(input.dimensions, axis);
  for (size_t outer = 0; outer < split.outer; ++outer) {
    for (size_t inner = 0; inner < split.inner; ++inner) {
      const size_t base = outer * split.axis * split.inner + inner;
      size_t best = 0;
      for (size_t i = 1; i < split.axis; ++i) {
        const auto candidate = x[base + i * split.inner];
        const auto current = x[base + best * split.inner];
        if (is_max ? candidate > current : candidate < current) best = i;
      }
      y[outer * split.inner + inner] = static_cast<int32_t>(best);
    }
  }
}

int Execute(OperationContext& context) {
  uint32_t axis = 0;
  NN_RETURN_IF_ERROR(indexing::ReadAxisInput(context, 1, ANEURALNETWORKS_OP_FAILED, &axis));
  switch (context.InputType(0)) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      Run<float>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      Run<Half>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_INT32:
      Run<int32_t>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      Run<uint8_t>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      Run<int8_t>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED)
          << context.name() << ": unsupported type " << OperandTypeName(context.InputType(0));
  }
}

}  // namespace

NN_REGISTER_OPERATION(ARGMAX, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(ARGMIN, Validate, Prepare, Execute);

}  // namespace mock_nnapi
