// SPDX-License-Identifier: Apache-2.0
// Test entry points of the runtime library, callable in process or over TVM RPC, so that the
// NNAPI-level tests run on a target's own NNAPI (a phone's libneuralnetworks.so, or the mock in
// an RPC server) and compare with the mock operation by operation (docs/targets.md).
//
//   tvm_nnapi.testing.run_graph(graph_json, constants, inputs..., outputs...) -> str (JSON)
//       Builds the graph (docs/graph-json.md) for the input shapes, compiles it on the
//       process's NNAPI through the dlopen loader, runs one execution into the output tensors
//       (destination-passing, host memory) and returns what happened: the output shapes NNAPI
//       reported, the library, whether it is the mock, and measured times.
//   tvm_nnapi.testing.nnapi_stats(module) -> str (JSON)
//       Sums the statistics of every "nnapi" module imported (transitively) by `module`, e.g. a
//       loaded relax executable: tells a remote test whether its subgraphs ran on NNAPI.
//   tvm_nnapi.testing.nnapi_info() -> str (JSON)
//       The NNAPI library of this process, its feature level, whether it is the mock and, for
//       the mock, its active device profile.
//   tvm_nnapi.testing.nnapi_devices() -> str (JSON)
//       The info above and the NNAPI devices the library enumerates: index, name, type (NNAPI's
//       ANEURALNETWORKS_DEVICE_* code), feature level and version, as NNAPI reports them.
//   tvm_nnapi.testing.supported_operations(graph_json, constants, shapes_json) -> str (JSON)
//       Builds the graph's NNAPI model for the input shapes `shapes_json` ([[dims...], ...],
//       one per graph input; "[]" for a graph without symbols) without compiling it, and asks
//       NNAPI which of its operations each device supports
//       (ANeuralNetworksModel_getSupportedOperationsForDevices, one device at a time):
//       {"operations": [NNAPI operation codes], "devices": {name: [true/false per operation]}}.
//   tvm_nnapi.testing.time_graph(graph_json, constants, zero_blob_bytes, device, repeats,
//                                warmup) -> str (JSON)
//       Times a graph with static shapes on one NNAPI device of this process, as `tvm-nnapi
//       measure` does on a target: the constant blob is `constants`, or, when that is empty,
//       `zero_blob_bytes` zero bytes made here (timing workloads have zero weights, which then
//       need not travel to a phone). One compilation for `device` alone
//       (createForDevices, so NNAPI reports getDuration), `warmup` executions on zero inputs,
//       then `repeats` timed ones: per execution the wall clock around the compute and NNAPI's
//       DURATION_IN_DRIVER and DURATION_ON_HARDWARE (-1 where the driver reports none). On the
//       mock the executions are cost-only and each also gives its trace's modelled total:
//       {..., "device", "operations", "compile_ns", "cost_only", "wall_ns": [...],
//        "in_driver_ns": [...], "on_hardware_ns": [...], "modelled_total_us": [...] (mock)}.
#include <dlpack/dlpack.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/json.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "graph.h"
#include "nnapi_loader.h"
#include "nnapi_module.h"
#include "runtime_config.h"

namespace tvm_nnapi {
namespace {

namespace ffi = tvm::ffi;

std::string JsonString(const std::string& text) {
  std::ostringstream out;
  out << '"';
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
      out << buffer;
    } else {
      out << c;
    }
  }
  out << '"';
  return out.str();
}

std::string InfoJson(const Nnapi& nnapi) {
  std::ostringstream out;
  out << "\"library\": " << JsonString(nnapi.library_path)
      << ", \"mock\": " << (nnapi.is_mock ? "true" : "false")
      << ", \"feature_level\": " << nnapi.runtime_feature_level;
  if (nnapi.MockNnapi_getProfileName != nullptr) {
    const char* profile = nnapi.MockNnapi_getProfileName();
    out << ", \"mock_profile\": " << JsonString(profile != nullptr ? profile : "");
  }
  return out.str();
}

int64_t ElapsedNs(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start)
      .count();
}

