//===- DataEfficiency.cpp - Schema: data efficiency and curriculum --------===//
//
// data_efficiency (runtime/data_pipeline/config.py) and the legacy top-level
// curriculum_learning. Both are plain dicts: unknown keys are ignored and
// values are used as written, except in dynamic_batching, which DeepSpeed
// passes through bool(), int() and str().
//
// DeepSpeed consults only the inner switches: curriculum metrics run when
// data_sampling.curriculum_learning.enabled is true and random-LTD when
// data_routing.random_ltd.enabled is; the outer enabled keys are parsed and
// exposed on the engine, nothing more.
//
//===----------------------------------------------------------------------===//

#include "SchemaParts.h"
#include "dsc/Config/SchemaBuilder.h"

namespace dsc::schema {

/// The schedule of a CurriculumScheduler (curriculum_scheduler.py), under
/// section S; which keys it needs depends on schedule_type.
#define DSC_CURRICULUM_SCHEDULE(S)                                             \
  section(S ".schedule_config", DictSection)                                   \
      .doc("Settings of the schedule (which keys depends on "                  \
           "schedule_type)"),                                                  \
      key(S ".schedule_config.difficulty", Array)                              \
          .doc("fixed_discrete: the difficulties in order"),                   \
      key(S ".schedule_config.max_step", Array)                                \
          .of(Int)                                                             \
          .doc("fixed_discrete: last step of each difficulty but the final "   \
               "one (one entry fewer than difficulty)"),                       \
      key(S ".schedule_config.total_curriculum_step", Int)                     \
          .above(0)                                                            \
          .doc("fixed_linear, fixed_root: steps from min to max difficulty"),  \
      key(S ".schedule_config.difficulty_step", Int)                           \
          .above(0)                                                            \
          .doc("fixed_linear, fixed_root: difficulties are multiples of it "   \
               "(8 or 16 keeps sequence lengths Tensor Core friendly)"),       \
      key(S ".schedule_config.root_degree", Int)                               \
          .above(0)                                                            \
          .doc("fixed_root: degree of the root (2 = square root)")

static const KeySpec Keys[] = {
    section("curriculum_learning", DictSection)
        .doc("Legacy curriculum learning (sequence length in the engine)")
        .refused("DeepSpeed passes a growing curriculum_seqlen to the "
                 "model's forward at each training step and the model "
                 "truncates its batch to it; the plan is for one fixed "
                 "sequence length"),
    key("curriculum_learning.enabled", Bool).required()
        .doc("Enable it (required: DeepSpeed pops it without a default)"),
    key("curriculum_learning.curriculum_type", String)
        .doc("What gets harder; the engine acts on seqlen"),
    key("curriculum_learning.min_difficulty", Int).doc("Starting difficulty"),
    key("curriculum_learning.max_difficulty", Int).doc("Final difficulty"),
    key("curriculum_learning.schedule_type", String)
        .oneOf("fixed_discrete|fixed_root|fixed_linear|custom")
        .doc("Schedule shape"),
    DSC_CURRICULUM_SCHEDULE("curriculum_learning"),

    section("data_efficiency", DictSection)
        .doc("Data efficiency library: curriculum data sampling and random "
             "layerwise token dropping")
        .modelCode("DeepSpeed acts on it only through the data sampler, "
                   "data loaders or random-LTD layers that the training "
                   "code sets up"),
    key("data_efficiency.enabled", Bool).def("false")
        .doc("Library switch, exposed on the engine; the features follow "
             "their own enabled keys")
        .noEffect("DeepSpeed exposes it on the engine; the features follow "
                  "their own enabled keys"),
    key("data_efficiency.seed", Int).def("1234")
        .doc("Seed of the data sampler"),

    section("data_efficiency.data_sampling", DictSection)
        .doc("Curriculum data sampling"),
    key("data_efficiency.data_sampling.enabled", Bool).def("false")
        .doc("Data sampling switch, exposed on the engine")
        .noEffect("DeepSpeed exposes it on the engine; curriculum sampling "
                  "follows curriculum_learning.enabled"),
    key("data_efficiency.data_sampling.num_epochs", Int).def("1000").above(0)
        .doc("Epochs the sampler draws from"),
    key("data_efficiency.data_sampling.num_workers", Int).def("0").min(0)
        .doc("Data loader workers"),
    key("data_efficiency.data_sampling.pin_memory", Bool).def("false")
        .doc("Pinned data loader memory")
        .noEffect("DeepSpeed parses it; its data loader takes pin_memory "
                  "from the deepspeed_io argument instead"),

    section("data_efficiency.data_sampling.curriculum_learning", DictSection)
        .doc("Curriculum learning by per-sample difficulty metrics")
        .modelCode("DeepSpeed orders samples by difficulty only in its own "
                   "data loader (training_data given to "
                   "deepspeed.initialize, or deepspeed_io)"),
    key("data_efficiency.data_sampling.curriculum_learning.enabled", Bool)
        .def("false")
        .doc("Sample by curriculum (DeepSpeed asserts curriculum_metrics "
             "then)"),
    key("data_efficiency.data_sampling.curriculum_learning.data_cluster_path",
        String)
        .doc("Folder for the data clusters the sampler writes (read with [] "
             "when enabled)"),
    section("data_efficiency.data_sampling.curriculum_learning."
            "curriculum_metrics",
            DictSection)
        .doc("Difficulty metrics by name"),
    section("data_efficiency.data_sampling.curriculum_learning."
            "curriculum_metrics.*",
            DictSection)
        .doc("One metric, under a name of your choice (seqlen, "
             "vocabularyrarity, ...)"),
    key("data_efficiency.data_sampling.curriculum_learning.curriculum_metrics."
        "*.index_to_sample_path",
        String)
        .doc("Data analyzer output: the samples of each metric value (not "
             "read for single_cluster)"),
    key("data_efficiency.data_sampling.curriculum_learning.curriculum_metrics."
        "*.index_to_metric_path",
        String)
        .doc("Data analyzer output: the metric values (value difficulty "
             "only)"),
    key("data_efficiency.data_sampling.curriculum_learning.curriculum_metrics."
        "*.difficulty_type",
        String)
        .oneOf("value|percentile")
        .doc("Difficulty as a metric value or a percentile (read with [])"),
    key("data_efficiency.data_sampling.curriculum_learning.curriculum_metrics."
        "*.clustering_type",
        String)
        .oneOf("schedule_based|single_cluster")
        .doc("Cluster the data by the schedule, or not at all (read with [])"),
    key("data_efficiency.data_sampling.curriculum_learning.curriculum_metrics."
        "*.min_difficulty",
        Float)
        .doc("Starting difficulty (DeepSpeed asserts it)"),
    key("data_efficiency.data_sampling.curriculum_learning.curriculum_metrics."
        "*.max_difficulty",
        Float)
        .doc("Final difficulty (DeepSpeed asserts it)"),
    key("data_efficiency.data_sampling.curriculum_learning.curriculum_metrics."
        "*.schedule_type",
        String)
        .oneOf("fixed_discrete|fixed_root|fixed_linear|custom")
        .doc("Schedule shape (DeepSpeed asserts it)"),
    DSC_CURRICULUM_SCHEDULE("data_efficiency.data_sampling.curriculum_learning."
                            "curriculum_metrics.*"),

    section("data_efficiency.data_sampling.dynamic_batching", DictSection)
        .doc("Batches of varying size under a token budget, with the "
             "learning rate scaled to match")
        .modelCode("DeepSpeed varies the batch size and learning rate only "
                   "through the data loader and scheduler that its "
                   "variable-batch-size helper returns to the training "
                   "code"),
    key("data_efficiency.data_sampling.dynamic_batching.enabled", Bool)
        .def("false")
        .doc("Enable it (DeepSpeed asserts max_tokens then)"),
    key("data_efficiency.data_sampling.dynamic_batching.max_tokens", Int)
        .above(0).doc("Token budget of a batch"),
    key("data_efficiency.data_sampling.dynamic_batching.metrics_path", String)
        .doc("Folder of the data analyzer's seqlen metric"),
    key("data_efficiency.data_sampling.dynamic_batching.lr_scaling_method",
        String)
        .def("\"linear\"").oneOf("linear|sqrt|none").anyCase()
        .doc("Learning-rate scaling with the batch size (only none may be "
             "in any case)"),
    key("data_efficiency.data_sampling.dynamic_batching.min_batch_size", Int)
        .def("1").min(1).doc("Smallest batch"),
    key("data_efficiency.data_sampling.dynamic_batching.max_batch_size", Int)
        .def("null").nullable().min(1).doc("Largest batch (null = no limit)"),
    key("data_efficiency.data_sampling.dynamic_batching."
        "sequence_picking_order",
        String)
        .def("\"dataloader\"").oneOf("random|seqlen|dataloader")
        .doc("Order in which samples fill batches (DeepSpeed asserts one of "
             "the three)"),
    key("data_efficiency.data_sampling.dynamic_batching.verbose", Bool)
        .def("false").doc("Log the batches")
        .noEffect("DeepSpeed logs the batches it builds"),

    section("data_efficiency.data_routing", DictSection)
        .doc("Data routing"),
    key("data_efficiency.data_routing.enabled", Bool).def("false")
        .doc("Data routing switch (random_ltd.enabled is what DeepSpeed "
             "consults)")
        .noEffect("DeepSpeed parses it; random-LTD follows "
                  "random_ltd.enabled"),
    section("data_efficiency.data_routing.random_ltd", DictSection)
        .doc("Random layerwise token dropping (random-LTD)")
        .modelCode("DeepSpeed drops tokens only in the layers that the "
                   "training code wraps with convert_to_random_ltd"),
    key("data_efficiency.data_routing.random_ltd.enabled", Bool).def("false")
        .doc("Drop tokens in the chosen layers"),
    key("data_efficiency.data_routing.random_ltd.total_layer_num", Int).min(1)
        .doc("Layers of the model (read with [] when enabled)"),
    key("data_efficiency.data_routing.random_ltd.random_ltd_layer_num", Int)
        .min(1)
        .doc("Layers that drop tokens; must equal the layers "
             "random_ltd_layer_id finds"),
    key("data_efficiency.data_routing.random_ltd.random_ltd_layer_id", Array)
        .of(Int).doc("Indices of the layers that drop tokens"),
    key("data_efficiency.data_routing.random_ltd.model_mask_name", String)
        .nullable().doc("Name of the attention-mask argument"),
    key("data_efficiency.data_routing.random_ltd.model_type", String)
        .oneOf("encoder|decoder")
        .doc("Encoder-only or decoder-only model (others are not "
             "implemented)"),
    key("data_efficiency.data_routing.random_ltd.hidden_state_order", String)
        .oneOf("batch_seq_dim|seq_batch_dim")
        .doc("Dimension order of the hidden states (others are not "
             "implemented)"),
    key("data_efficiency.data_routing.random_ltd.micro_batch_size", Int)
        .unused("DeepSpeed overwrites it with train_micro_batch_size_per_gpu")
        .doc("Micro batch (set by the engine)"),
    key("data_efficiency.data_routing.random_ltd.global_batch_size", Int)
        .unused("DeepSpeed overwrites it with train_batch_size")
        .doc("Global batch (set by the engine)"),
    section("data_efficiency.data_routing.random_ltd.random_ltd_schedule",
            DictSection)
        .doc("How many tokens the layers keep over training (read with [] "
             "when enabled)"),
    key("data_efficiency.data_routing.random_ltd.random_ltd_schedule."
        "min_value",
        Int)
        .min(1).doc("Tokens kept at the start"),
    key("data_efficiency.data_routing.random_ltd.random_ltd_schedule."
        "max_value",
        Int)
        .min(1).doc("Tokens kept at the end (the full length)"),
    key("data_efficiency.data_routing.random_ltd.random_ltd_schedule."
        "schedule_type",
        String)
        .oneOf("fixed_linear")
        .doc("Schedule shape; only fixed_linear is implemented"),
    section("data_efficiency.data_routing.random_ltd.random_ltd_schedule."
            "schedule_config",
            DictSection)
        .doc("Settings of the schedule"),
    key("data_efficiency.data_routing.random_ltd.random_ltd_schedule."
        "schedule_config.require_steps",
        Int)
        .above(0).doc("Steps from min_value to max_value"),
    key("data_efficiency.data_routing.random_ltd.random_ltd_schedule."
        "schedule_config.seq_per_step",
        Int)
        .above(0).doc("Kept tokens are multiples of it"),
    section("data_efficiency.data_routing.random_ltd.layer_token_lr_schedule",
            DictSection)
        .doc("Learning rate by consumed layer tokens"),
    key("data_efficiency.data_routing.random_ltd.layer_token_lr_schedule."
        "enabled",
        Bool)
        .def("false")
        .doc("Must stay false: DeepSpeed raises (not implemented yet)"),
};

#undef DSC_CURRICULUM_SCHEDULE

llvm::ArrayRef<KeySpec> dataEfficiencyKeys() { return Keys; }

} // namespace dsc::schema
