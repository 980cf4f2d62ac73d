//===- ElasticityTest.cpp - DeepSpeed's elastic batch algorithm -----------===//
//
// Vectors from DeepSpeed's own tests (tests/unit/elasticity/test_elastic.py)
// and a transcription of elasticity.py run on the same inputs.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/Elasticity.h"

#include "gtest/gtest.h"

using namespace dsc;

namespace {

ElasticSettings settings(std::vector<int64_t> Micro, int64_t Max,
                         int64_t MinG, int64_t MaxG, double Version) {
  ElasticSettings S;
  S.MicroBatches = std::move(Micro);
  S.MaxTrainBatch = Max;
  S.MinGpus = MinG;
  S.MaxGpus = MaxG;
  S.Version = Version;
  return S;
}

TEST(ElasticityTest, DeepSpeedUnitTestConfig) {
  ElasticSettings S = settings({8, 12, 16, 17}, 10000, 32, 1500, 0.1);
  llvm::Expected<ElasticPlan> P = computeElasticPlan(S, 0);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  EXPECT_EQ(P->FinalBatch, 9792);
  EXPECT_EQ(P->ValidGpus.size(), 23u);
  EXPECT_EQ(P->ValidGpus.front(), 32);
  EXPECT_EQ(P->ValidGpus.back(), 1224);

  llvm::Expected<ElasticPlan> At64 = computeElasticPlan(S, 64);
  ASSERT_TRUE(bool(At64));
  EXPECT_EQ(*At64->MicroBatch, 17);

  llvm::Expected<ElasticPlan> At128 = computeElasticPlan(S, 128);
  ASSERT_FALSE(bool(At128));
  EXPECT_NE(llvm::toString(At128.takeError()).find("128"), std::string::npos);
}

TEST(ElasticityTest, DocumentationExample) {
  llvm::Expected<ElasticPlan> P =
      computeElasticPlan(settings({2, 4, 6}, 2000, 1, 10000, 0.1), 0);
  ASSERT_TRUE(bool(P));
  EXPECT_EQ(P->FinalBatch, 1680);
  EXPECT_EQ(P->ValidGpus.size(), 32u);
  EXPECT_EQ(P->ValidGpus.back(), 840);
}

TEST(ElasticityTest, ProperMicroBatch) {
  llvm::Expected<ElasticPlan> P =
      computeElasticPlan(settings({1, 2, 3, 7}, 32, 1, 1500, 0.1), 4);
  ASSERT_TRUE(bool(P));
  EXPECT_EQ(P->FinalBatch, 24);
  EXPECT_EQ(*P->MicroBatch, 3);
}

TEST(ElasticityTest, Version02ScalesByDataParallelRanksPerNode) {
  ElasticSettings S = settings({2, 4, 6}, 2000, 1, 10000, 0.2);
  S.GpusPerNode = 4;
  llvm::Expected<ElasticPlan> P = computeElasticPlan(S, 8);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  EXPECT_EQ(P->FinalBatch, 1920);
  EXPECT_EQ(P->ValidGpus.size(), 20u);
  EXPECT_EQ(P->ValidGpus.front(), 4);
}

TEST(ElasticityTest, RefusesWhatDeepSpeedRefuses) {
  EXPECT_FALSE(bool(computeElasticPlan(
      settings({8, 12}, 10000, 32, 1500, 0.3), 0)));
  ElasticSettings MP = settings({8, 12}, 10000, 32, 1500, 0.1);
  MP.ModelParallel = 2;
  llvm::Expected<ElasticPlan> P = computeElasticPlan(MP, 0);
  ASSERT_FALSE(bool(P));
  llvm::consumeError(P.takeError());
  llvm::Expected<ElasticPlan> NoWorld =
      computeElasticPlan(settings({2, 4}, 100, 1, 100, 0.2), 0);
  ASSERT_FALSE(bool(NoWorld));
  llvm::consumeError(NoWorld.takeError());
}

} // namespace
