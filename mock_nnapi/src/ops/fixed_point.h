// SPDX-License-Identifier: Apache-2.0
// Q-format fixed-point arithmetic with the rounding rules of gemmlowp's fixedpoint.h, on which
// Android's integer LSTM (QUANTIZED_LSTM) is built; quantized_lstm.cc uses these so that its
// results are the ones Android's reference implementation produces.
//
// A value is a raw integer. A 16-bit value with m integer bits represents raw / 2^(15 - m), a
// 32-bit one raw / 2^(31 - m) ("Qm"). Additions and subtractions of raw values wrap around like
// the corresponding integer operations unless a function says it saturates.
#ifndef MOCK_NNAPI_SRC_OPS_FIXED_POINT_H_
#define MOCK_NNAPI_SRC_OPS_FIXED_POINT_H_

#include <cmath>
#include <cstdint>
#include <limits>

namespace mock_nnapi {
namespace fixed_point {

// `value` truncated to 16 bits (two's complement wrap-around).
inline int16_t Wrap16(int32_t value) { return static_cast<int16_t>(static_cast<uint16_t>(value)); }

// x / 2^exponent rounded to the nearest integer, ties away from zero; 0 <= exponent <= 31.
inline int32_t RoundingDivideByPot(int32_t x, int exponent) {
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// a * b / 2^31 rounded to nearest (ties away from zero); INT32_MIN * INT32_MIN saturates to
// INT32_MAX. The product of a Qm and a Qn value as a Q(m+n) value.
inline int32_t Mul32(int32_t a, int32_t b) {
  if (a == b && a == std::numeric_limits<int32_t>::min()) {
    return std::numeric_limits<int32_t>::max();
  }
  const int64_t product = int64_t{a} * b;
  const int64_t nudge = product >= 0 ? (int64_t{1} << 30) : 1 - (int64_t{1} << 30);
  return static_cast<int32_t>((product + nudge) / (int64_t{1} << 31));
}

// The 16-bit Mul32: a * b / 2^15 rounded, INT16_MIN * INT16_MIN saturating to INT16_MAX.
inline int16_t Mul16(int16_t a, int16_t b) {
  if (a == b && a == std::numeric_limits<int16_t>::min()) {
    return std::numeric_limits<int16_t>::max();
  }
  const int32_t product = int32_t{a} * b;
  const int32_t nudge = product >= 0 ? (1 << 14) : 1 - (1 << 14);
  return static_cast<int16_t>((product + nudge) / (1 << 15));
}

// x * 2^exponent: saturating for exponent > 0, rounding (RoundingDivideByPot) for exponent < 0.
// Moves a value between formats: a Qm value as Qn is ScaleByPot(x, m - n).
inline int32_t ScaleByPot32(int32_t x, int exponent) {
  if (exponent < 0) return RoundingDivideByPot(x, -exponent);
  if (exponent == 0) return x;
  const int32_t threshold = static_cast<int32_t>((int64_t{1} << (31 - exponent)) - 1);
  if (x > threshold) return std::numeric_limits<int32_t>::max();
  if (x < -threshold) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(int64_t{x} * (int64_t{1} << exponent));
}

inline int16_t ScaleByPot16(int16_t x, int exponent) {
  if (exponent < 0) return static_cast<int16_t>(RoundingDivideByPot(x, -exponent));
  if (exponent == 0) return x;
  const int32_t threshold = (1 << (15 - exponent)) - 1;
  if (x > threshold) return std::numeric_limits<int16_t>::max();
  if (x < -threshold) return std::numeric_limits<int16_t>::min();
  return static_cast<int16_t>(x * (1 << exponent));
}

inline int16_t SaturatingAdd16(int16_t a, int16_t b) {
  const int32_t sum = int32_t{a} + b;
  return static_cast<int16_t>(sum > 32767 ? 32767 : sum < -32768 ? -32768 : sum);
}

// (a + b) / 2 rounded to nearest, ties away from zero.
inline int16_t RoundingHalfSum16(int16_t a, int16_t b) {
  const int32_t sum = int32_t{a} + b;
  return static_cast<int16_t>((sum + (sum >= 0 ? 1 : -1)) / 2);
}

// A constant given as a 32-bit raw value, in the 16-bit format with the same integer bits.
inline int16_t Constant16(int32_t raw32) {
  return static_cast<int16_t>(RoundingDivideByPot(raw32, 16));
}

// x * multiplier * 2^(shift - 31): the requantisation of TensorFlow Lite's integer kernels
// (multiplier and shift from QuantizeMultiplier). x * 2^shift saturates for shift > 0.
inline int32_t MultiplyByQuantizedMultiplier(int32_t x, int32_t multiplier, int shift) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  const int64_t shifted = int64_t{x} * (int64_t{1} << left);
  const int32_t saturated = static_cast<int32_t>(
      shifted > std::numeric_limits<int32_t>::max()   ? std::numeric_limits<int32_t>::max()
      : shifted < std::numeric_limits<int32_t>::min() ? std::numeric_limits<int32_t>::min()
                                                      : shifted);
  return RoundingDivideByPot(Mul32(saturated, multiplier), right);
}

// real = *multiplier * 2^(*shift - 31) with *multiplier in [2^30, 2^31) (0 for 0, and for
// |real| < 2^-32, which flush to zero). False for a non-finite `real`.
inline bool QuantizeMultiplier(double real, int32_t* multiplier, int* shift) {
  *multiplier = 0;
  *shift = 0;
  if (!std::isfinite(real)) return false;
  if (real == 0) return true;
  const double fraction = std::frexp(real, shift);
  int64_t fixed = std::llround(fraction * static_cast<double>(int64_t{1} << 31));
  if (fixed == (int64_t{1} << 31)) {
    fixed /= 2;
    ++*shift;
  }
  if (*shift < -31) {
    *shift = 0;
    fixed = 0;
  }
  *multiplier = static_cast<int32_t>(fixed);
  return true;
}

// exp(a) for a Q0 value a in [-1/4, 0), as Q0 (a fourth-order expansion around -1/8).
inline int16_t ExpOnQuarterInterval16(int16_t a) {
  const int16_t exp_minus_one_eighth = Constant16(1895147668);
  const int16_t one_third = Constant16(715827883);
  const int16_t x = Wrap16(a + (1 << 12));  // a + 1/8
  const int16_t x2 = Mul16(x, x);
  const int16_t x3 = Mul16(x2, x);
  const int16_t x4 = Mul16(x2, x2);
  const int16_t x4_over_4 = ScaleByPot16(x4, -2);
  const int16_t terms =
      ScaleByPot16(Wrap16(Mul16(Wrap16(x4_over_4 + x3), one_third) + x2), -1);  // x^2/2 + ...
  return SaturatingAdd16(exp_minus_one_eighth, Mul16(exp_minus_one_eighth, Wrap16(x + terms)));
}

// exp(a) for a value a <= 0 with `integer_bits` (0..13) integer bits, as Q0 (exp(0) is the
// largest Q0 value).
inline int16_t ExpOnNegative16(int16_t a, int integer_bits) {
  const int fractional_bits = 15 - integer_bits;
  const int16_t one_quarter = static_cast<int16_t>(1 << (fractional_bits - 2));
  const int16_t a_mod_quarter = Wrap16((a & (one_quarter - 1)) - one_quarter);
  int16_t result = ExpOnQuarterInterval16(ScaleByPot16(a_mod_quarter, integer_bits));
  const int16_t remainder = Wrap16(a_mod_quarter - a);
  // exp(-2^k) for k = -2 .. 4, as 32-bit Q0 raw values.
  static constexpr int32_t kExpMinusPowersOfTwo[] = {1672461947, 1302514674, 790015084, 290630308,
                                                     39332535,   720401,     242};
  for (int k = -2; k <= 4; ++k) {
    if (integer_bits <= k) continue;
    if ((remainder & (1 << (fractional_bits + k))) != 0) {
      result = Mul16(result, Constant16(kExpMinusPowersOfTwo[k + 2]));
    }
  }
  if (integer_bits > 5) {
    const int16_t minus_32 = Constant16(-(1 << (36 - integer_bits)));
    if (a < minus_32) result = 0;
  }
  return a == 0 ? std::numeric_limits<int16_t>::max() : result;
}

// 1 / (1 + a) (`minus` false) or (1 - a) / (1 + a) (`minus` true) for a Q0 value a in [0, 1), as
// Q0: three Newton-Raphson steps on the half denominator, in Q2.
inline int16_t ReciprocalOnePlus16(int16_t a, bool minus) {
  const int16_t half_denominator = RoundingHalfSum16(a, std::numeric_limits<int16_t>::max());
  const int16_t c48_over_17 = Constant16(1515870810);    // Q2
  const int16_t cm32_over_17 = Constant16(-1010580540);  // Q2
  constexpr int16_t kOneQ2 = 1 << 13;
  int16_t x = Wrap16(c48_over_17 + Mul16(half_denominator, cm32_over_17));
  for (int i = 0; i < 3; ++i) {
    const int16_t one_minus = Wrap16(kOneQ2 - Mul16(half_denominator, x));
    x = Wrap16(x + ScaleByPot16(Mul16(x, one_minus), 2));
  }
  // x is 1 / half_denominator = 2 / (1 + a) in Q2.
  return minus ? ScaleByPot16(Wrap16(x - kOneQ2), 2) : ScaleByPot16(x, 1);
}

// logistic(a) = 1 / (1 + exp(-a)) for a value with `integer_bits` (0..13) integer bits, as Q0.
inline int16_t Logistic16(int16_t a, int integer_bits) {
  if (a == 0) return 1 << 14;
  const int16_t magnitude = a > 0 ? a : Wrap16(-a);
  const int16_t positive = ReciprocalOnePlus16(ExpOnNegative16(Wrap16(-magnitude), integer_bits),
                                               /*minus=*/false);
  return a > 0 ? positive : Wrap16(std::numeric_limits<int16_t>::max() - positive);
}

// tanh(a) for a value with `integer_bits` (0..12) integer bits, as Q0.
inline int16_t Tanh16(int16_t a, int integer_bits) {
  if (a == 0) return 0;
  const int16_t negative = a < 0 ? a : Wrap16(-a);
  // exp(2 * negative): the same raw value read with one more integer bit.
  const int16_t t =
      ReciprocalOnePlus16(ExpOnNegative16(negative, integer_bits + 1), /*minus=*/true);
  return a < 0 ? Wrap16(-t) : t;
}

// 1 / sqrt(value) for value >= 0 as a multiplier and a (non-positive) shift such that
// MultiplyByQuantizedMultiplier(x, *multiplier, *shift) is about x / sqrt(value): five
// Newton-Raphson steps in Q3 from 1 (Android's layer normalisation). Values 0 and 1 give the
// largest multiplier and shift 0 (x unchanged).
inline void InverseSqrtMultiplier(int32_t value, int32_t* multiplier, int* shift) {
  if (value <= 1) {
    *multiplier = std::numeric_limits<int32_t>::max();
    *shift = 0;
    return;
  }
  int right_shift = 11;
  while (value >= (1 << 29)) {
    value /= 4;
    ++right_shift;
  }
  int leading_zeros = 0;
  for (uint32_t v = static_cast<uint32_t>(value); (v & 0x80000000u) == 0; v <<= 1) ++leading_zeros;
  const int pairs = (leading_zeros - 1) / 2 - 1;
  right_shift -= pairs;
  value <<= 2 * pairs;
  const int32_t half_input = RoundingDivideByPot(value >> 1, 1);  // value / 2 in Q3
  const int32_t three_halves = (1 << 28) + (1 << 27);             // 1.5 in Q3
  int32_t x = 1 << 28;                                            // 1 in Q3
  for (int i = 0; i < 5; ++i) {
    const int32_t x3 = ScaleByPot32(Mul32(Mul32(x, x), x), 6);
    const int64_t difference = int64_t{Mul32(three_halves, x)} - Mul32(half_input, x3);
    x = ScaleByPot32(static_cast<int32_t>(difference), 3);
  }
  x = Mul32(x, 1518500250);  // * sqrt(2) / 2
  if (right_shift < 0) {
    x = static_cast<int32_t>(static_cast<uint32_t>(x) << -right_shift);
    right_shift = 0;
  }
  *multiplier = x;
  *shift = -right_shift;
}

}  // namespace fixed_point
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_OPS_FIXED_POINT_H_
