//===- SchemaCheck.cpp - Every key against the schema table ---------------===//
//
// Walks the config alongside the table. For each key: is it known here (by
// name, alias, deprecated or misnamed spelling)? If not, does it belong in
// another section, or is it a typo of a key here? Then its value: "auto",
// type after DeepSpeed's conversion, allowed values, range. Sections recurse.
// What an unknown key costs depends on the section: rejected in a pydantic
// model, a TypeError in constructor arguments, silently ignored in a dict.
//
//===----------------------------------------------------------------------===//

#include "Edits.h"
#include "LintContext.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <utility>

using namespace llvm;

namespace dsc {

static std::string joinPath(StringRef Parent, StringRef Key) {
  return Parent.empty() ? Key.str() : (Parent + "." + Key).str();
}

/// `name`, or the full path when it is nested.
static std::string quoted(StringRef Path) { return ("`" + Path + "`").str(); }

static StringRef parentOf(StringRef Path) {
  size_t Dot = Path.rfind('.');
  return Dot == StringRef::npos ? StringRef() : Path.take_front(Dot);
}

static StringRef sectionDisplay(StringRef Parent) {
  return Parent.empty() ? StringRef("the top level") : Parent;
}

/// "auto" is a real value at these keys, not a placeholder.
static bool autoIsValue(const KeySpec &K) {
  if (K.Default && StringRef(K.Default) == "\"auto\"")
    return true;
  return llvm::is_contained(K.choices(), "auto");
}

static std::string describeType(const KeySpec &K) {
  switch (K.Type) {
  case ValueType::Bool:
    return "a boolean";
  case ValueType::Int:
    return "an integer";
  case ValueType::Float:
    return "a number";
  case ValueType::String:
    return "a string";
  case ValueType::Object:
  case ValueType::Dict:
    return "an object";
  case ValueType::Array:
    return "an array";
  default:
    return "a value";
  }
}

static std::string choiceList(const KeySpec &K) {
  std::string Out;
  SmallVector<StringRef, 8> Choices = K.choices();
  for (size_t I = 0; I < Choices.size(); ++I) {
    if (I)
      Out += I + 1 == Choices.size() ? " or " : ", ";
    Out += K.Type == ValueType::String ? quoteJson(Choices[I])
                                       : Choices[I].str();
  }
  return Out;
}

static std::string formatNumber(double D) {
  if (D == std::trunc(D) && std::fabs(D) < 1e18)
    return std::to_string(int64_t(D));
  std::string S = std::to_string(D);
  S.erase(S.find_last_not_of('0') + 1);
  return S;
}

namespace {

class SchemaChecker {
public:
  explicit SchemaChecker(LintContext &C) : C(C) {}

  void run() { walkObject(C.Root, "", SectionKind::Dict, ""); }

private:
  LintContext &C;
  /// The section being walked, as messages name it: its table path, with
  /// the config's own names where the table says "any name" (a compression
  /// group is `...different_groups.wq1`, not `...different_groups.*`).
  std::string Shown;

  /// Whether table path Path is Parent or lies below it.
  static bool within(StringRef Path, StringRef Parent) {
    return Parent.empty() || Path == Parent ||
           (Path.startswith(Parent) && Path[Parent.size()] == '.');
  }

  /// Table path Path as messages name it: below Parent, the section being
  /// walked, with the config's own names for Parent's part.
  std::string shownPath(StringRef Path, StringRef Parent) const {
    if (Parent.empty() || !within(Path, Parent))
      return Path.str();
    return Shown + Path.drop_front(Parent.size()).str();
  }

  void walkObject(const JsonValue &Object, StringRef Parent, SectionKind How,
                  StringRef Variant) {
    for (size_t I = 0; I < Object.Members.size(); ++I)
      checkMember(Object, I, Parent, How, Variant);
    checkRequired(Object, Parent, Variant);
  }

