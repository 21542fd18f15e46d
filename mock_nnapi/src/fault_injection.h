// SPDX-License-Identifier: Apache-2.0
// Fault injection in the spirit of TFLite's NnApiHandler: make a named NNAPI function return a
// chosen result code for the next N calls (or always) until cleared.
#ifndef MOCK_NNAPI_SRC_FAULT_INJECTION_H_
#define MOCK_NNAPI_SRC_FAULT_INJECTION_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mock_nnapi {

struct OperandInfo;

// True once any fault was armed (keeps the common path to one atomic load).
extern std::atomic<bool> g_faults_armed;

// The injected result code for `function` if a fault is armed for it (consumes one use).
std::optional<int> TakeInjectedFault(const char* function);
// Arms a fault; false if `function` is not an NNAPI function that returns a result code.
bool InjectFault(const std::string& function, int code, int32_t count);
// Removes every fault, including the device faults (device.h: ClearDeviceFaults).
void ClearFaults();
uint64_t InjectedFaultCount();
// Counts a failure imposed by a device fault (MockNnapi_injectDeviceFault) as injected.
void CountInjectedFault();
bool IsFaultableFunction(const std::string& function);

// Numeric faults (MockNnapi_injectOperationFault): the next `count` executed operations of
// type `operation_type` (count < 0: all) get `offset` added to every element of their float32
// outputs. False for count 0. ClearFaults removes them.
bool InjectOperationFault(int32_t operation_type, float offset, int32_t count);
// True once a numeric fault was armed (the executor's fast path).
extern std::atomic<bool> g_operation_faults_armed;
// Applies an armed numeric fault to the outputs of an operation that just executed.
void PerturbOutputs(int32_t operation_type, const std::vector<OperandInfo*>& outputs);
// The compilation gate (MockNnapi_holdCompilations): while held, Compilation_finish waits in
// WaitWhileCompilationsHeld before compiling. ClearFaults releases it.
void SetCompilationsHeld(bool held);
void WaitWhileCompilationsHeld();
uint32_t HeldCompilationCount();

}  // namespace mock_nnapi

// First statement of every NNAPI entry point that returns a result code.
#define NN_INJECTION_POINT(function)                                      \
  if (::mock_nnapi::g_faults_armed.load(std::memory_order_relaxed)) {     \
    if (auto injected_code = ::mock_nnapi::TakeInjectedFault(function)) { \
      return *injected_code;                                              \
    }                                                                     \
  }

#endif  // MOCK_NNAPI_SRC_FAULT_INJECTION_H_
