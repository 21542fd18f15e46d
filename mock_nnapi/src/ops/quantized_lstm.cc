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
//   a power of two 2^k, k <= -9 (to within 1e-3 in log2, like Android's CheckedLog2; the
//   arithmetic uses exactly 2^k); 20-23 layer-norm weights [num_units], TENSOR_QUANT16_SYMM,
//   optional; 24 cell clip and 25 projection clip (FLOAT32, 0 disables); 26-29 the scales of the
//   gates' matrix-product results; 30 INT32 zero point and 31 FLOAT32 scale of the hidden state.
//   An optional input is absent when omitted, whether a constant or a model input given no
//   value at execution (its declared dimensions do not matter then).
// Outputs: 0 output state, 2 output ([batch, output_size], TENSOR_QUANT8_ASYMM_SIGNED, equal),
//   1 cell state [batch, num_units] (TENSOR_QUANT16_SYMM, the previous cell state's scale).
// Gate order input, forget, cell, output.
//
// Arithmetic: Android's implementation (TensorFlow Lite's integer LSTM), in integers with the
// rounding of fixed_point.h, so that results equal the reference implementation's:
//   * a gate's input and recurrent products are each rescaled (MultiplyByQuantizedMultiplier,
//     scales computed in float) to the gate's intermediate scale (inputs 26-29) and saturated
//     to 16 bits, peephole terms likewise, all summed with saturation;
//   * with layer normalisation that sum is normalised over the units in integers (mean in steps
//     of 2^-10, variance truncated to an integer, exact for power-of-two unit counts,
//     1/stddev by Newton-Raphson), the normalised value rounded to steps of 2^-10, then scaled by
//     the layer-norm weights and shifted by the gate bias, whose scale is the layer-norm
//     weights' scale / 1024, giving the sigmoid/tanh input in Q3.12; without layer
//     normalisation the sum itself is read as Q3.12 (so the intermediate scale should be 2^-12)
//     and the gate biases are not used (Android's implementation uses the biases only in the
//     layer normalisation);
//   * sigmoid and tanh are gemmlowp's fixed-point functions from Q3.12 to Q0.15; with CIFG
//     i = 1 - f (32767 - f);
//   * C_t = f C_{t-1} + i g in steps of 2^k, each product rounded half away from zero,
//     saturated to 16 bits and clipped to the cell clip (the clip / the cell state's scale,
//     truncated);
//   * the hidden state o tanh(C_t) (tanh reading C_t with 15 + k integer bits) is quantised with
//     inputs 30 and 31;
//   * with projection the output is (hidden - zero point) . W_proj + bias rescaled to the
//     output's scale and zero point, clipped to the projection clip (in the output's scale);
//     without projection the hidden state's 8-bit values are the output's (the hidden state's
//     quantisation should then be the output's).
// Where Android's implementation departs from the documented equations the mock keeps to the
// equations: the peephole terms read C_{t-1} for the input and forget gates (Android reads its
// cell-state output buffer before writing it) and C_t for the output gate; the hidden state adds
// its zero point (Android subtracts it) and the projection subtracts it (Android adds it, and
// only with a projection bias); the projection clips in the output's scale (Android quantises
// the clip with the projection weights' scale); i g saturates where Android's 16-bit result
// wraps around. With a zero hidden zero point and no projection clip the two agree. Shapes,
// optional-input combinations and the scales are checked at prepare (OP_FAILED).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "fixed_point.h"
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
  // The cell state's scale counts as 2^k when log2(scale) is within 1e-3 of the integer k (so a
  // scale written with a few digits, such as 3.05176e-05 for 2^-15, is accepted); the
  // arithmetic then uses exactly 2^k.
  const float cell_scale = context.Input(kPrevCell).scale;
  const double exponent = cell_scale > 0 ? std::log2(static_cast<double>(cell_scale)) : 0.0;
  setup->cell_shift = static_cast<int>(std::lround(exponent));
  NN_CHECK(
      cell_scale > 0 && std::fabs(exponent - setup->cell_shift) < 1e-3 && setup->cell_shift <= -9,
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

int16_t Saturate16(int64_t value) {
  return static_cast<int16_t>(std::min<int64_t>(std::max<int64_t>(value, -32768), 32767));
}
int8_t Saturate8(int64_t value) {
  return static_cast<int8_t>(std::min<int64_t>(std::max<int64_t>(value, -128), 127));
}

// A real multiplier as MultiplyByQuantizedMultiplier's (multiplier, shift).
struct Multiplier {
  int32_t value = 0;
  int shift = 0;
  int32_t Apply(int32_t x) const {
    return fixed_point::MultiplyByQuantizedMultiplier(x, value, shift);
  }
};

int ToMultiplier(const OperationContext& context, double real, const char* what, Multiplier* out) {
  NN_CHECK(fixed_point::QuantizeMultiplier(real, &out->value, &out->shift),
           ANEURALNETWORKS_OP_FAILED)
      << context.name() << " the " << what << " scale " << real << " is not finite";
  return ANEURALNETWORKS_NO_ERROR;
}

// out[b, u] = saturate16(out[b, u] + rescale(sum_k (x[b, k] - x_zero) * w[u, k])): a product
// of 8-bit operands rescaled to 16 bits and added with saturation.
void AccumulateProduct(const int8_t* x, int32_t x_zero, const int8_t* w, const Multiplier& scale,
                       size_t batch, size_t inner, size_t units, int16_t* out) {
  for (size_t b = 0; b < batch; ++b) {
    for (size_t u = 0; u < units; ++u) {
      int32_t acc = 0;
      for (size_t k = 0; k < inner; ++k) {
        acc += (int32_t{x[b * inner + k]} - x_zero) * w[u * inner + k];
      }
      out[b * units + u] = Saturate16(int64_t{scale.Apply(acc)} + out[b * units + u]);
    }
  }
}

// Normalises each row of `values` ([batch, n], Q-format of the gate's intermediate scale) to
// zero mean and unit variance in integers, scales it by the layer-norm weights and adds the bias
// (in units of the weights' scale / 1024), giving the gate's activation input in Q3.12.
void LayerNormalize(int16_t* values, size_t batch, size_t n, const int16_t* weights,
                    const int32_t* bias, const Multiplier& weight_scale, int32_t variance_floor) {
  constexpr int64_t kTwoPow20 = int64_t{1} << 20;
  const Multiplier to_q12{weight_scale.value, weight_scale.shift + 12};
  for (size_t b = 0; b < batch; ++b) {
    int16_t* row = values + b * n;
    int64_t sum = 0, squares = 0;
    for (size_t c = 0; c < n; ++c) {
      sum += row[c];
      squares += int64_t{row[c]} * row[c];
    }
    // The mean in units of 2^-10; the variance in integer units (exact for power-of-two n).
    const int32_t mean = static_cast<int32_t>(sum * 1024 / static_cast<int64_t>(n));
    const int64_t variance =
        squares * (kTwoPow20 / static_cast<int64_t>(n)) - int64_t{mean} * int64_t{mean};
    int32_t variance_units = static_cast<int32_t>(variance / kTwoPow20);
    if (variance_units < 1) variance_units = variance_floor;
    Multiplier inverse_stddev;
    fixed_point::InverseSqrtMultiplier(variance_units, &inverse_stddev.value,
                                       &inverse_stddev.shift);
    for (size_t c = 0; c < n; ++c) {
      const int32_t normalized = inverse_stddev.Apply(1024 * int32_t{row[c]} - mean);  // 2^-10
      const int64_t weighted = int64_t{normalized} * weights[c] + bias[c];
      const int32_t rounded = static_cast<int32_t>((weighted + (weighted > 0 ? 512 : -512)) / 1024);
      row[c] = Saturate16(to_q12.Apply(rounded));
    }
  }
}

int Execute(OperationContext& context) {
  Setup setup;
  NN_RETURN_IF_ERROR(Check(context, &setup));
  const lstm::CellShape& s = setup.shape;
  const lstm::CellInputs in = Inputs();
  const size_t batch = s.batch, n_input = s.n_input, n_cell = s.n_cell, n_output = s.n_output;
  const size_t cells = batch * n_cell;
  const OperandInfo& input = context.Input(kInput);
  const OperandInfo& previous = context.Input(kPrevOutput);
  const OperandInfo& cell_state = context.Input(kPrevCell);
  const int16_t* cell_in = cell_state.Data<int16_t>();
  const double cell_scale = std::ldexp(1.0, setup.cell_shift);

  // Each gate's activation input in Q3.12 (scales computed in float, like Android's).
  auto gate_input = [&](uint32_t g, const int16_t* peephole_state,
                        std::vector<int16_t>* sum) -> int {
    const float intermediate = context.InputScalar<float>(kIntermediateFirst + g);
    const OperandInfo& wx = context.Input(in.input_weights[g]);
    const OperandInfo& wh = context.Input(in.recurrent_weights[g]);
    Multiplier x_scale, h_scale;
    NN_RETURN_IF_ERROR(ToMultiplier(context, wx.scale * input.scale / intermediate,
                                    "input-to-gate product", &x_scale));
    NN_RETURN_IF_ERROR(ToMultiplier(context, wh.scale * previous.scale / intermediate,
                                    "recurrent-to-gate product", &h_scale));
    sum->assign(cells, 0);
    AccumulateProduct(input.Data<int8_t>(), input.zero_point, wx.Data<int8_t>(), x_scale, batch,
                      n_input, n_cell, sum->data());
    AccumulateProduct(previous.Data<int8_t>(), previous.zero_point, wh.Data<int8_t>(), h_scale,
                      batch, n_output, n_cell, sum->data());
    if (peephole_state != nullptr) {
      const OperandInfo& w = context.Input(in.peephole[g == 0 ? 0 : g == 1 ? 1 : 2]);
      Multiplier p_scale;
      NN_RETURN_IF_ERROR(ToMultiplier(
          context, static_cast<float>(cell_scale * w.scale / intermediate), "peephole", &p_scale));
      for (size_t k = 0; k < cells; ++k) {
        const int32_t product = int32_t{w.Data<int16_t>()[k % n_cell]} * peephole_state[k];
        (*sum)[k] = Saturate16(int64_t{p_scale.Apply(product)} + (*sum)[k]);
      }
    }
    if (!s.layer_norm) return ANEURALNETWORKS_NO_ERROR;
    const OperandInfo& weights = context.Input(in.layer_norm[g]);
    Multiplier weight_scale;
    NN_RETURN_IF_ERROR(
        ToMultiplier(context, weights.scale, "layer normalization weights", &weight_scale));
    const int32_t variance_floor = std::min(1, static_cast<int32_t>(10000 * weights.scale));
    LayerNormalize(sum->data(), batch, n_cell, weights.Data<int16_t>(),
                   context.Input(in.bias[g]).Data<int32_t>(), weight_scale, variance_floor);
    return ANEURALNETWORKS_NO_ERROR;
  };
  using fixed_point::Logistic16;
  using fixed_point::Tanh16;

  std::vector<int16_t> forget, modulation, input_gate, output_gate;
  NN_RETURN_IF_ERROR(gate_input(1, s.peephole ? cell_in : nullptr, &forget));
  for (int16_t& v : forget) v = Logistic16(v, 3);
  NN_RETURN_IF_ERROR(gate_input(2, nullptr, &modulation));
  for (int16_t& v : modulation) v = Tanh16(v, 3);
  if (s.cifg) {
    input_gate.resize(cells);
    for (size_t k = 0; k < cells; ++k) input_gate[k] = static_cast<int16_t>(32767 - forget[k]);
  } else {
    NN_RETURN_IF_ERROR(gate_input(0, s.peephole ? cell_in : nullptr, &input_gate));
    for (int16_t& v : input_gate) v = Logistic16(v, 3);
  }

  // C_t = f C_{t-1} + i g: Q0.15 gates, the cell state in steps of 2^cell_shift.
  const float clip = context.InputScalar<float>(kCellClip);
  const int32_t cell_clip =
      clip > 0 ? static_cast<int32_t>(std::min(clip / cell_state.scale, 32767.0f)) : 0;
  std::vector<int16_t> cell(cells);
  for (size_t k = 0; k < cells; ++k) {
    const int32_t kept = fixed_point::RoundingDivideByPot(int32_t{forget[k]} * cell_in[k], 15);
    const int32_t added = fixed_point::RoundingDivideByPot(int32_t{input_gate[k]} * modulation[k],
                                                           30 + setup.cell_shift);
    int32_t c = Saturate16(int64_t{Saturate16(kept)} + Saturate16(added));
    if (cell_clip > 0) c = std::min(std::max(c, -cell_clip), cell_clip);
    cell[k] = static_cast<int16_t>(c);
  }
  NN_RETURN_IF_ERROR(gate_input(3, s.peephole ? cell.data() : nullptr, &output_gate));
  for (int16_t& v : output_gate) v = Logistic16(v, 3);

  // h_t = o tanh(C_t), quantised with inputs 30 and 31. tanh reads C_t with the integer bits of
  // its scale 2^cell_shift (a value with fewer than 0 integer bits is rounded to Q0.15 first).
  const float hidden_scale = context.InputScalar<float>(kHiddenScale);
  const int32_t hidden_zero = context.InputScalar<int32_t>(kHiddenZeroPoint);
  Multiplier to_hidden;
  NN_RETURN_IF_ERROR(ToMultiplier(
      context, static_cast<float>(std::ldexp(1.0, -15) / hidden_scale * std::ldexp(1.0, -15)),
      "hidden state", &to_hidden));
  const int tanh_integer_bits = setup.cell_shift + 15;
  std::vector<int8_t> hidden(cells);
  for (size_t k = 0; k < cells; ++k) {
    const int16_t t = tanh_integer_bits >= 0
                          ? Tanh16(cell[k], tanh_integer_bits)
                          : Tanh16(static_cast<int16_t>(fixed_point::RoundingDivideByPot(
                                       cell[k], -tanh_integer_bits)),
                                   0);
    hidden[k] = Saturate8(int64_t{to_hidden.Apply(int32_t{output_gate[k]} * t)} + hidden_zero);
  }

  const OperandInfo& out = context.Output(0);
  std::vector<int8_t> result(batch * n_output);
  if (s.projection) {
    const OperandInfo& w = context.Input(kProjection);
    const int32_t* bias =
        s.projection_bias ? context.Input(kProjectionBias).Data<int32_t>() : nullptr;
    Multiplier to_output;
    NN_RETURN_IF_ERROR(
        ToMultiplier(context, w.scale * hidden_scale / out.scale, "projection", &to_output));
    const float clip_value = context.InputScalar<float>(kProjectionClip);
    const int32_t proj_clip =
        clip_value > 0 ? static_cast<int32_t>(std::min(clip_value / out.scale, 127.f)) : 0;
    for (size_t b = 0; b < batch; ++b) {
      for (size_t j = 0; j < n_output; ++j) {
        int32_t acc = bias != nullptr ? bias[j] : 0;
        for (size_t c = 0; c < n_cell; ++c) {
          acc += (int32_t{hidden[b * n_cell + c]} - hidden_zero) * w.Data<int8_t>()[j * n_cell + c];
        }
        int32_t q = Saturate8(int64_t{to_output.Apply(acc)} + out.zero_point);
        if (proj_clip > 0) q = std::min(std::max(q, -proj_clip), proj_clip);
        result[b * n_output + j] = static_cast<int8_t>(q);
      }
    }
  } else {
    result = hidden;
  }
  std::copy(result.begin(), result.end(), context.Output(0).MutableData<int8_t>());
  std::copy(result.begin(), result.end(), context.Output(2).MutableData<int8_t>());
  std::copy(cell.begin(), cell.end(), context.Output(1).MutableData<int16_t>());
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(QUANTIZED_LSTM, Validate, Prepare, Execute);

}  // namespace mock_nnapi
