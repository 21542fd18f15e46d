// SPDX-License-Identifier: Apache-2.0
// RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR: resize the spatial dimensions of a
// 4-D image tensor.
//
// Inputs: 0 tensor [batches, height, width, channels] (NHWC; NCHW when input 3 is true);
//   1 output width and 2 output height: INT32 sizes, or scales (FLOAT32, FLOAT16 for
//   TENSOR_FLOAT16 input; since FL3) giving floor(size * scale); both inputs have the same type;
//   3 optional BOOL layout, true for NCHW (FL3); 4 optional BOOL align_corners and 5 optional BOOL
//   half_pixel_centers (FL4; not both true). RESIZE_BILINEAR takes 3 to 6 inputs,
//   RESIZE_NEAREST_NEIGHBOR 4 to 6.
// Output: [batches, new_height, new_width, channels] (or NCHW) of the input's type, scale and zero
//   point. Zero batches are accepted; height, width and channels must be positive.
// Types: TENSOR_FLOAT32 (FL1 for RESIZE_BILINEAR), TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM (FL3),
//   TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// Sampling (TensorFlow's, as Android implements it), per spatial dimension with
//   scale = align_corners && out > 1 ? (in - 1) / (out - 1) : in / out:
//   bilinear: x = half_pixel ? (o + 0.5) * scale - 0.5 : o * scale, interpolating between
//     max(floor(x), 0) and min(ceil(x), in - 1); quantised values are interpolated as raw values
//     and rounded to nearest.
//   nearest: x = half_pixel ? (o + 0.5) * scale : o * scale, index = align_corners ? round(x) :
//     floor(x), clamped to [0, in - 1].
// Coordinates are computed in single precision, like Android's CPU implementation.
#include <cmath>
#include <type_traits>

#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

constexpr uint32_t kLayout = 3;
constexpr uint32_t kAlignCorners = 4;
constexpr uint32_t kHalfPixelCenters = 5;

bool OptionalFlag(const OperationContext& context, uint32_t i) {
  return i < context.InputCount() && !context.IsOmitted(i) && context.InputScalar<bool>(i);
}

struct Layout {
  uint32_t height = 1, width = 2, channels = 3;
};

Layout LayoutOf(bool nchw) { return nchw ? Layout{2, 3, 1} : Layout{1, 2, 3}; }

int InferShape(const OperationContext& context, int error, Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  NN_CHECK_EQ(input.size(), 4u, error) << context.name() << " input must be 4-D";
  const Layout layout = LayoutOf(OptionalFlag(context, kLayout));
  const bool align_corners = OptionalFlag(context, kAlignCorners);
  const bool half_pixel = OptionalFlag(context, kHalfPixelCenters);
  NN_CHECK(!(align_corners && half_pixel), error)
      << context.name() << " align_corners and half_pixel_centers cannot both be true";
  const uint32_t in_height = input[layout.height];
  const uint32_t in_width = input[layout.width];
  NN_CHECK(in_height > 0 && in_width > 0 && input[layout.channels] > 0, error)
      << context.name() << " only the batch dimension may be zero: " << DimensionsToString(input);
  int64_t height = 0;
  int64_t width = 0;
  switch (context.InputType(2)) {
    case ANEURALNETWORKS_INT32:
      width = context.InputScalar<int32_t>(1);
      height = context.InputScalar<int32_t>(2);
      break;
    case ANEURALNETWORKS_FLOAT32:
      width = static_cast<int64_t>(
          std::floor(static_cast<float>(in_width) * context.InputScalar<float>(1)));
      height = static_cast<int64_t>(
          std::floor(static_cast<float>(in_height) * context.InputScalar<float>(2)));
      break;
    default:
      width = static_cast<int64_t>(std::floor(static_cast<float>(in_width) *
                                              static_cast<float>(context.InputScalar<Half>(1))));
      height = static_cast<int64_t>(std::floor(static_cast<float>(in_height) *
                                               static_cast<float>(context.InputScalar<Half>(2))));
  }
  NN_CHECK(height > 0 && width > 0, error)
      << context.name() << " output size " << height << "x" << width << " must be positive";
  *output = input;
  (*output)[layout.height] = static_cast<uint32_t>(height);
  (*output)[layout.width] = static_cast<uint32_t>(width);
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  const bool bilinear = context.type() == ANEURALNETWORKS_RESIZE_BILINEAR;
  if (bilinear) {
    NN_RETURN_IF_ERROR(CheckOperandCounts(context, {3, 4, 5, 6}, 1));
  } else {
    NN_RETURN_IF_ERROR(CheckOperandCounts(context, {4, 5, 6}, 1));
    context.RequireFeatureLevel(kFeatureLevel3);
  }
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  const int32_t type = context.InputType(0);
  const int32_t scalar = context.InputType(2);
  if (scalar != ANEURALNETWORKS_INT32) {
    context.RequireFeatureLevel(kFeatureLevel3);
    const int32_t expected =
        type == ANEURALNETWORKS_TENSOR_FLOAT16 ? ANEURALNETWORKS_FLOAT16 : ANEURALNETWORKS_FLOAT32;
    NN_CHECK_EQ(scalar, expected, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " scale inputs for " << OperandTypeName(type) << " must be "
        << OperandTypeName(expected);
  }
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 1, scalar));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 2, scalar));
  for (uint32_t i = kLayout; i < context.InputCount(); ++i) {
    NN_RETURN_IF_ERROR(CheckInputType(context, i, {ANEURALNETWORKS_BOOL}));
  }
  if (context.InputCount() > kLayout) context.RequireFeatureLevel(kFeatureLevel3);
  if (context.InputCount() > kAlignCorners) context.RequireFeatureLevel(kFeatureLevel4);
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  const OperandInfo& input = context.Input(0);
  if (input.rank_known) {
    NN_CHECK_EQ(input.rank(), 4u, ANEURALNETWORKS_BAD_DATA) << context.name() << " input rank";
  }
  for (uint32_t i = 1; i < context.InputCount(); ++i) {
    if (!context.HasInputValue(i)) return ANEURALNETWORKS_NO_ERROR;
  }
  if (!shape::ShapeKnown(input)) return ANEURALNETWORKS_NO_ERROR;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, &output));
  return shape::CheckDeclaredOutputShape(context, 0, output);
}

