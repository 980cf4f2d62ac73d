//===- Kernels.cu ---------------------------------------------------------===//
//
// Compiled with --fmad=false: adamwUpdate must round as the host
// reference (HostMath.cpp, -ffp-contract=off) does.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "Checks.h"

#include <algorithm>
#include <type_traits>

namespace dsrun {

namespace {

constexpr unsigned Threads = 256;

unsigned blocksFor(uint64_t N) {
  uint64_t B = (N + Threads - 1) / Threads;
  return unsigned(B < 65535ull * 32 ? (B ? B : 1) : 65535ull * 32);
}

/// Whether P can be read four elements of T at a time (WordOf<T>).
bool wordAligned(const void *P, ElementType T) {
  return reinterpret_cast<uintptr_t>(P) % (4 * elementBytes(T)) == 0;
}

__global__ void fillGrad(void *Dst, ElementType T, uint64_t N, uint64_t RealN,
                         uint32_t Rank, const StepValues *Now, uint32_t Micro,
                         uint32_t Tensor, uint64_t ElemBase, bool Accumulate) {
  uint32_t Step = Now->Step;
  for (uint64_t I = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; I < N;
       I += uint64_t(gridDim.x) * blockDim.x) {
    float G = I < RealN
                  ? syntheticGrad(Rank, Step, Micro, Tensor, ElemBase + I)
                  : 0.0f;
    if (Accumulate)
      G += loadAs(Dst, I, T);
    storeAs(Dst, I, T, G);
  }
}

__global__ void copyConvert(void *Dst, ElementType DstT, const void *Src,
                            ElementType SrcT, uint64_t N, bool Accumulate) {
  for (uint64_t I = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; I < N;
       I += uint64_t(gridDim.x) * blockDim.x) {
    float V = loadAs(Src, I, SrcT);
    if (Accumulate)
      V += loadAs(Dst, I, DstT);
    storeAs(Dst, I, DstT, V);
  }
}

__global__ void scatterToChunks(void *Bucket, ElementType BucketT,
                                const void *Grad, ElementType GradT,
                                uint64_t RealN, uint64_t Shard, uint32_t World,
                                uint64_t ChunkElems, uint64_t ChunkOffset) {
  uint64_t Total = Shard * World;
  for (uint64_t I = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
       I < Total; I += uint64_t(gridDim.x) * blockDim.x) {
    float V = I < RealN ? loadAs(Grad, I, GradT) : 0.0f;
    storeAs(Bucket, (I / Shard) * ChunkElems + ChunkOffset + I % Shard,
            BucketT, V);
  }
}

/// For each tensor K of a unit (blockIdx.y): word I of the tensor, padded
/// to Shard x World words, comes from chunk I / Shard at its offset there.
template <class Word>
__global__ void unpackUnit(Word *Unit, const Word *Chunks, UnpackTable Table,
                           uint32_t World, uint64_t ChunkWords) {
  unsigned K = blockIdx.y;
  uint64_t Shard = Table.Shard[K], Total = Shard * World;
  Word *Tensor = Unit + Table.UnitOffset[K];
  const Word *From = Chunks + Table.ChunkOffset[K];
  for (uint64_t I = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
       I < Total; I += uint64_t(gridDim.x) * blockDim.x)
    Tensor[I] = From[(I / Shard) * ChunkWords + I % Shard];
}

/// One element's AdamW step: its gradient read as GradT (zero from RealGrad
/// on: the partition's padding), master weight and moments as StateT, the
/// updated weight also stored rounded to ParamT where WriteParams.
template <ElementType GradT, bool WriteParams, ElementType ParamT,
          ElementType StateT>
__device__ __forceinline__ void adamwElement(const AdamW &A, void *Master,
                                             void *M, void *V,
                                             const void *Grad,
                                             uint64_t RealGrad, void *Params,
                                             uint64_t I) {
  float G = I < RealGrad ? loadAs(Grad, I, GradT) : 0.0f;
  float W = loadAs(Master, I, StateT), Mi = loadAs(M, I, StateT),
        Vi = loadAs(V, I, StateT);
  adamwUpdate(A, G, W, Mi, Vi);
  storeAs(Master, I, StateT, W);
  storeAs(M, I, StateT, Mi);
  storeAs(V, I, StateT, Vi);
  if (WriteParams)
    storeAs(Params, I, ParamT, W);
}

/// Four elements of T in one load: 16 bytes of fp32, 8 of a 16-bit type.
template <ElementType T>
using WordOf = std::conditional_t<T == ElementType::F32, float4, uint2>;

/// copyConvert with both types known and four elements a thread, for
/// pointers aligned to a word of each: the element-wise kernel, which
/// reads the types at run time and one 2-byte element a thread, streamed
/// the reductions' accumulation at about a quarter of the memory's rate.
/// The same arithmetic as copyConvert, element for element.
template <ElementType DstT, ElementType SrcT, bool Accumulate>
__global__ void copyConvertWords(void *Dst, const void *Src, uint64_t Words) {
  for (uint64_t W = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
       W < Words; W += uint64_t(gridDim.x) * blockDim.x) {
    WordOf<SrcT> In = static_cast<const WordOf<SrcT> *>(Src)[W];
    WordOf<DstT> Out{};
    if (Accumulate)
      Out = static_cast<const WordOf<DstT> *>(Dst)[W];
#pragma unroll
    for (int K = 0; K < 4; ++K) {
      float V = loadAs(&In, K, SrcT);
      if (Accumulate)
        V += loadAs(&Out, K, DstT);
      storeAs(&Out, K, DstT, V);
    }
    static_cast<WordOf<DstT> *>(Dst)[W] = Out;
  }
}

/// AdamW over N elements in one pass: the gradient converted as it is
/// read and the 16-bit weights written as the master ones are, where three
/// passes (convert, update, convert back) would stream 40 bytes an element
/// instead of 28. Four elements a thread where every pointer is aligned
/// for it (Vector), the rest one at a time. Element I's result does not
/// depend on which path took it.
template <ElementType GradT, bool WriteParams, ElementType ParamT,
          ElementType StateT>
__global__ void adamw(void *Master, void *M, void *V, const void *Grad,
                      uint64_t RealGrad, uint64_t N, void *Params, AdamW A,
                      const StepValues *Now, bool Vector) {
  if (Now->Overflow)
    return; // Skipped, as DeepSpeed skips an fp16 step that overflowed.
  A.Lr = Now->Lr;
  A.Beta1 = Now->Beta1;
  A.Beta2 = Now->Beta2;
  A.BiasCorrection1 = Now->BiasCorrection1;
  A.BiasCorrection2 = Now->BiasCorrection2;
  A.GradScale *= Now->Clip;
  uint64_t First = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x,
           Stride = uint64_t(gridDim.x) * blockDim.x;
  uint64_t Groups = Vector ? N / 4 : 0;
  using StateWord = WordOf<StateT>;
  for (uint64_t Gi = First; Gi < Groups; Gi += Stride) {
    uint64_t I = Gi * 4;
    StateWord Ws = static_cast<StateWord *>(Master)[Gi],
              Ms = static_cast<StateWord *>(M)[Gi],
              Vs = static_cast<StateWord *>(V)[Gi];
    WordOf<GradT> Gw{};
    if (I + 4 <= RealGrad)
      Gw = static_cast<const WordOf<GradT> *>(Grad)[Gi];
    WordOf<ParamT> Out;
#pragma unroll
    for (int K = 0; K < 4; ++K) {
      float G = I + K < RealGrad ? (I + 4 <= RealGrad ? loadAs(&Gw, K, GradT)
                                                      : loadAs(Grad, I + K, GradT))
                                 : 0.0f;
      float W = loadAs(&Ws, K, StateT), Mk = loadAs(&Ms, K, StateT),
            Vk = loadAs(&Vs, K, StateT);
      adamwUpdate(A, G, W, Mk, Vk);
      storeAs(&Ws, K, StateT, W);
      storeAs(&Ms, K, StateT, Mk);
      storeAs(&Vs, K, StateT, Vk);
      if (WriteParams)
        storeAs(&Out, K, ParamT, W);
    }
    static_cast<StateWord *>(Master)[Gi] = Ws;
    static_cast<StateWord *>(M)[Gi] = Ms;
    static_cast<StateWord *>(V)[Gi] = Vs;
    if (WriteParams)
      static_cast<WordOf<ParamT> *>(Params)[Gi] = Out;
  }
  for (uint64_t I = Groups * 4 + First; I < N; I += Stride)
    adamwElement<GradT, WriteParams, ParamT, StateT>(A, Master, M, V, Grad,
                                                     RealGrad, Params, I);
}

__global__ void initWeights(void *Params, ElementType T, float *Master,
                            uint32_t Tensor, uint64_t ElemBase, uint64_t N,
                            uint64_t RealN) {
  for (uint64_t I = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; I < N;
       I += uint64_t(gridDim.x) * blockDim.x) {
    uint64_t E = ElemBase + I;
    float W = E < RealN ? initialWeight(Tensor, E) : 0.0f;
    float Stored; // W rounded through T, with or without Params to keep it.
    storeAs(&Stored, 0, T, W);
    if (Params)
      storeAs(Params, I, T, W);
    if (Master)
      Master[I] = loadAs(&Stored, 0, T);
  }
}

__global__ void touch(uint4 *Buffer, uint64_t Words) {
  for (uint64_t I = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
       I < Words; I += uint64_t(gridDim.x) * blockDim.x) {
    uint4 V = Buffer[I];
    V.x ^= 1u;
    Buffer[I] = V;
  }
}

} // namespace

void launchFillGrad(void *Dst, ElementType T, uint64_t N, uint64_t RealN,
                    uint32_t Rank, const StepValues *Now, uint32_t Micro,
                    uint32_t Tensor, uint64_t ElemBase, bool Accumulate,
                    cudaStream_t S) {
  if (N)
    fillGrad<<<blocksFor(N), Threads, 0, S>>>(Dst, T, N, RealN, Rank, Now,
                                              Micro, Tensor, ElemBase,
                                              Accumulate);
  CHECK_LAUNCH();
}

namespace {

template <ElementType DstT, ElementType SrcT>
void launchWords(void *Dst, const void *Src, uint64_t Words, bool Accumulate,
                 cudaStream_t S) {
  if (Accumulate)
    copyConvertWords<DstT, SrcT, true>
        <<<blocksFor(Words), Threads, 0, S>>>(Dst, Src, Words);
  else
    copyConvertWords<DstT, SrcT, false>
        <<<blocksFor(Words), Threads, 0, S>>>(Dst, Src, Words);
}

template <ElementType DstT>
bool launchWordsFrom(void *Dst, const void *Src, ElementType SrcT,
                     uint64_t Words, bool Accumulate, cudaStream_t S) {
  switch (SrcT) {
  case ElementType::F32:
    launchWords<DstT, ElementType::F32>(Dst, Src, Words, Accumulate, S);
    return true;
  case ElementType::BF16:
    launchWords<DstT, ElementType::BF16>(Dst, Src, Words, Accumulate, S);
    return true;
  case ElementType::F16:
    launchWords<DstT, ElementType::F16>(Dst, Src, Words, Accumulate, S);
    return true;
  default:
    return false;
  }
}

/// The first Words * 4 elements four a thread, where both types are
/// floating and both pointers aligned to their words; false: none done.
bool launchCopyConvertWords(void *Dst, ElementType DstT, const void *Src,
                            ElementType SrcT, uint64_t Words, bool Accumulate,
                            cudaStream_t S) {
  if (!Words || !wordAligned(Dst, DstT) || !wordAligned(Src, SrcT))
    return false;
  switch (DstT) {
  case ElementType::F32:
    return launchWordsFrom<ElementType::F32>(Dst, Src, SrcT, Words,
                                             Accumulate, S);
  case ElementType::BF16:
    return launchWordsFrom<ElementType::BF16>(Dst, Src, SrcT, Words,
                                              Accumulate, S);
  case ElementType::F16:
    return launchWordsFrom<ElementType::F16>(Dst, Src, SrcT, Words,
                                             Accumulate, S);
  default:
    return false;
  }
}

} // namespace

void launchCopyConvert(void *Dst, ElementType DstT, const void *Src,
                       ElementType SrcT, uint64_t N, bool Accumulate,
                       cudaStream_t S) {
  // A copy onto itself changes nothing.
  if (DstT == SrcT && !Accumulate && Dst == Src)
    return;
  // A plain copy (the stage 0-2 gradient hooks' per tensor) at the copy's
  // own speed.
  if (N && DstT == SrcT && !Accumulate) {
    CHECK_CUDA(cudaMemcpyAsync(Dst, Src, N * elementBytes(DstT),
                               cudaMemcpyDeviceToDevice, S));
    CHECK_LAUNCH();
    return;
  }
  uint64_t Done = 0;
  if (launchCopyConvertWords(Dst, DstT, Src, SrcT, N / 4, Accumulate, S))
    Done = N / 4 * 4;
  if (N > Done)
    copyConvert<<<blocksFor(N - Done), Threads, 0, S>>>(
        static_cast<char *>(Dst) + Done * elementBytes(DstT), DstT,
        static_cast<const char *>(Src) + Done * elementBytes(SrcT), SrcT,
        N - Done, Accumulate);
  CHECK_LAUNCH();
}

void launchScatterToChunks(void *Bucket, ElementType BucketT, const void *Grad,
                           ElementType GradT, uint64_t RealN, uint64_t Shard,
                           uint32_t World, uint64_t ChunkElems,
                           uint64_t ChunkOffset, cudaStream_t S) {
  if (Shard)
    scatterToChunks<<<blocksFor(Shard * World), Threads, 0, S>>>(
        Bucket, BucketT, Grad, GradT, RealN, Shard, World, ChunkElems,
        ChunkOffset);
  CHECK_LAUNCH();
}

void launchUnpackUnit(void *Unit, const void *Chunks, unsigned ElementBytes,
                      const UnpackTable &Elems, uint32_t World,
                      uint64_t ChunkElems, cudaStream_t S) {
  if (!Elems.Count)
    return;
  // The widest word that every size, offset and address is a multiple of.
  uint64_t All = ChunkElems * ElementBytes | uintptr_t(Unit) |
                 uintptr_t(Chunks);
  uint64_t Largest = 0;
  for (unsigned K = 0; K < Elems.Count; ++K) {
    All |= (Elems.UnitOffset[K] | Elems.ChunkOffset[K] | Elems.Shard[K]) *
           ElementBytes;
    Largest = std::max(Largest, Elems.Shard[K] * World);
  }
  auto Launch = [&](auto *Word) {
    using W = std::remove_pointer_t<decltype(Word)>;
    uint64_t Per = sizeof(W) / ElementBytes;
    UnpackTable Words = Elems;
    for (unsigned K = 0; K < Elems.Count; ++K) {
      Words.UnitOffset[K] /= Per;
      Words.ChunkOffset[K] /= Per;
      Words.Shard[K] /= Per;
    }
    dim3 Grid(blocksFor(Largest / Per), Elems.Count);
    unpackUnit<W><<<Grid, Threads, 0, S>>>(static_cast<W *>(Unit),
                                           static_cast<const W *>(Chunks),
                                           Words, World, ChunkElems / Per);
    CHECK_LAUNCH();
  };
  if (All % 16 == 0)
    Launch(static_cast<uint4 *>(nullptr));
  else if (All % 4 == 0)
    Launch(static_cast<uint32_t *>(nullptr));
  else if (All % 2 == 0)
    Launch(static_cast<uint16_t *>(nullptr));
  else
    Launch(static_cast<uint8_t *>(nullptr));
}

namespace {

template <ElementType GradT, bool WriteParams, ElementType ParamT,
          ElementType StateT>
void launchAdamWAs(void *Master, void *M, void *V, const void *Grad,
                   uint64_t RealGrad, uint64_t N, void *Params,
                   const AdamW &A, const StepValues *Now, cudaStream_t S) {
  bool Vector = wordAligned(Master, StateT) && wordAligned(M, StateT) &&
                wordAligned(V, StateT) && wordAligned(Grad, GradT) &&
                (!WriteParams || wordAligned(Params, ParamT));
  adamw<GradT, WriteParams, ParamT, StateT>
      <<<blocksFor(Vector ? (N + 3) / 4 : N), Threads, 0, S>>>(
          Master, M, V, Grad, RealGrad, N, Params, A, Now, Vector);
}

template <ElementType GradT>
void launchAdamWWriting(float *Master, float *M, float *V, const void *Grad,
                        uint64_t RealGrad, uint64_t N, void *Params,
                        ElementType ParamT, const AdamW &A,
                        const StepValues *Now, cudaStream_t S) {
  constexpr ElementType F32 = ElementType::F32;
  if (!Params)
    launchAdamWAs<GradT, false, F32, F32>(Master, M, V, Grad, RealGrad, N,
                                          nullptr, A, Now, S);
  else if (ParamT == ElementType::BF16)
    launchAdamWAs<GradT, true, ElementType::BF16, F32>(
        Master, M, V, Grad, RealGrad, N, Params, A, Now, S);
  else if (ParamT == ElementType::F16)
    launchAdamWAs<GradT, true, ElementType::F16, F32>(
        Master, M, V, Grad, RealGrad, N, Params, A, Now, S);
  else
    launchAdamWAs<GradT, true, F32, F32>(Master, M, V, Grad, RealGrad, N,
                                         Params, A, Now, S);
}

/// bf16 state: the model's weights are bf16 too (DeepSpeed allows bf16
/// masters only with bf16 training).
template <ElementType GradT>
void launchAdamWBF16State(void *Master, void *M, void *V, const void *Grad,
                          uint64_t RealGrad, uint64_t N, void *Params,
                          const AdamW &A, const StepValues *Now,
                          cudaStream_t S) {
  constexpr ElementType BF16 = ElementType::BF16;
  if (Params)
    launchAdamWAs<GradT, true, BF16, BF16>(Master, M, V, Grad, RealGrad, N,
                                           Params, A, Now, S);
  else
    launchAdamWAs<GradT, false, BF16, BF16>(Master, M, V, Grad, RealGrad, N,
                                            nullptr, A, Now, S);
}

} // namespace

void launchAdamW(void *Master, void *M, void *V, ElementType StateT,
                 const void *Grad, ElementType GradT, uint64_t RealGrad,
                 uint64_t N, void *Params, ElementType ParamT, const AdamW &A,
                 const StepValues *Now, cudaStream_t S) {
  if (!N) {
  } else if (StateT == ElementType::BF16) {
    if ((Params && ParamT != ElementType::BF16) ||
        (GradT != ElementType::BF16 && GradT != ElementType::F32))
      fatalError("bf16 optimizer state steps bf16 weights from bf16 or fp32 "
                 "gradients only");
    if (GradT == ElementType::BF16)
      launchAdamWBF16State<ElementType::BF16>(Master, M, V, Grad, RealGrad, N,
                                              Params, A, Now, S);
    else
      launchAdamWBF16State<ElementType::F32>(Master, M, V, Grad, RealGrad, N,
                                             Params, A, Now, S);
  } else {
    float *W = static_cast<float *>(Master), *Mf = static_cast<float *>(M),
          *Vf = static_cast<float *>(V);
    if (GradT == ElementType::F32)
      launchAdamWWriting<ElementType::F32>(W, Mf, Vf, Grad, RealGrad, N,
                                           Params, ParamT, A, Now, S);
    else if (GradT == ElementType::BF16)
      launchAdamWWriting<ElementType::BF16>(W, Mf, Vf, Grad, RealGrad, N,
                                            Params, ParamT, A, Now, S);
    else
      launchAdamWWriting<ElementType::F16>(W, Mf, Vf, Grad, RealGrad, N,
                                           Params, ParamT, A, Now, S);
  }
  CHECK_LAUNCH();
}

/// Each of NormBlocks blocks adds the squares of its grid-stride share of
/// X to its own partial sum: a fixed order, so the same gradients give the
/// same norm bit for bit. X is read 16 bytes a load, four loads in flight a
/// thread (one 2-byte load at a time left the bf16 gradients of a 1.1 B
/// model at 0.65 TB/s); Vector is off where X is not 16-byte aligned.
template <ElementType T>
__global__ void sumSquares(const void *X, uint64_t N, float *Partials,
                           bool Vector) {
  constexpr unsigned PerWord = T == ElementType::F32 ? 4 : 8;
  constexpr unsigned Unroll = 4;
  __shared__ float Warp[Threads / 32];
  uint64_t First = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x,
           Stride = uint64_t(gridDim.x) * blockDim.x;
  uint64_t Words = Vector ? N / PerWord : 0;
  const uint4 *W = static_cast<const uint4 *>(X);
  float Sum = 0;
  auto Add = [&](const uint4 &Word) {
#pragma unroll
    for (unsigned K = 0; K < PerWord; ++K) {
      float V = loadAs(&Word, K, T);
      Sum += V * V;
    }
  };
  uint64_t I = First;
  for (; I + (Unroll - 1) * Stride < Words; I += Unroll * Stride) {
    uint4 Loaded[Unroll];
#pragma unroll
    for (unsigned U = 0; U < Unroll; ++U)
      Loaded[U] = W[I + U * Stride];
#pragma unroll
    for (unsigned U = 0; U < Unroll; ++U)
      Add(Loaded[U]);
  }
  for (; I < Words; I += Stride)
    Add(W[I]);
  for (uint64_t E = Words * PerWord + First; E < N; E += Stride) {
    float V = loadAs(X, E, T);
    Sum += V * V;
  }
  for (int Offset = 16; Offset > 0; Offset /= 2)
    Sum += __shfl_down_sync(0xffffffffu, Sum, Offset);
  if (threadIdx.x % 32 == 0)
    Warp[threadIdx.x / 32] = Sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float Block = 0;
    for (unsigned K = 0; K < Threads / 32; ++K)
      Block += Warp[K];
    Partials[blockIdx.x] += Block;
  }
}

