//===- AttentionAlgorithms.h - Which algorithm may run an attention -*- C++ -*-===//
//
// An attention kernel's algorithm (AttentionAttrs::Algorithm) says how
// dsrun computes it:
//
//   math   scores of one batch element in the workspace, products by
//          cuBLAS; any type, head size, bias;
//   flash  dsrun's tiled kernels (runtime/src/FlashAttention.cu): 64
//          queries x 64 keys in shared memory, scores never stored;
//          16-bit operands without bias, head size a multiple of 8 up to
//          128;
//   cudnn  cuDNN's fused attention (runtime/src/CudnnAttention.cpp): the
//          same operands as flash, head sizes up to 256; where cuDNN is
//          missing at run time, dsrun runs flash instead, so the plan's
//          workspace covers both.
//
// The planner picks the first algorithm of its order that fits each
// kernel and reserves its workspace; checkPlan holds every plan to the
// same rules, so dsrun never meets a kernel its algorithm cannot run. One
// rule, here, for all three.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_ATTENTIONALGORITHMS_H
#define DSC_ATTENTIONALGORITHMS_H

#include "dsc/PlanFormat.h"

#include <algorithm>
#include <string>
#include <vector>

namespace dsc::plan {

constexpr int64_t FlashMaxHeadDim = 128, CudnnMaxHeadDim = 256;

/// cuDNN's fused attention's engines ask for this much workspace beyond
/// what cudnnWorkspace() names (at most 512 bytes measured with cuDNN 9.19
/// on an H200, a reserve so that a later version fits).
constexpr uint64_t CudnnReserveBytes = uint64_t(1) << 20;

/// Why algorithm Algo cannot run attention kernel K, or "" when it can.
/// Flash and cuDNN load operands 16 bytes at a time, so every view but the
/// log-sum-exp starts and strides at multiples of 8 elements with the head
/// dimension contiguous.
inline std::string attentionMisfit(const Kernel &K, AttentionAlgorithm Algo,
                                   const std::vector<Value> &Values) {
  const AttentionAttrs *A = K.as<AttentionAttrs>();
  if (!A)
    return "not an attention kernel";
  if (Algo == AttentionAlgorithm::Math)
    return "";
  bool Grad = K.kind() == KernelKind::AttentionGrad;
  int64_t D = A->HeadDim, Dv = A->ValueDim;
  int64_t Max = Algo == AttentionAlgorithm::Flash ? FlashMaxHeadDim
                                                  : CudnnMaxHeadDim;
  if (D != Dv || D % 8 || D <= 0 || D > Max)
    return "head sizes " + std::to_string(D) + " and " + std::to_string(Dv) +
           " (it needs equal ones, a multiple of 8 up to " +
           std::to_string(Max) + ")";
  size_t Operands = Grad ? 6 : 3;
  if (K.Inputs.size() > Operands)
    return "an attention bias (it runs causal or unmasked attention)";
  size_t Lse = Grad ? 5 : NoIndex;
  DType Act = DType::F32;
  auto Fits = [&](const TensorRef &R, bool LogSumExp) -> std::string {
    if (R.Value >= Values.size())
      return "an operand outside the values";
    DType T = Values[R.Value].Type;
    if (LogSumExp)
      return T == DType::F32 ? "" : "a log-sum-exp that is not fp32";
    if (T != DType::BF16 && T != DType::F16)
      return "fp32 operands (it runs bf16 or fp16)";
    if (Act == DType::F32)
      Act = T;
    if (T != Act)
      return "operands of different types";
    if (R.Shape.size() != 4 || R.Strides.size() != 4 || R.Strides[3] != 1 ||
        R.Offset % 8)
      return "an operand whose head dimension is not contiguous and aligned";
    for (int I = 0; I < 3; ++I)
      if (R.Strides[size_t(I)] % 8)
        return "an operand whose strides are not multiples of 8 elements";
    return "";
  };
  for (size_t I = 0; I < K.Inputs.size(); ++I)
    if (std::string E = Fits(K.Inputs[I], I == Lse); !E.empty())
      return E;
  for (size_t I = 0; I < K.Outputs.size(); ++I)
    if (std::string E = Fits(K.Outputs[I], !Grad && I == 1); !E.empty())
      return E;
  return "";
}

inline uint64_t align256(uint64_t Bytes) { return (Bytes + 255) / 256 * 256; }

/// Bytes of the backward's row sums of dO * O (B x Hq x T fp32), rounded
/// up so that what follows them is aligned.
inline uint64_t attentionDeltaBytes(const AttentionAttrs &A) {
  return align256(uint64_t(A.Batch) * uint64_t(A.QHeads) * uint64_t(A.QLen) *
                  4);
}

/// The cuDNN backward's dQ, summed in fp32 over the key blocks.
inline uint64_t cudnnDqBytes(const AttentionAttrs &A) {
  return align256(uint64_t(A.Batch) * uint64_t(A.QHeads) * uint64_t(A.QLen) *
                  uint64_t(A.HeadDim) * 4);
}

/// The workspace an attention kernel needs, its operands ActBytes wide.
/// Flash: backward's row sums of dO * O; with grouped queries (fewer
/// key/value heads than query heads) also each query head's share of dK
/// and dV in fp32 (2 x B x Hq x S x D), summed per group after: one block
/// per query head keeps a causal backward's blocks alike in size, where
/// one per key/value head left a few long ones running alone. cuDNN: the
/// backward's row sums and fp32 dQ, then its engine's own: with grouped
/// queries each query head's dK and dV in fp32 (as flash's shares; measured
/// with cuDNN 9.19), and a reserve; at least flash's, which runs where
/// cuDNN cannot or dsrun --deterministic asks for it. Math: one
/// batch element's fp32 scores and its probabilities; backward adds their
/// gradient and the row sums of that batch element.
inline uint64_t attentionWorkspace(const AttentionAttrs &A, bool Grad,
                                   unsigned ActBytes) {
  uint64_t Hq = uint64_t(A.QHeads), T = uint64_t(A.QLen),
           Sk = uint64_t(A.KVLen);
  auto Flash = [&]() -> uint64_t {
    if (!Grad)
      return 0;
    uint64_t Shares = A.KVHeads < A.QHeads ? 2 * uint64_t(A.Batch) * Hq * Sk *
                                                 uint64_t(A.HeadDim) * 4
                                           : 0;
    return attentionDeltaBytes(A) + Shares;
  };
  switch (A.Algorithm) {
  case AttentionAlgorithm::Flash:
    return Flash();
  case AttentionAlgorithm::Cudnn: {
    uint64_t Own = CudnnReserveBytes;
    if (Grad)
      Own += attentionDeltaBytes(A) + cudnnDqBytes(A) +
             (A.KVHeads < A.QHeads ? 2 * uint64_t(A.Batch) * Hq * Sk *
                                         uint64_t(A.HeadDim) * 4
                                   : 0);
    return A.HeadDim <= FlashMaxHeadDim ? std::max(Own, Flash()) : Own;
  }
  case AttentionAlgorithm::Math:
    break;
  }
  uint64_t Cells = Hq * T * Sk;
  return Cells * (4 + ActBytes) + (Grad ? Cells * ActBytes + Hq * T * 4 : 0);
}

} // namespace dsc::plan

#endif
