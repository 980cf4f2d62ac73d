//===- Schedule.cpp - One training step as an instruction stream ----------===//
//
// The program a rank runs for one optimizer step:
//
//   for each micro step:
//     forward, op by op      stage 3: gather what each op needs, prefetch
//                            ahead, release what is not reused soon
//     backward, op by op     (recomputing a checkpointed layer first);
//                            each completed gradient goes to its bucket,
//                            a full bucket is reduced (stage 2/3 every
//                            micro step, stage 0/1 only the last)
//   optimizer step per sub-group (on the host when offloaded)
//   stage 1/2: all-gather the updated parameters
//
// Instructions on one stream run in program order. A cross-stream
// dependency is an explicit wait; waits also keep a buffer from being
// written before the memory it reuses is free: the memory plan reuses
// memory in program order, so an instruction that starts a buffer's life
// on another stream waits for the compute instruction before it.
//
//===----------------------------------------------------------------------===//

#include "PlanInternal.h"

#include "dsc/Plan/TimeTables.h"
#include "dsc/PlanFacts.h"

#include <array>
#include <deque>
#include <cstdlib>

#include "llvm/ADT/DenseMap.h"

#include <set>

using namespace llvm;

namespace dsc {

static uint64_t rateOf(plan::Collective Kind, uint64_t Default,
                       const std::vector<plan::CollectiveRate> &Rates) {
  for (const plan::CollectiveRate &R : Rates)
    if (R.Kind == plan::enumName(Kind))
      return R.BusBytesPerSec;
  return Default;
}

uint64_t withinNodeRate(plan::Collective Kind, const plan::Hardware &H) {
  return rateOf(Kind, H.CollectiveBytesPerSec, H.CollectiveRates);
}

/// The GPU's time table's bus bandwidth for a call of Bytes over Ranks (0:
/// a calibration measured the kind, or the table has no entry).
static uint64_t tableBusRate(plan::Collective Kind, const plan::Hardware &H,
                             uint64_t Bytes, uint32_t Ranks, bool ToEachRoot) {
  if (rateOf(Kind, 0, H.CollectiveRates))
    return 0;
  const TimeTable *T = shippedTimeTable(H.GpuName);
  return T ? uint64_t(collectiveBusRate(
                 *T, ToEachRoot ? "reduce" : plan::enumName(Kind), Bytes,
                 Ranks))
           : 0;
}

uint64_t betweenNodesRate(plan::Collective Kind, const plan::Info &S) {
  const plan::Hardware &H = S.Machine;
  return S.Nodes > 1 ? rateOf(Kind, H.InterNodeBytesPerSec, H.InterNodeRates)
                     : 0;
}

bool crossesNodes(const plan::Info &S) {
  for (unsigned K = 0; K < plan::EnumInfo<plan::Collective>::Count; ++K) {
    uint64_t Between = betweenNodesRate(plan::Collective(K), S);
    if (Between && Between < withinNodeRate(plan::Collective(K), S.Machine))
      return true;
  }
  return false;
}

uint64_t collectiveNanos(plan::Collective Kind, uint64_t Bytes,
                         const plan::Info &S, uint32_t Ranks, bool ToEachRoot,
                         uint64_t Moved, bool Strided) {
  if (!Ranks)
    Ranks = plan::partitionRanks(S);
  if (!Moved)
    Moved = Bytes;
  const plan::Hardware &H = S.Machine;
  // A calibration's rate or the machine's figure, with the latency of a
  // call beside it; the table's rates are times of whole calls, latency
  // and all.
  uint64_t Rate = withinNodeRate(Kind, H), Latency = H.CollectiveLatencyNanos;
  if (uint64_t Table = tableBusRate(Kind, H, Bytes, Ranks, ToEachRoot))
    Rate = Table, Latency = 0;
  // NCCL's rings and trees cross each node boundary with the same bytes a
  // rank sends within a node: the slower link sets the pace. Groups of
  // consecutive ranks stay in one node when they tile it.
  uint32_t Span = Strided ? S.WorldSize : Ranks;
  // Within a node, NCCL's zero-CTA policy runs all-gathers on the copy
  // engines, at the table's rate for them with a call's latency, where a
  // calibration did not measure the kind.
  if (Kind == plan::Collective::AllGather && !ToEachRoot &&
      S.CtaPolicy == plan::CommCtaPolicy::Zero &&
      plan::withinOneNode(S, Span) && !rateOf(Kind, 0, H.CollectiveRates))
    if (uint64_t CopyEngine = copyEngineGatherRate(H))
      Rate = CopyEngine, Latency = H.CollectiveLatencyNanos;
  if (uint64_t Between = betweenNodesRate(Kind, S);
      Between && !plan::withinOneNode(S, Span) && Between < Rate)
    Rate = Between, Latency = H.CollectiveLatencyNanos;
  if (Ranks <= 1 || !Rate)
    return 0;
  return Latency +
         transferNanos(uint64_t(double(Moved) * plan::busFactor(Kind, Ranks)),
                       Rate);
}

namespace {

using plan::InstrKind;
using plan::Stream;

/// An op's turn in a micro step: its forward, its recomputation, or its
/// backward.
struct Turn {
  InstrKind Kind;
  uint32_t Op;
  bool Recompute;
};

class Scheduler {
public:
  explicit Scheduler(plan::Plan &P)
      : P(P), S(P.Settings), H(P.Settings.Machine) {}

