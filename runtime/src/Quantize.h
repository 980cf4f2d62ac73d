//===- Quantize.h - ZeRO++ qwZ's int8 quantizer ------------------*- C++ -*-===//
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

#include <cmath>
#include <vector>

namespace dsrun {

DSRUN_HD float qwzHalf(float V) { return fromFP16(toFP16(V)); }

/// The scale for a group whose largest magnitude (of its fp16 values) is
/// AbsMax.
DSRUN_HD float qwzScale(float AbsMax) {
  return AbsMax == 0.0f ? 1.0f : 256.0f / (2.0f * AbsMax);
}

DSRUN_HD int8_t qwzQuantize(float Half, float Scale) {
  float R = rintf(Half * Scale);
  if (R != R)
    return 0;
  return int8_t(R < -128.0f ? -128.0f : R > 127.0f ? 127.0f : R);
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

} // namespace dsrun

#endif
