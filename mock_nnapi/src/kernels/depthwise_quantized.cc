// SPDX-License-Identifier: Apache-2.0
// The quantised DEPTHWISE_CONV_2D kernel (see depthwise_quantized.h). No operation is
// registered here.
#include "depthwise_quantized.h"

#include <algorithm>
#include <cstring>

#include "../ops/gemm.h"
#include "scratch.h"
#include "vector_convert.h"
#include "vector_math.h"

namespace mock_nnapi {
namespace depthwise_quantized {
namespace {

// Clones of the tile kernel: its int16 -> int32 widening multiply-adds have 512-bit forms only
// with AVX-512BW (part of x86-64-v4). Integer arithmetic: every clone gives the same sums.
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define MOCK_NNAPI_DEPTHWISE_INT16_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef MOCK_NNAPI_DEPTHWISE_INT16_CLONES
#define MOCK_NNAPI_DEPTHWISE_INT16_CLONES
#endif

// The receptive rows of a tile take at most about this many bytes (they stay in the core's L2
// cache while every output row of the tile reads them).
constexpr size_t kTileBufferBytes = size_t{192} << 10;

// One tile: output rows [oy0, oy1) of image n, output channels [oc0, oc1).
struct Tile {
  size_t n, oy0, oy1, oc0, oc1;
};

// Sizes shared by every tile of a run.
struct Plan {
  size_t padded_width;  // input columns a row's windows span, padding included
  size_t tile_rows;     // output rows per tile
  size_t row_tiles;     // tiles per image and channel group
  size_t groups;        // channel groups
  size_t Tiles(const Geometry& g) const { return size_t{g.batches} * row_tiles * groups; }
  Tile At(const Geometry& g, size_t index) const {
    const size_t group = index % groups;
    const size_t row_tile = (index / groups) % row_tiles;
    const size_t n = index / (groups * row_tiles);
    const size_t oy0 = row_tile * tile_rows;
    const size_t oc0 = group * kChannelGroup;
    return {n, oy0, std::min<size_t>(g.out_height, oy0 + tile_rows), oc0,
            std::min(g.out_channels(), oc0 + kChannelGroup)};
  }
};

size_t RoundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

Plan MakePlan(const Geometry& g) {
  Plan plan;
  plan.padded_width =
      size_t{g.out_width - 1} * g.stride_w + size_t{g.filter_width - 1} * g.dilation_w + 1;
  plan.groups = (g.out_channels() + kChannelGroup - 1) / kChannelGroup;
  const size_t widest = RoundUp(std::min(g.out_channels(), kChannelGroup), kLanes);
  const size_t row_bytes = plan.padded_width * widest * sizeof(int16_t);
  const size_t window_rows = size_t{g.filter_height - 1} * g.dilation_h + 1;
  // Output rows whose receptive rows fit the budget (at least one).
  const size_t fitting_rows = kTileBufferBytes / std::max<size_t>(row_bytes, 1);
  size_t rows = fitting_rows > window_rows ? (fitting_rows - window_rows) / g.stride_h + 1 : 1;
  // At least eight tiles where the map allows, so that the pool's threads share the work.
  const size_t others = size_t{g.batches} * plan.groups;
  const size_t wanted_row_tiles = others >= 8 ? 1 : (8 + others - 1) / others;
  rows =
      std::min(rows, std::max<size_t>(1, (g.out_height + wanted_row_tiles - 1) / wanted_row_tiles));
  plan.tile_rows = std::max<size_t>(1, rows);
  plan.row_tiles = (g.out_height + plan.tile_rows - 1) / plan.tile_rows;
  return plan;
}

// buffer[(r * padded_width + j) * padded + c] = input[n, iy0 + r, j - pad_left, (oc0 + c) /
// multiplier] - zero_point for the input pixels, 0 for the padding (pixels outside the input and
// channels [oc1 - oc0, padded)).
template <typename Q>
MOCK_NNAPI_INLINE void FillRows(const Geometry& g, const Plan& plan, const Q* __restrict__ input,
                                int16_t zero_point, const Tile& tile, int64_t iy0, size_t row_count,
                                size_t padded, int16_t* __restrict__ buffer) {
  const size_t count = tile.oc1 - tile.oc0;
  const size_t row_elements = plan.padded_width * padded;
  for (size_t r = 0; r < row_count; ++r) {
    int16_t* __restrict__ row = buffer + r * row_elements;
    const int64_t iy = iy0 + static_cast<int64_t>(r);
    if (iy < 0 || iy >= g.in_height) {
      std::memset(row, 0, row_elements * sizeof(int16_t));
      continue;
    }
    const Q* source_row = input + (tile.n * g.in_height + size_t(iy)) * g.in_width * g.in_channels;
    for (size_t j = 0; j < plan.padded_width; ++j) {
      int16_t* __restrict__ to = row + j * padded;
      const int64_t ix = static_cast<int64_t>(j) - g.pad_left;
      if (ix < 0 || ix >= g.in_width) {
        std::memset(to, 0, padded * sizeof(int16_t));
        continue;
      }
      const Q* __restrict__ from = source_row + size_t(ix) * g.in_channels;
      if (g.multiplier == 1) {
        from += tile.oc0;
        for (size_t c = 0; c < count; ++c) {
          to[c] = static_cast<int16_t>(static_cast<int16_t>(from[c]) - zero_point);
        }
      } else {
        for (size_t c = 0; c < count; ++c) {
          const int16_t value = static_cast<int16_t>(from[(tile.oc0 + c) / g.multiplier]);
          to[c] = static_cast<int16_t>(value - zero_point);
        }
      }
      for (size_t c = count; c < padded; ++c) to[c] = 0;
    }
  }
}

// Two int16 channels per int32 lane: lane j of a vector loaded from channels [c, c + 2 * lanes)
// holds channel c + 2j in its low half and c + 2j + 1 in its high half. The multiply-adds work on
// the two halves sign-extended in place (shifts), so the even and the odd channels accumulate in
// two vectors of int32 sums that are interleaved back into channel order once per pixel: no
// widening shuffles in the tap loop. 16 lanes (32 channels) or 8 lanes (16 channels).
typedef int32_t Int16V __attribute__((vector_size(64), aligned(4), may_alias));
typedef uint32_t Uint16V __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t Int8V __attribute__((vector_size(32), aligned(4), may_alias));
typedef uint32_t Uint8V __attribute__((vector_size(32), aligned(4), may_alias));

// The vector types of a lane count (a typedef's attributes are lost when it is a template
// argument, so templates take the lane count).
template <int kHalf>
struct Vectors;
template <>
struct Vectors<16> {
  typedef Int16V I;
  typedef Uint16V U;
};
template <>
struct Vectors<8> {
  typedef Int8V I;
  typedef Uint8V U;
};

MOCK_NNAPI_INLINE void Interleave(const Int16V& even, const Int16V& odd, int32_t* out) {
  const Int16V low =
      __builtin_shufflevector(even, odd, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const Int16V high = __builtin_shufflevector(even, odd, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13,
                                              29, 14, 30, 15, 31);
  std::memcpy(out, &low, sizeof(low));
  std::memcpy(out + 16, &high, sizeof(high));
}
MOCK_NNAPI_INLINE void Interleave(const Int8V& even, const Int8V& odd, int32_t* out) {
  const Int8V low = __builtin_shufflevector(even, odd, 0, 8, 1, 9, 2, 10, 3, 11);
  const Int8V high = __builtin_shufflevector(even, odd, 4, 12, 5, 13, 6, 14, 7, 15);
  std::memcpy(out, &low, sizeof(low));
  std::memcpy(out + 8, &high, sizeof(high));
}

// sums[ox * padded + c + i] = sum over taps t of taps[t][ox * step + c + i] * the filter of tap
// t, channel c + i, for the output columns [first, width) and the channels of one block (2 * lanes
// of kHalf). The filter block of tap t is at filter + t * filter_stride + c: the even channels'
// int32 values, then the odd ones' (PrepareFilter's layout).
template <int kHalf>
MOCK_NNAPI_INLINE void SumBlock(const int16_t* const* taps, size_t tap_count,
                                const int32_t* __restrict__ filter, size_t filter_stride,
                                size_t first, size_t width, size_t step, size_t padded, size_t c,
                                int32_t* __restrict__ sums) {
  typedef typename Vectors<kHalf>::I I;
  typedef typename Vectors<kHalf>::U U;
  for (size_t ox = first; ox < width; ++ox) {
    I even = {}, odd = {};
    for (size_t t = 0; t < tap_count; ++t) {
      I x, f_even, f_odd;
      std::memcpy(&x, taps[t] + ox * step + c, sizeof(x));
      const int32_t* f = filter + t * filter_stride + c;
      std::memcpy(&f_even, f, sizeof(f_even));
      std::memcpy(&f_odd, f + kHalf, sizeof(f_odd));
      const I x_even = reinterpret_cast<I>(reinterpret_cast<U>(x) << 16) >> 16;
      const I x_odd = x >> 16;
      even += x_even * f_even;
      odd += x_odd * f_odd;
    }
    Interleave(even, odd, sums + ox * padded + c);
  }
}

// SumBlock for four adjacent output columns at a time, for a filter width KW, horizontal stride S
// and dilation 1 (`taps`: every tap, row by row): per filter row, the
// 3 * S + KW input columns the four windows share are loaded and split once, and each filter
// vector once, for 4 * KW multiply-adds (instead of a load and a split per multiply-add). The
// columns left over take SumBlock.
template <int kHalf, int KW, int S>
MOCK_NNAPI_INLINE void SumBlockFour(const int16_t* const* taps, size_t filter_rows,
                                    const int32_t* __restrict__ filter, size_t filter_stride,
                                    size_t width, size_t padded, size_t c,
                                    int32_t* __restrict__ sums) {
  typedef typename Vectors<kHalf>::I I;
  typedef typename Vectors<kHalf>::U U;
  constexpr int kColumns = 3 * S + KW;
  size_t ox = 0;
  for (; ox + 4 <= width; ox += 4) {
    I even[4] = {}, odd[4] = {};
    for (size_t ky = 0; ky < filter_rows; ++ky) {
      const int16_t* row = taps[ky * KW] + ox * S * padded + c;
      I x_even[kColumns], x_odd[kColumns];
      for (int j = 0; j < kColumns; ++j) {
        I x;
        std::memcpy(&x, row + j * padded, sizeof(x));
        x_even[j] = reinterpret_cast<I>(reinterpret_cast<U>(x) << 16) >> 16;
        x_odd[j] = x >> 16;
      }
      for (int kx = 0; kx < KW; ++kx) {
        const int32_t* f = filter + (ky * KW + kx) * filter_stride + c;
        I f_even, f_odd;
        std::memcpy(&f_even, f, sizeof(f_even));
        std::memcpy(&f_odd, f + kHalf, sizeof(f_odd));
        for (int i = 0; i < 4; ++i) {
          even[i] += x_even[i * S + kx] * f_even;
          odd[i] += x_odd[i * S + kx] * f_odd;
        }
      }
    }
    for (int i = 0; i < 4; ++i) Interleave(even[i], odd[i], sums + (ox + i) * padded + c);
  }
  if (ox < width) {
    SumBlock<kHalf>(taps, filter_rows * KW, filter, filter_stride, ox, width, S * padded, padded, c,
                    sums);
  }
}

// Every block of a tile's `padded` channels (a multiple of 16): 32 at a time, then 16. `kernel`
// picks SumBlockFour's filter width and stride (0: SumBlock).
template <int kHalf>
MOCK_NNAPI_INLINE void SumAnyBlock(int kernel, const int16_t* const* taps, size_t tap_count,
                                   size_t filter_rows, const int32_t* filter, size_t filter_stride,
                                   size_t width, size_t step, size_t padded, size_t c,
                                   int32_t* sums) {
  switch (kernel) {
    case 1:
      SumBlockFour<kHalf, 3, 1>(taps, filter_rows, filter, filter_stride, width, padded, c, sums);
      return;
    case 2:
      SumBlockFour<kHalf, 3, 2>(taps, filter_rows, filter, filter_stride, width, padded, c, sums);
      return;
    case 3:
      SumBlockFour<kHalf, 5, 1>(taps, filter_rows, filter, filter_stride, width, padded, c, sums);
      return;
    case 4:
      SumBlockFour<kHalf, 5, 2>(taps, filter_rows, filter, filter_stride, width, padded, c, sums);
      return;
    default:
      SumBlock<kHalf>(taps, tap_count, filter, filter_stride, 0, width, step, padded, c, sums);
  }
}

MOCK_NNAPI_INLINE void SumRow(int kernel, const int16_t* const* taps, size_t tap_count,
                              size_t filter_rows, const int32_t* filter, size_t filter_stride,
                              size_t width, size_t step, size_t padded, int32_t* sums) {
  size_t c = 0;
  for (; c + 32 <= padded; c += 32) {
    SumAnyBlock<16>(kernel, taps, tap_count, filter_rows, filter, filter_stride, width, step,
                    padded, c, sums);
  }
  if (c < padded) {
    SumAnyBlock<8>(kernel, taps, tap_count, filter_rows, filter, filter_stride, width, step, padded,
                   c, sums);
  }
}

// Per-thread buffers, kept between runs (not zero-filled: FillRows and SumRow write all they use).
struct Scratch {
  conv::ScratchArray<int16_t> rows;
  conv::ScratchArray<int32_t> sums;
  conv::ScratchArray<const int16_t*> taps;
};

template <typename Q>
MOCK_NNAPI_INLINE void TileImpl(const Geometry& g, const Plan& plan, const Q* input,
                                int16_t zero_point, const PreparedFilter& filter,
                                const conv::Requantization<Q>& requantization, const Tile& tile,
                                Q* output) {
  thread_local Scratch scratch;
  const size_t count = tile.oc1 - tile.oc0;
  const size_t padded = RoundUp(count, kLanes);
  const int64_t iy0 = static_cast<int64_t>(tile.oy0) * g.stride_h - g.pad_top;
  const size_t row_count =
      (tile.oy1 - tile.oy0 - 1) * g.stride_h + size_t{g.filter_height - 1} * g.dilation_h + 1;
  int16_t* rows = scratch.rows.Get(row_count * plan.padded_width * padded);
  int32_t* sums = scratch.sums.Get(size_t{g.out_width} * padded);
  const size_t tap_count = size_t{g.filter_height} * g.filter_width;
  const int16_t** taps = scratch.taps.Get(tap_count);
  FillRows(g, plan, input, zero_point, tile, iy0, row_count, padded, rows);
  const size_t out_channels = g.out_channels();
  const int32_t* weights = filter.values.data() + tile.oc0;
  const size_t step = size_t(g.stride_w) * padded;
  // SumBlockFour's filter widths and strides (dilation 1), 0 for none.
  const int kw = static_cast<int>(g.filter_width);
  int kernel = 0;
  if (g.dilation_w == 1 && (kw == 3 || kw == 5) && (g.stride_w == 1 || g.stride_w == 2)) {
    kernel = (kw == 3 ? 1 : 3) + (g.stride_w == 2 ? 1 : 0);
  }
  for (size_t oy = tile.oy0; oy < tile.oy1; ++oy) {
    const size_t first_row = (oy - tile.oy0) * g.stride_h;
    for (uint32_t ky = 0; ky < g.filter_height; ++ky) {
      const int16_t* row =
          rows + (first_row + size_t{ky} * g.dilation_h) * plan.padded_width * padded;
      for (uint32_t kx = 0; kx < g.filter_width; ++kx) {
        taps[size_t{ky} * g.filter_width + kx] = row + size_t{kx} * g.dilation_w * padded;
      }
    }
    SumRow(kernel, taps, tap_count, g.filter_height, weights, filter.padded_channels, g.out_width,
           step, padded, sums);
    Q* out = output + (tile.n * g.out_height + oy) * g.out_width * out_channels;
    if (count == out_channels && padded == count) {
      vector_convert::RequantizeRows(sums, g.out_width, count, requantization.bias,
                                     requantization.multipliers.data(), requantization.zero_point,
                                     requantization.low, requantization.high, out);
      continue;
    }
    for (size_t ox = 0; ox < g.out_width; ++ox) {
      vector_convert::RequantizeRows(sums + ox * padded, 1, count, requantization.bias + tile.oc0,
                                     requantization.multipliers.data() + tile.oc0,
                                     requantization.zero_point, requantization.low,
                                     requantization.high, out + ox * out_channels + tile.oc0);
    }
  }
}

MOCK_NNAPI_DEPTHWISE_INT16_CLONES
void RunTile(const Geometry& g, const Plan& plan, const uint8_t* input, int16_t zero_point,
             const PreparedFilter& filter, const conv::Requantization<uint8_t>& requantization,
             const Tile& tile, uint8_t* output) {
  TileImpl(g, plan, input, zero_point, filter, requantization, tile, output);
}

MOCK_NNAPI_DEPTHWISE_INT16_CLONES
void RunTile(const Geometry& g, const Plan& plan, const int8_t* input, int16_t zero_point,
             const PreparedFilter& filter, const conv::Requantization<int8_t>& requantization,
             const Tile& tile, int8_t* output) {
  TileImpl(g, plan, input, zero_point, filter, requantization, tile, output);
}

template <typename Q>
void RunImpl(const Geometry& g, const Q* input, int32_t input_zero_point,
             const PreparedFilter& filter, const conv::Requantization<Q>& requantization,
             Q* output) {
  const Plan plan = MakePlan(g);
  const size_t cost = plan.tile_rows * g.out_width * g.filter_height * g.filter_width *
                      std::min(g.out_channels(), kChannelGroup);
  const int16_t zero_point = static_cast<int16_t>(input_zero_point);
  gemm::ParallelFor(plan.Tiles(g), cost, [&](size_t begin, size_t end) {
    for (size_t index = begin; index < end; ++index) {
      RunTile(g, plan, input, zero_point, filter, requantization, plan.At(g, index), output);
    }
  });
}

// The position of channel c in the prepared filter's row (see SumBlock): blocks of 32 channels,
// then one of 16, each holding its even channels, then its odd ones.
size_t FilterPosition(size_t c, size_t padded) {
  const size_t block = c / 32 * 32;
  const size_t width = block + 32 <= padded ? 32 : 16;
  const size_t start = block + (c - block) / width * width;
  const size_t i = c - start;
  return start + (i % 2) * (width / 2) + i / 2;
}

template <typename Q>
void FillFilter(const Q* values, int32_t zero_point, size_t taps, size_t channels,
                PreparedFilter* prepared) {
  const size_t padded = prepared->padded_channels;
  for (size_t t = 0; t < taps; ++t) {
    for (size_t c = 0; c < channels; ++c) {
      prepared->values[t * padded + FilterPosition(c, padded)] =
          int32_t{values[t * channels + c]} - zero_point;
    }
  }
}

}  // namespace

PreparedFilter PrepareFilter(const OperandInfo& input, const OperandInfo& filter,
                             const OperandInfo& output) {
  const size_t channels = filter.dim(3);
  const size_t taps = size_t{filter.dim(1)} * filter.dim(2);
  PreparedFilter prepared;
  prepared.padded_channels = RoundUp(channels, kLanes);
  prepared.values.assign(taps * prepared.padded_channels, 0);
  if (filter.type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM) {
    FillFilter(filter.Data<uint8_t>(), filter.zero_point, taps, channels, &prepared);
  } else {  // TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT8_SYMM_PER_CHANNEL (zero point 0)
    FillFilter(filter.Data<int8_t>(), filter.zero_point, taps, channels, &prepared);
  }
  prepared.multipliers =
      conv::OutputMultipliers(input, filter, output, static_cast<uint32_t>(channels));
  return prepared;
}

bool SumsFitInt32(const Geometry& g, const OperandInfo& input, const OperandInfo& filter) {
  const double taps = static_cast<double>(g.filter_height) * g.filter_width;
  return taps * conv::MaxAbsOffset(input) * conv::MaxAbsOffset(filter) < 2147483648.0;
}

void Run(const Geometry& g, const uint8_t* input, int32_t input_zero_point,
         const PreparedFilter& filter, const conv::Requantization<uint8_t>& requantization,
         uint8_t* output) {
  RunImpl(g, input, input_zero_point, filter, requantization, output);
}

void Run(const Geometry& g, const int8_t* input, int32_t input_zero_point,
         const PreparedFilter& filter, const conv::Requantization<int8_t>& requantization,
         int8_t* output) {
  RunImpl(g, input, input_zero_point, filter, requantization, output);
}

}  // namespace depthwise_quantized
}  // namespace mock_nnapi
