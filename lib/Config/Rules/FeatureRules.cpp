//===- FeatureRules.cpp - Feature sections that need each other -----------===//

#include "../LintContext.h"

using namespace llvm;

namespace dsc {

void checkFeatures(LintContext &C) {
  const ConfigView &V = C.View;

  // deepspeed.checkpointing.configure asserts this.
  if (V.getBool("activation_checkpointing.contiguous_memory_optimization")
          .value_or(false) &&
      !V.getInt("activation_checkpointing.number_checkpoints"))
    C.report(Rule::MissingKey, Severity::Warning,
             C.rangeOf("activation_checkpointing.contiguous_memory_optimization"),
             "contiguous_memory_optimization needs number_checkpoints (the "
             "number of checkpointed layers) to size its buffer; "
             "deepspeed.checkpointing.configure() asserts unless the code "
             "passes num_checkpoints itself (Megatron does)");

  // DeepCompile (compile/init_z3.py).
  if (V.getBool("compile.offload_activation").value_or(false) &&
      (V.getBool("compile.offload_parameters").value_or(false) ||
       V.getBool("compile.offload_opt_states").value_or(false)))
    C.report(Rule::Offload, C.rangeOf("compile.offload_activation"),
             "compile.offload_activation cannot be combined with "
             "offload_parameters or offload_opt_states");
  if (V.getBool("compile.offload_opt_states").value_or(false) &&
      V.offloadOptimizerDevice() != "none")
    C.report(Rule::Offload, C.rangeOf("compile.offload_opt_states"),
             "compile.offload_opt_states cannot be combined with ZeRO "
             "optimizer offload to " +
                 V.offloadOptimizerDevice());

  // Sections whose other keys DeepSpeed reads with [] (or asserts) once
  // their `enabled` is true.
  static const struct {
    const char *Section;
    const char *Keys; ///< `|`-separated.
    const char *Why;
  } NeededWhenEnabled[] = {
      {"progressive_layer_drop", "theta|gamma",
       "DeepSpeed reads it without a default: KeyError"},
      {"curriculum_learning",
       "curriculum_type|min_difficulty|max_difficulty|schedule_type", ""},
      // data_pipeline/config.py, when DeepSpeed parses the config.
      {"data_efficiency.data_sampling.curriculum_learning",
       "curriculum_metrics", "DeepSpeed asserts it"},
      {"data_efficiency.data_sampling.dynamic_batching", "max_tokens",
       "DeepSpeed asserts it"},
      // RandomLTDScheduler, built when the engine starts.
      {"data_efficiency.data_routing.random_ltd",
       "total_layer_num|random_ltd_layer_num|random_ltd_schedule",
       "the engine reads it without a default: KeyError"},
      // compression/config.py asserts it; compress.py reads the others.
      {"compression_training.head_pruning.shared_parameters", "num_heads",
       "DeepSpeed asserts it"},
      {"compression_training.layer_reduction",
       "module_name_prefix|teacher_layer|other_module_name",
       "init_compression reads it without a default: KeyError"},
  };
  for (const auto &N : NeededWhenEnabled) {
    StringRef Section = N.Section;
    if (!V.getBool((Section + ".enabled").str()).value_or(false))
      continue;
    SmallVector<StringRef, 4> Keys;
    StringRef(N.Keys).split(Keys, '|');
    for (StringRef Key : Keys)
      if (!V.has((Section + "." + Key).str()))
        C.report(Rule::MissingKey, C.rangeOf(Section),
                 "enabled " + Section + " needs " + Key +
                     (*N.Why ? " (" + Twine(N.Why) + ")" : Twine()));
  }

  // Switches DeepSpeed refuses to turn on.
  if (V.getBool("compression_training.weight_quantization.shared_parameters."
                "enabled")
          .value_or(false) &&
      V.getBool("quantize_training.eigenvalue.enabled").value_or(false))
    C.report(Rule::InvalidValue,
             C.rangeOf("quantize_training.eigenvalue.enabled"),
             "eigenvalue-based MoQ is disabled in DeepSpeed: with weight "
             "quantization enabled, quantize_training.eigenvalue.enabled "
             "true fails an assertion when DeepSpeed parses the config");
  if (V.getBool("data_efficiency.data_routing.random_ltd.enabled")
          .value_or(false) &&
      V.getBool("data_efficiency.data_routing.random_ltd."
                "layer_token_lr_schedule.enabled")
          .value_or(false))
    C.report(Rule::InvalidValue,
             C.rangeOf("data_efficiency.data_routing.random_ltd."
                       "layer_token_lr_schedule.enabled"),
             "random-LTD's layer_token_lr_schedule is not implemented: the "
             "engine raises NotImplementedError when it is enabled");

  // AutoEP refuses auxiliary-loss-free balancing at parse time.
  if (const JsonValue *LB = V.find("expert_parallel.load_balance_coeff");
      LB && LB->Kind != JsonKind::Null)
    C.report(Rule::Parallelism, C.rangeOf("expert_parallel.load_balance_coeff"),
             "load_balance_coeff is not supported by AutoEP; set it to null "
             "or omit it");
}

} // namespace dsc
