//===- ModelProgram.h - The plan's kernels, ready to launch -----*- C++ -*-===//
//
// The compute program with every operand resolved to its device address
// once, at start-up: a step launches ranges of kernels (an op's forward or
// backward) with nothing left to look up.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_MODELPROGRAM_H
#define DSRUN_MODELPROGRAM_H

#include "ComputeKernels.h"

#include <string>
#include <vector>

namespace dsrun {

class ModelProgram {
public:
  /// Resolves the operands of every kernel from each value's address.
  /// Returns "" or why a kernel cannot run (a workspace too small, a value
  /// with no place on the device).
  std::string resolve(const dsc::plan::Plan &P,
                      const std::vector<char *> &ValueAddress,
                      void *Workspace, uint64_t WorkspaceBytes,
                      cublasHandle_t Cublas, Matmuls *Products);

  /// Launches kernels [Begin, End) on S with dropout seed Seed (Inference:
  /// without dropout); returns "" or the first kernel's reason it could
  /// not run.
  std::string run(uint32_t Begin, uint32_t End, uint64_t Seed, cudaStream_t S,
                  bool Inference = false);
  /// Kernels sum in a fixed order (KernelContext::Deterministic).
  void setDeterministic(bool On) { Context.Deterministic = On; }

  /// fp16: the device float the loss gradient is multiplied by.
  void setLossScale(const float *DeviceScale) { Context.LossScale = DeviceScale; }

  /// While on, every launch is timed between two events (which costs the
  /// step a little: profile one step, not every step).
  void setProfiling(bool On) { Profiling = On; }
  /// While profiling, times the GPU work an instruction issues on S after
  /// its kernels (the gradient hooks' copies), as part of that
  /// instruction: the report counts it apart, not as idle time.
  void beginHooks(cudaStream_t S);
  void endHooks(cudaStream_t S);
  /// Once the stream has finished the profiled launches: where the time
  /// went, by kernel kind and for the costliest kernels, with the rates
  /// each reached against its FLOPs and bytes. Clears what it read.
  std::string profileReport(double StepMs);

  /// What the last profileReport read, per kernel kind and direction
  /// (dsrun --calibration-out fits the planner's kernel rates to it).
  struct KindTime {
    dsc::plan::KernelKind Kind;
    bool Backward;
    double Ms = 0, Flops = 0, Bytes = 0;
    unsigned Launches = 0;
  };
  std::vector<KindTime> Profiled;

private:
  /// A launch of the plan's, or NoKernel: the hooks after an instruction.
  static constexpr uint32_t NoKernel = ~0u;
  struct Timed {
    uint32_t Kernel;
    cudaEvent_t Begin, End;
    uint32_t Call; ///< Which run() launched it: one instruction's kernels.
    cudaStream_t Stream;
  };
  /// The profiled step's idle time between consecutive launches on one
  /// stream, inside one instruction's run of kernels and between two.
  std::string gapReport() const;
  uint32_t Calls = 0;
  const dsc::plan::Plan *P = nullptr;
  std::vector<KernelOperands> Operands;
  KernelContext Context;
  bool Profiling = false;
  std::vector<Timed> Launches;
  cudaEvent_t HooksBegin = nullptr;
  std::vector<cudaEvent_t> Events; ///< Created once, reused.
  size_t EventsUsed = 0;
  cudaEvent_t nextEvent();
};

} // namespace dsrun

#endif
