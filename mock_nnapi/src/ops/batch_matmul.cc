// SPDX-License-Identifier: Apache-2.0
// BATCH_MATMUL: out[..., :, :] = op(x[..., :, :]) * op(y[..., :, :]) through sgemm.
//
// Inputs (NDK reference; Android's batch_matmul validation and prepare): 0 x [..., r_x, c_x];
// 1 y [..., r_y, c_y] of the same type and rank (2 to 4); 2 BOOL adj_x; 3 BOOL adj_y. All four
// inputs are required (Android checks the count); an omitted adj value (setOperandValue(NULL, 0))
// reads as false. adj transposes the last two dimensions. Output [..., r_o, c_o] with
// r_o = adj_x ? c_x : r_x and c_o = adj_y ? r_y : c_y; the batch dimensions are x's, and y's
// must equal them or be 1 (broadcast, as Android's TFLite kernel does); the contracted sizes must
// match and be non-zero.
// Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (fp32 sgemm), TENSOR_INT32 (wrapping int32 arithmetic),
// TENSOR_QUANT8_ASYMM_SIGNED (exact int32 accumulation, requantised with x_scale * y_scale /
// out_scale, no activation). The output has the inputs' type.
#include <vector>

#include "../kernels/requantize.h"
#include "conv_common.h"
#include "gemm.h"

