//===- LintContext.h - State shared by the lint passes -----------*- C++ -*-===//

#ifndef DSC_LIB_CONFIG_LINTCONTEXT_H
#define DSC_LIB_CONFIG_LINTCONTEXT_H

#include "dsc/Config/ConfigView.h"
#include "dsc/Config/Lint.h"

#include "llvm/Support/MemoryBuffer.h"

namespace dsc {

class LintContext {
public:
  LintContext(DiagnosticEngine &Engine, unsigned BufferID,
              const LintOptions &Options, LintTarget Target,
              const JsonValue &Root)
      : Engine(Engine), BufferID(BufferID), Options(Options), Target(Target),
        Root(Root), View(Root),
        Text(Engine.sourceMgr().getMemoryBuffer(BufferID)->getBuffer()) {}

  DiagnosticEngine &Engine;
  unsigned BufferID;
  const LintOptions &Options;
  LintTarget Target;
  const JsonValue &Root;
  ConfigView View;
  llvm::StringRef Text;

  llvm::SMRange range(uint32_t Begin, uint32_t End) const {
    return {llvm::SMLoc::getFromPointer(Text.data() + Begin),
            llvm::SMLoc::getFromPointer(Text.data() + End)};
  }
  llvm::SMRange range(const JsonValue &V) const {
    return range(V.Begin, V.End);
  }
  llvm::SMRange keyRange(const JsonMember &M) const {
    return range(M.KeyBegin, M.KeyEnd);
  }
  /// The key of the member at Path when it is written, else the value of its
  /// nearest written ancestor, else the whole file.
  llvm::SMRange rangeOf(llvm::StringRef Path) const;
  /// The written value at Path, or "".
  std::string spellingOf(llvm::StringRef Path) const;

  Diagnostic &report(Rule R, llvm::SMRange Range, const llvm::Twine &Message) {
    return report(R, ruleSeverity(R), Range, Message);
  }
  Diagnostic &report(Rule R, Severity Sev, llvm::SMRange Range,
                     const llvm::Twine &Message) {
    return Engine.report(Sev, ruleCode(R), BufferID, Range, Message);
  }
};

// The passes, in the order lintConfig runs them.
void checkSchema(LintContext &C);
void checkBatch(LintContext &C);
void checkPrecision(LintContext &C);
void checkZero(LintContext &C);
void checkCommunication(LintContext &C);
void checkOptimizer(LintContext &C);
void checkElasticity(LintContext &C);
void checkFeatures(LintContext &C);
/// Only for dsc plan and dsc estimate (LintOptions::ForPlan).
void checkPlannable(LintContext &C);

} // namespace dsc

#endif
