// SPDX-License-Identifier: Apache-2.0
// QUANTIZED_LSTM: one LSTM step (lstm_cell.h's equations, with CIFG, peephole,
// projection and layer normalisation as optional inputs) on 8-bit activations and weights and a
// 16-bit cell state.
//
// Inputs: 0 input [batch, input_size] and 18 the previous output [batch, output_size],
//   TENSOR_QUANT8_ASYMM_SIGNED; 1-4 input-to-gate [num_units, input_size] and 5-8
//   recurrent-to-gate [num_units, output_size] weights, TENSOR_QUANT8_SYMM (1 and 5 optional:
//   CIFG); 9-11 cell-to-gate (peephole) weights [num_units], TENSOR_QUANT16_SYMM, optional;
//   12-15 gate biases [num_units], TENSOR_INT32 (12 optional); 16 projection weights
//   [output_size, num_units], TENSOR_QUANT8_SYMM, and 17 its bias [output_size], TENSOR_INT32,
//   optional; 19 the previous cell state [batch, num_units], TENSOR_QUANT16_SYMM whose scale is
//   a power of two 2^k, k <= -9; 20-23 layer-norm weights [num_units], TENSOR_QUANT16_SYMM,
//   optional; 24 cell clip and 25 projection clip (FLOAT32, 0 disables); 26-29 the scales of the
//   gates' matrix-product results; 30 INT32 zero point and 31 FLOAT32 scale of the hidden state.
// Outputs: 0 output state, 2 output ([batch, output_size], TENSOR_QUANT8_ASYMM_SIGNED, equal),
//   1 cell state [batch, num_units] (TENSOR_QUANT16_SYMM, the previous cell state's scale).
// Gate order input, forget, cell, output.
//
// Arithmetic, following Android's implementation (TensorFlow Lite's integer LSTM), in real
// numbers rounded at its 16-bit formats:
//   * a gate's input and recurrent products are each rescaled to the gate's intermediate scale
//     (inputs 26-29) and rounded to 16 bits, peephole terms likewise, all summed with
//     saturation;
//   * with layer normalisation that sum is normalised over the units, (a - mean) / stddev, then
//     scaled by the layer-norm weights and shifted by the gate bias, whose scale is the layer-norm
//     weights' scale / 1024, giving the sigmoid/tanh input in steps of 2^-12; without layer
//     normalisation the sum itself is read in steps of 2^-12 (so the intermediate scale should be
//     2^-12) and the gate biases are not used (Android's implementation uses the biases only in
//     the layer normalisation);
//   * sigmoid and tanh are evaluated in double and rounded to steps of 2^-15; with CIFG
//     i = 1 - f;
//   * C_t = f C_{t-1} + i g in the cell state's scale, each product rounded half away from zero,
//     saturated to 16 bits and clipped to the cell clip (rounded to the cell state's scale);
//   * the hidden state o tanh(C_t) is quantised with inputs 30 and 31;
//   * with projection the output is (hidden - zero point) . W_proj + bias rescaled to the
//     output's scale and zero point, clipped to the projection clip (in the output's scale);
//     without projection the hidden state's 8-bit values are the output's (the hidden state's
//     quantisation should then be the output's).
// Where Android's implementation departs from the documented equations the mock keeps to the
// equations: the peephole terms read C_{t-1} for the input and forget gates (Android reads its
// cell-state output buffer before writing it) and C_t for the output gate; the projection
// subtracts the hidden state's zero point (Android adds it, and only with a projection bias) and
// clips in the output's scale (Android quantises the clip with the projection weights' scale).
// With a zero hidden zero point and no projection clip the two agree. Android computes the layer
// normalisation's mean and variance in integers (exact for power-of-two unit counts); the mock
// computes them in double. Shapes, optional-input combinations and the scales are checked at
// prepare (OP_FAILED).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "lstm_cell.h"

