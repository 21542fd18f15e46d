// SPDX-License-Identifier: Apache-2.0
// The operation interface: every NNAPI operation is one registration with three steps.
//
//   validate(context)  types, counts, ranks and argument values, using only what is known.
//                      At addOperation and finish (and for getSupportedOperationsForDevices) it
//                      sees operand types and shapes only, no value, not even a constant's:
//                      Android's validation has no access to values, so it refuses a bad
//                      argument value when the operation is prepared. The executor runs it again
//                      with every value known before prepare, where a refusal fails the run with
//                      OP_FAILED. Returns NO_ERROR or BAD_DATA and raises
//                      `context.min_feature_level` to the feature level that the given
//                      combination of types and options needs.
//   prepare(context)   computes each output's shape from the concrete input shapes and calls
//                      context.SetOutputShape (which allocates temporaries and checks that model
//                      outputs fit their buffers).
//   execute(context)   computes the outputs; typically a switch on the input type.
//
// Each operation lives in one file under ops/ and registers itself with one line, naming the
// operation as in common/nnapi_operations.inc (which holds its code, name, feature level and
// cost kind, the facts the runtime shares):
//
//   NN_REGISTER_OPERATION(ADD, ValidateBinary, PrepareBinary, ExecuteAdd);
#ifndef MOCK_NNAPI_SRC_OPERATION_H_
#define MOCK_NNAPI_SRC_OPERATION_H_

#include <android/NeuralNetworksTypes.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "derived_constants.h"
#include "operand_types.h"

namespace mock_nnapi {

class Model;

struct ChannelQuantization {
  uint32_t channel_dim = 0;
  std::vector<float> scales;
};

// What an operation sees of one of its operands. Validation at addOperation/finish sees no data;
// during the executor's validation, prepare and execute every input carries data and outputs
// carry their buffers.
struct OperandInfo {
  int32_t type = 0;
  Dimensions dimensions;
  // False for a tensor declared with dimensionCount 0 whose rank is not yet known.
  bool rank_known = true;
  float scale = 0.f;
  int32_t zero_point = 0;
  const ChannelQuantization* channel_quant = nullptr;
  // Omitted optional operand (setOperandValue(NULL, 0)).
  bool omitted = false;
  // A constant (setOperandValue / setOperandValueFromMemory): its value is the same in every run.
  bool constant = false;
  uint8_t* data = nullptr;
  size_t length = 0;
  // A MODEL operand's referenced model (setOperandValueFromModel), seen by IF and WHILE in every
  // phase; nullptr for any other operand.
  const Model* model = nullptr;

  uint32_t rank() const { return static_cast<uint32_t>(dimensions.size()); }
  uint32_t dim(uint32_t i) const { return dimensions[i]; }
  bool IsFullySpecified() const { return rank_known && !HasUnknownDimension(dimensions); }
  template <typename T>
  const T* Data() const {
    return reinterpret_cast<const T*>(data);
  }
  template <typename T>
  T* MutableData() const {
    return reinterpret_cast<T*>(data);
  }
};

enum class OperationPhase { kValidate, kPrepare, kExecute };

class OperationContext;
using ValidateFunction = int (*)(OperationContext& context);
using PrepareFunction = int (*)(OperationContext& context);
using ExecuteFunction = int (*)(OperationContext& context);

class OperationContext {
 public:
  // Resolves a model output's or temporary's storage once its shape is known (executor-defined).
  class OutputAllocator {
   public:
    virtual ~OutputAllocator() = default;
    virtual int Allocate(uint32_t output_index, OperandInfo* info) = 0;
  };

  OperationContext(int32_t type, OperationPhase phase, std::vector<OperandInfo*> inputs,
                   std::vector<OperandInfo*> outputs, OutputAllocator* allocator = nullptr)
      : type_(type),
        phase_(phase),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        allocator_(allocator) {}

  int32_t type() const { return type_; }
  OperationPhase phase() const { return phase_; }
  std::string name() const { return OperationTypeName(type_); }
  uint32_t InputCount() const { return static_cast<uint32_t>(inputs_.size()); }
  uint32_t OutputCount() const { return static_cast<uint32_t>(outputs_.size()); }
  const OperandInfo& Input(uint32_t i) const { return *inputs_[i]; }
  const OperandInfo& Output(uint32_t i) const { return *outputs_[i]; }
  OperandInfo& MutableOutput(uint32_t i) { return *outputs_[i]; }
  int32_t InputType(uint32_t i) const { return inputs_[i]->type; }
  bool IsOmitted(uint32_t i) const { return i >= inputs_.size() || inputs_[i]->omitted; }
  // True when the input's value is known (never at addOperation/finish; always at execution).
  bool HasInputValue(uint32_t i) const {
    return i < inputs_.size() && !inputs_[i]->omitted && inputs_[i]->data != nullptr;
  }
  // The value of a scalar input; only call when HasInputValue(i).
  template <typename T>
  T InputScalar(uint32_t i) const {
    T value;
    std::memcpy(&value, inputs_[i]->data, sizeof(T));
    return value;
  }
  template <typename T>
  T InputScalarOr(uint32_t i, T fallback) const {
    return HasInputValue(i) ? InputScalar<T>(i) : fallback;
  }

