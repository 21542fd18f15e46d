// SPDX-License-Identifier: Apache-2.0
// Loads NNAPI with dlopen, like TFLite's nnapi_implementation: the same runtime binary uses the
// system libneuralnetworks.so on Android and mock_nnapi on a host.
//
// Library choice: $TVM_NNAPI_LIBRARY if set, else "libneuralnetworks.so" (found by the dynamic
// loader; on x86 the tvm_nnapi Python package sets TVM_NNAPI_LIBRARY to its bundled mock).
// Functions of feature level 1 are required; later ones are optional and null when the library
// is older (check before use, or use the helpers that say which feature level is needed).
#ifndef TVM_NNAPI_RUNTIME_NNAPI_LOADER_H_
#define TVM_NNAPI_RUNTIME_NNAPI_LOADER_H_

#include <android/NeuralNetworks.h>

#include <cstdint>
#include <string>

namespace tvm_nnapi {

#define TVM_NNAPI_FUNCTION_POINTER(name) decltype(&::name) name = nullptr

struct Nnapi {
  std::string library_path;
  // Feature level of the runtime (ANeuralNetworks_getRuntimeFeatureLevel, or inferred from the
  // newest function present).
  int64_t runtime_feature_level = 0;
  bool is_mock = false;

  // Feature level 1 (required).
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksMemory_createFromFd);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksMemory_free);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksModel_create);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksModel_free);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksModel_finish);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksModel_addOperand);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksModel_setOperandValue);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksModel_setOperandValueFromMemory);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksModel_addOperation);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksModel_identifyInputsAndOutputs);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksCompilation_create);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksCompilation_free);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksCompilation_setPreference);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksCompilation_finish);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_create);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_free);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_setInput);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_setInputFromMemory);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_setOutput);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_setOutputFromMemory);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_startCompute);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksEvent_wait);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksEvent_free);
  // Feature level 2.
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksModel_relaxComputationFloat32toFloat16);
  // Feature level 3.
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworks_getDeviceCount);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworks_getDevice);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksDevice_getName);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksDevice_getType);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksDevice_getVersion);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksDevice_getFeatureLevel);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksModel_getSupportedOperationsForDevices);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksCompilation_createForDevices);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksCompilation_setCaching);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_compute);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_getOutputOperandRank);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_getOutputOperandDimensions);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksBurst_create);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksBurst_free);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_burstCompute);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_setMeasureTiming);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_getDuration);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksModel_setOperandSymmPerChannelQuantParams);
  // Feature level 4.
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksCompilation_setPriority);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksCompilation_setTimeout);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_setTimeout);
  // Feature level 5.
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworks_getRuntimeFeatureLevel);
  TVM_NNAPI_FUNCTION_POINTER(ANeuralNetworksExecution_setReusable);
  // mock_nnapi's control API (null on a real NNAPI).
  const char* (*MockNnapi_getLastError)() = nullptr;
  int (*MockNnapi_getCounter)(const char*, uint64_t*) = nullptr;
  const char* (*MockNnapi_getProfileName)() = nullptr;
  uint64_t (*MockNnapi_getOperationExecutedCount)(int32_t) = nullptr;
  int (*MockNnapi_getModelledCompilationTime)(const ANeuralNetworksCompilation*,
                                              uint64_t*) = nullptr;
  void (*MockNnapi_setCostOnlyExecution)(int32_t) = nullptr;
  int32_t (*MockNnapi_getCostOnlyExecution)() = nullptr;
  const char* (*MockNnapi_getLastTrace)() = nullptr;
};

#undef TVM_NNAPI_FUNCTION_POINTER

// The process-wide NNAPI, loaded on first use. Throws a tvm::ffi::Error naming the library and
// the missing symbol when loading fails.
const Nnapi& GetNnapi();

// "ANEURALNETWORKS_BAD_DATA (4)" for a result code.
std::string ResultCodeString(int code);

}  // namespace tvm_nnapi

#endif  // TVM_NNAPI_RUNTIME_NNAPI_LOADER_H_
