// SPDX-License-Identifier: Apache-2.0
#include "statistics.h"

#include <android/NeuralNetworksTypes.h>

#include <array>
#include <atomic>
#include <iterator>

#include "nnapi_facts.h"
#include "object_counter.h"

namespace mock_nnapi {
namespace {

struct NamedCounter {
  const char* name;
  Counter counter;
};
constexpr NamedCounter kCounterNames[] = {
    {"models_finished", Counter::kModelsFinished},
    {"compilations_finished", Counter::kCompilationsFinished},
    {"compilation_cache_hits", Counter::kCompilationCacheHits},
    {"compilation_cache_misses", Counter::kCompilationCacheMisses},
    {"compilation_cache_discarded", Counter::kCompilationCacheDiscarded},
    {"executions_started", Counter::kExecutionsStarted},
    {"executions_completed", Counter::kExecutionsCompleted},
    {"executions_failed", Counter::kExecutionsFailed},
    {"operations_executed", Counter::kOperationsExecuted},
    {"temporary_bytes_peak", Counter::kTemporaryBytesPeak},
    {"derived_constants_built", Counter::kDerivedConstantsBuilt},
    {"pool_jobs", Counter::kPoolJobs},
    {"int8_gemm_products", Counter::kInt8GemmProducts},
    {"driver_failures", Counter::kDriverFailures},
};
constexpr size_t kCounterCount = sizeof(kCounterNames) / sizeof(kCounterNames[0]);
constexpr int32_t kOperationSlots = static_cast<int32_t>(std::size(nnapi_common::kOperations));

std::array<std::atomic<uint64_t>, kCounterCount>& Counters() {
  static std::array<std::atomic<uint64_t>, kCounterCount> counters{};
  return counters;
}

std::array<std::atomic<uint64_t>, kOperationSlots>& OperationCounters() {
  static std::array<std::atomic<uint64_t>, kOperationSlots> counters{};
  return counters;
}

struct NamedKind {
  const char* name;
  ObjectKind kind;
};
constexpr NamedKind kKindNames[] = {
    {"live_models", ObjectKind::kModel},         {"live_compilations", ObjectKind::kCompilation},
    {"live_executions", ObjectKind::kExecution}, {"live_events", ObjectKind::kEvent},
    {"live_memories", ObjectKind::kMemory},      {"live_memory_descs", ObjectKind::kMemoryDesc},
    {"live_bursts", ObjectKind::kBurst},
};

}  // namespace

std::atomic<int64_t>& LiveObjectCounter(ObjectKind kind) {
  static std::array<std::atomic<int64_t>, kObjectKindCount> counters{};
  return counters[static_cast<int>(kind)];
}

void Increment(Counter counter, uint64_t amount) {
  Counters()[static_cast<size_t>(counter)] += amount;
}

void RecordMaximum(Counter counter, uint64_t value) {
  std::atomic<uint64_t>& slot = Counters()[static_cast<size_t>(counter)];
  uint64_t current = slot.load();
  while (current < value && !slot.compare_exchange_weak(current, value)) {
  }
}

void CountOperationExecuted(int32_t operation_type) {
  Increment(Counter::kOperationsExecuted);
  if (operation_type >= 0 && operation_type < kOperationSlots) {
    OperationCounters()[operation_type]++;
  }
}

uint64_t OperationExecutedCount(int32_t operation_type) {
  if (operation_type < 0 || operation_type >= kOperationSlots) return 0;
  return OperationCounters()[operation_type].load();
}

std::optional<uint64_t> CounterByName(const std::string& name) {
  for (const NamedCounter& entry : kCounterNames) {
    if (name == entry.name) return Counters()[static_cast<size_t>(entry.counter)].load();
  }
  uint64_t live_total = 0;
  for (const NamedKind& entry : kKindNames) {
    const int64_t live = LiveObjectCounter(entry.kind).load();
    live_total += static_cast<uint64_t>(live);
    if (name == entry.name) return static_cast<uint64_t>(live);
  }
  if (name == "live_objects") return live_total;
  return std::nullopt;
}

void ResetCounters() {
  for (auto& counter : Counters()) counter = 0;
  for (auto& counter : OperationCounters()) counter = 0;
}

}  // namespace mock_nnapi
