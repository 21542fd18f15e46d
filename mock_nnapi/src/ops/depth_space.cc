// SPDX-License-Identifier: Apache-2.0
// DEPTH_TO_SPACE and SPACE_TO_DEPTH: move blocks between the channel dimension and the
// spatial dimensions of a 4-D image tensor.
//
// Inputs: 0 tensor [batches, height, width, channels] (NHWC; NCHW when input 2 is true); 1 INT32
// block_size >= 1; 2 optional BOOL layout (FL3).
// DEPTH_TO_SPACE: channels must be divisible by block_size^2; output [batches, height * block,
//   width * block, channels / block^2] with output[b, h*bs + i, w*bs + j, c] =
//   input[b, h, w, (i*bs + j) * (channels / block^2) + c].
// SPACE_TO_DEPTH: height and width must be divisible by block_size; output [batches, height /
//   block, width / block, channels * block^2], the inverse rearrangement.
// The output keeps the input's type, scale and zero point.
// Types: TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL1), TENSOR_FLOAT16 (FL3),
// TENSOR_QUANT8_ASYMM_SIGNED (FL4). Zero-sized inputs are rejected.
// Both are strided views of the input (contiguous channel runs are copied with memcpy).
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

bool IsNchw(const OperationContext& context) {
  return context.InputCount() > 2 && !context.IsOmitted(2) && context.InputScalar<bool>(2);
}

int InferShape(const OperationContext& context, int error, Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  NN_CHECK_EQ(input.size(), 4u, error) << context.name() << " input must be 4-D";
  const int32_t block = context.InputScalar<int32_t>(1);
  NN_CHECK_GE(block, 1, error) << context.name() << " block_size";
  // 64-bit arithmetic: block * block and the scaled dimensions may not fit in uint32.
  const uint64_t b = static_cast<uint64_t>(block);
  auto scaled = [&](uint32_t axis, uint64_t factor, uint32_t* result) -> int {
    const uint64_t extent = uint64_t{input[axis]} * factor;
    NN_CHECK_LE(extent, uint64_t{kMaxDimension}, error)
        << context.name() << " output dimension " << axis << " (" << input[axis] << " x " << factor
        << ") does not fit in uint32";
    *result = static_cast<uint32_t>(extent);
    return ANEURALNETWORKS_NO_ERROR;
  };
  const bool nchw = IsNchw(context);
  const uint32_t c_axis = nchw ? 1 : 3;
  const uint32_t h_axis = nchw ? 2 : 1;
  const uint32_t w_axis = nchw ? 3 : 2;
  *output = input;
  if (context.type() == ANEURALNETWORKS_DEPTH_TO_SPACE) {
    NN_CHECK_EQ(input[c_axis] % (b * b), 0u, error)
        << context.name() << " channels " << input[c_axis] << " are not divisible by " << b * b;
    (*output)[c_axis] = static_cast<uint32_t>(input[c_axis] / (b * b));
    NN_RETURN_IF_ERROR(scaled(h_axis, b, &(*output)[h_axis]));
    NN_RETURN_IF_ERROR(scaled(w_axis, b, &(*output)[w_axis]));
  } else {
    NN_CHECK(input[h_axis] % b == 0 && input[w_axis] % b == 0, error)
        << context.name() << " height and width of " << DimensionsToString(input)
        << " are not divisible by " << b;
    NN_RETURN_IF_ERROR(scaled(c_axis, b * b, &(*output)[c_axis]));
    (*output)[h_axis] = static_cast<uint32_t>(input[h_axis] / b);
    (*output)[w_axis] = static_cast<uint32_t>(input[w_axis] / b);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2, 3}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 1, ANEURALNETWORKS_INT32));
  if (context.InputCount() == 3) {
    NN_RETURN_IF_ERROR(CheckInputType(context, 2, {ANEURALNETWORKS_BOOL}));
    context.RequireFeatureLevel(kFeatureLevel3);
  }
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  const OperandInfo& input = context.Input(0);
  if (input.rank_known) {
    NN_CHECK_EQ(input.rank(), 4u, ANEURALNETWORKS_BAD_DATA) << context.name() << " input rank";
  }
  if (context.HasInputValue(1)) {
    NN_CHECK_GE(context.InputScalar<int32_t>(1), 1, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " block_size";
  }
  const bool layout_known = context.InputCount() == 2 || context.HasInputValue(2);
  if (!layout_known || !context.HasInputValue(1) || !shape::ShapeKnown(input)) {
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
  const Dimensions& in = input.dimensions;
  const std::vector<int64_t> s = indexing::DenseStrides(in);
  const int64_t b = context.InputScalar<int32_t>(1);
  const bool nchw = IsNchw(context);
  const uint32_t n = in[0];
  Dimensions view;
  std::vector<int64_t> strides;
  if (context.type() == ANEURALNETWORKS_DEPTH_TO_SPACE) {
    // Input channel (i * b + j) * depth + c lands at output (h * b + i, w * b + j, c).
    if (nchw) {
      const uint32_t depth = in[1] / static_cast<uint32_t>(b * b);
      view = {n, depth, in[2], static_cast<uint32_t>(b), in[3], static_cast<uint32_t>(b)};
      strides = {s[0], s[1], s[2], b * depth * s[1], s[3], depth * s[1]};
    } else {
      const uint32_t depth = in[3] / static_cast<uint32_t>(b * b);
      view = {n, in[1], static_cast<uint32_t>(b), in[2], static_cast<uint32_t>(b), depth};
      strides = {s[0], s[1], b * depth * s[3], s[2], depth * s[3], s[3]};
    }
  } else {
    // Input (h' * b + i, w' * b + j, c) lands at output (h', w', (i * b + j) * channels + c).
    if (nchw) {
      view = {n,     static_cast<uint32_t>(b),         static_cast<uint32_t>(b),
              in[1], in[2] / static_cast<uint32_t>(b), in[3] / static_cast<uint32_t>(b)};
      strides = {s[0], s[2], s[3], s[1], b * s[2], b * s[3]};
    } else {
      view = {n,
              in[1] / static_cast<uint32_t>(b),
              in[2] / static_cast<uint32_t>(b),
              static_cast<uint32_t>(b),
              static_cast<uint32_t>(b),
              in[3]};
      strides = {s[0], b * s[1], b * s[2], s[1], s[2], s[3]};
    }
  }
  shape::CopyView(input.data, shape::ElementBytes(input), 0, view, strides, context.Output(0).data);
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(DEPTH_TO_SPACE, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(SPACE_TO_DEPTH, Validate, Prepare, Execute);

}  // namespace mock_nnapi
