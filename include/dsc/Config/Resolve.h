//===- Resolve.h - Fill every "auto" as the HF integrations would -*- C++ -*-===//
//
// The HF Trainer and accelerate replace "auto" values from the training
// arguments, the model and their own defaults (docs/resolve.md). resolveConfig does
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
  /// below 1 (transformers v5, which also copies the deprecated
  /// warmup_ratio into it when warmup_steps is unset).
  std::optional<double> WarmupSteps, WarmupRatio;
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

  /// The warmup the Trainer uses: warmup_steps, else warmup_ratio.
  std::optional<double> warmup() const {
    return WarmupSteps ? WarmupSteps : WarmupRatio;
  }
};

/// One training argument: its TrainingArguments (YAML) name, its dsc
/// resolve flag and its help line.
struct TrainingArgSpec {
  const char *Yaml;
  const char *Flag;
  const char *Help;
  bool Positive = false; ///< Must be a positive integer.
};

/// Every training argument, once. The YAML reader and dsc resolve's
/// command line are both made from this list: V(field, spec) per argument.
template <typename Args, typename Visitor>
void visitTrainingArgs(Args &A, Visitor &&V) {
  V(A.WorldSize, TrainingArgSpec{"world_size", "world-size",
                                 "Data-parallel ranks (WORLD_SIZE)", true});
  V(A.MicroBatch, TrainingArgSpec{"per_device_train_batch_size", "micro-batch",
                                  "per_device_train_batch_size", true});
  V(A.GradAccum, TrainingArgSpec{"gradient_accumulation_steps", "grad-accum",
                                 "gradient_accumulation_steps", true});
  V(A.MaxSteps, TrainingArgSpec{"max_steps", "max-steps",
                                "max_steps: optimizer steps of the run", true});
  V(A.Epochs, TrainingArgSpec{"num_train_epochs", "epochs", "num_train_epochs"});
  V(A.StepsPerEpoch, TrainingArgSpec{"steps_per_epoch", "steps-per-epoch",
                                     "Optimizer steps per epoch", true});
  V(A.LearningRate, TrainingArgSpec{"learning_rate", "lr", "learning_rate"});
  V(A.WeightDecay, TrainingArgSpec{"weight_decay", "weight-decay",
                                   "weight_decay"});
  V(A.AdamBeta1, TrainingArgSpec{"adam_beta1", "adam-beta1",
                                 "adam_beta1 (Trainer default 0.9)"});
  V(A.AdamBeta2, TrainingArgSpec{"adam_beta2", "adam-beta2",
                                 "adam_beta2 (Trainer default 0.999)"});
  V(A.AdamEpsilon, TrainingArgSpec{"adam_epsilon", "adam-eps", "adam_epsilon"});
  V(A.MaxGradNorm, TrainingArgSpec{"max_grad_norm", "max-grad-norm",
                                   "max_grad_norm: gradient clipping "
                                   "(Trainer default 1.0)"});
  V(A.WarmupSteps, TrainingArgSpec{"warmup_steps", "warmup-steps",
                                   "Warmup steps (a ratio below 1, as "
                                   "transformers v5 reads it)"});
  V(A.WarmupRatio, TrainingArgSpec{"warmup_ratio", "warmup-ratio",
                                   "Warmup as a share of the training steps "
                                   "(used when no warmup steps are given)"});
  V(A.FP16, TrainingArgSpec{"fp16", "fp16",
                            "Trainer --fp16: fp16 mixed precision "
                            "(--fp16=false: off)"});
  V(A.BF16, TrainingArgSpec{"bf16", "bf16",
                            "Trainer --bf16: bf16 mixed precision "
                            "(--bf16=false: off)"});
  V(A.SaveOnEachNode, TrainingArgSpec{"save_on_each_node", "save-on-each-node",
                                      "Trainer --save_on_each_node: each "
                                      "node saves to its local storage"});
  V(A.MixedPrecision, TrainingArgSpec{"mixed_precision", "mixed-precision",
                                      "accelerate: no, fp16, bf16, fp8"});
  V(A.ZeroStage, TrainingArgSpec{"zero_stage", "zero-stage",
                                 "accelerate plugin zero_stage"});
  V(A.OffloadOptimizerDevice,
    TrainingArgSpec{"offload_optimizer_device", "offload-optimizer-device",
                    "accelerate plugin: none, cpu or nvme"});
  V(A.OffloadParamDevice,
    TrainingArgSpec{"offload_param_device", "offload-param-device",
                    "accelerate plugin: none, cpu or nvme"});
  V(A.OffloadOptimizerNvmePath,
    TrainingArgSpec{"offload_optimizer_nvme_path",
                    "offload-optimizer-nvme-path",
                    "accelerate plugin: NVMe folder"});
  V(A.OffloadParamNvmePath,
    TrainingArgSpec{"offload_param_nvme_path", "offload-param-nvme-path",
                    "accelerate plugin: NVMe folder"});
  V(A.Zero3Save16BitModel,
    TrainingArgSpec{"zero3_save_16bit_model", "zero3-save-16bit-model",
                    "accelerate plugin: gather 16-bit weights to save"});
  V(A.HiddenSize, TrainingArgSpec{"hidden_size", "hidden-size",
                                  "The model's hidden size (instead of "
                                  "reading model.onnx)",
                                  true});
}

/// The first argument set to zero or less where it must be positive.
std::optional<TrainingArgSpec> firstNotPositive(const TrainingArgs &A);

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
