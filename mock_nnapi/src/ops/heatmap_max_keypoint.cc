// SPDX-License-Identifier: Apache-2.0
// HEATMAP_MAX_KEYPOINT: the sub-pixel maximum of each keypoint heatmap and its score.
//
// Inputs: 0 heatmaps [num_boxes, size, size, num_keypoints] (NHWC; [num_boxes, num_keypoints,
//   size, size] when input 2 is true), size >= 2; 1 boxes [num_boxes, 4], each [x1, y1, x2, y2];
//   2 BOOL layout.
// Outputs: 0 scores [num_boxes, num_keypoints]; 1 keypoints [num_boxes, num_keypoints, 2], each
//   [x, y] in box coordinates.
// For each heatmap: (r, c) is its maximum (the first in row-major order); g is the 3x3 patch
// around it (a neighbour outside the heatmap is replaced by its mirror image through the maximum);
// with b = -(gradient at the centre) = (-(g[1][2] - g[1][0]) / 2, -(g[2][1] - g[0][1]) / 2) and A
// the Hessian by central differences, delta solves A delta = b (delta = 0 when |det A| <
// 1e-5 + 1e-5 |A00 A11|); a delta beyond 1.5 in either coordinate is scaled back to 1.5. The score
// is the quadratic model's value g[1][1] - b.delta + delta.A.delta / 2, and the keypoint
//   x = x1 + max(x2 - x1, 1) / size * (c + delta_x + 0.5),
//   y = y1 + max(y2 - y1, 1) / size * (r + delta_y + 0.5).
// Types: heatmaps, boxes and both outputs TENSOR_FLOAT32 or TENSOR_FLOAT16 (FL3); or heatmaps
//   TENSOR_QUANT8_ASYMM (FL3) or TENSOR_QUANT8_ASYMM_SIGNED (FL4) with scores of the same type
//   (their own scale and zero point) and boxes and keypoints TENSOR_QUANT16_ASYMM with scale 0.125
//   and zero point 0 (other parameters fail the execution); the quantised form computes on the
//   dequantised values in float. num_boxes may be zero.
#include <cmath>

#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

constexpr float kQuant16Scale = 0.125f;

bool IsNchw(const OperationContext& context) { return context.InputScalar<bool>(2); }

int InferShape(const OperationContext& context, int error, Dimensions* scores,
               Dimensions* keypoints) {
  const OperandInfo& heatmaps = context.Input(0);
  const OperandInfo& boxes = context.Input(1);
  NN_CHECK_EQ(heatmaps.rank(), 4u, error) << context.name() << " heatmaps must be 4-D";
  const bool nchw = IsNchw(context);
  const uint32_t size = heatmaps.dim(nchw ? 2 : 1);
  const uint32_t keypoint_count = heatmaps.dim(nchw ? 1 : 3);
  NN_CHECK(heatmaps.dim(nchw ? 3 : 2) == size && size >= 2, error)
      << context.name() << " heatmaps must be square and at least 2 x 2, not "
      << DimensionsToString(heatmaps.dimensions);
  NN_CHECK(boxes.rank() == 2 && boxes.dim(0) == heatmaps.dim(0) && boxes.dim(1) == 4, error)
      << context.name() << " boxes must have shape [" << heatmaps.dim(0) << ", 4], not "
      << DimensionsToString(boxes.dimensions);
  *scores = {heatmaps.dim(0), keypoint_count};
  *keypoints = {heatmaps.dim(0), keypoint_count, 2};
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {3}, 2));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  const int32_t type = context.InputType(0);
  const int32_t box_type = IsQuantizedType(type) ? ANEURALNETWORKS_TENSOR_QUANT16_ASYMM : type;
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {box_type}));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 2, ANEURALNETWORKS_BOOL));
  NN_CHECK(!context.IsOmitted(0) && !context.IsOmitted(1), ANEURALNETWORKS_BAD_DATA)
      << context.name() << " heatmaps and boxes are not optional";
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  NN_CHECK_EQ(context.Output(1).type, box_type, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output 1 (keypoints) must be " << OperandTypeName(box_type) << ", not "
      << OperandTypeName(context.Output(1).type);
  const OperandInfo& heatmaps = context.Input(0);
  const OperandInfo& boxes = context.Input(1);
  if (heatmaps.rank_known) {
    NN_CHECK_EQ(heatmaps.rank(), 4u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " heatmaps must be 4-D";
  }
  if (boxes.rank_known) {
    NN_CHECK_EQ(boxes.rank(), 2u, ANEURALNETWORKS_BAD_DATA) << context.name() << " boxes rank";
  }
  if (!context.HasInputValue(2) || !shape::ShapeKnown(heatmaps) || !shape::ShapeKnown(boxes)) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  Dimensions scores, keypoints;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, &scores, &keypoints));
  NN_RETURN_IF_ERROR(shape::CheckDeclaredOutputShape(context, 0, scores));
  return shape::CheckDeclaredOutputShape(context, 1, keypoints);
}