  // Prepare: fixes the shape of output i (and its quantisation when the operation defines it).
  int SetOutputShape(uint32_t i, const Dimensions& dimensions);

  // Execute: data derived from this operation's constant inputs (see derived_constants.h), built
  // by `build` (returning std::unique_ptr<T>, or nullptr to decline) the first time the operation
  // runs in its model and kept while the model lives; `bytes` is its size against the model's
  // budget. nullptr when declined or outside a model run: the kernel then computes without it,
  // with the same results. `build` may read only constant inputs (OperandInfo::constant) and the
  // operation's static shapes, and `key` tells apart the entries of one operation.
  template <typename T, typename Build>
  const T* Derived(uint32_t key, size_t bytes, Build&& build) const {
    if (derived_ == nullptr) return nullptr;
    std::shared_ptr<const void> entry = derived_->GetOrBuild(
        operation_index_, key, bytes,
        [&]() -> std::shared_ptr<const void> { return std::shared_ptr<const T>(build()); });
    return static_cast<const T*>(entry.get());  // kept alive by the store
  }
  // The executor: where Derived keeps this operation's entries.
  void SetDerivedConstants(DerivedConstants* store, uint32_t operation_index) {
    derived_ = store;
    operation_index_ = operation_index;
  }

  // Validate: the operation needs at least `level`.
  void RequireFeatureLevel(int64_t level) {
    if (level > min_feature_level) min_feature_level = level;
  }

  int64_t min_feature_level = kFeatureLevel1;

 private:
  int32_t type_;
  OperationPhase phase_;
  std::vector<OperandInfo*> inputs_;
  std::vector<OperandInfo*> outputs_;
  OutputAllocator* allocator_;
  DerivedConstants* derived_ = nullptr;
  uint32_t operation_index_ = 0;
};

struct OperationRegistration {
  int32_t type;
  ValidateFunction validate;
  PrepareFunction prepare;
  ExecuteFunction execute;
};

// The registration for `type`, or nullptr when the mock does not implement it.
const OperationRegistration* FindOperation(int32_t type);
std::vector<const OperationRegistration*> AllOperations();

struct OperationRegistrar {
  explicit OperationRegistrar(const OperationRegistration& registration);
};

// ---- Helpers shared by the validate functions ------------------------------------------------

// Checks the number of inputs (any of `allowed`) and outputs.
int CheckOperandCounts(const OperationContext& context, std::initializer_list<uint32_t> allowed,
                       uint32_t outputs);
// Checks that input i has one of the listed types.
int CheckInputType(const OperationContext& context, uint32_t i,
                   std::initializer_list<int32_t> allowed);
// A tensor type an operation accepts and the feature level that combination needs.
struct TypeLevel {
  int32_t type;
  int64_t level;
};
// Checks that input i has one of the types of `table` and raises the operation's feature level
// to the one that type needs.
int CheckInputTypeLevel(OperationContext& context, uint32_t i,
                        std::initializer_list<TypeLevel> table);
// Checks that output i has the same type as input `input`.
int CheckOutputTypeMatches(const OperationContext& context, uint32_t output, uint32_t input);
// Checks a known rank against an upper bound (skipped while the rank is unknown).
int CheckRankAtMost(const OperationContext& context, const OperandInfo& operand, uint32_t rank,
                    const char* what);
// Fused activation: INT32 scalar with a FuseCode value when known.
int CheckFusedActivation(const OperationContext& context, uint32_t i);

}  // namespace mock_nnapi

#define NN_OPERATION_CONCAT_INNER_(a, b) a##b
#define NN_OPERATION_CONCAT_(a, b) NN_OPERATION_CONCAT_INNER_(a, b)
// NAME: the operation without its ANEURALNETWORKS_ prefix ("CONV_2D").
#define NN_REGISTER_OPERATION(NAME, validate, prepare, execute)                             \
  static const ::mock_nnapi::OperationRegistrar NN_OPERATION_CONCAT_(kRegistrar, __LINE__)( \
      ::mock_nnapi::OperationRegistration{ANEURALNETWORKS_##NAME, validate, prepare, execute})

#endif  // MOCK_NNAPI_SRC_OPERATION_H_