namespace mock_nnapi {
namespace {

constexpr uint32_t kInput = 0, kProjection = 16, kProjectionBias = 17, kPrevOutput = 18,
                   kPrevCell = 19, kLayerNormFirst = 20, kCellClip = 24, kProjectionClip = 25,
                   kIntermediateFirst = 26, kHiddenZeroPoint = 30, kHiddenScale = 31;

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {32}, 3));
  using recurrent::CheckInputTypes;
  NN_RETURN_IF_ERROR(CheckInputTypes(context, 0, 0, ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED));
  NN_RETURN_IF_ERROR(CheckInputTypes(context, 1, 8, ANEURALNETWORKS_TENSOR_QUANT8_SYMM));
  NN_RETURN_IF_ERROR(CheckInputTypes(context, 9, 11, ANEURALNETWORKS_TENSOR_QUANT16_SYMM));
  NN_RETURN_IF_ERROR(CheckInputTypes(context, 12, 15, ANEURALNETWORKS_TENSOR_INT32));
  NN_RETURN_IF_ERROR(CheckInputTypes(context, 16, 16, ANEURALNETWORKS_TENSOR_QUANT8_SYMM));
  NN_RETURN_IF_ERROR(CheckInputTypes(context, 17, 17, ANEURALNETWORKS_TENSOR_INT32));
  NN_RETURN_IF_ERROR(CheckInputTypes(context, 18, 18, ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED));
  NN_RETURN_IF_ERROR(CheckInputTypes(context, 19, 23, ANEURALNETWORKS_TENSOR_QUANT16_SYMM));
  NN_RETURN_IF_ERROR(CheckInputTypes(context, 24, 29, ANEURALNETWORKS_FLOAT32));
  NN_RETURN_IF_ERROR(CheckInputTypes(context, 30, 30, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(CheckInputTypes(context, 31, 31, ANEURALNETWORKS_FLOAT32));
  NN_CHECK(context.Output(0).type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED &&
               context.Output(1).type == ANEURALNETWORKS_TENSOR_QUANT16_SYMM &&
               context.Output(2).type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED,
           ANEURALNETWORKS_BAD_DATA)
      << context.name()
      << " outputs must be TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT16_SYMM and "
         "TENSOR_QUANT8_ASYMM_SIGNED";
  context.RequireFeatureLevel(kFeatureLevel4);
  return ANEURALNETWORKS_NO_ERROR;
}

// The cell's operands in lstm_cell.h's terms (its shape and optional-input checks apply as
// they are; the scalar arguments are this operation's own).
lstm::CellInputs Inputs() {
  lstm::CellInputs in = lstm::StandardInputs(lstm::kNone);
  for (uint32_t g = 0; g < 4; ++g) in.layer_norm[g] = kLayerNormFirst + g;
  in.output_state = kPrevOutput;
  in.cell_state = kPrevCell;
  in.activation = lstm::kNone;
  in.cell_clip = lstm::kNone;
  in.projection_clip = lstm::kNone;
  return in;
}

struct Setup {
  lstm::CellShape shape;
  int cell_shift = 0;  // the cell state's scale is 2^cell_shift
};

int Check(const OperationContext& context, Setup* setup) {
  NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, kInput, "input"));
  for (uint32_t i = kCellClip; i <= kHiddenScale; ++i) {
    NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, i, "scalar argument"));
  }
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, kInput, 2, "input"));
  const OperandInfo& input = context.Input(kInput);
  NN_RETURN_IF_ERROR(lstm::CheckCell(context, Inputs(), input.dim(0), input.dim(1), &setup->shape));
  const float cell_scale = context.Input(kPrevCell).scale;
  const double exponent = std::log2(static_cast<double>(cell_scale));
  setup->cell_shift = static_cast<int>(std::lround(exponent));
  NN_CHECK(
      cell_scale > 0 && std::ldexp(1.0, setup->cell_shift) == cell_scale && setup->cell_shift <= -9,
      ANEURALNETWORKS_OP_FAILED)
      << context.name() << " the cell state's scale " << cell_scale
      << " must be a power of two 2^k with k <= -9";
  for (uint32_t g = 0; g < 4; ++g) {
    if (g == 0 && setup->shape.cifg) continue;
    NN_CHECK(context.InputScalar<float>(kIntermediateFirst + g) > 0, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " intermediate scale (input " << kIntermediateFirst + g
        << ") must be > 0";
  }
  NN_CHECK(context.InputScalar<float>(kHiddenScale) > 0, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " the hidden state's scale must be > 0";
  NN_CHECK(context.InputScalar<float>(kCellClip) >= 0 &&
               context.InputScalar<float>(kProjectionClip) >= 0,
           ANEURALNETWORKS_OP_FAILED)
      << context.name() << " clipping thresholds must be >= 0";
  return ANEURALNETWORKS_NO_ERROR;
}

int Prepare(OperationContext& context) {
  Setup setup;
  NN_RETURN_IF_ERROR(Check(context, &setup));
  const lstm::CellShape& s = setup.shape;
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, {s.batch, s.n_output}));
  NN_RETURN_IF_ERROR(context.SetOutputShape(1, {s.batch, s.n_cell}));
  return context.SetOutputShape(2, {s.batch, s.n_output});
}

