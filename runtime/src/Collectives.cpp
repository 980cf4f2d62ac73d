//===- Collectives.cpp - The NCCL calls each instruction makes ------------===//

#include "Collectives.h"
#include "dsc/PlanFacts.h"

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
  case CollectiveKind::AllToAll:
    return "all-to-all";
  }
  return "?";
}

const char *scopeSuffix(CommScope S) {
  switch (S) {
  case CommScope::World:
    return "";
  case CommScope::HpzGroup:
    return "-hpz";
  case CommScope::MicsShard:
    return "-mics-shard";
  case CommScope::MicsReplicas:
    return "-mics-replicas";
  case CommScope::Node:
    return "-node";
  case CommScope::AcrossNodes:
    return "-across-nodes";
  }
  return "";
}

double busFactor(CollectiveKind K, unsigned N) {
  switch (K) {
  case CollectiveKind::AllReduce:
    return plan::busFactor(plan::Collective::AllReduce, N);
  case CollectiveKind::Reduce:
    return 1;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll: // Each rank sends (n - 1) / n of it too.
    return plan::busFactor(plan::Collective::ReduceScatter, N);
  case CollectiveKind::AllGather:
    return plan::busFactor(plan::Collective::AllGather, N);
  }
  return 1;
}

uint64_t CollectiveCall::messageBytes(unsigned World) const {
  uint64_t Bytes = Count * elementBytes(Type);
  return Kind == CollectiveKind::AllGather ||
                 Kind == CollectiveKind::ReduceScatter ||
                 Kind == CollectiveKind::AllToAll
             ? Bytes * ranks(World)
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
                                 : busFactor(C.Kind, C.ranks(World)));
    PerRoot[C.Root] += Bytes;
  }
  if (SeveralRoots)
    for (const auto &[Root, Bytes] : PerRoot)
      Sum = std::max(Sum, Bytes);
  return Sum;
}

void addGroup(TotalsByKind &ByKind, const std::vector<CollectiveCall> &Group,
              double Ms, unsigned World) {
  // Calls among one rank are copies (MiCS's shard groups of one): apart,
  // so that no NCCL rate is fitted on them.
  CollectiveTotals &T =
      ByKind[Group[0].ranks(World) <= 1
                 ? std::string(CopyKind)
                 : std::string(collectiveName(Group[0].Kind)) +
                       scopeSuffix(Group[0].Scope)];
  for (const CollectiveCall &C : Group)
    T.Bytes += double(C.messageBytes(World));
  T.BusBytes += busBytes(Group, World);
  T.Ms += Ms;
  ++T.Calls;
}

