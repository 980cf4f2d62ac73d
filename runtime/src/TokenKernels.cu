//===- TokenKernels.cu - Embedding lookup, cross entropy ------------------===//
//
// The kinds indexed by token ids: the embedding gather and its gradient
// (the ids sorted, stable, so that the sums are deterministic), and the
// fused softmax-cross-entropy over the vocabulary and its gradient.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.cuh"

#include <cub/cub.cuh>

namespace dsrun {
namespace kernels {

using plan::KernelKind;
using plan::PointwiseOp;

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

/// Columns of the table a block of runScatterKernel sums at once: a
/// warp's 32 lanes, two each.
constexpr int ScatterColumns = 64;
/// Warps of a runScatterKernel block, each summing every ScatterWarps-th
/// position of the run.
constexpr int ScatterWarps = 8;

/// Rows of the table: run R of equal sorted ids (its id Unique[R], its
/// positions Positions[Offset[R] .. + Length[R]]) sums their gradients. A
/// block takes one run and ScatterColumns columns; its warps split the
/// positions, lane by lane over the columns, and add their partial sums
/// in warp order, so the sum is the same every run. A thread per column
/// walking a whole run made a common token (thousands of positions among
/// 16 k) cost GPT-2 small 2.2 ms of a 35 ms step.
__global__ void runScatterKernel(const int32_t *Unique, const int32_t *Offset,
                                 const int32_t *Length, const int32_t *Runs,
                                 const int32_t *Positions, const void *Dout,
                                 ElementType DT, void *Dx, ElementType XT,
                                 int64_t Dim, int64_t Inner) {
  __shared__ float Partial[ScatterWarps][ScatterColumns];
  int Warp = int(threadIdx.x) / 32, Lane = int(threadIdx.x) % 32;
  int64_t Tiles = (Inner + ScatterColumns - 1) / ScatterColumns;
  int64_t Items = int64_t(*Runs) * Tiles;
  for (int64_t Item = blockIdx.x; Item < Items; Item += gridDim.x) {
    int64_t Run = Item / Tiles;
    int64_t Column = (Item % Tiles) * ScatterColumns + 2 * Lane;
    int32_t Key = Unique[Run];
    if (Key < 0 || Key >= Dim) // The same for the whole block.
      continue;
    int64_t Begin = Offset[Run], End = Begin + Length[Run];
    float Sum0 = 0, Sum1 = 0;
#pragma unroll 4
    for (int64_t R = Begin + Warp; R < End; R += ScatterWarps) {
      uint64_t Row = uint64_t(Positions[R]) * uint64_t(Inner);
      if (Column < Inner)
        Sum0 += loadAs(Dout, Row + uint64_t(Column), DT);
      if (Column + 1 < Inner)
        Sum1 += loadAs(Dout, Row + uint64_t(Column) + 1, DT);
    }
    Partial[Warp][2 * Lane] = Sum0;
    Partial[Warp][2 * Lane + 1] = Sum1;
    __syncthreads();
    if (Warp == 0)
      for (int K = 0; K < 2; ++K) {
        int64_t C = Column + K;
        float Total = 0;
#pragma unroll
        for (int W = 0; W < ScatterWarps; ++W)
          Total += Partial[W][2 * Lane + K];
        if (C < Inner)
          storeAs(Dx, uint64_t(Key) * uint64_t(Inner) + uint64_t(C), XT,
                  Total);
      }
    __syncthreads();
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

/// Scratch of cub's sort, run-length encoding and scan for Count ids.
size_t cubTempBytes(int64_t Count) {
  size_t Sort = 0, Encode = 0, Scan = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, Sort, (int32_t *)nullptr,
                                  (int32_t *)nullptr, (int32_t *)nullptr,
                                  (int32_t *)nullptr, int(Count));
  cub::DeviceRunLengthEncode::Encode(nullptr, Encode, (int32_t *)nullptr,
                                     (int32_t *)nullptr, (int32_t *)nullptr,
                                     (int32_t *)nullptr, int(Count));
  cub::DeviceScan::ExclusiveSum(nullptr, Scan, (int32_t *)nullptr,
                                (int32_t *)nullptr, int(Count));
  return std::max({Sort, Encode, Scan});
}

/// Keys and positions, unsorted and sorted, each run's id, offset and
/// length, the run count, and cub's scratch, 256-byte aligned (dsc's
/// planner reserves 40 bytes per id and a MiB).
uint64_t sortBytes(int64_t Count) {
  return uint64_t(Count) * 28 + 16 + cubTempBytes(Count) + 256;
}

std::string gather(const plan::Kernel &K, const KernelOperands &Ops,
                   const KernelContext &C, cudaStream_t S) {
  const plan::GatherAttrs &A = *K.as<plan::GatherAttrs>();
  int64_t Outer = A.Outer, Dim = A.Dim, Inner = A.Inner, Count = A.Count;
  if (K.kind() == KernelKind::Gather) {
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
          *PosOut = PosIn + Count, *Unique = PosOut + Count,
          *Length = Unique + Count, *Offset = Length + Count,
          *Runs = Offset + Count;
  // cub's scratch starts 256-byte aligned.
  void *Temp = reinterpret_cast<void *>(
      (reinterpret_cast<uintptr_t>(Runs + 4) + 255) / 256 * 256);
  size_t TempBytes = cubTempBytes(Count);
  cudaMemsetAsync(Ops.Out[0], 0,
                  uint64_t(Dim * Inner) * elementBytes(Ops.OutType[0]), S);
  if (!Count)
    return "";
  iotaKeysKernel<<<blocksFor(uint64_t(Count)), Threads, 0, S>>>(
      Ops.In[0], Ops.InType[0], Dim, KeysIn, PosIn, Count);
  if (cub::DeviceRadixSort::SortPairs(Temp, TempBytes, KeysIn, KeysOut, PosIn,
                                      PosOut, int(Count), 0, 32,
                                      S) != cudaSuccess ||
      cub::DeviceRunLengthEncode::Encode(Temp, TempBytes, KeysOut, Unique,
                                         Length, Runs, int(Count),
                                         S) != cudaSuccess ||
      cub::DeviceScan::ExclusiveSum(Temp, TempBytes, Length, Offset,
                                    int(Count), S) != cudaSuccess)
    return "sorting the token ids of an embedding's gradient failed";
  // The run count is on the device: a block per (run, column tile) up
  // to 4096 blocks, each looping over the items past that.
  int64_t Items = Count * ((Inner + ScatterColumns - 1) / ScatterColumns);
  runScatterKernel<<<unsigned(std::min<int64_t>(Items, 4096)),
                     32 * ScatterWarps, 0, S>>>(
      Unique, Offset, Length, Runs, PosOut, Ops.In[1], Ops.InType[1],
      Ops.Out[0], Ops.OutType[0], Dim, Inner);
  return "";
}

//===----------------------------------------------------------------------===//
// Cross entropy
//===----------------------------------------------------------------------===//

// Logits rows are Ld apart (padded to a multiple of 8 where the plan made
// them so), the gradient's LdD.

/// A running log-sum-exp (max M, sum S of exp(x - M)) and more elements.
__device__ __forceinline__ void addToLse(float &M, float &S, const float *X,
                                         int N) {
  float Top = M;
  for (int K = 0; K < N; ++K)
    Top = fmaxf(Top, X[K]);
  if (Top == -INFINITY)
    return;
  S *= expf(M - Top);
  for (int K = 0; K < N; ++K)
    S += expf(X[K] - Top);
  M = Top;
}
__device__ __forceinline__ void mergeLse(float &M, float &S, float M2,
                                         float S2) {
  float Top = fmaxf(M, M2);
  if (Top == -INFINITY)
    return;
  S = S * expf(M - Top) + S2 * expf(M2 - Top);
  M = Top;
}

/// Each row's log-sum-exp in one pass over the logits (an online max and
/// sum per thread, merged over the block), 8 elements per load where the
/// rows allow: the vocabulary's row is read once, not twice.
__global__ void lseKernel(const void *X, ElementType XT, float *Lse,
                          int64_t V, int64_t Ld, bool Vec) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Ld);
  float M = -INFINITY, S = 0;
  int64_t Scalar = 0;
  if (Vec) {
    Scalar = V / 8 * 8;
    for (int64_t C = threadIdx.x * 8; C < Scalar; C += blockDim.x * 8) {
      float Y[8];
      load8(X, Row + C, XT, Y);
      addToLse(M, S, Y, 8);
    }
  }
  for (int64_t C = Scalar + threadIdx.x; C < V; C += blockDim.x) {
    float Y = loadAs(X, Row + C, XT);
    addToLse(M, S, &Y, 1);
  }
  for (int O = 16; O > 0; O /= 2) {
    float M2 = __shfl_xor_sync(0xffffffffu, M, O),
          S2 = __shfl_xor_sync(0xffffffffu, S, O);
    mergeLse(M, S, M2, S2);
  }
  __shared__ float Ms[32], Ss[32];
  int Lane = threadIdx.x % 32, Warp = threadIdx.x / 32;
  if (Lane == 0)
    Ms[Warp] = M, Ss[Warp] = S;
  __syncthreads();
  if (threadIdx.x == 0) {
    float Mt = -INFINITY, St = 0;
    for (int W = 0; W < int(blockDim.x + 31) / 32; ++W)
      mergeLse(Mt, St, Ms[W], Ss[W]);
    Lse[blockIdx.x] = Mt + logf(St);
  }
}

/// One block: the mean loss over the rows whose target counts.
__global__ void lossKernel(const void *X, ElementType XT, const void *T,
                           ElementType TT, const float *Lse, float *Loss,
                           int64_t Rows, int64_t V, int64_t Ld,
                           int64_t Ignore) {
  float Sum = 0, Count = 0;
  for (int64_t R = threadIdx.x; R < Rows; R += blockDim.x) {
    int64_t Tg = loadIndex(T, uint64_t(R), TT);
    if (Tg == Ignore || Tg < 0 || Tg >= V)
      continue;
    Sum += Lse[R] - loadAs(X, uint64_t(R * Ld + Tg), XT);
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
                                       const float *Count,
                                       const float *LossScale, void *D,
                                       ElementType DT, int64_t V, int64_t Ld,
                                       int64_t LdD, int64_t Ignore, bool Vec) {
  int64_t R = blockIdx.x;
  uint64_t Row = uint64_t(R * Ld), RowD = uint64_t(R * LdD);
  int64_t Tg = loadIndex(T, uint64_t(R), TT);
  bool Counts = Tg != Ignore && *Count > 0;
  float Scale = Counts ? *Dloss / *Count : 0.0f;
  if (LossScale)
    Scale *= *LossScale;
  float L = Lse[R];
  int64_t Scalar = 0;
  if (Vec) {
    Scalar = V / 8 * 8;
    for (int64_t C = threadIdx.x * 8; C < Scalar; C += blockDim.x * 8) {
      float Y[8];
      load8(X, Row + C, XT, Y);
#pragma unroll
      for (int K = 0; K < 8; ++K)
        Y[K] = Counts ? (expf(Y[K] - L) - float(C + K == Tg)) * Scale : 0.0f;
      store8(D, RowD + C, DT, Y);
    }
  }
  for (int64_t C = Scalar + threadIdx.x; C < V; C += blockDim.x) {
    float G = Counts ? (expf(loadAs(X, Row + C, XT) - L) - float(C == Tg)) *
                           Scale
                     : 0.0f;
    storeAs(D, RowD + C, DT, G);
  }
}

std::string crossEntropy(const plan::Kernel &K, const KernelOperands &Ops,
                         const KernelContext &C, cudaStream_t S) {
  const plan::CrossEntropyAttrs &A = *K.as<plan::CrossEntropyAttrs>();
  int64_t Rows = A.Rows, V = A.Classes, Ignore = A.IgnoreIndex;
  int64_t Ld = plan::rowStride(K.Inputs[0].Shape, K.Inputs[0].Strides);
  if (!Rows)
    return "";
  if (K.kind() == KernelKind::CrossEntropy) {
    float *Lse = static_cast<float *>(Ops.Out[1]);
    lseKernel<<<unsigned(Rows), Threads, 0, S>>>(
        Ops.In[0], Ops.InType[0], Lse, V, Ld,
        rowsOf8(Ops.In[0], Ops.InType[0], Ld));
    lossKernel<<<1, 1024, 0, S>>>(Ops.In[0], Ops.InType[0], Ops.In[1],
                                  Ops.InType[1], Lse,
                                  static_cast<float *>(Ops.Out[0]), Rows, V,
                                  Ld, Ignore);
    return "";
  }
  if (C.WorkspaceBytes < sizeof(float))
    return "the cross entropy's gradient needs 4 bytes of workspace";
  float *Count = static_cast<float *>(C.Workspace);
  int64_t LdD = plan::rowStride(K.Outputs[0].Shape, K.Outputs[0].Strides);
  countTargetsKernel<<<1, 1024, 0, S>>>(Ops.In[1], Ops.InType[1], Rows, Ignore,
                                        Count);
  crossEntropyGradKernel<<<unsigned(Rows), Threads, 0, S>>>(
      Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1],
      static_cast<const float *>(Ops.In[2]),
      static_cast<const float *>(Ops.In[3]), Count, C.LossScale, Ops.Out[0],
      Ops.OutType[0], V, Ld, LdD, Ignore,
      rowsOf8(Ops.In[0], Ops.InType[0], Ld) &&
          rowsOf8(Ops.Out[0], Ops.OutType[0], LdD) &&
          Ops.InType[0] == Ops.OutType[0]);
  return "";
}


} // namespace kernels
} // namespace dsrun
