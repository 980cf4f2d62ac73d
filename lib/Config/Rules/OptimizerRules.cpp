//===- OptimizerRules.cpp - What DeepSpeed can build (docs/lint.md) -------===//

#include "../LintContext.h"

#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace dsc {

// engine.py: with ZeRO these are refused outright.
static bool isOneBit(StringRef Lower) {
  return Lower == "onebitadam" || Lower == "zerooneadam" ||
         Lower == "onebitlamb";
}

static void checkOptimizerType(LintContext &C, StringRef Type) {
  const ConfigView &V = C.View;
  std::string Lower = Type.lower();
  std::optional<int64_t> Stage = V.zeroStage();
  bool Zero = Stage && *Stage > 0;
  SMRange Where = C.rangeOf("optimizer.type");

  if (!isDeepSpeedOptimizer(Lower) && !isTorchOptimizer(Type)) {
    Diagnostic &D = C.report(Rule::Optimizer, Where,
                             "\"" + Type +
                                 "\" is not an optimizer DeepSpeed knows: "
                                 "neither one of its own nor a torch.optim "
                                 "class");
    for (StringRef Torch : {"Adadelta", "Adafactor", "Adagrad", "Adam",
                            "Adamax", "AdamW", "ASGD", "LBFGS", "NAdam",
                            "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam"})
      if (Torch.equals_insensitive(Type))
        D.note("torch.optim names are case-sensitive: \"" + Torch + "\"");
    return;
  }

  if (Zero && isOneBit(Lower))
    C.report(Rule::Optimizer, Where,
             "\"" + Type + "\" is not compatible with ZeRO (stage " +
                 Twine(*Stage) + "); DeepSpeed asserts");

  // ZeRO's tested list (runtime/zero/utils.py): Adam, AdamW, Adagrad, Lion
  // and their fused/CPU forms, and Muon.
  bool Tested = Lower == "adam" || Lower == "adamw" || Lower == "adagrad" ||
                Lower == "lion" || Lower == "muon" || isOneBit(Lower) ||
                Type == "Adam" || Type == "AdamW" || Type == "Adagrad";
  if (Zero && !Tested &&
      !V.getBool("zero_allow_untested_optimizer").value_or(false))
    C.report(Rule::Optimizer, Where,
             "\"" + Type + "\" is not on ZeRO's list of tested optimizers; "
             "DeepSpeed asserts unless \"zero_allow_untested_optimizer\": "
             "true");

  if ((Lower == "lamb" || Lower == "onebitlamb") &&
      V.getNumber("fp16.loss_scale").value_or(0) != 0)
    C.report(Rule::Optimizer, Where,
             "DeepSpeed's " + Lower +
                 " requires dynamic loss scaling, but fp16.loss_scale is " +
                 C.spellingOf("fp16.loss_scale") +
                 " (checked even when fp16 is off)");

  if (Lower == "muon" &&
      V.getBool("zero_optimization.reduce_scatter").value_or(true) && Stage) {
    if (*Stage == 3)
      C.report(Rule::Optimizer, Where,
               "Muon and reduce_scatter (on by default) cannot be used "
               "together at ZeRO stage 3; set zero_optimization."
               "reduce_scatter to false");
    else if ((*Stage == 1 || *Stage == 2) &&
             V.offloadOptimizerDevice() != "none")
      C.report(Rule::Optimizer, Where,
               "Muon with reduce_scatter does not support optimizer offload");
  }

  std::string Class = V.optimizerClass();
  if (V.getBool("optimizer.params.amsgrad").value_or(false) &&
      (Class == "FusedAdam" || Class == "FusedLamb" || Class == "OnebitAdam" ||
       Class == "ZeroOneAdam" || Class == "OnebitLamb"))
    C.report(Rule::Optimizer, C.rangeOf("optimizer.params.amsgrad"),
             Class + " does not support AMSGrad; its constructor raises "
                     "RuntimeError");

  if (V.getBool("optimizer.legacy_fusion").value_or(false))
    C.report(Rule::Optimizer, Severity::Warning,
             C.rangeOf("optimizer.legacy_fusion"),
             "legacy_fusion calls the old fused-Adam step interface, which "
             "every optimizer DeepSpeed builds refuses");
}

