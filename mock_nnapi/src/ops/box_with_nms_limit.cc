// SPDX-License-Identifier: Apache-2.0
// BOX_WITH_NMS_LIMIT: per-class non-maximum suppression of scored boxes, per image.
//
// Inputs: 0 scores [num_rois, num_classes] (num_classes >= 2; class 0 is the background and is
//   ignored); 1 boxes [num_rois, num_classes * 4], each [x1, y1, x2, y2] (x1 <= x2, y1 <= y2);
//   2 TENSOR_INT32 [num_rois] batch indices, boxes of one image consecutive; 3 score threshold
//   (only scores above it enter NMS); 4 INT32 maximum detections per image and per class (< 0:
//   no limit); 5 INT32 kernel: 0 hard, 1 linear, 2 Gaussian; 6 IoU threshold; 7 sigma (Gaussian);
//   8 NMS score threshold (a score that drops below it during NMS removes its box). The float
//   scalars are FLOAT16 for TENSOR_FLOAT16 scores, else FLOAT32.
// Per image and class (1..num_classes-1): repeatedly take the highest remaining score (the first
//   of equal ones), then multiply each other remaining score by k(iou): hard 1 if iou < threshold
//   else 0; linear 1 if iou < threshold else 1 - iou; Gaussian exp(-iou^2 / sigma); remove those
//   below the NMS score threshold; stop after the maximum detections. The image's survivors are
//   cut to its maximum detections by score, then ordered by class and, within a class, by
//   decreasing score (as Android's runtime does).
// Outputs: 0 scores [n], the input's type (quantised with output 0's own parameters); 1 boxes
//   [n, 4]; 2 TENSOR_INT32 classes [n]; 3 TENSOR_INT32 batch indices [n]. n may be 0.
// Types: scores and boxes TENSOR_FLOAT32 or TENSOR_FLOAT16 (FL3), or scores TENSOR_QUANT8_ASYMM
//   (FL3) or TENSOR_QUANT8_ASYMM_SIGNED (FL4) with TENSOR_QUANT16_ASYMM boxes of scale 0.125 and
//   zero point 0 (other parameters fail the execution). IoU is the intersection area over the
//   union area of the axis-aligned boxes.
#include <algorithm>
#include <cmath>

#include "axis_helpers.h"
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

constexpr float kQuant16Scale = 0.125f;

