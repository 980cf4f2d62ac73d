//===- ComputeKernels.cu - The compute program's kernels ------------------===//
//
// Correct first: every kind computes in fp32 and reads and writes its
// operands through their strides and types. Attention is the "math" path
// (scores and probabilities in the kernel workspace, one batch at a time,
// products by cuBLAS); a norm's weight gradients are a column sum per
// thread; an embedding's gradient sorts its token ids (stable, so the sums
// are deterministic). docs/runtime.md says what each costs.
//
//===----------------------------------------------------------------------===//

#include "ComputeKernels.h"

#include "dsc/Pointwise.h"
#include "dsc/Random.h"

#include <cub/cub.cuh>

#include <algorithm>

namespace plan = dsc::plan;
using plan::KernelKind;
using plan::PointwiseOp;

namespace dsrun {

namespace {

constexpr int MaxRank = 8;
constexpr int Threads = 256;

unsigned blocksFor(uint64_t N) {
  return unsigned(std::min<uint64_t>((N + Threads - 1) / Threads, 65535 * 8));
}

/// An operand as a kernel sees it.
struct Strided {
  void *Ptr = nullptr;
  ElementType Type = ElementType::F32;
  int Rank = 0;
  int64_t Shape[MaxRank] = {}, Strides[MaxRank] = {};
};

Strided strided(const plan::TensorRef &R, void *Ptr, ElementType T) {
  Strided S;
  S.Ptr = Ptr;
  S.Type = T;
  S.Rank = int(R.Shape.size());
  for (int K = 0; K < S.Rank && K < MaxRank; ++K) {
    S.Shape[K] = R.Shape[K];
    S.Strides[K] = R.Strides[K];
  }
  return S;
}

int64_t numel(const std::vector<int64_t> &S) {
  int64_t N = 1;
  for (int64_t D : S)
    N *= D;
  return N;
}

//===----------------------------------------------------------------------===//
// Block reductions
//===----------------------------------------------------------------------===//

__device__ float warpSum(float V) {
  for (int O = 16; O > 0; O /= 2)
    V += __shfl_xor_sync(0xffffffffu, V, O);
  return V;
}
__device__ float warpMax(float V) {
  for (int O = 16; O > 0; O /= 2)
    V = fmaxf(V, __shfl_xor_sync(0xffffffffu, V, O));
  return V;
}
/// The sum (or max) over the block, returned to every thread.
__device__ float blockReduce(float V, bool Max) {
  __shared__ float Partial[32];
  __shared__ float Result;
  V = Max ? warpMax(V) : warpSum(V);
  int Lane = threadIdx.x % 32, Warp = threadIdx.x / 32;
  if (Lane == 0)
    Partial[Warp] = V;
  __syncthreads();
  if (Warp == 0) {
    int Warps = (blockDim.x + 31) / 32;
    float X = Lane < Warps ? Partial[Lane] : (Max ? -INFINITY : 0.0f);
    X = Max ? warpMax(X) : warpSum(X);
    if (Lane == 0)
      Result = X;
  }
  __syncthreads();
  float R = Result;
  __syncthreads();
  return R;
}

//===----------------------------------------------------------------------===//
// Pointwise programs
//===----------------------------------------------------------------------===//

constexpr int MaxInstructions = 48, MaxRegisters = 32, MaxConstants = 16;

struct PointwiseArgs {
  Strided In[8], Out[4];
  int NumIn = 0, NumOut = 0, Instructions = 0;
  int16_t Code[MaxInstructions][5] = {};
  int OutReg[4] = {};
  float Constants[MaxConstants] = {};
  uint64_t Seed = 0;
  int64_t N = 0;
};

__global__ void pointwiseKernel(const PointwiseArgs A) {
  const Strided &O0 = A.Out[0];
  for (int64_t E = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; E < A.N;
       E += int64_t(gridDim.x) * blockDim.x) {
    int64_t InOff[8] = {}, OutOff[4] = {};
    int64_t Rest = E;
    for (int D = O0.Rank - 1; D >= 0; --D) {
      int64_t Size = O0.Shape[D] ? O0.Shape[D] : 1;
      int64_t I = Rest % Size;
      Rest /= Size;
      for (int J = 0; J < A.NumIn; ++J)
        InOff[J] += I * A.In[J].Strides[D];
      for (int J = 0; J < A.NumOut; ++J)
        OutOff[J] += I * A.Out[J].Strides[D];
    }
    float R[MaxRegisters];
    for (int J = 0; J < A.NumIn; ++J)
      R[J] = loadAs(A.In[J].Ptr, uint64_t(InOff[J]), A.In[J].Type);
    for (int K = 0; K < A.Instructions; ++K) {
      const int16_t *X = A.Code[K];
      PointwiseOp Op = PointwiseOp(X[0]);
      float V;
      if (Op == PointwiseOp::Const) {
        V = A.Constants[X[2]];
      } else if (Op == PointwiseOp::Dropout) {
        float Ratio = A.Constants[X[3]];
        V = dsc::dropoutKeeps(A.Seed, uint64_t(X[4]), uint64_t(E), Ratio)
                ? R[X[2]] / (1.0f - Ratio)
                : 0.0f;
      } else {
        float Args[3] = {R[X[2]], R[X[3]], R[X[4]]};
        V = dsc::pointwise::apply(Op, Args);
      }
      R[X[1]] = V;
    }
    for (int J = 0; J < A.NumOut; ++J)
      storeAs(A.Out[J].Ptr, uint64_t(OutOff[J]), A.Out[J].Type, R[A.OutReg[J]]);
  }
}

std::string pointwise(const plan::Kernel &K, const KernelOperands &Ops,
                      const KernelContext &C, cudaStream_t S) {
  PointwiseArgs A;
  const std::vector<int64_t> &I = K.Ints;
  int64_t Regs = I[0], N = I[1];
  if (Regs > MaxRegisters || N > MaxInstructions ||
      K.Floats.size() > size_t(MaxConstants) || K.Inputs.size() > 8 ||
      K.Outputs.size() > 4 || K.Outputs[0].Shape.size() > size_t(MaxRank))
    return "a pointwise program longer than dsrun runs (" +
           std::to_string(N) + " instructions, " + std::to_string(Regs) +
           " registers)";
  A.NumIn = int(K.Inputs.size());
  A.NumOut = int(K.Outputs.size());
  for (int J = 0; J < A.NumIn; ++J)
    A.In[J] = strided(K.Inputs[J], Ops.In[J], Ops.InType[J]);
  for (int J = 0; J < A.NumOut; ++J)
    A.Out[J] = strided(K.Outputs[J], Ops.Out[J], Ops.OutType[J]);
  A.Instructions = int(N);
  for (int64_t J = 0; J < N; ++J)
    for (int F = 0; F < 5; ++F)
      A.Code[J][F] = int16_t(I[size_t(2 + 5 * J + F)]);
  for (int J = 0; J < A.NumOut; ++J)
    A.OutReg[J] = int(I[size_t(3 + 5 * N + J)]);
  for (size_t J = 0; J < K.Floats.size(); ++J)
    A.Constants[J] = float(K.Floats[J]);
  A.Seed = C.Seed;
  A.N = numel(K.Outputs[0].Shape);
  if (A.N)
    pointwiseKernel<<<blocksFor(uint64_t(A.N)), Threads, 0, S>>>(A);
  return "";
}

//===----------------------------------------------------------------------===//
// Fill, reduce
//===----------------------------------------------------------------------===//

__global__ void fillKernel(Strided Y, int64_t N, float V) {
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
__global__ void reduceKernel(const ReduceArgs A) {
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
                   cudaStream_t S) {
  const plan::TensorRef &X = K.Inputs[0];
  ReduceArgs A;
  A.X = strided(X, Ops.In[0], Ops.InType[0]);
  A.Y = Ops.Out[0];
  A.YType = Ops.OutType[0];
  for (size_t D = 0; D < X.Shape.size(); ++D) {
    if (K.Ints[0] >> D & 1) {
      A.ReducedShape[A.ReducedRank] = X.Shape[D];
      A.ReducedStrides[A.ReducedRank++] = X.Strides[D];
      A.Reduced *= X.Shape[D];
    } else {
      A.KeptShape[A.KeptRank] = X.Shape[D];
      A.KeptStrides[A.KeptRank++] = X.Strides[D];
      A.Kept *= X.Shape[D];
    }
  }
  A.Scale = float(K.Floats[0]);
  if (A.Kept)
    reduceKernel<<<blocksFor(uint64_t(A.Kept)), Threads, 0, S>>>(A);
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

//===----------------------------------------------------------------------===//
// Layer and RMS normalization
//===----------------------------------------------------------------------===//

/// Mean (0 for RMS) and rstd of each row; y = (x - mean) rstd w + b.
__global__ void normKernel(const void *X, ElementType XT, const void *W,
                           ElementType WT, const void *B, ElementType BT,
                           void *Y, ElementType YT, float *Mean, float *Rstd,
                           int64_t Cols, float Eps, bool Rms) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Cols);
  float Mu = 0;
  if (!Rms) {
    float Sum = 0;
    for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
      Sum += loadAs(X, Row + C, XT);
    Mu = blockReduce(Sum, false) / float(Cols);
  }
  float Var = 0;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float D = loadAs(X, Row + C, XT) - Mu;
    Var += D * D;
  }
  float S = rsqrtf(blockReduce(Var, false) / float(Cols) + Eps);
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float V = (loadAs(X, Row + C, XT) - Mu) * S * loadAs(W, C, WT);
    if (B)
      V += loadAs(B, C, BT);
    storeAs(Y, Row + C, YT, V);
  }
  if (threadIdx.x == 0) {
    if (Mean)
      Mean[blockIdx.x] = Mu;
    Rstd[blockIdx.x] = S;
  }
}

