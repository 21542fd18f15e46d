// SPDX-License-Identifier: Apache-2.0
// SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND: move blocks of the spatial dimensions of a
// 4-D image tensor into the batch dimension and back (TFLite's dilated convolutions use them).
//
// SPACE_TO_BATCH_ND inputs: 0 tensor [batches, height, width, channels] (NHWC; NCHW when input 3
//   is true); 1 TENSOR_INT32 block sizes [block_h, block_w], each >= 1; 2 TENSOR_INT32 paddings
//   of shape [2, 2] ([[top, bottom], [left, right]], each >= 0); 3 optional BOOL layout (FL3).
//   The padded height and width must be divisible by the block sizes. Output [batches * block_h *
//   block_w, padded_height / block_h, padded_width / block_w, channels] with
//     output[(i * block_w + j) * batches + b, h, w, c] =
//         padded[b, h * block_h + i, w * block_w + j, c]
//   where padded is the input padded with logical zero (0 for floats, the zero point for the
//   quantised types).
// BATCH_TO_SPACE_ND inputs: 0 tensor (as above); 1 TENSOR_INT32 block sizes [block_h, block_w],
//   each >= 1; 2 optional BOOL layout (FL3). batches must be divisible by block_h * block_w. Output
//   [batches / (block_h * block_w), height * block_h, width * block_w, channels], the inverse
//   rearrangement (NNAPI has no crops input).
// The output keeps the input's type, scale and zero point. Types: TENSOR_FLOAT32 and
// TENSOR_QUANT8_ASYMM (FL2; SPACE_TO_BATCH_ND with a non-zero zero point needs FL3, as Android's
// validation has it: its padding is the zero point), TENSOR_FLOAT16 (FL3),
// TENSOR_QUANT8_ASYMM_SIGNED (FL4). Zero-sized inputs are rejected.
// The kernel walks the output positions (batch, row, column); each maps to one input position or
// to padding; with NHWC the channel run is one memcpy.
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

bool IsSpaceToBatch(const OperationContext& context) {
  return context.type() == ANEURALNETWORKS_SPACE_TO_BATCH_ND;
}

uint32_t LayoutInput(const OperationContext& context) { return IsSpaceToBatch(context) ? 3 : 2; }

bool IsNchw(const OperationContext& context) {
  const uint32_t layout = LayoutInput(context);
  return context.InputCount() > layout && !context.IsOmitted(layout) &&
         context.InputScalar<bool>(layout);
}

struct Geometry {
  bool nchw = false;
  uint32_t block_h = 1, block_w = 1;
  uint32_t pad_top = 0, pad_left = 0;
};

