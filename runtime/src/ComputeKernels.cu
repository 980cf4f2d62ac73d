//===- ComputeKernels.cu - The compute program's kernels ------------------===//
//
// Correct first: every kind computes in fp32 and reads and writes its
// operands through their strides and types. Attention the plan marks as
// flash runs in FlashAttention.cu; the rest takes the "math" path here
// (scores and probabilities in the kernel workspace, one batch at a time,
// products by cuBLAS). The elementwise kinds are PointwiseKernels.cu, the
// norms NormKernels.cu, embeddings and the loss TokenKernels.cu; this file
// holds fill, reduce, softmax, math attention and products. Each kind's
// launch is one entry of KernelLaunch.cu's table. docs/runtime.md says
// what each costs.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.cuh"
#include "CudnnAttention.h"
#include "FlashAttention.h"

#include "dsc/ColumnSums.h"
#include "dsc/AttentionAlgorithms.h"

#include <cstdio>
#include <set>

namespace dsrun {
namespace kernels {

using plan::KernelKind;
using plan::PointwiseOp;

//===----------------------------------------------------------------------===//
// Fill, reduce
//===----------------------------------------------------------------------===//

__global__ void fillKernel(const __grid_constant__ Strided Y, int64_t N,
                           float V) {
  for (int64_t E = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; E < N;
       E += int64_t(gridDim.x) * blockDim.x) {
    int64_t Rest = E, Off = 0;
    for (int D = Y.Rank - 1; D >= 0; --D) {
      Off += (Rest % Y.Shape[D]) * Y.Strides[D];
      Rest /= Y.Shape[D];
    }
    storeAs(Y.Ptr, uint64_t(Off), Y.Type, V);
  }
}

struct ReduceArgs {
  Strided X;
  void *Y;
  ElementType YType;
  int KeptRank = 0, ReducedRank = 0;
  int64_t KeptShape[MaxRank], KeptStrides[MaxRank];
  int64_t ReducedShape[MaxRank], ReducedStrides[MaxRank];
  int64_t Kept = 1, Reduced = 1;
  float Scale = 1;
};

/// One thread per output element, summing its reduced elements in order.
__global__ void reduceKernel(const __grid_constant__ ReduceArgs A) {
  for (int64_t O = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; O < A.Kept;
       O += int64_t(gridDim.x) * blockDim.x) {
    int64_t Rest = O, Base = 0;
    for (int D = A.KeptRank - 1; D >= 0; --D) {
      Base += (Rest % A.KeptShape[D]) * A.KeptStrides[D];
      Rest /= A.KeptShape[D];
    }
    float Sum = 0;
    for (int64_t R = 0; R < A.Reduced; ++R) {
      int64_t Rr = R, Off = Base;
      for (int D = A.ReducedRank - 1; D >= 0; --D) {
        Off += (Rr % A.ReducedShape[D]) * A.ReducedStrides[D];
        Rr /= A.ReducedShape[D];
      }
      Sum += loadAs(A.X.Ptr, uint64_t(Off), A.X.Type);
    }
    storeAs(A.Y, uint64_t(O), A.YType, Sum * A.Scale);
  }
}

std::string reduce(const plan::Kernel &K, const KernelOperands &Ops,
                   const KernelContext &C, cudaStream_t S) {
  const plan::ReduceAttrs &R = K.attrs<KernelKind::Reduce>();
  const plan::TensorRef &X = K.Inputs[0];
  int64_t Rows = 0, Cols = 0;
  if (dsc::reducesLeadingRows(X.Shape, X.Strides, int64_t(R.AxesMask), Rows,
                              Cols)) {
    // A bias gradient: the whole GPU, in a fixed order.
    ColumnSumArgs Sum;
    Sum.G = Ops.In[0];
    Sum.GT = Ops.InType[0];
    Sum.Rows = Rows;
    Sum.Cols = Cols;
    Sum.Out[0] = Ops.Out[0];
    Sum.OutT[0] = Ops.OutType[0];
    Sum.Scale = float(R.Scale);
    return columnSums(Sum, C, S);
  }
  ReduceArgs A;
  A.X = strided(X, Ops.In[0], Ops.InType[0]);
  A.Y = Ops.Out[0];
  A.YType = Ops.OutType[0];
  for (size_t D = 0; D < X.Shape.size(); ++D) {
    if (R.AxesMask >> D & 1) {
      A.ReducedShape[A.ReducedRank] = X.Shape[D];
      A.ReducedStrides[A.ReducedRank++] = X.Strides[D];
      A.Reduced *= X.Shape[D];
    } else {
      A.KeptShape[A.KeptRank] = X.Shape[D];
      A.KeptStrides[A.KeptRank++] = X.Strides[D];
      A.Kept *= X.Shape[D];
    }
  }
  A.Scale = float(R.Scale);
  if (A.Kept)
    reduceKernel<<<blocksFor(uint64_t(A.Kept)), Threads, 0, S>>>(A);
  return "";
}

std::string fill(const plan::Kernel &K, const KernelOperands &Ops,
                 const KernelContext &, cudaStream_t S) {
  int64_t N = numel(K.Outputs[0].Shape);
  if (N)
    fillKernel<<<blocksFor(uint64_t(N)), Threads, 0, S>>>(
        strided(K.Outputs[0], Ops.Out[0], Ops.OutType[0]), N,
        float(K.attrs<KernelKind::Fill>().Value));
  return "";
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

__global__ void softmaxKernel(const void *X, ElementType XT, void *Y,
                              ElementType YT, int64_t Cols, bool Log,
                              bool ZeroMasked) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Cols);
  float Max = -INFINITY;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
    Max = fmaxf(Max, loadAs(X, Row + C, XT));
  Max = blockReduce(Max, true);
  if (ZeroMasked && Max == -INFINITY) {
    for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
      storeAs(Y, Row + C, YT, 0.0f);
    return;
  }
  float Sum = 0;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
    Sum += expf(loadAs(X, Row + C, XT) - Max);
  Sum = blockReduce(Sum, false);
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float Z = loadAs(X, Row + C, XT) - Max;
    storeAs(Y, Row + C, YT, Log ? Z - logf(Sum) : expf(Z) / Sum);
  }
}

