//===- Features.cpp - Schema: feature sections ----------------------------===//
//
// Activation checkpointing, NVMe I/O, checkpoints, elasticity, autotuning,
// DeepCompile, tensor/expert/pipeline parallelism and the smaller feature
// sections; the compression and data efficiency libraries have files of their
// own. Most are plain dicts (unknown keys silently ignored); compile,
// tensor_parallel, hybrid_engine and weight_quantization are pydantic models.
//
//===----------------------------------------------------------------------===//

#include "SchemaParts.h"
#include "dsc/Config/SchemaBuilder.h"

namespace dsc::schema {

static constexpr const char *WeightQuantUnread =
    "DeepSpeed parses it but reads only quantized_initialization and "
    "post_init_quant";

static const KeySpec Keys[] = {
    section("activation_checkpointing", DictSection)
        .doc("deepspeed.checkpointing settings for activation checkpointing")
        .modelCode("configures deepspeed.checkpointing, which only code that "
                   "calls it uses; Hugging Face models checkpoint with "
                   "torch.utils.checkpoint (dsc plan --checkpoint-layers)"),
    key("activation_checkpointing.partition_activations", Bool).def("false")
        .doc("Partition checkpointed activations across model-parallel ranks"),
    key("activation_checkpointing.contiguous_memory_optimization", Bool)
        .def("false")
        .doc("Copy partitioned activations into one contiguous buffer (needs "
             "number_checkpoints)"),
    key("activation_checkpointing.cpu_checkpointing", Bool).def("false")
        .doc("Move checkpointed activations to CPU memory"),
    key("activation_checkpointing.number_checkpoints", Int).def("null")
        .nullable().min(1)
        .doc("Number of checkpoints (sizes the contiguous buffer)"),
    key("activation_checkpointing.synchronize_checkpoint_boundary", Bool)
        .def("false").doc("Synchronize the device at each checkpoint"),
    key("activation_checkpointing.profile", Bool).def("false")
        .doc("Time each checkpointed function"),
    misnomer("activation_checkpointing.partitioned_activations",
             "activation_checkpointing.partition_activations")
        .doc("Spelling in DeepSpeed's own format string; the key read is "
             "partition_activations"),

    section("aio", DictSection).nullable()
        .doc("Asynchronous NVMe I/O (libaio) used by NVMe offload; a top-level "
             "section")
        .refused("sets the request size, queue depth and threads of NVMe "
                 "offload's reads and writes; dsc's NVMe time model uses the "
                 "hardware profile's NVMe rates and does not read aio"),
    key("aio.block_size", Int).def("1048576").above(0)
        .doc("Bytes per I/O request"),
    key("aio.queue_depth", Int).def("8").above(0)
        .doc("Requests in flight per submission queue"),
    key("aio.intra_op_parallelism", Int).def("1").above(0)
        .doc("Threads per I/O operation"),
    key("aio.single_submit", Bool).def("false")
        .doc("Submit requests one at a time instead of in batches"),
    key("aio.overlap_events", Bool).def("true")
        .doc("Overlap submission with completion"),
    key("aio.use_gds", Bool).def("false")
        .doc("GPUDirect Storage (CUDA only)")
        .refused("GPUDirect Storage puts the parameter swap buffers in GPU "
                 "memory and reads NVMe into them directly; dsc plans them in "
                 "pinned host memory"),
    misnomer("aio.thread_count", "aio.intra_op_parallelism")
        .doc("Named in DeepSpeed's docs, never read; the code reads "
             "intra_op_parallelism"),

    section("flops_profiler", DictSection).doc("The FLOPS profiler")
        .noEffect("prints a FLOPS, parameter and latency report of one "
                  "training step; the step's work and memory are unchanged"),
    key("flops_profiler.enabled", Bool).def("false")
        .doc("Profile one step (also turns on wall_clock_breakdown)")
        .noEffect("profiles one step on rank 0, synchronizing the device "
                  "around each module's forward there, and turns on "
                  "wall_clock_breakdown's timers, which wait for the GPU once "
                  "per step"),
    key("flops_profiler.recompute_fwd_factor", Float).def("0.0").min(0)
        .doc("Share of the forward recomputed by activation checkpointing"),
    key("flops_profiler.profile_step", Int).def("1").min(1)
        .doc("Step to profile"),
    key("flops_profiler.module_depth", Int).def("-1")
        .doc("Module depth of the report (-1 = all)"),
    key("flops_profiler.top_modules", Int).def("1").min(1)
        .doc("Modules listed per depth"),
    key("flops_profiler.detailed", Bool).def("true")
        .doc("Per-module breakdown"),
    key("flops_profiler.output_file", String).def("null").nullable()
        .doc("Report file; stdout when null"),

    section("checkpoint", DictSection).doc("Checkpoint saving and loading")
        .noEffect("changes how checkpoints are saved, named and loaded; the "
                  "training step is unchanged"),
    key("checkpoint.tag_validation", String).def("\"Warn\"")
        .oneOf("Warn|Ignore|Fail").anyCase()
        .onAuto("DeepSpeedConfigError: invalid tag_validation, while "
                "DeepSpeed parses the config")
        .doc("What to do when ranks save under different tags"),
    key("checkpoint.load_universal", Bool).def("false")
        .doc("Load a universal (reshardable) checkpoint"),
    key("checkpoint.use_node_local_storage", Bool).def("false")
        .doc("Each node saves to its own storage (HF sets it with "
             "save_on_each_node)"),
    key("checkpoint.checkpoint_serialization", Bool).def("true")
        .doc("Serialize with torch.save's zipfile format"),
    section("checkpoint.parallel_write", DictSection)
        .doc("Parallel checkpoint writing"),
    key("checkpoint.parallel_write.pipeline_stage", Bool).def("false")
        .doc("Write pipeline stages in parallel"),
    section("checkpoint.writer", DictSection).nullable()
        .doc("Checkpoint writer engine"),
    key("checkpoint.writer.type", String).def("\"FAST\"")
        .oneOf("MOCK|PYTHON|FAST").anyCase().doc("Writer implementation"),
    key("checkpoint.writer.io_buffer_size", Int).def("67108864").above(0)
        .doc("Bytes of the I/O buffer"),
    key("checkpoint.writer.io_buffer_double", Bool).def("true")
        .doc("Double-buffer writes"),
    key("checkpoint.writer.show_statistics", Bool).def("false")
        .doc("Print write statistics"),
    key("checkpoint.writer.data_parallel", String).def("null").nullable()
        .oneOf("REPLICA|SOCKET|MACHINE").anyCase()
        .doc("How data-parallel ranks share the writing"),
    key("checkpoint.writer.decoupled", Bool).def("false")
        .doc("Write in a separate process"),
    key("checkpoint.writer.io_multiplier", Int).def("1").min(1)
        .doc("I/O size multiplier"),

    section("elasticity", DictSection)
        .doc("Elastic training: DeepSpeed picks the batch size for a range of "
             "GPU counts")
        .refused("DeepSpeed replaces the batch keys with the elastic batch it "
                 "computes from this block and the world size; dsc plans the "
                 "batch keys as written"),
    key("elasticity.enabled", Bool).def("false").doc("Use elastic training"),
    key("elasticity.max_train_batch_size", Int).def("2000").above(0)
        .doc("Largest acceptable global batch (required when enabled)"),
    key("elasticity.micro_batch_sizes", Array).def("[2, 4, 6]").of(Int)
        .exactType()
        .doc("Acceptable micro batches (required when enabled)"),
    key("elasticity.min_gpus", Int).def("1").min(1)
        .doc("Fewest GPUs to plan for"),
    key("elasticity.max_gpus", Int).def("10000").min(1)
        .doc("Most GPUs to plan for"),
    key("elasticity.min_time", Int).def("0").min(0)
        .doc("Minimum running time in minutes before scaling")
        .noEffect("DeepSpeed checks that it is not negative and uses it "
                  "nowhere else"),
    key("elasticity.version", Any).def("0.2")
        .doc("Algorithm version: 0.1, or 0.2 (model-parallel aware)"),
    key("elasticity.prefer_larger_batch", Bool).def("true")
        .doc("Between equally flexible batch sizes, take the larger"),
    key("elasticity.ignore_non_elastic_batch_info", Bool).def("false")
        .doc("Ignore the batch keys instead of refusing them")
        .noEffect("decides whether DeepSpeed rejects batch keys written beside "
                  "enabled elasticity; the elastic batch replaces them either "
                  "way"),
    key("elasticity.num_gpus_per_node", Int).def("1").min(1)
        .doc("GPUs per node (version 0.2)"),
    key("elasticity.model_parallel_size", Int).def("1").min(1)
        .doc("Model-parallel degree (version 0.2)"),
    misnomer("elasticity.prefer_large_batch", "elasticity.prefer_larger_batch")
        .doc("Spelling in DeepSpeed's docs; the code reads "
             "prefer_larger_batch"),

    section("autotuning", DictSection).doc("The DeepSpeed autotuner")
        .noEffect("configures the autotuner, which launches separate "
                  "experiment runs with configs of its own; the steps of this "
                  "run are unchanged"),
    key("autotuning.enabled", Bool).def("false").doc("Run the autotuner")
        .noEffect("makes the run an autotuning experiment: it turns on the "
                  "FLOPS profiler, times steps start_profile_step to "
                  "end_profile_step, writes the metric file and exits"),
    key("autotuning.fast", Bool).def("true")
        .doc("Tune only the micro batch size and ZeRO stage"),
    key("autotuning.results_dir", String).def("\"autotuning_results\"")
        .doc("Result folder (must not be empty)"),
    key("autotuning.exps_dir", String).def("\"autotuning_exps\"")
        .doc("Experiment folder (must not be empty)"),
    key("autotuning.overwrite", Bool).def("true")
        .doc("Overwrite earlier results"),
    key("autotuning.start_profile_step", Int).def("3").min(0)
        .doc("First profiled step"),
    key("autotuning.end_profile_step", Int).def("5").min(0)
        .doc("Last profiled step"),
    key("autotuning.metric", String).def("\"throughput\"")
        .oneOf("latency|throughput|flops|forward|step").doc("What to optimize"),
    key("autotuning.metric_path", String).def("null").nullable()
        .doc("Where the metric is written"),
    key("autotuning.tuner_type", String).def("\"gridsearch\"")
        .oneOf("gridsearch|random|model_based").doc("Search strategy"),
    key("autotuning.tuner_early_stopping", Int).def("5").min(0)
        .doc("Trials without improvement before stopping"),
    key("autotuning.tuner_num_trials", Int).def("50").min(1)
        .doc("Maximum trials"),
    key("autotuning.arg_mappings", Dict).def("null").nullable()
        .doc("Config keys mapped to script arguments"),
    section("autotuning.model_info", DictSection).nullable()
        .doc("Model facts given to the autotuner"),
    key("autotuning.model_info.profile", Bool).def("false")
        .doc("Profile the model instead")
        .noEffect("with autotuning enabled, the run writes the parameter count "
                  "and the first forward's activation memory, then exits"),
    key("autotuning.model_info.num_params", Int).def("null").nullable()
        .doc("Parameter count"),
    key("autotuning.model_info.hidden_size", Int).def("null").nullable()
        .doc("Hidden size"),
    key("autotuning.model_info.num_layers", Int).def("null").nullable()
        .doc("Layer count"),
    key("autotuning.model_info_path", String).def("null").nullable()
        .doc("Where model info is written"),
    key("autotuning.mp_size", Int).def("1").min(1).doc("Model-parallel size"),
    key("autotuning.max_train_batch_size", Int).def("null").nullable()
        .doc("Largest global batch to try"),
    key("autotuning.min_train_batch_size", Int).def("1").min(1)
        .doc("Smallest global batch to try"),
    key("autotuning.max_train_micro_batch_size_per_gpu", Int).def("1024")
        .min(1).doc("Largest micro batch to try"),
    key("autotuning.min_train_micro_batch_size_per_gpu", Int).def("1").min(1)
        .doc("Smallest micro batch to try"),
    key("autotuning.num_tuning_micro_batch_sizes", Int).def("3").min(1)
        .doc("Micro batch sizes tried"),

    section("compile", Model).doc("DeepCompile")
        .refused("Once engine.compile() runs (accelerate calls it under "
                 "torch.compile), DeepCompile schedules ZeRO's gathers, frees, "
                 "offloads and reductions in the compiled graph; dsc plans "
                 "DeepSpeed's eager ZeRO hooks"),
    key("compile.deepcompile", Bool).def("false").doc("Enable DeepCompile"),
    key("compile.free_activation", Bool).def("false")
        .doc("Free activations early"),
    key("compile.free_activation_threshold", Int).def("10485760")
        .doc("Bytes above which activations are freed"),
    key("compile.offload_activation", Bool).def("false")
        .doc("Offload activations (not with offload_parameters or "
             "offload_opt_states)"),
    key("compile.offload_activation_pin_memory", Bool).def("true")
        .doc("Pinned memory for offloaded activations"),
    key("compile.offload_opt_states", Bool).def("false")
        .doc("Offload optimizer states (not with ZeRO optimizer offload)"),
    key("compile.double_buffer", Bool).def("true")
        .doc("Double-buffer parameter gathers"),
    key("compile.symmetric_memory", Bool).def("false")
        .doc("Use symmetric memory for collectives"),
    key("compile.debug_log", Bool).def("false").doc("Debug logging")
        .noEffect("Logs what DeepCompile's passes do"),
    key("compile.offload_parameters", Bool).def("false")
        .doc("Offload parameters"),
    key("compile.sync_before_reduce", Bool).def("false")
        .doc("Synchronize before reductions"),
    key("compile.sync_after_reduce", Bool).def("false")
        .doc("Synchronize after reductions"),
    key("compile.sync_before_allgather", Bool).def("false")
        .doc("Synchronize before all-gathers"),
    key("compile.sync_after_allgather", Bool).def("false")
        .doc("Synchronize after all-gathers"),
    key("compile.keep_int_input_tensors", Bool).def("true")
        .doc("Keep integer input tensors"),
    key("compile.keep_all_input_tensors", Bool).def("false")
        .doc("Keep all input tensors"),
    key("compile.passes", Array).def("null").nullable().of(String)
        .doc("Passes to run: z1, z3, autosp, autotp"),
    misnomer("compile.enabled", nullptr)
        .doc("The torch.compile settings (enabled, backend, kwargs) left the "
             "config in DeepSpeed 0.16.6; DeepSpeed now rejects them: call "
             "engine.compile(backend=...) instead"),
    misnomer("compile.backend", nullptr)
        .doc("The torch.compile settings (enabled, backend, kwargs) left the "
             "config in DeepSpeed 0.16.6; DeepSpeed now rejects them: call "
             "engine.compile(backend=...) instead"),
    misnomer("compile.kwargs", nullptr)
        .doc("The torch.compile settings (enabled, backend, kwargs) left the "
             "config in DeepSpeed 0.16.6; DeepSpeed now rejects them: call "
             "engine.compile(backend=...) instead"),

    section("tensor_parallel", Model).doc("AutoTP tensor-parallel training")
        .refused("AutoTP splits every Linear across tensor-parallel ranks and "
                 "all-reduces their outputs; dsc plans data parallelism only"),
    key("tensor_parallel.autotp_size", Int).def("0").min(0)
        .doc("Tensor-parallel degree (0 = off)"),
    key("tensor_parallel.tp_overlap_comm", Bool).def("false")
        .doc("Overlap tensor-parallel communication"),
    section("tensor_parallel.tensor_parallel", Model).alias("tp")
        .doc("Inner tensor-parallel group settings"),
    key("tensor_parallel.tensor_parallel.tp_size", Int).def("1").min(1)
        .doc("Tensor-parallel group size"),
    key("tensor_parallel.tensor_parallel.tp_grain_size", Int).def("1").min(1)
        .doc("Partition granularity"),
    key("tensor_parallel.tensor_parallel.mpu", Any).def("null")
        .doc("Model-parallel unit (set from code)"),
    key("tensor_parallel.tensor_parallel.tp_group", Any).def("null")
        .doc("Process group (set from code)"),
    key("tensor_parallel.injection_policy_tuple", Any).def("null")
        .doc("Injection policy (set from code)"),
    key("tensor_parallel.partition_config", Dict).def("null").nullable()
        .doc("Custom partition specs (use_default_specs, layer_specs)"),
    key("tensor_parallel.preset_model", String).def("null").nullable()
        .oneOf("llama|bloom|chatglm|mixtral|deepseek_v2|qwen2|phi3")
        .doc("Built-in partition preset"),
    key("tensor_parallel.keep_module_on_host", Bool).def("false")
        .doc("Keep modules on the host while partitioning"),
    key("tensor_parallel.replace_with_kernel_inject", Bool).def("false")
        .alias("kernel_inject").doc("Inject DeepSpeed kernels"),

    section("expert_parallel", DictSection)
        .doc("AutoEP expert parallelism (here \"auto\" is a real value)")
        .refused("AutoEP replaces the model's MoE layers with expert-parallel "
                 "ones that exchange tokens between ranks by all-to-all; dsc "
                 "plans data parallelism only"),
    key("expert_parallel.enabled", Bool).def("false").doc("Enable AutoEP"),
    key("expert_parallel.autoep_size", Int).def("1").min(1)
        .doc("Expert-parallel degree"),
    key("expert_parallel.expert_tensor_parallel_size", Int).def("1")
        .range(1, 1).doc("Reserved; only 1 is supported"),
    key("expert_parallel.validate_folding_routing", Bool).def("false")
        .doc("Validate routing after folding"),
    key("expert_parallel.preset_model", String).def("null").nullable()
        .oneOf("deepseek_v2|deepseek_v3|mixtral|qwen3_5_moe|qwen3_moe")
        .doc("Built-in model preset"),
    key("expert_parallel.moe_layer_pattern", String).def("null").nullable()
        .doc("Pattern of MoE layer names"),
    key("expert_parallel.expert_pattern", String).def("null").nullable()
        .doc("Attribute of the experts"),
    key("expert_parallel.router_pattern", String).def("null").nullable()
        .doc("Attribute of the router"),
    key("expert_parallel.use_grouped_mm", Bool).def("true")
        .doc("Grouped matrix multiply for experts"),
    key("expert_parallel.disable_triton_grouped_mm", Bool).def("false")
        .doc("Do not use the Triton grouped GEMM"),
    key("expert_parallel.route_norm", Any).def("null")
        .doc("Normalize routing weights"),
    key("expert_parallel.route_scale", Float).def("1.0")
        .doc("Routing weight scale"),
    key("expert_parallel.score_apply", String).def("\"auto\"")
        .oneOf("auto|pre|post").doc("Where router scores apply"),
    key("expert_parallel.combine_impl", String).def("\"auto\"")
        .oneOf("auto|weighted_sum|legacy_bmm").doc("Expert output combine"),
    key("expert_parallel.score_func", String).def("\"auto\"")
        .oneOf("auto|softmax|sigmoid").doc("Router score function"),
    key("expert_parallel.top_k", Any).def("\"auto\"")
        .doc("Experts per token, or \"auto\""),
    key("expert_parallel.routed_scaling_factor", Any).def("\"auto\"")
        .doc("Routed output scale, or \"auto\""),
    key("expert_parallel.num_expert_groups", Int).def("null").nullable()
        .min(1).doc("Expert groups for group-limited routing"),
    key("expert_parallel.num_limited_groups", Int).def("null").nullable()
        .min(1).doc("Groups each token may use"),
    key("expert_parallel.load_balance_coeff", Any).def("null")
        .doc("Must be null: auxiliary-loss-free balancing is unsupported"),
    key("expert_parallel.expert_w1", String).def("null").nullable()
        .doc("Attribute of the first expert weight"),
    key("expert_parallel.expert_w2", String).def("null").nullable()
        .doc("Attribute of the second expert weight"),
    key("expert_parallel.expert_w3", String).nullable()
        .doc("Attribute of the third expert weight; null = fused"),
    key("expert_parallel.num_experts_attr", String).def("null").nullable()
        .doc("Config attribute holding the expert count"),
    key("expert_parallel.top_k_attr", String).def("null").nullable()
        .doc("Config attribute holding top-k"),
    key("expert_parallel.has_shared_experts", Bool).def("null").nullable()
        .doc("Whether the model has shared experts"),
    key("expert_parallel.shared_experts_pattern", String).def("null")
        .nullable().doc("Attribute of the shared experts"),
    key("expert_parallel.shared_experts_gate_pattern", String).def("null")
        .nullable().doc("Attribute of the shared-expert gate"),

    section("hybrid_engine", Model)
        .doc("RLHF hybrid engine (training and generation in one engine)")
        .refused("The hybrid engine runs generate() between training steps "
                 "with DeepSpeed's inference kernels, a KV cache and gathered "
                 "weights; dsc plans the training step only"),
    key("hybrid_engine.enabled", Bool).def("false").doc("Enable it"),
    key("hybrid_engine.max_out_tokens", Int).def("512").min(1)
        .doc("Longest generation"),
    key("hybrid_engine.inference_tp_size", Int).def("1").min(1)
        .doc("Tensor parallelism while generating"),
    key("hybrid_engine.release_inference_cache", Bool).def("false")
        .doc("Free the KV cache after generating"),
    key("hybrid_engine.pin_parameters", Bool).def("true")
        .doc("Pin gathered parameters"),
    key("hybrid_engine.tp_gather_partition_size", Int).def("8").min(1)
        .doc("Partition size of tensor-parallel gathers"),
    key("hybrid_engine.enable_cuda_graph", Bool).def("false")
        .doc("CUDA graphs for generation"),

    section("pipeline", DictSection)
        .doc("PipelineModule settings (merged over DeepSpeed's defaults)")
        .modelCode("Read by the pipeline engine, which runs only a model built "
                   "as a PipelineModule; other models train without it"),
    key("pipeline.stages", Any).def("\"auto\"")
        .doc("Pipeline stages, or \"auto\" (a real value here)"),
    key("pipeline.partition", String).def("\"best\"")
        .doc("Layer partition method (parameters, uniform, type:REGEX, best)"),
    key("pipeline.seed_layers", Bool).def("false")
        .doc("Seed each layer differently"),
    key("pipeline.activation_checkpoint_interval", Int).def("0").min(0)
        .doc("Layers between activation checkpoints (0 = none)"),
    key("pipeline.pipe_partitioned", Bool).def("true").exactType()
        .doc("Partition activations between stages (must be a boolean)"),
    key("pipeline.grad_partitioned", Bool).def("true").exactType()
        .doc("Partition gradients between stages (must be a boolean)"),
    key("pipeline.use_reentrant", Bool).def("null").nullable()
        .doc("Reentrant activation checkpointing (null = true)"),

    section("sparse_attention", DictSection).doc("Sparse attention kernels")
        .modelCode("configures DeepSpeed's sparse attention modules, which "
                   "only a model built with them (SparseSelfAttention) runs"),
    key("sparse_attention.mode", String).def("\"fixed\"")
        .oneOf("dense|fixed|variable|bigbird|bslongformer")
        .doc("Sparsity layout"),
    key("sparse_attention.block", Int).def("16").min(1).doc("Block size"),
    key("sparse_attention.different_layout_per_head", Bool).def("false")
        .doc("A layout per head"),
    key("sparse_attention.num_local_blocks", Int).def("4").min(0)
        .doc("Local blocks (fixed)"),
    key("sparse_attention.num_global_blocks", Int).def("1").min(0)
        .doc("Global blocks (fixed, bigbird)"),
    key("sparse_attention.attention", String).def("\"bidirectional\"")
        .oneOf("unidirectional|bidirectional").doc("Attention direction"),
    key("sparse_attention.horizontal_global_attention", Bool).def("false")
        .doc("Global blocks attend horizontally too"),
    key("sparse_attention.num_different_global_patterns", Int).def("1").min(1)
        .doc("Global patterns (fixed)"),
    key("sparse_attention.num_random_blocks", Int).def("0").min(0)
        .doc("Random blocks (variable, bigbird)"),
    key("sparse_attention.local_window_blocks", Array).def("[4]").of(Int)
        .doc("Local window sizes (variable)"),
    key("sparse_attention.global_block_indices", Array).def("[0]").of(Int)
        .doc("Global block indices"),
    key("sparse_attention.global_block_end_indices", Array).def("null")
        .nullable().of(Int).doc("Global block end indices"),
    key("sparse_attention.num_sliding_window_blocks", Int).def("3").min(0)
        .doc("Sliding window blocks (bigbird, bslongformer)"),

    section("progressive_layer_drop", DictSection)
        .doc("Progressive layer dropping")
        .modelCode("DeepSpeed passes progressive_layer_drop and pld_theta to "
                   "the model's forward; only a model written to skip layers "
                   "with them drops any"),
    key("progressive_layer_drop.enabled", Bool).required()
        .doc("Enable it (required: DeepSpeed pops it without a default)"),
    key("progressive_layer_drop.theta", Float).def("1.0")
        .doc("Lowest keep probability (read with [] when enabled)"),
    key("progressive_layer_drop.gamma", Float).def("0.001")
        .doc("Decay rate (read with [] when enabled)"),

    section("weight_quantization", Model)
        .doc("Weight quantization at ZeRO-3 initialization")
        .refused("zero.Init stores each Linear weight quantized and "
                 "dequantizes it at every gather; dsc plans unquantized "
                 "weights"),
    key("weight_quantization.enabled", Bool).def("true").doc("Enable it")
        .noEffect(WeightQuantUnread),
    key("weight_quantization.num_bits", Int).def("8").oneOf("4|8")
        .doc("Bits per weight").noEffect(WeightQuantUnread),
    key("weight_quantization.q_type", String).def("\"symmetric\"")
        .oneOf("symmetric|asymmetric").doc("Quantization type")
        .noEffect(WeightQuantUnread),
    key("weight_quantization.q_groups", Int).def("1").min(1)
        .doc("Quantization groups").noEffect(WeightQuantUnread),
    key("weight_quantization.quantized_initialization", Dict).def("{}")
        .doc("Quantizer settings for zero.Init"),
    key("weight_quantization.post_init_quant", Dict).def("{}")
        .doc("Per-module quantizer settings after init")
        .modelCode("Read only by code that calls DeepSpeed's post-init "
                   "quantization (deepspeed.inference.quantization)"),

    section("nebula", DictSection).doc("Azure Nebula checkpointing")
        .noEffect("Nebula saves and loads checkpoints through Azure's "
                  "service; the training step is unchanged"),
    key("nebula.enabled", Bool).def("false").doc("Enable Nebula"),
    key("nebula.persistent_storage_path", String).def("null").nullable()
        .doc("Where checkpoints persist"),
    key("nebula.persistent_time_interval", Int).def("100").min(1)
        .doc("Seconds between persists"),
    key("nebula.num_of_version_in_retention", Int).def("2").min(1)
        .doc("Checkpoint versions kept"),
    key("nebula.enable_nebula_load", Bool).def("true")
        .doc("Load through Nebula"),
    key("nebula.nebula_load_path", String).def("null").nullable()
        .doc("Path to load from"),
};

llvm::ArrayRef<KeySpec> featureKeys() { return Keys; }

} // namespace dsc::schema
