// SPDX-License-Identifier: Apache-2.0
// Runs the tvm_nnapi runtime module without Python so that LeakSanitizer can account for every
// allocation (scripts/run_sanitized.sh --runtime builds it with ASan + UBSan and runs it with
// detect_leaks=1). It compiles and runs a dynamic-shape subgraph over several signatures (with
// LRU evictions and a compilation cache directory), from several threads, makes every NNAPI call
// the runtime makes fail once, feeds hostile graph JSON and module bytes, and checks that the
// results are right, that each failure is an error naming the call, and that the mock has no
// live NNAPI object left. Exit status 0 on success; LeakSanitizer fails the process on a leak.
//
// Environment: TVM_NNAPI_LIBRARY names the mock (the runtime dlopen()s it; this program opens the
// same library for the MockNnapi_* controls).
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <mock_nnapi/mock_nnapi.h>
#include <stdlib.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace ffi = tvm::ffi;

namespace {

int failures = 0;

#define EXPECT(condition, message)                                                  \
  do {                                                                              \
    if (!(condition)) {                                                             \
      std::fprintf(stderr, "runtime_leak_check:%d: %s: %s\n", __LINE__, #condition, \
                   std::string(message).c_str());                                   \
      ++failures;                                                                   \
    }                                                                               \
  } while (false)

struct MockControls {
  int (*inject_fault)(const char*, int, int32_t);
  void (*clear_faults)();
  uint64_t (*injected_fault_count)();
  int (*get_counter)(const char*, uint64_t*);
};

MockControls LoadMock() {
  const char* path = std::getenv("TVM_NNAPI_LIBRARY");
  if (path == nullptr) {
    std::fprintf(stderr, "runtime_leak_check: set TVM_NNAPI_LIBRARY to the mock library\n");
    std::exit(2);
  }
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "runtime_leak_check: %s\n", dlerror());
    std::exit(2);
  }
  MockControls mock;
  mock.inject_fault =
      reinterpret_cast<decltype(mock.inject_fault)>(dlsym(handle, "MockNnapi_injectFault"));
  mock.clear_faults =
      reinterpret_cast<decltype(mock.clear_faults)>(dlsym(handle, "MockNnapi_clearFaults"));
  mock.injected_fault_count = reinterpret_cast<decltype(mock.injected_fault_count)>(
      dlsym(handle, "MockNnapi_getInjectedFaultCount"));
  mock.get_counter =
      reinterpret_cast<decltype(mock.get_counter)>(dlsym(handle, "MockNnapi_getCounter"));
  if (!mock.inject_fault || !mock.clear_faults || !mock.injected_fault_count || !mock.get_counter) {
    std::fprintf(stderr, "runtime_leak_check: %s is not mock_nnapi\n", path);
    std::exit(2);
  }
  return mock;  // the handle stays open, like the runtime's
}

uint64_t LiveObjects(const MockControls& mock) {
  uint64_t value = 0;
  mock.get_counter("live_objects", &value);
  return value;
}

ffi::Function Global(const char* name) {
  ffi::Optional<ffi::Function> function = ffi::Function::GetGlobal(name);
  if (!function.has_value()) {
    std::fprintf(stderr, "runtime_leak_check: no global function %s\n", name);
    std::exit(2);
  }
  return *function;
}

// x[n, 4] + [0, 1, 2, 3] -> RESHAPE to [n * 2, 2]. Constants: 4 float32.
const char kGraph[] = R"({"format": "tvm-nnapi-graph", "version": 1, "symbol": "subgraph0",
  "symbols": ["n"],
  "operands": [
    {"type": "TENSOR_FLOAT32", "shape": ["n", 4]},
    {"type": "TENSOR_FLOAT32", "shape": [4], "constant": {"offset": 0, "nbytes": 16}},
    {"type": "INT32", "value": 0},
    {"type": "TENSOR_FLOAT32", "shape": ["n", 4]},
    {"type": "TENSOR_INT32", "shape": [2], "value": ["n * 2", 2]},
    {"type": "TENSOR_FLOAT32", "shape": ["n * 2", 2]}],
  "operations": [
    {"op": "ADD", "inputs": [0, 1, 2], "outputs": [3], "source": "relax.add"},
    {"op": "RESHAPE", "inputs": [3, 4], "outputs": [5], "source": "relax.reshape"}],
  "inputs": [0], "outputs": [5]})";

