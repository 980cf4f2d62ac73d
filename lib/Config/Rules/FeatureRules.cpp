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

  // Sections whose other keys DeepSpeed reads with [] once enabled.
  if (V.getBool("progressive_layer_drop.enabled").value_or(false))
    for (StringRef Key : {"theta", "gamma"})
      if (!V.has(("progressive_layer_drop." + Key).str()))
        C.report(Rule::MissingKey, C.rangeOf("progressive_layer_drop"),
                 "enabled progressive_layer_drop needs " + Key +
                     " (DeepSpeed reads it without a default: KeyError)");
  if (V.getBool("curriculum_learning.enabled").value_or(false))
    for (StringRef Key : {"curriculum_type", "min_difficulty",
                          "max_difficulty", "schedule_type"})
      if (!V.has(("curriculum_learning." + Key).str()))
        C.report(Rule::MissingKey, C.rangeOf("curriculum_learning"),
                 "enabled curriculum_learning needs " + Key);

  // AutoEP refuses auxiliary-loss-free balancing at parse time.
  if (const JsonValue *LB = V.find("expert_parallel.load_balance_coeff");
      LB && LB->Kind != JsonKind::Null)
    C.report(Rule::Parallelism, C.rangeOf("expert_parallel.load_balance_coeff"),
             "load_balance_coeff is not supported by AutoEP; set it to null "
             "or omit it");
}

} // namespace dsc
