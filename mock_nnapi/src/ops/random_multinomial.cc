// SPDX-License-Identifier: Apache-2.0
// RANDOM_MULTINOMIAL: draws samples from the categorical distribution of each row of
// unnormalised log-probabilities.
//
// Inputs: 0 TENSOR_FLOAT32 or TENSOR_FLOAT16 [batches, classes], the logits; 1 INT32 the number
//   of samples per row (the mock requires >= 1); 2 TENSOR_INT32 [2], the seeds.
// Output: 0 TENSOR_INT32 [batches, samples], class indices; class i of a row is drawn with
//   probability exp(logit_i) / sum_j exp(logit_j) (-inf logits are never drawn; a row without a
//   finite logit fails with OP_FAILED).
//
// The draws are a deterministic function of the seeds: sample s of row b uses the uniform number
//   u = top 53 bits of SplitMix64(key + (b * samples + s + 1) * 0x9E3779B97F4A7C15) / 2^53,
// key = (uint32(seed0) << 32) | uint32(seed1), and picks the first class whose cumulative weight
// exp(logit - max logit) (in double) exceeds u times the row's total weight. This is the mock's
// generator, not Android's (a Philox stream): the same seeds give the same samples on the mock,
// but not the samples Android draws; only the distribution is specified.
#include <cmath>
#include <vector>

#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

int InferShape(const OperationContext& context, int error, Dimensions* output) {
  const OperandInfo& logits = context.Input(0);
  NN_CHECK_EQ(logits.rank(), 2u, error) << context.name() << " logits must be 2-D";
  const int32_t samples = context.InputScalar<int32_t>(1);
  NN_CHECK_GE(samples, 1, error) << context.name() << " sample count";
  const OperandInfo& seeds = context.Input(2);
  NN_CHECK(seeds.rank() == 1 && seeds.dim(0) == 2, error)
      << context.name() << " seeds must have shape [2], not "
      << DimensionsToString(seeds.dimensions);
  *output = {logits.dim(0), static_cast<uint32_t>(samples)};
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {3}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3}}));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 1, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(CheckInputType(context, 2, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_CHECK(!context.IsOmitted(2), ANEURALNETWORKS_BAD_DATA)
      << context.name() << " seeds are not optional";
  NN_CHECK_EQ(context.Output(0).type, ANEURALNETWORKS_TENSOR_INT32, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output must be TENSOR_INT32, not "
      << OperandTypeName(context.Output(0).type);
  const OperandInfo& logits = context.Input(0);
  if (logits.rank_known) {
    NN_CHECK_EQ(logits.rank(), 2u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " logits must be 2-D";
  }
  const OperandInfo& seeds = context.Input(2);
  if (seeds.rank_known) {
    NN_CHECK(seeds.rank() == 1 && (seeds.dim(0) == 0 || seeds.dim(0) == 2),
             ANEURALNETWORKS_BAD_DATA)
        << context.name() << " seeds must have shape [2], not "
        << DimensionsToString(seeds.dimensions);
  }
  if (context.HasInputValue(1)) {
    NN_CHECK_GE(context.InputScalar<int32_t>(1), 1, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " sample count";
  }
  if (!context.HasInputValue(1) || !shape::ShapeKnown(logits) || !shape::ShapeKnown(seeds)) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, &output));
  return shape::CheckDeclaredOutputShape(context, 0, output);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &output));
  return context.SetOutputShape(0, output);
}

uint64_t SplitMix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <typename T>
int Sample(OperationContext& context) {
  const OperandInfo& logits = context.Input(0);
  const size_t batches = logits.dim(0);
  const size_t classes = logits.dim(1);
  const size_t samples = static_cast<size_t>(context.InputScalar<int32_t>(1));
  const int32_t* seeds = context.Input(2).Data<int32_t>();
  const uint64_t key =
      (uint64_t{static_cast<uint32_t>(seeds[0])} << 32) | uint64_t{static_cast<uint32_t>(seeds[1])};
  const T* in = logits.Data<T>();
  int32_t* out = context.Output(0).MutableData<int32_t>();
  std::vector<double> cumulative(classes);
  for (size_t b = 0; b < batches; ++b) {
    const T* row = in + b * classes;
    double max = -INFINITY;
    for (size_t i = 0; i < classes; ++i) {
      const double value = static_cast<float>(row[i]);
      if (value > max) max = value;  // NaN never wins
    }
    NN_CHECK(std::isfinite(max), ANEURALNETWORKS_OP_FAILED)
        << context.name() << " row " << b << " has no finite logit";
    double total = 0;
    for (size_t i = 0; i < classes; ++i) {
      const double value = static_cast<float>(row[i]);
      // exp(-inf) = 0: such classes are never drawn; NaN logits count as -inf.
      total += std::isnan(value) ? 0.0 : std::exp(value - max);
      cumulative[i] = total;
    }
    for (size_t s = 0; s < samples; ++s) {
      const uint64_t counter = uint64_t{b} * samples + s + 1;
      const uint64_t bits = SplitMix64(key + counter * 0x9E3779B97F4A7C15ull);
      const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
      const double target = u * total;
      // The first class whose cumulative weight exceeds the target (a zero-weight class never
      // does, since its cumulative weight equals its predecessor's).
      size_t low = 0, high = classes - 1;
      while (low < high) {
        const size_t mid = (low + high) / 2;
        if (cumulative[mid] > target) {
          high = mid;
        } else {
          low = mid + 1;
        }
      }
      // target rounded up to the total: the last class with a weight.
      if (cumulative[low] <= target) {
        while (low > 0 && cumulative[low] == cumulative[low - 1]) --low;
      }
      out[b * samples + s] = static_cast<int32_t>(low);
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Execute(OperationContext& context) {
  if (context.InputType(0) == ANEURALNETWORKS_TENSOR_FLOAT16) return Sample<Half>(context);
  return Sample<float>(context);
}

}  // namespace

NN_REGISTER_OPERATION(RANDOM_MULTINOMIAL, Validate, Prepare, Execute);

}  // namespace mock_nnapi
