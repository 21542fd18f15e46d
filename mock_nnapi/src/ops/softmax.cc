// SPDX-License-Identifier: Apache-2.0
// SOFTMAX and LOG_SOFTMAX along one axis.
//
// SOFTMAX: inputs 0 tensor (rank 1..4), 1 beta, 2 optional INT32 axis (default -1, range
// [-n, n), FL3). beta is a FLOAT32 scalar, or FLOAT16 when the input is TENSOR_FLOAT16, and must
// be positive. out = exp((x - max) * beta) / sum(exp((x - max) * beta)) along the axis.
// Types: TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL1), TENSOR_FLOAT16 (FL3),
// TENSOR_QUANT8_ASYMM_SIGNED (FL4). Ranks other than 2 and 4 need FL3 (as does the axis input).
// Quantised outputs must have scale 1/256 and zero point 0 (unsigned) or -128 (signed).
//
// LOG_SOFTMAX: inputs 0 tensor, 1 beta (FLOAT32, or FLOAT16 for TENSOR_FLOAT16),
// 2 INT32 axis (required, range [-n, n)). out = x * beta - max - log(sum(exp(x * beta - max))).
// Types: TENSOR_FLOAT32, TENSOR_FLOAT16.
//
// Both subtract the maximum of beta * x before exponentiating and accumulate in double. fp32
// SOFTMAX computes each exponential in float32 with the vectorised e^x of vector_math.h (within
// 1 ulp of e^x; its argument formed in double) and adds them in double (16 lanes, combined in a
// fixed order), then scales by the double reciprocal of the sum; the other types and LOG_SOFTMAX
// use double exp. Zero-sized inputs produce zero-sized outputs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../kernels/vector_math.h"
#include "axis_helpers.h"
#include "common.h"
#include "gemm.h"

namespace mock_nnapi {
namespace {

using axis_helpers::FloatScalar;
using axis_helpers::FloatScalarTypeFor;

constexpr float kQuantizedSoftmaxScale = 1.f / 256;

int64_t SoftmaxTypeFeatureLevel(int32_t type) {
  switch (type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      return kFeatureLevel1;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      return kFeatureLevel3;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      return kFeatureLevel4;
    default:
      return -1;
  }
}

int CheckBeta(const OperationContext& context, int code) {
  if (context.type() != ANEURALNETWORKS_SOFTMAX || !context.HasInputValue(1)) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  const float beta = FloatScalar(context, 1);
  NN_CHECK(beta > 0.f, code) << context.name() << " beta must be positive, got " << beta;
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateSoftmax(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2, 3}, 1));
  const OperandInfo& input = context.Input(0);
  const int64_t level = SoftmaxTypeFeatureLevel(input.type);
  NN_CHECK(level > 0, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " does not support " << OperandTypeName(input.type);
  context.RequireFeatureLevel(level);
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {FloatScalarTypeFor(input.type)}));
  NN_RETURN_IF_ERROR(axis_helpers::CheckNotOmitted(context, 0, 1));
  if (context.InputCount() == 3) {
    NN_RETURN_IF_ERROR(CheckInputType(context, 2, {ANEURALNETWORKS_INT32}));
    context.RequireFeatureLevel(kFeatureLevel3);
  } else if (input.rank_known && input.rank() != 2 && input.rank() != 4) {
    context.RequireFeatureLevel(kFeatureLevel3);
  }
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, input, 4, "input rank"));
  if (input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM) {
    NN_RETURN_IF_ERROR(axis_helpers::CheckOutputQuantization(context, kQuantizedSoftmaxScale, 0));
  } else if (input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED) {
    NN_RETURN_IF_ERROR(
        axis_helpers::CheckOutputQuantization(context, kQuantizedSoftmaxScale, -128));
  }
  NN_RETURN_IF_ERROR(CheckBeta(context, ANEURALNETWORKS_BAD_DATA));
  return axis_helpers::CheckAxisInput(context, 2, input, ANEURALNETWORKS_BAD_DATA);
}

int ValidateLogSoftmax(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {3}, 1));
  const OperandInfo& input = context.Input(0);
  NN_RETURN_IF_ERROR(
      CheckInputType(context, 0, {ANEURALNETWORKS_TENSOR_FLOAT32, ANEURALNETWORKS_TENSOR_FLOAT16}));
  context.RequireFeatureLevel(kFeatureLevel3);
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {FloatScalarTypeFor(input.type)}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 2, {ANEURALNETWORKS_INT32}));
  NN_RETURN_IF_ERROR(axis_helpers::CheckNotOmitted(context, 0, 2));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  return axis_helpers::CheckAxisInput(context, 2, input, ANEURALNETWORKS_BAD_DATA);
}

