// SPDX-License-Identifier: Apache-2.0
// Facts about NNAPI operand types: which codes exist, element sizes, scalar vs tensor.
#ifndef MOCK_NNAPI_SRC_OPERAND_TYPES_H_
#define MOCK_NNAPI_SRC_OPERAND_TYPES_H_

#include <android/NeuralNetworksTypes.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mock_nnapi {

using Dimensions = std::vector<uint32_t>;

// Feature levels as the runtime reports them (Android API levels, then 1000006+).
constexpr int64_t kFeatureLevel1 = ANEURALNETWORKS_FEATURE_LEVEL_1;
constexpr int64_t kFeatureLevel2 = ANEURALNETWORKS_FEATURE_LEVEL_2;
constexpr int64_t kFeatureLevel3 = ANEURALNETWORKS_FEATURE_LEVEL_3;
constexpr int64_t kFeatureLevel4 = ANEURALNETWORKS_FEATURE_LEVEL_4;
constexpr int64_t kFeatureLevel5 = ANEURALNETWORKS_FEATURE_LEVEL_5;
constexpr int64_t kFeatureLevel6 = ANEURALNETWORKS_FEATURE_LEVEL_6;
constexpr int64_t kFeatureLevel7 = ANEURALNETWORKS_FEATURE_LEVEL_7;
constexpr int64_t kFeatureLevel8 = ANEURALNETWORKS_FEATURE_LEVEL_8;

// True for operand codes defined by the NNAPI (including the deprecated OEM codes).
bool IsKnownOperandType(int32_t type);
bool IsScalarType(int32_t type);
bool IsTensorType(int32_t type);
bool IsQuantizedType(int32_t type);
// Size in bytes of one element (a scalar or one tensor element); 0 for unknown or MODEL.
size_t ElementSize(int32_t type);
// Feature level in which the operand type was introduced.
int64_t OperandTypeFeatureLevel(int32_t type);
// "TENSOR_FLOAT32", "INT32", ...; "UNKNOWN(<code>)" for unknown codes.
std::string OperandTypeName(int32_t type);
std::string OperationTypeName(int32_t type);
std::string ResultCodeName(int code);

// Number of elements, or nullopt when a dimension is unknown (0) or the product overflows.
// An empty dimension list (a scalar) has one element.
std::optional<uint64_t> ElementCount(const Dimensions& dimensions);
// Byte size of an operand of `type` with `dimensions`, or nullopt when unknown or overflowing.
std::optional<size_t> ByteSize(int32_t type, const Dimensions& dimensions);
// True when all dimensions are known (non-zero); a rank-0 tensor is not fully specified.
bool HasUnknownDimension(const Dimensions& dimensions);
std::string DimensionsToString(const Dimensions& dimensions);

// Scale and zero-point rules of each operand type (NDK documentation of OperandCode).
// Returns NO_ERROR or BAD_DATA with the error recorded.
int ValidateQuantizationParameters(int32_t type, float scale, int32_t zero_point);

// Android's validateOperandType: the dimensions pointer and count agree, the code is known,
// scalars have no dimensions, a tensor's known dimensions fit in 4 GiB, quantisation parameters
// follow the type's rules. With `allow_partial` false a tensor must have a known rank and no
// unknown (0) dimension. `tag` names the calling function in the error message.
int ValidateOperandType(const ANeuralNetworksOperandType& type, bool allow_partial,
                        const char* tag);

// Android's combineDimensions: an empty list (unknown rank) takes the other; otherwise ranks
// must agree and each axis known in both must agree. nullopt when incompatible.
std::optional<Dimensions> CombineDimensions(const Dimensions& a, const Dimensions& b);

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPERAND_TYPES_H_
