//===- Zero.cpp - Schema: zero_optimization and its offload blocks --------===//
//
// zero_optimization is a pydantic model (DeepSpeedZeroConfig, runtime/zero/config.py):
// unknown keys are rejected at every depth and an "auto" is dropped so the
// default applies without a word.
//
//===----------------------------------------------------------------------===//

#include "SchemaParts.h"
#include "dsc/Config/SchemaBuilder.h"

namespace dsc::schema {

static const KeySpec Keys[] = {
    section("zero_optimization", Model)
        .doc("ZeRO: partition optimizer states (stage 1), gradients (2) and "
             "parameters (3) across data-parallel ranks")
        .planned("ZeRO's partitioning; each key inside says how it is planned"),
    key("zero_optimization.stage", Int).def("0").oneOf("0|1|2|3")
        .autoBy(AutoBoth)
        .doc("0 plain data parallelism, 1 optimizer states, 2 + gradients, "
             "3 + parameters partitioned")
        .planned("what is partitioned: optimizer states, gradients, parameters"),
    key("zero_optimization.contiguous_gradients", Bool).def("true")
        .doc("Copy gradients into a contiguous bucket as they are produced "
             "(always on with optimizer offload at stage 1/2)")
        .planned("gradients copied into the reduction buckets as they are made"),
    key("zero_optimization.reduce_scatter", Bool).def("true")
        .doc("Reduce gradients with reduce-scatter (or reduce) instead of "
             "all-reduce")
        .refused("false: every bucket is all-reduced, twice a reduce-scatter's "
                 "bytes; dsc plans reduce-scatter"),
    key("zero_optimization.reduce_bucket_size", Int).def("500000000").min(0)
        .autoBy(AutoBoth)
        .doc("Elements per gradient reduction bucket (HF and accelerate fill "
             "hidden_size^2)")
        .planned("the reduction buckets and their buffers"),
    key("zero_optimization.use_multi_rank_bucket_allreduce", Bool).def("true")
        .doc("Stage 1/2: merge per-rank reduce buckets into one all-reduce")
        .refused("false: stage 1/2 reduce each rank's piece of a bucket on its "
                 "own; dsc plans one collective a bucket"),
    key("zero_optimization.allgather_partitions", Bool).def("true")
        .unused("accepted but not read by current ZeRO code")
        .doc("All-gather parameters after the step rather than broadcast"),
    key("zero_optimization.allgather_bucket_size", Int).def("500000000").min(0)
        .doc("Elements per post-step all-gather chunk; must be even at stage "
             "1/2, ignored with current PyTorch (all_gather_into_tensor)")
        .planned("the post-step all-gather's chunks"),
    key("zero_optimization.overlap_comm", Bool).def("null").nullable()
        .doc("Overlap gradient reduction with backward; null means true at "
             "stage 3, false otherwise")
        .planned("reductions on their own stream beside the backward, and a second "
                 "bucket buffer"),
    key("zero_optimization.load_from_fp32_weights", Bool).def("true")
        .doc("Initialize fp32 master weights from the fp32 copies in the "
             "checkpoint")
        .noEffect("how a checkpoint is loaded"),
    key("zero_optimization.elastic_checkpoint", Bool).def("false")
        .doc("Legacy elastic checkpoint format (warns with stage 3)")
        .noEffect("the checkpoint format"),
    section("zero_optimization.offload_param", Model).nullable()
        .doc("Stage 3 only: keep 16-bit parameter partitions in CPU memory or "
             "on NVMe")
        .planned("where 16-bit parameter partitions live, their copies and swap "
                 "buffers"),
    section("zero_optimization.offload_optimizer", Model).nullable()
        .doc("Stages 1-3: keep optimizer states (and run the step) on the CPU, "
             "or swap them to NVMe (stage 3)")
        .planned("where the optimizer states live and the step runs, and the "
                 "gradient copies"),
    section("zero_optimization.zenflow", Model).nullable().def("null")
        .doc("ZenFlow: update the important gradients on the GPU, the rest on "
             "the CPU asynchronously")
        .refused("ZenFlow splits the update between the GPU and an asynchronous "
                 "CPU step; dsc plans one optimizer step"),
    key("zero_optimization.sub_group_size", Int).def("1000000000").min(0)
        .doc("Stage 3: elements per optimizer-step tile")
        .planned("the optimizer step's tiles"),
    key("zero_optimization.prefetch_bucket_size", Int).def("50000000").min(0)
        .alias("stage3_prefetch_bucket_size").autoBy(AutoBoth)
        .doc("Stage 3: elements prefetched ahead of use (HF and accelerate "
             "fill int(0.9 x hidden_size^2))")
        .planned("how far stage 3 gathers ahead"),
    key("zero_optimization.param_persistence_threshold", Int).def("100000")
        .min(0).alias("stage3_param_persistence_threshold").autoBy(AutoBoth)
        .doc("Stage 3: parameters with at most this many elements stay whole "
             "on every rank (HF and accelerate fill 10 x hidden_size)")
        .planned("which parameters stay whole on every rank"),
    key("zero_optimization.model_persistence_threshold", Int)
        .def("9223372036854775807").min(0)
        .alias("stage3_model_persistence_threshold")
        .doc("Stage 3: cap on the total elements of persistent parameters")
        .planned("the cap on persistent parameters"),
    key("zero_optimization.max_live_parameters", Int).def("1000000000").min(0)
        .alias("stage3_max_live_parameters")
        .doc("Stage 3: soft cap on gathered parameter elements per rank "
             "(bounds prefetching)")
        .planned("the cap on gathered parameters"),
    key("zero_optimization.max_reuse_distance", Int).def("1000000000").min(0)
        .alias("stage3_max_reuse_distance")
        .doc("Stage 3: keep a parameter gathered when it is used again within "
             "this many elements")
        .planned("which gathered modules stay for their next use"),
    key("zero_optimization.gather_16bit_weights_on_model_save", Bool)
        .def("false").alias("stage3_gather_16bit_weights_on_model_save")
        .autoBy(AutoBoth)
        .doc("Stage 3: gather full 16-bit weights when saving the model")
        .noEffect("how the model is saved"),
    key("zero_optimization.stage3_gather_fp16_weights_on_model_save", Bool)
        .replacedBy("zero_optimization.stage3_gather_16bit_weights_on_model_save")
        .doc("Old name of stage3_gather_16bit_weights_on_model_save"),
    key("zero_optimization.module_granularity_threshold", Int).def("0")
        .alias("stage3_module_granularity_threshold")
        .doc("Stage 3: fetch modules with fewer parameters per descendant as "
             "one leaf")
        .refused("stage 3 fetches small modules whole as leaves; dsc fetches per "
                 "module"),
    key("zero_optimization.use_all_reduce_for_fetch_params", Bool).def("false")
        .alias("stage3_use_all_reduce_for_fetch_params")
        .doc("Stage 3: fetch parameters with all-reduce instead of all-gather")
        .refused("stage 3 gathers parameters with all-reduce, not all-gather"),
    key("zero_optimization.allgather_sequential", Bool).def("false")
        .alias("stage3_allgather_sequential")
        .doc("Stage 3: gather parameters one at a time (sets "
             "prefetch_bucket_size to 1)")
        .planned("true: stage 3 prefetches nothing (prefetch_bucket_size 1)"),
    key("zero_optimization.ignore_unused_parameters", Bool).def("true")
        .doc("Stage 2: do not fail on parameters that get no gradient")
        .noEffect("an error check for parameters without gradient"),
    key("zero_optimization.legacy_stage1", Bool).def("false")
        .doc("The pre-0.5.9 stage 1; true makes the engine raise")
        .noEffect("true makes DeepSpeed raise; lint reports it"),
    key("zero_optimization.round_robin_gradients", Bool).def("false")
        .doc("Stage 1/2 with optimizer offload: interleave gradient "
             "partitions across ranks")
        .refused("true: stage 1/2 with offload interleave the gradient copies "
                 "across ranks"),
    key("zero_optimization.zero_hpz_partition_size", Int).def("1").min(0)
        .doc("ZeRO++ hpZ: ranks holding a secondary parameter partition "
             "(1 = off)")
        .planned("stage 3: a secondary partition of the gathered parameters "
                 "per group of this many ranks, and the gathers after a "
                 "parameter's first within the group"),
    key("zero_optimization.zero_quantized_weights", Bool).def("false")
        .doc("ZeRO++ qwZ: all-gather int8-quantized weights")
        .planned("stage 3: each fetch unit's gathers move int8 weights "
                 "and a scale per group of about 8000, dequantized after"),
    key("zero_optimization.zero_quantized_nontrainable_weights", Bool)
        .def("false").doc("Store frozen weights quantized")
        .refused("frozen weights are stored quantized"),
    key("zero_optimization.zero_quantized_gradients", Bool).def("false")
        .doc("ZeRO++ qgZ: reduce quantized gradients")
        .planned("stage 3 across nodes, fp16: each gradient of two or more "
                 "dimensions whose elements divide by twice the world goes "
                 "by 4-bit all-to-alls within the node, then between nodes, "
                 "the rest by the plain reduce-scatter; on one node, where "
                 "DeepSpeed's quantized path does not run, the plain "
                 "reduce-scatter; bf16 or fp32 across nodes refused"),
    key("zero_optimization.zeropp_loco_param", Dict).def("null").nullable()
        .doc("LoCo-ZeRO++ error feedback, e.g. {\"err_beta\": 0.8, "
             "\"reset_T\": 1024}")
        .refused("LoCo error feedback for ZeRO++ quantized gradients"),
    key("zero_optimization.mics_shard_size", Int).def("-1")
        .doc("MiCS: ranks per shard group; > 0 enables MiCS")
        .planned("stage 3: parameters and optimizer state partitioned "
                 "within groups of this many consecutive ranks, gradients "
                 "reduce-scattered within the group and all-reduced across "
                 "the groups once a step (DeepSpeed 0.19.2's MiCS)"),
    key("zero_optimization.mics_hierarchical_params_gather", Bool).def("false")
        .doc("MiCS: hierarchical parameter all-gather")
        .refused("MiCS gathers parameters in two levels"),
    key("zero_optimization.memory_efficient_linear", Bool).def("true")
        .doc("Stage 3: linear layers that do not keep gathered weights")
        .refused("false: stage 3 linear layers keep their gathered weights for the "
                 "backward"),
    key("zero_optimization.pipeline_loading_checkpoint", Bool).def("false")
        .doc("Stage 3: load checkpoints in pipeline mode")
        .noEffect("how a checkpoint is loaded"),
    key("zero_optimization.override_module_apply", Bool).def("true")
        .doc("Stage 3: patch nn.Module.apply to gather parameters")
        .noEffect("only calls of nn.Module.apply"),
    key("zero_optimization.log_trace_cache_warnings", Bool).def("false")
        .doc("Log invalidations of the stage-3 parameter trace")
        .noEffect("log messages"),
    key("zero_optimization.enable_sanity_checks", Bool).def("false")
        .doc("Internal consistency checks")
        .noEffect("internal consistency checks at each step; slower, same training"),
    key("zero_optimization.save_muon_momentum_buffer_in_memory", Bool)
        .def("false").doc("Muon with NVMe: keep the momentum in memory")
        .noEffect("used only by Muon, which dsc refuses"),
    section("zero_optimization.leaf_module", Model)
        .doc("Modules ZeRO-3 treats as leaves (fetched whole)")
        .refused("the named modules are fetched whole at stage 3; dsc fetches per "
                 "module"),
    key("zero_optimization.leaf_module.classes", Any)
        .doc("Class paths (a list or one string); defaults to the sparse-MoE "
             "blocks of Mixtral and Qwen MoE"),
    key("zero_optimization.leaf_module.names", Array).def("[]").of(String)
        .doc("Module names"),
    key("zero_optimization.leaf_module.name_suffixes", Array).def("[]")
        .of(String).doc("Module name suffixes"),
    key("zero_optimization.cpu_offload", Bool).def("null").nullable()
        .replacedBy("zero_optimization.offload_optimizer")
        .doc("Deprecated: true means offload_optimizer {\"device\": \"cpu\"}"),
    key("zero_optimization.cpu_offload_param", Bool).def("null").nullable()
        .replacedBy("zero_optimization.offload_param")
        .doc("Deprecated: true means offload_param {\"device\": \"cpu\"}"),
    key("zero_optimization.cpu_offload_use_pin_memory", Bool).def("null")
        .nullable().unused("deprecated; DeepSpeed warns and ignores it")
        .doc("Deprecated, no effect: use offload_*.pin_memory"),
    misnomer("zero_optimization.grad_hooks", nullptr)
        .doc("Documented once, never implemented: DeepSpeed rejects it"),

    // offload_param (DeepSpeedZeroOffloadParamConfig).
    key("zero_optimization.offload_param.device", String).def("\"none\"")
        .oneOf("none|cpu|nvme").autoBy(AutoBoth)
        .doc("Where 16-bit parameter partitions live")
        .planned("where 16-bit parameter partitions live"),
    key("zero_optimization.offload_param.nvme_path", String).def("null")
        .nullable().autoBy(AutoBoth)
        .doc("Swap folder; required when device is nvme")
        .noEffect("the swap folder's path"),
    key("zero_optimization.offload_param.buffer_count", Int).def("5").min(0)
        .doc("Pinned swap buffers for NVMe")
        .planned("the NVMe swap buffers"),
    key("zero_optimization.offload_param.buffer_size", Int).def("100000000")
        .min(0).doc("Elements per swap buffer; every swapped partition must fit")
        .planned("the NVMe swap buffers' size"),
    key("zero_optimization.offload_param.max_in_cpu", Int).def("1000000000")
        .min(0).doc("Parameter elements kept in CPU memory with NVMe offload")
        .refused("NVMe offload keeps up to this many parameter elements in CPU "
                 "memory; dsc swaps them all"),
    key("zero_optimization.offload_param.pin_memory", Bool).def("true")
        .doc("Page-locked host memory (faster copies; counts against RAM and "
             "ulimit -l)")
        .planned("pinned host buffers and their copy rate"),

    // offload_optimizer (DeepSpeedZeroOffloadOptimizerConfig).
    key("zero_optimization.offload_optimizer.device", String).def("\"none\"")
        .oneOf("none|cpu|nvme").autoBy(AutoBoth)
        .doc("Where optimizer states live; the step runs on the CPU for cpu "
             "and nvme")
        .planned("where the optimizer states live and the step runs"),
    key("zero_optimization.offload_optimizer.nvme_path", String).def("null")
        .nullable().autoBy(AutoBoth)
        .doc("Swap folder; required when device is nvme")
        .noEffect("the swap folder's path"),
    key("zero_optimization.offload_optimizer.buffer_count", Int).def("4")
        .min(0)
        .doc("Pinned swap buffers (at least one per optimizer state, 4 for "
             "Adam)")
        .planned("the NVMe swap buffers"),
    key("zero_optimization.offload_optimizer.pin_memory", Bool).def("true")
        .doc("Page-locked host memory")
        .planned("pinned host buffers and their copy rate"),
    key("zero_optimization.offload_optimizer.pipeline_read", Bool).def("false")
        .doc("Overlap the NVMe read of the next tile with compute")
        .refused("reads the next tile from NVMe during the step; dsc plans one "
                 "tile at a time"),
    key("zero_optimization.offload_optimizer.pipeline_write", Bool)
        .def("false").doc("Overlap the NVMe write of the previous tile")
        .refused("writes the previous tile to NVMe during the step; dsc plans one "
                 "tile at a time"),
    key("zero_optimization.offload_optimizer.fast_init", Bool).def("false")
        .doc("Fast optimizer initialization with NVMe")
        .noEffect("how the swapped states are first written"),
    key("zero_optimization.offload_optimizer.ratio", Float).def("1.0")
        .range(0, 1)
        .doc("Share of the optimizer step run on the CPU; below 1 needs "
             "stage 3")
        .refused("below 1, that share of the step stays on the GPU; dsc runs it "
                 "all on the host"),
    key("zero_optimization.offload_optimizer.super_offload", Bool).def("false")
        .doc("SuperOffload (stage 3)")
        .refused("SuperOffload overlaps the CPU step with the backward"),
    key("zero_optimization.offload_optimizer.cpuadam_cores_perc", Float)
        .def("0.8").range(0, 1).doc("Share of CPU cores for CPU Adam "
                                     "(SuperOffload)")
        .noEffect("used only by SuperOffload, which dsc refuses"),

    // zenflow (ZenFlowConfig).
    key("zero_optimization.zenflow.topk_ratio", Float).def("0.1").range(0, 1)
        .doc("Share of gradient columns updated on the GPU"),
    key("zero_optimization.zenflow.select_strategy", String).def("\"auto\"")
        .oneOf("auto|step|epoch").doc("When to reselect important columns"),
    key("zero_optimization.zenflow.select_interval", Any).def("\"auto\"")
        .doc("\"auto\" or an integer number of steps or epochs"),
    key("zero_optimization.zenflow.update_interval", Any).def("\"auto\"")
        .doc("\"auto\" or an integer number of steps"),
    key("zero_optimization.zenflow.overlap_step", Bool).def("false")
        .doc("Overlap the CPU update with the next step"),
    key("zero_optimization.zenflow.offload", Bool).def("false")
        .doc("Offload the unimportant part of the update"),
    key("zero_optimization.zenflow.auto_ratio", Float).def("0.99").range(0, 1)
        .doc("Threshold for automatic update intervals"),
    key("zero_optimization.zenflow.full_warm_up_rounds", Int).def("0").min(0)
        .doc("Steps of full updates before selection starts"),
    key("zero_optimization.zenflow.pt_reserved_cores_perc", Float).def("0.5")
        .range(0, 1).doc("Share of CPU cores kept for PyTorch"),
    key("zero_optimization.zenflow.steps_per_epoch", Int).def("null")
        .nullable().doc("Set internally for epoch-based selection"),
};

llvm::ArrayRef<KeySpec> zeroKeys() { return Keys; }

} // namespace dsc::schema
