// SPDX-License-Identifier: Apache-2.0
#include "control_flow.h"

#include <algorithm>
#include <cstring>

#include "../execution.h"
#include "../executor.h"

namespace mock_nnapi {

// ---- Settings
// ------------------------------------------------------------------------------------

namespace {
// Operations run outside an execution (none today) get the defaults.
const ControlFlowSettings kDefaultSettings{kDefaultLoopTimeoutNs, false};
thread_local const ControlFlowSettings* t_settings = nullptr;
}  // namespace

const ControlFlowSettings& CurrentControlFlowSettings() {
  return t_settings != nullptr ? *t_settings : kDefaultSettings;
}

ScopedControlFlowSettings::ScopedControlFlowSettings(const ControlFlowSettings& settings)
    : settings_(settings), previous_(t_settings) {
  t_settings = &settings_;
}

ScopedControlFlowSettings::~ScopedControlFlowSettings() { t_settings = previous_; }

// ---- Validation --------------------------------------------------------------------------------

int CheckConditionOperand(const OperationContext& context, const OperandInfo& operand,
                          const char* what) {
  NN_CHECK_EQ(operand.type, ANEURALNETWORKS_TENSOR_BOOL8, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " " << what << " has type " << OperandTypeName(operand.type)
      << "; a condition is a TENSOR_BOOL8 of shape [1]";
  NN_CHECK(operand.rank_known && operand.rank() == 1 && operand.dim(0) == 1,
           ANEURALNETWORKS_BAD_DATA)
      << context.name() << " " << what << " has shape "
      << (operand.rank_known ? DimensionsToString(operand.dimensions) : std::string("unknown"))
      << "; a condition has shape [1]";
  return ANEURALNETWORKS_NO_ERROR;
}

int CheckModelReference(const OperationContext& context, uint32_t i) {
  const OperandInfo& operand = context.Input(i);
  NN_CHECK_EQ(operand.type, ANEURALNETWORKS_MODEL, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " input " << i << " has type " << OperandTypeName(operand.type)
      << "; expected MODEL";
  NN_CHECK(operand.model != nullptr, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " input " << i
      << " holds no model (call setOperandValueFromModel before addOperation)";
  return ANEURALNETWORKS_NO_ERROR;
}

namespace {

struct OperandShape {
  int32_t type;
  const Dimensions& dimensions;
  bool rank_known;
  float scale;
  int32_t zero_point;
  const ChannelQuantization* channel_quant;
};

OperandShape ShapeOf(const Operand& operand) {
  return {operand.type,
          operand.dimensions,
          operand.rank_known && !(IsTensorType(operand.type) && operand.dimensions.empty()),
          operand.scale,
          operand.zero_point,
          operand.channel_quant ? &*operand.channel_quant : nullptr};
}

OperandShape ShapeOf(const OperandInfo& info) {
  return {info.type,
          info.dimensions,
          info.rank_known && !(IsTensorType(info.type) && info.dimensions.empty()),
          info.scale,
          info.zero_point,
          info.channel_quant};
}

int Compatible(const OperationContext& context, const OperandShape& a, const OperandShape& b,
               const char* what, uint32_t index) {
  NN_CHECK_EQ(a.type, b.type, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " " << what << " " << index << ": type " << OperandTypeName(a.type)
      << " differs from " << OperandTypeName(b.type);
  if (a.rank_known && b.rank_known) {
    NN_CHECK_EQ(a.dimensions.size(), b.dimensions.size(), ANEURALNETWORKS_BAD_DATA)
        << context.name() << " " << what << " " << index << ": shape "
        << DimensionsToString(a.dimensions) << " differs from " << DimensionsToString(b.dimensions);
    for (size_t d = 0; d < a.dimensions.size(); ++d) {
      NN_CHECK(a.dimensions[d] == 0 || b.dimensions[d] == 0 || a.dimensions[d] == b.dimensions[d],
               ANEURALNETWORKS_BAD_DATA)
          << context.name() << " " << what << " " << index << ": shape "
          << DimensionsToString(a.dimensions) << " differs from "
          << DimensionsToString(b.dimensions);
    }
  }
  NN_CHECK(a.scale == b.scale && a.zero_point == b.zero_point, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " " << what << " " << index << ": scale/zeroPoint " << a.scale << "/"
      << a.zero_point << " differ from " << b.scale << "/" << b.zero_point;
  const bool same_channels = (a.channel_quant == nullptr) == (b.channel_quant == nullptr) &&
                             (a.channel_quant == nullptr ||
                              (a.channel_quant->channel_dim == b.channel_quant->channel_dim &&
                               a.channel_quant->scales == b.channel_quant->scales));
  NN_CHECK(same_channels, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " " << what << " " << index << ": per-channel quantisation differs";
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

int CheckCompatible(const OperationContext& context, const Operand& inner, const OperandInfo& outer,
                    const char* what, uint32_t index) {
  return Compatible(context, ShapeOf(inner), ShapeOf(outer), what, index);
}

int CheckCompatible(const OperationContext& context, const Operand& a, const Operand& b,
                    const char* what, uint32_t index) {
  return Compatible(context, ShapeOf(a), ShapeOf(b), what, index);
}

void RequireModelFeatureLevel(OperationContext& context, const Model& model) {
  for (const Operation& operation : model.operations()) {
    context.RequireFeatureLevel(operation.feature_level);
  }
}

// ---- Execution ---------------------------------------------------------------------------------

ControlFlowView ViewOf(const OperandInfo& info) {
  return {info.data, info.length, info.dimensions, info.omitted};
}

ControlFlowView ViewOf(const ControlFlowValue& value) {
  return {value.bytes.data(), value.length, value.dimensions, false};
}

namespace {

// Adds up the work of the operations a referenced model executes.
class NestedWorkObserver : public ExecutionObserver {
 public:
  explicit NestedWorkObserver(const Model& model) : model_(model) {}
  void OnOperation(uint32_t operation_index, const std::vector<const OperandInfo*>& inputs,
                   const std::vector<const OperandInfo*>& outputs) override {
    const OperationWork work =
        CountExecutedOperationWork(model_.operations()[operation_index].type, inputs, outputs);
    total.flops += work.flops;
    total.bytes += work.bytes;
  }
  OperationWork total;

 private:
  const Model& model_;
};

}  // namespace

int RunReferencedModel(const Model& model, const std::vector<ControlFlowView>& inputs,
                       const std::vector<size_t>& size_hints,
                       std::vector<ControlFlowValue>* outputs, OperationWork* work) {
  NN_CHECK_EQ(inputs.size(), model.inputs().size(), ANEURALNETWORKS_OP_FAILED)
      << "referenced model input count";
  std::vector<ExecutorArgument> arguments(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    arguments[i].data = const_cast<uint8_t*>(inputs[i].data);
    arguments[i].length = inputs[i].length;
    arguments[i].dimensions = inputs[i].dimensions;
    arguments[i].rank_known = true;
    arguments[i].omitted = inputs[i].omitted;
  }
  const size_t count = model.outputs().size();
  outputs->assign(count, ControlFlowValue{});
  std::vector<size_t> capacity(count, 0);
  for (size_t i = 0; i < count; ++i) {
    const Operand& operand = model.operands()[model.outputs()[i]];
    const std::optional<size_t> declared = operand.IsFullySpecified() || !IsTensorType(operand.type)
                                               ? PreparedByteSize(operand.type, operand.dimensions)
                                               : std::nullopt;
    capacity[i] = declared.value_or(i < size_hints.size() ? size_hints[i] : 0);
  }
  // Each failed attempt reports the size of (at least) the first output that did not fit.
  for (size_t attempt = 0; attempt <= count; ++attempt) {
    std::vector<ExecutorArgument> results(count);
    for (size_t i = 0; i < count; ++i) {
      ControlFlowValue& value = (*outputs)[i];
      // One byte more than needed, so that even an empty value has an address.
      value.bytes.assign(capacity[i] + 1, 0);
      const Operand& operand = model.operands()[model.outputs()[i]];
      results[i].data = value.bytes.data();
      results[i].length = capacity[i];
      results[i].dimensions = operand.dimensions;
      results[i].rank_known = operand.rank_known;
    }
    std::vector<OutputShape> shapes;
    NestedWorkObserver observer(model);
    const int result = ExecuteModel(model, arguments, results, &shapes, &observer,
                                    CurrentControlFlowSettings().cost_only);
    if (result == ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE) {
      bool grown = false;
      for (size_t i = 0; i < count && i < shapes.size(); ++i) {
        if (shapes[i].sufficient) continue;
        const std::optional<size_t> needed =
            PreparedByteSize(model.operands()[model.outputs()[i]].type, shapes[i].dimensions);
        NN_CHECK(needed.has_value(), ANEURALNETWORKS_OP_FAILED) << "referenced model output size";
        capacity[i] = std::max(capacity[i], *needed);
        grown = true;
      }
      NN_CHECK(grown, ANEURALNETWORKS_OP_FAILED) << "referenced model output sizes";
      continue;
    }
    if (result != ANEURALNETWORKS_NO_ERROR) return result;
    for (size_t i = 0; i < count; ++i) {
      ControlFlowValue& value = (*outputs)[i];
      value.dimensions = shapes[i].dimensions;
      value.length =
          PreparedByteSize(model.operands()[model.outputs()[i]].type, value.dimensions).value_or(0);
    }
    work->flops += observer.total.flops;
    work->bytes += observer.total.bytes;
    return ANEURALNETWORKS_NO_ERROR;
  }
  NN_FAIL(ANEURALNETWORKS_OP_FAILED) << "referenced model outputs never fit";
}

int WriteControlFlowOutput(OperationContext& context, uint32_t i, const ControlFlowView& value) {
  NN_RETURN_IF_ERROR(context.SetOutputShape(i, value.dimensions));
  OperandInfo& output = context.MutableOutput(i);
  NN_CHECK_LE(value.length, output.length, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " output " << i << " size";
  if (value.length > 0 && output.data != nullptr) {
    std::memcpy(output.data, value.data, value.length);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace mock_nnapi
