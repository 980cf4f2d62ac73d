//===- ComputeView.cpp - The training program's kernels and their values --===//
//
// One box per kernel of the compute program, in program order, forward
// then backward, grouped by layer (folded like the other views); an edge
// from the kernel that writes a value to each kernel that reads it,
// labelled with the value. Edges from the forward into the backward are
// the saved activations (and the kept sums of the fused epilogues); they
// are drawn faint so that the two chains stay readable.
//
//===----------------------------------------------------------------------===//

#include "Views.h"

#include "llvm/ADT/StringExtras.h"
#include "dsc/KernelRegistry.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <set>

using namespace llvm;

namespace dsc::viz {

namespace {

/// A fill colour per kernel family (the registry's).
const char *kindColor(plan::KernelKind K) {
  std::string Family = plan::kernelKindInfo(K).Family;
  return Family == "product"     ? "#a0cbe8"
         : Family == "attention" ? "#d4a6c8"
         : Family == "norm"      ? "#8cd17d"
         : Family == "loss"      ? "#ffbe7d"
         : Family == "embedding" ? "#76b7b2"
                                 : "#eeeeee";
}

std::string shapeText(const std::vector<int64_t> &S) {
  std::string Out = "[";
  for (size_t I = 0; I < S.size(); ++I)
    Out += (I ? ", " : "") + std::to_string(S[I]);
  return Out + "]";
}

} // namespace

Error drawCompute(Graph &G, const plan::Plan &P, const DrawOptions &O) {
  if (P.Kernels.empty())
    return createStringError(inconvertibleErrorCode(),
                             "the plan has no compute program (plans made "
                             "before the training programs have none): "
                             "nothing to draw in the compute view");
  Layers L(P, O.Expand);
  G.set(G.root(), "rankdir", "TB");
  // Ranks over the whole graph, not per cluster: dot's per-cluster
  // ranking fails ("trouble in init_rank") on edges that leave a cluster
  // without constraining it.
  G.set(G.root(), "newrank", "true");
  G.set(G.root(), "fontname", "Helvetica");
  G.set(G.root(), "label",
        formatv("{0} kernels, forward then backward; an edge is a value "
                "one kernel writes and another reads (faint: kept from "
                "the forward for the backward)",
                P.Kernels.size())
            .str());

  // Clusters: forward or backward, then the layer shown.
  std::map<std::pair<bool, uint32_t>, Agraph_t *> Clusters;
  auto ClusterOf = [&](bool Backward, uint32_t Shown) {
    auto Key = std::make_pair(Backward, Shown);
    auto It = Clusters.find(Key);
    if (It != Clusters.end())
      return It->second;
    std::string Name = formatv("{0}_{1}", Backward ? "bwd" : "fwd",
                               Shown == Layers::None     ? std::string("out")
                               : Shown == Layers::Middle ? std::string("mid")
                                                         : std::to_string(Shown))
                           .str();
    Agraph_t *C = G.cluster(G.root(), Name,
                            formatv("{0}, {1}", Backward ? "backward" : "forward",
                                    L.name(Shown))
                                .str());
    G.set(C, "style", "rounded");
    return Clusters[Key] = C;
  };

  // A folded stretch shows the kernels of one of its layers only.
  uint32_t MiddleLayer = plan::NoIndex;
  std::vector<Agnode_t *> Node(P.Kernels.size(), nullptr);
  for (uint32_t K = 0; K < P.Kernels.size(); ++K) {
    const plan::Kernel &Kr = P.Kernels[K];
    uint32_t Layer = Kr.Op < P.Ops.size() ? P.Ops[Kr.Op].Layer : plan::NoIndex;
    uint32_t Shown = L.shown(Layer);
    if (Shown == Layers::Middle) {
      if (MiddleLayer == plan::NoIndex)
        MiddleLayer = Layer;
      if (Layer != MiddleLayer)
        continue;
    }
    Agnode_t *N = G.node(ClusterOf(Kr.Backward, Shown),
                         formatv("k{0}", K).str());
    std::string Cost =
        Kr.Flops >= 1000000000
            ? formatv("{0:f1} GFLOP, {1:f1} MB", double(Kr.Flops) / 1e9,
                      double(Kr.Bytes) / 1e6)
                  .str()
            : formatv("{0:f1} MB", double(Kr.Bytes) / 1e6).str();
    G.set(N, "label",
          formatv("{0} {1}\\n{2}\\n{3}", K, plan::enumName(Kr.kind()),
                  Kr.Name.size() > 48 ? Kr.Name.substr(0, 45) + "..."
                                      : Kr.Name,
                  Cost)
              .str());
    G.set(N, "shape", "box");
    G.set(N, "style", "filled,rounded");
    G.set(N, "fillcolor", kindColor(Kr.kind()));
    G.set(N, "fontname", "Helvetica");
    G.set(N, "fontsize", "10");
    Node[K] = N;
  }

  // Edges: the last writer of each value so far to each reader.
  std::vector<uint32_t> Writer(P.Values.size(), plan::NoIndex);
  std::set<std::pair<uint32_t, uint32_t>> Drawn;
  for (uint32_t K = 0; K < P.Kernels.size(); ++K) {
    const plan::Kernel &Kr = P.Kernels[K];
    for (const plan::TensorRef &R : Kr.Inputs) {
      if (R.Value >= P.Values.size())
        continue;
      uint32_t W = Writer[R.Value];
      if (W == plan::NoIndex || !Node[W] || !Node[K] ||
          !Drawn.insert({W, K}).second)
        continue;
      Agedge_t *E = G.edge(Node[W], Node[K]);
      const plan::Value &V = P.Values[R.Value];
      // Saved activations unlabelled (the value is on the forward's edges).
      bool Saved = !P.Kernels[W].Backward && Kr.Backward;
      G.set(E, "color", Saved ? "#dddddd" : "#666666");
      if (Saved) {
        G.set(E, "constraint", "false");
        continue;
      }
      G.set(E, "label",
            formatv("{0} {1}", V.Name.size() > 24 ? V.Name.substr(0, 21) + "..."
                                                  : V.Name,
                    shapeText(R.Shape))
                .str());
      G.set(E, "fontsize", "8");
      G.set(E, "fontname", "Helvetica");
    }
    for (const plan::TensorRef &R : Kr.Outputs)
      if (R.Value < P.Values.size())
        Writer[R.Value] = K;
  }
  return Error::success();
}

} // namespace dsc::viz
