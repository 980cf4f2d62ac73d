//===- Lowering.cpp - Each op family's kernels ----------------------------===//
//
// The lowerings the op tables name (OpDef::Lower): a node's operands as
// the kernel reads them, its outputs given storage, the kernel's
// attributes. Views, elementwise nodes and products lower inside kernel
// selection (Kernels.cpp), whose state they share.
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Lowering.h"

#include "dsc/AttentionAlgorithms.h"
#include "dsc/Compute/Passes.h"

#include "llvm/ADT/ArrayRef.h"

#include <cmath>

using namespace llvm;

namespace dsc::compute {

namespace {

/// Rows and columns of a shape whose rows are its dims from Axis on.
std::pair<int64_t, int64_t> rowsCols(const Shape &S, int64_t Axis) {
  int64_t Cols = numel(ArrayRef<int64_t>(S).drop_front(size_t(Axis)));
  return {numel(S) / std::max<int64_t>(Cols, 1), Cols};
}

/// Every output of N, given storage.
void outputs(KernelBuilder &B, const Node &N, plan::Kernel &K) {
  for (ValueId V : N.Outputs)
    K.Outputs.push_back(B.output(V));
}

const Shape &dims(KernelBuilder &B, ValueId V) {
  return B.graph().Values[V].Dims;
}

} // namespace

plan::PointwiseAttrs copyProgram() {
  plan::PointwiseAttrs P;
  P.Registers = 1;
  P.Results = {0};
  return P;
}

Error lowerView(KernelBuilder &B, const Node &N) { return B.view(N); }
Error lowerPointwise(KernelBuilder &B, const Node &N) {
  return B.pointwise(N);
}
Error lowerMatMul(KernelBuilder &B, const Node &N) { return B.product(N); }

Error lowerReduce(KernelBuilder &B, const Node &N) {
  const Shape &X = dims(B, N.Inputs[0]);
  plan::Kernel K;
  K.Name = N.Name;
  K.Inputs = {B.ref(N.Inputs[0])};
  plan::ReduceAttrs &R = K.Attrs.emplace<plan::ReduceAttrs>();
  int64_t Count = 1;
  std::vector<int64_t> Axes = *N.A.ints("axes");
  for (int64_t A : Axes) {
    R.AxesMask |= uint64_t(1) << A;
    Count *= X[size_t(A)];
  }
  R.Scale = N.Op == "ReduceMean" ? 1.0 / double(Count) : 1.0;
  // The output with the reduced dims kept as 1.
  plan::TensorRef Out = B.output(N.Outputs[0]);
  Shape Kept = X;
  for (int64_t A : Axes)
    Kept[size_t(A)] = 1;
  Out.Shape = Kept;
  Out.Strides = contiguousStrides(Kept);
  K.Outputs = {Out};
  B.emit(std::move(K));
  return Error::success();
}

Error lowerSoftmax(KernelBuilder &B, const Node &N) {
  const Shape &X = dims(B, N.Inputs[0]);
  int64_t Axis = N.A.i("axis", -1);
  if (Axis != int64_t(X.size()) - 1)
    return B.graph().nodeError(
        N, "dsc's softmax kernel works along the last axis");
  auto [R, C] = rowsCols(X, Axis);
  plan::Kernel K;
  K.Name = N.Name;
  K.Inputs = {B.rowsRef(N.Inputs[0])};
  K.Attrs = plan::SoftmaxAttrs{R, C, N.A.i("zero_masked_rows", 0) != 0,
                               N.Op == "LogSoftmax"};
  outputs(B, N, K);
  B.emit(std::move(K));
  return Error::success();
}

Error lowerSoftmaxGrad(KernelBuilder &B, const Node &N) {
  const Shape &X = dims(B, N.Inputs[0]);
  auto [R, C] = rowsCols(X, int64_t(X.size()) - 1);
  plan::Kernel K;
  K.Name = N.Name;
  K.Inputs = {B.rowsRef(N.Inputs[0]), B.rowsRef(N.Inputs[1])};
  K.Attrs = plan::SoftmaxGradAttrs{R, C, N.Op == "dsc.LogSoftmaxGrad"};
  outputs(B, N, K);
  B.emit(std::move(K));
  return Error::success();
}

Error lowerNorm(KernelBuilder &B, const Node &N) {
  bool Rms = N.Op == "dsc.RMSNorm";
  auto [R, C] = rowsCols(dims(B, N.Inputs[0]), N.A.i("axis", -1));
  plan::Kernel K;
  K.Name = N.Name;
  for (ValueId V : N.Inputs)
    if (V != NoValue)
      K.Inputs.push_back(B.rowsRef(V));
  plan::LayerNormAttrs A{R, C, false, N.A.f("epsilon", Rms ? 1e-6 : 1e-5)};
  if (Rms)
    K.Attrs = plan::RMSNormAttrs{A};
  else
    K.Attrs = A;
  outputs(B, N, K);
  B.emit(std::move(K));
  return Error::success();
}

Error lowerNormGrad(KernelBuilder &B, const Node &N) {
  auto [R, C] = rowsCols(dims(B, N.Inputs[1]), N.A.i("axis", -1));
  plan::Kernel K;
  K.Name = N.Name;
  for (ValueId V : N.Inputs)
    K.Inputs.push_back(B.rowsRef(V));
  plan::LayerNormGradAttrs A{R, C, false};
  if (N.Op == "dsc.RMSNormGrad")
    K.Attrs = plan::RMSNormGradAttrs{A};
  else
    K.Attrs = A;
  outputs(B, N, K);
  B.emit(std::move(K));
  return Error::success();
}

Error lowerRotary(KernelBuilder &B, const Node &N) {
  // Any views: the kernel walks each operand through its strides, the
  // tables broadcast (stride 0) to x's shape.
  const Shape &X = dims(B, N.Inputs[0]);
  plan::Kernel K;
  K.Name = N.Name;
  K.Inputs = {B.ref(N.Inputs[0]), B.broadcastRef(N.Inputs[1], X),
              B.broadcastRef(N.Inputs[2], X)};
  plan::RotaryAttrs A{numel(X) / std::max<int64_t>(X.back(), 1), X.back()};
  if (N.Op == "dsc.Rotary")
    K.Attrs = A;
  else
    K.Attrs = plan::RotaryGradAttrs{A};
  outputs(B, N, K);
  B.emit(std::move(K));
  return Error::success();
}

Error lowerSwiGLU(KernelBuilder &B, const Node &N) {
  // Elementwise through any views of one shape.
  plan::Kernel K;
  K.Name = N.Name;
  if (N.Op == "dsc.SwiGLU")
    K.Attrs = plan::SwiGLUAttrs{};
  else
    K.Attrs = plan::SwiGLUGradAttrs{};
  for (ValueId V : N.Inputs)
    K.Inputs.push_back(B.ref(V));
  outputs(B, N, K);
  B.emit(std::move(K));
  return Error::success();
}

Error lowerAttention(KernelBuilder &B, const Node &N) {
  bool Grad = N.Op == "dsc.AttentionGrad";
  unsigned Q = Grad ? 1 : 0;
  const Shape &QS = dims(B, N.Inputs[Q]), &KS = dims(B, N.Inputs[Q + 1]),
              &VS = dims(B, N.Inputs[Q + 2]);
  plan::Kernel K;
  K.Name = N.Name;
  for (size_t I = 0; I < N.Inputs.size(); ++I) {
    ValueId V = N.Inputs[I];
    if (I == Q + 3 + (Grad ? 2 : 0)) { // The bias, broadcast to the scores.
      K.Inputs.push_back(B.broadcastRef(V, {QS[0], QS[1], QS[2], KS[2]}));
      continue;
    }
    // Strided is fine along every dim but the last.
    plan::TensorRef R = B.ref(V);
    bool Inner = R.Strides.empty() || R.Strides.back() == 1 ||
                 R.Shape.back() == 1;
    K.Inputs.push_back(Inner ? R : B.contiguousRef(V));
  }
  plan::AttentionAttrs A;
  A.Batch = QS[0], A.QHeads = QS[1], A.KVHeads = KS[1], A.QLen = QS[2];
  A.KVLen = KS[2], A.HeadDim = QS[3], A.ValueDim = VS[3];
  A.Causal = N.A.i("causal", 0) != 0;
  A.Scale = N.A.f("scale", 1 / std::sqrt(double(QS[3])));
  if (Grad)
    K.Attrs = plan::AttentionGradAttrs{A};
  else
    K.Attrs = A;
  outputs(B, N, K);
  // The first algorithm of the planner's order that runs this kernel.
  plan::AttentionAlgorithm &Algo = K.as<plan::AttentionAttrs>()->Algorithm;
  Algo = plan::AttentionAlgorithm::Math;
  for (plan::AttentionAlgorithm Try : B.options().AttentionOrder)
    if (plan::attentionMisfit(K, Try, B.values()).empty()) {
      Algo = Try;
      break;
    }
  B.emit(std::move(K));
  return Error::success();
}

Error lowerGather(KernelBuilder &B, const Node &N) {
  bool Grad = N.Op == "dsc.GatherGrad";
  int64_t Axis = N.A.i("axis", 0);
  const Shape &T = Grad ? dims(B, N.Outputs[0]) : dims(B, N.Inputs[0]);
  ValueId Idx = N.Inputs[Grad ? 0 : 1];
  int64_t Outer = numel(ArrayRef<int64_t>(T).take_front(size_t(Axis)));
  int64_t Inner = numel(ArrayRef<int64_t>(T).drop_front(size_t(Axis) + 1));
  plan::Kernel K;
  K.Name = N.Name;
  K.Inputs = {B.rowsRef(N.Inputs[0]), B.rowsRef(N.Inputs[1])};
  plan::GatherAttrs A{Axis, Outer, T[size_t(Axis)], Inner,
                      numel(dims(B, Idx))};
  if (Grad)
    K.Attrs = plan::GatherGradAttrs{A};
  else
    K.Attrs = A;
  outputs(B, N, K);
  B.emit(std::move(K));
  return Error::success();
}

Error lowerCrossEntropy(KernelBuilder &B, const Node &N) {
  bool Grad = N.Op == "dsc.CrossEntropyGrad";
  const Shape &X = dims(B, N.Inputs[0]);
  plan::Kernel K;
  K.Name = N.Name;
  for (size_t I = 0; I < N.Inputs.size(); ++I)
    K.Inputs.push_back(B.rowsRef(N.Inputs[I], /*Padded=*/I == 0));
  plan::CrossEntropyAttrs A{numel(X) / X.back(), X.back(),
                            N.A.i("ignore_index", -100)};
  if (Grad)
    K.Attrs = plan::CrossEntropyGradAttrs{A};
  else
    K.Attrs = A;
  // The logits' gradient takes the logits' padded rows.
  for (ValueId V : N.Outputs)
    K.Outputs.push_back(B.output(V, /*PadRows=*/Grad));
  if (!Grad) {
    std::optional<LossKind> Loss = lossNamed(N.A.s("loss", "causal-lm"));
    if (!Loss)
      return B.graph().nodeError(N, "names a loss dsc does not know");
    B.setLoss(*Loss);
  }
  B.emit(std::move(K));
  return Error::success();
}

Error lowerConcat(KernelBuilder &B, const Node &N) {
  // One copy per part, each into its window of the output.
  plan::TensorRef Out = B.output(N.Outputs[0]);
  int64_t Axis = N.A.i("axis", 0), At = 0;
  for (ValueId V : N.Inputs) {
    const Shape &S = dims(B, V);
    plan::Kernel Copy;
    Copy.Name = N.Name + " (part)";
    Copy.Inputs = {B.ref(V)};
    Copy.Outputs = {plan::TensorRef{
        Out.Value, Out.Offset + uint64_t(At * Out.Strides[size_t(Axis)]), S,
        Out.Strides}};
    Copy.Attrs = copyProgram();
    B.emit(std::move(Copy));
    At += S[size_t(Axis)];
  }
  return Error::success();
}

Error lowerSliceGrad(KernelBuilder &B, const Node &N) {
  // Zeros, then the gradient copied into the slice's window.
  plan::TensorRef Out = B.output(N.Outputs[0]);
  plan::Kernel Fill;
  Fill.Name = N.Name + " (zeros)";
  Fill.Outputs = {Out};
  Fill.Attrs = plan::FillAttrs{0.0};
  B.emit(std::move(Fill));
  plan::TensorRef Window = Out;
  std::vector<int64_t> A = *N.A.ints("dsc_axes"), S = *N.A.ints("dsc_starts"),
                       St = *N.A.ints("dsc_steps");
  for (size_t I = 0; I < A.size(); ++I) {
    Window.Offset += uint64_t(S[I] * Window.Strides[size_t(A[I])]);
    Window.Strides[size_t(A[I])] *= St[I];
  }
  Window.Shape = dims(B, N.Inputs[0]);
  plan::Kernel Copy;
  Copy.Name = N.Name;
  Copy.Inputs = {B.ref(N.Inputs[0])};
  Copy.Outputs = {Window};
  Copy.Attrs = copyProgram();
  B.emit(std::move(Copy));
  return Error::success();
}

} // namespace dsc::compute
