// SPDX-License-Identifier: Apache-2.0
#include "model.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <set>

#include "memory.h"
#include "nnapi_facts.h"

namespace mock_nnapi {
namespace {
// Constant values are stored 8-byte aligned in the pool so kernels can read them in place.
size_t AlignUp(size_t value) { return (value + 7) & ~static_cast<size_t>(7); }
}  // namespace

int Model::CheckMutable(const char* function) const {
  NN_CHECK(!finished_, ANEURALNETWORKS_BAD_STATE) << function << " called after finish";
  NN_CHECK(!invalid_, ANEURALNETWORKS_BAD_STATE) << function << " called on an invalid model";
  return ANEURALNETWORKS_NO_ERROR;
}

int Model::CheckOperandIndex(int32_t index, const char* function) const {
  NN_CHECK(index >= 0 && static_cast<size_t>(index) < operands_.size(), ANEURALNETWORKS_BAD_DATA)
      << function << ": operand index " << index << " out of range (model has " << operands_.size()
      << " operands)";
  return ANEURALNETWORKS_NO_ERROR;
}

namespace {
// Android's NN_VALIDATE_NULL_OR_SIZED: a pointer is NULL exactly when its length is 0.
bool NullIffEmpty(const void* data, size_t length) { return (data == nullptr) == (length == 0); }
}  // namespace

int Model::AddOperand(const ANeuralNetworksOperandType& type) {
  NN_RETURN_IF_ERROR(CheckMutable("ANeuralNetworksModel_addOperand"));
  NN_RETURN_IF_ERROR(ValidateOperandType(type, /*allow_partial=*/true, "addOperand"));
  NN_CHECK_LT(operands_.size(), size_t{0xFFFFFFFE}, ANEURALNETWORKS_BAD_DATA)
      << "addOperand: too many operands";
  Operand operand;
  operand.type = type.type;
  operand.dimensions.assign(type.dimensions, type.dimensions + type.dimensionCount);
  operand.rank_known = IsScalarType(type.type) || type.dimensionCount > 0;
  operand.scale = type.scale;
  operand.zero_point = type.zeroPoint;
  operands_.push_back(std::move(operand));
  return ANEURALNETWORKS_NO_ERROR;
}

int Model::SetOperandValue(int32_t index, const void* buffer, size_t length) {
  NN_RETURN_IF_ERROR(CheckMutable("ANeuralNetworksModel_setOperandValue"));
  NN_RETURN_IF_ERROR(CheckOperandIndex(index, "setOperandValue"));
  Operand& operand = operands_[index];
  NN_CHECK(NullIffEmpty(buffer, length), ANEURALNETWORKS_BAD_DATA)
      << "setOperandValue: a non-NULL buffer needs a non-zero length";
  // Like Android, any operand may be given a value here, even one already identified as a model
  // input or output; finish() then rejects the model.
  if (buffer == nullptr) {
    operand.lifetime = OperandLifetime::kNoValue;
    operand.value_length = 0;
    return ANEURALNETWORKS_NO_ERROR;
  }
  NN_CHECK(!IsTensorType(operand.type) || operand.IsFullySpecified(), ANEURALNETWORKS_BAD_DATA)
      << "setOperandValue: operand " << index << " has unspecified dimensions "
      << DimensionsToString(operand.dimensions);
  NN_CHECK_LE(length, size_t{0xFFFFFFFF}, ANEURALNETWORKS_BAD_DATA)
      << "setOperandValue: value too large";
  if (operand.type != ANEURALNETWORKS_OEM_SCALAR) {
    const size_t needed = ByteSize(operand.type, operand.dimensions).value_or(0);
    NN_CHECK_EQ(needed, length, ANEURALNETWORKS_BAD_DATA)
        << "setOperandValue: operand " << index << " (" << OperandTypeName(operand.type) << " "
        << DimensionsToString(operand.dimensions) << ") needs " << needed << " bytes";
  }
  if (length <= ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES) {
    const size_t offset = AlignUp(value_pool_.size());
    value_pool_.resize(offset + length);
    std::memcpy(value_pool_.data() + offset, buffer, length);
    operand.lifetime = OperandLifetime::kConstantCopy;
    operand.value_offset = offset;
  } else {
    // Larger values are only referenced: the caller keeps the buffer alive until finish().
    operand.lifetime = OperandLifetime::kConstantPointer;
    operand.value_pointer = buffer;
  }
  operand.value_length = length;
  return ANEURALNETWORKS_NO_ERROR;
}

int Model::SetOperandValueFromMemory(int32_t index, const Memory* memory, size_t offset,
                                     size_t length) {
  NN_RETURN_IF_ERROR(CheckMutable("ANeuralNetworksModel_setOperandValueFromMemory"));
  NN_RETURN_IF_ERROR(CheckOperandIndex(index, "setOperandValueFromMemory"));
  Operand& operand = operands_[index];
  NN_CHECK(!IsTensorType(operand.type) || operand.IsFullySpecified(), ANEURALNETWORKS_BAD_DATA)
      << "setOperandValueFromMemory: operand " << index << " has unspecified dimensions";
  const size_t needed = ByteSize(operand.type, operand.dimensions).value_or(0);
  NN_CHECK_EQ(needed, length, ANEURALNETWORKS_BAD_DATA)
      << "setOperandValueFromMemory: operand " << index << " needs " << needed << " bytes";
  NN_RETURN_IF_ERROR(memory->ValidateRegion(offset, length, "setOperandValueFromMemory"));
  NN_CHECK(memory->readable(), ANEURALNETWORKS_BAD_DATA)
      << "setOperandValueFromMemory: the memory was mapped without PROT_READ";
  operand.lifetime = OperandLifetime::kConstantMemory;
  operand.memory = memory;
  operand.memory_offset = offset;
  operand.value_length = length;
  return ANEURALNETWORKS_NO_ERROR;
}

int Model::SetOperandValueFromModel(int32_t index, const Model* value) {
  NN_RETURN_IF_ERROR(CheckMutable("ANeuralNetworksModel_setOperandValueFromModel"));
  NN_CHECK(value->finished(), ANEURALNETWORKS_BAD_STATE)
      << "setOperandValueFromModel: the referenced model is not finished";
  NN_CHECK(!value->invalid(), ANEURALNETWORKS_BAD_STATE)
      << "setOperandValueFromModel: the referenced model is invalid";
  NN_RETURN_IF_ERROR(CheckOperandIndex(index, "setOperandValueFromModel"));
  // The operand's type (MODEL) is checked at finish(), like Android.
  Operand& operand = operands_[index];
  operand.lifetime = OperandLifetime::kModelReference;
  operand.referenced_model = value;
  return ANEURALNETWORKS_NO_ERROR;
}

int Model::SetOperandSymmPerChannelQuantParams(
    int32_t index, const ANeuralNetworksSymmPerChannelQuantParams& params) {
  NN_RETURN_IF_ERROR(CheckMutable("ANeuralNetworksModel_setOperandSymmPerChannelQuantParams"));
  NN_RETURN_IF_ERROR(CheckOperandIndex(index, "setOperandSymmPerChannelQuantParams"));
  Operand& operand = operands_[index];
  NN_CHECK(NullIffEmpty(params.scales, params.scaleCount), ANEURALNETWORKS_BAD_DATA)
      << "setOperandSymmPerChannelQuantParams: scales is NULL exactly when scaleCount is 0";
  NN_CHECK_EQ(operand.type, ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL,
              ANEURALNETWORKS_BAD_DATA)
      << "setOperandSymmPerChannelQuantParams: operand " << index << " has type "
      << OperandTypeName(operand.type);
  NN_CHECK_LT(params.channelDim, operand.dimensions.size(), ANEURALNETWORKS_BAD_DATA)
      << "channelDim out of range for operand " << index;
  const uint32_t channels = operand.dimensions[params.channelDim];
  NN_CHECK_EQ(params.scaleCount, channels, ANEURALNETWORKS_BAD_DATA)
      << "scaleCount must equal the size of the channel dimension";
  NN_CHECK_NE(channels, 0u, ANEURALNETWORKS_BAD_DATA) << "the channel dimension is unknown";
  ChannelQuantization quant;
  quant.channel_dim = params.channelDim;
  quant.scales.assign(params.scales, params.scales + params.scaleCount);
  for (float scale : quant.scales) {
    NN_CHECK(scale > 0.f, ANEURALNETWORKS_BAD_DATA) << "per-channel scales must be positive";
  }
  operand.channel_quant = std::move(quant);
  return ANEURALNETWORKS_NO_ERROR;
}

OperandInfo Model::StaticOperandInfo(uint32_t index) const {
  const Operand& operand = operands_[index];
  OperandInfo info;
  info.type = operand.type;
  info.dimensions = operand.dimensions;
  info.rank_known = operand.rank_known;
  info.scale = operand.scale;
  info.zero_point = operand.zero_point;
  info.channel_quant = operand.channel_quant ? &*operand.channel_quant : nullptr;
  info.omitted = operand.lifetime == OperandLifetime::kNoValue;
  info.data = const_cast<uint8_t*>(ConstantData(operand));
  info.length = info.data ? operand.value_length : 0;
  info.constant = info.data != nullptr;
  if (operand.lifetime == OperandLifetime::kModelReference) info.model = operand.referenced_model;
  return info;
}

int Model::ValidateOperation(const Operation& operation, int64_t* feature_level) const {
  const OperationRegistration* registration = FindOperation(operation.type);
  NN_CHECK(registration != nullptr, ANEURALNETWORKS_BAD_DATA)
      << "operation " << OperationTypeName(operation.type) << " is not implemented by mock_nnapi";
  // Android validates an operation at addOperation and finish from its operands' types and
  // shapes only (validateOperation never sees a constant's value); argument values are checked
  // when the operation is prepared, at execution (OP_FAILED; the executor validates again with
  // every value known). So the validate step sees no value here, constants included.
  std::vector<OperandInfo> infos;
  infos.reserve(operation.inputs.size() + operation.outputs.size());
  for (uint32_t index : operation.inputs) infos.push_back(StaticOperandInfo(index));
  for (uint32_t index : operation.outputs) infos.push_back(StaticOperandInfo(index));
  for (OperandInfo& info : infos) {
    info.data = nullptr;
    info.length = 0;
  }
  std::vector<OperandInfo*> inputs;
  std::vector<OperandInfo*> outputs;
  for (size_t i = 0; i < infos.size(); ++i) {
    (i < operation.inputs.size() ? inputs : outputs).push_back(&infos[i]);
  }
  OperationContext context(operation.type, OperationPhase::kValidate, inputs, outputs);
  NN_RETURN_IF_ERROR(registration->validate(context));
  if (feature_level) *feature_level = context.min_feature_level;
  return ANEURALNETWORKS_NO_ERROR;
}

int Model::AddOperation(int32_t type, uint32_t input_count, const uint32_t* inputs,
                        uint32_t output_count, const uint32_t* outputs) {
  NN_RETURN_IF_ERROR(CheckMutable("ANeuralNetworksModel_addOperation"));
  const bool known =
      nnapi_common::FindOperationFacts(type) != nullptr || type == ANEURALNETWORKS_OEM_OPERATION;
  NN_CHECK(known, ANEURALNETWORKS_BAD_DATA) << "addOperation: invalid operation type " << type;
  NN_CHECK(NullIffEmpty(inputs, input_count) && NullIffEmpty(outputs, output_count),
           ANEURALNETWORKS_BAD_DATA)
      << "addOperation " << OperationTypeName(type) << ": an operand list is empty";
  for (uint32_t i = 0; i < input_count; ++i) {
    NN_CHECK_LT(inputs[i], operands_.size(), ANEURALNETWORKS_BAD_DATA)
        << "addOperation " << OperationTypeName(type) << ": input " << i;
  }
  for (uint32_t i = 0; i < output_count; ++i) {
    NN_CHECK_LT(outputs[i], operands_.size(), ANEURALNETWORKS_BAD_DATA)
        << "addOperation " << OperationTypeName(type) << ": output " << i;
  }
  NN_CHECK_LT(operations_.size(), size_t{0xFFFFFFFE}, ANEURALNETWORKS_BAD_DATA)
      << "addOperation: too many operations";
  Operation operation;
  operation.type = type;
  operation.inputs.assign(inputs, inputs + input_count);
  operation.outputs.assign(outputs, outputs + output_count);
  NN_RETURN_IF_ERROR(ValidateOperation(operation, &operation.feature_level));
  operations_.push_back(std::move(operation));
  return ANEURALNETWORKS_NO_ERROR;
}

int Model::IdentifyInputsAndOutputs(uint32_t input_count, const uint32_t* inputs,
                                    uint32_t output_count, const uint32_t* outputs) {
  NN_RETURN_IF_ERROR(CheckMutable("ANeuralNetworksModel_identifyInputsAndOutputs"));
  // Android rejects an empty list passed as a non-NULL pointer (and the C entry point rejects
  // NULL), so a model always has at least one input and one output.
  auto check_list = [this](const uint32_t* list, uint32_t count, const char* role) -> int {
    NN_CHECK(NullIffEmpty(list, count), ANEURALNETWORKS_BAD_DATA)
        << "identifyInputsAndOutputs: the " << role << " list is empty";
    for (uint32_t i = 0; i < count; ++i) {
      NN_CHECK_LT(list[i], operands_.size(), ANEURALNETWORKS_BAD_DATA)
          << "identifyInputsAndOutputs: " << role << " " << i << " is operand " << list[i];
    }
    return ANEURALNETWORKS_NO_ERROR;
  };
  NN_RETURN_IF_ERROR(check_list(inputs, input_count, "input"));
  NN_RETURN_IF_ERROR(check_list(outputs, output_count, "output"));
  // Operands are marked one by one, as in Android: a failure leaves the earlier ones marked.
  auto mark = [this](std::vector<uint32_t>* indices, const uint32_t* list, uint32_t count,
                     OperandLifetime lifetime, const char* role) -> int {
    indices->assign(list, list + count);
    for (uint32_t i = 0; i < count; ++i) {
      Operand& operand = operands_[list[i]];
      NN_CHECK(operand.lifetime == OperandLifetime::kTemporary, ANEURALNETWORKS_BAD_DATA)
          << "identifyInputsAndOutputs: " << role << " operand " << list[i]
          << " is a constant, an omitted value or already an input or output";
      operand.lifetime = lifetime;
    }
    return ANEURALNETWORKS_NO_ERROR;
  };
  NN_RETURN_IF_ERROR(mark(&inputs_, inputs, input_count, OperandLifetime::kModelInput, "input"));
  return mark(&outputs_, outputs, output_count, OperandLifetime::kModelOutput, "output");
}

int Model::RelaxComputationFloat32toFloat16(bool allow) {
  NN_RETURN_IF_ERROR(CheckMutable("ANeuralNetworksModel_relaxComputationFloat32toFloat16"));
  relaxed_ = allow;
  return ANEURALNETWORKS_NO_ERROR;
}

const uint8_t* Model::ConstantData(const Operand& operand) const {
  switch (operand.lifetime) {
    case OperandLifetime::kConstantCopy:
      return value_pool_.data() + operand.value_offset;
    case OperandLifetime::kConstantPointer:
      return static_cast<const uint8_t*>(operand.value_pointer);
    case OperandLifetime::kConstantMemory:
      return operand.memory->data() + operand.memory_offset;
    default:
      return nullptr;
  }
}

int Model::SortIntoRunOrder() {
  // Kahn's algorithm over operands: an operation can run once all of its inputs are available.
  std::vector<bool> available(operands_.size(), false);
  for (size_t i = 0; i < operands_.size(); ++i) {
    const OperandLifetime lifetime = operands_[i].lifetime;
    available[i] =
        lifetime != OperandLifetime::kTemporary && lifetime != OperandLifetime::kModelOutput;
  }
  std::vector<uint32_t> missing(operations_.size(), 0);
  std::vector<std::vector<uint32_t>> readers(operands_.size());
  std::deque<uint32_t> ready;
  for (uint32_t op = 0; op < operations_.size(); ++op) {
    for (uint32_t input : operations_[op].inputs) {
      if (!available[input]) {
        ++missing[op];
        readers[input].push_back(op);
      }
    }
    if (missing[op] == 0) ready.push_back(op);
  }
  run_order_.clear();
  while (!ready.empty()) {
    const uint32_t op = ready.front();
    ready.pop_front();
    run_order_.push_back(op);
    for (uint32_t output : operations_[op].outputs) {
      for (uint32_t reader : readers[output]) {
        if (--missing[reader] == 0) ready.push_back(reader);
      }
    }
  }
  NN_CHECK_EQ(run_order_.size(), operations_.size(), ANEURALNETWORKS_BAD_DATA)
      << "the model's operations form a cycle or read an operand nothing writes";
  return ANEURALNETWORKS_NO_ERROR;
}

void Model::ComputeTemporaryLifetimes() {
  constexpr size_t kNever = std::numeric_limits<size_t>::max();
  std::vector<size_t> last(operands_.size(), kNever);
  for (size_t position = 0; position < run_order_.size(); ++position) {
    const Operation& operation = operations_[run_order_[position]];
    for (uint32_t index : operation.outputs) last[index] = position;
    for (uint32_t index : operation.inputs) last[index] = position;
  }
  released_after_.assign(run_order_.size(), {});
  for (uint32_t index = 0; index < operands_.size(); ++index) {
    if (operands_[index].lifetime == OperandLifetime::kTemporary && last[index] != kNever) {
      released_after_[last[index]].push_back(index);
    }
  }
}

int Model::ValidateGraph() {
  NN_CHECK(!operations_.empty(), ANEURALNETWORKS_BAD_DATA) << "finish: the model is empty";
  NN_CHECK(!outputs_.empty(), ANEURALNETWORKS_BAD_DATA)
      << "finish: the model has no outputs (identifyInputsAndOutputs not called?)";
  std::vector<int> role(operands_.size(), 0);  // 1: listed input, 2: listed output
  for (uint32_t index : inputs_) {
    NN_CHECK(operands_[index].lifetime == OperandLifetime::kModelInput, ANEURALNETWORKS_BAD_DATA)
        << "finish: model input operand " << index << " was later given a value";
    role[index] = 1;
  }
  for (uint32_t index : outputs_) {
    NN_CHECK(operands_[index].lifetime == OperandLifetime::kModelOutput, ANEURALNETWORKS_BAD_DATA)
        << "finish: model output operand " << index << " was later given a value";
    role[index] = 2;
  }
  for (size_t i = 0; i < operands_.size(); ++i) {
    Operand& operand = operands_[i];
    operand.writer_count = 0;
    const OperandLifetime lifetime = operand.lifetime;
    NN_CHECK((lifetime != OperandLifetime::kModelInput || role[i] == 1) &&
                 (lifetime != OperandLifetime::kModelOutput || role[i] == 2),
             ANEURALNETWORKS_BAD_DATA)
        << "finish: operand " << i << " was identified as a model input or output by an "
        << "earlier identifyInputsAndOutputs call only";
    NN_CHECK(
        (lifetime == OperandLifetime::kModelReference) == (operand.type == ANEURALNETWORKS_MODEL),
        ANEURALNETWORKS_BAD_DATA)
        << "finish: operand " << i << " of type " << OperandTypeName(operand.type)
        << (lifetime == OperandLifetime::kModelReference ? " holds a model"
                                                         : " needs setOperandValueFromModel");
  }
  for (const Operation& operation : operations_) {
    for (uint32_t output : operation.outputs) {
      Operand& operand = operands_[output];
      NN_CHECK(operand.lifetime == OperandLifetime::kTemporary ||
                   operand.lifetime == OperandLifetime::kModelOutput,
               ANEURALNETWORKS_BAD_DATA)
          << "finish: " << OperationTypeName(operation.type) << " writes operand " << output
          << ", which is a model input or a constant";
      ++operand.writer_count;
    }
  }
  for (size_t i = 0; i < operands_.size(); ++i) {
    const Operand& operand = operands_[i];
    if (operand.lifetime == OperandLifetime::kTemporary ||
        operand.lifetime == OperandLifetime::kModelOutput) {
      NN_CHECK_EQ(operand.writer_count, 1u, ANEURALNETWORKS_BAD_DATA)
          << "finish: operand " << i << " must be written by exactly one operation";
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Model::Finish() {
  NN_CHECK(!finished_, ANEURALNETWORKS_BAD_STATE) << "ANeuralNetworksModel_finish called twice";
  NN_CHECK(!invalid_, ANEURALNETWORKS_BAD_STATE) << "ANeuralNetworksModel_finish: invalid model";
  auto fail = [this](int code) {
    invalid_ = true;
    return code;
  };
  int code = ValidateGraph();
  if (code != ANEURALNETWORKS_NO_ERROR) return fail(code);
  code = SortIntoRunOrder();
  if (code != ANEURALNETWORKS_NO_ERROR) return fail(code);
  ComputeTemporaryLifetimes();
  // Large values were only referenced so far; take a copy now (the caller may free them), into
  // a pool grown once: growing it value by value would move the weights copied before.
  size_t pool_size = value_pool_.size();
  for (const Operand& operand : operands_) {
    if (operand.lifetime == OperandLifetime::kConstantPointer) {
      pool_size = AlignUp(pool_size) + operand.value_length;
    }
  }
  value_pool_.reserve(pool_size);
  for (Operand& operand : operands_) {
    if (operand.lifetime != OperandLifetime::kConstantPointer) continue;
    const size_t offset = AlignUp(value_pool_.size());
    value_pool_.resize(offset + operand.value_length);
    std::memcpy(value_pool_.data() + offset, operand.value_pointer, operand.value_length);
    operand.lifetime = OperandLifetime::kConstantCopy;
    operand.value_offset = offset;
    operand.value_pointer = nullptr;
  }
  // Operands may have changed since addOperation (a value omitted, another referenced model):
  // validate each operation once more.
  for (Operation& operation : operations_) {
    code = ValidateOperation(operation, &operation.feature_level);
    if (code != ANEURALNETWORKS_NO_ERROR) return fail(code);
  }
  finished_ = true;
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace mock_nnapi