ffi::Bytes Constants() {
  const float values[4] = {0.f, 1.f, 2.f, 3.f};
  return ffi::Bytes(reinterpret_cast<const char*>(values), sizeof(values));
}

ffi::Module Create(const std::string& graph) {
  return Global("tvm_nnapi.runtime.create")(ffi::String("subgraph0"), ffi::String(graph),
                                            Constants())
      .cast<ffi::Module>();
}

DLTensor Tensor(std::vector<float>* data, std::vector<int64_t>* shape) {
  DLTensor tensor{};
  tensor.data = data->data();
  tensor.device = DLDevice{kDLCPU, 0};
  tensor.ndim = static_cast<int32_t>(shape->size());
  tensor.dtype = DLDataType{kDLFloat, 32, 1};
  tensor.shape = shape->data();
  return tensor;
}

// Runs the subgraph for n rows; true when the output is right. Errors propagate.
bool Run(const ffi::Module& module, int64_t n) {
  std::vector<float> input(static_cast<size_t>(n) * 4);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i);
  std::vector<float> output(input.size(), -1.f);
  std::vector<int64_t> input_shape{n, 4};
  std::vector<int64_t> output_shape{n * 2, 2};
  DLTensor x = Tensor(&input, &input_shape);
  DLTensor y = Tensor(&output, &output_shape);
  module->GetFunction("subgraph0").value()(&x, &y);
  for (size_t i = 0; i < input.size(); ++i) {
    if (output[i] != input[i] + static_cast<float>(i % 4)) return false;
  }
  return true;
}

std::string Message(const ffi::Error& error) { return error.kind() + ": " + error.message(); }

void SetOption(const char* name, const std::string& value) {
  Global("tvm_nnapi.runtime.set_option")(ffi::String(name), ffi::String(value));
}

void CheckSignaturesEvictionAndCache(const MockControls& mock) {
  char directory[] = "/tmp/runtime_leak_check.XXXXXX";
  EXPECT(mkdtemp(directory) != nullptr, "mkdtemp");
  const std::string cache_dir = std::string(directory) + "/cache";
  SetOption("cache_max_entries", "2");
  SetOption("cache_dir", cache_dir);
  {
    ffi::Module module = Create(kGraph);
    for (int64_t n : {1, 2, 3, 1, 5, 2})
      EXPECT(Run(module, n), "wrong result n=" + std::to_string(n));
    // A second module with the same graph hits the disk cache.
    ffi::Module again = Create(kGraph);
    EXPECT(Run(again, 2), "wrong result from the disk cache");
    // Many threads on one module (each call builds its own execution).
    std::vector<std::thread> threads;
    std::vector<int> ok(8, 0);
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] { ok[t] = Run(module, 1 + t % 3) ? 1 : 0; });
    }
    for (std::thread& thread : threads) thread.join();
    for (int t = 0; t < 8; ++t) EXPECT(ok[t] == 1, "thread " + std::to_string(t));
  }
  SetOption("cache_max_entries", "16");
  SetOption("cache_dir", "");
  std::system((std::string("rm -rf ") + directory).c_str());
  EXPECT(LiveObjects(mock) == 0, "live NNAPI objects after freeing the modules");
}

