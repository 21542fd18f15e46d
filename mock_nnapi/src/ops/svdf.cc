// SPDX-License-Identifier: Apache-2.0
// SVDF: a stateful layer that filters the input on the feature dimension, pushes the
// results into a fixed-size memory and filters that memory on the time dimension:
//
//   memory = push(input * weights_feature^T)            (the oldest entry drops out)
//   output = activation(sum over rank(memory * weights_time) + bias)
//
// Inputs: 0 input [batch, input_size]; 1 weights_feature [num_units * rank, input_size];
//   2 weights_time [num_units * rank, memory_size]; 3 bias [num_units] (optional); 4 state in;
//   5 INT32 rank (>= 1, dividing weights_feature's first dimension); 6 INT32 activation.
// Outputs: 0 state out, 1 output [batch, num_units].
// The state is [batch, num_filters * memory_size] (num_filters = num_units * rank), laid out
// [batch][filter][memory_size] with the oldest entry first: Android's layout, which keeps a
// column more than the NDK text's (memory_size - 1) * num_units * rank. A step reads the
// memory_size - 1 newest entries of the state in (its last column is ignored), appends the new
// filter outputs, and writes the state out shifted by one entry (its last column 0), so that the
// state out of a step is the state in of the next.
// Types: TENSOR_FLOAT32 (FL1), TENSOR_FLOAT16 (FL3), every tensor the same type. The activation
// is one of recurrent_helpers.h's. A zero-sized input fails at prepare.
#include "recurrent_helpers.h"

namespace mock_nnapi {
namespace {

constexpr uint32_t kInput = 0, kWeightsFeature = 1, kWeightsTime = 2, kBias = 3, kState = 4,
                   kRank = 5, kActivation = 6;

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {7}, 2));
  int32_t type = 0;
  NN_RETURN_IF_ERROR(recurrent::CheckFloatInput(context, kFeatureLevel1, &type));
  NN_RETURN_IF_ERROR(recurrent::CheckInputTypes(context, kWeightsFeature, kState, type));
  NN_RETURN_IF_ERROR(
      recurrent::CheckInputTypes(context, kRank, kActivation, ANEURALNETWORKS_INT32));
  return recurrent::CheckOutputTypes(context, type);
}

struct SvdfShape {
  uint32_t batch, input_size, filters, units, memory, rank;
};

int Shape(const OperationContext& context, SvdfShape* shape) {
  static const char* const kNames[] = {"input", "weights_feature", "weights_time", "bias", "state",
                                       "rank",  "activation"};
  for (uint32_t i = 0; i < 7; ++i) {
    if (i != kBias) NN_RETURN_IF_ERROR(recurrent::CheckPresent(context, i, kNames[i]));
  }
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  NN_RETURN_IF_ERROR(recurrent::CheckActivation(context, kActivation));
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, kInput, 2, "input"));
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, kWeightsFeature, 2, "weights_feature"));
  NN_RETURN_IF_ERROR(recurrent::CheckRank(context, kWeightsTime, 2, "weights_time"));
  shape->batch = context.Input(kInput).dim(0);
  shape->input_size = context.Input(kInput).dim(1);
  shape->filters = context.Input(kWeightsFeature).dim(0);
  shape->memory = context.Input(kWeightsTime).dim(1);
  const int32_t rank = context.InputScalar<int32_t>(kRank);
  NN_CHECK(rank >= 1 && shape->filters % static_cast<uint32_t>(rank) == 0,
           ANEURALNETWORKS_OP_FAILED)
      << context.name() << " rank " << rank
      << " must be >= 1 and divide weights_feature's first dimension " << shape->filters;
  shape->rank = static_cast<uint32_t>(rank);
  shape->units = shape->filters / shape->rank;
  NN_RETURN_IF_ERROR(recurrent::CheckShape(context, kWeightsFeature,
                                           {shape->filters, shape->input_size}, "weights_feature"));
  NN_RETURN_IF_ERROR(recurrent::CheckShape(context, kWeightsTime, {shape->filters, shape->memory},
                                           "weights_time"));
  if (!context.IsOmitted(kBias)) {
    NN_RETURN_IF_ERROR(recurrent::CheckShape(context, kBias, {shape->units}, "bias"));
  }
  return recurrent::CheckShape(context, kState, {shape->batch, shape->filters * shape->memory},
                               "state");
}

int Prepare(OperationContext& context) {
  SvdfShape shape;
  NN_RETURN_IF_ERROR(Shape(context, &shape));
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, {shape.batch, shape.filters * shape.memory}));
  return context.SetOutputShape(1, {shape.batch, shape.units});
}

int Execute(OperationContext& context) {
  SvdfShape s;
  NN_RETURN_IF_ERROR(Shape(context, &s));
  const std::vector<float> input = recurrent::FloatValues(context.Input(kInput));
  const std::vector<float> feature = recurrent::FloatValues(context.Input(kWeightsFeature));
  const std::vector<float> time = recurrent::FloatValues(context.Input(kWeightsTime));
  const std::vector<float> bias = recurrent::FloatValues(context.Input(kBias));
  std::vector<float> memory = recurrent::FloatValues(context.Input(kState));
  const int32_t activation = context.InputScalar<int32_t>(kActivation);
  // The new entries: filtered[batch, filters].
  std::vector<float> filtered(size_t{s.batch} * s.filters, 0.f);
  recurrent::AccumulateProduct(input.data(), s.batch, s.input_size, feature.data(), s.filters,
                               filtered.data());
  std::vector<float> output(size_t{s.batch} * s.units, 0.f);
  for (size_t b = 0; b < s.batch; ++b) {
    for (size_t f = 0; f < s.filters; ++f) {
      float* entries = memory.data() + (b * s.filters + f) * s.memory;
      entries[s.memory - 1] = filtered[b * s.filters + f];
      const float* weights = time.data() + f * s.memory;
      float sum = 0.f;
      for (size_t m = 0; m < s.memory; ++m) sum += entries[m] * weights[m];
      output[b * s.units + f / s.rank] += sum;
      // Drop the oldest entry for the next step.
      for (size_t m = 0; m + 1 < s.memory; ++m) entries[m] = entries[m + 1];
      entries[s.memory - 1] = 0.f;
    }
    for (size_t u = 0; u < s.units; ++u) {
      float& value = output[b * s.units + u];
      if (!bias.empty()) value += bias[u];
      value = recurrent::Activate(activation, value);
    }
  }
  recurrent::StoreFloats(context.Output(0), memory.data(), memory.size());
  recurrent::StoreFloats(context.Output(1), output.data(), output.size());
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(SVDF, Validate, Prepare, Execute);

}  // namespace mock_nnapi