  void checkMember(const JsonValue &Object, size_t Index, StringRef Parent,
                   SectionKind How, StringRef Variant) {
    const JsonMember &M = Object.Members[Index];
    const KeySpec *K = lookupIn(Parent, M.Key, Variant);
    if (!K)
      return reportUnknown(Object, Index, Parent, How, Variant);
    if (K->Type == ValueType::Misnomer)
      return reportMisnamed(Object, Index, *K, How);
    std::string Canonical = K->Path;
    checkSpellings(Object, Index, *K, How);
    if (K->ReplacedBy)
      reportDeprecated(Object, Index, *K);
    if (Canonical == "zero_optimization" && M.Value.Kind == JsonKind::Bool)
      return reportLegacyZero(M);
    // Messages name the key as the user wrote it; an alias gets the
    // canonical name in a note, so the user can find both in the docs.
    std::string Written = joinPath(Shown, M.Key);
    size_t Before = C.Engine.diagnostics().size();
    auto NoteCanonical = [&] {
      if (M.Key == K->name() || K->isAnyName())
        return;
      for (Diagnostic &D : C.Engine.diagnosticsSince(Before))
        D.note(C.keyRange(M), quoted(M.Key) + " is DeepSpeed's alias of " +
                                  quoted(K->name()));
    };
    if (M.Value.isString("auto") && !autoIsValue(*K)) {
      checkAuto(M, *K, How, Written);
      return NoteCanonical();
    }
    bool Valid = checkValue(M.Value, *K, How, Written, C.keyRange(M));
    if (Valid && K->Unused)
      C.report(Rule::UnusedKey, C.keyRange(M),
               quoted(Written) + " has no effect: " + K->Unused);
    NoteCanonical();
    if (Valid)
      descend(M, *K);
  }

  void descend(const JsonMember &M, const KeySpec &K) {
    if (K.isSection() && M.Value.Kind == JsonKind::Object) {
      std::string Variant = C.View.variantFor(K.Path);
      // A section whose keys depend on a class we do not model (a
      // torch.optim optimizer, a torch scheduler): nothing to check.
      if (K.VariantKey && Variant.empty())
        return;
      std::string Outer = std::exchange(
          Shown, joinPath(Shown, K.isAnyName() ? StringRef(M.Key) : K.name()));
      walkObject(M.Value, K.Path, K.Section, Variant);
      Shown = std::move(Outer);
    }
  }

  /// Both spellings of one setting (name and alias).
  void checkSpellings(const JsonValue &Object, size_t Index, const KeySpec &K,
                      SectionKind How) {
    if (!K.Alias)
      return;
    const JsonMember &M = Object.Members[Index];
    StringRef Other = M.Key == K.Alias ? K.name() : StringRef(K.Alias);
    const JsonMember *First = Object.member(Other);
    if (!First || First->KeyBegin > M.KeyBegin)
      return;
    if (How == SectionKind::Model) {
      C.report(Rule::ConflictingKeys, C.keyRange(M),
               quoted(M.Key) + " and " + quoted(Other) +
                   " are two spellings of one setting; DeepSpeed rejects "
                   "a section that gives both")
          .note(C.keyRange(*First), "the other spelling is here");
      return;
    }
    // Top level: DeepSpeed reads bf16 and ignores bfloat16.
    StringRef Read = K.name(), Ignored = K.Alias;
    const JsonMember *IgnoredMember = Object.member(Ignored);
    C.report(Rule::ConflictingKeys, Severity::Warning,
             C.keyRange(*IgnoredMember),
             quoted(Ignored) + " is ignored because " + quoted(Read) +
                 " is also given");
  }

  void reportDeprecated(const JsonValue &Object, size_t Index,
                        const KeySpec &K) {
    const JsonMember &M = Object.Members[Index];
    StringRef Replacement = K.ReplacedBy;
    StringRef NewName = Replacement.rsplit('.').second.empty()
                            ? Replacement
                            : Replacement.rsplit('.').second;
    const KeySpec *New = findKey(Replacement);
    // The replacement may be written under its name or its alias.
    const JsonMember *Both = Object.member(NewName);
    if (!Both && New)
      Both = Object.member(New->name());
    if (!Both && New && New->Alias)
      Both = Object.member(New->Alias);
    if (Both) {
      C.report(Rule::ConflictingKeys, C.keyRange(M),
               "deprecated " + quoted(M.Key) + " and its replacement " +
                   quoted(Both->Key) +
                   " are both given; DeepSpeed refuses that (even when the "
                   "deprecated value is false)")
          .note(C.keyRange(*Both), "the replacement is here");
      return;
    }
    Diagnostic &D = C.report(Rule::DeprecatedKey, C.keyRange(M),
                             quoted(M.Key) + " is deprecated; use " +
                                 quoted(Replacement));
    // A flag that became a section: cpu_offload: true means
    // offload_optimizer: {"device": "cpu"}.
    if (New && New->isSection()) {
      std::optional<bool> On = M.Value.Kind == JsonKind::Bool
                                   ? std::optional<bool>(M.Value.Bool)
                                   : std::nullopt;
      if (!On)
        return;
      TextEdit E =
          *On ? TextEdit{M.KeyBegin, M.Value.End,
                         quoteJson(NewName) + ": {\"device\": \"cpu\"}"}
              : removeMember(C.Text, Object, Index);
      D.fix(C.range(E.Begin, E.End), E.Text);
      return;
    }
    if (!New) { // Deprecated with no replacement key: drop it.
      TextEdit E = removeMember(C.Text, Object, Index);
      D.fix(C.range(E.Begin, E.End), E.Text);
      return;
    }
    TextEdit E = renameKey(M, NewName);
    D.fix(C.range(E.Begin, E.End), E.Text);
  }

