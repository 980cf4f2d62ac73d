//===- Matmuls.cpp - The plan's products through cuBLASLt -----------------===//

#include "Matmuls.h"

#include <cstdio>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

#define TRY_LT(Call)                                                           \
  do {                                                                         \
    if (cublasStatus_t E_ = (Call); E_ != CUBLAS_STATUS_SUCCESS)               \
      return "cuBLASLt failed (" + std::to_string(int(E_)) + ") in " #Call;    \
  } while (0)

/// A column-major layout of Rows x Cols at leading dimension Ld, Batch of
/// them Stride apart.
std::string layout(cublasLtMatrixLayout_t &L, cudaDataType_t T, int64_t Rows,
                   int64_t Cols, int64_t Ld, int64_t Batch, int64_t Stride) {
  TRY_LT(cublasLtMatrixLayoutCreate(&L, T, uint64_t(Rows), uint64_t(Cols), Ld));
  if (Batch > 1) {
    int32_t Count = int32_t(Batch);
    TRY_LT(cublasLtMatrixLayoutSetAttribute(
        L, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &Count, sizeof(Count)));
    TRY_LT(cublasLtMatrixLayoutSetAttribute(
        L, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &Stride,
        sizeof(Stride)));
  }
  return "";
}

} // namespace

std::vector<int64_t> productKey(const plan::GemmAttrs &G, ElementType T) {
  return {G.M,       G.N,       G.K,       G.Batch,         G.TransA,
          G.TransB,  G.LdA,     G.LdB,     G.LdC,           G.StrideA,
          G.StrideB, G.StrideC, int64_t(G.Epilogue), int64_t(T)};
}

void Matmuls::destroy(Product &P) {
  if (P.A)
    cublasLtMatrixLayoutDestroy(P.A);
  if (P.B)
    cublasLtMatrixLayoutDestroy(P.B);
  if (P.C)
    cublasLtMatrixLayoutDestroy(P.C);
  if (P.Desc)
    cublasLtMatmulDescDestroy(P.Desc);
}

Matmuls::~Matmuls() {
  for (auto &[Key, P] : Products)
    destroy(P);
  if (Handle)
    cublasLtDestroy(Handle);
}

std::string Matmuls::init() {
  TRY_LT(cublasLtCreate(&Handle));
  return "";
}

void Matmuls::setAlgorithms(const std::vector<plan::GemmAlgorithm> &List) {
  Chosen.clear();
  for (const plan::GemmAlgorithm &G : List) // ElementType follows DType.
    Chosen[productKey(G.Product, ElementType(G.Type))] = int(G.Candidate);
}

