// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the elementwise operation family (unary.cc, activations.cc,
// elementwise_binary.cc, comparisons.cc, select.cc, cast_quantize.cc), on top of common.h.
#ifndef MOCK_NNAPI_SRC_OPS_ELEMENTWISE_HELPERS_H_
#define MOCK_NNAPI_SRC_OPS_ELEMENTWISE_HELPERS_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

#include "common.h"
#include "index_helpers.h"

namespace mock_nnapi {
namespace elementwise {

// The shared type/feature-level check (operation.h).
using ::mock_nnapi::CheckInputTypeLevel;
using ::mock_nnapi::TypeLevel;

// Checks that input `i` has the same type as input `reference`.
inline int CheckInputTypeMatches(const OperationContext& context, uint32_t i, uint32_t reference) {
  NN_CHECK_EQ(context.InputType(i), context.InputType(reference), ANEURALNETWORKS_BAD_DATA)
      << context.name() << " input " << i << " has type " << OperandTypeName(context.InputType(i))
      << " but input " << reference << " has " << OperandTypeName(context.InputType(reference));
  return ANEURALNETWORKS_NO_ERROR;
}

// Checks that output `i` has type `type`.
inline int CheckOutputType(const OperationContext& context, uint32_t i, int32_t type) {
  NN_CHECK_EQ(context.Output(i).type, type, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output " << i << " has type "
      << OperandTypeName(context.Output(i).type) << "; expected " << OperandTypeName(type);
  return ANEURALNETWORKS_NO_ERROR;
}

// Validation-time broadcast check of two inputs, when both shapes are fully known.
inline int CheckBroadcastableIfKnown(const OperationContext& context, uint32_t a, uint32_t b) {
  const OperandInfo& x = context.Input(a);
  const OperandInfo& y = context.Input(b);
  if (!x.IsFullySpecified() || !y.IsFullySpecified()) return ANEURALNETWORKS_NO_ERROR;
  Dimensions out;
  NN_CHECK(BroadcastShapes(x.dimensions, y.dimensions, &out), ANEURALNETWORKS_BAD_DATA)
      << context.name() << " cannot broadcast " << DimensionsToString(x.dimensions) << " with "
      << DimensionsToString(y.dimensions);
  return ANEURALNETWORKS_NO_ERROR;
}

// Run-time checks of Android's CPU executor before an operation runs: no input may be omitted
// (checkNoOmittedOperand), and no input may have a zero dimension unless the operation is
// registered with allowZeroSizedInput (checkNoZeroSizedInput). Failures are OP_FAILED.
inline int CheckRunnableInputs(const OperationContext& context, bool allow_zero_sized) {
  for (uint32_t i = 0; i < context.InputCount(); ++i) {
    NN_CHECK(!context.IsOmitted(i), ANEURALNETWORKS_OP_FAILED)
        << context.name() << " input " << i << " is required but omitted";
    if (allow_zero_sized || !IsTensorType(context.InputType(i))) continue;
    for (uint32_t dimension : context.Input(i).dimensions) {
      NN_CHECK_NE(dimension, 0u, ANEURALNETWORKS_OP_FAILED)
          << context.name() << " does not support zero-sized input " << i << " "
          << DimensionsToString(context.Input(i).dimensions);
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Run-time rank check (the rank may have been unknown during validation).
inline int CheckPreparedRankAtMost(const OperationContext& context, uint32_t i, uint32_t rank) {
  NN_CHECK_LE(context.Input(i).rank(), rank, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " input " << i << " rank";
  return ANEURALNETWORKS_NO_ERROR;
}

// An operation that fixes its output quantisation: the declared output must carry exactly those
// parameters. Android's CPU executor compares them when the output shape is set and fails the
// execution with OP_FAILED on a mismatch.
inline int CheckOutputQuantization(const OperationContext& context, uint32_t i, float scale,
                                   int32_t zero_point) {
  const OperandInfo& output = context.Output(i);
  NN_CHECK(output.scale == scale && output.zero_point == zero_point, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " output " << i << " has scale " << output.scale << " and zeroPoint "
      << output.zero_point << "; the operation produces scale " << scale << " and zeroPoint "
      << zero_point;
  return ANEURALNETWORKS_NO_ERROR;
}

// Output 0 takes the shape of input `i`.
inline int PrepareSameShape(OperationContext& context, uint32_t i = 0) {
  return context.SetOutputShape(0, context.Input(i).dimensions);
}

// Output 0 takes the broadcast shape of inputs a and b.
inline int PrepareBroadcast(OperationContext& context, uint32_t a, uint32_t b) {
  const OperandInfo& x = context.Input(a);
  const OperandInfo& y = context.Input(b);
  Dimensions out;
  NN_CHECK(BroadcastShapes(x.dimensions, y.dimensions, &out), ANEURALNETWORKS_OP_FAILED)
      << context.name() << " cannot broadcast " << DimensionsToString(x.dimensions) << " with "
      << DimensionsToString(y.dimensions);
  return context.SetOutputShape(0, out);
}

// Quantises a real result the way Android's reference kernels do: zero_point + round(value /
// scale) (ties away from zero), saturated to Q's range; NaN saturates to the maximum like
// std::min(max, NaN) does there.
template <typename Q>
inline Q QuantizeResult(float value, float scale, int32_t zero_point) {
  if (std::isnan(value)) return std::numeric_limits<Q>::max();
  return Quantize<Q>(value, scale, zero_point);
}

// Re-expresses a quantised value in another scale and zero point.
template <typename Q>
inline Q Requantize(Q value, const OperandInfo& from, const OperandInfo& to) {
  return QuantizeResult<Q>(Dequantize(value, from.scale, from.zero_point), to.scale, to.zero_point);
}

// Calls body(T{}) with T the C++ element type of a floating-point tensor type; false otherwise.
template <typename Body>
bool DispatchFloat(int32_t type, Body&& body) {
  switch (type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      body(float{});
      return true;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      body(Half{});
      return true;
    default:
      return false;
  }
}

// Calls body(Q{}) with Q the C++ element type of an asymmetric 8-bit quantised tensor type.
template <typename Body>
bool DispatchQuant8(int32_t type, Body&& body) {
  switch (type) {
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      body(uint8_t{});
      return true;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      body(int8_t{});
      return true;
    default:
      return false;
  }
}

// A kernel argument of Dispatch that runs for none of its types.
struct NoKernel {};

namespace internal {

template <typename Kernel, typename Tag>
bool RunTyped(const Kernel& kernel, Tag tag) {
  kernel(tag);
  return true;
}
template <typename Tag>
bool RunTyped(const NoKernel&, Tag) {
  return false;
}

template <typename Kernel>
bool RunUntyped(const Kernel& kernel) {
  kernel();
  return true;
}
inline bool RunUntyped(const NoKernel&) { return false; }

}  // namespace internal

// The one dispatch of an elementwise operation on the element type `type` of its tensors: runs
// float_kernel(T{}) for TENSOR_FLOAT32 (float) and TENSOR_FLOAT16 (Half), quant8_kernel(Q{}) for
// TENSOR_QUANT8_ASYMM (uint8_t) and TENSOR_QUANT8_ASYMM_SIGNED (int8_t), int32_kernel() for
// TENSOR_INT32 and bool8_kernel() for TENSOR_BOOL8; a kernel left out (NoKernel) runs for none of
// its types. Returns NO_ERROR, or OP_FAILED ("<operation>: unsupported type <type>") when no
// kernel runs (validation refuses those types before an execution).
template <typename Float, typename Quant8 = NoKernel, typename Int32 = NoKernel,
          typename Bool8 = NoKernel>
int Dispatch(const OperationContext& context, int32_t type, const Float& float_kernel,
             const Quant8& quant8_kernel = {}, const Int32& int32_kernel = {},
             const Bool8& bool8_kernel = {}) {
  bool ran = false;
  if (!DispatchFloat(type, [&](auto tag) { ran = internal::RunTyped(float_kernel, tag); }) &&
      !DispatchQuant8(type, [&](auto tag) { ran = internal::RunTyped(quant8_kernel, tag); })) {
    if (type == ANEURALNETWORKS_TENSOR_INT32) ran = internal::RunUntyped(int32_kernel);
    if (type == ANEURALNETWORKS_TENSOR_BOOL8) ran = internal::RunUntyped(bool8_kernel);
  }
  if (ran) return ANEURALNETWORKS_NO_ERROR;
  NN_FAIL(ANEURALNETWORKS_OP_FAILED)
      << context.name() << ": unsupported type " << OperandTypeName(type);
}

}  // namespace elementwise
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_ELEMENTWISE_HELPERS_H_
