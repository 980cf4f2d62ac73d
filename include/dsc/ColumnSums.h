//===- ColumnSums.h - How dsrun sums a matrix over its rows -----*- C++ -*-===//
//
// Bias gradients and norm weight gradients sum a [Rows, Cols] matrix over
// its rows. dsrun does it in two passes so that the whole GPU works on it
// and the result does not depend on scheduling: the rows are cut into at
// most MaxColumnChunks chunks, each chunk's column sums land in a
// workspace, and a second pass adds the chunks' sums in order. The planner
// reserves that workspace, so both sides compute it here.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_COLUMNSUMS_H
#define DSC_COLUMNSUMS_H

#include <cstdint>
#include <vector>

namespace dsc {

constexpr int64_t MinColumnChunkRows = 64;
constexpr int64_t MaxColumnChunks = 128;

/// Rows per chunk: at least MinColumnChunkRows, at most MaxColumnChunks
/// chunks.
inline int64_t columnChunkRows(int64_t Rows) {
  int64_t Even = (Rows + MaxColumnChunks - 1) / MaxColumnChunks;
  return Even > MinColumnChunkRows ? Even : MinColumnChunkRows;
}

inline int64_t columnChunks(int64_t Rows) {
  int64_t Per = columnChunkRows(Rows);
  return (Rows + Per - 1) / Per;
}

/// Workspace bytes for Sums column sums of a [Rows, Cols] matrix: one fp32
/// partial per chunk and column and sum; none when one chunk holds every
/// row (the first pass writes the result itself).
inline uint64_t columnSumWorkspace(int64_t Rows, int64_t Cols, int Sums) {
  int64_t Chunks = columnChunks(Rows);
  return Chunks <= 1 ? 0 : uint64_t(Chunks) * uint64_t(Cols) * 4 * Sums;
}

/// Whether a reduction over the dims in Mask (bit D: dim D is summed) of a
/// tensor of Shape and Strides (in elements) sums a row-major [Rows, Cols]
/// matrix over its rows: the summed dims lead, and the tensor is dense.
/// Sets Rows and Cols when it does.
inline bool reducesLeadingRows(const std::vector<int64_t> &Shape,
                               const std::vector<int64_t> &Strides,
                               int64_t Mask, int64_t &Rows, int64_t &Cols) {
  int64_t Rank = int64_t(Shape.size()), Expected = 1;
  if (Rank == 0 || int64_t(Strides.size()) != Rank)
    return false;
  for (int64_t D = Rank - 1; D >= 0; --D) {
    if (Shape[D] != 1 && Strides[D] != Expected)
      return false;
    Expected *= Shape[D];
  }
  Rows = 1, Cols = 1;
  bool Summing = true;
  for (int64_t D = 0; D < Rank; ++D) {
    bool Summed = Mask >> D & 1;
    if (Summed && !Summing)
      return false; // A summed dim after a kept one.
    Summing = Summed;
    (Summed ? Rows : Cols) *= Shape[D];
  }
  return true;
}

} // namespace dsc

#endif
