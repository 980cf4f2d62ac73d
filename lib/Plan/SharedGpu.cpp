//===- SharedGpu.cpp - Compute and collectives slowing each other ---------===//
//
// NCCL's kernels take SMs from the compute that runs beside them, and
// wait for SMs the compute holds. After the schedule, the step is
// replayed once; every collective that starts while a compute instruction
// runs lengthens both by the time table's sharing figures (TimeTables.h),
// but all-gathers on the copy engines (NCCL's zero-CTA policy).
//
//===----------------------------------------------------------------------===//

#include "dsc/Plan/Planner.h"
#include "dsc/PlanFacts.h"

#include <algorithm>

namespace dsc {

/// The longest kernel of a forward or backward instruction; an
/// instruction without kernels counts as one kernel.
static uint64_t longestKernel(const plan::Plan &P, const plan::Instruction &In,
                              uint64_t Length) {
  plan::Interval K = plan::kernelsOf(P, In);
  uint64_t Longest = 0;
  for (uint32_t I = K.Begin; I < K.End && I < P.Kernels.size(); ++I)
    Longest = std::max(Longest, P.Kernels[I].PlannedNanos);
  return Longest ? Longest : Length;
}

/// One pass over the first replay: the longer instructions move the ones
/// after them, not which collective starts beside which instruction.
/// GPT-2 XL's stage-3 steps on 2 H200s (micro batches 1 to 16) measured
/// the rule: each 16 MiB gather beside compute took about as long as the
/// product it started beside (76, 129 and 363 us beside products of 59,
/// 126 and 402 us; 73 us alone), and the compute lost 18-36 us a gather.
/// Only the first collective to start beside a compute instruction waits
/// for its SMs: those queued behind it on its stream start once it has
/// run. (hpZ's 87 gathers within a group, on the Llama 1B shape over 2
/// simulated nodes, took 16-21 ms a step where a wait apiece came to
/// 376 ms.)
void chargeSharedGpu(plan::Plan &P, const SharedGpu &Sharing) {
  if (!Sharing.charged())
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
  std::vector<uint64_t> Slowed(P.Program.size(), 0);
  std::vector<bool> Waited(P.Program.size(), false);
  for (uint32_t C : Comm) {
    if (plan::gathersOnCopyEngines(P.Settings, P.Program[C]))
      continue; // No SMs taken, none waited for.
    const plan::PlannedSpan &Mine = Spans[C];
    // The compute instruction running when the collective starts: the
    // last to start no later than it, if it has not finished.
    auto After = std::upper_bound(
        Compute.begin(), Compute.end(), Mine.Start,
        [&](uint64_t T, uint32_t I) { return T < Spans[I].Start; });
    if (After == Compute.begin())
      continue;
    uint32_t Running = *std::prev(After);
    const plan::PlannedSpan &Beside = Spans[Running];
    if (Beside.Finish <= Mine.Start)
      continue;
    uint64_t &Nanos = P.Program[C].Nanos;
    Slowed[Running] += uint64_t(Sharing.Compute * double(Nanos)) +
                       Sharing.CallNanos;
    if (Sharing.Wait && !Waited[Running])
      Nanos = std::max(Nanos, longestKernel(P, P.Program[Running],
                                            Beside.Finish - Beside.Start));
    Waited[Running] = true;
  }
  for (uint32_t I : Compute)
    P.Program[I].Nanos += Slowed[I];
}

} // namespace dsc
