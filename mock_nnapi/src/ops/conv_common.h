// SPDX-License-Identifier: Apache-2.0
// Padding, output-size, layout and argument helpers shared by CONV_2D, GROUPED_CONV_2D,
// DEPTHWISE_CONV_2D and TRANSPOSE_CONV_2D.
//
// NNAPI rules implemented here (NDK reference; Android's calculateExplicitPadding and
// computeOutSize):
// - Implicit padding: PADDING_SAME gives out = ceil(in / stride) and a total padding of
//   max(0, (out - 1) * stride + effective_filter - in), split head = total / 2, tail = the rest;
//   PADDING_VALID pads nothing. effective_filter = (filter - 1) * dilation + 1.
// - Convolution output size: (in - effective_filter + stride + head + tail) / stride.
// - Transposed convolution: SAME padding is computed against the requested output size, and the
//   tail is allowed to go negative so the output fits the last stride exactly;
//   out = in * stride + filter - stride - head - tail.
// - Scalar arguments: paddings >= 0, strides >= 1, dilations >= 1, padding code SAME or VALID.
//   Constant values are checked when the operation is added (BAD_DATA); values that are only
//   known at execution fail the execution.
// - Layout flag (BOOL, true = NCHW): input and output are [N, C, H, W] instead of [N, H, W, C];
//   filters keep their NHWC-style layout.
#ifndef MOCK_NNAPI_SRC_OPS_CONV_COMMON_H_
#define MOCK_NNAPI_SRC_OPS_CONV_COMMON_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "../kernels/vector_convert.h"
#include "common.h"
#include "gemm.h"

