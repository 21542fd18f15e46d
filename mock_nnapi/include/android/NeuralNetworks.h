// SPDX-License-Identifier: Apache-2.0
// Public functions of the NNAPI C API (API levels 27-31), ABI-compatible with the Android NDK.
// Part of mock_nnapi. Functions return a ResultCode unless noted otherwise.

#ifndef MOCK_NNAPI_INCLUDE_ANDROID_NEURALNETWORKS_H_
#define MOCK_NNAPI_INCLUDE_ANDROID_NEURALNETWORKS_H_

#include "NeuralNetworksTypes.h"

// Marks a symbol as exported even when the library is built with -fvisibility=hidden.
#ifndef MOCK_NNAPI_EXPORT
#define MOCK_NNAPI_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

// API 27 (feature level 1, Android 8.1): memory, model, compilation, execution and event basics.
MOCK_NNAPI_EXPORT int ANeuralNetworksMemory_createFromFd(size_t size, int protect, int fd,
                                                         size_t offset,
                                                         ANeuralNetworksMemory** memory);
MOCK_NNAPI_EXPORT void ANeuralNetworksMemory_free(ANeuralNetworksMemory* memory);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_create(ANeuralNetworksModel** model);
MOCK_NNAPI_EXPORT void ANeuralNetworksModel_free(ANeuralNetworksModel* model);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_finish(ANeuralNetworksModel* model);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_addOperand(ANeuralNetworksModel* model,
                                                      const ANeuralNetworksOperandType* type);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_setOperandValue(ANeuralNetworksModel* model,
                                                           int32_t index, const void* buffer,
                                                           size_t length);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_setOperandValueFromMemory(
    ANeuralNetworksModel* model, int32_t index, const ANeuralNetworksMemory* memory, size_t offset,
    size_t length);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_addOperation(ANeuralNetworksModel* model,
                                                        ANeuralNetworksOperationType type,
                                                        uint32_t inputCount, const uint32_t* inputs,
                                                        uint32_t outputCount,
                                                        const uint32_t* outputs);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_identifyInputsAndOutputs(ANeuralNetworksModel* model,
                                                                    uint32_t inputCount,
                                                                    const uint32_t* inputs,
                                                                    uint32_t outputCount,
                                                                    const uint32_t* outputs);
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_create(ANeuralNetworksModel* model,
                                                        ANeuralNetworksCompilation** compilation);
MOCK_NNAPI_EXPORT void ANeuralNetworksCompilation_free(ANeuralNetworksCompilation* compilation);
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_setPreference(
    ANeuralNetworksCompilation* compilation, int32_t preference);
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_finish(ANeuralNetworksCompilation* compilation);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_create(ANeuralNetworksCompilation* compilation,
                                                      ANeuralNetworksExecution** execution);
MOCK_NNAPI_EXPORT void ANeuralNetworksExecution_free(ANeuralNetworksExecution* execution);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_setInput(ANeuralNetworksExecution* execution,
                                                        int32_t index,
                                                        const ANeuralNetworksOperandType* type,
                                                        const void* buffer, size_t length);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_setInputFromMemory(
    ANeuralNetworksExecution* execution, int32_t index, const ANeuralNetworksOperandType* type,
    const ANeuralNetworksMemory* memory, size_t offset, size_t length);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_setOutput(ANeuralNetworksExecution* execution,
                                                         int32_t index,
                                                         const ANeuralNetworksOperandType* type,
                                                         void* buffer, size_t length);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_setOutputFromMemory(
    ANeuralNetworksExecution* execution, int32_t index, const ANeuralNetworksOperandType* type,
    const ANeuralNetworksMemory* memory, size_t offset, size_t length);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_startCompute(ANeuralNetworksExecution* execution,
                                                            ANeuralNetworksEvent** event);
MOCK_NNAPI_EXPORT int ANeuralNetworksEvent_wait(ANeuralNetworksEvent* event);
MOCK_NNAPI_EXPORT void ANeuralNetworksEvent_free(ANeuralNetworksEvent* event);

// API 28 (feature level 2, Android 9): relaxed float32 precision.
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_relaxComputationFloat32toFloat16(
    ANeuralNetworksModel* model, bool allow);

// API 29 (feature level 3, Android 10): devices, caching, sync compute, bursts, timing, AHWB.
MOCK_NNAPI_EXPORT int ANeuralNetworks_getDeviceCount(uint32_t* numDevices);
MOCK_NNAPI_EXPORT int ANeuralNetworks_getDevice(uint32_t devIndex, ANeuralNetworksDevice** device);
MOCK_NNAPI_EXPORT int ANeuralNetworksDevice_getName(const ANeuralNetworksDevice* device,
                                                    const char** name);
MOCK_NNAPI_EXPORT int ANeuralNetworksDevice_getType(const ANeuralNetworksDevice* device,
                                                    int32_t* type);
MOCK_NNAPI_EXPORT int ANeuralNetworksDevice_getVersion(const ANeuralNetworksDevice* device,
                                                       const char** version);
MOCK_NNAPI_EXPORT int ANeuralNetworksDevice_getFeatureLevel(const ANeuralNetworksDevice* device,
                                                            int64_t* featureLevel);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_getSupportedOperationsForDevices(
    const ANeuralNetworksModel* model, const ANeuralNetworksDevice* const* devices,
    uint32_t numDevices, bool* supportedOps);
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_createForDevices(
    ANeuralNetworksModel* model, const ANeuralNetworksDevice* const* devices, uint32_t numDevices,
    ANeuralNetworksCompilation** compilation);
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_setCaching(ANeuralNetworksCompilation* compilation,
                                                            const char* cacheDir,
                                                            const uint8_t* token);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_compute(ANeuralNetworksExecution* execution);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_getOutputOperandRank(
    ANeuralNetworksExecution* execution, int32_t index, uint32_t* rank);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_getOutputOperandDimensions(
    ANeuralNetworksExecution* execution, int32_t index, uint32_t* dimensions);
