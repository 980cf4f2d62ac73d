//===- DiagnosticEmitter.cpp ----------------------------------------------===//

#include "dsc/Support/DiagnosticEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace dsc {

static SourceMgr::DiagKind diagKind(Severity S) {
  switch (S) {
  case Severity::Note:
    return SourceMgr::DK_Note;
  case Severity::Warning:
    return SourceMgr::DK_Warning;
  case Severity::Error:
    return SourceMgr::DK_Error;
  }
  llvm_unreachable("unknown severity");
}

static void printUnlocated(raw_ostream &OS, StringRef Path, Severity Sev,
                           const Twine &Message, bool Colors) {
  ColorMode Mode = Colors ? ColorMode::Enable : ColorMode::Disable;
  // A note without a location belongs to the diagnostic above it.
  if (Sev != Severity::Note)
    WithColor(OS, HighlightColor::Address, Mode).get() << Path << ": ";
  HighlightColor C = Sev == Severity::Error     ? HighlightColor::Error
                     : Sev == Severity::Warning ? HighlightColor::Warning
                                                : HighlightColor::Note;
  WithColor(OS, C, Mode).get() << severityName(Sev) << ": ";
  WithColor(OS, HighlightColor::Remark, Mode).get() << Message << "\n";
}

static void printOne(const DiagnosticEngine &Engine, raw_ostream &OS,
                     Severity Sev, SMRange Range, unsigned BufferID,
                     const Twine &Message, ArrayRef<FixIt> FixIts,
                     bool Colors) {
  const SourceMgr &SM = Engine.sourceMgr();
  if (!Range.isValid()) {
    printUnlocated(OS, Engine.path(BufferID), Sev, Message, Colors);
    return;
  }
  // Show a fix-it under the caret only when it replaces text on the
  // diagnostic's own line; moves and deletions are described by the message
  // and applied by --fix.
  std::vector<SMFixIt> Hints;
  unsigned Line = SM.getLineAndColumn(Range.Start).first;
  for (const FixIt &F : FixIts)
    if (F.Range.isValid() && !F.Replacement.empty() &&
        F.Replacement.find('\n') == std::string::npos &&
        SM.getLineAndColumn(F.Range.Start).first == Line &&
        SM.getLineAndColumn(F.Range.End).first == Line)
      Hints.emplace_back(F.Range, F.Replacement);
  SMRange Ranges[] = {Range};
  SM.PrintMessage(OS, Range.Start, diagKind(Sev), Message,
                  Range.End.getPointer() > Range.Start.getPointer()
                      ? ArrayRef<SMRange>(Ranges)
                      : ArrayRef<SMRange>(),
                  Hints, Colors);
}

namespace {
/// Forwards to another stream and claims to support colours: SourceMgr
/// colours only streams that say so, and a pipe does not, so
/// --color=always needs this.
class ColorStream : public raw_ostream {
public:
  explicit ColorStream(raw_ostream &Out) : Out(Out) {
    SetUnbuffered();
    enable_colors(true);
  }
  bool has_colors() const override { return true; }

private:
  void write_impl(const char *Ptr, size_t Size) override {
    Out.write(Ptr, Size);
  }
  uint64_t current_pos() const override { return Out.tell(); }
  raw_ostream &Out;
};
} // namespace

void emitText(const DiagnosticEngine &Engine, raw_ostream &Out, bool Colors) {
  ColorStream Colored(Out);
  raw_ostream &OS = Colors ? static_cast<raw_ostream &>(Colored) : Out;
  if (!Colors)
    Out.enable_colors(false);
  for (const Diagnostic &D : Engine.diagnostics()) {
    printOne(Engine, OS, D.Sev, D.Range, D.BufferID,
             D.Message + " [" + D.Code + "]", D.FixIts, Colors);
    for (const DiagNote &N : D.Notes)
      printOne(Engine, OS, Severity::Note, N.Range, D.BufferID, N.Message, {},
               Colors);
  }
}

/// R's start and end as line/column pairs, under the given key names.
static json::Object region(const SourceMgr &SM, SMRange R,
                           const char *const (&Keys)[4]) {
  LineColumn Begin = lineColumn(SM, R.Start);
  LineColumn End = lineColumn(SM, R.End.isValid() ? R.End : R.Start);
  return json::Object{{Keys[0], Begin.Line},
                      {Keys[1], Begin.Column},
                      {Keys[2], End.Line},
                      {Keys[3], End.Column}};
}

static json::Object position(const SourceMgr &SM, SMRange R) {
  return region(SM, R, {"line", "column", "end_line", "end_column"});
}

