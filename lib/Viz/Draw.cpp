//===- Draw.cpp - Build a view, write DOT or render it --------------------===//

#include "Views.h"

#include "dsc/Plan/Report.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <graphviz/gvc.h>

using namespace llvm;

namespace dsc {
namespace viz {

Layers::Layers(const plan::Plan &P, bool Expand) {
  OfModule.assign(P.Modules.size(), None);
  for (const plan::Op &Op : P.Ops) {
    if (Op.Layer != plan::NoIndex)
      Count = std::max(Count, Op.Layer + 1);
    if (Op.Module != plan::NoIndex && OfModule[Op.Module] == None)
      OfModule[Op.Module] = Op.Layer;
  }
  Fold = !Expand && Count >= 4;
}

uint32_t Layers::shown(uint32_t L) const {
  if (!Fold || L == None || L == 0 || L + 1 == Count)
    return L;
  return Middle;
}

std::string Layers::name(uint32_t Shown) const {
  if (Shown == None)
    return "outside the layers";
  if (Shown == Middle)
    return formatv("one of layers 1-{0} (all alike)", Count - 2).str();
  return formatv("layer {0}", Shown).str();
}

const char *categoryColor(plan::Category C) {
  switch (C) {
  case plan::Category::Params16:
    return "#4e79a7";
  case plan::Category::GatheredParams:
    return "#a0cbe8";
  case plan::Category::Grads:
    return "#f28e2b";
  case plan::Category::GradsFP32:
    return "#ffbe7d";
  case plan::Category::MasterParams:
    return "#59a14f";
  case plan::Category::OptimizerStates:
    return "#8cd17d";
  case plan::Category::ReduceBuckets:
    return "#b6992d";
  case plan::Category::Activations:
    return "#e15759";
  case plan::Category::Workspace:
    return "#ff9d9a";
  case plan::Category::OffloadStaging:
    return "#79706e";
  case plan::Category::Inputs:
    return "#76b7b2";
  case plan::Category::Constants:
    return "#d4a6c8";
  }
  return "#bab0ac";
}

Expected<size_t> rankClassOf(const plan::Plan &P, uint32_t Rank) {
  for (size_t C = 0; C < P.Layout.RankClasses.size(); ++C)
    for (const plan::RankRange &R : P.Layout.RankClasses[C].Ranks)
      if (Rank >= R.First && Rank < R.First + R.Count)
        return C;
  return createStringError(inconvertibleErrorCode(),
                           "--rank %u: the plan has ranks 0-%u", Rank,
                           P.Settings.WorldSize - 1);
}

const char *layoutEngine(PlanView V) {
  // The memory chart places every box itself.
  return V == PlanView::Memory ? "nop" : "dot";
}

} // namespace viz

static Expected<std::unique_ptr<viz::Graph>> build(const plan::Plan &P,
                                                   const DrawOptions &O) {
  auto G = std::make_unique<viz::Graph>("plan");
  Error E = Error::success();
  switch (O.View) {
  case PlanView::Partitions:
    E = viz::drawPartitions(*G, P, O);
    break;
  case PlanView::Schedule:
    E = viz::drawSchedule(*G, P, O);
    break;
  case PlanView::Memory:
    E = viz::drawMemory(*G, P, O);
    break;
  case PlanView::Model:
    E = viz::drawModel(*G, P, O);
    break;
  case PlanView::Compute:
    E = viz::drawCompute(*G, P, O);
    break;
  }
  if (E)
    return E;
  return G;
}

Expected<std::string> planToDot(const plan::Plan &P, const DrawOptions &O) {
  Expected<std::unique_ptr<viz::Graph>> G = build(P, O);
  if (!G)
    return G.takeError();
  return (*G)->dot();
}

Error renderPlan(const plan::Plan &P, const DrawOptions &O, StringRef Path) {
  std::string Ext = sys::path::extension(Path).lower();
  if (Ext == ".dot" || Ext == ".gv") {
    Expected<std::string> Text = planToDot(P, O);
    if (!Text)
      return Text.takeError();
    std::error_code EC;
    raw_fd_ostream OS(Path, EC, sys::fs::OF_None);
    if (EC)
      return createStringError(EC, "%s: %s", Path.str().c_str(),
                               EC.message().c_str());
    OS << *Text;
    return Error::success();
  }
  if (Ext != ".svg" && Ext != ".png" && Ext != ".pdf")
    return createStringError(inconvertibleErrorCode(),
                             "%s: the format comes from the extension: "
                             ".svg, .png, .pdf, .dot or .gv",
                             Path.str().c_str());
  // Fail on an unwritable path before spending time on the layout.
  {
    std::error_code EC;
    raw_fd_ostream Probe(Path, EC, sys::fs::OF_None);
    if (EC)
      return createStringError(EC, "%s: %s", Path.str().c_str(),
                               EC.message().c_str());
  }
  Expected<std::unique_ptr<viz::Graph>> G = build(P, O);
  if (!G)
    return G.takeError();
  GVC_t *Gvc = gvContext();
  Agraph_t *Root = (*G)->root();
  std::string Format = Ext.substr(1);
  int Failed = gvLayout(Gvc, Root, viz::layoutEngine(O.View));
  if (!Failed) {
    Failed = gvRenderFilename(Gvc, Root, Format.c_str(),
                              Path.str().c_str());
    gvFreeLayout(Gvc, Root);
  }
  int Count = 0;
  std::string Available;
  if (Failed) {
    char **List = gvPluginList(Gvc, "device", &Count, nullptr);
    for (int I = 0; I < Count; ++I) {
      Available += (I ? " " : "") + std::string(List[I]);
      free(List[I]);
    }
    free(List);
  }
  gvFreeContext(Gvc);
  if (Failed)
    return createStringError(
        inconvertibleErrorCode(),
        "%s: Graphviz could not lay out or render this as %s (its device "
        "plugins here: %s); write .dot and render it with dot -T%s",
        Path.str().c_str(), Format.c_str(),
        Available.empty() ? "none" : Available.c_str(), Format.c_str());
  return Error::success();
}

} // namespace dsc
