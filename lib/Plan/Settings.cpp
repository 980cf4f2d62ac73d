//===- Settings.cpp - The config values a plan depends on -----------------===//
//
// Reads the resolved config through ConfigView (so aliases, legacy
// spellings and DeepSpeed's defaults apply) into plan::Info, and refuses
// what the planner does not model, saying so.
//
//===----------------------------------------------------------------------===//

#include "PlanInternal.h"
#include "dsc/LrSchedule.h"
#include "dsc/Version.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

using namespace llvm;

namespace dsc {

namespace {

Error settingError(const Twine &Message) {
  return createStringError(inconvertibleErrorCode(), Message);
}

std::optional<plan::DType> dtypeNamed(StringRef Name) {
  std::string N = Name.lower();
  if (N == "fp32" || N == "float32" || N == "float" || N == "torch.float32")
    return plan::DType::F32;
  if (N == "fp16" || N == "float16" || N == "half" || N == "torch.float16")
    return plan::DType::F16;
  if (N == "bf16" || N == "bfloat16" || N == "torch.bfloat16")
    return plan::DType::BF16;
  return std::nullopt;
}

/// Whether DeepSpeed builds an Adam with decoupled weight decay for the
/// class (FusedAdam and DeepSpeedCPUAdam default to adam_w_mode; a
/// torch.optim.Adam is checked for its decay below): what dsrun runs.
bool runsAdamW(StringRef Class) {
  std::string C = Class.lower();
  for (StringRef Name : {"adam", "adamw", "fusedadam", "deepspeedcpuadam",
                         "torch.adam", "torch.adamw", "torch.optim.adam",
                         "torch.optim.adamw"})
    if (C == Name)
      return true;
  return false;
}

} // namespace

Error readPlanSettings(plan::Info &I, const ConfigView &C,
                       const PlanOptions &Options) {
  I.Producer = std::string("dsc ") + Version;
  constexpr uint32_t MaxWorldSize = 1 << 20;
  if (Options.WorldSize == 0 || Options.WorldSize > MaxWorldSize)
    return settingError(formatv("world size {0}: dsc plans 1 to {1} ranks",
                                Options.WorldSize, MaxWorldSize));
  I.WorldSize = Options.WorldSize;
  I.Nodes = Options.Nodes;
  I.GpusPerNode =
      Options.GpusPerNode ? Options.GpusPerNode : Options.WorldSize;
  if (uint64_t(I.Nodes) * I.GpusPerNode != I.WorldSize)
    return settingError(formatv("{0} nodes x {1} GPUs per node is not the "
                                "world size {2}",
                                I.Nodes, I.GpusPerNode, I.WorldSize));

  std::optional<int64_t> Stage = C.zeroStage();
  if (!Stage)
    return settingError("zero_optimization.stage cannot be read; run dsc "
                        "lint on the config");
  I.ZeroStage = uint32_t(*Stage);

  // The batch triple, as DeepSpeed completes it from any two of three.
  std::optional<int64_t> Train = C.getInt("train_batch_size");
  std::optional<int64_t> Micro = C.getInt("train_micro_batch_size_per_gpu");
  std::optional<int64_t> Accum =
      C.has("gradient_accumulation_steps")
          ? C.getInt("gradient_accumulation_steps")
          : std::nullopt;
  int64_t W = I.WorldSize;
  if (Micro && !Accum)
    Accum = Train ? *Train / (*Micro * W) : 1;
  if (!Micro && Train)
    Micro = *Train / (Accum.value_or(1) * W);
  if (!Micro || !Accum || *Micro <= 0 || *Accum <= 0)
    return settingError("the config gives no usable micro batch: set "
                        "train_micro_batch_size_per_gpu (or train_batch_size "
                        "divisible by the world size); dsc lint "
                        "--world-size N says what is wrong");
  // Beyond these no real run goes, and the plan's counters stay exact.
  constexpr int64_t MaxMicroBatch = 1 << 20, MaxAccumulation = 1 << 16;
  if (*Micro > MaxMicroBatch || *Accum > MaxAccumulation)
    return settingError(formatv("micro batch {0} or gradient accumulation "
                                "{1} is beyond what dsc plans ({2}, {3})",
                                *Micro, *Accum, MaxMicroBatch,
                                MaxAccumulation));
  if (Train && *Train != *Micro * *Accum * W)
    return settingError(formatv("train_batch_size {0} is not micro batch {1} "
                                "x accumulation {2} x world size {3}; "
                                "DeepSpeed refuses this config",
                                *Train, *Micro, *Accum, W));
  I.MicroBatch = uint32_t(*Micro);
  I.GradAccum = uint32_t(*Accum);

  I.ParamDType = C.bf16Enabled()   ? plan::DType::BF16
                 : C.fp16Enabled() ? plan::DType::F16
                                   : plan::DType::F32;
  I.CommDType = I.ParamDType;
  if (std::optional<std::string> Comm = C.getString("communication_data_type"))
    if (std::optional<plan::DType> T = dtypeNamed(*Comm))
      I.CommDType = *T;
  I.GradAccumDType = I.ParamDType;
  if (std::optional<std::string> G = C.getString("data_types.grad_accum_dtype"))
    if (std::optional<plan::DType> T = dtypeNamed(*G))
      I.GradAccumDType = *T;
  // ZeRO's "fp32" partition and its gradients take the master dtype, and
  // FusedAdam keeps its moments in the dtype of what it steps (lint checks
  // that the two flags come together, at stage 1-3, on the GPU).
  bool BF16Master =
      I.ParamDType == plan::DType::BF16 &&
      C.getBool("bf16.bf16_master_weights_and_grads").value_or(false);
  I.MasterDType = BF16Master ? plan::DType::BF16 : plan::DType::F32;
  I.OptimizerStateDType =
      BF16Master && C.getBool("bf16.bf16_optimizer_states").value_or(false)
          ? plan::DType::BF16
          : plan::DType::F32;

  std::string Class = C.optimizerClass();
  if (Class.empty() && !C.has("optimizer")) {
    // No optimizer section: the HF Trainer brings its own AdamW.
    Class = "AdamW";
  } else if (Class.empty()) {
    Class = C.getString("optimizer.type").value_or("");
  }
  // dsrun runs Adam with decoupled decay (AdamW): the classes that do
  // that are planned, the others refused by name rather than run as it.
  std::string Written = C.getString("optimizer.type").value_or(Class);
  std::string Named = Written == Class
                          ? "'" + Class + "'"
                          : "'" + Written + "' (DeepSpeed builds " + Class + ")";
  if (!runsAdamW(Class))
    return settingError(
        "optimizer " + Named + ": dsc plans Adam and AdamW (Adam, AdamW, "
        "FusedAdam, DeepSpeedCPUAdam, torch.optim.Adam and AdamW), which "
        "dsrun runs; '" + Class + "' updates by another rule, which it does "
        "not");
  // Decoupled decay: DeepSpeed's Adam classes take adam_w_mode (true by
  // default); torch.optim.Adam decouples only with decoupled_weight_decay.
  std::string Lower = StringRef(Class).lower();
  if (Lower == "torch.adam" || Lower == "torch.optim.adam")
    I.DecoupledWeightDecay =
        C.getBool("optimizer.params.decoupled_weight_decay").value_or(false);
  else if (Lower != "torch.adamw" && Lower != "torch.optim.adamw" &&
           !StringRef(Written).equals_insensitive("adamw"))
    // The type "AdamW" decouples whatever adam_w_mode says (engine.py,
    // effective_adam_w_mode).
    I.DecoupledWeightDecay =
        C.getBool("optimizer.params.adam_w_mode").value_or(true);
  if (Lower.rfind("torch.", 0) != 0)
    I.BiasCorrection =
        C.getBool("optimizer.params.bias_correction").value_or(true);
  I.AverageGradients =
      !StringRef(C.getString("gradient_allreduce_op").value_or("mean"))
           .equals_insensitive("sum");
  I.Optimizer = Class;
  I.OptimizerStates = 2;
  // Nine significant digits reproduce any float exactly.
  auto Decimal = [](double V) {
    char Text[32];
    snprintf(Text, sizeof(Text), "%.9g", V);
    return std::string(Text);
  };
  if (std::optional<double> V = C.getNumber("optimizer.params.lr"))
    I.LearningRate = Decimal(*V);
  if (std::optional<double> V = C.getNumber("optimizer.params.eps"))
    I.Epsilon = Decimal(*V);
  if (std::optional<double> V = C.getNumber("optimizer.params.weight_decay"))
    I.WeightDecay = Decimal(*V);
  if (const JsonValue *Betas = C.find("optimizer.params.betas"))
    if (Betas->Kind == JsonKind::Array && Betas->Elements.size() == 2 &&
        Betas->Elements[0].isNumber() && Betas->Elements[1].isNumber()) {
      I.Beta1 = Decimal(Betas->Elements[0].number());
      I.Beta2 = Decimal(Betas->Elements[1].number());
    }

  // The keys below have defaults in the schema table, which ConfigView
  // falls back to, and lint has refused values of the wrong type before
  // the planner runs: each has a value. Read through these, so that no
  // default is written twice.
  std::string Unset;
  auto Known = [&](auto V, StringRef Key) {
    if (!V && Unset.empty())
      Unset = Key.str();
    return V.value_or(typename decltype(V)::value_type{});
  };
  auto Number = [&](StringRef Key) { return Known(C.getNumber(Key), Key); };
  auto Flag = [&](StringRef Key) { return Known(C.getBool(Key), Key); };
  // Counts and sizes: lint has checked the ranges DeepSpeed checks.
  auto Count = [&](StringRef Key) {
    return uint32_t(
        std::clamp<int64_t>(Known(C.getInt(Key), Key), 0, UINT32_MAX));
  };
  auto Elems = [&](StringRef Key) {
    return uint64_t(std::max<int64_t>(0, Known(C.getInt(Key), Key)));
  };

  I.GradientClipping = Decimal(Number("gradient_clipping"));
  if (I.ParamDType == plan::DType::F16) {
    I.LossScale = Decimal(Number("fp16.loss_scale"));
    I.InitialScalePower = Count("fp16.initial_scale_power");
    I.LossScaleWindow = Count("fp16.loss_scale_window");
    I.Hysteresis = Count("fp16.hysteresis");
    I.ConsecutiveHysteresis = Flag("fp16.consecutive_hysteresis");
    I.MinLossScale = Count("fp16.min_loss_scale");
  }
  if (std::optional<std::string> Type = C.getString("scheduler.type")) {
    I.Scheduler = *Type;
    if (const JsonValue *Params = C.find("scheduler.params");
        Params && Params->Kind == JsonKind::Object)
      for (const JsonMember &M : Params->Members) {
        const JsonValue &V = M.Value;
        std::string Text;
        if (V.isNumber())
          Text = Decimal(V.number());
        else if (V.Kind == JsonKind::Bool)
          Text = V.Bool ? "true" : "false";
        else if (V.Kind == JsonKind::String && M.Key == "warmup_type")
          Text = V.Str;
        else if (V.Kind == JsonKind::String)
          return settingError("scheduler.params." + M.Key + " is \"" + V.Str +
                              "\"; give a number (dsc resolve fills "
                              "\"auto\" the way the HF Trainer does)");
        else
          continue; // Lists (per-group rates): one group here.
        I.SchedulerParams.push_back(M.Key + "=" + Text);
      }
    dsc::schedule::Schedule S;
    if (std::string Problem = S.parse(I.Scheduler, I.SchedulerParams);
        !Problem.empty() && Problem.find("is not one of") == std::string::npos)
      return settingError(Problem);
  }

  I.OverlapComm = Known(C.overlapComm(), "zero_optimization.overlap_comm");
  I.ContiguousGradients = Flag("zero_optimization.contiguous_gradients");
  I.ReduceBucketElems = Elems("zero_optimization.reduce_bucket_size");
  I.AllgatherBucketElems = Elems("zero_optimization.allgather_bucket_size");
  I.PrefetchBucketElems = Elems("zero_optimization.prefetch_bucket_size");
  // stage3_allgather_sequential gathers one module at a time: DeepSpeed
  // sets the prefetch bucket to 1 element.
  if (Flag("zero_optimization.allgather_sequential"))
    I.PrefetchBucketElems = 1;
  I.MaxLiveParams = Elems("zero_optimization.max_live_parameters");
  I.MaxReuseDistance = Elems("zero_optimization.max_reuse_distance");
  I.ParamPersistenceThreshold =
      Elems("zero_optimization.param_persistence_threshold");
  I.ModelPersistenceThreshold =
      Elems("zero_optimization.model_persistence_threshold");
  I.SubGroupElems = Elems("zero_optimization.sub_group_size");
  if (I.ReduceBucketElems == 0)
    return settingError("zero_optimization.reduce_bucket_size is 0: no "
                        "gradient could be reduced; give it a size");

  auto Device = [](const std::string &D) {
    return D == "cpu"    ? plan::OffloadDevice::CPU
           : D == "nvme" ? plan::OffloadDevice::NVMe
                         : plan::OffloadDevice::None;
  };
  if (I.ZeroStage > 0)
    I.OptimizerOffload = Device(C.offloadOptimizerDevice());
  // Stage 1/2 treat any offload device as the CPU (stage_1_and_2.py).
  if (I.ZeroStage < 3 && I.OptimizerOffload == plan::OffloadDevice::NVMe)
    I.OptimizerOffload = plan::OffloadDevice::CPU;
  if (I.ZeroStage == 3)
    I.ParamOffload = Device(C.offloadParamDevice());
  I.OptimizerOffloadPinned =
      Flag("zero_optimization.offload_optimizer.pin_memory");
  I.ParamOffloadPinned = Flag("zero_optimization.offload_param.pin_memory");
  if (I.ParamOffload != plan::OffloadDevice::None &&
      I.OptimizerOffload == plan::OffloadDevice::None)
    return settingError("offload_param without offload_optimizer: dsc does "
                        "not plan a GPU optimizer step over host-resident "
                        "parameters; offload the optimizer too");
  if (I.OptimizerOffload == plan::OffloadDevice::NVMe) {
    I.AioBufferCount = Count("zero_optimization.offload_optimizer.buffer_count");
  }
  if (I.ZeroStage == 3) {
    // ZeRO++ hpZ: DeepSpeed groups min(size, world) consecutive ranks
    // (groups._create_zero_param_parallel_group); 0 and 1 are off.
    uint32_t Hpz = std::min(Count("zero_optimization.zero_hpz_partition_size"),
                            I.WorldSize);
    if (Hpz > 1 && I.WorldSize % Hpz)
      return settingError(formatv("zero_optimization.zero_hpz_partition_size "
                                  "is {0}, which does not divide the world "
                                  "size {1}; DeepSpeed asserts",
                                  Hpz, I.WorldSize));
    if (Hpz > 1 && I.ParamOffload != plan::OffloadDevice::None)
      return settingError("zero_optimization.zero_hpz_partition_size with "
                          "offload_param: DeepSpeed keeps hpZ's secondary "
                          "partition on the offload device, which dsc does "
                          "not plan; drop one of the two");
    I.HpzPartition = std::max<uint32_t>(Hpz, 1);
    // ZeRO++ qwZ: every gather of a fetch unit moves int8 weights, those
    // within an hpZ group too.
    I.QuantizedWeights = Flag("zero_optimization.zero_quantized_weights");
    // ZeRO++ qgZ: DeepSpeed quantizes the gradient reduction only when the
    // world spans nodes (stage3.py __avg_scatter_grads, num_nodes > 1); on
    // one node it runs the plain reduce-scatter, which is what the plan
    // does. Across nodes its kernels read the gradients as fp16 whatever
    // their type: bf16 or fp32 bits would be misread without an error.
    I.QuantizedGradients =
        Flag("zero_optimization.zero_quantized_gradients");
    if (I.QuantizedGradients && I.Nodes > 1) {
      const char *Key = "zero_optimization.zero_quantized_gradients across "
                        "nodes";
      if (I.CommDType != plan::DType::F16)
        return settingError(formatv(
            "{0} with {1} gradients: DeepSpeed's qgZ kernels read every "
            "gradient as fp16, so they would misread these without an "
            "error; train in fp16",
            Key, plan::enumName(I.CommDType)));
      if (I.ParamDType != plan::DType::F16)
        return settingError(formatv(
            "{0} with {1} parameters and fp16 communication: dsc reduces a "
            "gradient larger than the bucket where the backward left it, in "
            "the parameters' type, which the quantizer reads as fp16; dsc "
            "plans qgZ across nodes for fp16 training",
            Key, plan::enumName(I.ParamDType)));
      if (I.OptimizerOffload != plan::OffloadDevice::None ||
          I.ParamOffload != plan::OffloadDevice::None)
        return settingError(formatv(
            "{0} with offload_optimizer or offload_param: dsc does not plan "
            "the quantized reduction with offload; drop one of the two",
            Key));
    }
    // MiCS as DeepSpeed 0.19.2 runs it (mics.py; later releases reduce
    // over the whole world and fail on the sizes): parameters, gradients
    // and optimizer state partitioned within shard groups of consecutive
    // ranks, replicated across the groups.
    uint32_t Mics = Count("zero_optimization.mics_shard_size");
    if (Mics > 0 && I.WorldSize % Mics)
      return settingError(formatv("zero_optimization.mics_shard_size is {0}, "
                                  "which does not divide the world size {1}; "
                                  "DeepSpeed asserts",
                                  Mics, I.WorldSize));
    if (Mics > 0) {
      // MiCS's optimizer takes none of ZeRO++'s settings, read above:
      // DeepSpeed would run plain MiCS without a word.
      for (auto [Set, Key] : {std::pair{I.HpzPartition > 1,
                                        "zero_hpz_partition_size"},
                              {I.QuantizedWeights, "zero_quantized_weights"},
                              {I.QuantizedGradients,
                               "zero_quantized_gradients"}})
        if (Set)
          return settingError(
              Twine("zero_optimization.mics_shard_size with ") + Key +
              ": DeepSpeed's MiCS ignores ZeRO++'s settings; drop one of "
              "the two");
      if (Mics < I.WorldSize && I.OptimizerOffload != plan::OffloadDevice::None)
        return settingError("zero_optimization.mics_shard_size below the "
                            "world size with offload_optimizer: DeepSpeed's "
                            "MiCS raises (\"Local sharding has no support for "
                            "CPU offloading\")");
      I.MicsShard = Mics;
    }
  }
  if (I.ParamOffload == plan::OffloadDevice::NVMe) {
    I.AioBufferCount = std::max<uint32_t>(
        I.AioBufferCount, Count("zero_optimization.offload_param.buffer_count"));
    I.AioBufferBytes =
        Elems("zero_optimization.offload_param.buffer_size") *
        plan::dtypeBytes(I.ParamDType);
  }

  if (!Unset.empty())
    return settingError("internal error: " + Unset + " has no value and the "
                        "schema gives it no default");
  I.CheckpointLayers = Options.CheckpointLayers;
  I.CtaPolicy = Options.CtaPolicy;
  I.Machine = Options.Machine.Figures;
  return Error::success();
}

} // namespace dsc
