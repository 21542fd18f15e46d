#include "execution.h"

#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <limits>

#include "statistics.h"

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

int Event::CreateFromSyncFenceFd(int fd, std::unique_ptr<Event>* event) {
  NN_CHECK(fd > 0, ANEURALNETWORKS_BAD_DATA) << "Event_createFromSyncFenceFd: invalid fd " << fd;
  const int owned = dup(fd);
  NN_CHECK(owned >= 0, ANEURALNETWORKS_BAD_DATA)
      << "Event_createFromSyncFenceFd: dup failed: " << std::strerror(errno);
  std::unique_ptr<Event> result(new Event());
  result->fence_fd_ = owned;
  *event = std::move(result);
  return ANEURALNETWORKS_NO_ERROR;
}

Event::~Event() {
  if (completion_) completion_->Wait();
  if (fence_fd_ >= 0) close(fence_fd_);
}

int Event::Wait() {
  if (completion_) return completion_->Wait();
  // A fence is signalled when its file descriptor becomes readable (sync_file semantics).
  pollfd descriptor{fence_fd_, POLLIN, 0};
  while (true) {
    const int ready = poll(&descriptor, 1, -1);
    if (ready > 0) {
      NN_CHECK((descriptor.revents & (POLLERR | POLLNVAL)) == 0, ANEURALNETWORKS_OP_FAILED)
          << "Event_wait: the sync fence signalled an error";
      return ANEURALNETWORKS_NO_ERROR;
    }
    NN_CHECK(ready < 0 && errno == EINTR, ANEURALNETWORKS_OP_FAILED)
        << "Event_wait: poll on the sync fence failed";
  }
}