  void reportLegacyZero(const JsonMember &M) {
    std::string Stage = M.Value.Bool ? "1" : "0";
    Diagnostic &D = C.report(
        Rule::DeprecatedKey, C.range(M.Value),
        "\"zero_optimization\": " + std::string(M.Value.Bool ? "true" : "false") +
            " is the legacy form; DeepSpeed reads it as stage " + Stage);
    TextEdit E = replaceValue(M, "{\"stage\": " + Stage + "}");
    D.fix(C.range(E.Begin, E.End), E.Text);
  }

  void reportMisnamed(const JsonValue &Object, size_t Index, const KeySpec &K,
                      SectionKind How) {
    const JsonMember &M = Object.Members[Index];
    Severity Sev =
        How == SectionKind::Dict ? Severity::Warning : Severity::Error;
    std::string Consequence =
        How == SectionKind::Model    ? "DeepSpeed rejects it"
        : How == SectionKind::Kwargs ? "DeepSpeed fails when it builds this"
                                     : "DeepSpeed never reads it";
    std::string Message = quoted(M.Key) + " is not read here: " + K.Doc;
    if (StringRef(K.Doc).contains("DeepSpeed"))
      Message = quoted(M.Key) + ": " + K.Doc;
    else
      Message += "; " + Consequence;
    Diagnostic &D = C.report(Rule::MisnamedKey, Sev, C.keyRange(M), Message);
    if (!K.ReplacedBy)
      return;
    StringRef Real = K.ReplacedBy;
    const KeySpec *RealSpec = findKey(Real);
    if (!RealSpec)
      return;
    if (RealSpec->parent() == K.parent()) {
      if (!Object.member(RealSpec->name())) {
        TextEdit E = renameKey(M, RealSpec->name());
        D.fix(C.range(E.Begin, E.End), E.Text);
      }
      return;
    }
    // The setting lives in another section (max_grad_norm ->
    // gradient_clipping): move it there when that section exists and does
    // not set it already.
    moveTo(D, Object, Index, *RealSpec, K.parent());
  }

  /// Adds fix-its that move member Index of Object (the section at table
  /// path Parent) to Dest's section under Dest's name, when that section is
  /// written and the key is not.
  void moveTo(Diagnostic &D, const JsonValue &Object, size_t Index,
              const KeySpec &Dest, StringRef Parent) {
    const JsonValue *Section =
        Dest.parent().empty() ? &C.Root
                              : C.View.find(shownPath(Dest.parent(), Parent));
    if (!Section || Section->Kind != JsonKind::Object ||
        Section->member(Dest.name()))
      return;
    const JsonMember &M = Object.Members[Index];
    TextEdit Remove = removeMember(C.Text, Object, Index);
    TextEdit Add = appendMember(C.Text, *Section, Dest.name(),
                                C.Text.slice(M.Value.Begin, M.Value.End));
    // Moving a member into an object that the removal touches would
    // produce overlapping edits; those are left to the user.
    if (Add.Begin >= Remove.Begin && Add.Begin <= Remove.End)
      return;
    D.fix(C.range(Remove.Begin, Remove.End), Remove.Text);
    D.fix(C.range(Add.Begin, Add.End), Add.Text);
  }

