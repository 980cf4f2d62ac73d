//===- Layout.cpp ---------------------------------------------------------===//

#include "Layout.h"

#include "dsc/PlanCheck.h"
#include "dsc/PlanCodec.h"

#include "Nvme.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>

namespace plan = dsc::plan;

namespace dsrun {

Layout::Layout(const plan::Plan &P, uint32_t Rank)
    : P(P), Rank(Rank), World(P.Settings.WorldSize), Class(0),
      Stage(P.Settings.ZeroStage), Param(ElementType(P.Settings.ParamDType)),
      Comm(ElementType(P.Settings.CommDType)),
      GradAccum(ElementType(P.Settings.GradAccumDType)) {
  for (size_t C = 0; C < P.Layout.RankClasses.size(); ++C)
    for (const plan::RankRange &R : P.Layout.RankClasses[C].Ranks)
      if (Rank >= R.First && Rank < R.First + R.Count)
        Class = C;
  for (const plan::Buffer &B : P.Buffers)
    ByName[B.Name] = &B;

  size_t NT = P.Tensors.size();
  ParamOffset.assign(NT, NoOffset);
  GradPartition.assign(NT, NoOffset);
  ShardOffset.assign(NT, NoOffset);
  PersistentOffset.assign(NT, NoOffset);
  OrderOffset.assign(NT, NoOffset);
  const plan::Partition &L = P.Layout;

  if (Stage < 3) {
    uint64_t Frozen = L.PaddedElems;
    for (uint32_t T = 0; T < NT; ++T) {
      const plan::Tensor &X = P.Tensors[T];
      if (X.Role == plan::TensorRole::Trainable) {
        ParamOffset[T] = X.FlatOffset;
      } else {
        ParamOffset[T] = Frozen;
        Frozen += X.Elems;
      }
    }
    PartitionBegin = Stage == 0 ? 0 : uint64_t(Rank) * L.PartitionElems;
    PartitionEnd = Stage == 0 ? L.FlatElems
                              : PartitionBegin + L.PartitionElems;
    uint64_t InPartition = 0;
    for (uint32_t T : L.Order) {
      const plan::Tensor &X = P.Tensors[T];
      uint64_t B = std::max(PartitionBegin, X.FlatOffset);
      uint64_t E = std::min(PartitionEnd, X.FlatOffset + X.Elems);
      if (B >= E)
        continue;
      Owned.push_back({T, B - X.FlatOffset, E - X.FlatOffset,
                       B - PartitionBegin});
      GradPartition[T] = InPartition;
      InPartition += X.Elems;
    }
    SubGroupRange = {{0, PartitionEnd - PartitionBegin}};
  } else {
    // Shards unit by unit, so that a unit's shards are one rank-major chunk
    // of its gather; then those of tensors in no unit.
    uint64_t Shards = 0, Persistent = 0;
    for (const plan::FetchUnit &U : P.FetchUnits)
      for (uint32_t T : U.Tensors)
        if (ShardOffset[T] == NoOffset) {
          ShardOffset[T] = Shards;
          Shards += P.Tensors[T].ShardElems;
        }
    for (uint32_t T = 0; T < NT; ++T) {
      const plan::Tensor &X = P.Tensors[T];
      if (X.Persistent) {
        PersistentOffset[T] = Persistent;
        Persistent += X.ShardElems * World;
      } else if (ShardOffset[T] == NoOffset) {
        ShardOffset[T] = Shards;
        Shards += X.ShardElems;
      }
    }
    uint64_t Order = 0;
    std::vector<uint64_t> OrderStart;
    for (uint32_t T : L.Order) {
      const plan::Tensor &X = P.Tensors[T];
      OrderOffset[T] = Order;
      OrderStart.push_back(Order);
      uint64_t B = uint64_t(Rank) * X.ShardElems;
      uint64_t E = std::min(X.Elems, B + X.ShardElems);
      if (B < E)
        Owned.push_back({T, B, E, Order});
      Order += X.ShardElems;
    }
    OrderStart.push_back(Order);
    for (const plan::SubGroup &G : L.SubGroups)
      SubGroupRange.push_back({OrderStart[G.FirstTensor],
                               OrderStart[G.EndTensor]});
  }

  UnitOfTensor.assign(NT, plan::NoIndex);
  UnitElems.assign(P.FetchUnits.size(), 0);
  UnitChunk.assign(P.FetchUnits.size(), 0);
  UnitTensorOffset.resize(P.FetchUnits.size());
  for (uint32_t U = 0; U < P.FetchUnits.size(); ++U)
    for (uint32_t T : P.FetchUnits[U].Tensors) {
      UnitOfTensor[T] = U;
      UnitTensorOffset[U][T] = {UnitElems[U], UnitChunk[U]};
      UnitElems[U] += P.Tensors[T].ShardElems * World;
      UnitChunk[U] += P.Tensors[T].ShardElems;
    }

  GradValue.assign(NT, plan::NoIndex);
  for (uint32_t V = 0; V < P.Values.size(); ++V)
    if (P.Values[V].Kind == plan::ValueKind::ParamGrad &&
        P.Values[V].Tensor < NT)
      GradValue[P.Values[V].Tensor] = V;

  unsigned PB = elementBytes(Param);
  ValueOffset.assign(P.Values.size(), NoOffset);
  for (uint32_t V = 0; V < P.Values.size(); ++V) {
    const plan::Value &X = P.Values[V];
    if (X.Kind != plan::ValueKind::Param) {
      if (BufferView B = valueBuffer(V); B && B.B->Space == plan::MemorySpace::Device)
        ValueOffset[V] = B.Offset;
      continue;
    }
    uint32_t T = X.Tensor;
    if (T >= NT)
      continue;
    BufferView B;
    uint64_t At = NoOffset;
    if (Stage < 3) {
      B = buffer("params16");
      At = ParamOffset[T];
    } else if (P.Tensors[T].Persistent) {
      B = buffer("persistent_params");
      At = PersistentOffset[T];
    } else if (UnitOfTensor[T] != plan::NoIndex) {
      B = buffer("unit." + std::to_string(UnitOfTensor[T]));
      At = unitOffset(UnitOfTensor[T], T);
    }
    if (B && B.B->Space == plan::MemorySpace::Device && At != NoOffset)
      ValueOffset[V] = B.Offset + At * PB;
  }

  for (const plan::Bucket &B : P.Buckets) {
    BucketLayout BL;
    bool InPlace = B.BufferIndex == plan::NoIndex;
    const plan::Tensor *Alone =
        InPlace && !B.Segments.empty() ? &P.Tensors[B.Segments[0].Tensor]
                                       : nullptr;
    uint32_t AloneGrad =
        Alone ? GradValue[B.Segments[0].Tensor] : plan::NoIndex;
    BL.Source = Stage < 2 ? "grads16"
                : InPlace ? (AloneGrad == plan::NoIndex
                                 ? std::string()
                                 : P.Buffers.size() >
                                           P.Values[AloneGrad].Buffer
                                       ? P.Buffers[P.Values[AloneGrad].Buffer]
                                             .Name
                                       : std::string())
                          : "ipg." + std::to_string(B.BufferIndex);
    if (BufferView V = buffer(BL.Source))
      BL.SourceOffset = V.Offset;
    BL.SourceType = Stage == 3 && !InPlace ? Comm : Param;
    if (Stage < 3) {
      BL.FlatBegin = ~uint64_t(0);
      for (const plan::Segment &S : B.Segments) {
        const plan::Tensor &X = P.Tensors[S.Tensor];
        BL.FlatBegin = std::min(BL.FlatBegin, X.FlatOffset + S.Begin);
        BL.FlatEnd = std::max(BL.FlatEnd, X.FlatOffset + S.End);
      }
      BL.SourceOrigin = Stage < 2 ? 0 : Alone ? Alone->FlatOffset : BL.FlatBegin;
    } else if (InPlace) {
      // The gradient alone, rank-major as autograd padded it.
      BL.ChunkElems = Alone ? Alone->ShardElems : 0;
      BL.ChunkOffset.assign(B.Segments.size(), 0);
    } else {
      for (const plan::Segment &S : B.Segments) {
        BL.ChunkOffset.push_back(BL.ChunkElems);
        BL.ChunkElems += P.Tensors[S.Tensor].ShardElems;
      }
    }
    Buckets.push_back(std::move(BL));
  }
}

BufferView Layout::valueBuffer(uint32_t V) const {
  if (V >= P.Values.size() || P.Values[V].Buffer >= P.Buffers.size())
    return {};
  const plan::Buffer &B = P.Buffers[P.Values[V].Buffer];
  if (B.Live.empty())
    return {};
  return {&B, B.Offsets[Class], B.Bytes[Class]};
}

BufferView Layout::buffer(const std::string &Name) const {
  auto It = ByName.find(Name);
  if (It == ByName.end() || It->second->Live.empty())
    return {};
  return {It->second, It->second->Offsets[Class], It->second->Bytes[Class]};
}

uint64_t Layout::unitOffset(uint32_t Unit, uint32_t T) const {
  auto It = UnitTensorOffset[Unit].find(T);
  return It == UnitTensorOffset[Unit].end() ? NoOffset : It->second.first;
}

uint64_t Layout::chunkOffset(uint32_t Unit, uint32_t T) const {
  auto It = UnitTensorOffset[Unit].find(T);
  return It == UnitTensorOffset[Unit].end() ? NoOffset : It->second.second;
}

std::string Layout::gatherTarget(uint32_t Unit) const {
  return (plan::unitGathersRankMajor(P, Unit) ? "gather." : "unit.") +
         std::to_string(Unit);
}

std::optional<plan::Plan> loadPlanFile(const std::string &Path,
                                       std::string &Error, bool &Unreadable) {
  std::ifstream In(Path, std::ios::binary);
  Unreadable = !In;
  if (Unreadable) {
    Error = Path + ": cannot open";
    return std::nullopt;
  }
  std::vector<uint8_t> Bytes((std::istreambuf_iterator<char>(In)),
                             std::istreambuf_iterator<char>());
  std::optional<plan::Plan> P = plan::readPlan(Bytes.data(), Bytes.size(), Error);
  if (P)
    Error = plan::checkPlan(*P);
  if (!P || !Error.empty()) {
    Error = Path + ": " + Error;
    return std::nullopt;
  }
  return P;
}

namespace {

std::string checkProgramNeeds(const Layout &L) {
  const plan::Plan &P = L.P;
  const plan::Info &S = P.Settings;
  bool Offloaded = S.OptimizerOffload != plan::OffloadDevice::None;
  for (const plan::Bucket &B : P.Buckets)
    if (B.Segments.empty())
      return "a gradient bucket has no segments";
  if (S.ParamOffload == plan::OffloadDevice::NVMe)
    for (uint32_t T = 0; T < P.Tensors.size(); ++T)
      if (!P.Tensors[T].Persistent && L.UnitOfTensor[T] == plan::NoIndex)
        return "tensor " + P.Tensors[T].Name +
               " lives on NVMe but belongs to no fetch unit";
  // A unit read from NVMe is copied to the device out of the same buffer
  // next: the two come in pairs.
  bool ReadPending = false;
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    const plan::Instruction &In = P.Program[I];
    std::string Where = "instruction " + std::to_string(I) + ": ";
    if (In.Kind == plan::InstrKind::OptimizerStep &&
        In.Arg >= L.SubGroupRange.size())
      return Where + "the optimizer steps a sub-group the partition lacks";
    if (In.Kind != plan::InstrKind::Transfer)
      continue;
    const plan::Transfer &X = P.Transfers[In.Arg];
    bool Fits = true;
    switch (X.Point) {
    case plan::TransferPoint::AfterReduce:
      Fits = Offloaded && X.Kind == plan::TransferKind::DeviceToHost;
      break;
    case plan::TransferPoint::BeforeStep:
      Fits = S.OptimizerOffload == plan::OffloadDevice::NVMe &&
             X.Kind == plan::TransferKind::NVMeRead;
      break;
    case plan::TransferPoint::AfterStep:
      Fits = Offloaded && X.Owner < L.SubGroupRange.size() &&
             (X.Kind == plan::TransferKind::HostToDevice ||
              (X.Kind == plan::TransferKind::NVMeWrite &&
               (X.What == plan::Category::Params16
                    ? S.ParamOffload == plan::OffloadDevice::NVMe
                    : S.OptimizerOffload == plan::OffloadDevice::NVMe)));
      break;
    case plan::TransferPoint::BeforeGather:
      Fits = S.ParamOffload != plan::OffloadDevice::None &&
             (X.Kind == plan::TransferKind::HostToDevice ||
              (X.Kind == plan::TransferKind::NVMeRead &&
               S.ParamOffload == plan::OffloadDevice::NVMe));
      if (Fits && S.ParamOffload == plan::OffloadDevice::NVMe) {
        bool Read = X.Kind == plan::TransferKind::NVMeRead;
        if (Read == ReadPending)
          return Where + (Read ? "a unit is read from NVMe before the last "
                                 "one was copied to the device"
                               : "a unit is copied to the device without "
                                 "being read from NVMe first");
        ReadPending = Read;
      }
      break;
    }
    if (!Fits)
      return Where + "a " + plan::enumName(X.Kind) + " transfer at " +
             plan::enumName(X.Point) + " does not fit the plan's offload "
             "settings";
  }
  if (ReadPending)
    return "a unit read from NVMe is never copied to the device";
  return "";
}

} // namespace

