// SPDX-License-Identifier: Apache-2.0
// LSTM, one time step, and UNIDIRECTIONAL_SEQUENCE_LSTM, the same cell
// along a sequence; the cell, its optional inputs and its equations are in lstm_cell.h.
//
// LSTM inputs: 0 input [batch, input_size]; 1-19 the cell's tensors (lstm_cell.h's standard
//   layout); 20 INT32 activation g; 21 cell clip and 22 projection clip, FLOAT32 scalars for
//   TENSOR_FLOAT32 tensors and FLOAT16 for TENSOR_FLOAT16; 23-26 (FL3, 27 inputs) the layer-norm
//   weights. Outputs: 0 the scratch buffer [batch, num_units * 4] ([.., * 3] with CIFG; the NDK
//   leaves its contents unspecified: the mock stores the gates' activations, lstm::Step's
//   layout), 1 output state h_t [batch, output_size], 2 cell state C_t [batch, num_units],
//   3 output [batch, output_size] (equal to h_t).
// UNIDIRECTIONAL_SEQUENCE_LSTM inputs: 0 input [max_time, batch, input_size] when input 23
//   (BOOL time_major) is true, [batch, max_time, input_size] otherwise; 1-22 as LSTM's (18, 19
//   the first step's states); 24-27 the layer-norm weights (optional). Outputs: 0 every step's
//   h_t, [max_time, batch, output_size] or batch-major; optionally (FL4) 1 the last h_t
//   [batch, output_size] and 2 the last C_t [batch, num_units].
// Types: TENSOR_FLOAT32 (LSTM FL1, the sequence FL3) and TENSOR_FLOAT16 (FL3); every tensor
// the same type. A zero-sized input fails at prepare.
#include <cstring>

#include "lstm_cell.h"

namespace mock_nnapi {
namespace {

constexpr uint32_t kInput = 0, kActivation = 20, kCellClip = 21, kProjectionClip = 22,
                   kTimeMajor = 23;

// Counts are checked by the caller; `layer_norm_first` is the first layer-norm input (kNone
// without); `time_major` the BOOL input (kNone without).
int ValidateTypes(OperationContext& context, int64_t float32_level, uint32_t layer_norm_first,
                  uint32_t time_major) {
  int32_t type = 0;
  NN_RETURN_IF_ERROR(recurrent::CheckFloatInput(context, float32_level, &type));
  NN_RETURN_IF_ERROR(recurrent::CheckInputTypes(context, 1, 19, type));
  NN_RETURN_IF_ERROR(
      recurrent::CheckInputTypes(context, kActivation, kActivation, ANEURALNETWORKS_INT32));
  const int32_t scalar = recurrent::ScalarTypeOf(type);
  NN_RETURN_IF_ERROR(recurrent::CheckInputTypes(context, kCellClip, kProjectionClip, scalar));
  if (time_major != lstm::kNone) {
    NN_RETURN_IF_ERROR(
        recurrent::CheckInputTypes(context, time_major, time_major, ANEURALNETWORKS_BOOL));
  }
  if (layer_norm_first != lstm::kNone) {
    NN_RETURN_IF_ERROR(
        recurrent::CheckInputTypes(context, layer_norm_first, layer_norm_first + 3, type));
  }
  return recurrent::CheckOutputTypes(context, type);
}

int ValidateLstm(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {23, 27}, 4));
  const bool layer_norm = context.InputCount() == 27;
  NN_RETURN_IF_ERROR(
      ValidateTypes(context, kFeatureLevel1, layer_norm ? 23 : lstm::kNone, lstm::kNone));
  // The layer-norm inputs are FL3.
  if (layer_norm) context.RequireFeatureLevel(kFeatureLevel3);
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateSequenceLstm(OperationContext& context) {
  NN_CHECK(context.InputCount() == 28 && (context.OutputCount() == 1 || context.OutputCount() == 3),
           ANEURALNETWORKS_BAD_DATA)
      << context.name() << " takes 28 inputs and 1 or 3 outputs, not " << context.InputCount()
      << " and " << context.OutputCount();
  NN_RETURN_IF_ERROR(ValidateTypes(context, kFeatureLevel3, 24, kTimeMajor));
  context.RequireFeatureLevel(kFeatureLevel3);
  // The last states as outputs are FL4.
  if (context.OutputCount() == 3) context.RequireFeatureLevel(kFeatureLevel4);
  return ANEURALNETWORKS_NO_ERROR;
}

lstm::CellInputs LstmInputs(const OperationContext& context) {
  return lstm::StandardInputs(context.InputCount() == 27 ? 23 : lstm::kNone);
}

int PrepareLstm(OperationContext& context) {
  NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, kInput, "input"));
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, kInput, 2, "input"));
  const OperandInfo& input = context.Input(kInput);
  lstm::CellShape shape;
  NN_RETURN_IF_ERROR(
      lstm::CheckCell(context, LstmInputs(context), input.dim(0), input.dim(1), &shape));
  const uint32_t gates = shape.cifg ? 3 : 4;
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, {shape.batch, shape.n_cell * gates}));
  NN_RETURN_IF_ERROR(context.SetOutputShape(1, {shape.batch, shape.n_output}));
  NN_RETURN_IF_ERROR(context.SetOutputShape(2, {shape.batch, shape.n_cell}));
  return context.SetOutputShape(3, {shape.batch, shape.n_output});
}

