//===- MemoryPlan.cpp - Every buffer, its lifetime, its offset ------------===//
//
// Lists every buffer a rank needs over one step, with the instructions
// during which it holds live data, for each rank class; then places the
// buffers of each memory space in one arena: largest first, each at the
// lowest offset where it overlaps no placed buffer that is live at the
// same time. The arena size is the device (or host) memory the plan
// needs; the estimate compares it with the largest sum of live bytes,
// which no placement can beat.
//
// What DeepSpeed allocates, per stage (docs/planner.md; DeepSpeed's
// stage_1_and_2.py and stage3.py):
//   16-bit parameters: all of them (stage 0-2), or this rank's shards
//     plus the persistent ones (stage 3), on the host with param offload;
//   gradients: full 16-bit gradients (stage 0/1, accumulated over micro
//     steps), the gradients overlapping the partition (stage 2), the
//     partition in grad_accum_dtype (stage 3, on the host when the
//     optimizer is offloaded);
//   fp32 master weights and optimizer states of the partition, on the
//     host when offloaded; an fp32 gradient of the partition while the
//     optimizer steps (stage 3: of one sub-group at a time);
//   the reduction bucket, doubled for stage 1/2 under overlap_comm;
//   stage 3 gathered units, from their gather to their release, and for
//     a unit of several tensors the rank-major buffer NCCL gathers it
//     into, until the first op that uses it (DeepSpeed's coalesced
//     all-gather frees its flat buffer after unpacking there);
//   every value of the compute program -- activations from the kernel that
//   writes them to the last that reads them, autograd's gradient of a
//   parameter until its hook has copied it into the bucket, activation
//   gradients, inputs, constants -- and the kernels' workspace.
//
//===----------------------------------------------------------------------===//

#include "PlanInternal.h"

#include "llvm/Support/FormatVariadic.h"
#include "dsc/PlanFacts.h"

#include <array>

using namespace llvm;

namespace dsc {

namespace {

using plan::BufferRole;
using plan::Category;
using plan::MemorySpace;

/// Device allocations are aligned as cudaMalloc aligns them.
constexpr uint64_t ArenaAlignment = 256;
/// Host buffers start on pages: NVMe swap I/O goes direct (O_DIRECT) only
/// into page-aligned memory.
constexpr uint64_t HostAlignment = plan::SwapAlignment;

/// Where each instruction of interest sits in the program.
struct ProgramIndex {
  uint32_t Micros;
  std::vector<std::vector<uint32_t>> Forward, Recompute, Backward;
  std::vector<uint32_t> FirstBackward, LastBackward, FirstCompute;
  std::vector<std::vector<uint32_t>> TransferInstrs; ///< Per transfer.
  /// Per fetch unit, each time it is gathered: from the first write (the
  /// copy of host shards, or the gather) to its release.
  std::vector<std::vector<plan::Interval>> Gathered;
  /// Per fetch unit, the Gather instruction of each of those times.
  std::vector<std::vector<uint32_t>> GatherInstr;
  /// Per fetch unit with ZeRO++ hpZ: its first gather of the step, which
  /// fills its secondary partition.
  std::vector<uint32_t> FirstGather;
  std::vector<uint32_t> StepInstr;                    ///< Per sub-group.
  std::vector<uint32_t> Reduces;
  /// Per bucket and micro step: the last instruction reading its
  /// gradients (the reduction and the copies out of it), and, where it
  /// reads them where autograd left them, the first compute instruction
  /// that knows it finished: their memory is free from there.
  std::vector<std::vector<uint32_t>> LastBucketReadOf, GradientsFreedAt;
  uint32_t FirstReduce = plan::NoIndex, LastReduce = 0;
  /// The last instruction reading a bucket buffer (a reduction or a copy
  /// out of it).
  uint32_t LastBucketRead = 0;
  uint32_t FirstStep = plan::NoIndex;
  uint32_t End = 0;

