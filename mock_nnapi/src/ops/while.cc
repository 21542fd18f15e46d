// SPDX-License-Identifier: Apache-2.0
// WHILE: runs a body model while a condition model outputs true.
//
// Inputs: 0 MODEL, the condition model; 1 MODEL, the body model; 2.. the loop's operands, in
//   three groups: m input-output operands (their final values are the outputs), k state-only
//   operands (carried from one iteration to the next, not output) and n input-only operands
//   (read by every iteration, never changed).
// Outputs: the m input-output operands' final values.
// The condition model has m + k + n inputs and one output, a TENSOR_BOOL8 of shape [1]; the body
// model has m + k + n inputs and m + k outputs, output i being the next value of input i.
// Validation (Android's, at addOperation and finish): those counts; every condition and body
// input compatible with the operation's input in its place, every body output i < m with the
// operation's output i, and every body output with the body input it replaces (same type,
// scale, zero point and per-channel quantisation, dimensions equal where both are known;
// unknown shapes are allowed, and a value may change shape from one iteration to the next). The
// operation needs its own feature level (common/nnapi_operations.inc) and whatever the operations
// of its condition and body need.
// Execution: see control_flow.h. Before each evaluation of the condition the elapsed host time
// of this WHILE is compared with the execution's loop timeout (setLoopTimeout, default
// ANeuralNetworks_getDefaultLoopTimeout()); a loop still running after it fails the execution
// with MISSED_DEADLINE_TRANSIENT, as Android's CPU executor does.
#include <chrono>

#include "control_flow.h"

