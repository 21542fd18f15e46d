// SPDX-License-Identifier: Apache-2.0
// QUANTIZED_16BIT_LSTM: one LSTM step (no CIFG, peephole or projection; the cell
// state has the output's size) on 8-bit activations and weights and a 16-bit cell state:
//
//   i = sigmoid(W_xi x + W_hi h + b_i)   f = sigmoid(W_xf x + W_hf h + b_f)
//   g = tanh(W_xc x + W_hc h + b_c)      o = sigmoid(W_xo x + W_ho h + b_o)
//   C_t = f C_{t-1} + i g                h_t = o tanh(C_t)
//
// (with W_x x + W_h h computed as Android computes it, below).
//
// Inputs: 0 input [batches, input_size] and 14 the previous output [batches, output_size],
//   TENSOR_QUANT8_ASYMM with scale 1/128 and zero point 128 (range [-1, 127/128]); 1-4 the
//   input-to-gate weights [output_size, input_size] and 5-8 the recurrent-to-gate weights
//   [output_size, output_size], TENSOR_QUANT8_ASYMM all with one scale and zero point; 9-12 the
//   gate biases [output_size], TENSOR_INT32 with scale weights_scale / 128 and zero point 0;
//   13 the previous cell state [batches, output_size], TENSOR_QUANT16_SYMM with scale 2^-11
//   (range [-16, 16)). Gate order input, forget, cell, output.
// Outputs: 0 the cell state (TENSOR_QUANT16_SYMM, scale 2^-11, zero point 0) and 1 the output
//   (TENSOR_QUANT8_ASYMM, scale 1/128, zero point 128), both [batches, output_size].
//
// The gates' matrix products follow Android's implementation (and its conformance tests),
// which concatenates the data as [input, previous output] but each gate's weights as
// [recurrent-to-gate, input-to-gate] (columns 0 .. output_size - 1 from the recurrent weights):
//
//   acc[c] = bias[c] + sum_j (data[j] - 128) * (weight[c][j] - weights_zero_point)
//   data = [x_0 .. x_{input_size-1}, h_0 .. h_{output_size-1}]
//   weight[c] = [W_h[c][0 .. output_size-1], W_x[c][0 .. input_size-1]]
//
// which differs from W_x x + W_h h unless the data and the weights happen to line up (with
// input_size == output_size it pairs the input with the recurrent weights).
//
// Arithmetic (the fixed-point formats of Android's CPU implementation, TensorFlow Lite's
// quantized LSTM cell): each gate's integer accumulator is rescaled to 16 bits with 3 integer
// bits (steps of 2^-12, saturated to [-8, 8)); the sigmoid and tanh are evaluated in double and
// rounded to 16 bits with 0 integer bits (steps of 2^-15, saturated below 1); the products are
// rounded to the nearest step (half steps up), i * g is rescaled to the cell state's format
// (half steps away from zero) and added with saturation; tanh(C_t) reads C_t saturated to
// [-8, 8); the output is rounded (half steps away from zero) to 8 bits. Android evaluates sigmoid
// and tanh with fixed-point approximations, so results may differ from it by a step of each
// format. Shapes and quantisation are checked at prepare (OP_FAILED), as Android does.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "recurrent_helpers.h"

namespace mock_nnapi {
namespace {

constexpr uint32_t kInput = 0, kBiasFirst = 9, kPrevCellState = 13, kPrevOutput = 14;
constexpr float kActivationScale = 1.f / 128, kCellStateScale = 1.f / 2048;

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {15}, 2));
  NN_RETURN_IF_ERROR(
      recurrent::CheckInputTypes(context, 0, 8, ANEURALNETWORKS_TENSOR_QUANT8_ASYMM));
  NN_RETURN_IF_ERROR(recurrent::CheckInputTypes(context, 9, 12, ANEURALNETWORKS_TENSOR_INT32));
  NN_RETURN_IF_ERROR(recurrent::CheckInputTypes(context, kPrevCellState, kPrevCellState,
                                                ANEURALNETWORKS_TENSOR_QUANT16_SYMM));
  NN_RETURN_IF_ERROR(recurrent::CheckInputTypes(context, kPrevOutput, kPrevOutput,
                                                ANEURALNETWORKS_TENSOR_QUANT8_ASYMM));
  NN_CHECK(context.Output(0).type == ANEURALNETWORKS_TENSOR_QUANT16_SYMM &&
               context.Output(1).type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM,
           ANEURALNETWORKS_BAD_DATA)
      << context.name() << " outputs must be TENSOR_QUANT16_SYMM and TENSOR_QUANT8_ASYMM";
  context.RequireFeatureLevel(kFeatureLevel3);
  return ANEURALNETWORKS_NO_ERROR;
}

