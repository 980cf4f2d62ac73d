//===- FlashAttention.h - Attention kernels that never store scores -*- C++ -*-===//
//
// The `attention` and `attention-grad` kernels the plan marks as flash
// (dsc/AttentionAlgorithms.h says which fit): bf16/fp16 tiles on tensor cores,
// scores and probabilities kept in registers, the backward recomputing
// them from the saved log-sum-exp. Deterministic: no atomics; a key/value
// head sums its query heads in one block, in order.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_FLASHATTENTION_H
#define DSRUN_FLASHATTENTION_H

#include "ComputeKernels.h"

namespace dsrun {

/// Launches a flash attention kernel on S; "" or why it cannot run.
std::string flashAttention(const dsc::plan::Kernel &K,
                           const KernelOperands &Ops, const KernelContext &C,
                           cudaStream_t S);

} // namespace dsrun

#endif
