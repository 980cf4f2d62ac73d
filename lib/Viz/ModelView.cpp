//===- ModelView.cpp - Modules and the stage-3 fetch units ----------------===//

#include "Views.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace llvm;

namespace dsc::viz {

Error drawModel(Graph &G, const plan::Plan &P, const DrawOptions &O) {
  Layers L(P, O.Expand);
  std::vector<uint32_t> UnitOf(P.Modules.size(), plan::NoIndex);
  for (uint32_t U = 0; U < P.FetchUnits.size(); ++U)
    UnitOf[P.FetchUnits[U].Module] = U;
  G.set(G.root(), "rankdir", "TB");
  G.set(G.root(), "fontname", "Helvetica");
  G.set(G.root(), "label",
        formatv("modules in first-use order; {0}", P.Settings.ZeroStage == 3
                                                      ? "blue: gathered as one "
                                                        "fetch unit, grey: "
                                                        "kept whole on every "
                                                        "rank"
                                                      : "every rank holds "
                                                        "every module")
            .str());

  std::map<uint32_t, Agraph_t *> Clusters;
  auto ClusterOf = [&](uint32_t Shown) -> Agraph_t * {
    if (Shown == Layers::None)
      return G.root();
    auto It = Clusters.find(Shown);
    if (It != Clusters.end())
      return It->second;
    Agraph_t *C = G.cluster(G.root(), formatv("layer{0}", Shown).str(),
                            L.name(Shown));
    G.set(C, "style", "rounded");
    return Clusters[Shown] = C;
  };

  Agnode_t *Previous = nullptr;
  uint32_t MiddleShownFor = plan::NoIndex;
  for (uint32_t M = 0; M < P.Modules.size(); ++M) {
    uint32_t Layer = L.OfModule[M];
    uint32_t Shown = L.shown(Layer);
    // A folded stretch shows the modules of its first layer only.
    if (Shown == Layers::Middle) {
      if (MiddleShownFor == plan::NoIndex)
        MiddleShownFor = Layer;
      if (Layer != MiddleShownFor)
        continue;
    }
    const plan::Module &Mod = P.Modules[M];
    Agnode_t *N = G.node(ClusterOf(Shown), formatv("m{0}", M).str());
    std::string Label = formatv("{0}\\n{1} parameters", Mod.Name, Mod.Elems);
    if (UnitOf[M] != plan::NoIndex) {
      Label += formatv("\\nfetch unit {0}", UnitOf[M]).str();
      G.set(N, "fillcolor", "#a0cbe8");
    } else {
      G.set(N, "fillcolor", P.Settings.ZeroStage == 3 ? "#dddddd" : "#ffffff");
    }
    G.set(N, "label", Label);
    G.set(N, "shape", "box");
    G.set(N, "style", "filled,rounded");
    G.set(N, "fontname", "Helvetica");
    if (Previous)
      G.set(G.edge(Previous, N), "color", "#999999");
    Previous = N;
  }
  return Error::success();
}

} // namespace dsc::viz