int32_t Saturate(int64_t value, int64_t low, int64_t high) {
  return static_cast<int32_t>(std::min(std::max(value, low), high));
}
int32_t Saturate16(double value) { return recurrent::RoundSaturated(value, -32768, 32767); }
// A real value in [-1, 1] in steps of 2^-15.
int32_t ToQ15(double value) { return Saturate16(value * 32768.0); }

int Execute(OperationContext& context) {
  Setup setup;
  NN_RETURN_IF_ERROR(Check(context, &setup));
  const lstm::CellShape& s = setup.shape;
  const lstm::CellInputs in = Inputs();
  const size_t batch = s.batch, n_input = s.n_input, n_cell = s.n_cell, n_output = s.n_output;
  const OperandInfo& input = context.Input(kInput);
  const OperandInfo& previous = context.Input(kPrevOutput);
  const int16_t* cell_in = context.Input(kPrevCell).Data<int16_t>();
  const double cell_scale = std::ldexp(1.0, setup.cell_shift);

  // Each gate's sigmoid/tanh input, in steps of 2^-12.
  std::vector<int32_t> gate_q12[4];
  std::vector<int32_t> cell(batch * n_cell);
  auto gate_sum = [&](uint32_t g, const int16_t* peephole_state) {
    const double intermediate = context.InputScalar<float>(kIntermediateFirst + g);
    const OperandInfo& wx = context.Input(in.input_weights[g]);
    const OperandInfo& wh = context.Input(in.recurrent_weights[g]);
    const double x_scale = input.scale * static_cast<double>(wx.scale) / intermediate;
    const double h_scale = previous.scale * static_cast<double>(wh.scale) / intermediate;
    std::vector<int32_t> sum(batch * n_cell);
    for (size_t b = 0; b < batch; ++b) {
      for (size_t c = 0; c < n_cell; ++c) {
        int64_t ax = 0, ah = 0;
        for (size_t d = 0; d < n_input; ++d) {
          ax += (int64_t{input.Data<int8_t>()[b * n_input + d]} - input.zero_point) *
                wx.Data<int8_t>()[c * n_input + d];
        }
        for (size_t d = 0; d < n_output; ++d) {
          ah += (int64_t{previous.Data<int8_t>()[b * n_output + d]} - previous.zero_point) *
                wh.Data<int8_t>()[c * n_output + d];
        }
        int64_t total = Saturate16(static_cast<double>(ax) * x_scale);
        total = Saturate(total + Saturate16(static_cast<double>(ah) * h_scale), -32768, 32767);
        if (peephole_state != nullptr) {
          const OperandInfo& w = context.Input(in.peephole[g == 0 ? 0 : g == 1 ? 1 : 2]);
          const double p_scale = cell_scale * w.scale / intermediate;
          const double term =
              static_cast<double>(peephole_state[b * n_cell + c]) * w.Data<int16_t>()[c];
          total = Saturate(total + Saturate16(term * p_scale), -32768, 32767);
        }
        sum[b * n_cell + c] = static_cast<int32_t>(total);
      }
    }
    if (!s.layer_norm) return sum;
    const OperandInfo& weights = context.Input(in.layer_norm[g]);
    const int32_t* bias = context.Input(in.bias[g]).Data<int32_t>();
    for (size_t b = 0; b < batch; ++b) {
      int32_t* row = sum.data() + b * n_cell;
      double mean = 0, squares = 0;
      for (size_t c = 0; c < n_cell; ++c) {
        mean += row[c];
        squares += static_cast<double>(row[c]) * row[c];
      }
      mean /= static_cast<double>(n_cell);
      double variance = squares / static_cast<double>(n_cell) - mean * mean;
      if (variance <= 0) variance = 1e-8;
      const double inverse = 1.0 / std::sqrt(variance);
      for (size_t c = 0; c < n_cell; ++c) {
        const double normalized = (row[c] - mean) * inverse;
        const double value = normalized * weights.Data<int16_t>()[c] + bias[c] / 1024.0;
        row[c] = Saturate16(value * weights.scale * 4096.0);
      }
    }
    return sum;
  };
  auto sigmoid_q15 = [](int32_t q12) { return ToQ15(1.0 / (1.0 + std::exp(-q12 / 4096.0))); };

  gate_q12[1] = gate_sum(1, s.peephole ? cell_in : nullptr);
  gate_q12[2] = gate_sum(2, nullptr);
  if (!s.cifg) gate_q12[0] = gate_sum(0, s.peephole ? cell_in : nullptr);
  const float clip = context.InputScalar<float>(kCellClip);
  const int32_t cell_clip =
      clip > 0 ? static_cast<int32_t>(std::min(clip / cell_scale, 32767.0)) : 0;
  const double ig_divisor = std::ldexp(1.0, 30 + setup.cell_shift);
  for (size_t k = 0; k < batch * n_cell; ++k) {
    const int32_t f = sigmoid_q15(gate_q12[1][k]);
    const int32_t i = s.cifg ? 32767 - f : sigmoid_q15(gate_q12[0][k]);
    const int32_t g = ToQ15(std::tanh(gate_q12[2][k] / 4096.0));
    const double kept = std::round(static_cast<double>(f) * cell_in[k] / 32768.0);
    const double added = std::round(static_cast<double>(i) * g / ig_divisor);
    int32_t c = Saturate(static_cast<int64_t>(kept + added), -32768, 32767);
    if (cell_clip > 0) c = std::min(std::max(c, -cell_clip), cell_clip);
    cell[k] = c;
  }
  std::vector<int16_t> cell16(cell.begin(), cell.end());
  gate_q12[3] = gate_sum(3, s.peephole ? cell16.data() : nullptr);

  const double hidden_scale = context.InputScalar<float>(kHiddenScale);
  const int32_t hidden_zero = context.InputScalar<int32_t>(kHiddenZeroPoint);
  std::vector<int32_t> hidden(batch * n_cell);
  for (size_t k = 0; k < batch * n_cell; ++k) {
    const int32_t o = sigmoid_q15(gate_q12[3][k]);
    const int32_t t = ToQ15(std::tanh(cell[k] * cell_scale));
    const double real = static_cast<double>(o) * t / (32768.0 * 32768.0);
    hidden[k] = recurrent::RoundSaturated(std::round(real / hidden_scale) + hidden_zero, -128, 127);
  }

  const OperandInfo& out = context.Output(0);
  std::vector<int8_t> result(batch * n_output);
  if (s.projection) {
    const OperandInfo& w = context.Input(kProjection);
    const int32_t* bias =
        s.projection_bias ? context.Input(kProjectionBias).Data<int32_t>() : nullptr;
    const double scale = hidden_scale * w.scale / out.scale;
    const float clip_value = context.InputScalar<float>(kProjectionClip);
    const int32_t proj_clip =
        clip_value > 0 ? static_cast<int32_t>(std::min(clip_value / out.scale, 127.f)) : 0;
    for (size_t b = 0; b < batch; ++b) {
      for (size_t j = 0; j < n_output; ++j) {
        int64_t acc = bias != nullptr ? bias[j] : 0;
        for (size_t c = 0; c < n_cell; ++c) {
          acc += int64_t{hidden[b * n_cell + c] - hidden_zero} * w.Data<int8_t>()[j * n_cell + c];
        }
        int32_t q = recurrent::RoundSaturated(
            std::round(static_cast<double>(acc) * scale) + out.zero_point, -128, 127);
        if (proj_clip > 0) q = std::min(std::max(q, -proj_clip), proj_clip);
        result[b * n_output + j] = static_cast<int8_t>(q);
      }
    }
  } else {
    for (size_t k = 0; k < result.size(); ++k) result[k] = static_cast<int8_t>(hidden[k]);
  }
  std::copy(result.begin(), result.end(), context.Output(0).MutableData<int8_t>());
  std::copy(result.begin(), result.end(), context.Output(2).MutableData<int8_t>());
  std::copy(cell16.begin(), cell16.end(), context.Output(1).MutableData<int16_t>());
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(QUANTIZED_LSTM, Validate, Prepare, Execute);

}  // namespace mock_nnapi