// The block sizes and paddings from the (known) inputs 1 and 2, checked; and the output shape.
int InferShape(const OperationContext& context, int error, Geometry* geometry, Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  NN_CHECK_EQ(input.size(), 4u, error) << context.name() << " input must be 4-D";
  const OperandInfo& block_operand = context.Input(1);
  NN_CHECK(block_operand.rank() == 1 && block_operand.dim(0) == 2, error)
      << context.name() << " block sizes must have shape [2], not "
      << DimensionsToString(block_operand.dimensions);
  const std::vector<int32_t> block = shape::Int32Values(block_operand);
  NN_CHECK_EQ(block.size(), 2u, error) << context.name() << " block sizes";
  NN_CHECK(block[0] >= 1 && block[1] >= 1, error)
      << context.name() << " block sizes (" << block[0] << ", " << block[1] << ") must be >= 1";
  geometry->nchw = IsNchw(context);
  geometry->block_h = static_cast<uint32_t>(block[0]);
  geometry->block_w = static_cast<uint32_t>(block[1]);
  const uint32_t h_axis = geometry->nchw ? 2 : 1;
  const uint32_t w_axis = geometry->nchw ? 3 : 2;
  const uint64_t blocks = uint64_t{geometry->block_h} * geometry->block_w;
  *output = input;
  if (IsSpaceToBatch(context)) {
    const OperandInfo& pad_operand = context.Input(2);
    NN_CHECK(pad_operand.rank() == 2 && pad_operand.dim(0) == 2 && pad_operand.dim(1) == 2, error)
        << context.name() << " paddings must have shape [2, 2], not "
        << DimensionsToString(pad_operand.dimensions);
    const std::vector<int32_t> pad = shape::Int32Values(pad_operand);
    NN_CHECK_EQ(pad.size(), 4u, error) << context.name() << " paddings";
    for (int32_t value : pad) {
      NN_CHECK_GE(value, 0, error) << context.name() << " paddings must be non-negative";
    }
    geometry->pad_top = static_cast<uint32_t>(pad[0]);
    geometry->pad_left = static_cast<uint32_t>(pad[2]);
    const uint64_t padded_h = uint64_t{input[h_axis]} + uint64_t(pad[0]) + uint64_t(pad[1]);
    const uint64_t padded_w = uint64_t{input[w_axis]} + uint64_t(pad[2]) + uint64_t(pad[3]);
    NN_CHECK(padded_h % geometry->block_h == 0 && padded_w % geometry->block_w == 0, error)
        << context.name() << " padded height and width (" << padded_h << ", " << padded_w
        << ") are not divisible by the block sizes (" << block[0] << ", " << block[1] << ")";
    const uint64_t batches = uint64_t{input[0]} * blocks;
    NN_CHECK(batches <= kMaxDimension && padded_h / geometry->block_h <= kMaxDimension &&
                 padded_w / geometry->block_w <= kMaxDimension,
             error)
        << context.name() << " output shape does not fit in uint32";
    (*output)[0] = static_cast<uint32_t>(batches);
    (*output)[h_axis] = static_cast<uint32_t>(padded_h / geometry->block_h);
    (*output)[w_axis] = static_cast<uint32_t>(padded_w / geometry->block_w);
  } else {
    NN_CHECK_EQ(input[0] % blocks, 0u, error)
        << context.name() << " batches " << input[0] << " are not divisible by block_h * block_w "
        << blocks;
    const uint64_t height = uint64_t{input[h_axis]} * geometry->block_h;
    const uint64_t width = uint64_t{input[w_axis]} * geometry->block_w;
    NN_CHECK(height <= kMaxDimension && width <= kMaxDimension, error)
        << context.name() << " output shape does not fit in uint32";
    (*output)[0] = static_cast<uint32_t>(input[0] / blocks);
    (*output)[h_axis] = static_cast<uint32_t>(height);
    (*output)[w_axis] = static_cast<uint32_t>(width);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  const bool space_to_batch = IsSpaceToBatch(context);
  const uint32_t layout = LayoutInput(context);
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {layout, layout + 1}, 1));
  const bool zero_point_zero = context.Input(0).zero_point == 0;
  NN_RETURN_IF_ERROR(shape::CheckInputTypeLevel(
      context, 0,
      {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel2},
       {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM,
        space_to_batch && !zero_point_zero ? kFeatureLevel3 : kFeatureLevel2},
       {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_CHECK(!context.IsOmitted(1), ANEURALNETWORKS_BAD_DATA)
      << context.name() << " block sizes are not optional";
  if (space_to_batch) {
    NN_RETURN_IF_ERROR(CheckInputType(context, 2, {ANEURALNETWORKS_TENSOR_INT32}));
    NN_CHECK(!context.IsOmitted(2), ANEURALNETWORKS_BAD_DATA)
        << context.name() << " paddings are not optional";
  }
  if (context.InputCount() > layout) {
    NN_RETURN_IF_ERROR(CheckInputType(context, layout, {ANEURALNETWORKS_BOOL}));
    context.RequireFeatureLevel(kFeatureLevel3);
  }
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  const OperandInfo& input = context.Input(0);
  if (input.rank_known) {
    NN_CHECK_EQ(input.rank(), 4u, ANEURALNETWORKS_BAD_DATA) << context.name() << " input rank";
  }
  const OperandInfo& block = context.Input(1);
  if (block.rank_known) {
    NN_CHECK(block.rank() == 1 && (block.dim(0) == 0 || block.dim(0) == 2),
             ANEURALNETWORKS_BAD_DATA)
        << context.name() << " block sizes must have shape [2], not "
        << DimensionsToString(block.dimensions);
  }
  if (context.HasInputValue(1)) {
    for (int32_t value : shape::Int32Values(block)) {
      NN_CHECK_GE(value, 1, ANEURALNETWORKS_BAD_DATA) << context.name() << " block sizes";
    }
  }
  if (space_to_batch) {
    const OperandInfo& pad = context.Input(2);
    if (pad.rank_known) {
      NN_CHECK(pad.rank() == 2 && (pad.dim(0) == 0 || pad.dim(0) == 2) &&
                   (pad.dim(1) == 0 || pad.dim(1) == 2),
               ANEURALNETWORKS_BAD_DATA)
          << context.name() << " paddings must have shape [2, 2], not "
          << DimensionsToString(pad.dimensions);
    }
    if (context.HasInputValue(2)) {
      for (int32_t value : shape::Int32Values(pad)) {
        NN_CHECK_GE(value, 0, ANEURALNETWORKS_BAD_DATA) << context.name() << " paddings";
      }
    }
  }
  const OperandInfo& output = context.Output(0);
  if (output.rank_known && !output.dimensions.empty()) {
    NN_CHECK_EQ(output.rank(), 4u, ANEURALNETWORKS_BAD_DATA) << context.name() << " output rank";
  }
  const bool layout_known = context.InputCount() == layout || context.HasInputValue(layout);
  const bool arguments_known =
      context.HasInputValue(1) && (!space_to_batch || context.HasInputValue(2));
  if (!layout_known || !arguments_known || !shape::ShapeKnown(input)) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  Geometry geometry;
  Dimensions shape;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, &geometry, &shape));
  return shape::CheckDeclaredOutputShape(context, 0, shape);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  Geometry geometry;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &geometry, &output));
  return context.SetOutputShape(0, output);
}

