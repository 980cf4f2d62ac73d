//===- StateLayout.h - Where a rank's training state lies -------*- C++ -*-===//
//
// A checkpoint shard holds a rank's training state as parts: the plan's
// buffers that carry it from step to step, then, with NVMe offload, the
// rank's swap files whole. This says, from the plan alone, which parts a
// rank's shard has, and where in them each tensor's 16-bit parameters,
// fp32 master weights and Adam moments lie: what dsrun saves and restores
// (Checkpointing.cpp) and what dsrun-reshard moves from one plan's layout
// to another's (Reshard.cpp).
//
// Host-only, tested in CI.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_STATELAYOUT_H
#define DSRUN_STATELAYOUT_H

#include "Checkpoint.h"
#include "dsc/PlanFormat.h"

#include <string>
#include <vector>

namespace dsrun {

/// One part of a shard: a buffer of the plan (Buffer, in the device or
/// the host arena) or a swap file (Buffer is NoIndex).
struct StatePartPlace {
  enum Home : uint8_t { Arena, OptimizerSwap, ParamSwap };
  std::string Name;
  uint64_t Bytes = 0;
  Home Where = Arena;
  uint32_t Buffer = dsc::plan::NoIndex;
};

/// The names of the swap-file parts, before the '@' and the fingerprint
/// of the file's layout.
constexpr const char *NVMeOptimizerPart = "nvme_optimizer_file";
constexpr const char *NVMeParamPart = "nvme_param_file";

/// The parts of rank Rank's shard under plan P, in the order it holds them.
std::vector<StatePartPlace> stateParts(const dsc::plan::Plan &P,
                                       uint32_t Rank);
/// The names and sizes a shard lists for Parts (anything with a Name and
/// Bytes: these, or the executor's parts with their addresses).
template <class Part>
std::vector<CheckpointPart> checkpointParts(const std::vector<Part> &Parts) {
  std::vector<CheckpointPart> Out;
  for (const Part &S : Parts)
    Out.push_back({S.Name, S.Bytes});
  return Out;
}

/// What a stretch of state is: a tensor's parameters in the plan's
/// parameter type, or its fp32 master weights or moments.
enum class StateKind : uint8_t { Param, Master, Moment1, Moment2 };
const char *stateKindName(StateKind K);

/// Elements [Begin, End) of Tensor's Kind, ElemBytes each, from byte
/// Offset of part Part on.
struct StateSegment {
  uint32_t Part = 0;
  uint64_t Offset = 0;
  StateKind Kind = StateKind::Param;
  uint32_t Tensor = 0;
  uint64_t Begin = 0, End = 0;
  unsigned ElemBytes = 0;
};

struct StateLayout {
  std::vector<StatePartPlace> Parts;
  std::vector<StateSegment> Segments;
};

/// Rank's parts and every stretch of state in them. "" or why the plan
/// puts some state where no part holds it (a plan dsrun cannot
/// checkpoint).
std::string stateLayout(const dsc::plan::Plan &P, uint32_t Rank,
                        StateLayout &Out);

} // namespace dsrun

#endif
