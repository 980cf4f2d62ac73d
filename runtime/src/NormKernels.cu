//===- NormKernels.cu - Layer and RMS norms, column sums ------------------===//
//
// LayerNorm and RMSNorm forward and backward (rows of 16-bit values eight
// per thread where they allow it), and the column sums that make bias and
// norm weight gradients deterministic (include/dsc/ColumnSums.h).
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.cuh"

#include "dsc/ColumnSums.h"

namespace dsrun {
namespace kernels {

using plan::KernelKind;
using plan::PointwiseOp;

/// Pass 1: a tile of 32 columns of one chunk of rows; each of 8 row lanes
/// sums every 8th row in order, then the lanes are added in order.
__global__ void columnSumChunks(const __grid_constant__ ColumnSumArgs A) {
  int64_t C = int64_t(blockIdx.x) * TileCols + threadIdx.x;
  int64_t Chunk = blockIdx.y;
  int64_t End = min(A.Rows, (Chunk + 1) * A.ChunkRows);
  float S0 = 0, S1 = 0;
  if (C < A.Cols)
    for (int64_t R = Chunk * A.ChunkRows + threadIdx.y; R < End;
         R += TileRows) {
      uint64_t At = uint64_t(R) * uint64_t(A.Cols) + uint64_t(C);
      float G = loadAs(A.G, At, A.GT);
      if (A.X) {
        float Xh = (loadAs(A.X, At, A.XT) - (A.Mean ? A.Mean[R] : 0.0f)) *
                   A.Rstd[R];
        S0 += G * Xh;
        S1 += G;
      } else {
        S0 += G;
      }
    }
  __shared__ float Tile[2][TileRows][TileCols];
  Tile[0][threadIdx.y][threadIdx.x] = S0;
  Tile[1][threadIdx.y][threadIdx.x] = S1;
  __syncthreads();
  int K = int(threadIdx.y);
  if (K >= A.Sums || C >= A.Cols)
    return;
  float Sum = 0;
  for (int Y = 0; Y < TileRows; ++Y)
    Sum += Tile[K][Y][threadIdx.x];
  if (A.Partial)
    A.Partial[(uint64_t(Chunk) * A.Sums + K) * uint64_t(A.Cols) + C] = Sum;
  else
    storeAs(A.Out[K], uint64_t(C), A.OutT[K], Sum * A.Scale);
}

/// Pass 2: each column's chunk sums, added in chunk order.
__global__ void columnSumTotals(const __grid_constant__ ColumnSumArgs A,
                                int64_t Chunks) {
  int64_t C = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int K = int(blockIdx.y);
  if (C >= A.Cols)
    return;
  float Sum = 0;
  for (int64_t Ch = 0; Ch < Chunks; ++Ch)
    Sum += A.Partial[(uint64_t(Ch) * A.Sums + K) * uint64_t(A.Cols) + C];
  storeAs(A.Out[K], uint64_t(C), A.OutT[K], Sum * A.Scale);
}

/// Pass 1 over 16-bit matrices whose rows start on 16 bytes: each thread
/// takes 8 adjacent columns with one load per row (a block 256 columns),
/// and every column is summed in the order above, so the sums are the
/// same to the bit.
template <ElementType T>
__global__ void columnSumChunks8(const __grid_constant__ ColumnSumArgs A) {
  constexpr int Cols = TileCols * 8;
  int64_t C0 = (int64_t(blockIdx.x) * TileCols + threadIdx.x) * 8;
  int64_t Chunk = blockIdx.y;
  int64_t End = min(A.Rows, (Chunk + 1) * A.ChunkRows);
  float S0[8] = {}, S1[8] = {};
  if (C0 < A.Cols)
    for (int64_t R = Chunk * A.ChunkRows + threadIdx.y; R < End;
         R += TileRows) {
      uint64_t At = uint64_t(R) * uint64_t(A.Cols) + uint64_t(C0);
      uint4 GRaw = *reinterpret_cast<const uint4 *>(
          static_cast<const uint16_t *>(A.G) + At);
      const uint16_t *G = reinterpret_cast<const uint16_t *>(&GRaw);
      if (A.X) {
        uint4 XRaw = *reinterpret_cast<const uint4 *>(
            static_cast<const uint16_t *>(A.X) + At);
        const uint16_t *X = reinterpret_cast<const uint16_t *>(&XRaw);
        float M = A.Mean ? A.Mean[R] : 0.0f, Rs = A.Rstd[R];
#pragma unroll
        for (int I = 0; I < 8; ++I) {
          float Gv = from16<T>(G[I]);
          S0[I] += Gv * ((from16<T>(X[I]) - M) * Rs);
          S1[I] += Gv;
        }
      } else {
#pragma unroll
        for (int I = 0; I < 8; ++I)
          S0[I] += from16<T>(G[I]);
      }
    }
  __shared__ float Tile[2][TileRows][Cols];
#pragma unroll
  for (int I = 0; I < 8; ++I) {
    Tile[0][threadIdx.y][threadIdx.x * 8 + I] = S0[I];
    Tile[1][threadIdx.y][threadIdx.x * 8 + I] = S1[I];
  }
  __syncthreads();
  int K = int(threadIdx.y);
  if (K >= A.Sums || C0 >= A.Cols)
    return;
#pragma unroll
  for (int I = 0; I < 8; ++I) {
    float Sum = 0;
    for (int Y = 0; Y < TileRows; ++Y)
      Sum += Tile[K][Y][threadIdx.x * 8 + I];
    int64_t C = C0 + I;
    if (A.Partial)
      A.Partial[(uint64_t(Chunk) * A.Sums + K) * uint64_t(A.Cols) + C] = Sum;
    else
      storeAs(A.Out[K], uint64_t(C), A.OutT[K], Sum * A.Scale);
  }
}

/// The 16-bit type both matrices share where columnSumChunks8 applies,
/// else F32.
ElementType vectorColumnType(const ColumnSumArgs &A) {
  auto Aligned = [](const void *P) {
    return reinterpret_cast<uintptr_t>(P) % 16 == 0;
  };
  if (A.Cols % 8 || (A.GT != ElementType::BF16 && A.GT != ElementType::F16) ||
      !Aligned(A.G) || (A.X && (A.XT != A.GT || !Aligned(A.X))))
    return ElementType::F32;
  return A.GT;
}

std::string columnSums(ColumnSumArgs A, const KernelContext &Ctx,
                       cudaStream_t S) {
  if (!A.Cols)
    return "";
  // ModelProgram::resolve checked the workspace (kernelWorkspaceBytes)
  // once, at start-up.
  int64_t Chunks = dsc::columnChunks(A.Rows);
  A.ChunkRows = dsc::columnChunkRows(A.Rows);
  A.Partial = Chunks > 1 ? static_cast<float *>(Ctx.Workspace) : nullptr;
  unsigned Tiles = unsigned((A.Cols + TileCols - 1) / TileCols);
  ElementType Vector = vectorColumnType(A);
  unsigned Tiles8 = unsigned((A.Cols + TileCols * 8 - 1) / (TileCols * 8));
  if (Chunks > 0 && Vector == ElementType::BF16)
    columnSumChunks8<ElementType::BF16>
        <<<dim3(Tiles8, unsigned(Chunks)), dim3(TileCols, TileRows), 0, S>>>(A);
  else if (Chunks > 0 && Vector == ElementType::F16)
    columnSumChunks8<ElementType::F16>
        <<<dim3(Tiles8, unsigned(Chunks)), dim3(TileCols, TileRows), 0, S>>>(A);
  else if (Chunks > 0)
    columnSumChunks<<<dim3(Tiles, unsigned(Chunks)), dim3(TileCols, TileRows),
                      0, S>>>(A);
  if (Chunks != 1) // Several chunks to add, or no rows: zeros.
    columnSumTotals<<<dim3(unsigned((A.Cols + Threads - 1) / Threads),
                           unsigned(A.Sums)),
                      Threads, 0, S>>>(A, Chunks);
  return "";
}

//===----------------------------------------------------------------------===//
// Layer and RMS normalization
//===----------------------------------------------------------------------===//

/// V as a value of type T holds it.
__device__ __forceinline__ float roundAs(float V, ElementType T) {
  return T == ElementType::BF16  ? fromBF16(toBF16(V))
         : T == ElementType::F16 ? fromFP16(toFP16(V))
                                 : V;
}

/// Mean (0 for RMS) and rstd of each row; y = (x - mean) rstd w + b. With
/// X2 (a residual add folded in), x = X + X2 as Sum stores it, and Sum
/// keeps it.
__global__ void normKernel(const void *X, ElementType XT, const void *X2,
                           ElementType X2T, void *Sum, ElementType SumT,
                           const void *W, ElementType WT, const void *B,
                           ElementType BT, void *Y, ElementType YT,
                           float *Mean, float *Rstd, int64_t Cols, float Eps,
                           bool Rms) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Cols);
  auto In = [&](int64_t C) {
    float V = loadAs(X, Row + C, XT);
    return X2 ? roundAs(V + loadAs(X2, Row + C, X2T), SumT) : V;
  };
  if (X2)
    for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
      storeAs(Sum, Row + C, SumT, In(C));
  float Mu = 0;
  if (!Rms) {
    float Total = 0;
    for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
      Total += In(C);
    Mu = blockReduce(Total, false) / float(Cols);
  }
  float Var = 0;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float D = In(C) - Mu;
    Var += D * D;
  }
  float S = rsqrtf(blockReduce(Var, false) / float(Cols) + Eps);
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float V = (In(C) - Mu) * S * loadAs(W, C, WT);
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

