// SPDX-License-Identifier: Apache-2.0
// L2_NORMALIZATION, INSTANCE_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION.
//
// L2_NORMALIZATION: inputs 0 tensor (rank up to 4), 1 optional INT32 axis (default -1, range
// [-n, n), FL3). out = x / sqrt(sum(x^2)) along the axis; an all-zero slice gives zeros (the
// NDK's rule since FL4). Types: TENSOR_FLOAT32 (FL1), TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM (FL3),
// TENSOR_QUANT8_ASYMM_SIGNED (FL4); ranks other than 4 need FL3. Quantised outputs must have scale
// 1/128 and zero point 128 (unsigned) or 0 (signed).
//
// INSTANCE_NORMALIZATION: inputs 0 4-D tensor, 1 gamma, 2 beta, 3 epsilon (FLOAT32 scalars,
// FLOAT16 for TENSOR_FLOAT16), 4 BOOL layout (true = NCHW). For every batch and channel,
// out = (x - mean) * gamma / sqrt(variance + epsilon) + beta over height and width (population
// variance). Types: TENSOR_FLOAT32, TENSOR_FLOAT16.
//
// LOCAL_RESPONSE_NORMALIZATION: inputs 0 tensor (rank up to 4), 1 INT32 radius (>= 0), 2 bias
// (non-zero), 3 alpha, 4 beta (FLOAT32 scalars, FLOAT16 for TENSOR_FLOAT16), 5 optional INT32
// axis (default -1, FL3). sqr_sum[d] = sum of x[j]^2 for j in [d - radius, d + radius] clipped to
// the axis, out = x / pow(bias + alpha * sqr_sum, beta). Types: TENSOR_FLOAT32 (FL1),
// TENSOR_FLOAT16 (FL3); ranks other than 4 need FL3.
//
// All three compute in double and round once to the output type.
#include <algorithm>
#include <cmath>
#include <vector>

#include "axis_helpers.h"
#include "common.h"

namespace mock_nnapi {
namespace {

using axis_helpers::FloatScalar;
using axis_helpers::FloatScalarTypeFor;

constexpr float kL2NormalizationScale = 1.f / 128;

// ---- Shared -------------------------------------------------------------------------------

// Prepare for the operations whose output has the input's shape and an optional axis input.
int PrepareSameShapeWithAxis(OperationContext& context, uint32_t axis_index) {
  const OperandInfo& input = context.Input(0);
  NN_CHECK(input.rank() >= 1 && input.rank() <= 4, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " input rank " << input.rank();
  uint32_t axis = 0;
  NN_RETURN_IF_ERROR(
      indexing::ReadAxisInput(context, axis_index, ANEURALNETWORKS_OP_FAILED, &axis));
  return context.SetOutputShape(0, input.dimensions);
}

// ---- L2_NORMALIZATION ---------------------------------------------------------------------

int ValidateL2Normalization(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {1, 2}, 1));
  const OperandInfo& input = context.Input(0);
  switch (input.type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      break;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      context.RequireFeatureLevel(kFeatureLevel3);
      break;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      context.RequireFeatureLevel(kFeatureLevel4);
      break;
    default:
      NN_FAIL(ANEURALNETWORKS_BAD_DATA)
          << context.name() << " does not support " << OperandTypeName(input.type);
  }
  NN_RETURN_IF_ERROR(axis_helpers::CheckNotOmitted(context, 0, 0));
  if (context.InputCount() == 2) {
    NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_INT32}));
    context.RequireFeatureLevel(kFeatureLevel3);
  } else if (!input.rank_known || input.rank() != 4) {
    context.RequireFeatureLevel(kFeatureLevel3);
  }
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, input, 4, "input rank"));
  if (input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM) {
    NN_RETURN_IF_ERROR(axis_helpers::CheckOutputQuantization(context, kL2NormalizationScale, 128));
  } else if (input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED) {
    NN_RETURN_IF_ERROR(axis_helpers::CheckOutputQuantization(context, kL2NormalizationScale, 0));
  }
  return axis_helpers::CheckAxisInput(context, 1, input, ANEURALNETWORKS_BAD_DATA);
}

int PrepareL2Normalization(OperationContext& context) {
  return PrepareSameShapeWithAxis(context, 1);
}