namespace mock_nnapi {
namespace {

constexpr uint32_t kX = 0;
constexpr uint32_t kY = 1;
constexpr uint32_t kAdjX = 2;
constexpr uint32_t kAdjY = 3;

struct MatmulShape {
  Dimensions output;
  size_t batches = 1;
  size_t m = 0, n = 0, k = 0;
  bool adj_x = false, adj_y = false;
  // Per batch dimension: y's stride in matrices (0 where y broadcasts).
  std::vector<size_t> y_batch_strides;
};

// Checks known ranks and dimensions (0 = unknown is skipped); fills `shape` when all is known.
int CheckShapes(const OperationContext& context, int code, MatmulShape* shape) {
  const OperandInfo& x = context.Input(kX);
  const OperandInfo& y = context.Input(kY);
  if (!x.rank_known || !y.rank_known) return ANEURALNETWORKS_NO_ERROR;
  NN_CHECK_EQ(x.rank(), y.rank(), code) << context.name() << " inputs must have the same rank";
  NN_CHECK(x.rank() >= 2 && x.rank() <= 4, code)
      << context.name() << " rank " << x.rank() << " must be 2 to 4";
  const uint32_t rank = x.rank();
  for (uint32_t d = 0; d + 2 < rank; ++d) {
    const uint32_t xd = x.dim(d), yd = y.dim(d);
    NN_CHECK(xd == 0 || yd == 0 || xd == yd || yd == 1, code)
        << context.name() << " batch dimension " << d << ": " << xd << " vs " << yd;
  }
  if (!context.HasInputValue(kAdjX) && !context.IsOmitted(kAdjX)) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  if (!context.HasInputValue(kAdjY) && !context.IsOmitted(kAdjY)) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  shape->adj_x = context.InputScalarOr<uint8_t>(kAdjX, 0) != 0;
  shape->adj_y = context.InputScalarOr<uint8_t>(kAdjY, 0) != 0;
  const uint32_t rows_x = x.dim(rank - 2), cols_x = x.dim(rank - 1);
  const uint32_t rows_y = y.dim(rank - 2), cols_y = y.dim(rank - 1);
  const uint32_t k_x = shape->adj_x ? rows_x : cols_x;
  const uint32_t k_y = shape->adj_y ? cols_y : rows_y;
  if (k_x != 0 && k_y != 0) {
    NN_CHECK_EQ(k_x, k_y, code) << context.name() << " cannot multiply "
                                << DimensionsToString(x.dimensions) << " by "
                                << DimensionsToString(y.dimensions);
  }
  shape->m = shape->adj_x ? cols_x : rows_x;
  shape->n = shape->adj_y ? rows_y : cols_y;
  shape->k = k_x;
  shape->output = x.dimensions;
  shape->output[rank - 2] = static_cast<uint32_t>(shape->m);
  shape->output[rank - 1] = static_cast<uint32_t>(shape->n);
  shape->batches = 1;
  shape->y_batch_strides.assign(rank - 2, 0);
  size_t y_stride = 1;
  for (uint32_t d = rank - 2; d-- > 0;) {
    shape->batches *= x.dim(d);
    shape->y_batch_strides[d] = y.dim(d) == 1 ? 0 : y_stride;
    y_stride *= y.dim(d);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {4}, 1));
  NN_RETURN_IF_ERROR(
      CheckInputType(context, kX,
                     {ANEURALNETWORKS_TENSOR_FLOAT16, ANEURALNETWORKS_TENSOR_FLOAT32,
                      ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED, ANEURALNETWORKS_TENSOR_INT32}));
  const int32_t type = context.InputType(kX);
  NN_RETURN_IF_ERROR(
      conv::CheckInputTypes(context, {type, type, ANEURALNETWORKS_BOOL, ANEURALNETWORKS_BOOL}));
  NN_RETURN_IF_ERROR(CheckOutputTypeMatches(context, 0, kX));
  MatmulShape shape;
  NN_RETURN_IF_ERROR(CheckShapes(context, ANEURALNETWORKS_BAD_DATA, &shape));
  context.RequireFeatureLevel(kFeatureLevel6);
  return ANEURALNETWORKS_NO_ERROR;
}

int Prepare(OperationContext& context) {
  MatmulShape shape;
  NN_RETURN_IF_ERROR(CheckShapes(context, ANEURALNETWORKS_OP_FAILED, &shape));
  NN_CHECK(shape.m > 0 && shape.n > 0 && shape.k > 0, ANEURALNETWORKS_OP_FAILED)
      << context.name() << " matrices must not be empty";
  return context.SetOutputShape(0, shape.output);
}

// The matrix of y that output matrix `batch` reads (y broadcast where its batch dimension is 1).
size_t YMatrix(const MatmulShape& shape, const Dimensions& x_dims, size_t batch) {
  size_t remainder = batch;
  size_t y_matrix = 0;
  for (size_t d = shape.y_batch_strides.size(); d-- > 0;) {
    y_matrix += (remainder % x_dims[d]) * shape.y_batch_strides[d];
    remainder /= x_dims[d];
  }
  return y_matrix;
}

// Calls body(batch, x_matrix, y_matrix) for every output matrix, in order.
template <typename Body>
void ForEachBatch(const MatmulShape& shape, const Dimensions& x_dims, Body&& body) {
  for (size_t b = 0; b < shape.batches; ++b) body(b, b, YMatrix(shape, x_dims, b));
}

void MatmulFloat(const MatmulShape& s, const Dimensions& x_dims, const float* x, const float* y,
                 float* out) {
  const size_t x_cols = s.adj_x ? s.m : s.k;
  const size_t y_cols = s.adj_y ? s.k : s.n;
  auto multiply = [&](size_t b, size_t xb, size_t yb) {
    gemm::Sgemm(s.adj_x ? gemm::Transpose::kYes : gemm::Transpose::kNo,
                s.adj_y ? gemm::Transpose::kYes : gemm::Transpose::kNo, s.m, s.n, s.k, 1.f,
                x + xb * s.m * s.k, x_cols, y + yb * s.k * s.n, y_cols, 0.f, out + b * s.m * s.n,
                s.n);
  };
  const size_t work = s.m * s.n * s.k;
  if (s.batches > 1 && work < gemm::kParallelGemmWork) {
    // Products too small for Sgemm to share out (attention's per-head ones): the batches go to
    // the pool instead, each one single-threaded call (the same result as in order).
    gemm::ParallelFor(s.batches, work, [&](size_t begin, size_t end) {
      for (size_t b = begin; b < end; ++b) multiply(b, b, YMatrix(s, x_dims, b));
    });
    return;
  }
  ForEachBatch(s, x_dims, multiply);
}

// Two's complement int32 arithmetic (wraps on overflow, through uint32).
void MatmulInt32(const MatmulShape& s, const Dimensions& x_dims, const int32_t* x, const int32_t* y,
                 int32_t* out) {
  std::vector<uint32_t> row(s.n);
  ForEachBatch(s, x_dims, [&](size_t b, size_t xb, size_t yb) {
    const int32_t* xm = x + xb * s.m * s.k;
    const int32_t* ym = y + yb * s.k * s.n;
    for (size_t i = 0; i < s.m; ++i) {
      std::fill(row.begin(), row.end(), 0u);
      for (size_t p = 0; p < s.k; ++p) {
        const uint32_t a = static_cast<uint32_t>(s.adj_x ? xm[p * s.m + i] : xm[i * s.k + p]);
        for (size_t j = 0; j < s.n; ++j) {
          row[j] += a * static_cast<uint32_t>(s.adj_y ? ym[j * s.k + p] : ym[p * s.n + j]);
        }
      }
      int32_t* o = out + (b * s.m + i) * s.n;
      for (size_t j = 0; j < s.n; ++j) o[j] = static_cast<int32_t>(row[j]);
    }
  });
}

void MatmulQuantized(const MatmulShape& s, const Dimensions& x_dims, const OperandInfo& x,
                     const OperandInfo& y, const OperandInfo& output) {
  const conv::FloatValues xv(x), yv(y);
  const float max_x = conv::MaxAbsOffset(x), max_y = conv::MaxAbsOffset(y);
  const size_t x_cols = s.adj_x ? s.m : s.k;
  const size_t y_cols = s.adj_y ? s.k : s.n;
  const double multiplier = static_cast<double>(x.scale * y.scale) / output.scale;
  std::vector<int32_t> accumulators(s.m * s.n);
  int8_t* out = output.MutableData<int8_t>();
  ForEachBatch(s, x_dims, [&](size_t b, size_t xb, size_t yb) {
    gemm::IntegerGemm(s.adj_x ? gemm::Transpose::kYes : gemm::Transpose::kNo,
                      s.adj_y ? gemm::Transpose::kYes : gemm::Transpose::kNo, s.m, s.n, s.k,
                      xv.data() + xb * s.m * s.k, x_cols, max_x, yv.data() + yb * s.k * s.n, y_cols,
                      max_y, accumulators.data(), s.n);
    for (size_t i = 0; i < s.m * s.n; ++i) {
      out[b * s.m * s.n + i] =
          gemm::Requantize<int8_t>(accumulators[i], multiplier, output.zero_point, -128, 127);
    }
  });
}

int Execute(OperationContext& context) {
  MatmulShape shape;
  NN_RETURN_IF_ERROR(CheckShapes(context, ANEURALNETWORKS_OP_FAILED, &shape));
  const OperandInfo& x = context.Input(kX);
  const OperandInfo& y = context.Input(kY);
  const OperandInfo& output = context.Output(0);
  if (shape.batches == 0) return ANEURALNETWORKS_NO_ERROR;
  switch (x.type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      MatmulFloat(shape, x.dimensions, x.Data<float>(), y.Data<float>(),
                  output.MutableData<float>());
      return ANEURALNETWORKS_NO_ERROR;
    case ANEURALNETWORKS_TENSOR_FLOAT16: {
      const conv::FloatValues xv(x), yv(y);
      std::vector<float> out(shape.batches * shape.m * shape.n);
      MatmulFloat(shape, x.dimensions, xv.data(), yv.data(), out.data());
      gemm::FloatToHalf(out.data(), out.size(), output.MutableData<Half>());
      return ANEURALNETWORKS_NO_ERROR;
    }
    case ANEURALNETWORKS_TENSOR_INT32:
      MatmulInt32(shape, x.dimensions, x.Data<int32_t>(), y.Data<int32_t>(),
                  output.MutableData<int32_t>());
      return ANEURALNETWORKS_NO_ERROR;
    default:  // TENSOR_QUANT8_ASYMM_SIGNED
      MatmulQuantized(shape, x.dimensions, x, y, output);
      return ANEURALNETWORKS_NO_ERROR;
  }
}

}  // namespace

NN_REGISTER_OPERATION(BATCH_MATMUL, Validate, Prepare, Execute);

}  // namespace mock_nnapi