int CheckQuantization(const OperationContext& context, const OperandInfo& operand, float scale,
                      int32_t zero_point, const std::string& what) {
  NN_CHECK(operand.scale == scale && operand.zero_point == zero_point, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " " << what << " must have scale " << scale << " and zero point "
      << zero_point << ", not " << operand.scale << " and " << operand.zero_point;
  return ANEURALNETWORKS_NO_ERROR;
}

int Shape(const OperationContext& context, uint32_t* batches, uint32_t* input_size,
          uint32_t* output_size) {
  for (uint32_t i = 0; i < context.InputCount(); ++i) {
    NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, i, "a QUANTIZED_16BIT_LSTM operand"));
  }
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, kInput, 2, "input"));
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, kPrevOutput, 2, "previous output"));
  *batches = context.Input(kInput).dim(0);
  *input_size = context.Input(kInput).dim(1);
  *output_size = context.Input(kPrevOutput).dim(1);
  NN_RETURN_IF_ERROR(
      recurrent::CheckShape(context, kPrevOutput, {*batches, *output_size}, "previous output"));
  NN_RETURN_IF_ERROR(recurrent::CheckShape(context, kPrevCellState, {*batches, *output_size},
                                           "previous cell state"));
  NN_RETURN_IF_ERROR(
      CheckQuantization(context, context.Input(kInput), kActivationScale, 128, "input"));
  NN_RETURN_IF_ERROR(CheckQuantization(context, context.Input(kPrevOutput), kActivationScale, 128,
                                       "previous output"));
  NN_RETURN_IF_ERROR(CheckQuantization(context, context.Input(kPrevCellState), kCellStateScale, 0,
                                       "previous cell state"));
  const OperandInfo& first = context.Input(1);
  NN_CHECK(first.scale > 0, ANEURALNETWORKS_OP_FAILED) << context.name() << " weights scale";
  for (uint32_t i = 1; i <= 8; ++i) {
    NN_RETURN_IF_ERROR(recurrent::CheckShape(
        context, i, {*output_size, i <= 4 ? *input_size : *output_size}, "weights"));
    NN_RETURN_IF_ERROR(CheckQuantization(context, context.Input(i), first.scale, first.zero_point,
                                         "weights " + std::to_string(i) + " (as weights 1)"));
  }
  for (uint32_t i = kBiasFirst; i < kBiasFirst + 4; ++i) {
    NN_RETURN_IF_ERROR(recurrent::CheckShape(context, i, {*output_size}, "bias"));
    NN_RETURN_IF_ERROR(CheckQuantization(context, context.Input(i), first.scale / 128, 0,
                                         "bias " + std::to_string(i)));
  }
  NN_RETURN_IF_ERROR(
      CheckQuantization(context, context.Output(0), kCellStateScale, 0, "output 0 (cell state)"));
  return CheckQuantization(context, context.Output(1), kActivationScale, 128, "output 1");
}

int Prepare(OperationContext& context) {
  uint32_t batches = 0, input_size = 0, output_size = 0;
  NN_RETURN_IF_ERROR(Shape(context, &batches, &input_size, &output_size));
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, {batches, output_size}));
  return context.SetOutputShape(1, {batches, output_size});
}

int32_t Saturate16(int64_t value) {
  return static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(value, -32768), 32767));
}

// A real value in [-1, 1] as a 16-bit value with 15 fractional bits.
int32_t ToQ15(double value) { return recurrent::RoundSaturated(value * 32768.0, -32768, 32767); }

