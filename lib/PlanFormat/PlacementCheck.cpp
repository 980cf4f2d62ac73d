//===- PlacementCheck.cpp - Views inside buffers, reuse in order ----------===//
//
// The part of checkPlan that covers memory: every view of every rank lies
// inside its buffer in every rank class, the placement's views have the
// sizes the runtime reads through them, and wherever the arena gives the
// bytes of one buffer to another, the first use of the later one happens
// after the last use of the earlier one (by stream order and waits).
//
//===----------------------------------------------------------------------===//

#include "dsc/PlanCheck.h"
#include "dsc/PlanFacts.h"

#include <algorithm>
#include <array>

namespace dsc::plan {

namespace {

std::string checkViews(const Plan &P) {
  size_t NB = P.Buffers.size(), NC = P.Layout.RankClasses.size();
  // The class's rank with the last partition reaches furthest (strides
  // are positive and step over partitions: plan::partitionRank).
  uint64_t Parts = partitionRanks(P.Settings);
  std::vector<uint64_t> LastRank(NC, 0);
  for (size_t C = 0; C < NC; ++C)
    for (const RankRange &R : P.Layout.RankClasses[C].Ranges()) {
      uint64_t First = R.First % Parts, Last = First + R.Count - 1;
      LastRank[C] = std::max(LastRank[C], R.Count && Last < Parts ? Last
                                                                  : Parts - 1);
    }
  for (size_t I = 0; I < P.Views.size(); ++I) {
    const View &V = P.Views[I];
    std::string Name = "view " + std::to_string(I);
    if (V.Buffer >= NB || P.Buffers[V.Buffer].Live.empty())
      return Name + " names no placed buffer";
    if (unsigned(V.Type) >= EnumInfo<DType>::Count ||
        V.Elems > (uint64_t(1) << 48) || V.Offset > (uint64_t(1) << 56) ||
        V.RankStride > (uint64_t(1) << 48))
      return Name + " has a bad type or size";
    const Buffer &B = P.Buffers[V.Buffer];
    for (size_t C = 0; C < NC && C < B.Bytes.size(); ++C) {
      // Below 2^56 + 2^32 x 2^48 + 2^48 x 8 < 2^81: checked in two steps.
      uint64_t Reach = V.Elems * dtypeBytes(V.Type);
      if (LastRank[C] && V.RankStride > (UINT64_MAX - V.Offset - Reach) /
                                            LastRank[C])
        return Name + " reaches past the end of memory";
      if (V.Offset + LastRank[C] * V.RankStride + Reach > B.Bytes[C])
        return Name + " reaches past the end of buffer " + B.Name +
               " on rank " + std::to_string(LastRank[C]);
    }
  }
  return "";
}

struct ViewRule {
  const Plan &P;
  std::string Error;

