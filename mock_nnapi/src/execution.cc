// SPDX-License-Identifier: Apache-2.0
#include "execution.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <system_error>

#include "ops/control_flow.h"
#include "ops/gemm.h"
#include "statistics.h"
#include "trace.h"

namespace mock_nnapi {

// ---- Completion and Event ----------------------------------------------------------------------

void Completion::Signal(int code) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    result = code;
    done = true;
  }
  done_signal.notify_all();
}

int Completion::Wait() {
  std::unique_lock<std::mutex> lock(mutex);
  done_signal.wait(lock, [this] { return done; });
  return result;
}

int WaitForFence(int fd) {
  // A fence is signalled when its file descriptor becomes readable (sync_file semantics).
  pollfd descriptor{fd, POLLIN, 0};
  while (true) {
    const int ready = poll(&descriptor, 1, -1);
    if (ready > 0) {
      NN_CHECK((descriptor.revents & (POLLERR | POLLNVAL)) == 0, ANEURALNETWORKS_OP_FAILED)
          << "the sync fence " << fd << " signalled an error";
      return ANEURALNETWORKS_NO_ERROR;
    }
    NN_CHECK(ready < 0 && errno == EINTR, ANEURALNETWORKS_OP_FAILED)
        << "poll on the sync fence " << fd << " failed: " << std::strerror(errno);
  }
}

int Event::CreateFromSyncFenceFd(int fd, std::unique_ptr<Event>* event) {
  NN_CHECK(fd > 0, ANEURALNETWORKS_BAD_DATA) << "Event_createFromSyncFenceFd: invalid fd " << fd;
  const int owned = dup(fd);
  NN_CHECK(owned >= 0, ANEURALNETWORKS_BAD_DATA)
      << "Event_createFromSyncFenceFd: dup(" << fd << ") failed: " << std::strerror(errno);
  std::unique_ptr<Event> result(new Event());
  result->fence_fd_ = owned;
  *event = std::move(result);
  return ANEURALNETWORKS_NO_ERROR;
}

Event::~Event() {
  // Android's Event_free waits for the computation first (for a fenced execution, that
  // includes its wait for the input fences: like Android's, it hangs on one never signalled).
  // Android also waits for an imported fence (createFromSyncFenceFd) to signal; the mock does
  // not, so freeing such an event cannot hang.
  if (completion_) completion_->Wait();
  if (fence_fd_ >= 0) close(fence_fd_);
}

int Event::Wait() const {
  if (completion_) return completion_->Wait();
  return WaitForFence(fence_fd_);
}

int Event::GetSyncFenceFd(int* fd) const {
  NN_CHECK(fence_fd_ >= 0, ANEURALNETWORKS_BAD_DATA)
      << "Event_getSyncFenceFd: the event is not backed by a sync fence";
  *fd = dup(fence_fd_);
  NN_CHECK(*fd >= 0, ANEURALNETWORKS_BAD_DATA)
      << "Event_getSyncFenceFd: dup failed: " << std::strerror(errno);
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- Execution: arguments ----------------------------------------------------------------------

Execution::Execution(const Compilation* compilation)
    : compilation_(compilation),
      inputs_(compilation->model().inputs().size()),
      outputs_(compilation->model().outputs().size()),
      loop_timeout_ns_(kDefaultLoopTimeoutNs) {}

Execution::~Execution() {
  if (worker_.joinable()) worker_.join();
}

bool Execution::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_ == State::kComputing;
}

int Execution::CheckNotStarted(const char* function) const {
  NN_CHECK(state_ == State::kPreparation, ANEURALNETWORKS_BAD_STATE)
      << function << " called after the computation started";
  return ANEURALNETWORKS_NO_ERROR;
}