__global__ void softmaxGradKernel(const void *Y, ElementType YT, const void *G,
                                  ElementType GT, void *D, ElementType DT,
                                  int64_t Cols, bool Log) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Cols);
  float Dot = 0;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
    Dot += Log ? loadAs(G, Row + C, GT)
               : loadAs(G, Row + C, GT) * loadAs(Y, Row + C, YT);
  Dot = blockReduce(Dot, false);
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float Yv = loadAs(Y, Row + C, YT), Gv = loadAs(G, Row + C, GT);
    storeAs(D, Row + C, DT, Log ? Gv - expf(Yv) * Dot : Yv * (Gv - Dot));
  }
}

std::string softmax(const plan::Kernel &K, const KernelOperands &Ops,
                    const KernelContext &, cudaStream_t S) {
  const plan::SoftmaxAttrs &A = K.attrs<KernelKind::Softmax>();
  if (A.Rows)
    softmaxKernel<<<unsigned(A.Rows), Threads, 0, S>>>(
        Ops.In[0], Ops.InType[0], Ops.Out[0], Ops.OutType[0], A.Cols, A.Log,
        A.ZeroMaskedRows);
  return "";
}

std::string softmaxGrad(const plan::Kernel &K, const KernelOperands &Ops,
                        const KernelContext &, cudaStream_t S) {
  const plan::SoftmaxGradAttrs &A = K.attrs<KernelKind::SoftmaxGrad>();
  if (A.Rows)
    softmaxGradKernel<<<unsigned(A.Rows), Threads, 0, S>>>(
        Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1], Ops.Out[0],
        Ops.OutType[0], A.Cols, A.Log);
  return "";
}

//===----------------------------------------------------------------------===//
// Attention: scores and probabilities of one batch in the workspace
//===----------------------------------------------------------------------===//

