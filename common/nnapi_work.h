// SPDX-License-Identifier: Apache-2.0
// The work of one NNAPI operation: its arithmetic operations (a multiply-add counts 2) from its
// operand shapes and scalar arguments, one formula per cost kind (the COST column of
// nnapi_operations.inc). Used by both the mock's cost model (mock_nnapi/src/cost_model.cc) and
// the runtime's placement policy (tvm_nnapi/runtime/src/policy.cc), so the two cannot disagree;
// the table is in docs/cost-model.md. Header-only, on plain shapes and integers.
//
// Sharing is deliberate: these formulas estimate cost and are no test oracle. What the mock
// checks (its kernels, its validation) stays independent of the code it tests.
#ifndef TVM_NNAPI_COMMON_NNAPI_WORK_H_
#define TVM_NNAPI_COMMON_NNAPI_WORK_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "nnapi_facts.h"

namespace nnapi_common {

// What a formula reads of one input operand.
struct WorkOperand {
  // A tensor's dimensions; empty for a scalar and for an input that is absent.
  std::vector<int64_t> shape;
  // The value of an INT32, UINT32 or BOOL (0/1) scalar when it is known.
  std::optional<int64_t> value;
};

// What a formula reads of one operation: its inputs and the shape of its first output.
struct WorkOperation {
  std::vector<WorkOperand> inputs;
  std::vector<int64_t> output;
};

// Input indices of AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D (NDK): explicit padding with 10
// or 11 inputs (0 input, 1-4 pad left/right/top/bottom, 5 stride_w, 6 stride_h, 7 filter_w,
// 8 filter_h, 9 FuseCode, 10 optional layout), implicit padding with 7 or 8 (0 input,
// 1 PaddingCode, 2 stride_w, 3 stride_h, 4 filter_w, 5 filter_h, 6 FuseCode, 7 optional layout).
struct PoolingInputs {
  bool explicit_padding;
  uint32_t stride_w, stride_h, filter_w, filter_h, activation, layout;
};
constexpr PoolingInputs PoolingInputsFor(size_t input_count) {
  return input_count >= 10 ? PoolingInputs{true, 5, 6, 7, 8, 9, 10}
                           : PoolingInputs{false, 2, 3, 4, 5, 6, 7};
}

// The weight-matrix inputs of the recurrent operations (NDK input indices): each multiplies
// every row (time step x batch entry) of the input once per step. Empty for other codes.
inline std::vector<size_t> RecurrentWeightInputs(int32_t code) {
  switch (code) {
    case ANEURALNETWORKS_RNN:
    case ANEURALNETWORKS_UNIDIRECTIONAL_SEQUENCE_RNN:
    case ANEURALNETWORKS_SVDF:  // weights_feature, weights_time (against the state memory)
      return {1, 2};
    case ANEURALNETWORKS_BIDIRECTIONAL_SEQUENCE_RNN:  // forward, backward and the aux weights
      return {1, 2, 5, 6, 10, 11};
    case ANEURALNETWORKS_LSTM:
    case ANEURALNETWORKS_UNIDIRECTIONAL_SEQUENCE_LSTM:
    case ANEURALNETWORKS_QUANTIZED_LSTM:  // input-to-gate, recurrent-to-gate, projection
      return {1, 2, 3, 4, 5, 6, 7, 8, 16};
    case ANEURALNETWORKS_QUANTIZED_16BIT_LSTM:
      return {1, 2, 3, 4, 5, 6, 7, 8};
    case ANEURALNETWORKS_BIDIRECTIONAL_SEQUENCE_LSTM:  // both directions and their aux weights
      return {1,  2,  3,  4,  5,  6,  7,  8,  16, 18, 19, 20, 21,
              22, 23, 24, 25, 33, 40, 41, 42, 43, 44, 45, 46, 47};
    default:
      return {};
  }
}

namespace work_detail {
inline double Elements(const std::vector<int64_t>& shape) {
  double count = 1;
  for (int64_t dimension : shape) count *= static_cast<double>(dimension);
  return count;
}
// Dimension `d` of input `i`; 1 when the input or the dimension is missing (the formulas run
// on operations that may not have passed NNAPI's validation yet).
inline double Dimension(const WorkOperation& operation, size_t i, size_t d) {
  if (i >= operation.inputs.size() || d >= operation.inputs[i].shape.size()) return 1;
  return static_cast<double>(operation.inputs[i].shape[d]);
}
inline int64_t ValueOr(const WorkOperation& operation, size_t i, int64_t fallback) {
  if (i >= operation.inputs.size()) return fallback;
  return operation.inputs[i].value.value_or(fallback);
}
}  // namespace work_detail

// Arithmetic operations of an operation of cost kind `kind`.
// `code` is the operation's (only kRecurrent's formula reads it).
inline double CostKindFlops(CostKind kind, const WorkOperation& operation, int32_t code = -1) {
  using work_detail::Dimension;
  using work_detail::Elements;
  using work_detail::ValueOr;
  if (operation.inputs.empty()) return 0;
  const std::vector<int64_t>& input = operation.inputs[0].shape;
  const double output_elements = Elements(operation.output);
  const bool has_weights = operation.inputs.size() > 1;
  switch (kind) {
    case CostKind::kConvolution:  // filter [C_out, kH, kW, C_in per group]
      if (!has_weights) return 0;
      return 2 * output_elements * (Dimension(operation, 1, 1) * Dimension(operation, 1, 2)) *
             Dimension(operation, 1, 3);
    case CostKind::kTransposeConvolution:  // each input element scatters through the filter
      if (!has_weights) return 0;
      return 2 * Elements(input) * (Dimension(operation, 1, 1) * Dimension(operation, 1, 2)) *
             Dimension(operation, 1, 0);
    case CostKind::kDepthwiseConvolution:  // filter [1, kH, kW, C_out]
      if (!has_weights) return 0;
      return 2 * output_elements * Dimension(operation, 1, 1) * Dimension(operation, 1, 2);
    case CostKind::kFullyConnected:  // weights [num_units, input_size]
      if (!has_weights) return 0;
      return 2 * output_elements * Dimension(operation, 1, 1);
    case CostKind::kMatMul: {
      // in0 [..., r_x, c_x], optional in2 adj_x: the inner dimension is r_x when adj_x is true,
      // else c_x (NDK BATCH_MATMUL: the output has r_o = adj_x ? c_x : r_x rows).
      const size_t rank = input.size();
      if (rank < 2) return 0;
      const bool adjoint_x = ValueOr(operation, 2, 0) != 0;
      const double inner = static_cast<double>(adjoint_x ? input[rank - 2] : input[rank - 1]);
      return 2 * output_elements * inner;
    }
    case CostKind::kPooling:
    case CostKind::kL2Pooling: {
      const PoolingInputs at = PoolingInputsFor(operation.inputs.size());
      const double window = static_cast<double>(ValueOr(operation, at.filter_w, 1)) *
                            static_cast<double>(ValueOr(operation, at.filter_h, 1));
      return output_elements * window * (kind == CostKind::kL2Pooling ? 2 : 1);
    }
    case CostKind::kElementwise:
      return output_elements;
    case CostKind::kTranscendental:
      return output_elements * 4;
    case CostKind::kBilinear:
      return output_elements * 8;
    case CostKind::kSoftmax:
      return 5 * Elements(input);  // max, subtract, exp, sum, divide
    case CostKind::kReduction:
      return Elements(input);
    case CostKind::kL2Normalization:
      return Elements(input) * 3;
    case CostKind::kInstanceNormalization:
      return Elements(input) * 5;
    case CostKind::kLocalResponseNormalization: {  // in1: the radius
      const double radius = static_cast<double>(std::max<int64_t>(0, ValueOr(operation, 1, 0)));
      return Elements(input) * (2 * (2 * radius + 1) + 3);
    }
    case CostKind::kSelection: {  // in1: k; each element is compared against a k-element heap
      const double k = static_cast<double>(std::max<int64_t>(1, ValueOr(operation, 1, 1)));
      return Elements(input) * std::ceil(std::log2(k + 1));
    }
    case CostKind::kSampling: {  // in0 [batches, classes]; output [batches, samples]
      const double classes = std::max(1.0, Dimension(operation, 0, 1));
      return 4 * Elements(input) + output_elements * std::ceil(std::log2(classes + 1));
    }
    case CostKind::kHashing:  // in0 [num_hash, num_bits] seeds, in1 the input
      if (!has_weights) return 0;
      return Dimension(operation, 0, 0) * Dimension(operation, 0, 1) *
             Elements(operation.inputs[1].shape);
    case CostKind::kRecurrent: {
      // 2 x rows x the elements of every weight matrix present, rows being the input's
      // elements over its last dimension (time steps x batch); the gates' element-wise work is
      // not counted.
      if (input.empty() || input.back() == 0) return 0;
      const double rows = Elements(input) / static_cast<double>(input.back());
      double weights = 0;
      for (size_t i : RecurrentWeightInputs(code)) {
        if (i < operation.inputs.size() && operation.inputs[i].shape.size() == 2) {
          weights += Elements(operation.inputs[i].shape);
        }
      }
      return 2 * rows * weights;
    }
    case CostKind::kDataMovement:
      return 0;
    case CostKind::kControlFlow:
      // The branch taken and the iteration count are only known when the operation runs: the
      // formula counts nothing, and the mock's cost model adds the work its referenced models
      // executed (mock_nnapi/src/ops/control_flow.h).
      return 0;
    case CostKind::kNotModelled:
      return output_elements;  // a placeholder of one operation per output element
  }
  return 0;
}

// Arithmetic operations of NNAPI operation `code` (0 for a code outside nnapi_operations.inc).
inline double OperationFlops(int32_t code, const WorkOperation& operation) {
  const OperationFacts* facts = FindOperationFacts(code);
  return facts == nullptr ? 0 : CostKindFlops(facts->cost, operation, code);
}

}  // namespace nnapi_common

#endif  // TVM_NNAPI_COMMON_NNAPI_WORK_H_
