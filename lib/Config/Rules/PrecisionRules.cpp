//===- PrecisionRules.cpp - fp16, bf16, amp and dtypes (docs/lint.md) -----===//

#include "../LintContext.h"

using namespace llvm;

namespace dsc {

/// The DtypeEnum a data_types string names ("fp16", "half", ...), or "".
static StringRef dtypeOf(StringRef S) {
  if (S == "torch.float16" || S == "fp16" || S == "float16" || S == "half")
    return "fp16";
  if (S == "torch.float32" || S == "fp32" || S == "float32" || S == "float")
    return "fp32";
  if (S == "torch.bfloat16" || S == "bf16" || S == "bfloat16")
    return "bf16";
  if (S == "torch.int8" || S == "int8")
    return "int8";
  return "";
}

void checkPrecision(LintContext &C) {
  const ConfigView &V = C.View;
  bool FP16 = V.fp16Enabled(), BF16 = V.bf16Enabled();
  std::optional<int64_t> Stage = V.zeroStage();
  StringRef ModelDtype = FP16 ? "fp16" : BF16 ? "bf16" : "fp32";

  if (FP16 && BF16)
    C.report(Rule::Precision, C.rangeOf("bf16.enabled"),
             "fp16 and bf16 are both enabled; DeepSpeed refuses that "
             "(bfloat16 and fp16 modes cannot be simultaneously enabled)")
        .note(C.rangeOf("fp16.enabled"), "fp16 is enabled here");

  // Dynamic loss scaling needs a positive window and floor
  // (precision_config.py, only when fp16 is on and loss_scale is 0).
  if (FP16 && V.getNumber("fp16.loss_scale").value_or(0) == 0)
    for (StringRef Key : {"fp16.loss_scale_window", "fp16.min_loss_scale"})
      if (std::optional<int64_t> N = V.getInt(Key); N && *N <= 0)
        C.report(Rule::OutOfRange, C.rangeOf(Key),
                 "`" + Key + "` must be greater than 0 with dynamic loss "
                 "scaling (fp16 enabled, loss_scale 0), not " +
                     Twine(*N));

  // amp (engine.py _do_optimizer_sanity_check).
  if (V.getBool("amp.enabled").value_or(false)) {
    if (Stage && *Stage > 0)
      C.report(Rule::Precision, C.rangeOf("amp.enabled"),
               "Apex amp and ZeRO are not compatible (stage " + Twine(*Stage) +
                   "); use fp16 or bf16 instead");
    if (FP16 || BF16)
      C.report(Rule::Precision, C.rangeOf("amp.enabled"),
               Twine("Apex amp cannot be combined with ") +
                   (FP16 ? "fp16" : "bf16") + " (NotImplementedError)");
    if (std::optional<std::string> G = V.getString("data_types.grad_accum_dtype"))
      if (StringRef D = dtypeOf(*G); !D.empty() && D != ModelDtype)
        C.report(Rule::Precision, C.rangeOf("data_types.grad_accum_dtype"),
                 "Apex amp needs the model dtype (" + ModelDtype +
                     ") and the gradient accumulation dtype (" + D +
                     ") to be equal");
  }

  // data_types.param_dtype must agree with the enabled mode.
  if (std::optional<std::string> P = V.getString("data_types.param_dtype"))
    if (StringRef D = dtypeOf(*P); !D.empty() && D != ModelDtype)
      C.report(Rule::Precision, C.rangeOf("data_types.param_dtype"),
               "data_types.param_dtype '" + *P +
                   "' conflicts with the precision mode, whose model dtype "
                   "is " +
                   ModelDtype + "; set the matching fp16/bf16 flag or drop it");

  // Without ZeRO (and without amp) the gradient accumulation dtype must equal
  // the model dtype: DeepSpeed raises NotImplementedError otherwise.
  if (Stage && *Stage == 0 && !V.getBool("amp.enabled").value_or(false))
    if (std::optional<std::string> G = V.getString("data_types.grad_accum_dtype"))
      if (StringRef D = dtypeOf(*G); !D.empty() && D != ModelDtype)
        C.report(Rule::Precision, C.rangeOf("data_types.grad_accum_dtype"),
                 "without ZeRO, DeepSpeed supports gradient accumulation only "
                 "in the model dtype (" + ModelDtype + "), not " + D +
                     " (unsupported mix of model_dtype and grad_accum_dtype)");

  // bf16 gradients accumulated in bf16 lose precision over many micro-steps
  // (DeepSpeed issues #2352, #2768). At stage 1, grad_accum_dtype fp32
  // switches to BF16_Optimizer, which accumulates in fp32.
  if (BF16 && Stage && *Stage == 1 && !V.has("data_types.grad_accum_dtype"))
    if (std::optional<int64_t> G = V.getInt("gradient_accumulation_steps");
        G && *G > 1)
      C.report(Rule::Precision, Severity::Warning,
               C.rangeOf("gradient_accumulation_steps"),
               "bf16 gradients are accumulated in bf16 over " + Twine(*G) +
                   " micro-steps; \"data_types\": {\"grad_accum_dtype\": "
                   "\"fp32\"} accumulates them in fp32 (BF16_Optimizer, with a "
                   "full-size fp32 gradient buffer)");

  // Master weights in 16 bits (runtime/config.py, engine.py).
  bool Offload = V.offloadOptimizerDevice() != "none";
  bool FP16Master = V.getBool("fp16.fp16_master_weights_and_grads").value_or(false);
  bool BF16Master = V.getBool("bf16.bf16_master_weights_and_grads").value_or(false);
  bool BF16States = V.getBool("bf16.bf16_optimizer_states").value_or(false);
  auto NeedsZero = [&](StringRef Key) {
    if (Stage && *Stage == 0)
      C.report(Rule::ZeroStage, C.rangeOf(Key),
               "`" + Key + "` works only with ZeRO stage 1, 2 or 3");
  };
  if (FP16Master) {
    NeedsZero("fp16.fp16_master_weights_and_grads");
    if (!Offload)
      C.report(Rule::Precision, C.rangeOf("fp16.fp16_master_weights_and_grads"),
               "fp16 master weights need optimizer offload with "
               "DeepSpeedCPUAdam (zero_optimization.offload_optimizer)");
  }
  if (BF16Master) {
    NeedsZero("bf16.bf16_master_weights_and_grads");
    if (!BF16States && !Offload)
      C.report(Rule::Precision, C.rangeOf("bf16.bf16_master_weights_and_grads"),
               "bf16 master weights without bf16_optimizer_states need "
               "optimizer offload with DeepSpeedCPUAdam");
  }
  if (BF16States) {
    NeedsZero("bf16.bf16_optimizer_states");
    if (!BF16Master)
      C.report(Rule::Precision, C.rangeOf("bf16.bf16_optimizer_states"),
               "bf16_optimizer_states requires "
               "bf16.bf16_master_weights_and_grads");
  }
  if (FP16Master && BF16Master)
    C.report(Rule::Precision, C.rangeOf("bf16.bf16_master_weights_and_grads"),
             "fp16 and bf16 master weights exclude each other");

  // An accelerate launch's --mixed_precision against the config
  // (accelerate set_mixed_precision).
  if (C.Options.MixedPrecision) {
    StringRef MP = *C.Options.MixedPrecision;
    bool WantsFP16 = MP == "fp16", WantsBF16 = MP == "bf16" || MP == "fp8";
    if (WantsFP16 && BF16)
      C.report(Rule::Accelerate, C.rangeOf("bf16.enabled"),
               "mixed_precision is fp16 but the config enables bf16; "
               "accelerate refuses that (`--mixed_precision` arg cannot be "
               "set to `fp16` when `bf16` is set in the DeepSpeed config "
               "file)");
    if (WantsBF16 && FP16)
      C.report(Rule::Accelerate, C.rangeOf("fp16.enabled"),
               "mixed_precision is " + MP +
                   " but the config enables fp16; accelerate refuses that");
    if ((WantsFP16 && V.has("fp16.enabled") && !V.isAuto("fp16.enabled") &&
         !FP16) ||
        (WantsBF16 && V.has("bf16.enabled") && !V.isAuto("bf16.enabled") &&
         !BF16))
      C.report(Rule::Accelerate, Severity::Warning,
               C.rangeOf(WantsFP16 ? "fp16.enabled" : "bf16.enabled"),
               "mixed_precision is " + MP +
                   " but the config disables it; the config wins and "
                   "training runs in " +
                   ModelDtype);
  }
}

} // namespace dsc
