//===- ConfigView.h - A ds_config as DeepSpeed will see it ------*- C++ -*-===//
//
// Answers "what value will DeepSpeed use for this key?" over a parsed config:
// aliases and legacy spellings are followed, values are converted as the
// key's section converts them, and absent keys give the schema's default.
// The cross-field rules and every later stage (resolve, plan) read configs
// through this view instead of walking JSON themselves.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_CONFIGVIEW_H
#define DSC_CONFIG_CONFIGVIEW_H

#include "dsc/Config/Coercion.h"
#include "dsc/Config/Json.h"
#include "dsc/Config/Schema.h"

#include <optional>
#include <string>

namespace dsc {

class ConfigView {
public:
  explicit ConfigView(const JsonValue &Root) : Root(Root) {}

  const JsonValue &root() const { return Root; }

  /// The member written for the canonical Path, under its name or an alias
  /// (and bfloat16 for bf16), or null.
  const JsonMember *findMember(llvm::StringRef Path) const;
  const JsonValue *find(llvm::StringRef Path) const {
    const JsonMember *M = findMember(Path);
    return M ? &M->Value : nullptr;
  }
  bool has(llvm::StringRef Path) const { return findMember(Path); }
  /// Whether the value written at Path is the string "auto".
  bool isAuto(llvm::StringRef Path) const;

  /// The value DeepSpeed uses at Path: converted, or the default when the
  /// key is absent. nullopt when it cannot be known: "auto", a malformed
  /// value, or no default.
  std::optional<Scalar> get(llvm::StringRef Path) const;
  std::optional<bool> getBool(llvm::StringRef Path) const;
  std::optional<int64_t> getInt(llvm::StringRef Path) const;
  std::optional<double> getNumber(llvm::StringRef Path) const;
  std::optional<std::string> getString(llvm::StringRef Path) const;

  /// zero_optimization.stage, including the legacy boolean form; nullopt
  /// when it cannot be known.
  std::optional<int64_t> zeroStage() const;
  bool fp16Enabled() const { return getBool("fp16.enabled").value_or(false); }
  bool bf16Enabled() const { return getBool("bf16.enabled").value_or(false); }
  /// "none", "cpu" or "nvme", following the deprecated cpu_offload flags.
  std::string offloadOptimizerDevice() const;
  std::string offloadParamDevice() const;
  /// overlap_comm with its stage-dependent default.
  std::optional<bool> overlapComm() const;

  /// The class DeepSpeed constructs from optimizer.type (and offload,
  /// torch_adam): the variant that selects optimizer.params keys. Empty when
  /// there is no optimizer or the class is not modelled (torch.optim.SGD...).
  std::string optimizerClass() const;
  /// scheduler.type when it names one of DeepSpeed's schedulers, else empty.
  std::string schedulerClass() const;
  /// The variant that applies inside the section at Path.
  std::string variantFor(llvm::StringRef SectionPath) const;

  /// How the section containing Path reads its values.
  static SectionKind sectionKindOf(llvm::StringRef Path);

private:
  const JsonValue &Root;
};

/// DeepSpeed's own optimizer names (matched after lower-casing).
bool isDeepSpeedOptimizer(llvm::StringRef LowerName);
/// The torch.optim class names DeepSpeed can fall back to (case-sensitive).
bool isTorchOptimizer(llvm::StringRef Name);
bool isDeepSpeedScheduler(llvm::StringRef Name);
bool isTorchScheduler(llvm::StringRef Name);

} // namespace dsc

#endif