  Error run();

private:
  uint32_t emit(InstrKind Kind, Stream On, uint32_t Micro, uint32_t Arg,
                std::vector<uint32_t> Waits, uint64_t Nanos);
  std::vector<Turn> turnsOfMicroStep() const;
  std::vector<uint32_t> unitsOf(uint32_t Op) const;
  /// An op's forward or backward: its kernels, each at the slower of its
  /// arithmetic and its memory traffic.
  uint64_t computeNanos(const plan::Op &Op, bool Backward) const;
  uint64_t gradientHookNanos(uint32_t Op, uint32_t Micro) const;
  void computeTurn(const Turn &T, uint32_t Micro, bool Reduces,
                   const std::vector<std::vector<uint32_t>> &UnitsAt,
                   size_t Position);
  void gather(uint32_t Unit, uint32_t Micro);
  void prefetch(size_t Position, uint32_t Micro,
                const std::vector<std::vector<uint32_t>> &UnitsAt);
  void release(uint32_t Unit, uint32_t Micro);
  void gradientsReady(uint32_t Op, uint32_t BackwardInstr, uint32_t Micro,
                      bool Reduces);
  void reduce(uint32_t Bucket, uint32_t After, uint32_t Micro);
  uint64_t reduceNanos(const plan::Bucket &Bucket) const;
  struct QgzNanos {
    uint64_t WithinNode = 0, AcrossNodes = 0;
  };
  QgzNanos qgzNanos(uint32_t B, const plan::QgzLayout &L) const;
  uint64_t partitionCopyNanos(uint32_t B, uint32_t Micro) const;
  void optimizerStep();
  void transfersAt(plan::TransferPoint Point, uint32_t Owner,
                   std::vector<uint32_t> Waits, uint32_t Micro,
                   std::vector<uint32_t> *Emitted = nullptr);
  uint32_t lastComputeInstruction() const {
    return LastOn[unsigned(plan::Stream::Compute)];
  }

