// SPDX-License-Identifier: Apache-2.0
// The "nnapi" runtime module: one NNAPI subgraph produced by relax.ext.nnapi.
//
// The module holds the graph JSON and the constant blob. On each call (destination-passing
// style: inputs then outputs, as DLTensors) it binds the graph's symbolic dimensions from the
// input shapes, builds and compiles an NNAPI model for that shape signature on first sight
// (later calls reuse it, through an NNAPI burst where available), and runs one execution.
// Compiled signatures are kept in a per-module LRU cache bounded in entries and estimated
// bytes (runtime_config.h); evicting an entry frees its NNAPI objects once no call uses them.
// A new signature is compiled outside the module's lock: calls on compiled signatures and
// get_stats go on meanwhile, and calls asking for a signature being compiled wait for that one
// compilation rather than compiling it again.
// With a cache directory configured, compilations use NNAPI's compilation caching with a token
// derived from everything that changes the compiled result.
#ifndef TVM_NNAPI_RUNTIME_NNAPI_MODULE_H_
#define TVM_NNAPI_RUNTIME_NNAPI_MODULE_H_

#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/module.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "graph.h"
#include "nnapi_loader.h"
#include "policy.h"
#include "runtime_config.h"

namespace tvm_nnapi {

// Bytes of a compact tensor's data (its element size times its element count).
size_t TensorBytes(const DLTensor& tensor);

// What one execution took, MEASURED where it ran: the wall clock around NNAPI's compute, and
// NNAPI's own ANeuralNetworksExecution_getDuration (on hardware, in driver) where the driver
// reports it (single-device compilations; -1 otherwise). On the mock, getDuration reports the
// cost model's MODELLED times.
struct ExecutionTiming {
  int64_t wall_ns = 0;
  int64_t on_hardware_ns = -1;
  int64_t in_driver_ns = -1;
};

// A constant blob as models are built from it: `size` bytes at `data`. Whoever builds a model
// keeps the bytes alive as long as the model (NNAPI references large values, not copies).
struct ConstantBytes {
  ConstantBytes() = default;
  ConstantBytes(const char* bytes, size_t count) : data(bytes), size(count) {}
  ConstantBytes(const std::string& bytes)  // NOLINT(runtime/explicit): a string is a blob
      : data(bytes.data()), size(bytes.size()) {}
  const char* data = nullptr;
  size_t size = 0;
};

// An NNAPI model and compilation for one concrete shape signature.
class CompiledModel {
 public:
  // `cache_token` (32 bytes) enables NNAPI compilation caching in config.compilation_cache_dir.
  // `config.devices` is one device set (comma-separated names; see DeviceSets); `device_set` is
  // its position among the configured sets, kept for the caller.
  CompiledModel(const Nnapi& nnapi, const Graph& graph, ConstantBytes constants,
                const std::vector<int64_t>& binding, const RuntimeConfig& config,
                const std::array<uint8_t, 32>* cache_token, size_t device_set = 0);
  ~CompiledModel();
  CompiledModel(const CompiledModel&) = delete;
  CompiledModel& operator=(const CompiledModel&) = delete;

  // The model of `graph` for `binding`, finished but not compiled (for asking NNAPI which
  // operations each device supports); Execute must not be called on it.
  static std::unique_ptr<CompiledModel> ModelOnly(const Nnapi& nnapi, const Graph& graph,
                                                  ConstantBytes constants,
                                                  const std::vector<int64_t>& binding);
  // Which of the model's operations `device` supports
  // (ANeuralNetworksModel_getSupportedOperationsForDevices, feature level 3).
  std::vector<bool> SupportedOperations(ANeuralNetworksDevice* device) const;

  // Runs one execution on host buffers (sizes already checked by the caller).
  ExecutionTiming Execute(const std::vector<const void*>& inputs,
                          const std::vector<size_t>& input_bytes, const std::vector<void*>& outputs,
                          const std::vector<size_t>& output_bytes) const;

  const std::vector<std::vector<int64_t>>& input_shapes() const { return input_shapes_; }
  const std::vector<std::vector<int64_t>>& output_shapes() const { return output_shapes_; }
  // Estimated host memory of the compiled signature: its non-constant operands.
  size_t estimated_bytes() const { return estimated_bytes_; }
  int64_t compile_time_ns() const { return compile_time_ns_; }
  // The mock's modelled compilation time (0 on a real NNAPI, which does not model one).
  int64_t modelled_compile_time_ns() const { return modelled_compile_time_ns_; }
  int64_t burst_computes() const { return burst_computes_.load(); }
  // The NNAPI compilation, for callers that run their own executions (testing.cc).
  ANeuralNetworksCompilation* compilation() const { return compilation_; }
  size_t device_set() const { return device_set_; }
  // Where the compilation runs, in words: "NNAPI device qti-dsp", "NNAPI devices qti-dsp,
  // qti-gpu" or "the devices NNAPI chooses".
  const std::string& placement() const { return placement_; }

