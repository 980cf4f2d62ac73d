//===- ResolveTest.cpp - resolve agrees with the schema table -------------===//
//
// The schema table says where each integration fills "auto" (AutoBy); the
// resolver implements the filling. These tests keep the two from drifting:
// every key the table marks is filled, and every other key is refused.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/Resolve.h"
#include "dsc/Config/Schema.h"

#include "llvm/Support/MemoryBuffer.h"
#include "gtest/gtest.h"

#include <map>

using namespace dsc;
using llvm::StringRef;

namespace {

/// A JSON object built from dotted paths.
struct Tree {
  std::map<std::string, Tree> Children;
  std::string Leaf;

  void set(StringRef Path, StringRef Json) {
    auto [Head, Rest] = Path.split('.');
    Tree &T = Children[Head.str()];
    if (Rest.empty())
      T.Leaf = Json.str();
    else
      T.set(Rest, Json);
  }
  std::string text() const {
    if (Children.empty())
      return Leaf;
    std::string S = "{";
    for (const auto &[K, V] : Children)
      S += (S.size() > 1 ? ", \"" : "\"") + K + "\": " + V.text();
    return S + "}";
  }
};

/// Every argument given, so that nothing is missing but the filling itself.
TrainingArgs allArgs(LintTarget T) {
  TrainingArgs A;
  A.WorldSize = 2;
  A.MicroBatch = 4;
  A.GradAccum = 2;
  A.LearningRate = 1e-4;
  A.WarmupSteps = 10;
  A.MaxSteps = 100;
  A.HiddenSize = 64;
  A.HiddenSizeSource = "test";
  A.ZeroStage = 3;
  A.OffloadOptimizerDevice = "cpu";
  A.OffloadParamDevice = "cpu";
  A.OffloadOptimizerNvmePath = "/nvme";
  A.OffloadParamNvmePath = "/nvme";
  A.Zero3Save16BitModel = true;
  if (T == LintTarget::Accelerate)
    A.MixedPrecision = "bf16";
  else
    A.BF16 = true;
  return A;
}

/// The spelling the integrations look for: the stage3_ alias where there
/// is one (accelerate matches the written key, not pydantic's field).
std::string writtenPath(const KeySpec &K) {
  if (!K.Alias)
    return K.Path;
  return (K.parent() + "." + K.Alias).str();
}

/// Resolves a config holding "auto" at K (plus what its section needs).
ResolveResult resolveAutoAt(const KeySpec &K, LintTarget T) {
  Tree Config;
  Config.set("zero_optimization.stage", "3");
  StringRef Path = K.path();
  for (StringRef Section : {"optimizer", "scheduler"})
    if (Path.startswith((Section + ".").str()))
      Config.set((Section + ".type").str(),
                 ("\"" + StringRef(K.Variants ? K.Variants : "Adam")
                             .split('|')
                             .first +
                  "\"")
                     .str());
  Config.set(writtenPath(K), "\"auto\"");
  DiagnosticEngine Engine;
  unsigned ID = Engine.addFile(
      llvm::MemoryBuffer::getMemBufferCopy(Config.text(), "ds.json"));
  return resolveConfig(Engine, ID, T, allArgs(T));
}

bool fills(const ResolveResult &R, const KeySpec &K) {
  for (const FilledValue &F : R.Filled)
    if (F.Path == writtenPath(K))
      return true;
  return false;
}

class ResolveAgreesWithSchema : public testing::TestWithParam<LintTarget> {};

TEST_P(ResolveAgreesWithSchema, EveryMarkedKeyIsFilled) {
  LintTarget T = GetParam();
  uint8_t Bit = T == LintTarget::HfTrainer ? AutoTrainer : AutoAccelerate;
  unsigned Marked = 0;
  for (const KeySpec &K : schemaKeys()) {
    if (!(K.AutoBy & Bit))
      continue;
    ++Marked;
    ResolveResult R = resolveAutoAt(K, T);
    EXPECT_TRUE(R.OK && fills(R, K)) << writtenPath(K);
  }
  EXPECT_GE(Marked, 20u);
}

TEST_P(ResolveAgreesWithSchema, EveryOtherScalarKeyIsRefused) {
  LintTarget T = GetParam();
  uint8_t Bit = T == LintTarget::HfTrainer ? AutoTrainer : AutoAccelerate;
  unsigned Checked = 0;
  for (const KeySpec &K : schemaKeys()) {
    // "auto" is a real value of a few keys (pipeline.stages); sections and
    // wrong spellings are not values (the HF integrations fill a misnomer
    // by its path, and lint then reports the misnomer itself).
    if ((K.AutoBy & Bit) || K.isSection() || K.ReplacedBy ||
        K.Type == ValueType::Misnomer ||
        K.path().contains("[]") || (K.Default && StringRef(K.Default) ==
                                                     "\"auto\""))
      continue;
    ++Checked;
    ResolveResult R = resolveAutoAt(K, T);
    EXPECT_FALSE(R.OK) << K.Path << " was filled";
  }
  EXPECT_GE(Checked, 200u);
}

INSTANTIATE_TEST_SUITE_P(Targets, ResolveAgreesWithSchema,
                         testing::Values(LintTarget::HfTrainer,
                                         LintTarget::Accelerate));

TEST(ResolveTest, CanonicalSpellingOfAStage3AliasIsNotFilled) {
  // The Trainer fills "stage3_prefetch_bucket_size" only; the pydantic
  // field name with "auto" stays "auto" and DeepSpeed rejects it.
  const KeySpec *K = findKey("zero_optimization.prefetch_bucket_size");
  ASSERT_TRUE(K && K->Alias);
  Tree Config;
  Config.set("zero_optimization.prefetch_bucket_size", "\"auto\"");
  DiagnosticEngine Engine;
  unsigned ID = Engine.addFile(
      llvm::MemoryBuffer::getMemBufferCopy(Config.text(), "ds.json"));
  EXPECT_FALSE(
      resolveConfig(Engine, ID, LintTarget::HfTrainer,
                    allArgs(LintTarget::HfTrainer))
          .OK);
}

TEST(ResolveTest, ArgsYAMLWarmupRatioIsTheWarmupWithoutWarmupSteps) {
  llvm::Expected<TrainingArgs> A = readTrainingArgsYAML(
      "per_device_train_batch_size: 8\nwarmup_ratio: 0.03\n", "args.yaml");
  ASSERT_TRUE(bool(A)) << llvm::toString(A.takeError());
  EXPECT_EQ(A->MicroBatch, 8);
  EXPECT_EQ(A->warmup(), 0.03);
  llvm::Expected<TrainingArgs> Both = readTrainingArgsYAML(
      "warmup_ratio: 0.03\nwarmup_steps: 100\n", "args.yaml");
  ASSERT_TRUE(bool(Both)) << llvm::toString(Both.takeError());
  EXPECT_EQ(Both->warmup(), 100);
  llvm::Expected<TrainingArgs> Bad =
      readTrainingArgsYAML("- a list\n", "args.yaml");
  ASSERT_FALSE(bool(Bad));
  EXPECT_NE(llvm::toString(Bad.takeError()).find("args.yaml"),
            std::string::npos);
}

} // namespace
