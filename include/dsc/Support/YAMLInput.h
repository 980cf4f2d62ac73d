//===- YAMLInput.h - Read a YAML document with located errors ---*- C++ -*-===//

#ifndef DSC_SUPPORT_YAMLINPUT_H
#define DSC_SUPPORT_YAMLINPUT_H

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLTraits.h"

#include <cstring>
#include <string>

namespace dsc {

/// LLVM's YAML parser recurses once per nesting level, so thousands of
/// '[' overflow the stack. Documents dsc reads nest a few levels; this
/// returns the 1-based line of the first place nested deeper than
/// MaxDepth (flow brackets, or block indentation and "- " entries), or 0.
inline unsigned tooDeeplyNested(llvm::StringRef Text, unsigned MaxDepth = 64) {
  unsigned Line = 1, Flow = 0;
  bool LineStart = true;
  unsigned Lead = 0; // Indentation and "- " entries opening this line.
  char Quote = 0, Previous = ' ';
  bool Escaped = false;
  bool Comment = false;
  for (char C : Text) {
    if (C == '\n') {
      // A quoted scalar may go on over lines, but counting the next line's
      // brackets as if it did not only errs towards refusing.
      ++Line, LineStart = true, Lead = 0, Previous = ' ';
      Quote = 0, Escaped = false, Comment = false;
      continue;
    }
    if (Comment)
      continue;
    if (Quote) {
      // Inside "...", a backslash escapes the next character.
      if (Escaped)
        Escaped = false;
      else if (Quote == '"' && C == '\\')
        Escaped = true;
      else if (C == Quote)
        Quote = 0;
      continue;
    }
    if (LineStart && (C == ' ' || C == '-')) {
      if (++Lead > 4 * MaxDepth)
        return Line;
      continue;
    }
    // A comment runs to the end of the line: its quotes and brackets are
    // text.
    if (C == '#' && (LineStart || Previous == ' ' || Previous == '\t')) {
      Comment = true;
      continue;
    }
    LineStart = false;
    // A quote opens a scalar only where one starts (not "DeepSpeed's").
    bool ScalarStart = strchr(" [{,:", Previous) != nullptr;
    Previous = C;
    if ((C == '"' || C == '\'') && ScalarStart)
      Quote = C;
    else if (C == '[' || C == '{') {
      if (++Flow > MaxDepth)
        return Line;
    } else if ((C == ']' || C == '}') && Flow)
      --Flow;
  }
  return 0;
}

/// Reads Text, named Path, into Value with LLVM's YAML I/O. A YAML error
/// comes back as its located diagnostic (path:line:col); a document that
/// gives no error and yet no mapping as "Path: not <What>".
template <class T>
llvm::Error readYAMLInto(T &Value, llvm::StringRef Text, llvm::StringRef Path,
                         llvm::StringRef What) {
  if (unsigned Line = tooDeeplyNested(Text))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        (Path + ":" + llvm::Twine(Line) + ": nested too deeply to be " + What)
            .str());
  std::string Errors;
  llvm::yaml::Input In(llvm::MemoryBufferRef(Text, Path), nullptr,
                       [](const llvm::SMDiagnostic &D, void *Ctx) {
                         llvm::raw_string_ostream OS(
                             *static_cast<std::string *>(Ctx));
                         D.print(nullptr, OS, /*ShowColors=*/false);
                       },
                       &Errors);
  In >> Value;
  if (!In.error())
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      Errors.empty() ? (Path + ": not " + What).str()
                     : llvm::StringRef(Errors).rtrim().str());
}

} // namespace dsc

#endif
