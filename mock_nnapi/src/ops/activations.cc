// SPDX-License-Identifier: Apache-2.0
// RELU, RELU1, RELU6, LOGISTIC, TANH, HARD_SWISH, ELU, PRELU: activation functions.
//
// RELU, RELU1, RELU6, LOGISTIC, TANH, HARD_SWISH: input 0 tensor; output of the same type and
// shape.
// ELU: input 0 tensor, input 1 alpha scalar (FLOAT32 for TENSOR_FLOAT32, FLOAT16 for
// TENSOR_FLOAT16); out = max(0, x) + min(0, alpha * (exp(x) - 1)).
// PRELU: input 0 tensor, input 1 alpha tensor of the same type, broadcast against input 0
// (numpy-style); out = x >= 0 ? x : x * alpha. Output has the broadcast shape.
//
// Types by feature level (NDK reference and Android's operation validators):
//   RELU, RELU1, RELU6, LOGISTIC: TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL1), TENSOR_FLOAT16 (FL3),
//                                 TENSOR_QUANT8_ASYMM_SIGNED (FL4); rank at most 4.
//   TANH:       TENSOR_FLOAT32 (FL1), TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM (FL3),
//               TENSOR_QUANT8_ASYMM_SIGNED (FL4); rank at most 4.
//   HARD_SWISH: TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM(_SIGNED) (FL4); any rank.
//   ELU:        TENSOR_FLOAT16, TENSOR_FLOAT32 (FL4); any rank.
//   PRELU:      TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL3),
//               TENSOR_QUANT8_ASYMM_SIGNED (FL4); any rank.
//
// Quantised outputs: RELU, RELU1 and RELU6 keep the input's scale and zero point; LOGISTIC
// produces scale 1/256 with zero point 0 (unsigned) or -128 (signed); TANH produces scale 1/128
// with zero point 128 (unsigned) or 0 (signed). Android does not check these parameters when the
// operation is added: its CPU executor compares them with the declared output when the output
// shape is set, so a mismatch fails the execution with OP_FAILED (this mock does the same in
// prepare). HARD_SWISH and PRELU outputs may have any scale and zero point.
// Zero-sized inputs are allowed for RELU, RELU1, RELU6, LOGISTIC, TANH, HARD_SWISH (Android's
// allowZeroSizedInput) and ELU (the NDK documents its input as "may be zero-sized"); they fail at
// execution for PRELU.
#include <algorithm>
#include <cmath>

#include "../kernels/vector_math.h"
#include "elementwise_helpers.h"
#include "gemm.h"

