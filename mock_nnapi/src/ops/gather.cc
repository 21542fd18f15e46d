// SPDX-License-Identifier: Apache-2.0
// GATHER and EMBEDDING_LOOKUP: select slices of a tensor by index.
//
// GATHER: 0 tensor (rank n); 1 INT32 axis in [-n, n); 2 TENSOR_INT32 indices (rank k), each in
//   [0, input.dims[axis]) (an index out of range fails the execution; a constant one fails
//   validation). Output shape input.dims[:axis] + indices.dims + input.dims[axis+1:].
//   Types: TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM (FL3),
//   TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// EMBEDDING_LOOKUP: 0 lookups, TENSOR_INT32 1-D [k], each in [0, values.dims[0]); 1 values
//   (rank >= 2). Output [k, values.dims[1:]].
//   Types of values: TENSOR_FLOAT32 (FL1), TENSOR_INT32, TENSOR_QUANT8_ASYMM (FL3),
//   TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// The output keeps the data tensor's type, scale and zero point. Zero-sized inputs are rejected.
// Each selected slice is one memcpy.
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

using shape::ShapeKnown;

// Checks that every index is in [0, limit).
int CheckIndices(const OperationContext& context, const OperandInfo& indices, uint32_t limit,
                 int error) {
  const size_t count = indexing::Product(indices.dimensions);
  const int32_t* values = indices.Data<int32_t>();
  for (size_t i = 0; i < count; ++i) {
    NN_CHECK(values[i] >= 0 && static_cast<uint32_t>(values[i]) < limit, error)
        << context.name() << " index " << values[i] << " is out of range [0, " << limit << ")";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Copies, for each of `outer` blocks, the `inner`-byte slices selected by `indices` out of
// `axis_size` slices.
void GatherSlices(const uint8_t* source, size_t outer, size_t axis_size, size_t inner,
                  const int32_t* indices, size_t count, uint8_t* destination) {
  for (size_t o = 0; o < outer; ++o) {
    const uint8_t* block = source + o * axis_size * inner;
    for (size_t i = 0; i < count; ++i) {
      std::memcpy(destination, block + static_cast<size_t>(indices[i]) * inner, inner);
      destination += inner;
    }
  }
}

// ---- GATHER ----------------------------------------------------------------------------------

int InferGather(const OperationContext& context, int error, uint32_t* axis, Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  NN_RETURN_IF_ERROR(indexing::ReadAxisInput(context, 1, error, axis));
  const Dimensions& indices = context.Input(2).dimensions;
  output->assign(input.begin(), input.begin() + *axis);
  output->insert(output->end(), indices.begin(), indices.end());
  output->insert(output->end(), input.begin() + *axis + 1, input.end());
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateGather(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {3}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 1, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(CheckInputType(context, 2, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  const OperandInfo& input = context.Input(0);
  const OperandInfo& indices = context.Input(2);
  if (!context.HasInputValue(1) || !ShapeKnown(input) || !ShapeKnown(indices)) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  uint32_t axis = 0;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferGather(context, ANEURALNETWORKS_BAD_DATA, &axis, &output));
  if (context.HasInputValue(2)) {
    NN_RETURN_IF_ERROR(CheckIndices(context, indices, input.dim(axis), ANEURALNETWORKS_BAD_DATA));
  }
  return shape::CheckDeclaredOutputShape(context, 0, output);
}

int PrepareGather(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  uint32_t axis = 0;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferGather(context, ANEURALNETWORKS_OP_FAILED, &axis, &output));
  return context.SetOutputShape(0, output);
}

int ExecuteGather(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& indices = context.Input(2);
  uint32_t axis = 0;
  indexing::ResolveAxis(context.InputScalar<int32_t>(1), input.rank(), &axis);
  NN_RETURN_IF_ERROR(CheckIndices(context, indices, input.dim(axis), ANEURALNETWORKS_OP_FAILED));
  GatherSlices(
      input.data, indexing::Product(input.dimensions, 0, axis), input.dim(axis),
      indexing::Product(input.dimensions, axis + 1, input.rank()) * shape::ElementBytes(input),
      indices.Data<int32_t>(), indexing::Product(indices.dimensions), context.Output(0).data);
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- EMBEDDING_LOOKUP ------------------------------------------------------------------------

int InferEmbeddingLookup(const OperationContext& context, int error, Dimensions* output) {
  const Dimensions& lookups = context.Input(0).dimensions;
  const Dimensions& values = context.Input(1).dimensions;
  NN_CHECK_EQ(lookups.size(), 1u, error) << context.name() << " lookups must be 1-D";
  NN_CHECK_GE(values.size(), 2u, error) << context.name() << " values must have rank >= 2";
  *output = values;
  (*output)[0] = lookups[0];
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateEmbeddingLookup(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  NN_RETURN_IF_ERROR(CheckInputType(context, 0, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 1,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel4},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 1));
  const OperandInfo& lookups = context.Input(0);
  const OperandInfo& values = context.Input(1);
  if (lookups.rank_known) {
    NN_CHECK_EQ(lookups.rank(), 1u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " lookups must be 1-D";
  }
  if (values.rank_known) {
    NN_CHECK_GE(values.rank(), 2u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " values must have rank >= 2";
  }
  if (!ShapeKnown(lookups) || !ShapeKnown(values)) return ANEURALNETWORKS_NO_ERROR;
  if (context.HasInputValue(0)) {
    NN_RETURN_IF_ERROR(CheckIndices(context, lookups, values.dim(0), ANEURALNETWORKS_BAD_DATA));
  }
  Dimensions output;
  NN_RETURN_IF_ERROR(InferEmbeddingLookup(context, ANEURALNETWORKS_BAD_DATA, &output));
  return shape::CheckDeclaredOutputShape(context, 0, output);
}

int PrepareEmbeddingLookup(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  Dimensions output;
  NN_RETURN_IF_ERROR(InferEmbeddingLookup(context, ANEURALNETWORKS_OP_FAILED, &output));
  return context.SetOutputShape(0, output);
}

int ExecuteEmbeddingLookup(OperationContext& context) {
  const OperandInfo& lookups = context.Input(0);
  const OperandInfo& values = context.Input(1);
  NN_RETURN_IF_ERROR(CheckIndices(context, lookups, values.dim(0), ANEURALNETWORKS_OP_FAILED));
  GatherSlices(values.data, 1, values.dim(0),
               indexing::Product(values.dimensions, 1, values.rank()) * shape::ElementBytes(values),
               lookups.Data<int32_t>(), lookups.dim(0), context.Output(0).data);
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(GATHER, ValidateGather, PrepareGather, ExecuteGather);
NN_REGISTER_OPERATION(EMBEDDING_LOOKUP, ValidateEmbeddingLookup, PrepareEmbeddingLookup,
                      ExecuteEmbeddingLookup);

}  // namespace mock_nnapi
