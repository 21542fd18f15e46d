// SPDX-License-Identifier: Apache-2.0
// ANeuralNetworksModel: operands, operations, model inputs/outputs, and the validation Android's
// ModelBuilder performs when each piece is added and at finish().
#ifndef MOCK_NNAPI_SRC_MODEL_H_
#define MOCK_NNAPI_SRC_MODEL_H_

#include <android/NeuralNetworksTypes.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "derived_constants.h"
#include "object_counter.h"
#include "operation.h"

namespace mock_nnapi {

class Memory;

enum class OperandLifetime {
  kTemporary,        // written by an operation, read by others
  kModelInput,       // identified as a model input
  kModelOutput,      // identified as a model output
  kConstantCopy,     // value copied into the model (<= 128 bytes, or large values after finish)
  kConstantPointer,  // large value referenced until finish, then copied
  kConstantMemory,   // value in an ANeuralNetworksMemory
  kNoValue,          // omitted optional operand
  kModelReference,   // a referenced model (IF/WHILE operand)
};

struct Operand {
  int32_t type = 0;
  Dimensions dimensions;
  bool rank_known = true;
  float scale = 0.f;
  int32_t zero_point = 0;
  std::optional<ChannelQuantization> channel_quant;
  OperandLifetime lifetime = OperandLifetime::kTemporary;
  // kConstantCopy: offset into the model's value pool.
  size_t value_offset = 0;
  size_t value_length = 0;
  // kConstantPointer: caller's buffer (until finish).
  const void* value_pointer = nullptr;
  // kConstantMemory.
  const Memory* memory = nullptr;
  size_t memory_offset = 0;
  // kModelReference.
  const class Model* referenced_model = nullptr;
  // Number of operations writing the operand (validated at finish: exactly one for temporaries).
  uint32_t writer_count = 0;

  // A tensor with a known rank and no unknown (0) dimension.
  bool IsFullySpecified() const {
    return rank_known && !dimensions.empty() && !HasUnknownDimension(dimensions);
  }
};

struct Operation {
  int32_t type = 0;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  // Feature level this operation needs (from its validate step).
  int64_t feature_level = kFeatureLevel1;
};

class Model : public CountedObject<Model> {
 public:
  static constexpr ObjectKind kObjectKind = ObjectKind::kModel;

  int AddOperand(const ANeuralNetworksOperandType& type);
  int SetOperandValue(int32_t index, const void* buffer, size_t length);
  int SetOperandValueFromMemory(int32_t index, const Memory* memory, size_t offset, size_t length);
  int SetOperandValueFromModel(int32_t index, const Model* value);
  int SetOperandSymmPerChannelQuantParams(int32_t index,
                                          const ANeuralNetworksSymmPerChannelQuantParams& params);
  int AddOperation(int32_t type, uint32_t input_count, const uint32_t* inputs,
                   uint32_t output_count, const uint32_t* outputs);
  int IdentifyInputsAndOutputs(uint32_t input_count, const uint32_t* inputs, uint32_t output_count,
                               const uint32_t* outputs);
  int RelaxComputationFloat32toFloat16(bool allow);
  int Finish();

  // BAD_STATE when the model may no longer change (finished or invalid).
  int CheckMutable(const char* function) const;
  // BAD_DATA unless `index` names an operand.
  int CheckOperandIndex(int32_t index, const char* function) const;

  bool finished() const { return finished_; }
  bool invalid() const { return invalid_; }
  bool relaxed_float32_to_float16() const { return relaxed_; }
  const std::vector<Operand>& operands() const { return operands_; }
  const std::vector<Operation>& operations() const { return operations_; }
  // Operation indices in an order where every operand is written before it is read (valid
  // after finish).
  const std::vector<uint32_t>& run_order() const { return run_order_; }
  // For each position of run_order(), the temporary operands whose last reader (or, when nothing
  // reads them, their writer) runs there: the executor frees them after it (valid after finish).
  const std::vector<std::vector<uint32_t>>& temporaries_released_after() const {
    return released_after_;
  }
  const std::vector<uint32_t>& inputs() const { return inputs_; }
  const std::vector<uint32_t>& outputs() const { return outputs_; }
  // The value of a constant operand (nullptr for other lifetimes).
  const uint8_t* ConstantData(const Operand& operand) const;
  // What an operation's validate/prepare sees of `index` before execution.
  OperandInfo StaticOperandInfo(uint32_t index) const;
  // Runs the operation's validate step on the model's operand types (used at addOperation,
  // by getSupportedOperationsForDevices and at finish).
  int ValidateOperation(const Operation& operation, int64_t* feature_level) const;
  // What the operations derived from their constant inputs (filled while the model runs).
  DerivedConstants& derived_constants() const { return derived_; }

 private:
  int SortIntoRunOrder();
  void ComputeTemporaryLifetimes();
  // Whole-graph checks of finish(): lifetimes, writers, referenced models.
  int ValidateGraph();

  std::vector<Operand> operands_;
  std::vector<Operation> operations_;
  std::vector<uint32_t> inputs_;
  std::vector<uint32_t> outputs_;
  std::vector<uint32_t> run_order_;
  std::vector<std::vector<uint32_t>> released_after_;
  std::vector<uint8_t> value_pool_;
  bool relaxed_ = false;
  bool finished_ = false;
  bool invalid_ = false;
  mutable DerivedConstants derived_;
};

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_MODEL_H_
