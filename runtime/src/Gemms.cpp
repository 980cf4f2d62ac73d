//===- Gemms.cpp - The GEMMs synthetic compute runs for an op -------------===//

#include "Gemms.h"

namespace plan = dsc::plan;

namespace dsrun {

namespace {

cudaDataType_t cudaType(ElementType T) {
  return T == ElementType::F32   ? CUDA_R_32F
         : T == ElementType::F16 ? CUDA_R_16F
                                 : CUDA_R_16BF;
}

} // namespace

std::vector<GemmShape> opGemmShapes(const plan::Op &Op, bool Backward,
                                    const GemmArea &A) {
  unsigned EB = elementBytes(A.Type);
  uint64_t Capacity = A.OutputBytes / EB, Readable = A.InputBytes / EB;
  std::vector<GemmShape> Shapes;
  auto Add = [&](uint64_t Batch, uint64_t M, uint64_t N, uint64_t K) {
    while (Batch > 1 && Batch * M * N > Capacity)
      Batch = (Batch + 1) / 2;
    while (M > 1 && (M * N > Capacity || M * K > Readable))
      M = (M + 1) / 2;
    while (N > 1 && (M * N > Capacity || K * N > Readable))
      N = (N + 1) / 2;
    while (K > 1 && (M * K > Readable || K * N > Readable))
      K = (K + 1) / 2;
    if (M && N && K && Batch && M * N <= Capacity)
      Shapes.push_back({Batch, M, N, K});
  };
  for (const plan::Gemm &G : Op.Gemms) {
    if (!Backward) {
      Add(G.Batch, G.M, G.N, G.K);
    } else {
      Add(G.Batch, G.M, G.K, G.N); // Input gradient.
      Add(G.Batch, G.K, G.N, G.M); // Weight gradient.
    }
  }
  return Shapes;
}

cublasStatus_t runOpGemms(cublasHandle_t H, const plan::Op &Op, bool Backward,
                          const GemmArea &A) {
  float One = 1, Zero = 0;
  cudaDataType_t T = cudaType(A.Type);
  for (const GemmShape &G : opGemmShapes(Op, Backward, A))
    if (cublasStatus_t E = cublasGemmStridedBatchedEx(
            H, CUBLAS_OP_N, CUBLAS_OP_N, int(G.M), int(G.N), int(G.K), &One,
            A.Inputs, T, int(G.M), 0, A.Inputs, T, int(G.K), 0, &Zero,
            A.Output, T, int(G.M), int64_t(G.M * G.N), int(G.Batch),
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        E != CUBLAS_STATUS_SUCCESS)
      return E;
  return CUBLAS_STATUS_SUCCESS;
}

} // namespace dsrun