template <typename T>
void RunL2Normalization(const OperationContext& context, uint32_t axis) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const T* x = input.Data<T>();
  T* y = output.MutableData<T>();
  const indexing::AxisSplit split = indexing::SplitAtAxis(input.dimensions, axis);
  for (size_t outer = 0; outer < split.outer; ++outer) {
    for (size_t inner = 0; inner < split.inner; ++inner) {
      const size_t base = outer * split.axis * split.inner + inner;
      double sum = 0.0;
      for (size_t i = 0; i < split.axis; ++i) {
        const double value = axis_helpers::LoadReal(x[base + i * split.inner], input);
        sum += value * value;
      }
      const double norm = std::sqrt(sum);
      for (size_t i = 0; i < split.axis; ++i) {
        const double value = axis_helpers::LoadReal(x[base + i * split.inner], input);
        y[base + i * split.inner] = axis_helpers::StoreReal<T>(norm > 0 ? value / norm : 0, output);
      }
    }
  }
}

int ExecuteL2Normalization(OperationContext& context) {
  uint32_t axis = 0;
  NN_RETURN_IF_ERROR(indexing::ReadAxisInput(context, 1, ANEURALNETWORKS_OP_FAILED, &axis));
  switch (context.InputType(0)) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      RunL2Normalization<float>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      RunL2Normalization<Half>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      RunL2Normalization<uint8_t>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      RunL2Normalization<int8_t>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED)
          << context.name() << ": unsupported type " << OperandTypeName(context.InputType(0));
  }
}

// ---- INSTANCE_NORMALIZATION ---------------------------------------------------------------

int ValidateInstanceNormalization(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {5}, 1));
  const OperandInfo& input = context.Input(0);
  NN_RETURN_IF_ERROR(
      CheckInputType(context, 0, {ANEURALNETWORKS_TENSOR_FLOAT32, ANEURALNETWORKS_TENSOR_FLOAT16}));
  context.RequireFeatureLevel(kFeatureLevel3);
  const int32_t scalar_type = FloatScalarTypeFor(input.type);
  for (uint32_t i = 1; i <= 3; ++i) {
    NN_RETURN_IF_ERROR(CheckInputType(context, i, {scalar_type}));
  }
  NN_RETURN_IF_ERROR(CheckInputType(context, 4, {ANEURALNETWORKS_BOOL}));
  NN_RETURN_IF_ERROR(axis_helpers::CheckNotOmitted(context, 0, 4));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  if (input.rank_known) {
    NN_CHECK_EQ(input.rank(), 4u, ANEURALNETWORKS_BAD_DATA) << context.name() << " input rank";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int PrepareInstanceNormalization(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  NN_CHECK_EQ(input.rank(), 4u, ANEURALNETWORKS_OP_FAILED) << context.name() << " input rank";
  return context.SetOutputShape(0, input.dimensions);
}

template <typename T>
void RunInstanceNormalization(const OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const double gamma = FloatScalar(context, 1);
  const double beta = FloatScalar(context, 2);
  const double epsilon = FloatScalar(context, 3);
  const bool nchw = axis_helpers::BoolScalar(context, 4);
  const size_t batches = input.dim(0);
  const size_t channels = input.dim(nchw ? 1 : 3);
  const size_t spatial = static_cast<size_t>(input.dim(nchw ? 2 : 1)) * input.dim(nchw ? 3 : 2);
  if (spatial == 0) return;
  // Element (b, s, c) where s walks height * width.
  auto offset = [&](size_t b, size_t s, size_t c) {
    return nchw ? (b * channels + c) * spatial + s : (b * spatial + s) * channels + c;
  };
  const T* x = input.Data<T>();
  T* y = output.MutableData<T>();
  for (size_t b = 0; b < batches; ++b) {
    for (size_t c = 0; c < channels; ++c) {
      double mean = 0.0;
      for (size_t s = 0; s < spatial; ++s) mean += float(x[offset(b, s, c)]);
      mean /= static_cast<double>(spatial);
      double variance = 0.0;
      for (size_t s = 0; s < spatial; ++s) {
        const double deviation = float(x[offset(b, s, c)]) - mean;
        variance += deviation * deviation;
      }
      variance /= static_cast<double>(spatial);
      const double factor = gamma / std::sqrt(variance + epsilon);
      for (size_t s = 0; s < spatial; ++s) {
        const size_t at = offset(b, s, c);
        y[at] = T(static_cast<float>((float(x[at]) - mean) * factor + beta));
      }
    }
  }
}

int ExecuteInstanceNormalization(OperationContext& context) {
  switch (context.InputType(0)) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      RunInstanceNormalization<float>(context);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      RunInstanceNormalization<Half>(context);
      return ANEURALNETWORKS_NO_ERROR;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED)
          << context.name() << ": unsupported type " << OperandTypeName(context.InputType(0));
  }
}