  plan::Plan &P;
  const plan::Info &S;
  const plan::Hardware &H;
  /// The kernels' measured times on this GPU kind, where dsc ships them.
  const TimeTable *Table = shippedTimeTable(H.GpuName);
  std::vector<uint32_t> UnitOfModule;
  /// Last instruction emitted on each stream (NoIndex: none yet).
  std::array<uint32_t, plan::NumStreams> LastOn = [] {
    std::array<uint32_t, plan::NumStreams> None;
    None.fill(plan::NoIndex);
    return None;
  }();
  /// Stage 3: the Gather instruction of each live unit.
  DenseMap<uint32_t, uint32_t> Live;
  uint64_t LiveElems = 0;
  /// Stage 3: the units gathered so far in the step.
  std::vector<bool> GatheredOnce;
  /// Buckets: gradients still missing, and the reduce instructions.
  std::vector<uint32_t> Missing;
  std::vector<uint32_t> BucketOfTensor;
  std::vector<uint32_t> ReduceInstr;
  uint32_t IpgBuffers = 1;
  std::vector<uint32_t> LastUseOfSlot;
  /// Reductions that read gradients where autograd left them (in place,
  /// or every bucket without contiguous_gradients), oldest first: the
  /// last instruction reading each. Their memory is in use until compute
  /// has waited for them.
  std::deque<uint32_t> PendingInPlace;
  /// Those still pending when a micro step's backward ends: DeepSpeed's
  /// epilogue synchronizes its reduction stream there, so the next compute
  /// instruction waits for all of them.
  std::vector<uint32_t> EndOfBackward;
  void endOfBackward() {
    EndOfBackward.insert(EndOfBackward.end(), PendingInPlace.begin(),
                         PendingInPlace.end());
    PendingInPlace.clear();
  }
  std::vector<uint32_t> AllReduces, AllGradTransfers;
  /// The copy out of each NVMe parameter buffer use, and the host
  /// conversion out of each gradient staging slot use, in program order.
  std::vector<uint32_t> ParamBufferCopies, GradStagingConverts;
  /// Turn positions at which each unit is used, for reuse distances.
  std::vector<uint64_t> ElemsBefore;
  std::vector<std::vector<size_t>> UsesOfUnit;
  DenseMap<uint32_t, std::vector<uint32_t>> TransfersOf[6];
};

uint32_t Scheduler::emit(InstrKind Kind, Stream On, uint32_t Micro,
                         uint32_t Arg, std::vector<uint32_t> Waits,
                         uint64_t Nanos) {
  uint32_t Index = P.Program.size();
  // Same-stream order is implicit; a wait on the same stream is noise.
  std::set<uint32_t> Unique;
  if (On == Stream::Compute) {
    Waits.insert(Waits.end(), EndOfBackward.begin(), EndOfBackward.end());
    EndOfBackward.clear();
  }
  for (uint32_t W : Waits)
    if (W != plan::NoIndex && P.Program[W].On != On)
      Unique.insert(W);
  P.Program.push_back(
      {Kind, On, Micro, Arg, std::vector<uint32_t>(Unique.begin(), Unique.end()),
       Nanos});
  LastOn[unsigned(On)] = Index;
  return Index;
}

std::vector<Turn> Scheduler::turnsOfMicroStep() const {
  std::vector<Turn> Turns;
  uint32_t N = P.Ops.size();
  for (uint32_t O = 0; O < N; ++O)
    Turns.push_back({InstrKind::Forward, O, false});
  for (uint32_t O = N; O-- > 0;) {
    uint32_t Layer = P.Ops[O].Layer;
    bool LastOfLayer = S.CheckpointLayers && Layer != plan::NoIndex &&
                       (O + 1 == N || P.Ops[O + 1].Layer != Layer);
    if (LastOfLayer) {
      uint32_t First = O;
      while (First > 0 && P.Ops[First - 1].Layer == Layer)
        --First;
      for (uint32_t R = First; R <= O; ++R)
        Turns.push_back({InstrKind::Forward, R, true});
    }
    Turns.push_back({InstrKind::Backward, O, false});
  }
  return Turns;
}

std::vector<uint32_t> Scheduler::unitsOf(uint32_t Op) const {
  std::vector<uint32_t> Units;
  for (uint32_t T : P.Ops[Op].Params) {
    uint32_t M = P.Tensors[T].Module;
    uint32_t U = M == plan::NoIndex ? plan::NoIndex : UnitOfModule[M];
    if (U != plan::NoIndex && !is_contained(Units, U))
      Units.push_back(U);
  }
  return Units;
}

uint64_t Scheduler::computeNanos(const plan::Op &Op, bool Backward) const {
  return instructionNanos(P.Kernels, Backward ? Op.Backward : Op.Forward, H,
                          Table);
}

/// What follows an op's backward in the same instruction: each trainable
/// parameter it uses first has its gradient copied to where the
/// reduction reads it (dsrun's gradientOf, DeepSpeed's gradient hooks):
/// into the flat buffer at stage 0/1, added to the earlier micro steps'
/// after the first; into its bucket at stage 2; its shards into the
/// bucket's chunks at stage 3, unless the bucket is reduced in place.
/// One copy kernel a parameter, at the machine's memory rate.
uint64_t Scheduler::gradientHookNanos(uint32_t OpIndex, uint32_t Micro) const {
  uint64_t Bytes = 0, Launches = 0;
  for (uint32_t T : P.Ops[OpIndex].Params) {
    const plan::Tensor &X = P.Tensors[T];
    if (X.FirstUse != OpIndex || X.Role != plan::TensorRole::Trainable)
      continue;
    uint32_t B = BucketOfTensor[T];
    if (S.ZeroStage >= 2 && (B == plan::NoIndex || P.Buckets[B].InPlace))
      continue;
    uint64_t Elems = S.ZeroStage == 3 ? plan::paddedElems(P, T) : X.Elems;
    uint64_t Passes = S.ZeroStage < 2 && Micro > 0 ? 3 : 2;
    Bytes += Passes * bytesOf(Elems, S.ParamDType);
    ++Launches;
  }
  return transferNanos(Bytes, H.MemoryBytesPerSec) +
         Launches * kernelGapNanos(H, Table);
}

void Scheduler::transfersAt(plan::TransferPoint Point, uint32_t Owner,
                            std::vector<uint32_t> Waits, uint32_t Micro,
                            std::vector<uint32_t> *Emitted) {
  auto It = TransfersOf[unsigned(Point)].find(Owner);
  if (It == TransfersOf[unsigned(Point)].end())
    return;
  bool ParamRead = false;
  for (uint32_t T : It->second) {
    const plan::Transfer &X = P.Transfers[T];
    // Offloaded gradients: the form this micro step uses (Offload.cpp).
    if (Point == plan::TransferPoint::AfterReduce &&
        X.Staged != plan::stagedGradients(P, Owner, Micro))
      continue;
    Stream On = X.Kind == plan::TransferKind::HostToDevice ? Stream::CopyIn
                : X.Kind == plan::TransferKind::DeviceToHost
                    ? Stream::CopyOut
                    : Stream::Host;
    // A stage-3 unit read from NVMe lands in one of aio's buffer_count
    // buffers, in turn: the read waits until the copy to the device out of
    // that buffer's previous contents is done.
    if (X.Kind == plan::TransferKind::NVMeRead &&
        Point == plan::TransferPoint::BeforeGather) {
      ParamRead = true;
      size_t Reads = ParamBufferCopies.size();
      if (S.AioBufferCount && Reads >= S.AioBufferCount)
        Waits.push_back(ParamBufferCopies[Reads - S.AioBufferCount]);
    }
    // Staged offloaded gradients go to the next staging slot in turn:
    // the copy waits until the host has converted that slot's previous
    // contents.
    size_t Converts = GradStagingConverts.size();
    if (Point == plan::TransferPoint::AfterReduce && X.Staged &&
        X.Kind == plan::TransferKind::DeviceToHost &&
        Converts >= plan::GradStagingSlots)
      Waits.push_back(GradStagingConverts[Converts - plan::GradStagingSlots]);
    uint32_t I = emit(InstrKind::Transfer, On, Micro, T, Waits, X.Nanos);
    if (X.Kind == plan::TransferKind::HostConvert)
      GradStagingConverts.push_back(I);
    if (ParamRead && X.Kind == plan::TransferKind::HostToDevice) {
      ParamBufferCopies.push_back(I);
      ParamRead = false;
    }
    Waits = {I}; // Transfers for one owner run in the order listed.
    if (Emitted)
      Emitted->push_back(I);
  }
}

void Scheduler::gather(uint32_t Unit, uint32_t Micro) {
  // The gathered buffer may reuse memory freed by compute so far.
  std::vector<uint32_t> Waits = {lastComputeInstruction()};
  std::vector<uint32_t> Copies;
  transfersAt(plan::TransferPoint::BeforeGather, Unit, Waits, Micro, &Copies);
  if (!Copies.empty())
    Waits.push_back(Copies.back());
  uint64_t Bytes = bytesOf(P.FetchUnits[Unit].Elems, S.ParamDType);
  // ZeRO++ hpZ: the first gather of the step, over every rank, leaves each
  // rank its group's share (a copy of a slice); the later ones gather
  // those shares within the group.
  bool Secondary = S.HpzPartition > 1 && GatheredOnce[Unit];
  uint64_t Nanos = 0;
  if (plan::unitGathersQuantized(P)) {
    // ZeRO++ qwZ: a rank quantizes what it sends (reads it, writes a byte
    // an element), the ranks gather the bytes and a scale per group, and
    // the whole is dequantized (a byte read, the parameter written).
    plan::QwzGather Q = plan::qwzGather(P, Unit, Secondary);
    uint64_t Whole = Q.Send * Q.Ranks, PB = plan::dtypeBytes(S.ParamDType);
    Nanos = collectiveNanos(plan::Collective::AllGather, Q.bytes(), S,
                            Secondary ? S.HpzPartition : 0) +
            transferNanos((Q.Send + Whole) * (PB + 1), H.MemoryBytesPerSec);
  } else {
    Nanos = collectiveNanos(plan::Collective::AllGather, Bytes, S,
                            Secondary ? S.HpzPartition : 0);
  }
  if (S.HpzPartition > 1 && !Secondary)
    Nanos += transferNanos(2 * Bytes / S.HpzPartition, H.MemoryBytesPerSec);
  // A gather among one rank (one rank, or MiCS's shard groups of one)
  // copies the rank's shards from params16 into the unit (offloaded ones
  // were copied in place).
  if (plan::partitionRanks(S) == 1 && S.ParamOffload == plan::OffloadDevice::None)
    Nanos += transferNanos(2 * Bytes, H.MemoryBytesPerSec);
  // Unpacking a rank-major gather reads and writes the unit once.
  if (plan::unitGathersRankMajor(P, Unit))
    Nanos += transferNanos(2 * Bytes, H.MemoryBytesPerSec);
  Live[Unit] = emit(Secondary ? InstrKind::GatherSecondary : InstrKind::Gather,
                    Stream::Comm, Micro, Unit, Waits, Nanos);
  GatheredOnce[Unit] = true;
  LiveElems += P.FetchUnits[Unit].Elems;
}

void Scheduler::release(uint32_t Unit, uint32_t Micro) {
  emit(InstrKind::Release, Stream::Compute, Micro, Unit, {}, 0);
  Live.erase(Unit);
  LiveElems -= P.FetchUnits[Unit].Elems;
}

void Scheduler::prefetch(size_t Position, uint32_t Micro,
                         const std::vector<std::vector<uint32_t>> &UnitsAt) {
  // DeepSpeed: prefetch the next units in trace order while the elements
  // in flight stay under min(max_live - live, prefetch_bucket_size).
  uint64_t Budget = S.MaxLiveParams > LiveElems ? S.MaxLiveParams - LiveElems
                                                : 0;
  Budget = std::min(Budget, S.PrefetchBucketElems);
  uint64_t Fetching = 0;
  // Look no further than the budget could reach: bounded work per turn.
  for (size_t Q = Position + 1; Q < UnitsAt.size() && Fetching < Budget &&
                                Q < Position + 256;
       ++Q)
    for (uint32_t U : UnitsAt[Q]) {
      if (Live.count(U) || Fetching >= Budget)
        continue;
      gather(U, Micro);
      Fetching += P.FetchUnits[U].Elems;
    }
}

void Scheduler::gradientsReady(uint32_t Op, uint32_t BackwardInstr,
                               uint32_t Micro, bool Reduces) {
  if (!Reduces)
    return;
  for (uint32_t T : P.Ops[Op].Params) {
    if (P.Tensors[T].FirstUse != Op ||
        P.Tensors[T].Role != plan::TensorRole::Trainable)
      continue;
    uint32_t B = BucketOfTensor[T];
    if (B == plan::NoIndex || --Missing[B] != 0)
      continue;
    reduce(B, BackwardInstr, Micro);
  }
}

uint64_t Scheduler::reduceNanos(const plan::Bucket &Bucket) const {
  uint64_t Bytes = bytesOf(Bucket.Elems, Bucket.Type);
  uint32_t W = S.WorldSize;
  uint64_t Part = P.Layout.PartitionElems;
  if (S.ZeroStage != 2 || W <= 1 || !Part)
    return collectiveNanos(Bucket.Kind, Bytes, S);
  // Stage 2 reduces each partition's piece of the bucket to the rank that
  // owns it (DeepSpeed's average_tensor). A piece crosses the links
  // whole, so a bucket inside one partition moves all its bytes, not the
  // (W - 1) / W a balanced reduce-scatter moves: the larger of the two.
  std::vector<uint64_t> Owned(W, 0);
  for (const plan::Segment &G : Bucket.Segments) {
    uint64_t Begin = P.Tensors[G.Tensor].FlatOffset + G.Begin,
             End = P.Tensors[G.Tensor].FlatOffset + G.End;
    while (Begin < End) {
      uint64_t Rank = std::min<uint64_t>(Begin / Part, W - 1);
      uint64_t Stop = Rank + 1 == W ? End : std::min(End, (Rank + 1) * Part);
      Owned[Rank] += Stop - Begin;
      Begin = Stop;
    }
  }
  uint64_t Largest = bytesOf(*std::max_element(Owned.begin(), Owned.end()),
                             Bucket.Type);
  // collectiveNanos counts (W - 1) / W of what it is given.
  uint64_t AsScatter = std::max<uint64_t>(
      Bytes, uint64_t(double(Largest) * W / (W - 1)));
  return collectiveNanos(Bucket.Kind, Bytes, S, 0, /*ToEachRoot=*/true,
                         AsScatter);
}

/// Stage 2/3 with the gradients on the device: after the reduction each
/// rank converts its share of the bucket into its gradient partition,
/// adding to what the partition holds from the second micro step on:
/// its elements read in the bucket's type, the partition's written (and
/// read where it adds), a kernel a piece at stage 2 and a tensor at
/// stage 3. At stage 2 a bucket's pieces belong to the ranks whose
/// partitions it crosses, often one; the step is charged the ranks'
/// mean share, since the ranks take turns (the 8B shape's 160 buckets
/// of 5e7 at 4 ranks, each one rank's, stepped 475.7 ms where copies
/// on the owner's path would have added 96 ms to a 513 ms plan).
uint64_t Scheduler::partitionCopyNanos(uint32_t B, uint32_t Micro) const {
  const plan::Bucket &Bucket = P.Buckets[B];
  if (S.ZeroStage < 2 || S.OptimizerOffload != plan::OffloadDevice::None)
    return 0;
  uint64_t Elems = 0, Launches = 0;
  plan::DType Into = S.ParamDType;
  if (S.ZeroStage == 2) {
    Elems = Bucket.Elems / std::max<uint32_t>(S.WorldSize, 1);
    Launches = 1;
  } else {
    Elems = plan::bucketShardElems(P, B);
    Launches = Bucket.Segments.size();
    Into = S.GradAccumDType;
  }
  uint64_t Bytes = bytesOf(Elems, Bucket.Type) +
                   bytesOf(Elems, Into) * (plan::gradientsAdd(S, Micro) ? 2 : 1);
  return transferNanos(Bytes, H.MemoryBytesPerSec) +
         Launches * kernelGapNanos(H, Table);
}

/// ZeRO++ qgZ across nodes, a bucket with quantized gradients. Its Reduce
/// reduce-scatters the other gradients over every rank beside the 4-bit
/// all-to-all within the node, then sums and requantizes what arrived; its
/// ReduceAcrossNodes sends the sums between nodes, sums what arrives and
/// adds the bucket to the gradient partition. Each other gradient's
/// reduce-scatter is a call of its own. An all-to-all is costed as
/// the reduce-scatter of the same buffer over the same ranks (each sends
/// (n - 1) / n of it), the kernels as the memory they move, three a
/// tensor.
Scheduler::QgzNanos Scheduler::qgzNanos(uint32_t B,
                                        const plan::QgzLayout &L) const {
  const plan::Bucket &Bucket = P.Buckets[B];
  uint64_t G = S.GpusPerNode, N = S.Nodes, Quantized = 0, Scatters = 0;
  for (const plan::Segment &Seg : Bucket.Segments) {
    uint64_t Elems = plan::paddedElems(P, Seg.Tensor);
    if (plan::qgzTensor(S, P.Tensors[Seg.Tensor]).Quantized)
      Quantized += Elems;
    else // Each alone, as DeepSpeed does: a call's latency apiece.
      Scatters += collectiveNanos(plan::Collective::ReduceScatter,
                                  bytesOf(Elems, Bucket.Type), S);
  }
  uint64_t Gap = kernelGapNanos(H, Table) * L.Pieces.size();
  // Read in fp16 and written at 4 bits; each peer's block read and the
  // sums written; each node's sum read and the partitions written.
  uint64_t Quantize = transferNanos(2 * Quantized + G * L.Block1,
                                    H.MemoryBytesPerSec),
           Sum = transferNanos(G * L.Block1 + N * L.Block2,
                               H.MemoryBytesPerSec),
           Finish = transferNanos(N * L.Block2 + 2 * Quantized / S.WorldSize,
                                  H.MemoryBytesPerSec);
  QgzNanos Out;
  Out.WithinNode =
      Scatters +
      collectiveNanos(plan::Collective::ReduceScatter, G * L.Block1, S,
                      uint32_t(G)) +
      Quantize + Sum + 2 * Gap;
  Out.AcrossNodes =
      collectiveNanos(plan::Collective::ReduceScatter, N * L.Block2, S,
                      uint32_t(N), /*ToEachRoot=*/false, /*Moved=*/0,
                      /*Strided=*/true) +
      Finish + Gap;
  return Out;
}

void Scheduler::reduce(uint32_t B, uint32_t After, uint32_t Micro) {
  const plan::Bucket &Bucket = P.Buckets[B];
  Stream On = S.OverlapComm ? Stream::Comm : Stream::Compute;
  if (plan::QgzLayout L = plan::qgzLayout(P, B); !L.Pieces.empty()) {
    QgzNanos Q = qgzNanos(B, L);
    AllReduces.push_back(
        emit(InstrKind::Reduce, On, Micro, B, {After}, Q.WithinNode));
    ReduceInstr[B] =
        emit(InstrKind::ReduceAcrossNodes, On, Micro, B, {AllReduces.back()},
             Q.AcrossNodes + partitionCopyNanos(B, Micro));
  } else {
    ReduceInstr[B] = emit(InstrKind::Reduce, On, Micro, B, {After},
                          reduceNanos(Bucket) + partitionCopyNanos(B, Micro));
  }
  AllReduces.push_back(ReduceInstr[B]);
  if (plan::replicaRanks(S) > 1 && Micro + 1 == S.GradAccum) {
    // MiCS: the step's summed share of the bucket, all-reduced across the
    // shard groups on the same stream (DeepSpeed's
    // allreduce_mics_shard_grads, at the accumulation boundary).
    uint64_t Bytes = bytesOf(plan::bucketShardElems(P, B), S.GradAccumDType);
    AllReduces.push_back(emit(
        InstrKind::ReduceReplicas, On, Micro, B, {ReduceInstr[B]},
        collectiveNanos(plan::Collective::AllReduce, Bytes, S,
                        plan::replicaRanks(S), /*ToEachRoot=*/false,
                        /*Moved=*/0, /*Strided=*/true)));
  }
  std::vector<uint32_t> Copies;
  transfersAt(plan::TransferPoint::AfterReduce, B, {ReduceInstr[B]}, Micro,
              &Copies);
  AllGradTransfers.insert(AllGradTransfers.end(), Copies.begin(),
                          Copies.end());
  // The bucket's buffer is free again once the reduction and the copies
  // out of it have read it (not the host conversions after them).
  uint32_t LastReader = ReduceInstr[B];
  for (uint32_t I : Copies)
    if (P.Transfers[P.Program[I].Arg].Kind != plan::TransferKind::HostConvert)
      LastReader = I;
  if (P.Buckets[B].BufferIndex != plan::NoIndex)
    LastUseOfSlot[P.Buckets[B].BufferIndex] = LastReader;
  if (Bucket.InPlace || !S.ContiguousGradients)
    PendingInPlace.push_back(LastReader);
}

void Scheduler::computeTurn(const Turn &T, uint32_t Micro, bool Reduces,
                            const std::vector<std::vector<uint32_t>> &UnitsAt,
                            size_t Position) {
  const plan::Op &Op = P.Ops[T.Op];
  std::vector<uint32_t> Waits;
  for (uint32_t U : UnitsAt[Position]) {
    if (!Live.count(U))
      gather(U, Micro);
    Waits.push_back(Live[U]);
  }
  if (S.ZeroStage == 3)
    prefetch(Position, Micro, UnitsAt);

  if (T.Kind == InstrKind::Backward && Reduces) {
    // A gradient copied into an IPG buffer waits until the reduction that
    // last used that buffer has read it.
    for (uint32_t Param : Op.Params) {
      if (P.Tensors[Param].FirstUse != T.Op ||
          BucketOfTensor[Param] == plan::NoIndex)
        continue;
      uint32_t Slot = P.Buckets[BucketOfTensor[Param]].BufferIndex;
      if (Slot != plan::NoIndex)
        Waits.push_back(LastUseOfSlot[Slot]);
    }
  }
  // Reductions of gradients in autograd's storage may run beside the
  // backward as many at a time as DeepSpeed lets them
  // (inPlaceReductionsInFlight); a backward beyond that waits for the
  // oldest, whose gradients' memory is then free.
  if (T.Kind == InstrKind::Backward)
    while (PendingInPlace.size() > plan::inPlaceReductionsInFlight(S)) {
      Waits.push_back(PendingInPlace.front());
      PendingInPlace.pop_front();
    }

  uint64_t Nanos = computeNanos(Op, T.Kind == InstrKind::Backward);
  if (T.Kind == InstrKind::Backward)
    Nanos += gradientHookNanos(T.Op, Micro);
  uint32_t I = emit(T.Kind, Stream::Compute, Micro, T.Op, Waits, Nanos);

  if (T.Kind == InstrKind::Backward)
    gradientsReady(T.Op, I, Micro, Reduces);

  // Release a unit unless its next use comes within max_reuse_distance
  // elements of fetched parameters.
  for (uint32_t U : UnitsAt[Position]) {
    const std::vector<size_t> &Uses = UsesOfUnit[U];
    auto Next = std::upper_bound(Uses.begin(), Uses.end(), Position);
    bool Reused = Next != Uses.end() &&
                  ElemsBefore[*Next] - ElemsBefore[Position + 1] <=
                      S.MaxReuseDistance;
    if (!Reused)
      release(U, Micro);
  }
}

void Scheduler::optimizerStep() {
  uint32_t Micro = S.GradAccum - 1;
  bool Host = S.OptimizerOffload != plan::OffloadDevice::None;
  // Everything reduced, and on the host if the step runs there.
  std::vector<uint32_t> Ready = {lastComputeInstruction()};
  if (!AllReduces.empty())
    Ready.push_back(AllReduces.back());
  if (!AllGradTransfers.empty())
    Ready.push_back(AllGradTransfers.back());
  // gradient_clipping, and fp16's overflow check: the global norm of the
  // reduced gradients first, where the optimizer runs; every sub-group's
  // step waits for it.
  std::vector<uint32_t> StepWaits = Ready;
  if (std::strtod(S.GradientClipping.c_str(), nullptr) > 0 ||
      S.ParamDType == plan::DType::F16) {
    uint64_t Owned = S.ZeroStage == 0 ? P.Layout.FlatElems
                                      : P.Layout.PartitionElems;
    // On the host the norm is one read of the gradients, bound by its
    // rate more than its bytes (9-11 G elements a second traced at 2
    // ranks a host, where its bytes would allow 19-38).
    uint64_t Nanos =
        Host ? hostPassNanos(Owned, bytesOf(1, plan::hostGradType(S)),
                             H.HostConvertElemsPerSec, H)
             : transferNanos(bytesOf(Owned, S.ParamDType), H.MemoryBytesPerSec);
    if (S.ZeroStage > 0 && S.WorldSize > 1)
      Nanos += collectiveNanos(plan::Collective::AllReduce, 4, S);
    StepWaits = {emit(InstrKind::ClipGradients,
                      Host ? Stream::Host : Stream::Compute, Micro,
                      plan::NoIndex, Ready, Nanos)};
  }
  std::vector<uint32_t> ParamCopies;
  for (uint32_t G = 0; G < P.Layout.SubGroups.size(); ++G) {
    uint64_t Elems = P.Layout.SubGroups[G].Elems;
    // NVMe: every sub-group's state passes through the same swap buffers,
    // so its read waits until the previous sub-group is out of them.
    std::vector<uint32_t> ReadWaits = Ready;
    if (S.OptimizerOffload == plan::OffloadDevice::NVMe && !ParamCopies.empty())
      ReadWaits.push_back(ParamCopies.back());
    transfersAt(plan::TransferPoint::BeforeStep, G, ReadWaits, Micro);
    uint64_t Nanos;
    if (Host) {
      Nanos = hostPassNanos(Elems, plan::hostAdamBytesPerElem(S),
                            H.HostAdamElemsPerSec, H);
      // Parameters kept on the host get their 16-bit copy in a pass of
      // its own: the master read, the copy written.
      if (S.ParamOffload != plan::OffloadDevice::None)
        Nanos += hostPassNanos(Elems, 4 + bytesOf(1, S.ParamDType),
                               H.HostConvertElemsPerSec, H);
    } else {
      // Memory-bound, one pass.
      uint64_t Bytes = Elems * plan::deviceAdamBytesPerElem(S);
      Nanos = transferNanos(Bytes, H.MemoryBytesPerSec);
      // Stage 3 writes the updated shards back tensor by tensor from the
      // master: a copy kernel a tensor (GPT-2 XL's 582 at 2 ranks: the
      // step traced 8.8-10.3 ms where the update alone plans 6.5).
      if (S.ZeroStage == 3) {
        const plan::SubGroup &Group = P.Layout.SubGroups[G];
        Nanos += transferNanos(bytesOf(Elems, S.MasterDType) +
                                   bytesOf(Elems, S.ParamDType),
                               H.MemoryBytesPerSec) +
                 (Group.EndTensor - Group.FirstTensor) *
                     kernelGapNanos(H, Table);
      }
    }
    // The host AdamW writes the 16-bit copy into the parameter staging,
    // which the previous sub-group's copy to the device may still read.
    std::vector<uint32_t> Waits = StepWaits;
    if (Host && S.ParamOffload == plan::OffloadDevice::None &&
        !ParamCopies.empty())
      Waits.push_back(ParamCopies.back());
    uint32_t Step = emit(InstrKind::OptimizerStep,
                         Host ? Stream::Host : Stream::Compute, Micro, G,
                         Waits, Nanos);
    transfersAt(plan::TransferPoint::AfterStep, G, {Step}, Micro,
                &ParamCopies);
  }
  // Stage 1/2 all-gather the updated partitions; stage 3 the updated
  // shards of the persistent parameters every rank keeps whole.
  uint64_t GatherElems = 0;
  if (S.ZeroStage == 1 || S.ZeroStage == 2)
    GatherElems = P.Layout.PaddedElems;
  else if (S.ZeroStage == 3)
    for (uint32_t T : P.Layout.Order)
      if (P.Tensors[T].Persistent)
        GatherElems += plan::paddedElems(P, T);
  if (GatherElems) {
    std::vector<uint32_t> Waits = {lastComputeInstruction()};
    if (!ParamCopies.empty())
      Waits.push_back(ParamCopies.back());
    if (LastOn[unsigned(Stream::Host)] != plan::NoIndex)
      Waits.push_back(LastOn[unsigned(Stream::Host)]);
    uint64_t Bytes = bytesOf(GatherElems, S.ParamDType);
    emit(InstrKind::GatherParams, Stream::Comm, Micro, plan::NoIndex, Waits,
         collectiveNanos(plan::Collective::AllGather, Bytes, S));
  }
}

Error Scheduler::run() {
  P.Program.clear();
  estimateKernels(P, H, Table);
  UnitOfModule = fetchUnitOfModule(P);
  for (uint32_t T = 0; T < P.Transfers.size(); ++T)
    TransfersOf[unsigned(P.Transfers[T].Point)][P.Transfers[T].Owner]
        .push_back(T);

  BucketOfTensor.assign(P.Tensors.size(), plan::NoIndex);
  for (uint32_t B = 0; B < P.Buckets.size(); ++B)
    for (const plan::Segment &Seg : P.Buckets[B].Segments)
      BucketOfTensor[Seg.Tensor] = B;
  // Bucket buffers (chosen by the bucket pass) carry over from one micro
  // step to the next.
  IpgBuffers = plan::bucketBuffers(S);
  LastUseOfSlot.assign(IpgBuffers, plan::NoIndex);

  std::vector<Turn> Turns = turnsOfMicroStep();
  std::vector<std::vector<uint32_t>> UnitsAt(Turns.size());
  UsesOfUnit.assign(P.FetchUnits.size(), {});
  GatheredOnce.assign(P.FetchUnits.size(), false);
  ElemsBefore.assign(Turns.size() + 1, 0);
  for (size_t I = 0; I < Turns.size(); ++I) {
    UnitsAt[I] = unitsOf(Turns[I].Op);
    ElemsBefore[I + 1] = ElemsBefore[I];
    for (uint32_t U : UnitsAt[I]) {
      UsesOfUnit[U].push_back(I);
      ElemsBefore[I + 1] += P.FetchUnits[U].Elems;
    }
  }

  for (uint32_t Micro = 0; Micro < S.GradAccum; ++Micro) {
    // Stage 0/1 reduce only at the accumulation boundary.
    bool Reduces = S.ZeroStage >= 2 || Micro + 1 == S.GradAccum;
    Missing.assign(P.Buckets.size(), 0);
    for (uint32_t B = 0; B < P.Buckets.size(); ++B)
      Missing[B] = P.Buckets[B].Segments.size();
    ReduceInstr.assign(P.Buckets.size(), plan::NoIndex);
    for (size_t I = 0; I < Turns.size(); ++I)
      computeTurn(Turns[I], Micro, Reduces, UnitsAt, I);
    endOfBackward();
    // DeepSpeed releases every gathered parameter at the end of backward.
    std::vector<uint32_t> Left;
    for (auto &[U, Instr] : Live)
      Left.push_back(U);
    llvm::sort(Left);
    for (uint32_t U : Left)
      release(U, Micro);
    // Trainable parameters no op uses never get a gradient; their
    // buckets still reduce (zeros), as DeepSpeed does at the boundary.
    if (Reduces)
      for (uint32_t B = 0; B < P.Buckets.size(); ++B)
        if (ReduceInstr[B] == plan::NoIndex)
          reduce(B, lastComputeInstruction(), Micro);
    endOfBackward();
  }
  optimizerStep();
  return Error::success();
}

} // namespace

Error runSchedulePass(plan::Plan &P) {
  if (P.Ops.empty())
    return planError("the model has no compute ops to schedule");
  if (Error E = Scheduler(P).run())
    return E;
  const plan::Hardware &H = P.Settings.Machine;
  chargeSharedGpu(P, chargedSharing(H, shippedTimeTable(H.GpuName)));
  return Error::success();
}

} // namespace dsc
