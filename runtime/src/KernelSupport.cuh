//===- KernelSupport.cuh - What the compute kernels share ------*- CUDA -*-===//
//
// The operand view, launch sizes, block reductions and 16-byte vector
// loads and stores the kernels of ComputeKernels.cu, PointwiseKernels.cu,
// NormKernels.cu and TokenKernels.cu use, and the launcher of each kind
// (what launchComputeKernel dispatches to). Everything, kernels and their
// argument structs too, is in namespace dsrun::kernels: names must stay
// unique across the four files.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_KERNELSUPPORT_CUH
#define DSRUN_KERNELSUPPORT_CUH

#include "ComputeKernels.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace dsrun {
namespace kernels {

namespace plan = dsc::plan;

constexpr int MaxRank = 8;
constexpr int Threads = 256;

inline unsigned blocksFor(uint64_t N) {
  return unsigned(std::min<uint64_t>((N + Threads - 1) / Threads, 65535 * 8));
}

/// An operand as a kernel sees it.
struct Strided {
  void *Ptr = nullptr;
  ElementType Type = ElementType::F32;
  int Rank = 0;
  int64_t Shape[MaxRank] = {}, Strides[MaxRank] = {};
};

inline Strided strided(const plan::TensorRef &R, void *Ptr, ElementType T) {
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

inline int64_t numel(const std::vector<int64_t> &S) {
  int64_t N = 1;
  for (int64_t D : S)
    N *= D;
  return N;
}

//===----------------------------------------------------------------------===//
// Block reductions
//===----------------------------------------------------------------------===//

__device__ inline float warpSum(float V) {
  for (int O = 16; O > 0; O /= 2)
    V += __shfl_xor_sync(0xffffffffu, V, O);
  return V;
}
__device__ inline float warpMax(float V) {
  for (int O = 16; O > 0; O /= 2)
    V = fmaxf(V, __shfl_xor_sync(0xffffffffu, V, O));
  return V;
}
/// The sum (or max) over the block, returned to every thread.
__device__ inline float blockReduce(float V, bool Max) {
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
// Eight values at a time (16 bytes per load for 16-bit types)
//===----------------------------------------------------------------------===//

constexpr int VecElems = 8, MaxVecCols = 1024 * VecElems;

template <ElementType T> __device__ __forceinline__ float from16(uint16_t H) {
  return T == ElementType::BF16 ? fromBF16(H) : fromFP16(H);
}
template <ElementType T> __device__ __forceinline__ uint16_t to16(float V) {
  return T == ElementType::BF16 ? toBF16(V) : toFP16(V);
}

/// Eight elements from element I of Base (I a multiple of 8, Base 16-byte
/// aligned): one 16-byte load for 16-bit types, two for fp32.
__device__ __forceinline__ void load8(const void *Base, uint64_t I,
                                      ElementType T, float *Out) {
  if (T == ElementType::F32) {
    const float4 *P = reinterpret_cast<const float4 *>(
        static_cast<const float *>(Base) + I);
    float4 A = P[0], B = P[1];
    Out[0] = A.x, Out[1] = A.y, Out[2] = A.z, Out[3] = A.w;
    Out[4] = B.x, Out[5] = B.y, Out[6] = B.z, Out[7] = B.w;
    return;
  }
  uint4 V = *reinterpret_cast<const uint4 *>(
      static_cast<const uint16_t *>(Base) + I);
  uint32_t W[4] = {V.x, V.y, V.z, V.w};
#pragma unroll
  for (int K = 0; K < 8; ++K) {
    uint16_t H = uint16_t(W[K / 2] >> (16 * (K % 2)));
    Out[K] = T == ElementType::BF16 ? fromBF16(H) : fromFP16(H);
  }
}

/// Eight elements to element I of Base, as load8 reads them.
__device__ __forceinline__ void store8(void *Base, uint64_t I, ElementType T,
                                       const float *In) {
  if (T == ElementType::F32) {
    float4 *P = reinterpret_cast<float4 *>(static_cast<float *>(Base) + I);
    P[0] = make_float4(In[0], In[1], In[2], In[3]);
    P[1] = make_float4(In[4], In[5], In[6], In[7]);
    return;
  }
  uint32_t W[4];
#pragma unroll
  for (int K = 0; K < 4; ++K) {
    uint16_t Lo = T == ElementType::BF16 ? toBF16(In[2 * K]) : toFP16(In[2 * K]);
    uint16_t Hi =
        T == ElementType::BF16 ? toBF16(In[2 * K + 1]) : toFP16(In[2 * K + 1]);
    W[K] = uint32_t(Lo) | uint32_t(Hi) << 16;
  }
  *reinterpret_cast<uint4 *>(static_cast<uint16_t *>(Base) + I) =
      make_uint4(W[0], W[1], W[2], W[3]);
}

/// Whether rows Ld elements apart from P can be read 8 at a time.
inline bool rowsOf8(const void *P, ElementType T, int64_t Ld) {
  return Ld % 8 == 0 && reinterpret_cast<uintptr_t>(P) % 16 == 0 &&
         (T == ElementType::F32 || T == ElementType::BF16 ||
          T == ElementType::F16);
}

/// load8 and store8 for a type known at compile time.
template <ElementType T>
__device__ __forceinline__ void load8(float (&V)[VecElems], const void *Base,
                                      uint64_t At) {
  load8(Base, At, T, V);
}
template <ElementType T>
__device__ __forceinline__ void store8(void *Base, uint64_t At,
                                       const float (&V)[VecElems]) {
  store8(Base, At, T, V);
}

/// Whether R covers its shape densely in row-major order from P, 16-byte
/// aligned (dims of extent 1 may have any stride).
inline bool dense8(const plan::TensorRef &R, const void *P) {
  int64_t Expected = 1;
  for (size_t D = R.Shape.size(); D-- > 0;) {
    if (R.Shape[D] != 1 && R.Strides[D] != Expected)
      return false;
    Expected *= R.Shape[D];
  }
  return reinterpret_cast<uintptr_t>(P) % 16 == 0;
}

//===----------------------------------------------------------------------===//
// Column sums: bias and norm weight gradients (include/dsc/ColumnSums.h)
//===----------------------------------------------------------------------===//

constexpr int TileCols = 32, TileRows = 8;

/// A [Rows, Cols] matrix summed over its rows. Bias gradients sum G
/// itself; a norm's weight and bias gradients sum G * x-hat and G, where
/// x-hat = (X - Mean[row]) * Rstd[row] (no mean for RMSNorm).
struct ColumnSumArgs {
  const void *G = nullptr;
  ElementType GT = ElementType::F32;
  const void *X = nullptr; ///< Norms only.
  ElementType XT = ElementType::F32;
  const float *Mean = nullptr, *Rstd = nullptr;
  int64_t Rows = 0, Cols = 0, ChunkRows = 0;
  int Sums = 1;
  void *Out[2] = {};
  ElementType OutT[2] = {ElementType::F32, ElementType::F32};
  float Scale = 1;
  float *Partial = nullptr; ///< [chunk][sum][col]; null: one chunk.
};

/// Sums A.Rows rows of A.Cols columns (NormKernels.cu).
std::string columnSums(ColumnSumArgs A, const KernelContext &Ctx,
                       cudaStream_t S);

//===----------------------------------------------------------------------===//
// The launcher of each kind: "" or what keeps the kernel from running
//===----------------------------------------------------------------------===//

using Launcher = std::string(const plan::Kernel &K, const KernelOperands &Ops,
                             const KernelContext &C, cudaStream_t S);
Launcher matmul, reduce, fill, softmax, softmaxGrad, attention; // Compute
Launcher pointwise, rotary, swiglu;                             // Pointwise
Launcher norm;                                                  // Norm
Launcher gather, crossEntropy;                                  // Token
/// The workspace an embedding gradient's sort of Count ids needs.
uint64_t sortBytes(int64_t Count);

} // namespace kernels
} // namespace dsrun

#endif
