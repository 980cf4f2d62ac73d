//===- QuantizeKernels.cu - ZeRO++ qwZ's and qgZ's kernels ----------------===//
//
// qwZ: a rank's chunk quantized before the gather and every rank's chunk
// dequantized after it. qgZ: a gradient's partitions quantized into the
// blocks of the all-to-all within the node, what arrives summed and
// requantized for the one across nodes, and what arrives from there summed
// into the rank's partition. All with Quantize.h's arithmetic.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "Quantize.h"

#include "Checks.h"

namespace dsrun {
namespace {

constexpr unsigned Threads = 256;

/// The largest of the block's threads' V by Max, on every thread.
template <class F> __device__ float blockMax(float V, F Max) {
  for (unsigned Lane = 16; Lane; Lane /= 2)
    V = Max(V, __shfl_xor_sync(0xffffffffu, V, Lane));
  __shared__ float Warps[Threads / 32];
  if (threadIdx.x % 32 == 0)
    Warps[threadIdx.x / 32] = V;
  __syncthreads();
  V = 0.0f;
  for (unsigned W = 0; W < Threads / 32; ++W)
    V = Max(V, Warps[W]);
  return V;
}
/// qwZ's largest magnitude passes over NaN, as DeepSpeed's; qgZ's keeps it.
struct QwzMax {
  __device__ float operator()(float A, float B) const { return fmaxf(A, B); }
};
struct QgzMax {
  __device__ float operator()(float A, float B) const { return qgzMax(A, B); }
};

/// One block a group: its largest magnitude, then its bytes.
__global__ void quantizeGroups(int8_t *Out, float *Kept, const void *In,
                               ElementType T, uint64_t Size) {
  uint64_t Base = uint64_t(blockIdx.x) * Size;
  float AbsMax = 0.0f;
  for (uint64_t I = threadIdx.x; I < Size; I += Threads)
    AbsMax = fmaxf(AbsMax, fabsf(qwzHalf(loadAs(In, Base + I, T))));
  float Scale = qwzScale(blockMax(AbsMax, QwzMax{}));
  if (threadIdx.x == 0)
    Kept[blockIdx.x] = 1.0f / Scale;
  for (uint64_t I = threadIdx.x; I < Size; I += Threads)
    Out[Base + I] = qwzQuantize(qwzHalf(loadAs(In, Base + I, T)), Scale);
}

/// Eight bytes a thread (groups are multiples of eight, so one scale),
/// stored as eight values of T in one 16-byte word (two for fp32), or one
/// at a time where the target is not aligned to words.
template <ElementType T, bool Words>
__global__ void dequantizeEights(void *Out, const int8_t *In,
                                 const float *Kept, uint64_t Eights,
                                 uint64_t GroupEights) {
  for (uint64_t E = blockIdx.x * uint64_t(Threads) + threadIdx.x; E < Eights;
       E += uint64_t(gridDim.x) * Threads) {
    uint2 Word = reinterpret_cast<const uint2 *>(In)[E];
    const int8_t *Bytes = reinterpret_cast<const int8_t *>(&Word);
    float Scale = Kept[E / GroupEights];
    constexpr unsigned Size = T == ElementType::F32 ? 4 : 2;
    uint4 Values[Size / 2];
    for (unsigned K = 0; K < 8; ++K)
      storeAs(Values, K, T, qwzDequantize(Bytes[K], Scale));
    if (Words) {
      for (unsigned W = 0; W < Size / 2; ++W)
        reinterpret_cast<uint4 *>(Out)[E * (Size / 2) + W] = Values[W];
    } else {
      for (unsigned K = 0; K < 8; ++K)
        storeAs(Out, E * 8 + K, T, loadAs(Values, K, T));
    }
  }
}

/// qgZ: a tensor's groups in a partition.
__device__ uint64_t groupsPerPartition(const QgzShape &Q) {
  return Q.Groups / (uint64_t(Q.Nodes) * Q.PerNode);
}

/// qgZ's kernels work on eights of elements: 16 bytes of fp16, 4 bytes
/// of 4-bit pairs (groups hold a multiple of 8, qgzMisfit). fp16 is read
/// and written a word at a time where the gradient is 16-byte aligned (a
/// gradient after an unquantized one in the bucket may not be).
struct Eight {
  float V[8];
};

__device__ Eight loadEight(const void *Base, uint64_t At, bool Words) {
  Eight E;
  const __half *H = static_cast<const __half *>(Base) + At;
  if (Words) {
    uint4 W = *reinterpret_cast<const uint4 *>(H);
    H = reinterpret_cast<const __half *>(&W);
    for (int K = 0; K < 8; ++K)
      E.V[K] = __half2float(H[K]);
  } else {
    for (int K = 0; K < 8; ++K)
      E.V[K] = __half2float(H[K]);
  }
  return E;
}

/// Values already fp16 (qgzHalf), so the conversion is exact.
__device__ void storeEight(void *Base, uint64_t At, const Eight &E,
                           bool Words) {
  __half *H = static_cast<__half *>(Base) + At;
  if (Words) {
    uint4 W;
    __half *Out = reinterpret_cast<__half *>(&W);
    for (int K = 0; K < 8; ++K)
      Out[K] = __float2half_rn(E.V[K]);
    *reinterpret_cast<uint4 *>(H) = W;
  } else {
    for (int K = 0; K < 8; ++K)
      H[K] = __float2half_rn(E.V[K]);
  }
}

/// Four bytes of pairs, the first of each in the high half, from an eight.
__device__ uint32_t packEight(const Eight &E, float Scale) {
  uint32_t Word = 0;
  for (int K = 0; K < 4; ++K)
    Word |= uint32_t(qgzPack(qgzQuantize(E.V[2 * K], Scale),
                             qgzQuantize(E.V[2 * K + 1], Scale)))
            << (8 * K);
  return Word;
}

/// Adds four bytes of pairs, dequantized with Kept, to an eight.
__device__ void addEight(Eight &E, uint32_t Word, float Kept) {
  for (int K = 0; K < 4; ++K) {
    uint8_t Byte = uint8_t(Word >> (8 * K));
    E.V[2 * K] = qgzAdd(E.V[2 * K], qgzDequantize(qgzFirst(Byte), Kept));
    E.V[2 * K + 1] =
        qgzAdd(E.V[2 * K + 1], qgzDequantize(qgzSecond(Byte), Kept));
  }
}

__device__ float absMaxOf(const Eight &E, float AbsMax) {
  for (int K = 0; K < 8; ++K)
    AbsMax = qgzMax(AbsMax, fabsf(E.V[K]));
  return AbsMax;
}

/// At most this many ranks a node or nodes keep their scales in shared
/// memory; beyond, the kernels read them from the blocks.
constexpr unsigned SharedScales = 64;

/// One block a group of a partition: partition P = M x PerNode + L goes to
/// block L of Send1, after the partitions of the nodes before M.
__global__ void qgzQuantizeGroups(uint8_t *Send1, const void *Whole,
                                  QgzShape Q) {
  uint64_t Gpp = groupsPerPartition(Q), P = blockIdx.x / Gpp,
           K = blockIdx.x % Gpp, L = P % Q.PerNode, M = P / Q.PerNode;
  uint64_t Base = P * Q.PartElems + K * Q.GroupSize, Eights = Q.GroupSize / 8;
  bool Words = uintptr_t(Whole) % 16 == 0; // Base is a multiple of 8.
  float AbsMax = 0.0f;
  for (uint64_t V = threadIdx.x; V < Eights; V += Threads)
    AbsMax = absMaxOf(loadEight(Whole, Base + 8 * V, Words), AbsMax);
  float Scale = qgzScale(blockMax(AbsMax, QgzMax{}));
  uint8_t *Block = Send1 + L * Q.Block1;
  uint32_t *Out = reinterpret_cast<uint32_t *>(
      Block + Q.Data1 + M * (Q.PartElems / 2) + K * (Q.GroupSize / 2));
  for (uint64_t V = threadIdx.x; V < Eights; V += Threads)
    Out[V] = packEight(loadEight(Whole, Base + 8 * V, Words), Scale);
  if (threadIdx.x == 0)
    reinterpret_cast<float *>(Block + Q.ScalesAt1)[Q.Scales1 + M * Gpp + K] =
        1.0f / Scale;
}

/// One block a group of node M's partition of this rank's local index:
/// the node's ranks' blocks summed, in rank order, then requantized into
/// block M of Send2.
__global__ void qgzSumGroups(uint8_t *Send2, const uint8_t *Recv1,
                             QgzShape Q) {
  uint64_t Gpp = groupsPerPartition(Q), M = blockIdx.x / Gpp,
           K = blockIdx.x % Gpp, Eights = Q.GroupSize / 8;
  uint64_t At = Q.Data1 + M * (Q.PartElems / 2) + K * (Q.GroupSize / 2);
  __shared__ float Kept[SharedScales];
  auto KeptOf = [&](uint32_t J) {
    return reinterpret_cast<const float *>(
        Recv1 + J * Q.Block1 + Q.ScalesAt1)[Q.Scales1 + M * Gpp + K];
  };
  bool Shared = Q.PerNode <= SharedScales;
  for (uint32_t J = threadIdx.x; Shared && J < Q.PerNode; J += Threads)
    Kept[J] = KeptOf(J);
  __syncthreads();
  auto Sum = [&](uint64_t V) {
    Eight E = {};
    for (uint32_t J = 0; J < Q.PerNode; ++J)
      addEight(E,
               reinterpret_cast<const uint32_t *>(Recv1 + J * Q.Block1 + At)[V],
               Shared ? Kept[J] : KeptOf(J));
    return E;
  };
  float AbsMax = 0.0f;
  for (uint64_t V = threadIdx.x; V < Eights; V += Threads)
    AbsMax = absMaxOf(Sum(V), AbsMax);
  float Scale = qgzScale(blockMax(AbsMax, QgzMax{}));
  uint8_t *Block = Send2 + M * Q.Block2;
  uint32_t *Out =
      reinterpret_cast<uint32_t *>(Block + Q.Data2 + K * (Q.GroupSize / 2));
  for (uint64_t V = threadIdx.x; V < Eights; V += Threads)
    Out[V] = packEight(Sum(V), Scale);
  if (threadIdx.x == 0)
    reinterpret_cast<float *>(Block + Q.ScalesAt2)[Q.Scales2 + K] =
        1.0f / Scale;
}

/// One block a group of this rank's partition: every node's sum of it
/// added in node order, times Factor.
__global__ void qgzFinishGroups(void *Part, const uint8_t *Recv2, QgzShape Q,
                                float Factor) {
  uint64_t K = blockIdx.x, At = Q.Data2 + K * (Q.GroupSize / 2),
           Eights = Q.GroupSize / 8;
  __shared__ float Kept[SharedScales];
  auto KeptOf = [&](uint32_t M) {
    return reinterpret_cast<const float *>(Recv2 + M * Q.Block2 +
                                           Q.ScalesAt2)[Q.Scales2 + K];
  };
  bool Shared = Q.Nodes <= SharedScales;
  for (uint32_t M = threadIdx.x; Shared && M < Q.Nodes; M += Threads)
    Kept[M] = KeptOf(M);
  __syncthreads();
  bool Words = uintptr_t(Part) % 16 == 0;
  for (uint64_t V = threadIdx.x; V < Eights; V += Threads) {
    Eight E = {};
    for (uint32_t M = 0; M < Q.Nodes; ++M)
      addEight(E,
               reinterpret_cast<const uint32_t *>(Recv2 + M * Q.Block2 + At)[V],
               Shared ? Kept[M] : KeptOf(M));
    for (int I = 0; I < 8; ++I)
      E.V[I] = qgzHalf(E.V[I] * Factor);
    storeEight(Part, K * Q.GroupSize + 8 * V, E, Words);
  }
}

} // namespace

void launchQgzQuantize(void *Send1, const void *Whole, const QgzShape &Q,
                       cudaStream_t S) {
  qgzQuantizeGroups<<<unsigned(Q.Groups), Threads, 0, S>>>(
      static_cast<uint8_t *>(Send1), Whole, Q);
  CHECK_LAUNCH();
}

void launchQgzSum(void *Send2, const void *Recv1, const QgzShape &Q,
                  cudaStream_t S) {
  qgzSumGroups<<<unsigned(Q.Groups / Q.PerNode), Threads, 0, S>>>(
      static_cast<uint8_t *>(Send2), static_cast<const uint8_t *>(Recv1), Q);
  CHECK_LAUNCH();
}

void launchQgzFinish(void *Part, const void *Recv2, const QgzShape &Q,
                     float Factor, cudaStream_t S) {
  qgzFinishGroups<<<unsigned(Q.Groups / (uint64_t(Q.Nodes) * Q.PerNode)),
                    Threads, 0, S>>>(
      Part, static_cast<const uint8_t *>(Recv2), Q, Factor);
  CHECK_LAUNCH();
}

void launchQuantizeInt8(void *Out, void *Kept, const void *In, ElementType T,
                        uint64_t N, uint64_t Groups, cudaStream_t S) {
  if (!N || !Groups)
    return;
  quantizeGroups<<<unsigned(Groups), Threads, 0, S>>>(
      static_cast<int8_t *>(Out), static_cast<float *>(Kept), In, T,
      N / Groups);
  CHECK_LAUNCH();
}

void launchDequantizeInt8(void *Out, ElementType T, const void *In,
                          const void *Kept, uint64_t N, uint64_t GroupSize,
                          cudaStream_t S) {
  if (!N)
    return;
  uint64_t Eights = N / 8;
  unsigned Blocks =
      unsigned(std::min<uint64_t>((Eights + Threads - 1) / Threads, 65536));
  auto Launch = [&](auto Kernel) {
    Kernel<<<Blocks, Threads, 0, S>>>(Out, static_cast<const int8_t *>(In),
                                      static_cast<const float *>(Kept), Eights,
                                      GroupSize / 8);
  };
  bool Words = uintptr_t(Out) % 16 == 0;
  switch (T) {
  case ElementType::F32:
    Words ? Launch(dequantizeEights<ElementType::F32, true>)
          : Launch(dequantizeEights<ElementType::F32, false>);
    break;
  case ElementType::F16:
    Words ? Launch(dequantizeEights<ElementType::F16, true>)
          : Launch(dequantizeEights<ElementType::F16, false>);
    break;
  default:
    Words ? Launch(dequantizeEights<ElementType::BF16, true>)
          : Launch(dequantizeEights<ElementType::BF16, false>);
  }
  CHECK_LAUNCH();
}

} // namespace dsrun
