// SPDX-License-Identifier: Apache-2.0
// TRANSPOSE_CONV_2D: the gradient of CONV_2D with respect to its input, as sgemm + col2im.
//
// Inputs (NDK reference; Android's transpose_conv_2d validation and prepare):
//   Explicit padding, 11 inputs: 0 input [N, H, W, C_in]; 1 filter [C_out, kH, kW, C_in];
//   2 bias [C_out]; 3 pad left, 4 pad right, 5 pad top, 6 pad bottom; 7 stride width, 8 stride
//   height; 9 FuseCode; 10 BOOL NCHW layout (required).
//   Implicit padding, 9 inputs: 0-2 as above; 3 TENSOR_INT32 output shape [4] (in the layout's
//   order); 4 PaddingCode; 5 stride width; 6 stride height; 7 FuseCode; 8 BOOL NCHW.
// out[n, iy * stride_h - pad_top + ky, ix * stride_w - pad_left + kx, co] +=
//   input[n, iy, ix, ci] * filter[co, ky, kx, ci]; then + bias and the activation.
// Output size: in * stride + filter - stride - head - tail. Implicit SAME padding is computed
// against the requested output size and its tail may be negative (the output then fits the last
// stride exactly); VALID pads nothing. Left and top padding must be >= 0; right and bottom may
// be negative (Android). The output-shape tensor only steers the padding.
// Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM (FL3), TENSOR_QUANT8_ASYMM_SIGNED
// (FL4). Quantised filters have the input's type or are TENSOR_QUANT8_SYMM_PER_CHANNEL with
// channelDim 0; bias rules as CONV_2D.
#include <vector>

#include "../kernels/requantize.h"
#include "conv_common.h"
#include "gemm.h"

