// SPDX-License-Identifier: Apache-2.0
// CAST, QUANTIZE, DEQUANTIZE: conversions between tensor types. Input 0 tensor; output 0 of the
// same shape and the type declared by the output operand.
//
// CAST (NDK reference and Android's operation validator):
//   FL3: any of TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM to any of them
//        (identity included). Quantisation parameters are ignored: quantised values are cast as
//        the raw integers. Floating point to integer truncates toward zero and saturates (to
//        [0, 255] for TENSOR_QUANT8_ASYMM, like Android's kernel; to the int32 range for
//        TENSOR_INT32, where Android's result is undefined); NaN becomes 0.
//   FL4: identity casts of TENSOR_BOOL8, TENSOR_QUANT16_ASYMM, TENSOR_QUANT16_SYMM,
//        TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT8_SYMM (a byte copy).
//   When both shapes are known (the output without unknown dimensions) they must be equal.
// QUANTIZE: TENSOR_FLOAT16 or TENSOR_FLOAT32 to TENSOR_QUANT8_ASYMM (FL3) or
//   TENSOR_QUANT8_ASYMM_SIGNED (FL4); q = clamp(zeroPoint + round(x / scale)) with ties away from
//   zero; NaN saturates to the maximum, like Android's kernel.
// DEQUANTIZE: TENSOR_QUANT8_ASYMM to TENSOR_FLOAT32 (FL1); TENSOR_QUANT8_ASYMM,
//   TENSOR_QUANT8_SYMM, TENSOR_QUANT8_SYMM_PER_CHANNEL to TENSOR_FLOAT16 or TENSOR_FLOAT32 (FL3);
//   TENSOR_QUANT8_ASYMM_SIGNED (FL4); x = scale * (q - zeroPoint), per channel for
//   TENSOR_QUANT8_SYMM_PER_CHANNEL; rank at most 4.
// Zero-sized inputs are accepted by all three (QUANTIZE and DEQUANTIZE are registered with
// allowZeroSizedInput in Android; CAST runs outside the operation resolver).
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "elementwise_helpers.h"