  void reportUnknown(const JsonValue &Object, size_t Index, StringRef Parent,
                     SectionKind How, StringRef Variant) {
    const JsonMember &M = Object.Members[Index];
    SMRange Where = C.keyRange(M);

    // A key of another variant (a Lion parameter given to FusedAdam).
    if (!Variant.empty()) {
      std::string Owners;
      for (const KeySpec *K : keysIn(Parent))
        if (K->name() == M.Key && K->Type != ValueType::Misnomer && K->Variants)
          Owners += (Owners.empty() ? "" : "|") + std::string(K->Variants);
      if (!Owners.empty()) {
        SmallVector<StringRef, 8> Names;
        StringRef(Owners).split(Names, '|');
        SetVector<StringRef> Unique(Names.begin(), Names.end());
        reportUnknownHere(M, How, Variant, {})
            .note(quoted(M.Key) + " is a parameter of " +
                  join(Unique.begin(), Unique.end(), ", "));
        return;
      }
    }

    // A real key of another section.
    SetVector<const KeySpec *> Elsewhere;
    for (const KeySpec *K : keysNamed(M.Key))
      if (K->parent() != Parent && K->Type != ValueType::Misnomer &&
          !K->ReplacedBy && !StringRef(K->Path).contains("[]"))
        Elsewhere.insert(K);
    SetVector<StringRef> Parents;
    for (const KeySpec *K : Elsewhere)
      Parents.insert(K->parent());
    if (!Elsewhere.empty() && Parents.size() <= 2)
      return reportMisplaced(Object, Index, Parent, How, Elsewhere);

    // Where DeepSpeed ignores unknown keys, a near miss of a key the
    // config does not set means the user's setting is silently lost.
    if (How == SectionKind::Dict) {
      SmallVector<StringRef, 2> Meant =
          absentKeysNear(Object, Parent, M.Key, Variant);
      if (!Meant.empty())
        return reportMisspelled(M, Meant);
    }
    reportUnknownHere(M, How, Variant, suggestionsIn(Parent, M.Key, Variant));
    (void)Where;
  }

  /// The keys of Parent one or two edits from Key (one for short keys; a
  /// different case counts as an edit, DeepSpeed's lookups are exact) and
  /// set in Object under none of their spellings; the nearest only.
  SmallVector<StringRef, 2> absentKeysNear(const JsonValue &Object,
                                           StringRef Parent, StringRef Key,
                                           StringRef Variant) {
    unsigned Limit = std::min<unsigned>(2, std::max<size_t>(1, Key.size() / 3));
    unsigned Best = Limit + 1;
    SmallVector<StringRef, 2> Out;
    for (const NearKey &N : keysNear(Parent, Key, Variant, Limit)) {
      const KeySpec &K = *N.Key;
      if (Object.member(K.name()) || (K.Alias && Object.member(K.Alias)))
        continue;
      unsigned D = std::max(1u, N.Distance);
      if (D < Best)
        Out.clear(), Best = D;
      if (D == Best && !llvm::is_contained(Out, N.Spelling))
        Out.push_back(N.Spelling);
    }
    return Out;
  }

  void reportMisspelled(const JsonMember &M, ArrayRef<StringRef> Meant) {
    std::string Where = Shown.empty() ? std::string("at the top level")
                                      : "in " + quoted(Shown);
    Diagnostic &D = C.report(
        Rule::MisspelledKey, C.keyRange(M),
        "unknown key " + quoted(M.Key) + " " + Where +
            ": DeepSpeed ignores it without a word, and " +
            (Meant.size() == 1 ? quoted(Meant[0]) + " is not set"
                               : std::string("none of its near keys is set")) +
            ", so the setting is lost");
    std::string Note = "did you mean ";
    for (size_t I = 0; I < Meant.size(); ++I)
      Note += (I ? " or " : "") + quoted(Meant[I]);
    D.note(C.keyRange(M), Note + "?");
    if (Meant.size() == 1) {
      TextEdit E = renameKey(M, Meant[0]);
      D.fix(C.range(E.Begin, E.End), E.Text);
    }
  }

