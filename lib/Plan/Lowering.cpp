//===- Lowering.cpp - The model as the planner sees it --------------------===//
//
// From the imported graph: the parameters (trainable or frozen) in
// first-use order and their modules; then the training program, built by
// the compute library (import at the plan's shapes, fusion, the loss,
// autodiff, kernel selection) and cut into ops: each forward kernel's node
// is an op, and the backward kernels belong to the op they differentiate.
// The schedule orders ops; the kernels of an op run in its instructions.
//
//===----------------------------------------------------------------------===//

#include "PlanInternal.h"

#include "dsc/Compute/Import.h"
#include "dsc/Compute/Kernels.h"
#include "dsc/PlanCodec.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace llvm;

namespace dsc {

namespace {

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

/// Beyond 2^48 elements a tensor is a mistake (a huge --seq-len), and byte
/// counts of it would overflow.
constexpr uint64_t MaxElements = uint64_t(1) << 48;

class Lowering {
public:
  Lowering(plan::Plan &P, const PlanInputs &In, const PlanOptions &Options,
           DimBindings Bindings)
      : P(P), In(In), M(In.Graph), Options(Options),
        Bindings(std::move(Bindings)) {}

  Error run();

private:
  void lowerTensorsAndModules();
  Error lowerProgram();
  /// Ops from the kernels' nodes; kernels reordered op by op.
  Error assignOps(const compute::Graph &G, compute::KernelProgram &KP);
  void assignLayers(const compute::Graph &G,
                    const std::vector<uint32_t> &NodeOfOp);

  plan::Plan &P;
  const PlanInputs &In;
  const Model &M;
  const PlanOptions &Options;
  DimBindings Bindings;
  StringMap<uint32_t> TensorNamed;
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
      TensorNamed[Init.Name] = P.Tensors.size();
      PM.Tensors.push_back(P.Tensors.size());
      PM.Elems += PT.Elems;
      P.Tensors.push_back(std::move(PT));
    }
    if (!PM.Tensors.empty())
      P.Modules.push_back(std::move(PM));
  }
}

Error Lowering::lowerProgram() {
  compute::ImportOptions IO;
  IO.MicroBatch = P.Settings.MicroBatch;
  IO.SeqLen = Options.SeqLen;
  IO.Dims = Bindings;
  Expected<compute::Graph> G = compute::importGraph(M, In.Facts, IO);
  if (!G)
    return G.takeError();
  compute::PipelineOptions PO;
  PO.Loss = Options.Loss;
  PO.SkipFusions = Options.SkipFusions;
  // DeepSpeed scales the loss by 1 / gradient accumulation steps, and
  // divides each rank's gradient by the world size before reducing
  // (stage 1 and 2's allreduce_bucket): in fp16 a sum of undivided
  // gradients can overflow where DeepSpeed's does not.
  PO.LossGradScale =
      1.0 / (double(P.Settings.GradAccum) * double(P.Settings.WorldSize));
  if (Error E = compute::runPipeline(*G, PO, Options.AfterComputePass))
    return E;
  for (const compute::Value &V : G->Values)
    if (uint64_t(compute::numel(V.Dims)) > MaxElements)
      return planError("value '" + V.Name + "' has " +
                       Twine(compute::numel(V.Dims)) +
                       " elements; check --seq-len and --dim");
  compute::KernelOptions KO;
  KO.Activation = P.Settings.ParamDType;
  // The one asked for first, then the machine's order (math, asked for,
  // runs every kernel).
  KO.AttentionOrder.clear();
  if (Options.Attention)
    KO.AttentionOrder.push_back(*Options.Attention);
  for (plan::AttentionAlgorithm A : Options.Machine.AttentionOrder)
    KO.AttentionOrder.push_back(A);
  KO.ElideCopies = Options.ElideCopies;
  KO.FusePointwise = Options.FusePointwise;
  KO.AccumulateProducts = Options.AccumulateProducts;
  KO.CheckpointLayers = Options.CheckpointLayers;
  KO.TensorOf = [&](const compute::ParamInfo &Pi) {
    auto It = TensorNamed.find(Pi.Name);
    return It == TensorNamed.end() ? plan::NoIndex : It->second;
  };
  Expected<compute::KernelProgram> KP = compute::selectKernels(*G, KO);
  if (!KP)
    return KP.takeError();
  if (Error E = assignOps(*G, *KP))
    return E;
  P.Values = std::move(KP->Values);
  P.Constants = std::move(KP->Constants);
  P.Training = std::move(KP->Training);
  P.Training.IgnoreIndex = PO.IgnoreIndex;
  return Error::success();
}