void CheckEveryCallFailingOnce(const MockControls& mock) {
  const char* kCalls[] = {
      "ANeuralNetworksModel_create",
      "ANeuralNetworksModel_addOperand",
      "ANeuralNetworksModel_setOperandValue",
      "ANeuralNetworksModel_addOperation",
      "ANeuralNetworksModel_identifyInputsAndOutputs",
      "ANeuralNetworksModel_finish",
      "ANeuralNetworksCompilation_create",
      "ANeuralNetworksCompilation_setPreference",
      "ANeuralNetworksCompilation_finish",
      "ANeuralNetworksBurst_create",
      "ANeuralNetworksExecution_create",
      "ANeuralNetworksExecution_setInput",
      "ANeuralNetworksExecution_setOutput",
      "ANeuralNetworksExecution_burstCompute",
  };
  for (const char* call : kCalls) {
    ffi::Module module = Create(kGraph);
    mock.clear_faults();
    mock.inject_fault(call, ANEURALNETWORKS_OP_FAILED, 1);
    std::string message;
    try {
      Run(module, 3);
    } catch (const ffi::Error& error) {
      message = Message(error);
    }
    EXPECT(mock.injected_fault_count() == 1, std::string(call) + " was not called");
    EXPECT(message.find(call) != std::string::npos &&
               message.find("ANEURALNETWORKS_OP_FAILED") != std::string::npos,
           std::string(call) + ": " + message);
    mock.clear_faults();
    EXPECT(Run(module, 3), std::string("no recovery after ") + call);
  }
  EXPECT(LiveObjects(mock) == 0, "live NNAPI objects after the faulted runs");
}

void CheckHostileInputs(const MockControls& mock) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string overflow = kGraph;
  overflow.replace(overflow.find("\"n * 2\", 2]}"), 7, "\"n * 9223372036854775807\"");
  std::string fpe = kGraph;
  fpe.replace(fpe.find("\"n * 2\", 2]}"), 7, "\"(0 - 9223372036854775807 - 1) // (0 - 1)\"");
  std::string version = kGraph;
  version.replace(version.find("\"version\": 1"), 12, "\"version\": 4294967297");
  int refused = 0;
  for (const std::string& graph : {deep, overflow, fpe, version, std::string(kGraph, 40)}) {
    try {
      ffi::Module module = Create(graph);
      Run(module, 2);
    } catch (const ffi::Error& error) {
      ++refused;
      const std::string message = error.message();
      EXPECT(message.find("NNAPI") != std::string::npos, "unclear error: " + message);
    }
  }
  EXPECT(refused == 5, "hostile graphs accepted: " + std::to_string(5 - refused));

  ffi::Module module = Create(kGraph);
  ffi::Bytes bytes = Global("tvm_nnapi.runtime.module_to_bytes")(module).cast<ffi::Bytes>();
  ffi::Function load = Global("ffi.Module.load_from_bytes.nnapi");
  EXPECT(Run(load(bytes).cast<ffi::Module>(), 2), "round-tripped module");
  const std::string blob(bytes.data(), bytes.size());
  int rejected = 0;
  for (size_t cut : {size_t{0}, size_t{7}, size_t{13}, blob.size() / 2, blob.size() - 1}) {
    try {
      load(ffi::Bytes(blob.data(), cut));
    } catch (const ffi::Error&) {
      ++rejected;
    }
  }
  std::string huge_length = blob;
  huge_length[12 + 7] = '\x7f';  // symbol length 2^62-ish
  try {
    load(ffi::Bytes(huge_length.data(), huge_length.size()));
  } catch (const ffi::Error&) {
    ++rejected;
  }
  EXPECT(rejected == 6, "corrupt module bytes accepted: " + std::to_string(6 - rejected));
  (void)mock;
}

}  // namespace

int main() {
  // The library registers its global functions when loaded; touch the runtime's loader first.
  MockControls mock = LoadMock();
  CheckSignaturesEvictionAndCache(mock);
  CheckEveryCallFailingOnce(mock);
  CheckHostileInputs(mock);
  EXPECT(LiveObjects(mock) == 0, "live NNAPI objects at exit");
  if (failures == 0) std::printf("runtime_leak_check: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
