// SPDX-License-Identifier: Apache-2.0
// PAD, PAD_V2, MIRROR_PAD: grow a tensor by padding each dimension at both ends.
//
// All three: 0 tensor; 1 TENSOR_INT32 paddings of shape [rank, 2] (before, after per dimension,
// non-negative). Output dimension i is before_i + input_i + after_i, with the input's type, scale
// and zero point. Zero-sized inputs are rejected.
// PAD: pads with logical zero: 0 for floats, the zero point for quantised types. Rank <= 4.
//   Types: TENSOR_FLOAT32 (FL2), TENSOR_FLOAT16 (FL3), TENSOR_QUANT8_ASYMM (FL2 when the zero point
//   is 0, FL3 otherwise), TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// PAD_V2: 2 the pad value: FLOAT32 for TENSOR_FLOAT32, FLOAT16 for TENSOR_FLOAT16, and for
//   quantised types an INT32 holding a quantised value of the input's scale and zero point (the
//   mock requires it to fit the element type). Rank <= 4. Types: TENSOR_FLOAT32, TENSOR_FLOAT16,
//   TENSOR_QUANT8_ASYMM (FL3), TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// MIRROR_PAD: 2 INT32 mode, 0 = REFLECT (edge not repeated: paddings <= dim - 1) or
//   1 = SYMMETRIC (edge repeated: paddings <= dim). Types: TENSOR_FLOAT16, TENSOR_FLOAT32,
//   TENSOR_INT32, TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED.
// The kernel walks the output row by row (all dimensions but the last): a row maps to one input
// row, whose contiguous middle part is one memcpy.
#include <limits>

#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

constexpr int32_t kReflect = 0;
constexpr int32_t kSymmetric = 1;
// Marks an output index that lies in a constant padding region.
constexpr int64_t kPadding = -1;

// Input index for output index `o` along a dimension of size `dim` padded by `before`:
// kPadding for constant padding (mode < 0), mirrored for MIRROR_PAD.
int64_t SourceIndex(int64_t o, int64_t dim, int64_t before, int32_t mode) {
  const int64_t i = o - before;
  if (i >= 0 && i < dim) return i;
  if (mode == kReflect) return i < 0 ? -i : 2 * dim - 2 - i;
  if (mode == kSymmetric) return i < 0 ? -i - 1 : 2 * dim - 1 - i;
  return kPadding;
}

struct Paddings {
  std::vector<int32_t> before;
  std::vector<int32_t> after;
};

