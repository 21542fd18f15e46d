// SPDX-License-Identifier: Apache-2.0
// CONV_2D and GROUPED_CONV_2D: 2-D convolution (optionally grouped) as im2col + sgemm.
//
// CONV_2D (NDK reference; Android's conv_2d validation):
//   Explicit padding, 10, 11 or 13 inputs: 0 input [N, H, W, C_in]; 1 filter
//   [C_out, kH, kW, C_in]; 2 bias [C_out]; 3 pad left, 4 pad right, 5 pad top, 6 pad bottom;
//   7 stride width, 8 stride height; 9 FuseCode; 10 optional BOOL NCHW layout; 11, 12 optional
//   dilation width, height.
//   Implicit padding, 7, 8 or 10 inputs: 0-2 as above; 3 PaddingCode; 4 stride width, 5 stride
//   height; 6 FuseCode; 7 optional NCHW; 8, 9 optional dilation width, height.
//   The valid counts are {7, 8, 10, 11, 13}; 9 and 12 (a single dilation factor) are rejected.
//   Padding is explicit when there are 10 or more inputs and input 7 is INT32 (otherwise input
//   7 is the layout flag).
// GROUPED_CONV_2D: 12 inputs with explicit padding (3-6 paddings, 7, 8 strides, 9 number
//   of groups, 10 FuseCode, 11 BOOL NCHW) or 9 with implicit padding (3 PaddingCode, 4, 5
//   strides, 6 groups, 7 FuseCode, 8 NCHW). The layout flag is required and there is no
//   dilation. Filter [C_out, kH, kW, C_in / groups]; C_out must divide by the groups; output
//   channels [g * C_out / groups, (g + 1) * C_out / groups) read input group g.
// Types: TENSOR_FLOAT32 (FL1), TENSOR_FLOAT16 (FL3), TENSOR_QUANT8_ASYMM (FL1),
//   TENSOR_QUANT8_ASYMM_SIGNED (FL4). A quantised filter has the input's type or is
//   TENSOR_QUANT8_SYMM_PER_CHANNEL with channelDim 0 (FL3). The bias has the input's float type,
//   or is TENSOR_INT32 with zero point 0 and scale input_scale * filter_scale (not checked for
//   per-channel filters, whose per-channel bias scale is input_scale * filter_scale[c]).
// CONV_2D needs FL3 for fp16, per-channel filters, the layout or dilation inputs, or a
// QUANT8_ASYMM output scale <= input_scale * filter_scale. Output [N, outH, outW, C_out]
// (NCHW: [N, C_out, outH, outW]); only the batch may be 0. Like Android's prepare, every padding
// must be smaller than the effective filter size (GROUPED_CONV_2D: the filter size).
// Quantised inputs are padded with their zero point; accumulation is exact in int32 and
// requantised with a real multiplier (within one step of Android's fixed-point result).
// fp32 with a constant filter and bias runs on packed_gemm (the filter packed once per model,
// see PackedFilter); otherwise on OpenBLAS's sgemm. Quantised CONV_2D with a constant filter runs
// on int8_gemm (ConvolveInt8Gemm: the same int32 sums, from the bytes themselves); otherwise (and
// for GROUPED_CONV_2D) on IntegerGemm's exact fp32 products (ConvolveQuantized).
#include <cstring>
#include <memory>
#include <vector>

#include "../kernels/half_bands.h"
#include "../kernels/int8_gemm.h"
#include "../kernels/packed_gemm.h"
#include "../kernels/requantize.h"
#include "conv_common.h"
#include "gemm.h"

