//===- Autodiff.cpp - The loss, and reverse-mode differentiation ----------===//
//
// appendLoss makes the step's objective: the model's output is its logits,
// and dsc adds the cross entropy against targets the runtime fills from
// the data (the next tokens for a causal LM; labels with -100 where a
// position does not count for a masked LM; one class per sample for
// sequence classification).
//
// differentiate walks the forward nodes from last to first, as a
// compiler's reverse-mode AD does: each node whose outputs received a
// gradient calls its operator's rule, which emits the nodes computing its
// inputs' gradients; gradients reaching a value from several readers are
// summed. Only values that depend on a trainable parameter get gradients
// (frozen parameters and constants get none). An operator without a rule
// on that path is an error naming the node, its type and its module.
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Ops.h"
#include "dsc/Compute/Passes.h"

using namespace llvm;

namespace dsc::compute {

StringRef lossName(LossKind K) { return plan::enumName(K); }

std::optional<LossKind> lossNamed(StringRef Name) {
  return plan::enumNamed<LossKind>(std::string_view(Name.data(), Name.size()));
}

Error appendLoss(Graph &G, const PipelineOptions &O) {
  if (G.Outputs.size() != 1)
    return createStringError(inconvertibleErrorCode(),
                             "the model has %zu outputs; dsc trains a model "
                             "whose one output is its logits",
                             G.Outputs.size());
  ValueId Logits = G.Outputs[0];
  const Value L = G.Values[Logits];
  bool Tokens = O.Loss != LossKind::SequenceClassification;
  if (!L.isFloat() || L.Dims.size() != (Tokens ? 3u : 2u))
    return createStringError(
        inconvertibleErrorCode(),
        "the model's output '%s' is %s; a %s loss needs logits of shape %s",
        L.Name.c_str(), shapeText(L.Dims).c_str(), lossName(O.Loss).data(),
        Tokens ? "[batch, sequence, vocab]" : "[batch, classes]");
  Value T;
  T.Name = "labels";
  T.Dims = Shape(L.Dims.begin(), L.Dims.end() - 1);
  T.Type = DType::I32;
  T.Kind = ValueKind::Target;
  ValueId Targets = G.addValue(std::move(T));
  G.Targets.push_back(Targets);
  Attributes A;
  A.set("ignore_index", O.IgnoreIndex);
  A.setString("loss", lossName(O.Loss).str());
  Expected<std::vector<ValueId>> Out =
      G.addNode("dsc.CrossEntropy", {Logits, Targets}, A, 2, "loss", "loss");
  if (!Out)
    return Out.takeError();
  G.Loss = (*Out)[0];
  G.Values[G.Loss].Name = "loss";
  return Error::success();
}

Error differentiate(Graph &G, const PipelineOptions &O) {
  if (G.Loss == NoValue)
    return createStringError(inconvertibleErrorCode(),
                             "there is no loss to differentiate");
  size_t Forward = G.Nodes.size();
  std::vector<bool> Requires(G.Values.size(), false);
  for (const ParamInfo &P : G.Params)
    Requires[P.Value] = P.Trainable;
  for (const Node &N : G.Nodes) {
    if (N.Dead || (N.Def->Flags & NoGradient))
      continue;
    bool Any = false;
    for (ValueId V : N.Inputs)
      Any |= V != NoValue && Requires[V];
    if (Any)
      for (ValueId V : N.Outputs)
        Requires[V] = G.Values[V].isFloat();
  }
  if (!Requires[G.Loss])
    return createStringError(inconvertibleErrorCode(),
                             "the loss does not depend on any trainable "
                             "parameter (are they all frozen?)");

  std::vector<ValueId> Grad(G.Values.size(), NoValue);
  Grad[G.Loss] = G.addScalar(O.LossGradScale);
  double Order = double(Forward);
  for (size_t I = Forward; I-- > 0;) {
    if (G.Nodes[I].Dead)
      continue;
    std::vector<ValueId> OutGrads;
    bool AnyOut = false;
    for (ValueId V : G.Nodes[I].Outputs) {
      OutGrads.push_back(V < Grad.size() ? Grad[V] : NoValue);
      AnyOut |= OutGrads.back() != NoValue;
    }
    std::vector<bool> Needs;
    bool AnyIn = false;
    for (ValueId V : G.Nodes[I].Inputs) {
      Needs.push_back(V != NoValue && Requires[V]);
      AnyIn |= Needs.back();
    }
    if (!AnyOut || !AnyIn)
      continue;
    const Node &N = G.Nodes[I];
    if (!N.Def->Grad)
      return G.nodeError(N, "dsc has no gradient rule for '" + N.Op +
                                "', and a trainable parameter's gradient "
                                "flows through it");
    GradContext C(G, uint32_t(I), std::move(OutGrads), std::move(Needs),
                  Order);
    N.Def->Grad(C);
    if (C.failed())
      return C.takeError();
    Order += 1;
    std::vector<ValueId> InGrads = C.inputGrads();
    Grad.resize(G.Values.size(), NoValue);
    for (size_t K = 0; K < InGrads.size(); ++K) {
      ValueId In = G.Nodes[I].Inputs[K], D = InGrads[K];
      if (D == NoValue)
        continue;
      if (G.Values[D].Dims != G.Values[In].Dims)
        return G.nodeError(G.Nodes[I],
                           "its gradient rule gave input " + Twine(K) +
                               " a gradient of shape " +
                               shapeText(G.Values[D].Dims) + " for " +
                               shapeText(G.Values[In].Dims));
      if (Grad[In] == NoValue) {
        Grad[In] = D;
        continue;
      }
      // A value read in several places: its gradients add up.
      ValueId Sum = C.add(Grad[In], D);
      if (C.failed())
        return C.takeError();
      Grad.resize(G.Values.size(), NoValue);
      Grad[In] = Sum;
    }
  }
  for (ParamInfo &P : G.Params)
    if (P.Trainable)
      P.Grad = Grad[P.Value];
  return G.sortNodes();
}

} // namespace dsc::compute
