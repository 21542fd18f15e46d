// SPDX-License-Identifier: Apache-2.0
// FULLY_CONNECTED: out = activation(input * weights^T + bias) through OpenBLAS sgemm.
//
// Inputs (NDK reference; Android's fully_connected validation): 0 input of rank 2 to 4, read as
// [batch, input_size] with input_size = weights.dim[1] (its element count must divide by
// input_size); 1 weights [num_units, input_size]; 2 bias [num_units]; 3 FuseCode.
// Output [batch, num_units]; only the batch may be 0.
// Types: TENSOR_FLOAT32 (FL1), TENSOR_QUANT8_ASYMM (FL1; FL3 when the output scale is not larger
// than input_scale * weights_scale), TENSOR_FLOAT16 (FL3), TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// Weights have the input's type (no per-channel quantisation). The bias has the input's float
// type, or for quantised inputs is TENSOR_INT32 with zero point 0 and scale input_scale *
// weights_scale (relative tolerance 1e-6, Android's CPU check). Shapes are checked when the
// operation is added if the ranks are known (as Android does).
// fp16 runs through fp32 sgemm; quantised inputs accumulate exactly in int32 and are requantised
// with a real multiplier: constant weights on int8_gemm (packed once per model, any batch),
// weights that are model inputs through IntegerDotRows on the quantised weights themselves (a few
// rows) or gemm::IntegerGemm. fp32 with two or more rows and constant weights of at most
// kPackedWeightsMaxBytes runs on packed_gemm (the weights packed once per model).
#include <algorithm>
#include <memory>
#include <vector>

#include "../kernels/int8_gemm.h"
#include "../kernels/packed_gemm.h"
#include "../kernels/requantize.h"
#include "../kernels/vector_math.h"
#include "conv_common.h"
#include "gemm.h"

