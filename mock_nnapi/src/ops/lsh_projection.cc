// SPDX-License-Identifier: Apache-2.0
// LSH_PROJECTION: projects an input to a bit vector by locality-sensitive hashing.
//
// Inputs: 0 hash functions, TENSOR_FLOAT32 (FL1) or TENSOR_FLOAT16 (FL3) [num_hash, num_bits],
//   num_bits <= 32: the seeds; 1 input, rank >= 1, TENSOR_FLOAT32, TENSOR_FLOAT16 (FL3),
//   TENSOR_INT32 or TENSOR_QUANT8_ASYMM: input.dims[0] items of the bytes of one sub-tensor each;
//   2 weight, optional (omitted: every item weighs 1), 1-D [input.dims[0]] of the hash functions'
//   type (DENSE without it fails the execution, as in Android); 3 INT32 type: SPARSE_DEPRECATED
//   (1), DENSE (2), SPARSE (3, FL3).
// Output: 0 TENSOR_INT32, [num_hash] for the sparse types, [num_hash * num_bits] for DENSE.
//
// bit(seed) = 1 when sum_i weight[i] * double(int64(Fingerprint64(key_i))) > 0, else 0, with
// key_i the 4 bytes of the seed as a float32 (float16 seeds are converted, as in Android)
// followed by the bytes of item i. DENSE writes bit(hash[h][b]) for every (h, b); the sparse types
// write one signature per hash function, its bits in order from the most significant, sig_h = sum_b
// bit(hash[h][b]) << (num_bits - 1 - b), plus h << num_bits for SPARSE (so that the signatures of
// different hash functions cannot collide; SPARSE_DEPRECATED omits it). Fingerprint64 is FarmHash's
// 64-bit fingerprint (the hash Android's implementation uses, so the bits agree with Android's);
// this is an implementation of it for the mock, checked against the pyfarmhash package in the
// tests. Zero-sized inputs are rejected.
#include <utility>

#include "index_helpers.h"
#include "shape_helpers.h"

