// SPDX-License-Identifier: Apache-2.0
// The MockNnapi_* control API (include/mock_nnapi/mock_nnapi.h).
#include <mock_nnapi/mock_nnapi.h>

#include "check.h"
#include "compilation.h"
#include "cost_model.h"
#include "device.h"
#include "executor.h"
#include "fault_injection.h"
#include "json.h"
#include "ops/gemm.h"
#include "profile.h"
#include "statistics.h"
#include "trace.h"

#ifndef MOCK_NNAPI_VERSION
#define MOCK_NNAPI_VERSION "0.0.0"
#endif

extern "C" {

const char* MockNnapi_getVersion(void) { return "mock_nnapi " MOCK_NNAPI_VERSION; }

const char* MockNnapi_getBlasInfo(void) {
  thread_local std::string info;
  info = mock_nnapi::gemm::BlasInfoJson();
  return info.c_str();
}

int MockNnapi_getCounter(const char* name, uint64_t* value) {
  NN_CHECK_NOT_NULL(name);
  NN_CHECK_NOT_NULL(value);
  std::optional<uint64_t> counter = mock_nnapi::CounterByName(name);
  NN_CHECK(counter.has_value(), ANEURALNETWORKS_BAD_DATA) << "unknown counter " << name;
  *value = *counter;
  return ANEURALNETWORKS_NO_ERROR;
}

uint64_t MockNnapi_getOperationExecutedCount(int32_t operationType) {
  return mock_nnapi::OperationExecutedCount(operationType);
}

void MockNnapi_resetCounters(void) { mock_nnapi::ResetCounters(); }

const char* MockNnapi_getLastError(void) { return mock_nnapi::LastError().c_str(); }

void MockNnapi_clearLastError(void) { mock_nnapi::ClearLastError(); }

int MockNnapi_injectFault(const char* functionName, int resultCode, int32_t count) {
  NN_CHECK_NOT_NULL(functionName);
  NN_CHECK(mock_nnapi::InjectFault(functionName, resultCode, count), ANEURALNETWORKS_BAD_DATA)
      << "cannot inject a fault into '" << functionName
      << "': not an NNAPI function returning a result code, or count 0";
  return ANEURALNETWORKS_NO_ERROR;
}

void MockNnapi_clearFaults(void) { mock_nnapi::ClearFaults(); }

uint64_t MockNnapi_getInjectedFaultCount(void) { return mock_nnapi::InjectedFaultCount(); }

void MockNnapi_holdCompilations(int32_t hold) { mock_nnapi::SetCompilationsHeld(hold != 0); }

uint32_t MockNnapi_getHeldCompilationCount(void) { return mock_nnapi::HeldCompilationCount(); }

// ---- Device profiles, device faults, modelled timing and traces --------------------------------

namespace {
// Strings returned to C callers: valid until the next such call on the same thread.
const char* ThreadLocalString(std::string value) {
  thread_local std::string storage;
  storage = std::move(value);
  return storage.c_str();
}
}  // namespace

int MockNnapi_setProfile(const char* nameOrPath) {
  return mock_nnapi::SelectProfile(nameOrPath != nullptr ? nameOrPath
                                                         : mock_nnapi::kDefaultProfileName);
}

const char* MockNnapi_getProfileName(void) {
  return ThreadLocalString(mock_nnapi::ActiveProfileName());
}

const char* MockNnapi_getProfileJson(void) {
  return ThreadLocalString(mock_nnapi::ActiveProfileJson());
}

const char* MockNnapi_getDevicePerformance(void) {
  return ThreadLocalString(mock_nnapi::ActiveDevicePerformanceJson());
}

const char* MockNnapi_getAvailableProfiles(void) {
  std::string json = "[";
  for (const std::string& name : mock_nnapi::AvailableProfileNames()) {
    json += (json.size() > 1 ? "," : "") + mock_nnapi::JsonQuote(name);
  }
  return ThreadLocalString(json + "]");
}

int MockNnapi_injectDeviceFault(const char* deviceName, int32_t fault, int64_t value,
                                int32_t count) {
  NN_CHECK_NOT_NULL(deviceName);
  return mock_nnapi::InjectDeviceFault(deviceName, fault, value, count);
}

int MockNnapi_injectOperationFault(int32_t operationType, float offset, int32_t count) {
  NN_CHECK(count != 0, ANEURALNETWORKS_BAD_DATA)
      << "MockNnapi_injectOperationFault: count 0 arms nothing";
  mock_nnapi::InjectOperationFault(operationType, offset, count);
  return ANEURALNETWORKS_NO_ERROR;
}

const char* MockNnapi_getLastTrace(void) { return ThreadLocalString(mock_nnapi::LastTraceJson()); }

const char* MockNnapi_getTraces(void) { return ThreadLocalString(mock_nnapi::TracesJson()); }

void MockNnapi_clearTraces(void) { mock_nnapi::ClearTraces(); }

void MockNnapi_setTraceCapacity(uint32_t capacity) { mock_nnapi::SetTraceCapacity(capacity); }

int MockNnapi_getModelledCompilationTime(const ANeuralNetworksCompilation* compilation,
                                         uint64_t* nanoseconds) {
  NN_CHECK_NOT_NULL(compilation);
  NN_CHECK_NOT_NULL(nanoseconds);
  const auto* object = reinterpret_cast<const mock_nnapi::Compilation*>(compilation);
  NN_CHECK(object->usable(), ANEURALNETWORKS_BAD_STATE)
      << "MockNnapi_getModelledCompilationTime: the compilation did not finish successfully";
  *nanoseconds = mock_nnapi::ModelledNanoseconds(mock_nnapi::ModelledCompilationUs(*object));
  return ANEURALNETWORKS_NO_ERROR;
}

void MockNnapi_setCostOnlyExecution(int32_t enabled) {
  mock_nnapi::SetCostOnlyExecution(enabled != 0);
}

int32_t MockNnapi_getCostOnlyExecution(void) { return mock_nnapi::CostOnlyExecution() ? 1 : 0; }

}  // extern "C"