int ExecuteLstm(OperationContext& context) {
  const lstm::CellInputs inputs = LstmInputs(context);
  const OperandInfo& input = context.Input(kInput);
  lstm::CellShape shape;
  NN_RETURN_IF_ERROR(lstm::CheckCell(context, inputs, input.dim(0), input.dim(1), &shape));
  const lstm::Cell cell = lstm::LoadCell(context, inputs, shape);
  const std::vector<float> x = recurrent::FloatValues(input);
  std::vector<float> output_state = recurrent::FloatValues(context.Input(inputs.output_state));
  std::vector<float> cell_state = recurrent::FloatValues(context.Input(inputs.cell_state));
  std::vector<float> gates(size_t{shape.batch} * shape.n_cell * (shape.cifg ? 3 : 4));
  lstm::Step(cell, x.data(), output_state.data(), cell_state.data(), gates.data());
  recurrent::StoreFloats(context.Output(0), gates.data(), gates.size());
  recurrent::StoreFloats(context.Output(1), output_state.data(), output_state.size());
  recurrent::StoreFloats(context.Output(2), cell_state.data(), cell_state.size());
  recurrent::StoreFloats(context.Output(3), output_state.data(), output_state.size());
  return ANEURALNETWORKS_NO_ERROR;
}

struct Sequence {
  bool time_major = true;
  uint32_t max_time = 0, batch = 0, input_size = 0;
};

int SequenceShape(const OperationContext& context, Sequence* sequence) {
  NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, kInput, "input"));
  NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, kTimeMajor, "time_major"));
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, kInput, 3, "input"));
  const OperandInfo& input = context.Input(kInput);
  sequence->time_major = context.InputScalar<uint8_t>(kTimeMajor) != 0;
  sequence->max_time = input.dim(sequence->time_major ? 0 : 1);
  sequence->batch = input.dim(sequence->time_major ? 1 : 0);
  sequence->input_size = input.dim(2);
  return ANEURALNETWORKS_NO_ERROR;
}

int PrepareSequenceLstm(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  Sequence sequence;
  NN_RETURN_IF_ERROR(SequenceShape(context, &sequence));
  lstm::CellShape shape;
  NN_RETURN_IF_ERROR(lstm::CheckCell(context, lstm::StandardInputs(24), sequence.batch,
                                     sequence.input_size, &shape));
  const Dimensions output = sequence.time_major
                                ? Dimensions{sequence.max_time, shape.batch, shape.n_output}
                                : Dimensions{shape.batch, sequence.max_time, shape.n_output};
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, output));
  if (context.OutputCount() == 3) {
    NN_RETURN_IF_ERROR(context.SetOutputShape(1, {shape.batch, shape.n_output}));
    NN_RETURN_IF_ERROR(context.SetOutputShape(2, {shape.batch, shape.n_cell}));
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int ExecuteSequenceLstm(OperationContext& context) {
  const lstm::CellInputs inputs = lstm::StandardInputs(24);
  Sequence sequence;
  NN_RETURN_IF_ERROR(SequenceShape(context, &sequence));
  lstm::CellShape shape;
  NN_RETURN_IF_ERROR(lstm::CheckCell(context, inputs, sequence.batch, sequence.input_size, &shape));
  const lstm::Cell cell = lstm::LoadCell(context, inputs, shape);
  const std::vector<float> x = recurrent::FloatValues(context.Input(kInput));
  std::vector<float> output_state = recurrent::FloatValues(context.Input(inputs.output_state));
  std::vector<float> cell_state = recurrent::FloatValues(context.Input(inputs.cell_state));
  const size_t batch = shape.batch, n_input = shape.n_input, n_output = shape.n_output;
  std::vector<float> output(sequence.max_time * batch * n_output);
  std::vector<float> step(batch * n_input);
  for (size_t t = 0; t < sequence.max_time; ++t) {
    auto row = [&](size_t b) {
      return sequence.time_major ? t * batch + b : b * sequence.max_time + t;
    };
    for (size_t b = 0; b < batch; ++b) {
      std::memcpy(step.data() + b * n_input, x.data() + row(b) * n_input, n_input * sizeof(float));
    }
    lstm::Step(cell, step.data(), output_state.data(), cell_state.data());
    for (size_t b = 0; b < batch; ++b) {
      std::memcpy(output.data() + row(b) * n_output, output_state.data() + b * n_output,
                  n_output * sizeof(float));
    }
  }
  recurrent::StoreFloats(context.Output(0), output.data(), output.size());
  if (context.OutputCount() == 3) {
    recurrent::StoreFloats(context.Output(1), output_state.data(), output_state.size());
    recurrent::StoreFloats(context.Output(2), cell_state.data(), cell_state.size());
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(LSTM, ValidateLstm, PrepareLstm, ExecuteLstm);
NN_REGISTER_OPERATION(UNIDIRECTIONAL_SEQUENCE_LSTM, ValidateSequenceLstm, PrepareSequenceLstm,
                      ExecuteSequenceLstm);

}  // namespace mock_nnapi
