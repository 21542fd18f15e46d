// SPDX-License-Identifier: Apache-2.0
#include "executor.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <new>

#include "fault_injection.h"
#include "statistics.h"

namespace mock_nnapi {

std::optional<size_t> PreparedByteSize(int32_t type, const Dimensions& dimensions) {
  size_t size = ElementSize(type);
  if (size == 0) return std::nullopt;
  for (uint32_t dimension : dimensions) {
    if (dimension != 0 && size > std::numeric_limits<size_t>::max() / dimension) {
      return std::nullopt;
    }
    size *= dimension;
  }
  return size;
}

namespace {

std::atomic<bool> g_cost_only{false};

}  // namespace

void SetCostOnlyExecution(bool enabled) { g_cost_only.store(enabled); }
bool CostOnlyExecution() { return g_cost_only.load(); }

namespace {

// Zero pages reserved for the temporaries of a cost-only run: never written, so never backed.
class ReservedPages {
 public:
  ReservedPages() = default;
  ReservedPages(const ReservedPages&) = delete;
  ReservedPages& operator=(const ReservedPages&) = delete;
  ~ReservedPages() {
    for (const auto& [address, size] : mappings_) munmap(address, size);
  }
  void* Reserve(size_t size) {
    void* address = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (address == MAP_FAILED) return nullptr;
    mappings_.emplace_back(address, size);
    return address;
  }

 private:
  std::vector<std::pair<void*, size_t>> mappings_;
};

constexpr uint32_t kNotAnOutput = std::numeric_limits<uint32_t>::max();

class ModelRun : public OperationContext::OutputAllocator {
 public:
  ModelRun(const Model& model, const std::vector<ExecutorArgument>& inputs,
           const std::vector<ExecutorArgument>& outputs, std::vector<OutputShape>* shapes,
           bool cost_only)
      : cost_only_(cost_only),
        model_(model),
        outputs_(outputs),
        shapes_(shapes),
        infos_(model.operands().size()),
        storage_(model.operands().size()),
        model_output_index_(model.operands().size(), kNotAnOutput) {
    for (uint32_t i = 0; i < infos_.size(); ++i) infos_[i] = model.StaticOperandInfo(i);
    for (size_t i = 0; i < inputs.size(); ++i) {
      OperandInfo& info = infos_[model.inputs()[i]];
      info.data = inputs[i].data;
      info.length = inputs[i].length;
      info.dimensions = inputs[i].dimensions;
      info.rank_known = true;
      info.omitted = inputs[i].omitted;
    }
    shapes_->assign(outputs.size(), OutputShape{});
    for (size_t i = 0; i < outputs.size(); ++i) {
      const uint32_t operand = model.outputs()[i];
      model_output_index_[operand] = static_cast<uint32_t>(i);
      OperandInfo& info = infos_[operand];
      info.dimensions = outputs[i].dimensions;
      info.rank_known = outputs[i].rank_known;
      (*shapes_)[i].dimensions = outputs[i].dimensions;
    }
  }

  ~ModelRun() { RecordMaximum(Counter::kTemporaryBytesPeak, peak_bytes_); }

  int Run(ExecutionObserver* observer) {
    const std::vector<uint32_t>& run_order = model_.run_order();
    for (size_t position = 0; position < run_order.size(); ++position) {
      const uint32_t op_index = run_order[position];
      const Operation& operation = model_.operations()[op_index];
      const OperationRegistration* registration = FindOperation(operation.type);
      NN_CHECK(registration != nullptr, ANEURALNETWORKS_OP_FAILED)
          << OperationTypeName(operation.type) << " is not implemented";
      std::vector<OperandInfo*> inputs;
      std::vector<OperandInfo*> outputs;
      for (uint32_t index : operation.inputs) inputs.push_back(&infos_[index]);
      for (uint32_t index : operation.outputs) outputs.push_back(&infos_[index]);
      current_outputs_ = &operation.outputs;
      // Validate again with the run's values: scalars fed as model inputs (an activation, an
      // axis) were unknown at addOperation. Android's CPU executor fails such a run with
      // OP_FAILED instead of computing with an invalid parameter.
      OperationContext check(operation.type, OperationPhase::kValidate, inputs, outputs);
      if (registration->validate(check) != ANEURALNETWORKS_NO_ERROR) {
        return ANEURALNETWORKS_OP_FAILED;
      }
      OperationContext context(operation.type, OperationPhase::kPrepare, inputs, outputs, this);
      const int prepared = registration->prepare(context);
      if (prepared != ANEURALNETWORKS_NO_ERROR) {
        // A model output too small for its computed shape stops the run; the shapes known so
        // far are reported through getOutputOperandDimensions (like Android's CpuExecutor).
        // A WHILE past its loop timeout (ops/while.cc) ends the run with MISSED_DEADLINE_TRANSIENT.
        if (prepared == ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE ||
            prepared == ANEURALNETWORKS_MISSED_DEADLINE_TRANSIENT) {
          return prepared;
        }
        return prepared == ANEURALNETWORKS_OUT_OF_MEMORY ? prepared : ANEURALNETWORKS_OP_FAILED;
      }
      if (!cost_only_) {
        OperationContext execute_context(operation.type, OperationPhase::kExecute, inputs, outputs,
                                         this);
        execute_context.SetDerivedConstants(&model_.derived_constants(), op_index);
        const int executed = registration->execute(execute_context);
        if (executed != ANEURALNETWORKS_NO_ERROR) return ANEURALNETWORKS_OP_FAILED;
        if (g_operation_faults_armed.load(std::memory_order_relaxed)) {
          PerturbOutputs(operation.type, outputs);  // MockNnapi_injectOperationFault
        }
      }
      if (observer != nullptr) {
        std::vector<const OperandInfo*> in(inputs.begin(), inputs.end());
        std::vector<const OperandInfo*> out(outputs.begin(), outputs.end());
        observer->OnOperation(op_index, in, out);
      }
      // Temporaries nobody reads any more are freed: a run holds only the live ones.
      for (uint32_t operand : model_.temporaries_released_after()[position]) Release(operand);
    }
    return ANEURALNETWORKS_NO_ERROR;
  }

