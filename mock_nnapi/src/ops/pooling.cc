// SPDX-License-Identifier: Apache-2.0
// AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D: 2-D pooling over the height and width of a 4-D
// tensor.
//
// Inputs, explicit padding (10 or 11 inputs): 0 input [N, H, W, C], 1 pad_left, 2 pad_right,
// 3 pad_top, 4 pad_bottom, 5 stride_w, 6 stride_h, 7 filter_w, 8 filter_h, 9 FuseCode,
// 10 optional BOOL layout (true = NCHW, FL3).
// Inputs, implicit padding (7 or 8 inputs): 0 input, 1 PaddingCode (SAME or VALID), 2 stride_w,
// 3 stride_h, 4 filter_w, 5 filter_h, 6 FuseCode, 7 optional BOOL layout (FL3).
// All scalars but the layout flag are INT32. Explicit padding is used iff there are >= 10 inputs.
// Output: [N, out_h, out_w, C] (or NCHW), out = (in + pad_head + pad_tail - filter) / stride + 1.
// SAME padding: out = ceil(in / stride), total = max(0, (out - 1) * stride + filter - in),
// head = total / 2, tail = total - head. VALID: no padding.
// Rules (Android's Pooling.cpp): paddings >= 0, strides and filters > 0, each padding smaller than
// its filter size, height/width/channels > 0 (batches may be 0).
// Types: TENSOR_FLOAT32 (FL1), TENSOR_FLOAT16 (FL3); AVERAGE and MAX also TENSOR_QUANT8_ASYMM
// (FL1) and TENSOR_QUANT8_ASYMM_SIGNED (FL4), whose output must keep the input's scale and zero
// point. AVERAGE divides by the number of in-bounds elements of the window; L2 is
// sqrt(sum(x^2) / in-bounds count). Quantised averages round half away from zero on the raw
// values and the fused activation clamps in the quantised domain (like TFLite).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../kernels/vector_math.h"
#include "axis_helpers.h"
#include "common.h"
#include "nnapi_work.h"

