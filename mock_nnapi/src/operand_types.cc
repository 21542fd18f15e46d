#include "operand_types.h"

#include <limits>
#include <sstream>

#include "check.h"

namespace mock_nnapi {

bool IsKnownOperandType(int32_t type) {
  return (type >= ANEURALNETWORKS_FLOAT32 && type <= ANEURALNETWORKS_MODEL) ||
         type == ANEURALNETWORKS_OEM_SCALAR || type == ANEURALNETWORKS_TENSOR_OEM_BYTE;
}

bool IsScalarType(int32_t type) {
  switch (type) {
    case ANEURALNETWORKS_FLOAT32:
    case ANEURALNETWORKS_INT32:
    case ANEURALNETWORKS_UINT32:
    case ANEURALNETWORKS_BOOL:
    case ANEURALNETWORKS_FLOAT16:
    case ANEURALNETWORKS_MODEL:
    case ANEURALNETWORKS_OEM_SCALAR:
      return true;
    default:
      return false;
  }
}

bool IsTensorType(int32_t type) { return IsKnownOperandType(type) && !IsScalarType(type); }

bool IsQuantizedType(int32_t type) {
  switch (type) {
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM:
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL:
    case ANEURALNETWORKS_TENSOR_QUANT16_ASYMM:
    case ANEURALNETWORKS_TENSOR_QUANT16_SYMM:
      return true;
    default:
      return false;
  }
}

size_t ElementSize(int32_t type) {
  switch (type) {
    case ANEURALNETWORKS_FLOAT32:
    case ANEURALNETWORKS_INT32:
    case ANEURALNETWORKS_UINT32:
    case ANEURALNETWORKS_TENSOR_FLOAT32:
    case ANEURALNETWORKS_TENSOR_INT32:
      return 4;
    case ANEURALNETWORKS_FLOAT16:
    case ANEURALNETWORKS_TENSOR_FLOAT16:
    case ANEURALNETWORKS_TENSOR_QUANT16_SYMM:
    case ANEURALNETWORKS_TENSOR_QUANT16_ASYMM:
      return 2;
    case ANEURALNETWORKS_BOOL:
    case ANEURALNETWORKS_TENSOR_BOOL8:
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM:
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL:
    case ANEURALNETWORKS_TENSOR_OEM_BYTE:
      return 1;
    default:
      return 0;  // MODEL, OEM_SCALAR (size given by the value) and unknown codes.
  }
}

int64_t OperandTypeFeatureLevel(int32_t type) {
  if (type <= ANEURALNETWORKS_TENSOR_QUANT8_ASYMM) return kFeatureLevel1;
  if (type <= ANEURALNETWORKS_TENSOR_QUANT8_SYMM) return kFeatureLevel3;
  if (type <= ANEURALNETWORKS_MODEL) return kFeatureLevel4;
  return kFeatureLevel1;  // OEM codes
}

namespace {
const char* const kOperandTypeNames[] = {
    "FLOAT32",
    "INT32",
    "UINT32",
    "TENSOR_FLOAT32",
    "TENSOR_INT32",
    "TENSOR_QUANT8_ASYMM",
    "BOOL",
    "TENSOR_QUANT16_SYMM",
    "TENSOR_FLOAT16",
    "TENSOR_BOOL8",
    "FLOAT16",
    "TENSOR_QUANT8_SYMM_PER_CHANNEL",
    "TENSOR_QUANT16_ASYMM",
    "TENSOR_QUANT8_SYMM",
    "TENSOR_QUANT8_ASYMM_SIGNED",
    "MODEL",
};

const char* const kOperationTypeNames[] = {
    "ADD",
    "AVERAGE_POOL_2D",
    "CONCATENATION",
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "DEPTH_TO_SPACE",
    "DEQUANTIZE",
    "EMBEDDING_LOOKUP",
    "FLOOR",
    "FULLY_CONNECTED",
    "HASHTABLE_LOOKUP",
    "L2_NORMALIZATION",
    "L2_POOL_2D",
    "LOCAL_RESPONSE_NORMALIZATION",
    "LOGISTIC",
    "LSH_PROJECTION",
    "LSTM",
    "MAX_POOL_2D",
    "MUL",
    "RELU",
    "RELU1",
    "RELU6",
    "RESHAPE",
    "RESIZE_BILINEAR",
    "RNN",
    "SOFTMAX",
    "SPACE_TO_DEPTH",
    "SVDF",
    "TANH",
    "BATCH_TO_SPACE_ND",
    "DIV",
    "MEAN",
    "PAD",
    "SPACE_TO_BATCH_ND",
    "SQUEEZE",
    "STRIDED_SLICE",
    "SUB",
    "TRANSPOSE",
    "ABS",
    "ARGMAX",
    "ARGMIN",
    "AXIS_ALIGNED_BBOX_TRANSFORM",
    "BIDIRECTIONAL_SEQUENCE_LSTM",
    "BIDIRECTIONAL_SEQUENCE_RNN",
    "BOX_WITH_NMS_LIMIT",
    "CAST",
    "CHANNEL_SHUFFLE",
    "DETECTION_POSTPROCESSING",
    "EQUAL",
    "EXP",
    "EXPAND_DIMS",
    "GATHER",
    "GENERATE_PROPOSALS",
    "GREATER",
    "GREATER_EQUAL",
    "GROUPED_CONV_2D",
    "HEATMAP_MAX_KEYPOINT",
    "INSTANCE_NORMALIZATION",
    "LESS",
    "LESS_EQUAL",
    "LOG",
    "LOGICAL_AND",
    "LOGICAL_NOT",
    "LOGICAL_OR",
    "LOG_SOFTMAX",
    "MAXIMUM",
    "MINIMUM",
    "NEG",
    "NOT_EQUAL",
    "PAD_V2",
    "POW",
    "PRELU",
    "QUANTIZE",
    "QUANTIZED_16BIT_LSTM",
    "RANDOM_MULTINOMIAL",
    "REDUCE_ALL",
    "REDUCE_ANY",
    "REDUCE_MAX",
    "REDUCE_MIN",
    "REDUCE_PROD",
    "REDUCE_SUM",
    "ROI_ALIGN",
    "ROI_POOLING",
    "RSQRT",
    "SELECT",
    "SIN",
    "SLICE",
    "SPLIT",
    "SQRT",
    "TILE",
    "TOPK_V2",
    "TRANSPOSE_CONV_2D",
    "UNIDIRECTIONAL_SEQUENCE_LSTM",
    "UNIDIRECTIONAL_SEQUENCE_RNN",
    "RESIZE_NEAREST_NEIGHBOR",
    "QUANTIZED_LSTM",
    "IF",
    "WHILE",
    "ELU",
    "HARD_SWISH",
    "FILL",
    "RANK",
    "BATCH_MATMUL",
    "PACK",
    "MIRROR_PAD",
    "REVERSE",
};

const char* const kResultCodeNames[] = {
    "NO_ERROR",
    "OUT_OF_MEMORY",
    "INCOMPLETE",
    "UNEXPECTED_NULL",
    "BAD_DATA",
    "OP_FAILED",
    "BAD_STATE",
    "UNMAPPABLE",
    "OUTPUT_INSUFFICIENT_SIZE",
    "UNAVAILABLE_DEVICE",
    "MISSED_DEADLINE_TRANSIENT",
    "MISSED_DEADLINE_PERSISTENT",
    "RESOURCE_EXHAUSTED_TRANSIENT",
    "RESOURCE_EXHAUSTED_PERSISTENT",
    "DEAD_OBJECT",
};

template <size_t N>
std::string NameOrUnknown(const char* const (&names)[N], int code) {
  if (code >= 0 && static_cast<size_t>(code) < N) return names[code];
  return "UNKNOWN(" + std::to_string(code) + ")";
}
}  // namespace

std::string OperandTypeName(int32_t type) {
  if (type == ANEURALNETWORKS_OEM_SCALAR) return "OEM_SCALAR";
  if (type == ANEURALNETWORKS_TENSOR_OEM_BYTE) return "TENSOR_OEM_BYTE";
  return NameOrUnknown(kOperandTypeNames, type);
}

std::string OperationTypeName(int32_t type) {
  if (type == ANEURALNETWORKS_OEM_OPERATION) return "OEM_OPERATION";
  return NameOrUnknown(kOperationTypeNames, type);
}

std::string ResultCodeName(int code) { return NameOrUnknown(kResultCodeNames, code); }

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
