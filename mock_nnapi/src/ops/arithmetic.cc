// SPDX-License-Identifier: Apache-2.0
// ADD, SUB, MUL, DIV: elementwise arithmetic with numpy-style broadcasting and a fused
// activation.
//
// Inputs: 0 tensor A, 1 tensor B (same type as A), 2 INT32 FuseCode. Output: broadcast shape.
// Types by feature level (NDK reference):
//   ADD, MUL: TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (FL1), TENSOR_FLOAT16 (FL3),
//             TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_INT32 (FL4; activation must be NONE).
//   SUB:      TENSOR_FLOAT32 (FL2), TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM (FL3),
//             TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_INT32 (FL4).
//   DIV:      TENSOR_FLOAT32 (FL2), TENSOR_FLOAT16 (FL3), TENSOR_INT32 (FL4; floor division).
// Quantised operands are computed through their real values and requantised to the output's
// scale and zero point. MUL of quantised operands needs output_scale > scale_A * scale_B up to
// FL3 (the NDK's rule; later levels lift it).
#include <cmath>

#include "common.h"
#include "elementwise_helpers.h"

namespace mock_nnapi {
namespace {

int64_t TypeFeatureLevel(int32_t operation, int32_t type) {
  switch (type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      return operation == ANEURALNETWORKS_ADD || operation == ANEURALNETWORKS_MUL ? kFeatureLevel1
                                                                                  : kFeatureLevel2;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      if (operation == ANEURALNETWORKS_DIV) return -1;
      return operation == ANEURALNETWORKS_SUB ? kFeatureLevel3 : kFeatureLevel1;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      return kFeatureLevel3;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      return operation == ANEURALNETWORKS_DIV ? -1 : kFeatureLevel4;
    case ANEURALNETWORKS_TENSOR_INT32:
      return kFeatureLevel4;
    default:
      return -1;
  }
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {3}, 1));
  const OperandInfo& a = context.Input(0);
  const OperandInfo& b = context.Input(1);
  const int64_t level = TypeFeatureLevel(context.type(), a.type);
  NN_CHECK(level > 0, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " does not support " << OperandTypeName(a.type);
  context.RequireFeatureLevel(level);
  NN_CHECK_EQ(b.type, a.type, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " inputs must have the same type";
  NN_RETURN_IF_ERROR(CheckFusedActivation(context, 2));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, 0));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, a, 4, "input 0 rank"));
  NN_RETURN_IF_ERROR(CheckRankAtMost(context, b, 4, "input 1 rank"));
  if (a.type == ANEURALNETWORKS_TENSOR_INT32 && context.HasInputValue(2)) {
    NN_CHECK_EQ(context.InputScalar<int32_t>(2), ANEURALNETWORKS_FUSED_NONE,
                ANEURALNETWORKS_BAD_DATA)
        << context.name() << " on TENSOR_INT32 requires activation NONE";
  }
  if (context.type() == ANEURALNETWORKS_MUL && IsQuantizedType(a.type)) {
    const OperandInfo& out = context.Output(0);
    if (out.scale <= a.scale * b.scale) context.RequireFeatureLevel(kFeatureLevel4);
  }
  // Static shape check when both ranks and dimensions are known.
  if (a.IsFullySpecified() && b.IsFullySpecified()) {
    Dimensions out;
    NN_CHECK(BroadcastShapes(a.dimensions, b.dimensions, &out), ANEURALNETWORKS_BAD_DATA)
        << context.name() << " cannot broadcast " << DimensionsToString(a.dimensions) << " with "
        << DimensionsToString(b.dimensions);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Prepare(OperationContext& context) {
  // Every input is required (an omitted one fails the run, as in Android's executor); zero-sized
  // inputs are allowed and give a zero-sized output.
  NN_RETURN_IF_ERROR(elementwise::CheckRunnableInputs(context, /*allow_zero_sized=*/true));
  const OperandInfo& a = context.Input(0);
  const OperandInfo& b = context.Input(1);
  Dimensions out;
  NN_CHECK(BroadcastShapes(a.dimensions, b.dimensions, &out), ANEURALNETWORKS_OP_FAILED)
      << context.name() << " cannot broadcast " << DimensionsToString(a.dimensions) << " with "
      << DimensionsToString(b.dimensions);
  return context.SetOutputShape(0, out);
}

template <typename T>
T Apply(int32_t operation, T x, T y) {
  switch (operation) {
    case ANEURALNETWORKS_ADD:
      return x + y;
    case ANEURALNETWORKS_SUB:
      return x - y;
    case ANEURALNETWORKS_MUL:
      return x * y;
    default:
      return x / y;
  }
}

// Integer division of TENSOR_INT32 rounds toward negative infinity; division by zero gives 0
// (a defined result instead of a crash; the NDK leaves it unspecified).
int32_t FloorDivide(int32_t x, int32_t y) {
  if (y == 0) return 0;
  if (x == INT32_MIN && y == -1) return INT32_MIN;
  int32_t quotient = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --quotient;
  return quotient;
}

template <typename T>
void RunFloat(OperationContext& context, int32_t activation) {
  const OperandInfo& a = context.Input(0);
  const OperandInfo& b = context.Input(1);
  const OperandInfo& out = context.Output(0);
  const T* x = a.Data<T>();
  const T* y = b.Data<T>();
  T* z = out.MutableData<T>();
  const int32_t op = context.type();
  ForEachBroadcast(out.dimensions, a.dimensions, b.dimensions, [&](size_t o, size_t i, size_t j) {
    z[o] = T(ApplyActivation(Apply<float>(op, float(x[i]), float(y[j])), activation));
  });
}

// fp32: the same values (op, then the clamp of the fused activation), one loop per run of
// elements and per stride case so that the compiler vectorises it.
template <typename Op>
void RunFloat32(const OperandInfo& a, const OperandInfo& b, const OperandInfo& out, Op op,
                int32_t activation) {
  const float* x = a.Data<float>();
  const float* y = b.Data<float>();
  float* z = out.MutableData<float>();
  float low, high;
  FloatActivationRange(activation, &low, &high);
  auto clamp = [low, high](float v) { return std::min(std::max(v, low), high); };
  ForEachBroadcastRun(
      out.dimensions, a.dimensions, b.dimensions,
      [&](size_t o, size_t i, size_t j, size_t count, size_t step_a, size_t step_b) {
        float* __restrict__ dst = z + o;
        const float* __restrict__ xs = x + i;
        const float* __restrict__ ys = y + j;
        if (step_a == 1 && step_b == 1) {
          for (size_t k = 0; k < count; ++k) dst[k] = clamp(op(xs[k], ys[k]));
        } else if (step_a == 1) {
          const float yv = *ys;
          for (size_t k = 0; k < count; ++k) dst[k] = clamp(op(xs[k], yv));
        } else if (step_b == 1) {
          const float xv = *xs;
          for (size_t k = 0; k < count; ++k) dst[k] = clamp(op(xv, ys[k]));
        } else {
          const float v = clamp(op(*xs, *ys));
          for (size_t k = 0; k < count; ++k) dst[k] = v;
        }
      });
}

void RunFloat32(OperationContext& context, int32_t activation) {
  const OperandInfo& a = context.Input(0);
  const OperandInfo& b = context.Input(1);
  const OperandInfo& out = context.Output(0);
  switch (context.type()) {
    case ANEURALNETWORKS_ADD:
      return RunFloat32(a, b, out, [](float p, float q) { return p + q; }, activation);
    case ANEURALNETWORKS_SUB:
      return RunFloat32(a, b, out, [](float p, float q) { return p - q; }, activation);
    case ANEURALNETWORKS_MUL:
      return RunFloat32(a, b, out, [](float p, float q) { return p * q; }, activation);
    default:
      return RunFloat32(a, b, out, [](float p, float q) { return p / q; }, activation);
  }
}

void RunInt32(OperationContext& context) {
  const OperandInfo& a = context.Input(0);
  const OperandInfo& b = context.Input(1);
  const OperandInfo& out = context.Output(0);
  const int32_t* x = a.Data<int32_t>();
  const int32_t* y = b.Data<int32_t>();
  int32_t* z = out.MutableData<int32_t>();
  const int32_t op = context.type();
  ForEachBroadcast(out.dimensions, a.dimensions, b.dimensions, [&](size_t o, size_t i, size_t j) {
    // Wrap-around arithmetic through uint32 (defined behaviour, matches two's complement).
    const uint32_t ux = static_cast<uint32_t>(x[i]);
    const uint32_t uy = static_cast<uint32_t>(y[j]);
    switch (op) {
      case ANEURALNETWORKS_ADD:
        z[o] = static_cast<int32_t>(ux + uy);
        break;
      case ANEURALNETWORKS_SUB:
        z[o] = static_cast<int32_t>(ux - uy);
        break;
      case ANEURALNETWORKS_MUL:
        z[o] = static_cast<int32_t>(ux * uy);
        break;
      default:
        z[o] = FloorDivide(x[i], y[j]);
    }
  });
}

template <typename Q>
void RunQuantized(OperationContext& context, int32_t activation) {
  const OperandInfo& a = context.Input(0);
  const OperandInfo& b = context.Input(1);
  const OperandInfo& out = context.Output(0);
  const Q* x = a.Data<Q>();
  const Q* y = b.Data<Q>();
  Q* z = out.MutableData<Q>();
  const int32_t op = context.type();
  ForEachBroadcast(out.dimensions, a.dimensions, b.dimensions, [&](size_t o, size_t i, size_t j) {
    const float real = Apply<float>(op, Dequantize(x[i], a.scale, a.zero_point),
                                    Dequantize(y[j], b.scale, b.zero_point));
    z[o] = Quantize<Q>(ApplyActivation(real, activation), out.scale, out.zero_point);
  });
}

int Execute(OperationContext& context) {
  const int32_t activation = context.InputScalar<int32_t>(2);
  switch (context.InputType(0)) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      RunFloat32(context, activation);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      RunFloat<Half>(context, activation);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_INT32:
      RunInt32(context);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      RunQuantized<uint8_t>(context, activation);
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
      RunQuantized<int8_t>(context, activation);
      return ANEURALNETWORKS_NO_ERROR;
    default:
      NN_FAIL(ANEURALNETWORKS_OP_FAILED)
          << context.name() << ": unsupported type " << OperandTypeName(context.InputType(0));
  }
}

}  // namespace

NN_REGISTER_OPERATION(ADD, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(SUB, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(MUL, Validate, Prepare, Execute);
NN_REGISTER_OPERATION(DIV, Validate, Prepare, Execute);

}  // namespace mock_nnapi