namespace {

// Android's checkDimensionInfo: a given type must be valid on its own and may only fill in the
// dimensions the model left unknown. Without a type, an input with a value needs the model's
// dimensions to be fully known.
int CheckTypeAgainstOperand(const Operand& operand, const ANeuralNetworksOperandType* type,
                            bool allow_unspecified, const char* function) {
  if (type == nullptr) {
    NN_CHECK(allow_unspecified || !IsTensorType(operand.type) || operand.IsFullySpecified(),
             ANEURALNETWORKS_BAD_DATA)
        << function << ": the model's operand " << DimensionsToString(operand.dimensions)
        << " is not fully specified; pass a type with its dimensions";
    return ANEURALNETWORKS_NO_ERROR;
  }
  NN_RETURN_IF_ERROR(ValidateOperandType(*type, allow_unspecified, function));
  if (type->type != operand.type || type->scale != operand.scale ||
      type->zeroPoint != operand.zero_point) {
    // Android does not compare these (the model's values are used); only warn.
    LogInfo(std::string(function) + ": the type's code, scale or zeroPoint differ from the " +
            "model's operand; Android ignores them");
  }
  if (operand.dimensions.empty()) return ANEURALNETWORKS_NO_ERROR;
  NN_CHECK_EQ(type->dimensionCount, operand.dimensions.size(), ANEURALNETWORKS_BAD_DATA)
      << function << ": rank differs from the model's operand "
      << DimensionsToString(operand.dimensions);
  for (uint32_t d = 0; d < type->dimensionCount; ++d) {
    NN_CHECK(operand.dimensions[d] == 0 || operand.dimensions[d] == type->dimensions[d],
             ANEURALNETWORKS_BAD_DATA)
        << function << ": dimension " << d << " is " << type->dimensions[d]
        << " but the model declares " << operand.dimensions[d];
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Bytes an argument of `dimensions` needs, or 0 when some dimension (or the rank) is unknown.
size_t RequiredLength(int32_t type, const Dimensions& dimensions) {
  return ByteSize(type, dimensions).value_or(0);
}

}  // namespace

int Execution::SetArgument(bool input, int32_t index, const ANeuralNetworksOperandType* type,
                           uint8_t* buffer, size_t length, const Memory* memory, size_t offset,
                           const char* function) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_RETURN_IF_ERROR(CheckNotStarted(function));
  std::vector<Argument>& arguments = input ? inputs_ : outputs_;
  NN_CHECK(index >= 0 && static_cast<size_t>(index) < arguments.size(), ANEURALNETWORKS_BAD_DATA)
      << function << ": index " << index << " out of range (" << arguments.size() << ")";
  const Model& model = compilation_->model();
  const Operand& operand = model.operands()[(input ? model.inputs() : model.outputs())[index]];
  // Outputs may stay unspecified (dynamic output shapes); inputs only when omitted.
  const bool allow_unspecified = !input || (memory == nullptr && buffer == nullptr);
  NN_RETURN_IF_ERROR(CheckTypeAgainstOperand(operand, type, allow_unspecified, function));
  if (memory != nullptr) {
    NN_RETURN_IF_ERROR(
        memory->ValidateArgument(compilation_, input, index, type, offset, length, function));
    NN_CHECK(input ? memory->readable() : memory->writable(), ANEURALNETWORKS_BAD_DATA)
        << function << ": the memory was mapped without " << (input ? "PROT_READ" : "PROT_WRITE");
    if (memory->from_desc()) length = memory->size();
  } else {
    NN_CHECK_LE(length, size_t{0xFFFFFFFF}, ANEURALNETWORKS_BAD_DATA)
        << function << ": length " << length << " exceeds 4 GiB";
  }
  Argument& argument = arguments[index];
  NN_CHECK(argument.kind == Argument::Kind::kUnset, ANEURALNETWORKS_BAD_STATE)
      << function << ": index " << index << " was already set";
  any_argument_set_ = true;
  if (memory == nullptr) {
    NN_CHECK((buffer == nullptr) == (length == 0), ANEURALNETWORKS_BAD_DATA)
        << function << ": a non-NULL buffer needs a non-zero length";
  }
  const bool omitted = memory == nullptr && buffer == nullptr;
  Dimensions dimensions = operand.dimensions;
  bool rank_known = operand.rank_known;
  if (type != nullptr) {
    dimensions.assign(type->dimensions, type->dimensions + type->dimensionCount);
    rank_known = rank_known || type->dimensionCount > 0;
  }
  const bool sized_by_run = memory != nullptr && memory->dynamic();  // allocated when written
  if (!omitted && !sized_by_run && operand.type != ANEURALNETWORKS_OEM_SCALAR) {
    // A buffer for dimensions still unknown just has to be "large enough" (checked at run
    // time); a known size must fit, and any excess is padding, which must have been enabled.
    const size_t needed = RequiredLength(operand.type, dimensions);
    NN_CHECK_LE(needed, length, ANEURALNETWORKS_BAD_DATA)
        << function << " " << index << ": " << length << " bytes for "
        << OperandTypeName(operand.type) << " " << DimensionsToString(dimensions) << " (needs "
        << needed << ")";
    NN_CHECK(needed == 0 || needed == length || padding_enabled_, ANEURALNETWORKS_BAD_DATA)
        << function << " " << index << ": length " << length << " differs from the operand's "
        << needed << " bytes (enableInputAndOutputPadding allows a larger buffer)";
  }
  argument.kind = omitted ? Argument::Kind::kOmitted
                          : (memory ? Argument::Kind::kMemory : Argument::Kind::kPointer);
  argument.data = memory ? memory->data() + offset : buffer;
  argument.length = length;
  argument.memory = memory;
  argument.dimensions = std::move(dimensions);
  argument.rank_known = rank_known;
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::SetInput(int32_t index, const ANeuralNetworksOperandType* type, const void* buffer,
                        size_t length) {
  return SetArgument(true, index, type, static_cast<uint8_t*>(const_cast<void*>(buffer)), length,
                     nullptr, 0, "Execution_setInput");
}

int Execution::SetInputFromMemory(int32_t index, const ANeuralNetworksOperandType* type,
                                  const Memory* memory, size_t offset, size_t length) {
  return SetArgument(true, index, type, nullptr, length, memory, offset,
                     "Execution_setInputFromMemory");
}

int Execution::SetOutput(int32_t index, const ANeuralNetworksOperandType* type, void* buffer,
                         size_t length) {
  return SetArgument(false, index, type, static_cast<uint8_t*>(buffer), length, nullptr, 0,
                     "Execution_setOutput");
}

int Execution::SetOutputFromMemory(int32_t index, const ANeuralNetworksOperandType* type,
                                   const Memory* memory, size_t offset, size_t length) {
  return SetArgument(false, index, type, nullptr, length, memory, offset,
                     "Execution_setOutputFromMemory");
}

// ---- Execution: computing ----------------------------------------------------------------------

int Execution::CheckArguments(const char* function, bool fenced, uint64_t duration_ns) const {
  if (fenced && duration_ns != 0) {
    NN_CHECK(compilation_->single_explicit_device(), ANEURALNETWORKS_BAD_DATA)
        << function << ": a duration needs a compilation created by createForDevices with "
        << "exactly one device";
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Argument& argument = inputs_[i];
    NN_CHECK(argument.kind != Argument::Kind::kUnset, ANEURALNETWORKS_BAD_DATA)
        << function << ": input " << i << " is not set";
    if (argument.kind == Argument::Kind::kMemory) {
      NN_RETURN_IF_ERROR(
          argument.memory->ValidateInputDimensions(argument.dimensions, static_cast<uint32_t>(i)));
      NN_RETURN_IF_ERROR(argument.memory->CheckFileBacking(function));
    }
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    NN_CHECK(outputs_[i].kind != Argument::Kind::kUnset, ANEURALNETWORKS_BAD_DATA)
        << function << ": output " << i << " is not set";
    if (outputs_[i].kind == Argument::Kind::kMemory) {
      NN_RETURN_IF_ERROR(outputs_[i].memory->CheckFileBacking(function));
    }
  }
  // Model constants read from file memories (setOperandValueFromMemory).
  for (const Operand& operand : compilation_->model().operands()) {
    if (operand.memory != nullptr) NN_RETURN_IF_ERROR(operand.memory->CheckFileBacking(function));
  }
  if (fenced) {
    // Fenced executions do not support dynamic output shapes (Android's rule looks at the
    // model's declaration, not at the type given to setOutput).
    const Model& model = compilation_->model();
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const Operand& operand = model.operands()[model.outputs()[i]];
      NN_CHECK(outputs_[i].kind == Argument::Kind::kOmitted || !IsTensorType(operand.type) ||
                   operand.IsFullySpecified(),
               ANEURALNETWORKS_BAD_DATA)
          << function << ": output " << i << " is not fully specified in the model";
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::BeginCompute(const char* function, bool fenced, uint64_t duration_ns) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    NN_CHECK(state_ != State::kComputing, ANEURALNETWORKS_BAD_STATE)
        << function << ": the execution is already computing";
    NN_CHECK(state_ == State::kPreparation || reusable_, ANEURALNETWORKS_BAD_STATE)
        << function << ": the execution has completed and is not reusable";
    state_ = State::kComputing;
    fenced_duration_ns_ = fenced ? duration_ns : 0;
  }
  Increment(Counter::kExecutionsStarted);
  const int checked = CheckArguments(function, fenced, duration_ns);
  if (checked != ANEURALNETWORKS_NO_ERROR) return FinishComputation(checked, {});
  return ANEURALNETWORKS_NO_ERROR;
}

namespace {
// Counts each executed operation.
class CountingObserver : public ExecutionObserver {
 public:
  explicit CountingObserver(const Model& model) : model_(model) {}
  void OnOperation(uint32_t operation_index, const std::vector<const OperandInfo*>&,
                   const std::vector<const OperandInfo*>&) override {
    CountOperationExecuted(model_.operations()[operation_index].type);
  }

 private:
  const Model& model_;
};
// Honours ANeuralNetworksModel_relaxComputationFloat32toFloat16: an operation that the
// compilation assigned to a GPU or accelerator (which compute relaxed float32 in float16) gets
// its TENSOR_FLOAT32 outputs rounded to float16 precision before the next operation reads
// them, as such a device would produce. CPU devices, including the runtime's own (Android's
// reference computes in float32 too), are unaffected.
class RelaxedPrecisionObserver : public ExecutionObserver {
 public:
  RelaxedPrecisionObserver(const Compilation& compilation, ExecutionObserver* next) : next_(next) {
    const Model& model = compilation.model();
    const std::vector<int>& assignment = compilation.operation_devices();
    rounded_.assign(model.operations().size(), false);
    if (!model.relaxed_float32_to_float16()) return;
    for (size_t op = 0; op < assignment.size() && op < rounded_.size(); ++op) {
      if (assignment[op] == kRuntimeCpuFallback) continue;
      const Device* device = compilation.devices()[assignment[op]];
      rounded_[op] = device->type != ANEURALNETWORKS_DEVICE_CPU;
    }
  }
  void OnOperation(uint32_t operation_index, const std::vector<const OperandInfo*>& inputs,
                   const std::vector<const OperandInfo*>& outputs) override {
    if (operation_index < rounded_.size() && rounded_[operation_index]) {
      for (const OperandInfo* output : outputs) {
        if (output->type != ANEURALNETWORKS_TENSOR_FLOAT32 || output->data == nullptr) continue;
        gemm::RoundToHalf(output->MutableData<float>(), output->length / sizeof(float));
      }
    }
    if (next_ != nullptr) next_->OnOperation(operation_index, inputs, outputs);
  }

 private:
  ExecutionObserver* next_;
  std::vector<bool> rounded_;
};
}  // namespace

int Execution::Run() {
  auto to_executor = [](const Argument& argument) {
    ExecutorArgument result;
    result.omitted = argument.kind == Argument::Kind::kOmitted;
    result.data = argument.data;
    result.length = argument.length;
    result.dimensions = argument.dimensions;
    result.rank_known = argument.rank_known;
    if (argument.memory != nullptr && argument.memory->from_desc()) {
      // A descriptor memory's buffer may have been (re)allocated since setInput/OutputFromMemory
      // (dynamic memories, memory.h); it is used whole.
      result.data = argument.memory->data();
      result.length = argument.memory->size();
      if (argument.memory->dynamic()) {
        const Memory* memory = argument.memory;
        result.grow = [memory](size_t size) { return memory->Resize(size); };
      }
    }
    return result;
  };
  std::vector<ExecutorArgument> inputs;
  std::vector<ExecutorArgument> outputs;
  for (const Argument& argument : inputs_) inputs.push_back(to_executor(argument));
  for (const Argument& argument : outputs_) outputs.push_back(to_executor(argument));
  std::vector<OutputShape> shapes;
  CountingObserver observer(compilation_->model());
  // A cost-only run executes nothing: no operation counts, no float16 rounding of outputs.
  const bool cost_only = CostOnlyExecution();
  // What IF and WHILE read of this execution (ops/control_flow.h).
  ScopedControlFlowSettings control_flow({loop_timeout_ns_, cost_only});
  CostRecorder recorder(*compilation_, cost_only ? nullptr : &observer);
  RelaxedPrecisionObserver precision(*compilation_, &recorder);
  int result =
      ExecuteModel(compilation_->model(), inputs, outputs, &shapes,
                   cost_only ? static_cast<ExecutionObserver*>(&recorder) : &precision, cost_only);
  // Durations, deadlines and device execution faults follow the cost model (trace.h).
  std::optional<uint64_t> deadline_ns = timeout_ns_;
  if (fenced_duration_ns_ != 0) {
    deadline_ns = std::min(deadline_ns.value_or(fenced_duration_ns_), fenced_duration_ns_);
  }
  ModelledTiming timing;
  result = CompleteModelledExecution(*compilation_, recorder, result, deadline_ns, &timing);
  time_on_hardware_ns_ = timing.on_hardware_ns;
  time_in_driver_ns_ = timing.in_driver_ns;
  return FinishComputation(result, shapes);
}

int Execution::FinishComputation(int result, const std::vector<OutputShape>& shapes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool has_shapes =
      result == ANEURALNETWORKS_NO_ERROR || result == ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE;
  output_shapes_.assign(outputs_.size(), OutputShape{});
  for (size_t i = 0; i < outputs_.size(); ++i) {
    output_shapes_[i].dimensions = outputs_[i].dimensions;
    if (has_shapes && i < shapes.size()) output_shapes_[i] = shapes[i];
  }
  // Descriptor memories written by a successful run take its output dimensions; outputs of a
  // failed run no longer hold data (Android's rule).
  for (size_t i = 0; i < outputs_.size() && result == ANEURALNETWORKS_NO_ERROR; ++i) {
    const Argument& argument = outputs_[i];
    if (argument.kind != Argument::Kind::kMemory) continue;
    if (!argument.memory->UpdateDimensions(output_shapes_[i].dimensions)) {
      result = CheckFailure(__FILE__, __LINE__, "memory dimensions", ANEURALNETWORKS_OP_FAILED)
               << "output " << i << " dimensions "
               << DimensionsToString(output_shapes_[i].dimensions)
               << " do not fit its memory's descriptor";
    }
  }
  for (const Argument& argument : outputs_) {
    if (argument.kind == Argument::Kind::kMemory) {
      argument.memory->set_initialized(result == ANEURALNETWORKS_NO_ERROR);
    }
  }
  completion_result_ = result;
  state_ = State::kCompleted;
  Increment(result == ANEURALNETWORKS_NO_ERROR ? Counter::kExecutionsCompleted
                                               : Counter::kExecutionsFailed);
  return result;
}

int Execution::Compute() {
  NN_RETURN_IF_ERROR(BeginCompute("Execution_compute", false, 0));
  return Run();
}

int Execution::BurstCompute(Burst* burst) {
  NN_CHECK(burst->compilation() == compilation_, ANEURALNETWORKS_BAD_DATA)
      << "Execution_burstCompute: the burst belongs to another compilation";
  std::unique_lock<std::mutex> burst_lock(burst->in_use, std::try_to_lock);
  NN_CHECK(burst_lock.owns_lock(), ANEURALNETWORKS_BAD_STATE)
      << "Execution_burstCompute: the burst is serving another execution";
  NN_RETURN_IF_ERROR(BeginCompute("Execution_burstCompute", false, 0));
  return Run();
}

int Execution::StartCompute(std::unique_ptr<Event>* event) {
  NN_RETURN_IF_ERROR(BeginCompute("Execution_startCompute", false, 0));
  if (worker_.joinable()) worker_.join();  // a reusable execution's previous run
  auto completion = std::make_shared<Completion>();
  *event = std::make_unique<Event>(completion);
  try {
    worker_ = std::thread([this, completion] { completion->Signal(Run()); });
  } catch (const std::system_error&) {
    completion->Signal(Run());  // no thread available: run on the caller's thread
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::StartComputeWithDependencies(
    const std::vector<int>& fences, const std::vector<std::shared_ptr<Completion>>& computations,
    uint64_t duration_ns, std::unique_ptr<Event>* event) {
  NN_RETURN_IF_ERROR(BeginCompute("Execution_startComputeWithDependencies", true, duration_ns));
  // The dependencies' fences are duplicated: their events may be freed before the run starts.
  std::vector<int> waits;
  auto close_all = [](const std::vector<int>& fds) {
    for (int fd : fds) close(fd);
  };
  for (int fence : fences) {
    const int owned = dup(fence);
    if (owned < 0) {
      close_all(waits);
      return FinishComputation(CheckFailure(__FILE__, __LINE__, "dup", ANEURALNETWORKS_OP_FAILED)
                                   << "cannot duplicate the dependency fence " << fence << ": "
                                   << std::strerror(errno),
                               {});
    }
    waits.push_back(owned);
  }
  // The execution's own fence; the worker signals it through a duplicate, so that freeing the
  // event (which closes the original) never races with the signal.
  const int fence = eventfd(0, EFD_CLOEXEC);
  const int signal_fd = fence >= 0 ? dup(fence) : -1;
  if (signal_fd < 0) {
    if (fence >= 0) close(fence);
    close_all(waits);
    return FinishComputation(CheckFailure(__FILE__, __LINE__, "eventfd", ANEURALNETWORKS_OP_FAILED)
                                 << "cannot create the execution's sync fence: "
                                 << std::strerror(errno),
                             {});
  }
  if (worker_.joinable()) worker_.join();  // a reusable execution's previous run
  auto completion = std::make_shared<Completion>();
  *event = std::make_unique<Event>(completion, fence);
  auto work = [this, completion, waits, computations, signal_fd] {
    int result = ANEURALNETWORKS_NO_ERROR;
    for (int fd : waits) {
      if (result == ANEURALNETWORKS_NO_ERROR) result = WaitForFence(fd);
      close(fd);
    }
    for (const std::shared_ptr<Completion>& computation : computations) {
      if (result != ANEURALNETWORKS_NO_ERROR) break;
      const int waited = computation->Wait();
      if (waited != ANEURALNETWORKS_NO_ERROR) {
        result = CheckFailure(__FILE__, __LINE__, "dependency succeeded", ANEURALNETWORKS_OP_FAILED)
                 << "Execution_startComputeWithDependencies: a dependency failed with "
                 << ResultCodeName(waited);
      }
    }
    result = result == ANEURALNETWORKS_NO_ERROR ? Run() : FinishComputation(result, {});
    const uint64_t one = 1;
    while (write(signal_fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
    close(signal_fd);
    completion->Signal(result);
  };
  try {
    worker_ = std::thread(work);
  } catch (const std::system_error&) {
    work();  // no thread available: run on the caller's thread
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- Execution: results and settings ---------------------------------------------------------

int Execution::GetOutputOperandRank(int32_t index, uint32_t* rank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_CHECK(state_ == State::kCompleted, ANEURALNETWORKS_BAD_STATE)
      << "getOutputOperandRank: the execution has not completed";
  NN_CHECK(completion_result_ == ANEURALNETWORKS_NO_ERROR ||
               completion_result_ == ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE,
           ANEURALNETWORKS_BAD_STATE)
      << "getOutputOperandRank: the execution failed with " << ResultCodeName(completion_result_);
  NN_CHECK(index >= 0 && static_cast<size_t>(index) < output_shapes_.size(),
           ANEURALNETWORKS_BAD_DATA)
      << "getOutputOperandRank: index " << index;
  const OutputShape& shape = output_shapes_[index];
  *rank = static_cast<uint32_t>(shape.dimensions.size());
  return shape.sufficient ? ANEURALNETWORKS_NO_ERROR : ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE;
}

int Execution::GetOutputOperandDimensions(int32_t index, uint32_t* dimensions) const {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_CHECK(state_ == State::kCompleted, ANEURALNETWORKS_BAD_STATE)
      << "getOutputOperandDimensions: the execution has not completed";
  NN_CHECK(completion_result_ == ANEURALNETWORKS_NO_ERROR ||
               completion_result_ == ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE,
           ANEURALNETWORKS_BAD_STATE)
      << "getOutputOperandDimensions: the execution failed with "
      << ResultCodeName(completion_result_);
  NN_CHECK(index >= 0 && static_cast<size_t>(index) < output_shapes_.size(),
           ANEURALNETWORKS_BAD_DATA)
      << "getOutputOperandDimensions: index " << index;
  const OutputShape& shape = output_shapes_[index];
  NN_CHECK(!shape.dimensions.empty(), ANEURALNETWORKS_BAD_DATA)
      << "getOutputOperandDimensions: output " << index << " is a scalar";
  std::copy(shape.dimensions.begin(), shape.dimensions.end(), dimensions);
  return shape.sufficient ? ANEURALNETWORKS_NO_ERROR : ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE;
}

int Execution::SetMeasureTiming(bool measure) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_CHECK(compilation_->single_explicit_device(), ANEURALNETWORKS_BAD_DATA)
      << "setMeasureTiming needs a compilation created by createForDevices with one device";
  NN_RETURN_IF_ERROR(CheckNotStarted("Execution_setMeasureTiming"));
  measure_timing_ = measure;
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::GetDuration(int32_t duration_code, uint64_t* duration) const {
  std::lock_guard<std::mutex> lock(mutex_);
  *duration = std::numeric_limits<uint64_t>::max();
  NN_CHECK(state_ == State::kCompleted, ANEURALNETWORKS_BAD_STATE)
      << "getDuration: the execution has not completed";
  NN_CHECK(completion_result_ == ANEURALNETWORKS_NO_ERROR, ANEURALNETWORKS_BAD_STATE)
      << "getDuration: the execution failed with " << ResultCodeName(completion_result_);
  NN_CHECK(measure_timing_, ANEURALNETWORKS_BAD_STATE)
      << "getDuration: setMeasureTiming(true) was not called";
  // Modelled durations (cost_model.h). The mock's runs are synchronous on the driver side:
  // fenced durations equal the others.
  const bool on_hardware = duration_code == ANEURALNETWORKS_DURATION_ON_HARDWARE ||
                           duration_code == ANEURALNETWORKS_FENCED_DURATION_ON_HARDWARE;
  constexpr uint64_t kMaxTiming = std::numeric_limits<uint64_t>::max() - 1;
  *duration = std::min(on_hardware ? time_on_hardware_ns_ : time_in_driver_ns_, kMaxTiming);
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::SetTimeout(uint64_t duration_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_CHECK(compilation_->single_explicit_device(), ANEURALNETWORKS_BAD_DATA)
      << "Execution_setTimeout needs a compilation created by createForDevices with one device";
  NN_RETURN_IF_ERROR(CheckNotStarted("Execution_setTimeout"));
  if (duration_ns == 0) {
    timeout_ns_.reset();
  } else {
    timeout_ns_ = duration_ns;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::SetLoopTimeout(uint64_t duration_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_RETURN_IF_ERROR(CheckNotStarted("Execution_setLoopTimeout"));
  loop_timeout_ns_ = std::min(duration_ns, kMaximumLoopTimeoutNs);
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::SetReusable(bool reusable) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_RETURN_IF_ERROR(CheckNotStarted("Execution_setReusable"));
  reusable_ = reusable;
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::EnableInputAndOutputPadding(bool enable) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_RETURN_IF_ERROR(CheckNotStarted("Execution_enableInputAndOutputPadding"));
  NN_CHECK(!any_argument_set_, ANEURALNETWORKS_BAD_STATE)
      << "enableInputAndOutputPadding must be called before any setInput/setOutput";
  padding_enabled_ = enable;
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::AddExtensionAttribute(const char* extension_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_RETURN_IF_ERROR(CheckNotStarted("Execution_addExtensionAttribute"));
  NN_CHECK(compilation_->single_explicit_device(), ANEURALNETWORKS_BAD_DATA)
      << "Execution_addExtensionAttribute needs a compilation created by createForDevices with "
         "one device";
  NN_FAIL(ANEURALNETWORKS_BAD_DATA) << "unknown extension " << extension_name;
}

}  // namespace mock_nnapi
