//===- Gemms.h - The GEMMs synthetic compute runs for an op -----*- C++ -*-===//
//
// Synthetic compute times each op by cuBLAS GEMMs of its real shapes.
// dsrun runs them in the step; dsrun-bench runs the same ones beside raw
// NCCL, so that an overlapped collective can be compared with NCCL under
// the same load.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_GEMMS_H
#define DSRUN_GEMMS_H

#include "Layout.h"

#include <cublas_v2.h>

#include <vector>

namespace dsrun {

/// Where the GEMMs read and write: inputs from the start of the arena,
/// outputs into the workspace. Timing only; the values mean nothing.
struct GemmArea {
  const void *Inputs = nullptr;
  uint64_t InputBytes = 0;
  void *Output = nullptr;
  uint64_t OutputBytes = 0;
  ElementType Type = ElementType::BF16;
};

/// One strided-batched GEMM, column-major: (M x K) times (K x N).
struct GemmShape {
  uint64_t Batch, M, N, K;
};

/// The GEMMs Op runs (backward: the input and the weight gradient of
/// each), cut down to what the area holds.
std::vector<GemmShape> opGemmShapes(const dsc::plan::Op &Op, bool Backward,
                                    const GemmArea &A);

/// Issues Op's GEMMs (backward: the input and the weight gradient of each)
/// on H's stream. Shapes that do not fit the area are cut down.
cublasStatus_t runOpGemms(cublasHandle_t H, const dsc::plan::Op &Op,
                          bool Backward, const GemmArea &A);

} // namespace dsrun

#endif
