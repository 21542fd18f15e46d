// SPDX-License-Identifier: Apache-2.0
// AXIS_ALIGNED_BBOX_TRANSFORM: refines bounding box proposals with per-class deltas and
// clips the results to the image.
//
// Inputs: 0 rois [num_rois, 4], each [x1, y1, x2, y2] with x1 <= x2 and y1 <= y2; 1 deltas
//   [num_rois, num_classes * 4], each [dx, dy, dw, dh]; 2 TENSOR_INT32 [num_rois], the batch
//   index of each box, in [0, batches); 3 image info [batches, 2], each [height, width].
// Output: 0 [num_rois, num_classes * 4], the type of input 0: for box r and class c, with
//   w = x2 - x1, h = y2 - y1, cx = x1 + w / 2, cy = y1 + h / 2,
//     cx' = cx + dx * w, cy' = cy + dy * h, w' = w * exp(dw), h' = h * exp(dh),
//     [x1', y1', x2', y2'] = [cx' - w'/2, cy' - h'/2, cx' + w'/2, cy' + h'/2]
//   with x clipped to [0, width] and y to [0, height] of the box's image.
// Types: rois, deltas and image info TENSOR_FLOAT32 or TENSOR_FLOAT16 (all the same; FL3); or
//   rois and image info TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0, deltas
//   TENSOR_QUANT8_ASYMM (FL3) or TENSOR_QUANT8_ASYMM_SIGNED (FL4), the output TENSOR_QUANT16_ASYMM
//   with scale 0.125 and zero point 0 (other parameters fail the execution, as in Android); the
//   quantised form computes on the dequantised values in float and rounds to nearest.
// num_rois may be zero (an empty output); num_classes and batches may not. A batch index out of
// range or an inverted box fails the execution with OP_FAILED.
#include <cmath>

#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

constexpr float kQuant16Scale = 0.125f;

int InferShape(const OperationContext& context, int error, Dimensions* output) {
  const OperandInfo& rois = context.Input(0);
  const OperandInfo& deltas = context.Input(1);
  const OperandInfo& batches = context.Input(2);
  const OperandInfo& image = context.Input(3);
  NN_CHECK(rois.rank() == 2 && rois.dim(1) == 4, error)
      << context.name() << " rois must have shape [num_rois, 4], not "
      << DimensionsToString(rois.dimensions);
  NN_CHECK(deltas.rank() == 2 && deltas.dim(0) == rois.dim(0) && deltas.dim(1) % 4 == 0 &&
               deltas.dim(1) > 0,
           error)
      << context.name() << " deltas must have shape [" << rois.dim(0)
      << ", num_classes * 4] with num_classes >= 1, not " << DimensionsToString(deltas.dimensions);
  NN_CHECK(batches.rank() == 1 && batches.dim(0) == rois.dim(0), error)
      << context.name() << " batch indices must have shape [" << rois.dim(0) << "], not "
      << DimensionsToString(batches.dimensions);
  NN_CHECK(image.rank() == 2 && image.dim(1) == 2 && image.dim(0) > 0, error)
      << context.name() << " image info must have shape [batches >= 1, 2], not "
      << DimensionsToString(image.dimensions);
  *output = deltas.dimensions;
  return ANEURALNETWORKS_NO_ERROR;
}

int CheckQuant16(const OperationContext& context, const OperandInfo& operand, const char* what,
                 int error) {
  NN_CHECK(operand.scale == kQuant16Scale && operand.zero_point == 0, error)
      << context.name() << " " << what << " must have scale 0.125 and zeroPoint 0, not scale "
      << operand.scale << " and zeroPoint " << operand.zero_point;
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {4}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT16_ASYMM, kFeatureLevel3}}));
  const int32_t type = context.InputType(0);
  if (type == ANEURALNETWORKS_TENSOR_QUANT16_ASYMM) {
    NN_RETURN_IF_ERROR(
        shape::CheckInputTypeLevel(context, 1,
                                   {{ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                    {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  } else {
    NN_RETURN_IF_ERROR(CheckInputType(context, 1, {type}));
  }
  NN_RETURN_IF_ERROR(CheckInputType(context, 2, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 3, {type}));
  for (uint32_t i = 0; i < 4; ++i) {
    NN_CHECK(!context.IsOmitted(i), ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input " << i << " is not optional";
  }
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  NN_RETURN_IF_ERROR(shape::CheckInputRanks(context, {2, 2, 1, 2}));
  if (!shape::InputShapesKnown(context, 4)) return ANEURALNETWORKS_NO_ERROR;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, &output));
  return shape::CheckDeclaredOutputShape(context, 0, output);
}

int Prepare(OperationContext& context) {
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &output));
  if (context.InputType(0) == ANEURALNETWORKS_TENSOR_QUANT16_ASYMM) {
    NN_RETURN_IF_ERROR(CheckQuant16(context, context.Input(0), "rois", ANEURALNETWORKS_OP_FAILED));
    NN_RETURN_IF_ERROR(
        CheckQuant16(context, context.Input(3), "image info", ANEURALNETWORKS_OP_FAILED));
    NN_RETURN_IF_ERROR(
        CheckQuant16(context, context.Output(0), "output 0", ANEURALNETWORKS_OP_FAILED));
  }
  return context.SetOutputShape(0, output);
}

int Execute(OperationContext& context) {
  const OperandInfo& rois = context.Input(0);
  const OperandInfo& deltas = context.Input(1);
  const int32_t* batch_index = context.Input(2).Data<int32_t>();
  const OperandInfo& image = context.Input(3);
  const OperandInfo& output = context.Output(0);
  const size_t num_rois = rois.dim(0);
  const size_t classes = deltas.dim(1) / 4;
  const int32_t batches = static_cast<int32_t>(image.dim(0));
  for (size_t r = 0; r < num_rois; ++r) {
    const int32_t b = batch_index[r];
    NN_CHECK(b >= 0 && b < batches, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " box " << r << " has batch index " << b << " outside [0, " << batches
        << ")";
    const float height = RealElement(image, 2 * static_cast<size_t>(b));
    const float width = RealElement(image, 2 * static_cast<size_t>(b) + 1);
    const float x1 = RealElement(rois, 4 * r), y1 = RealElement(rois, 4 * r + 1);
    const float x2 = RealElement(rois, 4 * r + 2), y2 = RealElement(rois, 4 * r + 3);
    NN_CHECK(x1 <= x2 && y1 <= y2, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " box " << r << " [" << x1 << ", " << y1 << ", " << x2 << ", " << y2
        << "] is inverted";
    const float w = x2 - x1, h = y2 - y1;
    const float cx = x1 + w / 2, cy = y1 + h / 2;
    for (size_t c = 0; c < classes; ++c) {
      const size_t at = (r * classes + c) * 4;
      const float new_cx = cx + RealElement(deltas, at) * w;
      const float new_cy = cy + RealElement(deltas, at + 1) * h;
      const float new_w = w * std::exp(RealElement(deltas, at + 2));
      const float new_h = h * std::exp(RealElement(deltas, at + 3));
      const float corners[4] = {new_cx - new_w / 2, new_cy - new_h / 2, new_cx + new_w / 2,
                                new_cy + new_h / 2};
      for (size_t k = 0; k < 4; ++k) {
        const float limit = k % 2 == 0 ? width : height;
        StoreRealElement(output, at + k, std::min(std::max(corners[k], 0.f), limit));
      }
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(AXIS_ALIGNED_BBOX_TRANSFORM, Validate, Prepare, Execute);

}  // namespace mock_nnapi
