// SPDX-License-Identifier: Apache-2.0
// Index arithmetic shared by the operation kernels: axes in [-rank, rank) (and an axis input),
// element counts of dimension ranges, a tensor seen as [outer, axis, inner], row-major strides. The
// one home of these helpers (shape_helpers.h, axis_helpers.h and elementwise_helpers.h build on
// them).
//
// Everything lives in namespace indexing so that helpers of operation files cannot collide with
// these inline definitions.
#ifndef MOCK_NNAPI_SRC_OPS_INDEX_HELPERS_H_
#define MOCK_NNAPI_SRC_OPS_INDEX_HELPERS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../operation.h"

namespace mock_nnapi {
namespace indexing {

// Maps an axis in [-rank, rank) to [0, rank); false when out of range.
inline bool ResolveAxis(int32_t axis, uint32_t rank, uint32_t* resolved) {
  const int64_t value = axis < 0 ? static_cast<int64_t>(axis) + rank : axis;
  if (value < 0 || value >= static_cast<int64_t>(rank)) return false;
  *resolved = static_cast<uint32_t>(value);
  return true;
}

// The axis scalar input i (optional, default -1) resolved against the rank of input 0; fails
// with `error` (BAD_DATA while validating, OP_FAILED later) when it lies outside [-rank, rank).
inline int ReadAxisInput(const OperationContext& context, uint32_t i, int error, uint32_t* axis) {
  const uint32_t rank = context.Input(0).rank();
  const int32_t value =
      i < context.InputCount() && !context.IsOmitted(i) ? context.InputScalar<int32_t>(i) : -1;
  NN_CHECK(ResolveAxis(value, rank, axis), error)
      << context.name() << " axis " << value << " is outside [-" << rank << ", " << rank << ")";
  return ANEURALNETWORKS_NO_ERROR;
}

// Product of dimensions [begin, end) (indices past the rank count as 1), and of all of them
// (the element count; 1 for a scalar).
inline size_t Product(const Dimensions& dimensions, size_t begin, size_t end) {
  size_t product = 1;
  for (size_t i = begin; i < end && i < dimensions.size(); ++i) product *= dimensions[i];
  return product;
}
inline size_t Product(const Dimensions& dimensions) {
  return Product(dimensions, 0, dimensions.size());
}

// A tensor seen as [outer, axis, inner] around dimension `axis`.
struct AxisSplit {
  size_t outer = 1;
  size_t axis = 1;
  size_t inner = 1;
};

inline AxisSplit SplitAtAxis(const Dimensions& dimensions, uint32_t axis) {
  AxisSplit split;
  split.outer = Product(dimensions, 0, axis);
  if (axis < dimensions.size()) split.axis = dimensions[axis];
  split.inner = Product(dimensions, size_t{axis} + 1, dimensions.size());
  return split;
}

// Row-major element strides of a dense tensor.
inline std::vector<int64_t> DenseStrides(const Dimensions& dimensions) {
  std::vector<int64_t> strides(dimensions.size(), 1);
  for (size_t i = dimensions.size(); i-- > 1;) strides[i - 1] = strides[i] * dimensions[i];
  return strides;
}

}  // namespace indexing
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_INDEX_HELPERS_H_