namespace mock_nnapi {
namespace {

constexpr uint32_t kConditionModel = 0;
constexpr uint32_t kBodyModel = 1;
constexpr uint32_t kFirstInput = 2;

int ValidateWhile(OperationContext& context) {
  NN_CHECK_GE(context.InputCount(), 3u, ANEURALNETWORKS_BAD_DATA)
      << "WHILE needs at least 3 inputs";
  NN_CHECK_GE(context.OutputCount(), 1u, ANEURALNETWORKS_BAD_DATA) << "WHILE needs an output";
  context.RequireFeatureLevel(kFeatureLevel4);
  const uint32_t operands = context.InputCount() - kFirstInput;

  NN_RETURN_IF_ERROR(CheckModelReference(context, kConditionModel));
  const Model& condition = *context.Input(kConditionModel).model;
  NN_CHECK_EQ(condition.inputs().size(), operands, ANEURALNETWORKS_BAD_DATA)
      << "WHILE has " << operands << " loop operands but the condition model has "
      << condition.inputs().size() << " inputs";
  NN_CHECK_EQ(condition.outputs().size(), 1u, ANEURALNETWORKS_BAD_DATA)
      << "WHILE: the condition model has " << condition.outputs().size() << " outputs, not 1";
  for (uint32_t i = 0; i < operands; ++i) {
    NN_RETURN_IF_ERROR(CheckCompatible(context, condition.operands()[condition.inputs()[i]],
                                       context.Input(kFirstInput + i), "condition input", i));
  }
  const Operand& verdict = condition.operands()[condition.outputs()[0]];
  OperandInfo verdict_info;
  verdict_info.type = verdict.type;
  verdict_info.dimensions = verdict.dimensions;
  verdict_info.rank_known = verdict.rank_known && !verdict.dimensions.empty();
  NN_RETURN_IF_ERROR(CheckConditionOperand(context, verdict_info, "condition model output"));

  NN_RETURN_IF_ERROR(CheckModelReference(context, kBodyModel));
  const Model& body = *context.Input(kBodyModel).model;
  const uint32_t body_inputs = static_cast<uint32_t>(body.inputs().size());
  const uint32_t body_outputs = static_cast<uint32_t>(body.outputs().size());
  NN_CHECK_EQ(body_inputs, operands, ANEURALNETWORKS_BAD_DATA)
      << "WHILE has " << operands << " loop operands but the body model has " << body_inputs
      << " inputs";
  NN_CHECK_GE(body_outputs, context.OutputCount(), ANEURALNETWORKS_BAD_DATA)
      << "WHILE has " << context.OutputCount() << " outputs but the body model only "
      << body_outputs;
  NN_CHECK_GE(body_inputs, body_outputs, ANEURALNETWORKS_BAD_DATA)
      << "WHILE: the body model has more outputs (" << body_outputs << ") than inputs";
  for (uint32_t i = 0; i < operands; ++i) {
    NN_RETURN_IF_ERROR(CheckCompatible(context, body.operands()[body.inputs()[i]],
                                       context.Input(kFirstInput + i), "body input", i));
  }
  for (uint32_t i = 0; i < context.OutputCount(); ++i) {
    NN_RETURN_IF_ERROR(CheckCompatible(context, body.operands()[body.outputs()[i]],
                                       context.Output(i), "output", i));
  }
  for (uint32_t i = 0; i < body_outputs; ++i) {
    NN_RETURN_IF_ERROR(CheckCompatible(context, body.operands()[body.inputs()[i]],
                                       body.operands()[body.outputs()[i]], "body output", i));
  }
  RequireModelFeatureLevel(context, condition);
  RequireModelFeatureLevel(context, body);
  return ANEURALNETWORKS_NO_ERROR;
}

int PrepareWhile(OperationContext& context) {
  const Model& condition = *context.Input(kConditionModel).model;
  const Model& body = *context.Input(kBodyModel).model;
  const size_t carried = body.outputs().size();  // input-output and state-only operands
  // The loop's current operands: the operation's inputs until the body first ran, then its
  // latest outputs (input-only operands always view the operation's inputs).
  std::vector<ControlFlowView> current;
  for (uint32_t i = kFirstInput; i < context.InputCount(); ++i) {
    current.push_back(ViewOf(context.Input(i)));
  }
  std::vector<ControlFlowValue> state;
  OperationWork work;
  const auto start = std::chrono::steady_clock::now();
  const auto timeout = std::chrono::nanoseconds(CurrentControlFlowSettings().loop_timeout_ns);
  for (uint64_t iteration = 0;; ++iteration) {
    const auto elapsed = std::chrono::steady_clock::now() - start;
    NN_CHECK(elapsed <= timeout, ANEURALNETWORKS_MISSED_DEADLINE_TRANSIENT)
        << "WHILE loop timed out after " << iteration << " iterations and "
        << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
        << " ms (loop timeout " << timeout.count() << " ns)";
    std::vector<ControlFlowValue> verdict;
    NN_RETURN_IF_ERROR(RunReferencedModel(condition, current, {}, &verdict, &work));
    if (verdict[0].length < 1 || verdict[0].bytes[0] == 0) break;
    std::vector<size_t> hints(carried);
    for (size_t i = 0; i < carried; ++i) hints[i] = current[i].length;
    std::vector<ControlFlowValue> next;
    NN_RETURN_IF_ERROR(RunReferencedModel(body, current, hints, &next, &work));
    state = std::move(next);
    for (size_t i = 0; i < carried; ++i) current[i] = ViewOf(state[i]);
  }
  for (uint32_t i = 0; i < context.OutputCount(); ++i) {
    NN_RETURN_IF_ERROR(WriteControlFlowOutput(context, i, current[i]));
  }
  SetControlFlowWork(work);
  return ANEURALNETWORKS_NO_ERROR;
}

// The outputs were written by PrepareWhile, once the loop had ended and fixed their shapes.
int ExecuteWhile(OperationContext&) { return ANEURALNETWORKS_NO_ERROR; }

}  // namespace

NN_REGISTER_OPERATION(WHILE, ValidateWhile, PrepareWhile, ExecuteWhile);

}  // namespace mock_nnapi
