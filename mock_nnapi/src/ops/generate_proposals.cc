// SPDX-License-Identifier: Apache-2.0
// GENERATE_PROPOSALS: region proposals from anchors, box deltas and scores (a region
// proposal network's last step), per image, with a final hard NMS.
//
// Inputs: 0 scores [batches, height, width, num_anchors] (NHWC; [batches, num_anchors, height,
//   width] when the layout is true); 1 deltas [batches, height, width, num_anchors * 4] (NCHW:
//   [batches, num_anchors * 4, height, width]), each [dx, dy, dw, dh]; 2 anchors [num_anchors, 4],
//   each [x1, y1, x2, y2]; 3 image info [batches, 2], each [image_height, image_width]; 4 height
//   stride and 5 width stride (original-image size over feature-map size); 6 INT32 maximum boxes
//   before NMS and 7 INT32 maximum boxes after NMS (<= 0: no limit); 8 IoU threshold; 9 min_size;
//   10 BOOL layout (true: NCHW). The float scalars are FLOAT16 for TENSOR_FLOAT16 scores, else
//   FLOAT32.
// Per image, for each location (h, w) and anchor a (in that order), the anchor moved by
//   (w * width_stride, h * height_stride) is refined as AXIS_ALIGNED_BBOX_TRANSFORM does (centre
//   (x1 + x2) / 2 plus dx * width, width * exp(dw), likewise in y) and clipped to [0, image_width]
//   x [0, image_height]. If the pre-NMS maximum is positive and below the number of boxes, the
//   boxes with the highest scores are kept. Boxes survive min_size when width > min_size, height >
//   min_size and their centre lies inside the image (x < image_width, y < image_height), as in
//   Android's runtime. Hard NMS then repeatedly keeps the highest remaining score and removes
//   every box whose IoU with it is >= the threshold, up to the post-NMS maximum. (Android's
//   runtime returns no box for a post-NMS maximum of exactly 0; the NDK documents every
//   non-positive value as unlimited, which the mock follows.)
// Outputs: 0 scores [n], the input's type (quantised: input 0's scale and zero point); 1 boxes
//   [n, 4], each [x1, y1, x2, y2]; 2 TENSOR_INT32 [n], the image of each box. The boxes are
//   grouped by image in image order and, within an image, in decreasing score. n may be 0.
// Types: scores, deltas, anchors and image info TENSOR_FLOAT32 or TENSOR_FLOAT16 (FL3); or scores
//   and deltas TENSOR_QUANT8_ASYMM (FL3) or TENSOR_QUANT8_ASYMM_SIGNED (FL4) (each with its own
//   scale and zero point), anchors TENSOR_QUANT16_SYMM with scale 0.125, image info and output
//   boxes TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0 (other parameters fail the
//   execution). Zero-sized inputs fail the execution (Android does not accept them here).
// An inverted anchor (x1 > x2 or y1 > y2 after the shift) fails the execution with OP_FAILED.
// Cost: NotModelled (nnapi_operations.inc): the work depends on how many boxes survive.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "axis_helpers.h"
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

constexpr float kQuant16Scale = 0.125f;
constexpr uint32_t kLayout = 10;

bool IsNchw(const OperationContext& context) { return axis_helpers::BoolScalar(context, kLayout); }

// Scores' dimensions in NHWC order: batches, height, width, anchors.
struct Grid {
  uint32_t batches, height, width, anchors;
};

Grid GridOf(const OperandInfo& scores, bool nchw) {
  if (nchw) return {scores.dim(0), scores.dim(2), scores.dim(3), scores.dim(1)};
  return {scores.dim(0), scores.dim(1), scores.dim(2), scores.dim(3)};
}