/// dx of each row.
__global__ void normGradKernel(const void *Dy, ElementType DyT, const void *X,
                               ElementType XT, const void *W, ElementType WT,
                               const float *Mean, const float *Rstd, void *Dx,
                               ElementType DxT, int64_t Cols) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Cols);
  float M = Mean ? Mean[blockIdx.x] : 0.0f, S = Rstd[blockIdx.x];
  float SumG = 0, SumGX = 0;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float G = loadAs(Dy, Row + C, DyT) * loadAs(W, C, WT);
    float Xh = (loadAs(X, Row + C, XT) - M) * S;
    SumG += G;
    SumGX += G * Xh;
  }
  float MeanG = blockReduce(SumG, false) / float(Cols);
  float MeanGX = blockReduce(SumGX, false) / float(Cols);
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float G = loadAs(Dy, Row + C, DyT) * loadAs(W, C, WT);
    float Xh = (loadAs(X, Row + C, XT) - M) * S;
    float D = Mean ? S * (G - MeanG - Xh * MeanGX) : S * (G - Xh * MeanGX);
    storeAs(Dx, Row + C, DxT, D);
  }
}

/// dw and db: a column each, summed over the rows in order.
__global__ void normWeightGradKernel(const void *Dy, ElementType DyT,
                                     const void *X, ElementType XT,
                                     const float *Mean, const float *Rstd,
                                     void *Dw, ElementType DwT, void *Db,
                                     ElementType DbT, int64_t Rows,
                                     int64_t Cols) {
  int64_t C = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (C >= Cols)
    return;
  float SumW = 0, SumB = 0;
  for (int64_t R = 0; R < Rows; ++R) {
    uint64_t At = uint64_t(R * Cols + C);
    float G = loadAs(Dy, At, DyT);
    float Xh = (loadAs(X, At, XT) - (Mean ? Mean[R] : 0.0f)) * Rstd[R];
    SumW += G * Xh;
    SumB += G;
  }
  storeAs(Dw, uint64_t(C), DwT, SumW);
  if (Db)
    storeAs(Db, uint64_t(C), DbT, SumB);
}

