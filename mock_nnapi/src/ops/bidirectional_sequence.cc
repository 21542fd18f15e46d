// SPDX-License-Identifier: Apache-2.0
// BIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_LSTM: a forward
// cell runs over the sequence t = 0 .. max_time - 1 and a backward cell, with its own weights
// and initial state, over t = max_time - 1 .. 0; each step's state is that direction's output
// at t. The cells are rnn.cc's (h_t = activation(x W^T + h R^T + b)) and lstm_cell.h's.
//
// Linking modes (the auxiliary input, optional):
//   * none: both cells read the input;
//   * cross-linking (aux input and aux weights present): each cell also adds
//     aux_input * its aux weights^T to its input terms (LSTM: the forget, cell and output gates'
//     aux weights all or none; the input gate's present unless that cell uses CIFG);
//   * parallel linking (FL4; aux input present, aux weights omitted): the backward cell reads
//     the aux input instead of the input.
// The aux input has the input's layout (time- or batch-major) and sequence length.
//
// BIDIRECTIONAL_SEQUENCE_RNN inputs: 0 input; 1-4 forward weights [fw_units, input_size],
//   recurrent weights [fw_units, fw_units], bias [fw_units], hidden state [batch, fw_units];
//   5-8 the backward ones; 9 aux input; 10, 11 forward and backward aux weights
//   [units, aux_size]; 12 INT32 activation; 13 BOOL time_major; 14 BOOL merge_outputs.
// BIDIRECTIONAL_SEQUENCE_LSTM inputs: 0 input; 1-17 the forward cell's tensors and 18-34 the
//   backward cell's (lstm_cell.h's order); 35, 36 forward output and cell state; 37, 38 the
//   backward ones; 39 aux input; 40-43 forward and 44-47 backward aux input-to-gate weights;
//   48 INT32 activation; 49, 50 cell and projection clip (FLOAT32, FLOAT16 for fp16 tensors);
//   51 BOOL merge_outputs; 52 BOOL time_major; 53-56 forward and 57-60 backward layer-norm
//   weights.
// Outputs: 0 the forward outputs [max_time, batch, fw_size] (batch-major: [batch, max_time, ..])
//   or, with merge_outputs, both directions concatenated on the last dimension; 1 the backward
//   outputs (not with merge_outputs); then optionally (FL4) the last states: RNN the forward and
//   backward hidden states, LSTM the forward output and cell states and the backward ones.
//   Output counts: RNN 2 or 4 (1 or 3 merged), LSTM 2 or 6 (1 or 5 merged); a count that does
//   not match merge_outputs fails at prepare.
// Types: TENSOR_FLOAT32 and TENSOR_FLOAT16, every tensor the same type. A zero-sized input
// fails at prepare.
#include <cstring>

#include "lstm_cell.h"