static void checkScheduler(LintContext &C) {
  const ConfigView &V = C.View;
  const JsonValue *Type = V.find("scheduler.type");
  if (!Type || Type->Kind != JsonKind::String)
    return;
  StringRef Name = Type->Str;
  if (!isDeepSpeedScheduler(Name) && !isTorchScheduler(Name)) {
    Diagnostic &D = C.report(Rule::Optimizer, C.rangeOf("scheduler.type"),
                             "DeepSpeed does not recognize the scheduler \"" +
                                 Name + "\"");
    for (StringRef Known : {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR",
                            "OneCycle", "LRRangeTest"})
      if (Known.equals_insensitive(Name) ||
          Known.edit_distance(Name, true, 3) <= 3)
        D.note("did you mean \"" + Known + "\"? Scheduler names are "
               "case-sensitive");
    return;
  }
  if (!V.has("scheduler.params")) {
    C.report(Rule::Optimizer, C.rangeOf("scheduler.type"),
             "a scheduler needs \"params\" (at least {}); DeepSpeed calls " +
                 Name + "(optimizer, **None) and fails with TypeError");
    return;
  }
  std::optional<int64_t> Warmup = V.getInt("scheduler.params.warmup_num_steps");
  std::optional<int64_t> Total = V.getInt("scheduler.params.total_num_steps");
  if (Warmup && Total && V.has("scheduler.params.total_num_steps") &&
      *Total < std::max<int64_t>(2, *Warmup))
    C.report(Rule::Optimizer, Severity::Warning,
             C.rangeOf("scheduler.params.total_num_steps"),
             "total_num_steps " + Twine(*Total) +
                 " is less than warmup_num_steps " + Twine(*Warmup) +
                 "; the schedule never leaves warmup");
}

/// The optimizer object the training code hands to deepspeed.initialize
/// (engine.py _do_optimizer_sanity_check, zero/utils.py).
static void checkClientOptimizer(LintContext &C, StringRef Class) {
  const ConfigView &V = C.View;
  // deepspeed.ops.adam.DeepSpeedCPUAdam, torch.optim.AdamW, apex's
  // FusedAdam: the class name decides.
  StringRef Name = StringRef(Class).rsplit('.').second.empty()
                       ? StringRef(Class)
                       : StringRef(Class).rsplit('.').second;
  static const StringRef Tested[] = {
      "Adam",         "AdamW",          "Adagrad",
      "FusedAdam",    "DeepSpeedCPUAdam", "DeepSpeedCPUAdagrad",
      "DeepSpeedCPULion", "FusedLion",  "ZenFlowCPUAdam",
      "MuonWithAuxAdam"};
  std::optional<int64_t> Stage = V.zeroStage();
  SMRange Where = C.rangeOf("zero_optimization.stage");
  if (Stage && *Stage > 0 && !is_contained(Tested, Name) &&
      !V.getBool("zero_allow_untested_optimizer").value_or(false))
    C.report(Rule::Optimizer, Where,
             "the client optimizer " + Class +
                 " is not on ZeRO's list of tested optimizers; DeepSpeed "
                 "asserts unless \"zero_allow_untested_optimizer\": true");
  bool Offload = V.offloadOptimizerDevice() != "none";
  // accelerate (and so the HF Trainer) swaps a torch optimizer for
  // DeepSpeedCPUAdam itself when optimizer states are offloaded.
  if (Offload && C.Target == LintTarget::DeepSpeed &&
      Name != "DeepSpeedCPUAdam" && Name != "DeepSpeedCPULion" &&
      V.getBool("zero_force_ds_cpu_optimizer").value_or(true))
    C.report(Rule::Optimizer, C.rangeOf("zero_optimization.offload_optimizer"),
             "optimizer offload with the client optimizer " + Class +
                 ": DeepSpeed raises ZeRORuntimeException; pass "
                 "DeepSpeedCPUAdam, or set \"zero_force_ds_cpu_optimizer\": "
                 "false");
  if (Offload && Name == "DeepSpeedCPUAdam" &&
      V.getBool("bf16.bf16_optimizer_states").value_or(false))
    C.report(Rule::Optimizer, C.rangeOf("bf16.bf16_optimizer_states"),
             "bf16_optimizer_states with optimizer offload needs the client's "
             "DeepSpeedCPUAdam built with fp32_optimizer_states=False (its "
             "default is True); DeepSpeed asserts");
}

void checkOptimizer(LintContext &C) {
  const ConfigView &V = C.View;
  const JsonValue *OptType = V.find("optimizer.type");
  bool FromConfig = OptType && OptType->Kind == JsonKind::String;
  if (!FromConfig && C.Options.ClientOptimizer)
    checkClientOptimizer(C, *C.Options.ClientOptimizer);
  else if (!FromConfig && C.Target == LintTarget::DeepSpeed &&
           V.offloadOptimizerDevice() != "none" &&
           V.getBool("bf16.bf16_optimizer_states").value_or(false))
    C.report(Rule::Optimizer, Severity::Warning,
             C.rangeOf("bf16.bf16_optimizer_states"),
             "bf16_optimizer_states with optimizer offload: the optimizer "
             "your code passes must be a DeepSpeedCPUAdam built with "
             "fp32_optimizer_states=False");
  if (FromConfig)
    checkOptimizerType(C, OptType->Str);
  else if (V.has("optimizer") && !V.has("optimizer.type") &&
           V.has("optimizer.params"))
    C.report(Rule::IgnoredKey, C.rangeOf("optimizer.params"),
             "optimizer.params without optimizer.type: DeepSpeed builds no "
             "optimizer and ignores these parameters");
  checkScheduler(C);
}

} // namespace dsc
