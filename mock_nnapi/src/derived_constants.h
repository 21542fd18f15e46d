// SPDX-License-Identifier: Apache-2.0
// Data an operation derives from its constant inputs (weights packed for a GEMM kernel,
// quantised or fp16 weights converted to float), built the first time the operation runs and
// kept for the model's lifetime, the way Android's drivers prepare weights once when a model is
// compiled. It is an optimisation only: a kernel computes the same bits with or without it, so
// an entry may be declined (over budget) and the kernel falls back to its per-run path.
//
// Kernels reach it through OperationContext::Derived (operation.h).
#ifndef MOCK_NNAPI_SRC_DERIVED_CONSTANTS_H_
#define MOCK_NNAPI_SRC_DERIVED_CONSTANTS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace mock_nnapi {

class DerivedConstants {
 public:
  // Bytes one model may keep derived at most; an entry that would pass it is declined.
  static constexpr size_t kBudgetBytes = size_t{256} << 20;
  // kBudgetBytes, or less: MOCK_NNAPI_DERIVED_BUDGET_BYTES (a decimal byte count, read when an
  // entry is first asked for), so that tests can check the kernels' declined paths.
  static size_t BudgetBytes();

  // The entry (operation, key): built by `build` on first use when `bytes` fits the budget, else
  // declined (nullptr, also on later calls). `build` runs under the store's lock, once.
  std::shared_ptr<const void> GetOrBuild(uint32_t operation, uint32_t key, size_t bytes,
                                         const std::function<std::shared_ptr<const void>()>& build);

  size_t bytes() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<uint32_t, uint32_t>, std::shared_ptr<const void>> entries_;
  size_t bytes_ = 0;
};

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_DERIVED_CONSTANTS_H_
