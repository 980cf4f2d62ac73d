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

namespace plan = dsc::plan;

namespace dsrun {

std::vector<float> Executor::collectiveTimes() {
  size_t N = P.Program.size();
  std::vector<float> Ms(N, 0);
  for (uint32_t I = 0; I < N; ++I)
    if (!Calls[I].empty())
      CHECK_CUDA(
          cudaEventElapsedTime(&Ms[I], MeasuredStart[I], MeasuredFinish[I]));
  RankAgreement Agreement(Ms);
  if (TimesTravel) {
    // Through the scratch buffer the plan keeps for the runtime.
    void *Scratch = at(L.buffer("scratch"));
    cudaStream_t S = stream(plan::Stream::Comm);
    const char *Failed = Agreement.issue(Scratch, Comm, S);
    if (Failed)
      fatalError(std::string(Failed) + " failed while agreeing on the "
                 "collectives' times");
    CHECK_CUDA(cudaEventRecord(StepEnd, S));
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
  StepTiming T;
  float Ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&Ms, StepBegin, StepEnd));
  T.StepMs = Ms;
  std::vector<float> Collective = collectiveTimes();
  std::vector<Span> Spans(P.Program.size());
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    float Begin = 0, End = 0;
    CHECK_CUDA(cudaEventElapsedTime(&Begin, StepBegin, Start[I]));
    CHECK_CUDA(cudaEventElapsedTime(&End, StepBegin, Finish[I]));
    Spans[I] = {Begin, End};
  }
  T.Split = exposedTime(P, Spans, T.StepMs);
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    const plan::Instruction &In = P.Program[I];
    CHECK_CUDA(cudaEventElapsedTime(&Ms, Start[I], Finish[I]));
    if (In.On == plan::Stream::Host)
      T.HostMs += Ms;
    T.ConvertElems += double(ConvertElems[I]);
    T.ConvertMs += double(ConvertNanos[I]) / 1e6;
    if (In.On == plan::Stream::Host &&
        In.Kind == plan::InstrKind::OptimizerStep) {
      auto [Lo, Hi] = L.SubGroupRange[In.Arg];
      T.HostAdamElems += double(Hi - Lo);
      T.HostAdamMs += double(HostAdamNanos[I]) / 1e6;
    }
    if (!Calls[I].empty()) {
      addGroup(T.Collectives, Calls[I], Collective[I], L.World);
    } else if (In.Kind == plan::InstrKind::Transfer &&
               (P.Transfers[In.Arg].Kind == plan::TransferKind::NVMeRead ||
                P.Transfers[In.Arg].Kind == plan::TransferKind::NVMeWrite)) {
      bool Read = P.Transfers[In.Arg].Kind == plan::TransferKind::NVMeRead;
      (Read ? T.NvmeReadBytes : T.NvmeWriteBytes) += double(IoBytes[I]);
      (Read ? T.NvmeReadMs : T.NvmeWriteMs) += double(IoNanos[I]) / 1e6;
    } else if (In.Kind == plan::InstrKind::Transfer && CopiesIssued[I]) {
      const plan::Transfer &X = P.Transfers[In.Arg];
      CHECK_CUDA(cudaEventElapsedTime(&Ms, MeasuredStart[I], MeasuredFinish[I]));
      bool In = X.Kind == plan::TransferKind::HostToDevice;
      (In ? T.CopyInBytes : T.CopyOutBytes) += CopiesIssued[I];
      (In ? T.CopyInMs : T.CopyOutMs) += Ms;
    }
  }
  return T;
}

} // namespace dsrun
