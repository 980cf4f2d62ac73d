//===- Canonicalize.cpp - Remove what computes nothing --------------------===//
//
// After folding, the exporters' graphs still carry nodes that compute
// nothing in training: Identity (torch's clone), casts between float types
// (the IR computes every float at the training dtype; the precision pass
// of the planner chooses where fp32 is kept), dropout with ratio 0 or in
// inference mode, reshapes and transposes that keep the layout, and the
// NaN guard torch puts after an attention softmax (a softmax never makes a
// NaN unless a whole row is masked, which the softmax then zeroes itself).
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Ops.h"
#include "dsc/Compute/Passes.h"

using namespace llvm;

namespace dsc::compute {

namespace {

bool isScalar(const Graph &G, ValueId V, double X) {
  const Value &C = G.Values[V];
  return C.known() && C.Data->numel() == 1 && C.Data->at(0) == X;
}

/// The value N's output can be replaced by, or NoValue.
ValueId passThrough(const Graph &G, const Node &N) {
  const std::string &Op = N.Op;
  if (N.Inputs.empty() || N.Inputs[0] == NoValue)
    return NoValue;
  ValueId X = N.Inputs[0];
  const Value &In = G.Values[X], &Out = G.Values[N.Outputs[0]];
  if (In.Dims != Out.Dims)
    return NoValue;
  if (Op == "Identity")
    return X;
  if ((Op == "Cast" || Op == "CastLike") && In.isFloat() == Out.isFloat() &&
      (In.isFloat() || In.Type == Out.Type))
    return X;
  if (Op == "Reshape" || Op == "Expand" || Op == "Squeeze" ||
      Op == "Unsqueeze" || Op == "Flatten")
    return X;
  if (Op == "Transpose") {
    std::vector<int64_t> P = N.A.ints("perm").value_or(std::vector<int64_t>());
    for (size_t K = 0; K < P.size(); ++K)
      if (P[K] != int64_t(K))
        return NoValue;
    return P.empty() ? NoValue : X;
  }
  if (Op == "Slice") {
    std::vector<int64_t> Steps = *N.A.ints("dsc_steps");
    for (int64_t S : Steps)
      if (S != 1)
        return NoValue;
    return X; // Same shape, step 1: the whole tensor.
  }
  if ((Op == "Mul" || Op == "Div") && N.Inputs.size() == 2 &&
      isScalar(G, N.Inputs[1], 1.0))
    return X;
  if ((Op == "Add" || Op == "Sub") && N.Inputs.size() == 2 &&
      isScalar(G, N.Inputs[1], 0.0))
    return X;
  if (Op == "Dropout") {
    bool Training = N.Inputs.size() > 2 && N.Inputs[2] != NoValue &&
                    G.Values[N.Inputs[2]].known() &&
                    G.Values[N.Inputs[2]].Data->at(0) != 0;
    if (!Training || N.A.f("ratio", 0.5) == 0)
      return X;
  }
  return NoValue;
}

} // namespace

Error canonicalize(Graph &G, const PipelineOptions &) {
  std::vector<std::vector<uint32_t>> Uses = G.uses();
  for (uint32_t I = 0; I < G.Nodes.size(); ++I) {
    Node &N = G.Nodes[I];
    if (N.Dead)
      continue;
    // Where(IsNaN(s), 0, s) with s = Softmax(...): the softmax zeroes a
    // fully masked row itself.
    if (N.Op == "Where" && N.Inputs.size() == 3 &&
        isScalar(G, N.Inputs[1], 0.0)) {
      const Value &Cond = G.Values[N.Inputs[0]];
      ValueId S = N.Inputs[2];
      int32_t P = G.Values[S].Producer;
      if (Cond.Producer >= 0 && P >= 0 &&
          G.Nodes[Cond.Producer].Op == "IsNaN" &&
          G.Nodes[Cond.Producer].Inputs[0] == S &&
          G.Nodes[P].Op == "Softmax") {
        G.Nodes[P].A.set("zero_masked_rows", 1);
        G.replaceAllUses(N.Outputs[0], S);
        N.Dead = true;
        continue;
      }
    }
    ValueId To = passThrough(G, N);
    if (To == NoValue)
      continue;
    // A dropout's mask output must be unused to drop the node.
    bool OthersUsed = false;
    for (size_t K = 1; K < N.Outputs.size(); ++K)
      OthersUsed |= !Uses[N.Outputs[K]].empty();
    if (OthersUsed)
      continue;
    G.replaceAllUses(N.Outputs[0], To);
    N.Dead = true;
  }
  G.removeDeadNodes();
  return Error::success();
}

} // namespace dsc::compute
