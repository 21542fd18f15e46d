// SPDX-License-Identifier: Apache-2.0
// SLICE and STRIDED_SLICE: copy a box (with steps) out of a tensor.
//
// SLICE: 0 tensor (rank >= 1); 1 TENSOR_INT32 begin[rank]; 2 TENSOR_INT32 size[rank].
//   size -1 means "to the end"; otherwise 0 <= begin and begin + size <= dimension. Zero-sized
//   inputs and outputs are accepted. Types: TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32,
//   TENSOR_QUANT8_ASYMM (FL3), TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// STRIDED_SLICE: 0 tensor (rank <= 4); 1 begin, 2 end, 3 strides (TENSOR_INT32 [rank],
//   strides non-zero and possibly negative); 4 begin_mask, 5 end_mask, 6 shrink_axis_mask (INT32
//   bit masks, bit i for dimension i). Per dimension (TensorFlow's rules, as Android implements
//   them): a masked begin is 0 (stride > 0) or dim-1 (stride < 0); a masked end is dim or -1;
//   otherwise negative indices count from the end and are clamped to the dimension. The size is
//   max(0, ceil((end - begin) / stride)). A shrunk dimension needs stride > 0 and size 1 and is
//   removed from the output; removing every dimension gives shape [1]. Zero-sized inputs are
//   rejected. Types: TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL2), TENSOR_FLOAT16 (FL3),
//   TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// Both keep the input's type, scale and zero point, and copy a strided view of the input (memcpy
// of contiguous runs).
#include <cmath>

#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

using shape::Int32Values;

