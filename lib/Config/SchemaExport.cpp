//===- SchemaExport.cpp ---------------------------------------------------===//

#include "dsc/Config/SchemaExport.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"

#include <optional>

using namespace llvm;

namespace dsc {

std::vector<const KeySpec *> findKeysForQuery(StringRef Query) {
  std::vector<const KeySpec *> Out;
  if (const KeySpec *K = findKey(Query)) {
    for (const KeySpec &E : schemaKeys())
      if (StringRef(E.Path) == K->Path)
        Out.push_back(&E);
    return Out;
  }
  if (Query.contains('.'))
    return Out;
  for (const KeySpec *K : keysNamed(Query))
    Out.push_back(K);
  return Out;
}

static StringRef sectionRule(SectionKind Kind) {
  switch (Kind) {
  case SectionKind::Model:
    return "a pydantic model: DeepSpeed rejects unknown keys and silently "
           "drops \"auto\" (the default applies); values are converted in "
           "pydantic's lax mode";
  case SectionKind::Dict:
    return "a plain dict: DeepSpeed ignores unknown keys and uses values "
           "exactly as written";
  case SectionKind::Kwargs:
    return "constructor arguments: an unknown key is a TypeError when "
           "DeepSpeed builds the object; values are used as written";
  case SectionKind::None:
    break;
  }
  return "";
}

static std::string typeText(const KeySpec &K) {
  std::string T = typeName(K.Type).str();
  if (K.Type == ValueType::Array && K.Element != ValueType::Any)
    T = "array of " + typeName(K.Element).str();
  if (K.Nullable)
    T += " or null";
  return T;
}

static std::string bound(double V) {
  if (V == double(int64_t(V)))
    return std::to_string(int64_t(V));
  SmallString<16> S;
  raw_svector_ostream(S) << V;
  return S.str().str();
}

static std::string rangeText(const KeySpec &K) {
  std::string R;
  if (K.OneOf) {
    R = "one of " + join(K.choices(), ", ");
    if (K.CaseInsensitive)
      R += " (any case)";
  }
  std::string Num;
  if (K.Min > -NoBound && K.Max < NoBound)
    Num = "from " + bound(K.Min) + " to " + bound(K.Max);
  else if (K.Min > -NoBound)
    Num = (K.MinExclusive ? "greater than " : "at least ") + bound(K.Min);
  else if (K.Max < NoBound)
    Num = "at most " + bound(K.Max);
  if (!Num.empty())
    R += (R.empty() ? "" : "; ") + Num;
  return R;
}

static std::string autoText(const KeySpec &K) {
  std::string Fillers;
  if ((K.AutoBy & AutoTrainer) && (K.AutoBy & AutoAccelerate))
    Fillers = "the HF Trainer and accelerate fill it";
  else if (K.AutoBy & AutoTrainer)
    Fillers = "the HF Trainer fills it (accelerate does not)";
  else if (K.AutoBy & AutoAccelerate)
    Fillers = "accelerate fills it";
  else
    Fillers = "no integration fills it";
  return Fillers;
}

void explainKey(raw_ostream &OS, ArrayRef<const KeySpec *> Keys) {
  for (const KeySpec *K : Keys) {
    OS << K->Path;
    if (K->Variants)
      OS << "  [for " << join(split(K->Variants, '|'), ", ") << "]";
    OS << "\n  " << K->Doc << "\n";
    if (K->Type == ValueType::Misnomer) {
      OS << "  not read by DeepSpeed";
      if (K->ReplacedBy)
        OS << "; the key that is read: " << K->ReplacedBy;
      OS << "\n\n";
      continue;
    }
    OS << "  type:      " << typeText(*K) << "\n";
    if (std::string R = rangeText(*K); !R.empty())
      OS << "  allowed:   " << R << "\n";
    OS << "  default:   " << (K->Default ? K->Default : "none") << "\n";
    if (K->Alias)
      OS << "  also:      " << K->Alias << " (the same setting; giving both "
         << "is an error)\n";
    if (K->ReplacedBy)
      OS << "  deprecated: use " << K->ReplacedBy << "\n";
    if (K->Required)
      OS << "  required when its section is present\n";
    if (K->Unused)
      OS << "  unused:    " << K->Unused << "\n";
    if (K->isSection()) {
      OS << "  section:   " << sectionRule(K->Section) << "\n";
      std::vector<std::string> Names;
      for (const KeySpec *C : keysIn(K->Path))
        if (C->Type != ValueType::Misnomer &&
            !llvm::is_contained(Names, C->name().str()))
          Names.push_back(C->isAnyName() ? "* (any name)" : C->name().str());
      if (!Names.empty())
        OS << "  keys:      " << join(Names, ", ") << "\n";
    } else {
      SmallString<64> Parent(K->parent());
      SectionKind How = Parent.empty() ? SectionKind::Dict
                                       : findKey(Parent)->Section;
      OS << "  \"auto\":    " << autoText(*K) << "; DeepSpeed itself ";
      if (K->OnAuto)
        OS << "fails: " << K->OnAuto;
      else if (How == SectionKind::Model)
        OS << "drops it and uses the default";
      else if (How == SectionKind::Kwargs)
        OS << "passes the string to the constructor";
      else
        OS << "uses the string as the value";
      OS << "\n";
    }
    OS << "\n";
  }
}

static json::Value parseDefault(const char *Text) {
  if (!Text)
    return nullptr;
  Expected<json::Value> V = json::parse(Text);
  if (!V) {
    consumeError(V.takeError());
    return nullptr;
  }
  return std::move(*V);
}

static json::Array jsonTypes(const KeySpec &K, ValueType T) {
  json::Array Types;
  switch (T) {
  case ValueType::Bool:
    Types.push_back("boolean");
    break;
  case ValueType::Int:
    Types.push_back("integer");
    break;
  case ValueType::Float:
    Types.push_back("number");
    break;
  case ValueType::String:
    Types.push_back("string");
    break;
  case ValueType::Object:
  case ValueType::Dict:
    Types.push_back("object");
    break;
  case ValueType::Array:
    Types.push_back("array");
    break;
  default:
    break;
  }
  if (K.Nullable && !Types.empty())
    Types.push_back("null");
  return Types;
}

static json::Object schemaFor(const KeySpec &K);

static json::Object sectionSchema(StringRef Path, SectionKind Kind) {
  json::Object Properties;
  std::optional<json::Object> AnyName;
  bool Variants = false;
  for (const KeySpec *C : keysIn(Path)) {
    if (C->Type == ValueType::Misnomer || StringRef(C->Path).endswith("[]"))
      continue;
    if (C->isAnyName()) {
      AnyName = schemaFor(*C);
      continue;
    }
    Variants |= C->Variants != nullptr;
    // Keys with variants merge into one property (the first entry wins the
    // description); editors cannot know the optimizer class.
    if (Properties.get(C->name()))
      continue;
    json::Object S = schemaFor(*C);
    if (C->Alias)
      Properties[C->Alias] = json::Object(S);
    Properties[C->name()] = std::move(S);
  }
  json::Object O{{"type", "object"}, {"properties", std::move(Properties)}};
  // Children under names of the user's choosing; constructor arguments of
  // classes dsc does not model (torch.optim.SGD) may be anything.
  if (AnyName)
    O["additionalProperties"] = std::move(*AnyName);
  else if (!(Kind == SectionKind::Kwargs && Variants))
    O["additionalProperties"] = false;
  return O;
}

static json::Object schemaFor(const KeySpec &K) {
  json::Object S;
  if (K.isSection()) {
    S = sectionSchema(K.Path, K.Section);
    if (K.Nullable)
      S["type"] = json::Array{"object", "null"};
  } else {
    json::Array Types = jsonTypes(K, K.Type);
    if (Types.size() == 1)
      S["type"] = std::move(Types[0]);
    else if (!Types.empty())
      S["type"] = std::move(Types);
    if (K.Type == ValueType::Array && K.Element != ValueType::Any) {
      json::Array E = jsonTypes(K, K.Element);
      if (!E.empty())
        S["items"] = json::Object{{"type", std::move(E[0])}};
    }
    if (K.OneOf && !K.CaseInsensitive) {
      json::Array Enum;
      for (StringRef C : K.choices()) {
        int64_t N;
        if (K.Type == ValueType::Int && !C.getAsInteger(10, N))
          Enum.push_back(N);
        else
          Enum.push_back(C);
      }
      if (K.Nullable)
        Enum.push_back(nullptr);
      S["enum"] = std::move(Enum);
    }
    if (K.Min > -NoBound)
      S[K.MinExclusive ? "exclusiveMinimum" : "minimum"] = K.Min;
    if (K.Max < NoBound)
      S["maximum"] = K.Max;
  }
  S["description"] = K.Doc;
  if (K.Default)
    S["default"] = parseDefault(K.Default);
  if (K.ReplacedBy)
    S["deprecationMessage"] = ("Deprecated: use " + Twine(K.ReplacedBy)).str();
  if (K.AutoBy != AutoNone)
    return json::Object{
        {"anyOf", json::Array{std::move(S), json::Object{{"const", "auto"}}}},
        {"description", K.Doc}};
  return S;
}

json::Value buildJsonSchema() {
  json::Object Root = sectionSchema("", SectionKind::Dict);
  Root["$schema"] = "http://json-schema.org/draft-07/schema#";
  Root["title"] = "DeepSpeed configuration (ds_config.json)";
  Root["description"] =
      "Generated by dsc from its schema table (DeepSpeed 0.19.6).";
  // DeepSpeed ignores unknown top-level keys; flag them anyway: they are
  // almost always typos.
  return Root;
}

static std::string cell(StringRef S) {
  std::string Out;
  for (char C : S)
    Out += C == '|' ? std::string("\\|") : std::string(1, C);
  return Out;
}

/// "**refused**: why", or, where the key only inherits its section's
/// treatment, the bare word (the section's row says why).
static std::string planText(const KeySpec &K) {
  KeyTreatment T = treatmentOf(K);
  std::string Word = "**" + treatmentName(T.How).str() + "**";
  if (T.From != &K || T.Effect.empty())
    return Word;
  return Word + ": " + T.Effect.str();
}

void printKeyReference(raw_ostream &OS) {
  OS << "# DeepSpeed configuration keys\n\n"
     << "Generated by `dsc schema --format markdown` from dsc's schema table "
        "(lib/Config/Schema/); do not edit by hand.\n"
     << "It describes DeepSpeed 0.19.6 as its code behaves. \"auto\" says "
        "which integration replaces an \"auto\" there: T = the HF Trainer, "
        "A = accelerate. \"plan\" says what `dsc plan` does with the key: "
        "**planned** (a planner pass reads it: which and what for), "
        "**refused** (a value other than the default is an error naming "
        "the key: what DeepSpeed would do that the plan does not), **no "
        "effect** on what runs on the GPUs (what it does instead), or "
        "**model code** (it acts only through training code using the "
        "feature: dsc plan warns that the plan does not contain it).\n";
  std::vector<const KeySpec *> Sections;
  for (const KeySpec &K : schemaKeys())
    if (K.isSection())
      Sections.push_back(&K);
  auto Table = [&](StringRef Parent) {
    OS << "\n| key | type | default | allowed | auto | meaning | plan |\n"
       << "| --- | --- | --- | --- | --- | --- | --- |\n";
    for (const KeySpec *K : keysIn(Parent)) {
      std::string Name = "`" + K->name().str() + "`";
      if (K->isAnyName())
        Name += " (any name)";
      if (K->Alias)
        Name += " (`" + std::string(K->Alias) + "`)";
      if (K->Variants)
        Name += " [" + join(split(K->Variants, '|'), ", ") + "]";
      std::string Meaning = K->Doc;
      if (K->Type == ValueType::Misnomer)
        Meaning = "**not read** — " + Meaning;
      else if (K->ReplacedBy)
        Meaning = "**deprecated**, use `" + std::string(K->ReplacedBy) +
                  "` — " + Meaning;
      if (K->Unused)
        Meaning += " (unused: " + std::string(K->Unused) + ")";
      std::string Auto = std::string(K->AutoBy & AutoTrainer ? "T" : "") +
                         (K->AutoBy & AutoAccelerate ? "A" : "");
      OS << "| " << cell(Name) << " | "
         << (K->Type == ValueType::Misnomer ? "" : cell(typeText(*K))) << " | "
         << cell(K->Default ? K->Default : "") << " | " << cell(rangeText(*K))
         << " | " << Auto << " | " << cell(Meaning) << " | "
         << cell(planText(*K)) << " |\n";
    }
  };
  OS << "\n## Top level\n\nThe top level is a plain dict: DeepSpeed ignores "
        "unknown keys there.\n";
  Table("");
  for (const KeySpec *S : Sections) {
    OS << "\n## " << S->Path << "\n\n" << S->Doc << ". This section is "
       << sectionRule(S->Section) << ".\n";
    Table(S->Path);
  }
}

void printRuleReference(raw_ostream &OS, ArrayRef<RuleInfo> Rules) {
  OS << "# dsc lint diagnostics\n\n"
     << "Generated by `dsc lint --list-rules` from "
        "include/dsc/Config/LintRules.def; do not edit by hand. The code "
        "in brackets after each message is stable: match on it in scripts, "
        "silence it with `-Wno-CODE`.\n\n"
     << "| code | severity | what it finds |\n| --- | --- | --- |\n";
  for (const RuleInfo &R : Rules)
    OS << "| <a id=\"" << R.Code << "\"></a>`" << R.Code << "` | "
       << severityName(R.DefaultSeverity) << " | " << cell(R.Summary)
       << " |\n";
}

} // namespace dsc