// ---- LOCAL_RESPONSE_NORMALIZATION ---------------------------------------------------------

int CheckRadiusAndBias(const OperationContext& context, int code) {
  if (context.HasInputValue(1)) {
    NN_CHECK_GE(context.InputScalar<int32_t>(1), 0, code) << context.name() << " radius";
  }
  if (context.HasInputValue(2)) {
    NN_CHECK(FloatScalar(context, 2) != 0.f, code) << context.name() << " bias must not be zero";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateLocalResponseNormalization(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {5, 6}, 1));
  const OperandInfo& input = context.Input(0);
  NN_RETURN_IF_ERROR(
      CheckInputType(context, 0, {ANEURALNETWORKS_TENSOR_FLOAT32, ANEURALNETWORKS_TENSOR_FLOAT16}));
  if (input.type == ANEURALNETWORKS_TENSOR_FLOAT16) context.RequireFeatureLevel(kFeatureLevel3);
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_INT32}));
  const int32_t scalar_type = FloatScalarTypeFor(input.type);
  for (uint32_t i = 2; i <= 4; ++i) {
    NN_RETURN_IF_ERROR(CheckInputType(context, i, {scalar_type}));
  }
  NN_RETURN_IF_ERROR(axis_helpers::CheckNotOmitted(context, 0, 4));
  if (context.InputCount() == 6) {
    NN_RETURN_IF_ERROR(CheckInputType(context, 5, {ANEURALNETWORKS_INT32}));
    context.RequireFeatureLevel(kFeatureLevel3);
  } else if (!input.rank_known || input.rank() != 4) {
    context.RequireFeatureLevel(kFeatureLevel3);
  }
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, input, 4, "input rank"));
  NN_RETURN_IF_ERROR(CheckRadiusAndBias(context, ANEURALNETWORKS_BAD_DATA));
  return axis_helpers::CheckAxisInput(context, 5, input, ANEURALNETWORKS_BAD_DATA);
}

int PrepareLocalResponseNormalization(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckRadiusAndBias(context, ANEURALNETWORKS_OP_FAILED));
  return PrepareSameShapeWithAxis(context, 5);
}

template <typename T>
void RunLocalResponseNormalization(const OperationContext& context, uint32_t axis) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const int64_t radius = context.InputScalar<int32_t>(1);
  const double bias = FloatScalar(context, 2);
  const double alpha = FloatScalar(context, 3);
  const double beta = FloatScalar(context, 4);
  const T* x = input.Data<T>();
  T* y = output.MutableData<T>();
  const indexing::AxisSplit split = indexing::SplitAtAxis(input.dimensions, axis);
  const int64_t size = static_cast<int64_t>(split.axis);
  for (size_t outer = 0; outer < split.outer; ++outer) {
    for (size_t inner = 0; inner < split.inner; ++inner) {
      const size_t base = outer * split.axis * split.inner + inner;
      auto at = [&](int64_t i) { return base + static_cast<size_t>(i) * split.inner; };
      for (int64_t d = 0; d < size; ++d) {
        double squares = 0.0;
        for (int64_t j = std::max<int64_t>(0, d - radius); j <= std::min(size - 1, d + radius);
             ++j) {
          const double value = float(x[at(j)]);
          squares += value * value;
        }
        const double value = float(x[at(d)]);
        y[at(d)] = T(static_cast<float>(value / std::pow(bias + alpha * squares, beta)));
      }
    }
  }
}

int ExecuteLocalResponseNormalization(OperationContext& context) {
  uint32_t axis = 0;
  NN_RETURN_IF_ERROR(indexing::ReadAxisInput(context, 5, ANEURALNETWORKS_OP_FAILED, &axis));
  switch (context.InputType(0)) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      RunLocalResponseNormalization<float>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      RunLocalResponseNormalization<Half>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED)
          << context.name() << ": unsupported type " << OperandTypeName(context.InputType(0));
  }
}

}  // namespace

NN_REGISTER_OPERATION(L2_NORMALIZATION, ValidateL2Normalization, PrepareL2Normalization,
                      ExecuteL2Normalization);
NN_REGISTER_OPERATION(INSTANCE_NORMALIZATION, ValidateInstanceNormalization,
                      PrepareInstanceNormalization, ExecuteInstanceNormalization);
NN_REGISTER_OPERATION(LOCAL_RESPONSE_NORMALIZATION, ValidateLocalResponseNormalization,
                      PrepareLocalResponseNormalization, ExecuteLocalResponseNormalization);

}  // namespace mock_nnapi
