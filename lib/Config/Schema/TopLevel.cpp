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
             "accumulation steps x data-parallel ranks; derived when absent")
        .planned("the batch: micro batches a rank runs and how many accumulate "
                 "before a step"),
    key("train_micro_batch_size_per_gpu", Int).above(0).autoBy(AutoBoth)
        .onAuto(BatchAuto)
        .doc("Samples per rank in one forward/backward pass; derived when "
             "absent")
        .planned("the batch: micro batches a rank runs and how many accumulate "
                 "before a step"),
    key("gradient_accumulation_steps", Int).above(0).autoBy(AutoBoth)
        .onAuto(BatchAuto)
        .doc("Micro-batches accumulated before each optimizer step; derived "
             "when absent (1 when only one other batch key is given)")
        .planned("the batch: micro batches a rank runs and how many accumulate "
                 "before a step"),
    key("managed_gradient_accumulation", Bool).def("true")
        .doc("true: DeepSpeed counts micro-steps and steps the optimizer at "
             "the boundary; false: every step() updates")
        .refused("false: every step() call updates the weights instead of the "
                 "accumulation boundary; the plan steps at the boundary"),

    // Logging.
    key("steps_per_print", Int).def("null").nullable().above(0)
        .allowsInfinity()
        .onAuto("TypeError at the first progress report")
        .doc("Interval in steps of DeepSpeed's progress line (none when null; "
             "accelerate sets it to infinity)")
        .noEffect("a progress line in the log"),
    key("wall_clock_breakdown", Bool).def("false")
        .onAuto("TypeError while DeepSpeed parses the config (str | bool)")
        .doc("Time forward, backward and step and log the breakdown")
        .noEffect("times forward, backward and step in the log"),
    key("memory_breakdown", Bool).def("false")
        .doc("Log memory use at points of the step")
        .noEffect("logs memory use"),
    key("dump_state", Bool).def("false")
        .doc("Print the engine's state after initialization")
        .noEffect("prints the engine's state at start"),
    key("log_level", String).def("null").nullable()
        .oneOf("debug|info|warning|error|critical").anyCase()
        .doc("Level of DeepSpeed's logger")
        .noEffect("the logger's level"),

    // Gradients.
    // runtime/constants.py: GRADIENT_CLIPPING_DEFAULT = 0. (DeepSpeed's
    // documentation says 1.0; the code leaves gradients unclipped).
    key("gradient_clipping", Float).def("0.0").min(0).autoBy(AutoBoth)
        .onAuto("TypeError at the first optimizer step (the string is "
                "compared with 0.0)")
        .doc("Clip gradients to this global L2 norm; 0, the default, "
             "disables clipping (DeepSpeed's docs say the default is 1.0; "
             "its code does not clip unless the key is set)")
        .planned("the schedule's global-norm step before the optimizer, and "
                 "dsrun's clipping"),
    key("prescale_gradients", Bool).def("false")
        .doc("Divide gradients by the world size before the all-reduce "
             "instead of after it")
        .planned("dsrun divides each rank's gradient by the world size "
                 "before the reduction, as prescaling does; DeepSpeed's "
                 "stages 0 and 3 otherwise divide after it: the same values "
                 "where the world size is a power of two"),
    key("gradient_predivide_factor", Float).def("1.0").above(0)
        .doc("Divide gradients by this factor before the all-reduce and by "
             "world_size/factor after it")
        .planned("DeepSpeed divides by the factor before the reduction "
                 "and by world/factor after it, dsrun by the world before "
                 "it: the same values where both are powers of two"),
    key("gradient_allreduce_op", String).def("\"mean\"").oneOf("mean|sum")
        .anyCase()
        .onAuto("ValueError: Invalid gradient_allreduce_op, while DeepSpeed "
                "parses the config")
        .doc("Average or sum gradients across data-parallel ranks")
        .planned("sum: gradients are summed across ranks, not averaged, "
                 "as dsrun then does"),
    key("communication_data_type", String).def("null").nullable()
        .oneOf("fp16|bf16|fp32").anyCase()
        .onAuto("ValueError: Invalid communication_data_type, while DeepSpeed "
                "parses the config")
        .doc("Data type of gradient reduction; null follows the training "
             "precision (fp16, bf16 or fp32)")
        .planned("the reduction buckets' dtype, bytes and time"),
    key("seq_parallel_communication_data_type", String).def("\"fp32\"")
        .oneOf("fp16|bf16|fp32").anyCase()
        .onAuto("ValueError: Invalid communication_data_type, while DeepSpeed "
                "parses the config")
        .doc("Data type of gradient reduction across Ulysses sequence-"
             "parallel ranks")
        .noEffect("used only with sequence parallelism, which dsc refuses"),
    key("sparse_gradients", Bool).def("false")
        .doc("Reduce nn.Embedding gradients as sparse (CSR) tensors")
        .refused("true: embedding gradients are reduced as sparse tensors (stage "
                 "0); dsc reduces them dense"),
    key("disable_allgather", Bool).def("false")
        .unused("DeepSpeed parses it and never reads it again")
        .doc("Legacy switch for the post-step all-gather"),
    key("allgather_size", Int).def("500000000").min(0)
        .doc("Legacy all-gather bucket size for \"zero_optimization\": true")
        .noEffect("read only for the legacy \"zero_optimization\": true form"),

    // ZeRO optimizer choices that live at the top level.
    key("zero_allow_untested_optimizer", Bool).def("false")
        .doc("Allow ZeRO with an optimizer outside DeepSpeed's tested list "
             "(the HF Trainer sets it when it builds the optimizer)")
        .noEffect("a check when the engine starts"),
    key("zero_force_ds_cpu_optimizer", Bool).def("true")
        .doc("With optimizer offload, refuse client optimizers that are not "
             "DeepSpeedCPUAdam or DeepSpeedCPULion")
        .noEffect("a check when the engine starts"),

    // Data loading and misc.
    key("dataloader_drop_last", Bool).def("false")
        .doc("drop_last of the data loader DeepSpeed builds")
        .modelCode("the data loader deepspeed.initialize builds from training_data; "
                   "dsrun reads a token file"),
    key("vocabulary_size", Int).def("null").nullable().above(0)
        .doc("Only used to warn when it is not a multiple of 8")
        .noEffect("only a warning when it is not a multiple of 8"),
    key("use_data_before_expert_parallelism", Bool).def("false")
        .doc("Order of data- and expert-parallel groups for MoE")
        .modelCode("orders process groups for MoE layers the model builds"),
    key("graph_harvesting", Bool).def("false")
        .doc("Capture short kernel sequences in CUDA graphs")
        .refused("captures kernel sequences in CUDA graphs; dsc plans eager "
                 "launches"),
    key("sequence_parallel_size", Int).def("1").min(1)
        .doc("Ulysses sequence-parallel degree; without an mpu the batch "
             "check divides the world size by it")
        .refused("Ulysses sequence parallelism: the data-parallel size becomes "
                 "world / SP and attention exchanges heads all-to-all; dsc plans "
                 "data parallelism only"),
    key("datastates_ckpt", Any)
        .doc("DataStates checkpoint engine; on when present and not false")
        .noEffect("the checkpoint engine"),
};

llvm::ArrayRef<KeySpec> topLevelKeys() { return Keys; }

} // namespace dsc::schema
