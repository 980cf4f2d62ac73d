//===- Views.h - The plan views and what they share ---------*- C++ -*-===//

#ifndef DSC_LIB_VIZ_VIEWS_H
#define DSC_LIB_VIZ_VIEWS_H

#include "Graph.h"

#include "dsc/Viz/Draw.h"

#include <vector>

namespace dsc::viz {

/// Which layer each op, module and tensor belongs to, and how layers fold:
/// the first and the last layer are drawn, the ones between collapse into
/// one stand-in (Middle) unless expanded.
struct Layers {
  static constexpr uint32_t None = plan::NoIndex;
  static constexpr uint32_t Middle = plan::NoIndex - 1;

  Layers(const plan::Plan &P, bool Expand);
  uint32_t Count = 0;
  std::vector<uint32_t> OfModule;
  /// The layer to draw for layer L: L itself, or Middle.
  uint32_t shown(uint32_t L) const;
  std::string name(uint32_t Shown) const;

private:
  bool Fold = false;
};

/// Fill colour of a memory category (one palette for every view).
const char *categoryColor(plan::Category C);

/// The rank class of Rank, or an error naming the valid ranks.
llvm::Expected<size_t> rankClassOf(const plan::Plan &P, uint32_t Rank);

llvm::Error drawPartitions(Graph &G, const plan::Plan &P,
                           const DrawOptions &O);
llvm::Error drawSchedule(Graph &G, const plan::Plan &P, const DrawOptions &O);
llvm::Error drawMemory(Graph &G, const plan::Plan &P, const DrawOptions &O);
llvm::Error drawModel(Graph &G, const plan::Plan &P, const DrawOptions &O);
llvm::Error drawCompute(Graph &G, const plan::Plan &P, const DrawOptions &O);

/// The layout engine each view needs.
const char *layoutEngine(PlanView V);

} // namespace dsc::viz

#endif
