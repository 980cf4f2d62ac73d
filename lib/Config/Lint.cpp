//===- Lint.cpp - The lint driver: parse, schema, cross-field rules -------===//

#include "dsc/Config/Lint.h"

#include "LintContext.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

namespace dsc {

static const RuleInfo Rules[] = {
#define LINT_RULE(Id, Code, Sev, Summary) {Code, Severity::Sev, Summary},
#include "dsc/Config/LintRules.def"
};

StringRef ruleCode(Rule R) { return Rules[unsigned(R)].Code; }
Severity ruleSeverity(Rule R) { return Rules[unsigned(R)].DefaultSeverity; }
ArrayRef<RuleInfo> lintRules() { return Rules; }

std::optional<LintTarget> parseLintTarget(StringRef Name) {
  if (Name == "deepspeed")
    return LintTarget::DeepSpeed;
  if (Name == "hf-trainer")
    return LintTarget::HfTrainer;
  if (Name == "accelerate")
    return LintTarget::Accelerate;
  return std::nullopt;
}

StringRef targetName(LintTarget T) {
  switch (T) {
  case LintTarget::DeepSpeed:
    return "deepspeed";
  case LintTarget::HfTrainer:
    return "hf-trainer";
  case LintTarget::Accelerate:
    return "accelerate";
  }
  return "?";
}

std::string LintContext::spellingOf(StringRef Path) const {
  const JsonValue *V = View.find(Path);
  return V ? spelling(*V, Text) : "";
}

SMRange LintContext::rangeOf(StringRef Path) const {
  StringRef P = Path;
  while (!P.empty()) {
    if (const JsonMember *M = View.findMember(P))
      return P == Path ? keyRange(*M) : range(M->Value.Begin, M->Value.Begin + 1);
    size_t Dot = P.rfind('.');
    P = Dot == StringRef::npos ? StringRef() : P.take_front(Dot);
  }
  return range(Root.Begin, Root.Begin + 1);
}

/// Reports syntax that not every reader of the file accepts.
static void reportExtensions(DiagnosticEngine &Engine, unsigned BufferID,
                             StringRef Text, const JsonParseResult &Parsed) {
  auto Range = [&](uint32_t B, uint32_t E) {
    return SMRange(SMLoc::getFromPointer(Text.data() + B),
                   SMLoc::getFromPointer(Text.data() + E));
  };
  struct KindInfo {
    JsonExtension Kind;
    const char *What;
  };
  static const KindInfo Kinds[] = {
      {JsonExtension::Comment, "a comment"},
      {JsonExtension::TrailingComma, "a trailing comma"},
      {JsonExtension::ByteOrderMark, "a UTF-8 byte-order mark"},
  };
  for (const KindInfo &K : Kinds) {
    const JsonExtensionUse *First = nullptr;
    unsigned Count = 0;
    for (const JsonExtensionUse &U : Parsed.Extensions)
      if (U.Kind == K.Kind && Count++ == 0)
        First = &U;
    if (!First)
      continue;
    Diagnostic &D = Engine.report(
        Severity::Warning, ruleCode(Rule::JsonExtension), BufferID,
        Range(First->Begin, First->End),
        Twine(K.What) +
            ": DeepSpeed's own reader (hjson) accepts it, but the HF Trainer "
            "and accelerate read the file with json.load and refuse it");
    if (Count > 1)
      D.note(Twine(Count - 1) + " more in this file");
  }
  for (const JsonDuplicateKey &Dup : Parsed.Duplicates)
    Engine
        .report(Severity::Error, ruleCode(Rule::DuplicateKey), BufferID,
                Range(Dup.Begin, Dup.End),
                "duplicate key \"" + Dup.Key +
                    "\": DeepSpeed refuses the file (ValueError: Duplicate "
                    "keys); the HF Trainer and accelerate silently keep this "
                    "last value")
        .note(Range(Dup.FirstBegin, Dup.FirstEnd), "first given here");
}

LintResult lintConfig(DiagnosticEngine &Engine, unsigned BufferID,
                      const LintOptions &Options) {
  LintResult Result;
  StringRef Text = Engine.sourceMgr().getMemoryBuffer(BufferID)->getBuffer();
  JsonParseResult Parsed = parseJson(Text);
  if (Parsed.Error) {
    SMLoc At = SMLoc::getFromPointer(Text.data() + Parsed.Error->Offset);
    Diagnostic &D =
        Engine.report(Severity::Error, ruleCode(Rule::JsonSyntax), BufferID,
                      SMRange(At, At), Parsed.Error->Message);
    if (!Parsed.Error->Hint.empty())
      D.note(Parsed.Error->Hint);
    return Result;
  }
  reportExtensions(Engine, BufferID, Text, Parsed);
  const JsonValue &Root = *Parsed.Root;
  if (Root.Kind != JsonKind::Object) {
    Engine.report(Severity::Error, ruleCode(Rule::NotAnObject), BufferID,
                  SMRange(SMLoc::getFromPointer(Text.data() + Root.Begin),
                          SMLoc::getFromPointer(Text.data() + Root.End)),
                  "a DeepSpeed config is a JSON object, not " +
                      describe(Root.Kind));
    return Result;
  }
  Result.Target = Options.Target.value_or(hasAutoPlaceholder(Root)
                                              ? LintTarget::HfTrainer
                                              : LintTarget::DeepSpeed);
  LintContext C(Engine, BufferID, Options, Result.Target, Root);
  checkSchema(C);
  checkBatch(C);
  checkPrecision(C);
  checkZero(C);
  checkCommunication(C);
  checkOptimizer(C);
  checkElasticity(C);
  checkFeatures(C);
  if (Options.ForPlan)
    checkPlannable(C);
  Result.Root = std::move(Parsed.Root);
  return Result;
}

} // namespace dsc
