//===- Registry.cpp - Finding an operator's definition; rule helpers ------===//

#include "dsc/Compute/Ops.h"

#include "llvm/ADT/StringMap.h"

using namespace llvm;

namespace dsc::compute {

namespace {

const StringMap<const OpDef *> &registry() {
  static const StringMap<const OpDef *> Map = [] {
    StringMap<const OpDef *> M;
    for (ArrayRef<OpDef> Family :
         {elementwiseOps(), shapeOps(), mathOps(), nnOps()})
      for (const OpDef &D : Family) {
        bool Inserted = M.try_emplace(D.Name, &D).second;
        (void)Inserted;
        assert(Inserted && "an operator is defined twice");
      }
    return M;
  }();
  return Map;
}

} // namespace

const OpDef *findOp(StringRef Name) {
  auto It = registry().find(Name);
  return It == registry().end() ? nullptr : It->second;
}

std::vector<const OpDef *> allOps() {
  std::vector<const OpDef *> Out;
  for (const auto &E : registry())
    Out.push_back(E.second);
  llvm::sort(Out, [](const OpDef *A, const OpDef *B) {
    return StringRef(A->Name) < StringRef(B->Name);
  });
  return Out;
}

Error evaluate(const Graph &G, const Node &N, std::vector<const HostTensor *> In,
               std::vector<HostTensor> &Out, uint64_t Seed) {
  if (!N.Def || !N.Def->Eval)
    return G.nodeError(N, "dsc cannot evaluate this operator on the host");
  EvalContext Ctx{G, N, std::move(In), {}, Seed};
  Ctx.Out.resize(N.Outputs.size());
  if (Error E = N.Def->Eval(Ctx))
    return E;
  Out = std::move(Ctx.Out);
  return Error::success();
}

Expected<std::vector<int64_t>> InferContext::ints(unsigned I,
                                                  StringRef What) const {
  if (!has(I))
    return error(What + " is missing");
  const HostTensor *C = constant(I);
  if (!C)
    return error(What + " ('" + in(I).Name +
                 "') is computed at run time; dsc needs it at plan time "
                 "(is a dimension of the model still unbound?)");
  return C->ints();
}

//===----------------------------------------------------------------------===//
// Gradient rules' builder
//===----------------------------------------------------------------------===//

GradContext::GradContext(Graph &G, uint32_t NodeIndex,
                         std::vector<ValueId> OutGrads, std::vector<bool> Needs,
                         double Order)
    : G(G), NodeIndex(NodeIndex), Fwd(G.Nodes[NodeIndex]),
      OutGrads(std::move(OutGrads)), Needs(std::move(Needs)), Order(Order) {
  InGrads.assign(Fwd.Inputs.size(), NoValue);
}

void GradContext::fail(const Twine &Message) {
  if (!Failed) {
    consumeError(std::move(Err));
    Err = G.nodeError(Fwd, Message);
    Failed = true;
  }
}

std::vector<ValueId> GradContext::emitN(StringRef Op, std::vector<ValueId> Ins,
                                        Attributes A, unsigned NumOutputs) {
  std::vector<ValueId> None(NumOutputs, NoValue);
  if (Failed)
    return None;
  std::string Scope = Fwd.Scope;
  std::string Name = "d" + Fwd.Name + "." +
                     std::to_string(G.Nodes.size());
  Expected<std::vector<ValueId>> Out =
      G.addNode(Op, std::move(Ins), std::move(A), NumOutputs, Name, Scope,
                Order);
  if (!Out) {
    consumeError(std::move(Err));
    Err = Out.takeError();
    Failed = true;
    return None;
  }
  Node &New = G.Nodes.back();
  New.Ph = Phase::Backward;
  New.Origin = int32_t(NodeIndex);
  Order += 1e-6; // Keeps a rule's nodes in the order it emits them.
  return *Out;
}

ValueId GradContext::scalar(double V) { return G.addScalar(V); }

ValueId GradContext::reshape(ValueId A, const Shape &S) {
  if (A == NoValue)
    return NoValue;
  if (G.Values[A].Dims == S)
    return A;
  ValueId Target = G.addConstant(
      HostTensor::fromInts(DType::I64, {int64_t(S.size())}, S));
  return emit("Reshape", {A, Target});
}

ValueId GradContext::transpose(ValueId A, std::vector<int64_t> Perm) {
  Attributes At;
  At.set("perm", std::move(Perm));
  return emit("Transpose", {A}, At);
}

ValueId GradContext::sumTo(ValueId Grad, const Shape &Target) {
  if (Grad == NoValue)
    return NoValue;
  const Shape S = shape(Grad);
  if (S == Target)
    return Grad;
  size_t Lead = S.size() - Target.size();
  std::vector<int64_t> Axes;
  for (size_t K = 0; K < S.size(); ++K)
    if (K < Lead || (Target[K - Lead] == 1 && S[K] != 1))
      Axes.push_back(int64_t(K));
  ValueId Summed = Grad;
  if (!Axes.empty()) {
    Attributes A;
    A.set("axes", Axes).set("keepdims", 1);
    Summed = emit("ReduceSum", {Grad}, A);
  }
  return reshape(Summed, Target);
}

} // namespace dsc::compute