  Diagnostic &reportUnknownHere(const JsonMember &M, SectionKind How,
                                StringRef Variant,
                                ArrayRef<StringRef> Suggestions) {
    std::string Message;
    Rule R = Rule::UnknownKey;
    if (How == SectionKind::Model) {
      Message = "unknown key " + quoted(M.Key) + " in " + quoted(Shown) +
                ": DeepSpeed rejects it (pydantic: extra inputs are not "
                "permitted)";
    } else if (How == SectionKind::Kwargs && Variant != "Muon") {
      Message = quoted(M.Key) + " is not a parameter of " + Variant.str() +
                ": DeepSpeed's call fails with TypeError (unexpected keyword "
                "argument) when it builds the " +
                (StringRef(Shown).startswith("scheduler") ? "scheduler"
                                                          : "optimizer");
    } else {
      R = Rule::IgnoredKey;
      Message = "unknown key " + quoted(M.Key) +
                (Shown.empty() ? std::string(" at the top level")
                               : " in " + quoted(Shown)) +
                ": DeepSpeed ignores it without a word, so this setting has "
                "no effect";
    }
    Diagnostic &D = C.report(R, C.keyRange(M), Message);
    if (!Suggestions.empty()) {
      std::string Note = "did you mean ";
      for (size_t I = 0; I < Suggestions.size(); ++I)
        Note += (I ? " or " : "") + quoted(Suggestions[I]);
      D.note(C.keyRange(M), Note + "?");
    }
    return D;
  }

  void reportMisplaced(const JsonValue &Object, size_t Index, StringRef Parent,
                       SectionKind How,
                       const SetVector<const KeySpec *> &Elsewhere) {
    const JsonMember &M = Object.Members[Index];
    // A key one level too high belongs in the subsection below it (a
    // schedule's total_curriculum_step next to schedule_type).
    const KeySpec *Below = nullptr;
    for (const KeySpec *K : Elsewhere)
      if (!Below && within(K->parent(), Parent))
        Below = K;
    const KeySpec &Dest = Below ? *Below : *Elsewhere.front();
    std::string Where =
        Dest.parent().empty()
            ? std::string("at the top level of the config")
            : "in " + quoted(shownPath(Dest.parent(), Parent));
    std::string Consequence =
        How == SectionKind::Model    ? "DeepSpeed rejects it here"
        : How == SectionKind::Kwargs ? "DeepSpeed fails with TypeError here"
                                     : "DeepSpeed ignores it here";
    Severity Sev =
        How == SectionKind::Dict ? Severity::Warning : Severity::Error;
    Diagnostic &D = C.report(Rule::MisplacedKey, Sev, C.keyRange(M),
                             quoted(M.Key) + " belongs " + Where +
                                 ", not in " +
                                 quoted(sectionDisplay(Shown)) + "; " +
                                 Consequence);
    // fp16's loss-scaling keys under bf16: bf16 never scales the loss, so
    // the fix is to drop them, not to move them.
    if (Shown == "bf16" && Dest.parent() == "fp16") {
      D.note(C.keyRange(M), "bf16 training does not scale the loss; --fix "
                            "removes the key");
      TextEdit E = removeMember(C.Text, Object, Index);
      D.fix(C.range(E.Begin, E.End), E.Text);
      return;
    }
    moveTo(D, Object, Index, Dest, Parent);
  }

  void checkRequired(const JsonValue &Object, StringRef Parent,
                     StringRef Variant) {
    for (const KeySpec *K : keysIn(Parent)) {
      if (!K->Required || !K->allows(Variant) || Object.member(K->name()))
        continue;
      std::string Who = Variant.empty() ? quoted(Shown) : Variant.str();
      C.report(Rule::MissingKey, C.range(Object.Begin, Object.Begin + 1),
               Who + " needs " + quoted(K->name()) + ": " + K->Doc);
    }
  }