std::string checkRuntimeNeeds(const Layout &L) {
  const plan::Plan &P = L.P;
  const plan::Info &S = P.Settings;
  using Space = plan::MemorySpace;
  uint64_t PB = elementBytes(L.Param), GB = elementBytes(L.GradAccum),
           CB = elementBytes(L.Comm), W = L.World;
  // A rank's shards of a unit are one chunk of params16 (the gather sends
  // it whole): each tensor in one unit at most, none of them persistent.
  std::vector<uint8_t> InUnit(P.Tensors.size(), 0);
  for (uint32_t U = 0; U < P.FetchUnits.size(); ++U)
    for (uint32_t T : P.FetchUnits[U].Tensors) {
      if (InUnit[T]++)
        return "tensor " + std::to_string(T) + " is in two fetch units";
      if (P.Tensors[T].Persistent)
        return "fetch unit " + std::to_string(U) + " holds persistent tensor " +
               std::to_string(T) + ", which every rank keeps whole";
    }
  std::string Error;
  auto Need = [&](const std::string &Name, Space Where, uint64_t Bytes) {
    if (!Error.empty())
      return;
    BufferView V = L.buffer(Name);
    if (!V || V.B->Space != Where)
      Error = "the plan has no " + std::string(plan::enumName(Where)) +
              " buffer '" + Name + "', which dsrun needs";
    else if (V.Bytes < Bytes)
      Error = "buffer '" + Name + "' holds " + std::to_string(V.Bytes) +
              " bytes but dsrun needs " + std::to_string(Bytes);
  };
  bool Offloaded = S.OptimizerOffload != plan::OffloadDevice::None;
  Space Optimizer = Offloaded ? Space::Host : Space::Device;
  uint64_t Owned = L.Stage == 0 ? P.Layout.FlatElems : P.Layout.PartitionElems;
  uint64_t LargestGroup = 0;
  for (auto [Lo, Hi] : L.SubGroupRange) {
    if (Hi > Owned || Lo > Hi)
      return "a sub-group reaches past the partition";
    LargestGroup = std::max(LargestGroup, Hi - Lo);
  }

  // The program must only ask for what the settings provide.
  if (std::string Why = checkProgramNeeds(L); !Why.empty())
    return Why;

  if (L.Stage < 3) {
    uint64_t Params = L.Stage > 0 ? P.Layout.PaddedElems : 0;
    for (uint32_t T = 0; T < P.Tensors.size(); ++T)
      Params = std::max(Params, L.paramOffset(T) + P.Tensors[T].Elems);
    Need("params16", Space::Device, Params * PB);
    if (L.Stage < 2)
      Need("grads16", Space::Device, P.Layout.FlatElems * PB);
    if (L.Stage == 2) {
      uint64_t Partition = 0;
      for (uint32_t T = 0; T < P.Tensors.size(); ++T)
        if (L.gradPartitionOffset(T) != NoOffset)
          Partition = std::max(Partition, L.gradPartitionOffset(T) +
                                              P.Tensors[T].Elems);
      if (!Offloaded)
        Need("grads16_partition", Space::Device, Partition * PB);
    }
    if (L.Stage > 0)
      Need("grads_fp32", Optimizer, Owned * 4);
  } else {
    uint64_t Shards = 0, Persistent = 0, Order = 0;
    for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
      const plan::Tensor &X = P.Tensors[T];
      if (X.Persistent)
        Persistent = std::max(Persistent, L.persistentOffset(T) +
                                              X.ShardElems * W);
      else
        Shards = std::max(Shards, L.shardOffset(T) + X.ShardElems);
      if (L.orderOffset(T) != NoOffset)
        Order = std::max(Order, L.orderOffset(T) + X.ShardElems);
    }
    if (Order > Owned)
      return "the partition holds fewer elements than its tensors' shards";
    if (Persistent)
      Need("persistent_params", Space::Device, Persistent * PB);
    if (S.ParamOffload != plan::OffloadDevice::NVMe)
      Need("params16",
           S.ParamOffload == plan::OffloadDevice::CPU ? Space::Host
                                                      : Space::Device,
           Shards * PB);
    Need("grads_partition", Optimizer, Order * GB);
    for (uint32_t U = 0; U < P.FetchUnits.size(); ++U) {
      Need("unit." + std::to_string(U), Space::Device, L.unitElems(U) * PB);
      if (plan::unitGathersRankMajor(P, U))
        Need(L.gatherTarget(U), Space::Device, L.unitElems(U) * PB);
    }
    if (!Offloaded)
      for (uint32_t G = 0; G < L.SubGroupRange.size(); ++G)
        Need("grads_fp32." + std::to_string(G), Space::Device,
             (L.SubGroupRange[G].second - L.SubGroupRange[G].first) * 4);
  }
  // Every trainable tensor an op uses has its gradient's buffer, padded
  // to the world size at stage 3 (reduce-scattered from there when it
  // goes alone).
  for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
    const plan::Tensor &X = P.Tensors[T];
    if (X.Role != plan::TensorRole::Trainable || X.FirstUse == plan::NoIndex)
      continue;
    BufferView V = L.valueBuffer(L.GradValue[T]);
    uint64_t Elems = L.Stage == 3 ? X.ShardElems * W : X.Elems;
    if (!Error.empty())
      break;
    if (!V || V.B->Space != Space::Device)
      Error = "tensor " + X.Name + " has no device buffer for its gradient";
    else if (V.Bytes < Elems * PB)
      Error = "the gradient buffer of tensor " + X.Name + " holds " +
              std::to_string(V.Bytes) + " bytes but dsrun needs " +
              std::to_string(Elems * PB);
  }
  Need("scratch", Space::Device,
       (2 * P.Program.size() + P.Settings.GradAccum) * sizeof(float));
  for (uint32_t K = 0; K < P.Kernels.size() && Error.empty(); ++K)
    for (int Out = 0; Out < 2; ++Out)
      for (const plan::TensorRef &R : Out ? P.Kernels[K].Outputs
                                          : P.Kernels[K].Inputs)
        if (L.ValueOffset[R.Value] == NoOffset && Error.empty())
          Error = "kernel " + std::to_string(K) + " uses value '" +
                  P.Values[R.Value].Name + "', which has no place on the "
                  "device";
  for (uint32_t B = 0; B < P.Buckets.size(); ++B) {
    const plan::Bucket &Bucket = P.Buckets[B];
    if (Bucket.BufferIndex == plan::NoIndex || L.Stage < 2)
      continue;
    const BucketLayout &BL = L.Buckets[B];
    Need(BL.Source, Space::Device,
         L.Stage == 2 ? (BL.FlatEnd - BL.FlatBegin) * PB
                      : BL.ChunkElems * W * CB);
  }
  if (S.OptimizerOffload == plan::OffloadDevice::NVMe) {
    if (S.AioBufferCount < 3)
      return "offload_optimizer.buffer_count is " +
             std::to_string(S.AioBufferCount) +
             "; dsrun swaps a sub-group's master weights and both moments "
             "at once and needs at least 3";
    BufferView V = L.buffer("nvme_optimizer_buffers");
    uint64_t Each = swapBufferStride(V, S.AioBufferCount);
    if (V && Each < LargestGroup * 4)
      return "each of the nvme_optimizer_buffers holds " +
             std::to_string(Each) + " bytes but a sub-group's state needs " +
             std::to_string(LargestGroup * 4);
    Need("nvme_optimizer_buffers", Space::Host, 3 * LargestGroup * 4);
  } else {
    bool MasterIsParams = L.Stage == 0 && L.Param == ElementType::F32;
    if (!MasterIsParams)
      Need("master_params", Optimizer, Owned * 4);
    Need("optimizer_states", Optimizer, 2 * Owned * 4);
  }
  if (S.ParamOffload == plan::OffloadDevice::NVMe) {
    if (S.AioBufferCount == 0)
      return "offload_param.buffer_count is 0";
    Need("nvme_param_buffers", Space::Host,
         uint64_t(S.AioBufferCount) * S.AioBufferBytes);
    uint64_t Each =
        swapBufferStride(L.buffer("nvme_param_buffers"), S.AioBufferCount);
    uint64_t Unit = SwapLayout(L).LargestUnitBytes;
    if (Error.empty() && Unit > Each)
      return "a stage-3 fetch unit takes " + std::to_string(Unit) +
             " bytes on pages but the nvme_param_buffers are " +
             std::to_string(Each) + " bytes each; raise "
             "offload_param.buffer_size (in elements) so that a unit fits";
  }
  return Error;
}

