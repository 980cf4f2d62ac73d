//===- TuneTest.cpp - The configs dsc tune plans --------------------------===//

#include "dsc/Plan/Tune.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <map>
#include <set>

using namespace dsc;
using plan::OffloadDevice;

namespace {

size_t countWhere(const std::vector<TuneChoice> &Cs,
                  bool (*Pred)(const TuneChoice &)) {
  return size_t(std::count_if(Cs.begin(), Cs.end(), Pred));
}

TEST(TuneTest, NvmeOnlyAtStageThreeAndWhereTheConfigHasAPath) {
  // 8 samples a rank: micro batches 1, 2, 4, 8; with and without
  // checkpointing. Stage 0: 1 placement; 1-2: device, CPU; 3: device,
  // CPU, CPU with the parameters.
  std::vector<TuneChoice> Plain = tuneChoices(8);
  EXPECT_EQ(Plain.size(), size_t(4 * 2 * (1 + 2 + 2 + 3)));
  EXPECT_EQ(countWhere(Plain, [](const TuneChoice &C) {
              return C.Optimizer == OffloadDevice::NVMe;
            }),
            0u);
  std::vector<TuneChoice> Optimizer = tuneChoices(8, {true, false});
  EXPECT_EQ(Optimizer.size(), Plain.size() + 4 * 2);
  std::vector<TuneChoice> Both = tuneChoices(8, {true, true});
  EXPECT_EQ(Both.size(), Plain.size() + 2 * 4 * 2);
  for (const TuneChoice &C : Both) {
    if (C.Optimizer == OffloadDevice::NVMe) {
      EXPECT_EQ(C.Stage, 3u) << C.describe();
    }
    if (C.Params == OffloadDevice::NVMe) {
      EXPECT_EQ(C.Optimizer, OffloadDevice::NVMe) << C.describe();
    }
  }
  TuneChoice C = Both.back();
  EXPECT_EQ(C.describe(),
            "ZeRO 3, micro batch 8 x 1, optimizer and parameters on NVMe, "
            "checkpointed");
}

TEST(TuneTest, GroupsWithinANodeOnlyAtStageThreeOverSeveralNodes) {
  // Nodes of 8 ranks: stage 3 also with hpZ's groups of 8 (on the device
  // and with the optimizer on the CPU; not with the parameters there) and
  // with MiCS's shard groups of 8 (nothing offloaded): 3 more placements.
  std::vector<TuneChoice> Plain = tuneChoices(8);
  std::vector<TuneChoice> Nodes = tuneChoices(8, {}, 8);
  EXPECT_EQ(Nodes.size(), Plain.size() + 4 * 2 * 3);
  size_t Hpz = 0, Mics = 0;
  for (const TuneChoice &C : Nodes) {
    if (!C.HpzGroup && !C.MicsShard)
      continue;
    EXPECT_EQ(C.Stage, 3u) << C.describe();
    EXPECT_EQ(C.Params, OffloadDevice::None) << C.describe();
    Hpz += C.HpzGroup == 8;
    Mics += C.MicsShard == 8;
    if (C.MicsShard)
      EXPECT_EQ(C.Optimizer, OffloadDevice::None) << C.describe();
  }
  EXPECT_EQ(Hpz, 4u * 2 * 2);
  EXPECT_EQ(Mics, 4u * 2);
  const TuneChoice &Last = *std::find_if(
      Nodes.rbegin(), Nodes.rend(),
      [](const TuneChoice &C) { return C.MicsShard != 0; });
  EXPECT_EQ(Last.describe(),
            "ZeRO 3, micro batch 8 x 1, checkpointed, MiCS shard groups of 8");
  bool Sets = false;
  for (const auto &[Path, Value] : Last.settings())
    Sets |= Path == "zero_optimization.mics_shard_size" && Value == "8";
  EXPECT_TRUE(Sets);
  // Each grouping is a group of micro batches of its own.
  EXPECT_EQ(microBatchGroups(Nodes).size(), microBatchGroups(Plain).size() + 6);
  // One node: none.
  EXPECT_EQ(tuneChoices(8, {}, 1).size(), Plain.size());
}

TEST(TuneTest, RefinementsSearchLiveParametersAtStageThree) {
  TuneChoice Best;
  Best.Stage = 3;
  std::vector<TuneChoice> R = tuneRefinements(Best);
  // Buckets 3 x prefetch 3 x live parameters 2 x overlap_comm 2.
  EXPECT_EQ(R.size(), 36u);
  std::set<uint64_t> Live;
  for (const TuneChoice &C : R)
    Live.insert(C.MaxLive);
  EXPECT_EQ(Live, (std::set<uint64_t>{100000000, 1000000000}));
  bool Sets = false;
  for (const auto &[Path, Value] : R.front().settings())
    Sets |= Path == "zero_optimization.max_live_parameters" &&
            Value == "100000000";
  EXPECT_TRUE(Sets);
  EXPECT_NE(R.front().describe().find("max live 1e8"), std::string::npos);
  // Below stage 3 neither prefetch nor live parameters: 3 x 2.
  Best.Stage = 2;
  R = tuneRefinements(Best);
  EXPECT_EQ(R.size(), 6u);
  for (const TuneChoice &C : R) {
    EXPECT_EQ(C.Prefetch, 0u);
    EXPECT_EQ(C.MaxLive, 0u);
  }
}

TEST(TuneTest, KeepingParametersSetsReuseDistanceAndLiveParameters) {
  // Twice the model, rounded up to one significant digit: the Llama-3-8B
  // shape's 8.03e9 elements keep with 2e10; 5e8 with 1e9; 4.5e9 with 9e9.
  EXPECT_EQ(tuneKeepElements(8030261248, false), 20000000000u);
  EXPECT_EQ(tuneKeepElements(500000000, false), 1000000000u);
  EXPECT_EQ(tuneKeepElements(4500000000, false), 9000000000u);
  // Checkpointed, the recomputation's fetches come between too.
  EXPECT_EQ(tuneKeepElements(8030261248, true), 30000000000u);
  // No wrap, however large.
  EXPECT_GE(tuneKeepElements(~uint64_t(0), true), uint64_t(1) << 57);
  TuneChoice Keep;
  Keep.Stage = 3;
  Keep.MicroBatch = 2;
  Keep.MaxLive = 100000000;
  Keep.Keep = 20000000000;
  std::map<std::string, std::string> Set;
  for (const auto &[Path, Value] : Keep.settings())
    EXPECT_TRUE(Set.emplace(Path, Value).second) << Path << " set twice";
  EXPECT_EQ(Set["zero_optimization.max_reuse_distance"], "20000000000");
  // Keeping takes the live parameters' place: prefetching stops where the
  // gathered parameters reach them.
  EXPECT_EQ(Set["zero_optimization.max_live_parameters"], "20000000000");
  EXPECT_NE(Keep.describe().find("parameters kept from forward to backward "
                                 "(reuse distance 2e10)"),
            std::string::npos);
  // Its refinements keep too, and vary buckets, prefetch and overlap_comm
  // only: 3 x 3 x 2.
  std::vector<TuneChoice> R = tuneRefinements(Keep);
  EXPECT_EQ(R.size(), 18u);
  for (const TuneChoice &C : R) {
    EXPECT_EQ(C.Keep, Keep.Keep);
    EXPECT_EQ(C.MaxLive, 0u);
  }
}

TEST(TuneTest, StepsWithinATenthOfAPercentTieAndKeepTheUsersKeys) {
  // 1 ms against 1.0004 ms ties: the choice changing fewer keys first,
  // whichever is faster.
  EXPECT_TRUE(tunedBefore(1000400, 1, 1000000, 2));
  EXPECT_FALSE(tunedBefore(1000000, 2, 1000400, 1));
  // Of a tie changing as many keys, neither goes first.
  EXPECT_FALSE(tunedBefore(1000000, 1, 1000400, 1));
  EXPECT_FALSE(tunedBefore(1000400, 1, 1000000, 1));
  // 0.5 % apart is no tie: the faster goes first, whatever it changes.
  EXPECT_TRUE(tunedBefore(1000000, 5, 1005000, 0));
  EXPECT_FALSE(tunedBefore(1005000, 0, 1000000, 5));
}

} // namespace
