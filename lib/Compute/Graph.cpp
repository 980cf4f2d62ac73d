//===- Graph.cpp ----------------------------------------------------------===//

#include "dsc/Compute/Graph.h"
#include "dsc/Compute/Ops.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

#include <queue>

using namespace llvm;

namespace dsc::compute {

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

bool Attributes::has(StringRef Name) const {
  std::string K = Name.str();
  return Ints.count(K) || Floats.count(K) || Strings.count(K);
}

int64_t Attributes::i(StringRef Name, int64_t Default) const {
  auto It = Ints.find(Name.str());
  return It == Ints.end() || It->second.empty() ? Default : It->second[0];
}

std::optional<std::vector<int64_t>> Attributes::ints(StringRef Name) const {
  auto It = Ints.find(Name.str());
  if (It == Ints.end())
    return std::nullopt;
  return It->second;
}

double Attributes::f(StringRef Name, double Default) const {
  auto It = Floats.find(Name.str());
  return It == Floats.end() || It->second.empty() ? Default : It->second[0];
}

std::string Attributes::s(StringRef Name, std::string Default) const {
  auto It = Strings.find(Name.str());
  return It == Strings.end() ? Default : It->second;
}

Attributes &Attributes::set(StringRef Name, int64_t V) {
  Ints[Name.str()] = {V};
  return *this;
}
Attributes &Attributes::set(StringRef Name, std::vector<int64_t> V) {
  Ints[Name.str()] = std::move(V);
  return *this;
}
Attributes &Attributes::setFloat(StringRef Name, double V) {
  Floats[Name.str()] = {V};
  return *this;
}
Attributes &Attributes::setString(StringRef Name, std::string V) {
  Strings[Name.str()] = std::move(V);
  return *this;
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

ValueId Graph::addValue(Value V) {
  Values.push_back(std::move(V));
  return ValueId(Values.size() - 1);
}

ValueId Graph::addConstant(HostTensor T, StringRef Name) {
  Value V;
  V.Name = Name.empty() ? "c" + std::to_string(Values.size()) : Name.str();
  V.Dims = T.shape();
  V.Type = T.type();
  V.Kind = ValueKind::Constant;
  V.Data = std::make_shared<const HostTensor>(std::move(T));
  return addValue(std::move(V));
}

ValueId Graph::addScalar(double X, DType T) {
  return addConstant(HostTensor::scalar(T, X));
}

Expected<std::vector<ValueId>>
Graph::addNode(StringRef Op, std::vector<ValueId> Inputs, Attributes A,
               unsigned NumOutputs, StringRef Name, StringRef Scope,
               double Order) {
  Node N;
  N.Op = Op.str();
  N.Def = findOp(Op);
  N.Inputs = std::move(Inputs);
  N.A = std::move(A);
  N.Name = Name.empty() ? "n" + std::to_string(Nodes.size()) : Name.str();
  N.Scope = Scope.str();
  N.Order = Order >= 0 ? Order : double(Nodes.size());
  if (!N.Def)
    return nodeError(N, "dsc has no rule for the operator '" + Op + "'");
  for (ValueId V : N.Inputs)
    if (V != NoValue && V >= Values.size())
      return nodeError(N, "an input refers to no value");
  uint32_t Index = Nodes.size();
  for (unsigned I = 0; I < NumOutputs; ++I) {
    Value V;
    V.Name = NumOutputs == 1 ? N.Name : N.Name + "." + std::to_string(I);
    V.Producer = int32_t(Index);
    N.Outputs.push_back(addValue(std::move(V)));
  }
  Nodes.push_back(std::move(N));
  InferContext Ctx{*this, Nodes.back()};
  Error E = Nodes.back().Def->Infer(Ctx);
  // A shape no GPU could hold is a broken model (or a broken file), not a
  // plan: said here, before anything multiplies those dims.
  for (ValueId V : Nodes.back().Outputs) {
    if (E)
      break;
    for (int64_t D : Values[V].Dims)
      if (D < 0)
        E = nodeError(Nodes.back(), "infers a negative dimension for '" +
                                        Values[V].Name + "'");
    if (!E && numel(Values[V].Dims) > MaxElements)
      E = nodeError(Nodes.back(),
                    "infers " + shapeText(Values[V].Dims) + " for '" +
                        Values[V].Name + "', more than 2^48 elements");
  }
  if (E) {
    // Leave no half-built node behind.
    Nodes.pop_back();
    Values.resize(Values.size() - NumOutputs);
    return std::move(E);
  }
  return Nodes.back().Outputs;
}

std::vector<std::vector<uint32_t>> Graph::uses() const {
  std::vector<std::vector<uint32_t>> U(Values.size());
  for (uint32_t I = 0; I < Nodes.size(); ++I)
    if (!Nodes[I].Dead)
      for (ValueId V : Nodes[I].Inputs)
        if (V != NoValue && (U[V].empty() || U[V].back() != I))
          U[V].push_back(I);
  return U;
}

void Graph::replaceAllUses(ValueId From, ValueId To) {
  auto Swap = [&](ValueId &V) {
    if (V == From)
      V = To;
  };
  for (Node &N : Nodes)
    if (!N.Dead)
      for (ValueId &V : N.Inputs)
        Swap(V);
  for (ValueId &V : Outputs)
    Swap(V);
  for (ValueId &V : Targets)
    Swap(V);
  Swap(Loss);
  for (ParamInfo &P : Params)
    Swap(P.Grad);
}

void Graph::renumberOrigins(const std::vector<int32_t> &NewIndex) {
  for (Node &N : Nodes)
    if (N.Origin >= 0)
      N.Origin = NewIndex[size_t(N.Origin)];
}

void Graph::removeDeadNodes() {
  // Live: what the outputs, the loss and the parameter gradients need,
  // found by a walk from them (nodes need not be in order here).
  std::vector<int32_t> Writer(Values.size(), -1);
  for (uint32_t I = 0; I < Nodes.size(); ++I)
    if (!Nodes[I].Dead)
      for (ValueId V : Nodes[I].Outputs)
        Writer[V] = int32_t(I);
  std::vector<bool> Live(Nodes.size(), false);
  std::vector<ValueId> Work(Outputs.begin(), Outputs.end());
  if (Loss != NoValue)
    Work.push_back(Loss);
  for (const ParamInfo &P : Params)
    if (P.Grad != NoValue)
      Work.push_back(P.Grad);
  while (!Work.empty()) {
    ValueId V = Work.back();
    Work.pop_back();
    int32_t W = Writer[V];
    if (W < 0 || Live[W])
      continue;
    Live[W] = true;
    for (ValueId In : Nodes[W].Inputs)
      if (In != NoValue)
        Work.push_back(In);
  }
  std::vector<Node> Kept;
  std::vector<int32_t> NewIndex(Nodes.size(), -1);
  for (uint32_t I = 0; I < Nodes.size(); ++I)
    if (Live[I]) {
      NewIndex[I] = int32_t(Kept.size());
      Kept.push_back(std::move(Nodes[I]));
    }
  Nodes = std::move(Kept);
  renumberOrigins(NewIndex);
  for (Value &V : Values)
    V.Producer = -1;
  for (uint32_t I = 0; I < Nodes.size(); ++I)
    for (ValueId V : Nodes[I].Outputs)
      Values[V].Producer = int32_t(I);
}

Error Graph::sortNodes() {
  size_t N = Nodes.size();
  std::vector<uint32_t> Pending(N, 0);
  std::vector<std::vector<uint32_t>> Readers(N);
  std::vector<int32_t> Writer(Values.size(), -1);
  for (uint32_t I = 0; I < N; ++I)
    for (ValueId V : Nodes[I].Outputs)
      Writer[V] = int32_t(I);
  for (uint32_t I = 0; I < N; ++I)
    for (ValueId V : Nodes[I].Inputs)
      if (V != NoValue && Writer[V] >= 0) {
        Readers[Writer[V]].push_back(I);
        ++Pending[I];
      }
  using Item = std::pair<double, uint32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> Ready;
  for (uint32_t I = 0; I < N; ++I)
    if (!Pending[I])
      Ready.push({Nodes[I].Order, I});
  std::vector<uint32_t> Order;
  while (!Ready.empty()) {
    uint32_t I = Ready.top().second;
    Ready.pop();
    Order.push_back(I);
    for (uint32_t R : Readers[I])
      if (--Pending[R] == 0)
        Ready.push({Nodes[R].Order, R});
  }
  if (Order.size() != N)
    return createStringError(inconvertibleErrorCode(),
                             "the compute graph has a cycle");
  std::vector<Node> Sorted;
  Sorted.reserve(N);
  std::vector<int32_t> NewIndex(N, -1);
  for (uint32_t I : Order) {
    NewIndex[I] = int32_t(Sorted.size());
    Sorted.push_back(std::move(Nodes[I]));
  }
  Nodes = std::move(Sorted);
  renumberOrigins(NewIndex);
  for (uint32_t I = 0; I < N; ++I) {
    Nodes[I].Order = double(I);
    for (ValueId V : Nodes[I].Outputs)
      Values[V].Producer = int32_t(I);
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Messages and printing
//===----------------------------------------------------------------------===//

std::string Graph::describe(const Node &N) const {
  std::string Out = "node '" + N.Name + "' (" + N.Op;
  if (!N.Scope.empty())
    Out += " in " + N.Scope;
  return Out + ")";
}

Error Graph::nodeError(const Node &N, const Twine &Message) const {
  return createStringError(inconvertibleErrorCode(),
                           describe(N) + ": " + Message.str());
}

std::string Graph::valueRef(ValueId V) const {
  if (V == NoValue)
    return "_";
  const Value &X = Values[V];
  switch (X.Kind) {
  case ValueKind::Param:
    return "@" + X.Name;
  case ValueKind::Input:
  case ValueKind::Target:
    return "%" + X.Name;
  case ValueKind::Constant:
    if (X.Data && X.Data->numel() == 1) {
      std::string S;
      raw_string_ostream OS(S);
      OS << format("%g", X.Data->at(0));
      return OS.str();
    }
    return "#" + std::to_string(V);
  case ValueKind::Computed:
    break;
  }
  return "%" + std::to_string(V);
}

static void printType(raw_ostream &OS, const Value &V) {
  OS << plan::enumName(V.Type) << shapeText(V.Dims);
}

static void printAttributes(raw_ostream &OS, const Attributes &A) {
  if (A.Ints.empty() && A.Floats.empty() && A.Strings.empty())
    return;
  OS << " {";
  bool First = true;
  auto Sep = [&] {
    if (!First)
      OS << ", ";
    First = false;
  };
  for (const auto &[K, V] : A.Ints) {
    Sep();
    OS << K << "=";
    if (V.size() == 1)
      OS << V[0];
    else
      OS << shapeText(V);
  }
  for (const auto &[K, V] : A.Floats) {
    Sep();
    OS << K << "=";
    for (size_t I = 0; I < V.size(); ++I)
      OS << (I ? "," : "") << format("%g", V[I]);
  }
  for (const auto &[K, V] : A.Strings) {
    Sep();
    OS << K << "=\"" << V << "\"";
  }
  OS << "}";
}

void Graph::print(raw_ostream &OS) const {
  for (ValueId V : Inputs) {
    OS << "input " << valueRef(V) << ": ";
    printType(OS, Values[V]);
    OS << "\n";
  }
  for (ValueId V : Targets) {
    OS << "target " << valueRef(V) << ": ";
    printType(OS, Values[V]);
    OS << "\n";
  }
  for (const ParamInfo &P : Params) {
    OS << "param " << valueRef(P.Value) << ": ";
    printType(OS, Values[P.Value]);
    OS << (P.Trainable ? "" : " frozen") << "\n";
  }
  // Constants the live nodes read (folding leaves many that none does).
  std::vector<bool> Read(Values.size(), false);
  for (const Node &N : Nodes)
    if (!N.Dead)
      for (ValueId V : N.Inputs)
        if (V != NoValue)
          Read[V] = true;
  for (ValueId V = 0; V < Values.size(); ++V) {
    const Value &X = Values[V];
    if (X.Kind != ValueKind::Constant || !Read[V] ||
        (X.Data && X.Data->numel() == 1))
      continue;
    OS << "const " << valueRef(V) << ": ";
    printType(OS, X);
    OS << (X.Data ? "" : " (no data)") << "\n";
  }
  for (const Node &N : Nodes) {
    if (N.Dead)
      continue;
    OS << (N.Ph == Phase::Backward ? "  bwd " : "  ");
    for (size_t I = 0; I < N.Outputs.size(); ++I) {
      OS << (I ? ", " : "") << valueRef(N.Outputs[I]) << ":";
      printType(OS, Values[N.Outputs[I]]);
    }
    OS << " = " << N.Op << "(";
    for (size_t I = 0; I < N.Inputs.size(); ++I)
      OS << (I ? ", " : "") << valueRef(N.Inputs[I]);
    OS << ")";
    printAttributes(OS, N.A);
    if (!N.Scope.empty())
      OS << "  # " << N.Scope;
    OS << "\n";
  }
  for (ValueId V : Outputs)
    OS << "output " << valueRef(V) << "\n";
  if (Loss != NoValue)
    OS << "loss " << valueRef(Loss) << "\n";
  for (const ParamInfo &P : Params)
    if (P.Grad != NoValue)
      OS << "grad " << valueRef(P.Value) << " = " << valueRef(P.Grad) << "\n";
}

} // namespace dsc::compute
