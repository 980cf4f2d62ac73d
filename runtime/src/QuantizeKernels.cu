//===- QuantizeKernels.cu - ZeRO++ qwZ's int8 gather kernels --------------===//
//
// A rank's chunk quantized before the gather and every rank's chunk
// dequantized after it, with Quantize.h's arithmetic.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "Quantize.h"

#include "Checks.h"

namespace dsrun {
namespace {

constexpr unsigned Threads = 256;

/// One block a group: its largest magnitude, then its bytes.
__global__ void quantizeGroups(int8_t *Out, float *Kept, const void *In,
                               ElementType T, uint64_t Size) {
  uint64_t Base = uint64_t(blockIdx.x) * Size;
  float AbsMax = 0.0f;
  for (uint64_t I = threadIdx.x; I < Size; I += Threads)
    AbsMax = fmaxf(AbsMax, fabsf(qwzHalf(loadAs(In, Base + I, T))));
  for (unsigned Lane = 16; Lane; Lane /= 2)
    AbsMax = fmaxf(AbsMax, __shfl_xor_sync(0xffffffffu, AbsMax, Lane));
  __shared__ float Warps[Threads / 32];
  if (threadIdx.x % 32 == 0)
    Warps[threadIdx.x / 32] = AbsMax;
  __syncthreads();
  AbsMax = 0.0f;
  for (unsigned W = 0; W < Threads / 32; ++W)
    AbsMax = fmaxf(AbsMax, Warps[W]);
  float Scale = qwzScale(AbsMax);
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

} // namespace

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