std::string norm(const plan::Kernel &K, const KernelOperands &Ops,
                 cudaStream_t S) {
  int64_t Rows = K.Ints[0], Cols = K.Ints[1];
  bool Rms = K.Kind == KernelKind::RMSNorm || K.Kind == KernelKind::RMSNormGrad;
  if (K.Kind == KernelKind::LayerNorm || K.Kind == KernelKind::RMSNorm) {
    bool Bias = !Rms && Ops.In.size() > 2;
    if (Rows)
      normKernel<<<unsigned(Rows), Threads, 0, S>>>(
          Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1],
          Bias ? Ops.In[2] : nullptr, Bias ? Ops.InType[2] : ElementType::F32,
          Ops.Out[0], Ops.OutType[0],
          Rms ? nullptr : static_cast<float *>(Ops.Out[1]),
          static_cast<float *>(Ops.Out[Rms ? 1 : 2]), Cols,
          float(K.Floats[0]), Rms);
    return "";
  }
  // dy, x, w, [mean,] rstd -> dx, dw, [db]
  const float *Mean = Rms ? nullptr : static_cast<const float *>(Ops.In[3]);
  const float *Rstd = static_cast<const float *>(Ops.In[Rms ? 3 : 4]);
  if (Rows)
    normGradKernel<<<unsigned(Rows), Threads, 0, S>>>(
        Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1], Ops.In[2],
        Ops.InType[2], Mean, Rstd, Ops.Out[0], Ops.OutType[0], Cols);
  normWeightGradKernel<<<unsigned((Cols + Threads - 1) / Threads), Threads, 0,
                         S>>>(Ops.In[0], Ops.InType[0], Ops.In[1],
                              Ops.InType[1], Mean, Rstd, Ops.Out[1],
                              Ops.OutType[1], Rms ? nullptr : Ops.Out[2],
                              Rms ? ElementType::F32 : Ops.OutType[2], Rows,
                              Cols);
  return "";
}

