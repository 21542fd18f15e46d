// SPDX-License-Identifier: Apache-2.0
#include "nnapi_loader.h"

#include <dlfcn.h>
#include <tvm/ffi/error.h>

#include <cstdlib>
#include <mutex>

#include "nnapi_facts.h"

namespace tvm_nnapi {
namespace {

template <typename T>
void Resolve(void* handle, const char* name, T* slot) {
  *slot = reinterpret_cast<T>(dlsym(handle, name));
}

std::unique_ptr<Nnapi> Load() {
  auto nnapi = std::make_unique<Nnapi>();
  const char* override_path = std::getenv("TVM_NNAPI_LIBRARY");
  nnapi->library_path =
      override_path != nullptr && override_path[0] != '\0' ? override_path : "libneuralnetworks.so";
  void* handle = dlopen(nnapi->library_path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    TVM_FFI_THROW(RuntimeError) << "cannot load NNAPI from '" << nnapi->library_path
                                << "': " << dlerror()
                                << " (set TVM_NNAPI_LIBRARY to a libneuralnetworks.so)";
  }
#define TVM_NNAPI_RESOLVE(name) Resolve(handle, #name, &nnapi->name)
#define TVM_NNAPI_REQUIRE(name)                                                                \
  TVM_NNAPI_RESOLVE(name);                                                                     \
  if (nnapi->name == nullptr) {                                                                \
    TVM_FFI_THROW(RuntimeError) << "'" << nnapi->library_path << "' lacks the NNAPI function " \
                                << #name;                                                      \
  }
  TVM_NNAPI_REQUIRE(ANeuralNetworksMemory_createFromFd);
  TVM_NNAPI_REQUIRE(ANeuralNetworksMemory_free);
  TVM_NNAPI_REQUIRE(ANeuralNetworksModel_create);
  TVM_NNAPI_REQUIRE(ANeuralNetworksModel_free);
  TVM_NNAPI_REQUIRE(ANeuralNetworksModel_finish);
  TVM_NNAPI_REQUIRE(ANeuralNetworksModel_addOperand);
  TVM_NNAPI_REQUIRE(ANeuralNetworksModel_setOperandValue);
  TVM_NNAPI_REQUIRE(ANeuralNetworksModel_setOperandValueFromMemory);
  TVM_NNAPI_REQUIRE(ANeuralNetworksModel_addOperation);
  TVM_NNAPI_REQUIRE(ANeuralNetworksModel_identifyInputsAndOutputs);
  TVM_NNAPI_REQUIRE(ANeuralNetworksCompilation_create);
  TVM_NNAPI_REQUIRE(ANeuralNetworksCompilation_free);
  TVM_NNAPI_REQUIRE(ANeuralNetworksCompilation_setPreference);
  TVM_NNAPI_REQUIRE(ANeuralNetworksCompilation_finish);
  TVM_NNAPI_REQUIRE(ANeuralNetworksExecution_create);
  TVM_NNAPI_REQUIRE(ANeuralNetworksExecution_free);
  TVM_NNAPI_REQUIRE(ANeuralNetworksExecution_setInput);
  TVM_NNAPI_REQUIRE(ANeuralNetworksExecution_setInputFromMemory);
  TVM_NNAPI_REQUIRE(ANeuralNetworksExecution_setOutput);
  TVM_NNAPI_REQUIRE(ANeuralNetworksExecution_setOutputFromMemory);
  TVM_NNAPI_REQUIRE(ANeuralNetworksExecution_startCompute);
  TVM_NNAPI_REQUIRE(ANeuralNetworksEvent_wait);
  TVM_NNAPI_REQUIRE(ANeuralNetworksEvent_free);
  TVM_NNAPI_RESOLVE(ANeuralNetworksModel_relaxComputationFloat32toFloat16);
  TVM_NNAPI_RESOLVE(ANeuralNetworks_getDeviceCount);
  TVM_NNAPI_RESOLVE(ANeuralNetworks_getDevice);
  TVM_NNAPI_RESOLVE(ANeuralNetworksDevice_getName);
  TVM_NNAPI_RESOLVE(ANeuralNetworksDevice_getType);
  TVM_NNAPI_RESOLVE(ANeuralNetworksDevice_getVersion);
  TVM_NNAPI_RESOLVE(ANeuralNetworksDevice_getFeatureLevel);
  TVM_NNAPI_RESOLVE(ANeuralNetworksModel_getSupportedOperationsForDevices);
  TVM_NNAPI_RESOLVE(ANeuralNetworksCompilation_createForDevices);
  TVM_NNAPI_RESOLVE(ANeuralNetworksCompilation_setCaching);
  TVM_NNAPI_RESOLVE(ANeuralNetworksExecution_compute);
  TVM_NNAPI_RESOLVE(ANeuralNetworksExecution_getOutputOperandRank);
  TVM_NNAPI_RESOLVE(ANeuralNetworksExecution_getOutputOperandDimensions);
  TVM_NNAPI_RESOLVE(ANeuralNetworksBurst_create);
  TVM_NNAPI_RESOLVE(ANeuralNetworksBurst_free);
  TVM_NNAPI_RESOLVE(ANeuralNetworksExecution_burstCompute);
  TVM_NNAPI_RESOLVE(ANeuralNetworksExecution_setMeasureTiming);
  TVM_NNAPI_RESOLVE(ANeuralNetworksExecution_getDuration);
  TVM_NNAPI_RESOLVE(ANeuralNetworksModel_setOperandSymmPerChannelQuantParams);
  TVM_NNAPI_RESOLVE(ANeuralNetworksCompilation_setPriority);
  TVM_NNAPI_RESOLVE(ANeuralNetworksCompilation_setTimeout);
  TVM_NNAPI_RESOLVE(ANeuralNetworksExecution_setTimeout);
  TVM_NNAPI_RESOLVE(ANeuralNetworks_getRuntimeFeatureLevel);
  TVM_NNAPI_RESOLVE(ANeuralNetworksExecution_setReusable);
  TVM_NNAPI_RESOLVE(MockNnapi_getLastError);
  TVM_NNAPI_RESOLVE(MockNnapi_getCounter);
  TVM_NNAPI_RESOLVE(MockNnapi_getProfileName);
  TVM_NNAPI_RESOLVE(MockNnapi_getOperationExecutedCount);
  TVM_NNAPI_RESOLVE(MockNnapi_getModelledCompilationTime);
  TVM_NNAPI_RESOLVE(MockNnapi_setCostOnlyExecution);
  TVM_NNAPI_RESOLVE(MockNnapi_getCostOnlyExecution);
  TVM_NNAPI_RESOLVE(MockNnapi_getLastTrace);
#undef TVM_NNAPI_REQUIRE
#undef TVM_NNAPI_RESOLVE
  nnapi->is_mock = nnapi->MockNnapi_getLastError != nullptr;
  if (nnapi->ANeuralNetworks_getRuntimeFeatureLevel != nullptr) {
    nnapi->runtime_feature_level = nnapi->ANeuralNetworks_getRuntimeFeatureLevel();
  } else if (nnapi->ANeuralNetworksCompilation_setPriority != nullptr) {
    nnapi->runtime_feature_level = ANEURALNETWORKS_FEATURE_LEVEL_4;
  } else if (nnapi->ANeuralNetworks_getDeviceCount != nullptr) {
    nnapi->runtime_feature_level = ANEURALNETWORKS_FEATURE_LEVEL_3;
  } else if (nnapi->ANeuralNetworksModel_relaxComputationFloat32toFloat16 != nullptr) {
    nnapi->runtime_feature_level = ANEURALNETWORKS_FEATURE_LEVEL_2;
  } else {
    nnapi->runtime_feature_level = ANEURALNETWORKS_FEATURE_LEVEL_1;
  }
  // The handle stays open for the life of the process (NNAPI objects may outlive any module).
  return nnapi;
}

}  // namespace

const Nnapi& GetNnapi() {
  static std::once_flag once;
  static std::unique_ptr<Nnapi> nnapi;
  static std::string error;
  std::call_once(once, [] {
    try {
      nnapi = Load();
    } catch (const tvm::ffi::Error& e) {
      error = e.what();
    }
  });
  if (!nnapi) TVM_FFI_THROW(RuntimeError) << error;
  return *nnapi;
}

std::string ResultCodeString(int code) {
  const nnapi_common::ResultCodeFacts* facts = nnapi_common::FindResultCodeFacts(code);
  std::string name = facts != nullptr ? std::string("ANEURALNETWORKS_") + facts->name
                                      : std::string("unknown result code");
  return name + " (" + std::to_string(code) + ")";
}

}  // namespace tvm_nnapi
