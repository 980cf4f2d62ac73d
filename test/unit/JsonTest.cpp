//===- JsonTest.cpp - The position-keeping JSON reader --------------------===//

#include "dsc/Config/ConfigEdit.h"
#include "dsc/Config/Json.h"

#include "gtest/gtest.h"

#include <cmath>
#include <string>

using namespace dsc;

namespace {

JsonValue parseOK(llvm::StringRef Text) {
  JsonParseResult R = parseJson(Text);
  EXPECT_FALSE(R.Error) << (R.Error ? R.Error->Message : "");
  return R.Root ? *R.Root : JsonValue();
}

std::string textOf(llvm::StringRef Text, uint32_t B, uint32_t E) {
  return Text.slice(B, E).str();
}

TEST(JsonTest, KeysAndValuesKeepTheirRanges) {
  std::string T = "{\n  \"a\": 1,\n  \"b\": {\"c\": [true, null]},\n"
                  "  \"d\": \"x\"\n}";
  JsonValue Root = parseOK(T);
  ASSERT_EQ(Root.Members.size(), 3u);
  const JsonMember &A = Root.Members[0];
  EXPECT_EQ(textOf(T, A.KeyBegin, A.KeyEnd), "\"a\"");
  EXPECT_EQ(textOf(T, A.Value.Begin, A.Value.End), "1");
  const JsonMember &B = Root.Members[1];
  EXPECT_EQ(textOf(T, B.Value.Begin, B.Value.End), "{\"c\": [true, null]}");
  const JsonMember &C = B.Value.Members[0];
  EXPECT_EQ(textOf(T, C.KeyBegin, C.KeyEnd), "\"c\"");
  EXPECT_EQ(textOf(T, C.Value.Begin, C.Value.End), "[true, null]");
  EXPECT_EQ(textOf(T, C.Value.Elements[1].Begin, C.Value.Elements[1].End),
            "null");
  EXPECT_EQ(textOf(T, Root.Members[2].Value.Begin, Root.Members[2].Value.End),
            "\"x\"");
  EXPECT_EQ(textOf(T, Root.Begin, Root.End), T);
}

TEST(JsonTest, PythonIntFloatDistinction) {
  JsonValue Root = parseOK(R"({"i": 500000000, "e": 5e8, "f": 1.0,
                               "n": -3, "big": 123456789012345678901234})");
  EXPECT_EQ(Root.get("i")->Kind, JsonKind::Int);
  EXPECT_EQ(Root.get("i")->Int, 500000000);
  EXPECT_EQ(Root.get("e")->Kind, JsonKind::Float);
  EXPECT_EQ(Root.get("e")->Float, 5e8);
  EXPECT_EQ(Root.get("e")->Str, "5e8");
  EXPECT_EQ(Root.get("f")->Kind, JsonKind::Float);
  EXPECT_EQ(Root.get("n")->Int, -3);
  EXPECT_EQ(Root.get("big")->Kind, JsonKind::Int);
  EXPECT_TRUE(Root.get("big")->IntOverflow);
}

TEST(JsonTest, NonFiniteNumbersParseAndAreRecorded) {
  JsonParseResult R = parseJson(R"({"a": NaN, "b": Infinity, "c": -Infinity})");
  ASSERT_TRUE(R.Root);
  EXPECT_TRUE(std::isnan(R.Root->get("a")->Float));
  EXPECT_EQ(R.Root->get("b")->Float, HUGE_VAL);
  EXPECT_EQ(R.Root->get("c")->Float, -HUGE_VAL);
  EXPECT_EQ(R.Extensions.size(), 3u);
  EXPECT_EQ(R.Extensions[0].Kind, JsonExtension::NonFinite);
}

TEST(JsonTest, HjsonCommentsAndTrailingCommasAreAcceptedAndRecorded) {
  std::string T = "{\n  // line\n  /* block */ \"a\": 1, # hash\n"
                  "  \"b\": [1, 2,],\n}";
  JsonParseResult R = parseJson(T);
  ASSERT_FALSE(R.Error) << R.Error->Message;
  unsigned Comments = 0, Commas = 0;
  for (const JsonExtensionUse &U : R.Extensions) {
    Comments += U.Kind == JsonExtension::Comment;
    Commas += U.Kind == JsonExtension::TrailingComma;
  }
  EXPECT_EQ(Comments, 3u);
  EXPECT_EQ(Commas, 2u);
  EXPECT_EQ(textOf(T, R.Root->Members[0].KeyBegin, R.Root->Members[0].KeyEnd),
            "\"a\"");
}

