//===- Gemms.h - The GEMMs synthetic compute runs for an op -----*- C++ -*-===//
//
// An op's GEMMs, as the plan's Gemm kernels give them. Synthetic compute
// runs them on their real operands in the step; dsrun-bench runs the same
// ones beside raw NCCL, so that an overlapped collective can be compared
// with NCCL under the same load.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_GEMMS_H
#define DSRUN_GEMMS_H

#include "Synthetic.h"

#include "dsc/PlanFormat.h"

#include <cublas_v2.h>

#include <vector>

namespace dsrun {

/// Runs a plan Gemm kernel (row-major C = A . B, batched, as its attributes
/// say) on H's stream with cuBLAS: C^T = B^T . A^T in cuBLAS's column
/// major. Element type T for all three.
cublasStatus_t runGemmKernel(cublasHandle_t H, const dsc::plan::Kernel &K,
                             const void *A, const void *B, void *C,
                             ElementType T);

} // namespace dsrun

#endif
