// SPDX-License-Identifier: Apache-2.0
// DETECTION_POSTPROCESSING: SSD's box decoding and NMS (what TFLite's
// TFLite_Detection_PostProcess custom operation computes; TFLite's NNAPI delegate maps it here).
//
// Inputs: 0 scores [batches, num_anchors, num_classes] (num_classes >= 2; class 0 is the
//   background and is ignored); 1 deltas [batches, num_anchors, length_box_encoding >= 4], the
//   first four [dy, dx, dh, dw], the rest ignored; 2 anchors [num_anchors, 4], each [ctr_y, ctr_x,
//   h, w]; 3-6 scale_y, scale_x, scale_h, scale_w (> 0); 7 BOOL use_regular_nms; 8 INT32
//   max_num_detections (> 0); 9 INT32 max_classes_per_detection (fast NMS; > 0 there); 10 INT32
//   max_detections_per_class (regular NMS; > 0 there); 11 score_threshold (>= 0); 12 IoU threshold
//   (>= 0); 13 BOOL is_bg_in_label. The float scalars are FLOAT16 for TENSOR_FLOAT16 scores, else
//   FLOAT32. The value checks fail the execution with OP_FAILED, where Android checks them (when
//   the operation is prepared).
// Decoding, per anchor: ctr_y' = ctr_y + h * dy / scale_y, ctr_x' = ctr_x + w * dx / scale_x,
//   h' = h * exp(dh / scale_h), w' = w * exp(dw / scale_w); the box is [ctr_y' - h'/2,
//   ctr_x' - w'/2, ctr_y' + h'/2, ctr_x' + w'/2] ([y1, x1, y2, x2], not clipped).
// Regular NMS, per image: for each class c >= 1, the anchors whose score is above the threshold
//   go through hard NMS (repeatedly keep the highest remaining score, remove every box whose IoU
//   with it is >= the IoU threshold) up to max_detections_per_class; the survivors of all classes
//   are ordered by decreasing score and cut to max_num_detections.
// Fast (class-agnostic) NMS, per image: each anchor's score is its highest over classes >= 1; the
//   anchors whose score is above the threshold go through one hard NMS up to max_num_detections;
//   each surviving anchor (in decreasing score) gives min(num_classes - 1,
//   max_classes_per_detection) detections, its classes in decreasing score (whatever their
//   score).
// Outputs, with n = max_num_detections (regular) or max_num_detections *
//   max_classes_per_detection (fast): 0 scores [batches, n], the input's type; 1 boxes [batches,
//   n, 4]; 2 TENSOR_INT32 classes [batches, n], the class index minus 1 unless is_bg_in_label
//   (then the index itself); 3 TENSOR_INT32 [batches], the number of valid detections of each
//   image. The slots after an image's valid detections are 0. No valid detection is allowed.
// Types: every tensor input TENSOR_FLOAT32 or TENSOR_FLOAT16, all the same (FL3). Zero-sized
//   inputs fail the execution (Android does not accept them here).
// Cost: NotModelled (nnapi_operations.inc): the work depends on how many boxes pass the threshold.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "axis_helpers.h"
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

constexpr uint32_t kUseRegularNms = 7;
constexpr uint32_t kMaxDetections = 8;
constexpr uint32_t kMaxClassesPerDetection = 9;
constexpr uint32_t kMaxDetectionsPerClass = 10;

int InferInputs(const OperationContext& context, int error) {
  const OperandInfo& scores = context.Input(0);
  const OperandInfo& deltas = context.Input(1);
  const OperandInfo& anchors = context.Input(2);
  NN_CHECK(scores.rank() == 3 && scores.dim(2) >= 2, error)
      << context.name() << " scores must have shape [batches, num_anchors, num_classes >= 2], not "
      << DimensionsToString(scores.dimensions);
  NN_CHECK(deltas.rank() == 3 && deltas.dim(0) == scores.dim(0) && deltas.dim(1) == scores.dim(1) &&
               deltas.dim(2) >= 4,
           error)
      << context.name() << " deltas must have shape [" << scores.dim(0) << ", " << scores.dim(1)
      << ", length_box_encoding >= 4], not " << DimensionsToString(deltas.dimensions);
  NN_CHECK(anchors.rank() == 2 && anchors.dim(0) == scores.dim(1) && anchors.dim(1) == 4, error)
      << context.name() << " anchors must have shape [" << scores.dim(1) << ", 4], not "
      << DimensionsToString(anchors.dimensions);
  return ANEURALNETWORKS_NO_ERROR;
}

