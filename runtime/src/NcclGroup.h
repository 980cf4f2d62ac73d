//===- NcclGroup.h - Issue an instruction's NCCL calls ----------*- C++ -*-===//
//
// The one place that turns Collectives.h's descriptions into NCCL calls:
// dsrun issues them beside compute, dsrun-bench alone.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_NCCLGROUP_H
#define DSRUN_NCCLGROUP_H

#include "Collectives.h"

#include <cuda_runtime.h>
#include <nccl.h>

namespace dsrun {

inline ncclDataType_t ncclTypeOf(ElementType T) {
  return T == ElementType::F32   ? ncclFloat32
         : T == ElementType::F16 ? ncclFloat16
         : T == ElementType::I8  ? ncclInt8
                                 : ncclBfloat16;
}

static_assert(NCCL_CTA_POLICY_DEFAULT == 0 && NCCL_CTA_POLICY_EFFICIENCY == 1 &&
                  NCCL_CTA_POLICY_ZERO == 2,
              "RunOptions::CtaPolicy follows NCCL's values");

/// The communicator's config: NCCL's defaults, or at least MinCTAs CTAs
/// (channels) for every collective when MinCTAs is not 0, and NCCL's CTA
/// policy (NCCL_CTA_POLICY_*) when Policy is not 0. NCCL 2.28 checks the
/// pair of counts and takes an unset maximum for invalid, so the maximum
/// is set to its own default, 64 (MAXCHANNELS).
inline ncclConfig_t commConfig(unsigned MinCTAs, int Policy = 0) {
  ncclConfig_t Config = NCCL_CONFIG_INITIALIZER;
  if (MinCTAs) {
    Config.minCTAs = int(MinCTAs);
    Config.maxCTAs = 64;
  }
  if (Policy)
    Config.CTAPolicy = Policy;
  return Config;
}

/// The communicators a rank's calls run on: the world's; its group's of
/// consecutive ranks (ZeRO++ hpZ's group or MiCS's shard group), where
/// that is smaller than the world; MiCS's replicas', where they are fewer
/// than the world (all of them run on the world's); ZeRO++ qgZ's node
/// (hpZ's group where that is the node) and its ranks of the same place
/// on every node.
struct Communicators {
  ncclComm_t World = nullptr, Group = nullptr, Replicas = nullptr,
             Node = nullptr, AcrossNodes = nullptr;

  ncclComm_t of(const CollectiveCall &C, unsigned WorldSize) const {
    if (C.Scope == CommScope::World || C.GroupRanks == WorldSize)
      return World;
    switch (C.Scope) {
    case CommScope::MicsReplicas:
      return Replicas;
    case CommScope::Node:
      return Node;
    case CommScope::AcrossNodes:
      return AcrossNodes;
    default:
      return Group;
    }
  }
};

/// Splits from Comms.World the communicators a plan's calls need beyond
/// it (every rank must call this): DeepSpeed's hpZ groups and MiCS's
/// shard groups are consecutive ranks, MiCS's replicas the ranks of the
/// same place in each shard group. A group of one rank copies and one of
/// every rank runs on the world's: neither is split. On failure, Which
/// names the group.
inline ncclResult_t splitCommunicators(const dsc::plan::Info &S, int Rank,
                                       Communicators &Comms,
                                       const char *&Which) {
  uint32_t Shards = dsc::plan::partitionRanks(S);
  uint32_t Group = S.HpzPartition > 1 ? S.HpzPartition : Shards;
  uint32_t Replicas = dsc::plan::replicaRanks(S);
  auto Split = [&](uint32_t Ranks, int Colour, ncclComm_t *Into) {
    if (Ranks < 2 || Ranks >= S.WorldSize)
      return ncclSuccess;
    return ncclCommSplit(Comms.World, Colour, Rank, Into, nullptr);
  };
  Which = S.HpzPartition > 1 ? "the hpZ group" : "the MiCS shard group";
  if (ncclResult_t R = Split(Group, Rank / int(Group), &Comms.Group))
    return R;
  Which = "the MiCS replicas";
  if (ncclResult_t R = Split(Replicas, Rank % int(Shards), &Comms.Replicas))
    return R;
  if (!dsc::plan::qgzAcrossNodes(S))
    return ncclSuccess;
  uint32_t Local = S.GpusPerNode;
  Which = "qgZ's node";
  if (S.HpzPartition == Local)
    Comms.Node = Comms.Group;
  else if (ncclResult_t R = Split(Local, Rank / int(Local), &Comms.Node))
    return R;
  Which = "qgZ's ranks across nodes";
  return Split(S.Nodes, Rank % int(Local), &Comms.AcrossNodes);
}

/// Issues Group as one NCCL group on stream S; offsets are into Arena. A
/// call among one rank of a group is a copy (NCCL's would be one too).
/// Returns the first error and sets Failed to the NCCL function's name.
inline ncclResult_t issueGroup(const std::vector<CollectiveCall> &Group,
                               char *Arena, const Communicators &Comms,
                               unsigned WorldSize, cudaStream_t S,
                               const char *&Failed) {
  Failed = "ncclGroupStart";
  ncclResult_t R = ncclGroupStart();
  for (const CollectiveCall &C : Group) {
    if (R != ncclSuccess)
      break;
    char *Send = Arena + C.Send, *Recv = Arena + C.Recv;
    if (C.Scope != CommScope::World && C.GroupRanks == 1) {
      Failed = "cudaMemcpyAsync";
      if (Send != Recv &&
          cudaMemcpyAsync(Recv, Send, C.Count * elementBytes(C.Type),
                          cudaMemcpyDeviceToDevice, S) != cudaSuccess)
        R = ncclUnhandledCudaError;
      continue;
    }
    ncclComm_t Comm = Comms.of(C, WorldSize);
    if (!Comm) {
      Failed = "the communicator of a group of ranks (none was made)";
      R = ncclInvalidUsage;
      break;
    }
    ncclDataType_t T = ncclTypeOf(C.Type);
    switch (C.Kind) {
    case CollectiveKind::AllReduce:
      Failed = "ncclAllReduce";
      R = ncclAllReduce(Send, Recv, C.Count, T, ncclSum, Comm, S);
      break;
    case CollectiveKind::Reduce:
      Failed = "ncclReduce";
      R = ncclReduce(Send, Recv, C.Count, T, ncclSum, C.Root, Comm, S);
      break;
    case CollectiveKind::ReduceScatter:
      Failed = "ncclReduceScatter";
      R = ncclReduceScatter(Send, Recv, C.Count, T, ncclSum, Comm, S);
      break;
    case CollectiveKind::AllGather:
      Failed = "ncclAllGather";
      R = ncclAllGather(Send, Recv, C.Count, T, Comm, S);
      break;
    case CollectiveKind::AllToAll: {
      uint64_t Bytes = C.Count * elementBytes(C.Type);
      for (unsigned Peer = 0; Peer < C.GroupRanks && R == ncclSuccess;
           ++Peer) {
        Failed = "ncclSend";
        R = ncclSend(Send + Peer * Bytes, C.Count, T, int(Peer), Comm, S);
        if (R == ncclSuccess) {
          Failed = "ncclRecv";
          R = ncclRecv(Recv + Peer * Bytes, C.Count, T, int(Peer), Comm, S);
        }
      }
      break;
    }
    }
  }
  if (R != ncclSuccess) {
    ncclGroupEnd();
    return R;
  }
  Failed = "ncclGroupEnd";
  return ncclGroupEnd();
}

} // namespace dsrun

#endif
