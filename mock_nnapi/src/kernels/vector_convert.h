// SPDX-License-Identifier: Apache-2.0
// Conversions the quantised and fp16 kernels run on every element, in loops of explicit vector
// operations (vector_math.h's types; AVX-512 and AVX2 clones on x86-64), bit for bit the same
// values as the scalar definitions they replace:
//
// - RequantizeRows: gemm::Requantize (round(sum * multiplier) + zero point, halves away from
//   zero, clamped) of int32 accumulators plus a per-channel bias with per-channel multipliers. On
//   AVX-512 CPUs in float, sixteen lanes at a time, with the double definition for the lanes
//   float could decide differently (near-ties, large sums); MOCK_NNAPI_REQUANTIZE=double keeps
//   the double version (read once, for measurements).
// - HalfToFloat / FloatToHalf / RoundToHalf: common/half.h's HalfBitsToFloat and FloatToHalfBits
//   (round to nearest even, subnormals, overflow to infinity, NaN made quiet with a payload of
//   0x200) and the round trip of both, which is how relaxed float32 is emulated. On CPUs with
//   AVX-512F, all three use its conversion instructions (vcvtph2ps, vcvtps2ph), with the vectors
//   that hold NaNs fixed up to the definitions' NaNs.
//
// They rely on IEEE arithmetic in the default rounding mode, without flush-to-zero (the mock is
// built without -ffast-math).
#ifndef MOCK_NNAPI_SRC_KERNELS_VECTOR_CONVERT_H_
#define MOCK_NNAPI_SRC_KERNELS_VECTOR_CONVERT_H_

#include <cstddef>
#include <cstdint>

namespace mock_nnapi {
namespace vector_convert {

// out[r * channels + c] = Requantize(accumulators[r * channels + c] + bias[c], multipliers[c],
// zero_point, low, high) for rows [0, rows).
void RequantizeRows(const int32_t* accumulators, size_t rows, size_t channels, const int32_t* bias,
                    const double* multipliers, int32_t zero_point, int32_t low, int32_t high,
                    uint8_t* out);
void RequantizeRows(const int32_t* accumulators, size_t rows, size_t channels, const int32_t* bias,
                    const double* multipliers, int32_t zero_point, int32_t low, int32_t high,
                    int8_t* out);

// out[i] = HalfBitsToFloat(in[i]).
void HalfToFloat(const uint16_t* in, size_t count, float* out);
// out[i] = FloatToHalfBits(in[i]).
void FloatToHalf(const float* in, size_t count, uint16_t* out);
// data[i] = HalfBitsToFloat(FloatToHalfBits(data[i])).
void RoundToHalf(float* data, size_t count);

}  // namespace vector_convert
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_VECTOR_CONVERT_H_
