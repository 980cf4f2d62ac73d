//===- Exposed.h - Where a step's compute stream stood still ----*- C++ -*-===//
//
// A step's time is the compute stream's busy time plus its gaps. Each gap
// ends when the compute instruction after it may start, so it is blamed
// on what that instruction waited for, walking back along what held each
// blocker in turn (its waits and the instruction before it on its stream):
// a stretch covered by a collective is exposed communication, by a copy,
// NVMe I/O or host work exposed offload, and a stretch after a blocker
// ended but before what it held started (the host issuing late) is other.
// What counts as communication or offload is decided by the instruction's
// kind, as the planner decides it (PlanFormat.h), so a reduction on the
// compute stream (no overlap_comm) is communication too, and the two
// splits can be set side by side. Host code, tested without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_EXPOSED_H
#define DSRUN_EXPOSED_H

#include "dsc/PlanFormat.h"

#include <vector>

namespace dsrun {

/// When an instruction started (after its waits) and finished, in ms from
/// the step's start.
struct Span {
  double Start = 0, Finish = 0;
};

struct ExposedTime {
  double ComputeMs = 0;       ///< The compute stream busy computing.
  double CommunicationMs = 0; ///< Collectives on it, or idle held by them.
  double OffloadMs = 0;       ///< Likewise copies, NVMe I/O, host work.
  double OtherMs = 0;         ///< Idle, held by nothing that ran.
};

/// Splits StepMs; Spans has one entry per instruction of P.Program.
ExposedTime exposedTime(const dsc::plan::Plan &P, const std::vector<Span> &Spans,
                        double StepMs);

} // namespace dsrun

#endif
