//===- Draw.h - Pictures of a plan, with Graphviz ---------------*- C++ -*-===//
//
// Five views of a plan, built with Graphviz's cgraph and laid out and
// rendered in-process by gvc:
//   partitions  which rank owns which elements, padding, persistence
//   schedule    one lane per stream, the step in order, the waits
//   memory      bytes over the step by category, the peak, the limit
//   model       modules and the stage-3 fetch units
//   compute     the training program's kernels and the values between
// Repeated layers fold into one ("layers 1-78, like layer 0") unless
// Expand is set, so a 70B-class plan stays readable.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_VIZ_DRAW_H
#define DSC_VIZ_DRAW_H

#include "dsc/PlanFormat.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace dsc {

enum class PlanView { Partitions, Schedule, Memory, Model, Compute };

struct DrawOptions {
  PlanView View = PlanView::Schedule;
  /// Draw the rank class of this rank (partitions, memory); all when unset.
  std::optional<uint32_t> Rank;
  bool Expand = false;
};

/// The view as DOT text (no layout).
llvm::Expected<std::string> planToDot(const plan::Plan &P,
                                      const DrawOptions &Options);

/// Lays the view out and writes it to Path in the format its extension
/// names: .svg, .png, .pdf, or .dot / .gv for DOT text.
llvm::Error renderPlan(const plan::Plan &P, const DrawOptions &Options,
                       llvm::StringRef Path);

} // namespace dsc

#endif
