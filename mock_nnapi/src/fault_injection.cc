// SPDX-License-Identifier: Apache-2.0
#include "fault_injection.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "check.h"
#include "device.h"
#include "operand_types.h"
#include "operation.h"

namespace mock_nnapi {

std::atomic<bool> g_faults_armed{false};
std::atomic<bool> g_operation_faults_armed{false};

namespace {

struct Fault {
  int code;
  int32_t remaining;  // < 0: always
};

std::mutex& FaultMutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::string, Fault>& Faults() {
  static std::map<std::string, Fault> faults;
  return faults;
}

std::atomic<uint64_t> g_injected_count{0};

struct OperationFault {
  float offset;
  int32_t remaining;  // < 0: always
};

std::map<int32_t, OperationFault>& OperationFaults() {
  static std::map<int32_t, OperationFault> faults;
  return faults;
}

struct CompilationGate {
  std::mutex mutex;
  std::condition_variable released;
  bool held = false;
  uint32_t waiting = 0;
};

CompilationGate& Gate() {
  static CompilationGate gate;
  return gate;
}

// Every NNAPI function that returns a result code (the ones a fault can replace).
const std::set<std::string>& FaultableFunctions() {
  static const std::set<std::string> names = {
      "ANeuralNetworksMemory_createFromFd",
      "ANeuralNetworksModel_create",
      "ANeuralNetworksModel_finish",
      "ANeuralNetworksModel_addOperand",
      "ANeuralNetworksModel_setOperandValue",
      "ANeuralNetworksModel_setOperandValueFromMemory",
      "ANeuralNetworksModel_addOperation",
      "ANeuralNetworksModel_identifyInputsAndOutputs",
      "ANeuralNetworksCompilation_create",
      "ANeuralNetworksCompilation_setPreference",
      "ANeuralNetworksCompilation_finish",
      "ANeuralNetworksExecution_create",
      "ANeuralNetworksExecution_setInput",
      "ANeuralNetworksExecution_setInputFromMemory",
      "ANeuralNetworksExecution_setOutput",
      "ANeuralNetworksExecution_setOutputFromMemory",
      "ANeuralNetworksExecution_startCompute",
      "ANeuralNetworksEvent_wait",
      "ANeuralNetworksModel_relaxComputationFloat32toFloat16",
      "ANeuralNetworks_getDeviceCount",
      "ANeuralNetworks_getDevice",
      "ANeuralNetworksDevice_getName",
      "ANeuralNetworksDevice_getType",
      "ANeuralNetworksDevice_getVersion",
      "ANeuralNetworksDevice_getFeatureLevel",
      "ANeuralNetworksModel_getSupportedOperationsForDevices",
      "ANeuralNetworksCompilation_createForDevices",
      "ANeuralNetworksCompilation_setCaching",
      "ANeuralNetworksExecution_compute",
      "ANeuralNetworksExecution_getOutputOperandRank",
      "ANeuralNetworksExecution_getOutputOperandDimensions",
      "ANeuralNetworksBurst_create",
      "ANeuralNetworksExecution_burstCompute",
      "ANeuralNetworksMemory_createFromAHardwareBuffer",
      "ANeuralNetworksExecution_setMeasureTiming",
      "ANeuralNetworksExecution_getDuration",
      "ANeuralNetworksModel_setOperandSymmPerChannelQuantParams",
      "ANeuralNetworksMemoryDesc_create",
      "ANeuralNetworksMemoryDesc_addInputRole",
      "ANeuralNetworksMemoryDesc_addOutputRole",
      "ANeuralNetworksMemoryDesc_setDimensions",
      "ANeuralNetworksMemoryDesc_finish",
      "ANeuralNetworksMemory_createFromDesc",
      "ANeuralNetworksMemory_copy",
      "ANeuralNetworksDevice_wait",
      "ANeuralNetworksModel_setOperandValueFromModel",
      "ANeuralNetworksCompilation_setPriority",
      "ANeuralNetworksCompilation_setTimeout",
      "ANeuralNetworksExecution_setTimeout",
      "ANeuralNetworksExecution_setLoopTimeout",
      "ANeuralNetworksEvent_createFromSyncFenceFd",
      "ANeuralNetworksEvent_getSyncFenceFd",
      "ANeuralNetworksExecution_startComputeWithDependencies",
      "ANeuralNetworksExecution_enableInputAndOutputPadding",
      "ANeuralNetworksCompilation_getPreferredMemoryAlignmentForInput",
      "ANeuralNetworksCompilation_getPreferredMemoryPaddingForInput",
      "ANeuralNetworksCompilation_getPreferredMemoryAlignmentForOutput",
      "ANeuralNetworksCompilation_getPreferredMemoryPaddingForOutput",
      "ANeuralNetworksExecution_setReusable",
      // NeuralNetworksExtensions.h
      "ANeuralNetworksDevice_getExtensionSupport",
      "ANeuralNetworksModel_getExtensionOperandType",
      "ANeuralNetworksModel_getExtensionOperationType",
      "ANeuralNetworksModel_setOperandExtensionData",
      "ANeuralNetworksCompilation_addExtensionAttribute",
      "ANeuralNetworksExecution_addExtensionAttribute",
  };
  return names;
}

}  // namespace

bool IsFaultableFunction(const std::string& function) {
  return FaultableFunctions().count(function) > 0;
}

std::optional<int> TakeInjectedFault(const char* function) {
  std::lock_guard<std::mutex> lock(FaultMutex());
  auto it = Faults().find(function);
  if (it == Faults().end()) return std::nullopt;
  const int code = it->second.code;
  if (it->second.remaining > 0 && --it->second.remaining == 0) Faults().erase(it);
  g_injected_count++;
  // The explanation a caller reads (MockNnapi_getLastError) must be this failure's, not the
  // thread's previous one.
  RecordError(std::string("injected fault: ") + function + " returns " + ResultCodeName(code) +
              " (MockNnapi_injectFault)");
  return code;
}

bool InjectFault(const std::string& function, int code, int32_t count) {
  if (!IsFaultableFunction(function) || count == 0) return false;
  std::lock_guard<std::mutex> lock(FaultMutex());
  Faults()[function] = Fault{code, count};
  g_faults_armed = true;
  return true;
}

bool InjectOperationFault(int32_t operation_type, float offset, int32_t count) {
  if (count == 0) return false;
  std::lock_guard<std::mutex> lock(FaultMutex());
  OperationFaults()[operation_type] = OperationFault{offset, count};
  g_operation_faults_armed = true;
  return true;
}

void PerturbOutputs(int32_t operation_type, const std::vector<OperandInfo*>& outputs) {
  float offset = 0.f;
  {
    std::lock_guard<std::mutex> lock(FaultMutex());
    auto it = OperationFaults().find(operation_type);
    if (it == OperationFaults().end()) return;
    offset = it->second.offset;
    if (it->second.remaining > 0 && --it->second.remaining == 0) OperationFaults().erase(it);
  }
  g_injected_count++;
  for (OperandInfo* output : outputs) {
    if (output->type != ANEURALNETWORKS_TENSOR_FLOAT32 || output->data == nullptr) continue;
    float* values = output->MutableData<float>();
    for (size_t i = 0; i < output->length / sizeof(float); ++i) values[i] += offset;
  }
}

void ClearFaults() {
  std::lock_guard<std::mutex> lock(FaultMutex());
  Faults().clear();
  OperationFaults().clear();
  g_faults_armed = false;
  g_operation_faults_armed = false;
  g_injected_count = 0;
  ClearDeviceFaults();
  SetCompilationsHeld(false);
}

void SetCompilationsHeld(bool held) {
  CompilationGate& gate = Gate();
  {
    std::lock_guard<std::mutex> lock(gate.mutex);
    gate.held = held;
  }
  if (!held) gate.released.notify_all();
}

void WaitWhileCompilationsHeld() {
  CompilationGate& gate = Gate();
  std::unique_lock<std::mutex> lock(gate.mutex);
  if (!gate.held) return;
  ++gate.waiting;
  gate.released.wait(lock, [&] { return !gate.held; });
  --gate.waiting;
}

uint32_t HeldCompilationCount() {
  CompilationGate& gate = Gate();
  std::lock_guard<std::mutex> lock(gate.mutex);
  return gate.waiting;
}

uint64_t InjectedFaultCount() { return g_injected_count.load(); }

void CountInjectedFault() { g_injected_count++; }

}  // namespace mock_nnapi