// Row-major C (M x N) = op(A) op(B) is column-major C^T (N x M) =
// op(B)^T op(A)^T: cuBLASLt's first operand is our B, its second our A,
// each described as stored (a row-major R x C matrix is a column-major
// C x R one) and transposed by the kernel's flags.
std::string Matmuls::prepare(const plan::Kernel &K, ElementType T,
                             uint64_t WorkspaceBytes, int Candidate,
                             Product &P) {
  const plan::GemmAttrs &G = K.attrs<plan::KernelKind::Gemm>();
  int64_t M = G.M, N = G.N, Kd = G.K, Batch = G.Batch;
  bool TransA = G.TransA, TransB = G.TransB;
  cudaDataType_t D = cudaType(T);
  TRY_LT(cublasLtMatmulDescCreate(&P.Desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t OpA = TransB ? CUBLAS_OP_T : CUBLAS_OP_N,
                    OpB = TransA ? CUBLAS_OP_T : CUBLAS_OP_N;
  TRY_LT(cublasLtMatmulDescSetAttribute(P.Desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                        &OpA, sizeof(OpA)));
  TRY_LT(cublasLtMatmulDescSetAttribute(P.Desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                        &OpB, sizeof(OpB)));
  // cuBLASLt's GELU is the tanh form; its aux matrix (the biased sum) is
  // laid out as C.
  plan::GemmEpilogue Epilogue = G.Epilogue;
  if (Epilogue != plan::GemmEpilogue::None) {
    cublasLtEpilogue_t E =
        Epilogue == plan::GemmEpilogue::Bias           ? CUBLASLT_EPILOGUE_BIAS
        : Epilogue == plan::GemmEpilogue::BiasGeluTanh ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
        : Epilogue == plan::GemmEpilogue::DGeluTanh    ? CUBLASLT_EPILOGUE_DGELU
        // cuBLASLt's A is our B and its B our A (see above).
        : Epilogue == plan::GemmEpilogue::BiasGradA ? CUBLASLT_EPILOGUE_BGRADB
                                                    : CUBLASLT_EPILOGUE_BGRADA;
    TRY_LT(cublasLtMatmulDescSetAttribute(
        P.Desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &E, sizeof(E)));
  }
  if (plan::gemmUsesBias(Epilogue)) {
    int32_t BiasType = int32_t(D);
    TRY_LT(cublasLtMatmulDescSetAttribute(
        P.Desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &BiasType,
        sizeof(BiasType)));
  }
  if (plan::gemmUsesPreActivation(Epilogue)) {
    int64_t AuxLd = G.LdC;
    int32_t AuxType = int32_t(D);
    TRY_LT(cublasLtMatmulDescSetAttribute(
        P.Desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &AuxLd, sizeof(AuxLd)));
    TRY_LT(cublasLtMatmulDescSetAttribute(
        P.Desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &AuxType,
        sizeof(AuxType)));
  }
  if (std::string E = layout(P.A, D, TransB ? Kd : N, TransB ? N : Kd, G.LdB,
                             Batch, G.StrideB);
      !E.empty())
    return E;
  if (std::string E = layout(P.B, D, TransA ? M : Kd, TransA ? Kd : M, G.LdA,
                             Batch, G.StrideA);
      !E.empty())
    return E;
  if (std::string E = layout(P.C, D, N, M, G.LdC, Batch, G.StrideC);
      !E.empty())
    return E;
  cublasLtMatmulPreference_t Pref;
  TRY_LT(cublasLtMatmulPreferenceCreate(&Pref));
  cublasLtMatmulPreferenceSetAttribute(
      Pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &WorkspaceBytes,
      sizeof(WorkspaceBytes));
  std::vector<cublasLtMatmulHeuristicResult_t> Offered(size_t(Candidate) + 1);
  int Count = 0;
  cublasStatus_t St = cublasLtMatmulAlgoGetHeuristic(
      Handle, P.Desc, P.A, P.B, P.C, P.C, Pref, Candidate + 1, Offered.data(),
      &Count);
  cublasLtMatmulPreferenceDestroy(Pref);
  if (St != CUBLAS_STATUS_SUCCESS || Count == 0)
    return "cuBLASLt has no algorithm for this product (" +
           std::to_string(int(St)) + ")";
  if (Count <= Candidate)
    return "cuBLASLt offers " + std::to_string(Count) +
           " algorithms for this product, not " + std::to_string(Candidate + 1);
  P.Algo = Offered[size_t(Candidate)].algo;
  return "";
}

std::string Matmuls::run(const plan::Kernel &K, const void *A, const void *B,
                         const void *Bias, void *Aux, void *C, ElementType T,
                         void *Workspace, uint64_t WorkspaceBytes,
                         cudaStream_t S, bool &SeparateBiasGrad,
                         int Candidate) {
  if (!Handle)
    return "cuBLASLt is not initialized";
  const plan::GemmAttrs &G = K.attrs<plan::KernelKind::Gemm>();
  std::vector<int64_t> Key = productKey(G, T);
  bool PlanChoice = Candidate < 0;
  std::vector<int64_t> ChoiceKey = Key;
  const void *BiasGiven = Bias; // A retry with the first algorithm takes it.
  if (PlanChoice) {
    auto It = Chosen.find(Key);
    Candidate = It == Chosen.end() ? 0 : It->second;
  }
  Key.push_back(int64_t(WorkspaceBytes));
  Key.push_back(PlanChoice ? -1 : Candidate);
  auto [It, New] = Products.try_emplace(Key);
  Product &P = It->second;
  if (New && PlanChoice && Candidate > 0) {
    std::string E = prepare(K, T, WorkspaceBytes, Candidate, P);
    if (E.empty()) {
      New = false; // Prepared.
    } else {
      destroy(P);
      P = Product();
      fprintf(stderr,
              "dsrun: note: the plan runs '%s' with cuBLASLt's algorithm %d, "
              "which this GPU and library do not offer (%s); running the "
              "first (plan again with a calibration from this machine)\n",
              K.Name.c_str(), Candidate, E.c_str());
      Candidate = 0;
    }
  }
  if (New)
    if (std::string E = prepare(K, T, WorkspaceBytes, Candidate, P);
        !E.empty()) {
      destroy(P);
      P = Product();
      bool BiasGrad = plan::gemmBiasGrad(G.Epilogue);
      plan::Kernel Plain = K;
      Plain.attrs<plan::KernelKind::Gemm>().Epilogue = plan::GemmEpilogue::None;
      std::string Again =
          BiasGrad && !Candidate ? prepare(Plain, T, WorkspaceBytes, 0, P) : E;
      if (!Again.empty()) {
        destroy(P);
        Products.erase(It);
        return E;
      }
      P.SeparateBiasGrad = true;
      fprintf(stderr,
              "dsrun: note: cuBLASLt has no bias-gradient epilogue for '%s' "
              "(%s); a column sum computes it after the product\n",
              K.Name.c_str(), E.c_str());
    }
  SeparateBiasGrad = P.SeparateBiasGrad;
  if (SeparateBiasGrad)
    Bias = nullptr;
  if (Bias)
    TRY_LT(cublasLtMatmulDescSetAttribute(
        P.Desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &Bias, sizeof(Bias)));
  if (Aux)
    TRY_LT(cublasLtMatmulDescSetAttribute(
        P.Desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &Aux, sizeof(Aux)));
  float Alpha = float(G.Alpha), Beta = float(G.Beta);
  // cuBLASLt's A is our B (see prepare).
  cublasStatus_t St =
      cublasLtMatmul(Handle, P.Desc, &Alpha, B, P.A, A, P.B, &Beta, C, P.C, C,
                     P.C, &P.Algo, Workspace, WorkspaceBytes, S);
  if (St != CUBLAS_STATUS_SUCCESS && PlanChoice && Candidate > 0) {
    // The plan's algorithm was timed on operands of its own; these (a view
    // less aligned, say) it refuses: the first from now on.
    fprintf(stderr,
            "dsrun: note: cuBLASLt refused the plan's algorithm %d for '%s' "
            "(%d); running the first\n",
            Candidate, K.Name.c_str(), int(St));
    destroy(P);
    Products.erase(It);
    Chosen.erase(ChoiceKey);
    return run(K, A, B, BiasGiven, Aux, C, T, Workspace, WorkspaceBytes, S,
               SeparateBiasGrad);
  }
  if (St != CUBLAS_STATUS_SUCCESS)
    return "cuBLASLt failed (" + std::to_string(int(St)) +
           ") in cublasLtMatmul";
  return "";
}

} // namespace dsrun