// Checks one argument of run_graph against its graph operand; `role` names it in messages.
DLTensor* CheckTensor(ffi::AnyView arg, const GraphOperand& operand, const std::string& role) {
  auto tensor = arg.try_cast<DLTensor*>();
  if (!tensor.has_value()) {
    TVM_FFI_THROW(TypeError) << "tvm_nnapi.testing.run_graph: " << role << " is not a tensor";
  }
  DLTensor* t = *tensor;
  if (t->device.device_type != kDLCPU) {
    TVM_FFI_THROW(ValueError) << "tvm_nnapi.testing.run_graph: " << role
                              << " must be in host (CPU) memory";
  }
  if (t->strides != nullptr) {
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; --i) {
      if (t->shape[i] != 1 && t->strides[i] != expected) {
        TVM_FFI_THROW(ValueError) << "tvm_nnapi.testing.run_graph: " << role
                                  << " must be a compact (row-major) tensor";
      }
      expected *= t->shape[i];
    }
  }
  const size_t element = OperandElementSize(operand.type);
  if (element == 0 || t->dtype.lanes != 1 || static_cast<size_t>(t->dtype.bits) != element * 8) {
    TVM_FFI_THROW(TypeError) << "tvm_nnapi.testing.run_graph: " << role << " has "
                             << static_cast<int>(t->dtype.bits) << "-bit elements, " << operand.name
                             << " needs " << element * 8;
  }
  return t;
}

