// SPDX-License-Identifier: Apache-2.0
// ROI_ALIGN and ROI_POOLING: a fixed-size feature map for each region of interest.
//
// Inputs of both: 0 feature map [batches, height, width, depth] (NHWC; NCHW when the layout is
//   true); 1 rois [num_rois, 4], each [x1, y1, x2, y2] in original-image coordinates with x1 <= x2
//   and y1 <= y2; 2 TENSOR_INT32 [num_rois], the batch index of each box, in [0, batches);
//   3 INT32 output height >= 1; 4 INT32 output width >= 1; 5 height ratio and 6 width ratio (> 0,
//   FLOAT16 for a TENSOR_FLOAT16 map, else FLOAT32): original-image size over feature-map size.
// ROI_ALIGN: 7 INT32 sampling points per bin in height and 8 in width (>= 0; 0: adaptive,
//   ceil(bin size)); 9 BOOL layout. Box edges are divided by the ratios (box size at least 1);
//   each of the out_h x out_w bins averages its sampling points, sampled at the centres of a
//   regular grid over the bin, each bilinearly interpolated from its four neighbours (the point
//   clamped to the map); points more than one pixel outside the map count as 0.
// ROI_POOLING: 7 BOOL layout. Box edges are divided by the ratios and rounded (box size
//   round(x2) - round(x1) + 1, at least 1); bin (i, j) covers rows floor(i * h / out_h) + y1 to
//   ceil((i + 1) * h / out_h) + y1 (exclusive; and likewise columns), clipped to the map, and takes
//   their maximum (logical zero for an empty bin).
// Output 0: [num_rois, out_h, out_w, depth] (NHWC; NCHW when the layout is true), the map's type.
//   ROI_ALIGN's quantised output may have its own scale and zero point; ROI_POOLING's keeps the
//   map's.
// Types: the map TENSOR_FLOAT32 or TENSOR_FLOAT16 with rois of the same type; TENSOR_QUANT8_ASYMM
//   (FL3) or TENSOR_QUANT8_ASYMM_SIGNED (FL4) with TENSOR_QUANT16_ASYMM rois of scale 0.125 and
//   zero point 0 (other parameters fail the execution). Zero rois give an empty output.
#include <cmath>

#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

constexpr float kQuant16Scale = 0.125f;

bool IsAlign(const OperationContext& context) {
  return context.type() == ANEURALNETWORKS_ROI_ALIGN;
}
uint32_t LayoutInput(const OperationContext& context) { return IsAlign(context) ? 9 : 7; }
bool IsNchw(const OperationContext& context) {
  return context.InputScalar<bool>(LayoutInput(context));
}

int InferShape(const OperationContext& context, int error, Dimensions* output) {
  const OperandInfo& map = context.Input(0);
  const OperandInfo& rois = context.Input(1);
  const OperandInfo& batches = context.Input(2);
  NN_CHECK_EQ(map.rank(), 4u, error) << context.name() << " feature map must be 4-D";
  NN_CHECK(rois.rank() == 2 && rois.dim(1) == 4, error)
      << context.name() << " rois must have shape [num_rois, 4], not "
      << DimensionsToString(rois.dimensions);
  NN_CHECK(batches.rank() == 1 && batches.dim(0) == rois.dim(0), error)
      << context.name() << " batch indices must have shape [" << rois.dim(0) << "], not "
      << DimensionsToString(batches.dimensions);
  const int32_t height = context.InputScalar<int32_t>(3);
  const int32_t width = context.InputScalar<int32_t>(4);
  NN_CHECK(height >= 1 && width >= 1, error)
      << context.name() << " output size " << height << " x " << width << " must be positive";
  const bool nchw = IsNchw(context);
  const uint32_t depth = map.dim(nchw ? 1 : 3);
  const uint32_t h = static_cast<uint32_t>(height), w = static_cast<uint32_t>(width);
  *output = nchw ? Dimensions{rois.dim(0), depth, h, w} : Dimensions{rois.dim(0), h, w, depth};
  return ANEURALNETWORKS_NO_ERROR;
}

float RatioInput(const OperationContext& context, uint32_t i) {
  if (context.InputType(i) == ANEURALNETWORKS_FLOAT16) {
    return static_cast<float>(context.InputScalar<Half>(i));
  }
  return context.InputScalar<float>(i);
}