namespace mock_nnapi {
namespace {

constexpr int32_t kSparseDeprecated = 1;
constexpr int32_t kDense = 2;
constexpr int32_t kSparse = 3;
constexpr uint32_t kMaxBits = 32;

// ---- FarmHash Fingerprint64 ---------------------------------------------------------------------

namespace farm {

constexpr uint64_t k0 = 0xc3a5c85c97cb3127ull;
constexpr uint64_t k1 = 0xb492b66fbe98f273ull;
constexpr uint64_t k2 = 0x9ae16a3b2f90404full;

uint64_t Fetch64(const uint8_t* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];  // little endian
  return value;
}

uint64_t Fetch32(const uint8_t* p) {
  return uint64_t{p[0]} | uint64_t{p[1]} << 8 | uint64_t{p[2]} << 16 | uint64_t{p[3]} << 24;
}

uint64_t Rotate(uint64_t value, int shift) {
  return shift == 0 ? value : (value >> shift) | (value << (64 - shift));
}

uint64_t ShiftMix(uint64_t value) { return value ^ (value >> 47); }

uint64_t HashLen16(uint64_t u, uint64_t v, uint64_t mul) {
  uint64_t a = (u ^ v) * mul;
  a ^= a >> 47;
  uint64_t b = (v ^ a) * mul;
  b ^= b >> 47;
  return b * mul;
}

uint64_t HashLen0to16(const uint8_t* s, size_t len) {
  if (len >= 8) {
    const uint64_t mul = k2 + len * 2;
    const uint64_t a = Fetch64(s) + k2;
    const uint64_t b = Fetch64(s + len - 8);
    const uint64_t c = Rotate(b, 37) * mul + a;
    const uint64_t d = (Rotate(a, 25) + b) * mul;
    return HashLen16(c, d, mul);
  }
  if (len >= 4) {
    const uint64_t mul = k2 + len * 2;
    const uint64_t a = Fetch32(s);
    return HashLen16(len + (a << 3), Fetch32(s + len - 4), mul);
  }
  if (len > 0) {
    const uint32_t y = uint32_t{s[0]} + (uint32_t{s[len >> 1]} << 8);
    const uint32_t z = static_cast<uint32_t>(len) + (uint32_t{s[len - 1]} << 2);
    return ShiftMix(y * k2 ^ z * k0) * k2;
  }
  return k2;
}

uint64_t HashLen17to32(const uint8_t* s, size_t len) {
  const uint64_t mul = k2 + len * 2;
  const uint64_t a = Fetch64(s) * k1;
  const uint64_t b = Fetch64(s + 8);
  const uint64_t c = Fetch64(s + len - 8) * mul;
  const uint64_t d = Fetch64(s + len - 16) * k2;
  return HashLen16(Rotate(a + b, 43) + Rotate(c, 30) + d, a + Rotate(b + k2, 18) + c, mul);
}

uint64_t HashLen33to64(const uint8_t* s, size_t len) {
  const uint64_t mul = k2 + len * 2;
  const uint64_t a = Fetch64(s) * k2;
  const uint64_t b = Fetch64(s + 8);
  const uint64_t c = Fetch64(s + len - 8) * mul;
  const uint64_t d = Fetch64(s + len - 16) * k2;
  const uint64_t y = Rotate(a + b, 43) + Rotate(c, 30) + d;
  const uint64_t z = HashLen16(y, a + Rotate(b + k2, 18) + c, mul);
  const uint64_t e = Fetch64(s + 16) * mul;
  const uint64_t f = Fetch64(s + 24);
  const uint64_t g = (y + Fetch64(s + len - 32)) * mul;
  const uint64_t h = (z + Fetch64(s + len - 24)) * mul;
  return HashLen16(Rotate(e + f, 43) + Rotate(g, 30) + h, e + Rotate(f + a, 18) + g, mul);
}

std::pair<uint64_t, uint64_t> WeakHashLen32WithSeeds(const uint8_t* s, uint64_t a, uint64_t b) {
  const uint64_t w = Fetch64(s);
  const uint64_t x = Fetch64(s + 8);
  const uint64_t y = Fetch64(s + 16);
  const uint64_t z = Fetch64(s + 24);
  a += w;
  b = Rotate(b + a + z, 21);
  const uint64_t c = a;
  a += x;
  a += y;
  b += Rotate(a, 44);
  return {a + z, b + c};
}

uint64_t Fingerprint64(const uint8_t* s, size_t len) {
  if (len <= 16) return HashLen0to16(s, len);
  if (len <= 32) return HashLen17to32(s, len);
  if (len <= 64) return HashLen33to64(s, len);
  const uint64_t seed = 81;
  uint64_t x = seed;
  uint64_t y = seed * k1 + 113;
  uint64_t z = ShiftMix(y * k2 + 113) * k2;
  std::pair<uint64_t, uint64_t> v = {0, 0};
  std::pair<uint64_t, uint64_t> w = {0, 0};
  x = x * k2 + Fetch64(s);
  const uint8_t* end = s + ((len - 1) / 64) * 64;
  const uint8_t* last64 = end + ((len - 1) & 63) - 63;
  do {
    x = Rotate(x + y + v.first + Fetch64(s + 8), 37) * k1;
    y = Rotate(y + v.second + Fetch64(s + 48), 42) * k1;
    x ^= w.second;
    y += v.first + Fetch64(s + 40);
    z = Rotate(z + w.first, 33) * k1;
    v = WeakHashLen32WithSeeds(s, v.second * k1, x + w.first);
    w = WeakHashLen32WithSeeds(s + 32, z + w.second, y + Fetch64(s + 16));
    std::swap(z, x);
    s += 64;
  } while (s != end);
  const uint64_t mul = k1 + ((z & 0xff) << 1);
  s = last64;
  w.first += ((len - 1) & 63);
  v.first += w.first;
  w.first += v.first;
  x = Rotate(x + y + v.first + Fetch64(s + 8), 37) * mul;
  y = Rotate(y + v.second + Fetch64(s + 48), 42) * mul;
  x ^= w.second * 9;
  y += v.first * 9 + Fetch64(s + 40);
  z = Rotate(z + w.first, 33) * mul;
  v = WeakHashLen32WithSeeds(s, v.second * mul, x + w.first);
  w = WeakHashLen32WithSeeds(s + 32, z + w.second, y + Fetch64(s + 16));
  std::swap(z, x);
  return HashLen16(HashLen16(v.first, w.first, mul) + ShiftMix(y) * k0 + z,
                   HashLen16(v.second, w.second, mul) + x, mul);
}

}  // namespace farm

// ---- The operation ------------------------------------------------------------------------------

bool HasWeight(const OperationContext& context) { return !context.IsOmitted(2); }

// prepare: also the checks Android makes only when the operation is prepared (DENSE needs
// the weight).
int InferShape(const OperationContext& context, int error, bool prepare, Dimensions* output) {
  const OperandInfo& hash = context.Input(0);
  const OperandInfo& input = context.Input(1);
  NN_CHECK_EQ(hash.rank(), 2u, error) << context.name() << " hash functions must be 2-D";
  NN_CHECK_LE(hash.dim(1), kMaxBits, error)
      << context.name() << " supports up to " << kMaxBits << " bits per hash function";
  NN_CHECK_GE(input.rank(), 1u, error) << context.name() << " input must have rank >= 1";
  const int32_t type = context.InputScalar<int32_t>(3);
  if (type == kDense && prepare) {
    NN_CHECK(HasWeight(context), error) << context.name() << " DENSE needs the weight input";
  }
  if (HasWeight(context)) {
    const OperandInfo& weight = context.Input(2);
    NN_CHECK(weight.rank() == 1 && weight.dim(0) == input.dim(0), error)
        << context.name() << " weight must have shape [" << input.dim(0) << "], not "
        << DimensionsToString(weight.dimensions);
  }
  if (type == kDense) {
    const uint64_t size = uint64_t{hash.dim(0)} * hash.dim(1);
    NN_CHECK_LE(size, uint64_t{kMaxDimension}, error) << context.name() << " output size";
    *output = {static_cast<uint32_t>(size)};
  } else {
    *output = {hash.dim(0)};
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int CheckType(const OperationContext& context, int error) {
  const int32_t type = context.InputScalar<int32_t>(3);
  NN_CHECK(type == kSparseDeprecated || type == kDense || type == kSparse, error)
      << context.name() << " type " << type
      << " is not SPARSE_DEPRECATED (1), DENSE (2) or SPARSE (3)";
  return ANEURALNETWORKS_NO_ERROR;
}

int Validate(OperationContext& context) {
  NN_RETURN_IF_ERROR(CheckOperandCounts(context, {4}, 1));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 0,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3}}));
  NN_RETURN_IF_ERROR(
      shape::CheckInputTypeLevel(context, 1,
                                 {{ANEURALNETWORKS_TENSOR_FLOAT32, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_INT32, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_QUANT8_ASYMM, kFeatureLevel1},
                                  {ANEURALNETWORKS_TENSOR_FLOAT16, kFeatureLevel3}}));
  NN_CHECK(!context.IsOmitted(0) && !context.IsOmitted(1), ANEURALNETWORKS_BAD_DATA)
      << context.name() << " hash functions and input are not optional";
  NN_CHECK_EQ(context.InputType(2), context.InputType(0), ANEURALNETWORKS_BAD_DATA)
      << context.name() << " weight must have the hash functions' type "
      << OperandTypeName(context.InputType(0)) << ", not " << OperandTypeName(context.InputType(2));
  NN_RETURN_IF_ERROR(shape::CheckScalarInput(context, 3, ANEURALNETWORKS_INT32));
  NN_CHECK_EQ(context.Output(0).type, ANEURALNETWORKS_TENSOR_INT32, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output must be TENSOR_INT32, not "
      << OperandTypeName(context.Output(0).type);
  const OperandInfo& hash = context.Input(0);
  if (hash.rank_known) {
    NN_CHECK_EQ(hash.rank(), 2u, ANEURALNETWORKS_BAD_DATA)
        << context.name() << " hash functions must be 2-D";
  }
  if (context.HasInputValue(3)) {
    NN_RETURN_IF_ERROR(CheckType(context, ANEURALNETWORKS_BAD_DATA));
    if (context.InputScalar<int32_t>(3) == kSparse) context.RequireFeatureLevel(kFeatureLevel3);
  }
  const bool weight_known = !HasWeight(context) || shape::ShapeKnown(context.Input(2));
  if (!context.HasInputValue(3) || !shape::ShapeKnown(hash) ||
      !shape::ShapeKnown(context.Input(1)) || !weight_known) {
    return ANEURALNETWORKS_NO_ERROR;
  }
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_BAD_DATA, false, &output));
  return shape::CheckDeclaredOutputShape(context, 0, output);
}