namespace mock_nnapi {
namespace {

using conv::ArgumentIndices;
using conv::Parameters;
using conv::Shape4;

constexpr size_t kColumnTileBytes = size_t{16} << 20;

ArgumentIndices Indices(const OperationContext& context) {
  ArgumentIndices indices;
  indices.explicit_padding = context.InputCount() == 11;
  if (indices.explicit_padding) {
    indices.pad_left = 3;
    indices.stride_w = 7;
    indices.stride_h = 8;
    indices.activation = 9;
    indices.layout = 10;
  } else {
    indices.output_shape = 3;
    indices.padding_code = 4;
    indices.stride_w = 5;
    indices.stride_h = 6;
    indices.activation = 7;
    indices.layout = 8;
  }
  return indices;
}

int ValidateStaticShapes(const OperationContext& context, const ArgumentIndices& indices) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& filter = context.Input(1);
  const OperandInfo& bias = context.Input(2);
  NN_RETURN_IF_ERROR(conv::CheckRankIs(context, input, 4, "input rank"));
  NN_RETURN_IF_ERROR(conv::CheckRankIs(context, filter, 4, "filter rank"));
  if (indices.output_shape >= 0) {
    const OperandInfo& output_shape = context.Input(indices.output_shape);
    NN_RETURN_IF_ERROR(conv::CheckRankIs(context, output_shape, 1, "output shape rank"));
    if (output_shape.rank_known && output_shape.dim(0) != 0) {
      NN_CHECK_EQ(output_shape.dim(0), 4u, ANEURALNETWORKS_BAD_DATA)
          << context.name() << " output shape must have 4 elements";
    }
  }
  if (!filter.rank_known) return ANEURALNETWORKS_NO_ERROR;
  if (bias.rank_known && bias.rank() == 1 && bias.dim(0) != 0 && filter.dim(0) != 0) {
    NN_CHECK_EQ(bias.dim(0), filter.dim(0), ANEURALNETWORKS_BAD_DATA)
        << context.name() << " bias length";
  }
  if (!context.HasInputValue(indices.layout) || !input.rank_known) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  const bool nchw = context.InputScalar<uint8_t>(indices.layout) != 0;
  const uint32_t in_channels = conv::ToNhwc(input.dimensions, nchw).channels;
  if (in_channels != 0 && filter.dim(3) != 0) {
    NN_CHECK_EQ(filter.dim(3), in_channels, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " filter depth must equal the input depth";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {9, 11}, 1));
  NN_RETURN_IF_ERROR(CheckInputType(
      context, 0,
      {ANEURALNETWORKS_TENSOR_FLOAT32, ANEURALNETWORKS_TENSOR_FLOAT16,
       ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED}));
  const OperandInfo& input = context.Input(0);
  const OperandInfo& filter = context.Input(1);
  const bool quantized = IsQuantizedType(input.type);
  if (quantized) NN_RETURN_IF_ERROR(conv::CheckQuantizedFilter(context, 1, 0));
  const ArgumentIndices indices = Indices(context);
  NN_RETURN_IF_ERROR(conv::CheckInputTypes(
      context, conv::ExpectedInputTypes(indices, input.type, quantized ? filter.type : input.type,
                                        quantized ? ANEURALNETWORKS_TENSOR_INT32 : input.type)));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  NN_RETURN_IF_ERROR(conv::CheckBias(context, 0, 1, 2));
  NN_RETURN_IF_ERROR(conv::CheckArgumentValues(context, indices, true));
  NN_RETURN_IF_ERROR(ValidateStaticShapes(context, indices));
  context.RequireFeatureLevel(
      input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED ? kFeatureLevel4 : kFeatureLevel3);
  return ANEURALNETWORKS_NO_ERROR;
}

using conv::Geometry;

// The shared part (conv::ReadGeometry), then the transposed convolution's own padding and output
// size: implicit padding against the requested output shape, a tail that may be negative.
int ResolveGeometry(const OperationContext& context, Geometry* geometry) {
  const OperandInfo& filter = context.Input(1);
  const OperandInfo& bias = context.Input(2);
  const ArgumentIndices indices = Indices(context);
  NN_RETURN_IF_ERROR(conv::ReadGeometry(context, indices, true, geometry));
  Parameters& p = geometry->params;
  const Shape4& in = geometry->input;
  const uint32_t out_channels = filter.dim(0);
  NN_CHECK_EQ(filter.dim(3), in.channels, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " filter depth must equal the input depth";
  NN_CHECK_EQ(bias.dim(0), out_channels, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " bias length";
  NN_CHECK(in.height > 0 && in.width > 0 && in.channels > 0 && out_channels > 0 &&
               geometry->filter_height > 0 && geometry->filter_width > 0,
           ANEURALNETWORKS_OP_FAILED)
      << context.name() << " only the batch may be zero-sized";
  if (!indices.explicit_padding) {
    const OperandInfo& shape = context.Input(indices.output_shape);
    NN_CHECK(shape.rank() == 1 && shape.dim(0) == 4, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " output shape must be a TENSOR_INT32 of 4 elements";
    const int32_t* requested = shape.Data<int32_t>();
    const int32_t requested_h = p.nchw ? requested[2] : requested[1];
    const int32_t requested_w = p.nchw ? requested[3] : requested[2];
    conv::ImplicitPaddingTranspose(p.padding_code, requested_w, p.stride_w, geometry->filter_width,
                                   &p.pad_left, &p.pad_right);
    conv::ImplicitPaddingTranspose(p.padding_code, requested_h, p.stride_h, geometry->filter_height,
                                   &p.pad_top, &p.pad_bottom);
  }
  NN_CHECK(p.pad_left >= 0 && p.pad_top >= 0, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " left and top padding must not be negative";
  const int64_t out_w = conv::TransposeConvOutputSize(in.width, geometry->filter_width, p.stride_w,
                                                      p.pad_left, p.pad_right);
  const int64_t out_h = conv::TransposeConvOutputSize(in.height, geometry->filter_height,
                                                      p.stride_h, p.pad_top, p.pad_bottom);
  NN_CHECK(out_w > 0 && out_h > 0 && out_w <= UINT32_MAX && out_h <= UINT32_MAX,
           ANEURALNETWORKS_OP_FAILED)
      << context.name() << " output size " << out_h << " x " << out_w;
  geometry->output = {in.batches, static_cast<uint32_t>(out_h), static_cast<uint32_t>(out_w),
                      out_channels};
  return ANEURALNETWORKS_NO_ERROR;
}

int Prepare(OperationContext& context) {
  Geometry geometry;
  NN_RETURN_IF_ERROR(ResolveGeometry(context, &geometry));
  return context.SetOutputShape(0, conv::FromNhwc(geometry.output, geometry.params.nchw));
}

// The filter [C_out, kH, kW, C_in] reordered to rows (ky, kx, co) of C_in values, so that one
// input pixel's products for a tap are contiguous over the output channels.
std::vector<float> TapMajorFilter(const float* filter, const Geometry& g) {
  const size_t out_channels = g.output.channels;
  const size_t in_channels = g.input.channels;
  const size_t taps = size_t{g.filter_height} * g.filter_width;
  std::vector<float> reordered(taps * out_channels * in_channels);
  for (size_t co = 0; co < out_channels; ++co) {
    for (size_t t = 0; t < taps; ++t) {
      const float* src = filter + (co * taps + t) * in_channels;
      std::copy(src, src + in_channels, reordered.data() + (t * out_channels + co) * in_channels);
    }
  }
  return reordered;
}

// For every tile of input pixels: gemm(first_pixel, pixels, columns) fills columns[pixel, (tap,
// co)] = sum_ci input * filter; the products are then added into the NHWC output (col2im).
template <typename T, typename Gemm>
void TransposeConvolve(const Geometry& g, Gemm&& gemm, T* output) {
  const Parameters& p = g.params;
  const size_t out_channels = g.output.channels;
  const size_t taps = size_t{g.filter_height} * g.filter_width;
  const size_t columns_per_pixel = taps * out_channels;
  const size_t pixels = size_t{g.input.batches} * g.input.height * g.input.width;
  const size_t tile =
      std::min(pixels, std::max<size_t>(1, kColumnTileBytes / (columns_per_pixel * sizeof(T))));
  std::vector<T> columns(tile * columns_per_pixel);
  std::fill(output, output + g.output.Elements(), T{0});
  for (size_t first = 0; first < pixels; first += tile) {
    const size_t count = std::min(tile, pixels - first);
    gemm(first, count, columns.data());
    for (size_t i = 0; i < count; ++i) {
      const size_t pixel = first + i;
      const int64_t ix = pixel % g.input.width;
      const int64_t iy = (pixel / g.input.width) % g.input.height;
      const size_t n = pixel / (size_t{g.input.width} * g.input.height);
      const T* products = columns.data() + i * columns_per_pixel;
      for (uint32_t ky = 0; ky < g.filter_height; ++ky) {
        const int64_t oy = iy * p.stride_h - p.pad_top + ky;
        if (oy < 0 || oy >= g.output.height) continue;
        for (uint32_t kx = 0; kx < g.filter_width; ++kx) {
          const int64_t ox = ix * p.stride_w - p.pad_left + kx;
          if (ox < 0 || ox >= g.output.width) continue;
          T* out = output + ((n * g.output.height + oy) * g.output.width + ox) * out_channels;
          const T* tap = products + (size_t{ky} * g.filter_width + kx) * out_channels;
          for (size_t c = 0; c < out_channels; ++c) out[c] += tap[c];
        }
      }
    }
  }
}

int Execute(OperationContext& context) {
  Geometry geometry;
  NN_RETURN_IF_ERROR(ResolveGeometry(context, &geometry));
  if (geometry.output.Elements() == 0) return ANEURALNETWORKS_NO_ERROR;
  const OperandInfo& input = context.Input(0);
  const OperandInfo& filter = context.Input(1);
  const OperandInfo& bias = context.Input(2);
  const OperandInfo& output = context.Output(0);
  const Parameters& p = geometry.params;
  const conv::NhwcFloatInput in(input, p.nchw);
  const conv::FloatValues weights(filter);
  const std::vector<float> tap_major = TapMajorFilter(weights.data(), geometry);
  const size_t in_channels = geometry.input.channels;
  const size_t columns =
      size_t{geometry.filter_height} * geometry.filter_width * geometry.output.channels;
  if (!IsQuantizedType(input.type)) {
    const conv::FloatValues bias_values(bias);
    conv::FloatOutput out(output, geometry.output, p.nchw);
    TransposeConvolve<float>(
        geometry,
        [&](size_t first, size_t count, float* products) {
          gemm::Sgemm(gemm::Transpose::kNo, gemm::Transpose::kYes, count, columns, in_channels, 1.f,
                      in.data() + first * in_channels, in_channels, tap_major.data(), in_channels,
                      0.f, products, columns);
        },
        out.data());
    out.Finish(bias_values.data(), p.activation);
    return ANEURALNETWORKS_NO_ERROR;
  }
  const float max_input = conv::MaxAbsOffset(input), max_filter = conv::MaxAbsOffset(filter);
  std::vector<int32_t> accumulators(geometry.output.Elements());
  TransposeConvolve<int32_t>(
      geometry,
      [&](size_t first, size_t count, int32_t* products) {
        gemm::IntegerGemm(gemm::Transpose::kNo, gemm::Transpose::kYes, count, columns, in_channels,
                          in.data() + first * in_channels, in_channels, max_input, tap_major.data(),
                          in_channels, max_filter, products, columns);
      },
      accumulators.data());
  conv::StoreQuantizedOutput(
      accumulators.data(), geometry.output, bias.Data<int32_t>(),
      conv::OutputMultipliers(input, filter, output, geometry.output.channels), p.activation,
      output, p.nchw);
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(TRANSPOSE_CONV_2D, Validate, Prepare, Execute);

}  // namespace mock_nnapi
