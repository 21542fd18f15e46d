// SPDX-License-Identifier: Apache-2.0
#include "trace.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "check.h"
#include "fault_injection.h"
#include "json.h"
#include "profile.h"
#include "statistics.h"

namespace mock_nnapi {

namespace {

struct TraceStore {
  std::mutex mutex;
  std::deque<ExecutionTrace> traces;
  size_t capacity = kDefaultTraceCapacity;
};

TraceStore& Store() {
  static TraceStore* store = new TraceStore();  // used until process exit
  return *store;
}

const char* PreferenceName(int32_t preference) {
  switch (preference) {
    case ANEURALNETWORKS_PREFER_LOW_POWER:
      return "LOW_POWER";
    case ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER:
      return "FAST_SINGLE_ANSWER";
    case ANEURALNETWORKS_PREFER_SUSTAINED_SPEED:
      return "SUSTAINED_SPEED";
    default:
      return "UNKNOWN";
  }
}

const char* KindName(TimelineEvent::Kind kind) {
  switch (kind) {
    case TimelineEvent::Kind::kRuntime:
      return "runtime";
    case TimelineEvent::Kind::kDriver:
      return "driver";
    case TimelineEvent::Kind::kTransfer:
      return "transfer";
    case TimelineEvent::Kind::kOperation:
      return "operation";
  }
  return "event";
}

void WriteEvent(const TimelineEvent& event, const std::vector<std::string>& lanes,
                std::ostringstream* out) {
  *out << "{\"kind\":" << JsonQuote(KindName(event.kind)) << ",\"name\":" << JsonQuote(event.name)
       << ",\"lane\":" << event.lane << ",\"device\":" << JsonQuote(lanes[event.lane])
       << ",\"start_us\":" << JsonNumber(event.start_us)
       << ",\"duration_us\":" << JsonNumber(event.duration_us)
       << ",\"end_us\":" << JsonNumber(event.start_us + event.duration_us);
  if (event.kind == TimelineEvent::Kind::kOperation) {
    *out << ",\"operation\":" << event.operation_index
         << ",\"operation_type\":" << event.operation_type
         << ",\"data_class\":" << JsonQuote(DataClassName(event.data_class))
         << ",\"operation_class\":"
         << JsonQuote(OperationClassName(OperationClassOf(event.operation_type)))
         << ",\"flops\":" << JsonNumber(event.flops, 17)
         << ",\"bytes\":" << JsonNumber(event.bytes, 17)
         << ",\"compute_us\":" << JsonNumber(event.compute_us)
         << ",\"memory_us\":" << JsonNumber(event.memory_us)
         << ",\"busy_us\":" << JsonNumber(event.busy_us)
         << ",\"overhead_us\":" << JsonNumber(event.overhead_us)
         << ",\"efficiency\":" << JsonNumber(event.efficiency)
         << ",\"compute_efficiency\":" << JsonNumber(event.compute_efficiency)
         << ",\"memory_efficiency\":" << JsonNumber(event.memory_efficiency)
         << ",\"bound\":" << JsonQuote(event.compute_bound ? "compute" : "memory")
         << ",\"fused\":" << (event.fused ? "true" : "false")
         << ",\"fused_bytes\":" << JsonNumber(event.fused_bytes, 17)
         << ",\"on_chip_us\":" << JsonNumber(event.on_chip_us)
         << ",\"on_chip_bytes\":" << JsonNumber(event.on_chip_bytes, 17)
         << ",\"step_temporary_bytes\":[";
    for (size_t i = 0; i < event.step_temporary_bytes.size(); ++i) {
      *out << (i ? "," : "") << JsonNumber(event.step_temporary_bytes[i], 17);
    }
    *out << "]"
         << ",\"cpu_fallback\":" << (event.cpu_fallback ? "true" : "false")
         << ",\"energy_uj\":" << JsonNumber(event.energy_uj);
  } else if (event.kind == TimelineEvent::Kind::kTransfer) {
    *out << ",\"operand\":" << event.operand << ",\"direction\":" << JsonQuote(event.direction)
         << ",\"bytes\":" << JsonNumber(event.bytes, 17)
         << ",\"energy_uj\":" << JsonNumber(event.energy_uj);
  }
  *out << "}";
}

std::string ToJson(const ExecutionTrace& trace) {
  const ModelledExecution& modelled = trace.modelled;
  std::ostringstream out;
  out << "{\"id\":" << trace.id << ",\"modelled\":true"
      << ",\"profile\":" << JsonQuote(trace.profile);
  if (!trace.retimed_from.empty()) out << ",\"retimed_from\":" << JsonQuote(trace.retimed_from);
  out << ",\"result\":" << JsonQuote(ResultCodeName(trace.result))
      << ",\"result_code\":" << trace.result
      << ",\"preference\":" << JsonQuote(PreferenceName(trace.preference))
      << ",\"timeout_ns\":" << (trace.timeout_ns ? std::to_string(*trace.timeout_ns) : "null")
      << ",\"cost_only\":" << (trace.cost_only ? "true" : "false")
      << ",\"compilation\":{\"explicit_devices\":" << (trace.explicit_devices ? "true" : "false")
      << ",\"devices\":[";
  for (size_t i = 0; i < trace.compilation_devices.size(); ++i) {
    out << (i ? "," : "") << JsonQuote(trace.compilation_devices[i]);
  }
  out << "],\"modelled_us\":" << JsonNumber(trace.compilation_us)
      << ",\"cache_hit\":" << (trace.cache_hit ? "true" : "false") << "}"
      << ",\"modelled_total_us\":" << JsonNumber(modelled.total_us)
      << ",\"modelled_in_driver_us\":" << JsonNumber(modelled.in_driver_us)
      << ",\"modelled_on_hardware_us\":" << JsonNumber(modelled.on_hardware_us)
      << ",\"modelled_energy_uj\":" << JsonNumber(modelled.energy_uj)
      << ",\"flops\":" << JsonNumber(modelled.flops, 15)
      << ",\"bytes\":" << JsonNumber(modelled.bytes, 15)
      << ",\"transfer_bytes\":" << JsonNumber(modelled.transfer_bytes, 15) << ",\"lanes\":[";
  for (size_t i = 0; i < modelled.lanes.size(); ++i) {
    out << (i ? "," : "") << JsonQuote(modelled.lanes[i]);
  }
  out << "],\"events\":[";
  for (size_t i = 0; i < modelled.events.size(); ++i) {
    if (i) out << ",";
    WriteEvent(modelled.events[i], modelled.lanes, &out);
  }
  out << "]}";
  return out.str();
}

}  // namespace

uint64_t NextExecutionId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

void RecordTrace(ExecutionTrace trace) {
  TraceStore& store = Store();
  std::lock_guard<std::mutex> lock(store.mutex);
  if (store.capacity == 0) return;
  store.traces.push_back(std::move(trace));
  while (store.traces.size() > store.capacity) store.traces.pop_front();
}

std::string LastTraceJson() {
  TraceStore& store = Store();
  std::lock_guard<std::mutex> lock(store.mutex);
  return store.traces.empty() ? "null" : ToJson(store.traces.back());
}

std::string TracesJson() {
  TraceStore& store = Store();
  std::lock_guard<std::mutex> lock(store.mutex);
  std::string json = "[";
  for (size_t i = 0; i < store.traces.size(); ++i) {
    if (i) json += ",";
    json += ToJson(store.traces[i]);
  }
  return json + "]";
}

void ClearTraces() {
  TraceStore& store = Store();
  std::lock_guard<std::mutex> lock(store.mutex);
  store.traces.clear();
}

void SetTraceCapacity(size_t capacity) {
  TraceStore& store = Store();
  std::lock_guard<std::mutex> lock(store.mutex);
  store.capacity = capacity;
  while (store.traces.size() > store.capacity) store.traces.pop_front();
}

size_t TraceCapacity() {
  TraceStore& store = Store();
  std::lock_guard<std::mutex> lock(store.mutex);
  return store.capacity;
}

namespace {

// The profile's execution driver failures (DriverFailure) of the devices the compilation
// assigned: each (device, entry) the execution runs counts once. A failing one fails the
// execution with its result code; without an explicit device list the runtime's CPU fallback
// runs the model instead (Android's ExecutionBuilder), so the execution succeeds (the mock has
// computed every output already) and the failure is only counted and logged.
int ApplyDriverExecutionFailures(const Compilation& compilation) {
  const Model& model = compilation.model();
  const std::vector<int>& assignment = compilation.operation_devices();
  std::vector<std::pair<const Device*, int>> counted;
  for (size_t op = 0; op < assignment.size() && op < model.operations().size(); ++op) {
    if (assignment[op] == kRuntimeCpuFallback) continue;
    const Device* device = compilation.devices()[assignment[op]];
    const Operation& operation = model.operations()[op];
    const int entry = device->DriverFailureFor(model, operation, DriverFailure::Stage::kExecution);
    if (entry < 0) continue;
    if (std::find(counted.begin(), counted.end(), std::make_pair(device, entry)) != counted.end()) {
      continue;
    }
    counted.emplace_back(device, entry);
    const int code = TakeDriverExecutionFailure(*device, entry);
    if (code == ANEURALNETWORKS_NO_ERROR) continue;
    Increment(Counter::kDriverFailures);
    const std::string what = "operation " + std::to_string(op) + ": " +
                             DescribeDriverFailure(*device, model, operation, entry);
    if (!compilation.explicit_devices()) {
      LogInfo("execution: " + what + "; the runtime's CPU fallback ran the model");
      continue;
    }
    return CheckFailure(__FILE__, __LINE__, "the driver executes what it compiled", code)
           << "execution: " << what;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

int CompleteModelledExecution(const Compilation& compilation, const CostRecorder& recorder,
                              int result, std::optional<uint64_t> deadline_ns,
                              ModelledTiming* timing) {
  ExecutionTrace trace;
  trace.modelled = recorder.Finish();
  const ModelledExecution& modelled = trace.modelled;
  timing->on_hardware_ns = ModelledNanoseconds(modelled.on_hardware_us);
  timing->in_driver_ns = ModelledNanoseconds(modelled.in_driver_us);
  timing->total_ns = ModelledNanoseconds(modelled.total_us);
  if (result == ANEURALNETWORKS_NO_ERROR) {
    // A device with an armed execution-timeout fault aborts the run (one use per execution).
    std::vector<const Device*> used;
    for (uint32_t op = 0; op < compilation.model().operations().size(); ++op) {
      const Device* device = &ModelledDevice(compilation, op);
      if (std::find(used.begin(), used.end(), device) == used.end()) used.push_back(device);
    }
    for (const Device* device : used) {
      const int fault = TakeExecutionFault(*device);
      if (fault != ANEURALNETWORKS_NO_ERROR && result == ANEURALNETWORKS_NO_ERROR) {
        CountInjectedFault();
        result = CheckFailure(__FILE__, __LINE__, "no injected execution timeout", fault)
                 << "injected fault: the execution on " << device->name << " missed its deadline";
      }
    }
  }
  if (result == ANEURALNETWORKS_NO_ERROR) result = ApplyDriverExecutionFailures(compilation);
  if (result == ANEURALNETWORKS_NO_ERROR && deadline_ns && timing->total_ns > *deadline_ns) {
    result = CheckFailure(__FILE__, __LINE__, "modelled execution time <= timeout",
                          ANEURALNETWORKS_MISSED_DEADLINE_TRANSIENT)
             << "the modelled execution time " << timing->total_ns << " ns exceeds the timeout "
             << *deadline_ns << " ns";
  }
  if (TraceCapacity() > 0) {
    trace.id = NextExecutionId();
    trace.profile = ActiveProfileName();
    trace.result = result;
    trace.preference = compilation.preference();
    trace.explicit_devices = compilation.explicit_devices();
    for (const Device* device : compilation.devices()) {
      trace.compilation_devices.push_back(device->name);
    }
    trace.compilation_us = ModelledCompilationUs(compilation);
    trace.cache_hit = compilation.cache_hit();
    trace.timeout_ns = deadline_ns;
    trace.cost_only = CostOnlyExecution();
    RecordTrace(std::move(trace));
  }
  return result;
}

namespace {

int32_t PreferenceFromName(const std::string& name) {
  for (int32_t preference :
       {ANEURALNETWORKS_PREFER_LOW_POWER, ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER,
        ANEURALNETWORKS_PREFER_SUSTAINED_SPEED}) {
    if (name == PreferenceName(preference)) return preference;
  }
  return ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER;
}

}  // namespace

std::string TraceJson(const ExecutionTrace& trace) { return ToJson(trace); }

bool ReadRecordedExecution(const std::string& trace_json, RecordedExecution* recorded,
                           std::string* error) {
  JsonValue document;
  if (!ParseJson(trace_json, &document, error) ||
      !ReadRecordedEvents(document, &recorded->events, error)) {
    *error = "trace: " + *error;
    return false;
  }
  ExecutionTrace& trace = recorded->header;
  trace = ExecutionTrace();
  if (const JsonValue* id = document.Find("id"); id != nullptr && id->is_integer()) {
    trace.id = static_cast<uint64_t>(id->integer_value());
  }
  if (const JsonValue* code = document.Find("result_code"); code != nullptr && code->is_integer()) {
    trace.result = static_cast<int>(code->integer_value());
  }
  if (const JsonValue* value = document.Find("preference");
      value != nullptr && value->is_string()) {
    trace.preference = PreferenceFromName(value->string_value());
  }
  if (const JsonValue* value = document.Find("timeout_ns");
      value != nullptr && value->is_integer()) {
    trace.timeout_ns = static_cast<uint64_t>(value->integer_value());
  }
  if (const JsonValue* value = document.Find("cost_only"); value != nullptr && value->is_bool()) {
    trace.cost_only = value->bool_value();
  }
  if (const JsonValue* compilation = document.Find("compilation");
      compilation != nullptr && compilation->is_object()) {
    if (const JsonValue* value = compilation->Find("explicit_devices");
        value != nullptr && value->is_bool()) {
      trace.explicit_devices = value->bool_value();
    }
    if (const JsonValue* value = compilation->Find("cache_hit");
        value != nullptr && value->is_bool()) {
      trace.cache_hit = value->bool_value();
    }
    if (const JsonValue* devices = compilation->Find("devices");
        devices != nullptr && devices->is_array()) {
      for (const JsonValue& device : devices->array_items()) {
        if (device.is_string()) trace.compilation_devices.push_back(device.string_value());
      }
    }
  }
  const JsonValue* recorded_on = document.Find("profile");
  trace.profile =
      recorded_on != nullptr && recorded_on->is_string() ? recorded_on->string_value() : "unknown";
  return true;
}

bool RetimeRecordedExecution(const Profile& profile, const RecordedExecution& recorded,
                             ExecutionTrace* retimed, std::string* error) {
  ExecutionTrace trace = recorded.header;
  std::map<const Device*, size_t> operations_per_device;
  if (!RetimeExecution(profile, recorded.events, &trace.modelled, &operations_per_device, error)) {
    *error = "trace: " + *error;
    return false;
  }
  trace.retimed_from = recorded.header.profile;
  trace.profile = profile.name;
  trace.compilation_us = ModelledCompilationUs(operations_per_device, trace.cache_hit);
  *retimed = std::move(trace);
  return true;
}

}  // namespace mock_nnapi
