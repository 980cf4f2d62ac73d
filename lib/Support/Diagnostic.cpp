//===- Diagnostic.cpp -----------------------------------------------------===//

#include "dsc/Support/Diagnostic.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

using namespace llvm;

namespace dsc {

StringRef severityName(Severity S) {
  switch (S) {
  case Severity::Note:
    return "note";
  case Severity::Warning:
    return "warning";
  case Severity::Error:
    return "error";
  }
  llvm_unreachable("unknown severity");
}

Diagnostic &Diagnostic::note(SMRange R, const Twine &Msg) {
  Notes.push_back({R, Msg.str()});
  return *this;
}

Diagnostic &Diagnostic::fix(SMRange R, StringRef Replacement) {
  FixIts.push_back({R, Replacement.str()});
  return *this;
}

unsigned DiagnosticEngine::addFile(std::unique_ptr<MemoryBuffer> Buffer) {
  unsigned ID = SM.AddNewSourceBuffer(std::move(Buffer), SMLoc());
  Files.push_back(ID);
  return ID;
}

Diagnostic &DiagnosticEngine::report(Severity Sev, StringRef Code,
                                     unsigned BufferID, SMRange Range,
                                     const Twine &Message) {
  Diagnostic D;
  D.Sev = Sev;
  D.Code = Code.str();
  D.Message = Message.str();
  D.BufferID = BufferID;
  D.Range = Range;
  Diags.push_back(std::move(D));
  return Diags.back();
}

unsigned DiagnosticEngine::count(Severity Sev) const {
  unsigned N = 0;
  for (const Diagnostic &D : Diags)
    N += D.Sev == Sev;
  return N;
}

unsigned DiagnosticEngine::count(Severity Sev, unsigned BufferID) const {
  unsigned N = 0;
  for (const Diagnostic &D : Diags)
    N += D.Sev == Sev && D.BufferID == BufferID;
  return N;
}

void DiagnosticEngine::promoteWarningsToErrors() {
  for (Diagnostic &D : Diags)
    if (D.Sev == Severity::Warning)
      D.Sev = Severity::Error;
}

void DiagnosticEngine::discard(StringRef Code) {
  llvm::erase_if(Diags, [&](const Diagnostic &D) { return D.Code == Code; });
}

StringRef DiagnosticEngine::path(unsigned BufferID) const {
  return SM.getMemoryBuffer(BufferID)->getBufferIdentifier();
}

/// The 1-based column of the end of Line's text: its code points, UTF-8
/// continuation bytes skipped.
static unsigned codePointColumn(StringRef Line) {
  unsigned Column = 1;
  for (char C : Line)
    Column += (static_cast<unsigned char>(C) & 0xC0) != 0x80;
  return Column;
}

LineColumn lineColumn(const SourceMgr &SM, SMLoc Loc) {
  if (!Loc.isValid())
    return {};
  unsigned ID = SM.FindBufferContainingLoc(Loc);
  if (!ID)
    return {};
  auto [Line, ByteColumn] = SM.getLineAndColumn(Loc, ID);
  const char *LineStart = Loc.getPointer() - (ByteColumn - 1);
  return {Line, codePointColumn(StringRef(LineStart, ByteColumn - 1))};
}

LineColumn lineColumn(StringRef Text, size_t Offset) {
  StringRef Before = Text.take_front(Offset);
  size_t LineStart = Before.rfind('\n');
  LineStart = LineStart == StringRef::npos ? 0 : LineStart + 1;
  return {unsigned(Before.count('\n') + 1),
          codePointColumn(Before.drop_front(LineStart))};
}

std::string applyFixIts(const DiagnosticEngine &Engine, unsigned BufferID,
                        unsigned &Applied) {
  StringRef Text =
      Engine.sourceMgr().getMemoryBuffer(BufferID)->getBuffer();
  std::vector<TextEdit> Taken;
  Applied = 0;
  for (const Diagnostic &D : Engine.diagnostics()) {
    if (D.BufferID != BufferID || D.FixIts.empty())
      continue;
    std::vector<TextEdit> Mine;
    for (const FixIt &F : D.FixIts)
      Mine.push_back({size_t(F.Range.Start.getPointer() - Text.data()),
                      size_t(F.Range.End.getPointer() - Text.data()),
                      F.Replacement});
    // A fix-it that is not a range of this text is a bug in its rule;
    // the diagnostic's fixes are left out rather than the file damaged.
    if (llvm::any_of(Mine, [&](const TextEdit &E) {
          return E.Begin > E.End || E.End > Text.size();
        }))
      continue;
    auto Overlaps = [](const TextEdit &A, const TextEdit &B) {
      // Two insertions at one point keep their order; anything else that
      // touches the same bytes conflicts.
      if (A.Begin == A.End || B.Begin == B.End)
        return (A.Begin > B.Begin && A.Begin < B.End) ||
               (B.Begin > A.Begin && B.Begin < A.End);
      return A.Begin < B.End && B.Begin < A.End;
    };
    bool Conflict = llvm::any_of(Mine, [&](const TextEdit &E) {
      return llvm::any_of(Taken,
                          [&](const TextEdit &T) { return Overlaps(E, T); });
    });
    if (Conflict)
      continue;
    Taken.insert(Taken.end(), Mine.begin(), Mine.end());
    ++Applied;
  }
  return applyEdits(Text, std::move(Taken));
}

std::string applyEdits(StringRef Text, std::vector<TextEdit> Edits) {
  // By position; an insertion goes before a replacement starting there.
  std::stable_sort(Edits.begin(), Edits.end(),
                   [](const TextEdit &A, const TextEdit &B) {
                     return A.Begin != B.Begin ? A.Begin < B.Begin
                                               : A.End < B.End;
                   });
  std::string Out;
  size_t Pos = 0;
  for (const TextEdit &E : Edits) {
    assert(E.Begin >= Pos && E.Begin <= E.End && E.End <= Text.size() &&
           "overlapping or inverted edits");
    Out.append(Text.data() + Pos, E.Begin - Pos);
    Out += E.Text;
    Pos = E.End;
  }
  Out.append(Text.data() + Pos, Text.size() - Pos);
  return Out;
}

} // namespace dsc
