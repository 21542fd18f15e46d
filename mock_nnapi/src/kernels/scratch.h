// SPDX-License-Identifier: Apache-2.0
// Per-thread work buffers of the kernels that run band by band or tile by tile.
#ifndef MOCK_NNAPI_SRC_KERNELS_SCRATCH_H_
#define MOCK_NNAPI_SRC_KERNELS_SCRATCH_H_

#include <cstddef>
#include <memory>

namespace mock_nnapi {
namespace conv {

// A per-thread work buffer kept between runs (thread_local): grows to the largest size asked
// for, never shrinks, and is not initialised (std::vector::resize zero-fills what it adds, which
// costs as much as a small band's conversion when band sizes alternate).
template <typename T>
class ScratchArray {
 public:
  T* Get(size_t count) {
    if (count > capacity_) {
      data_.reset(new T[count]);
      capacity_ = count;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<T[]> data_;
  size_t capacity_ = 0;
};

}  // namespace conv
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_SCRATCH_H_