int Event::GetSyncFenceFd(int* fd) const {
  *fd = -1;
  NN_CHECK(fence_fd_ >= 0, ANEURALNETWORKS_BAD_DATA)
      << "Event_getSyncFenceFd: the event is not backed by a sync fence";
  *fd = dup(fence_fd_);
  NN_CHECK(*fd >= 0, ANEURALNETWORKS_OP_FAILED) << "Event_getSyncFenceFd: dup failed";
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- Execution
// -----------------------------------------------------------------------------------

Execution::Execution(const Compilation* compilation)
    : compilation_(compilation),
      inputs_(compilation->model().inputs().size()),
      outputs_(compilation->model().outputs().size()),
      loop_timeout_ns_(kDefaultLoopTimeoutNs) {}

Execution::~Execution() {
  if (worker_.joinable()) worker_.join();
}

int Execution::CheckModifiable(const char* function) const {
  NN_CHECK(state_ == State::kPreparation, ANEURALNETWORKS_BAD_STATE)
      << function << " called after the computation started";
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::SetArgument(bool input, int32_t index, const ANeuralNetworksOperandType* type,
                           uint8_t* data, size_t length, const Memory* memory, size_t offset) {
  const char* function = input ? "Execution_setInput" : "Execution_setOutput";
  std::lock_guard<std::mutex> lock(mutex_);
  NN_RETURN_IF_ERROR(CheckModifiable(function));
  std::vector<Argument>& arguments = input ? inputs_ : outputs_;
  NN_CHECK(index >= 0 && static_cast<size_t>(index) < arguments.size(), ANEURALNETWORKS_BAD_DATA)
      << function << ": index " << index << " out of range (" << arguments.size() << ")";
  Argument& argument = arguments[index];
  NN_CHECK(argument.kind == Argument::Kind::kUnset, ANEURALNETWORKS_BAD_STATE)
      << function << ": index " << index << " was already set";

  const Model& model = compilation_->model();
  const Operand& operand = model.operands()[(input ? model.inputs() : model.outputs())[index]];
  Dimensions dimensions = operand.dimensions;
  bool rank_known = operand.rank_known;
  if (type != nullptr) {
    NN_CHECK_EQ(type->type, operand.type, ANEURALNETWORKS_BAD_DATA)
        << function << " " << index << ": type differs from the model's operand";
    NN_CHECK(type->scale == operand.scale && type->zeroPoint == operand.zero_point,
             ANEURALNETWORKS_BAD_DATA)
        << function << " " << index << ": scale/zeroPoint differ from the model's operand";
    NN_CHECK(type->dimensions != nullptr || type->dimensionCount == 0, ANEURALNETWORKS_BAD_DATA)
        << function << " " << index << ": dimensions is NULL";
    if (IsScalarType(operand.type)) {
      NN_CHECK_EQ(type->dimensionCount, 0u, ANEURALNETWORKS_BAD_DATA)
          << function << " " << index << ": a scalar has no dimensions";
    } else if (type->dimensionCount > 0) {
      Dimensions given(type->dimensions, type->dimensions + type->dimensionCount);
      if (rank_known && !dimensions.empty()) {
        NN_CHECK_EQ(given.size(), dimensions.size(), ANEURALNETWORKS_BAD_DATA)
            << function << " " << index << ": rank differs from the model's operand";
        for (size_t d = 0; d < given.size(); ++d) {
          NN_CHECK(dimensions[d] == 0 || dimensions[d] == given[d], ANEURALNETWORKS_BAD_DATA)
              << function << " " << index << ": dimension " << d << " is " << given[d]
              << " but the model declares " << dimensions[d];
        }
      }
      dimensions = given;
      rank_known = true;
    }
  }
  const bool omitted = memory == nullptr && data == nullptr && length == 0;
  if (IsTensorType(operand.type) && input && !omitted) {
    NN_CHECK(rank_known && !dimensions.empty() && !HasUnknownDimension(dimensions),
             ANEURALNETWORKS_BAD_DATA)
        << function << " " << index << ": input dimensions " << DimensionsToString(dimensions)
        << " are not fully specified";
  }
  if (memory != nullptr && memory->from_desc()) {
    NN_CHECK(offset == 0 && length == 0, ANEURALNETWORKS_BAD_DATA)
        << function << " " << index << ": offset and length must be 0 for a descriptor memory";
    bool has_role = false;
    for (const Compilation* c : memory->roles()) has_role = has_role || c == compilation_;
    NN_CHECK(has_role, ANEURALNETWORKS_BAD_DATA)
        << function << " " << index << ": the memory has no role for this compilation";
    length = memory->size();
  } else if (memory != nullptr) {
    NN_CHECK(offset <= memory->size() && length <= memory->size() - offset,
             ANEURALNETWORKS_BAD_DATA)
        << function << " " << index << ": offset " << offset << " + length " << length
        << " exceeds the memory's " << memory->size() << " bytes";
    data = memory->data() + offset;
  }
  if (!omitted) {
    std::optional<size_t> needed;
    if (IsScalarType(operand.type)) {
      needed = ElementSize(operand.type);
    } else if (rank_known && !dimensions.empty() && !HasUnknownDimension(dimensions)) {
      needed = ByteSize(operand.type, dimensions);
      NN_CHECK(needed.has_value(), ANEURALNETWORKS_BAD_DATA)
          << function << " " << index << ": size of " << DimensionsToString(dimensions)
          << " overflows";
    }
    if (needed.has_value()) {
      if (padding_enabled_) {
        NN_CHECK_GE(length, *needed, ANEURALNETWORKS_BAD_DATA)
            << function << " " << index << ": buffer smaller than the operand";
      } else {
        NN_CHECK_EQ(length, *needed, ANEURALNETWORKS_BAD_DATA)
            << function << " " << index << ": buffer length differs from the operand size";
      }
    }
  }
  argument.kind = omitted ? Argument::Kind::kOmitted
                          : (memory ? Argument::Kind::kMemory : Argument::Kind::kPointer);
  argument.data = data;
  argument.length = length;
  argument.memory = memory;
  argument.dimensions = dimensions;
  argument.rank_known = rank_known;
  any_argument_set_ = true;
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::SetInput(int32_t index, const ANeuralNetworksOperandType* type, const void* buffer,
                        size_t length) {
  return SetArgument(true, index, type, static_cast<uint8_t*>(const_cast<void*>(buffer)), length,
                     nullptr, 0);
}

int Execution::SetInputFromMemory(int32_t index, const ANeuralNetworksOperandType* type,
                                  const Memory* memory, size_t offset, size_t length) {
  return SetArgument(true, index, type, nullptr, length, memory, offset);
}

int Execution::SetOutput(int32_t index, const ANeuralNetworksOperandType* type, void* buffer,
                         size_t length) {
  return SetArgument(false, index, type, static_cast<uint8_t*>(buffer), length, nullptr, 0);
}

int Execution::SetOutputFromMemory(int32_t index, const ANeuralNetworksOperandType* type,
                                   const Memory* memory, size_t offset, size_t length) {
  return SetArgument(false, index, type, nullptr, length, memory, offset);
}

int Execution::BeginCompute(const char* function) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_CHECK(state_ != State::kComputing, ANEURALNETWORKS_BAD_STATE)
      << function << ": the execution is already computing";
  NN_CHECK(state_ == State::kPreparation || reusable_, ANEURALNETWORKS_BAD_STATE)
      << function << ": the execution has completed and is not reusable";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    NN_CHECK(inputs_[i].kind != Argument::Kind::kUnset, ANEURALNETWORKS_BAD_DATA)
        << function << ": input " << i << " is not set";
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    NN_CHECK(outputs_[i].kind != Argument::Kind::kUnset, ANEURALNETWORKS_BAD_DATA)
        << function << ": output " << i << " is not set";
  }
  state_ = State::kComputing;
  Increment(Counter::kExecutionsStarted);
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
}  // namespace

int Execution::RunAndComplete() {
  auto to_executor = [](const Argument& argument) {
    ExecutorArgument result;
    result.omitted = argument.kind == Argument::Kind::kOmitted;
    result.data = argument.kind == Argument::Kind::kMemory && argument.memory->from_desc()
                      ? argument.memory->data()
                      : argument.data;
    result.length = argument.length;
    result.dimensions = argument.dimensions;
    result.rank_known = argument.rank_known;
    return result;
  };
  int result = ANEURALNETWORKS_NO_ERROR;
  for (size_t i = 0; i < inputs_.size() && result == ANEURALNETWORKS_NO_ERROR; ++i) {
    const Argument& argument = inputs_[i];
    if (argument.kind == Argument::Kind::kMemory && argument.memory->from_desc() &&
        !argument.memory->initialized()) {
      result = CheckFailure(__FILE__, __LINE__, "memory initialized", ANEURALNETWORKS_OP_FAILED)
               << "input " << i << " reads a device memory that holds no data yet";
    }
  }
  std::vector<OutputShape> shapes;
  if (result == ANEURALNETWORKS_NO_ERROR) {
    std::vector<ExecutorArgument> inputs;
    std::vector<ExecutorArgument> outputs;
    for (const Argument& argument : inputs_) inputs.push_back(to_executor(argument));
    for (const Argument& argument : outputs_) outputs.push_back(to_executor(argument));
    CountingObserver observer(compilation_->model());
    result = ExecuteModel(compilation_->model(), inputs, outputs, &shapes, &observer);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  completion_result_ = result;
  output_shapes_ = std::move(shapes);
  if (result == ANEURALNETWORKS_NO_ERROR) {
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const Argument& argument = outputs_[i];
      if (argument.kind == Argument::Kind::kMemory && argument.memory->from_desc()) {
        argument.memory->set_initialized(true);
        argument.memory->set_dimensions(output_shapes_[i].dimensions);
      }
    }
  }
  state_ = State::kCompleted;
  Increment(result == ANEURALNETWORKS_NO_ERROR ? Counter::kExecutionsCompleted
                                               : Counter::kExecutionsFailed);
  return result;
}

int Execution::Compute() {
  NN_RETURN_IF_ERROR(BeginCompute("Execution_compute"));
  return RunAndComplete();
}

int Execution::BurstCompute(Burst* burst) {
  NN_CHECK(burst->compilation() == compilation_, ANEURALNETWORKS_BAD_DATA)
      << "Execution_burstCompute: the burst belongs to another compilation";
  std::unique_lock<std::mutex> burst_lock(burst->in_use, std::try_to_lock);
  NN_CHECK(burst_lock.owns_lock(), ANEURALNETWORKS_BAD_STATE)
      << "Execution_burstCompute: the burst is serving another execution";
  NN_RETURN_IF_ERROR(BeginCompute("Execution_burstCompute"));
  return RunAndComplete();
}

int Execution::StartCompute(const std::vector<const Event*>& dependencies, uint64_t duration_ns,
                            std::unique_ptr<Event>* event) {
  if (duration_ns != 0) {
    NN_CHECK(compilation_->single_explicit_device(), ANEURALNETWORKS_BAD_DATA)
        << "startComputeWithDependencies: a duration needs a compilation created by "
           "createForDevices with exactly one device";
  }
  NN_RETURN_IF_ERROR(BeginCompute("Execution_startCompute"));
  if (worker_.joinable()) worker_.join();  // a reusable execution's previous run
  fenced_ = !dependencies.empty();
  auto completion = std::make_shared<Completion>();
  worker_ = std::thread([this, completion, dependencies] {
    int dependency_result = ANEURALNETWORKS_NO_ERROR;
    for (const Event* dependency : dependencies) {
      if (const_cast<Event*>(dependency)->Wait() != ANEURALNETWORKS_NO_ERROR) {
        dependency_result = ANEURALNETWORKS_OP_FAILED;
      }
    }
    if (dependency_result != ANEURALNETWORKS_NO_ERROR) {
      std::lock_guard<std::mutex> lock(mutex_);
      completion_result_ = dependency_result;
      state_ = State::kCompleted;
      Increment(Counter::kExecutionsFailed);
      completion->Signal(dependency_result);
      return;
    }
    completion->Signal(RunAndComplete());
  });
  *event = std::make_unique<Event>(completion);
  return ANEURALNETWORKS_NO_ERROR;
}

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
  NN_RETURN_IF_ERROR(CheckModifiable("Execution_setMeasureTiming"));
  NN_CHECK(compilation_->single_explicit_device(), ANEURALNETWORKS_BAD_DATA)
      << "setMeasureTiming needs a compilation created by createForDevices with one device";
  measure_timing_ = measure;
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::GetDuration(int32_t duration_code, uint64_t* duration) const {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_CHECK(state_ == State::kCompleted, ANEURALNETWORKS_BAD_STATE)
      << "getDuration: the execution has not completed";
  NN_CHECK(duration_code >= ANEURALNETWORKS_DURATION_ON_HARDWARE &&
               duration_code <= ANEURALNETWORKS_FENCED_DURATION_IN_DRIVER,
           ANEURALNETWORKS_BAD_DATA)
      << "getDuration: invalid duration code " << duration_code;
  // No timing is available until the device cost model provides modelled durations.
  *duration = std::numeric_limits<uint64_t>::max();
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::SetTimeout(uint64_t duration_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_RETURN_IF_ERROR(CheckModifiable("Execution_setTimeout"));
  NN_CHECK(compilation_->single_explicit_device(), ANEURALNETWORKS_BAD_DATA)
      << "Execution_setTimeout needs a compilation created by createForDevices with one device";
  if (duration_ns == 0) {
    timeout_ns_.reset();
  } else {
    timeout_ns_ = duration_ns;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::SetLoopTimeout(uint64_t duration_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_RETURN_IF_ERROR(CheckModifiable("Execution_setLoopTimeout"));
  loop_timeout_ns_ = std::min(duration_ns, kMaximumLoopTimeoutNs);
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::SetReusable(bool reusable) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_RETURN_IF_ERROR(CheckModifiable("Execution_setReusable"));
  reusable_ = reusable;
  return ANEURALNETWORKS_NO_ERROR;
}

int Execution::EnableInputAndOutputPadding(bool enable) {
  std::lock_guard<std::mutex> lock(mutex_);
  NN_RETURN_IF_ERROR(CheckModifiable("Execution_enableInputAndOutputPadding"));
  NN_CHECK(!any_argument_set_, ANEURALNETWORKS_BAD_STATE)
      << "enableInputAndOutputPadding must be called before any setInput/setOutput";
  padding_enabled_ = enable;
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace mock_nnapi