  explicit ProgramIndex(const plan::Plan &P) {
    Micros = P.Settings.GradAccum;
    size_t N = P.Ops.size();
    Forward.assign(Micros, std::vector<uint32_t>(N, plan::NoIndex));
    Recompute = Backward = Forward;
    FirstBackward.assign(Micros, plan::NoIndex);
    LastBackward.assign(Micros, 0);
    FirstCompute.assign(Micros, plan::NoIndex);
    TransferInstrs.resize(P.Transfers.size());
    Gathered.resize(P.FetchUnits.size());
    GatherInstr.resize(P.FetchUnits.size());
    FirstGather.assign(P.FetchUnits.size(), plan::NoIndex);
    StepInstr.assign(P.Layout.SubGroups.size(), plan::NoIndex);
    LastBucketReadOf.assign(P.Buckets.size(),
                            std::vector<uint32_t>(Micros, plan::NoIndex));
    std::vector<uint32_t> GatherOpen(P.FetchUnits.size(), plan::NoIndex);
    // A host shard copied in before its gather already writes the buffer.
    std::vector<uint32_t> CopiedIn(P.FetchUnits.size(), plan::NoIndex);
    End = P.Program.size();
    for (uint32_t I = 0; I < End; ++I) {
      const plan::Instruction &In = P.Program[I];
      uint32_t M = In.Micro;
      switch (In.Kind) {
      case plan::InstrKind::Forward:
        if (FirstCompute[M] == plan::NoIndex)
          FirstCompute[M] = I;
        (FirstBackward[M] == plan::NoIndex ? Forward : Recompute)[M][In.Arg] =
            I;
        break;
      case plan::InstrKind::Backward:
        if (FirstBackward[M] == plan::NoIndex)
          FirstBackward[M] = I;
        LastBackward[M] = I;
        Backward[M][In.Arg] = I;
        break;
      case plan::InstrKind::Gather:
      case plan::InstrKind::GatherSecondary:
        GatherOpen[In.Arg] = std::min(I, CopiedIn[In.Arg]);
        CopiedIn[In.Arg] = plan::NoIndex;
        GatherInstr[In.Arg].push_back(I);
        if (In.Kind == plan::InstrKind::Gather &&
            FirstGather[In.Arg] == plan::NoIndex)
          FirstGather[In.Arg] = I;
        break;
      case plan::InstrKind::Release:
        Gathered[In.Arg].push_back({GatherOpen[In.Arg], I + 1});
        break;
      case plan::InstrKind::Reduce: {
        FirstReduce = std::min(FirstReduce, I);
        LastReduce = std::max(LastReduce, I);
        LastBucketRead = std::max(LastBucketRead, I);
        Reduces.push_back(I);
        LastBucketReadOf[In.Arg][M] = I;
        break;
      }
      case plan::InstrKind::ReduceAcrossNodes: // Reads the bucket last.
        LastReduce = std::max(LastReduce, I);
        LastBucketRead = std::max(LastBucketRead, I);
        LastBucketReadOf[In.Arg][M] = I;
        break;
      case plan::InstrKind::OptimizerStep:
        StepInstr[In.Arg] = I;
        FirstStep = std::min(FirstStep, I);
        break;
      case plan::InstrKind::Transfer: {
        TransferInstrs[In.Arg].push_back(I);
        const plan::Transfer &T = P.Transfers[In.Arg];
        if (T.Point == plan::TransferPoint::BeforeGather)
          CopiedIn[T.Owner] = std::min(CopiedIn[T.Owner], I);
        // The host conversion after a gradient's copy reads the staging,
        // not the bucket.
        if (T.Point == plan::TransferPoint::AfterReduce &&
            T.Kind != plan::TransferKind::HostConvert) {
          LastBucketRead = std::max(LastBucketRead, I);
          LastBucketReadOf[T.Owner][M] = I;
        }
        break;
      }
      case plan::InstrKind::GatherParams:
      case plan::InstrKind::ClipGradients:
      case plan::InstrKind::ReduceReplicas: // The partition: always live.
        break;
      }
    }
    if (FirstStep == plan::NoIndex)
      FirstStep = End ? End - 1 : 0;
    freedGradients(P);
  }

private:
  /// GradientsFreedAt: through vector clocks (PlacementCheck.cpp's
  /// happens-before), the first compute instruction F after each bucket's
  /// last read that waits for it, directly or not (the step's end where
  /// none does). The gradients are free before F where F also waits for
  /// the instruction just before it (the backward's epilogue, which waits
  /// for every reduction still running): their lifetime ends there. Else
  /// they are alive while F runs: one backward longer than DeepSpeed keeps
  /// them, which frees them in the hook before F's kernels.
  void freedGradients(const plan::Plan &P) {
    using Clock = std::array<int64_t, plan::NumStreams>;
    std::vector<Clock> At(End);
    Clock Previous[plan::NumStreams];
    for (Clock &C : Previous)
      C.fill(-1);
    for (uint32_t I = 0; I < End; ++I) {
      unsigned S = unsigned(P.Program[I].On);
      Clock C = Previous[S];
      for (uint32_t W : P.Program[I].Waits)
        for (unsigned K = 0; K < plan::NumStreams; ++K)
          C[K] = std::max(C[K], At[W][K]);
      C[S] = int64_t(I);
      At[I] = Previous[S] = C;
    }
    GradientsFreedAt = LastBucketReadOf;
    for (std::vector<uint32_t> &PerMicro : GradientsFreedAt)
      for (uint32_t &Read : PerMicro) {
        if (Read == plan::NoIndex)
          continue;
        auto HappensBefore = [&](uint32_t A, uint32_t B) {
          return At[B][unsigned(P.Program[A].On)] >= int64_t(A);
        };
        uint32_t F = Read;
        while (F + 1 < End && (P.Program[F].On != plan::Stream::Compute ||
                               !HappensBefore(Read, F)))
          ++F;
        Read = F > Read && HappensBefore(F - 1, F) ? F - 1 : F;
      }
  }
};

class MemoryPlanner {
public:
  MemoryPlanner(plan::Plan &P) : P(P), S(P.Settings), X(P) {
    Classes = P.Layout.RankClasses.size();
  }