namespace {

/// A collective over views: the offsets are this rank's, in the device
/// arena. Stage 3's run within the rank's MiCS shard group where it is
/// smaller than the world.
CollectiveCall call(const Arena &A, CollectiveKind Kind, uint32_t Send,
                    uint32_t Recv, uint64_t Count, int Root = -1) {
  CollectiveCall C{Kind, A.offset(Send), A.offset(Recv), Count,
                   ElementType(A.view(Send).Type), Root};
  uint32_t Shard = plan::partitionRanks(A.P.Settings);
  if (A.P.Settings.ZeroStage == 3 && Shard < A.P.Settings.WorldSize)
    C.Scope = CommScope::MicsShard, C.GroupRanks = Shard;
  return C;
}

/// ZeRO++ qgZ's all-to-all of a bucket's quantized blocks: within the
/// node (Send1 to Recv1) or across nodes (Send2 to Recv2).
CollectiveCall qgzExchange(const Arena &A, uint32_t B,
                           const plan::QgzLayout &L, bool AcrossNodes) {
  const plan::Info &S = A.P.Settings;
  uint64_t Base = A.offset(A.P.Places.Buckets[B].Qgz);
  CollectiveCall C{CollectiveKind::AllToAll,
                   Base + (AcrossNodes ? L.Send2 : L.Send1),
                   Base + (AcrossNodes ? L.Recv2 : L.Recv1),
                   AcrossNodes ? L.Block2 : L.Block1, ElementType::I8};
  C.Scope = AcrossNodes ? CommScope::AcrossNodes : CommScope::Node;
  C.GroupRanks = AcrossNodes ? S.Nodes : S.GpusPerNode;
  return C;
}

void reduceCalls(const Arena &A, uint32_t B, std::vector<CollectiveCall> &Out) {
  const plan::Plan &P = A.P;
  const plan::BucketViews &V = P.Places.Buckets[B];
  uint32_t Stage = P.Settings.ZeroStage;
  if (Stage < 2) {
    Out.push_back(call(A, CollectiveKind::AllReduce, V.Source, V.Source,
                       A.elems(V.Source)));
    return;
  }
  if (Stage == 2) {
    // DeepSpeed's average_tensor: each partition's piece reduced to its
    // owner, in place.
    for (const plan::BucketPiece &Piece : V.Pieces)
      Out.push_back(call(A, CollectiveKind::Reduce, Piece.View, Piece.View,
                         A.elems(Piece.View), int(Piece.Root)));
    return;
  }
  if (!plan::qgzAcrossNodes(P.Settings)) {
    // Stage 3: the rank-major chunks, reduce-scattered in place.
    Out.push_back(call(A, CollectiveKind::ReduceScatter, V.Source, V.Chunk,
                       A.elems(V.Chunk)));
    return;
  }
  // ZeRO++ qgZ across nodes: each gradient DeepSpeed does not quantize
  // reduce-scattered alone over every rank, in place; the quantized ones'
  // 4-bit blocks (Executor::reduce wrote them) exchanged within the node.
  plan::QgzLayout L = plan::qgzLayout(P, B);
  for (const plan::Segment &Seg : P.Buckets[B].Segments) {
    if (plan::qgzTensor(P.Settings, P.Tensors[Seg.Tensor]).Quantized)
      continue;
    uint32_t G = P.Places.Tensors[Seg.Tensor].Grad;
    CollectiveCall C = call(A, CollectiveKind::ReduceScatter, G, G,
                            A.elems(G));
    C.Send = A.wholeOffset(G);
    Out.push_back(C);
  }
  if (!L.Pieces.empty())
    Out.push_back(qgzExchange(A, B, L, false));
}

void gatherCalls(const Arena &A, uint32_t U, std::vector<CollectiveCall> &Out) {
  // One all-gather of every rank's chunk: this rank's shards of the unit,
  // which sit together in params16, or were copied from the host into
  // this rank's chunk.
  const plan::UnitViews &V = A.P.Places.Units[U];
  if (V.Target == plan::NoIndex)
    return;
  if (V.Quantized != plan::NoIndex) {
    // ZeRO++ qwZ: every rank's int8 chunk and its scales instead, each
    // gathered in place.
    Out.push_back(call(A, CollectiveKind::AllGather, V.QuantizedSend,
                       V.Quantized, A.elems(V.QuantizedSend)));
    Out.push_back(call(A, CollectiveKind::AllGather, V.ScalesSend, V.Scales,
                       A.elems(V.ScalesSend)));
    return;
  }
  Out.push_back(call(A, CollectiveKind::AllGather, V.Send, V.Target,
                     A.elems(V.Send)));
}

void gatherSecondaryCalls(const Arena &A, uint32_t U,
                          std::vector<CollectiveCall> &Out) {
  // ZeRO++ hpZ: one all-gather within the rank's group, of the slices of
  // the unit's gather that each member keeps; member g's lands at slice g.
  // With qwZ, those slices quantized and their scales.
  const plan::UnitViews &V = A.P.Places.Units[U];
  auto Within = [&](uint32_t Send, uint32_t Recv) {
    CollectiveCall C =
        call(A, CollectiveKind::AllGather, Send, Recv, A.elems(Send));
    C.Scope = CommScope::HpzGroup;
    C.GroupRanks = A.P.Settings.HpzPartition;
    Out.push_back(C);
  };
  if (V.QuantizedSecondarySend == plan::NoIndex)
    return Within(V.Secondary, V.Target);
  Within(V.QuantizedSecondarySend, V.Quantized);
  Within(V.ScalesSecondarySend, V.ScalesSecondary);
}

void reduceReplicasCalls(const Arena &A, uint32_t B,
                         std::vector<CollectiveCall> &Out) {
  // MiCS: the rank's shards of the bucket's tensors in its gradient
  // partition, summed over the step, all-reduced across the replicas:
  // a call for each run of them that lies together in the partition.
  const plan::Plan &P = A.P;
  uint32_t Grads = P.Places.Owned.Grads;
  std::vector<std::pair<uint64_t, uint64_t>> Runs;
  for (const plan::Segment &Seg : P.Buckets[B].Segments) {
    uint64_t At = P.Places.Tensors[Seg.Tensor].PartitionOffset;
    Runs.push_back({At, At + P.Tensors[Seg.Tensor].ShardElems});
  }
  std::sort(Runs.begin(), Runs.end());
  for (size_t I = 0; I < Runs.size(); ++I) {
    uint64_t Begin = Runs[I].first, End = Runs[I].second;
    while (I + 1 < Runs.size() && Runs[I + 1].first == End)
      End = Runs[++I].second;
    uint64_t At = A.offset(Grads) +
                  Begin * plan::dtypeBytes(A.view(Grads).Type);
    CollectiveCall C{CollectiveKind::AllReduce, At, At, End - Begin,
                     ElementType(A.view(Grads).Type)};
    C.Scope = CommScope::MicsReplicas;
    C.GroupRanks = plan::replicaRanks(P.Settings);
    Out.push_back(C);
  }
}

void gatherParamsCalls(const Arena &A, std::vector<CollectiveCall> &Out) {
  const plan::Plan &P = A.P;
  if (P.Settings.ZeroStage < 3) {
    // The partitions of the flat 16-bit parameters, gathered in place.
    uint32_t Mine = P.Places.Owned.Params16;
    CollectiveCall C = call(A, CollectiveKind::AllGather, Mine, Mine,
                            A.elems(Mine));
    C.Recv = A.wholeOffset(Mine);
    Out.push_back(C);
    return;
  }
  // Each persistent tensor's shards, gathered in place into its whole.
  for (uint32_t T : P.Layout.Order) {
    const plan::TensorViews &V = P.Places.Tensors[T];
    if (P.Tensors[T].Persistent)
      Out.push_back(call(A, CollectiveKind::AllGather, V.Shard, V.Param,
                         A.elems(V.Shard)));
  }
}

} // namespace

std::vector<CollectiveCall> collectiveCalls(const Arena &A, uint32_t I) {
  const plan::Instruction &In = A.P.Program[I];
  std::vector<CollectiveCall> Out;
  switch (In.Kind) {
  case plan::InstrKind::Reduce:
    reduceCalls(A, In.Arg, Out);
    break;
  case plan::InstrKind::Gather:
    gatherCalls(A, In.Arg, Out);
    break;
  case plan::InstrKind::GatherSecondary:
    gatherSecondaryCalls(A, In.Arg, Out);
    break;
  case plan::InstrKind::GatherParams:
    gatherParamsCalls(A, Out);
    break;
  case plan::InstrKind::ReduceReplicas:
    reduceReplicasCalls(A, In.Arg, Out);
    break;
  case plan::InstrKind::ReduceAcrossNodes:
    Out.push_back(qgzExchange(A, In.Arg, plan::qgzLayout(A.P, In.Arg), true));
    break;
  default:
    break;
  }
  return Out;
}

} // namespace dsrun
