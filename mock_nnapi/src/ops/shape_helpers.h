// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the data-movement operations (reshape.cc, transpose.cc, concatenation.cc,
// split.cc, tile.cc, slice.cc, gather.cc, pad.cc, reverse.cc, fill_rank.cc, resize.cc,
// depth_space.cc, channel_shuffle.cc), on top of common.h and index_helpers.h.
//
// Conventions of these operations:
//   * validate() checks counts, types (raising the feature level per type), the quantisation of the
//     output, and, when the input shapes and the constant arguments are known, the output shape
//     (BAD_DATA). Android checks some of these only at execution; the mock reports them when the
//     operation is added, where the model author can still fix them.
//   * prepare() recomputes the output shape from the concrete inputs (OP_FAILED on a bad argument)
//     and rejects zero-sized inputs unless the operation accepts them (Android's CpuExecutor
//     rejects them for every operation not registered with allowZeroSizedInput; of these
//     operations only CONCATENATION, SLICE, TRANSPOSE and RESIZE_* accept them).
//   * execute() moves bytes: the kernels are type-agnostic where possible (element size only) and
//     copy contiguous runs with memcpy.
#ifndef MOCK_NNAPI_SRC_OPS_SHAPE_HELPERS_H_
#define MOCK_NNAPI_SRC_OPS_SHAPE_HELPERS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "common.h"
#include "index_helpers.h"

