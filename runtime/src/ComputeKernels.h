//===- ComputeKernels.h - The model's kernels, one per plan kind -*- C++ -*-===//
//
// dsrun runs the compute program's kernels (plan::KernelKind) exactly as
// the plan gives them: operands at the addresses their TensorRefs resolve
// to, with their strides, in their element types; attributes as each
// kind's struct (dsc/KernelAttrs.h) names them. Matrix products go through cuBLASLt
// (Matmuls.h), flash attention through FlashAttention.cu; every other kind
// is a kernel of ComputeKernels.cu, PointwiseKernels.cu, NormKernels.cu or
// TokenKernels.cu, which compute in fp32 and store in the operand's
// type. Each is checked against the host reference
// (dsc/ReferenceKernels.h) by dsrun-kernel-test.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_COMPUTEKERNELS_H
#define DSRUN_COMPUTEKERNELS_H

#include "Matmuls.h"
#include "Synthetic.h"

#include "dsc/PlanFormat.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace dsrun {

/// What a kernel launch needs beyond its operands.
struct KernelContext {
  cublasHandle_t Cublas = nullptr;
  /// Runs the gemm kernels.
  Matmuls *Products = nullptr;
  /// The plan's kernel workspace (attention's scores, the sort of an
  /// embedding's gradient).
  void *Workspace = nullptr;
  uint64_t WorkspaceBytes = 0;
  /// Dropout's seed for this micro step.
  uint64_t Seed = 0;
  /// Evaluation (the validation loss): dropout is the identity.
  bool Inference = false;
  /// Every kernel sums in a fixed order, so that a step repeats bit for
  /// bit (dsrun --deterministic): attention's backward planned for cuDNN
  /// runs on dsrun's flash kernels.
  bool Deterministic = false;
  /// fp16 training: the device float holding the step's loss scale, which
  /// the loss gradient is multiplied by (null: 1).
  const float *LossScale = nullptr;
};

/// A kernel's operands, resolved: device address and element type of each
/// input and output, in the kernel's order.
struct KernelOperands {
  std::vector<void *> In, Out;
  std::vector<ElementType> InType, OutType;
};

/// dsrun's part of a kernel kind's registry entry (dsc/KernelRegistry.h
/// holds the rest): its launch on S, "" or what keeps it from running (a
/// program too long, a workspace too small; CUDA errors are the caller's
/// to check after), and the device workspace the launch needs (null:
/// none). One entry per kind, in KernelLaunch.cu.
struct KernelLauncher {
  std::string (*Launch)(const dsc::plan::Kernel &K, const KernelOperands &Ops,
                        const KernelContext &C, cudaStream_t S);
  uint64_t (*Workspace)(const dsc::plan::Kernel &K, const KernelOperands &Ops);
};
const KernelLauncher &kernelLauncher(dsc::plan::KernelKind K);

/// The workspace a kernel needs on the device, in bytes.
uint64_t kernelWorkspaceBytes(const dsc::plan::Kernel &K,
                              const KernelOperands &Ops);

/// Launches a kernel on S. Returns "" or what keeps it from running (a
/// program too long, a workspace too small); CUDA errors are the caller's
/// to check after.
std::string launchComputeKernel(const dsc::plan::Kernel &K,
                                const KernelOperands &Ops,
                                const KernelContext &C, cudaStream_t S);

} // namespace dsrun

#endif