  /// Id is NoIndex or a view of Elems elements (any count when Elems is
  /// NoSize).
  static constexpr uint64_t NoSize = ~uint64_t(0);
  bool check(uint32_t Id, uint64_t Elems, const std::string &What) {
    if (!Error.empty())
      return false;
    if (Id == NoIndex)
      return true;
    if (Id >= P.Views.size())
      Error = What + ": view " + std::to_string(Id) + " is out of range";
    else if (Elems != NoSize && P.Views[Id].Elems != Elems)
      Error = What + ": a view of " + std::to_string(P.Views[Id].Elems) +
              " elements where " + std::to_string(Elems) + " belong";
    return Error.empty();
  }
};

/// ZeRO++ qwZ: a gathered unit has int8 and scale views, each rank's
/// chunk of them what it sends, in one device buffer of the unit's laid
/// out as plan::qwzLayout says; with hpZ, those of its secondary gathers.
static std::string checkQuantizedGather(const Plan &P, uint32_t U,
                                        const UnitViews &V) {
  uint32_t Primary[] = {V.Quantized, V.QuantizedSend, V.Scales, V.ScalesSend};
  uint32_t Group[] = {V.QuantizedSecondarySend, V.ScalesSecondary,
                      V.ScalesSecondarySend};
  bool Wanted = unitGathersQuantized(P) && V.Target != NoIndex;
  bool WantedInGroup = Wanted && V.Secondary != NoIndex;
  for (uint32_t Id : Primary)
    if ((Id != NoIndex) != Wanted || (Id != NoIndex && Id >= P.Views.size()))
      return Wanted ? "its quantized gather lacks a view"
                    : "it has quantized-gather views without ZeRO++ qwZ";
  for (uint32_t Id : Group)
    if ((Id != NoIndex) != WantedInGroup ||
        (Id != NoIndex && Id >= P.Views.size()))
      return WantedInGroup ? "its quantized gather within the hpZ group "
                             "lacks a view"
                           : "it has views of a quantized gather within an "
                             "hpZ group it does not gather in";
  if (!Wanted)
    return "";
  // The unit's chunk from the gather's target, which the views above
  // check against the tensors.
  if (P.Views[V.Target].Elems !=
      unitChunkElems(P, U) * partitionRanks(P.Settings))
    return "its gather's target is not every rank's chunk";
  QwzLayout L = qwzLayout(P, U);
  QwzGather Full = qwzGather(P, U, false);
  auto Is = [&](uint32_t Id, DType T, uint64_t Offset, uint64_t Elems,
                uint64_t RankStride) {
    const View &X = P.Views[Id];
    return X.Type == T && X.Offset == Offset && X.Elems == Elems &&
           X.RankStride == RankStride;
  };
  uint64_t W = Full.Ranks;
  if (!Full.Groups || !Is(V.Quantized, DType::I8, 0, Full.Send * W, 0) ||
      !Is(V.QuantizedSend, DType::I8, 0, Full.Send, Full.Send) ||
      !Is(V.Scales, DType::F32, L.ScalesAt, Full.Groups * W, 0) ||
      !Is(V.ScalesSend, DType::F32, L.ScalesAt, Full.Groups, Full.Groups * 4))
    return "its int8 weights or scales are not every rank's chunk of the "
           "gather, of int8 and fp32, a scale per quantization group";
  if (WantedInGroup) {
    QwzGather G = qwzGather(P, U, true);
    if (!G.Groups ||
        !Is(V.QuantizedSecondarySend, DType::I8, L.SecondaryAt, G.Send, 0) ||
        !Is(V.ScalesSecondary, DType::F32, L.ScalesAt, G.Groups * G.Ranks,
            0) ||
        !Is(V.ScalesSecondarySend, DType::F32, L.SecondaryScalesAt, G.Groups,
            0) ||
        P.Views[V.Secondary].Elems != G.Send)
      return "its int8 secondary partition or its scales are not what the "
             "gather within the hpZ group quantizes";
  }
  for (uint32_t Id : {V.Quantized, V.QuantizedSend, V.Scales, V.ScalesSend,
                      V.QuantizedSecondarySend, V.ScalesSecondary,
                      V.ScalesSecondarySend}) {
    if (Id == NoIndex)
      continue;
    const Buffer &B = P.Buffers[P.Views[Id].Buffer];
    if (B.Role != BufferRole::QwzGather || B.Index != U ||
        B.Space != MemorySpace::Device)
      return "its int8 weights or scales are not in its qwz_gather buffer on "
             "the device";
    // dsrun reads the bytes eight at a time.
    for (uint64_t Offset : B.Offsets)
      if (Offset % 16)
        return "its qwz_gather buffer is not aligned to 16 bytes";
  }
  return "";
}

std::string checkPlacementViews(const Plan &P) {
  const Placement &X = P.Places;
  const Info &S = P.Settings;
  size_t NT = P.Tensors.size();
  if (X.Tensors.size() != NT || X.Units.size() != P.FetchUnits.size() ||
      X.Buckets.size() != P.Buckets.size() ||
      X.SubGroups.size() != P.Layout.SubGroups.size() ||
      X.Values.size() != P.Values.size() ||
      X.InstructionSlots.size() != P.Program.size())
    return "the placement does not have one entry per tensor, fetch unit, "
           "bucket, sub-group, value and instruction";
  ViewRule R{P, ""};
  // Stage 3 splits over the partition's ranks; a stage 1/2 bucket's
  // pieces go to each rank of the world (the same, MiCS being stage 3's).
  const uint64_t Any = ViewRule::NoSize, W = partitionRanks(S);
  uint64_t Owned = S.ZeroStage == 0 ? P.Layout.FlatElems
                                    : P.Layout.PartitionElems;
  for (size_t T = 0; T < NT; ++T) {
    const Tensor &Tn = P.Tensors[T];
    const TensorViews &V = X.Tensors[T];
    std::string What = "tensor " + std::to_string(T);
    // Stage 3 holds a tensor padded to its partitions, gathered whole.
    R.check(V.Param, S.ZeroStage < 3 ? Tn.Elems : Tn.ShardElems * W,
            What + "'s parameter");
    R.check(V.Grad, S.ZeroStage < 3 ? Tn.Elems : Tn.ShardElems,
            What + "'s gradient");
    R.check(V.Shard, Tn.ShardElems, What + "'s shard");
    R.check(V.Chunk, Tn.ShardElems, What + "'s chunk slot");
    if (S.ZeroStage == 3 && Tn.Role == TensorRole::Trainable &&
        V.PartitionOffset + Tn.ShardElems > P.Layout.PartitionElems)
      return What + "'s shard lies past the partition";
  }
  // A rank's shards of a unit are one chunk of what the gather sends: each
  // tensor in one unit at most, none of them persistent, and its slots in
  // its unit's buffers.
  std::vector<uint8_t> InUnit(NT, 0);
  for (size_t U = 0; U < P.FetchUnits.size(); ++U)
    for (uint32_t T : P.FetchUnits[U].Tensors) {
      if (InUnit[T]++)
        return "tensor " + std::to_string(T) + " is in two fetch units";
      if (P.Tensors[T].Persistent)
        return "fetch unit " + std::to_string(U) +
               " holds persistent tensor " + std::to_string(T) +
               ", which every rank keeps whole";
      const UnitViews &UV = X.Units[U];
      const TensorViews &TV = X.Tensors[T];
      auto BufferOf = [&](uint32_t V) {
        return V < P.Views.size() ? P.Views[V].Buffer : NoIndex;
      };
      if (UV.Target != NoIndex &&
          (BufferOf(TV.Param) != BufferOf(UV.Whole) ||
           BufferOf(TV.Chunk) != BufferOf(UV.Target)))
        return "tensor " + std::to_string(T) + " of fetch unit " +
               std::to_string(U) + " has no place in the unit's buffers";
    }
  for (size_t U = 0; U < X.Units.size(); ++U) {
    const UnitViews &V = X.Units[U];
    std::string What = "fetch unit " + std::to_string(U);
    R.check(V.Whole, Any, What);
    R.check(V.Target, Any, What);
    R.check(V.Send, Any, What);
    R.check(V.Secondary, Any, What);
    if (!R.Error.empty())
      return R.Error;
    if (V.Secondary != NoIndex &&
        (V.Target == NoIndex ||
         P.Views[V.Secondary].Elems * P.Settings.HpzPartition !=
             P.Views[V.Target].Elems))
      return What + ": its hpZ secondary partition is not its group's share "
                    "of the gather";
    // NCCL moves these views' bytes by their type: the parameters', in
    // device memory (a host shard is copied into the target first).
    for (uint32_t Id : {V.Whole, V.Target, V.Send, V.Secondary})
      if (Id != NoIndex &&
          (P.Views[Id].Type != P.Settings.ParamDType ||
           (Id != V.Send &&
            P.Buffers[P.Views[Id].Buffer].Space != MemorySpace::Device)))
        return What + ": a view of its gather is not of the parameters' type "
                      "on the device";
    if (V.Target != NoIndex &&
        (V.Send == NoIndex || V.Whole == NoIndex ||
         P.Views[V.Send].Elems * W != P.Views[V.Target].Elems ||
         P.Views[V.Whole].Elems != P.Views[V.Target].Elems))
      return What + ": what each rank sends is not its share of the gather";
    if (std::string Problem = checkQuantizedGather(P, uint32_t(U), V);
        !Problem.empty())
      return What + ": " + Problem;
  }
  for (size_t B = 0; B < X.Buckets.size(); ++B) {
    const BucketViews &V = X.Buckets[B];
    std::string What = "bucket " + std::to_string(B);
    R.check(V.Source, Any, What);
    R.check(V.Chunk, Any, What);
    uint64_t Covered = 0;
    int64_t Last = -1;
    for (const BucketPiece &Piece : V.Pieces) {
      if (!R.check(Piece.View, Any, What))
        return R.Error;
      uint64_t Elems = Piece.View == NoIndex ? 0 : P.Views[Piece.View].Elems;
      if (Piece.Root >= W || int64_t(Piece.Root) <= Last ||
          Piece.PartitionOffset + Elems > P.Layout.PartitionElems)
        return What + ": a piece whose owner is out of order or whose "
                      "place lies past the partition";
      Last = Piece.Root;
      Covered += Elems;
    }
    if (!R.Error.empty())
      return R.Error;
    if ((!V.Pieces.empty() || V.Chunk != NoIndex) && V.Source == NoIndex)
      return What + ": pieces or chunks of nothing";
    if (!V.Pieces.empty() && Covered != P.Views[V.Source].Elems)
      return What + ": its pieces do not cover it";
    if (V.Chunk != NoIndex &&
        P.Views[V.Chunk].Elems * W != P.Views[V.Source].Elems)
      return What + ": its chunks do not make it up";
    // ZeRO++ qgZ across nodes: each gradient whole in the bucket, its
    // partitions one after another, and a workspace of device bytes where
    // some are quantized.
    if (!R.check(V.Qgz, Any, What))
      return R.Error;
    if (qgzAcrossNodes(S) && V.Chunk != NoIndex)
      return What + ": qgZ reduces its gradients whole, not in rank-major "
                    "chunks";
    for (const Segment &Seg : P.Buckets[B].Segments) {
      uint32_t G = X.Tensors[Seg.Tensor].Grad;
      if (qgzAcrossNodes(S) && G != NoIndex &&
          (P.Views[G].RankStride != P.Tensors[Seg.Tensor].ShardElems *
                                        dtypeBytes(P.Views[G].Type) ||
           P.Views[G].Type != DType::F16))
        return What + ": a gradient's partitions do not lie one after "
                      "another, or are not fp16, as qgZ reads them";
    }
    uint64_t QgzBytes = V.Source == NoIndex ? 0 : qgzLayout(P, uint32_t(B)).Bytes;
    if ((QgzBytes != 0) != (V.Qgz != NoIndex) ||
        (V.Qgz != NoIndex &&
         (P.Views[V.Qgz].Elems < QgzBytes || P.Views[V.Qgz].Type != DType::I8 ||
          P.Buffers[P.Views[V.Qgz].Buffer].Space != MemorySpace::Device)))
      return What + ": qgZ's workspace is missing where its gradients are "
                    "quantized, there where none is, too small, or not "
                    "bytes on the device";
  }
  for (size_t G = 0; G < X.SubGroups.size(); ++G) {
    const SubGroupViews &V = X.SubGroups[G];
    uint64_t Elems = P.Layout.SubGroups[G].Elems;
    R.check(V.GradsFP32, Elems, "sub-group " + std::to_string(G));
    if (V.Begin > Owned || Elems > Owned - V.Begin)
      return "sub-group " + std::to_string(G) + " lies past the partition";
  }
  for (size_t V = 0; V < X.Values.size(); ++V) {
    // A parameter's view may hold its padding too.
    if (!R.check(X.Values[V], Any, "value " + std::to_string(V)))
      return R.Error;
    const Value &Val = P.Values[V];
    uint32_t Id = X.Values[V];
    if (Id != NoIndex &&
        (P.Views[Id].Type != Val.Type || P.Views[Id].Elems < Val.Elems ||
         (Val.Kind != ValueKind::Param && P.Views[Id].Elems != Val.Elems)))
      return "value " + std::to_string(V) + ": a view of another type or size";
  }
  for (size_t K = 0; K < P.Kernels.size(); ++K)
    for (int Out = 0; Out < 2; ++Out)
      for (const TensorRef &Ref : Out ? P.Kernels[K].Outputs
                                      : P.Kernels[K].Inputs) {
        uint32_t V = Ref.Value < X.Values.size() ? X.Values[Ref.Value]
                                                 : NoIndex;
        if (V == NoIndex ||
            P.Buffers[P.Views[V].Buffer].Space != MemorySpace::Device)
          return "kernel " + std::to_string(K) + " uses value '" +
                 P.Values[Ref.Value].Name + "', which has no place on the "
                 "device";
      }
  const PartitionViews &O = X.Owned;
  for (uint32_t V : {O.Master, O.Moment1, O.Moment2, O.GradsFP32, O.Grads,
                     O.Params16})
    R.check(V, Owned, "the partition");
  const RuntimeViews &RT = X.Runtime;
  for (uint32_t V : {RT.Scratch, RT.HostScratch, RT.Inputs,
                     RT.KernelWorkspace, RT.ParamStaging, RT.SaveStaging})
    R.check(V, Any, "the runtime's buffers");
  for (uint32_t V : RT.GradStaging)
    R.check(V, Any, "the gradient staging slots");
  for (uint32_t V : RT.NVMeState)
    R.check(V, Any, "the NVMe state buffers");
  for (uint32_t V : RT.NVMeParams)
    R.check(V, Any, "the NVMe parameter buffers");
  for (size_t I = 0; I < X.InstructionSlots.size(); ++I)
    R.check(X.InstructionSlots[I], Any,
            "instruction " + std::to_string(I) + "'s buffer slot");
  return R.Error;
}

} // namespace

std::string checkMemoryOrdering(const Plan &P, size_t Class) {
  // Vector clocks: for each instruction, the last instruction of every
  // stream known to have finished before it starts.
  size_t N = P.Program.size();
  using Clock = std::array<int64_t, NumStreams>;
  std::vector<Clock> At(N);
  Clock Previous[NumStreams];
  for (Clock &C : Previous)
    C.fill(-1);
  for (size_t I = 0; I < N; ++I) {
    const Instruction &In = P.Program[I];
    unsigned S = unsigned(In.On);
    Clock C = Previous[S];
    for (uint32_t W : In.Waits)
      for (unsigned K = 0; K < NumStreams; ++K)
        C[K] = std::max(C[K], At[W][K]);
    C[S] = int64_t(I);
    At[I] = C;
    Previous[S] = C;
  }
  auto HappensBefore = [&](uint32_t A, uint32_t B) {
    return At[B][unsigned(P.Program[A].On)] >= int64_t(A);
  };
  struct Piece {
    const Buffer *B;
    uint64_t Begin, End;
    Interval Live;
  };
  for (MemorySpace Space : {MemorySpace::Device, MemorySpace::Host}) {
    std::vector<Piece> Pieces;
    for (const Buffer &B : P.Buffers)
      if (B.Space == Space && Class < B.Bytes.size() && B.Bytes[Class])
        for (const Interval &L : B.Live)
          Pieces.push_back({&B, B.Offsets[Class],
                            B.Offsets[Class] + B.Bytes[Class], L});
    std::sort(Pieces.begin(), Pieces.end(), [](const Piece &A, const Piece &B) {
      return A.Live.Begin < B.Live.Begin;
    });
    for (size_t I = 0; I < Pieces.size(); ++I)
      for (size_t J = I + 1; J < Pieces.size(); ++J) {
        const Piece &A = Pieces[I], &B = Pieces[J];
        if (A.B == B.B || A.End <= B.Begin || B.End <= A.Begin)
          continue;
        if (A.Live.End > B.Live.Begin)
          return "buffers " + A.B->Name + " and " + B.B->Name +
                 " share bytes while both are live";
        uint32_t LastOfA = A.Live.End - 1, FirstOfB = B.Live.Begin;
        if (!HappensBefore(LastOfA, FirstOfB))
          return "buffer " + B.B->Name + " reuses the bytes of " + A.B->Name +
                 ", but instruction " + std::to_string(FirstOfB) +
                 " may run before instruction " + std::to_string(LastOfA) +
                 " has finished";
      }
  }
  return "";
}

std::string checkPlacement(const Plan &P) {
  if (P.Buffers.empty())
    return P.Views.empty() ? "" : "views without a memory plan";
  if (std::string E = checkViews(P); !E.empty())
    return E;
  return checkPlacementViews(P);
}

} // namespace dsc::plan
