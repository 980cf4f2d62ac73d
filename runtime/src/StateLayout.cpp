//===- StateLayout.cpp ----------------------------------------------------===//

#include "StateLayout.h"

#include "Arena.h"
#include "Nvme.h"
#include "dsc/PlanCodec.h"
#include "dsc/PlanFacts.h"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace plan = dsc::plan;

namespace dsrun {

std::vector<StatePartPlace> stateParts(const plan::Plan &P, uint32_t Rank) {
  std::vector<StatePartPlace> Parts;
  Arena A(P, Rank);
  for (plan::BufferRole Role : stateRoles())
    if (Arena::Region R = A.buffer(Role); R && R.Bytes)
      Parts.push_back({plan::enumName(Role), R.Bytes, StatePartPlace::Arena,
                       uint32_t(R.B - P.Buffers.data())});
  // With NVMe offload the master weights and moments (and, at stage 3,
  // the 16-bit shards) live only in the swap files. Their layout is
  // dsrun's own and follows from the plan alone, so a file is saved whole.
  // Plans that group the state otherwise (sub_group_size, the fetch
  // units) can give files of the same size, so each name carries a
  // fingerprint of its layout: a shard read back under another grouping
  // is refused rather than read at the wrong offsets.
  const plan::Info &S = P.Settings;
  bool Optimizer = S.OptimizerOffload == plan::OffloadDevice::NVMe;
  bool Params = S.ParamOffload == plan::OffloadDevice::NVMe;
  if (Optimizer || Params) {
    SwapLayout Layout(P);
    std::vector<uint64_t> Shape;
    auto named = [&](const char *Name) {
      uint64_t Hash = plan::fnv1a(reinterpret_cast<const uint8_t *>(Shape.data()),
                                  Shape.size() * sizeof(uint64_t));
      char Suffix[24];
      snprintf(Suffix, sizeof(Suffix), "@%08x", unsigned(Hash ^ (Hash >> 32)));
      return std::string(Name) + Suffix;
    };
    if (Optimizer) {
      for (uint32_t G = 0; G < P.Layout.SubGroups.size(); ++G)
        Shape.insert(Shape.end(), {P.Places.SubGroups[G].Begin,
                                   P.Layout.SubGroups[G].Elems,
                                   Layout.optimizerRegion(G, 0)});
      Parts.push_back({named(NVMeOptimizerPart), Layout.OptimizerFileBytes,
                       StatePartPlace::OptimizerSwap, plan::NoIndex});
    }
    if (Params) {
      Shape.clear();
      for (uint32_t T = 0; T < P.Tensors.size(); ++T)
        if (Layout.unitOf(T) != plan::NoIndex)
          Shape.insert(Shape.end(), {T, Layout.shardOffset(T)});
      Parts.push_back({named(NVMeParamPart), Layout.ParamFileBytes,
                       StatePartPlace::ParamSwap, plan::NoIndex});
    }
  }
  return Parts;
}

const char *stateKindName(StateKind K) {
  switch (K) {
  case StateKind::Param:
    return "parameters";
  case StateKind::Master:
    return "master weights";
  case StateKind::Moment1:
    return "first moments";
  case StateKind::Moment2:
    return "second moments";
  }
  return "?";
}

std::string stateLayout(const plan::Plan &P, uint32_t Rank,
                        StateLayout &Out) {
  Out.Parts = stateParts(P, Rank);
  Out.Segments.clear();
  const plan::Info &S = P.Settings;
  const plan::Placement &X = P.Places;
  std::string Error;
  auto partWhere = [&](StatePartPlace::Home H, uint32_t Buffer) {
    for (size_t I = 0; I < Out.Parts.size(); ++I)
      if (Out.Parts[I].Where == H &&
          (H != StatePartPlace::Arena || Out.Parts[I].Buffer == Buffer))
        return uint32_t(I);
    return plan::NoIndex;
  };
  // Adds a segment at byte Offset of the part; false (and Error) if it is
  // in no part or runs past its end.
  auto add = [&](uint32_t Part, uint64_t Offset, StateKind K, uint32_t T,
                 uint64_t Begin, uint64_t End, unsigned ElemBytes) {
    if (Part == plan::NoIndex ||
        Offset + (End - Begin) * ElemBytes > Out.Parts[Part].Bytes) {
      Error = "the plan keeps the " + std::string(stateKindName(K)) +
              " of tensor '" + P.Tensors[T].Name +
              "' outside the buffers a checkpoint carries";
      return false;
    }
    Out.Segments.push_back({Part, Offset, K, T, Begin, End, ElemBytes});
    return true;
  };
  auto inView = [&](uint32_t V, uint64_t Elem, StateKind K, uint32_t T,
                    uint64_t Begin, uint64_t End) {
    if (V == plan::NoIndex)
      return add(plan::NoIndex, 0, K, T, Begin, End, 0);
    unsigned EB = plan::dtypeBytes(P.Views[V].Type);
    return add(partWhere(StatePartPlace::Arena, P.Views[V].Buffer),
               plan::viewOffset(P.Views[V], plan::partitionRank(S, Rank)) +
                   Elem * EB,
               K, T, Begin,
               End, EB);
  };

  // The 16-bit (or fp32) parameters: every tensor whole at stage 0-2; at
  // stage 3 a persistent tensor whole, any other this rank's shard.
  unsigned PB = plan::dtypeBytes(S.ParamDType);
  bool ParamFile = S.ParamOffload == plan::OffloadDevice::NVMe;
  bool OptimizerFile = S.OptimizerOffload == plan::OffloadDevice::NVMe;
  std::unique_ptr<SwapLayout> Swap;
  if (ParamFile || OptimizerFile)
    Swap = std::make_unique<SwapLayout>(P);
  for (uint32_t T = 0; T < P.Tensors.size() && T < X.Tensors.size(); ++T) {
    const plan::Tensor &Tn = P.Tensors[T];
    const plan::TensorViews &V = X.Tensors[T];
    if (S.ZeroStage < 3 || Tn.Persistent) {
      if (!inView(V.Param, 0, StateKind::Param, T, 0, Tn.Elems))
        return Error;
      continue;
    }
    uint64_t Begin = uint64_t(plan::partitionRank(S, Rank)) * Tn.ShardElems;
    uint64_t End = std::min(Tn.Elems, Begin + Tn.ShardElems);
    if (Begin >= End)
      continue;
    bool Ok = ParamFile ? add(partWhere(StatePartPlace::ParamSwap, 0),
                              Swap->shardOffset(T),
                              StateKind::Param, T, Begin, End, PB)
                        : inView(V.Shard, 0, StateKind::Param, T, Begin, End);
    if (!Ok)
      return Error;
  }

  // The fp32 master weights and moments of what this rank owns, indexed by
  // the partition's elements: in the arenas, or the optimizer swap file
  // sub-group by sub-group (a piece may cross from one into the next).
  const StateKind Kinds[3] = {StateKind::Master, StateKind::Moment1,
                              StateKind::Moment2};
  const uint32_t Views[3] = {X.Owned.Master, X.Owned.Moment1,
                             X.Owned.Moment2};
  for (const plan::OwnedPiece &O : plan::ownedPieces(P, Rank)) {
    for (unsigned K = 0; K < 3; ++K) {
      if (!OptimizerFile) {
        // A plan without the view keeps no such state (checkRunnable
        // refuses those dsrun cannot train).
        if (Views[K] != plan::NoIndex &&
            !inView(Views[K], O.PartitionOffset, Kinds[K], O.Tensor, O.Begin,
                    O.End))
          return Error;
        continue;
      }
      uint64_t Lo = O.PartitionOffset, Hi = Lo + (O.End - O.Begin);
      for (uint32_t G = 0; G < P.Layout.SubGroups.size(); ++G) {
        uint64_t GBegin = X.SubGroups[G].Begin;
        uint64_t GEnd = GBegin + P.Layout.SubGroups[G].Elems;
        uint64_t From = std::max(Lo, GBegin), To = std::min(Hi, GEnd);
        if (From < To &&
            !add(partWhere(StatePartPlace::OptimizerSwap, 0),
                 Swap->optimizerRegion(G, K) + (From - GBegin) * 4, Kinds[K],
                 O.Tensor, O.Begin + (From - Lo), O.Begin + (To - Lo), 4))
          return Error;
      }
    }
  }
  return "";
}

} // namespace dsrun