int InferInputs(const OperationContext& context, int error) {
  const OperandInfo& scores = context.Input(0);
  const OperandInfo& boxes = context.Input(1);
  const OperandInfo& batches = context.Input(2);
  NN_CHECK(scores.rank() == 2 && scores.dim(1) >= 2, error)
      << context.name() << " scores must have shape [num_rois, num_classes >= 2], not "
      << DimensionsToString(scores.dimensions);
  NN_CHECK(boxes.rank() == 2 && boxes.dim(0) == scores.dim(0) &&
               uint64_t{boxes.dim(1)} == uint64_t{scores.dim(1)} * 4,
           error)
      << context.name() << " boxes must have shape [" << scores.dim(0) << ", "
      << uint64_t{scores.dim(1)} * 4 << "], not " << DimensionsToString(boxes.dimensions);
  NN_CHECK(batches.rank() == 1 && batches.dim(0) == scores.dim(0), error)
      << context.name() << " batch indices must have shape [" << scores.dim(0) << "], not "
      << DimensionsToString(batches.dimensions);
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {9}, 4));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  const int32_t type = context.InputType(0);
  const int32_t box_type = IsQuantizedType(type) ? ANEURALNETWORKS_TENSOR_QUANT16_ASYMM : type;
  const int32_t real =
      type == ANEURALNETWORKS_TENSOR_FLOAT16 ? ANEURALNETWORKS_FLOAT16 : ANEURALNETWORKS_FLOAT32;
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {box_type}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 2, {ANEURALNETWORKS_TENSOR_INT32}));
  const int32_t scalars[] = {real, ANEURALNETWORKS_INT32, ANEURALNETWORKS_INT32, real, real, real};
  for (uint32_t i = 0; i < 6; ++i) {
    NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 3 + i, scalars[i]));
  }
  for (uint32_t i = 0; i < 3; ++i) {
    NN_CHECK(!context.IsOmitted(i), ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input " << i << " is not optional";
  }
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  const int32_t outputs[] = {box_type, ANEURALNETWORKS_TENSOR_INT32, ANEURALNETWORKS_TENSOR_INT32};
  for (uint32_t i = 1; i < 4; ++i) {
    NN_CHECK_EQ(context.Output(i).type, outputs[i - 1], ANEURALNETWORKS_BAD_DATA)
        << context.name() << " output " << i << " must be " << OperandTypeName(outputs[i - 1])
        << ", not " << OperandTypeName(context.Output(i).type);
  }
  if (context.HasInputValue(5)) {
    const int32_t kernel = context.InputScalar<int32_t>(5);
    NN_CHECK(kernel >= 0 && kernel <= 2, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " NMS kernel " << kernel << " is not hard (0), linear (1) or "
        << "Gaussian (2)";
  }
  NN_RETURN_IF_ERROR(shape::CheckInputRanks(context, {2, 2, 1}));
  if (!shape::InputShapesKnown(context, 3)) return ANEURALNETWORKS_NO_ERROR;
  return InferInputs(context, ANEURALNETWORKS_BAD_DATA);
}

struct Detection {
  uint32_t roi;  // index into the image's boxes and scores
  uint32_t cls;
  float score;
};

// The detections of the whole batch, image by image; OP_FAILED for an inverted box.
int Compute(const OperationContext& context, std::vector<Detection>* result,
            std::vector<int32_t>* images) {
  const OperandInfo& scores = context.Input(0);
  const OperandInfo& boxes = context.Input(1);
  const int32_t* batch_index = context.Input(2).Data<int32_t>();
  const uint32_t rois = scores.dim(0), classes = scores.dim(1);
  const float score_threshold = axis_helpers::FloatScalar(context, 3);
  const int32_t max_detections = context.InputScalar<int32_t>(4);
  const int32_t kernel = context.InputScalar<int32_t>(5);
  const float iou_threshold = axis_helpers::FloatScalar(context, 6);
  const float sigma = axis_helpers::FloatScalar(context, 7);
  const float nms_score_threshold = axis_helpers::FloatScalar(context, 8);
  NN_CHECK(kernel >= 0 && kernel <= 2, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " NMS kernel " << kernel;
  auto box = [&](uint32_t roi, uint32_t cls, uint32_t k) {
    return RealElement(boxes, (size_t{roi} * classes + cls) * 4 + k);
  };
  auto iou = [&](uint32_t a, uint32_t b, uint32_t cls) {
    const float area_a = (box(a, cls, 2) - box(a, cls, 0)) * (box(a, cls, 3) - box(a, cls, 1));
    const float area_b = (box(b, cls, 2) - box(b, cls, 0)) * (box(b, cls, 3) - box(b, cls, 1));
    const float w = std::max(
        std::min(box(a, cls, 2), box(b, cls, 2)) - std::max(box(a, cls, 0), box(b, cls, 0)), 0.f);
    const float h = std::max(
        std::min(box(a, cls, 3), box(b, cls, 3)) - std::max(box(a, cls, 1), box(b, cls, 1)), 0.f);
    const float intersection = w * h;
    return intersection / (area_a + area_b - intersection);
  };
  auto weight = [&](float overlap) {
    if (kernel == 2) return std::exp(-overlap * overlap / sigma);
    if (overlap < iou_threshold) return 1.f;
    return kernel == 0 ? 0.f : 1.f - overlap;
  };
  result->clear();
  images->clear();
  for (uint32_t begin = 0; begin < rois;) {
    uint32_t end = begin + 1;
    while (end < rois && batch_index[end] == batch_index[begin]) ++end;
    for (uint32_t r = begin; r < end; ++r) {
      for (uint32_t c = 0; c < classes; ++c) {
        NN_CHECK(box(r, c, 0) <= box(r, c, 2) && box(r, c, 1) <= box(r, c, 3),
                 ANEURALNETWORKS_OP_FAILED)
            << context.name() << " box " << r << " of class " << c << " is inverted";
      }
    }
    std::vector<Detection> image;
    for (uint32_t c = 1; c < classes; ++c) {
      std::vector<Detection> candidates;
      for (uint32_t r = begin; r < end; ++r) {
        const float s = RealElement(scores, size_t{r} * classes + c);
        if (s > score_threshold) candidates.push_back({r, c, s});
      }
      const size_t limit =
          max_detections < 0 ? candidates.size() : static_cast<size_t>(max_detections);
      size_t kept = 0;
      while (!candidates.empty() && kept < limit) {
        auto best = std::max_element(
            candidates.begin(), candidates.end(),
            [](const Detection& a, const Detection& b) { return a.score < b.score; });
        const Detection chosen = *best;
        candidates.erase(best);
        image.push_back(chosen);
        ++kept;
        std::vector<Detection> remaining;
        for (Detection d : candidates) {
          d.score *= weight(iou(d.roi, chosen.roi, c));
          if (!(d.score < nms_score_threshold)) remaining.push_back(d);
        }
        candidates = std::move(remaining);
      }
    }
    std::stable_sort(image.begin(), image.end(),
                     [](const Detection& a, const Detection& b) { return a.score > b.score; });
    if (max_detections >= 0 && image.size() > static_cast<size_t>(max_detections)) {
      image.resize(static_cast<size_t>(max_detections));
    }
    std::stable_sort(image.begin(), image.end(), [](const Detection& a, const Detection& b) {
      return a.cls != b.cls ? a.cls < b.cls : a.score > b.score;
    });
    for (const Detection& d : image) {
      result->push_back(d);
      images->push_back(batch_index[begin]);
    }
    begin = end;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(InferInputs(context, ANEURALNETWORKS_OP_FAILED));
  if (context.InputType(1) == ANEURALNETWORKS_TENSOR_QUANT16_ASYMM) {
    for (const OperandInfo* operand : {&context.Input(1), &context.Output(1)}) {
      NN_CHECK(operand->scale == kQuant16Scale && operand->zero_point == 0,
               ANEURALNETWORKS_OP_FAILED)
          << context.name() << " boxes must have scale 0.125 and zeroPoint 0, not scale "
          << operand->scale << " and zeroPoint " << operand->zero_point;
    }
  }
  // The number of detections depends on the values: run the selection to size the outputs.
  std::vector<Detection> detections;
  std::vector<int32_t> images;
  NN_RETURN_IF_ERROR(Compute(context, &detections, &images));
  const uint32_t n = static_cast<uint32_t>(detections.size());
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, {n}));
  NN_RETURN_IF_ERROR(context.SetOutputShape(1, {n, 4}));
  NN_RETURN_IF_ERROR(context.SetOutputShape(2, {n}));
  return context.SetOutputShape(3, {n});
}

int Execute(OperationContext& context) {
  std::vector<Detection> detections;
  std::vector<int32_t> images;
  NN_RETURN_IF_ERROR(Compute(context, &detections, &images));
  const OperandInfo& boxes = context.Input(1);
  const OperandInfo& out_scores = context.Output(0);
  const size_t box_bytes = 4 * ElementSize(boxes.type);
  const uint32_t classes = context.Input(0).dim(1);
  for (size_t i = 0; i < detections.size(); ++i) {
    const Detection& d = detections[i];
    switch (out_scores.type) {
      case ANEURALNETWORKS_TENSOR_FLOAT32:
        out_scores.MutableData<float>()[i] = d.score;
        break;
      case ANEURALNETWORKS_TENSOR_FLOAT16:
        out_scores.MutableData<Half>()[i] = Half(d.score);
        break;
      case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
        out_scores.MutableData<uint8_t>()[i] =
            Quantize<uint8_t>(d.score, out_scores.scale, out_scores.zero_point);
        break;
      default:
        out_scores.MutableData<int8_t>()[i] =
            Quantize<int8_t>(d.score, out_scores.scale, out_scores.zero_point);
        break;
    }
    std::memcpy(context.Output(1).data + i * box_bytes,
                boxes.data + (size_t{d.roi} * classes + d.cls) * box_bytes, box_bytes);
    context.Output(2).MutableData<int32_t>()[i] = static_cast<int32_t>(d.cls);
    context.Output(3).MutableData<int32_t>()[i] = images[i];
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(BOX_WITH_NMS_LIMIT, Validate, Prepare, Execute);

}  // namespace mock_nnapi
