//===- Measure.cpp - What a step took, agreed among the ranks -------------===//
//
// Each instruction is timed by events on its stream; a collective by the
// events around its NCCL group alone, a transfer by those around its
// copies, NVMe I/O inside its host function. Collective durations are then
// agreed among the ranks (Agreement.h), so that waiting for a peer does
// not pass for transfer time.
//
//===----------------------------------------------------------------------===//

#include "Agreement.h"
#include "Executor.h"
#include "dsc/PlanFacts.h"

namespace plan = dsc::plan;

namespace dsrun {

std::vector<float> Executor::collectiveTimes() {
  size_t N = P.Program.size();
  std::vector<float> Ms(N, 0);
  for (uint32_t I = 0; I < N; ++I)
    if (!Calls[I].empty())
      Ms[I] = Timing.measuredMs(I);
  RankAgreement Agreement(Ms);
  if (TimesTravel) {
    // Through the scratch buffer the plan keeps for the runtime.
    void *Scratch = Buffers.at(P.Places.Runtime.Scratch);
    cudaStream_t S = Timing.stream(plan::Stream::Comm);
    const char *Failed = Agreement.issue(Scratch, Comm, S);
    if (Failed)
      fatalError(std::string(Failed) + " failed while agreeing on the "
                 "collectives' times");
    Timing.markStepEnd(S);
    waitForStep(); // Polls, so that a dead peer cannot hang us here.
    if ((Failed = Agreement.collect(Scratch)))
      fatalError(std::string(Failed) + " failed while agreeing on the "
                 "collectives' times");
  }
  for (uint32_t I = 0; I < N; ++I)
    if (!Calls[I].empty())
      Ms[I] = Agreement.agreed(
          I, Calls[I][0].Kind == CollectiveKind::Reduce);
  return Ms;
}

StepTiming Executor::measureStep() {
  StepTiming Took;
  Took.StepMs = Timing.stepMs();
  std::vector<float> Collective = collectiveTimes();
  std::vector<Span> Spans(P.Program.size());
  for (uint32_t I = 0; I < P.Program.size(); ++I)
    Spans[I] = {Timing.startMs(I), Timing.endMs(I)};
  Took.Split = exposedTime(P, Spans, Took.StepMs);
  LastSpans = Spans;
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    const plan::Instruction &In = P.Program[I];
    if (In.On == plan::Stream::Host)
      Took.HostMs += Timing.instructionMs(I);
    Took.ConvertElems += double(Counts.ConvertElems[I]);
    Took.ConvertMs += double(Counts.ConvertNanos[I]) / 1e6;
    // A step fp16 skipped (its gradients overflowed) updated nothing: its
    // optimizer's time says nothing of the optimizer's rate.
    bool Updated = In.Kind == plan::InstrKind::OptimizerStep &&
                   !HostStep->Overflow;
    if (Updated && In.On == plan::Stream::Host) {
      Took.HostAdamElems += double(P.Layout.SubGroups[In.Arg].Elems);
      Took.HostAdamMs += double(Counts.HostAdamNanos[I]) / 1e6;
    }
    if (Updated && In.On == plan::Stream::Compute && Stage < 3) {
      Took.DeviceAdamBytes += double(P.Layout.SubGroups[In.Arg].Elems) *
                              double(plan::deviceAdamBytesPerElem(P.Settings));
      Took.DeviceAdamMs += Timing.instructionMs(I);
    }
    if (!Calls[I].empty()) {
      addGroup(Took.Collectives, Calls[I], Collective[I], World);
    } else if (In.Kind == plan::InstrKind::Transfer &&
               (P.Transfers[In.Arg].Kind == plan::TransferKind::NVMeRead ||
                P.Transfers[In.Arg].Kind == plan::TransferKind::NVMeWrite)) {
      bool Read = P.Transfers[In.Arg].Kind == plan::TransferKind::NVMeRead;
      (Read ? Took.NvmeReadBytes : Took.NvmeWriteBytes) +=
          double(Counts.IoBytes[I]);
      (Read ? Took.NvmeReadMs : Took.NvmeWriteMs) +=
          double(Counts.IoNanos[I]) / 1e6;
    } else if (In.Kind == plan::InstrKind::Transfer && Counts.CopiedBytes[I]) {
      const plan::Transfer &X = P.Transfers[In.Arg];
      bool ToDevice = X.Kind == plan::TransferKind::HostToDevice;
      (ToDevice ? Took.CopyInBytes : Took.CopyOutBytes) +=
          double(Counts.CopiedBytes[I]);
      (ToDevice ? Took.CopyInMs : Took.CopyOutMs) += Timing.measuredMs(I);
    }
  }
  return Took;
}

} // namespace dsrun
