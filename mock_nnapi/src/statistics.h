// SPDX-License-Identifier: Apache-2.0
// Process-wide counters of what the mock did, read through the MockNnapi_* control API so that
// tests can prove work really went through NNAPI.
#ifndef MOCK_NNAPI_SRC_STATISTICS_H_
#define MOCK_NNAPI_SRC_STATISTICS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace mock_nnapi {

enum class Counter {
  kModelsFinished,
  kCompilationsFinished,
  kCompilationCacheHits,
  kCompilationCacheMisses,
  // Cache files found under a compilation's name and not trusted (a miss too; rewritten).
  kCompilationCacheDiscarded,
  kExecutionsStarted,
  kExecutionsCompleted,
  kExecutionsFailed,
  kOperationsExecuted,
  // The most bytes of temporaries one model run held at once (a maximum, not a sum).
  kTemporaryBytesPeak,
  // Entries built in the models' DerivedConstants stores (weights packed or converted once).
  kDerivedConstantsBuilt,
  // ParallelFor jobs that ran on the pool (on more than one thread).
  kPoolJobs,
  // Products computed by int8_gemm (quantised CONV_2D / FULLY_CONNECTED on constant weights).
  kInt8GemmProducts,
  // Driver failures a profile describes that happened (compilations and executions, including
  // those the runtime's CPU fallback then ran).
  kDriverFailures,
};

void Increment(Counter counter, uint64_t amount = 1);
// Raises a maximum-valued counter to `value` if it is larger.
void RecordMaximum(Counter counter, uint64_t value);
void CountOperationExecuted(int32_t operation_type);
uint64_t OperationExecutedCount(int32_t operation_type);
// Counter value by name ("executions_completed", ...), nullopt for an unknown name.
std::optional<uint64_t> CounterByName(const std::string& name);
void ResetCounters();

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_STATISTICS_H_