namespace mock_nnapi {
namespace {

using conv::ArgumentIndices;
using conv::Parameters;
using conv::Shape4;

// Bound of one tile of the im2col matrix (it and its packed copy stay in a core's L2 cache).
constexpr size_t kPatchTileBytes = size_t{128} << 10;

// Largest im2col matrix built whole for one GEMM over all output pixels.
constexpr size_t kWholePatchBytes = size_t{16} << 20;

// Fewest output pixels in a tile of the quantised convolution.
constexpr size_t kMinQuantizedTileRows = 64;

bool IsGrouped(const OperationContext& context) {
  return context.type() == ANEURALNETWORKS_GROUPED_CONV_2D;
}

ArgumentIndices Conv2DIndices(const OperationContext& context) {
  const uint32_t count = context.InputCount();
  ArgumentIndices indices;
  indices.explicit_padding = count >= 10 && context.InputType(7) == ANEURALNETWORKS_INT32;
  if (indices.explicit_padding) {
    indices.pad_left = 3;
    indices.stride_w = 7;
    indices.stride_h = 8;
    indices.activation = 9;
    if (count >= 11) indices.layout = 10;
    if (count == 13) {
      indices.dilation_w = 11;
      indices.dilation_h = 12;
    }
  } else {
    indices.padding_code = 3;
    indices.stride_w = 4;
    indices.stride_h = 5;
    indices.activation = 6;
    if (count >= 8) indices.layout = 7;
    if (count == 10) {
      indices.dilation_w = 8;
      indices.dilation_h = 9;
    }
  }
  return indices;
}

ArgumentIndices GroupedConv2DIndices(const OperationContext& context) {
  ArgumentIndices indices;
  indices.explicit_padding = context.InputCount() == 12;
  if (indices.explicit_padding) {
    indices.pad_left = 3;
    indices.stride_w = 7;
    indices.stride_h = 8;
    indices.extra = 9;
    indices.activation = 10;
    indices.layout = 11;
  } else {
    indices.padding_code = 3;
    indices.stride_w = 4;
    indices.stride_h = 5;
    indices.extra = 6;
    indices.activation = 7;
    indices.layout = 8;
  }
  return indices;
}

ArgumentIndices Indices(const OperationContext& context) {
  return IsGrouped(context) ? GroupedConv2DIndices(context) : Conv2DIndices(context);
}

// Shape checks that are possible before execution (known ranks, dimensions and constants).
int ValidateStaticShapes(const OperationContext& context, const ArgumentIndices& indices) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& filter = context.Input(1);
  const OperandInfo& bias = context.Input(2);
  NN_RETURN_IF_ERROR(conv::CheckRankIs(context, input, 4, "input rank"));
  NN_RETURN_IF_ERROR(conv::CheckRankIs(context, filter, 4, "filter rank"));
  if (!filter.rank_known) return ANEURALNETWORKS_NO_ERROR;
  const uint32_t out_channels = filter.dim(0);
  if (bias.rank_known && bias.rank() == 1 && bias.dim(0) != 0 && out_channels != 0) {
    NN_CHECK_EQ(bias.dim(0), out_channels, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " bias length";
  }
  const bool layout_known = indices.layout < 0 || context.HasInputValue(indices.layout);
  const bool groups_known = indices.extra < 0 || context.HasInputValue(indices.extra);
  if (!layout_known || !groups_known || !input.rank_known) return ANEURALNETWORKS_NO_ERROR;
  const int32_t groups = indices.extra < 0 ? 1 : context.InputScalar<int32_t>(indices.extra);
  const bool nchw = indices.layout >= 0 && context.InputScalar<uint8_t>(indices.layout) != 0;
  const uint32_t in_channels = conv::ToNhwc(input.dimensions, nchw).channels;
  if (in_channels != 0 && filter.dim(3) != 0) {
    NN_CHECK_EQ(uint64_t{filter.dim(3)} * groups, in_channels, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " filter depth * groups must equal the input depth";
  }
  if (out_channels != 0) {
    NN_CHECK_EQ(out_channels % groups, 0u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " output depth must divide by the number of groups";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  const bool grouped = IsGrouped(context);
  if (grouped) {
    NN_RETURN_IF_ERROR(CheckOperandCounts(context, {9, 12}, 1));
  } else {
    NN_RETURN_IF_ERROR(CheckOperandCounts(context, {7, 8, 10, 11, 13}, 1));
  }
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
  NN_RETURN_IF_ERROR(conv::CheckArgumentValues(context, indices, false));
  NN_RETURN_IF_ERROR(ValidateStaticShapes(context, indices));

  const bool per_channel = filter.type == ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL;
  if (input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED) {
    context.RequireFeatureLevel(kFeatureLevel4);
  } else if (grouped || input.type == ANEURALNETWORKS_TENSOR_FLOAT16 || per_channel ||
             indices.layout >= 0 || indices.dilation_w >= 0) {
    context.RequireFeatureLevel(kFeatureLevel3);
  } else if (input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM &&
             !(context.Output(0).scale > input.scale * filter.scale)) {
    context.RequireFeatureLevel(kFeatureLevel3);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Everything a kernel needs: NHWC sizes, filter size, groups and the resolved padding.
struct Geometry : conv::Geometry {
  uint32_t groups = 1;
};

int ResolveGeometry(const OperationContext& context, Geometry* geometry) {
  const OperandInfo& filter = context.Input(1);
  const OperandInfo& bias = context.Input(2);
  const ArgumentIndices indices = Indices(context);
  NN_RETURN_IF_ERROR(conv::ReadGeometry(context, indices, false, geometry));
  geometry->groups = IsGrouped(context) ? static_cast<uint32_t>(geometry->params.extra) : 1;
  const Shape4& in = geometry->input;
  const uint32_t out_channels = filter.dim(0);
  NN_CHECK_EQ(uint64_t{filter.dim(3)} * geometry->groups, in.channels, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " filter depth * groups must equal the input depth";
  NN_CHECK_EQ(out_channels % geometry->groups, 0u, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " output depth must divide by the number of groups";
  NN_CHECK_EQ(bias.dim(0), out_channels, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " bias length";
  NN_CHECK(in.height > 0 && in.width > 0 && in.channels > 0 && out_channels > 0 &&
               geometry->filter_height > 0 && geometry->filter_width > 0,
           ANEURALNETWORKS_OP_FAILED)
      << context.name() << " only the batch may be zero-sized";
  // GROUPED_CONV_2D has no dilation (Parameters default it to 1): its effective filter is the
  // filter.
  return conv::ResolveConvOutput(context, indices.explicit_padding, out_channels, geometry);
}

int Prepare(OperationContext& context) {
  Geometry geometry;
  NN_RETURN_IF_ERROR(ResolveGeometry(context, &geometry));
  return context.SetOutputShape(0, conv::FromNhwc(geometry.output, geometry.params.nchw));
}

// Copies a few elements (floats, or the bytes of int8_gemm's rows): short runs (small channel
// counts) with fixed-size, overlapping moves instead of a library call per run.
template <typename T>
inline void CopyFloats(T* dst, const T* src, size_t count) {
  if (count >= 16) {
    std::memcpy(dst, src, count * sizeof(T));
  } else if (count >= 8) {
    std::memcpy(dst, src, 8 * sizeof(T));
    std::memcpy(dst + count - 8, src + count - 8, 8 * sizeof(T));
  } else if (count >= 4) {
    std::memcpy(dst, src, 4 * sizeof(T));
    std::memcpy(dst + count - 4, src + count - 4, 4 * sizeof(T));
  } else {
    for (size_t i = 0; i < count; ++i) dst[i] = src[i];
  }
}

// The rows r = (n * outH + oy) * outW + ox of the im2col matrix hold the receptive field of
// output pixel r for the input channels of one group, ordered (ky, kx, channel) like a filter
// row; out-of-image taps are `pad` (0: the zero point, for offset-subtracted quantised inputs;
// int8_gemm's rows of raw quantised bytes pass the zero point itself).
// FillPatchRows writes rows [first, first + count) for the group whose channels start at
// `channels` into `patch` (row r - first at patch + (r - first) * depth).
template <typename T>
void FillPatchRows(const Geometry& g, const T* channels, size_t first, size_t count, T* patch,
                   T pad = T(0)) {
  const Parameters& p = g.params;
  const size_t in_group_channels = g.input.channels / g.groups;
  const size_t depth = size_t{g.filter_height} * g.filter_width * in_group_channels;
  const size_t row_floats = (p.dilation_w == 1 ? g.filter_width : 1) * in_group_channels;
  // Output pixel of the first row; later rows step through (n, oy, ox).
  int64_t ox = first % g.output.width;
  int64_t oy = (first / g.output.width) % g.output.height;
  int64_t n = first / (size_t{g.output.width} * g.output.height);
  for (size_t r = 0; r < count; ++r) {
    if (r > 0 && ++ox == g.output.width) {
      ox = 0;
      if (++oy == g.output.height) {
        oy = 0;
        ++n;
      }
    }
    T* dst = patch + r * depth;
    for (uint32_t ky = 0; ky < g.filter_height; ++ky) {
      const int64_t iy = oy * p.stride_h - p.pad_top + int64_t{ky} * p.dilation_h;
      const int64_t ix0 = ox * p.stride_w - p.pad_left;
      const int64_t ix_last = ix0 + int64_t{g.filter_width - 1} * p.dilation_w;
      const bool row_inside = iy >= 0 && iy < g.input.height;
      const T* line = row_inside
                          ? channels + (n * g.input.height + iy) * g.input.width * g.input.channels
                          : nullptr;
      if (row_inside && p.dilation_w == 1 && ix0 >= 0 && ix_last < g.input.width && g.groups == 1) {
        // The whole filter row reads one contiguous run of input pixels.
        CopyFloats(dst, line + ix0 * g.input.channels, row_floats);
        dst += row_floats;
        continue;
      }
      for (uint32_t kx = 0; kx < g.filter_width; ++kx, dst += in_group_channels) {
        const int64_t ix = ix0 + int64_t{kx} * p.dilation_w;
        if (!row_inside || ix < 0 || ix >= g.input.width) {
          std::fill(dst, dst + in_group_channels, pad);
        } else {
          CopyFloats(dst, line + ix * g.input.channels, in_group_channels);
        }
      }
    }
  }
}

// Calls gemm(group, first_row, rows, patch, patch_stride) for each group over row ranges of the
// im2col matrix, then finish(first_row, rows) for each range.
// - A 1x1, stride-1, unpadded convolution uses the input itself as the patch matrix: one call
//   for all rows (Sgemm shares the product out over the threads).
// - A patch matrix of at most kWholePatchBytes is filled once (rows in parallel), then one call
//   for all rows.
// - Larger ones are split into tiles that stay in cache and run in parallel, one
//   single-threaded GEMM per tile.
template <typename Gemm, typename Finish>
void ForEachPatchTile(const Geometry& g, const float* input, Gemm&& gemm, Finish&& finish) {
  const Parameters& p = g.params;
  const size_t in_group_channels = g.input.channels / g.groups;
  const size_t rows = size_t{g.output.batches} * g.output.height * g.output.width;
  const size_t depth = size_t{g.filter_height} * g.filter_width * in_group_channels;
  const bool pointwise = g.filter_height == 1 && g.filter_width == 1 && p.stride_w == 1 &&
                         p.stride_h == 1 && p.pad_left == 0 && p.pad_top == 0 && p.pad_right == 0 &&
                         p.pad_bottom == 0;
  if (pointwise) {
    for (uint32_t group = 0; group < g.groups; ++group) {
      gemm(group, 0, rows, input + group * in_group_channels, size_t{g.input.channels});
    }
    finish(0, rows);
    return;
  }
  // Tiles small enough for the patch to stay in cache, and enough of them to share out.
  const size_t by_bytes = std::max<size_t>(16, kPatchTileBytes / (depth * sizeof(float)));
  const size_t by_threads =
      std::max<size_t>(16, (rows + 4 * gemm::ThreadCount() - 1) / (4 * gemm::ThreadCount()));
  if (rows * depth * sizeof(float) <= kWholePatchBytes) {
    // Uninitialised: every element is written before the GEMM reads it.
    std::unique_ptr<float[]> patch(new float[rows * depth]);
    const size_t fill_rows = std::min(rows, by_threads);
    const size_t fills = (rows + fill_rows - 1) / fill_rows;
    for (uint32_t group = 0; group < g.groups; ++group) {
      const float* channels = input + group * in_group_channels;
      gemm::ParallelFor(fills, fill_rows * depth, [&](size_t begin, size_t end) {
        for (size_t t = begin; t < end; ++t) {
          const size_t first = t * fill_rows;
          FillPatchRows(g, channels, first, std::min(fill_rows, rows - first),
                        patch.get() + first * depth);
        }
      });
      gemm(group, 0, rows, static_cast<const float*>(patch.get()), depth);
    }
    finish(0, rows);
    return;
  }
  const size_t tile_rows = std::min({rows, by_bytes, by_threads});
  const size_t tiles = (rows + tile_rows - 1) / tile_rows;
  const size_t cost = tile_rows * depth * g.output.channels;  // multiply-adds per tile
  gemm::ParallelFor(tiles, cost, [&](size_t tile_begin, size_t tile_end) {
    // Uninitialised scratch: every element is written before the GEMM reads it.
    std::unique_ptr<float[]> patch(new float[tile_rows * depth]);
    for (size_t t = tile_begin; t < tile_end; ++t) {
      const size_t first = t * tile_rows;
      const size_t count = std::min(tile_rows, rows - first);
      for (uint32_t group = 0; group < g.groups; ++group) {
        FillPatchRows(g, input + group * in_group_channels, first, count, patch.get());
        gemm(group, first, count, static_cast<const float*>(patch.get()), depth);
      }
      finish(first, count);
    }
  });
}

// An fp32 filter and its bias packed for packed_gemm, one matrix per group ([group_out, depth]
// rows of the filter as B^T).
struct PackedFilter {
  std::vector<packed_gemm::PackedMatrix> groups;
};

// Its DerivedConstants key (conv::FloatValues uses the input indices).
constexpr uint32_t kPackedFilterKey = 0x100;

std::unique_ptr<PackedFilter> PackFilter(const Geometry& g, const float* filter,
                                         const float* bias) {
  const size_t group_out = g.output.channels / g.groups;
  const size_t depth = size_t{g.filter_height} * g.filter_width * (g.input.channels / g.groups);
  auto packed = std::make_unique<PackedFilter>();
  packed->groups.reserve(g.groups);
  for (uint32_t group = 0; group < g.groups; ++group) {
    packed->groups.emplace_back(gemm::Transpose::kYes, depth, group_out,
                                filter + group * group_out * depth, depth,
                                bias + group * group_out);
  }
  return packed;
}

// The packed filter of an fp32 or fp16 convolution whose filter and bias are constants (null
// otherwise: the OpenBLAS path): packed on the model's first run and kept
// (OperationContext::Derived), or packed for this run only when the store declines it, which
// computes the same bits.
class PackedFilterFor {
 public:
  PackedFilterFor(const OperationContext& context, const Geometry& g, const float* filter,
                  const float* bias) {
    const OperandInfo& filter_operand = context.Input(1);
    const OperandInfo& bias_operand = context.Input(2);
    // fp16 filters too (converted once by conv::FloatValues): the fp16 model then computes what
    // the fp32 one does, rounded.
    const bool float_filter = filter_operand.type == ANEURALNETWORKS_TENSOR_FLOAT32 ||
                              filter_operand.type == ANEURALNETWORKS_TENSOR_FLOAT16;
    if (!float_filter || !filter_operand.constant || !bias_operand.constant ||
        !packed_gemm::Enabled()) {
      return;
    }
    const size_t depth = size_t{g.filter_height} * g.filter_width * (g.input.channels / g.groups);
    const size_t bytes =
        g.groups * packed_gemm::PackedMatrix::Bytes(depth, g.output.channels / g.groups);
    packed_ = context.Derived<PackedFilter>(kPackedFilterKey, bytes,
                                            [&] { return PackFilter(g, filter, bias); });
    if (packed_ == nullptr) {
      own_ = PackFilter(g, filter, bias);
      packed_ = own_.get();
    }
  }
  const PackedFilter* get() const { return packed_; }

 private:
  std::unique_ptr<PackedFilter> own_;
  const PackedFilter* packed_ = nullptr;
};

// The rows of one group's im2col matrix (see FillPatchRows) for packed_gemm, read from the input
// in place: a receptive field inside the input is one segment per filter row (groups == 1,
// dilation_w == 1) or per filter tap, at fixed offsets from its first tap. A block of rows of
// which one crosses the padding is assembled in the scratch (FillPatchRows), whose segments
// follow each other. Either way the products are summed in the filter's (ky, kx, channel) order,
// so both give the same bits. ReceptiveFieldsOf<uint8_t> reads the raw quantised bytes the same
// way for int8_gemm (padding: the zero point).
template <typename T>
class ReceptiveFieldsOf : public gemm::RowSource<T> {
 public:
  // pad: the value of out-of-image taps (see FillPatchRows).
  ReceptiveFieldsOf(const Geometry& g, const T* channels, T pad = T(0))
      : gemm::RowSource<T>(SegmentCount(g), SegmentLength(g)),
        g_(g),
        channels_(channels),
        pad_(pad) {
    const Parameters& p = g.params;
    const size_t row_stride = size_t{g.input.width} * g.input.channels;
    for (uint32_t ky = 0; ky < g.filter_height; ++ky) {
      const uint32_t taps = this->segments() / g.filter_height;
      for (uint32_t kx = 0; kx < taps; ++kx) {
        image_offsets_.push_back(ky * p.dilation_h * row_stride +
                                 size_t{kx} * p.dilation_w * g.input.channels);
        patch_offsets_.push_back(image_offsets_.size() * this->segment_length() -
                                 this->segment_length());
      }
    }
  }

  const size_t* Rows(size_t first, size_t count, T* scratch, const T** rows) const override {
    const Parameters& p = g_.params;
    const int64_t last_y = int64_t{g_.filter_height - 1} * p.dilation_h;
    const int64_t last_x = int64_t{g_.filter_width - 1} * p.dilation_w;
    size_t ox = first % g_.output.width;
    size_t oy = (first / g_.output.width) % g_.output.height;
    size_t n = first / (size_t{g_.output.width} * g_.output.height);
    for (size_t r = 0; r < count; ++r) {
      const int64_t iy = int64_t(oy) * p.stride_h - p.pad_top;
      const int64_t ix = int64_t(ox) * p.stride_w - p.pad_left;
      if (iy < 0 || ix < 0 || iy + last_y >= g_.input.height || ix + last_x >= g_.input.width) {
        FillPatchRows(g_, channels_, first, count, scratch, pad_);
        for (size_t i = 0; i < count; ++i) rows[i] = scratch + i * this->depth();
        return patch_offsets_.data();
      }
      rows[r] = channels_ + ((n * g_.input.height + iy) * g_.input.width + ix) * g_.input.channels;
      if (++ox == g_.output.width) {
        ox = 0;
        if (++oy == g_.output.height) {
          oy = 0;
          ++n;
        }
      }
    }
    return image_offsets_.data();
  }

 private:
  static bool RowRuns(const Geometry& g) { return g.groups == 1 && g.params.dilation_w == 1; }
  static size_t SegmentCount(const Geometry& g) {
    return size_t{g.filter_height} * (RowRuns(g) ? 1 : g.filter_width);
  }
  static size_t SegmentLength(const Geometry& g) {
    return (RowRuns(g) ? g.filter_width : 1) * size_t{g.input.channels / g.groups};
  }

  const Geometry& g_;
  const T* channels_;
  T pad_;
  std::vector<size_t> image_offsets_;
  std::vector<size_t> patch_offsets_;
};

using ReceptiveFields = ReceptiveFieldsOf<float>;

// out[r, c] = activation(sum over the receptive field of patch[r, :] * filter[c, :] + bias[c]).
// With a packed filter, packed_gemm computes it (the bias folded in, the clamp on store);
// otherwise the bias is written first and OpenBLAS's sgemm accumulates onto it (beta = 1).
void ConvolveFloat(const Geometry& g, const float* input, const float* filter, const float* bias,
                   const PackedFilter* packed, int32_t activation, float* output) {
  const size_t out_channels = g.output.channels;
  const size_t group_out = out_channels / g.groups;
  const size_t depth = size_t{g.filter_height} * g.filter_width * (g.input.channels / g.groups);
  float low, high;
  FloatActivationRange(activation, &low, &high);
  if (packed != nullptr) {  // no im2col matrix: the receptive fields are read in place
    const Parameters& p = g.params;
    const size_t in_group_channels = g.input.channels / g.groups;
    const size_t rows = size_t{g.output.batches} * g.output.height * g.output.width;
    const bool pointwise = g.filter_height == 1 && g.filter_width == 1 && p.stride_w == 1 &&
                           p.stride_h == 1 && p.pad_left == 0 && p.pad_top == 0 &&
                           p.pad_right == 0 && p.pad_bottom == 0;
    for (uint32_t group = 0; group < g.groups; ++group) {
      const float* channels = input + group * in_group_channels;
      float* out = output + group * group_out;
      if (pointwise) {
        packed_gemm::Multiply(rows, channels, g.input.channels, packed->groups[group], low, high,
                              out, out_channels);
      } else {
        packed_gemm::Multiply(rows, ReceptiveFields(g, channels), packed->groups[group], low, high,
                              out, out_channels);
      }
    }
    return;
  }
  ForEachPatchTile(
      g, input,
      [&](uint32_t group, size_t first, size_t rows, const float* patch, size_t patch_stride) {
        float* out = output + first * out_channels + group * group_out;
        const float* group_bias = bias + group * group_out;
        for (size_t r = 0; r < rows; ++r) {
          std::copy(group_bias, group_bias + group_out, out + r * out_channels);
        }
        gemm::Sgemm(gemm::Transpose::kNo, gemm::Transpose::kYes, rows, group_out, depth, 1.f, patch,
                    patch_stride, filter + group * group_out * depth, depth, 1.f, out,
                    out_channels);
      },
      [&](size_t first, size_t rows) {
        if (activation == ANEURALNETWORKS_FUSED_NONE) return;
        conv::ClampAll(output + first * out_channels, rows * out_channels, low, high);
      });
}

// The quantised convolution in tiles of output pixels shared out over the pool: for each tile,
// its im2col rows of offset-subtracted values (pointwise convolutions read the input rows
// themselves), the exact integer products of each group (gemm::IntegerGemm, single-threaded in a
// pool job) into a tile of accumulators, then their requantisation into the NHWC output `out`.
// The sums are exact, so the results do not depend on the tiling.
template <typename Q>
void ConvolveQuantized(const Geometry& g, const float* input, float max_abs_input,
                       const float* filter, float max_abs_filter,
                       const conv::Requantization<Q>& requantization, Q* out) {
  const Parameters& p = g.params;
  const size_t out_channels = g.output.channels;
  const size_t group_out = out_channels / g.groups;
  const size_t in_group_channels = g.input.channels / g.groups;
  const size_t depth = size_t{g.filter_height} * g.filter_width * in_group_channels;
  const size_t rows = size_t{g.output.batches} * g.output.height * g.output.width;
  const bool pointwise = g.filter_height == 1 && g.filter_width == 1 && p.stride_w == 1 &&
                         p.stride_h == 1 && p.pad_left == 0 && p.pad_top == 0 && p.pad_right == 0 &&
                         p.pad_bottom == 0;
  // Tiles whose patch and accumulators stay in cache, and enough of them to share out; at least
  // kMinQuantizedTileRows rows, since each tile's GEMM packs the whole filter again.
  const size_t by_patch = pointwise ? rows : kPatchTileBytes / (depth * sizeof(float));
  const size_t by_accumulators = kPatchTileBytes / (out_channels * sizeof(int32_t));
  const size_t by_threads = (rows + 4 * gemm::ThreadCount() - 1) / (4 * gemm::ThreadCount());
  const size_t tile_rows = std::min(
      rows, std::max(kMinQuantizedTileRows, std::min({by_patch, by_accumulators, by_threads})));
  const size_t tiles = (rows + tile_rows - 1) / tile_rows;
  // Uninitialised scratch: every element is written before it is read.
  auto products = [&](size_t first, size_t count, float* patch, int32_t* accumulators) {
    for (uint32_t group = 0; group < g.groups; ++group) {
      const float* channels = input + group * in_group_channels;
      const float* a = channels + first * g.input.channels;
      size_t lda = g.input.channels;
      if (!pointwise) {
        FillPatchRows(g, channels, first, count, patch);
        a = patch;
        lda = depth;
      }
      gemm::IntegerGemm(gemm::Transpose::kNo, gemm::Transpose::kYes, count, group_out, depth, a,
                        lda, max_abs_input, filter + group * group_out * depth, depth,
                        max_abs_filter, accumulators + group * group_out, out_channels);
    }
  };
  if (tiles == 1) {
    // One tile: its GEMM on the calling thread, where Sgemm shares a large product out over the
    // pool, then the requantisation in blocks of rows over the pool.
    std::unique_ptr<float[]> patch(pointwise ? nullptr : new float[rows * depth]);
    std::unique_ptr<int32_t[]> accumulators(new int32_t[rows * out_channels]);
    products(0, rows, patch.get(), accumulators.get());
    const size_t block = std::max<size_t>(1, 16384 / out_channels);
    gemm::ParallelFor((rows + block - 1) / block, block * out_channels * 4,
                      [&](size_t begin, size_t end) {
                        const size_t first = begin * block;
                        const size_t count = std::min(rows, end * block) - first;
                        requantization.Rows(accumulators.get() + first * out_channels, count,
                                            out + first * out_channels);
                      });
    return;
  }
  gemm::ParallelFor(tiles, tile_rows * depth * out_channels, [&](size_t begin, size_t end) {
    std::unique_ptr<float[]> patch(pointwise ? nullptr : new float[tile_rows * depth]);
    std::unique_ptr<int32_t[]> accumulators(new int32_t[tile_rows * out_channels]);
    for (size_t t = begin; t < end; ++t) {
      const size_t first = t * tile_rows;
      const size_t count = std::min(tile_rows, rows - first);
      products(first, count, patch.get(), accumulators.get());
      requantization.Rows(accumulators.get(), count, out + first * out_channels);
    }
  });
}

// int8_gemm's packed filter: its DerivedConstants key (PackedFilter's is 0x100).
constexpr uint32_t kInt8FilterKey = 0x101;

// The quantised convolution on int8_gemm (see int8_gemm.h): the constant filter packed once per
// model, the input's bytes read in place (receptive fields, padded with the zero point; a
// pointwise convolution's rows are the input's own), the exact sums of each block of output
// pixels requantised as soon as they are computed. The sums are those of ConvolveQuantized, so
// are the outputs. False (nothing done) when it does not apply: a filter that is not a constant,
// GROUPED_CONV_2D, sums that could leave int32 (ConvolveQuantized saturates them), or
// MOCK_NNAPI_INT8_GEMM=0.
template <typename Q>
bool ConvolveInt8Gemm(const OperationContext& context, const Geometry& g) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& filter = context.Input(1);
  const OperandInfo& output = context.Output(0);
  const Parameters& p = g.params;
  const size_t out_channels = g.output.channels;
  const size_t depth = size_t{g.filter_height} * g.filter_width * g.input.channels;
  if (!int8_gemm::Enabled() || !filter.constant || g.groups != 1 ||
      !int8_gemm::CanMultiply(depth, conv::MaxAbsOffset(input), conv::MaxAbsOffset(filter))) {
    return false;
  }
  const uint8_t* x = input.Data<uint8_t>();  // int8 inputs too: the kernels take their bytes
  std::unique_ptr<uint8_t[]> nhwc_input;
  if (p.nchw) {
    nhwc_input.reset(new uint8_t[g.input.Elements()]);  // every element is written
    conv::NchwToNhwc(x, g.input, nhwc_input.get());
    x = nhwc_input.get();
  }
  const bool pointwise = g.filter_height == 1 && g.filter_width == 1 && p.stride_w == 1 &&
                         p.stride_h == 1 && p.pad_left == 0 && p.pad_top == 0 && p.pad_right == 0 &&
                         p.pad_bottom == 0;
  const ReceptiveFieldsOf<uint8_t> fields(g, x, static_cast<uint8_t>(input.zero_point));
  const int8_gemm::StridedRows input_rows(x, g.input.channels, g.input.channels);
  const int8_gemm::RowSource& rows =
      pointwise ? static_cast<const int8_gemm::RowSource&>(input_rows) : fields;
  const int8_gemm::Signedness signedness{input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED,
                                         filter.type != ANEURALNETWORKS_TENSOR_QUANT8_ASYMM};
  const auto pack = [&] {
    return std::make_unique<int8_gemm::PackedWeights>(
        signedness, rows.segments(), rows.segment_length(), out_channels, filter.Data<uint8_t>(),
        depth, filter.zero_point, input.zero_point);
  };
  std::unique_ptr<int8_gemm::PackedWeights> own;
  const int8_gemm::PackedWeights* packed = context.Derived<int8_gemm::PackedWeights>(
      kInt8FilterKey,
      int8_gemm::PackedWeights::Bytes(rows.segments(), rows.segment_length(), out_channels), pack);
  if (packed == nullptr) {
    own = pack();
    packed = own.get();
  }
  const conv::Requantization<Q> requantization(
      context.Input(2).Data<int32_t>(),
      conv::OutputMultipliers(input, filter, output, g.output.channels), p.activation, output);
  Q* out = output.MutableData<Q>();
  std::unique_ptr<Q[]> nhwc;
  if (p.nchw) nhwc.reset(new Q[g.output.Elements()]);  // every element is written
  Q* target = p.nchw ? nhwc.get() : out;
  const size_t pixels = size_t{g.output.batches} * g.output.height * g.output.width;
  int8_gemm::Multiply(pixels, rows, *packed, [&](size_t first, size_t count, const int32_t* sums) {
    requantization.Rows(sums, count, target + first * out_channels);
  });
  if (p.nchw) conv::NhwcToNchw(nhwc.get(), g.output, out);
  return true;
}

template <typename Q>
void ExecuteQuantized(const OperationContext& context, const Geometry& geometry,
                      const float* input_values, const float* filter_values) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& filter = context.Input(1);
  const OperandInfo& output = context.Output(0);
  const Parameters& p = geometry.params;
  const conv::Requantization<Q> requantization(
      context.Input(2).Data<int32_t>(),
      conv::OutputMultipliers(input, filter, output, geometry.output.channels), p.activation,
      output);
  Q* out = output.MutableData<Q>();
  std::unique_ptr<Q[]> nhwc;
  if (p.nchw) nhwc.reset(new Q[geometry.output.Elements()]);  // every element is written
  ConvolveQuantized<Q>(geometry, input_values, conv::MaxAbsOffset(input), filter_values,
                       conv::MaxAbsOffset(filter), requantization, p.nchw ? nhwc.get() : out);
  if (p.nchw) conv::NhwcToNchw(nhwc.get(), geometry.output, out);
}

// TENSOR_FLOAT16 in NHWC with a packed filter (constant filter and bias): band by band
// (conv::ForEachHalfBand), each band convolved as a map of its own (ConvolveFloat,
// single-threaded inside the pool's job). packed_gemm sums every output element in the filter's
// order whatever rows it is given, so the results are the fp32 path's, rounded to fp16. False
// (nothing done) without a packed filter.
bool ExecuteHalf(OperationContext& context, const Geometry& geometry) {
  const Parameters& p = geometry.params;
  const conv::FloatValues weights(context, 1);  // converted once per model
  const conv::FloatValues bias_values(context.Input(2));
  const PackedFilterFor packed(context, geometry, weights.data(), bias_values.data());
  if (packed.get() == nullptr) return false;
  const Shape4& out = geometry.output;
  const size_t depth = size_t{geometry.filter_height} * geometry.filter_width *
                       (geometry.input.channels / geometry.groups);
  conv::ForEachHalfBand(geometry, size_t{out.width} * depth * out.channels,
                        context.Input(0).Data<Half>(), context.Output(0).MutableData<Half>(),
                        [&](const Geometry& band, const float* input, float* output) {
                          ConvolveFloat(band, input, weights.data(), bias_values.data(),
                                        packed.get(), p.activation, output);
                        });
  return true;
}

int Execute(OperationContext& context) {
  Geometry geometry;
  NN_RETURN_IF_ERROR(ResolveGeometry(context, &geometry));
  if (geometry.output.Elements() == 0) return ANEURALNETWORKS_NO_ERROR;
  const OperandInfo& input = context.Input(0);
  const OperandInfo& bias = context.Input(2);
  const OperandInfo& output = context.Output(0);
  const Parameters& p = geometry.params;
  if (input.type == ANEURALNETWORKS_TENSOR_FLOAT16 && !p.nchw && ExecuteHalf(context, geometry)) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  if (IsQuantizedType(input.type)) {
    const bool done = output.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM
                          ? ConvolveInt8Gemm<uint8_t>(context, geometry)
                          : ConvolveInt8Gemm<int8_t>(context, geometry);
    if (done) return ANEURALNETWORKS_NO_ERROR;
  }
  const conv::NhwcFloatInput in(input, p.nchw);
  // Constant weights in fp16 or quantised are converted once per model (fp32 ones read as is).
  const conv::FloatValues weights(context, 1);
  if (!IsQuantizedType(input.type)) {
    const conv::FloatValues bias_values(bias);
    conv::FloatOutput out(output, geometry.output, p.nchw);
    const PackedFilterFor packed(context, geometry, weights.data(), bias_values.data());
    ConvolveFloat(geometry, in.data(), weights.data(), bias_values.data(), packed.get(),
                  p.activation, out.data());
    out.Finish(nullptr, ANEURALNETWORKS_FUSED_NONE);
    return ANEURALNETWORKS_NO_ERROR;
  }
  if (output.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM) {
    ExecuteQuantized<uint8_t>(context, geometry, in.data(), weights.data());
  } else {
    ExecuteQuantized<int8_t>(context, geometry, in.data(), weights.data());
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(CONV_2D, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(GROUPED_CONV_2D, Validate, Prepare, Execute);

}  // namespace mock_nnapi
