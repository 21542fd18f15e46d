// SPDX-License-Identifier: Apache-2.0
// Vendor-extension functions of the NNAPI C API, ABI-compatible with the Android NDK.
// Part of mock_nnapi. Functions return a ResultCode.

#ifndef MOCK_NNAPI_INCLUDE_ANDROID_NEURALNETWORKSEXTENSIONS_H_
#define MOCK_NNAPI_INCLUDE_ANDROID_NEURALNETWORKSEXTENSIONS_H_

#include "NeuralNetworks.h"

#ifdef __cplusplus
extern "C" {
#endif

// API 29 (feature level 3): extension discovery and extension operand/operation types.
MOCK_NNAPI_EXPORT int ANeuralNetworksDevice_getExtensionSupport(const ANeuralNetworksDevice* device,
                                                                const char* extensionName,
                                                                bool* isExtensionSupported);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_getExtensionOperandType(
    ANeuralNetworksModel* model, const char* extensionName, uint16_t operandCodeWithinExtension,
    int32_t* type);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_getExtensionOperationType(
    ANeuralNetworksModel* model, const char* extensionName, uint16_t operationCodeWithinExtension,
    ANeuralNetworksOperationType* type);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_setOperandExtensionData(ANeuralNetworksModel* model,
                                                                   int32_t index, const void* data,
                                                                   size_t length);

// Added after API 31: extension attributes on compilations and executions.
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_addExtensionAttribute(
    ANeuralNetworksCompilation* compilation, const char* extensionName,
    uint16_t attributeCodeWithinExtension, const void* data, size_t length);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_addExtensionAttribute(
    ANeuralNetworksExecution* execution, const char* extensionName,
    uint16_t attributeCodeWithinExtension, const void* data, size_t length);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // MOCK_NNAPI_INCLUDE_ANDROID_NEURALNETWORKSEXTENSIONS_H_
