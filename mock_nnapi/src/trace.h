// SPDX-License-Identifier: Apache-2.0
// Traces of the last executions: which operation ran on which device, with the MODELLED start,
// duration, work and transfers of each (cost_model.h). Kept in a bounded ring and read as JSON
// through MockNnapi_getLastTrace / MockNnapi_getTraces; the Python package turns them into
// Chrome trace-event JSON for Perfetto (mock_nnapi.control.trace_to_chrome_json).
#ifndef MOCK_NNAPI_SRC_TRACE_H_
#define MOCK_NNAPI_SRC_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost_model.h"

namespace mock_nnapi {

struct ExecutionTrace {
  uint64_t id = 0;
  std::string profile;
  int result = ANEURALNETWORKS_NO_ERROR;
  int32_t preference = ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER;
  bool explicit_devices = false;
  std::vector<std::string> compilation_devices;
  double compilation_us = 0;
  bool cache_hit = false;
  std::optional<uint64_t> timeout_ns;
  bool cost_only = false;  // kernels were skipped (MockNnapi_setCostOnlyExecution)
  // Set on a re-timed trace: the profile the execution was recorded on.
  std::string retimed_from;
  ModelledExecution modelled;
};

constexpr size_t kDefaultTraceCapacity = 16;

// A fresh execution id (1, 2, ...).
uint64_t NextExecutionId();
// Keeps `trace` as the newest; the oldest is dropped beyond the capacity.
void RecordTrace(ExecutionTrace trace);
// The newest trace as a JSON object, or "null".
std::string LastTraceJson();
// Every kept trace, oldest first, as a JSON array.
std::string TracesJson();
void ClearTraces();
// How many traces are kept (0 stops tracing).
void SetTraceCapacity(size_t capacity);
size_t TraceCapacity();

// A trace as the JSON object MockNnapi_getLastTrace returns.
std::string TraceJson(const ExecutionTrace& trace);
// A trace document (that JSON) read for re-timing: its header (everything but the modelled
// timeline) and its recorded events.
struct RecordedExecution {
  ExecutionTrace header;
  std::vector<RecordedEvent> events;
};
// False with `error` naming the field or event at fault.
bool ReadRecordedExecution(const std::string& trace_json, RecordedExecution* recorded,
                           std::string* error);
// The recorded execution re-timed on the devices of `profile` (RetimeExecution): its header
// with `profile`'s modelled times, compilation time included, and `retimed_from` naming the
// profile it was recorded on. False with `error`.
bool RetimeRecordedExecution(const Profile& profile, const RecordedExecution& recorded,
                             ExecutionTrace* retimed, std::string* error);

// Modelled durations of one execution, in nanoseconds (never measured).
struct ModelledTiming {
  uint64_t on_hardware_ns = 0;
  uint64_t in_driver_ns = 0;
  uint64_t total_ns = 0;
};

// Completes the modelled side of a run of `compilation` whose executor returned `result`:
// builds the timeline, fails the run with an armed device execution fault
// (MOCK_NNAPI_DEVICE_FAULT_EXECUTION_TIMEOUT) or with MISSED_DEADLINE_TRANSIENT when the
// modelled time exceeds `deadline_ns`, records the trace and returns the (possibly changed)
// result.
int CompleteModelledExecution(const Compilation& compilation, const CostRecorder& recorder,
                              int result, std::optional<uint64_t> deadline_ns,
                              ModelledTiming* timing);

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_TRACE_H_
