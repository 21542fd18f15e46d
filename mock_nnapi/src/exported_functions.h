// SPDX-License-Identifier: Apache-2.0
// The NNAPI functions newer than feature level 1, which the mock can hide to stand in for an
// older Android's libneuralnetworks.so (MOCK_NNAPI_LIBRARY_FEATURE_LEVEL, docs/mock-api.md).
//
// With glibc, each of them is defined under an internal name (MockNnapiImpl_<function>) and
// exported under its NNAPI name as an indirect function (exported_functions.cc) that resolves
// to the implementation, or to nothing when the function's feature level is above
// MOCK_NNAPI_LIBRARY_FEATURE_LEVEL: dlsym() then returns NULL, as on a library without it.
// The files that define the entry points (api_*.cc) include this header before the NNAPI
// headers, so that their declarations and definitions take the internal names.
#ifndef MOCK_NNAPI_SRC_EXPORTED_FUNCTIONS_H_
#define MOCK_NNAPI_SRC_EXPORTED_FUNCTIONS_H_

#include <cstdint>  // defines __GLIBC__ where it applies

#if defined(__GLIBC__) && defined(__ELF__) && (defined(__x86_64__) || defined(__aarch64__))
#define MOCK_NNAPI_LEVELLED_EXPORTS 1
#else
#define MOCK_NNAPI_LEVELLED_EXPORTS 0
#endif

// The environment variable: a feature level (1-8, or its code 27-31, 1000006-1000008); unset or
// empty, every function is exported.
#define MOCK_NNAPI_LIBRARY_FEATURE_LEVEL_VARIABLE "MOCK_NNAPI_LIBRARY_FEATURE_LEVEL"

// X(function, feature level) for every NNAPI function above feature level 1 (as the sections of
// include/android/NeuralNetworks.h and NeuralNetworksExtensions.h say), by level, then name.
#define MOCK_NNAPI_LEVELLED_FUNCTIONS(X)                                \
  X(ANeuralNetworksModel_relaxComputationFloat32toFloat16, 2)           \
  X(ANeuralNetworksBurst_create, 3)                                     \
  X(ANeuralNetworksBurst_free, 3)                                       \
  X(ANeuralNetworksCompilation_createForDevices, 3)                     \
  X(ANeuralNetworksCompilation_setCaching, 3)                           \
  X(ANeuralNetworksDevice_getExtensionSupport, 3)                       \
  X(ANeuralNetworksDevice_getFeatureLevel, 3)                           \
  X(ANeuralNetworksDevice_getName, 3)                                   \
  X(ANeuralNetworksDevice_getType, 3)                                   \
  X(ANeuralNetworksDevice_getVersion, 3)                                \
  X(ANeuralNetworksExecution_burstCompute, 3)                           \
  X(ANeuralNetworksExecution_compute, 3)                                \
  X(ANeuralNetworksExecution_getDuration, 3)                            \
  X(ANeuralNetworksExecution_getOutputOperandDimensions, 3)             \
  X(ANeuralNetworksExecution_getOutputOperandRank, 3)                   \
  X(ANeuralNetworksExecution_setMeasureTiming, 3)                       \
  X(ANeuralNetworksMemory_createFromAHardwareBuffer, 3)                 \
  X(ANeuralNetworksModel_getExtensionOperandType, 3)                    \
  X(ANeuralNetworksModel_getExtensionOperationType, 3)                  \
  X(ANeuralNetworksModel_getSupportedOperationsForDevices, 3)           \
  X(ANeuralNetworksModel_setOperandExtensionData, 3)                    \
  X(ANeuralNetworksModel_setOperandSymmPerChannelQuantParams, 3)        \
  X(ANeuralNetworks_getDevice, 3)                                       \
  X(ANeuralNetworks_getDeviceCount, 3)                                  \
  X(ANeuralNetworksCompilation_setPriority, 4)                          \
  X(ANeuralNetworksCompilation_setTimeout, 4)                           \
  X(ANeuralNetworksDevice_wait, 4)                                      \
  X(ANeuralNetworksEvent_createFromSyncFenceFd, 4)                      \
  X(ANeuralNetworksEvent_getSyncFenceFd, 4)                             \
  X(ANeuralNetworksExecution_setLoopTimeout, 4)                         \
  X(ANeuralNetworksExecution_setTimeout, 4)                             \
  X(ANeuralNetworksExecution_startComputeWithDependencies, 4)           \
  X(ANeuralNetworksMemoryDesc_addInputRole, 4)                          \
  X(ANeuralNetworksMemoryDesc_addOutputRole, 4)                         \
  X(ANeuralNetworksMemoryDesc_create, 4)                                \
  X(ANeuralNetworksMemoryDesc_finish, 4)                                \
  X(ANeuralNetworksMemoryDesc_free, 4)                                  \
  X(ANeuralNetworksMemoryDesc_setDimensions, 4)                         \
  X(ANeuralNetworksMemory_copy, 4)                                      \
  X(ANeuralNetworksMemory_createFromDesc, 4)                            \
  X(ANeuralNetworksModel_setOperandValueFromModel, 4)                   \
  X(ANeuralNetworks_getDefaultLoopTimeout, 4)                           \
  X(ANeuralNetworks_getMaximumLoopTimeout, 4)                           \
  X(ANeuralNetworksCompilation_getPreferredMemoryAlignmentForInput, 5)  \
  X(ANeuralNetworksCompilation_getPreferredMemoryAlignmentForOutput, 5) \
  X(ANeuralNetworksCompilation_getPreferredMemoryPaddingForInput, 5)    \
  X(ANeuralNetworksCompilation_getPreferredMemoryPaddingForOutput, 5)   \
  X(ANeuralNetworksExecution_enableInputAndOutputPadding, 5)            \
  X(ANeuralNetworksExecution_setReusable, 5)                            \
  X(ANeuralNetworks_getRuntimeFeatureLevel, 5)                          \
  X(ANeuralNetworksCompilation_addExtensionAttribute, 6)                \
  X(ANeuralNetworksExecution_addExtensionAttribute, 6)

