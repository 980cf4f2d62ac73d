//===- PlanFacts.h - What dsc and dsrun derive from a plan alike -*- C++ -*-===//
//
// Facts both sides compute from the plan the same way: NVMe swap sizes,
// how a fetch unit is gathered, which pieces of the flat partition a rank
// owns, a collective's bus factor, a view's offset for a rank, the kinds
// of instruction. Kept apart from the IR (PlanFormat.h), the codec
// (PlanCodec.h) and the verifier (PlanCheck.h).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLANFACTS_H
#define DSC_PLANFACTS_H

#include "dsc/PlanFormat.h"

#include <algorithm>
#include <string>

namespace dsc::plan {

/// NVMe swap I/O (ZeRO-Infinity) runs with O_DIRECT: file offsets, sizes
/// and host addresses in multiples of this.
constexpr uint64_t SwapAlignment = 4096;

/// Offloaded gradients reach the host through this many pinned staging
/// slots, taken in turn: a bucket's copy fills one while the host converts
/// the one before out of the other. Each slot starts on an aligned offset.
constexpr unsigned GradStagingSlots = 2;
constexpr uint64_t GradStagingAlignment = 256;

/// The ranks parameters, gradients and optimizer state are partitioned
/// over: every rank, or with MiCS the rank's shard group of MicsShard
/// consecutive ranks.
inline uint32_t partitionRanks(const Info &S) {
  return S.MicsShard ? S.MicsShard : S.WorldSize;
}

/// Which of those partitions rank Rank holds: its place in its group.
inline uint32_t partitionRank(const Info &S, uint32_t Rank) {
  return Rank % partitionRanks(S);
}

/// How many ranks hold each partition: 1, or with MiCS the shard groups,
/// whose ranks of the same place all-reduce their gradients once a step.
inline uint32_t replicaRanks(const Info &S) {
  return S.WorldSize / partitionRanks(S);
}

/// A stage-3 tensor as its partitions hold it, padding and all.
inline uint64_t paddedElems(const Plan &P, const Tensor &T) {
  return T.ShardElems * partitionRanks(P.Settings);
}
inline uint64_t paddedElems(const Plan &P, uint32_t T) {
  return paddedElems(P, P.Tensors[T]);
}

/// Stage 3: a rank's shards of a bucket's tensors, what its reduction
/// leaves the rank (and MiCS's replicas all-reduce).
inline uint64_t bucketShardElems(const Plan &P, uint32_t Bucket) {
  uint64_t Elems = 0;
  for (const Segment &G : P.Buckets[Bucket].Segments)
    Elems += P.Tensors[G.Tensor].ShardElems;
  return Elems;
}

/// The kernels a forward or backward instruction runs (its op's); none
/// for any other instruction.
inline Interval kernelsOf(const Plan &P, const Instruction &In) {
  if (In.Arg >= P.Ops.size())
    return {};
  if (In.Kind == InstrKind::Forward)
    return P.Ops[In.Arg].Forward;
  if (In.Kind == InstrKind::Backward)
    return P.Ops[In.Arg].Backward;
  return {};
}

/// The type a bucket's reduced gradients have on the device, where an
/// offloaded copy reads them: 16-bit parameters' type at stage 1/2 and
/// for a stage-3 bucket reduced in place, else the communication type.
inline DType gradSourceType(const Plan &P, uint32_t Bucket) {
  const Info &S = P.Settings;
  return S.ZeroStage < 3 || P.Buckets[Bucket].InPlace ? S.ParamDType
                                                      : S.CommDType;
}

/// The type of the host's gradient partition with the optimizer offloaded:
/// fp32 at stage 1/2, the accumulation type at stage 3.
inline DType hostGradType(const Info &S) {
  return S.ZeroStage < 3 ? DType::F32 : S.GradAccumDType;
}

/// The bytes of host memory the host AdamW moves an element: it reads the
/// gradient, reads and writes the fp32 master and both moments, and
/// writes the 16-bit copy of parameters that live on the device in the
/// same pass.
inline uint64_t hostAdamBytesPerElem(const Info &S) {
  bool ParamsOnHost = S.ParamOffload != OffloadDevice::None;
  return dtypeBytes(hostGradType(S)) + 24 +
         (ParamsOnHost ? 0 : dtypeBytes(S.ParamDType));
}

/// The bytes of device memory the device AdamW (one pass, dsrun's adamw
/// kernel) moves an element: master and states read and written, the
/// gradient read as its buffer holds it (the parameters' type below stage
/// 3, the accumulation type at 3), and below stage 3 the updated
/// parameters written, unless they are the master itself (fp32 at stage
/// 0). Stage 3's copies of the updated shards come after, apart.
inline uint64_t deviceAdamBytesPerElem(const Info &S) {
  bool MasterIsParams = S.ZeroStage == 0 && S.ParamDType == DType::F32;
  return 2 * (dtypeBytes(S.MasterDType) +
              S.OptimizerStates * dtypeBytes(S.OptimizerStateDType)) +
         dtypeBytes(S.ZeroStage == 3 ? S.GradAccumDType : S.ParamDType) +
         (S.ZeroStage < 3 && !MasterIsParams ? dtypeBytes(S.ParamDType) : 0);
}

/// Whether micro step Micro adds its reduced gradients to the ones the
/// partition holds (stage 1 reduces once, the sum of every micro step).
inline bool gradientsAdd(const Info &S, uint32_t Micro) {
  return S.ZeroStage >= 2 && Micro > 0;
}

/// Whether an offloaded bucket's gradients go through a pinned staging
/// slot and a host conversion in micro step Micro: where their type
/// changes or they are added to the partition's. Otherwise one copy puts
/// them in place (a device-side conversion would double the bytes crossing
/// the host link, which the staged bf16 copy does not).
inline bool stagedGradients(const Plan &P, uint32_t Bucket, uint32_t Micro) {
  return gradSourceType(P, Bucket) != hostGradType(P.Settings) ||
         gradientsAdd(P.Settings, Micro);
}

/// Whether any micro step of the step stages the bucket's gradients: the
/// second one does if any does (the first only where the type changes).
inline bool stagedInSomeMicroStep(const Plan &P, uint32_t Bucket) {
  return stagedGradients(P, Bucket, P.Settings.GradAccum > 1 ? 1 : 0);
}

/// Bytes a stage-3 fetch unit takes in an NVMe parameter buffer and in the
/// swap file: each tensor's shard starts on an aligned offset.
inline uint64_t swapUnitBytes(const Plan &P, uint32_t Unit) {
  uint64_t Bytes = 0, PB = dtypeBytes(P.Settings.ParamDType);
  for (uint32_t T : P.FetchUnits[Unit].Tensors)
    Bytes += (P.Tensors[T].ShardElems * PB + SwapAlignment - 1) /
             SwapAlignment * SwapAlignment;
  return Bytes;
}

/// Bucket buffers the gradients are copied into (contiguous_gradients):
/// two under overlap_comm, used alternately, so that the backward fills
/// one while the other is reduced; else one. DeepSpeed double-buffers at
/// stage 1/2; at stage 3 it has one buffer but copies into it on the
/// reduction's stream, so its backward does not wait for the reduction
/// either: the gradients waiting for their copy hold about a bucket's
/// memory, which the second buffer stands for.
inline unsigned bucketBuffers(const Info &S) {
  return S.ZeroStage > 0 && S.OverlapComm ? 2 : 1;
}

/// How many reductions reading gradients where autograd left them (a
/// gradient larger than the bucket, reduced alone from its own storage;
/// every bucket without contiguous_gradients) may run beside the backward
/// before the backward waits for the oldest, whose gradients are then
/// freed: DeepSpeed's stage 3 records an event per reduction and blocks
/// once more than max_param_reduce_events (2) are outstanding, so up to 3
/// run beside the backward (stage3.py, __reduce_and_partition_ipg_grads);
/// stage 1/2 under overlap_comm waits for every earlier reduction before
/// issuing the next (stage_1_and_2.py, average_tensor), so 1 does. Without
/// overlap_comm the reduction runs on the compute stream: none.
inline size_t inPlaceReductionsInFlight(const Info &S) {
  if (!S.OverlapComm)
    return 0;
  return S.ZeroStage == 3 ? 3 : 1;
}

/// Stage 3: how a fetch unit is gathered. A unit of several tensors is
/// all-gathered with one NCCL call into its rank-major "gather.U" buffer
/// (rank r's chunk holds its shards of every tensor, in unit order) and
/// then unpacked into "unit.U", tensor by tensor, as DeepSpeed's coalesced
/// all-gather does; a unit of one tensor, or any unit on one rank, is
/// already in tensor order when gathered and goes into unit.U directly.
inline bool unitGathersRankMajor(const Plan &P, uint32_t Unit) {
  return P.FetchUnits[Unit].Tensors.size() > 1 &&
         partitionRanks(P.Settings) > 1;
}

/// ZeRO++ qwZ: whether the unit's gathers move int8 weights. As in
/// DeepSpeed, a single rank gathers nothing, so quantizes nothing.
inline bool unitGathersQuantized(const Plan &P) {
  return P.Settings.QuantizedWeights && P.Settings.ZeroStage == 3 &&
         partitionRanks(P.Settings) > 1;
}

/// ZeRO++ qwZ: how many groups, each with its own scale, DeepSpeed's
/// CUDAQuantizer cuts a rank's partition of Elems elements into: the
/// fewest of at most 8000 elements whose size is a multiple of 8
/// (partition_parameters.py). Its second loop, doubling the count while
/// a group holds more than 8000, never runs after the first; it is kept
/// as written. 0 where its assertions fail: Elems is not a multiple of 8.
inline uint64_t qwzGroups(uint64_t Elems) {
  constexpr uint64_t Target = 8000;
  if (Elems == 0 || Elems % 8)
    return 0;
  // The smallest divisor of Elems / 8 not below ceil(Elems / Target):
  // DeepSpeed counts up to it one at a time; the divisors come in pairs.
  uint64_t Eighths = Elems / 8, Least = (Elems + Target - 1) / Target;
  uint64_t Groups = Eighths;
  for (uint64_t D = 1; D * D <= Eighths; ++D)
    if (Eighths % D == 0) {
      if (D >= Least)
        Groups = std::min(Groups, D);
      else if (Eighths / D >= Least)
        Groups = std::min(Groups, Eighths / D);
    }
  while (Elems % (16 * Groups) == 0 && Elems > Target * Groups)
    Groups *= 2;
  return Groups;
}

/// A stage-3 unit's chunk: a rank's shards of its tensors, side by side.
inline uint64_t unitChunkElems(const Plan &P, uint32_t Unit) {
  uint64_t Chunk = 0;
  for (uint32_t T : P.FetchUnits[Unit].Tensors)
    Chunk += P.Tensors[T].ShardElems;
  return Chunk;
}

/// ZeRO++ qwZ: what one gather of a unit moves. Each of Ranks ranks (all
/// of them, or the hpZ group's members for a GatherSecondary, which
/// quantizes the secondary partition) sends Send elements as bytes and a
/// scale per quantization group.
struct QwzGather {
  uint64_t Send = 0, Groups = 0;
  uint32_t Ranks = 0;
  uint64_t bytes() const { return (Send + Groups * 4) * Ranks; }
};
inline QwzGather qwzGather(const Plan &P, uint32_t Unit, bool Secondary) {
  uint32_t All = partitionRanks(P.Settings);
  uint32_t Ranks = Secondary ? P.Settings.HpzPartition : All;
  uint64_t Send = unitChunkElems(P, Unit) * All / Ranks;
  return {Send, qwzGroups(Send), Ranks};
}

/// ZeRO++ qwZ: a unit's qwz_gather buffer, in bytes: every rank's int8
/// chunk (which a GatherSecondary receives too), from ScalesAt the
/// scales of every rank (or of every group member, the larger), and with
/// hpZ the rank's quantized secondary partition at SecondaryAt and its
/// scales at SecondaryScalesAt.
struct QwzLayout {
  uint64_t ScalesAt = 0, SecondaryAt = 0, SecondaryScalesAt = 0, Bytes = 0;
};
inline QwzLayout qwzLayout(const Plan &P, uint32_t Unit) {
  auto Align4 = [](uint64_t N) { return (N + 3) / 4 * 4; };
  QwzGather Full = qwzGather(P, Unit, false);
  QwzLayout L;
  L.ScalesAt = Align4(Full.Send * Full.Ranks);
  uint64_t Scales = Full.Groups * Full.Ranks;
  if (P.Settings.HpzPartition < 2)
    return L.Bytes = L.ScalesAt + Scales * 4, L;
  QwzGather Group = qwzGather(P, Unit, true);
  Scales = std::max(Scales, Group.Groups * Group.Ranks);
  L.SecondaryAt = L.ScalesAt + Scales * 4;
  L.SecondaryScalesAt = Align4(L.SecondaryAt + Group.Send);
  L.Bytes = L.SecondaryScalesAt + Group.Groups * 4;
  return L;
}

/// ZeRO++ qgZ as DeepSpeed runs it across nodes (stage3.py
/// __avg_scatter_grads once the world spans more than one node; on one
/// node it reduce-scatters as plain ZeRO 3).
inline bool qgzAcrossNodes(const Info &S) {
  return S.QuantizedGradients && S.ZeroStage == 3 && S.Nodes > 1;
}

/// How DeepSpeed's qgZ reduces one gradient (coalesced_collectives.py
/// all_to_all_quant_reduce): quantized where it has two or more dimensions
/// and its elements divide by twice the world, in Groups = max(rows,
/// columns, world) runs of GroupSize elements, a 4-bit scale a run; else
/// by the plain reduce-scatter over every rank.
struct QgzTensor {
  bool Quantized = false;
  uint64_t Groups = 0, GroupSize = 0;
};
inline QgzTensor qgzTensor(const Info &S, const Tensor &T) {
  QgzTensor Q;
  uint64_t W = S.WorldSize;
  if (T.Shape.size() < 2 || !W || T.Elems % (2 * W))
    return Q;
  Q.Quantized = true;
  Q.Groups = std::max<uint64_t>({uint64_t(T.Shape[0]), uint64_t(T.Shape[1]),
                                 W});
  Q.GroupSize = T.Elems / Q.Groups;
  return Q;
}

/// Why DeepSpeed's qgZ kernels cannot reduce a quantized tensor as they
/// assume ("" when they can): its groups must split evenly over the ranks
/// (else the scales' all-to-all fails), hold a multiple of 8 elements (16-
/// byte loads) and at most 40960 (the largest group its kernel launches
/// for; beyond, it sends memory it never wrote).
inline std::string qgzMisfit(const Info &S, const QgzTensor &Q) {
  if (!Q.Quantized)
    return "";
  if (Q.Groups % S.WorldSize)
    return std::to_string(Q.Groups) + " quantization groups (the largest of "
           "its first two dimensions and the world) do not split evenly over " +
           std::to_string(S.WorldSize) + " ranks";
  if (Q.GroupSize % 8)
    return "its groups of " + std::to_string(Q.GroupSize) +
           " elements are not a multiple of 8";
  if (Q.GroupSize > 40960)
    return "its groups of " + std::to_string(Q.GroupSize) +
           " elements exceed the 40960 DeepSpeed's kernel is launched for";
  return "";
}

/// ZeRO++ qgZ: a bucket's quantized gradients and the workspace its
/// reduction runs through (bytes; `qgz_reduce`). Each region is blocks of
/// one peer each, every block the quantized tensors in bucket order, then
/// their fp32 scales:
///   - Send1: g blocks, block l each tensor's partitions of the ranks of
///     local index l (node 0 first), 4-bit: the all-to-all within the node;
///   - Recv1: what each of the node's g ranks sent this rank;
///   - Send2: n blocks, block m the node's sum of this rank's local index's
///     partition on node m, requantized: the all-to-all across nodes;
///   - Recv2: each node's sum of this rank's partition.
/// g is GPUs a node, n nodes; a partition is a tensor's elements / world.
struct QgzLayout {
  struct Piece {
    uint32_t Tensor = 0;
    QgzTensor Q;
    /// Within a block: where its bytes and (in scales) its scales start.
    uint64_t Data1 = 0, Scales1 = 0, Data2 = 0, Scales2 = 0;
  };
  std::vector<Piece> Pieces; ///< Quantized tensors, in bucket order.
  uint64_t Block1 = 0, ScalesAt1 = 0, Block2 = 0, ScalesAt2 = 0;
  uint64_t Send1 = 0, Recv1 = 0, Send2 = 0, Recv2 = 0, Bytes = 0;
};
inline QgzLayout qgzLayout(const Plan &P, uint32_t Bucket) {
  const Info &S = P.Settings;
  QgzLayout L;
  if (!qgzAcrossNodes(S))
    return L;
  uint64_t W = S.WorldSize, G = S.GpusPerNode, N = S.Nodes;
  uint64_t Data1 = 0, Scales1 = 0, Data2 = 0, Scales2 = 0;
  for (const Segment &Seg : P.Buckets[Bucket].Segments) {
    const Tensor &T = P.Tensors[Seg.Tensor];
    QgzLayout::Piece Pc{Seg.Tensor, qgzTensor(S, T), Data1, Scales1, Data2,
                        Scales2};
    if (!Pc.Q.Quantized)
      continue;
    Data1 += T.Elems / (2 * G);
    Scales1 += Pc.Q.Groups / G;
    Data2 += T.Elems / (2 * W);
    Scales2 += Pc.Q.Groups / W;
    L.Pieces.push_back(Pc);
  }
  if (L.Pieces.empty())
    return L;
  // Scales start on a word: blocks of 4-bit data are multiples of 4 bytes
  // wherever the groups fit (qgzMisfit), rounded up for any that do not.
  auto Align4 = [](uint64_t B) { return (B + 3) / 4 * 4; };
  L.ScalesAt1 = Align4(Data1);
  L.Block1 = L.ScalesAt1 + 4 * Scales1;
  L.ScalesAt2 = Align4(Data2);
  L.Block2 = L.ScalesAt2 + 4 * Scales2;
  L.Recv1 = G * L.Block1;
  L.Send2 = 2 * G * L.Block1;
  L.Recv2 = L.Send2 + N * L.Block2;
  L.Bytes = L.Recv2 + N * L.Block2;
  return L;
}

/// Elements [Begin, End) of a trainable tensor that a rank owns and
/// updates, and where they sit among the rank's partition elements.
struct OwnedPiece {
  uint32_t Tensor = 0;
  uint64_t Begin = 0, End = 0, PartitionOffset = 0;
};

/// The pieces rank Rank owns, in partition order: every tensor whole at
/// stage 0; at stage 1/2 the parts of tensors inside the rank's range of
/// the flat buffer [Rank x partition, (Rank + 1) x partition); at stage 3
/// its shard of each tensor (elements [R x shard, ...) that are not
/// padding, R its partitionRank), where the placement puts the tensor's
/// shards.
inline std::vector<OwnedPiece> ownedPieces(const Plan &P, uint32_t Rank) {
  std::vector<OwnedPiece> Out;
  Rank = partitionRank(P.Settings, Rank);
  const Partition &L = P.Layout;
  uint32_t Stage = P.Settings.ZeroStage;
  if (Stage < 3) {
    uint64_t Begin = Stage == 0 ? 0 : uint64_t(Rank) * L.PartitionElems;
    uint64_t End = Stage == 0 ? L.FlatElems : Begin + L.PartitionElems;
    for (uint32_t T : L.Order) {
      const Tensor &X = P.Tensors[T];
      uint64_t B = X.FlatOffset > Begin ? X.FlatOffset : Begin;
      uint64_t E = X.FlatOffset + X.Elems < End ? X.FlatOffset + X.Elems : End;
      if (B < E)
        Out.push_back({T, B - X.FlatOffset, E - X.FlatOffset, B - Begin});
    }
    return Out;
  }
  for (uint32_t T : L.Order) {
    const Tensor &X = P.Tensors[T];
    uint64_t B = uint64_t(Rank) * X.ShardElems;
    uint64_t E = X.Elems < B + X.ShardElems ? X.Elems : B + X.ShardElems;
    if (B < E && T < P.Places.Tensors.size())
      Out.push_back({T, B, E, P.Places.Tensors[T].PartitionOffset});
  }
  return Out;
}

/// The elements a rank owns that hold parameters: the partition less the
/// padding after the last tensor (stage 1/2), every flat element (stage 0),
/// the whole partition (stage 3, whose padding is kept at zero).
inline uint64_t ownedRealElems(const Plan &P, uint32_t Rank) {
  const Partition &L = P.Layout;
  uint32_t Stage = P.Settings.ZeroStage;
  if (Stage == 0)
    return L.FlatElems;
  if (Stage == 3)
    return L.PartitionElems;
  uint64_t Begin = uint64_t(Rank) * L.PartitionElems;
  if (Begin >= L.FlatElems)
    return 0;
  return L.FlatElems - Begin < L.PartitionElems ? L.FlatElems - Begin
                                                : L.PartitionElems;
}

/// nccl-tests' bus bandwidth factor: the share of a collective's bytes
/// that crosses each rank's link. All-reduce moves 2(n-1)/n of the buffer,
/// reduce-scatter and all-gather (n-1)/n of the whole.
inline double busFactor(Collective Kind, uint32_t World) {
  if (World <= 1)
    return 1;
  double Share = double(World - 1) / World;
  return Kind == Collective::AllReduce ? 2 * Share : Share;
}

/// The view a rank sees: where it starts in its buffer, in bytes. Rank
/// strides step over partitions: Rank is the rank's partitionRank.
inline uint64_t viewOffset(const View &V, uint32_t Rank) {
  return V.Offset + uint64_t(Rank) * V.RankStride;
}

/// What an instruction's time counts as when a step is split, in the
/// planner's estimate and in dsrun's measurement alike: a collective is
/// communication and a transfer or host work offload, whatever stream it
/// runs on (without overlap_comm, reductions run on the compute stream).
inline bool isCommunication(const Instruction &In) {
  return In.Kind == InstrKind::Reduce || In.Kind == InstrKind::Gather ||
         In.Kind == InstrKind::GatherSecondary ||
         In.Kind == InstrKind::ReduceReplicas ||
         In.Kind == InstrKind::ReduceAcrossNodes ||
         In.Kind == InstrKind::GatherParams;
}

/// Whether Ranks consecutive ranks lie within one node: one node, or
/// groups that tile a node.
inline bool withinOneNode(const Info &S, uint64_t Ranks) {
  return S.Nodes == 1 || (Ranks && Ranks <= S.GpusPerNode &&
                          S.GpusPerNode % Ranks == 0);
}

/// Whether an instruction's collectives run on the copy engines, taking
/// no SMs from the compute beside them: the all-gathers within one node
/// (NVLink), under NCCL's zero-CTA policy (Info::CtaPolicy); those that
/// cross nodes keep NCCL's kernels.
inline bool gathersOnCopyEngines(const Info &S, const Instruction &In) {
  if (S.CtaPolicy != CommCtaPolicy::Zero)
    return false;
  switch (In.Kind) {
  case InstrKind::Gather: // Over the partition's ranks (MiCS: its group).
    return withinOneNode(S, partitionRanks(S));
  case InstrKind::GatherSecondary: // Within hpZ's group.
    return withinOneNode(S, S.HpzPartition);
  case InstrKind::GatherParams: // Stage 1/2's updated parameters.
    return withinOneNode(S, S.WorldSize);
  default:
    return false;
  }
}

inline bool isOffload(const Instruction &In) {
  return In.Kind == InstrKind::Transfer || In.On == Stream::Host;
}

/// When each instruction starts and finishes in the planner's replay of
/// one step, in nanoseconds: on its stream after the one before it and
/// after everything it waits for, taking its estimated Nanos, or none
/// where Free(In) holds. The estimate's step time is the latest finish;
/// dsrun --trace sets these beside what it measured.
struct PlannedSpan {
  uint64_t Start = 0, Finish = 0;
};
template <typename Pred>
std::vector<PlannedSpan> replaySpans(const Plan &P, Pred Free) {
  std::vector<PlannedSpan> Spans(P.Program.size());
  uint64_t StreamFree[NumStreams] = {};
  for (size_t I = 0; I < P.Program.size(); ++I) {
    const Instruction &In = P.Program[I];
    uint64_t Start = StreamFree[unsigned(In.On)];
    for (uint32_t W : In.Waits)
      if (W < I)
        Start = std::max(Start, Spans[W].Finish);
    Spans[I] = {Start, Start + (Free(In) ? 0 : In.Nanos)};
    StreamFree[unsigned(In.On)] = Spans[I].Finish;
  }
  return Spans;
}
inline std::vector<PlannedSpan> replaySpans(const Plan &P) {
  return replaySpans(P, [](const Instruction &) { return false; });
}

} // namespace dsc::plan

#endif // DSC_PLANFACTS_H