/// dx of each row; with G (the residual stream's gradient folded in),
/// dx as stored plus G.
__global__ void normGradKernel(const void *Dy, ElementType DyT, const void *X,
                               ElementType XT, const void *W, ElementType WT,
                               const float *Mean, const float *Rstd,
                               const void *G, ElementType GT, void *Dx,
                               ElementType DxT, int64_t Cols) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Cols);
  float M = Mean ? Mean[blockIdx.x] : 0.0f, S = Rstd[blockIdx.x];
  float SumG = 0, SumGX = 0;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float Gw = loadAs(Dy, Row + C, DyT) * loadAs(W, C, WT);
    float Xh = (loadAs(X, Row + C, XT) - M) * S;
    SumG += Gw;
    SumGX += Gw * Xh;
  }
  float MeanG = blockReduce(SumG, false) / float(Cols);
  float MeanGX = blockReduce(SumGX, false) / float(Cols);
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float Gw = loadAs(Dy, Row + C, DyT) * loadAs(W, C, WT);
    float Xh = (loadAs(X, Row + C, XT) - M) * S;
    float D = Mean ? S * (Gw - MeanG - Xh * MeanGX) : S * (Gw - Xh * MeanGX);
    if (G)
      D = roundAs(D, DxT) + loadAs(G, Row + C, GT);
    storeAs(Dx, Row + C, DxT, D);
  }
}