  int Allocate(uint32_t output_index, OperandInfo* info) override {
    const uint32_t operand = (*current_outputs_)[output_index];
    std::optional<size_t> size = PreparedByteSize(info->type, info->dimensions);
    NN_CHECK(size.has_value(), ANEURALNETWORKS_OP_FAILED)
        << "operand " << operand << " size overflows: " << DimensionsToString(info->dimensions);
    const uint32_t model_output = model_output_index_[operand];
    if (model_output != kNotAnOutput) {
      OutputShape& shape = (*shapes_)[model_output];
      shape.dimensions = info->dimensions;
      const ExecutorArgument& argument = outputs_[model_output];
      info->data = argument.data;
      info->length = argument.length;
      if (argument.grow && (argument.length != *size || argument.data == nullptr)) {
        info->data = argument.grow(*size);
        info->length = *size;
        NN_CHECK(info->data != nullptr, ANEURALNETWORKS_OUT_OF_MEMORY)
            << "model output " << model_output << " needs " << *size << " bytes";
        return ANEURALNETWORKS_NO_ERROR;
      }
      if (argument.length < *size) {
        shape.sufficient = false;
        return CheckFailure(__FILE__, __LINE__, "output buffer large enough",
                            ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE)
               << "model output " << model_output << " needs " << *size << " bytes, buffer has "
               << argument.length;
      }
      return ANEURALNETWORKS_NO_ERROR;
    }
    // An NNAPI operand holds at most 4 GiB; a larger temporary (a TILE or FILL of absurd size)
    // is refused before anything is allocated.
    NN_CHECK_LE(*size, size_t{0xFFFFFFFF}, ANEURALNETWORKS_OUT_OF_MEMORY)
        << "temporary operand " << operand << " " << DimensionsToString(info->dimensions)
        << " would need more than 4 GiB";
    if (cost_only_ && *size > 0) {
      info->data = static_cast<uint8_t*>(reserved_.Reserve(*size));
      info->length = *size;
      NN_CHECK(info->data != nullptr, ANEURALNETWORKS_OUT_OF_MEMORY)
          << "cannot reserve " << *size << " bytes for temporary operand " << operand;
      return ANEURALNETWORKS_NO_ERROR;
    }
    // Not zero-filled: every kernel writes its whole output (as it must for a caller's buffer).
    Release(operand);
    Storage& storage = storage_[operand];
    if (*size > 0) {
      storage.data.reset(new (std::nothrow) uint8_t[*size]);
      NN_CHECK(storage.data != nullptr, ANEURALNETWORKS_OUT_OF_MEMORY)
          << "temporary operand " << operand << " needs " << *size << " bytes";
      storage.size = *size;
      live_bytes_ += *size;
      peak_bytes_ = std::max(peak_bytes_, live_bytes_);
    }
    // Zero-sized temporaries still get a non-null address so kernels can tell "no value" apart.
    static uint8_t zero_sized_placeholder = 0;
    info->data = storage.data ? storage.data.get() : &zero_sized_placeholder;
    info->length = *size;
    return ANEURALNETWORKS_NO_ERROR;
  }

 private:
  struct Storage {
    std::unique_ptr<uint8_t[]> data;
    size_t size = 0;
  };

  void Release(uint32_t operand) {
    Storage& storage = storage_[operand];
    if (!storage.data) return;
    live_bytes_ -= storage.size;
    storage.data.reset();
    storage.size = 0;
    infos_[operand].data = nullptr;
    infos_[operand].length = 0;
  }

  const bool cost_only_;
  ReservedPages reserved_;
  const Model& model_;
  const std::vector<ExecutorArgument>& outputs_;
  std::vector<OutputShape>* shapes_;
  std::vector<OperandInfo> infos_;
  std::vector<Storage> storage_;
  size_t live_bytes_ = 0;
  size_t peak_bytes_ = 0;
  std::vector<uint32_t> model_output_index_;
  const std::vector<uint32_t>* current_outputs_ = nullptr;
};

}  // namespace

int ExecuteModel(const Model& model, const std::vector<ExecutorArgument>& inputs,
                 const std::vector<ExecutorArgument>& outputs, std::vector<OutputShape>* shapes,
                 ExecutionObserver* observer, bool cost_only) {
  ModelRun run(model, inputs, outputs, shapes, cost_only);
  return run.Run(observer);
}

}  // namespace mock_nnapi
