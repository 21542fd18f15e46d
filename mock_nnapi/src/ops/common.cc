// SPDX-License-Identifier: Apache-2.0
#include "common.h"

namespace mock_nnapi {

bool BroadcastShapes(const Dimensions& a, const Dimensions& b, Dimensions* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const uint32_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const uint32_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = da == 1 ? db : da;
  }
  return true;
}

}  // namespace mock_nnapi
