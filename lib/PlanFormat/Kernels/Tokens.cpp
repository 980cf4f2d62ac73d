//===- Tokens.cpp - Gather (embeddings) and cross-entropy kinds -----------===//
//
// Kinds that read token ids: an embedding's gather and its gradient, the
// loss and its gradient. Their data can be wrong where their shapes are
// right (an id outside the table, a target outside the classes): the
// reference says so rather than reading past an array.
//
//===----------------------------------------------------------------------===//

#include "KindSupport.h"

namespace dsc::plan::kinds {

namespace {

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

std::string checkGather(const Kernel &K, const GatherAttrs &A,
                        const std::vector<Value> &) {
  if (std::string Bad = operandCounts(K, 2, 1); !Bad.empty())
    return Bad;
  bool Grad = K.kind() == KernelKind::GatherGrad;
  const TensorRef &Table = Grad ? K.Outputs[0] : K.Inputs[0],
                  &Index = K.Inputs[Grad ? 0 : 1],
                  &Rows = Grad ? K.Inputs[1] : K.Outputs[0];
  if (A.Outer < 0 || A.Dim < 0 || A.Inner < 0 || A.Count < 0 ||
      elements(Table) != A.Outer * A.Dim * A.Inner ||
      elements(Index) != A.Count ||
      elements(Rows) != A.Outer * A.Count * A.Inner)
    return "has gather operands that are not its table, indices and rows";
  return "";
}

/// A radix sort of (index, position) pairs, double-buffered, the runs of
/// equal ids (id, offset, length), and cub's own scratch.
void costGatherGrad(Kernel &K, const GatherAttrs &A,
                    const std::vector<Value> &) {
  elementCost(K);
  K.WorkspaceBytes = uint64_t(A.Count) * 40 + (1 << 20);
}

std::string referenceGather(const Kernel &K, const GatherAttrs &A,
                            HostOperands &Ops) {
  if (K.kind() == KernelKind::Gather) {
    std::vector<float> X = Ops.load(0), Y(size_t(elements(K.Outputs[0])));
    std::vector<int64_t> Idx = Ops.loadInts(1);
    if (!reference::gather(X.data(), Idx.data(), Y.data(), A.Outer, A.Dim,
                           A.Inner, A.Count))
      return "an index is outside the gathered dimension";
    Ops.store(0, Y);
    return "";
  }
  std::vector<int64_t> Idx = Ops.loadInts(0);
  std::vector<float> Dy = Ops.load(1), Dx(size_t(elements(K.Outputs[0])));
  if (!reference::gatherGrad(Idx.data(), Dy.data(), Dx.data(), A.Outer, A.Dim,
                             A.Inner, A.Count))
    return "an index is outside the gathered dimension";
  Ops.store(0, Dx);
  return "";
}

//===----------------------------------------------------------------------===//
// Cross entropy
//===----------------------------------------------------------------------===//

/// The loss kernels walk their logits (and the gradient) by rows.
std::string checkCrossEntropy(const Kernel &K, const CrossEntropyAttrs &A,
                              const std::vector<Value> &) {
  bool Grad = K.kind() == KernelKind::CrossEntropyGrad;
  if (std::string Bad = operandCounts(K, Grad ? 4 : 2, Grad ? 1 : 2);
      !Bad.empty())
    return Bad;
  const TensorRef &Logits = K.Inputs[0];
  if (A.Rows < 0 || A.Classes <= 0 ||
      elements(Logits) != A.Rows * A.Classes ||
      elements(K.Inputs[1]) != A.Rows ||
      (Grad && elements(K.Outputs[0]) != A.Rows * A.Classes))
    return "has loss operands that are not rows x classes logits and a "
           "target a row";
  if (rowStride(Logits.Shape, Logits.Strides) == 0 ||
      (Grad && rowStride(K.Outputs[0].Shape, K.Outputs[0].Strides) == 0))
    return "reads or writes logits that are not laid out as rows";
  return "";
}

/// The gradient counts the rows that are not ignored, which scale it.
void costCrossEntropy(Kernel &K, const CrossEntropyAttrs &,
                      const std::vector<Value> &) {
  elementCost(K);
  if (K.kind() == KernelKind::CrossEntropyGrad)
    K.WorkspaceBytes = 256;
}

std::string referenceCrossEntropy(const Kernel &K, const CrossEntropyAttrs &A,
                                  HostOperands &Ops) {
  std::vector<float> X = Ops.load(0);
  std::vector<int64_t> T = Ops.loadInts(1);
  if (K.kind() == KernelKind::CrossEntropy) {
    std::vector<float> L(size_t(A.Rows));
    float Loss = 0;
    if (!reference::crossEntropy(X.data(), T.data(), &Loss, L.data(), A.Rows,
                                 A.Classes, A.IgnoreIndex))
      return "a target is outside the " + std::to_string(A.Classes) +
             " classes";
    Ops.store(0, {Loss});
    Ops.store(1, L);
    return "";
  }
  std::vector<float> L = Ops.load(2), D(X.size());
  double Dloss = Ops.input(3, 0);
  reference::crossEntropyGrad(X.data(), T.data(), L.data(), Dloss, D.data(),
                              A.Rows, A.Classes, A.IgnoreIndex);
  Ops.store(0, D);
  return "";
}

} // namespace

extern const KernelKindInfo GatherKind =
    kindEntry<GatherAttrs, GatherAttrs, checkGather, noWorkspace<GatherAttrs>,
              referenceGather>("embedding");
extern const KernelKindInfo GatherGradKind =
    kindEntry<GatherGradAttrs, GatherAttrs, checkGather, costGatherGrad,
              referenceGather>("embedding");
extern const KernelKindInfo CrossEntropyKind =
    kindEntry<CrossEntropyAttrs, CrossEntropyAttrs, checkCrossEntropy,
              costCrossEntropy, referenceCrossEntropy>("loss");
extern const KernelKindInfo CrossEntropyGradKind =
    kindEntry<CrossEntropyGradAttrs, CrossEntropyAttrs, checkCrossEntropy,
              costCrossEntropy, referenceCrossEntropy>("loss");

} // namespace dsc::plan::kinds
