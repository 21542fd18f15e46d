// SPDX-License-Identifier: Apache-2.0
#include "derived_constants.h"

#include "statistics.h"

namespace mock_nnapi {

std::shared_ptr<const void> DerivedConstants::GetOrBuild(
    uint32_t operation, uint32_t key, size_t bytes,
    const std::function<std::shared_ptr<const void>()>& build) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto where = entries_.find({operation, key});
  if (where != entries_.end()) return where->second;
  std::shared_ptr<const void> entry;
  if (bytes <= kBudgetBytes - bytes_) {
    entry = build();
    if (entry != nullptr) {
      bytes_ += bytes;
      Increment(Counter::kDerivedConstantsBuilt);
    }
  }
  entries_.emplace(std::make_pair(operation, key), entry);  // a declined entry stays declined
  return entry;
}

size_t DerivedConstants::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

}  // namespace mock_nnapi
