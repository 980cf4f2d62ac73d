//===- Interpreter.cpp ----------------------------------------------------===//

#include "dsc/Compute/Interpreter.h"
#include "dsc/Compute/Ops.h"

using namespace llvm;

namespace dsc::compute {

Interpreter::Interpreter(const Graph &G)
    : G(G), Values(G.Values.size()), Set(G.Values.size(), false) {
  for (ValueId V = 0; V < G.Values.size(); ++V)
    if (G.Values[V].known()) {
      Values[V] = *G.Values[V].Data;
      Set[V] = true;
    }
}

Error Interpreter::set(ValueId V, HostTensor T) {
  if (V >= G.Values.size())
    return createStringError(inconvertibleErrorCode(), "no value %u", V);
  const Value &X = G.Values[V];
  if (T.shape() != X.Dims)
    return createStringError(inconvertibleErrorCode(),
                             "'%s' is %s in the graph, %s given",
                             X.Name.c_str(), shapeText(X.Dims).c_str(),
                             shapeText(T.shape()).c_str());
  Values[V] = std::move(T);
  Set[V] = true;
  return Error::success();
}

Error Interpreter::set(StringRef Name, HostTensor T) {
  for (ValueId V = 0; V < G.Values.size(); ++V) {
    const Value &X = G.Values[V];
    if (X.Name == Name && X.Kind != ValueKind::Computed)
      return set(V, std::move(T));
  }
  return createStringError(inconvertibleErrorCode(),
                           "the graph has no parameter, input or target '%s'",
                           Name.str().c_str());
}

Error Interpreter::run(uint64_t Seed) {
  for (const Node &N : G.Nodes) {
    if (N.Dead)
      continue;
    std::vector<const HostTensor *> In;
    for (ValueId V : N.Inputs) {
      if (V == NoValue) {
        In.push_back(nullptr);
        continue;
      }
      if (!Set[V])
        return G.nodeError(N, "reads '" + G.Values[V].Name +
                                  "', which has no value (a parameter or "
                                  "input not set, or a constant with no data)");
      In.push_back(&Values[V]);
    }
    std::vector<HostTensor> Out;
    if (Error E = evaluate(G, N, std::move(In), Out, Seed))
      return E;
    for (size_t K = 0; K < Out.size(); ++K) {
      Values[N.Outputs[K]] = std::move(Out[K]);
      Set[N.Outputs[K]] = true;
    }
  }
  return Error::success();
}

const HostTensor &Interpreter::value(ValueId V) const { return Values[V]; }

} // namespace dsc::compute
