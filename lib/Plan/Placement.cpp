//===- Placement.cpp - Where everything sits inside the planned buffers ---===//
//
// The memory pass places buffers in the arenas; this pass says where each
// tensor, shard, gathered unit, bucket chunk and staging area sits inside
// them, as views (plan::View, plan::Placement), so that the runtime looks
// up addresses instead of re-deriving layouts. The layouts follow
// DeepSpeed's (docs/plan-format.md, "Views"):
//
//   stage 0-2  params16 holds the padded flat buffer of trainable
//              parameters (flat order), then the frozen ones; a rank's
//              partition is a range of it (RankStride: the partition);
//   buckets    stage 0/1 reduce their range of grads16 in place; stage 2
//              copies each gradient into its bucket buffer at its flat
//              offset from the bucket's start, and each partition's piece
//              is reduced to its owner; stage 3 scatters each gradient
//              into every rank's chunk of the bucket buffer (a rank's chunk
//              holds its shards of the bucket's tensors, in bucket order);
//   stage 3    params16 holds this rank's shards unit by unit (a unit's
//              shards are the chunk its gather sends), then those of
//              tensors in no unit; persistent_params the padded persistent
//              tensors; the partition arrays (master, moments, gradients)
//              the shards of trainable tensors in partition order; a
//              gathered unit its padded tensors in unit order, and its
//              rank-major gather buffer one chunk per rank; with hpZ, a
//              unit's secondary partition a slice of that buffer.
//
//===----------------------------------------------------------------------===//

#include "PlanInternal.h"
#include "dsc/PlanFacts.h"

#include <map>

using namespace llvm;

namespace dsc {

namespace {

using plan::BufferRole;
using plan::DType;
using plan::NoIndex;

class Placer {
public:
  explicit Placer(plan::Plan &P)
      : P(P), S(P.Settings), World(plan::partitionRanks(S)), Stage(S.ZeroStage),
        ParamType(S.ParamDType), PB(plan::dtypeBytes(S.ParamDType)) {
    for (uint32_t B = 0; B < P.Buffers.size(); ++B)
      if (!P.Buffers[B].Live.empty())
        ByRole[{P.Buffers[B].Role, P.Buffers[B].Index}] = B;
  }

  Error run();

private:
  uint32_t buffer(BufferRole R, uint32_t Index = NoIndex) const {
    auto It = ByRole.find({R, Index});
    return It == ByRole.end() ? NoIndex : It->second;
  }
  /// A view of Elems elements of T in buffer B from byte Offset (NoIndex
  /// when the buffer is not planned).
  uint32_t view(uint32_t B, uint64_t Offset, uint64_t Elems, DType T,
                uint64_t RankStride = 0) {
    if (B == NoIndex)
      return NoIndex;
    P.Views.push_back({B, Offset, RankStride, Elems, T});
    return uint32_t(P.Views.size() - 1);
  }
  uint64_t owned() const {
    return Stage == 0 ? P.Layout.FlatElems : P.Layout.PartitionElems;
  }

  Error tensors();
  Error buckets();
  void units();
  void subGroups();
  void values();
  void owned16();
  void runtime();
  void instructionSlots();

