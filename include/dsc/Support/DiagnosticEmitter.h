//===- DiagnosticEmitter.h - Text, JSON and SARIF output --------*- C++ -*-===//
//
// Three renderings of the same findings: clang-style text for people, a JSON
// document for scripts, and SARIF 2.1.0 for code-scanning services.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_SUPPORT_DIAGNOSTICEMITTER_H
#define DSC_SUPPORT_DIAGNOSTICEMITTER_H

#include "dsc/Support/Diagnostic.h"

#include "llvm/Support/raw_ostream.h"

namespace dsc {

/// What a rule code means, for SARIF's rule list and for documentation.
struct RuleInfo {
  llvm::StringRef Code;
  Severity DefaultSeverity;
  llvm::StringRef Summary;
};

enum class OutputFormat { Text, JSON, SARIF };

/// `file:line:col: error: message [code]`, the source line, a caret under the
/// range, fix-it hints, then the notes.
void emitText(const DiagnosticEngine &Engine, llvm::raw_ostream &OS,
              bool Colors);

/// {"files": [{"path", "diagnostics": [...]}], "summary": {...}}; the field
/// names are a stable interface (docs/lint.md).
void emitJSON(const DiagnosticEngine &Engine, llvm::raw_ostream &OS);

/// A SARIF 2.1.0 log with one run; Rules becomes the driver's rule list.
void emitSARIF(const DiagnosticEngine &Engine, llvm::ArrayRef<RuleInfo> Rules,
               llvm::StringRef ToolVersion, llvm::raw_ostream &OS);

} // namespace dsc

#endif
