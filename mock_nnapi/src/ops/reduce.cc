// SPDX-License-Identifier: Apache-2.0
// MEAN and REDUCE_SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ALL, REDUCE_ANY.
//
// Inputs: 0 tensor (rank up to 4), 1 TENSOR_INT32 1-D axes, 2 keep_dims (INT32 for MEAN, where a
// positive value keeps; BOOL for REDUCE_*). Each axis lies in [-rank, rank); negative axes count
// from the end and duplicates are allowed. An empty axes list reduces nothing (the NDK notes that
// MEAN never implemented "empty means all"). Reduced dimensions are kept with size 1 when
// keep_dims is set and removed otherwise; when every dimension is removed the shape is [1].
// Types by feature level (NDK reference, Android's Reduce.cpp and SimpleMath.cpp):
//   MEAN:                  TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL2), TENSOR_FLOAT16 (FL3),
//                          TENSOR_QUANT8_ASYMM_SIGNED (FL4).
//   REDUCE_SUM, _PROD:     TENSOR_FLOAT32, TENSOR_FLOAT16 (FL3).
//   REDUCE_MAX, _MIN:      TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM (FL3),
//                          TENSOR_QUANT8_ASYMM_SIGNED (FL4).
//   REDUCE_ALL, _ANY:      TENSOR_BOOL8 (FL3).
// Quantised outputs keep the input's scale and zero point. Floating-point reductions
// (FLOAT16 included) accumulate in double; a quantised mean rounds half away from zero.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "../kernels/vector_math.h"
#include "axis_helpers.h"
#include "common.h"

namespace mock_nnapi {
namespace {

int64_t TypeFeatureLevel(int32_t operation, int32_t type) {
  const bool is_float16 = type == ANEURALNETWORKS_TENSOR_FLOAT16;
  const bool is_float32 = type == ANEURALNETWORKS_TENSOR_FLOAT32;
  const bool is_quant8 = type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM;
  const bool is_quant8_signed = type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED;
  switch (operation) {
    case ANEURALNETWORKS_MEAN:
      if (is_float32 || is_quant8) return kFeatureLevel2;
      if (is_float16) return kFeatureLevel3;
      return is_quant8_signed ? kFeatureLevel4 : -1;
    case ANEURALNETWORKS_REDUCE_SUM:
    case ANEURALNETWORKS_REDUCE_PROD:
      return is_float32 || is_float16 ? kFeatureLevel3 : -1;
    case ANEURALNETWORKS_REDUCE_MAX:
    case ANEURALNETWORKS_REDUCE_MIN:
      if (is_float32 || is_float16 || is_quant8) return kFeatureLevel3;
      return is_quant8_signed ? kFeatureLevel4 : -1;
    case ANEURALNETWORKS_REDUCE_ALL:
    case ANEURALNETWORKS_REDUCE_ANY:
      return type == ANEURALNETWORKS_TENSOR_BOOL8 ? kFeatureLevel3 : -1;
    default:
      return -1;
  }
}

// Checks the axes tensor (input 1) against the input's rank; `code` is BAD_DATA at validation.
int CheckAxes(const OperationContext& context, int code) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& axes = context.Input(1);
  if (axes.rank_known) {
    NN_CHECK_EQ(axes.rank(), 1u, code) << context.name() << " axes must be a 1-D tensor";
  }
  if (!context.HasInputValue(1) || !input.rank_known || !axes.IsFullySpecified()) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  const int32_t* values = axes.Data<int32_t>();
  for (uint32_t i = 0; i < axes.dim(0); ++i) {
    uint32_t resolved = 0;
    NN_CHECK(indexing::ResolveAxis(values[i], input.rank(), &resolved), code)
        << context.name() << " axis " << values[i] << " is outside [-" << input.rank() << ", "
        << input.rank() << ")";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {3}, 1));
  const OperandInfo& input = context.Input(0);
  const int64_t level = TypeFeatureLevel(context.type(), input.type);
  NN_CHECK(level > 0, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " does not support " << OperandTypeName(input.type);
  context.RequireFeatureLevel(level);
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_TENSOR_INT32}));
  const int32_t keep_dims_type =
      context.type() == ANEURALNETWORKS_MEAN ? ANEURALNETWORKS_INT32 : ANEURALNETWORKS_BOOL;
  NN_RETURN_IF_ERROR(CheckInputType(context, 2, {keep_dims_type}));
  NN_RETURN_IF_ERROR(axis_helpers::CheckNotOmitted(context, 0, 2));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  NN_RETURN_IF_ERROR(axis_helpers::CheckOutputQuantizationMatchesInput(context));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, input, 4, "input rank"));
  return CheckAxes(context, ANEURALNETWORKS_BAD_DATA);
}

