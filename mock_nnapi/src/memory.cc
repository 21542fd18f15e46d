#include "memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "check.h"
#include "compilation.h"
#include "model.h"

namespace mock_nnapi {

int Memory::CreateFromFd(size_t size, int protect, int fd, size_t offset,
                         std::unique_ptr<Memory>* memory) {
  NN_CHECK_GT(size, 0u, ANEURALNETWORKS_BAD_DATA) << "Memory_createFromFd: size 0";
  NN_CHECK(fd >= 0, ANEURALNETWORKS_BAD_DATA) << "Memory_createFromFd: invalid fd " << fd;
  NN_CHECK((protect & ~(PROT_READ | PROT_WRITE)) == 0, ANEURALNETWORKS_BAD_DATA)
      << "Memory_createFromFd: protect " << protect;
  // mmap needs a page-aligned offset: map from the page start and point into it.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t aligned_offset = offset - offset % page;
  const size_t delta = offset - aligned_offset;
  NN_CHECK(size <= SIZE_MAX - delta, ANEURALNETWORKS_BAD_DATA) << "Memory_createFromFd: size";
  void* mapping =
      mmap(nullptr, size + delta, protect, MAP_SHARED, fd, static_cast<off_t>(aligned_offset));
  NN_CHECK(mapping != MAP_FAILED, ANEURALNETWORKS_BAD_DATA)
      << "Memory_createFromFd: mmap failed: " << std::strerror(errno);
  std::unique_ptr<Memory> result(new Memory());
  result->mapping_ = mapping;
  result->mapping_size_ = size + delta;
  result->data_ = static_cast<uint8_t*>(mapping) + delta;
  result->size_ = size;
  result->initialized_ = true;
  *memory = std::move(result);
  return ANEURALNETWORKS_NO_ERROR;
}

int Memory::CreateFromDesc(const MemoryDesc& desc, std::unique_ptr<Memory>* memory) {
  NN_CHECK(desc.finished(), ANEURALNETWORKS_BAD_STATE)
      << "Memory_createFromDesc: the descriptor is not finished";
  std::optional<size_t> size = ByteSize(desc.type(), desc.dimensions());
  NN_CHECK(size.has_value(), ANEURALNETWORKS_OP_FAILED)
      << "Memory_createFromDesc: dimensions " << DimensionsToString(desc.dimensions())
      << " are not fully specified (dynamic device memory is not supported)";
  std::unique_ptr<Memory> result(new Memory());
  try {
    result->owned_.resize(*size);
  } catch (const std::bad_alloc&) {
    return CheckFailure(__FILE__, __LINE__, "allocation", ANEURALNETWORKS_OUT_OF_MEMORY)
           << "Memory_createFromDesc: " << *size << " bytes";
  }
  result->data_ = result->owned_.data();
  result->size_ = *size;
  result->from_desc_ = true;
  result->desc_type_ = desc.type();
  result->dimensions_ = desc.dimensions();
  result->roles_ = desc.compilations();
  *memory = std::move(result);
  return ANEURALNETWORKS_NO_ERROR;
}

Memory::~Memory() {
  if (mapping_ != nullptr) munmap(mapping_, mapping_size_);
}

int MemoryDesc::AddRole(const Compilation* compilation, bool input, uint32_t index,
                        float frequency) {
  const char* function = input ? "MemoryDesc_addInputRole" : "MemoryDesc_addOutputRole";
  NN_CHECK(!finished_, ANEURALNETWORKS_BAD_STATE) << function << " after finish";
  NN_CHECK(compilation->finished(), ANEURALNETWORKS_BAD_STATE)
      << function << ": the compilation is not finished";
  const Model& model = compilation->model();
  const std::vector<uint32_t>& indices = input ? model.inputs() : model.outputs();
  NN_CHECK_LT(index, indices.size(), ANEURALNETWORKS_BAD_DATA) << function << ": index";
  NN_CHECK(frequency > 0.f && frequency <= 1.f, ANEURALNETWORKS_BAD_DATA)
      << function << ": frequency " << frequency << " outside (0, 1]";
  for (const auto& role : roles_) {
    NN_CHECK(
        !(role.first == compilation && role.second.first == input && role.second.second == index),
        ANEURALNETWORKS_BAD_DATA)
        << function << ": the same role was added twice";
  }
  const Operand& operand = model.operands()[indices[index]];
  if (has_role_) {
    NN_CHECK(operand.type == type_ && operand.scale == scale_ && operand.zero_point == zero_point_,
             ANEURALNETWORKS_BAD_DATA)
        << function << ": operand type differs from the descriptor's other roles";
  }
  // Combine dimensions: unknown (0) entries are filled in, known ones must agree.
  if (operand.rank_known && !operand.dimensions.empty()) {
    if (!rank_known_) {
      dimensions_ = operand.dimensions;
      rank_known_ = true;
    } else {
      NN_CHECK_EQ(dimensions_.size(), operand.dimensions.size(), ANEURALNETWORKS_BAD_DATA)
          << function << ": incompatible rank";
      for (size_t d = 0; d < dimensions_.size(); ++d) {
        const uint32_t a = dimensions_[d];
        const uint32_t b = operand.dimensions[d];
        NN_CHECK(a == 0 || b == 0 || a == b, ANEURALNETWORKS_BAD_DATA)
            << function << ": incompatible dimensions";
        if (a == 0) dimensions_[d] = b;
      }
    }
  }
  has_role_ = true;
  type_ = operand.type;
  scale_ = operand.scale;
  zero_point_ = operand.zero_point;
  roles_.push_back({compilation, {input, index}});
  bool known = false;
  for (const Compilation* c : compilations_) known = known || c == compilation;
  if (!known) compilations_.push_back(compilation);
  return ANEURALNETWORKS_NO_ERROR;
}

int MemoryDesc::SetDimensions(uint32_t rank, const uint32_t* dimensions) {
  NN_CHECK(!finished_, ANEURALNETWORKS_BAD_STATE) << "MemoryDesc_setDimensions after finish";
  NN_CHECK(dimensions != nullptr || rank == 0, ANEURALNETWORKS_UNEXPECTED_NULL)
      << "MemoryDesc_setDimensions: dimensions is NULL";
  Dimensions given(dimensions, dimensions + rank);
  if (rank_known_ && rank > 0) {
    NN_CHECK_EQ(dimensions_.size(), given.size(), ANEURALNETWORKS_BAD_DATA)
        << "MemoryDesc_setDimensions: incompatible rank";
    for (size_t d = 0; d < given.size(); ++d) {
      NN_CHECK(dimensions_[d] == 0 || given[d] == 0 || dimensions_[d] == given[d],
               ANEURALNETWORKS_BAD_DATA)
          << "MemoryDesc_setDimensions: incompatible dimensions";
      if (given[d] == 0) given[d] = dimensions_[d];
    }
  }
  if (rank > 0) {
    dimensions_ = given;
    rank_known_ = true;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int MemoryDesc::Finish() {
  NN_CHECK(!finished_, ANEURALNETWORKS_BAD_STATE) << "MemoryDesc_finish called twice";
  NN_CHECK(has_role_, ANEURALNETWORKS_BAD_DATA) << "MemoryDesc_finish: no role was added";
  finished_ = true;
  return ANEURALNETWORKS_NO_ERROR;
}

int CopyMemory(const Memory& src, const Memory& dst) {
  if (src.from_desc()) {
    NN_CHECK(src.initialized(), ANEURALNETWORKS_BAD_DATA)
        << "Memory_copy: the source memory holds no data yet";
  }
  if (src.from_desc() && dst.from_desc()) {
    NN_CHECK_EQ(src.desc_type(), dst.desc_type(), ANEURALNETWORKS_BAD_DATA)
        << "Memory_copy: operand types differ";
    NN_CHECK(src.dimensions() == dst.dimensions(), ANEURALNETWORKS_BAD_DATA)
        << "Memory_copy: dimensions differ: " << DimensionsToString(src.dimensions()) << " vs "
        << DimensionsToString(dst.dimensions());
  }
  NN_CHECK_EQ(src.size(), dst.size(), ANEURALNETWORKS_BAD_DATA) << "Memory_copy: sizes differ";
  std::memmove(dst.data(), src.data(), src.size());
  dst.set_initialized(true);
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace mock_nnapi
