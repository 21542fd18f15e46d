// SPDX-License-Identifier: Apache-2.0
#include "operand_types.h"

#include <limits>
#include <sstream>

#include "check.h"
#include "nnapi_facts.h"

namespace mock_nnapi {

// The facts of each operand type are rows of common/nnapi_operand_types.inc; only the
// deprecated OEM codes (NeuralNetworksOEM.h), which the list leaves out, are spelt out here.

bool IsKnownOperandType(int32_t type) {
  return nnapi_common::FindOperandTypeFacts(type) != nullptr ||
         type == ANEURALNETWORKS_OEM_SCALAR || type == ANEURALNETWORKS_TENSOR_OEM_BYTE;
}

bool IsScalarType(int32_t type) {
  if (type == ANEURALNETWORKS_OEM_SCALAR) return true;
  const nnapi_common::OperandTypeFacts* facts = nnapi_common::FindOperandTypeFacts(type);
  return facts != nullptr && facts->kind == nnapi_common::OperandKind::kScalar;
}

bool IsTensorType(int32_t type) { return IsKnownOperandType(type) && !IsScalarType(type); }

bool IsQuantizedType(int32_t type) {
  const nnapi_common::OperandTypeFacts* facts = nnapi_common::FindOperandTypeFacts(type);
  return facts != nullptr && facts->kind == nnapi_common::OperandKind::kQuantizedTensor;
}

size_t ElementSize(int32_t type) {
  if (type == ANEURALNETWORKS_TENSOR_OEM_BYTE) return 1;
  // MODEL, OEM_SCALAR (its size is given by the value) and unknown codes: 0.
  const nnapi_common::OperandTypeFacts* facts = nnapi_common::FindOperandTypeFacts(type);
  return facts == nullptr ? 0 : facts->element_bytes;
}

int64_t OperandTypeFeatureLevel(int32_t type) {
  const nnapi_common::OperandTypeFacts* facts = nnapi_common::FindOperandTypeFacts(type);
  return facts == nullptr ? kFeatureLevel1 : facts->feature_level;  // OEM codes: FL1
}

namespace {
std::string UnknownName(int code) { return "UNKNOWN(" + std::to_string(code) + ")"; }
}  // namespace

std::string OperandTypeName(int32_t type) {
  if (type == ANEURALNETWORKS_OEM_SCALAR) return "OEM_SCALAR";
  if (type == ANEURALNETWORKS_TENSOR_OEM_BYTE) return "TENSOR_OEM_BYTE";
  const nnapi_common::OperandTypeFacts* facts = nnapi_common::FindOperandTypeFacts(type);
  return facts != nullptr ? facts->name : UnknownName(type);
}

std::string OperationTypeName(int32_t type) {
  if (type == ANEURALNETWORKS_OEM_OPERATION) return "OEM_OPERATION";
  const nnapi_common::OperationFacts* facts = nnapi_common::FindOperationFacts(type);
  return facts != nullptr ? facts->name : UnknownName(type);
}

std::string ResultCodeName(int code) {
  const nnapi_common::ResultCodeFacts* facts = nnapi_common::FindResultCodeFacts(code);
  return facts != nullptr ? facts->name : UnknownName(code);
}

std::optional<uint64_t> ElementCount(const Dimensions& dimensions) {
  uint64_t count = 1;
  for (uint32_t dimension : dimensions) {
    if (dimension == 0) return std::nullopt;
    if (count > std::numeric_limits<uint64_t>::max() / dimension) return std::nullopt;
    count *= dimension;
  }
  return count;
}

std::optional<size_t> ByteSize(int32_t type, const Dimensions& dimensions) {
  const size_t element_size = ElementSize(type);
  if (element_size == 0) return std::nullopt;
  if (IsScalarType(type)) return element_size;
  std::optional<uint64_t> count = ElementCount(dimensions);
  if (!count.has_value() || dimensions.empty()) return std::nullopt;
  if (*count > std::numeric_limits<size_t>::max() / element_size) return std::nullopt;
  return static_cast<size_t>(*count * element_size);
}

bool HasUnknownDimension(const Dimensions& dimensions) {
  for (uint32_t dimension : dimensions) {
    if (dimension == 0) return true;
  }
  return false;
}

std::string DimensionsToString(const Dimensions& dimensions) {
  std::ostringstream stream;
  stream << "[";
  for (size_t i = 0; i < dimensions.size(); ++i) {
    stream << (i ? ", " : "") << dimensions[i];
  }
  stream << "]";
  return stream.str();
}

int ValidateQuantizationParameters(int32_t type, float scale, int32_t zero_point) {
  const std::string name = OperandTypeName(type);
  switch (type) {
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      NN_CHECK(scale > 0.f, ANEURALNETWORKS_BAD_DATA) << name << " needs scale > 0";
      NN_CHECK(zero_point >= 0 && zero_point <= 255, ANEURALNETWORKS_BAD_DATA)
          << name << " zeroPoint " << zero_point << " outside [0, 255]";
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      NN_CHECK(scale > 0.f, ANEURALNETWORKS_BAD_DATA) << name << " needs scale > 0";
      NN_CHECK(zero_point >= -128 && zero_point <= 127, ANEURALNETWORKS_BAD_DATA)
          << name << " zeroPoint " << zero_point << " outside [-128, 127]";
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT16_ASYMM:
      NN_CHECK(scale > 0.f, ANEURALNETWORKS_BAD_DATA) << name << " needs scale > 0";
      NN_CHECK(zero_point >= 0 && zero_point <= 65535, ANEURALNETWORKS_BAD_DATA)
          << name << " zeroPoint " << zero_point << " outside [0, 65535]";
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM:
    case ANEURALNETWORKS_TENSOR_QUANT16_SYMM:
      NN_CHECK(scale > 0.f, ANEURALNETWORKS_BAD_DATA) << name << " needs scale > 0";
      NN_CHECK_EQ(zero_point, 0, ANEURALNETWORKS_BAD_DATA) << name << " needs zeroPoint 0";
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_INT32:
      // Android accepts any scale and zero point on TENSOR_INT32 (quantised biases carry a
      // scale; the runtime never checked the rest).
    case ANEURALNETWORKS_OEM_SCALAR:
    case ANEURALNETWORKS_TENSOR_OEM_BYTE:
      return ANEURALNETWORKS_NO_ERROR;
    default:
      NN_CHECK_EQ(scale, 0.f, ANEURALNETWORKS_BAD_DATA) << name << " needs scale 0";
      NN_CHECK_EQ(zero_point, 0, ANEURALNETWORKS_BAD_DATA) << name << " needs zeroPoint 0";
      return ANEURALNETWORKS_NO_ERROR;
  }
}

int ValidateOperandType(const ANeuralNetworksOperandType& type, bool allow_partial,
                        const char* tag) {
  NN_CHECK((type.dimensionCount == 0) == (type.dimensions == nullptr), ANEURALNETWORKS_BAD_DATA)
      << tag << ": dimensionCount " << type.dimensionCount << " and the dimensions pointer ("
      << (type.dimensions ? "set" : "NULL") << ") disagree";
  NN_CHECK(IsKnownOperandType(type.type), ANEURALNETWORKS_BAD_DATA)
      << tag << ": invalid operand type " << type.type;
  if (IsScalarType(type.type)) {
    NN_CHECK_EQ(type.dimensionCount, 0u, ANEURALNETWORKS_BAD_DATA)
        << tag << ": scalar " << OperandTypeName(type.type) << " with dimensions";
  } else {
    if (!allow_partial) {
      NN_CHECK_GT(type.dimensionCount, 0u, ANEURALNETWORKS_BAD_DATA)
          << tag << ": " << OperandTypeName(type.type) << " needs a known rank";
    }
    uint64_t size = ElementSize(type.type);
    constexpr uint64_t kMaxSize = std::numeric_limits<uint32_t>::max();
    for (uint32_t i = 0; i < type.dimensionCount; ++i) {
      const uint32_t dimension = type.dimensions[i];
      if (!allow_partial) {
        NN_CHECK_NE(dimension, 0u, ANEURALNETWORKS_BAD_DATA)
            << tag << ": dimension " << i << " is unknown";
      }
      if (dimension == 0) continue;
      size *= dimension;
      NN_CHECK_LE(size, kMaxSize, ANEURALNETWORKS_BAD_DATA)
          << tag << ": operand byte size exceeds " << kMaxSize;
    }
  }
  return ValidateQuantizationParameters(type.type, type.scale, type.zeroPoint);
}

std::optional<Dimensions> CombineDimensions(const Dimensions& a, const Dimensions& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  if (a.size() != b.size()) return std::nullopt;
  Dimensions combined(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != 0 && b[i] != 0 && a[i] != b[i]) return std::nullopt;
    combined[i] = a[i] != 0 ? a[i] : b[i];
  }
  return combined;
}

}  // namespace mock_nnapi