//===----------------------------------------------------------------------===//
// Attention: scores and probabilities of one batch in the workspace
//===----------------------------------------------------------------------===//

cudaDataType_t cudaType(ElementType T) {
  return T == ElementType::F32   ? CUDA_R_32F
         : T == ElementType::F16 ? CUDA_R_16F
                                 : CUDA_R_16BF;
}

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
};

/// Scores of one batch [Hq, T, Sk] (fp32, scaled here), masked, to P in
/// the activation type and the log-sum-exp per row; a row with every key
/// masked attends to nothing. With Lse given as input (backward) P is
/// recomputed from it.
__global__ void attentionSoftmaxKernel(const float *Scores, void *P,
                                       ElementType PT, float *Lse,
                                       bool Recompute, AttentionArgs A) {
  int64_t Row = blockIdx.x; // h * T + t
  int64_t H = Row / A.T, Tq = Row % A.T;
  const float *S = Scores + Row * A.Sk;
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
    L = Lse[Row];
  } else {
    float Max = -INFINITY;
    for (int64_t J = threadIdx.x; J < A.Sk; J += blockDim.x)
      Max = fmaxf(Max, Score(J));
    Max = blockReduce(Max, true);
    float Sum = 0;
    if (Max != -INFINITY)
      for (int64_t J = threadIdx.x; J < A.Sk; J += blockDim.x)
        Sum += expf(Score(J) - Max);
    Sum = blockReduce(Sum, false);
    L = Sum > 0 ? Max + logf(Sum) : INFINITY;
    if (threadIdx.x == 0)
      Lse[Row] = L;
  }
  for (int64_t J = threadIdx.x; J < A.Sk; J += blockDim.x)
    storeAs(P, uint64_t(Row * A.Sk + J), PT,
            isinf(L) ? 0.0f : expf(Score(J) - L));
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
__global__ void attentionDeltaKernel(Strided Do, Strided O, int64_t T,
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

uint64_t attentionWorkspace(const plan::Kernel &K, ElementType Act) {
  const std::vector<int64_t> &I = K.Ints;
  uint64_t Hq = uint64_t(I[1]), T = uint64_t(I[3]), Sk = uint64_t(I[4]);
  uint64_t Cells = Hq * T * Sk;
  uint64_t Bytes = Cells * 4 + Cells * elementBytes(Act);
  if (K.Kind == KernelKind::AttentionGrad)
    Bytes += Cells * elementBytes(Act) + Hq * T * 4;
  return Bytes;
}

#define TRY_CUBLAS(Call)                                                       \
  do {                                                                         \
    if (cublasStatus_t E_ = (Call); E_ != CUBLAS_STATUS_SUCCESS)               \
      return "cuBLAS failed (" + std::to_string(int(E_)) + ") in " #Call;      \
  } while (0)

std::string attention(const plan::Kernel &K, const KernelOperands &Ops,
                      const KernelContext &C, cudaStream_t S) {
  bool Grad = K.Kind == KernelKind::AttentionGrad;
  const std::vector<int64_t> &I = K.Ints;
  AttentionArgs A{I[0], I[1], I[2], I[3], I[4], I[5], I[6], I[7] != 0,
                  float(K.Floats[0]), nullptr, ElementType::F32, {0, 0, 0}};
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
  uint64_t Need = attentionWorkspace(K, Act);
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
    attentionSoftmaxKernel<<<unsigned(A.Hq * A.T), Threads, 0, S>>>(
        Scores, P, Act, Lse, Grad, A);
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

//===----------------------------------------------------------------------===//
// Gather and its gradient
//===----------------------------------------------------------------------===//

__device__ int64_t loadIndex(const void *P, uint64_t I, ElementType T) {
  return T == ElementType::I64 ? static_cast<const int64_t *>(P)[I]
                               : int64_t(static_cast<const int32_t *>(P)[I]);
}

__global__ void gatherKernel(const void *X, ElementType XT, const void *Idx,
                             ElementType IT, void *Out, ElementType OT,
                             int64_t Outer, int64_t Dim, int64_t Inner,
                             int64_t Count) {
  int64_t N = Outer * Count * Inner;
  for (int64_t E = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; E < N;
       E += int64_t(gridDim.x) * blockDim.x) {
    int64_t I = E % Inner, J = (E / Inner) % Count, O = E / (Inner * Count);
    int64_t K = loadIndex(Idx, uint64_t(J), IT);
    if (K < 0)
      K += Dim;
    float V = K >= 0 && K < Dim ? loadAs(X, uint64_t((O * Dim + K) * Inner + I), XT)
                                : 0.0f;
    storeAs(Out, uint64_t(E), OT, V);
  }
}

__global__ void iotaKeysKernel(const void *Idx, ElementType IT, int64_t Dim,
                               int32_t *Keys, int32_t *Positions,
                               int64_t Count) {
  for (int64_t J = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; J < Count;
       J += int64_t(gridDim.x) * blockDim.x) {
    int64_t K = loadIndex(Idx, uint64_t(J), IT);
    Keys[J] = int32_t(K < 0 ? K + Dim : K);
    Positions[J] = int32_t(J);
  }
}

/// Rows of the table: each run of equal sorted ids sums its positions'
/// gradients in position order.
__global__ void sortedScatterKernel(const int32_t *Keys, const int32_t *Positions,
                                    const void *Dout, ElementType DT, void *Dx,
                                    ElementType XT, int64_t Dim, int64_t Inner,
                                    int64_t Count) {
  int64_t N = Count * Inner;
  for (int64_t E = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; E < N;
       E += int64_t(gridDim.x) * blockDim.x) {
    int64_t J = E / Inner, I = E % Inner;
    int32_t Key = Keys[J];
    if ((J > 0 && Keys[J - 1] == Key) || Key < 0 || Key >= Dim)
      continue;
    float Sum = 0;
    for (int64_t R = J; R < Count && Keys[R] == Key; ++R)
      Sum += loadAs(Dout, uint64_t(Positions[R]) * Inner + I, DT);
    storeAs(Dx, uint64_t(Key) * Inner + I, XT, Sum);
  }
}

/// A gather along an inner axis (a ViT's class token): every element of
/// the table sums the few positions that read it. Count is small there.
__global__ void gatherGradDirectKernel(const void *Idx, ElementType IT,
                                       const void *Dout, ElementType DT,
                                       void *Dx, ElementType XT, int64_t Outer,
                                       int64_t Dim, int64_t Inner,
                                       int64_t Count) {
  int64_t N = Outer * Dim * Inner;
  for (int64_t E = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; E < N;
       E += int64_t(gridDim.x) * blockDim.x) {
    int64_t I = E % Inner, D = (E / Inner) % Dim, O = E / (Inner * Dim);
    float Sum = 0;
    for (int64_t J = 0; J < Count; ++J) {
      int64_t K = loadIndex(Idx, uint64_t(J), IT);
      if ((K < 0 ? K + Dim : K) == D)
        Sum += loadAs(Dout, uint64_t((O * Count + J) * Inner + I), DT);
    }
    storeAs(Dx, uint64_t(E), XT, Sum);
  }
}

uint64_t sortBytes(int64_t Count) {
  size_t Temp = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, Temp, (int32_t *)nullptr,
                                  (int32_t *)nullptr, (int32_t *)nullptr,
                                  (int32_t *)nullptr, int(Count));
  return uint64_t(Count) * 16 + Temp + 256;
}

std::string gather(const plan::Kernel &K, const KernelOperands &Ops,
                   const KernelContext &C, cudaStream_t S) {
  int64_t Outer = K.Ints[1], Dim = K.Ints[2], Inner = K.Ints[3],
          Count = K.Ints[4];
  if (K.Kind == KernelKind::Gather) {
    uint64_t N = uint64_t(Outer * Count * Inner);
    if (N)
      gatherKernel<<<blocksFor(N), Threads, 0, S>>>(
          Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1], Ops.Out[0],
          Ops.OutType[0], Outer, Dim, Inner, Count);
    return "";
  }
  if (Outer != 1) {
    uint64_t N = uint64_t(Outer * Dim * Inner);
    if (N)
      gatherGradDirectKernel<<<blocksFor(N), Threads, 0, S>>>(
          Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1], Ops.Out[0],
          Ops.OutType[0], Outer, Dim, Inner, Count);
    return "";
  }
  uint64_t Need = sortBytes(Count);
  if (Need > C.WorkspaceBytes)
    return "an embedding's gradient needs " + std::to_string(Need) +
           " bytes of workspace; the plan has " +
           std::to_string(C.WorkspaceBytes);
  char *W = static_cast<char *>(C.Workspace);
  int32_t *KeysIn = reinterpret_cast<int32_t *>(W);
  int32_t *KeysOut = KeysIn + Count, *PosIn = KeysOut + Count,
          *PosOut = PosIn + Count;
  void *Temp = PosOut + Count;
  size_t TempBytes = Need - uint64_t(Count) * 16;
  cudaMemsetAsync(Ops.Out[0], 0,
                  uint64_t(Dim * Inner) * elementBytes(Ops.OutType[0]), S);
  if (!Count)
    return "";
  iotaKeysKernel<<<blocksFor(uint64_t(Count)), Threads, 0, S>>>(
      Ops.In[0], Ops.InType[0], Dim, KeysIn, PosIn, Count);
  if (cub::DeviceRadixSort::SortPairs(Temp, TempBytes, KeysIn, KeysOut, PosIn,
                                      PosOut, int(Count), 0, 32,
                                      S) != cudaSuccess)
    return "sorting the token ids of an embedding's gradient failed";
  sortedScatterKernel<<<blocksFor(uint64_t(Count * Inner)), Threads, 0, S>>>(
      KeysOut, PosOut, Ops.In[1], Ops.InType[1], Ops.Out[0], Ops.OutType[0],
      Dim, Inner, Count);
  return "";
}

