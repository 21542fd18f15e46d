// ANeuralNetworksMemory (from a file descriptor or from a memory descriptor) and
// ANeuralNetworksMemoryDesc.
#ifndef MOCK_NNAPI_SRC_MEMORY_H_
#define MOCK_NNAPI_SRC_MEMORY_H_

#include <android/NeuralNetworksTypes.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "object_counter.h"
#include "operand_types.h"

namespace mock_nnapi {

class Compilation;

class Memory : public CountedObject<Memory> {
 public:
  static constexpr ObjectKind kObjectKind = ObjectKind::kMemory;

  // mmap()s `size` bytes of `fd` at `offset` with `protect` (PROT_* flags).
  static int CreateFromFd(size_t size, int protect, int fd, size_t offset,
                          std::unique_ptr<Memory>* memory);
  // Device memory described by a finished descriptor (host memory in the mock).
  static int CreateFromDesc(const class MemoryDesc& desc, std::unique_ptr<Memory>* memory);
  ~Memory();

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool from_desc() const { return from_desc_; }
  // Memories from descriptors track whether they hold valid data (copy, or written by an
  // execution) and the dimensions of what they hold.
  bool initialized() const { return initialized_; }
  void set_initialized(bool value) const { initialized_ = value; }
  int32_t desc_type() const { return desc_type_; }
  const Dimensions& dimensions() const { return dimensions_; }
  void set_dimensions(const Dimensions& dimensions) const { dimensions_ = dimensions; }
  const std::vector<const Compilation*>& roles() const { return roles_; }

 private:
  Memory() = default;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  std::vector<uint8_t> owned_;
  bool from_desc_ = false;
  mutable bool initialized_ = false;
  int32_t desc_type_ = 0;
  mutable Dimensions dimensions_;
  std::vector<const Compilation*> roles_;
};

class MemoryDesc : public CountedObject<MemoryDesc> {
 public:
  static constexpr ObjectKind kObjectKind = ObjectKind::kMemoryDesc;
  int AddRole(const Compilation* compilation, bool input, uint32_t index, float frequency);
  int SetDimensions(uint32_t rank, const uint32_t* dimensions);
  int Finish();
  bool finished() const { return finished_; }
  int32_t type() const { return type_; }
  const Dimensions& dimensions() const { return dimensions_; }
  const std::vector<const Compilation*>& compilations() const { return compilations_; }

 private:
  bool finished_ = false;
  bool has_role_ = false;
  int32_t type_ = -1;
  float scale_ = 0.f;
  int32_t zero_point_ = 0;
  Dimensions dimensions_;
  bool rank_known_ = false;
  std::vector<const Compilation*> compilations_;
  std::vector<std::pair<const Compilation*, std::pair<bool, uint32_t>>> roles_;
};

// Copies src into dst (both from fds of equal size, or descriptor memories of compatible
// type and dimensions).
int CopyMemory(const Memory& src, const Memory& dst);

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_MEMORY_H_