  plan::Plan &P;
  const plan::Info &S;
  /// The ranks a partition is split over (plan::partitionRanks).
  uint32_t World, Stage;
  DType ParamType;
  uint64_t PB;
  std::map<std::pair<BufferRole, uint32_t>, uint32_t> ByRole;
  /// Stage 3: each tensor's shard in params16, and each unit's tensors'
  /// offsets in the unit and in a rank's chunk, in elements.
  std::vector<uint64_t> ShardOffset, UnitOffset, ChunkOffset, UnitElems,
      ChunkElems;
  std::vector<uint32_t> UnitOfTensor, GradValue;
};

Error Placer::tensors() {
  size_t NT = P.Tensors.size();
  P.Places.Tensors.assign(NT, {});
  GradValue.assign(NT, NoIndex);
  for (uint32_t V = 0; V < P.Values.size(); ++V)
    if (P.Values[V].Kind == plan::ValueKind::ParamGrad &&
        P.Values[V].Tensor < NT)
      GradValue[P.Values[V].Tensor] = V;
  uint32_t Params = buffer(BufferRole::Params16);

  if (Stage < 3) {
    uint64_t Frozen = P.Layout.PaddedElems;
    for (uint32_t T = 0; T < NT; ++T) {
      const plan::Tensor &X = P.Tensors[T];
      uint64_t At = X.FlatOffset;
      if (X.Role != plan::TensorRole::Trainable) {
        At = Frozen;
        Frozen += X.Elems;
      }
      P.Places.Tensors[T].Param = view(Params, At * PB, X.Elems, ParamType);
      if (Stage < 2 && X.Role == plan::TensorRole::Trainable)
        P.Places.Tensors[T].Grad = view(buffer(BufferRole::Grads16),
                                        X.FlatOffset * PB, X.Elems, ParamType);
    }
    return Error::success();
  }

  // Stage 3: shards unit by unit, then those of tensors in no unit.
  ShardOffset.assign(NT, NoIndex);
  UnitOfTensor.assign(NT, NoIndex);
  size_t NU = P.FetchUnits.size();
  UnitElems.assign(NU, 0);
  ChunkElems.assign(NU, 0);
  UnitOffset.assign(NT, 0);
  ChunkOffset.assign(NT, 0);
  uint64_t Shards = 0;
  for (uint32_t U = 0; U < NU; ++U)
    for (uint32_t T : P.FetchUnits[U].Tensors) {
      if (UnitOfTensor[T] != NoIndex)
        return planError("tensor '" + P.Tensors[T].Name +
                         "' is in two fetch units");
      if (P.Tensors[T].Persistent)
        return planError("fetch unit " + Twine(U) +
                         " holds persistent tensor '" + P.Tensors[T].Name +
                         "', which every rank keeps whole");
      UnitOfTensor[T] = U;
      ShardOffset[T] = Shards;
      Shards += P.Tensors[T].ShardElems;
      UnitOffset[T] = UnitElems[U];
      ChunkOffset[T] = ChunkElems[U];
      UnitElems[U] += P.Tensors[T].ShardElems * World;
      ChunkElems[U] += P.Tensors[T].ShardElems;
    }
  uint32_t Persistent = buffer(BufferRole::PersistentParams);
  uint64_t PersistentAt = 0;
  for (uint32_t T = 0; T < NT; ++T) {
    const plan::Tensor &X = P.Tensors[T];
    plan::TensorViews &V = P.Places.Tensors[T];
    uint64_t Shard = X.ShardElems;
    if (X.Persistent) {
      V.Param = view(Persistent, PersistentAt * PB, Shard * World, ParamType);
      V.Shard = view(Persistent, PersistentAt * PB, Shard, ParamType,
                     Shard * PB);
      PersistentAt += Shard * World;
      continue;
    }
    if (ShardOffset[T] == NoIndex) {
      ShardOffset[T] = Shards;
      Shards += Shard;
    }
    V.Shard = view(Params, ShardOffset[T] * PB, Shard, ParamType);
    uint32_t U = UnitOfTensor[T];
    if (U == NoIndex)
      continue;
    V.Param = view(buffer(BufferRole::Unit, U), UnitOffset[T] * PB,
                   Shard * World, ParamType);
    uint32_t Target = plan::unitGathersRankMajor(P, U)
                          ? buffer(BufferRole::UnitGather, U)
                          : buffer(BufferRole::Unit, U);
    V.Chunk = view(Target, ChunkOffset[T] * PB, Shard, ParamType,
                   ChunkElems[U] * PB);
  }
  uint64_t Order = 0;
  for (uint32_t T : P.Layout.Order) {
    P.Places.Tensors[T].PartitionOffset = Order;
    Order += P.Tensors[T].ShardElems;
  }
  if (Order > P.Layout.PartitionElems)
    return planError("the partition holds fewer elements than its tensors' "
                     "shards");
  return Error::success();
}

Error Placer::buckets() {
  P.Places.Buckets.assign(P.Buckets.size(), {});
  uint64_t Part = P.Layout.PartitionElems;
  for (uint32_t B = 0; B < P.Buckets.size(); ++B) {
    const plan::Bucket &Bucket = P.Buckets[B];
    plan::BucketViews &BV = P.Places.Buckets[B];
    if (Bucket.Segments.empty())
      return planError("bucket " + Twine(B) + " has no gradients");
    // The gradient of a bucket reduced alone stays where the backward
    // left it; with contiguous_gradients off, DeepSpeed reduces each
    // gradient from there, which no view of one buffer describes.
    uint32_t Alone =
        Bucket.InPlace ? P.Values.size() > GradValue[Bucket.Segments[0].Tensor]
                             ? P.Values[GradValue[Bucket.Segments[0].Tensor]]
                                   .Buffer
                             : NoIndex
                       : NoIndex;
    uint32_t Buffered = Bucket.BufferIndex == NoIndex
                            ? NoIndex
                            : buffer(BufferRole::ReduceBucket,
                                     Bucket.BufferIndex);
    if (Stage < 3) {
      uint64_t Begin = ~uint64_t(0), End = 0, Elems = 0;
      for (const plan::Segment &Seg : Bucket.Segments) {
        const plan::Tensor &X = P.Tensors[Seg.Tensor];
        Begin = std::min(Begin, X.FlatOffset + Seg.Begin);
        End = std::max(End, X.FlatOffset + Seg.End);
        Elems += Seg.End - Seg.Begin;
      }
      if (End - Begin != Elems)
        return planError("bucket " + Twine(B) +
                         " is not one range of the flat buffer");
      // Where the bucket's flat range starts, in which buffer.
      uint32_t Source = NoIndex;
      if (Stage < 2)
        Source = buffer(BufferRole::Grads16);
      else if (Alone != NoIndex)
        Source = Alone;
      else
        Source = Buffered;
      uint64_t SourceOrigin = Stage < 2 ? 0 : Begin;
      BV.Source = view(Source, (Begin - SourceOrigin) * PB, End - Begin,
                       ParamType);
      if (Stage == 0 || Source == NoIndex)
        continue;
      for (uint32_t Q = Begin / Part; Q < World && Q * Part < End; ++Q) {
        uint64_t Lo = std::max(Begin, Q * Part);
        uint64_t Hi = std::min(End, (Q + 1) * Part);
        if (Lo < Hi)
          BV.Pieces.push_back({Q,
                               view(Source, (Lo - SourceOrigin) * PB, Hi - Lo,
                                    ParamType),
                               Lo - Q * Part});
      }
      if (Stage == 2)
        for (const plan::Segment &Seg : Bucket.Segments)
          P.Places.Tensors[Seg.Tensor].Grad =
              view(Source, (P.Tensors[Seg.Tensor].FlatOffset - SourceOrigin) * PB,
                   P.Tensors[Seg.Tensor].Elems, ParamType);
      continue;
    }
    uint32_t Source = Alone != NoIndex ? Alone : Buffered;
    DType T = Alone != NoIndex ? ParamType : S.CommDType;
    uint64_t TB = plan::dtypeBytes(T), Chunk = 0;
    if (plan::qgzAcrossNodes(S)) {
      // ZeRO++ qgZ across nodes: each gradient whole, padded to the ranks,
      // its partitions one after another: DeepSpeed reduces each alone.
      uint64_t At = 0;
      for (const plan::Segment &Seg : Bucket.Segments) {
        const plan::Tensor &X = P.Tensors[Seg.Tensor];
        P.Places.Tensors[Seg.Tensor].Grad =
            view(Source, At * TB, X.ShardElems, T, X.ShardElems * TB);
        At += X.ShardElems * World;
      }
      BV.Source = view(Source, 0, At, T);
      uint64_t Bytes = plan::qgzLayout(P, B).Bytes;
      if (Source != NoIndex && Bytes)
        BV.Qgz = view(buffer(BufferRole::QgzReduce), 0, Bytes, DType::I8);
      continue;
    }
    // Stage 3: rank-major chunks, each a rank's shards of the tensors.
    for (const plan::Segment &Seg : Bucket.Segments) {
      const plan::Tensor &X = P.Tensors[Seg.Tensor];
      P.Places.Tensors[Seg.Tensor].Grad =
          view(Source, Chunk * TB, X.ShardElems, T, 0);
      Chunk += X.ShardElems;
    }
    for (const plan::Segment &Seg : Bucket.Segments)
      if (uint32_t G = P.Places.Tensors[Seg.Tensor].Grad; G != NoIndex)
        P.Views[G].RankStride = Chunk * TB;
    BV.Source = view(Source, 0, Chunk * World, T);
    BV.Chunk = view(Source, 0, Chunk, T, Chunk * TB);
  }
  return Error::success();
}

void Placer::units() {
  P.Places.Units.assign(P.FetchUnits.size(), {});
  if (Stage < 3)
    return;
  bool HostShards = S.ParamOffload != plan::OffloadDevice::None;
  uint32_t Params = buffer(BufferRole::Params16);
  for (uint32_t U = 0; U < P.FetchUnits.size(); ++U) {
    const std::vector<uint32_t> &Tensors = P.FetchUnits[U].Tensors;
    uint32_t Whole = buffer(BufferRole::Unit, U);
    if (Tensors.empty() || Whole == NoIndex)
      continue;
    plan::UnitViews &UV = P.Places.Units[U];
    uint32_t Target = plan::unitGathersRankMajor(P, U)
                          ? buffer(BufferRole::UnitGather, U)
                          : Whole;
    UV.Whole = view(Whole, 0, UnitElems[U], ParamType);
    UV.Target = view(Target, 0, UnitElems[U], ParamType);
    UV.Secondary = view(buffer(BufferRole::HpzSecondary, U), 0,
                        UnitElems[U] / S.HpzPartition, ParamType);
    // Shards copied in from the host (or NVMe) land in this rank's chunk
    // and are gathered in place; on the device they are sent from params16,
    // where a unit's shards lie side by side.
    UV.Send = HostShards ? view(Target, 0, ChunkElems[U], ParamType,
                                ChunkElems[U] * PB)
                         : view(Params, ShardOffset[Tensors[0]] * PB,
                                ChunkElems[U], ParamType);
    // ZeRO++ qwZ: every rank's int8 chunk, then every rank's scales; a
    // rank quantizes into its own and the ranks gather them in place.
    if (!plan::unitGathersQuantized(P))
      continue;
    uint32_t Q = buffer(BufferRole::QwzGather, U);
    plan::QwzLayout L = plan::qwzLayout(P, U);
    plan::QwzGather Full = plan::qwzGather(P, U, false);
    UV.Quantized = view(Q, 0, Full.Send * World, DType::I8);
    UV.QuantizedSend = view(Q, 0, Full.Send, DType::I8, Full.Send);
    UV.Scales = view(Q, L.ScalesAt, Full.Groups * World, DType::F32);
    UV.ScalesSend = view(Q, L.ScalesAt, Full.Groups, DType::F32,
                         Full.Groups * 4);
    if (UV.Secondary == NoIndex)
      continue;
    // With hpZ, the gathers within the group send the rank's secondary
    // partition, quantized apart, and receive into the same int8 chunks.
    plan::QwzGather Group = plan::qwzGather(P, U, true);
    UV.QuantizedSecondarySend = view(Q, L.SecondaryAt, Group.Send, DType::I8);
    UV.ScalesSecondary =
        view(Q, L.ScalesAt, Group.Groups * Group.Ranks, DType::F32);
    UV.ScalesSecondarySend =
        view(Q, L.SecondaryScalesAt, Group.Groups, DType::F32);
  }
}

void Placer::subGroups() {
  P.Places.SubGroups.assign(P.Layout.SubGroups.size(), {});
  if (Stage < 3)
    return; // One sub-group: the whole partition, from its first element.
  for (uint32_t G = 0; G < P.Layout.SubGroups.size(); ++G) {
    const plan::SubGroup &Group = P.Layout.SubGroups[G];
    uint64_t Begin = Group.FirstTensor < P.Layout.Order.size()
                         ? P.Places.Tensors[P.Layout.Order[Group.FirstTensor]]
                               .PartitionOffset
                         : 0;
    P.Places.SubGroups[G] = {Begin,
                             view(buffer(BufferRole::GradsFP32, G), 0,
                                  Group.Elems, S.MasterDType)};
  }
}

void Placer::values() {
  P.Places.Values.assign(P.Values.size(), NoIndex);
  for (uint32_t V = 0; V < P.Values.size(); ++V) {
    const plan::Value &X = P.Values[V];
    if (X.Kind == plan::ValueKind::Param) {
      if (X.Tensor < P.Tensors.size())
        P.Places.Values[V] = P.Places.Tensors[X.Tensor].Param;
      continue;
    }
    if (X.Buffer < P.Buffers.size() && !P.Buffers[X.Buffer].Live.empty())
      P.Places.Values[V] = view(X.Buffer, 0, X.Elems, X.Type);
  }
}

void Placer::owned16() {
  plan::PartitionViews &O = P.Places.Owned;
  uint64_t N = owned();
  uint64_t Stride = Stage == 0 ? 0 : N;
  bool MasterIsParams = Stage == 0 && ParamType == DType::F32;
  O.Master = MasterIsParams
                 ? view(buffer(BufferRole::Params16), 0, N, DType::F32)
                 : view(buffer(BufferRole::MasterParams), 0, N, S.MasterDType);
  uint32_t States = buffer(BufferRole::OptimizerStates);
  uint64_t SB = plan::dtypeBytes(S.OptimizerStateDType);
  O.Moment1 = view(States, 0, N, S.OptimizerStateDType);
  O.Moment2 = view(States, N * SB, N, S.OptimizerStateDType);
  if (Stage < 3) {
    O.GradsFP32 = view(buffer(BufferRole::GradsFP32), 0, N, S.MasterDType);
    O.Params16 = view(buffer(BufferRole::Params16), 0, N, ParamType,
                      Stride * PB);
  }
  if (Stage < 2)
    O.Grads = view(buffer(BufferRole::Grads16), 0, N, ParamType, Stride * PB);
  else if (Stage == 2)
    O.Grads = view(buffer(BufferRole::GradPartition16), 0, N, ParamType);
  else
    O.Grads = view(buffer(BufferRole::GradPartition), 0, N, S.GradAccumDType);
}

void Placer::runtime() {
  plan::RuntimeViews &R = P.Places.Runtime;
  plan::ScratchLayout L =
      plan::scratchLayout(P.Program.size(), S.GradAccum);
  auto Whole = [&](BufferRole Role, DType T) {
    uint32_t B = buffer(Role);
    return B == NoIndex ? NoIndex
                        : view(B, 0, P.Buffers[B].Bytes[0] / plan::dtypeBytes(T),
                               T);
  };
  R.Scratch = view(buffer(BufferRole::Scratch), 0, L.Floats, DType::F32);
  R.HostScratch =
      view(buffer(BufferRole::HostScratch), 0, L.HostFloats, DType::F32);
  R.Inputs = Whole(BufferRole::InputStaging, DType::U8);
  R.KernelWorkspace = Whole(BufferRole::KernelWorkspace, DType::U8);
  if (uint32_t B = buffer(BufferRole::GradStagingHost); B != NoIndex) {
    uint64_t Slot = P.Buffers[B].Bytes[0] / plan::GradStagingSlots;
    for (unsigned K = 0; K < plan::GradStagingSlots; ++K)
      R.GradStaging.push_back(view(B, K * Slot, Slot, DType::U8));
  }
  R.SaveStaging = Whole(BufferRole::SaveStaging, ParamType);
  uint64_t Group = 0;
  for (const plan::SubGroup &G : P.Layout.SubGroups)
    Group = std::max(Group, G.Elems);
  R.ParamStaging =
      view(buffer(BufferRole::ParamStagingHost), 0, Group, ParamType);
  // NVMe: a sub-group's master weights and both moments in three of the
  // optimizer swap buffers at once; each parameter buffer holds a unit.
  uint32_t Count = S.AioBufferCount;
  if (uint32_t B = buffer(BufferRole::NVMeOptimizerBuffers);
      B != NoIndex && Count >= 3) {
    uint64_t Stride = roundUp(Group * 4, plan::SwapAlignment);
    for (unsigned K = 0; K < 3; ++K)
      R.NVMeState.push_back(view(B, K * Stride, Group, DType::F32));
  }
  if (uint32_t B = buffer(BufferRole::NVMeParamBuffers); B != NoIndex) {
    uint64_t Stride = roundUp(S.AioBufferBytes, plan::SwapAlignment);
    for (uint32_t K = 0; K < Count; ++K)
      R.NVMeParams.push_back(view(B, K * Stride, S.AioBufferBytes, DType::U8));
  }
}

void Placer::instructionSlots() {
  // A unit read from NVMe lands in the next of the parameter buffers in
  // turn, and its copy to the device reads the buffer its read filled; an
  // offloaded bucket's staged gradients are copied into the next gradient
  // staging slot in turn, and its host conversion reads the slot its copy
  // filled (the schedule's waits assume the same turns).
  P.Places.InstructionSlots.assign(P.Program.size(), NoIndex);
  const std::vector<uint32_t> &Params = P.Places.Runtime.NVMeParams;
  const std::vector<uint32_t> &Grads = P.Places.Runtime.GradStaging;
  uint32_t Reads = 0, Copies = 0, GradSlot = NoIndex;
  std::vector<uint32_t> SlotOfUnit(P.FetchUnits.size(), NoIndex);
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    const plan::Instruction &In = P.Program[I];
    if (In.Kind != plan::InstrKind::Transfer)
      continue;
    const plan::Transfer &X = P.Transfers[In.Arg];
    if (X.Point == plan::TransferPoint::BeforeGather && !Params.empty()) {
      if (X.Kind == plan::TransferKind::NVMeRead)
        SlotOfUnit[X.Owner] = Params[Reads++ % Params.size()];
      P.Places.InstructionSlots[I] = SlotOfUnit[X.Owner];
    }
    if (X.Point == plan::TransferPoint::AfterReduce && X.Staged &&
        !Grads.empty()) {
      if (X.Kind == plan::TransferKind::DeviceToHost)
        GradSlot = Grads[Copies++ % Grads.size()];
      P.Places.InstructionSlots[I] = GradSlot;
    }
  }
}

Error Placer::run() {
  P.Views.clear();
  P.Places = plan::Placement();
  if (P.Buffers.empty())
    return planError("the placement needs the memory plan first");
  if (Error E = tensors())
    return E;
  if (Error E = buckets())
    return E;
  units();
  subGroups();
  values();
  owned16();
  runtime();
  instructionSlots();
  return Error::success();
}

} // namespace

Error runPlacementPass(plan::Plan &P) { return Placer(P).run(); }

} // namespace dsc
