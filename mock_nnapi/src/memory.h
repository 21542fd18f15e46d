// SPDX-License-Identifier: Apache-2.0
// ANeuralNetworksMemory (from a file descriptor or from a memory descriptor) and
// ANeuralNetworksMemoryDesc.
//
// The two kinds follow Android's memory validators: a memory from a file descriptor is a sized
// region any execution or model may use with an explicit offset and length; a memory from a
// descriptor ("device memory") may only play the roles its descriptor listed, always as a whole
// (offset 0, length 0), and tracks whether it holds data and the dimensions of that data.
//
// A descriptor whose dimensions (deduced from its roles and setDimensions) leave the size
// unknown gives a memory without a buffer: an execution writing it as an output allocates it at
// the size of the output it computes (again at every later write whose size differs), and
// ANeuralNetworksMemory_copy into it takes the source's size. Until then it holds no data.
#ifndef MOCK_NNAPI_SRC_MEMORY_H_
#define MOCK_NNAPI_SRC_MEMORY_H_

#include <android/NeuralNetworksTypes.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "object_counter.h"
#include "operation.h"

namespace mock_nnapi {

class Compilation;

// One role of a descriptor memory: (compilation, is input, input or output index).
using MemoryRole = std::tuple<const Compilation*, bool, uint32_t>;

// The operand properties every role of a descriptor memory shares.
struct MemoryOperand {
  int32_t type = 0;
  float scale = 0.f;
  int32_t zero_point = 0;
  // Per-channel quantisation (empty scales when the operand has none).
  uint32_t channel_dim = 0;
  std::vector<float> channel_scales;
  bool operator==(const MemoryOperand& other) const;
};

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
  // A descriptor memory whose size was unknown at creation (its buffer follows its data).
  bool dynamic() const { return dynamic_; }
  // Dynamic memories: makes the buffer `size` bytes (contents undefined); nullptr when the
  // allocation fails.
  uint8_t* Resize(size_t size) const;
  bool readable() const { return readable_; }
  bool writable() const { return writable_; }

  // A memory mapped from a regular file: OP_FAILED, naming `function`, when the file has been
  // truncated below the mapped region since createFromFd (touching the region would raise
  // SIGBUS). A file truncated after this check, while an execution reads it, still does.
  int CheckFileBacking(const char* function) const;

  // A model constant or an execution argument in [offset, offset + length) (memories from file
  // descriptors only; the region must be inside the memory and not empty).
  int ValidateRegion(size_t offset, size_t length, const char* function) const;
  // setInputFromMemory / setOutputFromMemory: the region (or, for a descriptor memory, the role
  // and the dimensions given by `type`) may be used as that argument.
  int ValidateArgument(const Compilation* compilation, bool input, uint32_t index,
                       const ANeuralNetworksOperandType* type, size_t offset, size_t length,
                       const char* function) const;
  // At compute: a descriptor memory used as input holds data of exactly `dimensions`.
  int ValidateInputDimensions(const Dimensions& dimensions, uint32_t input) const;
  // After a successful execution wrote `dimensions` into this descriptor memory.
  bool UpdateDimensions(const Dimensions& dimensions) const;

  // Descriptor memories hold data after a successful execution or copy into them and lose it
  // after a failed one. Memories from file descriptors always hold data.
  bool initialized() const { return initialized_; }
  void set_initialized(bool value) const {
    if (from_desc_) initialized_ = value;
  }
  const Dimensions& dimensions() const { return updated_dimensions_; }

  // ANeuralNetworksMemory_copy.
  static int Copy(const Memory& source, const Memory& destination);

 private:
  Memory() = default;

  // Mutable: a dynamic memory's buffer is (re)allocated by the executions that write it.
  mutable uint8_t* data_ = nullptr;
  mutable size_t size_ = 0;
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  // A regular file's descriptor (a duplicate, owned) and the mapped region's offset in it.
  int file_fd_ = -1;
  size_t file_offset_ = 0;
  mutable std::vector<uint8_t> owned_;
  bool dynamic_ = false;
  bool readable_ = true;
  bool writable_ = true;
  bool from_desc_ = false;
  mutable bool initialized_ = true;
  // Descriptor memories only.
  std::set<MemoryRole> roles_;
  MemoryOperand operand_;
  Dimensions initial_dimensions_;
  mutable Dimensions updated_dimensions_;
};

class MemoryDesc : public CountedObject<MemoryDesc> {
 public:
  static constexpr ObjectKind kObjectKind = ObjectKind::kMemoryDesc;
  int AddRole(const Compilation& compilation, bool input, uint32_t index, float frequency);
  int SetDimensions(const Dimensions& dimensions);
  int Finish();

  bool finished() const { return finished_; }
  const std::set<MemoryRole>& roles() const { return roles_; }
  const MemoryOperand& operand() const { return *operand_; }
  const Dimensions& dimensions() const { return dimensions_; }

 private:
  bool finished_ = false;
  std::set<MemoryRole> roles_;
  std::optional<MemoryOperand> operand_;
  Dimensions dimensions_;
};

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_MEMORY_H_
