//===- Synthetic.h - Values both the GPU and the host reference compute ---===//
//
// With --compute synthetic, every gradient is a known function of (rank,
// step, micro step, tensor, element) and every weight starts as a known
// function of (tensor, element), so that reductions, gathers and optimizer
// updates can be checked exactly against a host reference. The functions
// are compiled into both the kernels and the host code from this one
// header; the update is written out operation by operation and compiled
// without fused multiply-add on either side, so both round alike.
//
// Gradients are k/16 with |k| <= 4: their sums over ranks and micro steps
// stay exact in bf16, fp16 and fp32.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_SYNTHETIC_H
#define DSRUN_SYNTHETIC_H

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define DSRUN_HD __host__ __device__ __forceinline__
#else
#define DSRUN_HD inline
#endif

namespace dsrun {

DSRUN_HD uint64_t mix(uint64_t X) {
  X += 0x9e3779b97f4a7c15ull;
  X = (X ^ (X >> 30)) * 0xbf58476d1ce4e5b9ull;
  X = (X ^ (X >> 27)) * 0x94d049bb133111ebull;
  return X ^ (X >> 31);
}

DSRUN_HD float syntheticGrad(uint32_t Rank, uint32_t Step, uint32_t Micro,
                             uint32_t Tensor, uint64_t Elem) {
  uint64_t H = mix(mix((uint64_t(Rank) << 32) | Step) ^
                   ((uint64_t(Micro) << 40) | Tensor));
  H = mix(H ^ Elem);
  return float(int(H % 9) - 4) * 0.0625f;
}

DSRUN_HD float initialWeight(uint32_t Tensor, uint64_t Elem) {
  uint64_t H = mix((uint64_t(Tensor) << 40) ^ Elem ^ 0x5eedull);
  return float(int(H % 1001) - 500) / 512.0f;
}

DSRUN_HD uint32_t floatBits(float F) {
  uint32_t U;
  memcpy(&U, &F, 4);
  return U;
}
DSRUN_HD float bitsFloat(uint32_t U) {
  float F;
  memcpy(&F, &U, 4);
  return F;
}

/// bf16, round to nearest even; a NaN stays a NaN, quieted. Both results
/// are computed and one selected, so that host loops over it vectorize.
DSRUN_HD uint16_t toBF16(float F) {
  uint32_t U = floatBits(F);
  uint32_t Rounded = (U + 0x7fffu + ((U >> 16) & 1u)) >> 16;
  uint32_t QuietNaN = (U >> 16) | 0x40u;
  return uint16_t((U & 0x7fffffffu) > 0x7f800000u ? QuietNaN : Rounded);
}
DSRUN_HD float fromBF16(uint16_t H) { return bitsFloat(uint32_t(H) << 16); }
DSRUN_HD float roundedToBF16(float F) { return fromBF16(toBF16(F)); }

/// One Adam step as DeepSpeed's FusedAdam and DeepSpeedCPUAdam take it:
/// weight decay decoupled (adam_w_mode, AdamW) or added to the gradient
/// (L2), bias correction as factors computed once per step (1 without
/// bias_correction).
struct AdamW {
  float Lr, Beta1, Beta2, Eps, WeightDecay;
  float BiasCorrection1, BiasCorrection2; ///< 1 - beta^step, or 1.
  float GradScale; ///< 1 / world size averaging synthetic gradients.
  bool DecoupledDecay;
  /// bf16 master weights, gradients and moments (bf16_master_weights_and_
  /// grads with bf16_optimizer_states): DeepSpeed scales the gradient in
  /// its bf16 tensor, and FusedAdam, whose arithmetic is fp32, stores the
  /// weight and both moments back in bf16.
  bool BF16State;
};

/// What changes from step to step on the device, read there from device
/// memory rather than passed as kernel arguments, so that one captured
/// step (a CUDA graph) serves every step.
struct StepValues {
  uint32_t Step;
  /// The scheduler's rate and betas for this step, their bias corrections.
  float Lr, Beta1, Beta2;
  float BiasCorrection1, BiasCorrection2;
  /// The factor the optimizer multiplies the gradient by beside 1 / world
  /// size: gradient_clipping's (1 when the norm is within the limit) over
  /// fp16's loss scale; written by the step's clip-gradients instruction.
  float Clip;
  /// Set there too when the gradients hold an inf or NaN: the optimizer
  /// skips the step (fp16; in bf16 a NaN stops the run instead).
  uint32_t Overflow;
  /// fp16 (LossScaler.h): the scale backward multiplies the loss gradient
  /// by, and the one the optimizer divides by if the step is applied.
  float LossScale, ScaleIfApplied;
};

DSRUN_HD void adamwUpdate(const AdamW &A, float Grad, float &Param, float &M,
                          float &V) {
  float G = Grad * A.GradScale;
  if (A.BF16State)
    G = roundedToBF16(G);
  // L2: the decay joins the gradient before the moments see it.
  if (!A.DecoupledDecay)
    G = G + A.WeightDecay * Param;
  float OneMinusB1 = 1.0f - A.Beta1, OneMinusB2 = 1.0f - A.Beta2;
  float GG = G * G;
  float M1 = A.Beta1 * M;
  float M2 = OneMinusB1 * G;
  M = M1 + M2;
  float V1 = A.Beta2 * V;
  float V2 = OneMinusB2 * GG;
  V = V1 + V2;
  float MHat = M / A.BiasCorrection1;
  float VHat = V / A.BiasCorrection2;
  float Denominator = sqrtf(VHat) + A.Eps;
  float Step = MHat / Denominator;
  float Decay = A.DecoupledDecay ? A.WeightDecay * Param : 0.0f;
  float Update = Step + Decay;
  float Delta = A.Lr * Update;
  Param = Param - Delta;
  if (A.BF16State) {
    Param = roundedToBF16(Param);
    M = roundedToBF16(M);
    V = roundedToBF16(V);
  }
}


/// IEEE half, round to nearest even.
DSRUN_HD uint16_t toFP16(float F) {
  uint32_t U = floatBits(F);
  uint32_t Sign = (U >> 16) & 0x8000u;
  uint32_t Abs = U & 0x7fffffffu;
  if (Abs > 0x7f800000u)
    return uint16_t(Sign | 0x7e00u);
  if (Abs >= 0x477ff000u) // Rounds to at least 65520: infinity.
    return uint16_t(Sign | 0x7c00u);
  if (Abs < 0x38800000u) { // Below the smallest normal half: subnormal.
    if (Abs < 0x33000000u)
      return uint16_t(Sign);
    uint32_t Mantissa = (Abs & 0x7fffffu) | 0x800000u;
    int Shift = 126 - int(Abs >> 23);
    uint32_t Half = Mantissa >> Shift;
    uint32_t Rest = Mantissa & ((1u << Shift) - 1);
    uint32_t Midpoint = 1u << (Shift - 1);
    if (Rest > Midpoint || (Rest == Midpoint && (Half & 1u)))
      ++Half;
    return uint16_t(Sign | Half);
  }
  uint32_t Biased = Abs - 0x38000000u; // Rebias the exponent 127 -> 15.
  uint32_t Half = Biased >> 13;
  uint32_t Rest = Biased & 0x1fffu;
  if (Rest > 0x1000u || (Rest == 0x1000u && (Half & 1u)))
    ++Half;
  return uint16_t(Sign | Half);
}
DSRUN_HD float fromFP16(uint16_t H) {
  uint32_t Sign = uint32_t(H & 0x8000u) << 16;
  uint32_t Exponent = (H >> 10) & 0x1fu, Mantissa = H & 0x3ffu;
  if (Exponent == 0) {
    if (Mantissa == 0)
      return bitsFloat(Sign);
    float V = float(Mantissa) * (1.0f / 16777216.0f); // 2^-24
    return Sign ? -V : V;
  }
  if (Exponent == 31)
    return bitsFloat(Sign | 0x7f800000u | (Mantissa << 13));
  return bitsFloat(Sign | ((Exponent + 112) << 23) | (Mantissa << 13));
}

/// Element types as the plan names them (plan::DType order): the three
/// floating-point ones, the compute program's token ids and targets
/// (int32), index values (int64) and masks (uint8), and ZeRO++ qwZ's
/// quantized weights (int8).
enum class ElementType : uint8_t { F32 = 0, F16 = 1, BF16 = 2, I32 = 3,
                                   I64 = 4, U8 = 5, I8 = 6 };

DSRUN_HD float loadAs(const void *Base, uint64_t I, ElementType T) {
  switch (T) {
  case ElementType::F32:
    return static_cast<const float *>(Base)[I];
  case ElementType::F16:
    return fromFP16(static_cast<const uint16_t *>(Base)[I]);
  case ElementType::BF16:
    return fromBF16(static_cast<const uint16_t *>(Base)[I]);
  case ElementType::I32:
    return float(static_cast<const int32_t *>(Base)[I]);
  case ElementType::I64:
    return float(static_cast<const int64_t *>(Base)[I]);
  case ElementType::I8:
    return float(static_cast<const int8_t *>(Base)[I]);
  default:
    return float(static_cast<const uint8_t *>(Base)[I]);
  }
}
/// Stores V; into an integer type it truncates (ONNX's Cast), into a mask
/// it stores whether V is non-zero.
DSRUN_HD void storeAs(void *Base, uint64_t I, ElementType T, float V) {
  switch (T) {
  case ElementType::F32:
    static_cast<float *>(Base)[I] = V;
    break;
  case ElementType::F16:
    static_cast<uint16_t *>(Base)[I] = toFP16(V);
    break;
  case ElementType::BF16:
    static_cast<uint16_t *>(Base)[I] = toBF16(V);
    break;
  case ElementType::I32:
    static_cast<int32_t *>(Base)[I] = int32_t(V);
    break;
  case ElementType::I64:
    static_cast<int64_t *>(Base)[I] = int64_t(V);
    break;
  case ElementType::I8:
    static_cast<int8_t *>(Base)[I] = int8_t(V);
    break;
  default:
    static_cast<uint8_t *>(Base)[I] = V != 0.0f;
  }
}
DSRUN_HD unsigned elementBytes(ElementType T) {
  switch (T) {
  case ElementType::F16:
  case ElementType::BF16:
    return 2;
  case ElementType::I64:
    return 8;
  case ElementType::U8:
  case ElementType::I8:
    return 1;
  default:
    return 4;
  }
}

} // namespace dsrun

#endif
