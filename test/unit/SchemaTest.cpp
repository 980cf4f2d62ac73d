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