  Error run();

private:
  /// Adds a buffer whose size is the same for every rank class.
  plan::Buffer &add(BufferRole Role, uint32_t Index, Category What,
                    MemorySpace Space, uint64_t Bytes,
                    std::vector<plan::Interval> Live, bool Pinned = false) {
    return addPerClass(Role, Index, What, Space,
                       std::vector<uint64_t>(Classes, Bytes), std::move(Live),
                       Pinned);
  }
  plan::Buffer &add(BufferRole Role, Category What, MemorySpace Space,
                    uint64_t Bytes, std::vector<plan::Interval> Live,
                    bool Pinned = false) {
    return add(Role, plan::NoIndex, What, Space, Bytes, std::move(Live),
               Pinned);
  }
  plan::Buffer &addPerClass(BufferRole Role, uint32_t Index, Category What,
                            MemorySpace Space, std::vector<uint64_t> Bytes,
                            std::vector<plan::Interval> Live,
                            bool Pinned = false) {
    plan::Buffer B;
    B.Role = Role;
    B.Index = Index;
    B.Name = Role == BufferRole::Value ? P.Values[Index].Name
                                       : plan::bufferName(Role, Index);
    B.What = What;
    B.Space = Space;
    B.Pinned = Space == MemorySpace::Host && Pinned;
    B.Live = std::move(Live);
    B.Bytes = std::move(Bytes);
    B.Offsets.assign(Classes, 0);
    P.Buffers.push_back(std::move(B));
    return P.Buffers.back();
  }
  std::vector<plan::Interval> whole() const { return {{0, X.End}}; }
  std::vector<plan::Interval> from(uint32_t Begin) const {
    return Begin < X.End ? std::vector<plan::Interval>{{Begin, X.End}}
                         : std::vector<plan::Interval>{};
  }
  MemorySpace optimizerSpace() const {
    return S.OptimizerOffload == plan::OffloadDevice::None
               ? MemorySpace::Device
               : MemorySpace::Host;
  }

  void modelStates();
  void gradients();
  void buckets();
  void gatheredUnits();
  /// The compute program's values (activations, gradients, inputs,
  /// constants), each from its first write to its last read.
  void values();
  void offloadStaging();
  void place(MemorySpace Space, size_t Class);
  void synchronizeAsyncFrees();