//===----------------------------------------------------------------------===//
// Cross entropy
//===----------------------------------------------------------------------===//

__global__ void lseKernel(const void *X, ElementType XT, float *Lse,
                          int64_t V) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(V);
  float Max = -INFINITY;
  for (int64_t C = threadIdx.x; C < V; C += blockDim.x)
    Max = fmaxf(Max, loadAs(X, Row + C, XT));
  Max = blockReduce(Max, true);
  float Sum = 0;
  for (int64_t C = threadIdx.x; C < V; C += blockDim.x)
    Sum += expf(loadAs(X, Row + C, XT) - Max);
  Sum = blockReduce(Sum, false);
  if (threadIdx.x == 0)
    Lse[blockIdx.x] = Max + logf(Sum);
}

/// One block: the mean loss over the rows whose target counts.
__global__ void lossKernel(const void *X, ElementType XT, const void *T,
                           ElementType TT, const float *Lse, float *Loss,
                           int64_t Rows, int64_t V, int64_t Ignore) {
  float Sum = 0, Count = 0;
  for (int64_t R = threadIdx.x; R < Rows; R += blockDim.x) {
    int64_t Tg = loadIndex(T, uint64_t(R), TT);
    if (Tg == Ignore || Tg < 0 || Tg >= V)
      continue;
    Sum += Lse[R] - loadAs(X, uint64_t(R * V + Tg), XT);
    Count += 1;
  }
  Sum = blockReduce(Sum, false);
  Count = blockReduce(Count, false);
  if (threadIdx.x == 0)
    *Loss = Count > 0 ? Sum / Count : 0.0f;
}

