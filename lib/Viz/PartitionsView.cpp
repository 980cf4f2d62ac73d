//===- PartitionsView.cpp - Who owns which elements -----------------------===//

#include "Views.h"

#include "dsc/Plan/Report.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace dsc::viz {

namespace {

/// The ranks to draw: the one asked for, or all of them up to 16, else
/// the first and last four.
std::vector<uint32_t> ranksToDraw(const plan::Plan &P,
                                  const DrawOptions &O) {
  uint32_t W = P.Settings.WorldSize;
  if (O.Rank)
    return {*O.Rank};
  std::vector<uint32_t> Ranks;
  for (uint32_t R = 0; R < W; ++R)
    if (W <= 16 || R < 4 || R + 4 >= W)
      Ranks.push_back(R);
  return Ranks;
}

std::string row(StringRef Name, StringRef Range, StringRef Color) {
  return formatv("<TR><TD ALIGN=\"LEFT\" BGCOLOR=\"{2}\">{0}</TD>"
                 "<TD ALIGN=\"RIGHT\">{1}</TD></TR>",
                 html(Name), html(Range), Color)
      .str();
}

void flat(Graph &G, const plan::Plan &P, const DrawOptions &O) {
  const plan::Partition &L = P.Layout;
  Layers Lay(P, O.Expand);
  std::vector<uint32_t> Ranks = ranksToDraw(P, O);
  Agnode_t *Previous = nullptr;
  for (size_t I = 0; I < Ranks.size(); ++I) {
    uint32_t R = Ranks[I];
    if (I && Ranks[I - 1] + 1 != R) {
      Agnode_t *Gap = G.node(G.root(), formatv("gap{0}", R).str());
      G.set(Gap, "label", formatv("ranks {0}-{1}", Ranks[I - 1] + 1, R - 1)
                              .str());
      G.set(Gap, "shape", "plaintext");
      if (Previous)
        G.set(G.edge(Previous, Gap), "style", "invis");
      Previous = Gap;
    }
    uint64_t Begin = uint64_t(R) * L.PartitionElems,
             End = Begin + L.PartitionElems;
    std::string Table = formatv("<TABLE BORDER=\"0\" CELLBORDER=\"1\" "
                                "CELLSPACING=\"0\"><TR><TD COLSPAN=\"2\" "
                                "BGCOLOR=\"#eeeeee\"><B>rank {0}</B>: "
                                "elements [{1}, {2}) of {3}</TD></TR>",
                                R, Begin, End, L.PaddedElems)
                            .str();
    unsigned Folded = 0;
    for (uint32_t T : L.Order) {
      const plan::Tensor &Tensor = P.Tensors[T];
      uint64_t TB = Tensor.FlatOffset, TE = TB + Tensor.Elems;
      if (TE <= Begin || TB >= End)
        continue;
      uint32_t Layer = Tensor.Module == plan::NoIndex
                           ? Layers::None
                           : Lay.OfModule[Tensor.Module];
      if (Lay.shown(Layer) == Layers::Middle) {
        ++Folded;
        continue;
      }
      bool Whole = TB >= Begin && TE <= End;
      Table += row(Tensor.Name,
                   Whole ? formatv("all {0}", Tensor.Elems).str()
                         : formatv("[{0}, {1}) of {2}",
                                   std::max(TB, Begin) - TB,
                                   std::min(TE, End) - TB, Tensor.Elems)
                               .str(),
                   Whole ? "#c6dbef" : "#fdd0a2");
    }
    if (Folded)
      Table += row(formatv("{0} tensors of {1}", Folded,
                           Lay.name(Layers::Middle))
                       .str(),
                   "", "#ffffff");
    if (End > L.FlatElems)
      Table += row("padding", formatv("{0}", End - std::max(Begin, L.FlatElems))
                                  .str(),
                   "#dddddd");
    Table += "</TABLE>";
    Agnode_t *N = G.node(G.root(), formatv("rank{0}", R).str());
    G.set(N, "shape", "plaintext");
    G.setHtmlLabel(N, Table);
    if (Previous)
      G.set(G.edge(Previous, N), "style", "invis");
    Previous = N;
  }
  G.set(G.root(), "label",
        formatv("ZeRO stage {0}: {1} trainable elements flattened in "
                "first-use order, padded to {2} (alignment {3}), {4} per "
                "rank; orange: a parameter split across ranks",
                P.Settings.ZeroStage, L.FlatElems, L.PaddedElems,
                L.AlignmentElems, L.PartitionElems)
            .str());
}

void perParameter(Graph &G, const plan::Plan &P, const DrawOptions &O) {
  uint32_t W = P.Settings.WorldSize;
  Layers Lay(P, O.Expand);
  std::string Table =
      "<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\"><TR>"
      "<TD BGCOLOR=\"#eeeeee\"><B>parameter</B></TD>"
      "<TD BGCOLOR=\"#eeeeee\"><B>elements</B></TD>"
      "<TD BGCOLOR=\"#eeeeee\"><B>per rank</B></TD>"
      "<TD BGCOLOR=\"#eeeeee\"><B>padding</B></TD></TR>";
  unsigned Folded = 0;
  uint64_t FoldedElems = 0;
  for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
    const plan::Tensor &Tensor = P.Tensors[T];
    uint32_t Layer = Tensor.Module == plan::NoIndex
                         ? Layers::None
                         : Lay.OfModule[Tensor.Module];
    if (Lay.shown(Layer) == Layers::Middle) {
      ++Folded;
      FoldedElems += Tensor.Elems;
      continue;
    }
    const char *Color = Tensor.Persistent ? "#dddddd"
                        : Tensor.Role == plan::TensorRole::Frozen
                            ? "#f0f0f0"
                            : "#c6dbef";
    Table += formatv("<TR><TD ALIGN=\"LEFT\" BGCOLOR=\"{4}\">{0}</TD>"
                     "<TD ALIGN=\"RIGHT\">{1}</TD><TD ALIGN=\"RIGHT\">{2}"
                     "</TD><TD ALIGN=\"RIGHT\">{3}</TD></TR>",
                     html(Tensor.Name), Tensor.Elems,
                     Tensor.Persistent ? std::string("whole (persistent)")
                                       : std::to_string(Tensor.ShardElems),
                     Tensor.ShardElems * W - Tensor.Elems, Color)
                 .str();
  }
  if (Folded)
    Table += formatv("<TR><TD ALIGN=\"LEFT\">{0} parameters of {1}</TD>"
                     "<TD ALIGN=\"RIGHT\">{2}</TD><TD></TD><TD></TD></TR>",
                     Folded, html(Lay.name(Layers::Middle)), FoldedElems)
                 .str();
  Table += "</TABLE>";
  Agnode_t *N = G.node(G.root(), "parameters");
  G.set(N, "shape", "plaintext");
  G.setHtmlLabel(N, Table);
  G.set(G.root(), "label",
        formatv("ZeRO stage 3 over {0} ranks: rank r owns elements "
                "[r x per-rank, (r+1) x per-rank) of every parameter, "
                "padding on the last ranks; grey: kept whole on every rank "
                "(persistence threshold {1}); {2} elements per rank in {3} "
                "optimizer sub-group(s)",
                W, P.Settings.ParamPersistenceThreshold,
                P.Layout.PartitionElems, P.Layout.SubGroups.size())
            .str());
}

} // namespace

Error drawPartitions(Graph &G, const plan::Plan &P, const DrawOptions &O) {
  if (O.Rank)
    if (Expected<size_t> C = rankClassOf(P, *O.Rank); !C)
      return C.takeError();
  G.set(G.root(), "rankdir", "LR");
  G.set(G.root(), "fontname", "Helvetica");
  G.set(G.root(), "labelloc", "t");
  if (P.Settings.ZeroStage == 0) {
    Agnode_t *N = G.node(G.root(), "all");
    G.set(N, "shape", "box");
    G.set(N, "label",
          formatv("ZeRO stage 0: each of the {0} ranks holds all {1} "
                  "trainable elements, their gradients and optimizer "
                  "states",
                  P.Settings.WorldSize, P.Layout.FlatElems)
              .str());
    return Error::success();
  }
  if (P.Settings.ZeroStage == 3)
    perParameter(G, P, O);
  else
    flat(G, P, O);
  return Error::success();
}

} // namespace dsc::viz
