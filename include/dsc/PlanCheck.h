//===- PlanCheck.h - The plan's verifier ------------------------*- C++ -*-===//
//
// checkPlan proves that every index in a plan points where it should, so
// that a reader can follow them without bounds checks: the schedule's
// instructions, buffers inside their arenas, and in the compute program
// every kernel's operands inside their values, every value read only
// after a kernel (or the runtime) has written it, every view inside its
// buffer, and every reuse of arena memory ordered after the last use of
// what was there before. dsc checks each plan it
// writes or reads; dsrun checks each plan before touching a GPU.
// Dependency-free: lib/PlanFormat/PlanCheck.cpp is built into both.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLANCHECK_H
#define DSC_PLANCHECK_H

#include "dsc/PlanFormat.h"

namespace dsc::plan {

/// How far the planner has come: what a plan holds after lowering and
/// after each pass, in the order the planner runs them (planPasses() in
/// lib/Plan/Planner.cpp). A plan written to a file is Complete; the pass
/// driver (dsc opt) checks a partial plan as far as it has come.
enum class PlanStage {
  Lowered,
  Partitioned,
  Bucketed,
  Prefetched,
  Offloaded,
  Scheduled,
  MemoryPlanned,
  Placed,
  Complete,
};

/// "" when the plan is consistent, else what is wrong. A partial plan
/// (Stage before Complete) is checked in what the passes up to Stage fill.
std::string checkPlan(const Plan &P, PlanStage Stage = PlanStage::Complete);

/// The memory part of checkPlan (lib/PlanFormat/PlacementCheck.cpp): every
/// view inside its buffer for every rank, the placement's views of the
/// sizes the runtime reads through them.
std::string checkPlacement(const Plan &P);

/// Checks that memory the arena reuses is never written before its last
/// reader has finished: for every two buffers of rank class Class that
/// share bytes, the first instruction of the later one happens after the
/// last instruction of the earlier one (by stream order and waits).
std::string checkMemoryOrdering(const Plan &P, size_t Class);

} // namespace dsc::plan

#endif
