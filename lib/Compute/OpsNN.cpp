//===- OpsNN.cpp - Norms, dropout, attention, the loss --------------------===//
//
// The fused operators a transformer trains with. LayerNormalization is the
// ONNX op itself (with its Mean and InvStdDev outputs always made, since
// its gradient needs them); dsc.RMSNorm, dsc.Rotary, dsc.SwiGLU and
// dsc.Attention are what the fusion passes turn the exporters'
// decompositions into;
// dsc.CrossEntropy
// is the loss dsc appends. Each backward is an operator of its own, whose
// host evaluation is the reference the runtime's kernel is tested against.
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Lowering.h"
#include "dsc/Compute/Ops.h"
#include "dsc/Random.h"
#include "dsc/ReferenceKernels.h"

#include <cmath>

using namespace llvm;

namespace dsc::compute {

namespace {

/// Rows of a contiguous [Rows, Cols] view of a tensor normalized over its
/// dims [Axis, rank).
std::pair<int64_t, int64_t> rowsCols(const Shape &S, int64_t Axis) {
  int64_t Cols = numel(ArrayRef<int64_t>(S).drop_front(size_t(Axis)));
  return {numel(S) / std::max<int64_t>(Cols, 1), Cols};
}

Expected<int64_t> normAxis(InferContext &C) {
  int64_t Rank = int64_t(C.shape(0).size());
  int64_t Axis = C.N.A.i("axis", -1);
  if (Axis < 0)
    Axis += Rank;
  if (Axis < 0 || Axis >= Rank)
    return C.error("normalizes from axis " + Twine(Axis) +
                   " of a tensor of rank " + Twine(Rank));
  C.N.A.set("axis", Axis);
  return Axis;
}

/// The shape of per-row statistics: the leading dims, then 1s.
Shape statShape(const Shape &X, int64_t Axis) {
  Shape S = X;
  for (size_t K = size_t(Axis); K < S.size(); ++K)
    S[K] = 1;
  return S;
}

/// Checks that a weight covers the normalized dims.
Error checkWeight(InferContext &C, unsigned I, int64_t Axis) {
  if (!C.has(I))
    return Error::success();
  int64_t Cols = rowsCols(C.shape(0), Axis).second;
  if (numel(C.shape(I)) != Cols)
    return C.error("its weight " + shapeText(C.shape(I)) +
                   " does not cover the normalized dims of " +
                   shapeText(C.shape(0)));
  return Error::success();
}

//===----------------------------------------------------------------------===//
// LayerNormalization
//===----------------------------------------------------------------------===//

Error inferLayerNorm(InferContext &C) {
  if (C.N.Inputs.size() < 2 || !C.has(0) || !C.has(1) ||
      C.N.Outputs.size() != 3)
    return C.error("takes X, Scale and an optional B, and makes Y, Mean and "
                   "InvStdDev");
  Expected<int64_t> Axis = normAxis(C);
  if (!Axis)
    return Axis.takeError();
  if (Error E = checkWeight(C, 1, *Axis))
    return E;
  if (Error E = checkWeight(C, 2, *Axis))
    return E;
  C.out(0, C.shape(0), C.in(0).Type);
  C.out(1, statShape(C.shape(0), *Axis), DType::F32);
  C.out(2, statShape(C.shape(0), *Axis), DType::F32);
  return Error::success();
}

Error evalLayerNorm(EvalContext &C) {
  HostTensor X = C.In[0]->contiguousCopy();
  std::vector<float> W = C.In[1]->floats();
  std::vector<float> B;
  if (C.In.size() > 2 && C.In[2])
    B = C.In[2]->floats();
  auto [Rows, Cols] = rowsCols(X.shape(), C.N.A.i("axis", -1));
  HostTensor &Y = C.fresh(0), &Mean = C.fresh(1), &Rstd = C.fresh(2);
  reference::layerNorm(X.floatData(), W.data(), B.empty() ? nullptr : B.data(),
                       Y.floatData(), Mean.floatData(), Rstd.floatData(), Rows,
                       Cols, C.N.A.f("epsilon", 1e-5));
  return Error::success();
}

void gradLayerNorm(GradContext &C) {
  if (!C.needs(0) && !C.needs(1) && !C.needs(2))
    return;
  Attributes A;
  A.set("axis", C.node().A.i("axis", -1));
  std::vector<ValueId> G = C.emitN(
      "dsc.LayerNormGrad",
      {C.dOut(0), C.input(0), C.input(1), C.output(1), C.output(2)}, A, 3);
  C.setGrad(0, G[0]);
  C.setGrad(1, C.reshape(G[1], C.shape(C.input(1))));
  if (C.node().Inputs.size() > 2 && C.input(2) != NoValue)
    C.setGrad(2, C.reshape(G[2], C.shape(C.input(2))));
}

/// dsc.LayerNormGrad(dy, x, w, mean, rstd) -> dx, dw, db; dw and db are of
/// the normalized dims' size, flat.
Error inferLayerNormGrad(InferContext &C) {
  if (C.N.Inputs.size() != 5 || C.N.Outputs.size() != 3)
    return C.error("takes dy, x, w, mean, rstd; makes dx, dw, db");
  int64_t Axis = C.N.A.i("axis", -1);
  int64_t Cols = rowsCols(C.shape(1), Axis).second;
  C.out(0, C.shape(1), C.in(0).Type);
  C.out(1, {Cols}, C.in(0).Type);
  C.out(2, {Cols}, C.in(0).Type);
  return Error::success();
}

Error evalLayerNormGrad(EvalContext &C) {
  bool Rms = C.N.Op == "dsc.RMSNormGrad";
  HostTensor Dy = C.In[0]->contiguousCopy(), X = C.In[1]->contiguousCopy();
  std::vector<float> W = C.In[2]->floats(), Mean = C.In[3]->floats();
  std::vector<float> Rstd = Rms ? Mean : C.In[4]->floats();
  auto [Rows, Cols] = rowsCols(X.shape(), C.N.A.i("axis", -1));
  HostTensor &Dx = C.fresh(0), &Dw = C.fresh(1);
  float *Db = Rms ? nullptr : C.fresh(2).floatData();
  reference::layerNormGrad(Dy.floatData(), X.floatData(), W.data(),
                           Rms ? nullptr : Mean.data(), Rstd.data(),
                           Dx.floatData(), Dw.floatData(), Db, Rows, Cols);
  return Error::success();
}

//===----------------------------------------------------------------------===//
// dsc.RMSNorm(x, w) {axis, epsilon} -> y, rstd
//===----------------------------------------------------------------------===//

Error inferRMSNorm(InferContext &C) {
  if (C.N.Inputs.size() != 2 || C.N.Outputs.size() != 2)
    return C.error("takes x and w, makes y and rstd");
  Expected<int64_t> Axis = normAxis(C);
  if (!Axis)
    return Axis.takeError();
  if (Error E = checkWeight(C, 1, *Axis))
    return E;
  C.out(0, C.shape(0), C.in(0).Type);
  C.out(1, statShape(C.shape(0), *Axis), DType::F32);
  return Error::success();
}

Error evalRMSNorm(EvalContext &C) {
  HostTensor X = C.In[0]->contiguousCopy();
  std::vector<float> W = C.In[1]->floats();
  auto [Rows, Cols] = rowsCols(X.shape(), C.N.A.i("axis", -1));
  HostTensor &Y = C.fresh(0), &Rstd = C.fresh(1);
  reference::rmsNorm(X.floatData(), W.data(), Y.floatData(), Rstd.floatData(),
                     Rows, Cols, C.N.A.f("epsilon", 1e-6));
  return Error::success();
}

void gradRMSNorm(GradContext &C) {
  Attributes A;
  A.set("axis", C.node().A.i("axis", -1));
  std::vector<ValueId> G = C.emitN(
      "dsc.RMSNormGrad", {C.dOut(0), C.input(0), C.input(1), C.output(1)}, A,
      2);
  C.setGrad(0, G[0]);
  C.setGrad(1, C.reshape(G[1], C.shape(C.input(1))));
}

/// dsc.RMSNormGrad(dy, x, w, rstd) -> dx, dw.
Error inferRMSNormGrad(InferContext &C) {
  if (C.N.Inputs.size() != 4 || C.N.Outputs.size() != 2)
    return C.error("takes dy, x, w, rstd; makes dx, dw");
  int64_t Cols = rowsCols(C.shape(1), C.N.A.i("axis", -1)).second;
  C.out(0, C.shape(1), C.in(0).Type);
  C.out(1, {Cols}, C.in(0).Type);
  return Error::success();
}

Error evalRMSNormGrad(EvalContext &C) { return evalLayerNormGrad(C); }

//===----------------------------------------------------------------------===//
// Dropout(x, ratio, training_mode): training with a ratio above 0 only;
// canonicalization removes the others. The mask is recomputed, not kept.
//===----------------------------------------------------------------------===//

Error inferDropout(InferContext &C) {
  if (!C.has(0))
    return C.error("has no input");
  double Ratio = C.N.A.f("ratio", 0.5);
  if (C.has(1)) {
    const HostTensor *R = C.constant(1);
    if (!R)
      return C.error("its ratio is computed at run time");
    Ratio = R->at(0);
  }
  if (Ratio < 0 || Ratio >= 1)
    return C.error("has ratio " + std::to_string(Ratio) +
                   "; it must be in [0, 1)");
  C.N.A.setFloat("ratio", Ratio);
  C.out(0, C.shape(0), C.in(0).Type);
  for (unsigned I = 1; I < C.N.Outputs.size(); ++I)
    C.out(I, C.shape(0), DType::U8);
  return Error::success();
}

Error evalDropout(EvalContext &C) {
  HostTensor X = C.In[0]->contiguousCopy();
  HostTensor &Y = C.fresh(0);
  float Ratio = float(C.N.A.f("ratio", 0.5));
  uint64_t Stream = uint64_t(C.N.A.i("dsc_stream", 0));
  bool Grad = C.N.Op == "dsc.DropoutGrad";
  for (int64_t I = 0; I < X.numel(); ++I) {
    bool Keep = dropoutKeeps(C.Seed, Stream, uint64_t(I), Ratio);
    Y.floatData()[I] = Keep ? X.floatData()[I] / (1 - Ratio) : 0.0f;
    if (!Grad && C.Out.size() > 1) {
      if (I == 0)
        C.fresh(1);
      C.Out[1].set(I, Keep);
    }
  }
  return Error::success();
}

void gradDropout(GradContext &C) {
  Attributes A;
  A.setFloat("ratio", C.node().A.f("ratio", 0.5));
  A.set("dsc_stream", C.node().A.i("dsc_stream", 0));
  C.setGrad(0, C.emit("dsc.DropoutGrad", {C.dOut(0)}, A));
}

//===----------------------------------------------------------------------===//
// dsc.Attention(q, k, v, [bias]) {causal, scale} -> out, lse
//   q [B, Hq, T, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv]; Hq a multiple of
//   Hkv (grouped-query attention); bias broadcasts to [B, Hq, T, S].
//===----------------------------------------------------------------------===//

Error inferAttention(InferContext &C) {
  if (C.N.Inputs.size() < 3 || C.N.Inputs.size() > 4 || C.N.Outputs.size() != 2)
    return C.error("takes q, k, v and an optional bias; makes out and lse");
  const Shape &Q = C.shape(0), &K = C.shape(1), &V = C.shape(2);
  if (Q.size() != 4 || K.size() != 4 || V.size() != 4 || Q[0] != K[0] ||
      K[0] != V[0] || Q[3] != K[3] || K[1] != V[1] || K[2] != V[2] ||
      K[1] == 0 || Q[1] % K[1])
    return C.error("expects q [B, Hq, T, D], k [B, Hkv, S, D], v [B, Hkv, "
                   "S, Dv] with Hq a multiple of Hkv; has " +
                   shapeText(Q) + ", " + shapeText(K) + ", " + shapeText(V));
  if (C.has(3) && !broadcastShapes(C.shape(3), {Q[0], Q[1], Q[2], K[2]}))
    return C.error("its bias " + shapeText(C.shape(3)) +
                   " does not broadcast to the scores");
  C.out(0, {Q[0], Q[1], Q[2], V[3]}, C.in(0).Type);
  C.out(1, {Q[0], Q[1], Q[2]}, DType::F32);
  return Error::success();
}

/// The shape of an attention node's problem, its operands made contiguous
/// (the bias keeps its broadcast strides).
struct AttentionOperands {
  reference::AttentionShape S;
  HostTensor Q, K, V, Bias;