#if MOCK_NNAPI_LEVELLED_EXPORTS && !defined(MOCK_NNAPI_EXPORTED_FUNCTIONS_KEEP_NAMES)
#define ANeuralNetworksModel_relaxComputationFloat32toFloat16 \
  MockNnapiImpl_ANeuralNetworksModel_relaxComputationFloat32toFloat16
#define ANeuralNetworksBurst_create MockNnapiImpl_ANeuralNetworksBurst_create
#define ANeuralNetworksBurst_free MockNnapiImpl_ANeuralNetworksBurst_free
#define ANeuralNetworksCompilation_createForDevices \
  MockNnapiImpl_ANeuralNetworksCompilation_createForDevices
#define ANeuralNetworksCompilation_setCaching MockNnapiImpl_ANeuralNetworksCompilation_setCaching
#define ANeuralNetworksDevice_getExtensionSupport \
  MockNnapiImpl_ANeuralNetworksDevice_getExtensionSupport
#define ANeuralNetworksDevice_getFeatureLevel MockNnapiImpl_ANeuralNetworksDevice_getFeatureLevel
#define ANeuralNetworksDevice_getName MockNnapiImpl_ANeuralNetworksDevice_getName
#define ANeuralNetworksDevice_getType MockNnapiImpl_ANeuralNetworksDevice_getType
#define ANeuralNetworksDevice_getVersion MockNnapiImpl_ANeuralNetworksDevice_getVersion
#define ANeuralNetworksExecution_burstCompute MockNnapiImpl_ANeuralNetworksExecution_burstCompute
#define ANeuralNetworksExecution_compute MockNnapiImpl_ANeuralNetworksExecution_compute
#define ANeuralNetworksExecution_getDuration MockNnapiImpl_ANeuralNetworksExecution_getDuration
#define ANeuralNetworksExecution_getOutputOperandDimensions \
  MockNnapiImpl_ANeuralNetworksExecution_getOutputOperandDimensions
#define ANeuralNetworksExecution_getOutputOperandRank \
  MockNnapiImpl_ANeuralNetworksExecution_getOutputOperandRank
#define ANeuralNetworksExecution_setMeasureTiming \
  MockNnapiImpl_ANeuralNetworksExecution_setMeasureTiming
#define ANeuralNetworksMemory_createFromAHardwareBuffer \
  MockNnapiImpl_ANeuralNetworksMemory_createFromAHardwareBuffer
#define ANeuralNetworksModel_getExtensionOperandType \
  MockNnapiImpl_ANeuralNetworksModel_getExtensionOperandType
#define ANeuralNetworksModel_getExtensionOperationType \
  MockNnapiImpl_ANeuralNetworksModel_getExtensionOperationType
#define ANeuralNetworksModel_getSupportedOperationsForDevices \
  MockNnapiImpl_ANeuralNetworksModel_getSupportedOperationsForDevices
#define ANeuralNetworksModel_setOperandExtensionData \
  MockNnapiImpl_ANeuralNetworksModel_setOperandExtensionData
