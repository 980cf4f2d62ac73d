//===- Lint.h - Check a ds_config the way DeepSpeed would -------*- C++ -*-===//
//
// lintConfig reads one DeepSpeed config, checks every key against the schema
// table and the cross-field rules of DeepSpeed and the HF integrations, and
// reports findings to a DiagnosticEngine. Each finding has a stable code from
// LintRules.def.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_LINT_H
#define DSC_CONFIG_LINT_H

#include "dsc/Config/Json.h"
#include "dsc/Support/Diagnostic.h"
#include "dsc/Support/DiagnosticEmitter.h"

#include <optional>
#include <string>

namespace dsc {

/// Who reads the config: DeepSpeed itself, or an integration that first
/// replaces "auto" values (docs/resolve.md).
enum class LintTarget { DeepSpeed, HfTrainer, Accelerate };

std::optional<LintTarget> parseLintTarget(llvm::StringRef Name);
llvm::StringRef targetName(LintTarget T);

enum class Rule : uint8_t {
#define LINT_RULE(Id, Code, Sev, Summary) Id,
#include "dsc/Config/LintRules.def"
};

llvm::StringRef ruleCode(Rule R);
Severity ruleSeverity(Rule R);
/// Every rule, in LintRules.def order.
llvm::ArrayRef<RuleInfo> lintRules();

struct LintOptions {
  /// Unset: hf-trainer when the config holds an "auto" placeholder, else
  /// deepspeed.
  std::optional<LintTarget> Target;
  /// Data-parallel world size for the batch and elasticity checks.
  std::optional<int64_t> WorldSize;
  /// The mixed precision an accelerate launch asks for ("no", "fp16",
  /// "bf16", "fp8"), when known.
  std::optional<std::string> MixedPrecision;
  /// The class of the optimizer the training code passes to
  /// deepspeed.initialize when the config has none ("torch.optim.SGD",
  /// "DeepSpeedCPUAdam", ...), when known.
  std::optional<std::string> ClientOptimizer;
  /// For dsc plan and dsc estimate: also report each key whose value the
  /// plan cannot contain (not-planned) or that acts only through training
  /// code (outside-plan), as the schema's treatments say.
  bool ForPlan = false;
};

struct LintResult {
  /// The parsed config (absent when the file is not readable JSON).
  std::optional<JsonValue> Root;
  LintTarget Target = LintTarget::DeepSpeed;
};

/// Lints the config in buffer BufferID of Engine's source manager.
LintResult lintConfig(DiagnosticEngine &Engine, unsigned BufferID,
                      const LintOptions &Options);

/// Whether the tree holds "auto" where it is a placeholder (not where
/// "auto" is a real value, such as pipeline.stages).
bool hasAutoPlaceholder(const JsonValue &Root);

} // namespace dsc

#endif
