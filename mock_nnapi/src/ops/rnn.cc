// SPDX-License-Identifier: Apache-2.0
// The basic RNN cell: RNN for one time step and UNIDIRECTIONAL_SEQUENCE_RNN for a sequence.
// Each step computes
//
//   h_t = activation(x_t * weights^T + h_{t-1} * recurrent_weights^T + bias)
//
// RNN inputs: 0 input [batch, input_size]; 1 weights [num_units, input_size]; 2 recurrent
//   weights [num_units, num_units]; 3 bias [num_units]; 4 hidden state in [batch, num_units];
//   5 INT32 activation. Outputs: 0 hidden state out, 1 output, both [batch, num_units] (equal).
// UNIDIRECTIONAL_SEQUENCE_RNN inputs: 0 input [max_time, batch, input_size] when input 6
//   (INT32 time_major) is 1, [batch, max_time, input_size] when it is 0; 1-5 as RNN's, the hidden
//   state being the first step's. Outputs: 0 the h_t of every step, [max_time, batch, num_units]
//   or [batch, max_time, num_units]; 1 (optional, FL4) the last step's h_t [batch, num_units].
// Types: TENSOR_FLOAT32 (RNN FL1, sequence FL3) and TENSOR_FLOAT16 (FL3), every tensor the same
// type. The activation is one of recurrent_helpers.h's. A zero-sized input fails at prepare.
#include <cstring>

#include "recurrent_helpers.h"

namespace mock_nnapi {
namespace {

constexpr uint32_t kInput = 0, kWeights = 1, kRecurrentWeights = 2, kBias = 3, kHidden = 4,
                   kActivation = 5, kTimeMajor = 6;

int ValidateTypes(OperationContext& context, int64_t float32_level) {
  int32_t type = 0;
  NN_RETURN_IF_ERROR(recurrent::CheckFloatInput(context, float32_level, &type));
  NN_RETURN_IF_ERROR(recurrent::CheckInputTypes(context, kWeights, kHidden, type));
  NN_RETURN_IF_ERROR(
      recurrent::CheckInputTypes(context, kActivation, kActivation, ANEURALNETWORKS_INT32));
  return recurrent::CheckOutputTypes(context, type);
}

int ValidateRnn(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {6}, 2));
  return ValidateTypes(context, kFeatureLevel1);
}

int ValidateSequenceRnn(OperationContext& context) {
  NN_CHECK(context.InputCount() == 7 && (context.OutputCount() == 1 || context.OutputCount() == 2),
           ANEURALNETWORKS_BAD_DATA)
      << context.name() << " takes 7 inputs and 1 or 2 outputs, not " << context.InputCount()
      << " and " << context.OutputCount();
  NN_RETURN_IF_ERROR(ValidateTypes(context, kFeatureLevel3));
  NN_RETURN_IF_ERROR(
      recurrent::CheckInputTypes(context, kTimeMajor, kTimeMajor, ANEURALNETWORKS_INT32));
  context.RequireFeatureLevel(kFeatureLevel3);
  // The last hidden state as a second output is FL4.
  if (context.OutputCount() == 2) context.RequireFeatureLevel(kFeatureLevel4);
  return ANEURALNETWORKS_NO_ERROR;
}

struct RnnShape {
  uint32_t max_time = 1, batch = 0, input_size = 0, units = 0;
  bool time_major = true;
};

// Checks the weights, the bias and the hidden state against the input's batch and size.
int CheckCell(const OperationContext& context, RnnShape* shape) {
  static const char* const kNames[] = {"input",        "weights",    "recurrent weights", "bias",
                                       "hidden state", "activation", "time_major"};
  for (uint32_t i = 0; i < context.InputCount(); ++i) {
    NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, i, kNames[i]));
  }
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  NN_RETURN_IF_ERROR(recurrent::CheckActivation(context, kActivation));
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, kWeights, 2, "weights"));
  shape->units = context.Input(kWeights).dim(0);
  NN_RETURN_IF_ERROR(
      recurrent::CheckShape(context, kWeights, {shape->units, shape->input_size}, "weights"));
  NN_RETURN_IF_ERROR(recurrent::CheckShape(context, kRecurrentWeights, {shape->units, shape->units},
                                           "recurrent weights"));
  NN_RETURN_IF_ERROR(recurrent::CheckShape(context, kBias, {shape->units}, "bias"));
  return recurrent::CheckShape(context, kHidden, {shape->batch, shape->units}, "hidden state");
}

int PrepareRnn(OperationContext& context) {
  RnnShape shape;
  NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, kInput, "input"));
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, kInput, 2, "input"));
  shape.batch = context.Input(kInput).dim(0);
  shape.input_size = context.Input(kInput).dim(1);
  NN_RETURN_IF_ERROR(CheckCell(context, &shape));
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, {shape.batch, shape.units}));
  return context.SetOutputShape(1, {shape.batch, shape.units});
}