// Element offset of (batch, row, column, channel) in a dense 4-D tensor of `dims`.
size_t Offset(const Dimensions& dims, bool nchw, size_t b, size_t h, size_t w, size_t c) {
  if (nchw) return ((b * dims[1] + c) * dims[2] + h) * dims[3] + w;
  return ((b * dims[1] + h) * dims[2] + w) * dims[3] + c;
}

int Execute(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  Geometry g;
  Dimensions shape;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &g, &shape));
  const Dimensions& in = input.dimensions;
  const Dimensions& out = output.dimensions;
  const uint32_t c_axis = g.nchw ? 1 : 3;
  const uint32_t h_axis = g.nchw ? 2 : 1;
  const uint32_t w_axis = g.nchw ? 3 : 2;
  const size_t channels = in[c_axis];
  const size_t element = shape::ElementBytes(input);
  // Logical zero: the zero point for the quantised types, all-zero bits for float16/float32.
  uint8_t zero = 0;
  if (IsQuantizedType(input.type)) zero = static_cast<uint8_t>(input.zero_point);
  const bool space_to_batch = IsSpaceToBatch(context);
  for (size_t ob = 0; ob < out[0]; ++ob) {
    for (size_t oh = 0; oh < out[h_axis]; ++oh) {
      for (size_t ow = 0; ow < out[w_axis]; ++ow) {
        // The input position (ib, ih, iw) this output position comes from, or padding.
        size_t ib, ih, iw;
        bool padding = false;
        if (space_to_batch) {
          const size_t block = ob / in[0];
          ib = ob % in[0];
          const int64_t h = static_cast<int64_t>(oh * g.block_h + block / g.block_w) - g.pad_top;
          const int64_t w = static_cast<int64_t>(ow * g.block_w + block % g.block_w) - g.pad_left;
          padding = h < 0 || w < 0 || h >= static_cast<int64_t>(in[h_axis]) ||
                    w >= static_cast<int64_t>(in[w_axis]);
          ih = padding ? 0 : static_cast<size_t>(h);
          iw = padding ? 0 : static_cast<size_t>(w);
        } else {
          const size_t block = (oh % g.block_h) * g.block_w + ow % g.block_w;
          ib = block * out[0] + ob;
          ih = oh / g.block_h;
          iw = ow / g.block_w;
        }
        if (!g.nchw) {
          uint8_t* target = output.data + Offset(out, false, ob, oh, ow, 0) * element;
          if (padding) {
            std::memset(target, zero, channels * element);
          } else {
            std::memcpy(target, input.data + Offset(in, false, ib, ih, iw, 0) * element,
                        channels * element);
          }
          continue;
        }
        for (size_t c = 0; c < channels; ++c) {
          uint8_t* target = output.data + Offset(out, true, ob, oh, ow, c) * element;
          if (padding) {
            std::memset(target, zero, element);
          } else {
            std::memcpy(target, input.data + Offset(in, true, ib, ih, iw, c) * element, element);
          }
        }
      }
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(SPACE_TO_BATCH_ND, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(BATCH_TO_SPACE_ND, Validate, Prepare, Execute);

}  // namespace mock_nnapi