#define ANeuralNetworksModel_setOperandSymmPerChannelQuantParams \
  MockNnapiImpl_ANeuralNetworksModel_setOperandSymmPerChannelQuantParams
#define ANeuralNetworks_getDevice MockNnapiImpl_ANeuralNetworks_getDevice
#define ANeuralNetworks_getDeviceCount MockNnapiImpl_ANeuralNetworks_getDeviceCount
#define ANeuralNetworksCompilation_setPriority MockNnapiImpl_ANeuralNetworksCompilation_setPriority
#define ANeuralNetworksCompilation_setTimeout MockNnapiImpl_ANeuralNetworksCompilation_setTimeout
#define ANeuralNetworksDevice_wait MockNnapiImpl_ANeuralNetworksDevice_wait
#define ANeuralNetworksEvent_createFromSyncFenceFd \
  MockNnapiImpl_ANeuralNetworksEvent_createFromSyncFenceFd
#define ANeuralNetworksEvent_getSyncFenceFd MockNnapiImpl_ANeuralNetworksEvent_getSyncFenceFd
#define ANeuralNetworksExecution_setLoopTimeout \
  MockNnapiImpl_ANeuralNetworksExecution_setLoopTimeout
#define ANeuralNetworksExecution_setTimeout MockNnapiImpl_ANeuralNetworksExecution_setTimeout
#define ANeuralNetworksExecution_startComputeWithDependencies \
  MockNnapiImpl_ANeuralNetworksExecution_startComputeWithDependencies
#define ANeuralNetworksMemoryDesc_addInputRole MockNnapiImpl_ANeuralNetworksMemoryDesc_addInputRole
#define ANeuralNetworksMemoryDesc_addOutputRole \
  MockNnapiImpl_ANeuralNetworksMemoryDesc_addOutputRole
#define ANeuralNetworksMemoryDesc_create MockNnapiImpl_ANeuralNetworksMemoryDesc_create
#define ANeuralNetworksMemoryDesc_finish MockNnapiImpl_ANeuralNetworksMemoryDesc_finish
#define ANeuralNetworksMemoryDesc_free MockNnapiImpl_ANeuralNetworksMemoryDesc_free
#define ANeuralNetworksMemoryDesc_setDimensions \
  MockNnapiImpl_ANeuralNetworksMemoryDesc_setDimensions
#define ANeuralNetworksMemory_copy MockNnapiImpl_ANeuralNetworksMemory_copy
#define ANeuralNetworksMemory_createFromDesc MockNnapiImpl_ANeuralNetworksMemory_createFromDesc
#define ANeuralNetworksModel_setOperandValueFromModel \
  MockNnapiImpl_ANeuralNetworksModel_setOperandValueFromModel
#define ANeuralNetworks_getDefaultLoopTimeout MockNnapiImpl_ANeuralNetworks_getDefaultLoopTimeout
#define ANeuralNetworks_getMaximumLoopTimeout MockNnapiImpl_ANeuralNetworks_getMaximumLoopTimeout
#define ANeuralNetworksCompilation_getPreferredMemoryAlignmentForInput \
  MockNnapiImpl_ANeuralNetworksCompilation_getPreferredMemoryAlignmentForInput
#define ANeuralNetworksCompilation_getPreferredMemoryAlignmentForOutput \
  MockNnapiImpl_ANeuralNetworksCompilation_getPreferredMemoryAlignmentForOutput
#define ANeuralNetworksCompilation_getPreferredMemoryPaddingForInput \
  MockNnapiImpl_ANeuralNetworksCompilation_getPreferredMemoryPaddingForInput
#define ANeuralNetworksCompilation_getPreferredMemoryPaddingForOutput \
  MockNnapiImpl_ANeuralNetworksCompilation_getPreferredMemoryPaddingForOutput
#define ANeuralNetworksExecution_enableInputAndOutputPadding \
  MockNnapiImpl_ANeuralNetworksExecution_enableInputAndOutputPadding
#define ANeuralNetworksExecution_setReusable MockNnapiImpl_ANeuralNetworksExecution_setReusable
#define ANeuralNetworks_getRuntimeFeatureLevel MockNnapiImpl_ANeuralNetworks_getRuntimeFeatureLevel
#define ANeuralNetworksCompilation_addExtensionAttribute \
  MockNnapiImpl_ANeuralNetworksCompilation_addExtensionAttribute
#define ANeuralNetworksExecution_addExtensionAttribute \
  MockNnapiImpl_ANeuralNetworksExecution_addExtensionAttribute
#endif

#endif  // MOCK_NNAPI_SRC_EXPORTED_FUNCTIONS_H_
