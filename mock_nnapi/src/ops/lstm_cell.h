// SPDX-License-Identifier: Apache-2.0
// The float LSTM cell shared by LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and
// BIDIRECTIONAL_SEQUENCE_LSTM: its operands (at operation-specific input indices), Android's
// prepare-time checks of their shapes and of the optional-input combinations, and one time step
// of the NDK's equations:
//
//   i_t = sigmoid(W_xi x_t + W_hi h_{t-1} + W_ci C_{t-1} + b_i)    (1 - f_t with CIFG)
//   f_t = sigmoid(W_xf x_t + W_hf h_{t-1} + W_cf C_{t-1} + b_f)
//   C_t = clip(f_t . C_{t-1} + i_t . g(W_xc x_t + W_hc h_{t-1} + b_c), t_cell)
//   o_t = sigmoid(W_xo x_t + W_ho h_{t-1} + W_co C_t + b_o)
//   h_t = clip(W_proj (o_t . g(C_t)) + b_proj, t_proj) with a projection, o_t . g(C_t) without
//
// Optional inputs (omitted operands): CIFG when the input-to-input weights are omitted (then
// the recurrent-to-input weights and the input gate bias must be omitted too); peephole when the
// cell-to-forget and cell-to-output weights are present (and cell-to-input unless CIFG; all
// three or none); projection when the projection weights are present (its bias is optional and
// needs the weights); layer normalisation when the layer-norm weights are present (the
// forget/cell/output ones all or none, the input one exactly when not CIFG). With layer
// normalisation each gate's pre-activation without its bias (matrix products plus peephole) is
// normalised over the cell units of each batch entry, (a - mean) / sqrt(variance), then scaled
// by the gate's layer-norm weights and shifted by its bias (arXiv:1607.06450, section 3.1; a
// zero variance uses 1e-8 instead, as Android). A clipping threshold of 0 disables clipping;
// negative thresholds fail. g is one of recurrent_helpers.h's activations.
#ifndef MOCK_NNAPI_SRC_OPS_LSTM_CELL_H_
#define MOCK_NNAPI_SRC_OPS_LSTM_CELL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "recurrent_helpers.h"