// run_graph: see the file comment.
ffi::String RunGraph(ffi::PackedArgs args) {
  if (args.size() < 2) {
    TVM_FFI_THROW(ValueError) << "tvm_nnapi.testing.run_graph(graph_json, constants, inputs..., "
                                 "outputs...) needs at least the graph and the constants";
  }
  const std::string graph_json = args[0].cast<ffi::String>();
  const ffi::Bytes constants_bytes = args[1].cast<ffi::Bytes>();
  // The model references constants by pointer: keep them alive until the compilation is freed.
  const std::string constants(constants_bytes.data(), constants_bytes.size());
  const Graph graph = Graph::Parse(graph_json, constants.size());
  const size_t num_inputs = graph.inputs.size();
  const size_t num_outputs = graph.outputs.size();
  if (static_cast<size_t>(args.size()) != 2 + num_inputs + num_outputs) {
    TVM_FFI_THROW(ValueError) << "tvm_nnapi.testing.run_graph: graph '" << graph.symbol
                              << "' takes " << num_inputs << " inputs and " << num_outputs
                              << " outputs, got " << args.size() - 2 << " tensors";
  }
  std::vector<DLTensor*> tensors;
  std::vector<std::vector<int64_t>> input_shapes;
  for (size_t i = 0; i < num_inputs + num_outputs; ++i) {
    const bool is_input = i < num_inputs;
    const size_t index = is_input ? i : i - num_inputs;
    const uint32_t operand = is_input ? graph.inputs[index] : graph.outputs[index];
    DLTensor* t = CheckTensor(args[2 + i], graph.operands[operand],
                              (is_input ? "input " : "output ") + std::to_string(index));
    if (is_input) input_shapes.emplace_back(t->shape, t->shape + t->ndim);
    tensors.push_back(t);
  }
  const std::vector<int64_t> binding = graph.BindSymbols(input_shapes);

  const Nnapi& nnapi = GetNnapi();
  RuntimeConfig config = GetRuntimeConfig();
  config.use_burst = false;  // one execution: a burst would only add set-up
  const auto compile_start = std::chrono::steady_clock::now();
  CompiledModel compiled(nnapi, graph, constants, binding, config, nullptr);
  const int64_t compile_ns = ElapsedNs(compile_start);

  auto check = [&](int code, const char* function, const std::string& what) {
    if (code == ANEURALNETWORKS_NO_ERROR) return;
    std::ostringstream message;
    message << "tvm_nnapi.testing.run_graph: graph '" << graph.symbol << "': " << function;
    if (!what.empty()) message << " for " << what;
    message << " returned " << ResultCodeString(code);
    if (nnapi.MockNnapi_getLastError != nullptr) {
      const char* detail = nnapi.MockNnapi_getLastError();
      if (detail != nullptr && detail[0] != '\0') message << " [mock_nnapi: " << detail << "]";
    }
    TVM_FFI_THROW(RuntimeError) << message.str();
  };

  ANeuralNetworksExecution* raw_execution = nullptr;
  check(nnapi.ANeuralNetworksExecution_create(compiled.compilation(), &raw_execution),
        "ANeuralNetworksExecution_create", "");
  std::unique_ptr<ANeuralNetworksExecution, decltype(nnapi.ANeuralNetworksExecution_free)>
      execution(raw_execution, nnapi.ANeuralNetworksExecution_free);
  for (size_t i = 0; i < num_inputs + num_outputs; ++i) {
    DLTensor* t = tensors[i];
    uint8_t* data = static_cast<uint8_t*>(t->data) + t->byte_offset;
    if (i < num_inputs) {
      check(nnapi.ANeuralNetworksExecution_setInput(execution.get(), static_cast<int32_t>(i),
                                                    nullptr, data, TensorBytes(*t)),
            "ANeuralNetworksExecution_setInput", "input " + std::to_string(i));
    } else {
      const int32_t index = static_cast<int32_t>(i - num_inputs);
      check(nnapi.ANeuralNetworksExecution_setOutput(execution.get(), index, nullptr, data,
                                                     TensorBytes(*t)),
            "ANeuralNetworksExecution_setOutput", "output " + std::to_string(index));
    }
  }
  const auto execute_start = std::chrono::steady_clock::now();
  if (nnapi.ANeuralNetworksExecution_compute != nullptr) {
    check(nnapi.ANeuralNetworksExecution_compute(execution.get()),
          "ANeuralNetworksExecution_compute", "");
  } else {
    ANeuralNetworksEvent* event = nullptr;
    check(nnapi.ANeuralNetworksExecution_startCompute(execution.get(), &event),
          "ANeuralNetworksExecution_startCompute", "");
    const int code = nnapi.ANeuralNetworksEvent_wait(event);
    nnapi.ANeuralNetworksEvent_free(event);
    check(code, "ANeuralNetworksEvent_wait", "");
  }
  const int64_t execute_ns = ElapsedNs(execute_start);

  // Output shapes as NNAPI reports them (feature level 3+), else the graph's concrete shapes.
  std::ostringstream shapes;
  shapes << "[";
  for (size_t o = 0; o < num_outputs; ++o) {
    std::vector<int64_t> shape = graph.ConcreteShape(graph.outputs[o], binding);
    uint32_t rank = 0;
    if (nnapi.ANeuralNetworksExecution_getOutputOperandRank != nullptr &&
        nnapi.ANeuralNetworksExecution_getOutputOperandRank(
            execution.get(), static_cast<int32_t>(o), &rank) == ANEURALNETWORKS_NO_ERROR) {
      std::vector<uint32_t> dims(rank);
      if (rank == 0 ||
          nnapi.ANeuralNetworksExecution_getOutputOperandDimensions(
              execution.get(), static_cast<int32_t>(o), dims.data()) == ANEURALNETWORKS_NO_ERROR) {
        shape.assign(dims.begin(), dims.end());
      }
    }
    shapes << (o ? ", " : "") << "[";
    for (size_t d = 0; d < shape.size(); ++d) shapes << (d ? ", " : "") << shape[d];
    shapes << "]";
  }
  shapes << "]";
  std::ostringstream result;
  result << "{" << InfoJson(nnapi) << ", \"operations\": " << graph.operations.size()
         << ", \"output_shapes\": " << shapes.str() << ", \"compile_ns\": " << compile_ns
         << ", \"execute_ns\": " << execute_ns << "}";
  return result.str();
}

// nnapi_stats: sums get_stats over the nnapi modules reachable through imports.
ffi::String NnapiStats(const ffi::Module& root) {
  std::map<std::string, int64_t> totals;
  int64_t modules = 0;
  std::set<const ffi::ModuleObj*> seen;
  std::vector<ffi::Module> stack{root};
  while (!stack.empty()) {
    ffi::Module module = stack.back();
    stack.pop_back();
    if (!seen.insert(module.operator->()).second) continue;
    if (std::string(module->kind()) == "nnapi") {
      ++modules;
      ffi::Function get_stats = module->GetFunction("get_stats").value();
      for (const auto& [key, value] : get_stats().cast<ffi::Map<ffi::String, int64_t>>()) {
        totals[std::string(key)] += value;
      }
    }
    for (const ffi::Any& item : module->imports()) stack.push_back(item.cast<ffi::Module>());
  }
  std::ostringstream out;
  out << "{\"nnapi_modules\": " << modules;
  for (const auto& [key, value] : totals) out << ", " << JsonString(key) << ": " << value;
  out << "}";
  return out.str();
}