int SequenceShape(const OperationContext& context, RnnShape* shape) {
  NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, kInput, "input"));
  NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, kTimeMajor, "time_major"));
  const int32_t time_major = context.InputScalar<int32_t>(kTimeMajor);
  NN_CHECK(time_major == 0 || time_major == 1, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " time_major must be 0 or 1, not " << time_major;
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, kInput, 3, "input"));
  const OperandInfo& input = context.Input(kInput);
  shape->time_major = time_major == 1;
  shape->max_time = input.dim(shape->time_major ? 0 : 1);
  shape->batch = input.dim(shape->time_major ? 1 : 0);
  shape->input_size = input.dim(2);
  return ANEURALNETWORKS_NO_ERROR;
}

int PrepareSequenceRnn(OperationContext& context) {
  RnnShape shape;
  NN_RETURN_IF_ERROR(SequenceShape(context, &shape));
  NN_RETURN_IF_ERROR(CheckCell(context, &shape));
  const Dimensions output = shape.time_major ? Dimensions{shape.max_time, shape.batch, shape.units}
                                             : Dimensions{shape.batch, shape.max_time, shape.units};
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, output));
  if (context.OutputCount() == 2) {
    NN_RETURN_IF_ERROR(context.SetOutputShape(1, {shape.batch, shape.units}));
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Runs the cell over the sequence. `input` is [max_time, batch, input_size] or batch-major;
// `sequence_out` (may be null) receives every step's state in the same order; `hidden` holds
// the initial state and receives the last one.
void RunSequence(const OperationContext& context, const RnnShape& shape, const float* input,
                 float* sequence_out, std::vector<float>* hidden) {
  const std::vector<float> weights = recurrent::FloatValues(context.Input(kWeights));
  const std::vector<float> recurrent = recurrent::FloatValues(context.Input(kRecurrentWeights));
  const std::vector<float> bias = recurrent::FloatValues(context.Input(kBias));
  const int32_t activation = context.InputScalar<int32_t>(kActivation);
  const size_t batch = shape.batch, units = shape.units, input_size = shape.input_size;
  std::vector<float> step_input(batch * input_size);
  std::vector<float> next(batch * units);
  for (size_t t = 0; t < shape.max_time; ++t) {
    // Gather this step's rows: contiguous when time-major, one row per batch otherwise.
    for (size_t b = 0; b < batch; ++b) {
      const size_t row = shape.time_major ? t * batch + b : b * shape.max_time + t;
      std::memcpy(step_input.data() + b * input_size, input + row * input_size,
                  input_size * sizeof(float));
    }
    for (size_t b = 0; b < batch; ++b) {
      std::memcpy(next.data() + b * units, bias.data(), units * sizeof(float));
    }
    recurrent::AccumulateProduct(step_input.data(), batch, input_size, weights.data(), units,
                                 next.data());
    recurrent::AccumulateProduct(hidden->data(), batch, units, recurrent.data(), units,
                                 next.data());
    recurrent::ActivateAll(activation, next.data(), next.size());
    hidden->swap(next);
    if (sequence_out == nullptr) continue;
    for (size_t b = 0; b < batch; ++b) {
      const size_t row = shape.time_major ? t * batch + b : b * shape.max_time + t;
      std::memcpy(sequence_out + row * units, hidden->data() + b * units, units * sizeof(float));
    }
  }
}

int ExecuteRnn(OperationContext& context) {
  RnnShape shape;
  shape.batch = context.Input(kInput).dim(0);
  shape.input_size = context.Input(kInput).dim(1);
  shape.units = context.Input(kWeights).dim(0);
  const std::vector<float> input = recurrent::FloatValues(context.Input(kInput));
  std::vector<float> hidden = recurrent::FloatValues(context.Input(kHidden));
  RunSequence(context, shape, input.data(), nullptr, &hidden);
  recurrent::StoreFloats(context.Output(0), hidden.data(), hidden.size());
  recurrent::StoreFloats(context.Output(1), hidden.data(), hidden.size());
  return ANEURALNETWORKS_NO_ERROR;
}

int ExecuteSequenceRnn(OperationContext& context) {
  RnnShape shape;
  NN_RETURN_IF_ERROR(SequenceShape(context, &shape));
  shape.units = context.Input(kWeights).dim(0);
  const std::vector<float> input = recurrent::FloatValues(context.Input(kInput));
  std::vector<float> hidden = recurrent::FloatValues(context.Input(kHidden));
  std::vector<float> output(size_t{shape.max_time} * shape.batch * shape.units);
  RunSequence(context, shape, input.data(), output.data(), &hidden);
  recurrent::StoreFloats(context.Output(0), output.data(), output.size());
  if (context.OutputCount() == 2) {
    recurrent::StoreFloats(context.Output(1), hidden.data(), hidden.size());
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(RNN, ValidateRnn, PrepareRnn, ExecuteRnn);
NN_REGISTER_OPERATION(UNIDIRECTIONAL_SEQUENCE_RNN, ValidateSequenceRnn, PrepareSequenceRnn,
                      ExecuteSequenceRnn);

}  // namespace mock_nnapi
