// SPDX-License-Identifier: Apache-2.0
// What the mock's own GEMMs (packed_gemm on floats, int8_gemm on quantised bytes) share:
// - RowSource: the left-hand side A read row by row where it lies, a row-major matrix or a
//   convolution's receptive fields in the input itself (conv_2d.cc's ReceptiveFieldsOf), so
//   neither GEMM needs an im2col copy;
// - JobGrid: a product shared out over the pool as blocks of A's rows times groups of B's column
//   panels (each GEMM chooses its block sizes; the grid and the grouping rule are the same).
#ifndef MOCK_NNAPI_SRC_KERNELS_GEMM_BLOCKS_H_
#define MOCK_NNAPI_SRC_KERNELS_GEMM_BLOCKS_H_

#include <algorithm>
#include <cstddef>

namespace mock_nnapi {
namespace gemm {

// Most rows of A a RowSource is asked for at once.
constexpr size_t kMaxBlockRows = 8;

// A, row by row: row i is the concatenation, for s = 0 .. segments - 1, of the segment_length
// elements at row(i) + offsets[s]. A convolution's receptive fields read in place (one segment
// per filter row), or a row-major matrix (one segment).
template <typename T>
class RowSource {
 public:
  RowSource(size_t segments, size_t segment_length)
      : segments_(segments), segment_length_(segment_length) {}
  virtual ~RowSource() = default;
  size_t segments() const { return segments_; }
  size_t segment_length() const { return segment_length_; }
  size_t depth() const { return segments_ * segment_length_; }
  // Writes the pointers of rows [first, first + count) (count <= kMaxBlockRows) to rows[] and
  // returns the segment offsets that apply to all of them. `scratch` has room for count * depth()
  // elements, for rows the source assembles (e.g. receptive fields crossing the padding). Called
  // from several threads at once.
  virtual const size_t* Rows(size_t first, size_t count, T* scratch, const T** rows) const = 0;

 private:
  size_t segments_;
  size_t segment_length_;
};

// A row-major matrix (row i at a + i * lda, k elements) as a RowSource: one segment.
template <typename T>
class StridedRows final : public RowSource<T> {
 public:
  StridedRows(const T* a, size_t lda, size_t k) : RowSource<T>(1, k), a_(a), lda_(lda) {}
  const size_t* Rows(size_t first, size_t count, T*, const T** rows) const override {
    static constexpr size_t kZero = 0;
    for (size_t i = 0; i < count; ++i) rows[i] = a_ + (first + i) * lda_;
    return &kZero;
  }

 private:
  const T* a_;
  size_t lda_;
};

inline size_t DivideRoundingUp(size_t a, size_t b) { return (a + b - 1) / b; }

// Panels per job when `row_blocks` blocks of rows alone make fewer jobs than `wanted_jobs`: the
// panels are grouped so that blocks times groups reach about that many (a few jobs per thread
// balance a loaded machine). Products of at most `few_rows` rows run several panels per kernel
// call (`max_panels`): their groups stay whole multiples of it.
inline size_t GroupPanels(size_t panels, size_t row_blocks, size_t wanted_jobs, bool few_rows,
                          size_t max_panels) {
  if (panels == 0 || row_blocks >= wanted_jobs) return std::max<size_t>(panels, 1);
  size_t group =
      DivideRoundingUp(panels, std::min(panels, DivideRoundingUp(wanted_jobs, row_blocks)));
  if (few_rows) group = DivideRoundingUp(group, max_panels) * max_panels;
  return group;
}

// Jobs of a product of m rows and `panels` column panels: job j covers rows
// [row_begin, row_end) and panels [panel_begin, panel_end), row blocks outer.
class JobGrid {
 public:
  struct Job {
    size_t row_begin, row_end;
    size_t panel_begin, panel_end;
  };
  JobGrid(size_t m, size_t block_rows, size_t panels, size_t group_panels)
      : m_(m),
        block_rows_(block_rows),
        panels_(panels),
        group_panels_(group_panels),
        groups_(DivideRoundingUp(panels, group_panels)),
        jobs_(DivideRoundingUp(m, block_rows) * groups_) {}
  size_t jobs() const { return jobs_; }
  size_t group_panels() const { return group_panels_; }
  Job operator[](size_t job) const {
    Job j;
    j.row_begin = job / groups_ * block_rows_;
    j.row_end = std::min(m_, j.row_begin + block_rows_);
    j.panel_begin = job % groups_ * group_panels_;
    j.panel_end = std::min(panels_, j.panel_begin + group_panels_);
    return j;
  }

 private:
  size_t m_;
  size_t block_rows_;
  size_t panels_;
  size_t group_panels_;
  size_t groups_;
  size_t jobs_;
};

}  // namespace gemm
}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_KERNELS_GEMM_BLOCKS_H_