namespace mock_nnapi {
namespace fully_connected {

// Clones of the integer kernel: its int16 multiply-adds have 512-bit forms only with AVX-512BW
// (part of x86-64-v4); vector_math.h's AVX-512F clone would run them on 256 bits.
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define MOCK_NNAPI_INT16_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef MOCK_NNAPI_INT16_CLONES
#define MOCK_NNAPI_INT16_CLONES
#endif

// acc[b * num_units + j] = sum over i of x[b * k + i] * (w[j * k + i] - w_zero) for the units j in
// [begin, end) and the `batch` rows b: exact int32 sums of int16 products (the caller checks that
// no sum can overflow), in loops GCC vectorises (multiply-add of int16 pairs). Each weight row is
// read once for all rows of x.
template <typename Q>
inline void IntegerDotRowsImpl(const int16_t* __restrict__ x, size_t batch, const Q* __restrict__ w,
                               size_t k, int16_t w_zero, size_t num_units, size_t begin, size_t end,
                               int32_t* __restrict__ acc) {
  for (size_t j = begin; j < end; ++j) {
    const Q* __restrict__ row = w + j * k;
    for (size_t b = 0; b < batch; ++b) {
      const int16_t* __restrict__ xb = x + b * k;
      int32_t sum = 0;
      for (size_t i = 0; i < k; ++i) {
        const int16_t weight = static_cast<int16_t>(static_cast<int16_t>(row[i]) - w_zero);
        sum += int32_t{xb[i]} * int32_t{weight};
      }
      acc[b * num_units + j] = sum;
    }
  }
}

MOCK_NNAPI_INT16_CLONES
void IntegerDotRows(const int16_t* x, size_t batch, const uint8_t* w, size_t k, int16_t w_zero,
                    size_t num_units, size_t begin, size_t end, int32_t* acc) {
  IntegerDotRowsImpl(x, batch, w, k, w_zero, num_units, begin, end, acc);
}

MOCK_NNAPI_INT16_CLONES
void IntegerDotRows(const int16_t* x, size_t batch, const int8_t* w, size_t k, int16_t w_zero,
                    size_t num_units, size_t begin, size_t end, int32_t* acc) {
  IntegerDotRowsImpl(x, batch, w, k, w_zero, num_units, begin, end, acc);
}

}  // namespace fully_connected

namespace {

constexpr uint32_t kInput = 0;
constexpr uint32_t kWeights = 1;
constexpr uint32_t kBias = 2;
constexpr uint32_t kActivation = 3;

// Largest fp32 weights packed for packed_gemm. A packed copy lives as long as the model, next to
// the weights themselves, so it is kept for the small matrices where OpenBLAS's per-call packing
// costs most (classifiers, BERT-base's 768x768 and 768x3072 layers: 2.25 and 9 MiB) and left out
// for LLM weights (TinyLlama-1.1B's smallest is its 2048x2048 output projection, 16 MiB): the
// 1B-parameter prefill's peak memory goal (at most 1.3x the weights, docs/performance.md) has no
// room for a second copy.
constexpr size_t kPackedWeightsMaxBytes = size_t{12} << 20;

// Its DerivedConstants key (conv::FloatValues uses the input indices).
constexpr uint32_t kPackedWeightsKey = 0x100;

// [batch, input_size, num_units] from known shapes; checks their consistency with `code`.
int CheckShapes(const OperationContext& context, int code, uint32_t* batch, uint32_t* input_size,
                uint32_t* num_units) {
  const OperandInfo& input = context.Input(kInput);
  const OperandInfo& weights = context.Input(kWeights);
  const OperandInfo& bias = context.Input(kBias);
  NN_CHECK(input.rank() >= 2 && input.rank() <= 4, code)
      << context.name() << " input rank " << input.rank() << " must be 2 to 4";
  NN_CHECK_EQ(weights.rank(), 2u, code) << context.name() << " weights rank";
  NN_CHECK_EQ(bias.rank(), 1u, code) << context.name() << " bias rank";
  *num_units = weights.dim(0);
  *input_size = weights.dim(1);
  *batch = 0;
  const uint64_t elements = ElementCount(input.dimensions).value_or(0);
  if (*input_size != 0) {
    NN_CHECK_EQ(elements % *input_size, 0u, code)
        << context.name() << " input of " << DimensionsToString(input.dimensions)
        << " cannot be read as rows of " << *input_size;
    *batch = static_cast<uint32_t>(elements / *input_size);
  }
  if (*num_units != 0 && bias.dim(0) != 0) {
    NN_CHECK_EQ(bias.dim(0), *num_units, code) << context.name() << " bias length";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {4}, 1));
  NN_RETURN_IF_ERROR(CheckInputType(
      context, kInput,
      {ANEURALNETWORKS_TENSOR_FLOAT32, ANEURALNETWORKS_TENSOR_FLOAT16,
       ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED}));
  const OperandInfo& input = context.Input(kInput);
  const OperandInfo& weights = context.Input(kWeights);
  const bool quantized = IsQuantizedType(input.type);
  NN_RETURN_IF_ERROR(conv::CheckInputTypes(
      context, {input.type, input.type, quantized ? ANEURALNETWORKS_TENSOR_INT32 : input.type,
                ANEURALNETWORKS_INT32}));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, kInput));
  NN_RETURN_IF_ERROR(conv::CheckBias(context, kInput, kWeights, kBias));
  NN_RETURN_IF_ERROR(CheckFusedActivation(context, kActivation));
  if (input.rank_known && weights.rank_known && context.Input(kBias).rank_known) {
    uint32_t batch, input_size, num_units;
    NN_RETURN_IF_ERROR(
        CheckShapes(context, ANEURALNETWORKS_BAD_DATA, &batch, &input_size, &num_units));
  }
  switch (input.type) {
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      context.RequireFeatureLevel(kFeatureLevel3);
      break;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      if (!(context.Output(0).scale > input.scale * weights.scale)) {
        context.RequireFeatureLevel(kFeatureLevel3);
      }
      break;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      context.RequireFeatureLevel(kFeatureLevel4);
      break;
    default:
      break;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Prepare(OperationContext& context) {
  uint32_t batch, input_size, num_units;
  NN_RETURN_IF_ERROR(
      CheckShapes(context, ANEURALNETWORKS_OP_FAILED, &batch, &input_size, &num_units));
  NN_CHECK(input_size > 0 && num_units > 0, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " only the batch may be zero-sized";
  return context.SetOutputShape(0, {batch, num_units});
}

// out[batch, num_units] = activation(input * weights^T + bias), all fp32.
void FullyConnectedFloat(const float* input, const float* weights, const float* bias, size_t batch,
                         size_t input_size, size_t num_units, int32_t activation, float* out) {
  float beta = 0.f;
  if (bias != nullptr) {
    for (size_t b = 0; b < batch; ++b) std::copy(bias, bias + num_units, out + b * num_units);
    beta = 1.f;
  }
  gemm::Sgemm(gemm::Transpose::kNo, gemm::Transpose::kYes, batch, num_units, input_size, 1.f, input,
              input_size, weights, input_size, beta, out, num_units);
  if (activation == ANEURALNETWORKS_FUSED_NONE) return;
  float low, high;
  FloatActivationRange(activation, &low, &high);
  conv::ClampAll(out, batch * num_units, low, high);
}

// fp32 with two or more rows and constant weights (and bias, if any) of at most
// kPackedWeightsMaxBytes: packed_gemm on the weights packed on the model's first run, or packed
// for this run when the DerivedConstants store declines them (the same bits). Returns false
// (nothing done) otherwise.
bool FullyConnectedPacked(const OperationContext& context, size_t batch, size_t input_size,
                          size_t num_units, int32_t activation) {
  const OperandInfo& weights = context.Input(kWeights);
  const OperandInfo& bias = context.Input(kBias);
  const float* bias_data = bias.Data<float>();
  // A single row is a matrix-vector product bound by memory bandwidth: sgemv reads the weights as
  // they are (the packed copy measured 0.7-1.1x as fast).
  if (batch < 2 || !weights.constant || (bias_data != nullptr && !bias.constant) ||
      !packed_gemm::Enabled() || input_size * num_units * sizeof(float) > kPackedWeightsMaxBytes) {
    return false;
  }
  const auto pack = [&] {
    return std::make_unique<packed_gemm::PackedMatrix>(
        gemm::Transpose::kYes, input_size, num_units, weights.Data<float>(), input_size, bias_data);
  };
  std::unique_ptr<packed_gemm::PackedMatrix> own;
  const packed_gemm::PackedMatrix* packed = context.Derived<packed_gemm::PackedMatrix>(
      kPackedWeightsKey, packed_gemm::PackedMatrix::Bytes(input_size, num_units), pack);
  if (packed == nullptr) {
    own = pack();
    packed = own.get();
  }
  float low, high;
  FloatActivationRange(activation, &low, &high);
  packed_gemm::Multiply(batch, context.Input(kInput).Data<float>(), input_size, *packed, low, high,
                        context.Output(0).MutableData<float>(), num_units);
  return true;
}

// Rows of x up to which the quantised product runs on the quantised weights themselves: reading
// one byte per weight instead of the four of their float copy (decode's matrix-vector products
// are bound by that traffic), at a multiply-add rate that only pays for a few rows. Constant
// weights take int8_gemm first (QuantizedPacked: measured faster at M = 1 too), so this serves
// weights that are model inputs (and MOCK_NNAPI_INT8_GEMM=0).
constexpr size_t kDirectBatch = 4;

template <typename Q>
void QuantizedDirectImpl(const OperationContext& context, size_t batch, size_t input_size,
                         size_t num_units, int32_t activation) {
  const OperandInfo& input = context.Input(kInput);
  const OperandInfo& weights = context.Input(kWeights);
  const OperandInfo& output = context.Output(0);
  const Q* x = input.Data<Q>();
  std::vector<int16_t> offsets(batch * input_size);
  for (size_t i = 0; i < offsets.size(); ++i) {
    offsets[i] = static_cast<int16_t>(int32_t{x[i]} - input.zero_point);
  }
  std::unique_ptr<int32_t[]> accumulators(new int32_t[batch * num_units]);  // all written below
  constexpr size_t kBlock = 16;
  gemm::ParallelFor((num_units + kBlock - 1) / kBlock, kBlock * batch * input_size,
                    [&](size_t begin, size_t end) {
                      fully_connected::IntegerDotRows(
                          offsets.data(), batch, weights.Data<Q>(), input_size,
                          static_cast<int16_t>(weights.zero_point), num_units, begin * kBlock,
                          std::min(num_units, end * kBlock), accumulators.get());
                    });
  const conv::Requantization<Q> requantization(
      context.Input(kBias).Data<int32_t>(),
      conv::OutputMultipliers(input, weights, output, num_units), activation, output);
  requantization.Rows(accumulators.get(), batch, output.MutableData<Q>());
}

// The quantised FULLY_CONNECTED of at most kDirectBatch rows, when no int32 sum of products can
// overflow (then gemm::IntegerGemm's saturation never applies, and the exact sums are the same);
// false when it does not apply.
bool QuantizedDirect(const OperationContext& context, size_t batch, size_t input_size,
                     size_t num_units, int32_t activation) {
  const OperandInfo& input = context.Input(kInput);
  const double bound = static_cast<double>(input_size) * conv::MaxAbsOffset(input) *
                       conv::MaxAbsOffset(context.Input(kWeights));
  if (batch > kDirectBatch || bound >= 2147483647.0) return false;
  if (input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM) {
    QuantizedDirectImpl<uint8_t>(context, batch, input_size, num_units, activation);
  } else {
    QuantizedDirectImpl<int8_t>(context, batch, input_size, num_units, activation);
  }
  return true;
}

// int8_gemm's packed weights: their DerivedConstants key (packed_gemm's fp32 copy is 0x100).
constexpr uint32_t kInt8WeightsKey = 0x101;

// The quantised FULLY_CONNECTED on int8_gemm: constant weights packed once per model (one byte
// per weight, where IntegerGemm's path keeps a float copy of four), the input rows read in place,
// requantised block by block. Applies (true) when the weights are constant and no int32 sum can
// overflow (as QuantizedDirect: the sums are then those of both other paths), unless
// MOCK_NNAPI_INT8_GEMM=0.
template <typename Q>
bool QuantizedPackedImpl(const OperationContext& context, size_t batch, size_t input_size,
                         size_t num_units, int32_t activation) {
  const OperandInfo& input = context.Input(kInput);
  const OperandInfo& weights = context.Input(kWeights);
  const OperandInfo& output = context.Output(0);
  if (!int8_gemm::Enabled() || !weights.constant ||
      !int8_gemm::CanMultiply(input_size, conv::MaxAbsOffset(input), conv::MaxAbsOffset(weights))) {
    return false;
  }
  const bool is_signed = input.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED;
  const auto pack = [&] {
    return std::make_unique<int8_gemm::PackedWeights>(
        int8_gemm::Signedness{is_signed, is_signed}, 1, input_size, num_units,
        weights.Data<uint8_t>(), input_size, weights.zero_point, input.zero_point);
  };
  std::unique_ptr<int8_gemm::PackedWeights> own;
  const int8_gemm::PackedWeights* packed = context.Derived<int8_gemm::PackedWeights>(
      kInt8WeightsKey, int8_gemm::PackedWeights::Bytes(1, input_size, num_units), pack);
  if (packed == nullptr) {
    own = pack();
    packed = own.get();
  }
  const conv::Requantization<Q> requantization(
      context.Input(kBias).Data<int32_t>(),
      conv::OutputMultipliers(input, weights, output, num_units), activation, output);
  Q* out = output.MutableData<Q>();
  int8_gemm::Multiply(batch, int8_gemm::StridedRows(input.Data<uint8_t>(), input_size, input_size),
                      *packed, [&](size_t first, size_t count, const int32_t* sums) {
                        requantization.Rows(sums, count, out + first * num_units);
                      });
  return true;
}

bool QuantizedPacked(const OperationContext& context, size_t batch, size_t input_size,
                     size_t num_units, int32_t activation) {
  if (context.Input(kInput).type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM) {
    return QuantizedPackedImpl<uint8_t>(context, batch, input_size, num_units, activation);
  }
  return QuantizedPackedImpl<int8_t>(context, batch, input_size, num_units, activation);
}

int Execute(OperationContext& context) {
  const OperandInfo& input = context.Input(kInput);
  const OperandInfo& weights = context.Input(kWeights);
  const OperandInfo& bias = context.Input(kBias);
  const OperandInfo& output = context.Output(0);
  const int32_t activation = context.InputScalar<int32_t>(kActivation);
  const size_t batch = output.dim(0);
  const size_t num_units = output.dim(1);
  const size_t input_size = weights.dim(1);
  if (batch == 0) return ANEURALNETWORKS_NO_ERROR;
  switch (input.type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      if (FullyConnectedPacked(context, batch, input_size, num_units, activation)) {
        return ANEURALNETWORKS_NO_ERROR;
      }
      FullyConnectedFloat(input.Data<float>(), weights.Data<float>(), bias.Data<float>(), batch,
                          input_size, num_units, activation, output.MutableData<float>());
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16: {
      const conv::FloatValues x(input), w(context, kWeights), b(context, kBias);
      std::vector<float> out(batch * num_units);
      FullyConnectedFloat(x.data(), w.data(), b.data(), batch, input_size, num_units, activation,
                          out.data());
      gemm::FloatToHalf(out.data(), out.size(), output.MutableData<Half>());
      return ANEURALNETWORKS_NO_ERROR;
    }
    default: {  // TENSOR_QUANT8_ASYMM(_SIGNED)
      if (QuantizedPacked(context, batch, input_size, num_units, activation) ||
          QuantizedDirect(context, batch, input_size, num_units, activation)) {
        return ANEURALNETWORKS_NO_ERROR;
      }
      const conv::FloatValues x(input), w(context, kWeights);
      std::vector<int32_t> accumulators(batch * num_units);
      gemm::IntegerGemm(gemm::Transpose::kNo, gemm::Transpose::kYes, batch, num_units, input_size,
                        x.data(), input_size, conv::MaxAbsOffset(input), w.data(), input_size,
                        conv::MaxAbsOffset(weights), accumulators.data(), num_units);
      const conv::Shape4 shape{1, 1, static_cast<uint32_t>(batch),
                               static_cast<uint32_t>(num_units)};
      conv::StoreQuantizedOutput(accumulators.data(), shape, bias.Data<int32_t>(),
                                 conv::OutputMultipliers(input, weights, output, num_units),
                                 activation, output, false);
      return ANEURALNETWORKS_NO_ERROR;
    }
  }
}

}  // namespace

NN_REGISTER_OPERATION(FULLY_CONNECTED, Validate, Prepare, Execute);

}  // namespace mock_nnapi
