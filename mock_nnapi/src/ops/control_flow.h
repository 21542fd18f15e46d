// SPDX-License-Identifier: Apache-2.0
// What IF (if.cc) and WHILE (while.cc) share: the signature checks Android's validation applies
// to a referenced model (ANEURALNETWORKS_MODEL operand) at addOperation and finish, running a
// referenced model on operand views, and the per-execution settings they read.
//
// Execution model. The shape of an IF's or a WHILE's outputs is only known once the chosen
// branch or the loop has run, so both run their referenced models in their prepare step (which
// fixes the output shapes, SetOutputShape) and copy the results into their outputs there; their
// execute step has nothing left to do. A referenced model runs through the same executor as the
// main model (ExecuteModel), so operands of unknown shape inside a branch or a body take the
// shapes of the values they receive; an output whose size is not known in advance is retried
// with the size the failed attempt reported (OUTPUT_INSUFFICIENT_SIZE).
//
// Cost model (docs/cost-model.md): IF and WHILE have the ControlFlow cost kind, no arithmetic of
// their own. The work of the operations a branch, condition or body executes (every iteration,
// nested IF/WHILE included) is added to the IF's or WHILE's own, which the execution costs as
// one operation on the device that runs it.
#ifndef MOCK_NNAPI_SRC_OPS_CONTROL_FLOW_H_
#define MOCK_NNAPI_SRC_OPS_CONTROL_FLOW_H_

#include <cstdint>
#include <vector>

#include "../cost_model.h"
#include "../model.h"
#include "../operation.h"

namespace mock_nnapi {

// Settings of the execution that runs the operations on this thread (set by Execution::Run).
struct ControlFlowSettings {
  // ANeuralNetworksExecution_setLoopTimeout (execution.h: kDefaultLoopTimeoutNs when unset).
  uint64_t loop_timeout_ns = 0;
  // Cost-only executions run the referenced models cost-only too (executor.h).
  bool cost_only = false;
};
const ControlFlowSettings& CurrentControlFlowSettings();
// Makes `settings` the current ones for the lifetime of the object (restores the previous).
class ScopedControlFlowSettings {
 public:
  explicit ScopedControlFlowSettings(const ControlFlowSettings& settings);
  ~ScopedControlFlowSettings();
  ScopedControlFlowSettings(const ScopedControlFlowSettings&) = delete;
  ScopedControlFlowSettings& operator=(const ScopedControlFlowSettings&) = delete;

 private:
  ControlFlowSettings settings_;
  const ControlFlowSettings* previous_;
};

// ---- Validation --------------------------------------------------------------------------------

// Android's condition operand: a TENSOR_BOOL8 of shape [1].
int CheckConditionOperand(const OperationContext& context, const OperandInfo& operand,
                          const char* what);
// Android's isValidSubgraphReference: operand `i` is of type MODEL and holds a model.
int CheckModelReference(const OperationContext& context, uint32_t i);
// Android's `compatible`: same type, scale, zero point and per-channel quantisation; ranks and
// dimensions agree wherever both are known.
int CheckCompatible(const OperationContext& context, const Operand& inner, const OperandInfo& outer,
                    const char* what, uint32_t index);
int CheckCompatible(const OperationContext& context, const Operand& a, const Operand& b,
                    const char* what, uint32_t index);
// Raises the operation's feature level to that of every operation of `model` (an IF or WHILE
// needs what its referenced models need).
void RequireModelFeatureLevel(OperationContext& context, const Model& model);

// ---- Execution ---------------------------------------------------------------------------------

// A value produced by a referenced model (or copied from one of the operation's inputs).
struct ControlFlowValue {
  std::vector<uint8_t> bytes;
  Dimensions dimensions;
  // Bytes of the value (bytes.size() may be larger).
  size_t length = 0;
};

// An operand view: what a referenced model reads as one of its inputs.
struct ControlFlowView {
  const uint8_t* data = nullptr;
  size_t length = 0;
  Dimensions dimensions;
  bool omitted = false;
};
ControlFlowView ViewOf(const OperandInfo& info);
ControlFlowView ViewOf(const ControlFlowValue& value);

// Runs `model` on `inputs` (one per model input) and returns its outputs in `outputs`.
// `size_hints` (optional, one per output) is the number of bytes to try first for an output
// whose size the model does not declare. Adds the work of the executed operations to `work`.
// Returns NO_ERROR or the run's error (OP_FAILED, OUT_OF_MEMORY, MISSED_DEADLINE_TRANSIENT).
int RunReferencedModel(const Model& model, const std::vector<ControlFlowView>& inputs,
                       const std::vector<size_t>& size_hints,
                       std::vector<ControlFlowValue>* outputs, OperationWork* work);

// Fixes output `i`'s shape to `value`'s and copies the value into it.
int WriteControlFlowOutput(OperationContext& context, uint32_t i, const ControlFlowView& value);

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_CONTROL_FLOW_H_