int Prepare(OperationContext& context) {
  NN_RETURN_IF_ERROR(shape::CheckNoZeroSizedInputs(context));
  NN_RETURN_IF_ERROR(CheckType(context, ANEURALNETWORKS_OP_FAILED));
  Dimensions output;
  NN_RETURN_IF_ERROR(InferShape(context, ANEURALNETWORKS_OP_FAILED, true, &output));
  return context.SetOutputShape(0, output);
}

// The sign bit of the weighted sum of the fingerprints of (seed bytes, item bytes); the seed is a
// float32 whatever the hash functions' type (as in Android's implementation).
template <typename T>
int32_t RunningSignBit(const OperationContext& context, float seed) {
  const OperandInfo& input = context.Input(1);
  const size_t items = input.dim(0);
  const size_t item_bytes =
      indexing::Product(input.dimensions, 1, input.rank()) * ElementSize(input.type);
  const T* weight = HasWeight(context) ? context.Input(2).Data<T>() : nullptr;
  std::vector<uint8_t> key(sizeof(seed) + item_bytes);
  std::memcpy(key.data(), &seed, sizeof(seed));
  double score = 0;
  for (size_t i = 0; i < items; ++i) {
    std::memcpy(key.data() + sizeof(seed), input.data + i * item_bytes, item_bytes);
    const int64_t signature = static_cast<int64_t>(farm::Fingerprint64(key.data(), key.size()));
    const double running = static_cast<double>(signature);
    score += weight == nullptr ? running : static_cast<float>(weight[i]) * running;
  }
  return score > 0 ? 1 : 0;
}

