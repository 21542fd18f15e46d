// SPDX-License-Identifier: Apache-2.0
// CONCATENATION and PACK: join tensors along an axis.
//
// CONCATENATION: inputs 0..n-1 tensors of one type and rank (<= 4), equal except along the
//   axis; input n an INT32 axis in [0, rank) (Android's implementation rejects negative axes).
//   Output: the inputs' type, shape with the axis dimension summed.
//   Types: TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL1), TENSOR_FLOAT16 (FL3),
//   TENSOR_QUANT8_ASYMM_SIGNED (FL4). Up to FL2 quantised inputs must share the output's scale and
//   zero point; TENSOR_QUANT8_ASYMM inputs that differ need FL3 and are requantised to the output
//   (q_out = round((q_in - zp_in) * scale_in / scale_out) + zp_out, saturated), as are
//   TENSOR_QUANT8_ASYMM_SIGNED inputs. Zero-sized inputs are accepted (since FL3).
// PACK: input 0 an INT32 axis in [0, rank]; inputs 1..n tensors of identical shape
//   (rank >= 1), type, scale and zero point, all equal to the output's. Output rank is rank + 1
//   with dimension n inserted at the axis. Types: TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32,
//   TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED. Zero-sized inputs are rejected.
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

using shape::ShapeKnown;

// ---- CONCATENATION ---------------------------------------------------------------------------

