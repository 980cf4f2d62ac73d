//===- CoercionTest.cpp - DeepSpeed's value conversion rules --------------===//
//
// The pydantic rows follow spec §2.3 (checked against pydantic 2); the raw
// rows follow Python's json.load values used without conversion.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/Coercion.h"

#include "gtest/gtest.h"

using namespace dsc;

namespace {

Coercion run(llvm::StringRef Json, ValueType T, SectionKind How,
             bool Nullable = false) {
  JsonParseResult R = parseJson(Json);
  EXPECT_TRUE(R.Root);
  KeySpec K;
  K.Type = T;
  K.Nullable = Nullable;
  return coerce(*R.Root, K, How);
}

constexpr SectionKind Model = SectionKind::Model, Raw = SectionKind::Dict;

TEST(CoercionTest, PydanticIntAcceptsIntegralFloatsAndNumericStrings) {
  for (auto [Json, Want] :
       {std::pair{"5e8", 500000000}, {"3.0", 3}, {"\"500\"", 500},
        {"\" 500 \"", 500}, {"\"12.0\"", 12}, {"\"1_000\"", 1000},
        {"true", 1}, {"false", 0}, {"-7", -7}}) {
    Coercion C = run(Json, ValueType::Int, Model);
    ASSERT_EQ(C.Problem, CoercionProblem::None) << Json;
    EXPECT_EQ(C.Value->I, Want) << Json;
  }
}

TEST(CoercionTest, PydanticIntRejectsFractionsExponentStringsAndNull) {
  EXPECT_EQ(run("15099494.4", ValueType::Int, Model).Problem,
            CoercionProblem::FractionalInt);
  EXPECT_EQ(run("\"5e8\"", ValueType::Int, Model).Problem,
            CoercionProblem::WrongType);
  EXPECT_EQ(run("\"1__0\"", ValueType::Int, Model).Problem,
            CoercionProblem::WrongType);
  EXPECT_EQ(run("null", ValueType::Int, Model).Problem,
            CoercionProblem::WrongType);
  EXPECT_EQ(run("null", ValueType::Int, Model, true).Problem,
            CoercionProblem::None);
  EXPECT_EQ(run("Infinity", ValueType::Int, Model).Problem,
            CoercionProblem::NotFinite);
}

TEST(CoercionTest, PydanticBoolAcceptsWordsAndZeroOne) {
  for (auto [Json, Want] :
       {std::pair{"true", true}, {"0", false}, {"1.0", true},
        {"\"YES\"", true}, {"\"off\"", false}, {"\"t\"", true},
        {"\"n\"", false}}) {
    Coercion C = run(Json, ValueType::Bool, Model);
    ASSERT_EQ(C.Problem, CoercionProblem::None) << Json;
    EXPECT_EQ(C.Value->B, Want) << Json;
  }
  EXPECT_EQ(run("2", ValueType::Bool, Model).Problem,
            CoercionProblem::WrongType);
  EXPECT_EQ(run("\"maybe\"", ValueType::Bool, Model).Problem,
            CoercionProblem::WrongType);
}

TEST(CoercionTest, PydanticFloatAndString) {
  EXPECT_EQ(run("\"1e-3\"", ValueType::Float, Model).Value->F, 1e-3);
  EXPECT_EQ(run("3", ValueType::Float, Model).Value->F, 3.0);
  EXPECT_EQ(run("\"x\"", ValueType::Float, Model).Problem,
            CoercionProblem::WrongType);
  EXPECT_EQ(run("3", ValueType::String, Model).Problem,
            CoercionProblem::WrongType);
}

TEST(CoercionTest, RawSectionsConvertNothing) {
  EXPECT_EQ(run("\"false\"", ValueType::Bool, Raw).Problem,
            CoercionProblem::WrongType);
  Coercion One = run("1", ValueType::Bool, Raw);
  EXPECT_EQ(One.Problem, CoercionProblem::NumberAsBool);
  EXPECT_TRUE(One.Value->B);
  Coercion F = run("1e6", ValueType::Int, Raw);
  EXPECT_EQ(F.Problem, CoercionProblem::IntegralFloat);
  EXPECT_EQ(F.Value->I, 1000000);
  EXPECT_EQ(run("2.5", ValueType::Int, Raw).Problem,
            CoercionProblem::FractionalInt);
  EXPECT_EQ(run("\"8\"", ValueType::Int, Raw).Problem,
            CoercionProblem::WrongType);
  EXPECT_EQ(run("8", ValueType::Float, Raw).Value->F, 8.0);
}

TEST(CoercionTest, ExactTypeRefusesIntegralFloatsInRawSections) {
  JsonParseResult R = parseJson("1000.0");
  KeySpec K;
  K.Type = ValueType::Int;
  K.ExactType = true;
  EXPECT_EQ(coerce(*R.Root, K, Raw).Problem, CoercionProblem::WrongType);
}

TEST(CoercionTest, StrictNumbersRefuseBooleansAndInfinity) {
  KeySpec K;
  K.Type = ValueType::Float;
  K.StrictNumber = true;
  EXPECT_EQ(coerce(*parseJson("true").Root, K, Model).Problem,
            CoercionProblem::WrongType);
  EXPECT_EQ(coerce(*parseJson("\"inf\"").Root, K, Model).Problem,
            CoercionProblem::NotFinite);
  EXPECT_EQ(coerce(*parseJson("\"128\"").Root, K, Model).Value->F, 128.0);
}

TEST(CoercionTest, ChoicesFollowCaseRules) {
  KeySpec K;
  K.Type = ValueType::String;
  K.OneOf = "fp16|bf16|fp32";
  Scalar S;
  S.K = Scalar::String;
  S.S = "BF16";
  EXPECT_FALSE(isAllowedChoice(K, S));
  K.CaseInsensitive = true;
  EXPECT_TRUE(isAllowedChoice(K, S));
  KeySpec Stage;
  Stage.Type = ValueType::Int;
  Stage.OneOf = "0|1|2|3";
  Scalar Four;
  Four.K = Scalar::Int;
  Four.I = 4;
  EXPECT_FALSE(isAllowedChoice(Stage, Four));
}

} // namespace
