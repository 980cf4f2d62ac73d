//===- PlanInternal.h - Helpers the planner passes share ---------*- C++ -*-===//

#ifndef DSC_LIB_PLAN_PLANINTERNAL_H
#define DSC_LIB_PLAN_PLANINTERNAL_H

#include "dsc/Plan/Planner.h"
#include "dsc/PlanFacts.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>

namespace dsc {

/// Fills the settings part of the plan from the config and the options.
llvm::Error readPlanSettings(plan::Info &I, const ConfigView &C,
                             const PlanOptions &Options);

inline llvm::Error planError(const llvm::Twine &Message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Message);
}

inline uint64_t divideRoundingUp(uint64_t A, uint64_t B) {
  return B ? (A + B - 1) / B : 0;
}
inline uint64_t roundUp(uint64_t A, uint64_t B) {
  return divideRoundingUp(A, B) * B;
}

/// Nanoseconds to move Bytes at BytesPerSec (0 when the rate is unknown).
inline uint64_t transferNanos(uint64_t Bytes, uint64_t BytesPerSec) {
  return BytesPerSec ? uint64_t(double(Bytes) * 1e9 / double(BytesPerSec))
                     : 0;
}

/// A pass of the host's over Elems elements that moves BytesPerElem
/// bytes each: its bytes at the rank's share of the host's memory
/// bandwidth, or its elements at ElemsPerSec on the rank's threads (0:
/// no such bound), whichever takes longer.
inline uint64_t hostPassNanos(uint64_t Elems, uint64_t BytesPerElem,
                              uint64_t ElemsPerSec, const plan::Hardware &H) {
  return std::max(transferNanos(Elems * BytesPerElem, H.HostBytesPerSec),
                  transferNanos(Elems, ElemsPerSec));
}

/// A collective over the ranks a partition is split over (every rank, or
/// with MiCS the shard group), or over Ranks of them, carrying Bytes per
/// rank (nccl-tests' convention: all-reduce moves 2(n-1)/n of the buffer,
/// reduce-scatter and all-gather (n-1)/n of the whole): at the kind's
/// calibrated bus bandwidth plus a call's latency; else at the GPU's time
/// table's rate for Bytes over Ranks (its times are of whole calls,
/// latency and all); else at the machine's figure plus the latency. The
/// link between nodes, plus the latency, where it is slower and the ranks
/// span nodes: a group of consecutive ranks spans Ranks of them, MiCS's
/// replicas (one rank of each shard group) the world (Strided).
/// ToEachRoot: stage 2's reduce, each rank's piece reduced to it (an
/// ncclReduce a root), costed as the reduce-scatter it replaces. Moved:
/// the bytes the call moves where they differ from the buffer that sets
/// its rate (stage 2's bucket inside one partition).
uint64_t collectiveNanos(plan::Collective Kind, uint64_t Bytes,
                         const plan::Info &S, uint32_t Ranks = 0,
                         bool ToEachRoot = false, uint64_t Moved = 0,
                         bool Strided = false);

/// A collective kind's bus bandwidth within a node as a calibration
/// measured it, or the machine's figure.
uint64_t withinNodeRate(plan::Collective Kind, const plan::Hardware &H);
/// Its bus bandwidth between the plan's nodes (0: one node, or unknown).
uint64_t betweenNodesRate(plan::Collective Kind, const plan::Info &S);
/// Whether some collective kind runs slower between nodes than within:
/// the link between nodes then limits the plan's collectives.
bool crossesNodes(const plan::Info &S);

/// Bytes of a buffer of Elems in T.
inline uint64_t bytesOf(uint64_t Elems, plan::DType T) {
  return Elems * plan::dtypeBytes(T);
}

/// The fetch unit of each module (NoIndex where there is none).
std::vector<uint32_t> fetchUnitOfModule(const plan::Plan &P);

/// Trainable tensors in forward first-use order (the flat order).
std::vector<uint32_t> trainableInUseOrder(const plan::Plan &P);

} // namespace dsc

#endif
