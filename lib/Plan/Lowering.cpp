//===- Lowering.cpp - The model as the planner sees it --------------------===//
//
// From the imported graph: the parameters (trainable or frozen) in
// first-use order, their modules, and the compute ops in graph order with
// what each costs and what it keeps for backward. Ops that only move
// metadata (Reshape, Transpose, Shape, Cast, ...) are not compute: they
// are looked through.
//
//===----------------------------------------------------------------------===//

#include "PlanInternal.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/ADT/StringExtras.h"

#include "onnx/onnx_pb.h"

using namespace llvm;

namespace dsc {

namespace {

/// How an ONNX op behaves in training: whether it computes at all, what
/// autograd keeps of it for backward, and its cost per output element
/// when it is not a matrix product.
struct OpBehaviour {
  bool Compute = true;
  bool Gemm = false;
  /// Bit I set: input I is saved for backward (parameters are stored
  /// anyway and never counted twice).
  unsigned SavedInputs = 0;
  bool SavesOutput = false;
  /// The output saved is a mask of one byte per element (Dropout).
  bool SavesMask = false;
  unsigned FlopsPerElement = 1;
};

OpBehaviour behaviourOf(StringRef Op) {
  OpBehaviour B;
  static const StringSet<> Metadata = {
      "Constant",      "ConstantOfShape", "Shape",     "Size",
      "Reshape",       "Flatten",         "Squeeze",   "Unsqueeze",
      "Transpose",     "Identity",        "Expand",    "Slice",
      "Split",         "SplitToSequence", "SequenceAt", "Range",
      "Cast",          "CastLike",        "Equal",     "Less",
      "LessOrEqual",   "Greater",         "GreaterOrEqual", "Not",
      "And",           "Or",              "IsNaN",     "IsInf",
      "NonZero",       "Trilu",           "GatherND",  "ScatterND",
      "Max",           "Min",             "Floor",     "Ceil",
      "Mod",           "ArgMax",          "CumSum",    "Concat"};
  static const StringSet<> Normalizations = {
      "LayerNormalization",    "SimplifiedLayerNormalization",
      "RMSNormalization",      "SkipLayerNormalization",
      "BatchNormalization",    "GroupNormalization",
      "InstanceNormalization"};
  static const StringSet<> InputSavers = {
      "Gelu", "Relu", "LeakyRelu",   "Erf", "Elu", "Selu",     "Softplus",
      "HardSigmoid", "Log", "Pow",   "Sin", "Cos", "Abs", "FastGelu",
      "BiasGelu"};
  if (Metadata.contains(Op)) {
    // Concat, Max/Min and CumSum do compute, but only on index and mask
    // tensors in the models we plan; their float uses are cheap copies.
    B.Compute = false;
    return B;
  }
  if (Op == "MatMul" || Op == "Gemm") {
    B.Gemm = true;
    B.SavedInputs = 0b11;
  } else if (Op == "Conv" || Op == "ConvTranspose") {
    B.Gemm = true;
    B.SavedInputs = 0b1;
  } else if (Op == "Gather") {
    B.SavedInputs = 0b10; // The indices.
    B.FlopsPerElement = 0;
  } else if (Normalizations.contains(Op)) {
    B.SavedInputs = 0b1;
    B.FlopsPerElement = 8;
  } else if (Op == "Softmax" || Op == "LogSoftmax" || Op == "Sigmoid" ||
             Op == "Tanh" || Op == "Exp" || Op == "Sqrt" ||
             Op == "Reciprocal") {
    B.SavesOutput = true;
    B.FlopsPerElement = 5;
  } else if (InputSavers.contains(Op)) {
    B.SavedInputs = 0b1;
    B.FlopsPerElement = 4;
  } else if (Op == "Mul" || Op == "Div") {
    B.SavedInputs = 0b11;
  } else if (Op == "Where") {
    B.SavedInputs = 0b1; // The condition.
  } else if (Op == "Dropout") {
    B.SavesMask = true;
  } else if (Op == "Add" || Op == "Sub" || Op == "Neg" ||
             Op.startswith("Reduce")) {
    // Their gradients need no saved input.
  } else {
    // An op this table does not know: assume it keeps its inputs, which
    // errs on the side of more memory.
    B.SavedInputs = ~0u;
  }
  return B;
}

/// Binds the graph's symbolic dims: batch-like ones to the micro batch,
/// sequence-like ones to --seq-len, the rest from --dim.
Expected<DimBindings> bindDims(const Model &M, int64_t MicroBatch,
                               const PlanOptions &Options) {
  InputSymbols Symbols = classifyInputSymbols(M);
  DimBindings B;
  for (const std::string &S : Symbols.Batch)
    B[S] = MicroBatch;
  for (const std::string &S : Symbols.Sequence)
    if (Options.SeqLen)
      B[S] = *Options.SeqLen;
  for (const auto &[Name, Value] : Options.Dims)
    B[Name] = Value;
  for (const std::string &S : Symbols.Sequence)
    if (!B.count(S))
      return planError("the model's input dimension '" + S +
                       "' is a sequence length: pass --seq-len N (or --dim " +
                       S + "=N)");
  for (const std::string &S : Symbols.Other)
    if (!B.count(S))
      return planError("the model's input dimension '" + S +
                       "' has no value: pass --dim " + S + "=N");
  return B;
}

std::optional<std::vector<int64_t>> concreteShape(const TensorType *T,
                                                  const DimBindings &B) {
  if (!T || !T->Ranked)
    return std::nullopt;
  std::vector<int64_t> Shape;
  for (const Dim &D : T->Shape) {
    std::optional<int64_t> V =
        D.known() ? std::optional<int64_t>(D.Value) : evaluateDim(D.Symbol, B);
    if (!V || *V < 0)
      return std::nullopt;
    Shape.push_back(*V);
  }
  return Shape;
}

/// Beyond 2^56 elements a tensor is a mistake (a huge --seq-len), and
/// byte counts of it would overflow.
constexpr uint64_t MaxElements = uint64_t(1) << 56;

uint64_t product(ArrayRef<int64_t> Shape, size_t From = 0,
                 size_t To = SIZE_MAX) {
  uint64_t P = 1;
  for (size_t I = From; I < Shape.size() && I < To; ++I) {
    uint64_t D = uint64_t(Shape[I]);
    if (D && P > MaxElements / D)
      return MaxElements;
    P *= D;
  }
  return P;
}

int64_t intAttribute(const Node &N, StringRef Name, int64_t Default) {
  if (N.Proto)
    for (const onnx::AttributeProto &A : N.Proto->attribute())
      if (A.name() == Name && A.type() == onnx::AttributeProto_AttributeType_INT)
        return A.i();
  return Default;
}

class Lowering {
public:
  Lowering(plan::Plan &P, const PlanInputs &In, DimBindings Bindings)
      : P(P), In(In), M(In.Graph), Bindings(std::move(Bindings)) {}

