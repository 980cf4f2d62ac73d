//===- ScheduleView.cpp - One step, one lane per stream -------------------===//
//
// The last micro step (the one that reduces, for every stage) and the
// optimizer step. Consecutive instructions of one stream that do the same
// thing for the same layer become one box; waits between streams become
// dashed edges. Folded layers make a 70B plan a few dozen boxes.
//
//===----------------------------------------------------------------------===//

#include "Views.h"

#include "dsc/Plan/Report.h"
#include "dsc/PlanFacts.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace dsc::viz {

namespace {

struct Group {
  plan::Stream On;
  std::string Key;
  std::string What;
  uint32_t Layer;
  unsigned Count = 0;
  unsigned Releases = 0;
  uint64_t Nanos = 0, Bytes = 0;
  uint32_t FirstArg = 0, LastArg = 0;
  Agnode_t *Node = nullptr;
};

const char *fill(StringRef What) {
  if (What.startswith("forward"))
    return "#c6dbef";
  if (What.startswith("recompute"))
    return "#dadaeb";
  if (What.startswith("backward"))
    return "#fdd0a2";
  if (What.startswith("gather"))
    return "#a0cbe8";
  if (What.startswith("release"))
    return "#f0f0f0";
  if (What.startswith("optimizer"))
    return "#8cd17d";
  if (What.contains("reduce") || What.contains("all-gather"))
    return "#e5c494";
  return "#d9d9d9";
}

class ScheduleDrawer {
public:
  ScheduleDrawer(Graph &G, const plan::Plan &P, const DrawOptions &O)
      : G(G), P(P), L(P, O.Expand) {}

  void run();

private:
  uint32_t layerOfTensor(uint32_t T) const {
    uint32_t M = P.Tensors[T].Module;
    return M == plan::NoIndex ? Layers::None : L.OfModule[M];
  }
  uint32_t layerOf(const plan::Instruction &In) const;
  std::string whatOf(const plan::Instruction &In, bool Backward) const;
  uint64_t bytesOf(const plan::Instruction &In) const;

  Graph &G;
  const plan::Plan &P;
  Layers L;
};

uint32_t ScheduleDrawer::layerOf(const plan::Instruction &In) const {
  switch (In.Kind) {
  case plan::InstrKind::Forward:
  case plan::InstrKind::Backward:
    return P.Ops[In.Arg].Layer;
  case plan::InstrKind::Gather:
  case plan::InstrKind::GatherSecondary:
  case plan::InstrKind::Release:
    return L.OfModule[P.FetchUnits[In.Arg].Module];
  case plan::InstrKind::Reduce:
  case plan::InstrKind::ReduceReplicas:
  case plan::InstrKind::ReduceAcrossNodes:
    return layerOfTensor(P.Buckets[In.Arg].Segments.front().Tensor);
  case plan::InstrKind::Transfer: {
    const plan::Transfer &T = P.Transfers[In.Arg];
    switch (T.Point) {
    case plan::TransferPoint::AfterReduce:
      return layerOfTensor(P.Buckets[T.Owner].Segments.front().Tensor);
    case plan::TransferPoint::BeforeGather:
      return L.OfModule[P.FetchUnits[T.Owner].Module];
    default:
      return Layers::None;
    }
  }
  default:
    return Layers::None;
  }
}

std::string ScheduleDrawer::whatOf(const plan::Instruction &In,
                                   bool Backward) const {
  switch (In.Kind) {
  case plan::InstrKind::Forward:
    return Backward ? "recompute" : "forward";
  case plan::InstrKind::Backward:
    return "backward";
  case plan::InstrKind::Gather:
    return "gather";
  case plan::InstrKind::GatherSecondary:
    return "gather in hpZ group";
  case plan::InstrKind::Release:
    return "release";
  case plan::InstrKind::Reduce:
    return plan::enumName(P.Buckets[In.Arg].Kind);
  case plan::InstrKind::OptimizerStep:
    return "optimizer step";
  case plan::InstrKind::GatherParams:
    return "all-gather parameters";
  case plan::InstrKind::ClipGradients:
    return "clip gradients";
  case plan::InstrKind::ReduceReplicas:
    return "all-reduce across MiCS replicas";
  case plan::InstrKind::ReduceAcrossNodes:
    return "qgZ all-to-all across nodes";
  case plan::InstrKind::Transfer: {
    const plan::Transfer &T = P.Transfers[In.Arg];
    return std::string(plan::enumName(T.Kind)) + " " + plan::enumName(T.What);
  }
  }
  return "?";
}

uint64_t ScheduleDrawer::bytesOf(const plan::Instruction &In) const {
  unsigned PB = plan::dtypeBytes(P.Settings.ParamDType);
  switch (In.Kind) {
  case plan::InstrKind::Gather:
  case plan::InstrKind::GatherSecondary:
    return P.FetchUnits[In.Arg].Elems * PB;
  case plan::InstrKind::Reduce:
    return P.Buckets[In.Arg].Elems *
           plan::dtypeBytes(P.Buckets[In.Arg].Type);
  case plan::InstrKind::Transfer:
    return P.Transfers[In.Arg].Bytes;
  case plan::InstrKind::GatherParams:
    return P.Layout.PaddedElems * PB;
  case plan::InstrKind::ReduceReplicas:
    return plan::bucketShardElems(P, In.Arg) *
           plan::dtypeBytes(P.Settings.GradAccumDType);
  case plan::InstrKind::ReduceAcrossNodes:
    return plan::qgzLayout(P, In.Arg).Block2 * P.Settings.Nodes;
  default:
    return 0;
  }
}

void ScheduleDrawer::run() {
  uint32_t Last = P.Settings.GradAccum - 1;
  G.set(G.root(), "rankdir", "LR");
  G.set(G.root(), "fontname", "Helvetica");
  G.set(G.root(), "labelloc", "t");
  G.set(G.root(), "nodesep", "0.15");
  G.set(G.root(), "label",
        formatv("ZeRO stage {0}, {1} ranks: micro step {2} of {3}{4} and the "
                "optimizer step; boxes join consecutive instructions of a "
                "stream, dashed edges are waits between streams; estimated "
                "step {5:f1} ms",
                P.Settings.ZeroStage, P.Settings.WorldSize, Last + 1,
                P.Settings.GradAccum,
                P.Settings.GradAccum > 1 ? " (the earlier ones repeat it)"
                                         : "",
                double(P.Estimates.StepNanos) / 1e6)
            .str());

  Agraph_t *Lanes[5] = {};
  auto Lane = [&](plan::Stream S) {
    unsigned I = unsigned(S);
    if (!Lanes[I]) {
      Lanes[I] = G.cluster(G.root(), plan::enumName(S),
                           std::string(plan::enumName(S)) + " stream");
      G.set(Lanes[I], "style", "rounded");
      G.set(Lanes[I], "color", "#888888");
    }
    return Lanes[I];
  };

  std::vector<Group> Groups;
  std::vector<uint32_t> GroupOf(P.Program.size(), plan::NoIndex);
  int Open[5] = {-1, -1, -1, -1, -1};
  bool SeenBackward = false;
  // Folded layers are drawn once: the first of them met in forward and
  // the first met in backward stand for all.
  uint32_t Representative[2] = {Layers::None, Layers::None};
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    const plan::Instruction &In = P.Program[I];
    if (In.Micro != Last)
      continue;
    if (In.Kind == plan::InstrKind::Backward)
      SeenBackward = true;
    uint32_t Layer = layerOf(In);
    uint32_t Shown = L.shown(Layer);
    if (Shown == Layers::Middle) {
      uint32_t &Rep = Representative[SeenBackward];
      if (Rep == Layers::None)
        Rep = Layer;
      if (Layer != Rep)
        continue;
    }
    int &Current = Open[unsigned(In.On)];
    // A release frees memory after the compute before it: it joins that
    // compute's box rather than splitting the lane.
    if (In.Kind == plan::InstrKind::Release && Current >= 0) {
      ++Groups[Current].Releases;
      GroupOf[I] = Current;
      continue;
    }
    std::string What = whatOf(In, SeenBackward);
    std::string Key = What + "/" + std::to_string(Shown);
    if (Current < 0 || Groups[Current].Key != Key) {
      Groups.push_back({In.On, Key, What, Shown});
      Groups.back().FirstArg = In.Arg;
      Current = Groups.size() - 1;
    }
    Group &Gr = Groups[Current];
    ++Gr.Count;
    Gr.Nanos += In.Nanos;
    Gr.Bytes += bytesOf(In);
    Gr.LastArg = In.Arg;
    GroupOf[I] = Current;
  }

