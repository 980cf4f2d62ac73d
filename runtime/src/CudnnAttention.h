//===- CudnnAttention.h - cuDNN's fused attention, loaded at run time -*- C++ -*-===//
//
// The `attention` and `attention-grad` kernels the plan marks `cudnn`
// (dsc/AttentionAlgorithms.h says which fit) run as cuDNN's fused flash
// attention: an operation graph of two products, the scale, the causal
// mask and the softmax (forward), or the backward's five products and its
// softmax gradient, which cuDNN compiles into one Hopper kernel (wgmma,
// TMA, warp specialization) per shape. dsrun builds the graph through
// cuDNN's backend API in the plan's layouts and caches the compiled plan
// per shape.
//
// cuDNN is loaded with dlopen (libcudnn.so.9, or DSRUN_CUDNN_LIBRARY), so
// dsrun needs it only where such kernels run. Where it is missing or
// declines a shape, the kernel runs on dsrun's own flash kernels, which the
// plan's workspace also covers, and dsrun says so once.
//
// The backward sums dQ over the key blocks with atomics (cuDNN's form that
// needs no scores in memory), so two runs of it may differ in the last
// bits; dsrun --deterministic runs the backward on dsrun's flash kernels,
// which sum in a fixed order.
//===----------------------------------------------------------------------===//

#ifndef DSRUN_CUDNNATTENTION_H
#define DSRUN_CUDNNATTENTION_H

#include "ComputeKernels.h"

#include <string>

namespace dsrun {

/// Runs an attention kernel through cuDNN on S; "" or why cuDNN cannot
/// (not loaded, the shape declined, its workspace beyond the plan's): the
/// caller then runs it another way.
std::string cudnnAttention(const dsc::plan::Kernel &K,
                           const KernelOperands &Ops, const KernelContext &C,
                           cudaStream_t S);

/// The cuDNN dsrun loaded (its version and path), or why none.
std::string cudnnAttentionLibrary();

} // namespace dsrun

#endif