//===----------------------------------------------------------------------===//
// Norms over rows of 16-bit values: eight per thread, read once
//===----------------------------------------------------------------------===//
//
// The kernels above read each operand two or three times, two bytes at a
// time, with the element type decided per load: about 300 GB/s. Where
// every row operand and the weights are one 16-bit type, the row length
// is a multiple of 8 and every row starts on 16 bytes, a thread loads its
// eight elements of each operand with one 16-byte load, keeps them in
// registers through both reductions, and stores eight at once. The math
// is the kernels' above, term for term; only the order of the row sums
// differs.

/// Two sums over the block at once (one pass of shared memory).
__device__ float2 blockSum2(float2 V) {
  __shared__ float2 Partial[32];
  __shared__ float2 Result;
  V.x = warpSum(V.x);
  V.y = warpSum(V.y);
  int Lane = threadIdx.x % 32, Warp = threadIdx.x / 32;
  if (Lane == 0)
    Partial[Warp] = V;
  __syncthreads();
  if (Warp == 0) {
    int Warps = (blockDim.x + 31) / 32;
    float2 X = Lane < Warps ? Partial[Lane] : make_float2(0, 0);
    X.x = warpSum(X.x);
    X.y = warpSum(X.y);
    if (Lane == 0)
      Result = X;
  }
  __syncthreads();
  return Result;
}