__global__ void countTargetsKernel(const void *T, ElementType TT, int64_t Rows,
                                   int64_t Ignore, float *Count) {
  float N = 0;
  for (int64_t R = threadIdx.x; R < Rows; R += blockDim.x)
    N += loadIndex(T, uint64_t(R), TT) != Ignore;
  N = blockReduce(N, false);
  if (threadIdx.x == 0)
    *Count = N;
}

__global__ void crossEntropyGradKernel(const void *X, ElementType XT,
                                       const void *T, ElementType TT,
                                       const float *Lse, const float *Dloss,
                                       const float *Count, void *D,
                                       ElementType DT, int64_t V,
                                       int64_t Ignore) {
  int64_t R = blockIdx.x;
  uint64_t Row = uint64_t(R * V);
  int64_t Tg = loadIndex(T, uint64_t(R), TT);
  bool Counts = Tg != Ignore && *Count > 0;
  float Scale = Counts ? *Dloss / *Count : 0.0f;
  for (int64_t C = threadIdx.x; C < V; C += blockDim.x) {
    float G = Counts ? (expf(loadAs(X, Row + C, XT) - Lse[R]) - float(C == Tg)) *
                           Scale
                     : 0.0f;
    storeAs(D, Row + C, DT, G);
  }
}

std::string crossEntropy(const plan::Kernel &K, const KernelOperands &Ops,
                         const KernelContext &C, cudaStream_t S) {
  int64_t Rows = K.Ints[0], V = K.Ints[1], Ignore = K.Ints[2];
  if (!Rows)
    return "";
  if (K.Kind == KernelKind::CrossEntropy) {
    float *Lse = static_cast<float *>(Ops.Out[1]);
    lseKernel<<<unsigned(Rows), Threads, 0, S>>>(Ops.In[0], Ops.InType[0],
                                                 Lse, V);
    lossKernel<<<1, 1024, 0, S>>>(Ops.In[0], Ops.InType[0], Ops.In[1],
                                  Ops.InType[1], Lse,
                                  static_cast<float *>(Ops.Out[0]), Rows, V,
                                  Ignore);
    return "";
  }
  if (C.WorkspaceBytes < sizeof(float))
    return "the cross entropy's gradient needs 4 bytes of workspace";
  float *Count = static_cast<float *>(C.Workspace);
  countTargetsKernel<<<1, 1024, 0, S>>>(Ops.In[1], Ops.InType[1], Rows, Ignore,
                                        Count);
  crossEntropyGradKernel<<<unsigned(Rows), Threads, 0, S>>>(
      Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1],
      static_cast<const float *>(Ops.In[2]),
      static_cast<const float *>(Ops.In[3]), Count, Ops.Out[0],
      Ops.OutType[0], V, Ignore);
  return "";
}

