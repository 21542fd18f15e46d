// SPDX-License-Identifier: Apache-2.0
// RESHAPE, SQUEEZE, EXPAND_DIMS: operations that change the shape but not the bytes.
//
// RESHAPE: 0 tensor (rank <= 4), 1 TENSOR_INT32 1-D target shape (a constant or a model
//   input: then the output shape is only known at execution). At most one target value is -1 (that
//   dimension is inferred); the others must be positive and the element count must not change.
//   Types: TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL1), TENSOR_FLOAT16 (FL3),
//   TENSOR_QUANT8_ASYMM_SIGNED (FL4), TENSOR_INT32 (FL6).
// SQUEEZE: 0 tensor (rank <= 4), 1 optional TENSOR_INT32 1-D axes (omitted: every dimension of
//   size 1). Axes are in [-rank, rank) and must name dimensions of size 1; squeezing every
//   dimension gives shape [1]. Types: TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL2), TENSOR_FLOAT16
//   (FL3), TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// EXPAND_DIMS: 0 tensor, 1 INT32 axis in [-(rank + 1), rank]; inserts a dimension of size 1.
//   Types: TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM (FL3),
//   TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// The output keeps the input's type, scale and zero point. Zero-sized inputs are rejected (as by
// Android's CpuExecutor).
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

using shape::CheckDeclaredOutputShape;
using shape::CheckInputTypeLevel;
using shape::CheckOutputMatchesInput;
using shape::Int32Values;
using shape::ShapeKnown;

// ---- RESHAPE ---------------------------------------------------------------------------------

// Checks the target shape on its own (valid values, at most one -1).
int CheckTargetShape(const OperationContext& context, const std::vector<int32_t>& target,
                     int error) {
  int inferred = 0;
  for (int32_t value : target) {
    NN_CHECK(value == -1 || value > 0, error)
        << context.name() << " target shape values must be positive or -1, got " << value;
    if (value == -1) ++inferred;
  }
  NN_CHECK_LE(inferred, 1, error) << context.name() << " target shape has more than one -1";
  return ANEURALNETWORKS_NO_ERROR;
}

int InferReshape(const OperationContext& context, int error, Dimensions* output) {
  const std::vector<int32_t> target = Int32Values(context.Input(1));
  NN_RETURN_IF_ERROR(CheckTargetShape(context, target, error));
  const uint64_t elements = indexing::Product(context.Input(0).dimensions);
  uint64_t known = 1;
  for (int32_t value : target) known *= value == -1 ? 1 : static_cast<uint64_t>(value);
  output->assign(target.size(), 0);
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      NN_CHECK(known != 0 && elements % known == 0, error)
          << context.name() << " cannot infer the -1 dimension of the target shape: " << elements
          << " elements are not a multiple of " << known;
      (*output)[i] = static_cast<uint32_t>(elements / known);
    } else {
      (*output)[i] = static_cast<uint32_t>(target[i]);
    }
  }
  NN_CHECK_EQ(indexing::Product(*output), elements, error)
      << context.name() << " target shape " << DimensionsToString(*output)
      << " does not have the input's element count";
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateReshape(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  NN_RETURN_IF_ERROR(
      CheckInputTypeLevel(context, 0,
                          {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel1},
                           {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel1},
                           {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                           {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4},
                           {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel6}}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(CheckOutputMatchesInput(context, 0, 0));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, context.Input(0), 4, "input rank"));
  const OperandInfo& target = context.Input(1);
  if (target.rank_known) {
    NN_CHECK_EQ(target.rank(), 1u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " target shape must be 1-D";
  }
  if (!context.HasInputValue(1)) return ANEURALNETWORKS_NO_ERROR;
  NN_RETURN_IF_ERROR(CheckTargetShape(context, Int32Values(target), ANEURALNETWORKS_BAD_DATA));
  if (!ShapeKnown(context.Input(0))) return ANEURALNETWORKS_NO_ERROR;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferReshape(context, ANEURALNETWORKS_BAD_DATA, &output));
  return CheckDeclaredOutputShape(context, 0, output);
}