  AttentionOperands(const EvalContext &C, unsigned First) {
    Q = C.In[First]->contiguousCopy();
    K = C.In[First + 1]->contiguousCopy();
    V = C.In[First + 2]->contiguousCopy();
    S.B = Q.shape()[0], S.Hq = Q.shape()[1], S.T = Q.shape()[2];
    S.D = Q.shape()[3], S.Hkv = K.shape()[1], S.S = K.shape()[2];
    S.Dv = V.shape()[3];
    S.Scale = C.N.A.f("scale", 1 / std::sqrt(double(S.D)));
    S.Causal = C.N.A.i("causal", 0);
    unsigned BiasAt = First == 0 ? 3 : 6;
    if (C.In.size() > BiasAt && C.In[BiasAt]) {
      // The broadcast view's strides index the bias's own storage.
      Bias = C.In[BiasAt]->expanded({S.B, S.Hq, S.T, S.S}).contiguousCopy();
      S.Bias = Bias.floatData();
      Shape St = contiguousStrides(Bias.shape());
      for (int K = 0; K < 4; ++K)
        S.BiasStrides[K] = St[size_t(K)];
    }
  }
};

Error evalAttention(EvalContext &C) {
  AttentionOperands A(C, 0);
  HostTensor &O = C.fresh(0), &Lse = C.fresh(1);
  reference::attention(A.S, A.Q.floatData(), A.K.floatData(), A.V.floatData(),
                       O.floatData(), Lse.floatData());
  return Error::success();
}

void gradAttention(GradContext &C) {
  std::vector<ValueId> Ins = {C.dOut(0),   C.input(0), C.input(1),
                              C.input(2),  C.output(0), C.output(1)};
  if (C.node().Inputs.size() > 3)
    Ins.push_back(C.input(3));
  if (C.needs(3))
    C.fail("the attention bias needs a gradient; dsc trains only constant "
           "masks");
  std::vector<ValueId> G =
      C.emitN("dsc.AttentionGrad", Ins, C.node().A, 3);
  for (unsigned I = 0; I < 3; ++I)
    C.setGrad(I, G[I]);
}

/// dsc.AttentionGrad(dout, q, k, v, out, lse, [bias]) -> dq, dk, dv.
Error inferAttentionGrad(InferContext &C) {
  if (C.N.Inputs.size() < 6 || C.N.Outputs.size() != 3)
    return C.error("takes dout, q, k, v, out, lse and an optional bias");
  for (unsigned I = 0; I < 3; ++I)
    C.out(I, C.shape(I + 1), C.in(0).Type);
  return Error::success();
}

Error evalAttentionGrad(EvalContext &C) {
  AttentionOperands A(C, 1);
  HostTensor Dout = C.In[0]->contiguousCopy(), O = C.In[4]->contiguousCopy(),
             Lse = C.In[5]->contiguousCopy();
  HostTensor &Dq = C.fresh(0), &Dk = C.fresh(1), &Dv = C.fresh(2);
  reference::attentionGrad(A.S, Dout.floatData(), A.Q.floatData(),
                           A.K.floatData(), A.V.floatData(), O.floatData(),
                           Lse.floatData(), Dq.floatData(), Dk.floatData(),
                           Dv.floatData());
  return Error::success();
}

//===----------------------------------------------------------------------===//
// dsc.CrossEntropy(logits [..., V], targets [...]) {ignore_index} -> loss,
// lse: the mean over targets other than ignore_index (HF's -100) of
// -log softmax(logits)[target], as torch.nn.functional.cross_entropy.
//===----------------------------------------------------------------------===//

Error inferCrossEntropy(InferContext &C) {
  if (C.N.Inputs.size() != 2 || C.N.Outputs.size() != 2)
    return C.error("takes logits and targets; makes loss and lse");
  Shape L = C.shape(0);
  if (L.empty() || Shape(L.begin(), L.end() - 1) != C.shape(1))
    return C.error("logits " + shapeText(L) + " do not match targets " +
                   shapeText(C.shape(1)));
  if (C.in(1).isFloat())
    return C.error("its targets are not integers");
  C.out(0, {}, DType::F32);
  C.out(1, C.shape(1), DType::F32);
  return Error::success();
}

Error evalCrossEntropy(EvalContext &C) {
  HostTensor X = C.In[0]->contiguousCopy();
  std::vector<int64_t> T = C.In[1]->ints();
  int64_t V = X.shape().back();
  HostTensor &Loss = C.fresh(0), &Lse = C.fresh(1);
  if (!reference::crossEntropy(X.floatData(), T.data(), Loss.floatData(),
                               Lse.floatData(), int64_t(T.size()), V,
                               C.N.A.i("ignore_index", -100)))
    return C.error("a target is outside the " + Twine(V) + " classes");
  return Error::success();
}

void gradCrossEntropy(GradContext &C) {
  Attributes A;
  A.set("ignore_index", C.node().A.i("ignore_index", -100));
  C.setGrad(0, C.emit("dsc.CrossEntropyGrad",
                      {C.input(0), C.input(1), C.output(1), C.dOut(0)}, A));
}

/// dsc.CrossEntropyGrad(logits, targets, lse, dloss) -> dlogits.
Error inferCrossEntropyGrad(InferContext &C) {
  if (C.N.Inputs.size() != 4)
    return C.error("takes logits, targets, lse and dloss");
  C.out(0, C.shape(0), C.in(0).Type);
  return Error::success();
}

Error evalCrossEntropyGrad(EvalContext &C) {
  HostTensor X = C.In[0]->contiguousCopy();
  std::vector<int64_t> T = C.In[1]->ints();
  std::vector<float> L = C.In[2]->floats();
  HostTensor &D = C.fresh(0);
  reference::crossEntropyGrad(X.floatData(), T.data(), L.data(),
                              C.In[3]->at(0), D.floatData(), int64_t(T.size()),
                              X.shape().back(), C.N.A.i("ignore_index", -100));
  return Error::success();
}

/// dsc.Rotary(x, cos, sin) -> y, and dsc.RotaryGrad(dy, cos, sin) -> dx:
/// the tables broadcast to x, whose last dim is even.
Error inferRotary(InferContext &C) {
  if (C.N.Inputs.size() != 3 || C.N.Outputs.size() != 1 || !C.has(1) ||
      !C.has(2))
    return C.error("takes x, cos and sin, makes y");
  const Shape &X = C.shape(0);
  if (X.empty() || X.back() % 2)
    return C.error("rotates pairs of the last dim, which is odd in " +
                   shapeText(X));
  for (unsigned I = 1; I < 3; ++I) {
    std::optional<Shape> B = broadcastShapes(C.shape(I), X);
    if (!B || *B != X)
      return C.error("its table " + shapeText(C.shape(I)) +
                     " does not broadcast to " + shapeText(X));
  }
  C.out(0, X, C.in(0).Type);
  return Error::success();
}

Error evalRotary(EvalContext &C) {
  HostTensor X = C.In[0]->contiguousCopy();
  HostTensor Cos = C.In[1]->expanded(X.shape()).contiguousCopy();
  HostTensor Sin = C.In[2]->expanded(X.shape()).contiguousCopy();
  int64_t Cols = X.shape().back();
  HostTensor &Y = C.fresh(0);
  reference::rotary(X.floatData(), Cos.floatData(), Sin.floatData(),
                    Y.floatData(), numel(X.shape()) / std::max<int64_t>(Cols, 1),
                    Cols, C.N.Op == "dsc.RotaryGrad");
  return Error::success();
}

void gradRotary(GradContext &C) {
  if (C.needs(1) || C.needs(2))
    C.fail("the rotary tables need a gradient; dsc trains only constant "
           "tables");
  C.setGrad(0, C.emit("dsc.RotaryGrad", {C.dOut(0), C.input(1), C.input(2)}));
}

/// dsc.SwiGLU(g, u) -> silu(g) u, and dsc.SwiGLUGrad(dy, g, u) -> dg, du:
/// elementwise over one shape (HF's LlamaMLP gate, act_fn(gate) * up).
Error inferSwiGLU(InferContext &C) {
  bool Grad = C.N.Op == "dsc.SwiGLUGrad";
  unsigned Ins = Grad ? 3 : 2, Outs = Grad ? 2 : 1;
  if (C.N.Inputs.size() != Ins || C.N.Outputs.size() != Outs)
    return C.error(Grad ? "takes dy, g and u, makes dg and du"
                        : "takes g and u, makes y");
  for (unsigned I = 0; I < Ins; ++I) {
    if (!C.has(I) || !C.in(I).isFloat())
      return C.error("its operands are floating-point values");
    if (C.shape(I) != C.shape(0))
      return C.error("is elementwise over one shape; it has " +
                     shapeText(C.shape(0)) + " and " + shapeText(C.shape(I)));
  }
  for (unsigned I = 0; I < Outs; ++I)
    C.out(I, C.shape(0), C.in(0).Type);
  return Error::success();
}

Error evalSwiGLU(EvalContext &C) {
  std::vector<HostTensor> In;
  for (const HostTensor *T : C.In)
    In.push_back(T->contiguousCopy());
  int64_t N = numel(In[0].shape());
  if (C.N.Op == "dsc.SwiGLU") {
    reference::swiglu(In[0].floatData(), In[1].floatData(),
                      C.fresh(0).floatData(), N);
    return Error::success();
  }
  HostTensor &Dg = C.fresh(0), &Du = C.fresh(1);
  reference::swigluGrad(In[0].floatData(), In[1].floatData(),
                        In[2].floatData(), Dg.floatData(), Du.floatData(), N);
  return Error::success();
}

void gradSwiGLU(GradContext &C) {
  std::vector<ValueId> G =
      C.emitN("dsc.SwiGLUGrad", {C.dOut(0), C.input(0), C.input(1)}, {}, 2);
  C.setGrad(0, G[0]);
  C.setGrad(1, G[1]);
}

const OpDef Ops[] = {
    {"LayerNormalization", inferLayerNorm, evalLayerNorm, gradLayerNorm, 0,
     "layer normalization over the trailing dims", lowerNorm},
    {"dsc.LayerNormGrad", inferLayerNormGrad, evalLayerNormGrad, nullptr, 0,
     "dx, dw, db of a layer normalization", lowerNormGrad},
    {"dsc.RMSNorm", inferRMSNorm, evalRMSNorm, gradRMSNorm, 0,
     "x / sqrt(mean(x^2) + eps) * w", lowerNorm},
    {"dsc.RMSNormGrad", inferRMSNormGrad, evalRMSNormGrad, nullptr, 0,
     "dx, dw of an RMS normalization", lowerNormGrad},
    {"dsc.Rotary", inferRotary, evalRotary, gradRotary, 0,
     "x * cos + rotate_half(x) * sin (rotary position embedding)", lowerRotary},
    {"dsc.RotaryGrad", inferRotary, evalRotary, nullptr, 0,
     "dx of a rotary embedding: its transpose applied to dy", lowerRotary},
    {"dsc.SwiGLU", inferSwiGLU, evalSwiGLU, gradSwiGLU, 0,
     "silu(g) * u, silu(g) = g * sigmoid(g) (the gate of SwiGLU MLPs)", lowerSwiGLU},
    {"dsc.SwiGLUGrad", inferSwiGLU, evalSwiGLU, nullptr, 0,
     "dg, du of a SwiGLU gate", lowerSwiGLU},
    {"Dropout", inferDropout, evalDropout, gradDropout, Random,
     "x with elements zeroed at random, the rest scaled", lowerPointwise},
    {"dsc.DropoutGrad", inferDropout, evalDropout, nullptr, Random,
     "dy through the same mask", lowerPointwise},
    {"dsc.Attention", inferAttention, evalAttention, gradAttention, 0,
     "scaled dot-product attention (causal, grouped-query, biased)", lowerAttention},
    {"dsc.AttentionGrad", inferAttentionGrad, evalAttentionGrad, nullptr, 0,
     "dq, dk, dv of attention", lowerAttention},
    {"dsc.CrossEntropy", inferCrossEntropy, evalCrossEntropy,
     gradCrossEntropy, 0, "mean softmax cross-entropy of the targets", lowerCrossEntropy},
    {"dsc.CrossEntropyGrad", inferCrossEntropyGrad, evalCrossEntropyGrad,
     nullptr, 0, "dlogits of the cross-entropy", lowerCrossEntropy},
};

} // namespace

ArrayRef<OpDef> nnOps() { return Ops; }

} // namespace dsc::compute