/// Row-major C[b] = alpha A[b] op(B[b]) + beta C[b] for `Batch` matrices
/// at the given strides (elements), through cuBLAS's column major.
cublasStatus_t gemm(cublasHandle_t H, bool TransA, bool TransB, int64_t M,
                    int64_t N, int64_t K, float Alpha, const void *A,
                    ElementType AT, int64_t LdA, int64_t SA, const void *B,
                    ElementType BT, int64_t LdB, int64_t SB, float Beta,
                    void *C, ElementType CT, int64_t LdC, int64_t SC,
                    int64_t Batch) {
  return cublasGemmStridedBatchedEx(
      H, TransB ? CUBLAS_OP_T : CUBLAS_OP_N, TransA ? CUBLAS_OP_T : CUBLAS_OP_N,
      int(N), int(M), int(K), &Alpha, B, cudaType(BT), int(LdB), SB, A,
      cudaType(AT), int(LdA), SA, &Beta, C, cudaType(CT), int(LdC), SC,
      int(Batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

struct AttentionArgs {
  int64_t B, Hq, Hkv, T, Sk, D, Dv;
  bool Causal;
  float Scale;
  /// Bias of this batch element, broadcast through its strides (h, t, s).
  const void *Bias;
  ElementType BiasType;
  int64_t BiasStrides[3];
  /// Rows up to this many keys are held in shared memory by the softmax.
  int64_t CachedCols;
};

/// Scores of one batch [Hq, T, Sk] (fp32, scaled here), masked, to P in
/// the activation type and the log-sum-exp per row; a row with every key
/// masked attends to nothing. With Lse given as input (backward) P is
/// recomputed from it. With dynamic shared memory for a row (Sk floats),
/// each score is read once (masked ones never) instead of three times.
__global__ void attentionSoftmaxKernel(const float *Scores, void *P,
                                       ElementType PT, float *Lse,
                                       bool Recompute, AttentionArgs A) {
  extern __shared__ float Row[];
  bool Cached = !Recompute && A.Sk <= A.CachedCols;
  int64_t R = blockIdx.x; // h * T + t
  int64_t H = R / A.T, Tq = R % A.T;
  const float *S = Scores + R * A.Sk;
  auto Score = [&](int64_t J) {
    if (A.Causal && J > Tq)
      return -INFINITY;
    float V = S[J] * A.Scale;
    if (A.Bias)
      V += loadAs(A.Bias,
                  uint64_t(H * A.BiasStrides[0] + Tq * A.BiasStrides[1] +
                           J * A.BiasStrides[2]),
                  A.BiasType);
    return V;
  };
  float L;
  if (Recompute) {
    L = Lse[R];
  } else {
    float Max = -INFINITY;
    for (int64_t J = threadIdx.x; J < A.Sk; J += blockDim.x) {
      float V = Score(J);
      if (Cached)
        Row[J] = V;
      Max = fmaxf(Max, V);
    }
    Max = blockReduce(Max, true);
    float Sum = 0;
    if (Max != -INFINITY)
      for (int64_t J = threadIdx.x; J < A.Sk; J += blockDim.x)
        Sum += expf((Cached ? Row[J] : Score(J)) - Max);
    Sum = blockReduce(Sum, false);
    L = Sum > 0 ? Max + logf(Sum) : INFINITY;
    if (threadIdx.x == 0)
      Lse[R] = L;
  }
  for (int64_t J = threadIdx.x; J < A.Sk; J += blockDim.x)
    storeAs(P, uint64_t(R * A.Sk + J), PT,
            isinf(L) ? 0.0f : expf((Cached ? Row[J] : Score(J)) - L));
}

/// dS = P (dP - delta) scale, delta = rowsum(dO o O) precomputed.
__global__ void attentionDsKernel(const void *P, ElementType PT,
                                  const float *Dp, const float *Delta,
                                  void *Ds, ElementType DsT, int64_t Sk,
                                  float Scale) {
  int64_t Row = blockIdx.x;
  for (int64_t J = threadIdx.x; J < Sk; J += blockDim.x) {
    uint64_t At = uint64_t(Row * Sk + J);
    float V = loadAs(P, At, PT) * (Dp[At] - Delta[Row]) * Scale;
    storeAs(Ds, At, DsT, V);
  }
}

/// delta[h, t] = sum_d dO[h, t, d] O[h, t, d] for one batch element.
__global__ void attentionDeltaKernel(const __grid_constant__ Strided Do,
                                     const __grid_constant__ Strided O,
                                     int64_t T,
                                     int64_t Dv, float *Delta) {
  int64_t Row = blockIdx.x, H = Row / T, Tq = Row % T;
  float Sum = 0;
  for (int64_t D = threadIdx.x; D < Dv; D += blockDim.x)
    Sum += loadAs(Do.Ptr, uint64_t(H * Do.Strides[1] + Tq * Do.Strides[2] + D * Do.Strides[3]), Do.Type) *
           loadAs(O.Ptr, uint64_t(H * O.Strides[1] + Tq * O.Strides[2] + D * O.Strides[3]), O.Type);
  Sum = blockReduce(Sum, false);
  if (threadIdx.x == 0)
    Delta[Row] = Sum;
}

#define TRY_CUBLAS(Call)                                                       \
  do {                                                                         \
    if (cublasStatus_t E_ = (Call); E_ != CUBLAS_STATUS_SUCCESS)               \
      return "cuBLAS failed (" + std::to_string(int(E_)) + ") in " #Call;      \
  } while (0)

/// The math path: one batch element at a time, scores in the workspace.
std::string mathAttention(const plan::Kernel &K, const KernelOperands &Ops,
                          const KernelContext &C, cudaStream_t S) {
  bool Grad = K.kind() == KernelKind::AttentionGrad;
  const plan::AttentionAttrs &At = *K.as<plan::AttentionAttrs>();
  AttentionArgs A{At.Batch,  At.QHeads, At.KVHeads,     At.QLen,
                  At.KVLen,  At.HeadDim, At.ValueDim,   At.Causal,
                  float(At.Scale), nullptr, ElementType::F32, {0, 0, 0}};
  int64_t G = A.Hq / A.Hkv;
  size_t Qi = Grad ? 1 : 0;
  const plan::TensorRef &Qr = K.Inputs[Qi], &Kr = K.Inputs[Qi + 1],
                        &Vr = K.Inputs[Qi + 2];
  ElementType QT = Ops.InType[Qi], KT = Ops.InType[Qi + 1],
              VT = Ops.InType[Qi + 2];
  // The products read bf16/fp16/fp32 operands of one type.
  ElementType Act = QT;
  if (KT != Act || VT != Act)
    return "attention operands of different element types";
  uint64_t Need = plan::attentionWorkspace(At, Grad, elementBytes(Act));
  if (Need > C.WorkspaceBytes)
    return "attention needs " + std::to_string(Need) +
           " bytes of workspace; the plan has " +
           std::to_string(C.WorkspaceBytes);
  uint64_t Cells = uint64_t(A.Hq * A.T * A.Sk);
  char *W = static_cast<char *>(C.Workspace);
  float *Scores = reinterpret_cast<float *>(W);
  void *P = W + Cells * 4;
  void *Ds = W + Cells * 4 + Cells * elementBytes(Act);
  float *Delta =
      reinterpret_cast<float *>(W + Cells * 4 + 2 * Cells * elementBytes(Act));
  size_t BiasAt = Grad ? 6 : 3;
  bool HasBias = K.Inputs.size() > BiasAt;
  TRY_CUBLAS(cublasSetStream(C.Cublas, S));
  unsigned EB = elementBytes(Act);
  auto Ptr = [&](size_t In, int64_t Offset) {
    return static_cast<char *>(Ops.In[In]) + Offset * EB;
  };
  for (int64_t B = 0; B < A.B; ++B) {
    if (HasBias) {
      const plan::TensorRef &Br = K.Inputs[BiasAt];
      A.BiasType = Ops.InType[BiasAt];
      A.Bias = static_cast<char *>(Ops.In[BiasAt]) +
               B * Br.Strides[0] * elementBytes(A.BiasType);
      A.BiasStrides[0] = Br.Strides[1];
      A.BiasStrides[1] = Br.Strides[2];
      A.BiasStrides[2] = Br.Strides[3];
    }
    // Scores of every head: for each query head g of a group, batched
    // over the key/value heads.
    for (int64_t Gq = 0; Gq < G; ++Gq)
      TRY_CUBLAS(gemm(C.Cublas, false, true, A.T, A.Sk, A.D, 1.0f,
                      Ptr(Qi, B * Qr.Strides[0] + Gq * Qr.Strides[1]), Act,
                      Qr.Strides[2], G * Qr.Strides[1],
                      Ptr(Qi + 1, B * Kr.Strides[0]), Act, Kr.Strides[2],
                      Kr.Strides[1], 0.0f, Scores + Gq * A.T * A.Sk,
                      ElementType::F32, A.Sk, G * A.T * A.Sk, A.Hkv));
    float *Lse = static_cast<float *>(Grad ? Ops.In[5] : Ops.Out[1]) +
                 B * A.Hq * A.T;
    // A row of scores in shared memory (at most the 48 KiB every launch
    // may take without opting in).
    A.CachedCols = Grad ? 0 : (A.Sk * 4 <= 48 * 1024 ? A.Sk : 0);
    attentionSoftmaxKernel<<<unsigned(A.Hq * A.T), Threads,
                             size_t(A.CachedCols) * 4, S>>>(Scores, P, Act,
                                                            Lse, Grad, A);
    if (!Grad) {
      // out[b, h] = P[h] V[b, h / G]
      const plan::TensorRef &Or = K.Outputs[0];
      for (int64_t Gq = 0; Gq < G; ++Gq)
        TRY_CUBLAS(gemm(C.Cublas, false, false, A.T, A.Dv, A.Sk, 1.0f,
                        static_cast<char *>(P) + Gq * A.T * A.Sk * EB, Act,
                        A.Sk, G * A.T * A.Sk,
                        Ptr(Qi + 2, B * Vr.Strides[0]), Act, Vr.Strides[2],
                        Vr.Strides[1], 0.0f,
                        static_cast<char *>(Ops.Out[0]) +
                            (B * Or.Strides[0] + Gq * Or.Strides[1]) * EB,
                        Act, Or.Strides[2], G * Or.Strides[1], A.Hkv));
      continue;
    }
    // Backward: dO [B, Hq, T, Dv] and O, as given.
    const plan::TensorRef &Dor = K.Inputs[0], &Or = K.Inputs[4];
    Strided Do = strided(Dor, Ptr(0, B * Dor.Strides[0]), Ops.InType[0]);
    Strided O = strided(Or, Ptr(4, B * Or.Strides[0]), Ops.InType[4]);
    attentionDeltaKernel<<<unsigned(A.Hq * A.T), Threads, 0, S>>>(
        Do, O, A.T, A.Dv, Delta);
    // dP = dO V^T into the scores' place.
    for (int64_t Gq = 0; Gq < G; ++Gq)
      TRY_CUBLAS(gemm(C.Cublas, false, true, A.T, A.Sk, A.Dv, 1.0f,
                      Ptr(0, B * Dor.Strides[0] + Gq * Dor.Strides[1]), Act,
                      Dor.Strides[2], G * Dor.Strides[1],
                      Ptr(Qi + 2, B * Vr.Strides[0]), Act, Vr.Strides[2],
                      Vr.Strides[1], 0.0f, Scores + Gq * A.T * A.Sk,
                      ElementType::F32, A.Sk, G * A.T * A.Sk, A.Hkv));
    attentionDsKernel<<<unsigned(A.Hq * A.T), Threads, 0, S>>>(
        P, Act, Scores, Delta, Ds, Act, A.Sk, A.Scale);
    const plan::TensorRef &DqR = K.Outputs[0], &DkR = K.Outputs[1],
                          &DvR = K.Outputs[2];
    char *Dq = static_cast<char *>(Ops.Out[0]), *Dk = static_cast<char *>(Ops.Out[1]),
         *Dv = static_cast<char *>(Ops.Out[2]);
    for (int64_t Gq = 0; Gq < G; ++Gq) {
      float Beta = Gq ? 1.0f : 0.0f; // Key/value heads sum their group.
      // dQ = dS K
      TRY_CUBLAS(gemm(C.Cublas, false, false, A.T, A.D, A.Sk, 1.0f,
                      static_cast<char *>(Ds) + Gq * A.T * A.Sk * EB, Act,
                      A.Sk, G * A.T * A.Sk, Ptr(Qi + 1, B * Kr.Strides[0]),
                      Act, Kr.Strides[2], Kr.Strides[1], 0.0f,
                      Dq + (B * DqR.Strides[0] + Gq * DqR.Strides[1]) * EB,
                      Act, DqR.Strides[2], G * DqR.Strides[1], A.Hkv));
      // dK += dS^T Q
      TRY_CUBLAS(gemm(C.Cublas, true, false, A.Sk, A.D, A.T, 1.0f,
                      static_cast<char *>(Ds) + Gq * A.T * A.Sk * EB, Act,
                      A.Sk, G * A.T * A.Sk,
                      Ptr(Qi, B * Qr.Strides[0] + Gq * Qr.Strides[1]), Act,
                      Qr.Strides[2], G * Qr.Strides[1], Beta,
                      Dk + B * DkR.Strides[0] * EB, Act, DkR.Strides[2],
                      DkR.Strides[1], A.Hkv));
      // dV += P^T dO
      TRY_CUBLAS(gemm(C.Cublas, true, false, A.Sk, A.Dv, A.T, 1.0f,
                      static_cast<char *>(P) + Gq * A.T * A.Sk * EB, Act,
                      A.Sk, G * A.T * A.Sk,
                      Ptr(0, B * Dor.Strides[0] + Gq * Dor.Strides[1]), Act,
                      Dor.Strides[2], G * Dor.Strides[1], Beta,
                      Dv + B * DvR.Strides[0] * EB, Act, DvR.Strides[2],
                      DvR.Strides[1], A.Hkv));
    }
  }
  return "";
}

/// A bias gradient cuBLASLt's epilogue could not give: element J of
/// Out sums row J of op(A) (OfA) or column J of op(B) over K, in order.
__global__ void operandSumsKernel(const void *X, ElementType T, bool OfA,
                                  bool Trans, int64_t Ld, int64_t Len,
                                  int64_t K, void *Out) {
  for (int64_t J = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; J < Len;
       J += int64_t(gridDim.x) * blockDim.x) {
    float Sum = 0;
    for (int64_t L = 0; L < K; ++L)
      Sum += loadAs(X, uint64_t(OfA == Trans ? L * Ld + J : J * Ld + L), T);
    storeAs(Out, uint64_t(J), T, Sum);
  }
}

std::string attention(const plan::Kernel &K, const KernelOperands &Ops,
                      const KernelContext &C, cudaStream_t S) {
  const plan::AttentionAttrs &A = *K.as<plan::AttentionAttrs>();
  switch (A.Algorithm) {
  case plan::AttentionAlgorithm::Math:
    return mathAttention(K, Ops, C, S);
  case plan::AttentionAlgorithm::Flash:
    return flashAttention(K, Ops, C, S);
  case plan::AttentionAlgorithm::Cudnn:
    break;
  }
  bool Grad = K.kind() == plan::KernelKind::AttentionGrad;
  std::string Why = C.Deterministic && Grad && A.HeadDim <= plan::FlashMaxHeadDim
                        ? "--deterministic (cuDNN's backward sums dQ with "
                          "atomics)"
                        : cudnnAttention(K, Ops, C, S);
  if (Why.empty())
    return "";
  // cuDNN missing, or declining this shape: dsrun's flash kernels, whose
  // workspace the plan reserved too. Said once per reason.
  static std::set<std::string> Said;
  if (Said.insert(Why).second)
    fprintf(stderr, "dsrun: note: attention runs on dsrun's flash kernels "
                    "where the plan asks for cuDNN's: %s\n",
            Why.c_str());
  if (A.HeadDim > plan::FlashMaxHeadDim)
    return "cuDNN's attention cannot run '" + K.Name + "' (" + Why +
           ") and dsrun's flash kernels take head sizes up to " +
           std::to_string(plan::FlashMaxHeadDim) +
           "; plan with --attention math";
  return flashAttention(K, Ops, C, S);
}

std::string matmul(const plan::Kernel &K, const KernelOperands &Ops,
                   const KernelContext &C, cudaStream_t S) {
  const plan::GemmAttrs &G = K.attrs<KernelKind::Gemm>();
  plan::GemmEpilogue E = G.Epilogue;
  bool BiasGrad = plan::gemmBiasGrad(E);
  bool Bias = plan::gemmUsesBias(E) && !BiasGrad;
  // GELU's pre-activation: the forward's second output, the backward's
  // third input.
  void *Aux = E == plan::GemmEpilogue::BiasGeluTanh ? Ops.Out[1]
              : E == plan::GemmEpilogue::DGeluTanh  ? Ops.In[2]
                                                    : nullptr;
  for (size_t I = 0; I < Ops.InType.size(); ++I)
    if (Ops.InType[I] != Ops.OutType[0])
      return "a GEMM of operands of different element types";
  for (ElementType T : Ops.OutType)
    if (T != Ops.OutType[0])
      return "a GEMM of operands of different element types";
  if (!C.Products)
    return "no cuBLASLt handle for the products";
  bool Separate = false;
  const void *BiasPtr = Bias ? Ops.In[2] : BiasGrad ? Ops.Out[1] : nullptr;
  if (std::string Problem = C.Products->run(
          K, Ops.In[0], Ops.In[1], BiasPtr, Aux, Ops.Out[0], Ops.OutType[0],
          C.Workspace, std::min(C.WorkspaceBytes, plan::GemmWorkspaceBytes), S,
          Separate);
      !Problem.empty())
    return Problem;
  if (BiasGrad && Separate) {
    bool OfA = E == plan::GemmEpilogue::BiasGradA;
    int64_t Len = OfA ? G.M : G.N;
    operandSumsKernel<<<blocksFor(uint64_t(Len)), Threads, 0, S>>>(
        Ops.In[OfA ? 0 : 1], Ops.InType[OfA ? 0 : 1], OfA,
        OfA ? G.TransA : G.TransB, OfA ? G.LdA : G.LdB, Len, G.K, Ops.Out[1]);
  }
  return "";
}

} // namespace kernels
} // namespace dsrun
