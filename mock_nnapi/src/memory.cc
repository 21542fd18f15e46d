// SPDX-License-Identifier: Apache-2.0
#include "memory.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "check.h"
#include "compilation.h"
#include "model.h"

namespace mock_nnapi {

bool MemoryOperand::operator==(const MemoryOperand& other) const {
  return type == other.type && scale == other.scale && zero_point == other.zero_point &&
         channel_dim == other.channel_dim && channel_scales == other.channel_scales;
}

int Memory::CreateFromFd(size_t size, int protect, int fd, size_t offset,
                         std::unique_ptr<Memory>* memory) {
  NN_CHECK(size > 0 && fd >= 0, ANEURALNETWORKS_BAD_DATA)
      << "Memory_createFromFd: invalid size " << size << " or fd " << fd;
  // Android duplicates the descriptor first and reports a failure as UNEXPECTED_NULL.
  const int owned = dup(fd);
  NN_CHECK(owned >= 0, ANEURALNETWORKS_UNEXPECTED_NULL)
      << "Memory_createFromFd: dup(" << fd << ") failed: " << std::strerror(errno);
  struct stat info{};
  const bool have_info = fstat(owned, &info) == 0;
  // Android maps lazily, so a region past the end of a file only fails (SIGBUS) when used; the
  // mock maps now and refuses such a region instead of crashing later.
  const bool past_end = have_info && S_ISREG(info.st_mode) &&
                        (offset > static_cast<uint64_t>(info.st_size) ||
                         size > static_cast<uint64_t>(info.st_size) - offset);
  // mmap needs a page-aligned offset: map from the page start and point into it.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t aligned_offset = offset - offset % page;
  const size_t delta = offset - aligned_offset;
  void* mapping = MAP_FAILED;
  if (!past_end && size <= SIZE_MAX - delta) {
    mapping = mmap(nullptr, size + delta, protect & (PROT_READ | PROT_WRITE), MAP_SHARED, owned,
                   static_cast<off_t>(aligned_offset));
  }
  const int mmap_errno = errno;
  const bool regular = have_info && S_ISREG(info.st_mode) && mapping != MAP_FAILED;
  if (!regular) close(owned);  // a regular file's descriptor stays for CheckFileBacking
  NN_CHECK(!past_end, ANEURALNETWORKS_BAD_DATA)
      << "Memory_createFromFd: offset " << offset << " + size " << size << " is past the end of "
      << "the file (" << info.st_size << " bytes)";
  NN_CHECK(mapping != MAP_FAILED, ANEURALNETWORKS_BAD_DATA)
      << "Memory_createFromFd: mmap failed: " << std::strerror(mmap_errno);
  std::unique_ptr<Memory> result(new Memory());
  result->mapping_ = mapping;
  result->mapping_size_ = size + delta;
  result->file_fd_ = regular ? owned : -1;
  result->file_offset_ = offset;
  result->data_ = static_cast<uint8_t*>(mapping) + delta;
  result->size_ = size;
  result->readable_ = (protect & PROT_READ) != 0;
  result->writable_ = (protect & PROT_WRITE) != 0;
  *memory = std::move(result);
  return ANEURALNETWORKS_NO_ERROR;
}

int Memory::CreateFromDesc(const MemoryDesc& desc, std::unique_ptr<Memory>* memory) {
  NN_CHECK(desc.finished(), ANEURALNETWORKS_BAD_STATE)
      << "Memory_createFromDesc: the descriptor is not finished";
  // ByteSize is nullopt (or 0 for an unknown rank) while a dimension is unknown: such a memory
  // is allocated when an execution first writes it (the NDK: "the same memory object may be
  // used with different shapes of outputs in different executions").
  std::optional<size_t> size = ByteSize(desc.operand().type, desc.dimensions());
  const bool dynamic = !size.has_value() || *size == 0;
  std::unique_ptr<Memory> result(new Memory());
  result->dynamic_ = dynamic;
  if (dynamic) size = 0;
  try {
    result->owned_.resize(*size);
  } catch (const std::bad_alloc&) {
    return CheckFailure(__FILE__, __LINE__, "allocation", ANEURALNETWORKS_OUT_OF_MEMORY)
           << "Memory_createFromDesc: " << *size << " bytes";
  }
  result->data_ = result->owned_.data();
  result->size_ = *size;
  result->from_desc_ = true;
  result->initialized_ = false;
  result->roles_ = desc.roles();
  result->operand_ = desc.operand();
  result->initial_dimensions_ = desc.dimensions();
  result->updated_dimensions_ = desc.dimensions();
  *memory = std::move(result);
  return ANEURALNETWORKS_NO_ERROR;
}

uint8_t* Memory::Resize(size_t size) const {
  if (!dynamic_) return nullptr;
  try {
    owned_.resize(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  // A zero-sized value still gets an address.
  if (owned_.capacity() == 0) owned_.reserve(1);
  data_ = owned_.data();
  size_ = size;
  return data_;
}

Memory::~Memory() {
  if (mapping_ != nullptr) munmap(mapping_, mapping_size_);
  if (file_fd_ >= 0) close(file_fd_);
}

int Memory::CheckFileBacking(const char* function) const {
  if (file_fd_ < 0) return ANEURALNETWORKS_NO_ERROR;
  struct stat info{};
  if (fstat(file_fd_, &info) != 0) return ANEURALNETWORKS_NO_ERROR;  // nothing to say
  const uint64_t needed = static_cast<uint64_t>(file_offset_) + size_;
  NN_CHECK(static_cast<uint64_t>(info.st_size) >= needed, ANEURALNETWORKS_OP_FAILED)
      << function << ": the file behind a memory from createFromFd was truncated to "
      << info.st_size << " bytes; its mapped region needs " << needed;
  return ANEURALNETWORKS_NO_ERROR;
}

int Memory::ValidateRegion(size_t offset, size_t length, const char* function) const {
  NN_CHECK(!from_desc_, ANEURALNETWORKS_BAD_DATA)
      << function << ": a memory created from a descriptor cannot hold model constants";
  NN_CHECK(offset <= size_ && length <= size_ - offset, ANEURALNETWORKS_BAD_DATA)
      << function << ": offset " << offset << " + length " << length << " exceeds the memory's "
      << size_ << " bytes";
  NN_CHECK(offset != 0 || length != 0, ANEURALNETWORKS_BAD_DATA)
      << function << ": offset 0 and length 0 (the size of this memory cannot be implied)";
  return ANEURALNETWORKS_NO_ERROR;
}

int Memory::ValidateArgument(const Compilation* compilation, bool input, uint32_t index,
                             const ANeuralNetworksOperandType* type, size_t offset, size_t length,
                             const char* function) const {
  if (!from_desc_) return ValidateRegion(offset, length, function);
  NN_CHECK(roles_.count({compilation, input, index}) > 0, ANEURALNETWORKS_BAD_DATA)
      << function << ": the memory's descriptor has no " << (input ? "input" : "output")
      << " role for index " << index << " of this compilation";
  NN_CHECK(offset == 0 && length == 0, ANEURALNETWORKS_BAD_DATA)
      << function << ": a memory created from a descriptor needs offset 0 and length 0";
  if (type != nullptr) {
    NN_CHECK(IsTensorType(operand_.type) || type->dimensionCount == 0, ANEURALNETWORKS_BAD_DATA)
        << function << ": dimensions given for a scalar memory";
    const Dimensions given(type->dimensions, type->dimensions + type->dimensionCount);
    NN_CHECK(CombineDimensions(given, initial_dimensions_).has_value(), ANEURALNETWORKS_BAD_DATA)
        << function << ": dimensions " << DimensionsToString(given)
        << " are incompatible with the memory's " << DimensionsToString(initial_dimensions_);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Memory::ValidateInputDimensions(const Dimensions& dimensions, uint32_t input) const {
  if (!from_desc_) return ANEURALNETWORKS_NO_ERROR;
  NN_CHECK(initialized_, ANEURALNETWORKS_OP_FAILED)
      << "input " << input << " reads a memory created from a descriptor that holds no data";
  NN_CHECK(dimensions == updated_dimensions_, ANEURALNETWORKS_OP_FAILED)
      << "input " << input << " has dimensions " << DimensionsToString(dimensions)
      << " but its memory holds " << DimensionsToString(updated_dimensions_);
  return ANEURALNETWORKS_NO_ERROR;
}

bool Memory::UpdateDimensions(const Dimensions& dimensions) const {
  if (!from_desc_) return true;
  if (!dimensions.empty() && !IsTensorType(operand_.type)) return false;
  std::optional<Dimensions> combined = CombineDimensions(dimensions, initial_dimensions_);
  if (!combined) return false;
  updated_dimensions_ = *combined;
  return true;
}

int Memory::Copy(const Memory& source, const Memory& destination) {
  auto copy = [&]() -> int {
    if (&source == &destination) return ANEURALNETWORKS_NO_ERROR;
    NN_CHECK(source.initialized_, ANEURALNETWORKS_BAD_DATA)
        << "Memory_copy: the source memory holds no data";
    NN_CHECK(source.readable_ && destination.writable_, ANEURALNETWORKS_BAD_DATA)
        << "Memory_copy: the source is not readable or the destination is not writable";
    // The destination takes the source's metadata: a logical size for any memory, plus operand
    // properties and dimensions for a descriptor memory.
    const Dimensions& dimensions = source.updated_dimensions_;
    const size_t logical_size =
        source.from_desc_ ? ByteSize(source.operand_.type, dimensions).value_or(0) : source.size_;
    if (!destination.from_desc_) {
      NN_CHECK(logical_size == 0 || logical_size == destination.size_, ANEURALNETWORKS_BAD_DATA)
          << "Memory_copy: incompatible memory sizes " << logical_size << " and "
          << destination.size_;
    } else {
      NN_CHECK(!source.from_desc_ || source.operand_ == destination.operand_,
               ANEURALNETWORKS_BAD_DATA)
          << "Memory_copy: the memories hold different operand types";
      NN_CHECK(dimensions.empty() || IsTensorType(destination.operand_.type),
               ANEURALNETWORKS_BAD_DATA)
          << "Memory_copy: dimensions for a scalar memory";
      std::optional<Dimensions> combined =
          CombineDimensions(dimensions, destination.initial_dimensions_);
      NN_CHECK(combined.has_value(), ANEURALNETWORKS_BAD_DATA)
          << "Memory_copy: dimensions " << DimensionsToString(dimensions)
          << " are incompatible with " << DimensionsToString(destination.initial_dimensions_);
      NN_CHECK(logical_size == 0 ||
                   logical_size == ByteSize(destination.operand_.type, *combined).value_or(0),
               ANEURALNETWORKS_BAD_DATA)
          << "Memory_copy: incompatible memory sizes";
      destination.updated_dimensions_ = *combined;
    }
    if (destination.dynamic_ && destination.size_ != source.size_) {
      NN_CHECK(destination.Resize(source.size_) != nullptr, ANEURALNETWORKS_OUT_OF_MEMORY)
          << "Memory_copy: " << source.size_ << " bytes";
    }
    NN_CHECK_EQ(source.size_, destination.size_, ANEURALNETWORKS_BAD_DATA)
        << "Memory_copy: the memories have different sizes";
    std::memmove(destination.data_, source.data_, source.size_);
    return ANEURALNETWORKS_NO_ERROR;
  };
  const int result = copy();
  // A failed copy leaves a descriptor destination without data (Android's rule).
  destination.set_initialized(result == ANEURALNETWORKS_NO_ERROR);
  return result;
}

// ---- MemoryDesc --------------------------------------------------------------------------------

int MemoryDesc::AddRole(const Compilation& compilation, bool input, uint32_t index,
                        float frequency) {
  const char* function = input ? "MemoryDesc_addInputRole" : "MemoryDesc_addOutputRole";
  NN_CHECK(!finished_, ANEURALNETWORKS_BAD_STATE) << function << " after finish";
  NN_CHECK(roles_.count({&compilation, input, index}) == 0, ANEURALNETWORKS_BAD_DATA)
      << function << ": the same operand is given twice";
  // Android answers BAD_DATA (not BAD_STATE) for an unfinished or invalid compilation here.
  NN_CHECK(compilation.usable(), ANEURALNETWORKS_BAD_DATA)
      << function << ": the compilation is not finished or failed to finish";
  const Model& model = compilation.model();
  const std::vector<uint32_t>& indices = input ? model.inputs() : model.outputs();
  NN_CHECK_LT(index, indices.size(), ANEURALNETWORKS_BAD_DATA) << function << ": index";
  const Operand& model_operand = model.operands()[indices[index]];
  MemoryOperand operand;
  operand.type = model_operand.type;
  operand.scale = model_operand.scale;
  operand.zero_point = model_operand.zero_point;
  if (model_operand.channel_quant) {
    operand.channel_dim = model_operand.channel_quant->channel_dim;
    operand.channel_scales = model_operand.channel_quant->scales;
  }
  NN_CHECK(!operand_ || *operand_ == operand, ANEURALNETWORKS_BAD_DATA)
      << function << ": the operand's type, scale, zero point or channel quantisation differ "
      << "from the descriptor's other roles";
  NN_CHECK(IsTensorType(operand.type) || dimensions_.empty(), ANEURALNETWORKS_BAD_DATA)
      << function << ": a scalar operand with dimensions " << DimensionsToString(dimensions_);
  std::optional<Dimensions> combined = CombineDimensions(dimensions_, model_operand.dimensions);
  NN_CHECK(combined.has_value(), ANEURALNETWORKS_BAD_DATA)
      << function << ": dimensions " << DimensionsToString(model_operand.dimensions)
      << " are incompatible with " << DimensionsToString(dimensions_);
  NN_CHECK(frequency > 0.f && frequency <= 1.f, ANEURALNETWORKS_BAD_DATA)
      << function << ": frequency " << frequency << " outside (0, 1]";
  roles_.insert({&compilation, input, index});
  operand_ = std::move(operand);
  dimensions_ = std::move(*combined);
  return ANEURALNETWORKS_NO_ERROR;
}

int MemoryDesc::SetDimensions(const Dimensions& dimensions) {
  NN_CHECK(!finished_, ANEURALNETWORKS_BAD_STATE) << "MemoryDesc_setDimensions after finish";
  NN_CHECK(!operand_ || IsTensorType(operand_->type) || dimensions.empty(),
           ANEURALNETWORKS_BAD_DATA)
      << "MemoryDesc_setDimensions: dimensions for a scalar operand";
  std::optional<Dimensions> combined = CombineDimensions(dimensions_, dimensions);
  NN_CHECK(combined.has_value(), ANEURALNETWORKS_BAD_DATA)
      << "MemoryDesc_setDimensions: " << DimensionsToString(dimensions) << " is incompatible with "
      << DimensionsToString(dimensions_);
  dimensions_ = std::move(*combined);
  return ANEURALNETWORKS_NO_ERROR;
}

int MemoryDesc::Finish() {
  NN_CHECK(!finished_, ANEURALNETWORKS_BAD_STATE) << "MemoryDesc_finish called twice";
  NN_CHECK(!roles_.empty(), ANEURALNETWORKS_BAD_DATA) << "MemoryDesc_finish: no role was added";
  finished_ = true;
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace mock_nnapi
