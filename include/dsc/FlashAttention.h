//===- FlashAttention.h - When attention runs as tiled flash attention ----===//
//
// An attention kernel's algorithm says how dsrun computes it: math (scores
// of one batch element in the workspace, products by cuBLAS; any type,
// head size, bias) or flash (tiles of 64 queries x 64 keys in shared
// memory, scores never stored; 16-bit operands without bias, head size a
// multiple of 8 up to 128). The planner
// picks flash attention wherever the operands fit the tiled tensor-core
// kernels (runtime/src/FlashAttention.cu) and reserves their workspace;
// checkPlan holds every plan to the same rule, so dsrun never meets a
// flash kernel it cannot run. One rule, here, for all three.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_FLASHATTENTION_H
#define DSC_FLASHATTENTION_H

#include "dsc/PlanFormat.h"

#include <string>
#include <vector>

namespace dsc::plan {

constexpr int64_t FlashMaxHeadDim = 128;

/// Why the attention kernel K cannot run as flash attention, or "" when it
/// can. Operands are loaded 8 elements (16 bytes) at a time, so every view
/// but the log-sum-exp starts and strides at multiples of 8 elements with
/// the head dimension contiguous.
inline std::string flashAttentionMisfit(const Kernel &K,
                                        const std::vector<Value> &Values) {
  const AttentionAttrs *A = K.as<AttentionAttrs>();
  if (!A)
    return "not an attention kernel";
  bool Grad = K.kind() == KernelKind::AttentionGrad;
  int64_t D = A->HeadDim, Dv = A->ValueDim;
  if (D != Dv || D % 8 || D <= 0 || D > FlashMaxHeadDim)
    return "head sizes " + std::to_string(D) + " and " + std::to_string(Dv) +
           " (flash needs equal ones, a multiple of 8 up to 128)";
  size_t Operands = Grad ? 6 : 3;
  if (K.Inputs.size() > Operands)
    return "an attention bias (flash runs causal or unmasked attention)";
  size_t Lse = Grad ? 5 : NoIndex;
  DType Act = DType::F32;
  auto Fits = [&](const TensorRef &R, bool LogSumExp) -> std::string {
    if (R.Value >= Values.size())
      return "an operand outside the values";
    DType T = Values[R.Value].Type;
    if (LogSumExp)
      return T == DType::F32 ? "" : "a log-sum-exp that is not fp32";
    if (T != DType::BF16 && T != DType::F16)
      return "fp32 operands (flash runs bf16 or fp16)";
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

/// Bytes of the flash backward's row sums of dO * O (B x Hq x T fp32),
/// rounded up so that what follows them is aligned.
inline uint64_t flashDeltaBytes(const AttentionAttrs &A) {
  return (uint64_t(A.Batch) * uint64_t(A.QHeads) * uint64_t(A.QLen) * 4 +
          255) /
         256 * 256;
}

/// The workspace an attention kernel needs, its operands ActBytes wide.
/// Flash: backward's row sums of dO * O; with grouped queries (fewer
/// key/value heads than query heads) also each query head's share of dK
/// and dV in fp32 (2 x B x Hq x S x D), summed per group after: one block
/// per query head keeps a causal backward's blocks alike in size, where
/// one per key/value head left a few long ones running alone. Math: one
/// batch element's fp32 scores and its probabilities; backward adds their
/// gradient and the row sums of that batch element.
inline uint64_t attentionWorkspace(const AttentionAttrs &A, bool Grad,
                                   unsigned ActBytes) {
  uint64_t Hq = uint64_t(A.QHeads), T = uint64_t(A.QLen),
           Sk = uint64_t(A.KVLen);
  if (A.Algorithm == AttentionAlgorithm::Flash) {
    if (!Grad)
      return 0;
    uint64_t Shares = A.KVHeads < A.QHeads ? 2 * uint64_t(A.Batch) * Hq * Sk *
                                                 uint64_t(A.HeadDim) * 4
                                           : 0;
    return flashDeltaBytes(A) + Shares;
  }
  uint64_t Cells = Hq * T * Sk;
  return Cells * (4 + ActBytes) + (Grad ? Cells * ActBytes + Hq * T * 4 : 0);
}

} // namespace dsc::plan

#endif