struct NormRowArgs {
  const void *X, *X2, *W, *B; // X2: the residual addend (null: none)
  void *Sum, *Y;
  float *Mean, *Rstd;
  int64_t Cols;
  float Eps;
  bool Rms;
};

template <ElementType T>
__global__ void normRowsKernel(const __grid_constant__ NormRowArgs A) {
  int64_t C0 = int64_t(threadIdx.x) * VecElems;
  bool Live = C0 < A.Cols;
  uint64_t At = uint64_t(blockIdx.x) * uint64_t(A.Cols) + uint64_t(C0);
  float X[VecElems] = {};
  if (Live) {
    load8<T>(X, A.X, At);
    if (A.X2) {
      float X2[VecElems];
      load8<T>(X2, A.X2, At);
#pragma unroll
      for (int I = 0; I < VecElems; ++I)
        X[I] = from16<T>(to16<T>(X[I] + X2[I]));
      store8<T>(A.Sum, At, X);
    }
  }
  float Mu = 0;
  if (!A.Rms) {
    float Total = 0;
#pragma unroll
    for (int I = 0; I < VecElems; ++I)
      Total += X[I];
    Mu = blockReduce(Total, false) / float(A.Cols);
  }
  float Var = 0;
  if (Live)
#pragma unroll
    for (int I = 0; I < VecElems; ++I)
      Var += (X[I] - Mu) * (X[I] - Mu);
  float S = rsqrtf(blockReduce(Var, false) / float(A.Cols) + A.Eps);
  if (Live) {
    float W[VecElems], B[VecElems] = {};
    load8<T>(W, A.W, uint64_t(C0));
    if (A.B)
      load8<T>(B, A.B, uint64_t(C0));
#pragma unroll
    for (int I = 0; I < VecElems; ++I) {
      X[I] = (X[I] - Mu) * S * W[I];
      if (A.B)
        X[I] += B[I];
    }
    store8<T>(A.Y, At, X);
  }
  if (threadIdx.x == 0) {
    if (A.Mean)
      A.Mean[blockIdx.x] = Mu;
    A.Rstd[blockIdx.x] = S;
  }
}

struct NormGradRowArgs {
  const void *Dy, *X, *W, *G; // G: the residual stream's gradient, or null
  const float *Mean, *Rstd;
  void *Dx;
  int64_t Cols;
};

template <ElementType T>
__global__ void normGradRowsKernel(const __grid_constant__ NormGradRowArgs A) {
  int64_t C0 = int64_t(threadIdx.x) * VecElems;
  bool Live = C0 < A.Cols;
  uint64_t At = uint64_t(blockIdx.x) * uint64_t(A.Cols) + uint64_t(C0);
  float M = A.Mean ? A.Mean[blockIdx.x] : 0.0f, S = A.Rstd[blockIdx.x];
  float Gw[VecElems] = {}, Xh[VecElems] = {};
  float2 Sums = make_float2(0, 0);
  if (Live) {
    float W[VecElems];
    load8<T>(Gw, A.Dy, At);
    load8<T>(Xh, A.X, At);
    load8<T>(W, A.W, uint64_t(C0));
#pragma unroll
    for (int I = 0; I < VecElems; ++I) {
      Gw[I] *= W[I];
      Xh[I] = (Xh[I] - M) * S;
      Sums.x += Gw[I];
      Sums.y += Gw[I] * Xh[I];
    }
  }
  Sums = blockSum2(Sums);
  if (!Live)
    return;
  float MeanG = Sums.x / float(A.Cols), MeanGX = Sums.y / float(A.Cols);
  float G[VecElems];
  if (A.G)
    load8<T>(G, A.G, At);
#pragma unroll
  for (int I = 0; I < VecElems; ++I) {
    float D = A.Mean ? S * (Gw[I] - MeanG - Xh[I] * MeanGX)
                     : S * (Gw[I] - Xh[I] * MeanGX);
    Gw[I] = A.G ? from16<T>(to16<T>(D)) + G[I] : D;
  }
  store8<T>(A.Dx, At, Gw);
}

