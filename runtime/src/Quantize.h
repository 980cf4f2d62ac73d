//===- Quantize.h - ZeRO++ qwZ's and qgZ's quantizers ------------*- C++ -*-===//
//
// DeepSpeed's symmetric 8-bit quantizer (CUDAQuantizer, which qwZ applies
// to each rank's chunk of a stage-3 gather), as arithmetic that the device
// kernels and the host reference share, so that --verify can hold the
// kernels to it bit for bit:
//   - values pass through fp16 first (DeepSpeed's kernel reads halves);
//   - a group's scale is 256 / (2 x its largest magnitude), 1 when every
//     value is zero;
//   - an element is its value times the scale, rounded to the nearest
//     integer (ties to even) and clamped to [-128, 127];
//   - the scale kept and sent is the inverse of that scale;
//   - a dequantized element is the byte times the kept scale, rounded to
//     fp16, then stored in the parameters' type.
// DeepSpeed compiles its kernel with --use_fast_math, so its two
// divisions may land an ulp from these, which are IEEE's. A value beyond
// fp16's range makes its group's scale 0 and the product NaN, which both
// turn into 0.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_QUANTIZE_H
#define DSRUN_QUANTIZE_H

#include "Synthetic.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace dsrun {

DSRUN_HD float qwzHalf(float V) { return fromFP16(toFP16(V)); }

/// DeepSpeed's symmetric quantizer of Bits bits, qwZ's (8) and qgZ's (4):
/// the scale for a group whose largest magnitude is AbsMax, and an
/// element (NaN quantizes to 0).
template <int Bits> DSRUN_HD float symmetricScale(float AbsMax) {
  return AbsMax == 0.0f ? 1.0f : float(1 << Bits) / (2.0f * AbsMax);
}
template <int Bits> DSRUN_HD int symmetricQuantize(float Half, float Scale) {
  constexpr float Lo = -float(1 << (Bits - 1)), Hi = float((1 << (Bits - 1)) - 1);
  float R = rintf(Half * Scale);
  if (R != R)
    return 0;
  return int(R < Lo ? Lo : R > Hi ? Hi : R);
}

/// The scale for a group whose largest magnitude (of its fp16 values) is
/// AbsMax.
DSRUN_HD float qwzScale(float AbsMax) { return symmetricScale<8>(AbsMax); }

DSRUN_HD int8_t qwzQuantize(float Half, float Scale) {
  return int8_t(symmetricQuantize<8>(Half, Scale));
}

DSRUN_HD float qwzDequantize(int8_t Q, float Kept) {
  return qwzHalf(float(Q) * Kept);
}

/// The host reference: N values (as floats of the parameters' type) in
/// Groups equal groups, quantized and dequantized; Out is what a gather
/// leaves before the store into the parameters' type.
inline std::vector<float> qwzRoundTrip(const float *In, uint64_t N,
                                       uint64_t Groups) {
  std::vector<float> Out(N);
  uint64_t Size = N / Groups;
  for (uint64_t G = 0; G < Groups; ++G) {
    const float *X = In + G * Size;
    float AbsMax = 0.0f;
    for (uint64_t I = 0; I < Size; ++I)
      AbsMax = std::fmax(AbsMax, std::fabs(qwzHalf(X[I])));
    float Scale = qwzScale(AbsMax), Kept = 1.0f / Scale;
    for (uint64_t I = 0; I < Size; ++I)
      Out[G * Size + I] = qwzDequantize(qwzQuantize(qwzHalf(X[I]), Scale), Kept);
  }
  return Out;
}