int InferConcatenation(const OperationContext& context, int error, Dimensions* output) {
  const uint32_t tensors = context.InputCount() - 1;
  const Dimensions& first = context.Input(0).dimensions;
  const uint32_t rank = static_cast<uint32_t>(first.size());
  const int32_t axis = context.InputScalar<int32_t>(tensors);
  NN_CHECK(axis >= 0 && static_cast<uint32_t>(axis) < rank, error)
      << context.name() << " axis " << axis << " must be in [0, " << rank << ")";
  *output = first;
  for (uint32_t t = 1; t < tensors; ++t) {
    const Dimensions& dims = context.Input(t).dimensions;
    NN_CHECK_EQ(dims.size(), rank, error) << context.name() << " input " << t << " rank";
    for (uint32_t d = 0; d < rank; ++d) {
      if (d == static_cast<uint32_t>(axis)) {
        const uint64_t extent = uint64_t{(*output)[d]} + dims[d];
        NN_CHECK_LE(extent, uint64_t{kMaxDimension}, error)
            << context.name() << " output dimension " << d << " does not fit in uint32";
        (*output)[d] = static_cast<uint32_t>(extent);
      } else {
        NN_CHECK_EQ(dims[d], first[d], error)
            << context.name() << " input " << t << " " << DimensionsToString(dims)
            << " differs from input 0 " << DimensionsToString(first) << " outside the axis";
      }
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateConcatenation(OperationContext& context) {
  NN_CHECK_GE(context.InputCount(), 2u, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " needs at least one tensor and the axis";
  NN_CHECK_EQ(context.OutputCount(), 1u, ANEURALNETWORKS_BAD_DATA) << context.name() << " outputs";
  const uint32_t tensors = context.InputCount() - 1;
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  const int32_t type = context.InputType(0);
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  const OperandInfo& output = context.Output(0);
  bool all_known = context.HasInputValue(tensors);
  for (uint32_t t = 0; t < tensors; ++t) {
    const OperandInfo& input = context.Input(t);
    NN_CHECK_EQ(input.type, type, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input " << t << " has type " << OperandTypeName(input.type);
    NN_CHECK(!input.omitted, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input " << t << " is omitted";
    NN_RETURN_IF_ERROR(CheckRankAtMost(context, input, 4, "input rank"));
    if (type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM &&
        (input.scale != output.scale || input.zero_point != output.zero_point)) {
      context.RequireFeatureLevel(kFeatureLevel3);
    }
    all_known = all_known && ShapeKnown(input);
  }
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, tensors, ANEURALNETWORKS_INT32));
  if (!all_known) return ANEURALNETWORKS_NO_ERROR;
  Dimensions shape;
  NN_RETURN_IF_ERROR(InferConcatenation(context, ANEURALNETWORKS_BAD_DATA, &shape));
  return shape::CheckDeclaredOutputShape(context, 0, shape);
}

int PrepareConcatenation(OperationContext& context) {
  Dimensions output;
  NN_RETURN_IF_ERROR(InferConcatenation(context, ANEURALNETWORKS_OP_FAILED, &output));
  return context.SetOutputShape(0, output);
}

// Copies `count` quantised values, requantising when the parameters differ.
template <typename Q>
void CopyQuantized(const Q* source, size_t count, float scale_in, int32_t zero_in, float scale_out,
                   int32_t zero_out, Q* destination) {
  if (scale_in == scale_out && zero_in == zero_out) {
    std::memcpy(destination, source, count * sizeof(Q));
    return;
  }
  const float ratio = scale_in / scale_out;
  const float low = static_cast<float>(std::numeric_limits<Q>::min());
  const float high = static_cast<float>(std::numeric_limits<Q>::max());
  for (size_t i = 0; i < count; ++i) {
    const float value = std::round((static_cast<int32_t>(source[i]) - zero_in) * ratio) +
                        static_cast<float>(zero_out);
    destination[i] = static_cast<Q>(std::min(std::max(value, low), high));
  }
}

template <typename Q>
void ConcatenateQuantized(OperationContext& context, uint32_t axis) {
  const uint32_t tensors = context.InputCount() - 1;
  const OperandInfo& output = context.Output(0);
  const size_t outer = indexing::Product(output.dimensions, 0, axis);
  const size_t inner = indexing::Product(output.dimensions, axis + 1, output.rank());
  Q* destination = output.MutableData<Q>();
  for (size_t o = 0; o < outer; ++o) {
    for (uint32_t t = 0; t < tensors; ++t) {
      const OperandInfo& input = context.Input(t);
      const size_t chunk = static_cast<size_t>(input.dim(axis)) * inner;
      if (chunk == 0) continue;
      CopyQuantized(input.Data<Q>() + o * chunk, chunk, input.scale, input.zero_point, output.scale,
                    output.zero_point, destination);
      destination += chunk;
    }
  }
}

int ExecuteConcatenation(OperationContext& context) {
  const OperandInfo& output = context.Output(0);
  if (indexing::Product(output.dimensions) == 0) return ANEURALNETWORKS_NO_ERROR;
  const uint32_t tensors = context.InputCount() - 1;
  const uint32_t axis = static_cast<uint32_t>(context.InputScalar<int32_t>(tensors));
  switch (output.type) {
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      ConcatenateQuantized<uint8_t>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      ConcatenateQuantized<int8_t>(context, axis);
      return ANEURALNETWORKS_NO_ERROR;
    default:
      break;
  }
  const size_t element = shape::ElementBytes(output);
  const size_t outer = indexing::Product(output.dimensions, 0, axis);
  const size_t inner = indexing::Product(output.dimensions, axis + 1, output.rank()) * element;
  uint8_t* destination = output.data;
  for (size_t o = 0; o < outer; ++o) {
    for (uint32_t t = 0; t < tensors; ++t) {
      const OperandInfo& input = context.Input(t);
      const size_t chunk = static_cast<size_t>(input.dim(axis)) * inner;
      if (chunk == 0) continue;
      std::memcpy(destination, input.data + o * chunk, chunk);
      destination += chunk;
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- PACK ------------------------------------------------------------------------------------

int InferPack(const OperationContext& context, int error, Dimensions* output) {
  const Dimensions& first = context.Input(1).dimensions;
  const uint32_t rank = static_cast<uint32_t>(first.size());
  NN_CHECK_GE(rank, 1u, error) << context.name() << " inputs must have rank >= 1";
  const int32_t axis = context.InputScalar<int32_t>(0);
  NN_CHECK(axis >= 0 && static_cast<uint32_t>(axis) <= rank, error)
      << context.name() << " axis " << axis << " must be in [0, " << rank << "]";
  for (uint32_t t = 2; t < context.InputCount(); ++t) {
    NN_CHECK(context.Input(t).dimensions == first, error)
        << context.name() << " input " << t << " "
        << DimensionsToString(context.Input(t).dimensions) << " differs from input 1 "
        << DimensionsToString(first);
  }
  *output = first;
  output->insert(output->begin() + axis, context.InputCount() - 1);
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidatePack(OperationContext& context) {
  NN_CHECK_GE(context.InputCount(), 2u, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " needs the axis and at least one tensor";
  NN_CHECK_EQ(context.OutputCount(), 1u, ANEURALNETWORKS_BAD_DATA) << context.name() << " outputs";
  context.RequireFeatureLevel(kFeatureLevel6);
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 0, ANEURALNETWORKS_INT32));
  const OperandInfo& output = context.Output(0);
  const int32_t type = output.type;
  NN_CHECK(type == ANEURALNETWORKS_TENSOR_FLOAT16 || type == ANEURALNETWORKS_TENSOR_FLOAT32 ||
               type == ANEURALNETWORKS_TENSOR_INT32 ||
               type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM ||
               type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED,
           ANEURALNETWORKS_BAD_DATA)
      << context.name() << " does not support " << OperandTypeName(type);
  bool all_known = context.HasInputValue(0);
  int64_t input_rank = output.rank_known && !output.dimensions.empty()
                           ? static_cast<int64_t>(output.rank()) - 1
                           : -1;
  for (uint32_t t = 1; t < context.InputCount(); ++t) {
    const OperandInfo& input = context.Input(t);
    NN_CHECK(!input.omitted, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " input " << t << " is omitted";
    NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, t));
    if (input.rank_known && !input.dimensions.empty()) {
      if (input_rank < 0) input_rank = input.rank();
      NN_CHECK_EQ(static_cast<int64_t>(input.rank()), input_rank, ANEURALNETWORKS_BAD_DATA)
          << context.name() << " input " << t << " has inconsistent rank";
    }
    all_known = all_known && ShapeKnown(input);
  }
  if (!all_known) return ANEURALNETWORKS_NO_ERROR;
  Dimensions shape;
  NN_RETURN_IF_ERROR(InferPack(context, ANEURALNETWORKS_BAD_DATA, &shape));
  return shape::CheckDeclaredOutputShape(context, 0, shape);
}

int PreparePack(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  Dimensions output;
  NN_RETURN_IF_ERROR(InferPack(context, ANEURALNETWORKS_OP_FAILED, &output));
  return context.SetOutputShape(0, output);
}

int ExecutePack(OperationContext& context) {
  const OperandInfo& output = context.Output(0);
  const uint32_t axis = static_cast<uint32_t>(context.InputScalar<int32_t>(0));
  const Dimensions& dims = context.Input(1).dimensions;
  const size_t outer = indexing::Product(dims, 0, axis);
  const size_t chunk = indexing::Product(dims, axis, dims.size()) * shape::ElementBytes(output);
  uint8_t* destination = output.data;
  for (size_t o = 0; o < outer; ++o) {
    for (uint32_t t = 1; t < context.InputCount(); ++t) {
      std::memcpy(destination, context.Input(t).data + o * chunk, chunk);
      destination += chunk;
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(CONCATENATION, ValidateConcatenation, PrepareConcatenation,
                      ExecuteConcatenation);
NN_REGISTER_OPERATION(PACK, ValidatePack, PreparePack, ExecutePack);

}  // namespace mock_nnapi
