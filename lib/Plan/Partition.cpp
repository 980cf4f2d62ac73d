//===- Partition.cpp - Who owns which parameter elements ------------------===//
//
// Stage 0: every rank holds everything.
// Stage 1/2 (DeepSpeed's stage_1_and_2.py): trainable parameters are
//   flattened in order into one buffer, padded to a multiple of
//   2 x world size elements (nccl_start_alignment_factor), and cut into
//   equal partitions; a parameter may straddle two ranks. Each rank keeps a
//   contiguous gradient buffer for the parameters that overlap its
//   partition, so ranks differ slightly.
// Stage 3 (partition_parameters.py): every parameter is padded to a
//   multiple of the world size and split evenly; small parameters stay
//   whole on every rank (persistence thresholds); the optimizer steps over
//   sub-groups of sub_group_size elements.
//
// The order is first use in the forward pass: ONNX has no module
// registration order, and for the models we plan the two agree.
//
//===----------------------------------------------------------------------===//

#include "PlanInternal.h"

#include <map>
#include <tuple>

using namespace llvm;

namespace dsc {

namespace {

// DeepSpeed aligns the flat buffer to nccl_start_alignment_factor (2)
// elements per rank so every partition starts on a 4-byte boundary.
constexpr uint64_t NcclStartAlignmentFactor = 2;

struct RankLayout {
  uint64_t Owned = 0, Padding = 0, GradPartition = 0;
  bool operator<(const RankLayout &O) const {
    return std::tie(Owned, Padding, GradPartition) <
           std::tie(O.Owned, O.Padding, O.GradPartition);
  }
};

/// Groups ranks by layout into classes (consecutive ranks merged into
/// ranges); more than MaxRankClasses layouts are merged by size, each
/// class taking the largest figures of its ranks.
std::vector<plan::RankClass> classify(const std::vector<RankLayout> &Ranks) {
  std::map<RankLayout, std::vector<uint32_t>> ByLayout;
  for (uint32_t R = 0; R < Ranks.size(); ++R)
    ByLayout[Ranks[R]].push_back(R);
  std::vector<std::pair<RankLayout, std::vector<uint32_t>>> Groups(
      ByLayout.begin(), ByLayout.end());
  bool Merged = false;
  if (Groups.size() > plan::MaxRankClasses) {
    // Sorted by gradient buffer size: merge neighbours into equal runs.
    llvm::sort(Groups, [](auto &A, auto &B) {
      return A.first.GradPartition < B.first.GradPartition;
    });
    std::vector<std::pair<RankLayout, std::vector<uint32_t>>> Fewer;
    size_t Per = divideRoundingUp(Groups.size(), plan::MaxRankClasses);
    for (size_t I = 0; I < Groups.size(); I += Per) {
      std::pair<RankLayout, std::vector<uint32_t>> G;
      for (size_t J = I; J < std::min(Groups.size(), I + Per); ++J) {
        G.first.Owned = std::max(G.first.Owned, Groups[J].first.Owned);
        G.first.Padding = std::max(G.first.Padding, Groups[J].first.Padding);
        G.first.GradPartition =
            std::max(G.first.GradPartition, Groups[J].first.GradPartition);
        G.second.insert(G.second.end(), Groups[J].second.begin(),
                        Groups[J].second.end());
      }
      llvm::sort(G.second);
      Fewer.push_back(std::move(G));
    }
    Groups = std::move(Fewer);
    Merged = true;
  }
  std::vector<plan::RankClass> Classes;
  for (auto &[Layout, Members] : Groups) {
    plan::RankClass C;
    C.OwnedElems = Layout.Owned;
    C.PaddingElems = Layout.Padding;
    C.GradPartitionElems = Layout.GradPartition;
    C.UpperBound = Merged;
    for (uint32_t R : Members) {
      if (!C.Ranks.empty() &&
          C.Ranks.back().First + C.Ranks.back().Count == R)
        ++C.Ranks.back().Count;
      else
        C.Ranks.push_back({R, 1});
    }
    Classes.push_back(std::move(C));
  }
  // Rank 0's class first: reports lead with it.
  llvm::stable_sort(Classes, [](const plan::RankClass &A,
                                const plan::RankClass &B) {
    return A.Ranks.front().First < B.Ranks.front().First;
  });
  return Classes;
}

void partitionFlat(plan::Plan &P) {
  plan::Partition &L = P.Layout;
  uint32_t W = P.Settings.WorldSize;
  for (uint32_t T : L.Order) {
    P.Tensors[T].FlatOffset = L.FlatElems;
    L.FlatElems += P.Tensors[T].Elems;
  }
  if (P.Settings.ZeroStage == 0) {
    L.AlignmentElems = 1;
    L.PaddedElems = L.PartitionElems = L.FlatElems;
    L.RankClasses = classify(std::vector<RankLayout>(
        W, RankLayout{L.FlatElems, 0, L.FlatElems}));
  } else {
    L.AlignmentElems = NcclStartAlignmentFactor * W;
    L.PaddedElems = roundUp(L.FlatElems, L.AlignmentElems);
    L.PartitionElems = L.PaddedElems / W;
    std::vector<RankLayout> Ranks(W);
    // Sweep ranks and tensors together: O(world size + tensors).
    size_t Next = 0;
    for (uint32_t R = 0; R < W; ++R) {
      uint64_t Begin = uint64_t(R) * L.PartitionElems;
      uint64_t End = Begin + L.PartitionElems;
      RankLayout &Layout = Ranks[R];
      Layout.Owned = L.PartitionElems;
      Layout.Padding = End > L.FlatElems ? End - std::max(Begin, L.FlatElems)
                                         : 0;
      // Tensors ending at or before Begin can never overlap a later rank.
      while (Next < L.Order.size()) {
        const plan::Tensor &T = P.Tensors[L.Order[Next]];
        if (T.FlatOffset + T.Elems > Begin)
          break;
        ++Next;
      }
      for (size_t I = Next; I < L.Order.size(); ++I) {
        const plan::Tensor &T = P.Tensors[L.Order[I]];
        if (T.FlatOffset >= End)
          break;
        Layout.GradPartition += T.Elems;
      }
    }
    L.RankClasses = classify(Ranks);
  }
  // Stage 0-2 step over the whole partition at once.
  L.SubGroups = {{0, uint32_t(L.Order.size()), L.PartitionElems}};
}

void partitionPerParameter(plan::Plan &P) {
  plan::Partition &L = P.Layout;
  const plan::Info &S = P.Settings;
  uint32_t W = plan::partitionRanks(S);
  // Persistence: small parameters in model order while the running total
  // stays within model_persistence_threshold (both trainable and frozen,
  // as DeepSpeed decides per module parameter).
  uint64_t Persistent = 0;
  std::vector<uint32_t> All(P.Tensors.size());
  for (uint32_t I = 0; I < All.size(); ++I)
    All[I] = I;
  llvm::stable_sort(All, [&](uint32_t A, uint32_t B) {
    return P.Tensors[A].FirstUse < P.Tensors[B].FirstUse;
  });
  for (uint32_t I : All) {
    plan::Tensor &T = P.Tensors[I];
    T.ShardElems = divideRoundingUp(T.Elems, W);
    if (T.Elems <= S.ParamPersistenceThreshold &&
        Persistent + T.Elems <= S.ModelPersistenceThreshold) {
      T.Persistent = true;
      Persistent += T.Elems;
    }
  }
  uint64_t MaxPadding = 0;
  for (uint32_t T : L.Order) {
    const plan::Tensor &Tensor = P.Tensors[T];
    L.FlatElems += Tensor.Elems;
    L.PartitionElems += Tensor.ShardElems;
    // Padding fills the shards of the last ranks; the last rank holds
    // at most one shard of it.
    MaxPadding += std::min(Tensor.ShardElems * W - Tensor.Elems,
                           Tensor.ShardElems);
  }
  L.PaddedElems = L.PartitionElems * W;
  L.AlignmentElems = W;
  // DeepSpeed closes a sub-group once it reaches sub_group_size.
  uint64_t Size = 0;
  uint32_t First = 0;
  for (uint32_t I = 0; I < L.Order.size(); ++I) {
    Size += P.Tensors[L.Order[I]].ShardElems;
    if (Size >= S.SubGroupElems || I + 1 == L.Order.size()) {
      L.SubGroups.push_back({First, I + 1, Size});
      First = I + 1;
      Size = 0;
    }
  }
  // Every rank holds the same amounts: one class. Padding sits on the
  // last ranks; the class reports the most any rank holds.
  plan::RankClass C;
  C.Ranks = {{0, S.WorldSize}};
  C.OwnedElems = L.PartitionElems;
  C.PaddingElems = MaxPadding;
  C.GradPartitionElems = L.PartitionElems;
  L.RankClasses = {C};
}

} // namespace

Error runPartitionPass(plan::Plan &P) {
  P.Layout = plan::Partition();
  P.Layout.Order = trainableInUseOrder(P);
  if (P.Layout.Order.empty())
    return planError("no trainable parameters: every parameter is frozen");
  if (P.Settings.ZeroStage == 3)
    partitionPerParameter(P);
  else
    partitionFlat(P);
  // NCCL finds a peer's buffer in the symmetric window at this rank's own
  // offset, so the copy engines' all-gathers need every arena alike.
  if (P.Settings.CtaPolicy == plan::CommCtaPolicy::Zero &&
      P.Layout.RankClasses.size() > 1)
    return planError(
        "--comm-cta-policy zero needs every rank's arena laid out alike, but "
        "the ranks hold partitions of " +
        Twine(P.Layout.RankClasses.size()) +
        " layouts (stage 1/2 partitions of unequal size): plan with the "
        "default policy");
  return Error::success();
}

} // namespace dsc
