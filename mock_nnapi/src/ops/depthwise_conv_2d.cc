// SPDX-License-Identifier: Apache-2.0
// DEPTHWISE_CONV_2D: per-channel 2-D convolution with a depth multiplier, as a direct NHWC loop
// (it is not GEMM-shaped): every output pixel accumulates its valid filter taps over contiguous
// channel blocks held in registers (fp32, multiplier 1, 3x3 and 5x5 filters at strides 1 and 2:
// four adjacent pixels at a time, sharing their input loads); rows of output pixels are split
// across threads. Quantised types run the exact integer kernel of depthwise_quantized.h.
//
// Inputs (NDK reference; Android's depthwise_conv_2d validation):
//   Explicit padding, 11, 12 or 14 inputs: 0 input [N, H, W, C_in]; 1 filter [1, kH, kW, C_out];
//   2 bias [C_out]; 3 pad left, 4 pad right, 5 pad top, 6 pad bottom; 7 stride width, 8 stride
//   height; 9 depth multiplier; 10 FuseCode; 11 optional BOOL NCHW; 12, 13 optional dilation
//   width, height.
//   Implicit padding, 8, 9 or 11 inputs: 0-2 as above; 3 PaddingCode; 4 stride width, 5 stride
//   height; 6 depth multiplier; 7 FuseCode; 8 optional NCHW; 9, 10 optional dilation.
//   The valid counts are {8, 9, 11, 12, 14}: 10 and 13 (a single dilation factor) are rejected.
//   Padding is explicit when there are 11 or more inputs and input 8 is INT32.
// C_out = C_in * depth_multiplier; output channel c reads input channel c / depth_multiplier.
// Types as CONV_2D: TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL1), TENSOR_FLOAT16 (FL3),
// TENSOR_QUANT8_ASYMM_SIGNED (FL4); quantised filters have the input's type or are
// TENSOR_QUANT8_SYMM_PER_CHANNEL with channelDim 3 (FL3); bias rules as CONV_2D. FL3 is also
// needed for the layout or dilation inputs and for a QUANT8_ASYMM output scale <= input_scale *
// filter_scale. Every padding must be smaller than the effective filter size (Android's prepare).
#include <memory>

#include "../kernels/depthwise_quantized.h"
#include "../kernels/half_bands.h"
#include "../kernels/requantize.h"
#include "conv_common.h"
#include "gemm.h"