MOCK_NNAPI_EXPORT int ANeuralNetworksBurst_create(ANeuralNetworksCompilation* compilation,
                                                  ANeuralNetworksBurst** burst);
MOCK_NNAPI_EXPORT void ANeuralNetworksBurst_free(ANeuralNetworksBurst* burst);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_burstCompute(ANeuralNetworksExecution* execution,
                                                            ANeuralNetworksBurst* burst);
MOCK_NNAPI_EXPORT int ANeuralNetworksMemory_createFromAHardwareBuffer(
    const AHardwareBuffer* ahwb, ANeuralNetworksMemory** memory);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_setMeasureTiming(ANeuralNetworksExecution* execution,
                                                                bool measure);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_getDuration(
    const ANeuralNetworksExecution* execution, int32_t durationCode, uint64_t* duration);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(
    ANeuralNetworksModel* model, int32_t index,
    const ANeuralNetworksSymmPerChannelQuantParams* channelQuant);

// API 30 (feature level 4, Android 11): memory descriptors, priorities, timeouts, fences.
MOCK_NNAPI_EXPORT int ANeuralNetworksMemoryDesc_create(ANeuralNetworksMemoryDesc** desc);
MOCK_NNAPI_EXPORT void ANeuralNetworksMemoryDesc_free(ANeuralNetworksMemoryDesc* desc);
MOCK_NNAPI_EXPORT int ANeuralNetworksMemoryDesc_addInputRole(
    ANeuralNetworksMemoryDesc* desc, const ANeuralNetworksCompilation* compilation, uint32_t index,
    float frequency);
MOCK_NNAPI_EXPORT int ANeuralNetworksMemoryDesc_addOutputRole(
    ANeuralNetworksMemoryDesc* desc, const ANeuralNetworksCompilation* compilation, uint32_t index,
    float frequency);
MOCK_NNAPI_EXPORT int ANeuralNetworksMemoryDesc_setDimensions(ANeuralNetworksMemoryDesc* desc,
                                                              uint32_t rank,
                                                              const uint32_t* dimensions);
MOCK_NNAPI_EXPORT int ANeuralNetworksMemoryDesc_finish(ANeuralNetworksMemoryDesc* desc);
MOCK_NNAPI_EXPORT int ANeuralNetworksMemory_createFromDesc(const ANeuralNetworksMemoryDesc* desc,
                                                           ANeuralNetworksMemory** memory);
MOCK_NNAPI_EXPORT int ANeuralNetworksMemory_copy(const ANeuralNetworksMemory* src,
                                                 const ANeuralNetworksMemory* dst);
MOCK_NNAPI_EXPORT int ANeuralNetworksDevice_wait(const ANeuralNetworksDevice* device);
MOCK_NNAPI_EXPORT int ANeuralNetworksModel_setOperandValueFromModel(
    ANeuralNetworksModel* model, int32_t index, const ANeuralNetworksModel* value);
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_setPriority(
    ANeuralNetworksCompilation* compilation, int priority);
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_setTimeout(ANeuralNetworksCompilation* compilation,
                                                            uint64_t duration);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_setTimeout(ANeuralNetworksExecution* execution,
                                                          uint64_t duration);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_setLoopTimeout(ANeuralNetworksExecution* execution,
                                                              uint64_t duration);
// Returns nanoseconds (2 s in the Android runtime).
MOCK_NNAPI_EXPORT uint64_t ANeuralNetworks_getDefaultLoopTimeout(void);
// Returns nanoseconds (15 s in the Android runtime).
MOCK_NNAPI_EXPORT uint64_t ANeuralNetworks_getMaximumLoopTimeout(void);
MOCK_NNAPI_EXPORT int ANeuralNetworksEvent_createFromSyncFenceFd(int sync_fence_fd,
                                                                 ANeuralNetworksEvent** event);
MOCK_NNAPI_EXPORT int ANeuralNetworksEvent_getSyncFenceFd(const ANeuralNetworksEvent* event,
                                                          int* sync_fence_fd);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_startComputeWithDependencies(
    ANeuralNetworksExecution* execution, const ANeuralNetworksEvent* const* dependencies,
    uint32_t num_dependencies, uint64_t duration, ANeuralNetworksEvent** event);

// API 31 (feature level 5, Android 12): runtime feature level, padding, alignment, reuse.
// Returns a FeatureLevelCode value.
MOCK_NNAPI_EXPORT int64_t ANeuralNetworks_getRuntimeFeatureLevel(void);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_enableInputAndOutputPadding(
    ANeuralNetworksExecution* execution, bool enable);
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_getPreferredMemoryAlignmentForInput(
    const ANeuralNetworksCompilation* compilation, uint32_t index, uint32_t* alignment);
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_getPreferredMemoryPaddingForInput(
    const ANeuralNetworksCompilation* compilation, uint32_t index, uint32_t* padding);
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_getPreferredMemoryAlignmentForOutput(
    const ANeuralNetworksCompilation* compilation, uint32_t index, uint32_t* alignment);
MOCK_NNAPI_EXPORT int ANeuralNetworksCompilation_getPreferredMemoryPaddingForOutput(
    const ANeuralNetworksCompilation* compilation, uint32_t index, uint32_t* padding);
MOCK_NNAPI_EXPORT int ANeuralNetworksExecution_setReusable(ANeuralNetworksExecution* execution,
                                                           bool reusable);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // MOCK_NNAPI_INCLUDE_ANDROID_NEURALNETWORKS_H_