// The devices of one NNAPI library: (device, name) in enumeration order.
std::vector<std::pair<ANeuralNetworksDevice*, std::string>> EnumerateDevices(const Nnapi& nnapi) {
  std::vector<std::pair<ANeuralNetworksDevice*, std::string>> devices;
  if (nnapi.ANeuralNetworks_getDeviceCount == nullptr) return devices;
  uint32_t count = 0;
  if (nnapi.ANeuralNetworks_getDeviceCount(&count) != ANEURALNETWORKS_NO_ERROR) return devices;
  for (uint32_t index = 0; index < count; ++index) {
    ANeuralNetworksDevice* device = nullptr;
    const char* name = nullptr;
    if (nnapi.ANeuralNetworks_getDevice(index, &device) != ANEURALNETWORKS_NO_ERROR ||
        nnapi.ANeuralNetworksDevice_getName(device, &name) != ANEURALNETWORKS_NO_ERROR) {
      TVM_FFI_THROW(RuntimeError) << "NNAPI device " << index << " of " << count
                                  << " cannot be read (getDevice/getName failed)";
    }
    devices.emplace_back(device, name != nullptr ? name : "");
  }
  return devices;
}

// nnapi_devices: see the file comment.
ffi::String NnapiDevices() {
  const Nnapi& nnapi = GetNnapi();
  std::ostringstream out;
  out << "{" << InfoJson(nnapi) << ", \"devices\": [";
  const auto devices = EnumerateDevices(nnapi);
  for (size_t i = 0; i < devices.size(); ++i) {
    ANeuralNetworksDevice* device = devices[i].first;
    int32_t type = 0;
    int64_t level = 0;
    const char* version = nullptr;
    nnapi.ANeuralNetworksDevice_getType(device, &type);
    if (nnapi.ANeuralNetworksDevice_getFeatureLevel != nullptr) {
      nnapi.ANeuralNetworksDevice_getFeatureLevel(device, &level);
    }
    if (nnapi.ANeuralNetworksDevice_getVersion != nullptr) {
      nnapi.ANeuralNetworksDevice_getVersion(device, &version);
    }
    out << (i ? ", " : "") << "{\"index\": " << i << ", \"name\": " << JsonString(devices[i].second)
        << ", \"type\": " << type << ", \"feature_level\": " << level
        << ", \"version\": " << JsonString(version != nullptr ? version : "") << "}";
  }
  out << "]}";
  return out.str();
}

// supported_operations: see the file comment.
ffi::String SupportedOperations(const ffi::String& graph_json, const ffi::Bytes& constants_bytes,
                                const ffi::String& shapes_json) {
  const std::string constants(constants_bytes.data(), constants_bytes.size());
  const std::string json_text = graph_json;
  const Graph graph = Graph::Parse(json_text, constants.size());
  // The input shapes, as a JSON array of arrays of integers (a tiny, strict reader).
  std::vector<std::vector<int64_t>> shapes;
  const std::string text = shapes_json;
  size_t depth = 0;
  std::string number;
  for (char c : text) {
    if (c == '[') {
      if (++depth == 2) shapes.emplace_back();
    } else if (c == ']' || c == ',') {
      if (!number.empty()) {
        shapes.back().push_back(std::stoll(number));
        number.clear();
      }
      if (c == ']') --depth;
    } else if ((c >= '0' && c <= '9') || c == '-') {
      if (depth != 2) TVM_FFI_THROW(ValueError) << "shapes_json: expected [[dims...], ...]";
      number += c;
    } else if (c != ' ') {
      TVM_FFI_THROW(ValueError) << "shapes_json: unexpected '" << c << "'";
    }
  }
  if (!graph.symbols.empty() && shapes.size() != graph.inputs.size()) {
    TVM_FFI_THROW(ValueError) << "tvm_nnapi.testing.supported_operations: graph '" << graph.symbol
                              << "' has " << graph.inputs.size() << " inputs, got " << shapes.size()
                              << " shapes";
  }
  const std::vector<int64_t> binding =
      graph.symbols.empty() ? std::vector<int64_t>{} : graph.BindSymbols(shapes);
  const Nnapi& nnapi = GetNnapi();
  const std::unique_ptr<CompiledModel> model =
      CompiledModel::ModelOnly(nnapi, graph, constants, binding);
  std::ostringstream out;
  out << "{\"operations\": [";
  for (size_t i = 0; i < graph.operations.size(); ++i) {
    out << (i ? ", " : "") << graph.operations[i].type;
  }
  out << "], \"devices\": {";
  const auto devices = EnumerateDevices(nnapi);
  for (size_t d = 0; d < devices.size(); ++d) {
    const std::vector<bool> supported = model->SupportedOperations(devices[d].first);
    out << (d ? ", " : "") << JsonString(devices[d].second) << ": [";
    for (size_t i = 0; i < supported.size(); ++i) {
      out << (i ? ", " : "") << (supported[i] ? "true" : "false");
    }
    out << "]";
  }
  out << "}}";
  return out.str();
}

