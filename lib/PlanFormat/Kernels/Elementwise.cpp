//===- Elementwise.cpp - Pointwise, fill, rotary and SwiGLU kinds ---------===//
//
// Kinds that compute each output element from the inputs' elements at the
// same place, every operand walked through its own strides (AnyViews).
//
//===----------------------------------------------------------------------===//

#include "KindSupport.h"

#include "dsc/Pointwise.h"

namespace dsc::plan::kinds {

namespace {

//===----------------------------------------------------------------------===//
// Pointwise
//===----------------------------------------------------------------------===//

/// A program reads registers only after writing them, and its results
/// name registers it wrote.
std::string checkProgram(const Kernel &K, const PointwiseAttrs &P) {
  if (P.Registers < K.Inputs.size() || P.Registers > 256 ||
      P.Program.size() > 4096)
    return "a pointwise program of the wrong size";
  std::vector<bool> Written(P.Registers, false);
  for (size_t R = 0; R < K.Inputs.size(); ++R)
    Written[R] = true;
  for (const PointwiseInstr &X : P.Program) {
    if (X.Dest >= P.Registers)
      return "a pointwise instruction with a bad destination";
    if (X.Op == PointwiseOp::Const) {
      if (X.A >= P.Constants.size())
        return "a pointwise constant out of range";
    } else {
      uint32_t Args[3] = {X.A, X.B, X.C};
      for (unsigned A = 0; A < pointwise::registerArgs(X.Op); ++A)
        if (Args[A] >= P.Registers || !Written[Args[A]])
          return "a pointwise instruction reads a register not yet written";
      if (X.Op == PointwiseOp::Dropout && X.B >= P.Constants.size())
        return "a dropout ratio out of range";
    }
    Written[X.Dest] = true;
  }
  if (P.Results.size() != K.Outputs.size())
    return "a pointwise program whose results do not match the kernel's "
           "outputs";
  for (uint32_t R : P.Results)
    if (R >= P.Registers || !Written[R])
      return "a pointwise result names a register never written";
  return "";
}

std::string checkPointwise(const Kernel &K, const PointwiseAttrs &P,
                           const std::vector<Value> &) {
  if (std::string Bad = operandCounts(K, 0, pointwise::MaxInputs, 1,
                                      pointwise::MaxOutputs);
      !Bad.empty())
    return Bad;
  return checkProgram(K, P);
}

std::string referencePointwise(const Kernel &K, const PointwiseAttrs &P,
                               HostOperands &Ops) {
  int64_t N = elements(K.Outputs[0]);
  std::vector<double> Args(K.Inputs.size()), Res(K.Outputs.size());
  for (int64_t E = 0; E < N; ++E) {
    for (size_t J = 0; J < K.Inputs.size(); ++J)
      Args[J] = Ops.input(J, E);
    reference::runProgram(P, unsigned(K.Inputs.size()), Args.data(),
                          Res.data(), Ops.seed(), uint64_t(E));
    for (size_t J = 0; J < K.Outputs.size(); ++J)
      Ops.output(J, E) = reference::storedAs(Res[J], Ops.outputType(J));
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Fill
//===----------------------------------------------------------------------===//

std::string checkFill(const Kernel &K, const FillAttrs &,
                      const std::vector<Value> &) {
  return operandCounts(K, 0, 1);
}

std::string referenceFill(const Kernel &K, const FillAttrs &F,
                          HostOperands &Ops) {
  for (int64_t E = 0; E < elements(K.Outputs[0]); ++E)
    Ops.output(0, E) = float(F.Value);
  return "";
}

//===----------------------------------------------------------------------===//
// Rotary
//===----------------------------------------------------------------------===//

/// Pairs (i, i + cols/2) of each row rotate: every operand has the
/// output's shape, whose last dim is the even cols.
std::string checkRotary(const Kernel &K, const RotaryAttrs &A,
                        const std::vector<Value> &) {
  if (std::string Bad = operandCounts(K, 3, 1); !Bad.empty())
    return Bad;
  const std::vector<int64_t> &S = K.Outputs[0].Shape;
  bool Ok = !S.empty() && A.Cols > 0 && A.Cols % 2 == 0 && S.back() == A.Cols &&
            A.Rows >= 0 && A.Rows * A.Cols == elements(K.Outputs[0]);
  for (const TensorRef &R : K.Inputs)
    Ok = Ok && R.Shape == S;
  return Ok ? "" : "rotates operands that are not rows of an even length";
}

std::string referenceRotary(const Kernel &K, const RotaryAttrs &A,
                            HostOperands &Ops) {
  std::vector<float> X = Ops.load(0), C = Ops.load(1), S = Ops.load(2),
                     Y(X.size());
  reference::rotary(X.data(), C.data(), S.data(), Y.data(), A.Rows, A.Cols,
                    K.kind() == KernelKind::RotaryGrad);
  Ops.store(0, Y);
  return "";
}

//===----------------------------------------------------------------------===//
// SwiGLU
//===----------------------------------------------------------------------===//

/// Elementwise: every operand has the first output's shape.
std::string checkSwiGLU(const Kernel &K, const SwiGLUAttrs &,
                        const std::vector<Value> &) {
  bool Grad = K.kind() == KernelKind::SwiGLUGrad;
  if (std::string Bad = operandCounts(K, Grad ? 3 : 2, Grad ? 2 : 1);
      !Bad.empty())
    return Bad;
  for (const std::vector<TensorRef> *Side : {&K.Inputs, &K.Outputs})
    for (const TensorRef &R : *Side)
      if (R.Shape != K.Outputs[0].Shape)
        return "is elementwise over operands of different shapes";
  return "";
}

std::string referenceSwiGLU(const Kernel &K, const SwiGLUAttrs &,
                            HostOperands &Ops) {
  if (K.kind() == KernelKind::SwiGLU) {
    std::vector<float> G = Ops.load(0), U = Ops.load(1), Y(G.size());
    reference::swiglu(G.data(), U.data(), Y.data(), int64_t(G.size()));
    Ops.store(0, Y);
    return "";
  }
  std::vector<float> Dy = Ops.load(0), G = Ops.load(1), U = Ops.load(2),
                     Dg(G.size()), Du(G.size());
  reference::swigluGrad(Dy.data(), G.data(), U.data(), Dg.data(), Du.data(),
                        int64_t(G.size()));
  Ops.store(0, Dg);
  Ops.store(1, Du);
  return "";
}

} // namespace

extern const KernelKindInfo PointwiseKind =
    kindEntry<PointwiseAttrs, PointwiseAttrs, checkPointwise,
              noWorkspace<PointwiseAttrs>, referencePointwise>("elementwise", true);
extern const KernelKindInfo FillKind =
    kindEntry<FillAttrs, FillAttrs, checkFill, noWorkspace<FillAttrs>,
              referenceFill>("elementwise", true);
extern const KernelKindInfo RotaryKind =
    kindEntry<RotaryAttrs, RotaryAttrs, checkRotary, noWorkspace<RotaryAttrs>,
              referenceRotary>("elementwise", true);
extern const KernelKindInfo RotaryGradKind =
    kindEntry<RotaryGradAttrs, RotaryAttrs, checkRotary,
              noWorkspace<RotaryAttrs>, referenceRotary>("elementwise", true);
extern const KernelKindInfo SwiGLUKind =
    kindEntry<SwiGLUAttrs, SwiGLUAttrs, checkSwiGLU, noWorkspace<SwiGLUAttrs>,
              referenceSwiGLU>("elementwise", true);
extern const KernelKindInfo SwiGLUGradKind =
    kindEntry<SwiGLUGradAttrs, SwiGLUAttrs, checkSwiGLU,
              noWorkspace<SwiGLUAttrs>, referenceSwiGLU>("elementwise", true);

} // namespace dsc::plan::kinds