TEST(JsonTest, HashInsideStringIsNotAComment) {
  JsonValue Root = parseOK(R"({"path": "/data/#1", "x": "// not"})");
  EXPECT_EQ(Root.get("path")->Str, "/data/#1");
  EXPECT_EQ(Root.get("x")->Str, "// not");
}

TEST(JsonTest, DuplicateKeysKeepFirstPositionAndLastValue) {
  std::string T = R"({"a": 1, "b": 2, "a": 3})";
  JsonParseResult R = parseJson(T);
  ASSERT_TRUE(R.Root);
  ASSERT_EQ(R.Duplicates.size(), 1u);
  EXPECT_EQ(R.Duplicates[0].Key, "a");
  EXPECT_EQ(textOf(T, R.Duplicates[0].FirstBegin, R.Duplicates[0].FirstEnd),
            "\"a\"");
  EXPECT_EQ(R.Duplicates[0].Begin, 17u);
  ASSERT_EQ(R.Root->Members.size(), 2u);
  EXPECT_EQ(R.Root->Members[0].Key, "a");
  EXPECT_EQ(R.Root->Members[0].Value.Int, 3);
}

TEST(JsonTest, ByteOrderMarkIsSkippedAndRecorded) {
  JsonParseResult R = parseJson("\xEF\xBB\xBF{\"a\": 1}");
  ASSERT_TRUE(R.Root);
  ASSERT_FALSE(R.Extensions.empty());
  EXPECT_EQ(R.Extensions[0].Kind, JsonExtension::ByteOrderMark);
  EXPECT_EQ(R.Root->Begin, 3u);
}

TEST(JsonTest, ErrorsCarryOffsetAndHint) {
  JsonParseResult R = parseJson("{\n  \"a\": 1\n  \"b\": 2\n}");
  ASSERT_TRUE(R.Error);
  EXPECT_EQ(R.Error->Offset, 13u);
  EXPECT_NE(R.Error->Hint.find("comma"), std::string::npos);

  R = parseJson("{stage: 3}");
  ASSERT_TRUE(R.Error);
  EXPECT_EQ(R.Error->Message, "unquoted or single-quoted key");
  EXPECT_EQ(R.Error->Offset, 1u);

  R = parseJson("");
  ASSERT_TRUE(R.Error);
  EXPECT_EQ(R.Error->Message, "the file is empty");

  R = parseJson("{\"a\": \"\xff\"}");
  EXPECT_TRUE(R.Error); // Invalid UTF-8.
}

TEST(JsonTest, DeepNestingIsRefusedNotRecursedInto) {
  std::string T(100000, '[');
  JsonParseResult R = parseJson(T);
  ASSERT_TRUE(R.Error);
  EXPECT_NE(R.Error->Message.find("nesting"), std::string::npos);
}

TEST(JsonTest, TriviaSkipsSeparatorsAndComments) {
  llvm::StringRef T = " , /* x */ : // y\n  \"k\"";
  bool Comma = false;
  EXPECT_EQ(skipJsonTrivia(T, 0, &Comma), T.find('"'));
  EXPECT_TRUE(Comma);
}

} // namespace

// dsc tune's edits: a key set where it is, added with the objects on its
// way where it is not, and every other byte (comments, order) kept.
TEST(JsonTest, SetConfigValueKeepsTheRest) {
  auto Set = [](llvm::StringRef Text, llvm::StringRef Path,
                llvm::StringRef Value) {
    llvm::Expected<std::string> Out = dsc::setConfigValue(Text, Path, Value);
    return Out ? *Out : "error: " + llvm::toString(Out.takeError());
  };
  EXPECT_EQ(Set("{\"a\": 1, // one\n \"b\": {\"c\": 2}}", "b.c", "3"),
            "{\"a\": 1, // one\n \"b\": {\"c\": 3}}");
  EXPECT_EQ(Set("{\"a\": 1}", "b.c.d", "\"x\""),
            "{\"a\": 1, \"b\": {\"c\": {\"d\": \"x\"}}}");
  EXPECT_EQ(Set("{\"b\": {}}", "b.c", "true"), "{\"b\": {\"c\": true}}");
  EXPECT_EQ(Set("{\"b\": null}", "b.c", "4"), "{\"b\": {\"c\": 4}}");
  EXPECT_EQ(Set("{\"b\": 5}", "b.c", "4"),
            "error: b is an integer, not an object");
  EXPECT_EQ(Set("[1]", "b", "4"), "error: the config is not a JSON object");
}
