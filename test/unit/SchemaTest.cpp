//===- SchemaTest.cpp - The schema table is consistent --------------------===//

#include "dsc/Config/Coercion.h"
#include "dsc/Config/Schema.h"

#include "llvm/ADT/StringSet.h"

#include "gtest/gtest.h"

using namespace dsc;

namespace {

TEST(SchemaTest, EveryKeyLivesInADeclaredSection) {
  for (const KeySpec &K : schemaKeys()) {
    llvm::StringRef Parent = K.parent();
    if (Parent.empty())
      continue;
    const KeySpec *Section = findKey(Parent);
    ASSERT_TRUE(Section) << K.Path << ": no entry for " << Parent.str();
    EXPECT_TRUE(Section->isSection()) << K.Path;
  }
}

TEST(SchemaTest, EveryDefaultIsValidForItsOwnKey) {
  for (const KeySpec &K : schemaKeys()) {
    if (!K.Default || K.Type == ValueType::Misnomer)
      continue;
    JsonParseResult R = parseJson(K.Default);
    ASSERT_TRUE(R.Root) << K.Path << ": default " << K.Default;
    Coercion C = coerce(*R.Root, K, SectionKind::Model);
    ASSERT_EQ(C.Problem, CoercionProblem::None) << K.Path;
    if (C.Value && C.Value->K != Scalar::Null && K.OneOf)
      EXPECT_TRUE(isAllowedChoice(K, *C.Value)) << K.Path;
  }
}

TEST(SchemaTest, PathAndVariantIdentifyOneEntry) {
  llvm::StringSet<> Seen;
  for (const KeySpec &K : schemaKeys()) {
    std::string Id = std::string(K.Path) + "@" + (K.Variants ? K.Variants : "");
    EXPECT_TRUE(Seen.insert(Id).second) << "duplicate entry " << Id;
  }
}

// Nothing silent: dsc plan acts on every key by its treatment, so a key
// added without one (or a section whose keys would inherit none) fails
// here rather than being planned as if it were not there.
TEST(SchemaTest, EveryKeyHasATreatment) {
  unsigned Classified = 0;
  for (const KeySpec &K : schemaKeys()) {
    KeyTreatment T = treatmentOf(K);
    EXPECT_NE(T.How, Treatment::Inherit)
        << K.Path << ": say whether the planner plans it, refuses it, "
        << "ignores it (no effect) or leaves it to model code";
    if (T.How != Treatment::Inherit) {
      ++Classified;
      EXPECT_FALSE(T.Effect.empty()) << K.Path << ": say what it does";
    }
  }
  EXPECT_GT(Classified, 400u);
}

// A refusal names the default that makes the config plannable: a refused
// key either has one or is off when absent (no default: null or false).
TEST(SchemaTest, TreatmentsResolveThroughSectionsAndReplacements) {
  const KeySpec *Autotp = findKey("tensor_parallel.autotp_size");
  ASSERT_TRUE(Autotp);
  EXPECT_EQ(treatmentOf(*Autotp).How, Treatment::Refused);
  const KeySpec *CpuOffload = findKey("zero_optimization.cpu_offload");
  ASSERT_TRUE(CpuOffload);
  KeyTreatment T = treatmentOf(*CpuOffload);
  EXPECT_EQ(T.How, Treatment::Planned);
  EXPECT_EQ(llvm::StringRef(T.From->Path), "zero_optimization.offload_optimizer");
  const KeySpec *Unused = findKey("zero_optimization.allgather_partitions");
  ASSERT_TRUE(Unused);
  EXPECT_EQ(treatmentOf(*Unused).How, Treatment::NoEffect);
  const KeySpec *Stage = findKey("zero_optimization.stage");
  ASSERT_TRUE(Stage);
  EXPECT_EQ(treatmentOf(*Stage).How, Treatment::Planned);
}

TEST(SchemaTest, EveryEntryHasADocLine) {
  for (const KeySpec &K : schemaKeys())
    EXPECT_FALSE(llvm::StringRef(K.Doc).empty()) << K.Path;
}

TEST(SchemaTest, ReplacementsPointAtRealKeys) {
  for (const KeySpec &K : schemaKeys())
    if (K.ReplacedBy) {
      const KeySpec *New = findKey(K.ReplacedBy);
      ASSERT_TRUE(New) << K.Path << " -> " << K.ReplacedBy;
      EXPECT_NE(New->Type, ValueType::Misnomer) << K.Path;
    }
}

TEST(SchemaTest, LookupFollowsAliasesAndVariants) {
  const KeySpec *K = lookupIn("zero_optimization", "stage3_max_live_parameters");
  ASSERT_TRUE(K);
  EXPECT_STREQ(K->Path, "zero_optimization.max_live_parameters");
  const KeySpec *Lr = lookupIn("optimizer.params", "lr", "torch.Adagrad");
  ASSERT_TRUE(Lr);
  EXPECT_STREQ(Lr->Default, "0.01");
  EXPECT_FALSE(lookupIn("optimizer.params", "set_grad_none",
                        "DeepSpeedCPUAdam"));
  EXPECT_TRUE(lookupIn("optimizer.params", "set_grad_none", "FusedAdam"));
}

TEST(SchemaTest, SuggestionsFindTypos) {
  auto S = suggestionsIn("zero_optimization", "overlap_com", "");
  ASSERT_FALSE(S.empty());
  EXPECT_EQ(S.front(), "overlap_comm");
  EXPECT_TRUE(suggestionsIn("", "zzzzzz", "").empty());
}

TEST(SchemaTest, AnyNameEntriesAreSections) {
  // Only a section can stand for children the user names; it is never
  // itself a suggestion for a misspelled key.
  for (const KeySpec &K : schemaKeys()) {
    if (K.isAnyName()) {
      EXPECT_TRUE(K.isSection()) << K.Path;
    }
  }
  EXPECT_TRUE(suggestionsIn("compression_training.row_pruning.different_groups",
                            "x", "")
                  .empty());
}

TEST(SchemaTest, LookupResolvesNamesTheUserChooses) {
  const char *Groups = "compression_training.weight_quantization.different_groups";
  const KeySpec *Group = lookupIn(Groups, "wq1");
  ASSERT_TRUE(Group);
  EXPECT_TRUE(Group->isAnyName());
  // A section that names all its keys has no catch-all.
  EXPECT_FALSE(lookupIn("compression_training", "wq1"));

  const KeySpec *Bits = findKey(
      "compression_training.weight_quantization.different_groups.wq1.params."
      "start_bits");
  ASSERT_TRUE(Bits);
  EXPECT_STREQ(Bits->Path, "compression_training.weight_quantization."
                           "different_groups.*.params.start_bits");
  EXPECT_FALSE(findKey("compression_training.weight_quantization."
                       "different_groups.wq1.params.start_bit"));
  // Aliases resolve on the way too, not only in the last segment.
  const KeySpec *Tp = findKey("tensor_parallel.tp.tp_size");
  ASSERT_TRUE(Tp);
  EXPECT_STREQ(Tp->Path, "tensor_parallel.tensor_parallel.tp_size");
}

TEST(SchemaTest, KeysNamedFindsOtherSections) {
  auto Found = keysNamed("aio");
  ASSERT_EQ(Found.size(), 1u);
  EXPECT_STREQ(Found[0]->Path, "aio");
}

} // namespace