namespace mock_nnapi {
namespace {

// ---- CAST ---------------------------------------------------------------------------------------

bool IsCastBaseType(int32_t type) {
  return type == ANEURALNETWORKS_TENSOR_FLOAT16 || type == ANEURALNETWORKS_TENSOR_FLOAT32 ||
         type == ANEURALNETWORKS_TENSOR_INT32 || type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM;
}

bool IsCastIdentityOnlyType(int32_t type) {
  return type == ANEURALNETWORKS_TENSOR_BOOL8 || type == ANEURALNETWORKS_TENSOR_QUANT16_ASYMM ||
         type == ANEURALNETWORKS_TENSOR_QUANT16_SYMM ||
         type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED ||
         type == ANEURALNETWORKS_TENSOR_QUANT8_SYMM;
}

int ValidateCast(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {1}, 1));
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  if (IsCastBaseType(input.type) && IsCastBaseType(output.type)) {
    context.RequireFeatureLevel(kFeatureLevel3);
  } else if (IsCastIdentityOnlyType(input.type)) {
    NN_CHECK_EQ(output.type, input.type, ANEURALNETWORKS_BAD_DATA)
        << "CAST of " << OperandTypeName(input.type) << " supports only the identity cast, not "
        << OperandTypeName(output.type);
    context.RequireFeatureLevel(kFeatureLevel4);
  } else {
    NN_FAIL(ANEURALNETWORKS_BAD_DATA) << "CAST from " << OperandTypeName(input.type) << " to "
                                      << OperandTypeName(output.type) << " is not supported";
  }
  const bool input_known = input.rank_known && !input.dimensions.empty();
  const bool output_known =
      output.rank_known && !output.dimensions.empty() && !HasUnknownDimension(output.dimensions);
  if (input_known && output_known) {
    NN_CHECK(input.dimensions == output.dimensions, ANEURALNETWORKS_BAD_DATA)
        << "CAST output " << DimensionsToString(output.dimensions) << " differs from input "
        << DimensionsToString(input.dimensions);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int PrepareCast(OperationContext& context) {
  NN_RETURN_IF_ERROR(elementwise::CheckRunnableInputs(context, /*allow_zero_sized=*/true));
  return elementwise::PrepareSameShape(context);
}

// Float to integer: truncation toward zero, saturated to [low, high]; NaN gives 0.
int64_t TruncateSaturate(double value, int64_t low, int64_t high) {
  if (std::isnan(value)) return 0;
  if (value <= static_cast<double>(low)) return low;
  if (value >= static_cast<double>(high)) return high;
  return static_cast<int64_t>(value);
}

template <typename From, typename To>
void CastElements(const From* in, To* out, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if constexpr (std::is_same_v<To, float> || std::is_same_v<To, Half>) {
      if constexpr (std::is_same_v<From, Half>) {
        out[i] = To(float(in[i]));
      } else {
        out[i] = To(static_cast<float>(in[i]));
      }
    } else {
      double value;
      if constexpr (std::is_same_v<From, Half>) {
        value = float(in[i]);
      } else {
        value = static_cast<double>(in[i]);
      }
      out[i] = static_cast<To>(
          TruncateSaturate(value, std::numeric_limits<To>::min(), std::numeric_limits<To>::max()));
    }
  }
}

// Calls body(T{}) for the element type of a CAST base type.
template <typename Body>
void DispatchCastBase(int32_t type, Body&& body) {
  switch (type) {
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      body(Half{});
      break;
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      body(float{});
      break;
    case ANEURALNETWORKS_TENSOR_INT32:
      body(int32_t{});
      break;
    default:  // TENSOR_QUANT8_ASYMM
      body(uint8_t{});
  }
}

int ExecuteCast(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const size_t count = indexing::Product(input.dimensions);
  if (IsCastBaseType(input.type) && IsCastBaseType(output.type)) {
    DispatchCastBase(input.type, [&](auto from_tag) {
      using From = decltype(from_tag);
      DispatchCastBase(output.type, [&](auto to_tag) {
        using To = decltype(to_tag);
        CastElements(input.Data<From>(), output.MutableData<To>(), count);
      });
    });
    return ANEURALNETWORKS_NO_ERROR;
  }
  NN_CHECK_EQ(input.type, output.type, ANEURALNETWORKS_OP_FAILED)
      << "CAST from " << OperandTypeName(input.type) << " to " << OperandTypeName(output.type);
  if (count > 0) std::memcpy(output.data, input.data, count * ElementSize(input.type));
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- QUANTIZE -----------------------------------------------------------------------------------

int ValidateQuantize(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {1}, 1));
  NN_RETURN_IF_ERROR(
      CheckInputType(context, 0, {ANEURALNETWORKS_TENSOR_FLOAT16, ANEURALNETWORKS_TENSOR_FLOAT32}));
  const int32_t output_type = context.Output(0).type;
  if (output_type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM) {
    context.RequireFeatureLevel(kFeatureLevel3);
  } else if (output_type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED) {
    context.RequireFeatureLevel(kFeatureLevel4);
  } else {
    NN_FAIL(ANEURALNETWORKS_BAD_DATA)
        << "QUANTIZE output has type " << OperandTypeName(output_type)
        << "; expected TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int PrepareQuantize(OperationContext& context) {
  NN_RETURN_IF_ERROR(elementwise::CheckRunnableInputs(context, /*allow_zero_sized=*/true));
  return elementwise::PrepareSameShape(context);
}

int ExecuteQuantize(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const size_t count = indexing::Product(input.dimensions);
  const bool ran = elementwise::DispatchFloat(input.type, [&](auto float_tag) {
    using T = decltype(float_tag);
    elementwise::DispatchQuant8(output.type, [&](auto quant_tag) {
      using Q = decltype(quant_tag);
      const T* x = input.Data<T>();
      Q* y = output.MutableData<Q>();
      for (size_t i = 0; i < count; ++i) {
        y[i] = elementwise::QuantizeResult<Q>(float(x[i]), output.scale, output.zero_point);
      }
    });
  });
  NN_CHECK(ran, ANEURALNETWORKS_OP_FAILED)
      << "QUANTIZE: unsupported input type " << OperandTypeName(input.type);
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- DEQUANTIZE ---------------------------------------------------------------------------------

int ValidateDequantize(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {1}, 1));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, context.Input(0), 4, "input rank"));
  const int32_t output_type = context.Output(0).type;
  NN_RETURN_IF_ERROR(elementwise::CheckInputTypeLevel(
      context, 0,
      {{ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel1},
       {ANEURALNETWORKS_TENSOR_QUANT8_SYMM, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_CHECK(output_type == ANEURALNETWORKS_TENSOR_FLOAT32 ||
               output_type == ANEURALNETWORKS_TENSOR_FLOAT16,
           ANEURALNETWORKS_BAD_DATA)
      << "DEQUANTIZE output has type " << OperandTypeName(output_type)
      << "; expected TENSOR_FLOAT16 or TENSOR_FLOAT32";
  if (output_type == ANEURALNETWORKS_TENSOR_FLOAT16) context.RequireFeatureLevel(kFeatureLevel3);
  return ANEURALNETWORKS_NO_ERROR;
}

int PrepareDequantize(OperationContext& context) {
  NN_RETURN_IF_ERROR(elementwise::CheckRunnableInputs(context, /*allow_zero_sized=*/true));
  NN_RETURN_IF_ERROR(elementwise::CheckPreparedRankAtMost(context, 0, 4));
  const OperandInfo& input = context.Input(0);
  if (input.type == ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL) {
    NN_CHECK(input.channel_quant != nullptr, ANEURALNETWORKS_OP_FAILED)
        << "DEQUANTIZE input has no per-channel quantisation parameters";
    const uint32_t channel_dim = input.channel_quant->channel_dim;
    NN_CHECK(
        channel_dim < input.rank() && input.channel_quant->scales.size() == input.dim(channel_dim),
        ANEURALNETWORKS_OP_FAILED)
        << "DEQUANTIZE per-channel parameters do not match the input shape "
        << DimensionsToString(input.dimensions);
  }
  return elementwise::PrepareSameShape(context);
}

template <typename Q, typename T>
void DequantizePerTensor(const OperandInfo& input, T* out, size_t count) {
  const Q* x = input.Data<Q>();
  for (size_t i = 0; i < count; ++i) out[i] = T(Dequantize(x[i], input.scale, input.zero_point));
}

template <typename T>
void DequantizePerChannel(const OperandInfo& input, T* out, size_t count) {
  const int8_t* x = input.Data<int8_t>();
  const uint32_t channel_dim = input.channel_quant->channel_dim;
  const std::vector<float>& scales = input.channel_quant->scales;
  size_t inner = 1;  // elements per step along the channel dimension
  for (uint32_t d = channel_dim + 1; d < input.rank(); ++d) inner *= input.dim(d);
  const size_t channels = input.dim(channel_dim);
  for (size_t i = 0; i < count; ++i) {
    out[i] = T(scales[(i / inner) % channels] * static_cast<float>(x[i]));
  }
}

int ExecuteDequantize(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const size_t count = indexing::Product(input.dimensions);
  const bool ran = elementwise::DispatchFloat(output.type, [&](auto float_tag) {
    using T = decltype(float_tag);
    T* y = output.MutableData<T>();
    switch (input.type) {
      case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
        DequantizePerTensor<uint8_t>(input, y, count);
        break;
      case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      case ANEURALNETWORKS_TENSOR_QUANT8_SYMM:
        DequantizePerTensor<int8_t>(input, y, count);
        break;
      default:  // TENSOR_QUANT8_SYMM_PER_CHANNEL
        DequantizePerChannel(input, y, count);
    }
  });
  NN_CHECK(ran, ANEURALNETWORKS_OP_FAILED)
      << "DEQUANTIZE: unsupported output type " << OperandTypeName(output.type);
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(CAST, ValidateCast, PrepareCast, ExecuteCast);
NN_REGISTER_OPERATION(QUANTIZE, ValidateQuantize, PrepareQuantize, ExecuteQuantize);
NN_REGISTER_OPERATION(DEQUANTIZE, ValidateDequantize, PrepareDequantize, ExecuteDequantize);

}  // namespace mock_nnapi