// Checks that inputs [first, last] are 1-D TENSOR_INT32 with one value per input dimension.
int CheckIndexVectors(const OperationContext& context, uint32_t first, uint32_t last) {
  for (uint32_t i = first; i <= last; ++i) {
    NN_RETURN_IF_ERROR(CheckInputType(context, i, {ANEURALNETWORKS_TENSOR_INT32}));
    const OperandInfo& operand = context.Input(i);
    if (!operand.rank_known) continue;
    NN_CHECK_EQ(operand.rank(), 1u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input " << i << " must be 1-D";
    const OperandInfo& input = context.Input(0);
    if (input.rank_known && operand.dim(0) != 0) {
      NN_CHECK_EQ(operand.dim(0), input.rank(), ANEURALNETWORKS_BAD_DATA)
          << context.name() << " input " << i << " needs one value per input dimension";
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

bool ValuesKnown(const OperationContext& context, uint32_t first, uint32_t last) {
  for (uint32_t i = first; i <= last; ++i) {
    if (!context.HasInputValue(i)) return false;
  }
  return shape::ShapeKnown(context.Input(0));
}

// ---- SLICE -----------------------------------------------------------------------------------

int InferSlice(const OperationContext& context, int error, std::vector<uint32_t>* begin,
               Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  const std::vector<int32_t> begins = Int32Values(context.Input(1));
  const std::vector<int32_t> sizes = Int32Values(context.Input(2));
  NN_CHECK_GE(input.size(), 1u, error) << context.name() << " needs rank >= 1";
  NN_CHECK(begins.size() == input.size() && sizes.size() == input.size(), error)
      << context.name() << " begin and size need one value per input dimension";
  begin->resize(input.size());
  output->resize(input.size());
  for (size_t d = 0; d < input.size(); ++d) {
    const int64_t dim = input[d];
    const int64_t start = begins[d];
    const int64_t size = sizes[d] == -1 ? dim - start : sizes[d];
    NN_CHECK(start >= 0 && start <= dim && size >= 0 && start + size <= dim, error)
        << context.name() << " dimension " << d << ": begin " << begins[d] << " size " << sizes[d]
        << " does not fit in " << dim;
    (*begin)[d] = static_cast<uint32_t>(start);
    (*output)[d] = static_cast<uint32_t>(size);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateSlice(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {3}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(CheckIndexVectors(context, 1, 2));
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  if (!ValuesKnown(context, 1, 2)) return ANEURALNETWORKS_NO_ERROR;
  std::vector<uint32_t> begin;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferSlice(context, ANEURALNETWORKS_BAD_DATA, &begin, &output));
  return shape::CheckDeclaredOutputShape(context, 0, output);
}

int PrepareSlice(OperationContext& context) {
  std::vector<uint32_t> begin;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferSlice(context, ANEURALNETWORKS_OP_FAILED, &begin, &output));
  return context.SetOutputShape(0, output);
}

int ExecuteSlice(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  std::vector<uint32_t> begin;
  Dimensions shape;
  NN_RETURN_IF_ERROR(InferSlice(context, ANEURALNETWORKS_OP_FAILED, &begin, &shape));
  const std::vector<int64_t> strides = indexing::DenseStrides(input.dimensions);
  int64_t offset = 0;
  for (size_t d = 0; d < begin.size(); ++d) offset += begin[d] * strides[d];
  shape::CopyView(input.data, shape::ElementBytes(input), offset, output.dimensions, strides,
                  output.data);
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- STRIDED_SLICE ---------------------------------------------------------------------------

// TensorFlow's index normalisation: negative indices count from the end, then clamp so that the
// walk stays inside [0, dim) (or one step outside it, where it stops).
int32_t ClampIndex(int32_t index, int32_t dim, bool positive_stride) {
  if (index < 0) index += dim;
  if (positive_stride) return std::min(std::max(index, 0), dim);
  return std::min(std::max(index, -1), dim - 1);
}

struct StridedView {
  Dimensions view;              // one entry per input dimension (shrunk ones are 1)
  std::vector<int32_t> begin;   // first index per dimension
  std::vector<int32_t> stride;  // step per dimension
  Dimensions output;            // the output shape (shrunk dimensions removed)
};

int InferStridedSlice(const OperationContext& context, int error, StridedView* result) {
  const Dimensions& input = context.Input(0).dimensions;
  const size_t rank = input.size();
  const std::vector<int32_t> begins = Int32Values(context.Input(1));
  const std::vector<int32_t> ends = Int32Values(context.Input(2));
  const std::vector<int32_t> strides = Int32Values(context.Input(3));
  const int32_t begin_mask = context.InputScalar<int32_t>(4);
  const int32_t end_mask = context.InputScalar<int32_t>(5);
  const int32_t shrink_mask = context.InputScalar<int32_t>(6);
  NN_CHECK(begins.size() == rank && ends.size() == rank && strides.size() == rank, error)
      << context.name() << " begin, end and strides need one value per input dimension";
  result->view.assign(rank, 1);
  result->begin.assign(rank, 0);
  result->stride.assign(rank, 1);
  result->output.clear();
  for (size_t d = 0; d < rank; ++d) {
    const int32_t dim = static_cast<int32_t>(input[d]);
    const int32_t stride = strides[d];
    NN_CHECK_NE(stride, 0, error) << context.name() << " stride of dimension " << d;
    const bool positive = stride > 0;
    const int32_t begin =
        (begin_mask >> d) & 1 ? (positive ? 0 : dim - 1) : ClampIndex(begins[d], dim, positive);
    const int32_t end =
        (end_mask >> d) & 1 ? (positive ? dim : -1) : ClampIndex(ends[d], dim, positive);
    const int64_t span = static_cast<int64_t>(end) - begin;
    int64_t size = positive ? (span + stride - 1) / stride : (span + stride + 1) / stride;
    size = std::max<int64_t>(size, 0);
    if ((shrink_mask >> d) & 1) {
      NN_CHECK(positive && size == 1, error)
          << context.name() << " shrunk dimension " << d
          << " needs a positive stride and exactly one element (got " << size << ")";
    } else {
      result->output.push_back(static_cast<uint32_t>(size));
    }
    result->view[d] = static_cast<uint32_t>(size);
    result->begin[d] = begin;
    result->stride[d] = stride;
  }
  if (result->output.empty()) result->output.push_back(1);
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateStridedSlice(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {7}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel2},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel2},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(CheckIndexVectors(context, 1, 3));
  for (uint32_t i = 4; i <= 6; ++i) {
    NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, i, ANEURALNETWORKS_INT32));
  }
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, context.Input(0), 4, "input rank"));
  if (!ValuesKnown(context, 1, 6)) return ANEURALNETWORKS_NO_ERROR;
  StridedView view;
  NN_RETURN_IF_ERROR(InferStridedSlice(context, ANEURALNETWORKS_BAD_DATA, &view));
  return shape::CheckDeclaredOutputShape(context, 0, view.output);
}

int PrepareStridedSlice(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  StridedView view;
  NN_RETURN_IF_ERROR(InferStridedSlice(context, ANEURALNETWORKS_OP_FAILED, &view));
  return context.SetOutputShape(0, view.output);
}

int ExecuteStridedSlice(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  StridedView view;
  NN_RETURN_IF_ERROR(InferStridedSlice(context, ANEURALNETWORKS_OP_FAILED, &view));
  const std::vector<int64_t> dense = indexing::DenseStrides(input.dimensions);
  std::vector<int64_t> strides(dense.size());
  int64_t offset = 0;
  for (size_t d = 0; d < dense.size(); ++d) {
    offset += view.begin[d] * dense[d];
    strides[d] = view.stride[d] * dense[d];
  }
  shape::CopyView(input.data, shape::ElementBytes(input), offset, view.view, strides,
                  context.Output(0).data);
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(SLICE, ValidateSlice, PrepareSlice, ExecuteSlice);
NN_REGISTER_OPERATION(STRIDED_SLICE, ValidateStridedSlice, PrepareStridedSlice,
                      ExecuteStridedSlice);

}  // namespace mock_nnapi
