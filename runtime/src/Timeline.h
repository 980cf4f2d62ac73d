//===- Timeline.h - Streams, events and host work of a step -----*- C++ -*-===//
//
// One CUDA stream per plan::Stream (compute, communication, copy in, copy
// out, and a host stream whose work runs as host callbacks). Instructions
// on a stream run in program order; across streams the plan's waits are
// events: in a measured step every instruction is bracketed by timing
// events and a wait is on the waited-for instruction's end, in a lean
// step only the instructions someone waits for record an event.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_TIMELINE_H
#define DSRUN_TIMELINE_H

#include "dsc/PlanFormat.h"

#include <cuda_runtime.h>

#include <functional>
#include <vector>

namespace dsrun {

/// The instruction being issued: which one, on which stream, in which
/// step. Every instruction handler gets it; nothing else says which
/// instruction runs.
struct Instr {
  uint32_t Index;
  const dsc::plan::Instruction &In;
  cudaStream_t S;
  uint32_t Step;
};

class Timeline {
public:
  Timeline() = default;
  Timeline(const Timeline &) = delete;
  Timeline &operator=(const Timeline &) = delete;

  /// Creates the streams (the communication stream at the highest
  /// priority when CommFirst) and the program's events.
  void create(const dsc::plan::Plan &P, bool CommFirst);

  cudaStream_t stream(dsc::plan::Stream S) const {
    return Streams[unsigned(S)];
  }
  /// The context of instruction I of step Step.
  Instr instr(uint32_t I, uint32_t Step) const {
    return {I, P->Program[I], stream(P->Program[I].On), Step};
  }

  /// Waits for what the instruction waits for, and marks its start; then
  /// its end (and, in a lean step, the event others wait on).
  void begin(const Instr &C);
  void end(const Instr &C);
  /// Brackets the part of an instruction whose rate is reported (a
  /// transfer's copies, a collective's NCCL group).
  void measureBegin(const Instr &C) { mark(MeasuredStart[C.Index], C.S); }
  void measureEnd(const Instr &C) { mark(MeasuredFinish[C.Index], C.S); }
  bool measured(uint32_t I) const { return MeasuredStart[I] != nullptr; }
  /// Adds a measured bracket to instructions that have none (transfers
  /// and collectives have theirs from create()).
  void measure(uint32_t I);

  /// Every other stream waits for the compute stream's work so far; then,
  /// after the instructions, the compute stream waits for every other.
  void fork();
  void join();
  void markStepBegin() { mark(StepBegin, stream(dsc::plan::Stream::Compute)); }
  void markStepEnd(cudaStream_t S) { mark(StepEnd, S); }
  /// Whether the step (StepEnd) has finished: cudaSuccess,
  /// cudaErrorNotReady, or the error that stopped it.
  cudaError_t stepStatus() const { return cudaEventQuery(StepEnd); }

  /// The first instruction of the program, in program order, whose
  /// recorded end the GPU has not reached (in a lean step only those
  /// others wait on and the collectives are recorded); the program's
  /// size when none. Where a
  /// step that does not finish is waiting.
  uint32_t firstUnfinished() const;

  /// Runs Work on the instruction's stream as a host callback, after what
  /// the stream has queued: an instruction's one piece of host work.
  void onHost(const Instr &C, std::function<void()> Work);

  /// Milliseconds: the step; an instruction's start and end from the
  /// step's start; its measured bracket.
  float stepMs() const;
  float sinceStepBegin(cudaEvent_t E) const;
  float startMs(uint32_t I) const { return sinceStepBegin(Start[I]); }
  float endMs(uint32_t I) const { return sinceStepBegin(Finish[I]); }
  float instructionMs(uint32_t I) const;
  float measuredMs(uint32_t I) const;

  /// Lean steps record no timing events but the step's own two; while a
  /// step is being captured (a CUDA graph), events are recorded as
  /// external ones so that every launch of the graph records them.
  bool Lean = false, Capturing = false;

private:
  void mark(cudaEvent_t E, cudaStream_t S);

  const dsc::plan::Plan *P = nullptr;
  cudaStream_t Streams[dsc::plan::NumStreams] = {};
  /// Per instruction: waited on in lean steps (only where someone waits,
  /// and every collective);
  /// timing; the measured part.
  std::vector<cudaEvent_t> Done, Start, Finish, MeasuredStart, MeasuredFinish;
  cudaEvent_t StepBegin = nullptr, StepEnd = nullptr, StepFork = nullptr;
  cudaEvent_t Joins[dsc::plan::NumStreams] = {};
  struct HostTask {
    std::function<void()> Work;
  };
  std::vector<HostTask> Tasks;
};

} // namespace dsrun

#endif
