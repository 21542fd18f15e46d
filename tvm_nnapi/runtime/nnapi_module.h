// The "nnapi" runtime module: one NNAPI subgraph produced by relax.ext.nnapi.
//
// The module holds the graph JSON and the constant blob. On each call (destination-passing
// style: inputs then outputs, as DLTensors) it binds the graph's symbolic dimensions from the
// input shapes, builds and compiles an NNAPI model for that shape signature on first sight
// (later calls reuse it), and runs one NNAPI execution.
#ifndef TVM_NNAPI_RUNTIME_NNAPI_MODULE_H_
#define TVM_NNAPI_RUNTIME_NNAPI_MODULE_H_

#include <tvm/ffi/extra/module.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph.h"
#include "nnapi_loader.h"

namespace tvm_nnapi {

// An NNAPI model and compilation for one concrete shape signature.
class CompiledModel {
 public:
  CompiledModel(const Nnapi& nnapi, const Graph& graph, const std::string& constants,
                const std::vector<int64_t>& binding);
  ~CompiledModel();
  CompiledModel(const CompiledModel&) = delete;
  CompiledModel& operator=(const CompiledModel&) = delete;

  // Runs one execution on host buffers (sizes already checked by the caller).
  void Execute(const std::vector<const void*>& inputs, const std::vector<size_t>& input_bytes,
               const std::vector<void*>& outputs, const std::vector<size_t>& output_bytes) const;

  const std::vector<std::vector<int64_t>>& input_shapes() const { return input_shapes_; }
  const std::vector<std::vector<int64_t>>& output_shapes() const { return output_shapes_; }

 private:
  void Check(int code, const char* function, const std::string& what) const;

  const Nnapi& nnapi_;
  const Graph& graph_;
  ANeuralNetworksModel* model_ = nullptr;
  ANeuralNetworksCompilation* compilation_ = nullptr;
  std::vector<std::vector<int64_t>> input_shapes_;
  std::vector<std::vector<int64_t>> output_shapes_;
  // Values of inline operands (scalars and small tensors), kept alive with the model.
  std::vector<std::vector<uint8_t>> values_;
};

class NnapiModuleObj : public tvm::ffi::ModuleObj {
 public:
  NnapiModuleObj(std::string symbol, std::string graph_json, std::string constants);

  const char* kind() const final { return "nnapi"; }
  int GetPropertyMask() const final {
    return tvm::ffi::Module::kBinarySerializable | tvm::ffi::Module::kRunnable;
  }
  tvm::ffi::Optional<tvm::ffi::Function> GetFunction(const tvm::ffi::String& name) final;
  tvm::ffi::Bytes SaveToBytes() const final;
  tvm::ffi::String InspectSource(const tvm::ffi::String& format) const final { return graph_json_; }

  static tvm::ffi::Module LoadFromBytes(const tvm::ffi::Bytes& bytes);

 private:
  void Run(tvm::ffi::PackedArgs args);
  std::shared_ptr<const CompiledModel> GetCompiled(const std::vector<int64_t>& binding);

  std::string symbol_;
  std::string graph_json_;
  std::string constants_;
  Graph graph_;
  std::mutex mutex_;
  std::map<std::vector<int64_t>, std::shared_ptr<const CompiledModel>> compiled_;
  std::atomic<int64_t> calls_{0};
  std::atomic<int64_t> compilations_{0};
};

}  // namespace tvm_nnapi

#endif  // TVM_NNAPI_RUNTIME_NNAPI_MODULE_H_
