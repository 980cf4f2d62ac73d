//===- Attention.cpp - The attention kinds: check, cost, reference --------===//
//
// Which algorithm may run a kernel is FlashAttention.h's one rule; here the
// operands' shapes must be the attributes' [B, H, T, D] tensors.
//
//===----------------------------------------------------------------------===//

#include "KindSupport.h"

#include "dsc/AttentionAlgorithms.h"

namespace dsc::plan::kinds {

namespace {

std::string checkAttention(const Kernel &K, const AttentionAttrs &A,
                           const std::vector<Value> &Values) {
  bool Grad = K.kind() == KernelKind::AttentionGrad;
  std::string Bad = Grad ? operandCounts(K, 6, 7, 3, 3)
                         : operandCounts(K, 3, 4, 2, 2);
  if (!Bad.empty())
    return Bad;
  if (A.Batch < 0 || A.QHeads <= 0 || A.KVHeads <= 0 ||
      A.QHeads % A.KVHeads || A.QLen < 0 || A.KVLen < 0 || A.HeadDim < 0 ||
      A.ValueDim < 0)
    return "has attention sizes that do not make grouped heads";
  using Shape = std::vector<int64_t>;
  Shape Q = {A.Batch, A.QHeads, A.QLen, A.HeadDim},
        Kt = {A.Batch, A.KVHeads, A.KVLen, A.HeadDim},
        V = {A.Batch, A.KVHeads, A.KVLen, A.ValueDim},
        O = {A.Batch, A.QHeads, A.QLen, A.ValueDim};
  size_t At = Grad ? 1 : 0;
  bool Ok = K.Inputs[At].Shape == Q && K.Inputs[At + 1].Shape == Kt &&
            K.Inputs[At + 2].Shape == V;
  if (Grad)
    Ok = Ok && K.Inputs[0].Shape == O && K.Inputs[4].Shape == O &&
         elements(K.Inputs[5]) == A.Batch * A.QHeads * A.QLen &&
         K.Outputs[0].Shape == Q && K.Outputs[1].Shape == Kt &&
         K.Outputs[2].Shape == V;
  else
    Ok = Ok && K.Outputs[0].Shape == O &&
         elements(K.Outputs[1]) == A.Batch * A.QHeads * A.QLen;
  size_t BiasAt = Grad ? 6 : 3;
  if (K.Inputs.size() > BiasAt)
    Ok = Ok && K.Inputs[BiasAt].Shape == Shape{A.Batch, A.QHeads, A.QLen,
                                                A.KVLen};
  if (!Ok)
    return "has attention operands that are not its [B, H, T, D] tensors";
  if (std::string E = attentionMisfit(K, A.Algorithm, Values); !E.empty())
    return std::string("asks for ") + enumName(A.Algorithm) +
           " attention with " + E;
  return "";
}

/// QK^T and PV (half the work when causal); backward recomputes P and does
/// four more products.
void costAttention(Kernel &K, const AttentionAttrs &A,
                   const std::vector<Value> &Values) {
  bool Grad = K.kind() == KernelKind::AttentionGrad;
  uint64_t F = 2 * uint64_t(A.Batch) * uint64_t(A.QHeads) * uint64_t(A.QLen) *
               uint64_t(A.KVLen) * uint64_t(A.HeadDim + A.ValueDim);
  if (A.Causal)
    F /= 2;
  K.Flops = Grad ? F * 5 / 2 : F;
  K.WorkspaceBytes = attentionWorkspace(
      A, Grad, dtypeBytes(Values[K.Inputs[Grad ? 1 : 0].Value].Type));
}

std::string referenceAttention(const Kernel &K, const AttentionAttrs &A,
                               HostOperands &Ops) {
  bool Grad = K.kind() == KernelKind::AttentionGrad;
  size_t Q = Grad ? 1 : 0;
  reference::AttentionShape S;
  S.B = A.Batch, S.Hq = A.QHeads, S.Hkv = A.KVHeads, S.T = A.QLen;
  S.S = A.KVLen, S.D = A.HeadDim, S.Dv = A.ValueDim, S.Causal = A.Causal;
  S.Scale = A.Scale;
  std::vector<float> Qv = Ops.load(Q), Kv = Ops.load(Q + 1),
                     Vv = Ops.load(Q + 2), Bias;
  size_t BiasAt = Grad ? 6 : 3;
  if (K.Inputs.size() > BiasAt) {
    Bias = Ops.load(BiasAt); // Expanded to [B, H, T, S].
    S.Bias = Bias.data();
    S.BiasStrides[0] = S.Hq * S.T * S.S;
    S.BiasStrides[1] = S.T * S.S;
    S.BiasStrides[2] = S.S;
    S.BiasStrides[3] = 1;
  }
  if (!Grad) {
    std::vector<float> O(size_t(S.B * S.Hq * S.T * S.Dv)),
        L(size_t(S.B * S.Hq * S.T));
    reference::attention(S, Qv.data(), Kv.data(), Vv.data(), O.data(),
                         L.data());
    Ops.store(0, O);
    Ops.store(1, L);
    return "";
  }
  std::vector<float> Do = Ops.load(0), O = Ops.load(4), L = Ops.load(5);
  std::vector<float> Dq(Qv.size()), Dk(Kv.size()), Dv(Vv.size());
  reference::attentionGrad(S, Do.data(), Qv.data(), Kv.data(), Vv.data(),
                           O.data(), L.data(), Dq.data(), Dk.data(),
                           Dv.data());
  Ops.store(0, Dq);
  Ops.store(1, Dk);
  Ops.store(2, Dv);
  return "";
}

} // namespace

extern const KernelKindInfo AttentionKind =
    kindEntry<AttentionAttrs, AttentionAttrs, checkAttention, costAttention,
              referenceAttention>("attention");
extern const KernelKindInfo AttentionGradKind =
    kindEntry<AttentionGradAttrs, AttentionAttrs, checkAttention,
              costAttention, referenceAttention>("attention");

} // namespace dsc::plan::kinds
