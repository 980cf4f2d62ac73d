//===- Collectives.h - The NCCL calls each instruction makes ----*- C++ -*-===//
//
// One description of every collective a plan's program issues, with its
// addresses as byte offsets into the rank's device arena, read from the
// plan's views. The executor issues them beside compute; dsrun-bench
// issues the very same calls with nothing else running, so the two can be
// compared size for size.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_COLLECTIVES_H
#define DSRUN_COLLECTIVES_H

#include "Arena.h"
#include "Synthetic.h"
#include "dsc/PlanFacts.h"

#include <map>
#include <string>
#include <vector>

namespace dsrun {

/// AllToAll: ZeRO++ qgZ's exchange, Count bytes to and from each rank of
/// the group (block r of what is sent goes to rank r, whose block lands at
/// this rank's place in what it receives), as NCCL sends and receives.
enum class CollectiveKind { AllReduce, Reduce, ReduceScatter, AllGather, AllToAll };

const char *collectiveName(CollectiveKind K);

/// nccl-tests' bus bandwidth factor of a collective over N ranks
/// (plan::busFactor; a reduce crosses each link once).
double busFactor(CollectiveKind K, unsigned N);

/// Which ranks a call runs among, and so on which communicator: every
/// rank; the rank's group of consecutive ranks (ZeRO++ hpZ's group, or
/// MiCS's shard group where it is smaller than the world); MiCS's
/// replicas, the rank of the same place in every shard group; ZeRO++
/// qgZ's node, and the ranks of the same place on every node.
enum class CommScope {
  World,
  HpzGroup,
  MicsShard,
  MicsReplicas,
  Node,
  AcrossNodes
};

/// What follows a kind's name in the totals of calls of a scope: "" for
/// the world's, "-hpz", "-mics-shard", "-mics-replicas", "-node",
/// "-across-nodes".
const char *scopeSuffix(CommScope S);

struct CollectiveCall {
  CollectiveKind Kind;
  /// Byte offsets into the device arena.
  uint64_t Send = 0, Recv = 0;
  /// Elements per rank's contribution (all-gather, reduce-scatter: per
  /// chunk; all-reduce, reduce: the whole message).
  uint64_t Count = 0;
  ElementType Type = ElementType::BF16;
  int Root = -1;
  CommScope Scope = CommScope::World;
  /// How many ranks it runs among, outside the world's scope.
  unsigned GroupRanks = 0;

  unsigned ranks(unsigned World) const {
    return Scope == CommScope::World ? World : GroupRanks;
  }
  /// Bytes of the whole message, nccl-tests' "size".
  uint64_t messageBytes(unsigned World) const;
};

/// The calls an instruction makes, issued as one NCCL group; empty for an
/// instruction that makes none. Every collective runs on device memory,
/// offloaded or not.
std::vector<CollectiveCall> collectiveCalls(const Arena &A,
                                            uint32_t Instruction);

/// A group's bytes times its bus factor: divided by its time, the bus
/// bandwidth. A group of reduces to several roots counts as the
/// reduce-scatter it amounts to.
double busBytes(const std::vector<CollectiveCall> &Group, unsigned World);

/// What the collective groups of one kind did in a step.
struct CollectiveTotals {
  double Bytes = 0;    ///< Message bytes (nccl-tests' "size").
  double BusBytes = 0; ///< Bytes times the bus factor.
  double Ms = 0;
  unsigned Calls = 0; ///< Groups.
};
using TotalsByKind = std::map<std::string, CollectiveTotals>;

/// The totals' name for groups among one rank, which copy.
constexpr char CopyKind[] = "copy";

/// Adds a group that took Ms to its kind's totals (its kind's name, with
/// its scope's suffix after it; CopyKind for a group among one rank).
void addGroup(TotalsByKind &ByKind, const std::vector<CollectiveCall> &Group,
              double Ms, unsigned World);

} // namespace dsrun

#endif