  /// "auto" left where the target does not replace it.
  void checkAuto(const JsonMember &M, const KeySpec &K, SectionKind How,
                 const std::string &Path) {
    bool ByTrainer = K.AutoBy & AutoTrainer, ByAccelerate =
                                                 K.AutoBy & AutoAccelerate;
    bool Filled = (C.Target == LintTarget::HfTrainer &&
                   (ByTrainer || ByAccelerate)) ||
                  (C.Target == LintTarget::Accelerate && ByAccelerate);
    // The integrations look keys up by the stage3_ spelling only.
    if (Filled && K.Alias && M.Key != K.Alias) {
      C.report(Rule::AutoValue, C.range(M.Value),
               targetName(C.Target) + " fills \"auto\" here only under the "
                                      "name `" + K.Alias +
                   "`; written as `" + M.Key +
                   "` it stays \"auto\" and accelerate stops with ValueError")
          .fix(C.keyRange(M), quoteJson(K.Alias));
      return;
    }
    if (Filled) {
      if (StringRef(K.Path) == "scheduler.params.warmup_num_steps")
        C.report(Rule::AutoFill, C.range(M.Value),
                 targetName(C.Target) +
                     " fills this from the warmup you pass; without warmup "
                     "it becomes 0, which DeepSpeed >= 0.19.3 rejects "
                     "(warmup_num_steps must be a positive integer)");
      return;
    }
    std::string Default = K.Default ? K.Default : "none";
    if (C.Target == LintTarget::DeepSpeed) {
      std::string Consequence;
      if (How == SectionKind::Model)
        Consequence = "it drops the key and silently uses the default (" +
                      Default + ")";
      else if (K.OnAuto)
        Consequence = K.OnAuto;
      else if (K.Type == ValueType::Bool)
        Consequence = "the string is truthy, so this is switched on";
      else if (K.Type == ValueType::Int || K.Type == ValueType::Float)
        Consequence = "the string reaches code that expects a number and "
                      "fails with TypeError";
      else
        Consequence = "the string \"auto\" is used as the value";
      Diagnostic &D =
          C.report(Rule::AutoValue, C.range(M.Value),
                   "DeepSpeed does not replace \"auto\" at " + quoted(Path) +
                       ": " + Consequence);
      if (ByTrainer || ByAccelerate)
        D.note(std::string(ByTrainer ? "the HF Trainer" : "") +
               (ByTrainer && ByAccelerate ? " and " : "") +
               (ByAccelerate ? "accelerate" : "") +
               " would fill it; lint with --target " +
               (ByTrainer ? "hf-trainer" : "accelerate") +
               " if the config goes through " +
               (ByTrainer ? "the Trainer" : "accelerate"));
      return;
    }
    Diagnostic &D = C.report(
        Rule::AutoValue, C.range(M.Value),
        targetName(C.Target) + " does not fill \"auto\" at " + quoted(Path) +
            ": accelerate stops with ValueError (`" + Path +
            "` not found in kwargs); write a value (DeepSpeed's default is " +
            Default + ")");
    if (C.Target == LintTarget::Accelerate && ByTrainer)
      D.note("only the HF Trainer fills this one");
  }

