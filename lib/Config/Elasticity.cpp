//===- Elasticity.cpp - elasticity.py, step by step -----------------------===//

#include "dsc/Config/Elasticity.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <numeric>
#include <set>

using namespace llvm;

namespace dsc {

// Highly composite numbers, as listed in elasticity.py (HCN_LIST).
static const int64_t HighlyComposite[] = {
    1,      2,      4,      6,      12,     24,     36,     48,
    60,     120,    180,    240,    360,    720,    840,    1260,
    1680,   2520,   5040,   7560,   10080,  15120,  20160,  25200,
    27720,  45360,  50400,  55440,  83160,  110880, 166320, 221760,
    277200, 332640, 498960, 554400, 665280, 720720};

static std::set<int64_t> candidateBatches(ArrayRef<int64_t> Bases,
                                          int64_t MaxAcceptable) {
  std::set<int64_t> Out;
  for (int64_t Base : Bases) {
    if (Base > MaxAcceptable)
      continue;
    if (Base == MaxAcceptable) {
      Out.insert(Base);
      continue;
    }
    int64_t Value = MaxAcceptable / Base;
    // numpy's argmax over (HCN > value) is 0 when no entry is larger, and
    // index - 1 then wraps to the last entry.
    size_t Index = 0;
    for (size_t I = 0; I < std::size(HighlyComposite); ++I)
      if (HighlyComposite[I] > Value) {
        Index = I;
        break;
      }
    int64_t H = Index == 0 ? HighlyComposite[std::size(HighlyComposite) - 1]
                           : HighlyComposite[Index - 1];
    Out.insert(H * Base);
  }
  return Out;
}

static std::vector<int64_t> validGpus(int64_t Batch, ArrayRef<int64_t> Micro,
                                      int64_t Lo, int64_t Hi) {
  std::set<int64_t> Out;
  for (int64_t MB : Micro) {
    if (Batch % MB != 0)
      continue;
    int64_t G = Batch / MB;
    if (Lo <= G && G <= Hi)
      Out.insert(G);
    for (int64_t I = 1; I <= G / 2; ++I) {
      if (I > Hi)
        break;
      if (I < Lo)
        continue;
      if (G % I == 0)
        Out.insert(I);
    }
  }
  return {Out.begin(), Out.end()};
}

static Expected<ElasticPlan> version01(ArrayRef<int64_t> Micro,
                                       int64_t MaxAcceptable, int64_t MinGpus,
                                       int64_t MaxGpus, bool PreferLarger) {
  int64_t Smallest = *std::min_element(Micro.begin(), Micro.end());
  if (MinGpus == 0)
    MinGpus = 1;
  if (MaxGpus == 0)
    MaxGpus = MaxAcceptable / Smallest;
  for (int64_t MB : Micro)
    if (MB > MaxAcceptable)
      return createStringError(
          inconvertibleErrorCode(),
          "every micro batch must be at most max_train_batch_size (%lld)",
          (long long)MaxAcceptable);
  int64_t Lcm = 1;
  for (int64_t MB : Micro) {
    Lcm = std::lcm(Lcm, MB);
    if (Lcm > (int64_t(1) << 50))
      break; // Beyond any batch; the candidate is skipped below.
  }
  std::vector<int64_t> Bases(Micro.begin(), Micro.end());
  Bases.push_back(Lcm);
  ElasticPlan Best;
  Best.FinalBatch = Smallest;
  size_t BestCount = 0;
  bool Found = false;
  for (int64_t Batch : candidateBatches(Bases, MaxAcceptable)) {
    std::vector<int64_t> Gpus = validGpus(Batch, Micro, MinGpus, MaxGpus);
    bool Better = Gpus.size() > BestCount ||
                  (Gpus.size() == BestCount &&
                   ((PreferLarger && Batch > Best.FinalBatch) ||
                    (!PreferLarger && Batch < Best.FinalBatch)));
    if (Better) {
      BestCount = Gpus.size();
      Best.ValidGpus = std::move(Gpus);
      Best.FinalBatch = Batch;
      Found = true;
    }
  }
  if (!Found)
    Best.ValidGpus.clear();
  return Best;
}

static std::string versionText(double V) {
  char Buffer[32];
  std::snprintf(Buffer, sizeof Buffer, "%g", V);
  return Buffer;
}

Expected<ElasticPlan> computeElasticPlan(const ElasticSettings &S,
                                         int64_t WorldSize) {
  auto Fail = [](const Twine &Msg) {
    return createStringError(inconvertibleErrorCode(), Msg.str().c_str());
  };
  if (S.MicroBatches.empty())
    return Fail("micro_batch_sizes is empty");
  if (S.ModelParallel > 1 && S.Version != 0.2)
    return Fail("elasticity version " + versionText(S.Version) +
                " does not support model-parallel training");
  if (S.Version > 0.2)
    return Fail("elasticity version " + versionText(S.Version) +
                " is newer than DeepSpeed supports (0.2)");
  ElasticPlan Plan;
  if (S.Version == 0.1) {
    Expected<ElasticPlan> P = version01(S.MicroBatches, S.MaxTrainBatch,
                                        S.MinGpus, S.MaxGpus, S.PreferLarger);
    if (!P)
      return P.takeError();
    Plan = std::move(*P);
  } else if (S.Version == 0.2) {
    if (WorldSize <= 0)
      return Fail("elasticity version 0.2 needs the world size");
    if (S.GpusPerNode % S.ModelParallel != 0)
      return Fail("num_gpus_per_node " + Twine(S.GpusPerNode) +
                  " is not divisible by model_parallel_size " +
                  Twine(S.ModelParallel));
    int64_t DpPerNode = S.GpusPerNode / S.ModelParallel;
    Expected<ElasticPlan> P =
        version01(S.MicroBatches, int64_t(double(S.MaxTrainBatch) / DpPerNode),
                  int64_t(double(S.MinGpus) / S.GpusPerNode),
                  int64_t(double(S.MaxGpus) / S.GpusPerNode), S.PreferLarger);
    if (!P)
      return P.takeError();
    Plan.FinalBatch = P->FinalBatch * DpPerNode;
    for (int64_t Nodes : P->ValidGpus)
      Plan.ValidGpus.push_back(Nodes * DpPerNode);
    if (!is_contained(Plan.ValidGpus, WorldSize / S.ModelParallel)) {
      // Fallback of version 0.2 for a world size outside the list.
      double CurrentDp = double(WorldSize) / S.GpusPerNode * DpPerNode;
      std::optional<double> Pick;
      for (int64_t MB : S.MicroBatches) {
        double Unit = MB * CurrentDp;
        double Batch = std::floor(S.MaxTrainBatch / Unit) * Unit;
        if (!Pick || (S.PreferLarger ? Batch > *Pick : Batch < *Pick))
          Pick = Batch;
      }
      Plan.FinalBatch = int64_t(*Pick);
      Plan.ValidGpus = {int64_t(CurrentDp)};
    }
  } else {
    return Fail("DeepSpeed has no elasticity logic for version " +
                versionText(S.Version));
  }
  if (WorldSize > 0) {
    if (!is_contained(Plan.ValidGpus, WorldSize))
      return Fail("world size " + Twine(WorldSize) +
                  " is not one of the GPU counts this elastic config "
                  "allows");
    std::vector<int64_t> Sorted(S.MicroBatches);
    std::sort(Sorted.rbegin(), Sorted.rend());
    for (int64_t MB : Sorted)
      if (Plan.FinalBatch / WorldSize % MB == 0) {
        Plan.MicroBatch = MB;
        break;
      }
    if (!Plan.MicroBatch)
      return Fail("no micro batch divides the elastic batch " +
                  Twine(Plan.FinalBatch) + " at world size " +
                  Twine(WorldSize));
  }
  return Plan;
}

} // namespace dsc