std::string checkMemoryOrdering(const plan::Plan &P, size_t Class) {
  // Vector clocks: for each instruction, the last instruction of every
  // stream known to have finished before it starts.
  size_t N = P.Program.size();
  std::vector<std::array<int64_t, plan::NumStreams>> Clock(N);
  std::array<int64_t, plan::NumStreams> Last;
  Last.fill(-1);
  std::array<int64_t, plan::NumStreams> Previous[plan::NumStreams];
  for (auto &C : Previous)
    C.fill(-1);
  for (size_t I = 0; I < N; ++I) {
    const plan::Instruction &In = P.Program[I];
    unsigned S = unsigned(In.On);
    std::array<int64_t, plan::NumStreams> C = Previous[S];
    for (uint32_t W : In.Waits)
      for (unsigned K = 0; K < plan::NumStreams; ++K)
        C[K] = std::max(C[K], Clock[W][K]);
    C[S] = int64_t(I);
    Clock[I] = C;
    Previous[S] = C;
  }
  auto HappensBefore = [&](uint32_t A, uint32_t B) {
    return Clock[B][unsigned(P.Program[A].On)] >= int64_t(A);
  };
  struct Piece {
    const plan::Buffer *B;
    uint64_t Begin, End;
    plan::Interval Live;
  };
  for (plan::MemorySpace Space :
       {plan::MemorySpace::Device, plan::MemorySpace::Host}) {
    std::vector<Piece> Pieces;
    for (const plan::Buffer &B : P.Buffers)
      if (B.Space == Space && B.Bytes[Class])
        for (const plan::Interval &L : B.Live)
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
          return "buffer " + B.B->Name + " reuses the bytes of " +
                 A.B->Name + ", but instruction " + std::to_string(FirstOfB) +
                 " may run before instruction " + std::to_string(LastOfA) +
                 " has finished";
      }
  }
  return "";
}

} // namespace dsrun
