// SPDX-License-Identifier: Apache-2.0
// IF: runs one of two referenced models and copies its outputs.
//
// Inputs: 0 TENSOR_BOOL8 of shape [1], the condition; 1 MODEL, the "then" model; 2 MODEL, the
//   "else" model; 3.. the branch inputs, passed to the chosen model's inputs in order.
// Outputs: the chosen model's outputs, in order.
// Validation (Android's, at addOperation and finish, through the referenced models): both
// branches have exactly (input count - 3) inputs and (output count) outputs, and each branch
// input and output is compatible with the operation's operand in its place (same type, scale,
// zero point and per-channel quantisation, dimensions equal where both are known). Operands of
// unknown shape are allowed on both sides. The operation needs its own feature level
// (common/nnapi_operations.inc) and whatever the operations of its branches need.
// Execution: see control_flow.h (the branch runs in the prepare step).
#include <cstring>

#include "control_flow.h"

namespace mock_nnapi {
namespace {

constexpr uint32_t kCondition = 0;
constexpr uint32_t kThen = 1;
constexpr uint32_t kElse = 2;
constexpr uint32_t kFirstInput = 3;

int ValidateBranch(OperationContext& context, uint32_t branch, const char* name) {
  NN_RETURN_IF_ERROR(CheckModelReference(context, branch));
  const Model& model = *context.Input(branch).model;
  NN_CHECK_EQ(context.InputCount(), kFirstInput + model.inputs().size(), ANEURALNETWORKS_BAD_DATA)
      << "IF has " << context.InputCount() - kFirstInput << " branch inputs but the " << name
      << " model has " << model.inputs().size() << " inputs";
  NN_CHECK_EQ(context.OutputCount(), model.outputs().size(), ANEURALNETWORKS_BAD_DATA)
      << "IF has " << context.OutputCount() << " outputs but the " << name << " model has "
      << model.outputs().size();
  for (uint32_t i = 0; i < model.inputs().size(); ++i) {
    NN_RETURN_IF_ERROR(CheckCompatible(context, model.operands()[model.inputs()[i]],
                                       context.Input(kFirstInput + i), "branch input", i));
  }
  for (uint32_t i = 0; i < model.outputs().size(); ++i) {
    NN_RETURN_IF_ERROR(CheckCompatible(context, model.operands()[model.outputs()[i]],
                                       context.Output(i), "output", i));
  }
  RequireModelFeatureLevel(context, model);
  return ANEURALNETWORKS_NO_ERROR;
}

int ValidateIf(OperationContext& context) {
  NN_CHECK_GE(context.InputCount(), kFirstInput, ANEURALNETWORKS_BAD_DATA)
      << "IF needs at least 3 inputs";
  NN_CHECK_GE(context.OutputCount(), 1u, ANEURALNETWORKS_BAD_DATA) << "IF needs an output";
  context.RequireFeatureLevel(kFeatureLevel4);
  NN_RETURN_IF_ERROR(CheckConditionOperand(context, context.Input(kCondition), "condition"));
  NN_RETURN_IF_ERROR(ValidateBranch(context, kThen, "then"));
  return ValidateBranch(context, kElse, "else");
}

int PrepareIf(OperationContext& context) {
  const OperandInfo& condition = context.Input(kCondition);
  NN_CHECK(condition.data != nullptr && condition.length >= 1, ANEURALNETWORKS_OP_FAILED)
      << "IF condition has no value";
  const bool take_then = condition.data[0] != 0;
  const Model& branch = *context.Input(take_then ? kThen : kElse).model;
  std::vector<ControlFlowView> inputs;
  for (uint32_t i = kFirstInput; i < context.InputCount(); ++i) {
    inputs.push_back(ViewOf(context.Input(i)));
  }
  std::vector<ControlFlowValue> results;
  OperationWork work;
  NN_RETURN_IF_ERROR(RunReferencedModel(branch, inputs, {}, &results, &work));
  for (uint32_t i = 0; i < context.OutputCount(); ++i) {
    NN_RETURN_IF_ERROR(WriteControlFlowOutput(context, i, ViewOf(results[i])));
  }
  SetControlFlowWork(work);
  return ANEURALNETWORKS_NO_ERROR;
}

// The outputs were written by PrepareIf, once the branch had run and fixed their shapes.
int ExecuteIf(OperationContext&) { return ANEURALNETWORKS_NO_ERROR; }

}  // namespace

NN_REGISTER_OPERATION(IF, ValidateIf, PrepareIf, ExecuteIf);

}  // namespace mock_nnapi
