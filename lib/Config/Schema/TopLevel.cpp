//===- TopLevel.cpp - Schema: top-level scalars and sections --------------===//
//
// The top level of a ds_config is read with dict.get(): DeepSpeed ignores
// unknown keys here and uses values exactly as written (runtime/config.py).
//
//===----------------------------------------------------------------------===//

#include "SchemaParts.h"
#include "dsc/Config/SchemaBuilder.h"

namespace dsc::schema {

static constexpr const char *BatchAuto =
    "the string reaches DeepSpeed's batch check: TypeError ('>' not supported "
    "between 'str' and 'int') when the engine is created";

static const KeySpec Keys[] = {
    // The batch triple (runtime/config.py _batch_assertion).
    key("train_batch_size", Int).above(0).autoBy(AutoBoth).onAuto(BatchAuto)
        .doc("Global batch per optimizer step: micro batch x gradient "
             "accumulation steps x data-parallel ranks; derived when absent"),
    key("train_micro_batch_size_per_gpu", Int).above(0).autoBy(AutoBoth)
        .onAuto(BatchAuto)
        .doc("Samples per rank in one forward/backward pass; derived when "
             "absent"),
    key("gradient_accumulation_steps", Int).above(0).autoBy(AutoBoth)
        .onAuto(BatchAuto)
        .doc("Micro-batches accumulated before each optimizer step; derived "
             "when absent (1 when only one other batch key is given)"),
    key("managed_gradient_accumulation", Bool).def("true")
        .doc("true: DeepSpeed counts micro-steps and steps the optimizer at "
             "the boundary; false: every step() updates"),

    // Logging.
    key("steps_per_print", Int).def("null").nullable().above(0)
        .allowsInfinity()
        .onAuto("TypeError at the first progress report")
        .doc("Interval in steps of DeepSpeed's progress line (none when null; "
             "accelerate sets it to infinity)"),
    key("wall_clock_breakdown", Bool).def("false")
        .onAuto("TypeError while DeepSpeed parses the config (str | bool)")
        .doc("Time forward, backward and step and log the breakdown"),
    key("memory_breakdown", Bool).def("false")
        .doc("Log memory use at points of the step"),
    key("dump_state", Bool).def("false")
        .doc("Print the engine's state after initialization"),
    key("log_level", String).def("null").nullable()
        .oneOf("debug|info|warning|error|critical").anyCase()
        .doc("Level of DeepSpeed's logger"),

    // Gradients.
    // runtime/constants.py: GRADIENT_CLIPPING_DEFAULT = 0. (DeepSpeed's
    // documentation says 1.0; the code leaves gradients unclipped).
    key("gradient_clipping", Float).def("0.0").min(0).autoBy(AutoBoth)
        .onAuto("TypeError at the first optimizer step (the string is "
                "compared with 0.0)")
        .doc("Clip gradients to this global L2 norm; 0, the default, "
             "disables clipping (DeepSpeed's docs say the default is 1.0; "
             "its code does not clip unless the key is set)"),
    key("prescale_gradients", Bool).def("false")
        .doc("Divide gradients by the world size before the all-reduce "
             "instead of after it"),
    key("gradient_predivide_factor", Float).def("1.0").above(0)
        .doc("Divide gradients by this factor before the all-reduce and by "
             "world_size/factor after it"),
    key("gradient_allreduce_op", String).def("\"mean\"").oneOf("mean|sum")
        .anyCase()
        .onAuto("ValueError: Invalid gradient_allreduce_op, while DeepSpeed "
                "parses the config")
        .doc("Average or sum gradients across data-parallel ranks"),
    key("communication_data_type", String).def("null").nullable()
        .oneOf("fp16|bf16|fp32").anyCase()
        .onAuto("ValueError: Invalid communication_data_type, while DeepSpeed "
                "parses the config")
        .doc("Data type of gradient reduction; null follows the training "
             "precision (fp16, bf16 or fp32)"),
    key("seq_parallel_communication_data_type", String).def("\"fp32\"")
        .oneOf("fp16|bf16|fp32").anyCase()
        .onAuto("ValueError: Invalid communication_data_type, while DeepSpeed "
                "parses the config")
        .doc("Data type of gradient reduction across Ulysses sequence-"
             "parallel ranks"),
    key("sparse_gradients", Bool).def("false")
        .doc("Reduce nn.Embedding gradients as sparse (CSR) tensors"),
    key("disable_allgather", Bool).def("false")
        .unused("DeepSpeed parses it and never reads it again")
        .doc("Legacy switch for the post-step all-gather"),
    key("allgather_size", Int).def("500000000").min(0)
        .doc("Legacy all-gather bucket size for \"zero_optimization\": true"),

    // ZeRO optimizer choices that live at the top level.
    key("zero_allow_untested_optimizer", Bool).def("false")
        .doc("Allow ZeRO with an optimizer outside DeepSpeed's tested list "
             "(the HF Trainer sets it when it builds the optimizer)"),
    key("zero_force_ds_cpu_optimizer", Bool).def("true")
        .doc("With optimizer offload, refuse client optimizers that are not "
             "DeepSpeedCPUAdam or DeepSpeedCPULion"),

    // Data loading and misc.
    key("dataloader_drop_last", Bool).def("false")
        .doc("drop_last of the data loader DeepSpeed builds"),
    key("vocabulary_size", Int).def("null").nullable().above(0)
        .doc("Only used to warn when it is not a multiple of 8"),
    key("use_data_before_expert_parallelism", Bool).def("false")
        .doc("Order of data- and expert-parallel groups for MoE"),
    key("graph_harvesting", Bool).def("false")
        .doc("Capture short kernel sequences in CUDA graphs"),
    key("sequence_parallel_size", Int).min(1)
        .doc("Ulysses sequence-parallel degree; without an mpu the batch "
             "check divides the world size by it"),
    key("datastates_ckpt", Any)
        .doc("DataStates checkpoint engine; on when present and not false"),
};

llvm::ArrayRef<KeySpec> topLevelKeys() { return Keys; }

} // namespace dsc::schema