int Prepare(OperationContext& context) {
  Dimensions scores, keypoints;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &scores, &keypoints));
  if (context.InputType(1) == ANEURALNETWORKS_TENSOR_QUANT16_ASYMM) {
    for (const OperandInfo* operand : {&context.Input(1), &context.Output(1)}) {
      NN_CHECK(operand->scale == kQuant16Scale && operand->zero_point == 0,
               ANEURALNETWORKS_OP_FAILED)
          << context.name() << " boxes and keypoints must have scale 0.125 and zeroPoint 0, not "
          << "scale " << operand->scale << " and zeroPoint " << operand->zero_point;
    }
  }
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, scores));
  return context.SetOutputShape(1, keypoints);
}

int Execute(OperationContext& context) {
  const OperandInfo& heatmaps = context.Input(0);
  const OperandInfo& boxes = context.Input(1);
  const OperandInfo& scores = context.Output(0);
  const OperandInfo& keypoints = context.Output(1);
  const bool nchw = IsNchw(context);
  const size_t count = heatmaps.dim(0);
  const int64_t size = heatmaps.dim(nchw ? 2 : 1);
  const size_t keypoint_count = heatmaps.dim(nchw ? 1 : 3);
  for (size_t n = 0; n < count; ++n) {
    const float x1 = RealElement(boxes, 4 * n), y1 = RealElement(boxes, 4 * n + 1);
    const float x2 = RealElement(boxes, 4 * n + 2), y2 = RealElement(boxes, 4 * n + 3);
    const float scale_x = std::max(x2 - x1, 1.f) / static_cast<float>(size);
    const float scale_y = std::max(y2 - y1, 1.f) / static_cast<float>(size);
    for (size_t k = 0; k < keypoint_count; ++k) {
      auto at = [&](int64_t r, int64_t c) {
        const size_t index = nchw ? ((n * keypoint_count + k) * size + r) * size + c
                                  : ((n * size + r) * size + c) * keypoint_count + k;
        return RealElement(heatmaps, index);
      };
      int64_t best_r = 0, best_c = 0;
      float best = at(0, 0);
      for (int64_t r = 0; r < size; ++r) {
        for (int64_t c = 0; c < size; ++c) {
          const float value = at(r, c);
          if (value > best) {
            best = value;
            best_r = r;
            best_c = c;
          }
        }
      }
      float g[3][3];
      for (int64_t dr = -1; dr <= 1; ++dr) {
        for (int64_t dc = -1; dc <= 1; ++dc) {
          int64_t r = best_r + dr, c = best_c + dc;
          if (r < 0 || r >= size) r = best_r - dr;
          if (c < 0 || c >= size) c = best_c - dc;
          g[dr + 1][dc + 1] = at(r, c);
        }
      }
      const float b0 = -(g[1][2] - g[1][0]) / 2, b1 = -(g[2][1] - g[0][1]) / 2;
      const float a00 = g[1][0] - 2 * g[1][1] + g[1][2];
      const float a01 = (g[2][2] - g[2][0] - g[0][2] + g[0][0]) / 4;
      const float a11 = g[0][1] - 2 * g[1][1] + g[2][1];
      float dx = 0, dy = 0, score = g[1][1];
      const float det = a00 * a11 - a01 * a01;
      if (std::fabs(det) >= 1e-5f + 1e-5f * std::fabs(a00 * a11)) {
        dx = (a11 * b0 - a01 * b1) / det;
        dy = (a00 * b1 - a01 * b0) / det;
        const float largest = std::max(std::fabs(dx), std::fabs(dy));
        if (largest > 1.5f) {
          dx *= 1.5f / largest;
          dy *= 1.5f / largest;
        }
        score = g[1][1] - b0 * dx - b1 * dy +
                ((a00 * dx + a01 * dy) * dx + (a01 * dx + a11 * dy) * dy) / 2;
      }
      StoreRealElement(scores, n * keypoint_count + k, score);
      StoreRealElement(keypoints, 2 * (n * keypoint_count + k),
                       x1 + scale_x * (best_c + dx + 0.5f));
      StoreRealElement(keypoints, 2 * (n * keypoint_count + k) + 1,
                       y1 + scale_y * (best_r + dy + 0.5f));
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(HEATMAP_MAX_KEYPOINT, Validate, Prepare, Execute);

}  // namespace mock_nnapi
