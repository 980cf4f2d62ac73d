//===- Exposed.h - Where a step's compute stream stood still ----*- C++ -*-===//
//
// A step's time is the compute stream's busy time plus its gaps. Each gap
// ends when the compute instruction after it may start, so it is blamed
// on what that instruction waited for, walking back along what held each
// blocker in turn (its waits and the instruction before it on its stream):
// a stretch covered by a collective is exposed communication, by a copy,
// NVMe I/O or host work exposed offload. The planner splits its estimate
// the same way (exposed_comm_ns, exposed_offload_ns), so the two can be
// set side by side. Host code, tested without a GPU.
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
  double ComputeMs = 0;       ///< The compute stream busy.
  double CommunicationMs = 0; ///< Idle, held by collectives.
  double OffloadMs = 0;       ///< Idle, held by copies, NVMe I/O, host work.
  double OtherMs = 0;         ///< Idle with nothing else running.
};

/// Splits StepMs; Spans has one entry per instruction of P.Program.
ExposedTime exposedTime(const dsc::plan::Plan &P, const std::vector<Span> &Spans,
                        double StepMs);

} // namespace dsrun

#endif