int CheckArguments(const OperationContext& context, int error) {
  for (uint32_t i : {5u, 6u}) {
    if (!context.HasInputValue(i)) continue;
    const float ratio = RatioInput(context, i);
    NN_CHECK(ratio > 0.f, error) << context.name() << " input " << i << " (ratio) " << ratio
                                 << " must be positive";
  }
  for (uint32_t i : {3u, 4u}) {
    if (!context.HasInputValue(i)) continue;
    NN_CHECK_GE(context.InputScalar<int32_t>(i), 1, error)
        << context.name() << " input " << i << " (output size) must be positive";
  }
  if (IsAlign(context)) {
    for (uint32_t i : {7u, 8u}) {
      if (!context.HasInputValue(i)) continue;
      NN_CHECK_GE(context.InputScalar<int32_t>(i), 0, error)
          << context.name() << " input " << i << " (sampling points) must be non-negative";
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  const bool align = IsAlign(context);
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {align ? 10u : 8u}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  const int32_t type = context.InputType(0);
  const bool quantized = IsQuantizedType(type);
  NN_RETURN_IF_ERROR(
      CheckInputType(context, 1, {quantized ? ANEURALNETWORKS_TENSOR_QUANT16_ASYMM : type}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 2, {ANEURALNETWORKS_TENSOR_INT32}));
  const int32_t ratio_type =
      type == ANEURALNETWORKS_TENSOR_FLOAT16 ? ANEURALNETWORKS_FLOAT16 : ANEURALNETWORKS_FLOAT32;
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 3, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 4, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 5, ratio_type));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 6, ratio_type));
  if (align) {
    NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 7, ANEURALNETWORKS_INT32));
    NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 8, ANEURALNETWORKS_INT32));
  }
  const uint32_t layout = LayoutInput(context);
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, layout, ANEURALNETWORKS_BOOL));
  NN_CHECK(!context.IsOmitted(0) && !context.IsOmitted(1) && !context.IsOmitted(2),
           ANEURALNETWORKS_BAD_DATA)
      << context.name() << " inputs 0-2 are not optional";
  if (align) {
    NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  } else {
    NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  }
  NN_RETURN_IF_ERROR(CheckArguments(context, ANEURALNETWORKS_BAD_DATA));
  NN_RETURN_IF_ERROR(shape::CheckInputRanks(context, {4, 2, 1}));
  if (!shape::InputShapesKnown(context, 3)) return ANEURALNETWORKS_NO_ERROR;
  for (uint32_t i : {3u, 4u, layout}) {
    if (!context.HasInputValue(i)) return ANEURALNETWORKS_NO_ERROR;
  }
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, &output));
  return shape::CheckDeclaredOutputShape(context, 0, output);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckArguments(context, ANEURALNETWORKS_OP_FAILED));
  const OperandInfo& map = context.Input(0);
  for (uint32_t dimension : map.dimensions) {
    NN_CHECK(dimension != 0, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " does not accept a zero-sized feature map "
        << DimensionsToString(map.dimensions);
  }
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &output));
  const OperandInfo& rois = context.Input(1);
  if (rois.type == ANEURALNETWORKS_TENSOR_QUANT16_ASYMM) {
    NN_CHECK(rois.scale == kQuant16Scale && rois.zero_point == 0, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " rois must have scale 0.125 and zeroPoint 0, not scale " << rois.scale
        << " and zeroPoint " << rois.zero_point;
  }
  return context.SetOutputShape(0, output);
}

// The feature map as real values, indexed (batch, y, x, channel) in either layout.
struct Map {
  const OperandInfo* operand;
  bool nchw;
  uint32_t height, width, depth;
  size_t Offset(size_t b, size_t y, size_t x, size_t c) const {
    if (nchw) return ((b * depth + c) * height + y) * width + x;
    return ((b * height + y) * width + x) * depth + c;
  }
  float At(size_t b, size_t y, size_t x, size_t c) const {
    const size_t i = Offset(b, y, x, c);
    switch (operand->type) {
      case ANEURALNETWORKS_TENSOR_FLOAT32:
        return operand->Data<float>()[i];
      case ANEURALNETWORKS_TENSOR_FLOAT16:
        return static_cast<float>(operand->Data<Half>()[i]);
      case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
        return Dequantize(operand->Data<uint8_t>()[i], operand->scale, operand->zero_point);
      default:
        return Dequantize(operand->Data<int8_t>()[i], operand->scale, operand->zero_point);
    }
  }
};

// Bilinear interpolation at (y, x), already clamped to the map.
float Bilinear(const Map& map, size_t b, float y, float x, size_t c) {
  const uint32_t y0 = static_cast<uint32_t>(std::floor(y));
  const uint32_t x0 = static_cast<uint32_t>(std::floor(x));
  const uint32_t y1 = std::min(y0 + 1, map.height - 1);
  const uint32_t x1 = std::min(x0 + 1, map.width - 1);
  const float dy = y - static_cast<float>(y0), dx = x - static_cast<float>(x0);
  return (1 - dy) * (1 - dx) * map.At(b, y0, x0, c) + (1 - dy) * dx * map.At(b, y0, x1, c) +
         dy * (1 - dx) * map.At(b, y1, x0, c) + dy * dx * map.At(b, y1, x1, c);
}

