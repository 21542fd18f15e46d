// SPDX-License-Identifier: Apache-2.0
// int8_gemm's portable micro-kernel (int8_gemm_microkernels.h), built for every target.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "int8_gemm_microkernels.h"

namespace mock_nnapi {
namespace int8_gemm {
namespace microkernels {
namespace {

// ---- Portable: 4 rows x 32 columns, int32 (unsigned, wrapping) --------------------------------
template <bool kSignedInput, int R>
void PortableRows(const Block& b) {
  using X = typename std::conditional<kSignedInput, int8_t, uint8_t>::type;
  using W = typename std::conditional<kSignedInput, uint8_t, int8_t>::type;
  uint32_t acc[R][kPanelWidth] = {};
  const uint8_t* bp = b.panel + kHeaderBytes;
  auto step = [&](const uint32_t* x) {
    W w[kGroupBytes];
    std::memcpy(w, bp, kGroupBytes);
    for (int r = 0; r < R; ++r) {
      X xs[4];
      std::memcpy(xs, &x[r], 4);
      for (size_t j = 0; j < kPanelWidth; ++j) {
        int32_t sum = 0;
        for (int t = 0; t < 4; ++t) sum += int32_t{xs[t]} * int32_t{w[4 * j + t]};
        acc[r][j] += static_cast<uint32_t>(sum);
      }
    }
    bp += kGroupBytes;
  };
  for (size_t s = 0; s < b.segments; ++s) {
    const uint8_t* x_rows[R];
    for (int r = 0; r < R; ++r) x_rows[r] = b.rows[r] + b.offsets[s];
    uint32_t x[R];
    for (size_t g = 0; g < b.full_groups; ++g) {
      for (int r = 0; r < R; ++r) x[r] = LoadGroup(x_rows[r] + 4 * g);
      step(x);
    }
    if (b.tail > 0) {
      for (int r = 0; r < R; ++r) x[r] = LoadTail(x_rows[r] + 4 * b.full_groups, b.tail);
      step(x);
    }
  }
  int32_t terms[kPanelWidth];
  std::memcpy(terms, b.panel, kHeaderBytes);
  for (int r = 0; r < R; ++r) {
    int32_t* out = b.c + r * b.ldc;
    for (size_t j = 0; j < b.cols; ++j) {
      out[j] = static_cast<int32_t>(acc[r][j] + static_cast<uint32_t>(terms[j]) +
                                    static_cast<uint32_t>(RowTerm(b, r)));
    }
  }
}

}  // namespace

template <bool kSignedInput>
void PortableKernel(const Block& b) {
  switch (b.row_count) {
    case 1:
      return PortableRows<kSignedInput, 1>(b);
    case 2:
      return PortableRows<kSignedInput, 2>(b);
    case 3:
      return PortableRows<kSignedInput, 3>(b);
    default:
      return PortableRows<kSignedInput, 4>(b);
  }
}

template void PortableKernel<true>(const Block& b);
template void PortableKernel<false>(const Block& b);

}  // namespace microkernels
}  // namespace int8_gemm
}  // namespace mock_nnapi
