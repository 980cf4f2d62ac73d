//===- Collectives.cpp - The NCCL calls each instruction makes ------------===//

#include "Collectives.h"

#include <algorithm>
#include <map>

namespace plan = dsc::plan;

namespace dsrun {

const char *collectiveName(CollectiveKind K) {
  switch (K) {
  case CollectiveKind::AllReduce:
    return "all-reduce";
  case CollectiveKind::Reduce:
    return "reduce";
  case CollectiveKind::ReduceScatter:
    return "reduce-scatter";
  case CollectiveKind::AllGather:
    return "all-gather";
  }
  return "?";
}

double busFactor(CollectiveKind K, unsigned N) {
  if (N <= 1)
    return 1;
  switch (K) {
  case CollectiveKind::AllReduce:
    return 2.0 * (N - 1) / N;
  case CollectiveKind::Reduce:
    return 1;
  default:
    return double(N - 1) / N;
  }
}

uint64_t CollectiveCall::messageBytes(unsigned World) const {
  uint64_t Bytes = Count * elementBytes(Type);
  return Kind == CollectiveKind::AllGather ||
                 Kind == CollectiveKind::ReduceScatter
             ? Bytes * World
             : Bytes;
}

double busBytes(const std::vector<CollectiveCall> &Group, unsigned World) {
  // A group of reduces to different roots (DeepSpeed's stage-2
  // average_tensor) moves at least what a reduce-scatter of the same bytes
  // moves, and at least its largest root's piece, which crosses the links
  // whole (the planner's model of the same group, lib/Plan/Schedule.cpp).
  bool SeveralRoots = false;
  for (const CollectiveCall &C : Group)
    SeveralRoots |= C.Kind == CollectiveKind::Reduce && C.Root != Group[0].Root;
  double Sum = 0;
  std::map<int, double> PerRoot;
  for (const CollectiveCall &C : Group) {
    double Bytes = double(C.messageBytes(World));
    Sum += Bytes * (SeveralRoots ? busFactor(CollectiveKind::ReduceScatter, World)
                                 : busFactor(C.Kind, World));
    PerRoot[C.Root] += Bytes;
  }
  if (SeveralRoots)
    for (const auto &[Root, Bytes] : PerRoot)
      Sum = std::max(Sum, Bytes);
  return Sum;
}

void addGroup(TotalsByKind &ByKind, const std::vector<CollectiveCall> &Group,
              double Ms, unsigned World) {
  CollectiveTotals &T = ByKind[collectiveName(Group[0].Kind)];
  for (const CollectiveCall &C : Group)
    T.Bytes += double(C.messageBytes(World));
  T.BusBytes += busBytes(Group, World);
  T.Ms += Ms;
  ++T.Calls;
}

namespace {

uint64_t offsetOf(const Layout &L, const std::string &Name) {
  BufferView V = L.buffer(Name);
  return V ? V.Offset : 0;
}

void reduceCalls(const Layout &L, uint32_t B, std::vector<CollectiveCall> &Out) {
  const plan::Plan &P = L.P;
  const BucketLayout &BL = L.Buckets[B];
  unsigned PB = elementBytes(L.Param);
  uint64_t Source = BL.SourceOffset;
  if (L.Stage < 2) {
    uint64_t Flat = Source + BL.FlatBegin * PB;
    Out.push_back({CollectiveKind::AllReduce, Flat, Flat,
                   BL.FlatEnd - BL.FlatBegin, L.Param, -1});
    return;
  }
  if (L.Stage == 2) {
    // DeepSpeed's average_tensor: each partition's piece reduced to its
    // owner, in place.
    uint64_t Part = P.Layout.PartitionElems;
    for (uint32_t Q = 0; Q < L.World; ++Q) {
      uint64_t Lo = std::max(BL.FlatBegin, Q * Part);
      uint64_t Hi = std::min(BL.FlatEnd, (Q + 1) * Part);
      if (Lo >= Hi)
        continue;
      uint64_t Piece = Source + (Lo - BL.SourceOrigin) * PB;
      Out.push_back(
          {CollectiveKind::Reduce, Piece, Piece, Hi - Lo, L.Param, int(Q)});
    }
    return;
  }
  // Stage 3: the rank-major chunks, reduce-scattered in place.
  Out.push_back({CollectiveKind::ReduceScatter, Source,
                 Source + uint64_t(L.Rank) * BL.ChunkElems *
                              elementBytes(BL.SourceType),
                 BL.ChunkElems, BL.SourceType, -1});
}

void gatherCalls(const Layout &L, uint32_t U, std::vector<CollectiveCall> &Out) {
  const plan::Plan &P = L.P;
  const std::vector<uint32_t> &Tensors = P.FetchUnits[U].Tensors;
  if (Tensors.empty())
    return;
  // One all-gather of every rank's chunk: this rank's shards of the unit,
  // which sit together in params16, or were copied from the host into
  // this rank's slot.
  unsigned PB = elementBytes(L.Param);
  uint64_t Chunk = L.chunkElems(U);
  uint64_t Target = offsetOf(L, L.gatherTarget(U));
  uint64_t Mine = P.Settings.ParamOffload != plan::OffloadDevice::None
                      ? Target + uint64_t(L.Rank) * Chunk * PB
                      : offsetOf(L, "params16") + L.shardOffset(Tensors[0]) * PB;
  Out.push_back({CollectiveKind::AllGather, Mine, Target, Chunk, L.Param, -1});
}

void gatherParamsCalls(const Layout &L, std::vector<CollectiveCall> &Out) {
  const plan::Plan &P = L.P;
  unsigned PB = elementBytes(L.Param);
  if (L.Stage < 3) {
    uint64_t Part = P.Layout.PartitionElems;
    uint64_t Params = offsetOf(L, "params16");
    Out.push_back({CollectiveKind::AllGather,
                   Params + uint64_t(L.Rank) * Part * PB, Params, Part,
                   L.Param, -1});
    return;
  }
  for (uint32_t T : P.Layout.Order) {
    const plan::Tensor &X = P.Tensors[T];
    if (!X.Persistent)
      continue;
    uint64_t Whole =
        offsetOf(L, "persistent_params") + L.persistentOffset(T) * PB;
    Out.push_back({CollectiveKind::AllGather,
                   Whole + uint64_t(L.Rank) * X.ShardElems * PB, Whole,
                   X.ShardElems, L.Param, -1});
  }
}

} // namespace

std::vector<CollectiveCall> collectiveCalls(const Layout &L, uint32_t I) {
  const plan::Instruction &In = L.P.Program[I];
  std::vector<CollectiveCall> Out;
  switch (In.Kind) {
  case plan::InstrKind::Reduce:
    reduceCalls(L, In.Arg, Out);
    break;
  case plan::InstrKind::Gather:
    gatherCalls(L, In.Arg, Out);
    break;
  case plan::InstrKind::GatherParams:
    gatherParamsCalls(L, Out);
    break;
  default:
    break;
  }
  return Out;
}

} // namespace dsrun