namespace mock_nnapi {
namespace {

using conv::ArgumentIndices;
using conv::Parameters;
using conv::Shape4;

ArgumentIndices Indices(const OperationContext& context) {
  const uint32_t count = context.InputCount();
  ArgumentIndices indices;
  indices.explicit_padding = count >= 11 && context.InputType(8) == ANEURALNETWORKS_INT32;
  if (indices.explicit_padding) {
    indices.pad_left = 3;
    indices.stride_w = 7;
    indices.stride_h = 8;
    indices.extra = 9;
    indices.activation = 10;
    if (count >= 12) indices.layout = 11;
    if (count == 14) {
      indices.dilation_w = 12;
      indices.dilation_h = 13;
    }
  } else {
    indices.padding_code = 3;
    indices.stride_w = 4;
    indices.stride_h = 5;
    indices.extra = 6;
    indices.activation = 7;
    if (count >= 9) indices.layout = 8;
    if (count == 11) {
      indices.dilation_w = 9;
      indices.dilation_h = 10;
    }
  }
  return indices;
}

int ValidateStaticShapes(const OperationContext& context, const ArgumentIndices& indices) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& filter = context.Input(1);
  const OperandInfo& bias = context.Input(2);
  NN_RETURN_IF_ERROR(conv::CheckRankIs(context, input, 4, "input rank"));
  NN_RETURN_IF_ERROR(conv::CheckRankIs(context, filter, 4, "filter rank"));
  if (!filter.rank_known) return ANEURALNETWORKS_NO_ERROR;
  NN_CHECK(filter.dim(0) == 1 || filter.dim(0) == 0, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " filter must be [1, kH, kW, C_out]";
  const uint32_t out_channels = filter.dim(3);
  if (bias.rank_known && bias.rank() == 1 && bias.dim(0) != 0 && out_channels != 0) {
    NN_CHECK_EQ(bias.dim(0), out_channels, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " bias length";
  }
  const bool layout_known = indices.layout < 0 || context.HasInputValue(indices.layout);
  if (!layout_known || !context.HasInputValue(indices.extra) || !input.rank_known) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  const bool nchw = indices.layout >= 0 && context.InputScalar<uint8_t>(indices.layout) != 0;
  const uint32_t in_channels = conv::ToNhwc(input.dimensions, nchw).channels;
  const int64_t multiplier = context.InputScalar<int32_t>(indices.extra);
  if (in_channels != 0 && out_channels != 0) {
    NN_CHECK_EQ(in_channels * multiplier, int64_t{out_channels}, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input depth * depth multiplier must equal the output depth";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {8, 9, 11, 12, 14}, 1));
  NN_RETURN_IF_ERROR(CheckInputType(
      context, 0,
      {ANEURALNETWORKS_TENSOR_FLOAT32, ANEURALNETWORKS_TENSOR_FLOAT16,
       ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED}));
  const OperandInfo& input = context.Input(0);
  const OperandInfo& filter = context.Input(1);
  const bool quantized = IsQuantizedType(input.type);
  if (quantized) NN_RETURN_IF_ERROR(conv::CheckQuantizedFilter(context, 1, 3));
  const ArgumentIndices indices = Indices(context);
  NN_RETURN_IF_ERROR(conv::CheckInputTypes(
      context, conv::ExpectedInputTypes(indices, input.type, quantized ? filter.type : input.type,
                                        quantized ? ANEURALNETWORKS_TENSOR_INT32 : input.type)));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  NN_RETURN_IF_ERROR(conv::CheckBias(context, 0, 1, 2));
  NN_RETURN_IF_ERROR(conv::CheckArgumentValues(context, indices, false));
  NN_RETURN_IF_ERROR(ValidateStaticShapes(context, indices));

  const bool per_channel = filter.type == ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL;
  if (input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED) {
    context.RequireFeatureLevel(kFeatureLevel4);
  } else if (input.type == ANEURALNETWORKS_TENSOR_FLOAT16 || per_channel || indices.layout >= 0 ||
             indices.dilation_w >= 0) {
    context.RequireFeatureLevel(kFeatureLevel3);
  } else if (input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM &&
             !(context.Output(0).scale > input.scale * filter.scale)) {
    context.RequireFeatureLevel(kFeatureLevel3);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

struct Geometry : conv::Geometry {
  uint32_t multiplier = 1;
};

int ResolveGeometry(const OperationContext& context, Geometry* geometry) {
  const OperandInfo& filter = context.Input(1);
  const OperandInfo& bias = context.Input(2);
  const ArgumentIndices indices = Indices(context);
  NN_RETURN_IF_ERROR(conv::ReadGeometry(context, indices, false, geometry));
  NN_CHECK_EQ(filter.dim(0), 1u, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " filter must be [1, kH, kW, C_out]";
  geometry->multiplier = static_cast<uint32_t>(geometry->params.extra);
  const Shape4& in = geometry->input;
  const uint32_t out_channels = filter.dim(3);
  NN_CHECK_EQ(uint64_t{in.channels} * geometry->multiplier, out_channels, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " input depth * depth multiplier must equal the output depth";
  NN_CHECK_EQ(bias.dim(0), out_channels, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " bias length";
  NN_CHECK(in.height > 0 && in.width > 0 && in.channels > 0 && geometry->filter_height > 0 &&
               geometry->filter_width > 0,
           ANEURALNETWORKS_OP_FAILED)
      << context.name() << " only the batch may be zero-sized";
  return conv::ResolveConvOutput(context, indices.explicit_padding, out_channels, geometry);
}

int Prepare(OperationContext& context) {
  Geometry geometry;
  NN_RETURN_IF_ERROR(ResolveGeometry(context, &geometry));
  return context.SetOutputShape(0, conv::FromNhwc(geometry.output, geometry.params.nchw));
}

// Channels accumulated together in registers.
constexpr size_t kChannelBlock = 16;

// Sums of one output pixel over its valid taps (input offsets, filter offsets): multiplier 1.
template <typename T>
inline void AccumulatePixel(const T* __restrict__ input, const T* __restrict__ filter,
                            const size_t* input_offsets, const size_t* filter_offsets, size_t taps,
                            size_t channels, T* __restrict__ out) {
  size_t c = 0;
  for (; c + kChannelBlock <= channels; c += kChannelBlock) {
    T acc[kChannelBlock] = {};
    for (size_t t = 0; t < taps; ++t) {
      const T* x = input + input_offsets[t] + c;
      const T* f = filter + filter_offsets[t] + c;
      for (size_t i = 0; i < kChannelBlock; ++i) acc[i] += x[i] * f[i];
    }
    for (size_t i = 0; i < kChannelBlock; ++i) out[c + i] = acc[i];
  }
  for (; c < channels; ++c) {
    T acc = 0;
    for (size_t t = 0; t < taps; ++t)
      acc += input[input_offsets[t] + c] * filter[filter_offsets[t] + c];
    out[c] = acc;
  }
}

// The same with a depth multiplier: output channel c reads input channel c / multiplier.
template <typename T>
inline void AccumulatePixelMultiplier(const T* input, const T* filter, const size_t* input_offsets,
                                      const size_t* filter_offsets, size_t taps, size_t in_channels,
                                      size_t multiplier, T* out) {
  const size_t out_channels = in_channels * multiplier;
  for (size_t c = 0; c < out_channels; ++c) out[c] = 0;
  for (size_t t = 0; t < taps; ++t) {
    const T* x = input + input_offsets[t];
    const T* f = filter + filter_offsets[t];
    for (size_t ic = 0; ic < in_channels; ++ic) {
      const T value = x[ic];
      T* o = out + ic * multiplier;
      const T* w = f + ic * multiplier;
      for (size_t m = 0; m < multiplier; ++m) o[m] += value * w[m];
    }
  }
}

// output[n, oy, ox, c] = sum over valid taps of input[n, iy, ix, c / multiplier] *
// filter[0, ky, kx, c] (no bias), for T = float or int32 (offset-subtracted quantised values).
template <typename T>
void Depthwise(const Geometry& g, const T* input, const T* filter, T* output) {
  const Parameters& p = g.params;
  const size_t rows = size_t{g.output.batches} * g.output.height;
  const size_t out_channels = g.output.channels;
  const size_t taps_total = size_t{g.filter_height} * g.filter_width;
  gemm::ParallelFor(
      rows, size_t{g.output.width} * taps_total * out_channels, [&](size_t begin, size_t end) {
        std::vector<size_t> input_offsets(taps_total);
        std::vector<size_t> filter_offsets(taps_total);
        for (size_t row = begin; row < end; ++row) {
          const size_t n = row / g.output.height;
          const int64_t oy = row % g.output.height;
          for (uint32_t ox = 0; ox < g.output.width; ++ox) {
            size_t taps = 0;
            for (uint32_t ky = 0; ky < g.filter_height; ++ky) {
              const int64_t iy = oy * p.stride_h - p.pad_top + int64_t{ky} * p.dilation_h;
              if (iy < 0 || iy >= g.input.height) continue;
              for (uint32_t kx = 0; kx < g.filter_width; ++kx) {
                const int64_t ix =
                    int64_t{ox} * p.stride_w - p.pad_left + int64_t{kx} * p.dilation_w;
                if (ix < 0 || ix >= g.input.width) continue;
                input_offsets[taps] =
                    ((n * g.input.height + iy) * g.input.width + ix) * g.input.channels;
                filter_offsets[taps] = (size_t{ky} * g.filter_width + kx) * out_channels;
                ++taps;
              }
            }
            T* out = output + ((row * g.output.width) + ox) * out_channels;
            if (g.multiplier == 1) {
              AccumulatePixel(input, filter, input_offsets.data(), filter_offsets.data(), taps,
                              out_channels, out);
            } else {
              AccumulatePixelMultiplier(input, filter, input_offsets.data(), filter_offsets.data(),
                                        taps, g.input.channels, g.multiplier, out);
            }
          }
        }
      });
}

// The fp32 kernel for depth multiplier 1 (every MobileNet-style layer): the bias initialises
// the accumulators, 32 channels at a time are held in registers across the filter taps, and the
// activation clamps on the way out. x86-64 builds carry an AVX2 clone chosen at load time.
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define MOCK_NNAPI_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef MOCK_NNAPI_AVX2_CLONE
#define MOCK_NNAPI_AVX2_CLONE
#endif

typedef float Float8 __attribute__((vector_size(32), aligned(4), may_alias));
// Vectors of kLanes floats at any float's alignment. (A typedef's attributes are lost when it is
// a template argument, so templates take the lane count.) 16 lanes: the four-pixel kernel's
// vectors in the AVX-512 build (DepthwiseFloatRowsAvx512).
template <int kLanes>
struct FloatVector;
template <>
struct FloatVector<8> {
  typedef float type __attribute__((vector_size(32), aligned(4), may_alias));
};
template <>
struct FloatVector<16> {
  typedef float type __attribute__((vector_size(64), aligned(4), may_alias));
};

struct FloatKernelArguments {
  const Geometry* geometry;
  const float* input;
  const float* filter;
  const float* bias;
  float low, high;
  float* output;
};

// Up to four horizontally adjacent output pixels for a filter width KW, horizontal stride S and
// dilation 1: per filter row, the 3 * S + KW input vectors the four windows share are loaded once
// and each filter vector once, for 4 * KW multiply-adds (instead of two loads per multiply-add).
// `rows[r]` is column 0 of the input row of valid filter row r, `filters[r]` that filter row;
// pixel i's window starts at input column ix0 + i * S. kGuarded: windows may cross the left or
// right edge and fewer than four pixels may be wanted (`pixels`); out-of-bounds taps are skipped.
// Taps are added in the same order as the per-pixel loop (bias first, then filter rows, then
// columns, skipping those outside the input), so the results are identical to it.
// The channel blocks of V's width from channel c on; returns the first channel not done.
template <int KW, int S, bool kGuarded, int kLanes>
__attribute__((always_inline)) inline size_t DepthwiseFourPixelBlocks(
    const float* const* rows, const float* const* filters, size_t row_count, size_t channels,
    const float* __restrict__ bias, float low1, float high1, int64_t ix0, int pixels,
    const bool* column_ok, const bool (*tap_ok)[KW], int64_t first, size_t c,
    float* __restrict__ out) {
  typedef typename FloatVector<kLanes>::type V;
  constexpr int kInputs = 3 * S + KW;
  V low, high;
  for (int i = 0; i < kLanes; ++i) {
    low[i] = low1;
    high[i] = high1;
  }
  for (; c + size_t{kLanes} <= channels; c += kLanes) {
    const V b = *reinterpret_cast<const V*>(bias + c);
    V acc0 = b, acc1 = b, acc2 = b, acc3 = b;
    for (size_t r = 0; r < row_count; ++r) {
      // Offsets from the first in-bounds column, so no pointer leaves the input.
      const float* row = rows[r] + first * channels + c;
      const float* f = filters[r] + c;
      V x[kInputs];
      for (int j = 0; j < kInputs; ++j) {
        if (column_ok[j]) {
          x[j] = *reinterpret_cast<const V*>(row + (ix0 + j - first) * int64_t(channels));
        } else {
          x[j] = V{};
        }
      }
      for (int kx = 0; kx < KW; ++kx) {
        const V w = *reinterpret_cast<const V*>(f + kx * channels);
        if (!kGuarded || tap_ok[0][kx]) acc0 += x[kx] * w;
        if (!kGuarded || tap_ok[1][kx]) acc1 += x[S + kx] * w;
        if (!kGuarded || tap_ok[2][kx]) acc2 += x[2 * S + kx] * w;
        if (!kGuarded || tap_ok[3][kx]) acc3 += x[3 * S + kx] * w;
      }
    }
    acc0 = acc0 < low ? low : (acc0 > high ? high : acc0);
    acc1 = acc1 < low ? low : (acc1 > high ? high : acc1);
    acc2 = acc2 < low ? low : (acc2 > high ? high : acc2);
    acc3 = acc3 < low ? low : (acc3 > high ? high : acc3);
    *reinterpret_cast<V*>(out + c) = acc0;
    if (!kGuarded || pixels > 1) *reinterpret_cast<V*>(out + channels + c) = acc1;
    if (!kGuarded || pixels > 2) *reinterpret_cast<V*>(out + 2 * channels + c) = acc2;
    if (!kGuarded || pixels > 3) *reinterpret_cast<V*>(out + 3 * channels + c) = acc3;
  }
  return c;
}

// Up to four horizontally adjacent output pixels for a filter width KW, horizontal stride S and
// dilation 1: per filter row, the 3 * S + KW input vectors the four windows share are loaded once
// and each filter vector once, for 4 * KW multiply-adds (instead of two loads per multiply-add).
// `rows[r]` is column 0 of the input row of valid filter row r, `filters[r]` that filter row;
// pixel i's window starts at input column ix0 + i * S. kGuarded: windows may cross the left or
// right edge and fewer than four pixels may be wanted (`pixels`); out-of-bounds taps are skipped.
// Taps are added in the same order as the per-pixel loop (bias first, then filter rows, then
// columns, skipping those outside the input), so the results are identical to it. kWide (5x5
// filters only): blocks of 16 channels first (one AVX-512 register each), then of 8; the lanes
// compute the same operations either way. Measured single-threaded against the 8-lane kernel on
// the 28 layers of the three networks: 5x5 layers 1.00-1.47x faster, but 3x3/s1 layers on 56x56
// and 112x112 maps 0.82-0.94x, so 3x3 filters keep 8 lanes.
template <int KW, int S, bool kGuarded, bool kWide>
__attribute__((always_inline)) inline void DepthwiseFourPixels(
    const float* const* rows, const float* const* filters, size_t row_count, size_t channels,
    const float* __restrict__ bias, float low1, float high1, int64_t ix0, int64_t width, int pixels,
    float* __restrict__ out) {
  constexpr int kInputs = 3 * S + KW;
  bool column_ok[kInputs];
  for (int j = 0; j < kInputs; ++j) column_ok[j] = !kGuarded || (ix0 + j >= 0 && ix0 + j < width);
  bool tap_ok[4][KW];
  for (int i = 0; i < 4; ++i) {
    for (int kx = 0; kx < KW; ++kx) tap_ok[i][kx] = i < pixels && column_ok[i * S + kx];
  }
  const int64_t first = kGuarded ? std::max<int64_t>(ix0, 0) : ix0;
  size_t c = 0;
  if constexpr (kWide && KW == 5) {
    c = DepthwiseFourPixelBlocks<KW, S, kGuarded, 16>(rows, filters, row_count, channels, bias,
                                                      low1, high1, ix0, pixels, column_ok, tap_ok,
                                                      first, c, out);
  }
  c = DepthwiseFourPixelBlocks<KW, S, kGuarded, 8>(rows, filters, row_count, channels, bias, low1,
                                                   high1, ix0, pixels, column_ok, tap_ok, first, c,
                                                   out);
  for (; c < channels; ++c) {
    for (int i = 0; i < pixels; ++i) {
      float acc = bias[c];
      for (size_t r = 0; r < row_count; ++r) {
        for (int kx = 0; kx < KW; ++kx) {
          if (!tap_ok[i][kx]) continue;
          acc +=
              rows[r][(ix0 + i * S + kx) * int64_t(channels) + c] * filters[r][kx * channels + c];
        }
      }
      out[i * channels + c] = std::min(std::max(acc, low1), high1);
    }
  }
}

template <bool kWide>
__attribute__((always_inline)) inline void DepthwiseFloatRowsImpl(const FloatKernelArguments& a,
                                                                  size_t row_begin,
                                                                  size_t row_end) {
  const Geometry& g = *a.geometry;
  const Parameters& p = g.params;
  const size_t channels = g.output.channels;
  const size_t all_taps = size_t{g.filter_height} * g.filter_width;
  // Offsets of every tap from the window's top-left input pixel, and its filter row.
  std::vector<size_t> window_offsets(all_taps);
  std::vector<const float*> all_filters(all_taps);
  for (uint32_t ky = 0; ky < g.filter_height; ++ky) {
    for (uint32_t kx = 0; kx < g.filter_width; ++kx) {
      const size_t t = size_t{ky} * g.filter_width + kx;
      window_offsets[t] =
          (size_t{ky} * p.dilation_h * g.input.width + size_t{kx} * p.dilation_w) * channels;
      all_filters[t] = a.filter + t * channels;
    }
  }
  const int64_t window_h = int64_t{g.filter_height - 1} * p.dilation_h;
  const int64_t window_w = int64_t{g.filter_width - 1} * p.dilation_w;
  std::vector<const float*> inputs(all_taps);
  std::vector<const float*> edge_filters(all_taps);
  Float8 low, high;
  for (int i = 0; i < 8; ++i) {
    low[i] = a.low;
    high[i] = a.high;
  }
  // Output columns whose windows lie inside the input columns: [interior_begin, interior_end).
  const int64_t interior_begin =
      std::min<int64_t>(g.output.width, (int64_t{p.pad_left} + p.stride_w - 1) / p.stride_w);
  const int64_t last_start = int64_t{g.input.width} - 1 - window_w + p.pad_left;
  const int64_t interior_end = std::max<int64_t>(
      interior_begin,
      std::min<int64_t>(g.output.width, last_start < 0 ? 0 : last_start / p.stride_w + 1));
  // The four-pixel kernel of the common filter widths and strides (dilation 1): 0 for none.
  const int kw = static_cast<int>(g.filter_width);
  int kernel = 0;
  if (p.dilation_w == 1 && (kw == 3 || kw == 5) && (p.stride_w == 1 || p.stride_w == 2)) {
    kernel = (kw == 3 ? 1 : 3) + (p.stride_w == 2 ? 1 : 0);
  }
  std::vector<const float*> row_inputs(g.filter_height);
  std::vector<const float*> row_filters(g.filter_height);
  for (size_t row = row_begin; row < row_end; ++row) {
    const size_t n = row / g.output.height;
    const int64_t iy0 = int64_t(row % g.output.height) * p.stride_h - p.pad_top;
    const bool rows_inside = iy0 >= 0 && iy0 + window_h < g.input.height;
    if (kernel != 0) {
      // Every column four at a time: interior groups unguarded, edge groups guarded.
      size_t valid_rows = 0;
      for (uint32_t ky = 0; ky < g.filter_height; ++ky) {
        const int64_t iy = iy0 + int64_t{ky} * p.dilation_h;
        if (iy < 0 || iy >= g.input.height) continue;
        row_inputs[valid_rows] = a.input + (n * g.input.height + iy) * g.input.width * channels;
        row_filters[valid_rows] = a.filter + size_t{ky} * g.filter_width * channels;
        ++valid_rows;
      }
      const float* const* rows = row_inputs.data();
      const float* const* filters = row_filters.data();
      const int64_t width = g.input.width;
      for (int64_t ox = 0; ox < g.output.width; ox += 4) {
        const int64_t ix0 = ox * p.stride_w - p.pad_left;
        const int pixels = static_cast<int>(std::min<int64_t>(4, g.output.width - ox));
        float* out = a.output + (row * g.output.width + ox) * channels;
        const bool inside = ox >= interior_begin && ox + 4 <= interior_end;
        // Calls inlined into this function, so compiled for each of its clones.
#define MOCK_NNAPI_FOUR_PIXELS(KW, S)                                                            \
  if (inside) {                                                                                  \
    DepthwiseFourPixels<KW, S, false, kWide>(rows, filters, valid_rows, channels, a.bias, a.low, \
                                             a.high, ix0, width, 4, out);                        \
  } else {                                                                                       \
    DepthwiseFourPixels<KW, S, true, kWide>(rows, filters, valid_rows, channels, a.bias, a.low,  \
                                            a.high, ix0, width, pixels, out);                    \
  }
        switch (kernel) {
          case 1:
            MOCK_NNAPI_FOUR_PIXELS(3, 1)
            break;
          case 2:
            MOCK_NNAPI_FOUR_PIXELS(3, 2)
            break;
          case 3:
            MOCK_NNAPI_FOUR_PIXELS(5, 1)
            break;
          default:
            MOCK_NNAPI_FOUR_PIXELS(5, 2)
        }
#undef MOCK_NNAPI_FOUR_PIXELS
      }
      continue;
    }
    for (uint32_t ox = 0; ox < g.output.width; ++ox) {
      const int64_t ix0 = int64_t{ox} * p.stride_w - p.pad_left;
      size_t taps = 0;
      const float* const* filters = all_filters.data();
      if (rows_inside && ix0 >= 0 && ix0 + window_w < g.input.width) {
        const float* origin =
            a.input + ((n * g.input.height + iy0) * g.input.width + ix0) * channels;
        for (size_t t = 0; t < all_taps; ++t) inputs[t] = origin + window_offsets[t];
        taps = all_taps;
      } else {
        for (uint32_t ky = 0; ky < g.filter_height; ++ky) {
          const int64_t iy = iy0 + int64_t{ky} * p.dilation_h;
          if (iy < 0 || iy >= g.input.height) continue;
          for (uint32_t kx = 0; kx < g.filter_width; ++kx) {
            const int64_t ix = ix0 + int64_t{kx} * p.dilation_w;
            if (ix < 0 || ix >= g.input.width) continue;
            inputs[taps] = a.input + ((n * g.input.height + iy) * g.input.width + ix) * channels;
            edge_filters[taps] = all_filters[size_t{ky} * g.filter_width + kx];
            ++taps;
          }
        }
        filters = edge_filters.data();
      }
      float* out = a.output + (row * g.output.width + ox) * channels;
      size_t c = 0;
      for (; c + 32 <= channels; c += 32) {
        Float8 acc0 = *reinterpret_cast<const Float8*>(a.bias + c);
        Float8 acc1 = *reinterpret_cast<const Float8*>(a.bias + c + 8);
        Float8 acc2 = *reinterpret_cast<const Float8*>(a.bias + c + 16);
        Float8 acc3 = *reinterpret_cast<const Float8*>(a.bias + c + 24);
        for (size_t t = 0; t < taps; ++t) {
          const Float8* x = reinterpret_cast<const Float8*>(inputs[t] + c);
          const Float8* f = reinterpret_cast<const Float8*>(filters[t] + c);
          acc0 += x[0] * f[0];
          acc1 += x[1] * f[1];
          acc2 += x[2] * f[2];
          acc3 += x[3] * f[3];
        }
        Float8* o = reinterpret_cast<Float8*>(out + c);
        o[0] = acc0 < low ? low : (acc0 > high ? high : acc0);
        o[1] = acc1 < low ? low : (acc1 > high ? high : acc1);
        o[2] = acc2 < low ? low : (acc2 > high ? high : acc2);
        o[3] = acc3 < low ? low : (acc3 > high ? high : acc3);
      }
      for (; c + 8 <= channels; c += 8) {
        Float8 acc = *reinterpret_cast<const Float8*>(a.bias + c);
        for (size_t t = 0; t < taps; ++t) {
          acc += *reinterpret_cast<const Float8*>(inputs[t] + c) *
                 *reinterpret_cast<const Float8*>(filters[t] + c);
        }
        *reinterpret_cast<Float8*>(out + c) = acc < low ? low : (acc > high ? high : acc);
      }
      for (; c < channels; ++c) {
        float acc = a.bias[c];
        for (size_t t = 0; t < taps; ++t) acc += inputs[t][c] * filters[t][c];
        out[c] = std::min(std::max(acc, a.low), a.high);
      }
    }
  }
}

MOCK_NNAPI_AVX2_CLONE void DepthwiseFloatRows(const FloatKernelArguments& a, size_t row_begin,
                                              size_t row_end) {
  DepthwiseFloatRowsImpl<false>(a, row_begin, row_end);
}

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target)
#define MOCK_NNAPI_DEPTHWISE_AVX512 1
// The same loops with the four-pixel kernel on 16-lane vectors, for CPUs with AVX-512F (chosen
// at run time). No FMA (-ffp-contract=off), so the results equal the other builds' bit for bit.
__attribute__((target("avx512f"))) void DepthwiseFloatRowsAvx512(const FloatKernelArguments& a,
                                                                 size_t row_begin, size_t row_end) {
  DepthwiseFloatRowsImpl<true>(a, row_begin, row_end);
}
#endif
#endif

void DepthwiseFloatRowsBest(const FloatKernelArguments& a, size_t row_begin, size_t row_end) {
#ifdef MOCK_NNAPI_DEPTHWISE_AVX512
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) {
    DepthwiseFloatRowsAvx512(a, row_begin, row_end);
    return;
  }
#endif
  DepthwiseFloatRows(a, row_begin, row_end);
}

std::vector<int32_t> ToInt32(const float* values, size_t count) {
  std::vector<int32_t> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(values[i]);
  return out;
}

// Derived-constants key of the prepared quantised filter (key 1 is FloatValues' converted one).
constexpr uint32_t kPreparedFilterKey = 100;

template <typename Q>
void RunQuantized(const Geometry& geometry, const depthwise_quantized::Geometry& g,
                  const depthwise_quantized::PreparedFilter& prepared, const OperandInfo& input,
                  const OperandInfo& bias, const OperandInfo& output) {
  const Parameters& p = geometry.params;
  const conv::Requantization<Q> requantization(bias.Data<int32_t>(), prepared.multipliers,
                                               p.activation, output);
  if (!p.nchw) {
    depthwise_quantized::Run(g, input.Data<Q>(), input.zero_point, prepared, requantization,
                             output.MutableData<Q>());
    return;
  }
  std::unique_ptr<Q[]> in(new Q[geometry.input.Elements()]);    // all written
  std::unique_ptr<Q[]> out(new Q[geometry.output.Elements()]);  // all written
  conv::NchwToNhwc(input.Data<Q>(), geometry.input, in.get());
  depthwise_quantized::Run(g, in.get(), input.zero_point, prepared, requantization, out.get());
  conv::NhwcToNchw(out.get(), geometry.output, output.MutableData<Q>());
}

// Quantised inputs: the exact integer kernel (depthwise_quantized.h), with the filter prepared
// once per model when it is constant; sums that could pass int32 (filters of more than 33025
// taps) take the generic loop.
int ExecuteQuantized(OperationContext& context, const Geometry& geometry) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& filter = context.Input(1);
  const OperandInfo& bias = context.Input(2);
  const OperandInfo& output = context.Output(0);
  const Parameters& p = geometry.params;
  depthwise_quantized::Geometry g;
  g.batches = geometry.input.batches;
  g.in_height = geometry.input.height;
  g.in_width = geometry.input.width;
  g.in_channels = geometry.input.channels;
  g.multiplier = geometry.multiplier;
  g.out_height = geometry.output.height;
  g.out_width = geometry.output.width;
  g.filter_height = geometry.filter_height;
  g.filter_width = geometry.filter_width;
  g.stride_h = p.stride_h;
  g.stride_w = p.stride_w;
  g.dilation_h = p.dilation_h;
  g.dilation_w = p.dilation_w;
  g.pad_top = p.pad_top;
  g.pad_left = p.pad_left;
  if (!depthwise_quantized::SumsFitInt32(g, input, filter)) {
    const conv::NhwcFloatInput in(input, p.nchw);
    const conv::FloatValues weights(context, 1);
    const size_t filter_count =
        size_t{geometry.filter_height} * geometry.filter_width * geometry.output.channels;
    const std::vector<int32_t> input_values = ToInt32(in.data(), in.shape().Elements());
    const std::vector<int32_t> filter_values = ToInt32(weights.data(), filter_count);
    std::vector<int32_t> accumulators(geometry.output.Elements());
    Depthwise<int32_t>(geometry, input_values.data(), filter_values.data(), accumulators.data());
    conv::StoreQuantizedOutput(
        accumulators.data(), geometry.output, bias.Data<int32_t>(),
        conv::OutputMultipliers(input, filter, output, geometry.output.channels), p.activation,
        output, p.nchw);
    return ANEURALNETWORKS_NO_ERROR;
  }
  using depthwise_quantized::PreparedFilter;
  const PreparedFilter* prepared = nullptr;
  PreparedFilter local;
  if (filter.constant) {
    const size_t bytes = size_t{geometry.filter_height} * geometry.filter_width *
                             (geometry.output.channels + depthwise_quantized::kLanes) *
                             sizeof(int32_t) +
                         geometry.output.channels * sizeof(double);
    prepared = context.Derived<PreparedFilter>(kPreparedFilterKey, bytes, [&] {
      return std::make_unique<PreparedFilter>(
          depthwise_quantized::PrepareFilter(input, filter, output));
    });
  }
  if (prepared == nullptr) {
    local = depthwise_quantized::PrepareFilter(input, filter, output);
    prepared = &local;
  }
  if (output.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM) {
    RunQuantized<uint8_t>(geometry, g, *prepared, input, bias, output);
  } else {
    RunQuantized<int8_t>(geometry, g, *prepared, input, bias, output);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// TENSOR_FLOAT16, NHWC, depth multiplier 1: the fp32 kernel (DepthwiseFloatRowsBest) band by band
// (conv::ForEachHalfBand). Every output row is computed as on the whole map, so the results are
// the fp32 kernel's, rounded to fp16.
void ExecuteHalf(OperationContext& context, const Geometry& geometry) {
  const Parameters& p = geometry.params;
  const conv::FloatValues weights(context, 1);  // constant fp16 filters converted once
  const conv::FloatValues bias_values(context.Input(2));
  float low, high;
  FloatActivationRange(p.activation, &low, &high);
  const Shape4& in = geometry.input;
  const Shape4& out = geometry.output;
  const size_t cost_per_row =
      size_t{out.width} * out.channels * geometry.filter_height * geometry.filter_width +
      size_t{in.width} * in.channels;
  conv::ForEachHalfBand(geometry, cost_per_row, context.Input(0).Data<Half>(),
                        context.Output(0).MutableData<Half>(),
                        [&](const Geometry& band, const float* input, float* output) {
                          const FloatKernelArguments arguments{
                              &band, input, weights.data(), bias_values.data(), low, high, output};
                          DepthwiseFloatRowsBest(arguments, 0, band.output.height);
                        });
}

int Execute(OperationContext& context) {
  Geometry geometry;
  NN_RETURN_IF_ERROR(ResolveGeometry(context, &geometry));
  if (geometry.output.Elements() == 0) return ANEURALNETWORKS_NO_ERROR;
  const OperandInfo& input = context.Input(0);
  if (IsQuantizedType(input.type)) return ExecuteQuantized(context, geometry);
  if (input.type == ANEURALNETWORKS_TENSOR_FLOAT16 && !geometry.params.nchw &&
      geometry.multiplier == 1) {
    ExecuteHalf(context, geometry);
    return ANEURALNETWORKS_NO_ERROR;
  }
  const OperandInfo& bias = context.Input(2);
  const OperandInfo& output = context.Output(0);
  const Parameters& p = geometry.params;
  const conv::NhwcFloatInput in(input, p.nchw);
  const conv::FloatValues weights(context, 1);  // constant fp16 filters converted once
  const conv::FloatValues bias_values(bias);
  conv::FloatOutput out(output, geometry.output, p.nchw);
  if (geometry.multiplier != 1) {
    Depthwise<float>(geometry, in.data(), weights.data(), out.data());
    out.Finish(bias_values.data(), p.activation);
    return ANEURALNETWORKS_NO_ERROR;
  }
  FloatKernelArguments arguments{&geometry, in.data(), weights.data(), bias_values.data(),
                                 0.f,       0.f,       out.data()};
  FloatActivationRange(p.activation, &arguments.low, &arguments.high);
  const size_t rows = size_t{geometry.output.batches} * geometry.output.height;
  const size_t cost = size_t{geometry.output.width} * geometry.filter_height *
                      geometry.filter_width * geometry.output.channels;
  gemm::ParallelFor(
      rows, cost, [&](size_t begin, size_t end) { DepthwiseFloatRowsBest(arguments, begin, end); });
  out.Finish(nullptr, ANEURALNETWORKS_FUSED_NONE);
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(DEPTHWISE_CONV_2D, Validate, Prepare, Execute);

}  // namespace mock_nnapi