// mode: -1 for PAD/PAD_V2, otherwise the MIRROR_PAD mode.
int InferShape(const OperationContext& context, int32_t mode, int error, Paddings* paddings,
               Dimensions* output) {
  const Dimensions& input = context.Input(0).dimensions;
  const OperandInfo& operand = context.Input(1);
  NN_CHECK_GE(input.size(), 1u, error) << context.name() << " needs rank >= 1";
  NN_CHECK(operand.rank() == 2 && operand.dim(0) == input.size() && operand.dim(1) == 2, error)
      << context.name() << " paddings must have shape [" << input.size() << ", 2], not "
      << DimensionsToString(operand.dimensions);
  const std::vector<int32_t> values = shape::Int32Values(operand);
  NN_CHECK_EQ(values.size(), 2 * input.size(), error) << context.name() << " paddings size";
  paddings->before.resize(input.size());
  paddings->after.resize(input.size());
  output->resize(input.size());
  for (size_t d = 0; d < input.size(); ++d) {
    const int32_t before = values[2 * d];
    const int32_t after = values[2 * d + 1];
    NN_CHECK(before >= 0 && after >= 0, error)
        << context.name() << " paddings of dimension " << d << " must be non-negative";
    if (mode >= 0) {
      const int64_t limit = mode == kReflect ? int64_t{input[d]} - 1 : int64_t{input[d]};
      NN_CHECK(before <= limit && after <= limit, error)
          << context.name() << " paddings (" << before << ", " << after << ") of dimension " << d
          << " exceed " << limit << " for size " << input[d];
    }
    paddings->before[d] = before;
    paddings->after[d] = after;
    const uint64_t extent =
        uint64_t{input[d]} + static_cast<uint64_t>(before) + static_cast<uint64_t>(after);
    NN_CHECK_LE(extent, uint64_t{kMaxDimension}, error)
        << context.name() << " output dimension " << d << " does not fit in uint32";
    (*output)[d] = static_cast<uint32_t>(extent);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int32_t Mode(const OperationContext& context) {
  return context.type() == ANEURALNETWORKS_MIRROR_PAD ? context.InputScalar<int32_t>(2) : -1;
}

int CheckMode(const OperationContext& context, int error) {
  const int32_t mode = context.InputScalar<int32_t>(2);
  NN_CHECK(mode == kReflect || mode == kSymmetric, error)
      << context.name() << " mode " << mode << " is neither REFLECT (0) nor SYMMETRIC (1)";
  return ANEURALNETWORKS_NO_ERROR;
}

// Checks the pad value scalar of PAD_V2.
int CheckPadValue(const OperationContext& context) {
  const int32_t type = context.InputType(0);
  int32_t scalar = ANEURALNETWORKS_FLOAT32;
  if (type == ANEURALNETWORKS_TENSOR_FLOAT16) scalar = ANEURALNETWORKS_FLOAT16;
  if (IsQuantizedType(type)) scalar = ANEURALNETWORKS_INT32;
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 2, scalar));
  if (!IsQuantizedType(type) || !context.HasInputValue(2)) return ANEURALNETWORKS_NO_ERROR;
  const int32_t value = context.InputScalar<int32_t>(2);
  const bool is_signed = type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED;
  const int32_t low = is_signed ? -128 : 0;
  const int32_t high = is_signed ? 127 : 255;
  NN_CHECK(value >= low && value <= high, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " quantised pad value " << value << " is outside [" << low << ", "
      << high << "]";
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  const int32_t op = context.type();
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {op == ANEURALNETWORKS_PAD ? 2u : 3u}, 1));
  if (op == ANEURALNETWORKS_PAD) {
    const bool zero_point_zero = context.Input(0).zero_point == 0;
    NN_RETURN_IF_ERROR(shape::CheckInputTypeLevel(
        context, 0,
        {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel2},
         {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
         {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, zero_point_zero ? kFeatureLevel2 : kFeatureLevel3},
         {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  } else if (op == ANEURALNETWORKS_PAD_V2) {
    NN_RETURN_IF_ERROR(
        shape::CheckInputTypeLevel(context, 0,
                                   {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
                                    {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
                                    {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
                                    {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
    NN_RETURN_IF_ERROR(CheckPadValue(context));
  } else {
    NN_RETURN_IF_ERROR(
        shape::CheckInputTypeLevel(context, 0,
                                   {{ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel7},
                                    {ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel7},
                                    {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel7},
                                    {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel7},
                                    {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel7}}));
    NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 2, ANEURALNETWORKS_INT32));
    if (context.HasInputValue(2)) NN_RETURN_IF_ERROR(CheckMode(context, ANEURALNETWORKS_BAD_DATA));
  }
  NN_RETURN_IF_ERROR(CheckInputType(context, 1, {ANEURALNETWORKS_TENSOR_INT32}));
  NN_RETURN_IF_ERROR(shape::CheckOutputMatchesInput(context, 0, 0));
  const OperandInfo& input = context.Input(0);
  if (op != ANEURALNETWORKS_MIRROR_PAD) {
    NN_RETURN_IF_ERROR(CheckRankAtMost(context, input, 4, "input rank"));
  }
  const OperandInfo& paddings = context.Input(1);
  if (paddings.rank_known) {
    NN_CHECK(paddings.rank() == 2 && (paddings.dim(1) == 0 || paddings.dim(1) == 2),
             ANEURALNETWORKS_BAD_DATA)
        << context.name() << " paddings must have shape [rank, 2]";
    if (input.rank_known && paddings.dim(0) != 0) {
      NN_CHECK_EQ(paddings.dim(0), input.rank(), ANEURALNETWORKS_BAD_DATA)
          << context.name() << " paddings need one row per input dimension";
    }
  }
  const OperandInfo& output = context.Output(0);
  if (input.rank_known && output.rank_known && !output.dimensions.empty()) {
    NN_CHECK_EQ(output.rank(), input.rank(), ANEURALNETWORKS_BAD_DATA)
        << context.name() << " output rank must equal the input rank";
  }
  const bool mode_known = op != ANEURALNETWORKS_MIRROR_PAD || context.HasInputValue(2);
  if (!mode_known || !context.HasInputValue(1) || !shape::ShapeKnown(input)) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  Paddings values;
  Dimensions shape;
  NN_RETURN_IF_ERROR(InferShape(context, Mode(context), ANEURALNETWORKS_BAD_DATA, &values, &shape));
  return shape::CheckDeclaredOutputShape(context, 0, shape);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  if (context.type() == ANEURALNETWORKS_MIRROR_PAD) {
    NN_RETURN_IF_ERROR(CheckMode(context, ANEURALNETWORKS_OP_FAILED));
  }
  Paddings paddings;
  Dimensions output;
  NN_RETURN_IF_ERROR(
      InferShape(context, Mode(context), ANEURALNETWORKS_OP_FAILED, &paddings, &output));
  return context.SetOutputShape(0, output);
}

// The bytes of one padding element.
std::vector<uint8_t> PadValueBytes(const OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  std::vector<uint8_t> bytes(shape::ElementBytes(input), 0);
  const bool v2 = context.type() == ANEURALNETWORKS_PAD_V2;
  switch (input.type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32: {
      const float value = v2 ? context.InputScalar<float>(2) : 0.f;
      std::memcpy(bytes.data(), &value, sizeof(value));
      break;
    }
    case ANEURALNETWORKS_TENSOR_FLOAT16: {
      const Half value = v2 ? context.InputScalar<Half>(2) : Half(0.f);
      std::memcpy(bytes.data(), &value, sizeof(value));
      break;
    }
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED: {
      const int32_t value = v2 ? context.InputScalar<int32_t>(2) : input.zero_point;
      bytes[0] = static_cast<uint8_t>(value & 0xff);
      break;
    }
    default:
      break;
  }
  return bytes;
}

void Fill(uint8_t* destination, size_t count, const std::vector<uint8_t>& value) {
  const size_t size = value.size();
  if (std::all_of(value.begin(), value.end(), [](uint8_t b) { return b == 0; })) {
    std::memset(destination, 0, count * size);
    return;
  }
  for (size_t i = 0; i < count; ++i) std::memcpy(destination + i * size, value.data(), size);
}

int Execute(OperationContext& context) {
  const OperandInfo& input = context.Input(0);
  const OperandInfo& output = context.Output(0);
  const int32_t mode = Mode(context);
  Paddings paddings;
  Dimensions shape;
  NN_RETURN_IF_ERROR(InferShape(context, mode, ANEURALNETWORKS_OP_FAILED, &paddings, &shape));
  const size_t element = shape::ElementBytes(input);
  const std::vector<uint8_t> pad_value = mode < 0 ? PadValueBytes(context) : std::vector<uint8_t>();
  const uint32_t rank = input.rank();
  const std::vector<int64_t> input_strides = indexing::DenseStrides(input.dimensions);
  // Per outer dimension: the input index of each output index (kPadding in constant padding).
  std::vector<std::vector<int64_t>> maps(rank);
  for (uint32_t d = 0; d < rank; ++d) {
    maps[d].resize(output.dim(d));
    for (uint32_t o = 0; o < output.dim(d); ++o) {
      maps[d][o] = SourceIndex(o, input.dim(d), paddings.before[d], mode);
    }
  }
  const uint32_t last = rank - 1;
  const size_t row_in = input.dim(last);
  const size_t row_out = output.dim(last);
  const size_t before = static_cast<size_t>(paddings.before[last]);
  const size_t after = static_cast<size_t>(paddings.after[last]);
  const size_t rows = indexing::Product(output.dimensions, 0, last);
  std::vector<uint32_t> counter(last, 0);
  uint8_t* destination = output.data;
  for (size_t r = 0; r < rows; ++r, destination += row_out * element) {
    int64_t source_row = 0;
    bool padding_row = false;
    for (uint32_t d = 0; d < last; ++d) {
      const int64_t index = maps[d][counter[d]];
      if (index == kPadding) padding_row = true;
      source_row += index * input_strides[d];
    }
    if (padding_row) {
      Fill(destination, row_out, pad_value);
    } else {
      const uint8_t* source = input.data + source_row * static_cast<int64_t>(element);
      if (mode < 0) {
        Fill(destination, before, pad_value);
        Fill(destination + (before + row_in) * element, after, pad_value);
      } else {
        for (size_t o = 0; o < before; ++o) {
          std::memcpy(destination + o * element, source + maps[last][o] * element, element);
        }
        for (size_t o = before + row_in; o < row_out; ++o) {
          std::memcpy(destination + o * element, source + maps[last][o] * element, element);
        }
      }
      std::memcpy(destination + before * element, source, row_in * element);
    }
    for (uint32_t d = last; d-- > 0;) {
      if (++counter[d] < output.dim(d)) break;
      counter[d] = 0;
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(PAD, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(PAD_V2, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(MIRROR_PAD, Validate, Prepare, Execute);

}  // namespace mock_nnapi