namespace mock_nnapi {
namespace lstm {

constexpr uint32_t kNone = 0xFFFFFFFFu;

// Input indices of one cell's operands. Gates are ordered input, forget, cell, output.
struct CellInputs {
  uint32_t input_weights[4];      // [n_cell, n_input]; the input gate's is optional
  uint32_t recurrent_weights[4];  // [n_cell, n_output]; the input gate's is optional
  uint32_t peephole[3];           // [n_cell] for the input, forget and output gates
  uint32_t bias[4];               // [n_cell]; the input gate's is optional
  uint32_t projection;            // [n_output, n_cell], optional
  uint32_t projection_bias;       // [n_output], optional
  uint32_t output_state;          // [batch, n_output]
  uint32_t cell_state;            // [batch, n_cell]
  uint32_t layer_norm[4];         // [n_cell], optional; kNone when the operation has none
  uint32_t activation, cell_clip, projection_clip;
};

// The standard layout (LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM): `layer_norm_first` is the
// index of the first layer-norm input (kNone without).
inline CellInputs StandardInputs(uint32_t layer_norm_first) {
  CellInputs in{};
  for (uint32_t g = 0; g < 4; ++g) {
    in.input_weights[g] = 1 + g;
    in.recurrent_weights[g] = 5 + g;
    in.bias[g] = 12 + g;
    in.layer_norm[g] = layer_norm_first == kNone ? kNone : layer_norm_first + g;
  }
  for (uint32_t g = 0; g < 3; ++g) in.peephole[g] = 9 + g;
  in.projection = 16;
  in.projection_bias = 17;
  in.output_state = 18;
  in.cell_state = 19;
  in.activation = 20;
  in.cell_clip = 21;
  in.projection_clip = 22;
  return in;
}

struct CellShape {
  uint32_t batch = 0, n_input = 0, n_cell = 0, n_output = 0;
  bool cifg = false, peephole = false, projection = false, projection_bias = false,
       layer_norm = false;
};

inline bool Has(const OperationContext& context, uint32_t i) {
  return i != kNone && !context.IsOmitted(i);
}

// Prepare: checks the cell's operands against an input of `batch` x `n_input` and fills *shape.
inline int CheckCell(const OperationContext& context, const CellInputs& in, uint32_t batch,
                     uint32_t n_input, CellShape* shape) {
  using recurrent::CheckPresent;
  using recurrent::CheckRank;
  using recurrent::CheckShape;
  for (uint32_t g = 1; g < 4; ++g) {
    NN_RETURN_IF_ERROR(CheckPresent(context, in.input_weights[g], "input-to-gate weights"));
    NN_RETURN_IF_ERROR(CheckPresent(context, in.recurrent_weights[g], "recurrent-to-gate weights"));
    NN_RETURN_IF_ERROR(CheckPresent(context, in.bias[g], "gate bias"));
  }
  NN_RETURN_IF_ERROR(CheckPresent(context, in.output_state, "output state"));
  NN_RETURN_IF_ERROR(CheckPresent(context, in.cell_state, "cell state"));
  if (in.activation != kNone) {  // QUANTIZED_LSTM has no activation and checks its own clips
    NN_RETURN_IF_ERROR(CheckPresent(context, in.activation, "activation"));
    NN_RETURN_IF_ERROR(CheckPresent(context, in.cell_clip, "cell clip"));
    NN_RETURN_IF_ERROR(CheckPresent(context, in.projection_clip, "projection clip"));
    NN_RETURN_IF_ERROR(recurrent::CheckActivation(context, in.activation));
    const float cell_clip = recurrent::FloatScalar(context, in.cell_clip);
    const float projection_clip = recurrent::FloatScalar(context, in.projection_clip);
    NN_CHECK(cell_clip >= 0 && projection_clip >= 0, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " clipping thresholds must be >= 0 (cell " << cell_clip
        << ", projection " << projection_clip << ")";
  }

  shape->batch = batch;
  shape->n_input = n_input;
  NN_RETURN_IF_ERROR(CheckRank(context, in.input_weights[3], 2, "input-to-output weights"));
  shape->n_cell = context.Input(in.input_weights[3]).dim(0);
  NN_RETURN_IF_ERROR(CheckRank(context, in.recurrent_weights[3], 2, "recurrent-to-output weights"));
  shape->n_output = context.Input(in.recurrent_weights[3]).dim(1);
  const uint32_t n_cell = shape->n_cell, n_output = shape->n_output;

  shape->cifg = !Has(context, in.input_weights[0]);
  NN_CHECK(shape->cifg == !Has(context, in.recurrent_weights[0]), ANEURALNETWORKS_OP_FAILED)
      << context.name()
      << " the input-to-input and recurrent-to-input weights must both be present or both "
         "omitted (CIFG)";
  NN_CHECK(shape->cifg == !Has(context, in.bias[0]), ANEURALNETWORKS_OP_FAILED)
      << context.name() << " the input gate bias must be "
      << (shape->cifg ? "omitted with CIFG (no input-to-input weights)" : "present without CIFG");
  for (uint32_t g = 0; g < 4; ++g) {
    if (!Has(context, in.input_weights[g])) continue;
    NN_RETURN_IF_ERROR(
        CheckShape(context, in.input_weights[g], {n_cell, n_input}, "input-to-gate weights"));
    NN_RETURN_IF_ERROR(CheckShape(context, in.recurrent_weights[g], {n_cell, n_output},
                                  "recurrent-to-gate weights"));
    NN_RETURN_IF_ERROR(CheckShape(context, in.bias[g], {n_cell}, "gate bias"));
  }

  const bool peephole_input = Has(context, in.peephole[0]);
  const bool peephole_forget = Has(context, in.peephole[1]);
  const bool peephole_output = Has(context, in.peephole[2]);
  const bool all = (peephole_input || shape->cifg) && peephole_forget && peephole_output;
  const bool none = !peephole_input && !peephole_forget && !peephole_output;
  NN_CHECK(all || none, ANEURALNETWORKS_OP_FAILED)
      << context.name()
      << " the cell-to-gate (peephole) weights must all be present (cell-to-input may be "
         "omitted with CIFG) or all omitted";
  shape->peephole = all && !none;
  for (uint32_t g = 0; g < 3; ++g) {
    if (Has(context, in.peephole[g])) {
      NN_RETURN_IF_ERROR(CheckShape(context, in.peephole[g], {n_cell}, "cell-to-gate weights"));
    }
  }

  shape->projection = Has(context, in.projection);
  shape->projection_bias = Has(context, in.projection_bias);
  NN_CHECK(shape->projection || !shape->projection_bias, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " a projection bias needs the projection weights";
  if (shape->projection) {
    NN_RETURN_IF_ERROR(
        CheckShape(context, in.projection, {n_output, n_cell}, "projection weights"));
  } else {
    // Without a projection h_t = o_t . g(C_t) has the cell's size.
    NN_CHECK_EQ(n_output, n_cell, ANEURALNETWORKS_OP_FAILED)
        << context.name() << " without projection weights the output size (" << n_output
        << ", the recurrent weights' second dimension) must equal the number of units (" << n_cell
        << ")";
  }
  if (shape->projection_bias) {
    NN_RETURN_IF_ERROR(CheckShape(context, in.projection_bias, {n_output}, "projection bias"));
  }

  const bool ln_forget = Has(context, in.layer_norm[1]);
  const bool ln_cell = Has(context, in.layer_norm[2]);
  const bool ln_output = Has(context, in.layer_norm[3]);
  const bool ln_input = Has(context, in.layer_norm[0]);
  shape->layer_norm = ln_output;
  NN_CHECK(ln_forget == ln_output && ln_cell == ln_output, ANEURALNETWORKS_OP_FAILED)
      << context.name()
      << " the forget, cell and output layer normalization weights must all be present or all "
         "omitted";
  NN_CHECK(ln_input == (shape->layer_norm && !shape->cifg), ANEURALNETWORKS_OP_FAILED)
      << context.name() << " the input layer normalization weights must be "
      << (shape->layer_norm && !shape->cifg ? "present with layer normalization without CIFG"
                                            : "omitted (CIFG or no layer normalization)");
  for (uint32_t g = 0; g < 4; ++g) {
    if (Has(context, in.layer_norm[g])) {
      NN_RETURN_IF_ERROR(
          CheckShape(context, in.layer_norm[g], {n_cell}, "layer normalization weights"));
    }
  }
  NN_RETURN_IF_ERROR(CheckShape(context, in.output_state, {batch, n_output}, "output state"));
  return CheckShape(context, in.cell_state, {batch, n_cell}, "cell state");
}

// The cell's parameters as float32, read once per execution.
struct Cell {
  CellShape shape;
  std::vector<float> input_weights[4], recurrent_weights[4], peephole[3], bias[4], projection,
      projection_bias, layer_norm[4];
  int32_t activation = 0;
  float cell_clip = 0, projection_clip = 0;
};

inline Cell LoadCell(const OperationContext& context, const CellInputs& in,
                     const CellShape& shape) {
  Cell cell;
  cell.shape = shape;
  auto load = [&](uint32_t i) {
    return i == kNone ? std::vector<float>{} : recurrent::FloatValues(context.Input(i));
  };
  for (uint32_t g = 0; g < 4; ++g) {
    cell.input_weights[g] = load(in.input_weights[g]);
    cell.recurrent_weights[g] = load(in.recurrent_weights[g]);
    cell.bias[g] = load(in.bias[g]);
    cell.layer_norm[g] = load(in.layer_norm[g]);
  }
  for (uint32_t g = 0; g < 3; ++g) cell.peephole[g] = load(in.peephole[g]);
  cell.projection = load(in.projection);
  cell.projection_bias = load(in.projection_bias);
  cell.activation = context.InputScalar<int32_t>(in.activation);
  cell.cell_clip = recurrent::FloatScalar(context, in.cell_clip);
  cell.projection_clip = recurrent::FloatScalar(context, in.projection_clip);
  return cell;
}

// Normalises each row of `values` [rows, n] to zero mean and unit variance, then scales by
// `weights` and adds `bias` (both [n]).
inline void LayerNormalize(float* values, size_t rows, size_t n, const std::vector<float>& weights,
                           const std::vector<float>& bias) {
  for (size_t r = 0; r < rows; ++r) {
    float* row = values + r * n;
    double sum = 0, sum_squares = 0;
    for (size_t j = 0; j < n; ++j) {
      sum += row[j];
      sum_squares += static_cast<double>(row[j]) * row[j];
    }
    const double mean = sum / static_cast<double>(n);
    double variance = sum_squares / static_cast<double>(n) - mean * mean;
    if (variance <= 0) variance = 1e-8;
    const double inverse = 1.0 / std::sqrt(variance);
    for (size_t j = 0; j < n; ++j) {
      row[j] = static_cast<float>((row[j] - mean) * inverse) * weights[j] + bias[j];
    }
  }
}

// One time step. `x` is [batch, n_input]; `output_state`
// [batch, n_output] and `cell_state` [batch, n_cell] hold h_{t-1}, C_{t-1} and receive h_t, C_t.
// `aux_x` / `aux_weights` (optional, BIDIRECTIONAL_SEQUENCE_LSTM's auxiliary input
// [batch, n_aux] and its four input-to-gate weights [n_cell, n_aux]) add to the gates.
// `gates` (optional) receives the gate activations, gate-major [gate][batch][n_cell]: input
// (not with CIFG), cell input g(.), forget, output.
inline void Step(const Cell& cell, const float* x, float* output_state, float* cell_state,
                 float* gates = nullptr, const float* aux_x = nullptr, size_t n_aux = 0,
                 const std::vector<float>* aux_weights = nullptr) {
  const CellShape& s = cell.shape;
  const size_t batch = s.batch, n_cell = s.n_cell, n_output = s.n_output;
  const size_t size = batch * n_cell;
  std::vector<float> pre[4];
  for (uint32_t g = 0; g < 4; ++g) {
    if (g == 0 && s.cifg) continue;
    pre[g].assign(size, 0.f);
    if (!s.layer_norm) {
      for (size_t b = 0; b < batch; ++b) {
        std::copy(cell.bias[g].begin(), cell.bias[g].end(), pre[g].begin() + b * n_cell);
      }
    }
    recurrent::AccumulateProduct(x, batch, s.n_input, cell.input_weights[g].data(), n_cell,
                                 pre[g].data());
    if (aux_x != nullptr && !aux_weights[g].empty()) {
      recurrent::AccumulateProduct(aux_x, batch, n_aux, aux_weights[g].data(), n_cell,
                                   pre[g].data());
    }
    recurrent::AccumulateProduct(output_state, batch, n_output, cell.recurrent_weights[g].data(),
                                 n_cell, pre[g].data());
  }
  if (s.peephole) {
    for (size_t k = 0; k < size; ++k) {
      const size_t j = k % n_cell;
      if (!s.cifg) pre[0][k] += cell.peephole[0][j] * cell_state[k];
      pre[1][k] += cell.peephole[1][j] * cell_state[k];
    }
  }
  for (uint32_t g = 0; g < 3; ++g) {
    if (s.layer_norm && !pre[g].empty()) {
      LayerNormalize(pre[g].data(), batch, n_cell, cell.layer_norm[g], cell.bias[g]);
    }
  }
  std::vector<float> cell_input(size);
  for (size_t k = 0; k < size; ++k) {
    const float forget = recurrent::Sigmoid(pre[1][k]);
    const float input = s.cifg ? 1.f - forget : recurrent::Sigmoid(pre[0][k]);
    cell_input[k] = recurrent::Activate(cell.activation, pre[2][k]);
    float c = forget * cell_state[k] + input * cell_input[k];
    if (cell.cell_clip > 0) c = std::min(std::max(c, -cell.cell_clip), cell.cell_clip);
    cell_state[k] = c;
    pre[1][k] = forget;
    if (!s.cifg) pre[0][k] = input;
  }
  if (s.peephole) {
    for (size_t k = 0; k < size; ++k) pre[3][k] += cell.peephole[2][k % n_cell] * cell_state[k];
  }
  if (s.layer_norm) LayerNormalize(pre[3].data(), batch, n_cell, cell.layer_norm[3], cell.bias[3]);
  std::vector<float> hidden(size);
  for (size_t k = 0; k < size; ++k) {
    pre[3][k] = recurrent::Sigmoid(pre[3][k]);
    hidden[k] = pre[3][k] * recurrent::Activate(cell.activation, cell_state[k]);
  }
  if (gates != nullptr) {
    float* out = gates;
    for (const std::vector<float>* gate : {&pre[0], &cell_input, &pre[1], &pre[3]}) {
      if (gate->empty()) continue;
      std::copy(gate->begin(), gate->end(), out);
      out += size;
    }
  }
  if (!s.projection) {
    std::copy(hidden.begin(), hidden.end(), output_state);
    return;
  }
  for (size_t b = 0; b < batch; ++b) {
    for (size_t j = 0; j < n_output; ++j) {
      output_state[b * n_output + j] = s.projection_bias ? cell.projection_bias[j] : 0.f;
    }
  }
  recurrent::AccumulateProduct(hidden.data(), batch, n_cell, cell.projection.data(), n_output,
                               output_state);
  if (cell.projection_clip > 0) {
    for (size_t k = 0; k < batch * n_output; ++k) {
      output_state[k] =
          std::min(std::max(output_state[k], -cell.projection_clip), cell.projection_clip);
    }
  }
}

}  // namespace lstm
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_LSTM_CELL_H_
