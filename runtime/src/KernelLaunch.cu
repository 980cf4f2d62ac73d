//===- KernelLaunch.cu - dsrun's part of the kernel registry --------------===//
//
// For each kernel kind (dsc/KernelRegistry.h holds its check, cost and host
// reference), how dsrun launches it and the device workspace the launch
// needs. The table is filled by kind, so an entry cannot land under
// another kind; an empty entry is a kind dsrun does not run, and says so.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.cuh"

#include "dsc/ColumnSums.h"
#include "dsc/AttentionAlgorithms.h"

#include <array>

namespace dsrun {

namespace plan = dsc::plan;

namespace {

using plan::KernelKind;
using namespace kernels;

uint64_t gemmWorkspace(const plan::Kernel &, const KernelOperands &) {
  return plan::GemmWorkspaceBytes;
}

uint64_t attentionWorkspace(const plan::Kernel &K, const KernelOperands &Ops) {
  bool Grad = K.kind() == KernelKind::AttentionGrad;
  return plan::attentionWorkspace(*K.as<plan::AttentionAttrs>(), Grad,
                                  elementBytes(Ops.InType[Grad ? 1 : 0]));
}

/// An embedding's gradient over a table of one row block sorts its ids.
uint64_t gatherGradWorkspace(const plan::Kernel &K, const KernelOperands &) {
  const plan::GatherAttrs &A = *K.as<plan::GatherAttrs>();
  return A.Outer == 1 ? sortBytes(A.Count) : 0;
}

/// The count of rows that are not ignored.
uint64_t crossEntropyGradWorkspace(const plan::Kernel &,
                                   const KernelOperands &) {
  return sizeof(float);
}

/// The weight (and bias) gradients' partial column sums.
uint64_t normGradWorkspace(const plan::Kernel &K, const KernelOperands &) {
  const plan::LayerNormGradAttrs &A = *K.as<plan::LayerNormGradAttrs>();
  return dsc::columnSumWorkspace(
      A.Rows, A.Cols, K.kind() == KernelKind::LayerNormGrad ? 2 : 1);
}

/// A bias gradient (a sum over leading rows) goes through column sums.
uint64_t reduceWorkspace(const plan::Kernel &K, const KernelOperands &) {
  int64_t Rows = 0, Cols = 0;
  const plan::TensorRef &X = K.Inputs[0];
  return dsc::reducesLeadingRows(
             X.Shape, X.Strides,
             int64_t(K.attrs<KernelKind::Reduce>().AxesMask), Rows, Cols)
             ? dsc::columnSumWorkspace(Rows, Cols, 1)
             : 0;
}

std::array<KernelLauncher, plan::NumKernelKinds> launchers() {
  std::array<KernelLauncher, plan::NumKernelKinds> T{};
  auto Set = [&](KernelKind K, Launcher *L,
                 uint64_t (*W)(const plan::Kernel &,
                               const KernelOperands &) = nullptr) {
    T[size_t(K)] = {L, W};
  };
  Set(KernelKind::Gemm, matmul, gemmWorkspace);
  Set(KernelKind::Pointwise, pointwise);
  Set(KernelKind::Reduce, reduce, reduceWorkspace);
  Set(KernelKind::Softmax, softmax);
  Set(KernelKind::SoftmaxGrad, softmaxGrad);
  Set(KernelKind::LayerNorm, norm);
  Set(KernelKind::LayerNormGrad, norm, normGradWorkspace);
  Set(KernelKind::RMSNorm, norm);
  Set(KernelKind::RMSNormGrad, norm, normGradWorkspace);
  Set(KernelKind::Attention, attention, attentionWorkspace);
  Set(KernelKind::AttentionGrad, attention, attentionWorkspace);
  Set(KernelKind::Gather, gather);
  Set(KernelKind::GatherGrad, gather, gatherGradWorkspace);
  Set(KernelKind::CrossEntropy, crossEntropy);
  Set(KernelKind::CrossEntropyGrad, crossEntropy, crossEntropyGradWorkspace);
  Set(KernelKind::Fill, fill);
  Set(KernelKind::Rotary, rotary);
  Set(KernelKind::RotaryGrad, rotary);
  Set(KernelKind::SwiGLU, swiglu);
  Set(KernelKind::SwiGLUGrad, swiglu);
  return T;
}

} // namespace

const KernelLauncher &kernelLauncher(plan::KernelKind K) {
  static const std::array<KernelLauncher, plan::NumKernelKinds> Table =
      launchers();
  return Table[size_t(K)];
}

uint64_t kernelWorkspaceBytes(const plan::Kernel &K,
                              const KernelOperands &Ops) {
  const KernelLauncher &L = kernelLauncher(K.kind());
  return L.Workspace ? L.Workspace(K, Ops) : 0;
}

std::string launchComputeKernel(const plan::Kernel &K,
                                const KernelOperands &Ops,
                                const KernelContext &C, cudaStream_t S) {
  const KernelLauncher &L = kernelLauncher(K.kind());
  if (!L.Launch)
    return std::string("dsrun has no launch for kernels of kind ") +
           plan::enumName(K.kind());
  return L.Launch(K, Ops, C, S);
}

} // namespace dsrun