int PrepareReshape(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  NN_CHECK_EQ(context.Input(1).rank(), 1u, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " target shape must be 1-D";
  Dimensions output;
  NN_RETURN_IF_ERROR(InferReshape(context, ANEURALNETWORKS_OP_FAILED, &output));
  return context.SetOutputShape(0, output);
}

// ---- SQUEEZE ---------------------------------------------------------------------------------

int InferSqueeze(const OperationContext& context, int error, Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  const uint32_t rank = static_cast<uint32_t>(input.size());
  std::vector<bool> squeeze(rank, false);
  if (context.IsOmitted(1)) {
    for (uint32_t d = 0; d < rank; ++d) squeeze[d] = input[d] == 1;
  } else {
    for (int32_t axis : Int32Values(context.Input(1))) {
      uint32_t resolved = 0;
      NN_CHECK(indexing::ResolveAxis(axis, rank, &resolved), error)
          << context.name() << " axis " << axis << " is out of range for rank " << rank;
      NN_CHECK_EQ(input[resolved], 1u, error) << context.name() << " cannot squeeze dimension "
                                              << axis << " of " << DimensionsToString(input);
      squeeze[resolved] = true;
    }
  }
  output->clear();
  for (uint32_t d = 0; d < rank; ++d) {
    if (!squeeze[d]) output->push_back(input[d]);
  }
  if (output->empty()) output->push_back(1);
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateSqueeze(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  NN_RETURN_IF_ERROR(
      CheckInputTypeLevel(context, 0,
                          {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel2},
                           {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel2},
                           {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                           {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(CheckOutputMatchesInput(context, 0, 0));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, context.Input(0), 4, "input rank"));
  const OperandInfo& axes = context.Input(1);
  if (!axes.omitted && axes.rank_known) {
    NN_CHECK_EQ(axes.rank(), 1u, ANEURALNETWORKS_BAD_DATA) << context.name() << " axes must be 1-D";
  }
  const bool axes_known = context.IsOmitted(1) || context.HasInputValue(1);
  if (!axes_known || !ShapeKnown(context.Input(0))) return ANEURALNETWORKS_NO_ERROR;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferSqueeze(context, ANEURALNETWORKS_BAD_DATA, &output));
  return CheckDeclaredOutputShape(context, 0, output);
}

int PrepareSqueeze(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  Dimensions output;
  NN_RETURN_IF_ERROR(InferSqueeze(context, ANEURALNETWORKS_OP_FAILED, &output));
  return context.SetOutputShape(0, output);
}

// ---- EXPAND_DIMS -----------------------------------------------------------------------------

int InferExpandDims(const OperationContext& context, int error, Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  const int32_t axis = context.InputScalar<int32_t>(1);
  uint32_t resolved = 0;
  NN_CHECK(indexing::ResolveAxis(axis, static_cast<uint32_t>(input.size()) + 1, &resolved), error)
      << context.name() << " axis " << axis << " is out of range for rank " << input.size();
  *output = input;
  output->insert(output->begin() + resolved, 1u);
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateExpandDims(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  NN_RETURN_IF_ERROR(
      CheckInputTypeLevel(context, 0,
                          {{ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                           {ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                           {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel3},
                           {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                           {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 1, ANEURALNETWORKS_INT32));
  NN_RETURN_IF_ERROR(CheckOutputMatchesInput(context, 0, 0));
  if (!context.HasInputValue(1) || !context.Input(0).rank_known) return ANEURALNETWORKS_NO_ERROR;
  Dimensions output;
  NN_RETURN_IF_ERROR(InferExpandDims(context, ANEURALNETWORKS_BAD_DATA, &output));
  if (!ShapeKnown(context.Input(0))) return ANEURALNETWORKS_NO_ERROR;
  return CheckDeclaredOutputShape(context, 0, output);
}

int PrepareExpandDims(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  Dimensions output;
  NN_RETURN_IF_ERROR(InferExpandDims(context, ANEURALNETWORKS_OP_FAILED, &output));
  return context.SetOutputShape(0, output);
}

// The three operations keep the bytes as they are.
int ExecuteCopy(OperationContext& context) {
  shape::CopyAll(context.Input(0), context.Output(0));
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(RESHAPE, ValidateReshape, PrepareReshape, ExecuteCopy);
NN_REGISTER_OPERATION(SQUEEZE, ValidateSqueeze, PrepareSqueeze, ExecuteCopy);
NN_REGISTER_OPERATION(EXPAND_DIMS, ValidateExpandDims, PrepareExpandDims, ExecuteCopy);

}  // namespace mock_nnapi
