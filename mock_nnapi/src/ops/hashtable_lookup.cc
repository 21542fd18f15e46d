// SPDX-License-Identifier: Apache-2.0
// HASHTABLE_LOOKUP: looks up sub-tensors of a key -> value map.
//
// Inputs: 0 lookups, TENSOR_INT32 1-D [k]; 1 keys, TENSOR_INT32 1-D [n], sorted in ascending order
//   (the NDK requires it; the lookup is a binary search, as Android's, so unsorted keys give the
//   result of that search); 2 values, rank >= 1 with values.dims[0] == n: values[i] is the entry
//   of keys[i].
// Outputs: 0 [k, values.dims[1:]], the values' type, scale and zero point: output[j] = values[i]
//   for keys[i] == lookups[j], all-zero bytes where the key is absent; 1 hits, TENSOR_QUANT8_ASYMM
//   [k] with scale 1 and zero point 0 (the operation fixes them: other parameters fail the
//   execution, as in Android's executor), 1 where the key was found and 0 where not.
// Types of values: TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM (FL1). Zero-sized inputs are
// rejected.
#include <algorithm>

#include "index_helpers.h"
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

int InferShape(const OperationContext& context, int error, Dimensions* output) {
  const OperandInfo& lookups = context.Input(0);
  const OperandInfo& keys = context.Input(1);
  const OperandInfo& values = context.Input(2);
  NN_CHECK_EQ(lookups.rank(), 1u, error) << context.name() << " lookups must be 1-D";
  NN_CHECK_EQ(keys.rank(), 1u, error) << context.name() << " keys must be 1-D";
  NN_CHECK_GE(values.rank(), 1u, error) << context.name() << " values must have rank >= 1";
  NN_CHECK_EQ(keys.dim(0), values.dim(0), error)
      << context.name() << " has " << keys.dim(0) << " keys but " << values.dim(0) << " values";
  *output = values.dimensions;
  (*output)[0] = lookups.dim(0);
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {3}, 2));
  NN_RETURN_IF_ERROR(CheckInputType(context, 0, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 2,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel1}}));
  for (uint32_t i = 0; i < 3; ++i) {
    NN_CHECK(!context.IsOmitted(i), ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input " << i << " is not optional";
  }
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 2));
  NN_CHECK_EQ(context.Output(1).type, ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output 1 (hits) must be TENSOR_QUANT8_ASYMM, not "
      << OperandTypeName(context.Output(1).type);
  const OperandInfo& lookups = context.Input(0);
  const OperandInfo& keys = context.Input(1);
  const OperandInfo& values = context.Input(2);
  if (lookups.rank_known) {
    NN_CHECK_EQ(lookups.rank(), 1u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " lookups must be 1-D";
  }
  if (keys.rank_known) {
    NN_CHECK_EQ(keys.rank(), 1u, ANEURALNETWORKS_BAD_DATA) << context.name() << " keys must be 1-D";
  }
  if (values.rank_known) {
    NN_CHECK_GE(values.rank(), 1u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " values must have rank >= 1";
  }
  if (!shape::ShapeKnown(lookups) || !shape::ShapeKnown(keys) || !shape::ShapeKnown(values)) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, &output));
  NN_RETURN_IF_ERROR(shape::CheckDeclaredOutputShape(context, 0, output));
  return shape::CheckDeclaredOutputShape(context, 1, {lookups.dim(0)});
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, &output));
  const OperandInfo& hits = context.Output(1);
  NN_CHECK(hits.scale == 1.f && hits.zero_point == 0, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " output 1 (hits) has scale " << hits.scale << " and zeroPoint "
      << hits.zero_point << "; the operation produces scale 1 and zeroPoint 0";
  NN_RETURN_IF_ERROR(context.SetOutputShape(0, output));
  return context.SetOutputShape(1, {context.Input(0).dim(0)});
}

int Execute(OperationContext& context) {
  const OperandInfo& lookups = context.Input(0);
  const OperandInfo& keys = context.Input(1);
  const OperandInfo& values = context.Input(2);
  const size_t count = lookups.dim(0);
  const int32_t* key_begin = keys.Data<int32_t>();
  const int32_t* key_end = key_begin + keys.dim(0);
  const size_t row =
      indexing::Product(values.dimensions, 1, values.rank()) * ElementSize(values.type);
  uint8_t* output = context.Output(0).data;
  uint8_t* hits = context.Output(1).data;
  for (size_t j = 0; j < count; ++j) {
    const int32_t key = lookups.Data<int32_t>()[j];
    const int32_t* found = std::lower_bound(key_begin, key_end, key);
    const bool hit = found != key_end && *found == key;
    hits[j] = hit ? 1 : 0;
    if (hit) {
      std::memcpy(output + j * row, values.data + static_cast<size_t>(found - key_begin) * row,
                  row);
    } else {
      std::memset(output + j * row, 0, row);
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(HASHTABLE_LOOKUP, Validate, Prepare, Execute);

}  // namespace mock_nnapi