int InferInputs(const OperationContext& context, int error) {
  const OperandInfo& scores = context.Input(0);
  const OperandInfo& deltas = context.Input(1);
  const OperandInfo& anchors = context.Input(2);
  const OperandInfo& image = context.Input(3);
  const bool nchw = IsNchw(context);
  NN_CHECK_EQ(scores.rank(), 4u, error) << context.name() << " scores must be 4-D";
  const Grid grid = GridOf(scores, nchw);
  const uint64_t channels = uint64_t{grid.anchors} * 4;
  const bool deltas_ok = deltas.rank() == 4 && deltas.dim(0) == grid.batches &&
                         (nchw ? deltas.dim(1) == channels && deltas.dim(2) == grid.height &&
                                     deltas.dim(3) == grid.width
                               : deltas.dim(1) == grid.height && deltas.dim(2) == grid.width &&
                                     deltas.dim(3) == channels);
  NN_CHECK(deltas_ok, error) << context.name() << " deltas "
                             << DimensionsToString(deltas.dimensions) << " do not match scores "
                             << DimensionsToString(scores.dimensions) << " ("
                             << (nchw ? "NCHW" : "NHWC") << ", num_anchors * 4 channels)";
  NN_CHECK(anchors.rank() == 2 && anchors.dim(0) == grid.anchors && anchors.dim(1) == 4, error)
      << context.name() << " anchors must have shape [" << grid.anchors << ", 4], not "
      << DimensionsToString(anchors.dimensions);
  NN_CHECK(image.rank() == 2 && image.dim(0) == grid.batches && image.dim(1) == 2, error)
      << context.name() << " image info must have shape [" << grid.batches << ", 2], not "
      << DimensionsToString(image.dimensions);
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {11}, 3));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  const int32_t type = context.InputType(0);
  const bool quantized = IsQuantizedType(type);
  const int32_t anchor_type = quantized ? ANEURALNETWORKS_TENSOR_QUANT16_SYMM : type;
  const int32_t box_type = quantized ? ANEURALNETWORKS_TENSOR_QUANT16_ASYMM : type;
  const int32_t real = axis_helpers::FloatScalarTypeFor(type);
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {type}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 2, {anchor_type}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 3, {box_type}));
  const int32_t scalars[] = {real, real, ANEURALNETWORKS_INT32, ANEURALNETWORKS_INT32,
                             real, real, ANEURALNETWORKS_BOOL};
  for (uint32_t i = 0; i < 7; ++i) {
    NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 4 + i, scalars[i]));
  }
  NN_RETURN_IF_ERROR(axis_helpers::CheckNotOmitted(context, 0, 3));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  const int32_t outputs[] = {box_type, ANEURALNETWORKS_TENSOR_INT32};
  for (uint32_t i = 1; i < 3; ++i) {
    NN_CHECK_EQ(context.Output(i).type, outputs[i - 1], ANEURALNETWORKS_BAD_DATA)
        << context.name() << " output " << i << " must be " << OperandTypeName(outputs[i - 1])
        << ", not " << OperandTypeName(context.Output(i).type);
  }
  NN_RETURN_IF_ERROR(shape::CheckInputRanks(context, {4, 4, 2, 2}));
  const uint32_t output_ranks[] = {1, 2, 1};
  for (uint32_t i = 0; i < 3; ++i) {
    const OperandInfo& output = context.Output(i);
    if (output.rank_known && !output.dimensions.empty()) {
      NN_CHECK_EQ(output.rank(), output_ranks[i], ANEURALNETWORKS_BAD_DATA)
          << context.name() << " output " << i << " rank";
    }
  }
  if (!shape::InputShapesKnown(context, 4)) return ANEURALNETWORKS_NO_ERROR;
  if (!context.HasInputValue(kLayout)) return ANEURALNETWORKS_NO_ERROR;
  return InferInputs(context, ANEURALNETWORKS_BAD_DATA);
}

struct Box {
  float x1, y1, x2, y2;
};

float IoU(const Box& a, const Box& b) {
  const float area_a = (a.x2 - a.x1) * (a.y2 - a.y1);
  const float area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  const float w = std::max(std::min(a.x2, b.x2) - std::max(a.x1, b.x1), 0.f);
  const float h = std::max(std::min(a.y2, b.y2) - std::max(a.y1, b.y1), 0.f);
  const float intersection = w * h;
  return intersection / (area_a + area_b - intersection);
}