 private:
  CompiledModel(const Nnapi& nnapi, const Graph& graph);
  void Build(ConstantBytes constants, const std::vector<int64_t>& binding,
             const RuntimeConfig& config, const std::array<uint8_t, 32>* cache_token);
  void BuildModel(ConstantBytes constants, const std::vector<int64_t>& binding);
  // The steps of Build: each operand with its value, the operations and the model's inputs and
  // outputs, then the compilation (with caching and a burst where configured).
  void AddOperand(uint32_t id, ConstantBytes constants, const std::vector<int64_t>& binding);
  void AddOperationsAndInterface();
  void Compile(const RuntimeConfig& config, const std::array<uint8_t, 32>* cache_token);
  void Check(int code, const char* function, const std::string& what) const;
  // After a failed compilation for `devices`: throws naming the operations none of them
  // supports (with the Relax operator each came from) and `code`; returns when every operation
  // has a device (the failure is something else) or NNAPI cannot say.
  void ThrowIfDevicesRefuse(const std::vector<ANeuralNetworksDevice*>& devices,
                            const RuntimeConfig& config, int code) const;
  // After a failed compilation for `devices` that claim every operation (a driver that fails
  // what it reports supported): throws naming each device, the operations it claims and `code`.
  void ThrowDriverFailure(const std::vector<ANeuralNetworksDevice*>& devices, int code) const;
  // Check for the execution's compute calls: the message also names the placement and the
  // subgraph's operations.
  void CheckExecution(int code, const char* function) const;
  // "ADD (code 0, R.add), SOFTMAX (code 25, R.nn.softmax) x2" for `operations` (indices into
  // the graph's operations; all of them when empty).
  std::string OperationList(const std::vector<size_t>& operations) const;
  void Release();

  const Nnapi& nnapi_;
  const Graph& graph_;
  ANeuralNetworksModel* model_ = nullptr;
  ANeuralNetworksCompilation* compilation_ = nullptr;
  // One burst serves one execution at a time; other concurrent calls use plain compute.
  ANeuralNetworksBurst* burst_ = nullptr;
  mutable std::mutex burst_mutex_;
  mutable std::atomic<int64_t> burst_computes_{0};
  // Compiled for exactly one device: NNAPI then reports execution durations.
  bool single_device_ = false;
  size_t device_set_ = 0;
  std::string placement_ = "the devices NNAPI chooses";
  size_t estimated_bytes_ = 0;
  int64_t compile_time_ns_ = 0;
  int64_t modelled_compile_time_ns_ = 0;
  std::vector<std::vector<int64_t>> input_shapes_;
  std::vector<std::vector<int64_t>> output_shapes_;
  // Values of inline operands (scalars and small tensors), kept alive with the model.
  std::vector<std::vector<uint8_t>> values_;
};

class NnapiModuleObj : public tvm::ffi::ModuleObj {
 public:
  NnapiModuleObj(std::string symbol, std::string graph_json, std::string constants);
  // The constants are `tensor`'s memory (a contiguous CPU tensor of bytes), referenced in
  // place for the module's life: a model's weights are not copied to create its module.
  NnapiModuleObj(std::string symbol, std::string graph_json, tvm::ffi::Tensor constants);

  const char* kind() const final { return "nnapi"; }
  int GetPropertyMask() const final {
    return tvm::ffi::Module::kBinarySerializable | tvm::ffi::Module::kRunnable;
  }
  tvm::ffi::Optional<tvm::ffi::Function> GetFunction(const tvm::ffi::String& name) final;
  tvm::ffi::Bytes SaveToBytes() const final;
  tvm::ffi::String InspectSource(const tvm::ffi::String& format) const final { return graph_json_; }

  static tvm::ffi::Module LoadFromBytes(const tvm::ffi::Bytes& bytes);

 private:
  using Signature = std::vector<int64_t>;
  struct CacheEntry {
    std::shared_ptr<const CompiledModel> compiled;
    std::list<Signature>::iterator position;  // in lru_ (front: most recently used)
  };