// Cost-only executions of the mock for the lifetime of the guard (a no-op on a real NNAPI).
class CostOnlyGuard {
 public:
  explicit CostOnlyGuard(const Nnapi& nnapi) : nnapi_(nnapi) {
    if (nnapi_.MockNnapi_setCostOnlyExecution == nullptr ||
        nnapi_.MockNnapi_getCostOnlyExecution == nullptr) {
      return;
    }
    previous_ = nnapi_.MockNnapi_getCostOnlyExecution();
    nnapi_.MockNnapi_setCostOnlyExecution(1);
    active_ = true;
  }
  ~CostOnlyGuard() {
    if (active_) nnapi_.MockNnapi_setCostOnlyExecution(previous_);
  }
  CostOnlyGuard(const CostOnlyGuard&) = delete;
  CostOnlyGuard& operator=(const CostOnlyGuard&) = delete;
  bool active() const { return active_; }

 private:
  const Nnapi& nnapi_;
  int32_t previous_ = 0;
  bool active_ = false;
};

// The modelled total of the mock's newest execution trace, in microseconds.
double LastModelledTotalUs(const Nnapi& nnapi) {
  const char* text =
      nnapi.MockNnapi_getLastTrace != nullptr ? nnapi.MockNnapi_getLastTrace() : nullptr;
  ffi::String error;
  const ffi::Any trace = ffi::json::Parse(ffi::String(text != nullptr ? text : "null"), &error);
  auto object = trace.try_cast<ffi::Map<ffi::Any, ffi::Any>>();
  if (!error.empty() || !object.has_value()) {
    TVM_FFI_THROW(RuntimeError) << "tvm_nnapi.testing.time_graph: the mock recorded no execution "
                                   "trace (is tracing off? MockNnapi_setTraceCapacity)";
  }
  auto total = object->Get(ffi::String("modelled_total_us"));
  if (!total.has_value()) {
    TVM_FFI_THROW(RuntimeError) << "tvm_nnapi.testing.time_graph: the mock's trace has no "
                                   "modelled_total_us";
  }
  return total->type_index() == ffi::TypeIndex::kTVMFFIFloat
             ? total->cast<double>()
             : static_cast<double>(total->cast<int64_t>());
}

template <typename T>
std::string JsonList(const std::vector<T>& values) {
  std::ostringstream out;
  out.precision(17);
  out << "[";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "]";
  return out.str();
}