__global__ void sumPartials(float *Partials, unsigned Count, float *Out) {
  float Sum = 0;
  for (unsigned I = 0; I < Count; ++I) {
    Sum += Partials[I];
    Partials[I] = 0; // Ready for the next step.
  }
  *Out = Sum;
}

__global__ void clipFactor(float *SumOfSquares, float Scale, float MaxNorm,
                           StepValues *Now) {
  // The norm of the loss-scaled gradients; clipped as DeepSpeed's ZeRO
  // optimizers do it, against the norm unscaled by the scale they divide
  // by (scaleIfApplied: 1 without fp16, when this is gradient_clipping's
  // plain factor).
  float Norm = sqrtf(*SumOfSquares) * Scale;
  float Divisor = Now->ScaleIfApplied;
  float Clip = 1.0f;
  if (MaxNorm > 0) {
    float Factor = MaxNorm / (Norm / Divisor + 1e-6f);
    Clip = Factor < 1.0f ? Factor : 1.0f;
  }
  Now->Overflow = !isfinite(Norm);
  Now->Clip = Now->Overflow ? 0.0f : Clip / Divisor;
  // Read back for the step's report: the norm of the true gradients.
  *SumOfSquares = Norm / Now->LossScale;
}

void launchSumSquares(const void *X, ElementType T, uint64_t N,
                      float *Partials, unsigned Blocks, cudaStream_t S) {
  bool Vector = reinterpret_cast<uintptr_t>(X) % 16 == 0;
  if (N && T == ElementType::F32)
    sumSquares<ElementType::F32>
        <<<Blocks, Threads, 0, S>>>(X, N, Partials, Vector);
  else if (N && T == ElementType::BF16)
    sumSquares<ElementType::BF16>
        <<<Blocks, Threads, 0, S>>>(X, N, Partials, Vector);
  else if (N)
    sumSquares<ElementType::F16>
        <<<Blocks, Threads, 0, S>>>(X, N, Partials, Vector);
  CHECK_LAUNCH();
}

