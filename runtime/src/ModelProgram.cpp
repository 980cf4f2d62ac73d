//===- ModelProgram.cpp - The plan's kernels, ready to launch -------------===//

#include "ModelProgram.h"

namespace plan = dsc::plan;

namespace dsrun {

std::string ModelProgram::resolve(const plan::Plan &Plan,
                                  const std::vector<char *> &ValueAddress,
                                  void *Workspace, uint64_t WorkspaceBytes,
                                  cublasHandle_t Cublas) {
  P = &Plan;
  Context = KernelContext{Cublas, Workspace, WorkspaceBytes, 0};
  Operands.assign(Plan.Kernels.size(), {});
  for (size_t K = 0; K < Plan.Kernels.size(); ++K) {
    const plan::Kernel &Kr = Plan.Kernels[K];
    KernelOperands &Ops = Operands[K];
    for (int Out = 0; Out < 2; ++Out)
      for (const plan::TensorRef &R : Out ? Kr.Outputs : Kr.Inputs) {
        const plan::Value &V = Plan.Values[R.Value];
        char *Base = ValueAddress[R.Value];
        if (!Base)
          return "kernel " + std::to_string(K) + " (" + Kr.Name +
                 ") uses value '" + V.Name + "', which has no place on the "
                 "device";
        ElementType T = ElementType(V.Type);
        (Out ? Ops.Out : Ops.In).push_back(Base + R.Offset * elementBytes(T));
        (Out ? Ops.OutType : Ops.InType).push_back(T);
      }
    uint64_t Need = kernelWorkspaceBytes(Kr, Ops);
    if (Need > WorkspaceBytes)
      return "kernel " + std::to_string(K) + " (" + Kr.Name + ") needs " +
             std::to_string(Need) + " bytes of workspace and the plan's "
             "kernel_workspace holds " + std::to_string(WorkspaceBytes) +
             " (a plan from an older dsc? plan again)";
  }
  return "";
}

std::string ModelProgram::run(uint32_t Begin, uint32_t End, uint64_t Seed,
                              cudaStream_t S) {
  KernelContext C = Context;
  C.Seed = Seed;
  for (uint32_t K = Begin; K < End; ++K) {
    std::string Problem = launchComputeKernel(P->Kernels[K], Operands[K], C, S);
    if (!Problem.empty())
      return "kernel " + std::to_string(K) + " (" + P->Kernels[K].Name +
             "): " + Problem;
  }
  return "";
}

} // namespace dsrun