  void Run(tvm::ffi::PackedArgs args);
  void RunNnapi(const Signature& binding, const std::vector<DLTensor*>& tensors);
  // The TVM-compiled host version of this subgraph (an imported relax.VMExecutable), if any.
  bool HasHostFallback();
  void RunHost(tvm::ffi::PackedArgs args, const std::vector<DLTensor*>& tensors);
  Placement PlacementFor(const Signature& binding, const RuntimeConfig& config);
  // The compiled model of a signature: from the cache, else compiled (once, outside mutex_).
  std::shared_ptr<const CompiledModel> GetCompiled(const Signature& binding);
  // Compiles `binding` for the first device set from `first_set` on whose compilation succeeds
  // (each failure before the last recorded as a fallback) and caches it.
  std::shared_ptr<const CompiledModel> CompileAndCache(const Signature& binding,
                                                       size_t first_set = 0);
  // After `failed` (the cached compilation of `binding`) failed an execution: the compilation
  // for the next device set (compiled, or another call's), or throws when there is none.
  std::shared_ptr<const CompiledModel> NextDeviceSet(const Signature& binding,
                                                     const CompiledModel* failed);
  // Records why a call or compilation left NNAPI's first choice: counted, kept for
  // fallback_reasons (the newest kReasonsKept) and printed on stderr.
  void RecordFallback(const Signature& binding, const std::string& reason);
  void EvictLocked(const RuntimeConfig& config);
  std::array<uint8_t, 32> CacheToken(const Signature& binding, const RuntimeConfig& config);
  tvm::ffi::Map<tvm::ffi::String, int64_t> Stats();

  std::string symbol_;
  std::string graph_json_;
  // The constant blob: the bytes of constants_ (a loaded module) or of constants_tensor_ (a
  // module created from a tensor), as constants_view_.
  std::string constants_;
  tvm::ffi::Optional<tvm::ffi::Tensor> constants_tensor_;
  ConstantBytes constants_view_;
  Graph graph_;
  // Guards the cache, the LRU order, compiling_ and the placement decisions; never held while
  // compiling.
  std::mutex mutex_;
  std::map<Signature, CacheEntry> cache_;
  std::list<Signature> lru_;
  size_t cached_bytes_ = 0;
  // Signatures being compiled now (not yet in cache_); compiled_ is notified when one finishes
  // or fails.
  std::set<Signature> compiling_;
  std::condition_variable compiled_;
  // Hash of the constant blob, computed once (the weights may be large).
  std::once_flag constants_digest_once_;
  std::array<uint8_t, 32> constants_digest_{};
  std::atomic<int64_t> calls_{0};
  // Calls started by "<symbol>_async" (each also counts in calls_ when it runs).
  std::atomic<int64_t> started_calls_{0};
  std::atomic<int64_t> compilations_{0};
  std::atomic<int64_t> cache_hits_{0};
  std::atomic<int64_t> evictions_{0};
  std::atomic<int64_t> compile_time_ns_{0};
  std::atomic<int64_t> modelled_compile_time_ns_{0};
  // Device selection: decisions per signature under the policy they were made with.
  std::string decisions_policy_;
  std::map<Signature, Placement> decisions_;
  std::atomic<int64_t> nnapi_calls_{0};
  std::atomic<int64_t> host_calls_{0};
  std::atomic<int64_t> fallbacks_{0};
  // Compilations or executions that moved a signature to the next device set, NNAPI executions
  // that failed (whatever followed), and the newest reasons of every fallback (under mutex_).
  std::atomic<int64_t> device_set_fallbacks_{0};
  std::atomic<int64_t> execution_failures_{0};
  std::list<std::string> fallback_reasons_;
  static constexpr size_t kReasonsKept = 32;
  // MEASURED where the module runs: NNAPI executions' wall clock, and getDuration's sums over
  // the executions whose driver reported them.
  std::atomic<int64_t> execute_time_ns_{0};
  std::atomic<int64_t> timed_executions_{0};
  std::atomic<int64_t> duration_on_hardware_ns_{0};
  std::atomic<int64_t> duration_in_driver_ns_{0};
  // Host fallback: a Relax VM over the imported executable (not thread-safe: serialised).
  std::mutex host_mutex_;
  bool host_checked_ = false;
  tvm::ffi::Optional<tvm::ffi::Module> host_vm_;
  tvm::ffi::Optional<tvm::ffi::Function> host_main_;
};

}  // namespace tvm_nnapi

#endif  // TVM_NNAPI_RUNTIME_NNAPI_MODULE_H_