int Prepare(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  NN_CHECK_GE(input.rank(), 1u, ANEURALNETWORKS_OP_FAILED) << context.name() << " input rank";
  if (context.type() == ANEURALNETWORKS_SOFTMAX) {
    NN_CHECK_LE(input.rank(), 4u, ANEURALNETWORKS_OP_FAILED) << context.name() << " input rank";
  }
  NN_RETURN_IF_ERROR(CheckBeta(context, ANEURALNETWORKS_OP_FAILED));
  uint32_t axis = 0;
  NN_RETURN_IF_ERROR(indexing::ReadAxisInput(context, 2, ANEURALNETWORKS_OP_FAILED, &axis));
  return context.SetOutputShape(0, input.dimensions);
}

// y[0..16) = e^((x[0..16) - max) * beta), added to *sum. The argument is passed to the
// exponential as a float and its rounding error, so that the exponential does not inherit that
// rounding (which grows with the argument's magnitude: up to several ulps for arguments of -20
// and below). beta = 1 (`unit_beta`): x - max exactly, as a float sum and its error (TwoSum, in
// float); otherwise (x - max) * beta in double, split.
__attribute__((always_inline)) inline void ExponentialV(const float* x, float max_value, float beta,
                                                        bool unit_beta, float* y,
                                                        vector_math::DoubleV* sum) {
  using vector_math::DoubleV;
  using vector_math::FloatV;
  const FloatV value = *reinterpret_cast<const FloatV*>(x);
  FloatV head, tail;
  if (unit_beta) {
    // Inputs more than 104 below the maximum give 0 anyway: raised to that bound, so that
    // -inf inputs give 0 (TwoSum of infinities is NaN); NaN passes through.
    const FloatV bound = FloatV{} + (max_value - 104.f);
    FloatV a;
    vector_math::Select(value < bound, bound, value, &a);
    const FloatV b = FloatV{} - max_value;
    head = a + b;
    const FloatV b_part = head - a;
    const FloatV a_part = head - b_part;
    tail = (a - a_part) + (b - b_part);
  } else {
    // Clamped to where e^x is neither 0 nor infinite in float, so that head and tail are finite
    // (-inf inputs give 0; NaN passes through).
    const DoubleV low = DoubleV{} - 104.0;
    const DoubleV unclamped = (__builtin_convertvector(value, DoubleV) - max_value) * beta;
    DoubleV argument;
    vector_math::Select(unclamped < low, low, unclamped, &argument);
    head = __builtin_convertvector(argument, FloatV);
    tail = __builtin_convertvector(argument - __builtin_convertvector(head, DoubleV), FloatV);
  }
  FloatV e;
  vector_math::ExpV(head, tail, &e);
  *reinterpret_cast<FloatV*>(y) = e;
  *sum += __builtin_convertvector(e, DoubleV);
}

// One contiguous line of fp32 SOFTMAX: y = e^((x - max) * beta) / sum. Maximum and sum are taken
// over 16 lanes (whole vectors, then the remainder as one vector padded with -inf), then combined
// in lane order: the result does not depend on the instruction set.
MOCK_NNAPI_SIMD_CLONES void SoftmaxLineFloat32(const float* __restrict__ x, float* __restrict__ y,
                                               size_t count, float beta) {
  using vector_math::DoubleV;
  using vector_math::FloatV;
  const bool unit_beta = beta == 1.f;
  const float kLowest = -std::numeric_limits<float>::infinity();
  constexpr size_t kLanes = vector_math::kLanes;
  const size_t whole = count / kLanes * kLanes;
  // The remainder, padded with -inf (no effect on the maximum; e^-inf = 0 for the sum).
  float tail_in[kLanes], tail_out[kLanes];
  for (size_t j = 0; j < kLanes; ++j) tail_in[j] = whole + j < count ? x[whole + j] : kLowest;
  FloatV lane_max = FloatV{} + kLowest;
  // lane_max = x > lane_max ? x : lane_max (NaN never becomes the maximum).
  for (size_t i = 0; i <= whole; i += kLanes) {
    const FloatV v = *reinterpret_cast<const FloatV*>(i < whole ? x + i : tail_in);
    vector_math::Select(v > lane_max, v, lane_max, &lane_max);
  }
  float max_value = kLowest;
  for (size_t l = 0; l < kLanes; ++l) max_value = lane_max[l] > max_value ? lane_max[l] : max_value;
  // Two independent vectors per step: each exponential is a long chain of dependent
  // operations, so one vector at a time leaves the SIMD units waiting on latency.
  DoubleV sum0 = {}, sum1 = {};
  size_t i = 0;
  for (; i + 2 * kLanes <= whole; i += 2 * kLanes) {
    ExponentialV(x + i, max_value, beta, unit_beta, y + i, &sum0);
    ExponentialV(x + i + kLanes, max_value, beta, unit_beta, y + i + kLanes, &sum1);
  }
  for (; i < whole; i += kLanes) ExponentialV(x + i, max_value, beta, unit_beta, y + i, &sum0);
  // Padding lanes (-inf) give e^-104 = 0 in float.
  if (whole < count) ExponentialV(tail_in, max_value, beta, unit_beta, tail_out, &sum0);
  const DoubleV lanes = sum0 + sum1;
  double sum = 0.0;
  for (size_t l = 0; l < kLanes; ++l) sum += lanes[l];
  const double reciprocal = 1.0 / sum;
  for (i = 0; i < whole; i += kLanes) {
    FloatV* values = reinterpret_cast<FloatV*>(y + i);
    *values =
        __builtin_convertvector(__builtin_convertvector(*values, DoubleV) * reciprocal, FloatV);
  }
  for (i = whole; i < count; ++i) {
    y[i] = static_cast<float>(static_cast<double>(tail_out[i - whole]) * reciprocal);
  }
}