bool KeepDims(const OperationContext& context) {
  if (context.type() == ANEURALNETWORKS_MEAN) return context.InputScalar<int32_t>(2) > 0;
  return axis_helpers::BoolScalar(context, 2);
}

// Which input dimensions are reduced (duplicate axes collapse).
std::vector<bool> ReducedDimensions(const OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& axes = context.Input(1);
  std::vector<bool> reduced(input.rank(), false);
  const size_t count = indexing::Product(axes.dimensions);
  for (size_t i = 0; i < count; ++i) {
    uint32_t axis = 0;
    if (indexing::ResolveAxis(axes.Data<int32_t>()[i], input.rank(), &axis)) {
      reduced[axis] = true;
    }
  }
  return reduced;
}

int Prepare(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  NN_CHECK_LE(input.rank(), 4u, ANEURALNETWORKS_OP_FAILED) << context.name() << " input rank";
  NN_RETURN_IF_ERROR(CheckAxes(context, ANEURALNETWORKS_OP_FAILED));
  const std::vector<bool> reduced = ReducedDimensions(context);
  const bool keep_dims = KeepDims(context);
  Dimensions out;
  for (uint32_t d = 0; d < input.rank(); ++d) {
    if (!reduced[d]) {
      out.push_back(input.dim(d));
    } else if (keep_dims) {
      out.push_back(1);
    }
  }
  if (out.empty()) out.push_back(1);
  return context.SetOutputShape(0, out);
}

// Calls body(input_index, output_index) for every input element, where output_index is the
// position of its reduction in the (row-major) output.
template <typename Body>
void ForEachReduced(const Dimensions& dimensions, const std::vector<bool>& reduced, Body&& body) {
  const size_t rank = dimensions.size();
  const size_t total = indexing::Product(dimensions);
  if (total == 0) return;
  std::vector<size_t> out_stride(rank, 0);
  size_t running = 1;
  for (size_t d = rank; d-- > 0;) {
    if (!reduced[d]) {
      out_stride[d] = running;
      running *= dimensions[d];
    }
  }
  std::vector<size_t> counter(rank, 0);
  size_t out_index = 0;
  for (size_t in_index = 0; in_index < total; ++in_index) {
    body(in_index, out_index);
    for (size_t d = rank; d-- > 0;) {
      ++counter[d];
      out_index += out_stride[d];
      if (counter[d] < dimensions[d]) break;
      out_index -= out_stride[d] * counter[d];
      counter[d] = 0;
    }
  }
}

// MEAN and REDUCE_SUM of fp32 by contiguous runs: the input's trailing run of kept dimensions
// (global average pooling of NHWC: the channels) is added as a row into a row of accumulators,
// and a trailing run of reduced dimensions (NCHW: the pixels of a channel) into one accumulator.
// Every accumulator still adds its values in double in input order, so the sums are those of
// the per-element loop. False (nothing done) when the innermost dimension is not part of a run
// longer than one element.
// dst[k] += src[k] in double; AVX-512 and AVX2 clones on x86-64 (vector_math.h).
MOCK_NNAPI_SIMD_CLONES void AddRow(const float* __restrict__ src, double* __restrict__ dst,
                                   size_t count) {
  for (size_t k = 0; k < count; ++k) dst[k] += static_cast<double>(src[k]);
}

bool SumFloat32Runs(const Dimensions& dimensions, const std::vector<bool>& reduced, const float* x,
                    double* accumulator) {
  size_t last = dimensions.size();
  while (last > 0 && dimensions[last - 1] == 1) --last;  // unit dimensions change no order
  if (last == 0) return false;
  const bool inner_reduced = reduced[last - 1];
  size_t first = last;
  size_t run = 1;
  while (first > 0 && (reduced[first - 1] == inner_reduced || dimensions[first - 1] == 1)) {
    run *= dimensions[--first];
  }
  if (run < 2) return false;
  const Dimensions outer(dimensions.begin(), dimensions.begin() + first);
  const std::vector<bool> outer_reduced(reduced.begin(), reduced.begin() + first);
  auto add_run = [&](size_t i, size_t o) {
    const float* __restrict__ src = x + i * run;
    if (inner_reduced) {
      double acc = accumulator[o];
      for (size_t k = 0; k < run; ++k) acc += static_cast<double>(src[k]);
      accumulator[o] = acc;
    } else {
      AddRow(src, accumulator + o * run, run);
    }
  };
  if (outer.empty()) {
    add_run(0, 0);
  } else {
    ForEachReduced(outer, outer_reduced, add_run);
  }
  return true;
}