namespace mock_nnapi {
namespace conv {

// Indices of the scalar arguments of one convolution-family signature; -1 when absent.
struct ArgumentIndices {
  bool explicit_padding = false;
  int32_t padding_code = -1;  // implicit padding only
  int32_t pad_left = -1;      // explicit: left, right, top, bottom at pad_left .. pad_left + 3
  int32_t stride_w = -1;
  int32_t stride_h = -1;
  int32_t extra = -1;  // depth multiplier (DEPTHWISE) or number of groups (GROUPED)
  int32_t activation = -1;
  int32_t layout = -1;
  int32_t dilation_w = -1;
  int32_t dilation_h = -1;
  int32_t output_shape = -1;  // TRANSPOSE_CONV_2D implicit padding
};

// Argument values (meaningful once known: during prepare and execute).
struct Parameters {
  int32_t padding_code = 0;
  int32_t pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;
  int32_t stride_w = 1, stride_h = 1;
  int32_t dilation_w = 1, dilation_h = 1;
  int32_t extra = 1;
  int32_t activation = ANEURALNETWORKS_FUSED_NONE;
  bool nchw = false;
};

// Sizes of a 4-D activation tensor in NHWC order, whatever its layout.
struct Shape4 {
  uint32_t batches = 0, height = 0, width = 0, channels = 0;
  size_t Elements() const { return size_t{batches} * height * width * channels; }
};

inline Shape4 ToNhwc(const Dimensions& dims, bool nchw) {
  if (nchw) return {dims[0], dims[2], dims[3], dims[1]};
  return {dims[0], dims[1], dims[2], dims[3]};
}

inline Dimensions FromNhwc(const Shape4& shape, bool nchw) {
  if (nchw) return {shape.batches, shape.channels, shape.height, shape.width};
  return {shape.batches, shape.height, shape.width, shape.channels};
}

inline int32_t EffectiveFilterSize(int32_t filter, int32_t dilation) {
  return (filter - 1) * dilation + 1;
}

// Implicit padding of a convolution along one dimension.
inline void ImplicitPadding(int32_t code, int32_t in, int32_t stride, int32_t dilation,
                            int32_t filter, int32_t* head, int32_t* tail) {
  *head = 0;
  *tail = 0;
  if (code != ANEURALNETWORKS_PADDING_SAME) return;
  const int32_t out = (in + stride - 1) / stride;
  const int32_t needed = (out - 1) * stride + EffectiveFilterSize(filter, dilation);
  if (needed > in) {
    *head = (needed - in) / 2;
    *tail = needed - in - *head;
  }
}

// Implicit padding of a transposed convolution against its requested output size.
inline void ImplicitPaddingTranspose(int32_t code, int32_t out, int32_t stride, int32_t filter,
                                     int32_t* head, int32_t* tail) {
  *head = 0;
  *tail = 0;
  if (code != ANEURALNETWORKS_PADDING_SAME) return;
  const int32_t in = (out + stride - 1) / stride;
  const int32_t needed = (in - 1) * stride + filter;
  if (needed > out) *head = (needed - out) / 2;
  *tail = needed - out - *head;
}

// Output size of a convolution along one dimension (may be <= 0 for impossible geometry).
inline int64_t ConvOutputSize(int64_t in, int64_t filter, int64_t stride, int64_t dilation,
                              int64_t head, int64_t tail) {
  const int64_t span = in + head + tail - ((filter - 1) * dilation + 1);
  if (span < 0) return 0;
  return (span + stride) / stride;
}

// Resolves implicit padding into p's explicit pads (unless `explicit_padding`) and computes the
// output height and width of a dilated convolution over `in`. OP_FAILED (at prepare, like
// Android) when a padding is not smaller than the effective filter or the output is empty.
inline int ResolveConvOutputSize(const OperationContext& context, bool explicit_padding,
                                 const Shape4& in, uint32_t filter_height, uint32_t filter_width,
                                 Parameters* p, uint32_t* out_height, uint32_t* out_width) {
  if (!explicit_padding) {
    ImplicitPadding(p->padding_code, in.width, p->stride_w, p->dilation_w, filter_width,
                    &p->pad_left, &p->pad_right);
    ImplicitPadding(p->padding_code, in.height, p->stride_h, p->dilation_h, filter_height,
                    &p->pad_top, &p->pad_bottom);
  }
  const int64_t effective_w = EffectiveFilterSize(filter_width, p->dilation_w);
  const int64_t effective_h = EffectiveFilterSize(filter_height, p->dilation_h);
  NN_CHECK(p->pad_left < effective_w && p->pad_right < effective_w && p->pad_top < effective_h &&
               p->pad_bottom < effective_h,
           ANEURALNETWORKS_OP_FAILED)
      << context.name() << " padding must be smaller than the effective filter size";
  const int64_t out_w =
      ConvOutputSize(in.width, filter_width, p->stride_w, p->dilation_w, p->pad_left, p->pad_right);
  const int64_t out_h = ConvOutputSize(in.height, filter_height, p->stride_h, p->dilation_h,
                                       p->pad_top, p->pad_bottom);
  NN_CHECK(out_w > 0 && out_h > 0, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " output would be empty";
  *out_height = static_cast<uint32_t>(out_h);
  *out_width = static_cast<uint32_t>(out_w);
  return ANEURALNETWORKS_NO_ERROR;
}

inline int64_t TransposeConvOutputSize(int64_t in, int64_t filter, int64_t stride, int64_t head,
                                       int64_t tail) {
  return in * stride + filter - stride - head - tail;
}

// out[j * rows + i] = in[i * cols + j]: a transpose in square tiles, so that both sides move
// whole cache lines (a plain loop strides through one of them an element at a time). Bands of
// tile rows are shared out over the gemm::ParallelFor pool (an exact copy: the result does not
// depend on the split).
template <typename T>
void Transpose2D(const T* __restrict__ in, size_t rows, size_t cols, T* __restrict__ out) {
  constexpr size_t kTile = 16;
  const size_t bands = (rows + kTile - 1) / kTile;
  gemm::ParallelFor(bands, kTile * cols, [&](size_t band_begin, size_t band_end) {
    for (size_t i0 = band_begin * kTile; i0 < std::min(rows, band_end * kTile); i0 += kTile) {
      const size_t i1 = std::min(rows, i0 + kTile);
      for (size_t j0 = 0; j0 < cols; j0 += kTile) {
        const size_t j1 = std::min(cols, j0 + kTile);
        for (size_t j = j0; j < j1; ++j) {
          for (size_t i = i0; i < i1; ++i) out[j * rows + i] = in[i * cols + j];
        }
      }
    }
  });
}

// x clamped to [low, high]: the expressions of std::min(std::max(x, low), high) (NaN stays NaN),
// written on values so that loops over it vectorise (std::min and std::max return references,
// which GCC turned into a scalar loop of conditional pointer moves).
inline float Clamp(float x, float low, float high) {
  const float at_least_low = x < low ? low : x;
  return high < at_least_low ? high : at_least_low;
}

// data[i] = Clamp(data[i], low, high) for i in [0, count), shared out over the pool.
inline void ClampAll(float* data, size_t count, float low, float high) {
  constexpr size_t kBlock = 4096;
  const size_t blocks = (count + kBlock - 1) / kBlock;
  gemm::ParallelFor(blocks, kBlock, [&](size_t begin, size_t end) {
    float* __restrict__ p = data;
    const size_t last = std::min(count, end * kBlock);
    for (size_t i = begin * kBlock; i < last; ++i) p[i] = Clamp(p[i], low, high);
  });
}

// Layout transforms between [N, C, H, W] and [N, H, W, C].
template <typename T>
void NchwToNhwc(const T* in, const Shape4& shape, T* out) {
  const size_t plane = size_t{shape.height} * shape.width;
  const size_t batch = plane * shape.channels;
  for (uint32_t n = 0; n < shape.batches; ++n) {
    Transpose2D(in + n * batch, shape.channels, plane, out + n * batch);
  }
}

template <typename T>
void NhwcToNchw(const T* in, const Shape4& shape, T* out) {
  const size_t plane = size_t{shape.height} * shape.width;
  const size_t batch = plane * shape.channels;
  for (uint32_t n = 0; n < shape.batches; ++n) {
    Transpose2D(in + n * batch, plane, shape.channels, out + n * batch);
  }
}

// Checks that input `index` (an INT32 scalar) is >= minimum when its value is known.
inline int CheckIntArgument(const OperationContext& context, int32_t index, int32_t minimum,
                            const char* what) {
  if (index < 0 || !context.HasInputValue(index)) return ANEURALNETWORKS_NO_ERROR;
  const int32_t value = context.InputScalar<int32_t>(index);
  NN_CHECK_GE(value, minimum, ANEURALNETWORKS_BAD_DATA) << context.name() << " " << what;
  return ANEURALNETWORKS_NO_ERROR;
}

// Checks the number and the types of the inputs against `expected`.
inline int CheckInputTypes(const OperationContext& context, const std::vector<int32_t>& expected) {
  NN_CHECK_EQ(context.InputCount(), expected.size(), ANEURALNETWORKS_BAD_DATA)
      << context.name() << " input count";
  for (uint32_t i = 0; i < expected.size(); ++i) {
    NN_CHECK_EQ(context.InputType(i), expected[i], ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input " << i << " has type " << OperandTypeName(context.InputType(i))
        << "; expected " << OperandTypeName(expected[i]);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// The input types of the signature described by `indices`: input, filter and bias, then INT32
// scalars, the layout BOOL and (TRANSPOSE_CONV_2D) the output-shape TENSOR_INT32. It has exactly
// as many entries as the signature has inputs, so CheckInputTypes also checks the count.
inline std::vector<int32_t> ExpectedInputTypes(const ArgumentIndices& indices, int32_t input_type,
                                               int32_t filter_type, int32_t bias_type) {
  int32_t last = 2;
  for (int32_t index :
       {indices.padding_code, indices.stride_w, indices.stride_h, indices.extra, indices.activation,
        indices.layout, indices.dilation_w, indices.dilation_h, indices.output_shape}) {
    last = std::max(last, index);
  }
  if (indices.explicit_padding) last = std::max(last, indices.pad_left + 3);
  std::vector<int32_t> types(last + 1, ANEURALNETWORKS_INT32);
  types[0] = input_type;
  types[1] = filter_type;
  types[2] = bias_type;
  if (indices.layout >= 0) types[indices.layout] = ANEURALNETWORKS_BOOL;
  if (indices.output_shape >= 0) types[indices.output_shape] = ANEURALNETWORKS_TENSOR_INT32;
  return types;
}

// Checks every scalar argument named by `indices` whose value is known (types are checked by
// CheckInputTypes). `allow_negative_tail` accepts negative right/bottom padding
// (TRANSPOSE_CONV_2D).
inline int CheckArgumentValues(const OperationContext& context, const ArgumentIndices& indices,
                               bool allow_negative_tail) {
  if (indices.padding_code >= 0 && context.HasInputValue(indices.padding_code)) {
    const int32_t code = context.InputScalar<int32_t>(indices.padding_code);
    NN_CHECK(code == ANEURALNETWORKS_PADDING_SAME || code == ANEURALNETWORKS_PADDING_VALID,
             ANEURALNETWORKS_BAD_DATA)
        << context.name() << " padding code " << code;
  }
  if (indices.explicit_padding) {
    const int32_t tail_minimum = allow_negative_tail ? INT32_MIN : 0;
    NN_RETURN_IF_ERROR(CheckIntArgument(context, indices.pad_left, 0, "padding left"));
    NN_RETURN_IF_ERROR(
        CheckIntArgument(context, indices.pad_left + 1, tail_minimum, "padding right"));
    NN_RETURN_IF_ERROR(CheckIntArgument(context, indices.pad_left + 2, 0, "padding top"));
    NN_RETURN_IF_ERROR(
        CheckIntArgument(context, indices.pad_left + 3, tail_minimum, "padding bottom"));
  }
  NN_RETURN_IF_ERROR(CheckIntArgument(context, indices.stride_w, 1, "stride width"));
  NN_RETURN_IF_ERROR(CheckIntArgument(context, indices.stride_h, 1, "stride height"));
  NN_RETURN_IF_ERROR(CheckIntArgument(context, indices.dilation_w, 1, "dilation width"));
  NN_RETURN_IF_ERROR(CheckIntArgument(context, indices.dilation_h, 1, "dilation height"));
  const char* extra =
      context.type() == ANEURALNETWORKS_GROUPED_CONV_2D ? "number of groups" : "depth multiplier";
  NN_RETURN_IF_ERROR(CheckIntArgument(context, indices.extra, 1, extra));
  NN_RETURN_IF_ERROR(CheckFusedActivation(context, indices.activation));
  return ANEURALNETWORKS_NO_ERROR;
}

// Reads all arguments (their values must be known). Implicit padding is resolved by the caller.
inline Parameters ReadArguments(const OperationContext& context, const ArgumentIndices& indices) {
  auto read = [&](int32_t index, int32_t fallback) {
    return index < 0 ? fallback : context.InputScalarOr<int32_t>(index, fallback);
  };
  Parameters p;
  p.padding_code = read(indices.padding_code, 0);
  if (indices.explicit_padding) {
    p.pad_left = read(indices.pad_left, 0);
    p.pad_right = read(indices.pad_left + 1, 0);
    p.pad_top = read(indices.pad_left + 2, 0);
    p.pad_bottom = read(indices.pad_left + 3, 0);
  }
  p.stride_w = read(indices.stride_w, 1);
  p.stride_h = read(indices.stride_h, 1);
  p.dilation_w = read(indices.dilation_w, 1);
  p.dilation_h = read(indices.dilation_h, 1);
  p.extra = read(indices.extra, 1);
  p.activation = read(indices.activation, ANEURALNETWORKS_FUSED_NONE);
  p.nchw = indices.layout >= 0 && context.InputScalarOr<uint8_t>(indices.layout, 0) != 0;
  return p;
}

// Checks the filter of a quantised convolution: the input's QUANT8 type, or
// TENSOR_QUANT8_SYMM_PER_CHANNEL quantised along `channel_dim`.
inline int CheckQuantizedFilter(const OperationContext& context, uint32_t filter_index,
                                uint32_t channel_dim) {
  const OperandInfo& filter = context.Input(filter_index);
  const int32_t input_type = context.InputType(0);
  NN_CHECK(
      filter.type == input_type || filter.type == ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL,
      ANEURALNETWORKS_BAD_DATA)
      << context.name() << " filter type " << OperandTypeName(filter.type)
      << " does not suit input type " << OperandTypeName(input_type);
  if (filter.type == ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL) {
    NN_CHECK(filter.channel_quant != nullptr, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " per-channel filter without setOperandSymmPerChannelQuantParams";
    NN_CHECK_EQ(filter.channel_quant->channel_dim, channel_dim, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " per-channel filter channelDim";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Checks the bias: the input's type for float inputs; TENSOR_INT32 for quantised inputs, with
// scale input_scale * filter_scale (relative tolerance 1e-6, Android's CPU check) unless the
// filter is quantised per channel. The bias is required and 1-D.
inline int CheckBias(const OperationContext& context, uint32_t input_index, uint32_t filter_index,
                     uint32_t bias_index) {
  const OperandInfo& input = context.Input(input_index);
  const OperandInfo& filter = context.Input(filter_index);
  const OperandInfo& bias = context.Input(bias_index);
  NN_CHECK(!bias.omitted, ANEURALNETWORKS_BAD_DATA) << context.name() << " bias is required";
  if (bias.rank_known) {
    NN_CHECK_EQ(bias.rank(), 1u, ANEURALNETWORKS_BAD_DATA) << context.name() << " bias rank";
  }
  if (!IsQuantizedType(input.type)) {
    NN_CHECK_EQ(bias.type, input.type, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " bias type " << OperandTypeName(bias.type);
    return ANEURALNETWORKS_NO_ERROR;
  }
  NN_CHECK_EQ(bias.type, ANEURALNETWORKS_TENSOR_INT32, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " quantised bias type " << OperandTypeName(bias.type);
  if (filter.type != ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL) {
    const double product = input.scale * filter.scale;
    const double bias_scale = bias.scale;
    NN_CHECK(std::abs(product - bias_scale) <= 1e-6 * std::min(product, bias_scale),
             ANEURALNETWORKS_BAD_DATA)
        << context.name() << " bias scale " << bias.scale
        << " must equal input scale * filter scale " << product;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Checks that a known rank equals `rank`.
inline int CheckRankIs(const OperationContext& context, const OperandInfo& operand, uint32_t rank,
                       const char* what) {
  if (!operand.rank_known) return ANEURALNETWORKS_NO_ERROR;
  NN_CHECK_EQ(operand.rank(), rank, ANEURALNETWORKS_BAD_DATA) << context.name() << " " << what;
  return ANEURALNETWORKS_NO_ERROR;
}

// The real multiplier input_scale * filter_scale[channel] / output_scale of each output channel.
inline std::vector<double> OutputMultipliers(const OperandInfo& input, const OperandInfo& filter,
                                             const OperandInfo& output, uint32_t channels) {
  std::vector<double> multipliers(channels);
  for (uint32_t c = 0; c < channels; ++c) {
    const float filter_scale =
        filter.channel_quant != nullptr ? filter.channel_quant->scales[c] : filter.scale;
    multipliers[c] = static_cast<double>(input.scale * filter_scale) / output.scale;
  }
  return multipliers;
}

// The largest |value - zero_point| of a quantised operand.
inline float MaxAbsOffset(const OperandInfo& operand) {
  return operand.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM
             ? gemm::MaxAbsOffset<uint8_t>(operand.zero_point)
             : gemm::MaxAbsOffset<int8_t>(operand.zero_point);
}

// Float values of an operand: fp32 as is, fp16 converted, quantised minus the zero point
// (exact small integers; per-channel filters have zero point 0).
class FloatValues {
 public:
  FloatValues() = default;
  explicit FloatValues(const OperandInfo& operand) { Assign(operand); }
  // Input `input` of the operation; a constant is converted once per model and kept
  // (OperationContext::Derived, entry key `input`).
  FloatValues(const OperationContext& context, uint32_t input) {
    const OperandInfo& operand = context.Input(input);
    if (operand.constant && operand.type != ANEURALNETWORKS_TENSOR_FLOAT32) {
      const size_t count = ElementCount(operand.dimensions).value_or(0);
      const std::vector<float>* converted =
          context.Derived<std::vector<float>>(input, count * sizeof(float), [&] {
            FloatValues values(operand);
            return std::make_unique<std::vector<float>>(std::move(values.storage_));
          });
      if (converted != nullptr) {
        data_ = converted->data();
        return;
      }
    }
    Assign(operand);
  }
  void Assign(const OperandInfo& operand) {
    const size_t count = ElementCount(operand.dimensions).value_or(0);
    switch (operand.type) {
      case ANEURALNETWORKS_TENSOR_FLOAT32:
        data_ = operand.Data<float>();
        return;
      case ANEURALNETWORKS_TENSOR_FLOAT16:
        storage_ = gemm::HalfToFloat(operand.Data<Half>(), count);
        break;
      case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
        storage_ = gemm::OffsetToFloat(operand.Data<uint8_t>(), count, operand.zero_point);
        break;
      default:  // TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT8_SYMM_PER_CHANNEL
        storage_ = gemm::OffsetToFloat(operand.Data<int8_t>(), count, operand.zero_point);
        break;
    }
    data_ = storage_.data();
  }
  const float* data() const { return data_; }

 private:
  std::vector<float> storage_;
  const float* data_ = nullptr;
};

// A per-thread work buffer kept between runs (thread_local): grows to the largest size asked
// for, never shrinks, and is not initialised (std::vector::resize zero-fills what it adds, which
// costs as much as a small band's conversion when band sizes alternate).
template <typename T>
class ScratchArray {
 public:
  T* Get(size_t count) {
    if (count > capacity_) {
      data_.reset(new T[count]);
      capacity_ = count;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<T[]> data_;
  size_t capacity_ = 0;
};

// TENSOR_FLOAT16 NHWC convolutions run their fp32 kernels band by band: one band is some output
// rows of one image; its receptive input rows are converted to fp32 and its output rows back to
// fp16 in per-thread buffers that stay in cache (no whole-tensor fp32 copies). Every output row
// is computed as on the whole map, so the results are those of the fp32 kernel rounded to fp16.
//
// Runs body(const Geometry& band, const float* input, float* output) for every band of
// `geometry` on the pool and converts the outputs: `band` is the band as a map of its own (one
// image of band.input.height converted rows, band.output.height output rows, its own top
// padding), `input` its rows in fp32, `output` room for its output rows, which `body` writes
// all of. Geometry is the operation's (CONV_2D's or DEPTHWISE_CONV_2D's): NHWC Shape4s `input`
// and `output`, `filter_height` and `params` (stride_h, dilation_h, pad_top). Bands hold their
// receptive rows and output rows in fp32 within 512 KiB (half the L2 cache of this machine's
// cores) and are at least two per thread where the map allows; `cost_per_row` is a band row's
// multiply-adds (the pool's threshold).
template <typename Geometry, typename Body>
void ForEachHalfBand(const Geometry& geometry, size_t cost_per_row, const Half* input, Half* output,
                     Body&& body) {
  const Shape4& in = geometry.input;
  const Shape4& out = geometry.output;
  const int64_t stride_h = geometry.params.stride_h;
  const int64_t pad_top = geometry.params.pad_top;
  const size_t window_rows = size_t{geometry.filter_height - 1} * geometry.params.dilation_h + 1;
  const size_t in_row = size_t{in.width} * in.channels;
  const size_t out_row = size_t{out.width} * out.channels;
  constexpr size_t kBandBytes = size_t{512} << 10;
  const size_t fitting = kBandBytes / sizeof(float);
  size_t band_rows = 1;
  while (band_rows < out.height &&
         ((band_rows * stride_h + window_rows) * in_row + (band_rows + 1) * out_row) <= fitting) {
    ++band_rows;
  }
  const size_t wanted = 2 * static_cast<size_t>(gemm::ThreadCount());
  const size_t per_image = (wanted + in.batches - 1) / std::max<size_t>(in.batches, 1);
  band_rows = std::max<size_t>(1, std::min(band_rows, (out.height + per_image - 1) / per_image));
  const size_t bands_per_image = (out.height + band_rows - 1) / band_rows;
  const uint16_t* input_bits = reinterpret_cast<const uint16_t*>(input);
  uint16_t* output_bits = reinterpret_cast<uint16_t*>(output);
  gemm::ParallelFor(
      out.batches * bands_per_image, band_rows * cost_per_row, [&](size_t begin, size_t end) {
        thread_local ScratchArray<float> input_rows, output_rows;
        for (size_t index = begin; index < end; ++index) {
          const size_t image = index / bands_per_image;
          const size_t first_row = index % bands_per_image * band_rows;
          const size_t rows = std::min<size_t>(out.height - first_row, band_rows);
          // Input rows [iy_begin, iy_end) hold every valid tap of the band's output rows.
          const int64_t first = static_cast<int64_t>(first_row) * stride_h - pad_top;
          const int64_t last = static_cast<int64_t>(first_row + rows - 1) * stride_h - pad_top +
                               static_cast<int64_t>(window_rows);
          const int64_t iy_begin = std::max<int64_t>(0, first);
          const int64_t iy_end = std::max<int64_t>(iy_begin, std::min<int64_t>(in.height, last));
          const size_t input_rows_count = static_cast<size_t>(iy_end - iy_begin);
          Geometry band = geometry;
          band.input.batches = band.output.batches = 1;
          band.input.height = static_cast<uint32_t>(input_rows_count);
          band.output.height = static_cast<uint32_t>(rows);
          band.params.pad_top = static_cast<int32_t>(iy_begin - first);
          float* input_floats = input_rows.Get(std::max<size_t>(1, input_rows_count * in_row));
          float* output_floats = output_rows.Get(rows * out_row);
          vector_convert::HalfToFloat(input_bits + (image * in.height + iy_begin) * in_row,
                                      input_rows_count * in_row, input_floats);
          body(static_cast<const Geometry&>(band), static_cast<const float*>(input_floats),
               output_floats);
          vector_convert::FloatToHalf(output_floats, rows * out_row,
                                      output_bits + (image * out.height + first_row) * out_row);
        }
      });
}

// An activation input as NHWC floats (see FloatValues), transposed from NCHW when needed.
class NhwcFloatInput {
 public:
  NhwcFloatInput(const OperandInfo& input, bool nchw)
      : values_(input), shape_(ToNhwc(input.dimensions, nchw)) {
    data_ = values_.data();
    if (nchw) {
      transposed_.resize(shape_.Elements());
      NchwToNhwc(data_, shape_, transposed_.data());
      data_ = transposed_.data();
    }
  }
  const float* data() const { return data_; }
  const Shape4& shape() const { return shape_; }

 private:
  FloatValues values_;
  std::vector<float> transposed_;
  const float* data_ = nullptr;
  Shape4 shape_;
};

// Where a float kernel writes its NHWC result: the output itself for an fp32 NHWC output, else a
// scratch buffer that Finish converts (fp16) and transposes (NCHW) into the output.
class FloatOutput {
 public:
  FloatOutput(const OperandInfo& output, const Shape4& shape, bool nchw)
      : output_(output), shape_(shape), nchw_(nchw) {
    if (output.type == ANEURALNETWORKS_TENSOR_FLOAT32 && !nchw) {
      data_ = output.MutableData<float>();
    } else {
      storage_.resize(shape.Elements());
      data_ = storage_.data();
    }
  }
  float* data() { return data_; }

  // Adds the per-channel bias (may be null), applies the activation and stores the result.
  void Finish(const float* bias, int32_t activation) {
    if (bias != nullptr || activation != ANEURALNETWORKS_FUSED_NONE) AddBias(bias, activation);
    if (data_ == output_.MutableData<float>()) return;
    if (output_.type == ANEURALNETWORKS_TENSOR_FLOAT32) {  // NCHW
      NhwcToNchw(data_, shape_, output_.MutableData<float>());
      return;
    }
    const float* source = data_;
    std::vector<float> transposed;
    if (nchw_) {
      transposed.resize(shape_.Elements());
      NhwcToNchw(data_, shape_, transposed.data());
      source = transposed.data();
    }
    gemm::FloatToHalf(source, shape_.Elements(), output_.MutableData<Half>());
  }

 private:
  void AddBias(const float* bias, int32_t activation) {
    float low, high;
    FloatActivationRange(activation, &low, &high);
    const size_t channels = shape_.channels;
    const size_t pixels = channels == 0 ? 0 : shape_.Elements() / channels;
    for (size_t p = 0; p < pixels; ++p) {
      float* row = data_ + p * channels;
      for (size_t c = 0; c < channels; ++c) {
        const float value = bias != nullptr ? row[c] + bias[c] : row[c];
        row[c] = Clamp(value, low, high);
      }
    }
  }

  const OperandInfo& output_;
  Shape4 shape_;
  bool nchw_;
  std::vector<float> storage_;
  float* data_ = nullptr;
};

// The quantised output's activation range and the per-channel terms of its requantisation (a
// missing bias reads as zeros).
template <typename Q>
struct Requantization {
  Requantization(const int32_t* bias_data, std::vector<double> channel_multipliers,
                 int32_t activation, const OperandInfo& output)
      : multipliers(std::move(channel_multipliers)), zero_point(output.zero_point) {
    QuantizedActivationRange<Q>(activation, output.scale, output.zero_point, &low, &high);
    if (bias_data == nullptr) {
      zeros.assign(multipliers.size(), 0);
      bias_data = zeros.data();
    }
    bias = bias_data;
  }
  // out[r * channels + c] = gemm::Requantize(accumulators[r * channels + c] + bias[c],
  // multipliers[c], ...) for `rows` rows of all channels (vectorised, the same values).
  void Rows(const int32_t* accumulators, size_t rows, Q* out) const {
    vector_convert::RequantizeRows(accumulators, rows, multipliers.size(), bias, multipliers.data(),
                                   zero_point, low, high, out);
  }

  std::vector<double> multipliers;
  std::vector<int32_t> zeros;
  const int32_t* bias = nullptr;
  int32_t zero_point = 0, low = 0, high = 0;
};

// Requantises NHWC int32 accumulators (+ bias) into the quantised output, per output channel
// (pixels shared out over the pool; every element is computed the same way whatever the split).
template <typename Q>
void StoreQuantized(const int32_t* accumulators, const Shape4& shape, const int32_t* bias,
                    const std::vector<double>& multipliers, int32_t activation,
                    const OperandInfo& output, bool nchw) {
  const Requantization<Q> requantization(bias, multipliers, activation, output);
  const size_t channels = shape.channels;
  const size_t pixels = channels == 0 ? 0 : shape.Elements() / channels;
  Q* out = output.MutableData<Q>();
  std::unique_ptr<Q[]> nhwc;
  Q* target = out;
  if (nchw) {
    nhwc.reset(new Q[shape.Elements()]);  // every element is written below
    target = nhwc.get();
  }
  constexpr size_t kBlockElements = 16384;
  const size_t block = channels == 0 ? 1 : std::max<size_t>(1, kBlockElements / channels);
  gemm::ParallelFor(
      (pixels + block - 1) / block, block * channels * 4, [&](size_t begin, size_t end) {
        const size_t first = begin * block;
        const size_t count = std::min(pixels, end * block) - first;
        requantization.Rows(accumulators + first * channels, count, target + first * channels);
      });
  if (nchw) NhwcToNchw(target, shape, out);
}

inline void StoreQuantizedOutput(const int32_t* accumulators, const Shape4& shape,
                                 const int32_t* bias, const std::vector<double>& multipliers,
                                 int32_t activation, const OperandInfo& output, bool nchw) {
  if (output.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM) {
    StoreQuantized<uint8_t>(accumulators, shape, bias, multipliers, activation, output, nchw);
  } else {
    StoreQuantized<int8_t>(accumulators, shape, bias, multipliers, activation, output, nchw);
  }
}

}  // namespace conv
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_CONV_COMMON_H_