void emitJSON(const DiagnosticEngine &Engine, raw_ostream &OS) {
  const SourceMgr &SM = Engine.sourceMgr();
  json::Array Files;
  for (unsigned ID : Engine.files()) {
    json::Array Diags;
    for (const Diagnostic &D : Engine.diagnostics()) {
      if (D.BufferID != ID)
        continue;
      json::Object O = position(SM, D.Range);
      O["severity"] = severityName(D.Sev);
      O["code"] = D.Code;
      O["message"] = D.Message;
      json::Array Notes;
      for (const DiagNote &N : D.Notes) {
        json::Object NO = position(SM, N.Range);
        NO["message"] = N.Message;
        Notes.push_back(std::move(NO));
      }
      O["notes"] = std::move(Notes);
      json::Array Fixes;
      for (const FixIt &F : D.FixIts) {
        json::Object FO = position(SM, F.Range);
        FO["replacement"] = F.Replacement;
        Fixes.push_back(std::move(FO));
      }
      O["fixits"] = std::move(Fixes);
      Diags.push_back(std::move(O));
    }
    Files.push_back(json::Object{{"path", Engine.path(ID)},
                                 {"errors", Engine.count(Severity::Error, ID)},
                                 {"warnings",
                                  Engine.count(Severity::Warning, ID)},
                                 {"diagnostics", std::move(Diags)}});
  }
  json::Object Summary{{"files", static_cast<int64_t>(Engine.files().size())},
                       {"errors", Engine.count(Severity::Error)},
                       {"warnings", Engine.count(Severity::Warning)},
                       {"notes", Engine.count(Severity::Note)}};
  json::Value Doc =
      json::Object{{"files", std::move(Files)}, {"summary", std::move(Summary)}};
  OS << formatv("{0:2}", Doc) << "\n";
}

/// SARIF artifact locations are URIs: keep the path as given, percent-encode
/// what a URI cannot hold.
static std::string toURI(StringRef Path) {
  std::string Out;
  for (unsigned char C : Path) {
    if (isAlnum(C) || StringRef("/-._~:").contains(C))
      Out += C;
    else
      Out += "%" + utohexstr(C, /*LowerCase=*/false, /*Width=*/2);
  }
  return Out;
}

static json::Object sarifRegion(const SourceMgr &SM, SMRange R) {
  return region(SM, R, {"startLine", "startColumn", "endLine", "endColumn"});
}

static StringRef sarifLevel(Severity S) {
  return S == Severity::Note ? "note" : severityName(S);
}

void emitSARIF(const DiagnosticEngine &Engine, ArrayRef<RuleInfo> Rules,
               StringRef ToolVersion, raw_ostream &OS) {
  const SourceMgr &SM = Engine.sourceMgr();
  json::Array RuleList;
  for (const RuleInfo &R : Rules)
    RuleList.push_back(json::Object{
        {"id", R.Code},
        {"shortDescription", json::Object{{"text", R.Summary}}},
        {"defaultConfiguration",
         json::Object{{"level", sarifLevel(R.DefaultSeverity)}}}});

  auto RuleIndex = [&](StringRef Code) -> int64_t {
    for (size_t I = 0; I < Rules.size(); ++I)
      if (Rules[I].Code == Code)
        return static_cast<int64_t>(I);
    return -1;
  };

  json::Array Results;
  for (const Diagnostic &D : Engine.diagnostics()) {
    std::string URI = toURI(Engine.path(D.BufferID));
    json::Object Physical{
        {"artifactLocation", json::Object{{"uri", URI}}}};
    if (D.Range.isValid())
      Physical["region"] = sarifRegion(SM, D.Range);
    json::Object Result{
        {"ruleId", D.Code},
        {"level", sarifLevel(D.Sev)},
        {"message", json::Object{{"text", D.Message}}},
        {"locations",
         json::Array{json::Object{{"physicalLocation", std::move(Physical)}}}}};
    if (int64_t Index = RuleIndex(D.Code); Index >= 0)
      Result["ruleIndex"] = Index;
    json::Array Related;
    for (const DiagNote &N : D.Notes) {
      json::Object Loc{{"message", json::Object{{"text", N.Message}}}};
      if (N.Range.isValid())
        Loc["physicalLocation"] =
            json::Object{{"artifactLocation", json::Object{{"uri", URI}}},
                         {"region", sarifRegion(SM, N.Range)}};
      Related.push_back(std::move(Loc));
    }
    if (!Related.empty())
      Result["relatedLocations"] = std::move(Related);
    json::Array Replacements;
    for (const FixIt &F : D.FixIts)
      Replacements.push_back(json::Object{
          {"deletedRegion", sarifRegion(SM, F.Range)},
          {"insertedContent", json::Object{{"text", F.Replacement}}}});
    if (!Replacements.empty())
      Result["fixes"] = json::Array{json::Object{
          {"description", json::Object{{"text", "dsc lint --fix"}}},
          {"artifactChanges",
           json::Array{json::Object{
               {"artifactLocation", json::Object{{"uri", URI}}},
               {"replacements", std::move(Replacements)}}}}}};
    Results.push_back(std::move(Result));
  }

  json::Value Log = json::Object{
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs",
       json::Array{json::Object{
           {"tool",
            json::Object{
                {"driver",
                 json::Object{{"name", "dsc"},
                              {"semanticVersion", ToolVersion},
                              {"rules", std::move(RuleList)}}}}},
           {"columnKind", "unicodeCodePoints"},
           {"results", std::move(Results)}}}}};
  OS << formatv("{0:2}", Log) << "\n";
}

} // namespace dsc