// The product of a 15-fractional-bit value and one with F fractional bits, in the latter's
// format: rounded to the nearest step, half steps up.
int32_t MultiplyQ15(int32_t q15, int32_t other) {
  const int64_t product = static_cast<int64_t>(q15) * other;
  return Saturate16(static_cast<int64_t>(std::floor(static_cast<double>(product) / 32768.0 + 0.5)));
}

// value / 2^shift rounded to the nearest integer, half away from zero.
int32_t DivideByPowerOfTwo(int32_t value, int shift) {
  const double scaled = static_cast<double>(value) / static_cast<double>(1 << shift);
  return static_cast<int32_t>(std::round(scaled));
}

int Execute(OperationContext& context) {
  uint32_t batches = 0, input_size = 0, output_size = 0;
  NN_RETURN_IF_ERROR(Shape(context, &batches, &input_size, &output_size));
  const uint8_t* input = context.Input(kInput).Data<uint8_t>();
  const uint8_t* previous = context.Input(kPrevOutput).Data<uint8_t>();
  const int16_t* cell_in = context.Input(kPrevCellState).Data<int16_t>();
  const int32_t zero_point = context.Input(1).zero_point;
  // The accumulator's real value is acc * weights_scale / 128; in steps of 2^-12 it is
  // acc * weights_scale * 32.
  const double to_q12 = static_cast<double>(context.Input(1).scale) * 32.0;
  int16_t* cell_out = context.Output(0).MutableData<int16_t>();
  uint8_t* output = context.Output(1).MutableData<uint8_t>();
  const size_t total = size_t{input_size} + output_size;
  for (size_t b = 0; b < batches; ++b) {
    for (size_t c = 0; c < output_size; ++c) {
      double gate[4];
      for (uint32_t g = 0; g < 4; ++g) {
        const uint8_t* wx = context.Input(1 + g).Data<uint8_t>() + c * input_size;
        const uint8_t* wh = context.Input(5 + g).Data<uint8_t>() + c * output_size;
        int64_t acc = context.Input(kBiasFirst + g).Data<int32_t>()[c];
        // Android's pairing: the data [input, previous output] against the weight columns
        // [recurrent-to-gate, input-to-gate] (see the file comment).
        for (size_t j = 0; j < total; ++j) {
          const int64_t data = j < input_size ? input[b * input_size + j]
                                              : previous[b * output_size + (j - input_size)];
          const int64_t weight = j < output_size ? wh[j] : wx[j - output_size];
          acc += (data - 128) * (weight - zero_point);
        }
        const int32_t q12 =
            recurrent::RoundSaturated(static_cast<double>(acc) * to_q12, -32768, 32767);
        gate[g] = q12 / 4096.0;
      }
      const int32_t i = ToQ15(1.0 / (1.0 + std::exp(-gate[0])));
      const int32_t f = ToQ15(1.0 / (1.0 + std::exp(-gate[1])));
      const int32_t g = ToQ15(std::tanh(gate[2]));
      const int32_t o = ToQ15(1.0 / (1.0 + std::exp(-gate[3])));
      // C_t in steps of 2^-11: f * C_{t-1} plus i * g rescaled from 2^-15 steps.
      const int32_t kept = MultiplyQ15(f, cell_in[b * output_size + c]);
      const int32_t added = DivideByPowerOfTwo(MultiplyQ15(i, g), 4);
      const int32_t cell = Saturate16(int64_t{kept} + added);
      cell_out[b * output_size + c] = static_cast<int16_t>(cell);
      // tanh reads C_t in steps of 2^-12 (saturated to [-8, 8)).
      const int32_t cell_q12 = Saturate16(int64_t{cell} * 2);
      const int32_t h = MultiplyQ15(o, ToQ15(std::tanh(cell_q12 / 4096.0)));
      const int32_t h8 = std::min(std::max(DivideByPowerOfTwo(h, 8), -128), 127);
      output[b * output_size + c] = static_cast<uint8_t>(128 + h8);
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(QUANTIZED_16BIT_LSTM, Validate, Prepare, Execute);

}  // namespace mock_nnapi
