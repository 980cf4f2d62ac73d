//===- SharedGpu.cpp - Compute and collectives slowing each other ---------===//
//
// NCCL's kernels take SMs and memory bandwidth from the compute that runs
// beside them, and the compute slows the collectives in turn. After the
// schedule, the step is replayed once; every overlap of a compute
// instruction with a collective lengthens both by the time table's
// sharing figures (TimeTables.h).
//
//===----------------------------------------------------------------------===//

#include "dsc/Plan/Planner.h"
#include "dsc/PlanFacts.h"

namespace dsc {

/// How long each instruction of Mine overlaps those of Others in the
/// replay; each list is one stream's, so in order and disjoint.
static std::vector<uint64_t>
overlapWith(const std::vector<plan::PlannedSpan> &Spans,
            const std::vector<uint32_t> &Mine,
            const std::vector<uint32_t> &Others) {
  std::vector<uint64_t> Overlap(Mine.size(), 0);
  size_t J = 0;
  for (size_t I = 0; I < Mine.size(); ++I) {
    const plan::PlannedSpan &A = Spans[Mine[I]];
    while (J < Others.size() && Spans[Others[J]].Finish <= A.Start)
      ++J;
    for (size_t K = J; K < Others.size() && Spans[Others[K]].Start < A.Finish;
         ++K) {
      const plan::PlannedSpan &B = Spans[Others[K]];
      Overlap[I] += std::min(A.Finish, B.Finish) - std::max(A.Start, B.Start);
    }
  }
  return Overlap;
}

/// NCCL's kernels and the compute beside them share the SMs and the
/// memory: where the replay overlaps them, both take longer, by the
/// table's sharing figures. One pass over the first replay's overlaps:
/// the longer instructions move the ones after them, not the overlaps.
void chargeSharedGpu(plan::Plan &P, const SharedGpu &Sharing) {
  if (!Sharing.Compute && !Sharing.Collectives)
    return;
  std::vector<plan::PlannedSpan> Spans = plan::replaySpans(P);
  std::vector<uint32_t> Compute, Comm;
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    const plan::Instruction &In = P.Program[I];
    if (In.On == plan::Stream::Compute && !plan::isCommunication(In) &&
        In.Nanos)
      Compute.push_back(I);
    else if (In.On == plan::Stream::Comm && plan::isCommunication(In) &&
             In.Nanos)
      Comm.push_back(I);
  }
  std::vector<uint64_t> Slowed = overlapWith(Spans, Compute, Comm);
  std::vector<uint64_t> Crowded = overlapWith(Spans, Comm, Compute);
  for (size_t I = 0; I < Compute.size(); ++I)
    P.Program[Compute[I]].Nanos +=
        uint64_t(Sharing.Compute * double(Slowed[I]));
  for (size_t I = 0; I < Comm.size(); ++I)
    P.Program[Comm[I]].Nanos +=
        uint64_t(Sharing.Collectives * double(Crowded[I]));
}

} // namespace dsc