struct Proposal {
  float score;
  Box box;
  int32_t image;
};

// The proposals of the whole batch, image by image; OP_FAILED for an inverted anchor.
int Compute(const OperationContext& context, std::vector<Proposal>* result) {
  const OperandInfo& scores = context.Input(0);
  const OperandInfo& deltas = context.Input(1);
  const OperandInfo& anchors = context.Input(2);
  const OperandInfo& image = context.Input(3);
  const bool nchw = IsNchw(context);
  const Grid grid = GridOf(scores, nchw);
  const float height_stride = axis_helpers::FloatScalar(context, 4);
  const float width_stride = axis_helpers::FloatScalar(context, 5);
  const int32_t pre_nms = context.InputScalar<int32_t>(6);
  const int32_t post_nms = context.InputScalar<int32_t>(7);
  const float iou_threshold = axis_helpers::FloatScalar(context, 8);
  const float min_size = axis_helpers::FloatScalar(context, 9);
  const size_t per_image = size_t{grid.height} * grid.width * grid.anchors;
  // Element offsets of score (b, h, w, a) and delta component k in either layout.
  auto score_at = [&](size_t b, size_t h, size_t w, size_t a) {
    if (nchw) return ((b * grid.anchors + a) * grid.height + h) * grid.width + w;
    return ((b * grid.height + h) * grid.width + w) * grid.anchors + a;
  };
  auto delta_at = [&](size_t b, size_t h, size_t w, size_t a, size_t k) {
    const size_t channel = a * 4 + k;
    if (nchw) return ((b * grid.anchors * 4 + channel) * grid.height + h) * grid.width + w;
    return ((b * grid.height + h) * grid.width + w) * grid.anchors * 4 + channel;
  };
  result->clear();
  std::vector<Box> boxes(per_image);
  std::vector<float> box_scores(per_image);
  for (uint32_t b = 0; b < grid.batches; ++b) {
    const float image_height = RealElement(image, 2 * size_t{b});
    const float image_width = RealElement(image, 2 * size_t{b} + 1);
    for (uint32_t h = 0; h < grid.height; ++h) {
      for (uint32_t w = 0; w < grid.width; ++w) {
        for (uint32_t a = 0; a < grid.anchors; ++a) {
          const size_t i = (size_t{h} * grid.width + w) * grid.anchors + a;
          const float x_shift = static_cast<float>(w) * width_stride;
          const float y_shift = static_cast<float>(h) * height_stride;
          const float x1 = RealElement(anchors, 4 * size_t{a}) + x_shift;
          const float y1 = RealElement(anchors, 4 * size_t{a} + 1) + y_shift;
          const float x2 = RealElement(anchors, 4 * size_t{a} + 2) + x_shift;
          const float y2 = RealElement(anchors, 4 * size_t{a} + 3) + y_shift;
          NN_CHECK(x1 <= x2 && y1 <= y2, ANEURALNETWORKS_OP_FAILED)
              << context.name() << " anchor " << a << " at (" << h << ", " << w << ") [" << x1
              << ", " << y1 << ", " << x2 << ", " << y2 << "] is inverted";
          const float width = x2 - x1, height = y2 - y1;
          const float cx = (x1 + x2) / 2 + RealElement(deltas, delta_at(b, h, w, a, 0)) * width;
          const float cy = (y1 + y2) / 2 + RealElement(deltas, delta_at(b, h, w, a, 1)) * height;
          const float new_w = std::exp(RealElement(deltas, delta_at(b, h, w, a, 2))) * width;
          const float new_h = std::exp(RealElement(deltas, delta_at(b, h, w, a, 3))) * height;
          auto clip = [](float v, float limit) { return std::min(std::max(v, 0.f), limit); };
          boxes[i] = {clip(cx - new_w / 2, image_width), clip(cy - new_h / 2, image_height),
                      clip(cx + new_w / 2, image_width), clip(cy + new_h / 2, image_height)};
          box_scores[i] = RealElement(scores, score_at(b, h, w, a));
        }
      }
    }
    std::vector<size_t> select(per_image);
    std::iota(select.begin(), select.end(), size_t{0});
    auto higher = [&](size_t l, size_t r) { return box_scores[l] > box_scores[r]; };
    if (pre_nms > 0 && static_cast<size_t>(pre_nms) < select.size()) {
      std::stable_sort(select.begin(), select.end(), higher);
      select.resize(static_cast<size_t>(pre_nms));
    }
    std::vector<size_t> candidates;
    for (size_t i : select) {
      const Box& box = boxes[i];
      const float width = box.x2 - box.x1, height = box.y2 - box.y1;
      if (width > min_size && height > min_size && box.x1 + width / 2 < image_width &&
          box.y1 + height / 2 < image_height) {
        candidates.push_back(i);
      }
    }
    const size_t limit = post_nms > 0 ? static_cast<size_t>(post_nms) : candidates.size();
    // Greedy hard NMS: candidates in decreasing score (the first of equal scores first).
    std::stable_sort(candidates.begin(), candidates.end(), higher);
    std::vector<bool> removed(candidates.size(), false);
    size_t kept = 0;
    for (size_t c = 0; c < candidates.size() && kept < limit; ++c) {
      if (removed[c]) continue;
      const size_t chosen = candidates[c];
      result->push_back({box_scores[chosen], boxes[chosen], static_cast<int32_t>(b)});
      ++kept;
      for (size_t other = c + 1; other < candidates.size(); ++other) {
        if (!removed[other] && IoU(boxes[candidates[other]], boxes[chosen]) >= iou_threshold) {
          removed[other] = true;
        }
      }
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int CheckQuantization(const OperationContext& context, const OperandInfo& operand, const char* what,
                      float scale, int32_t zero_point) {
  NN_CHECK(operand.scale == scale && operand.zero_point == zero_point, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " " << what << " must have scale " << scale << " and zeroPoint "
      << zero_point << ", not scale " << operand.scale << " and zeroPoint " << operand.zero_point;
  return ANEURALNETWORKS_NO_ERROR;
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(InferInputs(context, ANEURALNETWORKS_OP_FAILED));
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  if (IsQuantizedType(context.InputType(0))) {
    const OperandInfo& scores = context.Input(0);
    NN_RETURN_IF_ERROR(CheckQuantization(context, context.Input(2), "anchors", kQuant16Scale, 0));
    NN_RETURN_IF_ERROR(
        CheckQuantization(context, context.Input(3), "image info", kQuant16Scale, 0));
    NN_RETURN_IF_ERROR(CheckQuantization(context, context.Output(0), "output 0 (scores)",
                                         scores.scale, scores.zero_point));
    NN_RETURN_IF_ERROR(
        CheckQuantization(context, context.Output(1), "output 1 (boxes)", kQuant16Scale, 0));
  }
  // The number of proposals depends on the values: run the selection to size the outputs.
  std::vector<Proposal> proposals;
  NN_RETURN_IF_ERROR(Compute(context, &proposals));
  const uint32_t n = static_cast<uint32_t>(proposals.size());
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, {n}));
  NN_RETURN_IF_ERROR(context.SetOutputShape(1, {n, 4}));
  return context.SetOutputShape(2, {n});
}

int Execute(OperationContext& context) {
  std::vector<Proposal> proposals;
  NN_RETURN_IF_ERROR(Compute(context, &proposals));
  for (size_t i = 0; i < proposals.size(); ++i) {
    const Proposal& p = proposals[i];
    StoreRealElement(context.Output(0), i, p.score);
    const float corners[4] = {p.box.x1, p.box.y1, p.box.x2, p.box.y2};
    for (size_t k = 0; k < 4; ++k) StoreRealElement(context.Output(1), 4 * i + k, corners[k]);
    context.Output(2).MutableData<int32_t>()[i] = p.image;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(GENERATE_PROPOSALS, Validate, Prepare, Execute);

}  // namespace mock_nnapi
