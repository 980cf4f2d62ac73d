//===- Layout.cpp ---------------------------------------------------------===//

#include "Layout.h"

#include <algorithm>
#include <array>

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
    uint64_t Shards = 0, Persistent = 0;
    for (uint32_t T = 0; T < NT; ++T) {
      const plan::Tensor &X = P.Tensors[T];
      if (X.Persistent) {
        PersistentOffset[T] = Persistent;
        Persistent += X.ShardElems * World;
      } else {
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
  UnitTensorOffset.resize(P.FetchUnits.size());
  for (uint32_t U = 0; U < P.FetchUnits.size(); ++U)
    for (uint32_t T : P.FetchUnits[U].Tensors) {
      UnitOfTensor[T] = U;
      UnitTensorOffset[U][T] = UnitElems[U];
      UnitElems[U] += P.Tensors[T].ShardElems * World;
    }

  for (const plan::Bucket &B : P.Buckets) {
    BucketLayout BL;
    if (Stage < 3) {
      BL.FlatBegin = ~uint64_t(0);
      for (const plan::Segment &S : B.Segments) {
        const plan::Tensor &X = P.Tensors[S.Tensor];
        BL.FlatBegin = std::min(BL.FlatBegin, X.FlatOffset + S.Begin);
        BL.FlatEnd = std::max(BL.FlatEnd, X.FlatOffset + S.End);
      }
    } else {
      for (const plan::Segment &S : B.Segments) {
        BL.ChunkOffset.push_back(BL.ChunkElems);
        BL.ChunkElems += P.Tensors[S.Tensor].ShardElems;
      }
    }
    Buckets.push_back(std::move(BL));
  }
}

BufferView Layout::buffer(const std::string &Name) const {
  auto It = ByName.find(Name);
  if (It == ByName.end() || It->second->Live.empty())
    return {};
  return {It->second, It->second->Offsets[Class], It->second->Bytes[Class]};
}

uint64_t Layout::unitOffset(uint32_t Unit, uint32_t T) const {
  auto It = UnitTensorOffset[Unit].find(T);
  return It == UnitTensorOffset[Unit].end() ? NoOffset : It->second;
}

std::string checkMemoryOrdering(const plan::Plan &P, size_t Class) {
  // Vector clocks: for each instruction, the last instruction of every
  // stream known to have finished before it starts.
  size_t N = P.Program.size();
  std::vector<std::array<int64_t, 5>> Clock(N);
  std::array<int64_t, 5> Last;
  Last.fill(-1);
  std::array<int64_t, 5> Previous[5];
  for (auto &C : Previous)
    C.fill(-1);
  for (size_t I = 0; I < N; ++I) {
    const plan::Instruction &In = P.Program[I];
    unsigned S = unsigned(In.On);
    std::array<int64_t, 5> C = Previous[S];
    for (uint32_t W : In.Waits)
      for (unsigned K = 0; K < 5; ++K)
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
