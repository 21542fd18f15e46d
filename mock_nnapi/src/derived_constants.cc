// SPDX-License-Identifier: Apache-2.0
#include "derived_constants.h"

#include <algorithm>
#include <cstdlib>

#include "statistics.h"

namespace mock_nnapi {

std::shared_ptr<const void> DerivedConstants::GetOrBuild(
    uint32_t operation, uint32_t key, size_t bytes,
    const std::function<std::shared_ptr<const void>()>& build) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto where = entries_.find({operation, key});
  if (where != entries_.end()) return where->second;
  std::shared_ptr<const void> entry;
  const size_t budget = BudgetBytes();
  if (bytes <= budget - std::min(bytes_, budget)) {
    entry = build();
    if (entry != nullptr) {
      bytes_ += bytes;
      Increment(Counter::kDerivedConstantsBuilt);
    }
  }
  entries_.emplace(std::make_pair(operation, key), entry);  // a declined entry stays declined
  return entry;
}

size_t DerivedConstants::BudgetBytes() {
  // Read when an entry is first asked for, so a test can lower it for the models it builds.
  const char* value = std::getenv("MOCK_NNAPI_DERIVED_BUDGET_BYTES");
  if (value == nullptr || *value == '\0') return kBudgetBytes;
  char* end = nullptr;
  const unsigned long long parsed = std::strtoull(value, &end, 10);
  return *end == '\0' ? static_cast<size_t>(std::min<unsigned long long>(parsed, kBudgetBytes))
                      : kBudgetBytes;
}

size_t DerivedConstants::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

}  // namespace mock_nnapi
