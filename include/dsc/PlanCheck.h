//===- PlanCheck.h - The plan's verifier ------------------------*- C++ -*-===//
//
// checkPlan proves that every index in a plan points where it should, so
// that a reader can follow them without bounds checks: the schedule's
// instructions, buffers inside their arenas, and in the compute program
// every kernel's operands inside their values, every value read only
// after a kernel (or the runtime) has written it. dsc checks each plan it
// writes or reads; dsrun checks each plan before touching a GPU.
// Dependency-free: lib/PlanFormat/PlanCheck.cpp is built into both.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLANCHECK_H
#define DSC_PLANCHECK_H

#include "dsc/PlanFormat.h"

namespace dsc::plan {

/// "" when the plan is consistent, else what is wrong.
std::string checkPlan(const Plan &P);

} // namespace dsc::plan

#endif