std::string matmul(const plan::Kernel &K, const KernelOperands &Ops,
                   const KernelContext &C, cudaStream_t S) {
  const std::vector<int64_t> &I = K.Ints;
  if (Ops.In.size() > 2 || I[12] != 0)
    return "a GEMM epilogue dsrun does not run yet";
  if (Ops.InType[0] != Ops.OutType[0] || Ops.InType[1] != Ops.OutType[0])
    return "a GEMM of operands of different element types";
  TRY_CUBLAS(cublasSetStream(C.Cublas, S));
  TRY_CUBLAS(gemm(C.Cublas, I[4], I[5], I[0], I[1], I[2], float(K.Floats[0]),
                  Ops.In[0], Ops.InType[0], I[6], I[9], Ops.In[1],
                  Ops.InType[1], I[7], I[10], float(K.Floats[1]), Ops.Out[0],
                  Ops.OutType[0], I[8], I[11], I[3]));
  return "";
}

} // namespace

uint64_t kernelWorkspaceBytes(const plan::Kernel &K,
                              const KernelOperands &Ops) {
  switch (K.Kind) {
  case KernelKind::Attention:
  case KernelKind::AttentionGrad:
    return attentionWorkspace(K, Ops.InType[K.Kind == KernelKind::Attention ? 0 : 1]);
  case KernelKind::GatherGrad:
    return K.Ints[1] == 1 ? sortBytes(K.Ints[4]) : 0;
  case KernelKind::CrossEntropyGrad:
    return sizeof(float);
  default:
    return 0;
  }
}

