// SPDX-License-Identifier: Apache-2.0
// Live-object accounting for the mock's handles (models, compilations, executions, ...), so
// tests can assert that a client frees every NNAPI object it creates.
#ifndef MOCK_NNAPI_SRC_OBJECT_COUNTER_H_
#define MOCK_NNAPI_SRC_OBJECT_COUNTER_H_

#include <atomic>
#include <cstdint>

namespace mock_nnapi {

enum class ObjectKind { kModel, kCompilation, kExecution, kEvent, kMemory, kMemoryDesc, kBurst };
constexpr int kObjectKindCount = 7;

std::atomic<int64_t>& LiveObjectCounter(ObjectKind kind);

template <typename T>
class CountedObject {
 public:
  CountedObject() { LiveObjectCounter(T::kObjectKind)++; }
  CountedObject(const CountedObject&) { LiveObjectCounter(T::kObjectKind)++; }
  ~CountedObject() { LiveObjectCounter(T::kObjectKind)--; }
};

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OBJECT_COUNTER_H_