  std::vector<int> PreviousInLane(5, -1);
  for (uint32_t K = 0; K < Groups.size(); ++K) {
    Group &Gr = Groups[K];
    Gr.Node = G.node(Lane(Gr.On), formatv("g{0}", K).str());
    std::string Label = Gr.What;
    if (Gr.Layer != Layers::None)
      Label += "\\n" + L.name(Gr.Layer);
    Label += formatv("\\n{0} instruction{1}", Gr.Count,
                     Gr.Count == 1 ? "" : "s")
                 .str();
    if (Gr.Bytes)
      Label += ", " + formatBytes(Gr.Bytes);
    if (Gr.Nanos)
      Label += formatv(", {0:f2} ms", double(Gr.Nanos) / 1e6).str();
    if (Gr.Releases)
      Label += formatv("\\nthen {0} release{1}", Gr.Releases,
                       Gr.Releases == 1 ? "" : "s")
                   .str();
    G.set(Gr.Node, "label", Label);
    G.set(Gr.Node, "shape", "box");
    G.set(Gr.Node, "style", "filled,rounded");
    G.set(Gr.Node, "fillcolor", fill(Gr.What));
    G.set(Gr.Node, "fontname", "Helvetica");
    G.set(Gr.Node, "fontsize", "10");
    int &Prev = PreviousInLane[unsigned(Gr.On)];
    if (Prev >= 0) {
      Agedge_t *E = G.edge(Groups[Prev].Node, Gr.Node);
      G.set(E, "weight", "10");
      G.set(E, "color", "#444444");
    }
    Prev = K;
  }

  DenseSet<std::pair<uint32_t, uint32_t>> Drawn;
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    if (GroupOf[I] == plan::NoIndex)
      continue;
    for (uint32_t W : P.Program[I].Waits) {
      if (GroupOf[W] == plan::NoIndex || GroupOf[W] == GroupOf[I] ||
          !Drawn.insert({GroupOf[W], GroupOf[I]}).second)
        continue;
      Agedge_t *E = G.edge(Groups[GroupOf[W]].Node, Groups[GroupOf[I]].Node);
      G.set(E, "style", "dashed");
      G.set(E, "color", "#c44e52");
    }
  }
}

} // namespace

Error drawSchedule(Graph &G, const plan::Plan &P, const DrawOptions &O) {
  ScheduleDrawer(G, P, O).run();
  return Error::success();
}

} // namespace dsc::viz