int Execute(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& rois = context.Input(1);
  const int32_t* batch_index = context.Input(2).Data<int32_t>();
  const OperandInfo& output = context.Output(0);
  const bool nchw = IsNchw(context);
  const Map map{&input, nchw, input.dim(nchw ? 2 : 1), input.dim(nchw ? 3 : 2),
                input.dim(nchw ? 1 : 3)};
  const uint32_t out_h = static_cast<uint32_t>(context.InputScalar<int32_t>(3));
  const uint32_t out_w = static_cast<uint32_t>(context.InputScalar<int32_t>(4));
  const float height_ratio = RatioInput(context, 5);
  const float width_ratio = RatioInput(context, 6);
  const bool align = IsAlign(context);
  const int32_t batches = static_cast<int32_t>(input.dim(0));
  // Output offsets follow the output layout, which is the map's.
  auto out_offset = [&](size_t r, size_t i, size_t j, size_t c) {
    if (nchw) return ((r * map.depth + c) * out_h + i) * out_w + j;
    return ((r * out_h + i) * out_w + j) * map.depth + c;
  };
  for (size_t r = 0; r < rois.dim(0); ++r) {
    const int32_t b = batch_index[r];
    NN_CHECK(b >= 0 && b < batches, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " box " << r << " has batch index " << b << " outside [0, " << batches
        << ")";
    float x1 = RealElement(rois, 4 * r) / width_ratio;
    float y1 = RealElement(rois, 4 * r + 1) / height_ratio;
    float x2 = RealElement(rois, 4 * r + 2) / width_ratio;
    float y2 = RealElement(rois, 4 * r + 3) / height_ratio;
    NN_CHECK(x1 <= x2 && y1 <= y2, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " box " << r << " is inverted";
    if (align) {
      const float box_w = std::max(x2 - x1, 1.f), box_h = std::max(y2 - y1, 1.f);
      const float bin_w = box_w / out_w, bin_h = box_h / out_h;
      const int32_t ratio_h = context.InputScalar<int32_t>(7);
      const int32_t ratio_w = context.InputScalar<int32_t>(8);
      const uint32_t samples_h = ratio_h > 0 ? ratio_h : static_cast<uint32_t>(std::ceil(bin_h));
      const uint32_t samples_w = ratio_w > 0 ? ratio_w : static_cast<uint32_t>(std::ceil(bin_w));
      const float step_h = bin_h / samples_h, step_w = bin_w / samples_w;
      const float count = static_cast<float>(samples_h * samples_w);
      for (uint32_t i = 0; i < out_h; ++i) {
        for (uint32_t j = 0; j < out_w; ++j) {
          for (uint32_t c = 0; c < map.depth; ++c) {
            float sum = 0;
            for (uint32_t sy = 0; sy < samples_h; ++sy) {
              const float y = y1 + i * bin_h + (sy + 0.5f) * step_h;
              for (uint32_t sx = 0; sx < samples_w; ++sx) {
                const float x = x1 + j * bin_w + (sx + 0.5f) * step_w;
                if (y < -1.f || y > map.height || x < -1.f || x > map.width) continue;
                const float cy = std::min(std::max(y, 0.f), static_cast<float>(map.height - 1));
                const float cx = std::min(std::max(x, 0.f), static_cast<float>(map.width - 1));
                sum += Bilinear(map, b, cy, cx, c);
              }
            }
            StoreRealElement(output, out_offset(r, i, j, c), sum / count);
          }
        }
      }
      continue;
    }
    x1 = std::round(x1);
    y1 = std::round(y1);
    x2 = std::round(x2);
    y2 = std::round(y2);
    const float box_w = std::max(x2 - x1 + 1, 1.f), box_h = std::max(y2 - y1 + 1, 1.f);
    const float bin_w = box_w / out_w, bin_h = box_h / out_h;
    auto clip = [](float v, uint32_t limit) {
      return static_cast<int64_t>(std::min(std::max(v, 0.f), static_cast<float>(limit)));
    };
    for (uint32_t i = 0; i < out_h; ++i) {
      const int64_t row_begin = clip(std::floor(i * bin_h) + y1, map.height);
      const int64_t row_end = clip(std::ceil((i + 1) * bin_h) + y1, map.height);
      for (uint32_t j = 0; j < out_w; ++j) {
        const int64_t col_begin = clip(std::floor(j * bin_w) + x1, map.width);
        const int64_t col_end = clip(std::ceil((j + 1) * bin_w) + x1, map.width);
        for (uint32_t c = 0; c < map.depth; ++c) {
          const size_t at = out_offset(r, i, j, c);
          if (row_begin >= row_end || col_begin >= col_end) {
            StoreRealElement(output, at,
                             0.f);  // logical zero: the zero point for the quantised types
            continue;
          }
          float best = -INFINITY;
          for (int64_t y = row_begin; y < row_end; ++y) {
            for (int64_t x = col_begin; x < col_end; ++x) {
              best = std::max(best, map.At(b, y, x, c));
            }
          }
          StoreRealElement(output, at, best);
        }
      }
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(ROI_ALIGN, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(ROI_POOLING, Validate, Prepare, Execute);

}  // namespace mock_nnapi
