// SPDX-License-Identifier: Apache-2.0
// The MockNnapi_* control API (include/mock_nnapi/mock_nnapi.h).
#include <mock_nnapi/mock_nnapi.h>

#include <memory>
#include <string>

#include "check.h"
#include "compilation.h"
#include "cost_model.h"
#include "device.h"
#include "executor.h"
#include "fault_injection.h"
#include "json.h"
#include "nnapi_facts.h"
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

const char* MockNnapi_getProfileOrigin(void) {
  return ThreadLocalString(mock_nnapi::ActiveProfileOrigin());
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

// ---- The cost model on its own
// -------------------------------------------------------------------

struct MockNnapi_CostModel {
  mock_nnapi::Profile profile;
};

namespace {

const mock_nnapi::Device* FindProfileDevice(const mock_nnapi::Profile& profile,
                                            const std::string& name) {
  for (const auto& device : profile.devices) {
    if (device->name == name) return device.get();
  }
  return nullptr;
}

}  // namespace

int MockNnapi_createCostModel(const char* profile, MockNnapi_CostModel** model) {
  NN_CHECK_NOT_NULL(profile);
  NN_CHECK_NOT_NULL(model);
  *model = nullptr;
  auto created = std::make_unique<MockNnapi_CostModel>();
  std::string text = profile;
  std::string error;
  const size_t start = text.find_first_not_of(" \t\r\n");
  const bool document = start != std::string::npos && text[start] == '{';
  const bool ok =
      document ? mock_nnapi::ParseProfile(text, "profile document", &created->profile, &error)
               : mock_nnapi::LoadProfile(text, &created->profile, &error);
  NN_CHECK(ok, ANEURALNETWORKS_BAD_DATA) << error;
  *model = created.release();
  return ANEURALNETWORKS_NO_ERROR;
}

void MockNnapi_freeCostModel(MockNnapi_CostModel* model) { delete model; }

int MockNnapi_costOfOperation(const MockNnapi_CostModel* model, const char* device,
                              const char* operationClass, const char* dataClass, double flops,
                              double bytes, MockNnapi_OperationCost* cost) {
  return MockNnapi_costOfOperationOnChip(model, device, operationClass, dataClass, flops, bytes, 0,
                                         cost);
}

int MockNnapi_costOfOperationOnChip(const MockNnapi_CostModel* model, const char* device,
                                    const char* operationClass, const char* dataClass, double flops,
                                    double bytes, double onChipBytes,
                                    MockNnapi_OperationCost* cost) {
  NN_CHECK_NOT_NULL(model);
  NN_CHECK_NOT_NULL(device);
  NN_CHECK_NOT_NULL(operationClass);
  NN_CHECK_NOT_NULL(dataClass);
  NN_CHECK_NOT_NULL(cost);
  const mock_nnapi::Device* found = FindProfileDevice(model->profile, device);
  NN_CHECK(found != nullptr, ANEURALNETWORKS_BAD_DATA)
      << "profile '" << model->profile.name << "' has no device named '" << device << "'";
  const auto operation_class = mock_nnapi::OperationClassFromName(operationClass);
  NN_CHECK(operation_class.has_value(), ANEURALNETWORKS_BAD_DATA)
      << "unknown operation class '" << operationClass << "'";
  const auto data_class = mock_nnapi::DataClassFromName(dataClass);
  NN_CHECK(data_class.has_value(), ANEURALNETWORKS_BAD_DATA)
      << "unknown data class '" << dataClass << "'";
  NN_CHECK(flops >= 0 && bytes >= 0, ANEURALNETWORKS_BAD_DATA)
      << "work must be non-negative (flops " << flops << ", bytes " << bytes << ")";
  NN_CHECK(onChipBytes >= 0 && onChipBytes <= bytes, ANEURALNETWORKS_BAD_DATA)
      << "on-chip bytes must be within the bytes (" << onChipBytes << " of " << bytes << ")";
  const mock_nnapi::OperationCost result = mock_nnapi::CostOfOperation(
      found->timing, *operation_class, mock_nnapi::OperationWork{flops, bytes, onChipBytes},
      *data_class);
  cost->compute_us = result.compute_us;
  cost->memory_us = result.memory_us;
  cost->compute_efficiency = result.compute_efficiency;
  cost->memory_efficiency = result.memory_efficiency;
  cost->busy_us = result.busy_us;
  cost->overhead_us = found->timing.operation_overhead_us;
  cost->energy_uj = result.energy_uj;
  cost->compute_bound = result.compute_bound ? 1 : 0;
  return ANEURALNETWORKS_NO_ERROR;
}

int MockNnapi_costOfTransfer(const MockNnapi_CostModel* model, const char* device, double bytes,
                             double* us) {
  NN_CHECK_NOT_NULL(model);
  NN_CHECK_NOT_NULL(device);
  NN_CHECK_NOT_NULL(us);
  const mock_nnapi::Device* found = FindProfileDevice(model->profile, device);
  NN_CHECK(found != nullptr, ANEURALNETWORKS_BAD_DATA)
      << "profile '" << model->profile.name << "' has no device named '" << device << "'";
  NN_CHECK(bytes >= 0, ANEURALNETWORKS_BAD_DATA) << "bytes must be non-negative, got " << bytes;
  *us = found->type == ANEURALNETWORKS_DEVICE_CPU
            ? 0.0
            : mock_nnapi::TransferTimeUs(found->timing, bytes);
  return ANEURALNETWORKS_NO_ERROR;
}

struct MockNnapi_RecordedExecution {
  mock_nnapi::RecordedExecution recorded;
};

int MockNnapi_createRecordedExecution(const char* traceJson,
                                      MockNnapi_RecordedExecution** recorded) {
  NN_CHECK_NOT_NULL(traceJson);
  NN_CHECK_NOT_NULL(recorded);
  *recorded = nullptr;
  auto created = std::make_unique<MockNnapi_RecordedExecution>();
  std::string error;
  NN_CHECK(mock_nnapi::ReadRecordedExecution(traceJson, &created->recorded, &error),
           ANEURALNETWORKS_BAD_DATA)
      << error;
  *recorded = created.release();
  return ANEURALNETWORKS_NO_ERROR;
}

void MockNnapi_freeRecordedExecution(MockNnapi_RecordedExecution* recorded) { delete recorded; }

int MockNnapi_retimeExecution(const MockNnapi_CostModel* model,
                              const MockNnapi_RecordedExecution* recorded,
                              MockNnapi_ModelledTimes* times, const char** retimedJson) {
  NN_CHECK_NOT_NULL(model);
  NN_CHECK_NOT_NULL(recorded);
  NN_CHECK_NOT_NULL(times);
  mock_nnapi::ExecutionTrace retimed;
  std::string error;
  NN_CHECK(
      mock_nnapi::RetimeRecordedExecution(model->profile, recorded->recorded, &retimed, &error),
      ANEURALNETWORKS_BAD_DATA)
      << error;
  times->total_us = retimed.modelled.total_us;
  times->in_driver_us = retimed.modelled.in_driver_us;
  times->on_hardware_us = retimed.modelled.on_hardware_us;
  times->energy_uj = retimed.modelled.energy_uj;
  times->compilation_us = retimed.compilation_us;
  if (retimedJson != nullptr) *retimedJson = ThreadLocalString(mock_nnapi::TraceJson(retimed));
  return ANEURALNETWORKS_NO_ERROR;
}

const char* MockNnapi_getCostClasses(void) {
  static const std::string* classes = [] {
    std::string json = "{\"operation_classes\":[";
    for (int k = 0; k < mock_nnapi::kOperationClassCount; ++k) {
      json += (k ? "," : "") + mock_nnapi::JsonQuote(mock_nnapi::OperationClassName(
                                   static_cast<mock_nnapi::OperationClass>(k)));
    }
    json += "],\"data_classes\":[";
    for (int c = 0; c < mock_nnapi::kDataClassCount; ++c) {
      json +=
          (c ? "," : "") +
          mock_nnapi::JsonQuote(mock_nnapi::DataClassName(static_cast<mock_nnapi::DataClass>(c)));
    }
    json += "],\"operations\":{";
    bool first = true;
    for (const nnapi_common::OperationFacts& facts : nnapi_common::kOperations) {
      json += (first ? "" : ",") + mock_nnapi::JsonQuote(facts.name) + ":" +
              mock_nnapi::JsonQuote(
                  mock_nnapi::OperationClassName(mock_nnapi::OperationClassOf(facts.code)));
      first = false;
    }
    return new std::string(json + "}}");  // never freed: returned to C callers
  }();
  return classes->c_str();
}

}  // extern "C"