/// Operand positions of a kernel, at most four each side.
struct OperandList {
  size_t At[4];
  int N = 0;
  OperandList &add(size_t I) { At[N++] = I; return *this; }
};

/// The one 16-bit type of the listed operands, or F32 where the vector
/// kernels do not apply (mixed types, odd row lengths, unaligned rows).
ElementType vectorNormType(const KernelOperands &Ops, int64_t Cols,
                           const OperandList &In, const OperandList &Out) {
  if (Cols % VecElems || Cols > MaxVecCols)
    return ElementType::F32;
  ElementType T = Ops.InType[In.At[0]];
  if (T != ElementType::BF16 && T != ElementType::F16)
    return ElementType::F32;
  auto Fits = [&](const void *P, ElementType PT) {
    return PT == T && reinterpret_cast<uintptr_t>(P) % 16 == 0;
  };
  for (int I = 0; I < In.N; ++I)
    if (!Fits(Ops.In[In.At[I]], Ops.InType[In.At[I]]))
      return ElementType::F32;
  for (int I = 0; I < Out.N; ++I)
    if (!Fits(Ops.Out[Out.At[I]], Ops.OutType[Out.At[I]]))
      return ElementType::F32;
  return T;
}

unsigned vectorNormThreads(int64_t Cols) {
  return unsigned((Cols / VecElems + 31) / 32 * 32);
}

/// A norm kernel's attributes, forward or backward: with Residual the
/// residual add is folded in (forward: two addends first, the sum a last
/// output; backward: the stream's gradient a last input).
struct NormShape {
  int64_t Rows = 0, Cols = 0;
  size_t R = 0;
  bool Rms = false, Forward = false;
  float Eps = 0;
};

NormShape normShape(const plan::Kernel &K) {
  NormShape N;
  N.Rms = K.kind() == KernelKind::RMSNorm ||
          K.kind() == KernelKind::RMSNormGrad;
  if (const plan::LayerNormAttrs *A = K.as<plan::LayerNormAttrs>()) {
    N.Forward = true;
    N.Rows = A->Rows, N.Cols = A->Cols, N.R = A->Residual;
    N.Eps = float(A->Epsilon);
  } else {
    const plan::LayerNormGradAttrs &G = *K.as<plan::LayerNormGradAttrs>();
    N.Rows = G.Rows, N.Cols = G.Cols, N.R = G.Residual;
  }
  return N;
}

/// The vector kernels where they apply; false leaves the launch to the
/// general ones.
bool launchVectorNorm(const NormShape &N, const KernelOperands &Ops,
                      cudaStream_t S) {
  int64_t Rows = N.Rows, Cols = N.Cols;
  size_t R = N.R;
  bool Rms = N.Rms;
  if (!Rows)
    return false;
  if (N.Forward) {
    // x, [x2,] w, [b] -> y, [mean,] rstd, [sum]
    bool Bias = !Rms && Ops.In.size() > 2 + R;
    OperandList In, Out;
    for (size_t I = 0; I < 2 + R + Bias; ++I)
      In.add(I);
    Out.add(0);
    if (R)
      Out.add(Ops.Out.size() - 1);
    ElementType T = vectorNormType(Ops, Cols, In, Out);
    if (T == ElementType::F32)
      return false;
    NormRowArgs A;
    A.X = Ops.In[0];
    A.X2 = R ? Ops.In[1] : nullptr;
    A.W = Ops.In[1 + R];
    A.B = Bias ? Ops.In[2 + R] : nullptr;
    A.Sum = R ? Ops.Out.back() : nullptr;
    A.Y = Ops.Out[0];
    A.Mean = Rms ? nullptr : static_cast<float *>(Ops.Out[1]);
    A.Rstd = static_cast<float *>(Ops.Out[Rms ? 1 : 2]);
    A.Cols = Cols;
    A.Eps = N.Eps;
    A.Rms = Rms;
    if (T == ElementType::BF16)
      normRowsKernel<ElementType::BF16>
          <<<unsigned(Rows), vectorNormThreads(Cols), 0, S>>>(A);
    else
      normRowsKernel<ElementType::F16>
          <<<unsigned(Rows), vectorNormThreads(Cols), 0, S>>>(A);
    return true;
  }
  // dy, x, w, [mean,] rstd, [g] -> dx, ...
  OperandList In, Out;
  In.add(0).add(1).add(2);
  if (R)
    In.add(Ops.In.size() - 1);
  Out.add(0);
  ElementType T = vectorNormType(Ops, Cols, In, Out);
  if (T == ElementType::F32)
    return false;
  NormGradRowArgs A;
  A.Dy = Ops.In[0];
  A.X = Ops.In[1];
  A.W = Ops.In[2];
  A.G = R ? Ops.In.back() : nullptr;
  A.Mean = Rms ? nullptr : static_cast<const float *>(Ops.In[3]);
  A.Rstd = static_cast<const float *>(Ops.In[Rms ? 3 : 4]);
  A.Dx = Ops.Out[0];
  A.Cols = Cols;
  if (T == ElementType::BF16)
    normGradRowsKernel<ElementType::BF16>
        <<<unsigned(Rows), vectorNormThreads(Cols), 0, S>>>(A);
  else
    normGradRowsKernel<ElementType::F16>
        <<<unsigned(Rows), vectorNormThreads(Cols), 0, S>>>(A);
  return true;
}

