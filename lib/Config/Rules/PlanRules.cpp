//===- PlanRules.cpp - What the plan cannot contain, said by name ---------===//
//
// Run for dsc plan and dsc estimate only (LintOptions::ForPlan). Every key
// the config sets is looked up in the schema and treated as its entry says
// (Schema.h, Treatment): a key that changes what DeepSpeed executes in a
// way dsc does not plan is an error when it differs from DeepSpeed's
// default, naming the key, its value and the default that would make the
// config plannable; a key that acts only through training code using the
// feature is a warning that the plan does not contain it.
//
//===----------------------------------------------------------------------===//

#include "../LintContext.h"

#include "dsc/Config/Coercion.h"

using namespace llvm;

namespace dsc {

namespace {

bool sameJson(const JsonValue &A, const JsonValue &B) {
  if (A.isNumber() && B.isNumber())
    return A.number() == B.number();
  if (A.Kind != B.Kind)
    return false;
  switch (A.Kind) {
  case JsonKind::Null:
    return true;
  case JsonKind::Bool:
    return A.Bool == B.Bool;
  case JsonKind::String:
    return A.Str == B.Str;
  case JsonKind::Array:
    if (A.Elements.size() != B.Elements.size())
      return false;
    for (size_t I = 0; I < A.Elements.size(); ++I)
      if (!sameJson(A.Elements[I], B.Elements[I]))
        return false;
    return true;
  case JsonKind::Object:
    if (A.Members.size() != B.Members.size())
      return false;
    for (const JsonMember &M : A.Members) {
      const JsonMember *Other = B.member(M.Key);
      if (!Other || !sameJson(M.Value, Other->Value))
        return false;
    }
    return true;
  default:
    return false;
  }
}

/// Whether V, as DeepSpeed reads it for K, is K's default. Without a
/// default, absence means off: null and false are the default.
bool isDefault(const JsonValue &V, const KeySpec &K, SectionKind How) {
  Coercion Got = coerce(V, K, How);
  bool Off = V.Kind == JsonKind::Null ||
             (Got.Value && Got.Value->K == Scalar::Bool && !Got.Value->B);
  if (!K.Default)
    return Off;
  JsonParseResult Parsed = parseJson(K.Default);
  if (!Parsed.Root)
    return false;
  const JsonValue &Def = *Parsed.Root;
  if (Def.Kind == JsonKind::Null)
    return Off;
  Coercion Want = coerce(Def, K, SectionKind::Model);
  if (!Got.Value || !Want.Value || Got.Value->K == Scalar::Other ||
      Want.Value->K == Scalar::Other)
    return sameJson(V, Def);
  const Scalar &A = *Got.Value, &B = *Want.Value;
  if (A.K == Scalar::String && B.K == Scalar::String)
    return K.CaseInsensitive ? StringRef(A.S).equals_insensitive(B.S)
                             : A.S == B.S;
  if (A.K == Scalar::String || B.K == Scalar::String || A.K == Scalar::Null ||
      B.K == Scalar::Null)
    return A.K == B.K;
  return A.number() == B.number();
}

class PlanChecker {
public:
  explicit PlanChecker(LintContext &C) : C(C) {}

  void run() { walk(C.Root, "", SectionKind::Dict, ""); }

private:
  LintContext &C;

  /// Off: an "enabled" key written false, or absent with a false default,
  /// where DeepSpeed checks it (an "enabled" key DeepSpeed never reads has
  /// the treatment "no effect").
  bool switchedOff(const JsonValue &Object, const KeySpec &Section) {
    const KeySpec *Enabled = lookupIn(Section.path(), "enabled");
    if (!Enabled || Enabled->isAnyName() || Enabled->Type != ValueType::Bool ||
        treatmentOf(*Enabled).How == Treatment::NoEffect)
      return false;
    if (const JsonMember *E = Object.member("enabled")) {
      Coercion Got = coerce(E->Value, *Enabled, Section.Section);
      return Got.Value && Got.Value->K == Scalar::Bool && !Got.Value->B;
    }
    return !Enabled->Default || StringRef(Enabled->Default) == "false";
  }

  /// The first key under the section at Parent that acts on execution
  /// (not "no effect") and is not at its default, as written; "" if none.
  std::string firstSet(const JsonValue &Object, StringRef Parent,
                       SectionKind How, StringRef Variant) {
    for (const JsonMember &M : Object.Members) {
      const KeySpec *K = lookupIn(Parent, M.Key, Variant);
      if (!K || K->Type == ValueType::Misnomer ||
          treatmentOf(*K).How == Treatment::NoEffect)
        continue;
      if (K->isSection() && M.Value.Kind == JsonKind::Object) {
        if (switchedOff(M.Value, *K))
          continue;
        std::string Inner = firstSet(M.Value, K->Path, K->Section,
                                     C.View.variantFor(K->Path));
        if (!Inner.empty())
          return M.Key + "." + Inner;
      } else if (!isDefault(M.Value, *K, How)) {
        return M.Key + " " + spelling(M.Value, C.Text);
      }
    }
    return "";
  }

