//===- Gemms.cpp - The GEMMs synthetic compute runs for an op -------------===//

#include "Gemms.h"
#include "Matmuls.h"

namespace plan = dsc::plan;

namespace dsrun {

cublasStatus_t runGemmKernel(cublasHandle_t H, const plan::Kernel &K,
                             const void *A, const void *B, void *C,
                             ElementType T) {
  const plan::GemmAttrs &G = K.attrs<plan::KernelKind::Gemm>();
  float Alpha = float(G.Alpha), Beta = float(G.Beta);
  cudaDataType_t D = cudaType(T);
  // Row-major C (M x N) is column-major C^T (N x M) = B^T A^T: cuBLAS's
  // first operand is B, its second A, each transposed as stored.
  return cublasGemmStridedBatchedEx(
      H, G.TransB ? CUBLAS_OP_T : CUBLAS_OP_N,
      G.TransA ? CUBLAS_OP_T : CUBLAS_OP_N, int(G.N), int(G.M), int(G.K),
      &Alpha, B, D, int(G.LdB), G.StrideB, A, D, int(G.LdA), G.StrideA, &Beta,
      C, D, int(G.LdC), G.StrideC, int(G.Batch), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
}

} // namespace dsrun
