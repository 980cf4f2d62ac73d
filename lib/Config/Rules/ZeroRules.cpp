//===- ZeroRules.cpp - ZeRO stages and offload (docs/lint.md) -------------===//

#include "../LintContext.h"

using namespace llvm;

namespace dsc {

void checkZero(LintContext &C) {
  const ConfigView &V = C.View;
  if (C.Target != LintTarget::DeepSpeed && !V.has("zero_optimization"))
    C.report(Rule::MissingKey, C.range(C.Root.Begin, C.Root.Begin + 1),
             targetName(C.Target) +
                 " needs a zero_optimization section: accelerate raises "
                 "ValueError (Please specify the ZeRO optimization config in "
                 "the DeepSpeed config)");
  if (const JsonValue *Z = V.find("zero_optimization");
      V.has("allgather_size") && !(Z && Z->Kind == JsonKind::Bool))
    C.report(Rule::UnusedKey, C.rangeOf("allgather_size"),
             "`allgather_size` has no effect: DeepSpeed reads it only with the "
             "legacy form \"zero_optimization\": true");
  std::optional<int64_t> Stage = V.zeroStage();
  if (!Stage)
    return;
  std::string StageText = std::to_string(*Stage);

  if (V.getBool("zero_optimization.legacy_stage1").value_or(false))
    C.report(Rule::ZeroStage, C.rangeOf("zero_optimization.legacy_stage1"),
             "the legacy stage 1 was removed in DeepSpeed 0.5.9; the engine "
             "raises when this is true");

  std::string ParamDevice = V.offloadParamDevice();
  std::string OptDevice = V.offloadOptimizerDevice();
  if (ParamDevice != "none" && *Stage < 3)
    C.report(Rule::UnusedKey, C.rangeOf("zero_optimization.offload_param"),
             "parameter offload exists only in ZeRO stage 3; at stage " +
                 StageText + " DeepSpeed ignores offload_param without a "
                             "word");
  if (V.getInt("zero_optimization.zero_hpz_partition_size").value_or(1) > 1 &&
      *Stage < 3)
    C.report(Rule::UnusedKey,
             C.rangeOf("zero_optimization.zero_hpz_partition_size"),
             "ZeRO++ hpZ exists only in ZeRO stage 3; at stage " + StageText +
                 " DeepSpeed ignores zero_hpz_partition_size");
  if (V.getInt("zero_optimization.mics_shard_size").value_or(-1) > 0 &&
      *Stage < 3)
    C.report(Rule::UnusedKey, C.rangeOf("zero_optimization.mics_shard_size"),
             "MiCS exists only in ZeRO stage 3; at stage " + StageText +
                 " DeepSpeed ignores mics_shard_size");
  if (V.getBool("zero_optimization.zero_quantized_weights").value_or(false) &&
      *Stage < 3)
    C.report(Rule::UnusedKey,
             C.rangeOf("zero_optimization.zero_quantized_weights"),
             "ZeRO++ qwZ quantizes only ZeRO stage 3's parameter gathers; at "
             "stage " + StageText + " DeepSpeed ignores zero_quantized_weights");
  if (V.getBool("zero_optimization.zero_quantized_gradients").value_or(false) &&
      *Stage < 3)
    C.report(Rule::UnusedKey,
             C.rangeOf("zero_optimization.zero_quantized_gradients"),
             "ZeRO++ qgZ quantizes only ZeRO stage 3's gradient reduction; "
             "at stage " + StageText +
                 " DeepSpeed ignores zero_quantized_gradients");
  // ZeRO++ qgZ at stage 3 (stage3.py, coalesced_collectives.py
  // all_to_all_quant_reduce): the optimizer asserts reduce_scatter; across
  // nodes its CUDA quantizer reads every gradient as fp16 whatever the
  // type, with no check.
  if (V.getBool("zero_optimization.zero_quantized_gradients").value_or(false) &&
      *Stage == 3) {
    if (!V.getBool("zero_optimization.reduce_scatter").value_or(true))
      C.report(Rule::Communication,
               C.rangeOf("zero_optimization.reduce_scatter"),
               "ZeRO++ qgZ needs reduce_scatter: DeepSpeed's stage 3 asserts "
               "it when zero_quantized_gradients is true");
    // The model's type where the config does not name one; unknown where
    // the integration fills it ("auto").
    std::string Comm = V.getString("communication_data_type").value_or("");
    bool Known = !Comm.empty() ||
                 (!V.isAuto("bf16.enabled") && !V.isAuto("fp16.enabled"));
    if (Comm.empty())
      Comm = V.fp16Enabled() ? "fp16" : V.bf16Enabled() ? "bf16" : "fp32";
    if (Known && !StringRef(Comm).equals_insensitive("fp16"))
      C.report(Rule::Precision, Severity::Warning,
               C.rangeOf("zero_optimization.zero_quantized_gradients"),
               "ZeRO++ qgZ across nodes quantizes the gradients as fp16 "
               "whatever their type: these are " + Comm +
                   ", whose bits DeepSpeed's kernels would read as fp16 "
                   "without an error (on one node qgZ does nothing)");
    // Its last step divides the sum over every rank by the nodes, not the
    // ranks: the gradients it quantizes arrive GPUs-a-node times the mean,
    // which Adam's update hardly sees but the clipping norm does.
    else if (Known && V.getNumber("gradient_clipping").value_or(0) > 0)
      C.report(Rule::Precision, Severity::Warning,
               C.rangeOf("zero_optimization.zero_quantized_gradients"),
               "ZeRO++ qgZ across nodes divides the quantized gradients' sum "
               "by the nodes, not the ranks: they arrive GPUs-per-node times "
               "the mean, and gradient_clipping clips their norm as that "
               "(DeepSpeed's all_to_all_quant_reduce; on one node qgZ does "
               "nothing)");
  }
  if (OptDevice != "none" && *Stage == 0)
    C.report(Rule::ZeroStage, C.rangeOf("zero_optimization.offload_optimizer"),
             "optimizer offload needs ZeRO stage 1, 2 or 3; at stage 0 no "
             "ZeRO optimizer takes the states to the CPU");
  if (OptDevice == "nvme" && (*Stage == 1 || *Stage == 2))
    C.report(Rule::Offload, Severity::Warning,
             C.rangeOf("zero_optimization.offload_optimizer.device"),
             "at stage " + StageText +
                 " DeepSpeed treats optimizer offload to nvme as offload to "
                 "the CPU; swapping to NVMe exists only in stage 3");
  if (*Stage == 3) {
    for (StringRef Block : {"offload_param", "offload_optimizer"}) {
      std::string Device = Block == "offload_param" ? ParamDevice : OptDevice;
      std::string Path = ("zero_optimization." + Block + ".nvme_path").str();
      if (Device == "nvme" && !V.getString(Path) && !V.isAuto(Path))
        C.report(Rule::Offload,
                 C.rangeOf(("zero_optimization." + Block + ".device").str()),
                 Twine(Block) + " to nvme needs nvme_path (the folder to swap "
                                "to); DeepSpeed fails without it");
    }
  }
  if (std::optional<double> Ratio =
          V.getNumber("zero_optimization.offload_optimizer.ratio");
      Ratio && *Ratio < 1.0 && *Stage != 3)
    C.report(Rule::ZeroStage,
             C.rangeOf("zero_optimization.offload_optimizer.ratio"),
             "partial optimizer offload (ratio < 1) works only with ZeRO stage "
             "3");
  if (*Stage == 1 || *Stage == 2)
    if (std::optional<int64_t> A =
            V.getInt("zero_optimization.allgather_bucket_size");
        A && *A % 2 != 0)
      C.report(Rule::OutOfRange,
               C.rangeOf("zero_optimization.allgather_bucket_size"),
               "allgather_bucket_size must be even at stage " + StageText +
                   " (a multiple of NCCL's start alignment, 2), not " +
                   Twine(*A));
  if (*Stage == 3 &&
      V.getBool("zero_optimization.elastic_checkpoint").value_or(false))
    C.report(Rule::UnusedKey, C.rangeOf("zero_optimization.elastic_checkpoint"),
             "elastic_checkpoint is not supported by ZeRO stage 3");

  // ZeRO-3 under the HF Trainer or accelerate saves no real weights
  // without this flag (DeepSpeed issue 2736; docs/lint.md).
  if (*Stage == 3 && C.Target != LintTarget::DeepSpeed &&
      !V.isAuto("zero_optimization.gather_16bit_weights_on_model_save") &&
      !V.getBool("zero_optimization.gather_16bit_weights_on_model_save")
           .value_or(false))
    C.report(Rule::ZeroStage, Severity::Warning, C.rangeOf("zero_optimization.stage"),
             "at ZeRO stage 3 the HF Trainer and accelerate save the model's "
             "weights only with \"stage3_gather_16bit_weights_on_model_save\": "
             "true; without it the saved model is empty (recover it with "
             "zero_to_fp32.py from the checkpoint)");

  // managed_gradient_accumulation: false (engine.py).
  if (!V.getBool("managed_gradient_accumulation").value_or(true) &&
      V.overlapComm().value_or(false) && *Stage != 2)
    C.report(Rule::ZeroStage, C.rangeOf("managed_gradient_accumulation"),
             "managed_gradient_accumulation false supports overlap_comm only "
             "with ZeRO stage 2 (stage " +
                 StageText + ", overlap_comm on)");

  // Pipeline parallelism.
  if (*Stage >= 2 && V.has("pipeline"))
    C.report(Rule::Parallelism, Severity::Warning, C.rangeOf("pipeline"),
             "ZeRO stage " + StageText +
                 " is incompatible with pipeline parallelism; DeepSpeed "
                 "asserts if this config drives a PipelineModule");
}

} // namespace dsc
