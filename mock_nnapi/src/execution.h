// SPDX-License-Identifier: Apache-2.0
// ANeuralNetworksExecution, ANeuralNetworksEvent and ANeuralNetworksBurst.
//
// An execution moves preparation -> computing -> completed, like Android's ExecutionBuilder:
// every setter needs the preparation state; a compute call first claims the computing state
// (BAD_STATE if it is computing, or completed and not reusable), then checks its arguments; a
// failure of those checks completes the execution with that error, exactly as a failed run does.
// Output dimensions and durations can be read once it has completed.
#ifndef MOCK_NNAPI_SRC_EXECUTION_H_
#define MOCK_NNAPI_SRC_EXECUTION_H_

#include <android/NeuralNetworksTypes.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "compilation.h"
#include "executor.h"
#include "memory.h"
#include "object_counter.h"

namespace mock_nnapi {

// Completion state shared between an execution's worker and its event.
struct Completion {
  std::mutex mutex;
  std::condition_variable done_signal;
  bool done = false;
  int result = ANEURALNETWORKS_NO_ERROR;

  void Signal(int code);
  int Wait();
};

class Event : public CountedObject<Event> {
 public:
  static constexpr ObjectKind kObjectKind = ObjectKind::kEvent;
  explicit Event(std::shared_ptr<Completion> completion) : completion_(std::move(completion)) {}
  // An event backed by a sync fence file descriptor (duplicated; closed on free). Any file
  // descriptor that polls readable once signalled works (a sync_file, an eventfd, a pipe).
  static int CreateFromSyncFenceFd(int fd, std::unique_ptr<Event>* event);
  // The event of a fenced execution: its completion, and its fence (owned, closed on free).
  Event(std::shared_ptr<Completion> completion, int fence_fd)
      : completion_(std::move(completion)), fence_fd_(fence_fd) {}
  // The completion of the mock's own computation (nullptr for an event made from a fence).
  const std::shared_ptr<Completion>& completion() const { return completion_; }
  ~Event();
  int Wait() const;
  // The event's own fence descriptor, or -1 when it is not backed by a fence.
  int fence_fd() const { return fence_fd_; }
  // ANeuralNetworksEvent_getSyncFenceFd: a duplicate the caller must close.
  int GetSyncFenceFd(int* fd) const;

 private:
  Event() = default;
  std::shared_ptr<Completion> completion_;
  int fence_fd_ = -1;
};

// Blocks until `fd` polls readable. OP_FAILED if the descriptor reports an error.
int WaitForFence(int fd);

class Burst : public CountedObject<Burst> {
 public:
  static constexpr ObjectKind kObjectKind = ObjectKind::kBurst;
  explicit Burst(const Compilation* compilation) : compilation_(compilation) {}
  const Compilation* compilation() const { return compilation_; }
  // A burst serves one execution at a time.
  std::mutex in_use;

 private:
  const Compilation* compilation_;
};

class Execution : public CountedObject<Execution> {
 public:
  static constexpr ObjectKind kObjectKind = ObjectKind::kExecution;
  explicit Execution(const Compilation* compilation);
  ~Execution();

  int SetInput(int32_t index, const ANeuralNetworksOperandType* type, const void* buffer,
               size_t length);
  int SetInputFromMemory(int32_t index, const ANeuralNetworksOperandType* type,
                         const Memory* memory, size_t offset, size_t length);
  int SetOutput(int32_t index, const ANeuralNetworksOperandType* type, void* buffer, size_t length);
  int SetOutputFromMemory(int32_t index, const ANeuralNetworksOperandType* type,
                          const Memory* memory, size_t offset, size_t length);
  int Compute();
  int BurstCompute(Burst* burst);
  int StartCompute(std::unique_ptr<Event>* event);
  // A fenced execution: argument checks fail here (without an event, the execution completed
  // with the error); then the run starts on a worker thread once every fence in `fences` has
  // signalled (polled readable; POLLERR fails the run with OP_FAILED) and every computation in
  // `computations` (fenced executions' events) has completed (an error fails it with OP_FAILED,
  // as a sync fence signalled with an error would). Events of unfenced computations were waited
  // for by the caller. The returned event is backed by a sync fence, an eventfd that becomes
  // readable (counter 1) when the execution completes, successfully or not: its result is
  // ANeuralNetworksEvent_wait's.
  int StartComputeWithDependencies(const std::vector<int>& fences,
                                   const std::vector<std::shared_ptr<Completion>>& computations,
                                   uint64_t duration_ns, std::unique_ptr<Event>* event);
  int GetOutputOperandRank(int32_t index, uint32_t* rank) const;
  int GetOutputOperandDimensions(int32_t index, uint32_t* dimensions) const;
  int SetMeasureTiming(bool measure);
  int GetDuration(int32_t duration_code, uint64_t* duration) const;
  int SetTimeout(uint64_t duration_ns);
  int SetLoopTimeout(uint64_t duration_ns);
  int SetReusable(bool reusable);
  int EnableInputAndOutputPadding(bool enable);
  int AddExtensionAttribute(const char* extension_name);

  const Compilation& compilation() const { return *compilation_; }
  // True between the start of a computation and its completion (ANeuralNetworksExecution_free
  // ignores such an execution, like Android).
  bool in_flight() const;

 private:
  enum class State { kPreparation, kComputing, kCompleted };
  struct Argument {
    enum class Kind { kUnset, kPointer, kMemory, kOmitted } kind = Kind::kUnset;
    uint8_t* data = nullptr;
    // Bytes available at `data` (the value plus any padding).
    size_t length = 0;
    const Memory* memory = nullptr;
    // From setInput/setOutput's type, else the model's operand; may hold unknown dimensions.
    Dimensions dimensions;
    bool rank_known = true;
  };

  int SetArgument(bool input, int32_t index, const ANeuralNetworksOperandType* type,
                  uint8_t* buffer, size_t length, const Memory* memory, size_t offset,
                  const char* function);
  int CheckNotStarted(const char* function) const;
  // Claims the computing state, then checks the arguments; a failed check completes the
  // execution with its error.
  int BeginCompute(const char* function, bool fenced, uint64_t duration_ns);
  int CheckArguments(const char* function, bool fenced, uint64_t duration_ns) const;
  // Runs the model (on the caller's or the worker's thread) and completes the execution.
  int Run();
  int FinishComputation(int result, const std::vector<OutputShape>& shapes);

  const Compilation* compilation_;
  std::vector<Argument> inputs_;
  std::vector<Argument> outputs_;
  State state_ = State::kPreparation;
  bool reusable_ = false;
  bool padding_enabled_ = false;
  bool measure_timing_ = false;
  bool any_argument_set_ = false;
  std::optional<uint64_t> timeout_ns_;
  uint64_t loop_timeout_ns_;
  int completion_result_ = ANEURALNETWORKS_NO_ERROR;
  std::vector<OutputShape> output_shapes_;
  // Modelled durations of the last run (cost_model.h): never measurements.
  uint64_t time_on_hardware_ns_ = 0;
  uint64_t time_in_driver_ns_ = 0;
  // startComputeWithDependencies' duration (0: none), a deadline like setTimeout's.
  uint64_t fenced_duration_ns_ = 0;
  std::thread worker_;
  mutable std::mutex mutex_;
};

// Loop timeouts (ANeuralNetworks_getDefaultLoopTimeout / getMaximumLoopTimeout).
constexpr uint64_t kDefaultLoopTimeoutNs = 2'000'000'000ull;
constexpr uint64_t kMaximumLoopTimeoutNs = 15'000'000'000ull;

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_EXECUTION_H_