//===----------------------------------------------------------------------===//
// ZeRO++ qgZ: DeepSpeed's 4-bit symmetric quantizer of gradients
// (swizzled_quantize.cu, quant_reduce.cu, dequantize.cu), shared the same
// way:
//   - gradients are fp16 values;
//   - a group's scale is 16 / (2 x its largest magnitude), 1 when every
//     value is zero; an element is its value times the scale, rounded to
//     the nearest integer (ties to even) and clamped to [-8, 7];
//   - the scale kept and sent is the inverse of that scale; an element
//     comes back as its 4 bits times it, rounded to fp16;
//   - two elements a byte, the first in the high half (DeepSpeed's
//     PackedInt4);
//   - sums of what comes back are fp16 additions (DeepSpeed's __hadd2):
//     the fp32 sum rounded to fp16, the same result, fp32 holding more
//     than twice fp16's precision plus two bits.
// An infinity or a NaN anywhere in a group leaves the group NaN, so that
// fp16's overflow check still sees it: an infinity makes the scale 0, and
// the largest magnitude of a group holding a NaN is NaN (DeepSpeed's
// __hmax would pass over a NaN beside finite values, and lose it).
//===----------------------------------------------------------------------===//

/// A value rounded to fp16: on the device by the hardware's conversion
/// (a sum and a dequantized value each take one), which equals the host's
/// toFP16 for every value but a NaN's payload.
DSRUN_HD float qgzHalf(float V) {
#ifdef __CUDA_ARCH__
  return __half2float(__float2half_rn(V));
#else
  return fromFP16(toFP16(V));
#endif
}

/// The larger magnitude, NaN where either is.
DSRUN_HD float qgzMax(float A, float B) {
  return A != A ? A : B != B ? B : fmaxf(A, B);
}

DSRUN_HD float qgzScale(float AbsMax) { return symmetricScale<4>(AbsMax); }

DSRUN_HD int qgzQuantize(float Half, float Scale) {
  return symmetricQuantize<4>(Half, Scale);
}

DSRUN_HD float qgzDequantize(int Q, float Kept) {
  return qgzHalf(float(Q) * Kept);
}

DSRUN_HD float qgzAdd(float A, float B) { return qgzHalf(A + B); }

DSRUN_HD uint8_t qgzPack(int First, int Second) {
  return uint8_t((First << 4) | (Second & 0xF));
}
DSRUN_HD int qgzFirst(uint8_t B) { return int(int8_t(B)) >> 4; }
DSRUN_HD int qgzSecond(uint8_t B) { return int(int8_t(uint8_t(B << 4))) >> 4; }

/// The host reference of qgZ's reduction of partition r of one gradient,
/// Size elements in groups of GroupSize, over Nodes nodes of PerNode
/// ranks, rank q's elements of it being Grad(q, i) (fp16 values): on each
/// node, every rank's group quantized and what comes back summed over the
/// node's ranks in order, then requantized; those sums, come back, summed
/// over the nodes in order and multiplied by Factor (rounded to fp16).
template <class F>
std::vector<float> qgzReducePartition(uint64_t Size, uint64_t GroupSize,
                                      uint32_t Nodes, uint32_t PerNode,
                                      float Factor, F Grad) {
  std::vector<float> Out(Size, 0.0f), In(GroupSize), Sum(GroupSize);
  auto RoundTrip = [](std::vector<float> &V) {
    float AbsMax = 0.0f;
    for (float X : V)
      AbsMax = qgzMax(AbsMax, std::fabs(X));
    float Scale = qgzScale(AbsMax), Kept = 1.0f / Scale;
    for (float &X : V)
      X = qgzDequantize(qgzQuantize(X, Scale), Kept);
  };
  for (uint64_t Base = 0; Base < Size; Base += GroupSize)
    for (uint32_t M = 0; M < Nodes; ++M) {
      std::fill(Sum.begin(), Sum.end(), 0.0f);
      for (uint32_t J = 0; J < PerNode; ++J) {
        for (uint64_t I = 0; I < GroupSize; ++I)
          In[I] = qgzHalf(Grad(M * PerNode + J, Base + I));
        RoundTrip(In);
        for (uint64_t I = 0; I < GroupSize; ++I)
          Sum[I] = qgzAdd(Sum[I], In[I]);
      }
      RoundTrip(Sum);
      for (uint64_t I = 0; I < GroupSize; ++I)
        Out[Base + I] = qgzAdd(Out[Base + I], Sum[I]);
    }
  for (float &X : Out)
    X = qgzHalf(X * Factor);
  return Out;
}

} // namespace dsrun

#endif
