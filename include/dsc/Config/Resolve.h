//===- Resolve.h - Fill every "auto" as the HF integrations would -*- C++ -*-===//
//
// The HF Trainer and accelerate replace "auto" values from the training
// arguments, the model and their own defaults (spec §4). resolveConfig does
// the same statically: every "auto" the chosen integration fills gets the
// value it would get, written into the original text so that key order,
// comments and every other value stay as they were; values that contradict
// the arguments are reported the way the Trainer reports them; an "auto"
// nothing fills is an error naming what would fill it.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_RESOLVE_H
#define DSC_CONFIG_RESOLVE_H

#include "dsc/Config/Lint.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace dsc {

/// The arguments that decide the "auto" values: the Trainer's
/// TrainingArguments, accelerate's launch settings and the model. Unset
/// fields take the integration's default.
struct TrainingArgs {
  std::optional<int64_t> WorldSize;
  std::optional<int64_t> MicroBatch;  ///< per_device_train_batch_size
  std::optional<int64_t> GradAccum;   ///< gradient_accumulation_steps
  std::optional<double> LearningRate;
  std::optional<double> WeightDecay;
  std::optional<double> AdamBeta1, AdamBeta2, AdamEpsilon;
  std::optional<double> MaxGradNorm;
  /// warmup_steps: a step count when >= 1, a ratio of the training steps
  /// below 1 (transformers v5); warmup_ratio is folded into it.
  std::optional<double> WarmupSteps;
  std::optional<int64_t> MaxSteps;
  std::optional<double> Epochs;
  std::optional<int64_t> StepsPerEpoch; ///< Update steps per epoch.
  std::optional<bool> FP16, BF16;
  std::optional<bool> SaveOnEachNode;
  /// accelerate: --mixed_precision, and the plugin settings.
  std::optional<std::string> MixedPrecision;
  std::optional<int64_t> ZeroStage;
  std::optional<std::string> OffloadOptimizerDevice, OffloadParamDevice;
  std::optional<std::string> OffloadOptimizerNvmePath, OffloadParamNvmePath;
  std::optional<bool> Zero3Save16BitModel;
  /// The model's hidden size, and where it came from.
  std::optional<int64_t> HiddenSize;
  std::string HiddenSizeSource;
};

/// Reads training arguments from a YAML mapping whose keys are the
/// TrainingArguments names (per_device_train_batch_size, learning_rate,
/// ...). Flags given on the command line are applied over it by the caller.
llvm::Expected<TrainingArgs> readTrainingArgsYAML(llvm::StringRef Text,
                                                  llvm::StringRef Path);

struct FilledValue {
  std::string Path;   ///< As written in the config.
  std::string Value;  ///< JSON text written in place of "auto".
  std::string Source; ///< Where the value came from, in words.
};

struct ResolveResult {
  std::string Text; ///< The config with every filled "auto" replaced.
  std::vector<FilledValue> Filled;
  bool OK = false; ///< No error was reported.
};

/// Resolves the config in BufferID for Target (hf-trainer or accelerate),
/// reporting problems to Engine. The result's text is complete only when
/// OK is set.
ResolveResult resolveConfig(DiagnosticEngine &Engine, unsigned BufferID,
                            LintTarget Target, const TrainingArgs &Args);

} // namespace dsc

#endif