// Floating-point and quantised reductions through real values accumulated in double.
template <typename T>
void ReduceNumeric(const OperationContext& context, const std::vector<bool>& reduced) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const int32_t op = context.type();
  const size_t out_count = indexing::Product(output.dimensions);
  double initial = 0.0;
  if (op == ANEURALNETWORKS_REDUCE_PROD) initial = 1.0;
  if (op == ANEURALNETWORKS_REDUCE_MAX) initial = -std::numeric_limits<double>::infinity();
  if (op == ANEURALNETWORKS_REDUCE_MIN) initial = std::numeric_limits<double>::infinity();
  std::vector<double> accumulator(out_count, initial);
  const T* x = input.Data<T>();
  const bool by_runs = [&] {
    if constexpr (std::is_same_v<T, float>) {
      return (op == ANEURALNETWORKS_MEAN || op == ANEURALNETWORKS_REDUCE_SUM) &&
             indexing::Product(input.dimensions) > 0 &&
             SumFloat32Runs(input.dimensions, reduced, x, accumulator.data());
    }
    return false;
  }();
  if (!by_runs) {
    ForEachReduced(input.dimensions, reduced, [&](size_t i, size_t o) {
      const double value = axis_helpers::LoadReal(x[i], input);
      double& acc = accumulator[o];
      switch (op) {
        case ANEURALNETWORKS_REDUCE_PROD:
          acc *= value;
          break;
        case ANEURALNETWORKS_REDUCE_MAX:
          acc = std::max(acc, value);
          break;
        case ANEURALNETWORKS_REDUCE_MIN:
          acc = std::min(acc, value);
          break;
        default:  // MEAN and REDUCE_SUM
          acc += value;
      }
    });
  }
  if (op == ANEURALNETWORKS_MEAN) {
    size_t reduced_count = 1;
    for (size_t d = 0; d < reduced.size(); ++d) {
      if (reduced[d]) reduced_count *= input.dim(static_cast<uint32_t>(d));
    }
    for (double& acc : accumulator) acc /= static_cast<double>(reduced_count);
  }
  T* y = output.MutableData<T>();
  for (size_t o = 0; o < out_count; ++o) y[o] = axis_helpers::StoreReal<T>(accumulator[o], output);
}

void ReduceLogical(const OperationContext& context, const std::vector<bool>& reduced) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const bool is_all = context.type() == ANEURALNETWORKS_REDUCE_ALL;
  const size_t out_count = indexing::Product(output.dimensions);
  uint8_t* y = output.MutableData<uint8_t>();
  std::fill(y, y + out_count, is_all ? 1 : 0);
  const uint8_t* x = input.Data<uint8_t>();
  ForEachReduced(input.dimensions, reduced, [&](size_t i, size_t o) {
    const bool value = x[i] != 0;
    y[o] = is_all ? (y[o] && value) : (y[o] || value);
  });
}

int Execute(OperationContext& context) {
  const std::vector<bool> reduced = ReducedDimensions(context);
  switch (context.InputType(0)) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      ReduceNumeric<float>(context, reduced);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      ReduceNumeric<Half>(context, reduced);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      ReduceNumeric<uint8_t>(context, reduced);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      ReduceNumeric<int8_t>(context, reduced);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_BOOL8:
      ReduceLogical(context, reduced);
      return ANEURALNETWORKS_NO_ERROR;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED)
          << context.name() << ": unsupported type " << OperandTypeName(context.InputType(0));
  }
}

}  // namespace

NN_REGISTER_OPERATION(MEAN, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(REDUCE_SUM, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(REDUCE_PROD, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(REDUCE_MAX, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(REDUCE_MIN, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(REDUCE_ALL, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(REDUCE_ANY, Validate, Prepare, Execute);

}  // namespace mock_nnapi