  Error run() {
    lowerTensorsAndModules();
    lowerOps();
    assignUses();
    assignLayers();
    if (Error E = lowerActivations())
      return E;
    return Error::success();
  }

private:
  void lowerTensorsAndModules();
  void lowerOps();
  void assignUses();
  /// The compute ops that consume what Nodes produce, looking through
  /// metadata nodes (a class token reaches attention through a Concat).
  std::vector<uint32_t> computeUsers(ArrayRef<unsigned> Nodes) const;
  void assignLayers();
  Error lowerActivations();
  void gemmsOf(const Node &N, plan::Op &Op);

  /// Bytes of a saved activation tensor in the training dtype.
  std::optional<uint64_t> activationBytes(StringRef Name);
  std::optional<uint64_t> computeActivationBytes(StringRef Name);
  /// The tensor a view-like chain starts from (looking through metadata
  /// ops), or Name itself.
  std::string baseOf(StringRef Name) const;

  plan::Plan &P;
  const PlanInputs &In;
  const Model &M;
  DimBindings Bindings;
  DenseMap<unsigned, uint32_t> TensorOfInitializer;
  std::vector<uint32_t> OpOfNode;
  StringMap<unsigned> Producer;
  StringMap<std::vector<unsigned>> Consumers;
  std::vector<std::string> MissingSymbols;
  StringMap<std::optional<uint64_t>> BytesOf;
  bool TooLarge = false;
};

void Lowering::lowerTensorsAndModules() {
  const ModelFacts &F = In.Facts;
  for (const ModuleFacts &Mod : F.Modules) {
    plan::Module PM;
    PM.Name = Mod.Name;
    for (unsigned TI : Mod.Tensors) {
      const TensorFacts &T = F.Tensors[TI];
      if (T.Role != TensorRole::Parameter)
        continue;
      const Initializer &Init = M.Initializers[T.Initializer];
      plan::Tensor PT;
      PT.Name = Init.Name;
      PT.Shape = Init.Dims;
      PT.Elems = Init.numel();
      PT.Module = P.Modules.size();
      PT.Role = T.Frozen ? plan::TensorRole::Frozen
                         : plan::TensorRole::Trainable;
      TensorOfInitializer[T.Initializer] = P.Tensors.size();
      PM.Tensors.push_back(P.Tensors.size());
      PM.Elems += PT.Elems;
      P.Tensors.push_back(std::move(PT));
    }
    if (!PM.Tensors.empty())
      P.Modules.push_back(std::move(PM));
  }
}

void Lowering::lowerOps() {
  OpOfNode.assign(M.Nodes.size(), plan::NoIndex);
  for (unsigned I = 0; I < M.Nodes.size(); ++I) {
    const Node &N = M.Nodes[I];
    for (const std::string &Out : N.Outputs)
      Producer[Out] = I;
    for (const std::string &In : N.Inputs)
      if (!In.empty())
        Consumers[In].push_back(I);
    OpBehaviour B = behaviourOf(N.OpType);
    if (!B.Compute || N.Outputs.empty())
      continue;
    const TensorType *T = In.Shapes.find(N.Outputs[0]);
    // Integer and boolean results carry no gradient: index arithmetic.
    if (T && T->Type != DType::Undefined && !isFloating(T->Type))
      continue;
    plan::Op Op;
    Op.Name = N.Name.empty() ? N.Outputs[0] : N.Name;
    Op.Type = N.Domain.empty() ? N.OpType : N.Domain + "." + N.OpType;
    if (B.Gemm)
      gemmsOf(N, Op);
    else if (auto Shape = concreteShape(T, Bindings))
      Op.ForwardFlops = product(*Shape) * B.FlopsPerElement;
    OpOfNode[I] = P.Ops.size();
    P.Ops.push_back(std::move(Op));
  }
}

void Lowering::gemmsOf(const Node &N, plan::Op &Op) {
  auto Out = concreteShape(In.Shapes.find(N.Outputs[0]), Bindings);
  auto A = N.Inputs.empty()
               ? std::nullopt
               : concreteShape(In.Shapes.find(N.Inputs[0]), Bindings);
  if (!Out || !A || Out->empty() || A->empty())
    return;
  plan::Gemm G;
  if (N.OpType == "MatMul") {
    G.N = Out->size() >= 1 ? Out->back() : 1;
    G.M = Out->size() >= 2 ? (*Out)[Out->size() - 2] : 1;
    G.K = A->back();
    G.Batch = product(*Out, 0, Out->size() >= 2 ? Out->size() - 2 : 0);
  } else if (N.OpType == "Gemm") {
    G.M = (*Out)[0];
    G.N = Out->size() > 1 ? (*Out)[1] : 1;
    G.K = intAttribute(N, "transA", 0) ? (*A)[0] : A->back();
  } else { // Conv: an implicit GEMM per image.
    auto W = N.Inputs.size() > 1
                 ? concreteShape(In.Shapes.find(N.Inputs[1]), Bindings)
                 : std::nullopt;
    if (!W || W->size() < 2 || Out->size() < 2)
      return;
    G.Batch = (*Out)[0];
    G.M = product(*Out, 2);
    G.N = (*Out)[1];
    G.K = product(*W, 1);
  }
  Op.Gemms.push_back(G);
  Op.ForwardFlops = 2 * G.Batch * G.M * G.N * G.K;
}

std::vector<uint32_t> Lowering::computeUsers(ArrayRef<unsigned> Nodes) const {
  std::vector<uint32_t> Ops;
  std::vector<unsigned> Work(Nodes.begin(), Nodes.end());
  DenseSet<unsigned> Seen;
  while (!Work.empty() && Seen.size() < 64) {
    unsigned N = Work.back();
    Work.pop_back();
    if (!Seen.insert(N).second)
      continue;
    if (OpOfNode[N] != plan::NoIndex) {
      Ops.push_back(OpOfNode[N]);
      continue;
    }
    for (const std::string &Out : M.Nodes[N].Outputs) {
      auto It = Consumers.find(Out);
      if (It != Consumers.end())
        Work.insert(Work.end(), It->second.begin(), It->second.end());
    }
  }
  llvm::sort(Ops);
  Ops.erase(std::unique(Ops.begin(), Ops.end()), Ops.end());
  return Ops;
}

void Lowering::assignUses() {
  const ModelFacts &F = In.Facts;
  for (const auto &[Init, TI] : TensorOfInitializer) {
    plan::Tensor &T = P.Tensors[TI];
    for (uint32_t OpIndex : computeUsers(F.Tensors[Init].UseNodes)) {
      plan::Op &Op = P.Ops[OpIndex];
      if (!is_contained(Op.Params, TI))
        Op.Params.push_back(TI);
      T.FirstUse = std::min(T.FirstUse == plan::NoIndex ? OpIndex : T.FirstUse,
                            OpIndex);
      T.LastUse = T.LastUse == plan::NoIndex ? OpIndex
                                             : std::max(T.LastUse, OpIndex);
    }
  }
  for (plan::Op &Op : P.Ops) {
    llvm::sort(Op.Params);
    if (!Op.Params.empty())
      Op.Module = P.Tensors[Op.Params.front()].Module;
  }
}

void Lowering::assignLayers() {
  StringRef Prefix = In.Facts.LayerPrefix; // "model.layers"
  if (Prefix.empty())
    return;
  auto LayerOf = [&](StringRef Name) -> std::optional<uint32_t> {
    // Node scopes use '/' (TorchScript) or '.' (dynamo) separators:
    // "/model/layers.3/mlp" and "model.layers.3.mlp" both name layer 3.
    std::string Dotted = Name.str();
    std::replace(Dotted.begin(), Dotted.end(), '/', '.');
    StringRef D = StringRef(Dotted).ltrim('.');
    if (!D.consume_front(Prefix) || !D.consume_front("."))
      return std::nullopt;
    StringRef Digits = D.take_while([](char C) { return isDigit(C); });
    uint32_t L;
    if (Digits.empty() || Digits.getAsInteger(10, L) ||
        !(D.size() == Digits.size() || D[Digits.size()] == '.'))
      return std::nullopt;
    return L;
  };
  for (unsigned I = 0; I < M.Nodes.size(); ++I) {
    uint32_t OpIndex = OpOfNode[I];
    if (OpIndex == plan::NoIndex)
      continue;
    plan::Op &Op = P.Ops[OpIndex];
    std::optional<uint32_t> L = LayerOf(M.Nodes[I].Scope);
    if (!L && Op.Module != plan::NoIndex)
      L = LayerOf(P.Modules[Op.Module].Name);
    if (L)
      Op.Layer = *L;
  }
  // Ops the exporter left without a scope (residual adds) belong to the
  // layer around them: fill gaps between two ops of the same layer only,
  // so the final norm and head stay outside the last layer.
  uint32_t Before = plan::NoIndex;
  size_t GapStart = 0;
  for (size_t O = 0; O < P.Ops.size(); ++O) {
    uint32_t Layer = P.Ops[O].Layer;
    if (Layer == plan::NoIndex)
      continue;
    if (Layer == Before)
      for (size_t G = GapStart; G < O; ++G)
        P.Ops[G].Layer = Layer;
    Before = Layer;
    GapStart = O + 1;
  }
}

std::string Lowering::baseOf(StringRef Name) const {
  std::string Current = Name.str();
  for (unsigned Hops = 0; Hops < 16; ++Hops) {
    auto It = Producer.find(Current);
    if (It == Producer.end())
      break;
    const Node &N = M.Nodes[It->second];
    if (OpOfNode[It->second] != plan::NoIndex || N.Inputs.empty() ||
        N.OpType == "Concat" || N.OpType == "Constant")
      break;
    Current = N.Inputs[0];
  }
  return Current;
}

std::optional<uint64_t> Lowering::activationBytes(StringRef Name) {
  auto Cached = BytesOf.find(Name);
  if (Cached != BytesOf.end())
    return Cached->second;
  std::optional<uint64_t> Bytes = computeActivationBytes(Name);
  BytesOf[Name] = Bytes;
  return Bytes;
}

std::optional<uint64_t> Lowering::computeActivationBytes(StringRef Name) {
  const TensorType *T = In.Shapes.find(Name);
  if (!T)
    return std::nullopt;
  std::vector<std::string> Missing;
  std::optional<uint64_t> Elems = elementCount(*T, Bindings, &Missing);
  for (std::string &S : Missing)
    if (!is_contained(MissingSymbols, S))
      MissingSymbols.push_back(std::move(S));
  if (!Elems)
    return std::nullopt;
  if (*Elems >= MaxElements) {
    TooLarge = true;
    return std::nullopt;
  }
  // Training runs the graph in the model dtype; integer and boolean
  // tensors keep their own width.
  unsigned Bytes = isFloating(T->Type) || T->Type == DType::Undefined
                       ? plan::dtypeBytes(P.Settings.ParamDType)
                       : std::max(1u, dtypeBits(T->Type) / 8);
  return *Elems * Bytes;
}

Error Lowering::lowerActivations() {
  struct Saved {
    uint64_t Bytes;
    uint32_t ProducerOp;
    uint32_t EarliestSaver;
  };
  StringMap<Saved> SavedByBase;
  unsigned Unknown = 0;
  auto Save = [&](StringRef Tensor, uint32_t Saver, bool Mask) {
    std::string Base = Mask ? Tensor.str() : baseOf(Tensor);
    if (M.initializer(Base))
      return; // Parameters and constants are stored anyway.
    auto It = Producer.find(Base);
    // A mask is a tensor of its own beside the output it masks.
    std::string Key = Mask ? Base + "#mask" : Base;
    if (It == Producer.end() || OpOfNode[It->second] == plan::NoIndex)
      return; // Graph inputs and metadata: the caller keeps them.
    auto Found = SavedByBase.find(Key);
    if (Found != SavedByBase.end()) {
      Found->second.EarliestSaver =
          std::min(Found->second.EarliestSaver, Saver);
      return;
    }
    std::optional<uint64_t> Bytes = activationBytes(Base);
    if (!Bytes) {
      ++Unknown;
      return;
    }
    if (Mask) // One byte per element, whatever the activation dtype.
      *Bytes /= plan::dtypeBytes(P.Settings.ParamDType);
    SavedByBase[Key] = {*Bytes, OpOfNode[It->second], Saver};
  };

  for (unsigned I = 0; I < M.Nodes.size(); ++I) {
    uint32_t OpIndex = OpOfNode[I];
    if (OpIndex == plan::NoIndex)
      continue;
    const Node &N = M.Nodes[I];
    OpBehaviour B = behaviourOf(N.OpType);
    for (unsigned S = 0; S < N.Inputs.size() && S < 32; ++S)
      if ((B.SavedInputs >> S & 1) && !N.Inputs[S].empty())
        Save(N.Inputs[S], OpIndex, false);
    if (B.SavesOutput)
      Save(N.Outputs[0], OpIndex, false);
    if (B.SavesMask)
      Save(N.Outputs[0], OpIndex, true);

    // Backward workspace: the gradient of its output and of its
    // activation inputs exist together.
    plan::Op &Op = P.Ops[OpIndex];
    if (std::optional<uint64_t> Out = activationBytes(N.Outputs[0]))
      Op.TransientBytes += *Out;
    for (const std::string &Input : N.Inputs)
      if (!Input.empty() && !M.initializer(Input))
        if (std::optional<uint64_t> Bytes = activationBytes(Input))
          Op.TransientBytes += *Bytes;
  }
  if (TooLarge)
    return planError("an activation has more than 2^56 elements at these "
                     "dims; check --seq-len and --dim");
  if (!MissingSymbols.empty()) {
    std::string List = join(MissingSymbols, ", ");
    return planError("activation sizes depend on " + List +
                     ", which have no value: pass --dim NAME=N for each (or "
                     "--seq-len for a sequence length)");
  }
  for (auto &Entry : SavedByBase) {
    plan::Op &Producer = P.Ops[Entry.second.ProducerOp];
    Producer.SavedBytes += Entry.second.Bytes;
    Producer.SavedUntil = std::min(Producer.SavedUntil == plan::NoIndex
                                       ? Entry.second.EarliestSaver
                                       : Producer.SavedUntil,
                                   Entry.second.EarliestSaver);
  }
  P.Settings.UnknownActivations = Unknown;

  // The inputs of each layer: what per-layer checkpointing keeps.
  StringSet<> Counted;
  uint32_t First = plan::NoIndex;
  for (unsigned I = 0; I < M.Nodes.size(); ++I) {
    uint32_t OpIndex = OpOfNode[I];
    if (OpIndex == plan::NoIndex)
      continue;
    uint32_t Layer = P.Ops[OpIndex].Layer;
    if (Layer == plan::NoIndex)
      continue;
    if (OpIndex == 0 || P.Ops[OpIndex - 1].Layer != Layer) {
      First = OpIndex;
      Counted.clear();
    }
    for (const std::string &Input : M.Nodes[I].Inputs) {
      std::string Base = baseOf(Input);
      auto It = Producer.find(Base);
      if (It == Producer.end() || OpOfNode[It->second] == plan::NoIndex)
        continue;
      if (P.Ops[OpOfNode[It->second]].Layer == Layer ||
          !Counted.insert(Base).second)
        continue;
      if (std::optional<uint64_t> Bytes = activationBytes(Base))
        P.Ops[First].CheckpointBytes += *Bytes;
    }
  }
  return Error::success();
}

} // namespace

std::vector<uint32_t> trainableInUseOrder(const plan::Plan &P) {
  std::vector<uint32_t> Order;
  for (uint32_t I = 0; I < P.Tensors.size(); ++I)
    if (P.Tensors[I].Role == plan::TensorRole::Trainable)
      Order.push_back(I);
  llvm::stable_sort(Order, [&](uint32_t A, uint32_t B) {
    return P.Tensors[A].FirstUse < P.Tensors[B].FirstUse;
  });
  return Order;
}

Expected<plan::Plan> lowerToPlan(const PlanInputs &In,
                                 const PlanOptions &Options) {
  plan::Plan P;
  if (Error E = readPlanSettings(P.Settings, In.Config, Options))
    return E;
  P.ConfigText = In.ConfigText.str();
  P.Settings.ConfigHash = plan::fnv1a(
      reinterpret_cast<const uint8_t *>(In.ConfigText.data()),
      In.ConfigText.size());
  P.Settings.ModelHash = In.ModelHash;
  P.Settings.ModelPath = In.Graph.Path;
  P.Estimates.Fixed = fixedCosts(Options.Machine, P.Settings.WorldSize);

  Expected<DimBindings> Bindings =
      bindDims(In.Graph, P.Settings.MicroBatch, Options);
  if (!Bindings)
    return Bindings.takeError();
  for (const auto &[Name, Value] : *Bindings)
    P.Settings.Dims.push_back({Name, Value});
  Lowering L(P, In, std::move(*Bindings));
  if (Error E = L.run())
    return E;
  if (P.Tensors.empty())
    return planError("the model has no trainable parameters; nothing to "
                     "plan (is it an inference export? see docs/graph.md)");
  return P;
}

} // namespace dsc
