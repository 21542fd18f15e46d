// SPDX-License-Identifier: Apache-2.0
// Facts of the NNAPI C ABI that mock_nnapi and the tvm_nnapi runtime both need: the names and
// feature levels of the operations, operand types and result codes, expanded from the X-macro
// lists beside this file (nnapi_operations.inc, nnapi_operand_types.inc, nnapi_result_codes.inc).
// The codes themselves are the ABI header's enums (android/NeuralNetworksTypes.h); the lists
// only name them, and the checks below make a list that skips, repeats or reorders a code fail
// to compile. Header-only; no mock or tvm types.
#ifndef TVM_NNAPI_COMMON_NNAPI_FACTS_H_
#define TVM_NNAPI_COMMON_NNAPI_FACTS_H_

#include <android/NeuralNetworksTypes.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace nnapi_common {

// How an operation's work is counted: the COST column of nnapi_operations.inc. The formulas are
// in nnapi_work.h; the mock also derives its efficiency class from it (device.cc).
enum class CostKind {
  kConvolution,           // CONV_2D, GROUPED_CONV_2D
  kTransposeConvolution,  // TRANSPOSE_CONV_2D
  kDepthwiseConvolution,
  kFullyConnected,
  kMatMul,
  kPooling,         // AVERAGE_POOL_2D, MAX_POOL_2D
  kL2Pooling,       // L2_POOL_2D (a square and an add per tap)
  kElementwise,     // one operation per output element
  kTranscendental,  // four per output element (EXP, LOG, TANH, ...)
  kBilinear,        // eight per output element (four weighted taps)
  kSoftmax,
  kReduction,
  kL2Normalization,
  kInstanceNormalization,
  kLocalResponseNormalization,
  kSelection,     // TOPK_V2: a k-element heap per row
  kSampling,      // RANDOM_MULTINOMIAL: an exp per logit, a binary search per sample
  kHashing,       // LSH_PROJECTION: a fingerprint step per seed and input element
  kRecurrent,     // RNN, LSTM, SVDF and their sequence forms: the weight matrices per time step
  kDataMovement,  // no arithmetic: bytes only
  kControlFlow,   // IF, WHILE: none of their own; the mock adds what their referenced models ran
  kNotModelled,   // no formula: unimplemented operations, and data-dependent ROI and NMS work
};

// Scalars have no dimensions; quantised tensors carry a scale and a zero point.
enum class OperandKind { kScalar, kTensor, kQuantizedTensor };

struct OperationFacts {
  int32_t code;
  const char* name;  // "CONV_2D"
  int64_t feature_level;
  CostKind cost;
};

struct OperandTypeFacts {
  int32_t code;
  const char* name;  // "TENSOR_FLOAT32"
  int64_t feature_level;
  uint32_t element_bytes;
  OperandKind kind;
};

inline constexpr OperationFacts kOperations[] = {
#define NNAPI_OPERATION(NAME, LEVEL, COST) \
  {ANEURALNETWORKS_##NAME, #NAME, ANEURALNETWORKS_FEATURE_LEVEL_##LEVEL, CostKind::k##COST},
#include "nnapi_operations.inc"
};

inline constexpr OperandTypeFacts kOperandTypes[] = {
#define NNAPI_OPERAND_TYPE(NAME, LEVEL, BYTES, KIND)                            \
  {ANEURALNETWORKS_##NAME, #NAME, ANEURALNETWORKS_FEATURE_LEVEL_##LEVEL, BYTES, \
   OperandKind::k##KIND},
#include "nnapi_operand_types.inc"
};

struct ResultCodeFacts {
  int32_t code;
  const char* name;  // "BAD_DATA"
};

inline constexpr ResultCodeFacts kResultCodes[] = {
#define NNAPI_RESULT_CODE(NAME) {ANEURALNETWORKS_##NAME, #NAME},
#include "nnapi_result_codes.inc"
};

namespace facts_detail {
// Row i of a list has code i, so a row is found by indexing.
template <typename Row, size_t N>
constexpr bool CodesAreIndices(const Row (&rows)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (rows[i].code != static_cast<int32_t>(i)) return false;
  }
  return true;
}

template <typename Row, size_t N>
constexpr const Row* Find(const Row (&rows)[N], int32_t code) {
  return code >= 0 && static_cast<size_t>(code) < N ? &rows[code] : nullptr;
}

template <typename Row, size_t N>
constexpr const Row* Find(const Row (&rows)[N], std::string_view name) {
  for (const Row& row : rows) {
    if (name == row.name) return &row;
  }
  return nullptr;
}
}  // namespace facts_detail

static_assert(facts_detail::CodesAreIndices(kOperations),
              "nnapi_operations.inc: row i must be the operation with code i");
static_assert(std::size(kOperations) == ANEURALNETWORKS_REVERSE + 1,
              "nnapi_operations.inc must list every operation of NeuralNetworksTypes.h");
static_assert(facts_detail::CodesAreIndices(kOperandTypes),
              "nnapi_operand_types.inc: row i must be the operand type with code i");
static_assert(std::size(kOperandTypes) == ANEURALNETWORKS_MODEL + 1,
              "nnapi_operand_types.inc must list every operand type of NeuralNetworksTypes.h");
static_assert(facts_detail::CodesAreIndices(kResultCodes),
              "nnapi_result_codes.inc: row i must be the result code i");
static_assert(std::size(kResultCodes) == ANEURALNETWORKS_DEAD_OBJECT + 1,
              "nnapi_result_codes.inc must list every result code of NeuralNetworksTypes.h");

// The row of an operation, operand type or result code by code or by name ("CONV_2D"), or
// nullptr when the list has none (unknown codes, and the deprecated OEM codes).
constexpr const OperationFacts* FindOperationFacts(int32_t code) {
  return facts_detail::Find(kOperations, code);
}
constexpr const OperationFacts* FindOperationFacts(std::string_view name) {
  return facts_detail::Find(kOperations, name);
}
constexpr const OperandTypeFacts* FindOperandTypeFacts(int32_t code) {
  return facts_detail::Find(kOperandTypes, code);
}
constexpr const OperandTypeFacts* FindOperandTypeFacts(std::string_view name) {
  return facts_detail::Find(kOperandTypes, name);
}
constexpr const ResultCodeFacts* FindResultCodeFacts(int32_t code) {
  return facts_detail::Find(kResultCodes, code);
}

}  // namespace nnapi_common

#endif  // TVM_NNAPI_COMMON_NNAPI_FACTS_H_