namespace mock_nnapi {
namespace {

using axis_helpers::CheckNotOmitted;
using axis_helpers::OptionalBool;

struct PoolParameters {
  int32_t pad_left = 0;
  int32_t pad_right = 0;
  int32_t pad_top = 0;
  int32_t pad_bottom = 0;
  int32_t stride_w = 1;
  int32_t stride_h = 1;
  int32_t filter_w = 1;
  int32_t filter_h = 1;
  int32_t activation = ANEURALNETWORKS_FUSED_NONE;
  bool nchw = false;
};

// Input index of each parameter for the two signatures: one home, common/nnapi_work.h, which
// the cost model's window size reads too.
using nnapi_common::PoolingInputs;
PoolingInputs InputIndices(const OperationContext& context) {
  return nnapi_common::PoolingInputsFor(context.InputCount());
}
bool IsExplicitPadding(const OperationContext& context) {
  return InputIndices(context).explicit_padding;
}

int64_t TypeFeatureLevel(int32_t operation, int32_t type) {
  switch (type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      return kFeatureLevel1;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      return kFeatureLevel3;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      return operation == ANEURALNETWORKS_L2_POOL_2D ? -1 : kFeatureLevel1;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      return operation == ANEURALNETWORKS_L2_POOL_2D ? -1 : kFeatureLevel4;
    default:
      return -1;
  }
}

// Checks the values of the scalars that are known; `code` is BAD_DATA at validation time.
int CheckParameterValues(const OperationContext& context, int code) {
  const PoolingInputs at = InputIndices(context);
  auto positive = [&](uint32_t i, const char* what) -> int {
    if (!context.HasInputValue(i)) return ANEURALNETWORKS_NO_ERROR;
    NN_CHECK_GT(context.InputScalar<int32_t>(i), 0, code) << context.name() << " " << what;
    return ANEURALNETWORKS_NO_ERROR;
  };
  NN_RETURN_IF_ERROR(positive(at.stride_w, "stride_w"));
  NN_RETURN_IF_ERROR(positive(at.stride_h, "stride_h"));
  NN_RETURN_IF_ERROR(positive(at.filter_w, "filter_w"));
  NN_RETURN_IF_ERROR(positive(at.filter_h, "filter_h"));
  if (context.HasInputValue(at.activation)) {
    const int32_t activation = context.InputScalar<int32_t>(at.activation);
    NN_CHECK(activation >= ANEURALNETWORKS_FUSED_NONE && activation <= ANEURALNETWORKS_FUSED_RELU6,
             code)
        << context.name() << " fused activation " << activation;
  }
  if (!IsExplicitPadding(context)) {
    if (context.HasInputValue(1)) {
      const int32_t scheme = context.InputScalar<int32_t>(1);
      NN_CHECK(scheme == ANEURALNETWORKS_PADDING_SAME || scheme == ANEURALNETWORKS_PADDING_VALID,
               code)
          << context.name() << " padding scheme " << scheme << " is not a PaddingCode";
    }
    return ANEURALNETWORKS_NO_ERROR;
  }
  // Explicit padding: each padding is >= 0 and smaller than the filter size along its axis.
  const char* names[] = {"pad_left", "pad_right", "pad_top", "pad_bottom"};
  for (uint32_t i = 1; i <= 4; ++i) {
    if (!context.HasInputValue(i)) continue;
    const int32_t padding = context.InputScalar<int32_t>(i);
    NN_CHECK_GE(padding, 0, code) << context.name() << " " << names[i - 1];
    const uint32_t filter_index = i <= 2 ? at.filter_w : at.filter_h;
    if (context.HasInputValue(filter_index)) {
      NN_CHECK_LT(padding, context.InputScalar<int32_t>(filter_index), code)
          << context.name() << " " << names[i - 1] << " must be smaller than the filter size";
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {7, 8, 10, 11}, 1));
  const OperandInfo& input = context.Input(0);
  const int64_t level = TypeFeatureLevel(context.type(), input.type);
  NN_CHECK(level > 0, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " does not support " << OperandTypeName(input.type);
  context.RequireFeatureLevel(level);
  const PoolingInputs at = InputIndices(context);
  for (uint32_t i = 1; i <= at.activation; ++i) {
    NN_RETURN_IF_ERROR(CheckInputType(context, i, {ANEURALNETWORKS_INT32}));
  }
  NN_RETURN_IF_ERROR(CheckNotOmitted(context, 0, at.activation));
  if (context.InputCount() == 8 || context.InputCount() == 11) {
    NN_RETURN_IF_ERROR(CheckInputType(context, at.layout, {ANEURALNETWORKS_BOOL}));
    context.RequireFeatureLevel(kFeatureLevel3);
  }
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  NN_RETURN_IF_ERROR(axis_helpers::CheckOutputQuantizationMatchesInput(context));
  if (input.rank_known) {
    NN_CHECK_EQ(input.rank(), 4u, ANEURALNETWORKS_BAD_DATA) << context.name() << " input rank";
  }
  return CheckParameterValues(context, ANEURALNETWORKS_BAD_DATA);
}

// Explicit padding of one spatial axis for a PaddingCode (Android's calculateExplicitPadding).
void ImplicitPadding(int32_t size, int32_t stride, int32_t filter, int32_t scheme, int32_t* head,
                     int32_t* tail) {
  *head = 0;
  *tail = 0;
  if (scheme != ANEURALNETWORKS_PADDING_SAME) return;
  const int64_t out = (static_cast<int64_t>(size) + stride - 1) / stride;
  const int64_t total = std::max<int64_t>(0, (out - 1) * stride + filter - size);
  *head = static_cast<int32_t>(total / 2);
  *tail = static_cast<int32_t>(total - total / 2);
}

// Reads every parameter (all values are known after validation) for the input's shape.
int ReadParameters(const OperationContext& context, PoolParameters* params) {
  NN_RETURN_IF_ERROR(CheckParameterValues(context, ANEURALNETWORKS_OP_FAILED));
  const PoolingInputs at = InputIndices(context);
  params->stride_w = context.InputScalar<int32_t>(at.stride_w);
  params->stride_h = context.InputScalar<int32_t>(at.stride_h);
  params->filter_w = context.InputScalar<int32_t>(at.filter_w);
  params->filter_h = context.InputScalar<int32_t>(at.filter_h);
  params->activation = context.InputScalar<int32_t>(at.activation);
  params->nchw = OptionalBool(context, at.layout, false);
  const OperandInfo& input = context.Input(0);
  NN_CHECK_EQ(input.rank(), 4u, ANEURALNETWORKS_OP_FAILED) << context.name() << " input rank";
  if (IsExplicitPadding(context)) {
    params->pad_left = context.InputScalar<int32_t>(1);
    params->pad_right = context.InputScalar<int32_t>(2);
    params->pad_top = context.InputScalar<int32_t>(3);
    params->pad_bottom = context.InputScalar<int32_t>(4);
  } else {
    const int32_t scheme = context.InputScalar<int32_t>(1);
    const int32_t height = static_cast<int32_t>(input.dim(params->nchw ? 2 : 1));
    const int32_t width = static_cast<int32_t>(input.dim(params->nchw ? 3 : 2));
    ImplicitPadding(width, params->stride_w, params->filter_w, scheme, &params->pad_left,
                    &params->pad_right);
    ImplicitPadding(height, params->stride_h, params->filter_h, scheme, &params->pad_top,
                    &params->pad_bottom);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Output size along one axis; false when the padded input is smaller than the filter.
bool OutputSize(uint32_t size, int32_t filter, int32_t stride, int32_t head, int32_t tail,
                uint32_t* out) {
  const int64_t padded = static_cast<int64_t>(size) + head + tail;
  if (padded < filter) return false;
  *out = static_cast<uint32_t>((padded - filter) / stride + 1);
  return true;
}

struct Geometry {
  uint32_t batches, height, width, channels, out_height, out_width;
};

Geometry GeometryOf(const OperandInfo& input, const OperandInfo& output, bool nchw) {
  Geometry g;
  g.batches = input.dim(0);
  g.height = input.dim(nchw ? 2 : 1);
  g.width = input.dim(nchw ? 3 : 2);
  g.channels = input.dim(nchw ? 1 : 3);
  g.out_height = output.dim(nchw ? 2 : 1);
  g.out_width = output.dim(nchw ? 3 : 2);
  return g;
}

int Prepare(OperationContext& context) {
  PoolParameters params;
  NN_RETURN_IF_ERROR(ReadParameters(context, &params));
  const OperandInfo& input = context.Input(0);
  const uint32_t batches = input.dim(0);
  const uint32_t height = input.dim(params.nchw ? 2 : 1);
  const uint32_t width = input.dim(params.nchw ? 3 : 2);
  const uint32_t channels = input.dim(params.nchw ? 1 : 3);
  NN_CHECK(height > 0 && width > 0 && channels > 0, ANEURALNETWORKS_OP_FAILED)
      << context.name()
      << " only the batch dimension may be zero: " << DimensionsToString(input.dimensions);
  uint32_t out_height = 0;
  uint32_t out_width = 0;
  NN_CHECK(OutputSize(height, params.filter_h, params.stride_h, params.pad_top, params.pad_bottom,
                      &out_height) &&
               OutputSize(width, params.filter_w, params.stride_w, params.pad_left,
                          params.pad_right, &out_width),
           ANEURALNETWORKS_OP_FAILED)
      << context.name() << " filter " << params.filter_h << "x" << params.filter_w
      << " is larger than the padded input " << DimensionsToString(input.dimensions);
  const Dimensions out = params.nchw ? Dimensions{batches, channels, out_height, out_width}
                                     : Dimensions{batches, out_height, out_width, channels};
  return context.SetOutputShape(0, out);
}

// The in-bounds input range [begin, end) of the window of output index `index` along one axis.
struct PoolWindow {
  size_t begin, end;
};

inline PoolWindow WindowAlong(size_t index, int32_t stride, int32_t pad_head, int32_t filter,
                              uint32_t size) {
  const int64_t start = static_cast<int64_t>(index) * stride - pad_head;
  return {static_cast<size_t>(std::max<int64_t>(start, 0)),
          static_cast<size_t>(std::min<int64_t>(start + filter, size))};
}

// Calls body(output_offset, window) for every output element, where window(visit) calls
// visit(input_offset) for every in-bounds element of the pooling window.
template <typename Body>
void ForEachWindow(const Geometry& g, const PoolParameters& p, Body&& body) {
  auto offset = [&](size_t b, size_t y, size_t x, size_t c, size_t h, size_t w) {
    return p.nchw ? ((b * g.channels + c) * h + y) * w + x : ((b * h + y) * w + x) * g.channels + c;
  };
  for (size_t b = 0; b < g.batches; ++b) {
    for (size_t oy = 0; oy < g.out_height; ++oy) {
      const PoolWindow rows = WindowAlong(oy, p.stride_h, p.pad_top, p.filter_h, g.height);
      for (size_t ox = 0; ox < g.out_width; ++ox) {
        const PoolWindow cols = WindowAlong(ox, p.stride_w, p.pad_left, p.filter_w, g.width);
        for (size_t c = 0; c < g.channels; ++c) {
          auto window = [&](auto&& visit) {
            for (size_t y = rows.begin; y < rows.end; ++y) {
              for (size_t x = cols.begin; x < cols.end; ++x) {
                visit(offset(b, y, x, c, g.height, g.width));
              }
            }
          };
          body(offset(b, oy, ox, c, g.out_height, g.out_width), window);
        }
      }
    }
  }
}

template <typename T>
void PoolFloat(int32_t operation, const Geometry& g, const PoolParameters& p, const T* in, T* out) {
  ForEachWindow(g, p, [&](size_t o, auto&& window) {
    double result = 0.0;
    if (operation == ANEURALNETWORKS_MAX_POOL_2D) {
      result = -std::numeric_limits<double>::infinity();
      window([&](size_t i) { result = std::max(result, static_cast<double>(float(in[i]))); });
    } else {
      double sum = 0.0;
      size_t count = 0;
      window([&](size_t i) {
        const double value = float(in[i]);
        sum += operation == ANEURALNETWORKS_L2_POOL_2D ? value * value : value;
        ++count;
      });
      result = sum / static_cast<double>(count);
      if (operation == ANEURALNETWORKS_L2_POOL_2D) result = std::sqrt(result);
    }
    out[o] = T(ApplyActivation(static_cast<float>(result), p.activation));
  });
}

// The same values for fp32 NHWC, a whole pixel of channels at a time (contiguous, so the loops
// vectorise): each channel still sums its window in double, in the same (y, x) order.
// Carries AVX-512 and AVX2 clones on x86-64 (vector_math.h): the same operations on wider lanes.
MOCK_NNAPI_SIMD_CLONES void PoolFloat32Nhwc(int32_t operation, const Geometry& g,
                                            const PoolParameters& p, const float* in, float* out) {
  float low, high;
  FloatActivationRange(p.activation, &low, &high);
  const size_t channels = g.channels;
  std::vector<double> sums(channels);
  std::vector<float> maxima(channels);
  for (size_t b = 0; b < g.batches; ++b) {
    for (size_t oy = 0; oy < g.out_height; ++oy) {
      const PoolWindow rows = WindowAlong(oy, p.stride_h, p.pad_top, p.filter_h, g.height);
      for (size_t ox = 0; ox < g.out_width; ++ox) {
        const PoolWindow cols = WindowAlong(ox, p.stride_w, p.pad_left, p.filter_w, g.width);
        float* __restrict__ dst = out + ((b * g.out_height + oy) * g.out_width + ox) * channels;
        if (operation == ANEURALNETWORKS_MAX_POOL_2D) {
          float* __restrict__ m = maxima.data();
          std::fill(m, m + channels, -std::numeric_limits<float>::infinity());
          for (size_t y = rows.begin; y < rows.end; ++y) {
            for (size_t x = cols.begin; x < cols.end; ++x) {
              const float* __restrict__ src = in + ((b * g.height + y) * g.width + x) * channels;
              for (size_t c = 0; c < channels; ++c) m[c] = std::max(m[c], src[c]);
            }
          }
          for (size_t c = 0; c < channels; ++c) dst[c] = std::min(std::max(m[c], low), high);
          continue;
        }
        const bool l2 = operation == ANEURALNETWORKS_L2_POOL_2D;
        double* __restrict__ sum = sums.data();
        std::fill(sum, sum + channels, 0.0);
        for (size_t y = rows.begin; y < rows.end; ++y) {
          for (size_t x = cols.begin; x < cols.end; ++x) {
            const float* __restrict__ src = in + ((b * g.height + y) * g.width + x) * channels;
            if (l2) {
              for (size_t c = 0; c < channels; ++c) {
                const double value = src[c];
                sum[c] += value * value;
              }
            } else {
              for (size_t c = 0; c < channels; ++c) sum[c] += static_cast<double>(src[c]);
            }
          }
        }
        const double count = static_cast<double>((rows.end - rows.begin) * (cols.end - cols.begin));
        for (size_t c = 0; c < channels; ++c) {
          double result = sum[c] / count;
          if (l2) result = std::sqrt(result);
          dst[c] = std::min(std::max(static_cast<float>(result), low), high);
        }
      }
    }
  }
}

// Integer division rounding half away from zero.
int64_t RoundedDivide(int64_t numerator, int64_t denominator) {
  return numerator >= 0 ? (numerator + denominator / 2) / denominator
                        : -((-numerator + denominator / 2) / denominator);
}

template <typename Q>
void PoolQuantized(int32_t operation, const Geometry& g, const PoolParameters& p,
                   const OperandInfo& output, const Q* in, Q* out) {
  int32_t low = 0;
  int32_t high = 0;
  QuantizedActivationRange<Q>(p.activation, output.scale, output.zero_point, &low, &high);
  ForEachWindow(g, p, [&](size_t o, auto&& window) {
    int64_t result = 0;
    if (operation == ANEURALNETWORKS_MAX_POOL_2D) {
      result = std::numeric_limits<Q>::min();
      window([&](size_t i) { result = std::max<int64_t>(result, in[i]); });
    } else {
      int64_t sum = 0;
      int64_t count = 0;
      window([&](size_t i) {
        sum += in[i];
        ++count;
      });
      result = RoundedDivide(sum, count);
    }
    out[o] = static_cast<Q>(std::min<int64_t>(std::max<int64_t>(result, low), high));
  });
}

int Execute(OperationContext& context) {
  PoolParameters params;
  NN_RETURN_IF_ERROR(ReadParameters(context, &params));
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  if (indexing::Product(output.dimensions) == 0) return ANEURALNETWORKS_NO_ERROR;
  const Geometry g = GeometryOf(input, output, params.nchw);
  const int32_t op = context.type();
  switch (input.type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      if (!params.nchw) {
        PoolFloat32Nhwc(op, g, params, input.Data<float>(), output.MutableData<float>());
        return ANEURALNETWORKS_NO_ERROR;
      }
      PoolFloat(op, g, params, input.Data<float>(), output.MutableData<float>());
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      PoolFloat(op, g, params, input.Data<Half>(), output.MutableData<Half>());
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      PoolQuantized(op, g, params, output, input.Data<uint8_t>(), output.MutableData<uint8_t>());
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      PoolQuantized(op, g, params, output, input.Data<int8_t>(), output.MutableData<int8_t>());
      return ANEURALNETWORKS_NO_ERROR;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED)
          << context.name() << ": unsupported type " << OperandTypeName(input.type);
  }
}

}  // namespace

NN_REGISTER_OPERATION(AVERAGE_POOL_2D, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(MAX_POOL_2D, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(L2_POOL_2D, Validate, Prepare, Execute);

}  // namespace mock_nnapi