  plan::Plan &P;
  const plan::Info &S;
  ProgramIndex X;
  size_t Classes;
};

void MemoryPlanner::modelStates() {
  uint64_t PB = plan::dtypeBytes(S.ParamDType);
  uint64_t All = 0, Trainable = 0, Frozen = 0, Shards = 0, Persistent = 0;
  for (const plan::Tensor &T : P.Tensors) {
    All += T.Elems;
    if (T.Role == plan::TensorRole::Trainable)
      Trainable += T.Elems;
    else
      Frozen += T.Elems;
    // Stage 3 keeps persistent parameters padded like the others, so the
    // updated shards can be all-gathered in place after the step.
    if (T.Persistent)
      Persistent += plan::paddedElems(P, T);
    else
      Shards += T.ShardElems;
  }
  if (S.ZeroStage < 3) {
    // Stage 1/2 all-gather the padded flat buffer in place after the step.
    uint64_t Held = S.ZeroStage == 0 ? All : P.Layout.PaddedElems + Frozen;
    add(BufferRole::Params16, Category::Params16, MemorySpace::Device, Held * PB,
        whole());
  } else {
    if (S.ParamOffload == plan::OffloadDevice::CPU)
      add(BufferRole::Params16, Category::Params16, MemorySpace::Host, Shards * PB,
          whole(), S.ParamOffloadPinned);
    else if (S.ParamOffload == plan::OffloadDevice::None)
      add(BufferRole::Params16, Category::Params16, MemorySpace::Device, Shards * PB,
          whole());
    // NVMe: the shards live on NVMe (Estimate.cpp counts them).
    if (Persistent)
      add(BufferRole::PersistentParams, Category::Params16, MemorySpace::Device,
          Persistent * PB, whole());
  }

  // Master weights and optimizer states of what this rank owns.
  uint64_t Owned = S.ZeroStage == 0 ? Trainable : P.Layout.PartitionElems;
  bool OnNVMe = S.OptimizerOffload == plan::OffloadDevice::NVMe;
  bool MasterIsParams = S.ZeroStage == 0 && S.ParamDType == plan::DType::F32;
  if (!OnNVMe && !MasterIsParams)
    add(BufferRole::MasterParams, Category::MasterParams, optimizerSpace(),
        bytesOf(Owned, S.MasterDType), whole(), S.OptimizerOffloadPinned);
  if (!OnNVMe && S.OptimizerStates)
    add(BufferRole::OptimizerStates, Category::OptimizerStates, optimizerSpace(),
        S.OptimizerStates * bytesOf(Owned, S.OptimizerStateDType), whole(),
        S.OptimizerOffloadPinned);
}

void MemoryPlanner::gradients() {
  uint64_t PB = plan::dtypeBytes(S.ParamDType);
  uint64_t Trainable = P.Layout.FlatElems;
  uint32_t FirstBackward = X.FirstBackward[0];

  switch (S.ZeroStage) {
  case 0:
  case 1:
    // Gradients accumulate in .grad until the boundary reduction. Padded
    // as the flat parameters are, so that every rank's partition of it is
    // one view (the padding is never read: it holds no gradient).
    add(BufferRole::Grads16, Category::Grads, MemorySpace::Device,
        P.Layout.PaddedElems * PB, from(FirstBackward));
    break;
  case 2: {
    // With the optimizer offloaded, gradients go straight to the host's
    // fp32 buffer (stage_1_and_2.py copy_grads_in_partition returns early).
    if (S.OptimizerOffload != plan::OffloadDevice::None)
      break;
    // DeepSpeed holds the gradients overlapping the partition whole; dsrun
    // keeps the partition's own elements, which fit in that (a rank whose
    // partition is mostly padding holds a partition's worth at least).
    std::vector<uint64_t> Bytes;
    for (const plan::RankClass &C : P.Layout.RankClasses)
      Bytes.push_back(std::max(C.GradPartitionElems, P.Layout.PartitionElems) *
                      PB);
    addPerClass(BufferRole::GradPartition16, plan::NoIndex, Category::Grads,
                MemorySpace::Device, Bytes,
                from(X.FirstReduce == plan::NoIndex ? FirstBackward
                                                    : X.FirstReduce));
    break;
  }
  case 3: {
    bool Host = S.OptimizerOffload != plan::OffloadDevice::None;
    add(BufferRole::GradPartition, Category::Grads,
        Host ? MemorySpace::Host : MemorySpace::Device,
        bytesOf(P.Layout.PartitionElems, S.GradAccumDType), whole(),
        S.OptimizerOffloadPinned);
    break;
  }
  }

  // The gradients the step reads, in the master weights' dtype (fp32
  // unless bf16_master_weights_and_grads).
  if (S.ZeroStage == 0) {
    // BF16_Optimizer keeps fp32 gradients of everything for the whole run;
    // FP16_Optimizer makes them for the step and frees them after.
    if (S.ParamDType == plan::DType::BF16)
      add(BufferRole::GradsFP32, Category::GradsFP32, MemorySpace::Device,
          bytesOf(Trainable, plan::DType::F32), whole());
    else if (S.ParamDType == plan::DType::F16)
      add(BufferRole::GradsFP32, Category::GradsFP32, MemorySpace::Device,
          bytesOf(Trainable, plan::DType::F32), from(X.FirstStep));
  } else if (S.ZeroStage < 3) {
    // bf16 with fp32 gradient accumulation at stage 1 runs DeepSpeed's
    // BF16_Optimizer, which accumulates into full-size fp32 gradients.
    if (S.ZeroStage == 1 && S.ParamDType == plan::DType::BF16 &&
        S.GradAccumDType == plan::DType::F32)
      add(BufferRole::GradsFP32Accumulation, Category::GradsFP32, MemorySpace::Device,
          bytesOf(Trainable, plan::DType::F32), whole());
    if (S.OptimizerOffload != plan::OffloadDevice::None)
      add(BufferRole::GradsFP32, Category::GradsFP32, MemorySpace::Host,
          bytesOf(P.Layout.PartitionElems, plan::DType::F32), whole(),
          S.OptimizerOffloadPinned);
    else
      add(BufferRole::GradsFP32, Category::GradsFP32, MemorySpace::Device,
          bytesOf(P.Layout.PartitionElems, S.MasterDType),
          from(X.FirstStep));
  } else {
    // Stage 3 converts one sub-group's gradients at a time.
    for (uint32_t G = 0; G < P.Layout.SubGroups.size(); ++G) {
      uint32_t I = X.StepInstr[G];
      if (I == plan::NoIndex)
        continue;
      add(BufferRole::GradsFP32, G, Category::GradsFP32,
          optimizerSpace(), bytesOf(P.Layout.SubGroups[G].Elems,
                                    S.MasterDType),
          {{I, I + 1}}, S.OptimizerOffloadPinned);
    }
  }
}

void MemoryPlanner::buckets() {
  if (X.FirstReduce == plan::NoIndex)
    return;
  if (S.ZeroStage == 0) {
    // Stage 0 flattens each bucket's gradients for its all-reduce and
    // frees the copy after (engine.py buffered_allreduce_fallback).
    uint64_t Largest = 0;
    for (const plan::Bucket &B : P.Buckets)
      Largest = std::max(Largest, B.Elems);
    std::vector<plan::Interval> During;
    for (uint32_t I : X.Reduces)
      During.push_back({I, I + 1});
    add(BufferRole::ReduceFlat, Category::ReduceBuckets, MemorySpace::Device,
        bytesOf(Largest, S.CommDType), During);
    return;
  }
  // ZeRO++ qgZ across nodes: one workspace, sized for the largest bucket,
  // which every quantized reduction uses in turn (they share a stream);
  // kept from start-up, as stage 3 keeps its buckets.
  // (Without contiguous_gradients a bucket has no buffer to reduce in,
  // which dsrun refuses.)
  uint64_t Qgz = 0;
  for (uint32_t B = 0; B < P.Buckets.size(); ++B)
    if (P.Buckets[B].InPlace || S.ContiguousGradients)
      Qgz = std::max(Qgz, plan::qgzLayout(P, B).Bytes);
  if (Qgz)
    add(BufferRole::QgzReduce, Category::ReduceBuckets, MemorySpace::Device,
        Qgz, whole());
  if (!S.ContiguousGradients)
    return;
  bool AnyBuffered = false;
  for (const plan::Bucket &B : P.Buckets)
    AnyBuffered |= !B.InPlace;
  if (!AnyBuffered)
    return;
  // Stage 1/2 size the bucket in the parameter dtype (setup_buckets),
  // stage 3 in the communication dtype; stage 3 reduce-scatters whole
  // padded gradients, which may need a little more than the bucket size.
  // A bucket holding one op's gradients whole may exceed the size.
  uint64_t Elems = S.ReduceBucketElems;
  for (const plan::Bucket &B : P.Buckets) {
    uint64_t Held = 0;
    for (const plan::Segment &Seg : B.Segments)
      Held += S.ZeroStage == 3 ? plan::paddedElems(P, Seg.Tensor)
                               : Seg.End - Seg.Begin;
    if (B.BufferIndex != plan::NoIndex)
      Elems = std::max(Elems, Held);
  }
  uint64_t Bytes = bytesOf(Elems, S.ZeroStage < 3 ? S.ParamDType
                                                  : S.CommDType);
  unsigned Buffers = plan::bucketBuffers(S);
  // Stage 3 allocates its buckets at start-up and keeps them; stage 1/2 when
  // the backward that reduces begins, until the last read of it.
  std::vector<plan::Interval> Live = whole();
  if (S.ZeroStage < 3) {
    uint32_t FirstReducingMicro = S.ZeroStage == 2 ? 0 : X.Micros - 1;
    Live = {{X.FirstBackward[FirstReducingMicro], X.LastBucketRead + 1}};
  }
  for (unsigned I = 0; I < Buffers; ++I)
    add(BufferRole::ReduceBucket, I, Category::ReduceBuckets,
        MemorySpace::Device, Bytes, Live);
}

/// The first compute instruction after G, before Limit, that waits for
/// it: where compute has what G gathered (Limit - 1 if none does).
static uint32_t firstComputeWaitingFor(const plan::Plan &P, uint32_t G,
                                       uint32_t Limit) {
  for (uint32_t I = G + 1; I < Limit; ++I)
    if (P.Program[I].On == plan::Stream::Compute &&
        is_contained(P.Program[I].Waits, G))
      return I;
  return Limit - 1;
}

void MemoryPlanner::gatheredUnits() {
  for (uint32_t U = 0; U < P.FetchUnits.size(); ++U) {
    const std::vector<plan::Interval> &Held = X.Gathered[U];
    if (Held.empty())
      continue;
    // Each tensor is all-gathered whole, padding included.
    uint64_t Elems = 0;
    for (uint32_t T : P.FetchUnits[U].Tensors)
      Elems += plan::paddedElems(P, T);
    uint64_t Bytes = bytesOf(Elems, S.ParamDType);
    // hpZ's secondary partition: the group's share of the unit, from the
    // gather that fills it to the step's end. DeepSpeed makes one for
    // every parameter it releases and drops them after the optimizer step
    // (invalidate_secondary_tensor), so they are part of that step's peak.
    if (S.HpzPartition > 1 && X.FirstGather[U] != plan::NoIndex)
      add(BufferRole::HpzSecondary, U, Category::Params16, MemorySpace::Device,
          Bytes / S.HpzPartition, {{X.FirstGather[U], X.End}});
    // ZeRO++ qwZ: the int8 weights and their scales, every rank's, from
    // each gather to where compute has waited for it (the dequantization
    // that reads them runs within the gather).
    if (plan::unitGathersQuantized(P)) {
      std::vector<plan::Interval> Quantized;
      for (size_t K = 0; K < Held.size(); ++K) {
        uint32_t G = X.GatherInstr[U][K];
        Quantized.push_back(
            {G, firstComputeWaitingFor(P, G, Held[K].End) + 1});
      }
      add(BufferRole::QwzGather, U, Category::GatheredParams,
          MemorySpace::Device,
          plan::qwzLayout(P, U).Bytes,
          std::move(Quantized));
    }
    if (!plan::unitGathersRankMajor(P, U)) {
      add(BufferRole::Unit, U, Category::GatheredParams,
          MemorySpace::Device, Bytes, Held);
      continue;
    }
    // Rank-major from the copy of this rank's shards to the first op that
    // uses the unit (DeepSpeed frees its flat buffer there, after the
    // unpack); the unit from the gather, which unpacks into it. Ending the
    // rank-major buffer at the gather itself, on the communication stream,
    // would make every other stream wait for each gather before going on
    // (synchronizeAsyncFrees), which undoes prefetching.
    std::vector<plan::Interval> Staged, Unpacked;
    for (size_t K = 0; K < Held.size(); ++K) {
      uint32_t G = X.GatherInstr[U][K];
      uint32_t Used = firstComputeWaitingFor(P, G, Held[K].End);
      Staged.push_back({Held[K].Begin, Used + 1});
      Unpacked.push_back({G, Held[K].End});
    }
    add(BufferRole::UnitGather, U, Category::GatheredParams,
        MemorySpace::Device, Bytes, std::move(Staged));
    add(BufferRole::Unit, U, Category::GatheredParams,
        MemorySpace::Device, Bytes, std::move(Unpacked));
  }
}

void MemoryPlanner::values() {
  // Each value's accesses, per micro step, by instruction: a kernel runs
  // in its op's forward (and recomputation) or backward instruction.
  struct Access {
    uint32_t Instr;
    bool Write;
  };
  size_t NV = P.Values.size();
  std::vector<std::vector<Access>> Accesses(NV);
  std::vector<bool> ReadInBackward(NV, false);
  for (uint32_t M = 0; M < X.Micros; ++M)
    for (const plan::Kernel &K : P.Kernels) {
      uint32_t Instrs[2] = {plan::NoIndex, plan::NoIndex};
      if (K.Backward) {
        Instrs[0] = X.Backward[M][K.Op];
      } else {
        Instrs[0] = X.Forward[M][K.Op];
        Instrs[1] = X.Recompute[M][K.Op];
      }
      for (uint32_t I : Instrs) {
        if (I == plan::NoIndex)
          continue;
        for (const plan::TensorRef &R : K.Inputs) {
          Accesses[R.Value].push_back({I, false});
          ReadInBackward[R.Value] = ReadInBackward[R.Value] || K.Backward;
        }
        // A product with beta 1 adds into its output: it reads it first.
        if (const plan::GemmAttrs *G = std::get_if<plan::GemmAttrs>(&K.Attrs);
            G && G->Beta != 0)
          Accesses[K.Outputs[0].Value].push_back({I, false});
        for (const plan::TensorRef &R : K.Outputs)
          Accesses[R.Value].push_back({I, true});
      }
    }
  // The runtime writes inputs and targets before a micro step's first
  // compute; it reads a parameter's gradient into the reduction layout in
  // the instruction that completes it, and a gradient reduced in place
  // until that reduction has read it.
  std::vector<uint32_t> BucketOfTensor(P.Tensors.size(), plan::NoIndex);
  for (uint32_t B = 0; B < P.Buckets.size(); ++B)
    for (const plan::Segment &Seg : P.Buckets[B].Segments)
      BucketOfTensor[Seg.Tensor] = B;
  for (uint32_t V = 0; V < NV; ++V) {
    const plan::Value &Val = P.Values[V];
    for (uint32_t M = 0; M < X.Micros; ++M) {
      if (Val.Kind == plan::ValueKind::Input ||
          Val.Kind == plan::ValueKind::Target)
        Accesses[V].push_back({X.FirstCompute[M], true});
      if (Val.Kind == plan::ValueKind::ParamGrad && S.ZeroStage >= 2 &&
          Val.Tensor != plan::NoIndex) {
        uint32_t B = BucketOfTensor[Val.Tensor];
        if (B != plan::NoIndex &&
            (P.Buckets[B].InPlace || !S.ContiguousGradients) &&
            X.GradientsFreedAt[B][M] != plan::NoIndex)
          Accesses[V].push_back({X.GradientsFreedAt[B][M], false});
      }
    }
  }

  auto CategoryOf = [&](uint32_t V) {
    switch (P.Values[V].Kind) {
    case plan::ValueKind::Input:
    case plan::ValueKind::Target:
      return Category::Inputs;
    case plan::ValueKind::Constant:
      return Category::Constants;
    case plan::ValueKind::ParamGrad:
      return Category::Grads;
    case plan::ValueKind::Activation:
      return ReadInBackward[V] ? Category::Activations : Category::Workspace;
    default:
      return Category::Workspace;
    }
  };
  for (uint32_t V = 0; V < NV; ++V) {
    plan::Value &Val = P.Values[V];
    if (Val.Kind == plan::ValueKind::Param)
      continue; // Where the ZeRO layout keeps its tensor.
    std::vector<plan::Interval> Live;
    if (Val.Kind == plan::ValueKind::Constant) {
      Live = whole();
    } else {
      // A write after the last access starts a new lifetime: the value
      // is dead between a forward's last read and its recomputation, and
      // between micro steps.
      std::vector<Access> &A = Accesses[V];
      llvm::stable_sort(A, [](const Access &L, const Access &R) {
        return L.Instr < R.Instr;
      });
      for (const Access &Ac : A) {
        if (Ac.Instr == plan::NoIndex)
          continue;
        if (Live.empty() || (Ac.Write && Ac.Instr >= Live.back().End))
          Live.push_back({Ac.Instr, Ac.Instr + 1});
        else
          Live.back().End = std::max(Live.back().End, Ac.Instr + 1);
      }
    }
    if (Live.empty())
      continue;
    // Stage 3 reduce-scatters a gradient that goes alone from where the
    // backward left it, padded to the world size.
    uint64_t Elems = Val.Elems;
    if (Val.Kind == plan::ValueKind::ParamGrad && S.ZeroStage == 3 &&
        Val.Tensor != plan::NoIndex)
      Elems = plan::paddedElems(P, Val.Tensor);
    Val.Buffer = P.Buffers.size();
    add(BufferRole::Value, V, CategoryOf(V), MemorySpace::Device,
        Elems * plan::dtypeBytes(Val.Type), std::move(Live));
  }

  // The runtime's own scratch (plan::ScratchLayout): the step's values,
  // the collectives' timings the ranks agree on (a float per instruction
  // each way), each micro step's loss summed over ranks, the squares of the
  // gradient norm; on the host, the step's values as written there and the
  // losses read back.
  plan::ScratchLayout Scratch =
      plan::scratchLayout(P.Program.size(), S.GradAccum);
  add(BufferRole::Scratch, Category::Workspace, MemorySpace::Device,
      std::max<uint64_t>(4096, sizeof(float) * Scratch.Floats), whole());
  add(BufferRole::HostScratch, Category::Workspace, MemorySpace::Host,
      sizeof(float) * Scratch.HostFloats, whole(), true);

  // Token ids and targets of a step's micro steps, read from the data on
  // the host and copied to the input values before each micro step's
  // forward; two steps' worth, so that the host fills the next step while
  // the device reads this one.
  uint64_t StepInputs = 0;
  for (const plan::Value &Val : P.Values)
    if (Val.Kind == plan::ValueKind::Input ||
        Val.Kind == plan::ValueKind::Target)
      StepInputs += Val.Elems * plan::dtypeBytes(Val.Type);
  if (StepInputs)
    add(BufferRole::InputStaging, Category::Inputs, MemorySpace::Host,
        2 * S.GradAccum * StepInputs, whole(), true);

  // One workspace for the kernels that need one (attention's backward).
  uint64_t Workspace = 0;
  for (const plan::Kernel &K : P.Kernels)
    Workspace = std::max(Workspace, K.WorkspaceBytes);
  std::vector<plan::Interval> Compute;
  for (uint32_t M = 0; M < X.Micros; ++M)
    if (X.FirstCompute[M] != plan::NoIndex)
      Compute.push_back({X.FirstCompute[M], X.LastBackward[M] + 1});
  if (Workspace)
    add(BufferRole::KernelWorkspace, Category::Workspace, MemorySpace::Device,
        Workspace, Compute);
}

void MemoryPlanner::offloadStaging() {
  uint64_t PB = plan::dtypeBytes(S.ParamDType);
  bool Offloaded = S.OptimizerOffload != plan::OffloadDevice::None;
  uint64_t LargestParam = 0;
  for (uint32_t T : P.Layout.Order)
    LargestParam = std::max(LargestParam, P.Tensors[T].Elems);
  if (Offloaded && S.ZeroStage < 3)
    // stage_1_and_2.py's device buffer of the largest parameter for moving
    // gradients (dsrun copies from the bucket directly; held as DeepSpeed
    // holds it).
    add(BufferRole::GradStaging, Category::OffloadStaging, MemorySpace::Device,
        LargestParam * PB, whole());
  bool Staged = false;
  for (uint32_t B = 0; B < P.Buckets.size(); ++B)
    Staged |= plan::stagedInSomeMicroStep(P, B);
  if (Offloaded && Staged) {
    // Pinned host staging for gradients converted or added on the host: a
    // rank's part of a bucket's reduced gradients, in two slots so that one
    // bucket's copy runs while the host converts the one before
    // (DeepSpeed's host buffer holds the largest parameter).
    uint64_t Piece = S.ZeroStage < 3 ? LargestParam * PB : 0;
    for (uint32_t I = 0; I < P.Buckets.size(); ++I) {
      const plan::Bucket &B = P.Buckets[I];
      if (S.ZeroStage < 3) {
        Piece = std::max(Piece, std::min(B.Elems, P.Layout.PartitionElems) * PB);
        continue;
      }
      uint64_t Chunk = 0;
      for (const plan::Segment &Seg : B.Segments)
        Chunk += P.Tensors[Seg.Tensor].ShardElems;
      Piece = std::max(Piece, bytesOf(Chunk, plan::gradSourceType(P, I)));
    }
    add(BufferRole::GradStagingHost, Category::OffloadStaging,
        MemorySpace::Host,
        plan::GradStagingSlots * roundUp(Piece, plan::GradStagingAlignment),
        whole(), S.OptimizerOffloadPinned);
  }
  // A sub-group's updated 16-bit parameters on their way back.
  if (Offloaded || S.ParamOffload == plan::OffloadDevice::NVMe) {
    uint64_t Group = 0;
    for (const plan::SubGroup &G : P.Layout.SubGroups)
      Group = std::max(Group, G.Elems);
    add(BufferRole::ParamStagingHost, Category::OffloadStaging,
        MemorySpace::Host, Group * PB, whole(), true);
  }
  if (S.OptimizerOffload == plan::OffloadDevice::NVMe) {
    // Swap buffers: buffer_count x the largest sub-group of fp32 state,
    // each on its own pages.
    uint64_t Largest = 0;
    for (const plan::SubGroup &G : P.Layout.SubGroups)
      Largest = std::max(Largest, G.Elems);
    add(BufferRole::NVMeOptimizerBuffers, Category::OffloadStaging, MemorySpace::Host,
        S.AioBufferCount * roundUp(bytesOf(Largest, plan::DType::F32),
                                   plan::SwapAlignment),
        whole(), true);
  }
  if (S.ZeroStage == 3 && X.End) {
    // Saving the weights (and checkpoints) gathers one tensor at a time,
    // between steps: held over the last instruction, whose bytes are free
    // once it ends.
    uint64_t Largest = 0;
    for (const plan::Tensor &T : P.Tensors)
      if (!T.Persistent)
        Largest = std::max(Largest, plan::paddedElems(P, T));
    if (Largest)
      add(BufferRole::SaveStaging, Category::Workspace, MemorySpace::Device,
          Largest * PB, {{X.End - 1, X.End}});
  }
  if (S.ParamOffload == plan::OffloadDevice::NVMe)
    add(BufferRole::NVMeParamBuffers, Category::OffloadStaging, MemorySpace::Host,
        S.AioBufferCount * roundUp(S.AioBufferBytes, plan::SwapAlignment),
        whole(), true);
}

bool overlaps(const std::vector<plan::Interval> &A,
              const std::vector<plan::Interval> &B) {
  // Both lists are in program order.
  size_t I = 0, J = 0;
  while (I < A.size() && J < B.size()) {
    if (A[I].End <= B[J].Begin)
      ++I;
    else if (B[J].End <= A[I].Begin)
      ++J;
    else
      return true;
  }
  return false;
}

void MemoryPlanner::place(MemorySpace Space, size_t Class) {
  struct Item {
    plan::Buffer *B;
    uint64_t Size;
    uint32_t Begin, End; ///< Hull of the lifetime.
  };
  std::vector<Item> Items;
  for (plan::Buffer &B : P.Buffers) {
    if (B.Space != Space || B.Bytes[Class] == 0 || B.Live.empty())
      continue;
    llvm::sort(B.Live, [](const plan::Interval &L, const plan::Interval &R) {
      return L.Begin < R.Begin;
    });
    Items.push_back({&B,
                     roundUp(B.Bytes[Class], Space == plan::MemorySpace::Host
                                                 ? HostAlignment
                                                 : ArenaAlignment),
                     B.Live.front().Begin, B.Live.back().End});
  }
  llvm::stable_sort(Items, [](const Item &A, const Item &B) {
    if (A.Size != B.Size)
      return A.Size > B.Size;
    return A.Begin < B.Begin;
  });
  // Greedy by size: quadratic in the buffers alive in overlapping
  // stretches, a few milliseconds for a 70B graph (bench/plan_bench.cpp).
  std::vector<const Item *> Placed;
  std::vector<std::pair<uint64_t, uint64_t>> Taken;
  for (Item &It : Items) {
    Taken.clear();
    for (const Item *Q : Placed)
      if (Q->Begin < It.End && It.Begin < Q->End &&
          overlaps(Q->B->Live, It.B->Live))
        Taken.push_back({Q->B->Offsets[Class], Q->Size});
    llvm::sort(Taken);
    uint64_t Offset = 0;
    for (auto [At, Size] : Taken) {
      if (Offset + It.Size <= At)
        break;
      Offset = std::max(Offset, At + Size);
    }
    It.B->Offsets[Class] = Offset;
    Placed.push_back(&It);
  }
}

/// The arena reuses a buffer's memory once its lifetime ends in program
/// order. When the last instruction using it runs on a stream other than
/// compute, it may still be running then: every other stream waits for it
/// before going past it, so whatever is placed there next is written only
/// after the last read.
void MemoryPlanner::synchronizeAsyncFrees() {
  size_t N = P.Program.size();
  std::vector<std::vector<uint32_t>> NextOn(plan::NumStreams,
                                           std::vector<uint32_t>(N + 1));
  for (unsigned S = 0; S < plan::NumStreams; ++S) {
    NextOn[S][N] = plan::NoIndex;
    for (size_t I = N; I-- > 0;)
      NextOn[S][I] = unsigned(P.Program[I].On) == S ? uint32_t(I)
                                                    : NextOn[S][I + 1];
  }
  for (const plan::Buffer &B : P.Buffers)
    for (const plan::Interval &L : B.Live) {
      uint32_t Last = L.End - 1;
      plan::Stream On = P.Program[Last].On;
      if (On == plan::Stream::Compute || L.End >= N)
        continue;
      for (unsigned S = 0; S < plan::NumStreams; ++S) {
        if (S == unsigned(On))
          continue;
        uint32_t Next = NextOn[S][L.End];
        if (Next == plan::NoIndex)
          continue;
        std::vector<uint32_t> &Waits = P.Program[Next].Waits;
        if (!is_contained(Waits, Last)) {
          Waits.insert(llvm::upper_bound(Waits, Last), Last);
        }
      }
    }
}

Error MemoryPlanner::run() {
  P.Buffers.clear();
  if (P.Program.empty())
    return planError("the memory plan needs the schedule first");
  modelStates();
  gradients();
  buckets();
  gatheredUnits();
  values();
  offloadStaging();
  for (size_t C = 0; C < Classes; ++C) {
    place(MemorySpace::Device, C);
    place(MemorySpace::Host, C);
  }
  synchronizeAsyncFrees();
  return Error::success();
}

} // namespace

Error runMemoryPass(plan::Plan &P) { return MemoryPlanner(P).run(); }

} // namespace dsc
