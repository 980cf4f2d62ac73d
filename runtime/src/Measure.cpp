//===- Measure.cpp - What a step took, agreed among the ranks -------------===//
//
// Each instruction is timed by events on its stream; a collective by the
// events around its NCCL group alone, a transfer by those around its
// copies, NVMe I/O inside its host function. Collective durations are then
// agreed among the ranks, so that waiting for a peer does not pass for
// transfer time.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

namespace plan = dsc::plan;

namespace dsrun {

std::vector<float> Executor::collectiveTimes() {
  // A symmetric collective (all-reduce, reduce-scatter, all-gather) ends
  // on every rank at once, after the last one joined: the smallest
  // duration among the ranks is the transfer, the rest of the others' is
  // waiting for a peer. A reduce ends on the root after its senders, so
  // for reduces the largest duration is taken (which may still include
  // waiting: an upper bound). Nothing exact exists for them: a sender can
  // push a whole bucket into NCCL's buffers at the root before the root
  // joins, so even on aligned GPU clocks the span from the last rank's
  // start to the last end came out above raw NCCL (up to 144 %). Both
  // travel in one min-reduction of (d, -d), through the workspace, which
  // is free between steps.
  size_t N = P.Program.size();
  std::vector<float> Ms(2 * N, 0);
  for (uint32_t I = 0; I < N; ++I)
    if (!Calls[I].empty()) {
      CHECK_CUDA(
          cudaEventElapsedTime(&Ms[I], MeasuredStart[I], MeasuredFinish[I]));
      Ms[N + I] = -Ms[I];
    }
  if (TimesTravel) {
    BufferView Work = L.buffer("workspace");
    cudaStream_t S = stream(plan::Stream::Comm);
    CHECK_CUDA(cudaMemcpyAsync(at(Work), Ms.data(), Ms.size() * sizeof(float),
                               cudaMemcpyHostToDevice, S));
    CHECK_NCCL(ncclAllReduce(at(Work), at(Work), Ms.size(), ncclFloat32,
                             ncclMin, Comm, S));
    CHECK_CUDA(cudaMemcpyAsync(Ms.data(), at(Work), Ms.size() * sizeof(float),
                               cudaMemcpyDeviceToHost, S));
    CHECK_CUDA(cudaEventRecord(StepEnd, S));
    waitForStep(); // Polls, so that a dead peer cannot hang us here.
  }
  for (uint32_t I = 0; I < N; ++I)
    if (!Calls[I].empty() && Calls[I][0].Kind == CollectiveKind::Reduce)
      Ms[I] = -Ms[N + I];
  Ms.resize(N);
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
    if (In.On == plan::Stream::Host &&
        In.Kind == plan::InstrKind::OptimizerStep) {
      auto [Lo, Hi] = L.SubGroupRange[In.Arg];
      T.HostAdamElems += double(Hi - Lo);
      T.HostAdamMs += Ms;
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
