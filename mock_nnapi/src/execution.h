// ANeuralNetworksExecution, ANeuralNetworksEvent and ANeuralNetworksBurst.
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
  // An event backed by a sync fence file descriptor (owned: closed on free).
  static int CreateFromSyncFenceFd(int fd, std::unique_ptr<Event>* event);
  ~Event();
  int Wait();
  int GetSyncFenceFd(int* fd) const;

 private:
  Event() = default;
  std::shared_ptr<Completion> completion_;
  int fence_fd_ = -1;
};

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
  int StartCompute(const std::vector<const Event*>& dependencies, uint64_t duration_ns,
                   std::unique_ptr<Event>* event);
  int GetOutputOperandRank(int32_t index, uint32_t* rank) const;
  int GetOutputOperandDimensions(int32_t index, uint32_t* dimensions) const;
  int SetMeasureTiming(bool measure);
  int GetDuration(int32_t duration_code, uint64_t* duration) const;
  int SetTimeout(uint64_t duration_ns);
  int SetLoopTimeout(uint64_t duration_ns);
  int SetReusable(bool reusable);
  int EnableInputAndOutputPadding(bool enable);

  const Compilation& compilation() const { return *compilation_; }

 private:
  enum class State { kPreparation, kComputing, kCompleted };
  struct Argument {
    enum class Kind { kUnset, kPointer, kMemory, kOmitted } kind = Kind::kUnset;
    uint8_t* data = nullptr;
    size_t length = 0;
    const Memory* memory = nullptr;
    Dimensions dimensions;
    bool rank_known = true;
  };

  int SetArgument(bool input, int32_t index, const ANeuralNetworksOperandType* type, uint8_t* data,
                  size_t length, const Memory* memory, size_t offset);
  int CheckModifiable(const char* function) const;
  int BeginCompute(const char* function);
  // Runs the model and records the completion (called on the caller's or the worker's thread).
  int RunAndComplete();

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
  bool fenced_ = false;
  std::thread worker_;
  mutable std::mutex mutex_;
};

// Loop timeouts (ANeuralNetworks_getDefaultLoopTimeout / getMaximumLoopTimeout).
constexpr uint64_t kDefaultLoopTimeoutNs = 2'000'000'000ull;
constexpr uint64_t kMaximumLoopTimeoutNs = 15'000'000'000ull;

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_EXECUTION_H_
