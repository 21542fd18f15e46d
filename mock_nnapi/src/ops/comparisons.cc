// SPDX-License-Identifier: Apache-2.0
// EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL: elementwise comparisons with
// numpy-style broadcasting.
//
// Inputs: 0 tensor A, 1 tensor B of the same type. Output: TENSOR_BOOL8 of the broadcast shape
// (1 where the comparison holds, 0 elsewhere). No rank limit.
// Types by feature level (NDK reference and Android's operation validator):
//   TENSOR_BOOL8, TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM (FL3),
//   TENSOR_QUANT8_ASYMM_SIGNED (FL4).
// Quantised inputs may have different scales and zero points; their real values are compared.
// TENSOR_BOOL8 values are compared as stored bytes, like Android's reference kernel. Comparisons
// with NaN follow IEEE (only NOT_EQUAL holds). Shapes that cannot broadcast are rejected when
// the operation is added if both are known, and fail the execution otherwise. Zero-sized inputs
// fail at execution (Android registers these operations without allowZeroSizedInput).
#include "elementwise_helpers.h"

namespace mock_nnapi {
namespace {

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {2}, 1));
  NN_RETURN_IF_ERROR(elementwise::CheckInputTypeLevel(
      context, 0,
      {{ANEURALNETWORKS_TENSOR_BOOL8, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel3},
       {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, kFeatureLevel4}}));
  NN_RETURN_IF_ERROR(elementwise::CheckInputTypeMatches(context, 1, 0));
  NN_RETURN_IF_ERROR(elementwise::CheckOutputType(context, 0, ANEURALNETWORKS_TENSOR_BOOL8));
  return elementwise::CheckBroadcastableIfKnown(context, 0, 1);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(elementwise::CheckRunnableInputs(context, /*allow_zero_sized=*/false));
  return elementwise::PrepareBroadcast(context, 0, 1);
}

template <typename T>
bool Compare(int32_t operation, T x, T y) {
  switch (operation) {
    case ANEURALNETWORKS_EQUAL:
      return x == y;
    case ANEURALNETWORKS_NOT_EQUAL:
      return x != y;
    case ANEURALNETWORKS_GREATER:
      return x > y;
    case ANEURALNETWORKS_GREATER_EQUAL:
      return x >= y;
    case ANEURALNETWORKS_LESS:
      return x < y;
    default:  // LESS_EQUAL
      return x <= y;
  }
}

// Compares to_value(a[i]) with to_value(b[j]) over the broadcast shape.
template <typename Stored, typename ToValue>
void Run(OperationContext& context, ToValue&& to_value) {
  const OperandInfo& a_info = context.Input(0);
  const OperandInfo& b_info = context.Input(1);
  const OperandInfo& out_info = context.Output(0);
  const Stored* a = a_info.Data<Stored>();
  const Stored* b = b_info.Data<Stored>();
  uint8_t* out = out_info.MutableData<uint8_t>();
  const int32_t operation = context.type();
  ForEachBroadcast(
      out_info.dimensions, a_info.dimensions, b_info.dimensions, [&](size_t o, size_t i, size_t j) {
        out[o] = Compare(operation, to_value(a[i], a_info), to_value(b[j], b_info)) ? 1 : 0;
      });
}

template <typename Q>
float RealValue(Q value, const OperandInfo& info) {
  return Dequantize(value, info.scale, info.zero_point);
}

int Execute(OperationContext& context) {
  const int32_t type = context.InputType(0);
  auto as_float = [](auto value, const OperandInfo&) { return float(value); };
  auto as_is = [](auto value, const OperandInfo&) { return value; };
  switch (type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      Run<float>(context, as_float);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      Run<Half>(context, as_float);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_INT32:
      Run<int32_t>(context, as_is);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_BOOL8:
      Run<uint8_t>(context, as_is);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      Run<uint8_t>(context, RealValue<uint8_t>);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      Run<int8_t>(context, RealValue<int8_t>);
      return ANEURALNETWORKS_NO_ERROR;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED)
          << context.name() << ": unsupported type " << OperandTypeName(type);
  }
}

}  // namespace

NN_REGISTER_OPERATION(EQUAL, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(NOT_EQUAL, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(GREATER, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(GREATER_EQUAL, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(LESS, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(LESS_EQUAL, Validate, Prepare, Execute);

}  // namespace mock_nnapi