namespace mock_nnapi {
namespace {

struct Layout {
  bool time_major = true, merge = false;
  uint32_t max_time = 0, batch = 0, input_size = 0, aux_size = 0;
  bool has_aux_input = false, has_aux_weights = false;
};

// Copies row (t, b) of every batch entry of a [max_time, batch, n] or [batch, max_time, n]
// sequence into `out` [batch, n].
void GatherStep(const std::vector<float>& sequence, const Layout& layout, size_t t, size_t n,
                float* out) {
  for (size_t b = 0; b < layout.batch; ++b) {
    const size_t row = layout.time_major ? t * layout.batch + b : b * layout.max_time + t;
    std::memcpy(out + b * n, sequence.data() + row * n, n * sizeof(float));
  }
}

// Writes `values` [batch, n] into columns [offset, offset + n) of step t of an output sequence
// whose rows have `width` elements.
void ScatterStep(const float* values, const Layout& layout, size_t t, size_t n, size_t offset,
                 size_t width, std::vector<float>* sequence) {
  for (size_t b = 0; b < layout.batch; ++b) {
    const size_t row = layout.time_major ? t * layout.batch + b : b * layout.max_time + t;
    std::memcpy(sequence->data() + row * width + offset, values + b * n, n * sizeof(float));
  }
}

Dimensions SequenceDims(const Layout& layout, uint32_t width) {
  return layout.time_major ? Dimensions{layout.max_time, layout.batch, width}
                           : Dimensions{layout.batch, layout.max_time, width};
}

// Prepare (both operations): the input, the aux input and the output count.
int ReadLayout(const OperationContext& context, uint32_t time_major, uint32_t merge,
               uint32_t aux_input, std::initializer_list<uint32_t> aux_weights,
               uint32_t outputs_with_states, Layout* layout) {
  NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, 0, "input"));
  NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, time_major, "time_major"));
  NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, merge, "merge_outputs"));
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, 0, 3, "input"));
  layout->time_major = context.InputScalar<uint8_t>(time_major) != 0;
  layout->merge = context.InputScalar<uint8_t>(merge) != 0;
  const OperandInfo& input = context.Input(0);
  layout->max_time = input.dim(layout->time_major ? 0 : 1);
  layout->batch = input.dim(layout->time_major ? 1 : 0);
  layout->input_size = input.dim(2);
  const uint32_t count = context.OutputCount();
  const bool states = count == outputs_with_states || count == outputs_with_states - 1;
  const uint32_t expected = (layout->merge ? 1 : 2) + (states ? outputs_with_states - 2 : 0);
  NN_CHECK_EQ(count, expected, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " has " << count
      << " outputs, which does not match merge_outputs = " << layout->merge;
  layout->has_aux_input = !context.IsOmitted(aux_input);
  size_t present = 0;
  for (uint32_t i : aux_weights) present += context.IsOmitted(i) ? 0 : 1;
  NN_CHECK(present == 0 || present == aux_weights.size(), ANEURALNETWORKS_OP_FAILED)
      << context.name() << " the auxiliary weights must all be present or all omitted";
  layout->has_aux_weights = present != 0;
  NN_CHECK(layout->has_aux_input || !layout->has_aux_weights, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " auxiliary weights need the auxiliary input";
  if (layout->has_aux_input) {
    NN_RETURN_IF_ERROR(recurrent::CheckRank(context, aux_input, 3, "aux input"));
    const OperandInfo& aux = context.Input(aux_input);
    layout->aux_size = aux.dim(2);
    NN_RETURN_IF_ERROR(recurrent::CheckShape(context, aux_input,
                                             SequenceDims(*layout, layout->aux_size), "aux input"));
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateCounts(OperationContext& context, uint32_t inputs, uint32_t outputs_with_states) {
  const uint32_t count = context.OutputCount();
  const bool ok =
      count == 1 || count == 2 || count == outputs_with_states - 1 || count == outputs_with_states;
  NN_CHECK(context.InputCount() == inputs && ok, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " takes " << inputs << " inputs and 1, 2, " << outputs_with_states - 1
      << " or " << outputs_with_states << " outputs, not " << context.InputCount() << " and "
      << count;
  context.RequireFeatureLevel(kFeatureLevel3);
  // The last states as outputs are FL4.
  if (count > 2) context.RequireFeatureLevel(kFeatureLevel4);
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- BIDIRECTIONAL_SEQUENCE_RNN ----------------------------------------------------------------

constexpr uint32_t kRnnAuxInput = 9, kRnnActivation = 12, kRnnTimeMajor = 13, kRnnMerge = 14;

struct RnnDirection {
  uint32_t weights, recurrent, bias, hidden, aux_weights;
};
constexpr RnnDirection kRnnForward{1, 2, 3, 4, 10}, kRnnBackward{5, 6, 7, 8, 11};

int ValidateBidirectionalRnn(OperationContext& context) {
  NN_RETURN_IF_ERROR(ValidateCounts(context, 15, 4));
  int32_t type = 0;
  NN_RETURN_IF_ERROR(recurrent::CheckFloatInput(context, kFeatureLevel3, &type));
  NN_RETURN_IF_ERROR(recurrent::CheckInputTypes(context, 1, 11, type));
  NN_RETURN_IF_ERROR(
      recurrent::CheckInputTypes(context, kRnnActivation, kRnnActivation, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(
      recurrent::CheckInputTypes(context, kRnnTimeMajor, kRnnMerge, ANEURALNETWORKS_BOOL));
  return recurrent::CheckOutputTypes(context, type);
}

int RnnLayout(const OperationContext& context, Layout* layout, uint32_t* fw_units,
              uint32_t* bw_units) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  NN_RETURN_IF_ERROR(ReadLayout(context, kRnnTimeMajor, kRnnMerge, kRnnAuxInput,
                                {kRnnForward.aux_weights, kRnnBackward.aux_weights}, 4, layout));
  NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, kRnnActivation, "activation"));
  NN_RETURN_IF_ERROR(recurrent::CheckActivation(context, kRnnActivation));
  uint32_t* units[2] = {fw_units, bw_units};
  const RnnDirection directions[2] = {kRnnForward, kRnnBackward};
  for (int d = 0; d < 2; ++d) {
    const RnnDirection& dir = directions[d];
    for (uint32_t i : {dir.weights, dir.recurrent, dir.bias, dir.hidden}) {
      NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, i, d == 0 ? "forward" : "backward"));
    }
    NN_RETURN_IF_ERROR(recurrent::CheckRank(context, dir.weights, 2, "weights"));
    const uint32_t n = context.Input(dir.weights).dim(0);
    *units[d] = n;
    // Parallel linking: the backward cell reads the aux input.
    const bool parallel = d == 1 && layout->has_aux_input && !layout->has_aux_weights;
    const uint32_t in = parallel ? layout->aux_size : layout->input_size;
    NN_RETURN_IF_ERROR(recurrent::CheckShape(context, dir.weights, {n, in}, "weights"));
    NN_RETURN_IF_ERROR(recurrent::CheckShape(context, dir.recurrent, {n, n}, "recurrent weights"));
    NN_RETURN_IF_ERROR(recurrent::CheckShape(context, dir.bias, {n}, "bias"));
    NN_RETURN_IF_ERROR(
        recurrent::CheckShape(context, dir.hidden, {layout->batch, n}, "hidden state"));
    if (layout->has_aux_weights) {
      NN_RETURN_IF_ERROR(
          recurrent::CheckShape(context, dir.aux_weights, {n, layout->aux_size}, "aux weights"));
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int PrepareBidirectionalRnn(OperationContext& context) {
  Layout layout;
  uint32_t fw = 0, bw = 0;
  NN_RETURN_IF_ERROR(RnnLayout(context, &layout, &fw, &bw));
  uint32_t next = 0;
  NN_RETURN_IF_ERROR(
      context.SetOutputShape(next++, SequenceDims(layout, layout.merge ? fw + bw : fw)));
  if (!layout.merge) NN_RETURN_IF_ERROR(context.SetOutputShape(next++, SequenceDims(layout, bw)));
  if (next < context.OutputCount()) {
    NN_RETURN_IF_ERROR(context.SetOutputShape(next++, {layout.batch, fw}));
    NN_RETURN_IF_ERROR(context.SetOutputShape(next++, {layout.batch, bw}));
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int ExecuteBidirectionalRnn(OperationContext& context) {
  Layout layout;
  uint32_t units[2] = {0, 0};
  NN_RETURN_IF_ERROR(RnnLayout(context, &layout, &units[0], &units[1]));
  const std::vector<float> input = recurrent::FloatValues(context.Input(0));
  const std::vector<float> aux = recurrent::FloatValues(context.Input(kRnnAuxInput));
  const int32_t activation = context.InputScalar<int32_t>(kRnnActivation);
  const size_t batch = layout.batch, steps = layout.max_time;
  const size_t fw_width = layout.merge ? units[0] + units[1] : units[0];
  std::vector<float> outputs[2];
  outputs[0].resize(steps * batch * fw_width);
  if (!layout.merge) outputs[1].resize(steps * batch * units[1]);
  std::vector<float> last[2];
  const RnnDirection directions[2] = {kRnnForward, kRnnBackward};
  for (int d = 0; d < 2; ++d) {
    const RnnDirection& dir = directions[d];
    const size_t n = units[d];
    const std::vector<float> weights = recurrent::FloatValues(context.Input(dir.weights));
    const std::vector<float> recurrent_w = recurrent::FloatValues(context.Input(dir.recurrent));
    const std::vector<float> bias = recurrent::FloatValues(context.Input(dir.bias));
    const std::vector<float> aux_weights =
        layout.has_aux_weights ? recurrent::FloatValues(context.Input(dir.aux_weights))
                               : std::vector<float>{};
    const bool parallel = d == 1 && layout.has_aux_input && !layout.has_aux_weights;
    const std::vector<float>& source = parallel ? aux : input;
    const size_t in = parallel ? layout.aux_size : layout.input_size;
    std::vector<float> hidden = recurrent::FloatValues(context.Input(dir.hidden));
    std::vector<float> x(batch * in), x_aux(batch * layout.aux_size), next(batch * n);
    for (size_t k = 0; k < steps; ++k) {
      const size_t t = d == 0 ? k : steps - 1 - k;
      GatherStep(source, layout, t, in, x.data());
      for (size_t b = 0; b < batch; ++b) std::memcpy(&next[b * n], bias.data(), n * sizeof(float));
      recurrent::AccumulateProduct(x.data(), batch, in, weights.data(), n, next.data());
      if (layout.has_aux_weights) {
        GatherStep(aux, layout, t, layout.aux_size, x_aux.data());
        recurrent::AccumulateProduct(x_aux.data(), batch, layout.aux_size, aux_weights.data(), n,
                                     next.data());
      }
      recurrent::AccumulateProduct(hidden.data(), batch, n, recurrent_w.data(), n, next.data());
      recurrent::ActivateAll(activation, next.data(), next.size());
      hidden.swap(next);
      if (layout.merge || d == 0) {
        ScatterStep(hidden.data(), layout, t, n, d == 0 ? 0 : units[0], fw_width, &outputs[0]);
      } else {
        ScatterStep(hidden.data(), layout, t, n, 0, n, &outputs[1]);
      }
    }
    last[d] = std::move(hidden);
  }
  uint32_t next = 0;
  recurrent::StoreFloats(context.Output(next++), outputs[0].data(), outputs[0].size());
  if (!layout.merge) {
    recurrent::StoreFloats(context.Output(next++), outputs[1].data(), outputs[1].size());
  }
  if (next < context.OutputCount()) {
    for (int d = 0; d < 2; ++d) {
      recurrent::StoreFloats(context.Output(next++), last[d].data(), last[d].size());
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- BIDIRECTIONAL_SEQUENCE_LSTM ---------------------------------------------------------------

constexpr uint32_t kLstmAuxInput = 39, kLstmActivation = 48, kLstmCellClip = 49,
                   kLstmProjectionClip = 50, kLstmMerge = 51, kLstmTimeMajor = 52;

lstm::CellInputs LstmDirection(int d) {
  lstm::CellInputs in{};
  const uint32_t base = d == 0 ? 1 : 18;
  for (uint32_t g = 0; g < 4; ++g) {
    in.input_weights[g] = base + g;
    in.recurrent_weights[g] = base + 4 + g;
    in.bias[g] = base + 11 + g;
    in.layer_norm[g] = (d == 0 ? 53 : 57) + g;
  }
  for (uint32_t g = 0; g < 3; ++g) in.peephole[g] = base + 8 + g;
  in.projection = base + 15;
  in.projection_bias = base + 16;
  in.output_state = d == 0 ? 35 : 37;
  in.cell_state = d == 0 ? 36 : 38;
  in.activation = kLstmActivation;
  in.cell_clip = kLstmCellClip;
  in.projection_clip = kLstmProjectionClip;
  return in;
}

uint32_t LstmAuxWeights(int d, uint32_t g) { return (d == 0 ? 40 : 44) + g; }

int ValidateBidirectionalLstm(OperationContext& context) {
  NN_RETURN_IF_ERROR(ValidateCounts(context, 61, 6));
  int32_t type = 0;
  NN_RETURN_IF_ERROR(recurrent::CheckFloatInput(context, kFeatureLevel3, &type));
  NN_RETURN_IF_ERROR(recurrent::CheckInputTypes(context, 1, 47, type));
  NN_RETURN_IF_ERROR(
      recurrent::CheckInputTypes(context, kLstmActivation, kLstmActivation, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(recurrent::CheckInputTypes(context, kLstmCellClip, kLstmProjectionClip,
                                                recurrent::ScalarTypeOf(type)));
  NN_RETURN_IF_ERROR(
      recurrent::CheckInputTypes(context, kLstmMerge, kLstmTimeMajor, ANEURALNETWORKS_BOOL));
  NN_RETURN_IF_ERROR(recurrent::CheckInputTypes(context, 53, 60, type));
  return recurrent::CheckOutputTypes(context, type);
}

int LstmLayout(const OperationContext& context, Layout* layout, lstm::CellShape shapes[2]) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  NN_RETURN_IF_ERROR(ReadLayout(context, kLstmTimeMajor, kLstmMerge, kLstmAuxInput,
                                {41, 42, 43, 45, 46, 47}, 6, layout));
  for (int d = 0; d < 2; ++d) {
    const bool parallel = d == 1 && layout->has_aux_input && !layout->has_aux_weights;
    NN_RETURN_IF_ERROR(lstm::CheckCell(context, LstmDirection(d), layout->batch,
                                       parallel ? layout->aux_size : layout->input_size,
                                       &shapes[d]));
    if (!layout->has_aux_weights) continue;
    for (uint32_t g = 0; g < 4; ++g) {
      const uint32_t i = LstmAuxWeights(d, g);
      // The input gate's aux weights follow CIFG (unused, and may be omitted, with it).
      if (g == 0 && shapes[d].cifg) continue;
      NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, i, "aux input-to-gate weights"));
      NN_RETURN_IF_ERROR(recurrent::CheckShape(context, i, {shapes[d].n_cell, layout->aux_size},
                                               "aux input-to-gate weights"));
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int PrepareBidirectionalLstm(OperationContext& context) {
  Layout layout;
  lstm::CellShape shapes[2];
  NN_RETURN_IF_ERROR(LstmLayout(context, &layout, shapes));
  const uint32_t fw = shapes[0].n_output, bw = shapes[1].n_output;
  uint32_t next = 0;
  NN_RETURN_IF_ERROR(
      context.SetOutputShape(next++, SequenceDims(layout, layout.merge ? fw + bw : fw)));
  if (!layout.merge) NN_RETURN_IF_ERROR(context.SetOutputShape(next++, SequenceDims(layout, bw)));
  if (next < context.OutputCount()) {
    for (int d = 0; d < 2; ++d) {
      NN_RETURN_IF_ERROR(context.SetOutputShape(next++, {layout.batch, shapes[d].n_output}));
      NN_RETURN_IF_ERROR(context.SetOutputShape(next++, {layout.batch, shapes[d].n_cell}));
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int ExecuteBidirectionalLstm(OperationContext& context) {
  Layout layout;
  lstm::CellShape shapes[2];
  NN_RETURN_IF_ERROR(LstmLayout(context, &layout, shapes));
  const std::vector<float> input = recurrent::FloatValues(context.Input(0));
  const std::vector<float> aux = recurrent::FloatValues(context.Input(kLstmAuxInput));
  const size_t batch = layout.batch, steps = layout.max_time;
  const size_t fw_out = shapes[0].n_output, bw_out = shapes[1].n_output;
  const size_t fw_width = layout.merge ? fw_out + bw_out : fw_out;
  std::vector<float> outputs[2];
  outputs[0].resize(steps * batch * fw_width);
  if (!layout.merge) outputs[1].resize(steps * batch * bw_out);
  std::vector<float> last_output[2], last_cell[2];
  for (int d = 0; d < 2; ++d) {
    const lstm::CellInputs inputs = LstmDirection(d);
    const lstm::Cell cell = lstm::LoadCell(context, inputs, shapes[d]);
    std::vector<float> aux_weights[4];
    if (layout.has_aux_weights) {
      for (uint32_t g = shapes[d].cifg ? 1 : 0; g < 4; ++g) {
        aux_weights[g] = recurrent::FloatValues(context.Input(LstmAuxWeights(d, g)));
      }
    }
    const bool parallel = d == 1 && layout.has_aux_input && !layout.has_aux_weights;
    const std::vector<float>& source = parallel ? aux : input;
    const size_t in = shapes[d].n_input, n = shapes[d].n_output;
    std::vector<float> output_state = recurrent::FloatValues(context.Input(inputs.output_state));
    std::vector<float> cell_state = recurrent::FloatValues(context.Input(inputs.cell_state));
    std::vector<float> x(batch * in), x_aux(batch * layout.aux_size);
    for (size_t k = 0; k < steps; ++k) {
      const size_t t = d == 0 ? k : steps - 1 - k;
      GatherStep(source, layout, t, in, x.data());
      if (layout.has_aux_weights) GatherStep(aux, layout, t, layout.aux_size, x_aux.data());
      lstm::Step(cell, x.data(), output_state.data(), cell_state.data(), nullptr,
                 layout.has_aux_weights ? x_aux.data() : nullptr, layout.aux_size,
                 layout.has_aux_weights ? aux_weights : nullptr);
      if (layout.merge || d == 0) {
        ScatterStep(output_state.data(), layout, t, n, d == 0 ? 0 : fw_out, fw_width, &outputs[0]);
      } else {
        ScatterStep(output_state.data(), layout, t, n, 0, n, &outputs[1]);
      }
    }
    last_output[d] = std::move(output_state);
    last_cell[d] = std::move(cell_state);
  }
  uint32_t next = 0;
  recurrent::StoreFloats(context.Output(next++), outputs[0].data(), outputs[0].size());
  if (!layout.merge) {
    recurrent::StoreFloats(context.Output(next++), outputs[1].data(), outputs[1].size());
  }
  if (next < context.OutputCount()) {
    for (int d = 0; d < 2; ++d) {
      recurrent::StoreFloats(context.Output(next++), last_output[d].data(), last_output[d].size());
      recurrent::StoreFloats(context.Output(next++), last_cell[d].data(), last_cell[d].size());
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(BIDIRECTIONAL_SEQUENCE_RNN, ValidateBidirectionalRnn, PrepareBidirectionalRnn,
                      ExecuteBidirectionalRnn);
NN_REGISTER_OPERATION(BIDIRECTIONAL_SEQUENCE_LSTM, ValidateBidirectionalLstm,
                      PrepareBidirectionalLstm, ExecuteBidirectionalLstm);

}  // namespace mock_nnapi
