//===- Timeline.cpp -------------------------------------------------------===//

#include "Timeline.h"

#include "Checks.h"

#include "dsc/PlanFacts.h"

namespace plan = dsc::plan;

namespace dsrun {

namespace {

void CUDART_CB runHostTask(void *Work) {
  (*static_cast<std::function<void()> *>(Work))();
}

} // namespace

void Timeline::create(const plan::Plan &Plan, bool CommFirst) {
  P = &Plan;
  // NCCL's kernels run on SMs. At the highest priority the block
  // scheduler hands them SMs as the GEMMs' blocks retire instead of after
  // every block queued before (--comm-priority normal gives every stream
  // the same priority).
  int Least = 0, Greatest = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&Least, &Greatest));
  for (unsigned K = 0; K < plan::NumStreams; ++K)
    CHECK_CUDA(cudaStreamCreateWithPriority(
        &Streams[K], cudaStreamNonBlocking,
        K == unsigned(plan::Stream::Comm) && CommFirst ? Greatest : Least));

  size_t N = P->Program.size();
  std::vector<bool> WaitedOn(N, false);
  for (const plan::Instruction &In : P->Program)
    for (uint32_t W : In.Waits)
      WaitedOn[W] = true;
  Done.assign(N, nullptr);
  Start.assign(N, nullptr);
  Finish.assign(N, nullptr);
  MeasuredStart.assign(N, nullptr);
  MeasuredFinish.assign(N, nullptr);
  for (uint32_t I = 0; I < N; ++I) {
    // Collectives are marked in lean steps too, so that a step that does
    // not finish can say which one it waits in (firstUnfinished).
    if (WaitedOn[I] || plan::isCommunication(P->Program[I]))
      CHECK_CUDA(cudaEventCreateWithFlags(&Done[I], cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreate(&Start[I]));
    CHECK_CUDA(cudaEventCreate(&Finish[I]));
    if (P->Program[I].Kind == plan::InstrKind::Transfer)
      measure(I);
  }
  for (cudaEvent_t &E : Joins)
    CHECK_CUDA(cudaEventCreateWithFlags(&E, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreate(&StepBegin));
  CHECK_CUDA(cudaEventCreate(&StepEnd));
  CHECK_CUDA(cudaEventCreateWithFlags(&StepFork, cudaEventDisableTiming));
  Tasks.resize(N);
}

void Timeline::measure(uint32_t I) {
  if (MeasuredStart[I])
    return;
  CHECK_CUDA(cudaEventCreate(&MeasuredStart[I]));
  CHECK_CUDA(cudaEventCreate(&MeasuredFinish[I]));
}

void Timeline::mark(cudaEvent_t E, cudaStream_t S) {
  if (Lean && E != StepBegin && E != StepEnd)
    return;
  CHECK_CUDA(cudaEventRecordWithFlags(
      E, S, Capturing ? cudaEventRecordExternal : cudaEventRecordDefault));
}

void Timeline::begin(const Instr &C) {
  // A measured step waits on the timing events themselves, which saves a
  // record per waited-on instruction (lean steps record no timing events
  // and wait on their own).
  for (uint32_t W : C.In.Waits)
    CHECK_CUDA(cudaStreamWaitEvent(C.S, Lean ? Done[W] : Finish[W], 0));
  mark(Start[C.Index], C.S);
}

void Timeline::end(const Instr &C) {
  mark(Finish[C.Index], C.S);
  if (Lean && Done[C.Index])
    CHECK_CUDA(cudaEventRecord(Done[C.Index], C.S));
}

uint32_t Timeline::firstUnfinished() const {
  for (uint32_t I = 0; I < P->Program.size(); ++I) {
    cudaEvent_t E = Lean ? Done[I] : Finish[I];
    if (E && cudaEventQuery(E) == cudaErrorNotReady)
      return I;
  }
  return uint32_t(P->Program.size());
}

void Timeline::fork() {
  cudaStream_t Compute = stream(plan::Stream::Compute);
  CHECK_CUDA(cudaEventRecord(StepFork, Compute));
  for (cudaStream_t S : Streams)
    if (S != Compute)
      CHECK_CUDA(cudaStreamWaitEvent(S, StepFork, 0));
}

void Timeline::join() {
  cudaStream_t Compute = stream(plan::Stream::Compute);
  for (unsigned K = 0; K < plan::NumStreams; ++K)
    if (Streams[K] != Compute) {
      CHECK_CUDA(cudaEventRecord(Joins[K], Streams[K]));
      CHECK_CUDA(cudaStreamWaitEvent(Compute, Joins[K], 0));
    }
}

void Timeline::onHost(const Instr &C, std::function<void()> Work) {
  HostTask &T = Tasks[C.Index];
  T.Work = std::move(Work);
  CHECK_CUDA(cudaLaunchHostFunc(C.S, runHostTask, &T.Work));
}

float Timeline::stepMs() const {
  float Ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&Ms, StepBegin, StepEnd));
  return Ms;
}

float Timeline::sinceStepBegin(cudaEvent_t E) const {
  float Ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&Ms, StepBegin, E));
  return Ms;
}

float Timeline::instructionMs(uint32_t I) const {
  float Ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&Ms, Start[I], Finish[I]));
  return Ms;
}

float Timeline::measuredMs(uint32_t I) const {
  float Ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&Ms, MeasuredStart[I], MeasuredFinish[I]));
  return Ms;
}

} // namespace dsrun