void RunSoftmaxFloat32(const OperationContext& context, uint32_t axis, float beta) {
  const OperandInfo& input = context.Input(0);
  const float* x = input.Data<float>();
  float* y = context.Output(0).MutableData<float>();
  const indexing::AxisSplit split = indexing::SplitAtAxis(input.dimensions, axis);
  const size_t lines = split.outer * split.inner;
  gemm::ParallelFor(lines, split.axis * 32, [&](size_t begin, size_t end) {
    // Lines along an outer axis are strided: gathered into contiguous scratch first.
    std::vector<float> in_line(split.inner == 1 ? 0 : split.axis);
    std::vector<float> out_line(in_line.size());
    for (size_t line = begin; line < end; ++line) {
      const size_t outer = line / split.inner;
      const size_t inner = line % split.inner;
      const size_t base = outer * split.axis * split.inner + inner;
      if (split.inner == 1) {
        SoftmaxLineFloat32(x + base, y + base, split.axis, beta);
        continue;
      }
      for (size_t i = 0; i < split.axis; ++i) in_line[i] = x[base + i * split.inner];
      SoftmaxLineFloat32(in_line.data(), out_line.data(), split.axis, beta);
      for (size_t i = 0; i < split.axis; ++i) y[base + i * split.inner] = out_line[i];
    }
  });
}

template <typename T>
void Run(const OperationContext& context, uint32_t axis, double beta, bool log_softmax) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const T* x = input.Data<T>();
  T* y = output.MutableData<T>();
  const indexing::AxisSplit split = indexing::SplitAtAxis(input.dimensions, axis);
  // The lines along the axis are independent: shared out over the threads (an exponential
  // costs some tens of multiply-adds).
  const size_t lines = split.outer * split.inner;
  gemm::ParallelFor(lines, split.axis * 32, [&](size_t begin, size_t end) {
    std::vector<double> scaled(split.axis);
    for (size_t line = begin; line < end; ++line) {
      const size_t outer = line / split.inner;
      const size_t inner = line % split.inner;
      const size_t base = outer * split.axis * split.inner + inner;
      double max_value = -std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < split.axis; ++i) {
        scaled[i] = beta * axis_helpers::LoadReal(x[base + i * split.inner], input);
        max_value = std::max(max_value, scaled[i]);
      }
      double sum = 0.0;
      if (log_softmax) {
        for (size_t i = 0; i < split.axis; ++i) sum += std::exp(scaled[i] - max_value);
        const double log_sum = std::log(sum);
        for (size_t i = 0; i < split.axis; ++i) {
          const double value = (scaled[i] - max_value) - log_sum;
          y[base + i * split.inner] = axis_helpers::StoreReal<T>(value, output);
        }
        continue;
      }
      // Each exponential is computed once, kept for the division.
      for (size_t i = 0; i < split.axis; ++i) {
        scaled[i] = std::exp(scaled[i] - max_value);
        sum += scaled[i];
      }
      for (size_t i = 0; i < split.axis; ++i) {
        y[base + i * split.inner] = axis_helpers::StoreReal<T>(scaled[i] / sum, output);
      }
    }
  });
}

int Execute(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  if (indexing::Product(input.dimensions) == 0) return ANEURALNETWORKS_NO_ERROR;
  uint32_t axis = 0;
  NN_RETURN_IF_ERROR(indexing::ReadAxisInput(context, 2, ANEURALNETWORKS_OP_FAILED, &axis));
  const double beta = FloatScalar(context, 1);
  const bool log_softmax = context.type() == ANEURALNETWORKS_LOG_SOFTMAX;
  switch (input.type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      if (!log_softmax) {
        RunSoftmaxFloat32(context, axis, FloatScalar(context, 1));
        return ANEURALNETWORKS_NO_ERROR;
      }
      Run<float>(context, axis, beta, log_softmax);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      Run<Half>(context, axis, beta, log_softmax);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      Run<uint8_t>(context, axis, beta, log_softmax);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      Run<int8_t>(context, axis, beta, log_softmax);
      return ANEURALNETWORKS_NO_ERROR;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED)
          << context.name() << ": unsupported type " << OperandTypeName(input.type);
  }
}

}  // namespace

NN_REGISTER_OPERATION(SOFTMAX, ValidateSoftmax, Prepare, Execute);
NN_REGISTER_OPERATION(LOG_SOFTMAX, ValidateLogSoftmax, Prepare, Execute);

}  // namespace mock_nnapi