namespace mock_nnapi {
namespace {

constexpr int32_t kFloat32 = ANEURALNETWORKS_TENSOR_FLOAT32;
constexpr int32_t kFloat16 = ANEURALNETWORKS_TENSOR_FLOAT16;
constexpr int32_t kQuant8 = ANEURALNETWORKS_TENSOR_QUANT8_ASYMM;
constexpr int32_t kQuant8Signed = ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED;

// ---- RELU, RELU1, RELU6, LOGISTIC, TANH, HARD_SWISH ------------------------------------------

int ValidateActivation(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {1}, 1));
  switch (context.type()) {
    case ANEURALNETWORKS_TANH:
      NN_RETURN_IF_ERROR(elementwise::CheckInputTypeLevel(context, 0,
                                                          {{kFloat32, kFeatureLevel1},
                                                           {kFloat16, kFeatureLevel3},
                                                           {kQuant8, kFeatureLevel3},
                                                           {kQuant8Signed, kFeatureLevel4}}));
      break;
    case ANEURALNETWORKS_HARD_SWISH:
      NN_RETURN_IF_ERROR(elementwise::CheckInputTypeLevel(context, 0,
                                                          {{kFloat32, kFeatureLevel4},
                                                           {kFloat16, kFeatureLevel4},
                                                           {kQuant8, kFeatureLevel4},
                                                           {kQuant8Signed, kFeatureLevel4}}));
      break;
    default:  // RELU, RELU1, RELU6, LOGISTIC
      NN_RETURN_IF_ERROR(elementwise::CheckInputTypeLevel(context, 0,
                                                          {{kFloat32, kFeatureLevel1},
                                                           {kFloat16, kFeatureLevel3},
                                                           {kQuant8, kFeatureLevel1},
                                                           {kQuant8Signed, kFeatureLevel4}}));
  }
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  if (context.type() != ANEURALNETWORKS_HARD_SWISH) {
    NN_RETURN_IF_ERROR(CheckRankAtMost(context, context.Input(0), 4, "input rank"));
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int PrepareActivation(OperationContext& context) {
  NN_RETURN_IF_ERROR(elementwise::CheckRunnableInputs(context, /*allow_zero_sized=*/true));
  const OperandInfo& input = context.Input(0);
  if (context.type() != ANEURALNETWORKS_HARD_SWISH) {
    NN_RETURN_IF_ERROR(elementwise::CheckPreparedRankAtMost(context, 0, 4));
  }
  if (input.type == kQuant8 || input.type == kQuant8Signed) {
    const bool is_signed = input.type == kQuant8Signed;
    switch (context.type()) {
      case ANEURALNETWORKS_LOGISTIC:
        NN_RETURN_IF_ERROR(
            elementwise::CheckOutputQuantization(context, 0, 1.f / 256, is_signed ? -128 : 0));
        break;
      case ANEURALNETWORKS_TANH:
        NN_RETURN_IF_ERROR(
            elementwise::CheckOutputQuantization(context, 0, 1.f / 128, is_signed ? 0 : 128));
        break;
      case ANEURALNETWORKS_HARD_SWISH:
        break;
      default:  // RELU, RELU1, RELU6
        NN_RETURN_IF_ERROR(
            elementwise::CheckOutputQuantization(context, 0, input.scale, input.zero_point));
    }
  }
  return elementwise::PrepareSameShape(context);
}

// The FuseCode whose clamp is the RELU, RELU1 or RELU6 operation (the one helper of common.h).
int32_t ReluFuseCode(int32_t operation) {
  switch (operation) {
    case ANEURALNETWORKS_RELU:
      return ANEURALNETWORKS_FUSED_RELU;
    case ANEURALNETWORKS_RELU1:
      return ANEURALNETWORKS_FUSED_RELU1;
    case ANEURALNETWORKS_RELU6:
      return ANEURALNETWORKS_FUSED_RELU6;
    default:
      return ANEURALNETWORKS_FUSED_NONE;
  }
}

float ApplyActivationFunction(int32_t operation, float x) {
  switch (operation) {
    case ANEURALNETWORKS_RELU:
    case ANEURALNETWORKS_RELU1:
    case ANEURALNETWORKS_RELU6:
      return ApplyActivation(x, ReluFuseCode(operation));
    case ANEURALNETWORKS_LOGISTIC:
      return 1.f / (1.f + std::exp(-x));
    case ANEURALNETWORKS_TANH:
      return std::tanh(x);
    default:  // HARD_SWISH
      return x * std::min(6.f, std::max(0.f, x + 3.f)) / 6.f;
  }
}

template <typename T>
void RunActivationFloat(OperationContext& context) {
  const T* x = context.Input(0).Data<T>();
  T* y = context.Output(0).MutableData<T>();
  const size_t count = indexing::Product(context.Input(0).dimensions);
  const int32_t operation = context.type();
  for (size_t i = 0; i < count; ++i) y[i] = T(ApplyActivationFunction(operation, float(x[i])));
}

// fp32: the same functions with the operation chosen once, one loop each (vectorised where the
// function allows).
template <typename F>
void MapFloat32(const float* __restrict__ x, float* __restrict__ y, size_t count, F f) {
  for (size_t i = 0; i < count; ++i) y[i] = f(x[i]);
}

// fp32 LOGISTIC: 1 / (1 + e^-x) sixteen lanes at a time with the vectorised exponential
// (vector_math.h, within 1 ulp of e^x); large tensors are split over the threads.
// y[0..16) = 1 / (1 + e^-x[0..16)).
__attribute__((always_inline)) inline void LogisticV(const float* x, float* y) {
  using vector_math::FloatV;
  FloatV e;
  vector_math::ExpV(-*reinterpret_cast<const FloatV*>(x), FloatV{}, &e);
  *reinterpret_cast<FloatV*>(y) = 1.f / (1.f + e);
}

MOCK_NNAPI_SIMD_CLONES void LogisticFloat32(const float* __restrict__ x, float* __restrict__ y,
                                            size_t count) {
  constexpr size_t kLanes = vector_math::kLanes;
  size_t i = 0;
  // Two independent vectors per step (an exponential is a long chain of dependent operations).
  for (; i + 2 * kLanes <= count; i += 2 * kLanes) {
    LogisticV(x + i, y + i);
    LogisticV(x + i + kLanes, y + i + kLanes);
  }
  for (; i + kLanes <= count; i += kLanes) LogisticV(x + i, y + i);
  // The remainder as one zero-padded vector (the same operations as the other lanes).
  float in[kLanes] = {}, out[kLanes];
  for (size_t j = 0; i + j < count; ++j) in[j] = x[i + j];
  LogisticV(in, out);
  for (size_t j = 0; i + j < count; ++j) y[i + j] = out[j];
}

template <>
void RunActivationFloat<float>(OperationContext& context) {
  const float* x = context.Input(0).Data<float>();
  float* y = context.Output(0).MutableData<float>();
  const size_t count = indexing::Product(context.Input(0).dimensions);
  const int32_t operation = context.type();
  switch (operation) {
    case ANEURALNETWORKS_RELU:
    case ANEURALNETWORKS_RELU1:
    case ANEURALNETWORKS_RELU6: {
      float low, high;
      FloatActivationRange(ReluFuseCode(operation), &low, &high);
      return MapFloat32(x, y, count,
                        [low, high](float v) { return std::min(std::max(v, low), high); });
    }
    case ANEURALNETWORKS_HARD_SWISH:
      return MapFloat32(x, y, count,
                        [](float v) { return v * std::min(6.f, std::max(0.f, v + 3.f)) / 6.f; });
    case ANEURALNETWORKS_LOGISTIC: {
      // Blocks of 16 Ki elements (64 KiB): about 20 operations per element.
      constexpr size_t kBlock = 1 << 14;
      const size_t blocks = (count + kBlock - 1) / kBlock;
      return gemm::ParallelFor(blocks, kBlock * 20, [&](size_t begin, size_t end) {
        const size_t first = begin * kBlock;
        LogisticFloat32(x + first, y + first, std::min(end * kBlock, count) - first);
      });
    }
    default:  // TANH
      return MapFloat32(x, y, count, [](float v) { return std::tanh(v); });
  }
}

// RELU, RELU1, RELU6 on quantised data clamp in the quantised domain, to the range that
// CalculateActivationRange (TFLite) derives: zero_point + round(bound / scale), saturated.
template <typename Q>
void RunReluQuantized(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  int32_t low, high;
  QuantizedActivationRange<Q>(ReluFuseCode(context.type()), input.scale, input.zero_point, &low,
                              &high);
  const Q* x = input.Data<Q>();
  Q* y = context.Output(0).MutableData<Q>();
  const size_t count = indexing::Product(input.dimensions);
  for (size_t i = 0; i < count; ++i) {
    y[i] = static_cast<Q>(std::min(std::max(static_cast<int32_t>(x[i]), low), high));
  }
}

// LOGISTIC, TANH, HARD_SWISH on quantised data: through real values to the output's parameters.
template <typename Q>
void RunActivationQuantized(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const Q* x = input.Data<Q>();
  Q* y = output.MutableData<Q>();
  const size_t count = indexing::Product(input.dimensions);
  const int32_t operation = context.type();
  for (size_t i = 0; i < count; ++i) {
    const float real =
        ApplyActivationFunction(operation, Dequantize(x[i], input.scale, input.zero_point));
    y[i] = elementwise::QuantizeResult<Q>(real, output.scale, output.zero_point);
  }
}

int ExecuteActivation(OperationContext& context) {
  const bool is_relu = context.type() == ANEURALNETWORKS_RELU ||
                       context.type() == ANEURALNETWORKS_RELU1 ||
                       context.type() == ANEURALNETWORKS_RELU6;
  return elementwise::Dispatch(
      context, context.InputType(0), [&](auto tag) { RunActivationFloat<decltype(tag)>(context); },
      [&](auto tag) {
        using Q = decltype(tag);
        if (is_relu) {
          RunReluQuantized<Q>(context);
        } else {
          RunActivationQuantized<Q>(context);
        }
      });
}

// ---- ELU ----------------------------------------------------------------------------------------

int ValidateElu(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  NN_RETURN_IF_ERROR(elementwise::CheckInputTypeLevel(
      context, 0, {{kFloat32, kFeatureLevel4}, {kFloat16, kFeatureLevel4}}));
  const int32_t scalar_type =
      context.InputType(0) == kFloat16 ? ANEURALNETWORKS_FLOAT16 : ANEURALNETWORKS_FLOAT32;
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {scalar_type}));
  return CheckOutputTypeMatches(context, 0, 0);
}