std::string norm(const plan::Kernel &K, const KernelOperands &Ops,
                 const KernelContext &C, cudaStream_t S) {
  NormShape N = normShape(K);
  int64_t Rows = N.Rows, Cols = N.Cols;
  size_t R = N.R;
  bool Rms = N.Rms;
  bool Vector = launchVectorNorm(N, Ops, S);
  if (N.Forward) {
    bool Bias = !Rms && Ops.In.size() > 2 + R;
    if (Rows && !Vector)
      normKernel<<<unsigned(Rows), Threads, 0, S>>>(
          Ops.In[0], Ops.InType[0], R ? Ops.In[1] : nullptr,
          R ? Ops.InType[1] : ElementType::F32, R ? Ops.Out.back() : nullptr,
          R ? Ops.OutType.back() : ElementType::F32, Ops.In[1 + R],
          Ops.InType[1 + R], Bias ? Ops.In[2 + R] : nullptr,
          Bias ? Ops.InType[2 + R] : ElementType::F32, Ops.Out[0],
          Ops.OutType[0], Rms ? nullptr : static_cast<float *>(Ops.Out[1]),
          static_cast<float *>(Ops.Out[Rms ? 1 : 2]), Cols, N.Eps, Rms);
    return "";
  }
  // dy, x, w, [mean,] rstd, [g] -> dx, dw, [db]
  const float *Mean = Rms ? nullptr : static_cast<const float *>(Ops.In[3]);
  const float *Rstd = static_cast<const float *>(Ops.In[Rms ? 3 : 4]);
  if (Rows && !Vector)
    normGradKernel<<<unsigned(Rows), Threads, 0, S>>>(
        Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1], Ops.In[2],
        Ops.InType[2], Mean, Rstd, R ? Ops.In.back() : nullptr,
        R ? Ops.InType.back() : ElementType::F32, Ops.Out[0], Ops.OutType[0],
        Cols);
  // dw and db: column sums of dy * x-hat and dy.
  ColumnSumArgs Sum;
  Sum.G = Ops.In[0];
  Sum.GT = Ops.InType[0];
  Sum.X = Ops.In[1];
  Sum.XT = Ops.InType[1];
  Sum.Mean = Mean;
  Sum.Rstd = Rstd;
  Sum.Rows = Rows;
  Sum.Cols = Cols;
  Sum.Sums = Rms ? 1 : 2;
  Sum.Out[0] = Ops.Out[1];
  Sum.OutT[0] = Ops.OutType[1];
  if (!Rms) {
    Sum.Out[1] = Ops.Out[2];
    Sum.OutT[1] = Ops.OutType[2];
  }
  return columnSums(Sum, C, S);
}

} // namespace kernels
} // namespace dsrun