  void walk(const JsonValue &Object, StringRef Parent, SectionKind How,
            StringRef Variant) {
    for (const JsonMember &M : Object.Members) {
      const KeySpec *K = lookupIn(Parent, M.Key, Variant);
      if (!K || K->Type == ValueType::Misnomer)
        continue; // The schema pass has reported it.
      KeyTreatment T = treatmentOf(*K);
      std::string Shown =
          Parent.empty() ? M.Key
                         : Parent.str() + "." +
                               (K->isAnyName() ? M.Key : K->name().str());
      if (K->isSection() && M.Value.Kind == JsonKind::Object) {
        if (switchedOff(M.Value, *K))
          continue;
        if (T.From == K && T.How == Treatment::Refused && K->Default &&
            StringRef(K->Default) == "null") {
          // A section that turns its feature on by being there (zenflow).
          refuse(M, *K, T, Shown);
          continue;
        }
        std::string Inner = C.View.variantFor(K->Path);
        if (K->VariantKey && Inner.empty())
          continue; // A class dsc does not know: readPlanSettings says so.
        if (T.From == K && (T.How == Treatment::ModelCode ||
                            T.How == Treatment::Refused)) {
          // One finding for the section, naming the first key it sets.
          std::string First = firstSet(M.Value, K->Path, K->Section, Inner);
          if (First.empty())
            continue;
          if (T.How == Treatment::ModelCode)
            C.report(Rule::OutsidePlan, C.keyRange(M),
                     "'" + Shown + "' sets " + First + ": " + T.Effect +
                         "; the plan does not contain it");
          else
            C.report(Rule::NotPlanned, C.keyRange(M),
                     "'" + Shown + "' sets " + First +
                         ", which dsc does not plan (" + T.Effect +
                         "); remove the section or leave its keys at "
                         "DeepSpeed's defaults");
          continue;
        }
        walk(M.Value, K->Path, K->Section, Inner);
        continue;
      }
      if (isDefault(M.Value, *K, How))
        continue;
      if (T.How == Treatment::Refused)
        refuse(M, *K, T, Shown);
      else if (T.How == Treatment::ModelCode)
        C.report(Rule::OutsidePlan, C.keyRange(M),
                 "'" + Shown + "' is " + spelling(M.Value, C.Text) + ": " +
                     T.Effect + "; the plan does not contain it");
    }
  }

  void refuse(const JsonMember &M, const KeySpec &K, const KeyTreatment &T,
              StringRef Shown) {
    std::string Fix;
    if (K.isSection())
      Fix = "remove the section";
    else if (K.Default && StringRef(K.Default) != "null")
      Fix = "set it to " + std::string(K.Default) +
            " (DeepSpeed's default) or remove it";
    else
      Fix = "remove it";
    C.report(Rule::NotPlanned, C.keyRange(M),
             "'" + Shown + "' is " +
                 (K.isSection() ? std::string("set")
                                : spelling(M.Value, C.Text)) +
                 ", which dsc does not plan (" + T.Effect + "); " + Fix);
  }
};

/// Keys planned on their own but not in every company.
void checkCombinations(LintContext &C) {
  const ConfigView &V = C.View;
  std::string Offload = V.offloadOptimizerDevice();
  bool BF16Master =
      V.getBool("bf16.bf16_master_weights_and_grads").value_or(false);
  // DeepSpeed would cast fp16 or fp32 weights into bf16 masters.
  if (BF16Master && !V.bf16Enabled())
    C.report(Rule::NotPlanned, C.rangeOf("bf16.bf16_master_weights_and_grads"),
             "'bf16.bf16_master_weights_and_grads' is true without bf16 "
             "training, which dsc does not plan (bf16 master weights of " +
                 std::string(V.fp16Enabled() ? "fp16" : "fp32") +
                 " ones); enable bf16 or set it to false");
  if (BF16Master && Offload != "none")
    C.report(Rule::NotPlanned, C.rangeOf("bf16.bf16_master_weights_and_grads"),
             "'bf16.bf16_master_weights_and_grads' is true with the optimizer "
             "offloaded to " + Offload + ", which dsc does not plan "
             "(DeepSpeedCPUAdam over bf16 master weights); keep the "
             "optimizer on the GPU or set it to false");
}

} // namespace

void checkPlannable(LintContext &C) {
  PlanChecker(C).run();
  checkCombinations(C);
}

} // namespace dsc
