//===- Compression.cpp - Schema: the compression library ------------------===//
//
// compression_training and the legacy quantize_training (MoQ). DeepSpeed
// reads both as plain dicts (deepspeed/compression/config.py,
// runtime/config.py get_eigenvalue_config): unknown keys are ignored, values
// are used as written.
//
// Each technique has shared_parameters and different_groups; the groups are
// named by the user ("wq1") and each applies params to the modules its
// patterns match. DeepSpeedConfig parses the whole section on every start,
// so what it reads with [] there (different_groups, params, the bits or
// dense_ratio in params) is required whenever the technique is written.
//
//===----------------------------------------------------------------------===//

#include "SchemaParts.h"
#include "dsc/Config/SchemaBuilder.h"

namespace dsc::schema {

/// The groups of technique T, one shape for all (get_*_different_groups).
#define DSC_COMPRESSION_GROUPS(T)                                              \
  section("compression_training." T ".different_groups", DictSection)          \
      .required()                                                              \
      .doc("Module groups by name (required: DeepSpeed reads it with [] "      \
           "whenever the technique is written, enabled or not)"),              \
      section("compression_training." T ".different_groups.*", DictSection)    \
          .doc("One group, under a name of your choice"),                      \
      key("compression_training." T ".different_groups.*.modules", Array)      \
          .of(String)                                                          \
          .required()                                                          \
          .doc("Regular expressions of the module names in the group "         \
               "(required: without it DeepSpeed uses \"*\", which is no "      \
               "valid regular expression)"),                                   \
      key("compression_training." T ".different_groups.*.related_modules",     \
          Array)                                                               \
          .def("null")                                                         \
          .nullable()                                                          \
          .of(Array)                                                           \
          .doc("Per modules entry, patterns of the modules whose matching "    \
               "dimension shrinks with it (row, head and channel pruning)"),   \
      section("compression_training." T ".different_groups.*.params",          \
              DictSection)                                                     \
          .required()                                                          \
          .doc("The group's settings (required: read with [])")

static const KeySpec Keys[] = {
    section("compression_training", DictSection)
        .doc("Compression library (init_compression): each technique has "
             "shared_parameters and named module groups")
        .modelCode("DeepSpeed compresses only the modules that the training "
                   "code's init_compression call (deepspeed.compression) "
                   "replaces in the model"),

    section("compression_training.layer_reduction", DictSection)
        .doc("Layer reduction: a shallower student initialized from chosen "
             "teacher layers")
        .modelCode("init_compression copies the chosen teacher layers into "
                   "the student model that the training code builds"),
    key("compression_training.layer_reduction.enabled", Bool).def("false")
        .doc("Initialize the student from the teacher in init_compression "
             "(needs a teacher model)"),
    key("compression_training.layer_reduction.keep_number_layer", Int).min(1)
        .doc("Layers the student keeps; for your script to size the model, "
             "DeepSpeed itself never reads it")
        .noEffect("DeepSpeed never reads it; training scripts read it to "
                  "size the student model"),
    key("compression_training.layer_reduction.module_name_prefix", String)
        .doc("Module path before the layer index, e.g. bert.encoder.layer "
             "(read with [] when enabled)"),
    key("compression_training.layer_reduction.teacher_layer", Array).of(Int)
        .doc("Teacher layers copied into student layers 0, 1, ... (read with "
             "[] when enabled)"),
    key("compression_training.layer_reduction.other_module_name", Array)
        .of(String)
        .doc("Further modules copied from the teacher, e.g. the embeddings "
             "(read with [] when enabled)"),

    section("compression_training.weight_quantization", DictSection)
        .doc("Weight quantization: bits shrink from start_bits to "
             "target_bits"),
    section("compression_training.weight_quantization.shared_parameters",
            DictSection)
        .doc("Settings of every weight-quantization group"),
    key("compression_training.weight_quantization.shared_parameters.enabled",
        Bool)
        .def("false").doc("Quantize weights"),
    key("compression_training.weight_quantization.shared_parameters."
        "quantizer_kernel",
        Bool)
        .def("false").doc("Use DeepSpeed's CUDA quantizer kernel"),
    key("compression_training.weight_quantization.shared_parameters."
        "schedule_offset",
        Int)
        .def("0").min(0).doc("Step at which quantization starts"),
    key("compression_training.weight_quantization.shared_parameters."
        "quantize_groups",
        Int)
        .def("1").min(1).doc("Groups each weight matrix is quantized in"),
    key("compression_training.weight_quantization.shared_parameters."
        "quantize_verbose",
        Bool)
        .def("false").doc("Log each change of bits")
        .noEffect("DeepSpeed logs each change of bits"),
    key("compression_training.weight_quantization.shared_parameters."
        "quantization_type",
        String)
        .def("\"symmetric\"").oneOf("symmetric|asymmetric")
        .doc("Quantization around zero or with an offset (DeepSpeed asserts "
             "one of the two)"),
    key("compression_training.weight_quantization.shared_parameters."
        "quantize_weight_in_forward",
        Bool)
        .def("false")
        .doc("Quantize in the forward pass, keeping full-precision weights"),
    key("compression_training.weight_quantization.shared_parameters.rounding",
        String)
        .def("\"nearest\"").oneOf("nearest|stochastic")
        .doc("Rounding mode (DeepSpeed asserts one of the two)"),
    section("compression_training.weight_quantization.shared_parameters."
            "fp16_mixed_quantize",
            DictSection)
        .doc("Blend full-precision and quantized weights while bits shrink"),
    key("compression_training.weight_quantization.shared_parameters."
        "fp16_mixed_quantize.enabled",
        Bool)
        .def("false").doc("Enable the blend"),
    key("compression_training.weight_quantization.shared_parameters."
        "fp16_mixed_quantize.quantize_change_ratio",
        Float)
        .def("0.001").min(0)
        .doc("Growth of the quantized share per period"),
    DSC_COMPRESSION_GROUPS("weight_quantization"),
    key("compression_training.weight_quantization.different_groups.*.params."
        "start_bits",
        Int)
        .required().min(1)
        .doc("Bits at the start (required: DeepSpeed asserts it)"),
    key("compression_training.weight_quantization.different_groups.*.params."
        "target_bits",
        Int)
        .required().min(1)
        .doc("Bits at the end (required: DeepSpeed asserts it)"),
    key("compression_training.weight_quantization.different_groups.*.params."
        "quantization_period",
        Int)
        .def("1").min(0).doc("Steps between reductions of one bit"),

    section("compression_training.activation_quantization", DictSection)
        .doc("Activation quantization"),
    section("compression_training.activation_quantization.shared_parameters",
            DictSection)
        .doc("Settings of every activation-quantization group"),
    key("compression_training.activation_quantization.shared_parameters."
        "enabled",
        Bool)
        .def("false").doc("Quantize activations"),
    key("compression_training.activation_quantization.shared_parameters."
        "quantization_type",
        String)
        .def("\"symmetric\"").oneOf("symmetric|asymmetric")
        .doc("Quantization around zero or with an offset (DeepSpeed asserts "
             "one of the two)"),
    key("compression_training.activation_quantization.shared_parameters."
        "range_calibration",
        String)
        .def("\"dynamic\"").oneOf("dynamic|static")
        .doc("Range from each batch (dynamic) or a running estimate "
             "(static); DeepSpeed asserts one of the two"),
    key("compression_training.activation_quantization.shared_parameters."
        "schedule_offset",
        Int)
        .def("1000").min(0).doc("Step at which quantization starts"),
    DSC_COMPRESSION_GROUPS("activation_quantization"),
    key("compression_training.activation_quantization.different_groups.*."
        "params.bits",
        Int)
        .required().min(1)
        .doc("Activation bits (required: DeepSpeed asserts it)"),

    section("compression_training.sparse_pruning", DictSection)
        .doc("Unstructured (or block) weight pruning"),
    section("compression_training.sparse_pruning.shared_parameters",
            DictSection)
        .doc("Settings of every sparse-pruning group"),
    key("compression_training.sparse_pruning.shared_parameters.enabled", Bool)
        .def("false").doc("Prune weights"),
    key("compression_training.sparse_pruning.shared_parameters.method",
        String)
        .def("\"l1\"").oneOf("l1|topk|snip_momentum")
        .doc("Pruning criterion; snip_momentum goes through "
             "neural_compressor"),
    key("compression_training.sparse_pruning.shared_parameters."
        "schedule_offset",
        Int)
        .def("1000").min(0).doc("Step at which pruning starts"),
    key("compression_training.sparse_pruning.shared_parameters."
        "schedule_offset_end",
        Int)
        .min(0)
        .doc("Step at which pruning ends (snip_momentum; defaults to "
             "schedule_offset, and must not be below it)"),
    key("compression_training.sparse_pruning.shared_parameters."
        "schedule_offset_stride",
        Int)
        .def("1").min(1).doc("Steps between pruning rounds (snip_momentum)"),
    key("compression_training.sparse_pruning.shared_parameters.block_pattern",
        String)
        .def("\"4x1\"").doc("Block shape pruned together (snip_momentum)"),
    key("compression_training.sparse_pruning.shared_parameters.dense_ratio",
        Float)
        .def("0.1").above(0).max(1)
        .doc("Share of weights kept (snip_momentum; DeepSpeed asserts it is "
             "strictly between 0 and 1)"),
    key("compression_training.sparse_pruning.shared_parameters."
        "excluded_modules",
        Array)
        .def("[]").of(String)
        .doc("Modules never pruned (snip_momentum)"),
    DSC_COMPRESSION_GROUPS("sparse_pruning"),
    key("compression_training.sparse_pruning.different_groups.*.params."
        "dense_ratio",
        Float)
        .required().above(0).max(1)
        .doc("Share of weights kept (required: DeepSpeed asserts it)"),

    section("compression_training.row_pruning", DictSection)
        .doc("Row pruning of linear layers"),
    section("compression_training.row_pruning.shared_parameters", DictSection)
        .doc("Settings of every row-pruning group"),
    key("compression_training.row_pruning.shared_parameters.enabled", Bool)
        .def("false").doc("Prune rows"),
    key("compression_training.row_pruning.shared_parameters.method", String)
        .def("\"l1\"").oneOf("l1|topk")
        .doc("Pruning criterion (DeepSpeed asserts one of the two)"),
    key("compression_training.row_pruning.shared_parameters.schedule_offset",
        Int)
        .def("1000").min(0).doc("Step at which pruning starts"),
    DSC_COMPRESSION_GROUPS("row_pruning"),
    key("compression_training.row_pruning.different_groups.*.params."
        "dense_ratio",
        Float)
        .required().above(0).max(1)
        .doc("Share of rows kept (required: DeepSpeed asserts it)"),

    section("compression_training.head_pruning", DictSection)
        .doc("Attention-head pruning"),
    section("compression_training.head_pruning.shared_parameters",
            DictSection)
        .doc("Settings of every head-pruning group"),
    key("compression_training.head_pruning.shared_parameters.enabled", Bool)
        .def("false").doc("Prune heads"),
    key("compression_training.head_pruning.shared_parameters.method", String)
        .def("\"topk\"").oneOf("l1|topk")
        .doc("Pruning criterion (DeepSpeed asserts one of the two)"),
    key("compression_training.head_pruning.shared_parameters.schedule_offset",
        Int)
        .def("1000").min(0).doc("Step at which pruning starts"),
    key("compression_training.head_pruning.shared_parameters.num_heads", Int)
        .min(1)
        .doc("Attention heads per layer (DeepSpeed asserts it when enabled)"),
    DSC_COMPRESSION_GROUPS("head_pruning"),
    key("compression_training.head_pruning.different_groups.*.params."
        "dense_ratio",
        Float)
        .required().above(0).max(1)
        .doc("Share of heads kept (required: DeepSpeed asserts it)"),

    section("compression_training.channel_pruning", DictSection)
        .doc("Channel pruning of convolutions"),
    section("compression_training.channel_pruning.shared_parameters",
            DictSection)
        .doc("Settings of every channel-pruning group"),
    key("compression_training.channel_pruning.shared_parameters.enabled", Bool)
        .def("false").doc("Prune channels"),
    key("compression_training.channel_pruning.shared_parameters.method",
        String)
        .def("\"l1\"").oneOf("l1|topk")
        .doc("Pruning criterion (DeepSpeed asserts one of the two)"),
    key("compression_training.channel_pruning.shared_parameters."
        "schedule_offset",
        Int)
        .def("1000").min(0).doc("Step at which pruning starts"),
    DSC_COMPRESSION_GROUPS("channel_pruning"),
    key("compression_training.channel_pruning.different_groups.*.params."
        "dense_ratio",
        Float)
        .required().above(0).max(1)
        .doc("Share of channels kept (required: DeepSpeed asserts it)"),

    section("quantize_training", DictSection)
        .doc("Legacy MoQ settings: only eigenvalue is read, and only while "
             "compression weight quantization is enabled")
        .noEffect("DeepSpeed reads it only while compression weight "
                  "quantization is enabled, and then asserts that "
                  "eigenvalue MoQ is off: no eigenvalue is computed"),
    section("quantize_training.eigenvalue", DictSection)
        .doc("Eigenvalue-based MoQ"),
    key("quantize_training.eigenvalue.enabled", Bool).def("false")
        .doc("Must stay false: DeepSpeed asserts that eigenvalue MoQ is "
             "disabled when weight quantization is on"),
    key("quantize_training.eigenvalue.verbose", Bool).def("false")
        .doc("Log the eigenvalues"),
    key("quantize_training.eigenvalue.max_iter", Int).def("100").min(1)
        .doc("Power-iteration limit"),
    key("quantize_training.eigenvalue.tol", Float).def("0.01").min(0)
        .doc("Convergence tolerance"),
    key("quantize_training.eigenvalue.stability", Float).def("1e-6").min(0)
        .doc("Added to divisors for numerical stability"),
    key("quantize_training.eigenvalue.gas_boundary_resolution", Int).def("1")
        .min(1).doc("Gradient-accumulation boundaries between computations"),
    key("quantize_training.eigenvalue.layer_name", String)
        .def("\"bert.encoder.layer\"")
        .doc("Module path of the layer list"),
    key("quantize_training.eigenvalue.layer_num", Int).def("0").min(0)
        .doc("Layers to compute eigenvalues for"),
};

#undef DSC_COMPRESSION_GROUPS

llvm::ArrayRef<KeySpec> compressionKeys() { return Keys; }

} // namespace dsc::schema
