//===- Diagnostic.h - Findings with a code, a location and fix-its -*- C++ -*-===//
//
// A diagnostic is one finding about one input: a severity, a stable rule code
// (`unknown-key`), a message, the source range it is about, notes that point
// elsewhere, and fix-its that `--fix` can apply. Locations are LLVM SMRanges
// into buffers owned by an llvm::SourceMgr, so the text emitter can print the
// source line and a caret exactly like clang.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_SUPPORT_DIAGNOSTIC_H
#define DSC_SUPPORT_DIAGNOSTIC_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"

#include <string>
#include <vector>

namespace dsc {

enum class Severity { Note, Warning, Error };

/// "note", "warning" or "error".
llvm::StringRef severityName(Severity S);

/// Replace the text in Range with Replacement (an empty range inserts).
struct FixIt {
  llvm::SMRange Range;
  std::string Replacement;
};

struct DiagNote {
  llvm::SMRange Range; ///< Invalid for a note without a location.
  std::string Message;
};

struct Diagnostic {
  Severity Sev = Severity::Error;
  std::string Code;
  std::string Message;
  unsigned BufferID = 0; ///< The file the finding belongs to.
  llvm::SMRange Range;   ///< Invalid when the finding is about the whole file.
  std::vector<DiagNote> Notes;
  std::vector<FixIt> FixIts;

  Diagnostic &note(llvm::SMRange R, const llvm::Twine &Msg);
  Diagnostic &note(const llvm::Twine &Msg) { return note({}, Msg); }
  Diagnostic &fix(llvm::SMRange R, llvm::StringRef Replacement);
};

/// Owns the sources of one run and the diagnostics reported against them.
class DiagnosticEngine {
public:
  /// Registers a file under its display path; returns its buffer id.
  unsigned addFile(std::unique_ptr<llvm::MemoryBuffer> Buffer);

  Diagnostic &report(Severity Sev, llvm::StringRef Code, unsigned BufferID,
                     llvm::SMRange Range, const llvm::Twine &Message);

  llvm::ArrayRef<Diagnostic> diagnostics() const { return Diags; }
  /// The diagnostics reported since diagnostics().size() was Count, to add
  /// notes to a group of them at once.
  llvm::MutableArrayRef<Diagnostic> diagnosticsSince(size_t Count) {
    return llvm::MutableArrayRef<Diagnostic>(Diags).drop_front(Count);
  }
  /// Buffer ids of the files added, in the order they were added.
  llvm::ArrayRef<unsigned> files() const { return Files; }

  unsigned count(Severity Sev) const;
  unsigned count(Severity Sev, unsigned BufferID) const;
  /// -Werror: every warning becomes an error.
  void promoteWarningsToErrors();
  /// -Wno-CODE: forget every finding with this code.
  void discard(llvm::StringRef Code);

  llvm::SourceMgr &sourceMgr() { return SM; }
  const llvm::SourceMgr &sourceMgr() const { return SM; }
  llvm::StringRef path(unsigned BufferID) const;

private:
  llvm::SourceMgr SM;
  std::vector<unsigned> Files;
  std::vector<Diagnostic> Diags;
};

/// 1-based line and column of Loc; the column counts Unicode code points, as
/// editors and SARIF viewers do.
struct LineColumn {
  unsigned Line = 0;
  unsigned Column = 0;
};
LineColumn lineColumn(const llvm::SourceMgr &SM, llvm::SMLoc Loc);
/// The same for the byte Offset of Text, for readers without a SourceMgr.
LineColumn lineColumn(llvm::StringRef Text, size_t Offset);

/// Replaces the bytes [Begin, End) of a text with Text.
struct TextEdit {
  size_t Begin = 0, End = 0;
  std::string Text;
};

/// Applies Edits, which must not overlap, to Text; edits that begin at the
/// same point keep their order.
std::string applyEdits(llvm::StringRef Text, std::vector<TextEdit> Edits);

/// Applies the fix-its of the diagnostics in BufferID to that buffer's text.
/// A diagnostic's fix-its are applied together or not at all; one whose
/// edits overlap an edit already taken is skipped. Returns the new text and
/// sets Applied to the number of diagnostics fixed.
std::string applyFixIts(const DiagnosticEngine &Engine, unsigned BufferID,
                        unsigned &Applied);

} // namespace dsc

#endif