// Detections per image (the outputs' second dimension), from the scalars; 0 when they are not
// all known or not valid (prepare then fails).
uint64_t DetectionsPerImage(const OperationContext& context) {
  for (uint32_t i : {kUseRegularNms, kMaxDetections, kMaxClassesPerDetection}) {
    if (!context.HasInputValue(i)) return 0;
  }
  const int32_t max_detections = context.InputScalar<int32_t>(kMaxDetections);
  if (max_detections <= 0) return 0;
  if (axis_helpers::BoolScalar(context, kUseRegularNms))
    return static_cast<uint64_t>(max_detections);
  const int32_t classes = context.InputScalar<int32_t>(kMaxClassesPerDetection);
  if (classes <= 0) return 0;
  return static_cast<uint64_t>(max_detections) * static_cast<uint64_t>(classes);
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {14}, 4));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3}}));
  const int32_t type = context.InputType(0);
  const int32_t real = axis_helpers::FloatScalarTypeFor(type);
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {type}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 2, {type}));
  const int32_t scalars[] = {real,
                             real,
                             real,
                             real,
                             ANEURALNETWORKS_BOOL,
                             ANEURALNETWORKS_INT32,
                             ANEURALNETWORKS_INT32,
                             ANEURALNETWORKS_INT32,
                             real,
                             real,
                             ANEURALNETWORKS_BOOL};
  for (uint32_t i = 0; i < 11; ++i) {
    NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 3 + i, scalars[i]));
  }
  NN_RETURN_IF_ERROR(axis_helpers::CheckNotOmitted(context, 0, 2));
  const int32_t outputs[] = {type, type, ANEURALNETWORKS_TENSOR_INT32,
                             ANEURALNETWORKS_TENSOR_INT32};
  for (uint32_t i = 0; i < 4; ++i) {
    NN_CHECK_EQ(context.Output(i).type, outputs[i], ANEURALNETWORKS_BAD_DATA)
        << context.name() << " output " << i << " must be " << OperandTypeName(outputs[i])
        << ", not " << OperandTypeName(context.Output(i).type);
  }
  NN_RETURN_IF_ERROR(shape::CheckInputRanks(context, {3, 3, 2}));
  if (!shape::InputShapesKnown(context, 3)) return ANEURALNETWORKS_NO_ERROR;
  NN_RETURN_IF_ERROR(InferInputs(context, ANEURALNETWORKS_BAD_DATA));
  const uint64_t n = DetectionsPerImage(context);
  if (n == 0 || n > kMaxDimension) return ANEURALNETWORKS_NO_ERROR;
  const uint32_t batches = context.Input(0).dim(0);
  const uint32_t per_image = static_cast<uint32_t>(n);
  NN_RETURN_IF_ERROR(shape::CheckDeclaredOutputShape(context, 0, {batches, per_image}));
  NN_RETURN_IF_ERROR(shape::CheckDeclaredOutputShape(context, 1, {batches, per_image, 4}));
  NN_RETURN_IF_ERROR(shape::CheckDeclaredOutputShape(context, 2, {batches, per_image}));
  return shape::CheckDeclaredOutputShape(context, 3, {batches});
}