std::string launchComputeKernel(const plan::Kernel &K,
                                const KernelOperands &Ops,
                                const KernelContext &C, cudaStream_t S) {
  switch (K.Kind) {
  case KernelKind::Gemm:
    return matmul(K, Ops, C, S);
  case KernelKind::Pointwise:
    return pointwise(K, Ops, C, S);
  case KernelKind::Fill: {
    int64_t N = numel(K.Outputs[0].Shape);
    if (N)
      fillKernel<<<blocksFor(uint64_t(N)), Threads, 0, S>>>(
          strided(K.Outputs[0], Ops.Out[0], Ops.OutType[0]), N,
          float(K.Floats[0]));
    return "";
  }
  case KernelKind::Reduce:
    return reduce(K, Ops, S);
  case KernelKind::Softmax:
    if (K.Ints[0])
      softmaxKernel<<<unsigned(K.Ints[0]), Threads, 0, S>>>(
          Ops.In[0], Ops.InType[0], Ops.Out[0], Ops.OutType[0], K.Ints[1],
          K.Ints[3] != 0, K.Ints[2] != 0);
    return "";
  case KernelKind::SoftmaxGrad:
    if (K.Ints[0])
      softmaxGradKernel<<<unsigned(K.Ints[0]), Threads, 0, S>>>(
          Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1], Ops.Out[0],
          Ops.OutType[0], K.Ints[1], K.Ints[2] != 0);
    return "";
  case KernelKind::LayerNorm:
  case KernelKind::LayerNormGrad:
  case KernelKind::RMSNorm:
  case KernelKind::RMSNormGrad:
    return norm(K, Ops, S);
  case KernelKind::Attention:
  case KernelKind::AttentionGrad:
    return attention(K, Ops, C, S);
  case KernelKind::Gather:
  case KernelKind::GatherGrad:
    return gather(K, Ops, C, S);
  case KernelKind::CrossEntropy:
  case KernelKind::CrossEntropyGrad:
    return crossEntropy(K, Ops, C, S);
  }
  return "a kernel of a kind dsrun does not know";
}

} // namespace dsrun