int PrepareElu(OperationContext& context) {
  NN_RETURN_IF_ERROR(elementwise::CheckRunnableInputs(context, /*allow_zero_sized=*/true));
  return elementwise::PrepareSameShape(context);
}

template <typename T>
void RunElu(OperationContext& context) {
  const float alpha = float(context.InputScalar<T>(1));
  const T* x = context.Input(0).Data<T>();
  T* y = context.Output(0).MutableData<T>();
  const size_t count = indexing::Product(context.Input(0).dimensions);
  for (size_t i = 0; i < count; ++i) {
    const float value = float(x[i]);
    y[i] = T(std::max(0.f, value) + std::min(0.f, alpha * (std::exp(value) - 1.f)));
  }
}

int ExecuteElu(OperationContext& context) {
  return elementwise::Dispatch(context, context.InputType(0),
                               [&](auto tag) { RunElu<decltype(tag)>(context); });
}

// ---- PRELU --------------------------------------------------------------------------------------

int ValidatePrelu(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  NN_RETURN_IF_ERROR(elementwise::CheckInputTypeLevel(context, 0,
                                                      {{kFloat32, kFeatureLevel3},
                                                       {kFloat16, kFeatureLevel3},
                                                       {kQuant8, kFeatureLevel3},
                                                       {kQuant8Signed, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(elementwise::CheckInputTypeMatches(context, 1, 0));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  return elementwise::CheckBroadcastableIfKnown(context, 0, 1);
}

int PreparePrelu(OperationContext& context) {
  NN_RETURN_IF_ERROR(elementwise::CheckRunnableInputs(context, /*allow_zero_sized=*/false));
  return elementwise::PrepareBroadcast(context, 0, 1);
}

template <typename T>
void RunPreluFloat(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& alpha = context.Input(1);
  const OperandInfo& output = context.Output(0);
  const T* x = input.Data<T>();
  const T* a = alpha.Data<T>();
  T* y = output.MutableData<T>();
  ForEachBroadcast(output.dimensions, input.dimensions, alpha.dimensions,
                   [&](size_t o, size_t i, size_t j) {
                     const float value = float(x[i]);
                     y[o] = T(value >= 0.f ? value : value * float(a[j]));
                   });
}

template <typename Q>
void RunPreluQuantized(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& alpha = context.Input(1);
  const OperandInfo& output = context.Output(0);
  const Q* x = input.Data<Q>();
  const Q* a = alpha.Data<Q>();
  Q* y = output.MutableData<Q>();
  ForEachBroadcast(
      output.dimensions, input.dimensions, alpha.dimensions, [&](size_t o, size_t i, size_t j) {
        const float value = Dequantize(x[i], input.scale, input.zero_point);
        const float real =
            value >= 0.f ? value : value * Dequantize(a[j], alpha.scale, alpha.zero_point);
        y[o] = elementwise::QuantizeResult<Q>(real, output.scale, output.zero_point);
      });
}

int ExecutePrelu(OperationContext& context) {
  return elementwise::Dispatch(
      context, context.InputType(0), [&](auto tag) { RunPreluFloat<decltype(tag)>(context); },
      [&](auto tag) { RunPreluQuantized<decltype(tag)>(context); });
}

}  // namespace

NN_REGISTER_OPERATION(RELU, ValidateActivation, PrepareActivation, ExecuteActivation);
NN_REGISTER_OPERATION(RELU1, ValidateActivation, PrepareActivation, ExecuteActivation);
NN_REGISTER_OPERATION(RELU6, ValidateActivation, PrepareActivation, ExecuteActivation);
NN_REGISTER_OPERATION(LOGISTIC, ValidateActivation, PrepareActivation, ExecuteActivation);
NN_REGISTER_OPERATION(TANH, ValidateActivation, PrepareActivation, ExecuteActivation);
NN_REGISTER_OPERATION(HARD_SWISH, ValidateActivation, PrepareActivation, ExecuteActivation);
NN_REGISTER_OPERATION(ELU, ValidateElu, PrepareElu, ExecuteElu);
NN_REGISTER_OPERATION(PRELU, ValidatePrelu, PreparePrelu, ExecutePrelu);

}  // namespace mock_nnapi