// Android's prepare-time checks of the scalar arguments.
int CheckArguments(const OperationContext& context) {
  const char* const names[] = {"scale_y", "scale_x", "scale_h", "scale_w"};
  for (uint32_t i = 3; i <= 6; ++i) {
    const float scale = axis_helpers::FloatScalar(context, i);
    NN_CHECK(scale > 0.f, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " " << names[i - 3] << " " << scale << " must be positive";
  }
  const float score_threshold = axis_helpers::FloatScalar(context, 11);
  const float iou_threshold = axis_helpers::FloatScalar(context, 12);
  NN_CHECK(score_threshold >= 0.f, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " score threshold " << score_threshold << " must be >= 0";
  NN_CHECK(iou_threshold >= 0.f, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " IoU threshold " << iou_threshold << " must be >= 0";
  const int32_t max_detections = context.InputScalar<int32_t>(kMaxDetections);
  NN_CHECK(max_detections > 0, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " max_num_detections " << max_detections << " must be positive";
  if (axis_helpers::BoolScalar(context, kUseRegularNms)) {
    const int32_t per_class = context.InputScalar<int32_t>(kMaxDetectionsPerClass);
    NN_CHECK(per_class > 0, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " max_detections_per_class " << per_class
        << " must be positive with regular NMS";
  } else {
    const int32_t classes = context.InputScalar<int32_t>(kMaxClassesPerDetection);
    NN_CHECK(classes > 0, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " max_classes_per_detection " << classes
        << " must be positive with fast NMS";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(InferInputs(context, ANEURALNETWORKS_OP_FAILED));
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  NN_RETURN_IF_ERROR(CheckArguments(context));
  const uint64_t n = DetectionsPerImage(context);
  const uint32_t batches = context.Input(0).dim(0);
  NN_CHECK(n <= kMaxDimension, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " " << n << " detections per image do not fit a dimension";
  const uint32_t per_image = static_cast<uint32_t>(n);
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, {batches, per_image}));
  NN_RETURN_IF_ERROR(context.SetOutputShape(1, {batches, per_image, 4}));
  NN_RETURN_IF_ERROR(context.SetOutputShape(2, {batches, per_image}));
  return context.SetOutputShape(3, {batches});
}

struct Box {
  float y1, x1, y2, x2;
};

float IoU(const Box& a, const Box& b) {
  const float area_a = (a.y2 - a.y1) * (a.x2 - a.x1);
  const float area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
  const float h = std::max(std::min(a.y2, b.y2) - std::max(a.y1, b.y1), 0.f);
  const float w = std::max(std::min(a.x2, b.x2) - std::max(a.x1, b.x1), 0.f);
  const float intersection = w * h;
  return intersection / (area_a + area_b - intersection);
}

// Greedy hard NMS of `candidates` (anchor indices) by `score`: the kept anchors in decreasing
// score (the first of equal scores first), at most `limit`.
std::vector<uint32_t> HardNms(std::vector<uint32_t> candidates, const std::vector<Box>& boxes,
                              const std::function<float(uint32_t)>& score, float iou_threshold,
                              size_t limit) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](uint32_t l, uint32_t r) { return score(l) > score(r); });
  std::vector<bool> removed(candidates.size(), false);
  std::vector<uint32_t> kept;
  for (size_t c = 0; c < candidates.size() && kept.size() < limit; ++c) {
    if (removed[c]) continue;
    kept.push_back(candidates[c]);
    for (size_t other = c + 1; other < candidates.size(); ++other) {
      if (!removed[other] && IoU(boxes[candidates[other]], boxes[candidates[c]]) >= iou_threshold) {
        removed[other] = true;
      }
    }
  }
  return kept;
}

int Execute(OperationContext& context) {
  const OperandInfo& scores = context.Input(0);
  const OperandInfo& deltas = context.Input(1);
  const OperandInfo& anchors = context.Input(2);
  const uint32_t batches = scores.dim(0), num_anchors = scores.dim(1), classes = scores.dim(2);
  const size_t encoding = deltas.dim(2);
  const float scale_y = axis_helpers::FloatScalar(context, 3);
  const float scale_x = axis_helpers::FloatScalar(context, 4);
  const float scale_h = axis_helpers::FloatScalar(context, 5);
  const float scale_w = axis_helpers::FloatScalar(context, 6);
  const bool regular = axis_helpers::BoolScalar(context, kUseRegularNms);
  const int32_t max_detections = context.InputScalar<int32_t>(kMaxDetections);
  const int32_t max_classes = context.InputScalar<int32_t>(kMaxClassesPerDetection);
  const int32_t per_class = context.InputScalar<int32_t>(kMaxDetectionsPerClass);
  const float score_threshold = axis_helpers::FloatScalar(context, 11);
  const float iou_threshold = axis_helpers::FloatScalar(context, 12);
  const int32_t label_offset = axis_helpers::BoolScalar(context, 13) ? 0 : 1;
  const OperandInfo& out_scores = context.Output(0);
  const OperandInfo& out_boxes = context.Output(1);
  int32_t* out_classes = context.Output(2).MutableData<int32_t>();
  int32_t* out_counts = context.Output(3).MutableData<int32_t>();
  const size_t n = context.Output(0).dim(1);
  for (size_t i = 0; i < size_t{batches} * n; ++i) {
    StoreRealElement(out_scores, i, 0.f);
    for (size_t k = 0; k < 4; ++k) StoreRealElement(out_boxes, 4 * i + k, 0.f);
    out_classes[i] = 0;
  }
  std::vector<Box> boxes(num_anchors);
  for (uint32_t b = 0; b < batches; ++b) {
    for (uint32_t a = 0; a < num_anchors; ++a) {
      const size_t at = (size_t{b} * num_anchors + a) * encoding;
      const float ay = RealElement(anchors, 4 * size_t{a});
      const float ax = RealElement(anchors, 4 * size_t{a} + 1);
      const float ah = RealElement(anchors, 4 * size_t{a} + 2);
      const float aw = RealElement(anchors, 4 * size_t{a} + 3);
      const float cy = ay + ah * RealElement(deltas, at) / scale_y;
      const float cx = ax + aw * RealElement(deltas, at + 1) / scale_x;
      const float half_h = ah * std::exp(RealElement(deltas, at + 2) / scale_h) * 0.5f;
      const float half_w = aw * std::exp(RealElement(deltas, at + 3) / scale_w) * 0.5f;
      boxes[a] = {cy - half_h, cx - half_w, cy + half_h, cx + half_w};
    }
    auto score = [&](uint32_t a, uint32_t c) {
      return RealElement(scores, (size_t{b} * num_anchors + a) * classes + c);
    };
    size_t written = 0;
    auto emit = [&](uint32_t a, uint32_t c) {
      const size_t slot = size_t{b} * n + written++;
      StoreRealElement(out_scores, slot, score(a, c));
      const float corners[4] = {boxes[a].y1, boxes[a].x1, boxes[a].y2, boxes[a].x2};
      for (size_t k = 0; k < 4; ++k) StoreRealElement(out_boxes, 4 * slot + k, corners[k]);
      out_classes[slot] = static_cast<int32_t>(c) - label_offset;
    };
    if (regular) {
      struct Detection {
        uint32_t anchor, cls;
        float score;
      };
      std::vector<Detection> detections;
      for (uint32_t c = 1; c < classes; ++c) {
        std::vector<uint32_t> candidates;
        for (uint32_t a = 0; a < num_anchors; ++a) {
          if (score(a, c) > score_threshold) candidates.push_back(a);
        }
        const std::vector<uint32_t> kept = HardNms(
            std::move(candidates), boxes, [&](uint32_t a) { return score(a, c); }, iou_threshold,
            static_cast<size_t>(per_class));
        for (uint32_t a : kept) detections.push_back({a, c, score(a, c)});
      }
      std::stable_sort(detections.begin(), detections.end(),
                       [](const Detection& l, const Detection& r) { return l.score > r.score; });
      if (detections.size() > static_cast<size_t>(max_detections)) {
        detections.resize(static_cast<size_t>(max_detections));
      }
      for (const Detection& d : detections) emit(d.anchor, d.cls);
    } else {
      const uint32_t out_classes_per_box =
          std::min<uint32_t>(classes - 1, static_cast<uint32_t>(max_classes));
      std::vector<float> best(num_anchors);
      std::vector<uint32_t> candidates;
      for (uint32_t a = 0; a < num_anchors; ++a) {
        best[a] = score(a, 1);
        for (uint32_t c = 2; c < classes; ++c) best[a] = std::max(best[a], score(a, c));
        if (best[a] > score_threshold) candidates.push_back(a);
      }
      const std::vector<uint32_t> kept = HardNms(
          std::move(candidates), boxes, [&](uint32_t a) { return best[a]; }, iou_threshold,
          static_cast<size_t>(max_detections));
      std::vector<uint32_t> order(classes - 1);
      for (uint32_t a : kept) {
        std::iota(order.begin(), order.end(), 1u);
        std::stable_sort(order.begin(), order.end(),
                         [&](uint32_t l, uint32_t r) { return score(a, l) > score(a, r); });
        for (uint32_t k = 0; k < out_classes_per_box; ++k) emit(a, order[k]);
      }
    }
    out_counts[b] = static_cast<int32_t>(written);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(DETECTION_POSTPROCESSING, Validate, Prepare, Execute);

}  // namespace mock_nnapi
