// The MockNnapi_* control API (include/mock_nnapi/mock_nnapi.h).
#include <mock_nnapi/mock_nnapi.h>

#include "check.h"
#include "fault_injection.h"
#include "statistics.h"

#ifndef MOCK_NNAPI_VERSION
#define MOCK_NNAPI_VERSION "0.0.0"
#endif

extern "C" {

const char* MockNnapi_getVersion(void) { return "mock_nnapi " MOCK_NNAPI_VERSION; }

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

}  // extern "C"