template <typename T>
void Project(OperationContext& context) {
  const OperandInfo& hash = context.Input(0);
  const uint32_t functions = hash.dim(0);
  const uint32_t bits = hash.dim(1);
  const int32_t type = context.InputScalar<int32_t>(3);
  const T* seeds = hash.Data<T>();
  int32_t* out = context.Output(0).MutableData<int32_t>();
  for (uint32_t h = 0; h < functions; ++h) {
    uint32_t signature = 0;
    for (uint32_t b = 0; b < bits; ++b) {
      const float seed = static_cast<float>(seeds[size_t{h} * bits + b]);
      const int32_t bit = RunningSignBit<T>(context, seed);
      if (type == kDense) {
        *out++ = bit;
      } else {
        signature = (signature << 1) | static_cast<uint32_t>(bit);
      }
    }
    if (type == kDense) continue;
    if (type == kSparse) signature += static_cast<uint32_t>(uint64_t{h} << bits);
    *out++ = static_cast<int32_t>(signature);
  }
}

int Execute(OperationContext& context) {
  if (context.InputType(0) == ANEURALNETWORKS_TENSOR_FLOAT16) {
    Project<Half>(context);
  } else {
    Project<float>(context);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace

NN_REGISTER_OPERATION(LSH_PROJECTION, Validate, Prepare, Execute);

}  // namespace mock_nnapi
