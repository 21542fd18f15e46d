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
// The kernels these operations share (layout transposes, clamps, fp16 bands, requantisation) are
// in ../kernels.
#ifndef MOCK_NNAPI_SRC_OPS_CONV_COMMON_H_
#define MOCK_NNAPI_SRC_OPS_CONV_COMMON_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "../kernels/clamp.h"
#include "../kernels/layout.h"
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

inline int64_t TransposeConvOutputSize(int64_t in, int64_t filter, int64_t stride, int64_t head,
                                       int64_t tail) {
  return in * stride + filter - stride - head - tail;
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

// A convolution's sizes once its argument values are known: the input's and the output's NHWC
// sizes, the filter's height and width, and the arguments (padding resolved by the operation).
struct Geometry {
  Shape4 input;
  Shape4 output;
  uint32_t filter_height = 0;
  uint32_t filter_width = 0;
  Parameters params;
};

// The part of a geometry every member of the family resolves the same way, first, at prepare and
// execute: the argument values checked (CheckArgumentValues; `allow_negative_tail` as there), the
// ranks of input (4), filter (4) and bias (1) checked (OP_FAILED), then the arguments read into
// geometry->params, the input's NHWC sizes and the filter's height and width (dimensions 1 and 2
// of every member's filter). The channel checks, the padding and geometry->output are the
// operation's.
inline int ReadGeometry(const OperationContext& context, const ArgumentIndices& indices,
                        bool allow_negative_tail, Geometry* geometry) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& filter = context.Input(1);
  const OperandInfo& bias = context.Input(2);
  NN_RETURN_IF_ERROR(CheckArgumentValues(context, indices, allow_negative_tail));
  NN_CHECK_EQ(input.rank(), 4u, ANEURALNETWORKS_OP_FAILED) << context.name() << " input rank";
  NN_CHECK_EQ(filter.rank(), 4u, ANEURALNETWORKS_OP_FAILED) << context.name() << " filter rank";
  NN_CHECK_EQ(bias.rank(), 1u, ANEURALNETWORKS_OP_FAILED) << context.name() << " bias rank";
  geometry->params = ReadArguments(context, indices);
  geometry->input = ToNhwc(input.dimensions, geometry->params.nchw);
  geometry->filter_height = filter.dim(1);
  geometry->filter_width = filter.dim(2);
  return ANEURALNETWORKS_NO_ERROR;
}

// The output of a (dilated) convolution: CONV_2D, GROUPED_CONV_2D and DEPTHWISE_CONV_2D, not
// TRANSPOSE_CONV_2D. Resolves implicit padding into geometry->params' explicit pads (unless
// `explicit_padding`) and sets geometry->output: the input's batches, the output height and width
// over geometry->input, `out_channels` channels. OP_FAILED (at prepare, like Android) when a
// padding is not smaller than the effective filter or the output is empty.
inline int ResolveConvOutput(const OperationContext& context, bool explicit_padding,
                             uint32_t out_channels, Geometry* geometry) {
  const Shape4& in = geometry->input;
  const uint32_t filter_height = geometry->filter_height;
  const uint32_t filter_width = geometry->filter_width;
  Parameters* p = &geometry->params;
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
  geometry->output = {in.batches, static_cast<uint32_t>(out_h), static_cast<uint32_t>(out_w),
                      out_channels};
  return ANEURALNETWORKS_NO_ERROR;
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

}  // namespace conv
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_CONV_COMMON_H_