int Prepare(OperationContext& context) {
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &output));
  return context.SetOutputShape(0, output);
}

float ResizeScale(uint32_t in, uint32_t out, bool align_corners) {
  return align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

// Element offsets of one image position in either layout.
struct Strides {
  size_t batch, y, x, channel;
};

Strides StridesOf(const Dimensions& dims, bool nchw) {
  const std::vector<int64_t> dense = indexing::DenseStrides(dims);
  const Layout layout = LayoutOf(nchw);
  return {static_cast<size_t>(dense[0]), static_cast<size_t>(dense[layout.height]),
          static_cast<size_t>(dense[layout.width]), static_cast<size_t>(dense[layout.channels])};
}

// One interpolation axis of the bilinear kernel.
struct Tap {
  uint32_t low, high;
  float weight;  // of `high`
};

std::vector<Tap> BilinearTaps(uint32_t in, uint32_t out, bool align_corners, bool half_pixel) {
  const float scale = ResizeScale(in, out, align_corners);
  std::vector<Tap> taps(out);
  for (uint32_t o = 0; o < out; ++o) {
    const float position =
        half_pixel ? (static_cast<float>(o) + 0.5f) * scale - 0.5f : static_cast<float>(o) * scale;
    const int64_t low = std::max<int64_t>(static_cast<int64_t>(std::floor(position)), 0);
    const int64_t high =
        std::min<int64_t>(static_cast<int64_t>(std::ceil(position)), static_cast<int64_t>(in) - 1);
    taps[o] = {static_cast<uint32_t>(low), static_cast<uint32_t>(high),
               position - static_cast<float>(low)};
  }
  return taps;
}

std::vector<uint32_t> NearestIndices(uint32_t in, uint32_t out, bool align_corners,
                                     bool half_pixel) {
  const float scale = ResizeScale(in, out, align_corners);
  std::vector<uint32_t> indices(out);
  for (uint32_t o = 0; o < out; ++o) {
    const float position =
        half_pixel ? (static_cast<float>(o) + 0.5f) * scale : static_cast<float>(o) * scale;
    int64_t index =
        static_cast<int64_t>(align_corners ? std::round(position) : std::floor(position));
    index = std::min<int64_t>(std::max<int64_t>(index, 0), static_cast<int64_t>(in) - 1);
    indices[o] = static_cast<uint32_t>(index);
  }
  return indices;
}

template <typename T>
T FromFloat(float value) {
  if constexpr (std::is_integral_v<T>) {
    const float low = static_cast<float>(std::numeric_limits<T>::min());
    const float high = static_cast<float>(std::numeric_limits<T>::max());
    return static_cast<T>(std::min(std::max(std::round(value), low), high));
  } else {
    return T(value);
  }
}

template <typename T>
void Bilinear(const OperandInfo& input, const OperandInfo& output, bool nchw, bool align_corners,
              bool half_pixel) {
  const Layout layout = LayoutOf(nchw);
  const Dimensions& in = input.dimensions;
  const Dimensions& out = output.dimensions;
  const std::vector<Tap> rows =
      BilinearTaps(in[layout.height], out[layout.height], align_corners, half_pixel);
  const std::vector<Tap> columns =
      BilinearTaps(in[layout.width], out[layout.width], align_corners, half_pixel);
  const Strides is = StridesOf(in, nchw);
  const Strides os = StridesOf(out, nchw);
  const T* source = input.Data<T>();
  T* destination = output.MutableData<T>();
  const uint32_t channels = in[layout.channels];
  for (uint32_t b = 0; b < in[0]; ++b) {
    for (uint32_t y = 0; y < rows.size(); ++y) {
      const Tap& r = rows[y];
      for (uint32_t x = 0; x < columns.size(); ++x) {
        const Tap& c = columns[x];
        const T* top_left = source + b * is.batch + r.low * is.y + c.low * is.x;
        const T* top_right = source + b * is.batch + r.low * is.y + c.high * is.x;
        const T* bottom_left = source + b * is.batch + r.high * is.y + c.low * is.x;
        const T* bottom_right = source + b * is.batch + r.high * is.y + c.high * is.x;
        T* target = destination + b * os.batch + y * os.y + x * os.x;
        for (uint32_t ch = 0; ch < channels; ++ch) {
          const size_t i = ch * is.channel;
          const float top = static_cast<float>(top_left[i]) * (1 - c.weight) +
                            static_cast<float>(top_right[i]) * c.weight;
          const float bottom = static_cast<float>(bottom_left[i]) * (1 - c.weight) +
                               static_cast<float>(bottom_right[i]) * c.weight;
          target[ch * os.channel] = FromFloat<T>(top * (1 - r.weight) + bottom * r.weight);
        }
      }
    }
  }
}

// Nearest neighbour is pure data movement: element size only.
void Nearest(const OperandInfo& input, const OperandInfo& output, bool nchw, bool align_corners,
             bool half_pixel) {
  const Layout layout = LayoutOf(nchw);
  const Dimensions& in = input.dimensions;
  const Dimensions& out = output.dimensions;
  const std::vector<uint32_t> rows =
      NearestIndices(in[layout.height], out[layout.height], align_corners, half_pixel);
  const std::vector<uint32_t> columns =
      NearestIndices(in[layout.width], out[layout.width], align_corners, half_pixel);
  const size_t element = shape::ElementBytes(input);
  const Strides is = StridesOf(in, nchw);
  const Strides os = StridesOf(out, nchw);
  const uint32_t channels = in[layout.channels];
  for (uint32_t b = 0; b < in[0]; ++b) {
    for (uint32_t ch = 0; ch < (nchw ? channels : 1u); ++ch) {
      for (uint32_t y = 0; y < rows.size(); ++y) {
        for (uint32_t x = 0; x < columns.size(); ++x) {
          const size_t from = b * is.batch + ch * is.channel + rows[y] * is.y + columns[x] * is.x;
          const size_t to = b * os.batch + ch * os.channel + y * os.y + x * os.x;
          // NHWC: the whole channel vector is contiguous.
          std::memcpy(output.data + to * element, input.data + from * element,
                      (nchw ? 1 : channels) * element);
        }
      }
    }
  }
}

int Execute(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  if (indexing::Product(output.dimensions) == 0) return ANEURALNETWORKS_NO_ERROR;
  const bool nchw = OptionalFlag(context, kLayout);
  const bool align_corners = OptionalFlag(context, kAlignCorners);
  const bool half_pixel = OptionalFlag(context, kHalfPixelCenters);
  if (context.type() == ANEURALNETWORKS_RESIZE_NEAREST_NEIGHBOR) {
    Nearest(input, output, nchw, align_corners, half_pixel);
    return ANEURALNETWORKS_NO_ERROR;
  }
  switch (input.type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      Bilinear<float>(input, output, nchw, align_corners, half_pixel);
      break;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      Bilinear<Half>(input, output, nchw, align_corners, half_pixel);
      break;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      Bilinear<uint8_t>(input, output, nchw, align_corners, half_pixel);
      break;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      Bilinear<int8_t>(input, output, nchw, align_corners, half_pixel);
      break;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED)
          << context.name() << ": unsupported type " << OperandTypeName(input.type);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(RESIZE_BILINEAR, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(RESIZE_NEAREST_NEIGHBOR, Validate, Prepare, Execute);

}  // namespace mock_nnapi