void launchSumPartials(float *Partials, unsigned Blocks, float *Out,
                       cudaStream_t S) {
  sumPartials<<<1, 1, 0, S>>>(Partials, Blocks, Out);
  CHECK_LAUNCH();
}

void launchClipFactor(float *SumOfSquares, float Scale, float MaxNorm,
                      StepValues *Now, cudaStream_t S) {
  clipFactor<<<1, 1, 0, S>>>(SumOfSquares, Scale, MaxNorm, Now);
  CHECK_LAUNCH();
}

void launchInitWeights(void *Params, ElementType T, float *Master,
                       uint32_t Tensor, uint64_t ElemBase, uint64_t N,
                       uint64_t RealN, cudaStream_t S) {
  if (N)
    initWeights<<<blocksFor(N), Threads, 0, S>>>(Params, T, Master, Tensor,
                                                 ElemBase, N, RealN);
  CHECK_LAUNCH();
}

void launchTouch(void *Buffer, uint64_t Bytes, cudaStream_t S) {
  uint64_t Words = Bytes / sizeof(uint4);
  if (Words)
    touch<<<blocksFor(Words), Threads, 0, S>>>(static_cast<uint4 *>(Buffer),
                                               Words);
  CHECK_LAUNCH();
}

} // namespace dsrun