// time_graph: see the file comment.
ffi::String TimeGraph(const ffi::String& graph_json, const ffi::Bytes& constants_bytes,
                      int64_t zero_blob_bytes, const ffi::String& device_name, int64_t repeats,
                      int64_t warmup) {
  const char* where = "tvm_nnapi.testing.time_graph";
  if (repeats < 1 || warmup < 0 || zero_blob_bytes < 0) {
    TVM_FFI_THROW(ValueError) << where << ": needs repeats >= 1, warmup >= 0 and "
                              << "zero_blob_bytes >= 0 (got " << repeats << ", " << warmup << ", "
                              << zero_blob_bytes << ")";
  }
  if (constants_bytes.size() != 0 && zero_blob_bytes != 0) {
    TVM_FFI_THROW(ValueError) << where << ": give the constants or zero_blob_bytes, not both";
  }
  // The model references constants by pointer: keep them alive until the compilation is freed.
  const std::string constants = constants_bytes.size() != 0
                                    ? std::string(constants_bytes.data(), constants_bytes.size())
                                    : std::string(static_cast<size_t>(zero_blob_bytes), '\0');
  const std::string json_text = graph_json;
  const Graph graph = Graph::Parse(json_text, constants.size());
  if (!graph.symbols.empty()) {
    TVM_FFI_THROW(ValueError) << where << ": graph '" << graph.symbol
                              << "' has symbolic dimensions; timing needs static shapes";
  }
  const Nnapi& nnapi = GetNnapi();
  const std::string device = device_name;
  std::string available;
  bool found = false;
  for (const auto& entry : EnumerateDevices(nnapi)) {
    found = found || entry.second == device;
    available += (available.empty() ? "" : ", ") + entry.second;
  }
  if (!found) {
    TVM_FFI_THROW(ValueError) << where << ": no NNAPI device '" << device
                              << "' (available: " << (available.empty() ? "none" : available)
                              << ")";
  }
  RuntimeConfig config = GetRuntimeConfig();
  config.devices = device;
  config.exclude_cpu = false;
  config.use_burst = false;
  config.compilation_cache_dir.clear();
  // A device that cannot take every operation fails here naming those operations
  // (CompiledModel's compilation for chosen devices).
  const auto compile_start = std::chrono::steady_clock::now();
  CompiledModel compiled(nnapi, graph, constants, {}, config, nullptr);
  const int64_t compile_ns = ElapsedNs(compile_start);

  // Zero inputs and scratch outputs of the compiled shapes.
  auto buffers = [&](const std::vector<uint32_t>& ids,
                     const std::vector<std::vector<int64_t>>& shapes) {
    std::vector<std::vector<uint8_t>> result;
    for (size_t i = 0; i < ids.size(); ++i) {
      size_t bytes = OperandElementSize(graph.operands[ids[i]].type);
      for (int64_t extent : shapes[i]) bytes *= static_cast<size_t>(extent);
      result.emplace_back(bytes, 0);
    }
    return result;
  };
  std::vector<std::vector<uint8_t>> inputs = buffers(graph.inputs, compiled.input_shapes());
  std::vector<std::vector<uint8_t>> outputs = buffers(graph.outputs, compiled.output_shapes());
  std::vector<const void*> input_data;
  std::vector<size_t> input_bytes;
  for (const auto& buffer : inputs) {
    input_data.push_back(buffer.data());
    input_bytes.push_back(buffer.size());
  }
  std::vector<void*> output_data;
  std::vector<size_t> output_bytes;
  for (auto& buffer : outputs) {
    output_data.push_back(buffer.data());
    output_bytes.push_back(buffer.size());
  }

  const CostOnlyGuard cost_only(nnapi);
  std::vector<int64_t> wall, in_driver, on_hardware;
  std::vector<double> modelled;
  for (int64_t i = 0; i < warmup + repeats; ++i) {
    const ExecutionTiming timing =
        compiled.Execute(input_data, input_bytes, output_data, output_bytes);
    if (i < warmup) continue;
    wall.push_back(timing.wall_ns);
    in_driver.push_back(timing.in_driver_ns);
    on_hardware.push_back(timing.on_hardware_ns);
    if (cost_only.active()) modelled.push_back(LastModelledTotalUs(nnapi));
  }
  std::ostringstream out;
  out << "{" << InfoJson(nnapi) << ", \"device\": " << JsonString(device)
      << ", \"operations\": " << graph.operations.size() << ", \"compile_ns\": " << compile_ns
      << ", \"cost_only\": " << (cost_only.active() ? "true" : "false")
      << ", \"wall_ns\": " << JsonList(wall) << ", \"in_driver_ns\": " << JsonList(in_driver)
      << ", \"on_hardware_ns\": " << JsonList(on_hardware);
  if (cost_only.active()) out << ", \"modelled_total_us\": " << JsonList(modelled);
  out << "}";
  return out.str();
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef()
      .def_packed("tvm_nnapi.testing.run_graph",
                  [](ffi::PackedArgs args, ffi::Any* rv) { *rv = RunGraph(args); })
      .def("tvm_nnapi.testing.nnapi_stats", NnapiStats)
      .def("tvm_nnapi.testing.nnapi_info",
           []() -> ffi::String { return "{" + InfoJson(GetNnapi()) + "}"; })
      .def("tvm_nnapi.testing.nnapi_devices", NnapiDevices)
      .def("tvm_nnapi.testing.supported_operations", SupportedOperations)
      .def("tvm_nnapi.testing.time_graph", TimeGraph);
}

}  // namespace tvm_nnapi