Error Lowering::assignOps(const compute::Graph &G,
                          compute::KernelProgram &KP) {
  size_t NK = KP.Kernels.size();
  // Forward ops: each node with forward kernels, in program order.
  std::vector<int64_t> OpOfNode(G.Nodes.size(), -1);
  std::vector<uint32_t> NodeOfOp;
  for (size_t K = 0; K < NK; ++K) {
    if (KP.Kernels[K].Backward)
      continue;
    uint32_t N = KP.Node[K];
    if (OpOfNode[N] < 0) {
      OpOfNode[N] = int64_t(NodeOfOp.size());
      NodeOfOp.push_back(N);
    }
  }
  if (NodeOfOp.empty())
    return planError("the model computes nothing: it has no forward kernel");
  // A forward node with no kernel of its own (a view) belongs to the
  // earliest op that reads it: that op's instruction is where it is
  // "computed", and where its parameters are needed.
  std::vector<int64_t> Effective = OpOfNode;
  std::vector<std::vector<uint32_t>> Uses = G.uses();
  for (size_t I = G.Nodes.size(); I-- > 0;) {
    const compute::Node &N = G.Nodes[I];
    if (N.Ph != compute::Phase::Forward || Effective[I] >= 0)
      continue;
    int64_t Min = -1;
    for (compute::ValueId V : N.Outputs)
      for (uint32_t U : Uses[V])
        if (G.Nodes[U].Ph == compute::Phase::Forward && Effective[U] >= 0)
          Min = Min < 0 ? Effective[U] : std::min(Min, Effective[U]);
    Effective[I] = Min;
  }
  uint32_t NumOps = uint32_t(NodeOfOp.size());
  P.Ops.resize(NumOps);
  for (uint32_t O = 0; O < NumOps; ++O) {
    const compute::Node &N = G.Nodes[NodeOfOp[O]];
    P.Ops[O].Name = N.Name;
    P.Ops[O].Type = N.Op;
  }
  // Parameters: the ops reading them (through views), first and last use.
  for (size_t I = 0; I < G.Nodes.size(); ++I) {
    const compute::Node &N = G.Nodes[I];
    if (N.Ph != compute::Phase::Forward || Effective[I] < 0)
      continue;
    uint32_t O = uint32_t(Effective[I]);
    for (compute::ValueId V : N.Inputs) {
      if (V == compute::NoValue || G.Values[V].Kind != compute::ValueKind::Param)
        continue;
      auto It = TensorNamed.find(G.Params[size_t(G.Values[V].Param)].Name);
      if (It == TensorNamed.end())
        continue;
      uint32_t T = It->second;
      if (!is_contained(P.Ops[O].Params, T))
        P.Ops[O].Params.push_back(T);
      plan::Tensor &X = P.Tensors[T];
      X.FirstUse = X.FirstUse == plan::NoIndex ? O : std::min(X.FirstUse, O);
      X.LastUse = X.LastUse == plan::NoIndex ? O : std::max(X.LastUse, O);
    }
  }
  for (plan::Op &Op : P.Ops) {
    llvm::sort(Op.Params);
    if (!Op.Params.empty())
      Op.Module = P.Tensors[Op.Params.front()].Module;
  }
  // Kernels in op order: forwards, then backwards as autodiff wrote them.
  // A backward kernel belongs to the op it differentiates, or to a later
  // one in backward order when it must run after one (a view's gradient
  // copy, summed where several ops read the value): ops never go back up.
  std::vector<uint32_t> Order;
  std::vector<uint32_t> KernelOp(NK);
  for (size_t K = 0; K < NK; ++K)
    if (!KP.Kernels[K].Backward) {
      KernelOp[K] = uint32_t(OpOfNode[KP.Node[K]]);
      Order.push_back(uint32_t(K));
    }
  uint32_t Running = NumOps - 1;
  for (size_t K = 0; K < NK; ++K) {
    if (!KP.Kernels[K].Backward)
      continue;
    int32_t Origin = G.Nodes[KP.Node[K]].Origin;
    int64_t Op = Origin >= 0 ? Effective[size_t(Origin)] : -1;
    if (Op >= 0)
      Running = std::min<uint32_t>(Running, uint32_t(Op));
    // A parameter's gradient is complete in its first use's op, also where
    // the next op's backward writes it (Gemma's x * (1 + w): the Add reads
    // w first, the Mul's backward makes the gradient). Only across ops
    // without parameters: further, the check below fails instead of
    // moving other ops' kernels.
    for (const plan::TensorRef &R : KP.Kernels[K].Outputs) {
      const plan::Value &V = KP.Values[R.Value];
      if (V.Kind != plan::ValueKind::ParamGrad || V.Tensor == plan::NoIndex)
        continue;
      uint32_t First = P.Tensors[V.Tensor].FirstUse;
      if (First == plan::NoIndex || First >= Running)
        continue;
      bool Between = false;
      for (uint32_t O = First + 1; O < Running; ++O)
        Between |= !P.Ops[O].Params.empty();
      if (!Between)
        Running = First;
    }
    KernelOp[K] = Running;
    Order.push_back(uint32_t(K));
  }
  std::vector<plan::Kernel> Sorted;
  for (uint32_t K : Order) {
    plan::Kernel Kr = std::move(KP.Kernels[K]);
    Kr.Op = KernelOp[K];
    Sorted.push_back(std::move(Kr));
  }
  for (plan::Op &Op : P.Ops)
    Op.Forward = Op.Backward = {plan::NoIndex, plan::NoIndex};
  for (uint32_t K = 0; K < Sorted.size(); ++K) {
    plan::Interval &R = Sorted[K].Backward ? P.Ops[Sorted[K].Op].Backward
                                           : P.Ops[Sorted[K].Op].Forward;
    if (R.Begin == plan::NoIndex)
      R.Begin = K;
    R.End = K + 1;
  }
  // Ops without backward kernels: an empty range where the next one begins.
  uint32_t Next = 0;
  for (plan::Op &Op : P.Ops)
    Next = Op.Forward.End;
  for (uint32_t O = NumOps; O-- > 0;) {
    plan::Interval &B = P.Ops[O].Backward;
    if (B.Begin == plan::NoIndex)
      B = {Next, Next};
    Next = B.End;
  }
  P.Kernels = std::move(Sorted);
  // A backward kernel reading a parameter needs it where its op runs
  // (stage 3 gathers an op's parameters before it).
  for (const plan::Kernel &K : P.Kernels)
    if (K.Backward)
      for (const plan::TensorRef &R : K.Inputs) {
        const plan::Value &V = KP.Values[R.Value];
        if (V.Kind == plan::ValueKind::Param && V.Tensor != plan::NoIndex &&
            !is_contained(P.Ops[K.Op].Params, V.Tensor)) {
          P.Ops[K.Op].Params.push_back(V.Tensor);
          llvm::sort(P.Ops[K.Op].Params);
        }
      }
  // Each parameter's gradient must be complete by its first-use op's
  // backward: that is where the bucket pass expects it.
  for (const plan::Kernel &K : P.Kernels)
    for (const plan::TensorRef &R : K.Outputs) {
      const plan::Value &V = KP.Values[R.Value];
      if (V.Kind == plan::ValueKind::ParamGrad && V.Tensor != plan::NoIndex &&
          P.Tensors[V.Tensor].FirstUse != K.Op)
        return planError("internal error: the gradient of '" +
                         P.Tensors[V.Tensor].Name + "' is completed in op " +
                         Twine(K.Op) + ", not in its first use, op " +
                         Twine(P.Tensors[V.Tensor].FirstUse));
    }
  assignLayers(G, NodeOfOp);
  return Error::success();
}

