//===- Gemms.cpp - The GEMMs synthetic compute runs for an op -------------===//

#include "Gemms.h"
#include "Matmuls.h"

namespace plan = dsc::plan;

namespace dsrun {

cublasStatus_t runGemmKernel(cublasHandle_t H, const plan::Kernel &K,
                             const void *A, const void *B, void *C,
                             ElementType T) {
  const std::vector<int64_t> &I = K.Ints;
  int64_t M = I[0], N = I[1], Kd = I[2], Batch = I[3];
  bool TransA = I[4], TransB = I[5];
  int64_t LdA = I[6], LdB = I[7], LdC = I[8];
  float Alpha = float(K.Floats[0]), Beta = float(K.Floats[1]);
  cudaDataType_t D = cudaType(T);
  // Row-major C (M x N) is column-major C^T (N x M) = B^T A^T: cuBLAS's
  // first operand is B, its second A, each transposed as stored.
  return cublasGemmStridedBatchedEx(
      H, TransB ? CUBLAS_OP_T : CUBLAS_OP_N, TransA ? CUBLAS_OP_T : CUBLAS_OP_N,
      int(N), int(M), int(Kd), &Alpha, B, D, int(LdB), I[10], A, D, int(LdA),
      I[9], &Beta, C, D, int(LdC), I[11], int(Batch), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
}

} // namespace dsrun