  /// Checks V against K; false when the value is unusable (so nothing below
  /// it is checked).
  bool checkValue(const JsonValue &V, const KeySpec &K, SectionKind How,
                  StringRef Path, SMRange KeyRange) {
    Coercion R = coerce(V, K, How);
    SMRange ValueRange = C.range(V);
    switch (R.Problem) {
    case CoercionProblem::None:
      break;
    case CoercionProblem::WrongType: {
      std::string Message = quoted(Path) + " must be " + describeType(K) +
                            (K.Nullable ? " or null" : "") + ", not " +
                            describe(V.Kind).str();
      if (K.StrictNumber && V.Kind == JsonKind::Bool)
        Message += " (DeepSpeed's validator refuses booleans here)";
      Diagnostic &D = C.report(Rule::TypeMismatch, ValueRange, Message);
      if (K.ExactType && K.Type == ValueType::Bool)
        D.note("DeepSpeed checks that this is a real boolean and fails "
               "otherwise");
      else if (How != SectionKind::Model && K.OnAuto &&
               V.Kind == JsonKind::String)
        D.note(Twine("DeepSpeed does not convert values here; a string "
                     "means: ") +
               K.OnAuto);
      else if (How != SectionKind::Model && K.Type == ValueType::Bool &&
               V.Kind == JsonKind::String)
        D.note("DeepSpeed does not convert values here: any non-empty "
               "string, \"false\" included, counts as true");
      else if (K.ExactType && V.Kind == JsonKind::Float &&
               V.Float == std::trunc(V.Float) && std::fabs(V.Float) < 1e15)
        D.note("DeepSpeed checks isinstance(value, int); in JSON " +
               spelling(V, C.Text) + " is a float")
            .fix(ValueRange, std::to_string(int64_t(V.Float)));
      else if (How == SectionKind::Model && V.Kind == JsonKind::String &&
               K.Type == ValueType::Int)
        D.note("pydantic reads plain digits in a string, but not an "
               "exponent or a fraction");
      return false;
    }
    case CoercionProblem::FractionalInt:
      // No fix-it: which integer was meant is the author's call.
      C.report(Rule::NotAnInteger, ValueRange,
               quoted(Path) + " must be an integer; " +
                   (How == SectionKind::Model || K.ExactType
                        ? "DeepSpeed rejects " + spelling(V, C.Text) +
                              " (a number with a fractional part)"
                        : "DeepSpeed passes " + spelling(V, C.Text) +
                              " on unconverted to code that needs a whole "
                              "number"));
      return false;
    case CoercionProblem::IntegralFloat:
      C.report(Rule::FloatForInt, ValueRange,
               quoted(Path) + " is the float " + spelling(V, C.Text) +
                   "; DeepSpeed does not convert values " +
                   (parentOf(Path).empty()
                        ? std::string("at the top level")
                        : "in " + quoted(parentOf(Path))) +
                   " and passes a float where an integer is expected")
          .fix(ValueRange, std::to_string(R.Value->I));
      break;
    case CoercionProblem::NumberAsBool:
      C.report(Rule::NumberForBool, ValueRange,
               quoted(Path) + " is the number " + spelling(V, C.Text) +
                   " where a boolean is expected; it works only by Python "
                   "truthiness")
          .fix(ValueRange, R.Value->B ? "true" : "false");
      break;
    case CoercionProblem::NotFinite:
      C.report(Rule::OutOfRange, ValueRange,
               quoted(Path) + " must be a finite number, not " +
                   spelling(V, C.Text));
      return false;
    }
    if (!R.Value)
      return true;
    const Scalar &S = *R.Value;
    if (!isAllowedChoice(K, S)) {
      Diagnostic &D = C.report(Rule::InvalidValue, ValueRange,
                               quoted(Path) + " must be " + choiceList(K) +
                                   ", not " + spelling(V, C.Text));
      if (S.K == Scalar::String)
        for (StringRef Choice : K.choices())
          if (Choice.equals_insensitive(S.S))
            D.note("the value is case-sensitive");
    }
    if (S.K == Scalar::Int || S.K == Scalar::Float) {
      double N = S.number();
      bool Low = K.MinExclusive ? N <= K.Min : N < K.Min;
      if (Low || N > K.Max) {
        std::string Bound;
        if (K.Min > -NoBound && K.Max < NoBound)
          Bound = "between " + formatNumber(K.Min) + " and " +
                  formatNumber(K.Max);
        else if (K.Min > -NoBound)
          Bound = (K.MinExclusive ? "greater than " : "at least ") +
                  formatNumber(K.Min);
        else
          Bound = "at most " + formatNumber(K.Max);
        C.report(Rule::OutOfRange, ValueRange,
                 quoted(Path) + " must be " + Bound + ", not " +
                     spelling(V, C.Text));
      }
    }
    if (K.Type == ValueType::Array && K.Element != ValueType::Any) {
      KeySpec Element;
      Element.Path = K.Path;
      Element.Type = K.Element;
      Element.ExactType = K.ExactType;
      std::string ElementPath = (Path + "[]").str();
      for (const JsonValue &E : V.Elements)
        checkValue(E, Element, How, ElementPath, C.range(E));
    }
    (void)KeyRange;
    return true;
  }
};

} // namespace

void checkSchema(LintContext &C) { SchemaChecker(C).run(); }

static bool hasAutoIn(const JsonValue &V, StringRef Parent,
                      StringRef Variant) {
  for (const JsonMember &M : V.Members) {
    const KeySpec *K = lookupIn(Parent, M.Key, Variant);
    if (M.Value.isString("auto") && !(K && autoIsValue(*K)))
      return true;
    // Recurse by table path: below a name the user chose it has `*` where
    // the config has the name.
    if (M.Value.Kind == JsonKind::Object &&
        hasAutoIn(M.Value, K ? std::string(K->Path) : joinPath(Parent, M.Key),
                  ""))
      return true;
  }
  return false;
}

bool hasAutoPlaceholder(const JsonValue &Root) {
  return hasAutoIn(Root, "", "");
}

} // namespace dsc