void Lowering::assignLayers(const compute::Graph &G,
                            const std::vector<uint32_t> &NodeOfOp) {
  StringRef Prefix = In.Facts.LayerPrefix; // "model.layers"
  if (Prefix.empty())
    return;
  auto LayerOf = [&](StringRef Name) -> std::optional<uint32_t> {
    // Node scopes use '/' (TorchScript) or '.' (dynamo) separators, and a
    // wrapper may add a prefix ("model."): find "<prefix>.<digits>".
    std::string Dotted = Name.str();
    std::replace(Dotted.begin(), Dotted.end(), '/', '.');
    StringRef D = Dotted;
    size_t At = D.find(Prefix);
    while (At != StringRef::npos && At > 0 && D[At - 1] != '.')
      At = D.find(Prefix, At + 1);
    if (At == StringRef::npos)
      return std::nullopt;
    D = D.drop_front(At + Prefix.size());
    if (!D.consume_front("."))
      return std::nullopt;
    StringRef Digits = D.take_while([](char C) { return isDigit(C); });
    uint32_t L;
    if (Digits.empty() || Digits.getAsInteger(10, L) ||
        !(D.size() == Digits.size() || D[Digits.size()] == '.'))
      return std::nullopt;
    return L;
  };
  for (uint32_t O = 0; O < P.Ops.size(); ++O) {
    plan::Op &Op = P.Ops[O];
    std::optional<uint32_t> L = LayerOf(G.Nodes[NodeOfOp[O]].Scope);
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
      for (size_t G2 = GapStart; G2 < O; ++G2)
        P.Ops[G2].Layer = Layer;
    Before = Layer;
    GapStart = O + 1;
  }
}

Error Lowering::run() {
  lowerTensorsAndModules();
  if (P.Tensors.empty())
    return planError("the model has no trainable parameters; nothing to "
                     "plan (is it an inference export? see docs/graph.md)");
  return lowerProgram();
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
  P.Estimates.Fixed = fixedCosts(Options.Machine, P.Settings);

  Expected<DimBindings> Bindings =
      bindDims(In.Graph, P.Settings.MicroBatch, Options);
  if (!Bindings)
    return Bindings.takeError();
  for (const auto &[Name, Value] : *Bindings)
    P.Settings.Dims.push_back({Name, Value});
  Lowering L(P, In, Options, std::move(*Bindings));
  if (Error E = L.run())
    return E;
  if (Options.CheckpointLayers &&
      none_of(P.Ops, [](const plan::Op &O) { return O.Layer != plan::NoIndex; }))
    return planError("--checkpoint-layers: the model has no repeated layers "
                     "that dsc recognizes (a module list such as "
                     "'model.layers.N' or 'transformer.h.N'), so there is "
                     "nothing to checkpoint");
  return P;
}

} // namespace dsc