namespace mock_nnapi {

// Largest NNAPI dimension: output shapes computed from inputs and arguments are checked against it
// in 64-bit arithmetic instead of wrapping around.
constexpr uint32_t kMaxDimension = 0xFFFFFFFFu;

namespace shape {

// The shared type/feature-level check (operation.h).
using ::mock_nnapi::CheckInputTypeLevel;
using ::mock_nnapi::TypeLevel;

// Checks that the scalar input `i` has `type` (and, when its value is known, that it is not
// omitted).
inline int CheckScalarInput(const OperationContext& context, uint32_t i, int32_t type) {
  NN_CHECK_EQ(context.InputType(i), type, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " input " << i << " must be " << OperandTypeName(type) << ", not "
      << OperandTypeName(context.InputType(i));
  NN_CHECK(!context.IsOmitted(i), ANEURALNETWORKS_BAD_DATA)
      << context.name() << " input " << i << " is not optional";
  return ANEURALNETWORKS_NO_ERROR;
}

// Output `output` must have the type of input `input` and, for quantised types, the same scale
// and zero point (the rule of every operation that only moves data).
inline int CheckOutputMatchesInput(const OperationContext& context, uint32_t output,
                                   uint32_t input) {
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, output, input));
  const OperandInfo& in = context.Input(input);
  const OperandInfo& out = context.Output(output);
  if (IsQuantizedType(in.type)) {
    NN_CHECK(out.scale == in.scale && out.zero_point == in.zero_point, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " output " << output << " quantisation (" << out.scale << ", "
        << out.zero_point << ") must equal input " << input << "'s (" << in.scale << ", "
        << in.zero_point << ")";
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// True when the operand's rank and all of its dimensions are known.
inline bool ShapeKnown(const OperandInfo& operand) {
  return operand.rank_known && !HasUnknownDimension(operand.dimensions);
}

// Inputs 0, 1, ... have the ranks `ranks` wherever their rank is known (BAD_DATA otherwise).
inline int CheckInputRanks(const OperationContext& context, std::initializer_list<uint32_t> ranks) {
  uint32_t i = 0;
  for (uint32_t rank : ranks) {
    const OperandInfo& input = context.Input(i);
    if (input.rank_known) {
      NN_CHECK_EQ(input.rank(), rank, ANEURALNETWORKS_BAD_DATA)
          << context.name() << " input " << i << " rank";
    }
    ++i;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// True when inputs 0 .. count - 1 all have known shapes (validation stops until then).
inline bool InputShapesKnown(const OperationContext& context, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    if (!ShapeKnown(context.Input(i))) return false;
  }
  return true;
}

// Prepare: fails for a zero-sized tensor input (Android's checkNoZeroSizedInput).
inline int CheckNoZeroSizedInputs(const OperationContext& context) {
  for (uint32_t i = 0; i < context.InputCount(); ++i) {
    const OperandInfo& input = context.Input(i);
    if (input.omitted || !IsTensorType(input.type)) continue;
    for (uint32_t dimension : input.dimensions) {
      NN_CHECK(dimension != 0, ANEURALNETWORKS_OP_FAILED)
          << context.name() << " does not accept zero-sized input " << i << " "
          << DimensionsToString(input.dimensions);
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Validate: a shape computed from known inputs must agree with the declared output shape (unknown
// rank or dimensions agree with anything).
inline int CheckDeclaredOutputShape(const OperationContext& context, uint32_t i,
                                    const Dimensions& computed) {
  const OperandInfo& output = context.Output(i);
  if (!output.rank_known || output.dimensions.empty()) return ANEURALNETWORKS_NO_ERROR;
  bool agrees = output.dimensions.size() == computed.size();
  for (size_t d = 0; agrees && d < computed.size(); ++d) {
    agrees = output.dimensions[d] == 0 || output.dimensions[d] == computed[d];
  }
  NN_CHECK(agrees, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output " << i << " is declared "
      << DimensionsToString(output.dimensions) << " but the operation produces "
      << DimensionsToString(computed);
  return ANEURALNETWORKS_NO_ERROR;
}

// The values of an INT32 tensor input whose value is known (constant, or any input after
// validation).
inline std::vector<int32_t> Int32Values(const OperandInfo& operand) {
  std::vector<int32_t> values(operand.length / sizeof(int32_t));
  if (!values.empty()) std::memcpy(values.data(), operand.data, values.size() * sizeof(int32_t));
  return values;
}

// Copies `count` elements of `element_size` bytes, `stride` elements apart in the source, to a
// dense destination.
inline void CopyStridedRun(const uint8_t* source, int64_t stride, size_t count, size_t element_size,
                           uint8_t* destination) {
  if (stride == 1) {
    std::memcpy(destination, source, count * element_size);
    return;
  }
  const int64_t step = stride * static_cast<int64_t>(element_size);
  switch (element_size) {
    case 1:
      for (size_t i = 0; i < count; ++i, source += step) destination[i] = *source;
      return;
    case 2:
      for (size_t i = 0; i < count; ++i, source += step)
        std::memcpy(destination + 2 * i, source, 2);
      return;
    case 4:
      for (size_t i = 0; i < count; ++i, source += step)
        std::memcpy(destination + 4 * i, source, 4);
      return;
    default:
      for (size_t i = 0; i < count; ++i, source += step) {
        std::memcpy(destination + element_size * i, source, element_size);
      }
  }
}

// Copies a strided view of `source` into the dense row-major `destination`:
//
//   destination[i_0, ..., i_{r-1}] = source[offset + sum_k i_k * strides[k]]
//
// (offset and strides in elements; strides may be negative or zero). Transpose, slices, reverse,
// tile and the depth/space rearrangements are all such views. Adjacent dimensions that are also
// adjacent in the source are merged first, so the innermost copies are as long as possible.
inline void CopyView(const uint8_t* source, size_t element_size, int64_t offset,
                     const Dimensions& dimensions, const std::vector<int64_t>& strides,
                     uint8_t* destination) {
  std::vector<size_t> dims;
  std::vector<int64_t> steps;
  for (size_t k = 0; k < dimensions.size(); ++k) {
    if (dimensions[k] == 0) return;
    if (dimensions[k] == 1) continue;
    if (!dims.empty() && steps.back() == strides[k] * static_cast<int64_t>(dimensions[k])) {
      dims.back() *= dimensions[k];
      steps.back() = strides[k];
    } else {
      dims.push_back(dimensions[k]);
      steps.push_back(strides[k]);
    }
  }
  const uint8_t* base = source + offset * static_cast<int64_t>(element_size);
  if (dims.empty()) {
    std::memcpy(destination, base, element_size);
    return;
  }
  const size_t rank = dims.size();
  const size_t inner = dims[rank - 1];
  const int64_t inner_step = steps[rank - 1];
  const size_t inner_bytes = inner * element_size;
  std::vector<size_t> counter(rank, 0);
  int64_t position = 0;  // in elements, relative to base
  size_t outer = 1;
  for (size_t d = 0; d + 1 < rank; ++d) outer *= dims[d];
  for (size_t row = 0; row < outer; ++row) {
    CopyStridedRun(base + position * static_cast<int64_t>(element_size), inner_step, inner,
                   element_size, destination);
    destination += inner_bytes;
    for (size_t d = rank - 1; d-- > 0;) {
      position += steps[d];
      if (++counter[d] < dims[d]) break;
      position -= steps[d] * static_cast<int64_t>(dims[d]);
      counter[d] = 0;
    }
  }
}

// Byte size of the element type of a tensor operand.
inline size_t ElementBytes(const OperandInfo& operand) { return ElementSize(operand.type); }

// Copies a whole input to an output of the same byte size (RESHAPE, SQUEEZE, EXPAND_DIMS).
inline void CopyAll(const OperandInfo& input, const OperandInfo& output) {
  const size_t bytes = indexing::Product(input.dimensions) * ElementBytes(input);
  if (bytes != 0 && input.data != output.data) std::memmove(output.data, input.data, bytes);
}

}  // namespace shape
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_SHAPE_HELPERS_H_
