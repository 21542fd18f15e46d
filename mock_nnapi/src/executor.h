// SPDX-License-Identifier: Apache-2.0
// The reference executor: runs a finished model's operations in order on host buffers.
// Numerics are the same whichever simulated device an operation is assigned to; the device only
// changes the modelled time (see cost_model.h).
#ifndef MOCK_NNAPI_SRC_EXECUTOR_H_
#define MOCK_NNAPI_SRC_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "model.h"

namespace mock_nnapi {

// One model input or output as the executor sees it.
struct ExecutorArgument {
  uint8_t* data = nullptr;
  // Bytes available at `data` (inputs: the value's size; outputs: the buffer's capacity).
  size_t length = 0;
  // Dimensions after combining the model's declaration with the execution's setInput/setOutput
  // type; outputs may still hold unknown (0) dimensions.
  Dimensions dimensions;
  bool rank_known = true;
  bool omitted = false;
  // Outputs only: a buffer that can be made as large as the computed shape needs (a descriptor
  // memory of unknown size, memory.h); returns its new address, nullptr when that fails.
  std::function<uint8_t*(size_t)> grow;
};

struct OutputShape {
  Dimensions dimensions;
  bool sufficient = true;
};

// Receives each executed operation (for traces and the cost model).
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  virtual void OnOperation(uint32_t operation_index, const std::vector<const OperandInfo*>& inputs,
                           const std::vector<const OperandInfo*>& outputs) = 0;
};

// Runs `model`. Returns NO_ERROR, OUTPUT_INSUFFICIENT_SIZE (with `shapes` filled for the
// outputs reached), OP_FAILED or OUT_OF_MEMORY. `shapes` gets one entry per model output.
// With `cost_only`, every operation is validated and prepared (output shapes, observer calls)
// but its kernel is skipped: outputs are left unwritten and temporaries are reserved as
// untouched zero pages, so full-size models can be costed without their memory.
int ExecuteModel(const Model& model, const std::vector<ExecutorArgument>& inputs,
                 const std::vector<ExecutorArgument>& outputs, std::vector<OutputShape>* shapes,
                 ExecutionObserver* observer, bool cost_only = false);

// Cost-only executions (MockNnapi_setCostOnlyExecution): process-wide, read when a run starts.
void SetCostOnlyExecution(bool enabled);
bool CostOnlyExecution();

// Byte size of a tensor whose dimensions are all known; zero-sized dimensions give 0.
// nullopt on overflow.
std::optional<size_t> PreparedByteSize(int32_t type, const Dimensions& dimensions);

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_EXECUTOR_H_
