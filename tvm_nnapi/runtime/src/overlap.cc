// SPDX-License-Identifier: Apache-2.0
#include "overlap.h"

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/reflection/registry.h>

#include <cstring>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nnapi_module.h"

namespace tvm_nnapi {
namespace {

namespace ffi = tvm::ffi;

// Calls started and not joined yet, by the data address of each output they write.
struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, std::shared_future<void>> pending;
};

Registry& Pending() {
  static Registry* registry = new Registry();  // outlives threads still running at exit
  return *registry;
}

const void* DataOf(const DLTensor* tensor) {
  return static_cast<const char*>(tensor->data) + tensor->byte_offset;
}

// The tensors of a started call's outputs: one tensor, or a tuple (an Array) of them.
std::vector<DLTensor*> StartedTensors(const ffi::AnyView& value) {
  if (auto tensor = value.try_cast<DLTensor*>()) return {*tensor};
  std::vector<DLTensor*> tensors;
  if (auto tuple = value.try_cast<ffi::Array<ffi::Any>>()) {
    for (const ffi::Any& field : *tuple) {
      auto tensor = field.try_cast<DLTensor*>();
      if (!tensor.has_value()) {
        TVM_FFI_THROW(TypeError) << "tvm_nnapi.runtime.join: the started outputs must be tensors";
      }
      tensors.push_back(*tensor);
    }
    return tensors;
  }
  TVM_FFI_THROW(TypeError) << "tvm_nnapi.runtime.join: the first argument must be the tensor or "
                              "tuple of tensors a started subgraph writes";
}

void Join(ffi::PackedArgs args, ffi::Any* rv) {
  if (args.size() < 1) {
    TVM_FFI_THROW(ValueError) << "tvm_nnapi.runtime.join takes the started outputs first";
  }
  const std::vector<DLTensor*> started = StartedTensors(args[0]);
  const size_t count = started.size();
  if (static_cast<size_t>(args.size()) < 1 + count) {
    TVM_FFI_THROW(ValueError) << "tvm_nnapi.runtime.join: " << count
                              << " started outputs need as many destinations, got "
                              << args.size() - 1 << " further arguments";
  }
  // Wait for every call writing one of the outputs (normally one call), then report the first
  // failure: the outputs are not copied when the call failed.
  std::vector<std::shared_future<void>> calls;
  {
    Registry& registry = Pending();
    std::lock_guard<std::mutex> lock(registry.mutex);
    for (DLTensor* tensor : started) {
      auto found = registry.pending.find(DataOf(tensor));
      if (found == registry.pending.end()) continue;
      calls.push_back(found->second);
      registry.pending.erase(found);
    }
  }
  for (const std::shared_future<void>& call : calls) call.wait();
  for (const std::shared_future<void>& call : calls) call.get();  // rethrows the call's error
  const size_t first_destination = static_cast<size_t>(args.size()) - count;
  for (size_t i = 0; i < count; ++i) {
    DLTensor* destination = args[first_destination + i].cast<DLTensor*>();
    const size_t bytes = TensorBytes(*started[i]);
    if (TensorBytes(*destination) != bytes) {
      TVM_FFI_THROW(ValueError) << "tvm_nnapi.runtime.join: destination " << i << " holds "
                                << TensorBytes(*destination) << " bytes, the started output "
                                << bytes;
    }
    if (bytes != 0) {
      std::memcpy(const_cast<void*>(DataOf(destination)), DataOf(started[i]), bytes);
    }
  }
}

}  // namespace

void StartOverlapped(ffi::PackedArgs args, size_t num_outputs,
                     std::function<void(ffi::PackedArgs)> run) {
  if (static_cast<size_t>(args.size()) < num_outputs) {
    TVM_FFI_THROW(ValueError) << "a started subgraph takes its " << num_outputs
                              << " outputs last, got " << args.size() << " arguments";
  }
  // The call owns references to its arguments (the VM may drop its own before the join).
  std::vector<ffi::Any> owned;
  owned.reserve(args.size());
  for (int i = 0; i < args.size(); ++i) owned.emplace_back(args[i]);
  std::vector<const void*> outputs;
  for (size_t i = args.size() - num_outputs; i < static_cast<size_t>(args.size()); ++i) {
    auto tensor = args[i].try_cast<DLTensor*>();
    if (!tensor.has_value()) {
      TVM_FFI_THROW(TypeError) << "a started subgraph's output " << i << " is not a tensor";
    }
    outputs.push_back(DataOf(*tensor));
  }
  std::shared_future<void> call =
      std::async(std::launch::async, [owned = std::move(owned), run = std::move(run)]() {
        std::vector<ffi::AnyView> views(owned.begin(), owned.end());
        run(ffi::PackedArgs(views.data(), static_cast<int32_t>(views.size())));
      }).share();
  Registry& registry = Pending();
  std::vector<std::shared_future<void>> earlier;
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    for (const void* output : outputs) {
      auto [entry, inserted] = registry.pending.emplace(output, call);
      if (!inserted) {
        earlier.push_back(entry->second);  // never joined: its memory is being reused
        entry->second = call;
      }
    }
  }
  for (const std::shared_future<void>& stale : earlier) stale.wait();
}

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef().def_packed("tvm_nnapi.runtime.join", Join);
}

}  // namespace tvm_nnapi
